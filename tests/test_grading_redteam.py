"""Attacks by a reader of the grader's code, each test asserting the safe behaviour (it fails while the attack works).

1. A submission without the locked set-up cell above its checks (deleted, or moved below them) makes the judge look ``isclose``, ``matches``, ``hint`` and the
   constants up in the student's kernel: a wrong answer passes q3 (b), and its hidden expected values are
   sent to the kernel, which can print them into the feedback.
2. Honest code that uses a name a visible test cell defined (as it does in Jupyter) fails: the kernel never
   runs a test cell, while ``nbgrader autograde`` does.
4. One ``MemoryError`` a student's function raises inside a check zeroed the whole notebook.
5. Display updates escaped ``--output``; an exact ``Fraction`` (a ``numbers.Real``) was not read as a number;
   names an instructor binds by ``import *`` or ``:=`` were looked up in the kernel.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from grading_support import (
    ASSIGNMENT,
    ROOT,
    _reference,
    cell_by_id,
    generated_course,
    gradebook_scores,
    grading_command,
    read,
)

sys.path.insert(0, str(Path(__file__).parent))
from test_grading_judge import Q3, _notebook, _passed, _run

from grading.sandbox import default_bwrap, probe

pytestmark = pytest.mark.skipif(probe(default_bwrap()) is not None, reason="no sandbox on this machine")

# The student's own helpers, defined in a cell of their own above the checks: a "closeness" that records what
# it is asked and says yes (except the one question q3 (b) needs answered no), and helpers that pass anything.
FAKE_HELPERS = """
import numpy as np, matplotlib.pyplot as plt
seen = []
def isclose(a, b, **k):
    seen.append(b)
    return len(seen) > 1   # q3 (b) first asks that 4096 and 1024 differ
def matches(*a, **k):
    return True
def hint(*a, **k):
    return ''
BF16_FLOPS_PER_S = 1.97e14
HBM_BYTES_PER_S = 8.2e11
"""
WRONG_Q3B = "def critical_batch(D, F):\n    return float(D)  # wrong at every shape\n"
PRINT_SEEN = "print('SEEN', seen)"
# q3 (b)'s hidden expected values (rel_tol 0.01 each): none of them may reach the kernel
HIDDEN_Q3B = ["156.94", "140.76", "122.47"]


def _without_setup(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    setup = cell_by_id(nb, "q3_setup")
    nb.cells[nb.cells.index(setup)] = nbformat.v4.new_code_cell(FAKE_HELPERS)
    nb.cells.append(nbformat.v4.new_code_cell(PRINT_SEEN))
    return nb


def test_a_deleted_setup_cell_hands_the_kernel_no_trusted_name() -> None:
    """Finding 1 (one notebook, as a worker runs it): q3 (b) is wrong and must fail; the hidden values stay out."""
    outputs = _run(_without_setup(_notebook(Q3, {"q3_b_answer": WRONG_Q3B})), Q3, timeout=20, graded=False)
    assert _passed(outputs).get("q3_b_test") is not True, "a wrong q3 (b) passed with the student's own isclose"
    text = json.dumps(outputs)
    for value in HIDDEN_Q3B:
        assert value not in text, f"the hidden expected value {value} reached the kernel and its output"


@pytest.fixture(scope="module")
def graded(course_template: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Finding 1 end to end: nbgrader's own sanitizing (DeduplicateIds, OverwriteCells with add_missing_cells)
    lets both submissions through unchanged; the grading command then scores them."""
    course = generated_course(course_template, tmp_path_factory.mktemp("redteam") / "course")
    release = ROOT / "exercises" / ASSIGNMENT
    reference = _reference(read(release / f"{Q3}.ipynb"), read(ROOT / "solutions" / ASSIGNMENT / f"{Q3}.ipynb"))
    students = {}
    # "nosetup": the set-up cell deleted (add_missing_cells only puts back grade cells)
    nb = nbformat.reads(nbformat.writes(reference), as_version=4)
    cell_by_id(nb, "q3_b_answer").source = WRONG_Q3B
    students["nosetup"] = _without_setup(nb)
    # "movedsetup": the set-up cell kept, unchanged, but moved below the last check (nbgrader does not look at
    # the order of cells; OverwriteCells finds its text intact), with the student's helpers where it was
    nb = nbformat.reads(nbformat.writes(reference), as_version=4)
    cell_by_id(nb, "q3_b_answer").source = WRONG_Q3B
    setup = cell_by_id(nb, "q3_setup")
    nb.cells[nb.cells.index(setup)] = nbformat.v4.new_code_cell(FAKE_HELPERS)
    nb.cells.append(setup)
    nb.cells.append(nbformat.v4.new_code_cell(PRINT_SEEN))
    students["movedsetup"] = nb
    # "copiedcell": an honest student who copied the q3 (b) answer cell (JupyterLab keeps its metadata) to try
    # something in the copy; every answer is the reference one
    nb = nbformat.reads(nbformat.writes(reference), as_version=4)
    answer = cell_by_id(nb, "q3_b_answer")
    copy = nbformat.from_dict(json.loads(json.dumps(answer)))
    copy["id"] = "answer-copy"
    copy.source = "print(critical_batch(4096, 4096))"
    nb.cells.insert(nb.cells.index(answer) + 1, copy)
    students["copiedcell"] = nb
    for student, notebook in students.items():
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for shipped in ("feedback.py", "feedback.csv"):
            shutil.copy2(release / shipped, folder / shipped)
        nbformat.write(notebook, folder / f"{Q3}.ipynb")
    run = grading_command(course, "autograde", ASSIGNMENT, "--workers", "1", "--timeout", "20", timeout=500)
    listed = json.loads((course / "autograded" / f"grading-{ASSIGNMENT}.json").read_text())["problems"]
    return {"course": course, "run": run, "scores": gradebook_scores(course), "problems": listed}


