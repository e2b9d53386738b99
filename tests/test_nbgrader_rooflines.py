"""End to end: the instructor workflow on the `rooflines` assignment, in a temporary copy of the course.

generate_assignment -> a class of submissions built from the release notebooks (grading_support.build_class)
-> autograde -> generate_feedback -> export, then exact scores (grading_support.expected_scores, from the
points in the grade-cell metadata).
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from grading_support import (
    ASSIGNMENT,
    NOTEBOOKS,
    ROOT,
    SHIPPED_FILES,
    build_class,
    cell_by_id,
    copy_course,
    course_env,
    expected_scores,
    nbgrader,
    read,
    rubric,
    totals,
)

Q1, Q2, Q3, Q4, Q5 = NOTEBOOKS

# Points per grade cell, from the grade-cell metadata of the sources (the one place they are written).
RUBRIC = {name: rubric(name) for name in NOTEBOOKS}
TOTAL = totals()  # 10, 8, 7, 5, 5
EXPECTED = expected_scores()

# The message (its catalogue id) a failing check must show, by student and notebook.
MESSAGES = {
    ("mix_a", Q1): "q1.int8-two-bytes",
    ("mix_a", Q2): "q2.forgot-write-back",
    ("mix_a", Q5): "q5.a.sparse-peak",
    ("mix_b", Q1): "q1.g.swapped",
    ("mix_b", Q2): "q2.activations-one-byte",
    ("mix_b", Q5): "q5.other-variant",
    ("tamper", Q1): "q1.int8-two-bytes",
    ("tamper", Q5): "q5.a.sparse-peak",
}
# The hidden checks that catch memorised numbers, by notebook.
MEMORISED_CAUGHT = {
    Q1: [
        "q1.a.hidden-shape",
        "q1.b.hidden-shape",
        "q1.c.hidden-shape",
        "q1.d.hidden-shape",
        "q1.ignores-chip",
        "q1.f.hidden-shape",
        "q1.g.hidden-shape",
    ],
    Q2: ["q2.a.hidden-shape", "q2.b.hidden-shape", "q2.c.hidden-shape", "q2.d.hidden-shape", "q2.ignores-chip"],
    Q3: ["q3.a.hidden-shape"],
    Q4: ["q4.a.hidden-shape", "q4.b.weight-bytes", "q4.c.hidden-cases"],
    Q5: ["q5.a.hidden-sheet", "q5.b.hidden-sheet", "q5.c.hidden-sheet"],
}

GRADEBOOK_DUMP = """
import json, sys
from nbgrader.api import Gradebook
out = {}
with Gradebook(sys.argv[1]) as gb:
    for student in gb.students:
        try:
            sub = gb.find_submission(sys.argv[2], student.id)
        except Exception:
            continue
        out[student.id] = {nb.name: {"score": nb.score, "cells": {g.name: g.score for g in nb.grades}}
                           for nb in sub.notebooks}
