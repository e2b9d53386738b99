"""The student notebooks: in sync with solutions/, failing until filled in, and worth what they say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from grading_support import (
    ASSIGNMENT,
    NOTEBOOKS,
    ROOT,
    SHIPPED_FILES,
    copy_course,
    course_env,
    is_grade_cell,
    nbgrader,
    read,
    rubric,
)


def _comparable(path: Path) -> list[tuple]:
    nb = read(path)
    return [(c.cell_type, c.get("id"), c.source, c.metadata.get("nbgrader"), c.get("outputs", [])) for c in nb.cells]


def test_intro_tables_match_the_grade_cells() -> None:
    """The grade cells' points are the one source; each introduction's table and total must agree with them."""
    for name in NOTEBOOKS:
        nb = read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb")
        points = rubric(name)
        intro = nb.cells[0].source
        assert f"({sum(points.values())} points)" in intro, name
        table = dict(re.findall(r"^\| \((\w)\) \|.*\| (\d+) \|$", intro, re.M))
        assert {f"{name[:2]}_{part}_test": int(p) for part, p in table.items()} == points, name


def test_exercises_are_generated_from_solutions(tmp_path: Path) -> None:
    """Regenerate the release in a copy of the course; it must equal the committed exercises/."""
    course = copy_course(tmp_path / "course")
    result = nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    assert result.returncode == 0, result.stdout + result.stderr
    committed = sorted(p.name for p in (ROOT / "exercises" / ASSIGNMENT).glob("*.ipynb"))
    assert committed == sorted(f"{n}.ipynb" for n in NOTEBOOKS)
    for name in NOTEBOOKS:
        fresh = _comparable(course / "exercises" / ASSIGNMENT / f"{name}.ipynb")
        assert fresh == _comparable(ROOT / "exercises" / ASSIGNMENT / f"{name}.ipynb"), (
            f"exercises/{ASSIGNMENT}/{name}.ipynb is out of date: run `nbgrader generate_assignment {ASSIGNMENT} --force`"
        )
    for name in SHIPPED_FILES:  # the message catalogue travels with the notebooks
        fresh = (course / "exercises" / ASSIGNMENT / name).read_bytes()
        assert fresh == (ROOT / "exercises" / ASSIGNMENT / name).read_bytes(), (
            f"exercises/{ASSIGNMENT}/{name} is out of date: run `nbgrader generate_assignment {ASSIGNMENT} --force`"
        )


def test_exercises_hold_no_solutions_or_hidden_tests() -> None:
    for name in NOTEBOOKS:
        text = (ROOT / "exercises" / ASSIGNMENT / f"{name}.ipynb").read_text(encoding="utf-8")
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text and "hidden_" not in text


def test_unfilled_exercises_fail_every_check(tmp_path: Path) -> None:
    """Run each release notebook as a self-study reader would, without nbgrader: every check must fail."""
    src = ROOT / "exercises" / ASSIGNMENT
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "--allow-errors",
            "--ExecutePreprocessor.timeout=120",
            "--output-dir",
            str(tmp_path),
            *[str(src / f"{n}.ipynb") for n in NOTEBOOKS],
        ],
        env=course_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    for name in NOTEBOOKS:
        nb = read(tmp_path / f"{name}.ipynb")
        for cell in nb.cells:
            if is_grade_cell(cell):
                errors = [o for o in cell.outputs if o.output_type == "error"]
                assert errors, f"{name}: check {cell.metadata['nbgrader']['grade_id']} passed on an empty exercise"
                printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
                assert not re.search(r"passed", printed)
