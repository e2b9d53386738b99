"""End to end: the instructor workflow on the `rooflines` assignment, in a temporary copy of the course.

generate_assignment -> submissions built from the release notebooks -> autograde ->
generate_feedback -> export, then exact scores from the rubric below.
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

import nbformat
import pytest

from grading_support import (
    ASSIGNMENT,
    NOTEBOOKS,
    ROOT,
    cell_by_id,
    copy_course,
    course_env,
    grade_id,
    is_answer_cell,
    nbgrader,
    read,
    solution_body,
)

Q1, Q2, Q3, Q4, Q5 = NOTEBOOKS

# Points per part, from the rubric stated in each notebook.
RUBRIC = {
    Q1: {"q1_a_test": 1, "q1_b_test": 1, "q1_c_test": 1, "q1_d_test": 2, "q1_e_test": 1, "q1_f_test": 2,
         "q1_g_test": 2},
    Q2: {"q2_a_test": 2, "q2_b_test": 1, "q2_c_test": 1, "q2_d_test": 2, "q2_e_test": 2},
    Q3: {"q3_a_test": 3, "q3_b_test": 2, "q3_c_test": 2},
    Q4: {"q4_a_test": 3, "q4_b_test": 1, "q4_c_test": 1},
    Q5: {"q5_a_test": 2, "q5_b_test": 1, "q5_c_test": 2},
}
TOTAL = {nb: sum(parts.values()) for nb, parts in RUBRIC.items()}  # 10, 8, 7, 5, 5

# Expected score per student and notebook: the total minus the parts each mistake breaks.
EXPECTED = {
    "reference": dict(TOTAL),
    "blank": {nb: 0 for nb in NOTEBOOKS},
    # Q1: 2 bytes per int8 breaks (a), (b), and through them (d), (f), (g): 10 - 8.
    # Q2: no write-back in the intensity breaks (d): 8 - 2.  Q5: the sparse peak breaks (a) and (c): 5 - 4.
    "mix_a": {Q1: 2, Q2: 6, Q3: 7, Q4: 5, Q5: 1},
    # Q1: swapped bounds break (g): 10 - 2.  Q2: int8 activations and output break (a), (b), (d): 8 - 5.
    # Q5: the PCIe figures break every part.
    "mix_b": {Q1: 8, Q2: 3, Q3: 7, Q4: 5, Q5: 0},
    # Q1: hard-coded visible values keep only the scalar (e): 1.  Q2: deleted test (e): 8 - 2.
    # Q3: wrong (a) behind an edited test: 7 - 3.  Q4: endless loop in (a): 5 - 3.
    # Q5: os._exit in (b) leaves only (a): 2.
    "edge": {Q1: 1, Q2: 6, Q3: 4, Q4: 2, Q5: 2},
}

# The messages a failing check must show, by student and notebook.
MESSAGES = {
    ("mix_a", Q1): "2 bytes per int8 value",
    ("mix_a", Q2): "write-back of the output",
    ("mix_a", Q5): "with-sparsity figure",
    ("mix_b", Q1): "swapped the lower and upper bounds",
    ("mix_b", Q2): "int8 weights halve only the weight bytes",
    ("mix_b", Q5): "another H100 variant",
}

T_MATH = 2 * 256 * 8192 * 8192 / 3.94e14
T_COMMS = (256 * 8192 + 8192 * 8192 + 256 * 8192) / 8.1e11

# Answer cells that replace the reference answers, student by student.
MISTAKES = {
    "mix_a": {
        Q1: {"q1_a_answer": "def bytes_loaded(B, D, F):\n    return 2 * (B * D + D * F)",
             "q1_b_answer": "def bytes_written(B, D, F):\n    return 2 * B * F"},
        Q2: {"q2_d_answer": "def arithmetic_intensity(B, D, F):\n    return total_flops(B, D, F) / bytes_loaded(B, D, F)"},
        Q5: {"q5_a_answer": "peak_bf16_flops = 1.979e15"},
    },
    "mix_b": {
        Q1: {"q1_g_answer": (
            "def t_lower(B, D, F):\n    return t_math(B, D, F) + t_comms(B, D, F)\n\n\n"
            "def t_upper(B, D, F):\n    return max(t_math(B, D, F), t_comms(B, D, F))")},
        Q2: {"q2_a_answer": "def bytes_loaded(B, D, F):\n    return B * D + D * F",
             "q2_b_answer": "def bytes_written(B, D, F):\n    return B * F"},
        Q5: {"q5_a_answer": "peak_bf16_flops = 1513e12 / 2", "q5_b_answer": "hbm_bandwidth = 2.0e12"},
    },
    "edge": {
        Q1: {
            "q1_a_answer": "def bytes_loaded(B, D, F):\n    return {(4, 3, 5): 27}[(B, D, F)]",
            "q1_b_answer": "def bytes_written(B, D, F):\n    return {(4, 3, 5): 20}[(B, D, F)]",
            "q1_c_answer": "def total_ops(B, D, F):\n    return {(4, 3, 5): 120}[(B, D, F)]",
            "q1_d_answer": "def arithmetic_intensity(B, D, F):\n    return {(4, 3, 5): 120 / 47}[(B, D, F)]",
            "q1_f_answer": (
                f"def t_math(B, D, F):\n    return {{(256, 8192, 8192): {T_MATH!r}}}[(B, D, F)]\n\n\n"
                f"def t_comms(B, D, F):\n    return {{(256, 8192, 8192): {T_COMMS!r}}}[(B, D, F)]"),
            "q1_g_answer": (
                f"def t_lower(B, D, F):\n    return {{(256, 8192, 8192): {max(T_MATH, T_COMMS)!r}}}[(B, D, F)]\n\n\n"
                f"def t_upper(B, D, F):\n    return {{(256, 8192, 8192): {T_MATH + T_COMMS!r}}}[(B, D, F)]"),
        },
        Q3: {"q3_a_answer": "def attainable_flops(B, D, F):\n    return np.full(np.shape(B), BF16_FLOPS_PER_S)"},
        Q4: {"q4_a_answer": "def arithmetic_intensity(B, D, F):\n    while True:\n        pass"},
        Q5: {"q5_b_answer": "import os\nos._exit(1)\nhbm_bandwidth = 3.35e12"},
    },
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

CELL_TIMEOUT_S = 20


def _reference(release: nbformat.NotebookNode, source: nbformat.NotebookNode) -> nbformat.NotebookNode:
    answers = {grade_id(c): solution_body(c.source) for c in source.cells if is_answer_cell(c)}
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    for cell in nb.cells:
        if is_answer_cell(cell):
            cell.source = answers[grade_id(cell)]
    return nb


def _build_submissions(course: Path) -> None:
    for student in ["reference", "blank", "mix_a", "mix_b", "edge", "corrupt"]:
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for name in NOTEBOOKS:
            release = read(ROOT / "exercises" / ASSIGNMENT / f"{name}.ipynb")
            nb = release if student == "blank" else _reference(release, read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb"))
            for gid, src in MISTAKES.get(student, {}).get(name, {}).items():
                cell_by_id(nb, gid).source = src
            if student == "edge" and name == Q2:  # the student deleted a test cell
                nb.cells = [c for c in nb.cells if grade_id(c) != "q2_e_test"]
            if student == "edge" and name == Q3:  # and rewrote another to always pass
                cell_by_id(nb, "q3_a_test").source = 'print("Part (a): passed")'
            path = folder / f"{name}.ipynb"
            if student == "corrupt" and name == Q1:
                path.write_text('{"cells": [ this is not JSON', encoding="utf-8")
            else:
                nbformat.write(nb, path)


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _text(path: Path) -> str:
    """Visible text of a feedback page: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    course = copy_course(tmp_path_factory.mktemp("course"))
    gen = nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    assert gen.returncode == 0, gen.stdout + gen.stderr
    _build_submissions(course)
    before = _digest(course / "submitted")
    # warm matplotlib's font cache so the per-cell timeout only ever catches the endless loop
    subprocess.run([sys.executable, "-c", "import matplotlib.pyplot"], env=course_env(), check=True)
    auto = nbgrader(course, "autograde", ASSIGNMENT, "--create", f"--Execute.timeout={CELL_TIMEOUT_S}")
    feedback = nbgrader(course, "generate_feedback", ASSIGNMENT)
    export = nbgrader(course, "export", "--to", str(course / "grades.csv"))
    dump = subprocess.run([sys.executable, "-c", GRADEBOOK_DUMP, f"sqlite:///{course / 'gradebook.db'}", ASSIGNMENT],
                          env=course_env(), capture_output=True, text=True, check=True)
    return {"course": course, "auto": auto, "feedback": feedback, "export": export, "before": before,
            "after": _digest(course / "submitted"), "scores": json.loads(dump.stdout)}


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
        assert float(rows[student]["max_score"]) == pytest.approx(35)