print(json.dumps(out))
"""

# Imports are warmed first, so a cell that takes this long is the endless loop, not a slow first import.
CELL_TIMEOUT_S = 6


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _text(path: Path) -> str:
    """Visible text of a feedback page: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    course = copy_course(tmp_path_factory.mktemp("course"))
    gen = nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    assert gen.returncode == 0, gen.stdout + gen.stderr
    build_class(course)
    before = _digest(course / "submitted")
    # warm matplotlib's font cache and the bytecode caches so the per-cell timeout only ever catches the endless loop
    subprocess.run([sys.executable, "-c", "import matplotlib.pyplot, numpy, ipykernel"], env=course_env(), check=True)
    auto = nbgrader(course, "autograde", ASSIGNMENT, "--create", f"--Execute.timeout={CELL_TIMEOUT_S}")
    feedback = nbgrader(course, "generate_feedback", ASSIGNMENT)
    export = nbgrader(course, "export", "--to", str(course / "grades.csv"))
    dump = subprocess.run(
        [sys.executable, "-c", GRADEBOOK_DUMP, f"sqlite:///{course / 'gradebook.db'}", ASSIGNMENT],
        env=course_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return {
        "course": course,
        "auto": auto,
        "feedback": feedback,
        "export": export,
        "before": before,
        "after": _digest(course / "submitted"),
        "scores": json.loads(dump.stdout),
    }


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_exact_scores_per_notebook(graded: dict, student: str) -> None:
    got = {nb: graded["scores"][student][nb]["score"] for nb in NOTEBOOKS}
    assert got == pytest.approx(EXPECTED[student]), graded["auto"].stdout[-4000:] + graded["auto"].stderr[-4000:]


def test_export_totals(graded: dict) -> None:
    assert graded["export"].returncode == 0, graded["export"].stderr
    with open(graded["course"] / "grades.csv", newline="") as fh:
        rows = {row["student_id"]: row for row in csv.DictReader(fh)}
    for student, per_nb in EXPECTED.items():
        assert float(rows[student]["raw_score"]) == pytest.approx(sum(per_nb.values()))
        assert float(rows[student]["max_score"]) == pytest.approx(sum(TOTAL.values()))


def test_corrupt_submission_is_reported_and_the_others_are_graded(graded: dict) -> None:
    auto = graded["auto"]
    log = auto.stdout + auto.stderr
    assert auto.returncode != 0
    assert "There was an error processing assignment 'rooflines' for student 'corrupt'" in log
    assert "not valid JSON" in log or "does not appear to be JSON" in log or "JSONDecodeError" in log
    assert not (graded["course"] / "autograded" / "corrupt" / ASSIGNMENT).exists()
    for student in EXPECTED:
        for name in NOTEBOOKS:
            assert (graded["course"] / "autograded" / student / ASSIGNMENT / f"{name}.ipynb").is_file()


def test_submissions_are_left_untouched(graded: dict) -> None:
    assert graded["after"] == graded["before"]


def test_misconceptions_are_named_in_the_feedback(graded: dict) -> None:
    assert graded["feedback"].returncode == 0, graded["feedback"].stderr
    for (student, name), msg_id in MESSAGES.items():
        text = _text(graded["course"] / "feedback" / student / ASSIGNMENT / f"{name}.html")
        shown = r"AssertionError: \[" + re.escape(msg_id) + r"\] \S"
        assert re.search(shown, text), (student, name, msg_id)
        ref = _text(graded["course"] / "feedback" / "reference" / ASSIGNMENT / f"{name}.html")
        assert not re.search(shown, ref)


def test_every_failed_check_names_its_catalogue_id(graded: dict) -> None:
    """A check that fails on an assertion says which catalogue message it is: its evalue starts with [id]."""
    course = graded["course"]
    for student in EXPECTED:
        for name in NOTEBOOKS:
            for cell in read(course / "autograded" / student / ASSIGNMENT / f"{name}.ipynb").cells:
                for out in cell.get("outputs", []):
                    if out.output_type == "error" and out.ename == "AssertionError" and "restored" not in out.evalue:
                        assert re.match(r"\[q\d\.[a-z0-9.-]+\] \S", out.evalue), (student, name, out.evalue)


def test_memorised_numbers_lose_the_hidden_points(graded: dict) -> None:
    """Every value the notebook shows or the book prints, written in as a number, fails on unseen inputs."""
    course = graded["course"]
    for name, ids in MEMORISED_CAUGHT.items():
        nb = read(course / "autograded" / "memorised" / ASSIGNMENT / f"{name}.ipynb")
        shown = " ".join(
            out.get("evalue", "") for cell in nb.cells for out in cell.get("outputs", []) if out.output_type == "error"
        )
        for msg_id in ids:
            assert f"[{msg_id}]" in shown, (name, msg_id)
    cells = {nb: graded["scores"]["memorised"][nb]["cells"] for nb in NOTEBOOKS}
    assert {gid for nb in NOTEBOOKS for gid, score in cells[nb].items() if score} == {"q3_c_test"}


def test_the_grader_restores_the_shipped_files(graded: dict) -> None:
    """A student who rigs feedback.py (every check passes, every message is empty) gains nothing."""
    course = graded["course"]
    for shipped in SHIPPED_FILES:
        assert (course / "submitted" / "tamper" / ASSIGNMENT / shipped).read_bytes() != (
            ROOT / "solutions" / ASSIGNMENT / shipped
        ).read_bytes()
        assert (course / "autograded" / "tamper" / ASSIGNMENT / shipped).read_bytes() == (
            ROOT / "solutions" / ASSIGNMENT / shipped
        ).read_bytes()
    for name in NOTEBOOKS:
        assert graded["scores"]["tamper"][name]["cells"] == graded["scores"]["mix_a"][name]["cells"], name


def test_hidden_tests_run_but_stay_out_of_the_feedback(graded: dict) -> None:
    course = graded["course"]
    auto_q1 = read(course / "autograded" / "edge" / ASSIGNMENT / f"{Q1}.ipynb")
    assert "hidden_shapes" in cell_by_id(auto_q1, "q1_a_test").source
    # hard-coded answers get through the visible check and fail on a hidden shape
    errors = [o for o in cell_by_id(auto_q1, "q1_a_test").outputs if o.output_type == "error"]
    assert [e.ename for e in errors] == ["KeyError"]
    for student in EXPECTED:
        for name in NOTEBOOKS:
            page = (course / "feedback" / student / ASSIGNMENT / f"{name}.html").read_text(encoding="utf-8")
            assert "BEGIN HIDDEN TESTS" not in page and "hidden_shapes" not in page, (student, name)


def test_edge_cases_score_zero_only_where_they_happen(graded: dict) -> None:
    cells = {nb: graded["scores"]["edge"][nb]["cells"] for nb in NOTEBOOKS}
    course = graded["course"]
    # deleted test cell: restored, and scores 0
    assert cells[Q2]["q2_e_test"] == 0
    restored = cell_by_id(read(course / "autograded" / "edge" / ASSIGNMENT / f"{Q2}.ipynb"), "q2_e_test")
    assert "restored" in restored.source
    # edited test cell: the original ran
    edited = cell_by_id(read(course / "autograded" / "edge" / ASSIGNMENT / f"{Q3}.ipynb"), "q3_a_test")
    assert "attainable_flops(64, 4096, 4096)" in edited.source and cells[Q3]["q3_a_test"] == 0
    # endless loop: interrupted at the timeout, the later parts still graded
    looped = cell_by_id(read(course / "autograded" / "edge" / ASSIGNMENT / f"{Q4}.ipynb"), "q4_a_test")
    assert any(o.output_type == "error" for o in looped.outputs)
    assert cells[Q4] == {"q4_a_test": 0, "q4_b_test": 1, "q4_c_test": 1}
    # os._exit: the notebook stops there, its remaining tests score 0
    assert cells[Q5] == {"q5_a_test": 2, "q5_b_test": 0, "q5_c_test": 0}
    assert "The kernel died" in graded["auto"].stdout + graded["auto"].stderr
