"""End to end: the instructor workflow on the `rooflines` assignment, in the session's copy of the course
(tests/session_course.py, shared with the preflight's and the editions' tests).

generate_assignment -> a class of submissions built from the release notebooks (grading_support.build_class)
-> the course's grading command (``python -m grading autograde``, two notebooks at a time) -> its class report
-> nbgrader's generate_feedback and export, then exact scores (grading_support.expected_scores, from the points
in the grade-cell metadata). Serial ``nbgrader autograde`` grades the hardest student too (edge), and the two
results are compared cell by cell.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from pathlib import Path

import pytest
import session_course
from bs4 import BeautifulSoup
from grading_support import (
    ASSIGNMENT,
    NOTEBOOKS,
    ROOT,
    SHIPPED_FILES,
    cell_by_id,
    comparable,
    expected_scores,
    read,
    rubric,
    totals,
)

Q1, Q2, Q3, Q4, Q5, Q6, Q7, Q8 = NOTEBOOKS

# Points per grade cell, from the grade-cell metadata of the sources (the one place they are written).
RUBRIC = {name: rubric(name) for name in NOTEBOOKS}
TOTAL = totals()  # 10, 8, 7, 5, 5, 14, 8, 10
EXPECTED = expected_scores()
# Every (student, notebook) that has an autograded version: all but the corrupt file.
GRADED = [(student, name) for student in EXPECTED for name in NOTEBOOKS if (student, name) != ("corrupt", Q1)]

# The message (its catalogue id) a failing check must show, by student and notebook.
MESSAGES = {
    ("mix_a", Q1): "q1.int8-two-bytes",
    ("mix_a", Q2): "q2.forgot-write-back",
    ("mix_a", Q5): "q5.a.sparse-peak",
    ("mix_b", Q1): "q1.g.swapped",
    ("mix_b", Q2): "q2.activations-one-byte",
    ("mix_b", Q5): "q5.other-variant",
    ("tamper", Q1): "q1.int8-two-bytes",  # tamper hands in mix_a's answers
    ("tamper", Q2): "q2.forgot-write-back",
    ("tamper", Q5): "q5.a.sparse-peak",
    ("mix_a", Q6): "q6.sum-not-max",
    ("mix_b", Q6): "q6.e.sequences",
    ("tamper", Q6): "q6.sum-not-max",
    ("mix_a", Q7): "q7.both-ways-added",
    ("mix_b", Q7): "q7.d.one-link",
    ("tamper", Q7): "q7.both-ways-added",
    ("mix_a", Q8): "q8.a.half",
    ("mix_b", Q8): "q8.c.small-batch-rule",
    ("tamper", Q8): "q8.a.half",
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
    Q5: ["q5.c.hidden-sheet", "q5.d.hidden-table"],
    Q6: [
        "q6.a.hidden-model",
        "q6.b.hidden-model",
        "q6.c.hidden-model",
        "q6.d.hidden-model",
        "q6.e.hidden-model",
        "q6.f.hidden-model",
        "q6.g.hidden-model",
    ],
    Q7: ["q7.a.hidden-shape", "q7.b.hidden-shape", "q7.c.hidden-chip", "q7.d.hidden-chip"],
    Q8: ["q8.a.hidden-cpu", "q8.b.hidden-machine", "q8.c.hidden-machine"],
}

# Graded by plain serial `nbgrader autograde` too (session_course.SERIAL_STUDENTS): hard-coded answers failing hidden
# checks, a deleted and an edited test cell, a time-out and a kernel death.
SERIAL_STUDENTS = session_course.SERIAL_STUDENTS
CELL_TIMEOUT_S = session_course.CELL_TIMEOUT_S


@functools.cache
def _text(path: Path) -> str:
    """Visible text of a feedback page (each page read once: the reference's are read for every message)."""
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser").get_text()


@pytest.fixture(scope="module")
def graded(graded_class: dict) -> dict:
    """The class graded in the session's course (tests/session_course.py): the grading command's run, its report,
    nbgrader's feedback and export, the re-run, and serial stock nbgrader's grading of the edge student."""
    return graded_class["rooflines"]


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_exact_scores_per_notebook(graded: dict, student: str) -> None:
    got = {nb: graded["scores"][student][nb]["score"] for nb in NOTEBOOKS}
    assert got == pytest.approx(EXPECTED[student]), graded["auto"].stdout[-4000:] + graded["auto"].stderr[-4000:]


def test_export_totals(graded: dict) -> None:
    assert graded["export"].returncode == 0, graded["export"].stderr
    with open(graded["course"] / "grades.csv", newline="") as fh:  # the course's other editions have rows too
        rows = {row["student_id"]: row for row in csv.DictReader(fh) if row["assignment"] == ASSIGNMENT}
    for student, per_nb in EXPECTED.items():
        assert float(rows[student]["raw_score"]) == pytest.approx(sum(per_nb.values()))
        assert float(rows[student]["max_score"]) == pytest.approx(sum(TOTAL.values()))


def test_a_corrupt_notebook_costs_only_itself(graded: dict) -> None:
    auto, course = graded["auto"], graded["course"]
    assert auto.returncode == 1, auto.stdout[-3000:] + auto.stderr[-3000:]
    listed = [line.strip() for line in auto.stdout.splitlines() if line.strip().startswith("corrupt / ")]
    assert len(listed) == 1 and listed[0].startswith(f"corrupt / {Q1}:") and "JSON" in listed[0], auto.stdout
    assert not (course / "autograded" / "corrupt" / ASSIGNMENT / f"{Q1}.ipynb").exists()
    for student in EXPECTED:
        for name in NOTEBOOKS:
            if (student, name) != ("corrupt", Q1):
                assert (course / "autograded" / student / ASSIGNMENT / f"{name}.ipynb").is_file(), (student, name)
    # graded in full: the same cells and scores as the reference answers
    for name in [Q2, Q3, Q4, Q5, Q6, Q7, Q8]:
        assert graded["scores"]["corrupt"][name]["cells"] == graded["scores"]["reference"][name]["cells"], name


def test_the_class_report_counts_the_misconceptions_the_class_has(graded: dict) -> None:
    report = graded["report"]
    assert report.returncode == 0, report.stdout + report.stderr
    with (graded["course"] / "class-report" / "misconceptions.csv").open(newline="") as fh:
        rows = {row["id"]: row for row in csv.DictReader(fh)}
    graded_per_notebook = {name: sum((s, name) != ("corrupt", Q1) for s in EXPECTED) for name in NOTEBOOKS}
    notebook_of = {f"q{i + 1}": name for i, name in enumerate(NOTEBOOKS)}
    for msg_id in set(MESSAGES.values()):
        students = {s for (s, _), m in MESSAGES.items() if m == msg_id}
        notebook = notebook_of[msg_id.split(".")[0]]
        assert (int(rows[msg_id]["students"]), int(rows[msg_id]["of"])) == (
            len(students),
            graded_per_notebook[notebook],
        ), (msg_id, rows[msg_id])
    with (graded["course"] / "class-report" / "problems.csv").open(newline="") as fh:
        problems = {(r["student"], r["notebook"]) for r in csv.DictReader(fh)}
    assert problems == {("corrupt", Q1), ("edge", Q4), ("edge", Q5)}


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
    for student, name in GRADED:
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
    for student, name in GRADED:
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
    assert cells[Q5] == {"q5_c_test": 3, "q5_d_test": 0}
    assert f"edge / {Q5}:" in graded["auto"].stdout and "kernel died" in graded["auto"].stdout


def test_exercises_are_generated_from_solutions(graded: dict) -> None:
    """The release the fixture generated in its copy of the course must equal the committed exercises/."""
    course = graded["course"]
    committed = sorted(p.name for p in (ROOT / "exercises" / ASSIGNMENT).glob("*.ipynb"))
    assert committed == sorted(f"{n}.ipynb" for n in NOTEBOOKS)
    for name in NOTEBOOKS:
        fresh = comparable(course / "exercises" / ASSIGNMENT / f"{name}.ipynb")
        assert fresh == comparable(ROOT / "exercises" / ASSIGNMENT / f"{name}.ipynb"), (
            f"exercises/{ASSIGNMENT}/{name}.ipynb is out of date: run `nbgrader generate_assignment {ASSIGNMENT} --force`"
        )
    for name in SHIPPED_FILES:  # the message catalogue travels with the notebooks
        fresh = (course / "exercises" / ASSIGNMENT / name).read_bytes()
        assert fresh == (ROOT / "exercises" / ASSIGNMENT / name).read_bytes(), (
            f"exercises/{ASSIGNMENT}/{name} is out of date: run `nbgrader generate_assignment {ASSIGNMENT} --force`"
        )


def test_scores_equal_serial_nbgrader_cell_by_cell(graded: dict) -> None:
    for student in SERIAL_STUDENTS:
        assert graded["scores"][student] == graded["serial"][student], student


def _joined_streams(outputs: list[dict]) -> list[dict]:
    """Outputs as a reader sees them: consecutive writes to one stream are one text, however they were flushed.

    >>> one, two = ({"output_type": "stream", "name": "stdout", "text": t} for t in (["passed\\n"], "passed"))
    >>> _joined_streams([one]) == _joined_streams([two, {**two, "text": ["\\n"]}]) == [{**one, "text": "passed\\n"}]
    True
    """
    joined: list[dict] = []
    for o in outputs:
        if o["output_type"] == "stream":  # a text is saved as one string or as a list of lines: one string here
            o = {**o, "text": "".join(o["text"])}
            if joined and joined[-1]["output_type"] == "stream" and joined[-1]["name"] == o["name"]:
                joined[-1] = {**joined[-1], "text": joined[-1]["text"] + o["text"]}
                continue
        joined.append(o)
    return joined


def _visible(path: Path) -> list[tuple[object, ...]]:
    """A notebook's cells as a reader sees them: sources, and outputs without images or timing metadata."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [
        (
            cell["cell_type"],
            cell["source"],
            [
                (o["output_type"], o.get("ename"), o.get("evalue"), o.get("text"), o.get("data", {}).get("text/plain"))
                for o in _joined_streams(cell.get("outputs", []))
            ],
        )
        for cell in nb["cells"]
    ]


def test_autograded_notebooks_equal_serial_nbgrader(graded: dict) -> None:
    for student in SERIAL_STUDENTS:
        for name in NOTEBOOKS:
            ours, theirs = (
                c / "autograded" / student / ASSIGNMENT / f"{name}.ipynb"
                for c in (graded["course"], graded["serial_course"])
            )
            mine, serial = _visible(ours), _visible(theirs)
            differ = [(i, a, b) for i, (a, b) in enumerate(zip(mine, serial)) if a != b]
            assert len(mine) == len(serial) and not differ, (student, name, differ[:1])


PROBLEMS = {("corrupt", Q1), ("edge", Q4), ("edge", Q5)}


def test_each_problem_is_listed_with_its_reason_and_the_exit_code_says_so(graded: dict) -> None:
    auto, course = graded["auto"], graded["course"]
    assert auto.returncode == 1, auto.stdout[-3000:] + auto.stderr[-3000:]
    listed = json.loads((course / "autograded" / f"grading-{ASSIGNMENT}.json").read_text())["problems"]
    found = {(p["student"], p["notebook"]): p for p in listed}
    assert set(found) == PROBLEMS
    assert not found[("corrupt", Q1)]["graded"] and "JSON" in found[("corrupt", Q1)]["reason"]
    assert found[("edge", Q4)]["graded"] and f"after {CELL_TIMEOUT_S}" in found[("edge", Q4)]["reason"]
    assert found[("edge", Q5)]["graded"] and "kernel died" in found[("edge", Q5)]["reason"]
    for student, name in found:
        assert any(line.strip().startswith(f"{student} / {name}:") for line in auto.stdout.splitlines()), auto.stdout


def test_progress_is_logged_line_by_line_when_not_on_a_terminal(graded: dict) -> None:
    total = len(EXPECTED) * len(NOTEBOOKS)
    assert f"[{total}/{total}] " in graded["auto"].stderr
    assert "\r" not in graded["auto"].stderr


def test_the_report_shows_every_part_and_draws_it(graded: dict) -> None:
    out = graded["course"] / "class-report"
    with (out / "scores.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for name, cells in graded["scores"]["reference"].items():
        for part in cells["cells"]:
            counts = {r["score"]: int(r["students"]) for r in rows if (r["question"], r["part"]) == (name, part)}
            assert sum(counts.values()) == len(EXPECTED), (name, part, counts)
            assert counts.get("not graded", 0) == (1 if name == Q1 else 0), (name, part, counts)
    image = (out / "report.png").read_bytes()
    assert image.startswith(b"\x89PNG") and len(image) > 20_000


def test_a_rerun_grades_only_what_is_missing(graded: dict) -> None:
    rerun, total = graded["rerun"], len(EXPECTED) * len(NOTEBOOKS)
    # mix_a's deleted Q2, and the corrupt Q1 again (still not a notebook); every other notebook is kept
    assert f"Graded 1 notebooks; {total - 2} already graded were kept." in rerun.stdout, rerun.stdout + rerun.stderr
    assert rerun.returncode == 1 and "[2/2] " in rerun.stderr
    assert graded["scores_after_rerun"] == graded["scores"]
