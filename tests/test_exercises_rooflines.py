"""The student notebooks: failing until filled in, and worth what they say.

That exercises/ is what nbgrader generates from solutions/ is checked in tests/test_nbgrader_rooflines.py,
which generates the assignment anyway.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from grading_support import (
    ASSIGNMENT,
    NOTEBOOKS,
    ROOT,
    SHIPPED_FILES,
    is_grade_cell,
    read,
    rubric,
    run_in_process,
)


def test_intro_tables_match_the_grade_cells() -> None:
    """The grade cells' points are the one source; each introduction's table and total must agree with them."""
    for name in NOTEBOOKS:
        nb = read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb")
        points = rubric(name)
        intro = nb.cells[0].source
        assert f"({sum(points.values())} points)" in intro, name
        table = dict(re.findall(r"^\| \((\w)\) \|.*\| (\d+) \|$", intro, re.M))
        # a check is <q>_<part>_test; an answer graded by hand is itself the grade cell, <q>_<part>_answer
        assert {f"{name[:2]}_{part}": int(p) for part, p in table.items()} == {
            gid.rsplit("_", 1)[0]: p for gid, p in points.items()
        }, name


def test_exercises_hold_no_solutions_or_hidden_tests() -> None:
    for name in NOTEBOOKS:
        text = (ROOT / "exercises" / ASSIGNMENT / f"{name}.ipynb").read_text(encoding="utf-8")
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text and "hidden_" not in text


def test_unfilled_exercises_fail_every_check(tmp_path: Path) -> None:
    """Run each release notebook as handed out, beside its shipped files: every check must fail."""
    src = ROOT / "exercises" / ASSIGNMENT
    for shipped in SHIPPED_FILES:
        shutil.copy2(src / shipped, tmp_path / shipped)
    for name in NOTEBOOKS:
        nb = run_in_process(read(src / f"{name}.ipynb"), tmp_path)
        for cell in nb.cells:
            if is_grade_cell(cell) and cell.cell_type == "code":  # an answer graded by hand has nothing to run
                errors = [o for o in cell.outputs if o.output_type == "error"]
                assert errors, f"{name}: check {cell.metadata['nbgrader']['grade_id']} passed on an empty exercise"
                printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
                assert not re.search(r"passed", printed)
