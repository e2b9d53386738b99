"""End to end: ``python -m grading autograde`` and ``report`` on a small class, against serial nbgrader.

The class is built from the assignment's own notebooks (reference answers from the
solutions, and deliberate faults), so it follows the notebooks as they change:

- ``slip_a``: Q1 and Q2 end with a failing check tagged ``[q1.sample-slip]`` / ``[q2.sample-slip]``;
- ``slip_b``: the Q1 slip, and a Q4 file that is not valid JSON (the reference answers elsewhere);
- ``edge``: an endless loop at the end of Q3 (time-out) and ``os._exit`` at the end of Q5.
"""

from __future__ import annotations

import atexit
import csv
import functools
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from grading_support import ASSIGNMENT, NOTEBOOKS, ROOT, copy_course, course_env, nbgrader

Q1, Q2, Q3, Q4, Q5 = NOTEBOOKS
TIMEOUT_S = 6
SLIP = "raise AssertionError('[{q}.sample-slip] a deliberate slip')"
CATALOGUE_ROWS = [
    {"id": "q1.sample-slip", "question": "1", "part": "a", "en": "A deliberate slip in question 1."},
    {"id": "q2.sample-slip", "question": "2", "part": "a", "en": "A deliberate slip in question 2."},
]


def grading(course: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``python -m grading`` in the course root, with this checkout importable."""
    env = course_env()
    env["PYTHONPATH"] = str(ROOT) + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run(
        [sys.executable, "-m", "grading", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def scores(course: Path) -> dict[str, dict[str, dict[str, list[float]]]]:
    """student -> notebook -> grade cell -> [score, max score], from the course's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {
            sub.student_id: {nb.name: {g.name: [g.score, g.max_score] for g in nb.grades} for nb in sub.notebooks}
            for sub in gb.assignment_submissions(ASSIGNMENT)
        }


@functools.cache
def _generated() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="grading-course-"))
    atexit.register(shutil.rmtree, folder, True)
    course = copy_course(folder / "course")
    add_catalogue(course)
    gen = nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    assert gen.returncode == 0, gen.stdout + gen.stderr
    return course


def generated_course(dest: Path) -> Path:
    """A fresh copy of the course with the assignment generated (generated once per test run)."""
    shutil.copytree(_generated(), dest)
    return dest


def add_catalogue(course: Path) -> None:
    """Add the sample ids to the assignment's misconception catalogue (creating it if need be)."""
    path = course / "solutions" / ASSIGNMENT / "feedback.csv"
    rows, header = [], ["id", "question", "part", "en"]
    if path.is_file():
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            header, rows = list(reader.fieldnames or header), list(reader)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=header, restval="")
        writer.writeheader()
        writer.writerows(rows + CATALOGUE_ROWS)