@pytest.mark.parametrize("student", ["nosetup", "movedsetup"])
def test_a_submission_cannot_drop_or_move_the_setup_cell(graded: dict, student: str) -> None:
    score = graded["scores"].get(student, {}).get(Q3, {}).get("q3_b_test")
    assert score is not None, graded["run"].stdout[-2000:] + graded["run"].stderr[-2000:]
    assert score[0] == 0, f"{student}: a wrong q3 (b) scored {score[0]} of {score[1]}"
    autograded = graded["course"] / "autograded" / student / ASSIGNMENT / f"{Q3}.ipynb"
    if autograded.exists():
        text = autograded.read_text(encoding="utf-8")
        for value in HIDDEN_Q3B:
            assert value not in text, f"{student}: hidden expected value {value} is in the autograded notebook"


def test_an_answer_may_use_a_name_a_visible_test_cell_defined() -> None:
    """Finding 2: in Jupyter (and under ``nbgrader autograde``) the Part (a) test cell has defined ``batches``."""
    plot = (
        "fig, ax = plt.subplots(figsize=(8, 4))\n"
        "for size in (4096, 1024):\n"
        "    ax.plot(batches, attainable_flops(batches, size, size), label=f'D = F = {size}')\n"
        "ax.set_xlabel('batch size B')\n"
        "ax.set_ylabel('attainable bfloat16 FLOPs/s')\n"
        "ax.legend()\n"
    )
    assert all(_passed(_run(_notebook(Q3, {"q3_c_answer": plot}), Q3, timeout=20)).values())


HUGE_REPLY = """
import sys, types
_fake = types.ModuleType('roofline_grader')
_fake.answer = lambda request, namespace: 'x' * 300_000_000
sys.modules['roofline_grader'] = _fake
"""


MEMFD = """
import os, time
fds = []
for i in range(40):                 # 40 x 15 MiB = 600 MiB, over the 256 MiB room; each file under 16M
    fd = os.memfd_create(f"m{i}")
    for _ in range(15):
        os.write(fd, b"x" * (1 << 20))
    fds.append(fd)
time.sleep(1.5)                     # several polls of the watchdog
print("SURVIVED")
"""


NAIVE_Q1A = (
    "import numpy as np\n"
    "def bytes_loaded(B, D, F):\n"
    "    # counts the int8 entries by building the arrays (the second one in float64 by mistake)\n"
    "    return np.zeros((B, D), np.int8).size + np.zeros((D, F)).size\n"
)


