"""The student notebooks: in sync with solutions/, failing until filled in, and worth what they say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


from grading_support import ASSIGNMENT, NOTEBOOKS, ROOT, copy_course, course_env, is_grade_cell, nbgrader, read

# Points per notebook, from the rubric in each notebook's introduction.
TOTALS = {"q1_int8_matmul": 10, "q2_int8_weights": 8, "q3_roofline_plot": 7,
          "q4_per_example_weights": 5, "q5_h100": 5}


def _comparable(path: Path) -> list[tuple]:
    nb = read(path)
    return [(c.cell_type, c.get("id"), c.source, c.metadata.get("nbgrader"), c.get("outputs", []))
            for c in nb.cells]


def test_rubric_totals_match_the_grade_cells() -> None:
    for name, total in TOTALS.items():
        nb = read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb")
        points = sum(c.metadata["nbgrader"]["points"] for c in nb.cells if is_grade_cell(c))
        assert points == total, name
        assert f"({total} points)" in nb.cells[0].source, name


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
            f"exercises/{ASSIGNMENT}/{name}.ipynb is out of date: run `nbgrader generate_assignment {ASSIGNMENT} --force`")


def test_exercises_hold_no_solutions_or_hidden_tests() -> None:
    for name in NOTEBOOKS:
        text = (ROOT / "exercises" / ASSIGNMENT / f"{name}.ipynb").read_text(encoding="utf-8")
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text and "hidden_shapes" not in text


def test_unfilled_exercises_fail_every_check(tmp_path: Path) -> None:
    """Run each release notebook as a self-study reader would, without nbgrader: every check must fail."""
    src = ROOT / "exercises" / ASSIGNMENT
    result = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--allow-errors",
         "--ExecutePreprocessor.timeout=120", "--output-dir", str(tmp_path), *[str(src / f"{n}.ipynb") for n in NOTEBOOKS]],
        env=course_env(), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    for name in NOTEBOOKS:
        nb = read(tmp_path / f"{name}.ipynb")
        for cell in nb.cells:
            if is_grade_cell(cell):
                errors = [o for o in cell.outputs if o.output_type == "error"]
                assert errors, f"{name}: check {cell.metadata['nbgrader']['grade_id']} passed on an empty exercise"
                printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
                assert not re.search(r"passed", printed)