def test_corrupt_submission_is_reported_and_the_others_are_graded(graded: dict) -> None:
    auto = graded["auto"]
    log = auto.stdout + auto.stderr
    assert auto.returncode != 0
    assert "There was an error processing assignment 'rooflines' for student 'corrupt'" in log
    assert "not valid JSON" in log or "does not appear to be JSON" in log or "JSONDecodeError" in log
    assert not (graded["course"] / "autograded" / "corrupt").exists()
    for student in EXPECTED:
        for name in NOTEBOOKS:
            assert (graded["course"] / "autograded" / student / ASSIGNMENT / f"{name}.ipynb").is_file()


def test_submissions_are_left_untouched(graded: dict) -> None:
    assert graded["after"] == graded["before"]


def test_misconceptions_are_named_in_the_feedback(graded: dict) -> None:
    assert graded["feedback"].returncode == 0, graded["feedback"].stderr
    for (student, name), phrase in MESSAGES.items():
        text = _text(graded["course"] / "feedback" / student / ASSIGNMENT / f"{name}.html")
        assert re.search(r"AssertionError: [^\n]*" + re.escape(phrase), text), (student, name, phrase)
        ref = _text(graded["course"] / "feedback" / "reference" / ASSIGNMENT / f"{name}.html")
        assert not re.search(r"AssertionError: [^\n]*" + re.escape(phrase), ref)


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