def test_one_clean_memory_error_in_a_check_costs_that_check_only() -> None:
    """Finding 5: the hidden shape (256, 8192, 28672) makes this function raise a clean MemoryError (RLIMIT_AS) in
    the kernel; the room itself never went over. ``over_limit`` reads that check's error text and zeroes the whole
    notebook; nbgrader would fail the checks that call it and score the rest."""
    from test_grading_judge import Q1

    passed = _passed(_run(_notebook(Q1, {"q1_a_answer": NAIVE_Q1A}), Q1, timeout=30, graded=False))
    assert passed, "the whole notebook was left ungraded (0 points) for one MemoryError inside a check"
    assert passed["q1_b_test"] and passed["q1_c_test"] and passed["q1_e_test"]


AMPLIFIED_DISPLAY = """
from IPython.display import display, update_display
for _ in range(200):
    display('.', display_id='same')                                              # 200 tiny outputs: counted
update_display({'text/plain': 'y' * 200_000}, raw=True, display_id='same')       # not counted: 200 x 200 kB
"""


def test_display_updates_count_against_the_output_limit() -> None:
    """Finding 6: ``update_display_data`` is applied by nbclient without passing through ``Watched.output``, so
    the ``--output`` limit (16M) never sees it; one 200 kB update fills 200 outputs: a 40 MB notebook."""
    from test_grading_judge import SOURCES

    from grading.execute import Task, execute

    nb = _notebook(Q3)
    nb.cells.append(nbformat.v4.new_code_cell(AMPLIFIED_DISPLAY))
    files = {p.name: p.read_bytes() for p in SOURCES.iterdir() if p.is_file() and p.suffix != ".ipynb"}
    config = (("nbgrader_config.py", (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")),)
    task = Task(
        "ada", "rooflines", Q3, nbformat.writes(nb), files, config, {"Execute": {"timeout": 30}}, default_bwrap()
    )
    outcome = execute(task)
    size = len(outcome.executed or "")
    assert outcome.error is not None or size < 20 << 20, f"graded, with a {size >> 20} MB executed notebook"


EXACT_Q1D = (
    "from fractions import Fraction\n"
    "def arithmetic_intensity(B, D, F):\n"
    "    # exact, as the docstring asks: a Fraction is a numbers.Real\n"
    "    return Fraction(total_ops(B, D, F), bytes_loaded(B, D, F) + bytes_written(B, D, F))\n"
)


def test_an_exact_fraction_is_graded_as_nbgrader_grades_it() -> None:
    """Finding 7: ``Fraction`` is a ``numbers.Real`` and passes q1 (d) under ``nbgrader autograde``; the kernel
    sends it as an opaque ``<Fraction>``, so ``isinstance(got, Real)`` fails in the judge."""
    from test_grading_judge import Q1

    assert all(_passed(_run(_notebook(Q1, {"q1_d_answer": EXACT_Q1D}), Q1, timeout=30)).values())


@pytest.mark.parametrize(
    ("setup", "check"),
    [
        ("from feedback import *", "assert hint('q') == 'instructor'"),
        ("helpers = [hint := (lambda m: 'instructor') for _ in (1,)]", "assert hint('q') == 'instructor'"),
        (
            "def _make():\n    global hint\n    hint = lambda m: 'instructor'\n_make()",
            "assert hint('q') == 'instructor'",
        ),
    ],
    ids=["star import", "walrus in a comprehension", "global in a function"],
)
def test_a_name_the_instructor_bound_is_never_looked_up_in_the_kernel(tmp_path: Path, setup: str, check: str) -> None:
    """Finding 1, generalised: ``_bound_at_top`` misses names a set-up cell binds by ``import *``, by ``:=`` inside a
    comprehension or by ``global``; the judge then asks the kernel for them and the student's version wins."""
    from grading.judge import Judge

    asked: list[str] = []

    def ask(request: dict) -> dict:
        asked.extend(request.get("names", []))
        return {"names": {name: ["fn"] for name in request.get("names", [])}}

    files = {"feedback.py": b"__all__ = ['hint']\ndef hint(m):\n    return 'instructor'\n"}
    judge = Judge.for_files(ask, files, tmp_path)
    judge.setup(setup)
    judge.check(check)
    assert "hint" not in asked, "the judge asked the student's kernel for the instructor's own `hint`"