def build_class(course: Path, students: list[str]) -> None:
    from grading.sample import replace_last_answer, write_student

    slip = {Q1: replace_last_answer(SLIP.format(q="q1")), Q2: replace_last_answer(SLIP.format(q="q2"))}
    kinds = {
        "ref": {},
        "slip_a": {"alter": slip},
        "slip_b": {"alter": {Q1: slip[Q1]}, "raw": {Q4: '{"cells": [ this is not JSON'}},
        "edge": {
            "alter": {
                Q3: replace_last_answer("import time\nwhile True:\n    time.sleep(1)"),
                Q5: replace_last_answer("import os\nos._exit(1)"),
            }
        },
    }
    for student in students:
        write_student(course, ASSIGNMENT, student, **kinds[student])


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    course = generated_course(tmp_path_factory.mktemp("grading") / "course")
    serial = generated_course(tmp_path_factory.mktemp("serial") / "course")
    build_class(course, ["slip_a", "slip_b", "edge"])
    build_class(serial, ["slip_a", "edge"])
    subprocess.run([sys.executable, "-c", "import matplotlib.pyplot"], env=course_env(), check=True)  # font cache
    before = digest(course / "submitted")
    # serial nbgrader on a subset runs alongside the grading command
    with subprocess.Popen(
        [sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--create", f"--Execute.timeout={TIMEOUT_S}"],
        cwd=serial,
        env=course_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as reference:
        auto = grading(course, "autograde", ASSIGNMENT, "--workers", "2", "--timeout", str(TIMEOUT_S))
        _, reference_log = reference.communicate(timeout=300)
    assert reference.returncode == 0, reference_log[-3000:]
    with ThreadPoolExecutor(2) as pool:  # both only read the results
        report = pool.submit(grading, course, "report", ASSIGNMENT, "--out", str(course / "class-report"))
        feedback = pool.submit(nbgrader, course, "generate_feedback", ASSIGNMENT)
    graded = scores(course)
    # an interrupted run leaves notebooks without an autograded version: a re-run grades just those
    (course / "autograded" / "slip_a" / ASSIGNMENT / f"{Q2}.ipynb").unlink()
    rerun = grading(course, "autograde", ASSIGNMENT, "--workers", "1", "--timeout", str(TIMEOUT_S))
    return {
        "course": course,
        "auto": auto,
        "rerun": rerun,
        "report": report.result(),
        "feedback": feedback.result(),
        "before": before,
        "after": digest(course / "submitted"),
        "scores": graded,
        "serial": scores(serial),
        "serial_course": serial,
    }


def log(run: dict) -> str:
    return run["auto"].stdout + run["auto"].stderr


def test_scores_equal_serial_nbgrader_cell_by_cell(run: dict) -> None:
    for student in ["slip_a", "edge"]:
        assert run["scores"][student] == run["serial"][student], (student, log(run)[-3000:])


def _visible(path: Path) -> list[tuple[object, ...]]:
    """A notebook's cells as a reader sees them: sources, and outputs without images or timing metadata."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [
        (
            cell["cell_type"],
            cell["source"],
            [
                (o["output_type"], o.get("ename"), o.get("evalue"), o.get("text"), o.get("data", {}).get("text/plain"))
                for o in cell.get("outputs", [])
            ],
        )
        for cell in nb["cells"]
    ]


def test_autograded_notebooks_equal_serial_nbgrader(run: dict) -> None:
    for student in ["slip_a", "edge"]:
        for notebook in NOTEBOOKS:
            ours, theirs = (
                course / "autograded" / student / ASSIGNMENT / f"{notebook}.ipynb"
                for course in (run["course"], run["serial_course"])
            )
            assert _visible(ours) == _visible(theirs), (student, notebook)


def full_marks(cells: dict[str, list[float]]) -> bool:
    return all(score == top and top > 0 for score, top in cells.values())


def test_reference_answers_get_full_marks_and_slips_cost_points(run: dict) -> None:
    slip = run["scores"]["slip_a"]
    assert not full_marks(slip[Q1]) and not full_marks(slip[Q2])
    assert all(full_marks(slip[notebook]) for notebook in [Q3, Q4, Q5])


def test_a_corrupt_file_costs_only_that_notebook(run: dict) -> None:
    course, got = run["course"], run["scores"]["slip_b"]
    for notebook in [Q1, Q2, Q3, Q5]:
        assert (course / "autograded" / "slip_b" / ASSIGNMENT / f"{notebook}.ipynb").is_file()
        # graded in full: the same as a student with the same answers in that notebook
        if notebook == Q1:
            assert got[notebook] == run["scores"]["slip_a"][notebook]
        else:
            assert full_marks(got[notebook]), notebook
    assert not (course / "autograded" / "slip_b" / ASSIGNMENT / f"{Q4}.ipynb").exists()
    assert all(score == 0 for score, _ in got[Q4].values())


def test_each_problem_is_listed_with_its_reason_and_the_exit_code_says_so(run: dict) -> None:
    assert run["auto"].returncode == 1, log(run)[-3000:]
    listed = json.loads((run["course"] / "autograded" / f"grading-{ASSIGNMENT}.json").read_text())["problems"]
    found = {(p["student"], p["notebook"]): p for p in listed}
    assert set(found) == {("slip_b", Q4), ("edge", Q3), ("edge", Q5)}
    assert not found[("slip_b", Q4)]["graded"] and "JSON" in found[("slip_b", Q4)]["reason"]
    assert found[("edge", Q3)]["graded"] and f"after {TIMEOUT_S}" in found[("edge", Q3)]["reason"]
    assert found[("edge", Q5)]["graded"] and "kernel died" in found[("edge", Q5)]["reason"]
    summary = run["auto"].stdout
    for student, notebook in found:
        assert any(line.strip().startswith(f"{student} / {notebook}:") for line in summary.splitlines()), summary


def test_progress_is_logged_line_by_line_when_not_on_a_terminal(run: dict) -> None:
    assert "[15/15] " in run["auto"].stderr
    assert "\r" not in run["auto"].stderr


def test_submissions_are_left_untouched(run: dict) -> None:
    assert run["after"] == run["before"]


def test_report_counts_match_the_class(run: dict) -> None:
    assert run["report"].returncode == 0, run["report"].stdout + run["report"].stderr
    out = run["course"] / "class-report"
    with (out / "misconceptions.csv").open(newline="") as fh:
        hits = {row["id"]: row for row in csv.DictReader(fh)}
    assert (hits["q1.sample-slip"]["students"], hits["q1.sample-slip"]["of"]) == ("2", "3")
    assert (hits["q2.sample-slip"]["students"], hits["q2.sample-slip"]["of"]) == ("1", "3")
    with (out / "scores.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for notebook, cells in run["scores"]["slip_a"].items():
        for part in cells:
            counts = {r["score"]: int(r["students"]) for r in rows if (r["question"], r["part"]) == (notebook, part)}
            assert sum(counts.values()) == 3, (notebook, part, counts)
            assert counts.get("not graded", 0) == (1 if notebook == Q4 else 0)
    with (out / "problems.csv").open(newline="") as fh:
        assert {(r["student"], r["notebook"]) for r in csv.DictReader(fh)} == {
            ("slip_b", Q4),
            ("edge", Q3),
            ("edge", Q5),
        }
    image = (out / "report.png").read_bytes()
    assert image.startswith(b"\x89PNG") and len(image) > 20_000


def test_generate_feedback_works_on_the_result(run: dict) -> None:
    assert run["feedback"].returncode == 0, run["feedback"].stdout + run["feedback"].stderr
    for student in ["slip_a", "slip_b", "edge"]:
        pages = {p.stem for p in (run["course"] / "feedback" / student / ASSIGNMENT).glob("*.html")}
        assert pages == set(NOTEBOOKS) - ({Q4} if student == "slip_b" else set()), student


def test_a_rerun_grades_only_what_is_missing(run: dict) -> None:
    rerun = run["rerun"]
    # slip_a's deleted Q2, and slip_b's Q4 again (still not a notebook); the other 13 are kept
    assert "Graded 1 notebooks; 13 already graded were kept." in rerun.stdout, rerun.stdout + rerun.stderr
    assert rerun.returncode == 1 and "[2/2] " in rerun.stderr
    assert scores(run["course"]) == run["scores"]
    listed = json.loads((run["course"] / "autograded" / f"grading-{ASSIGNMENT}.json").read_text())["problems"]
    assert {(p["student"], p["notebook"]) for p in listed} == {("slip_b", Q4), ("edge", Q3), ("edge", Q5)}
