"""The judge decides every point: forged answers, leaks and honest code, one notebook at a time.

Each case runs a real notebook in the sandbox (``grading.execute.execute``), exactly as the
grading command's workers do: the answer cells in the student's kernel, every graded check
in the grader's process. The notebook is the instructor's source (hidden tests included, as
nbgrader restores them from the gradebook) with the student's code in the answer cells.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import nbformat
import pytest
from grading_support import ROOT, cell_by_id, grade_id, is_answer_cell, is_grade_cell, read, solution_body

from grading.execute import Task, cell_role, execute
from grading.judge import AxesData, Judge, Opaque, decode, encode, parse_reply
from grading.sandbox import default_bwrap

SOURCES = ROOT / "solutions" / "rooflines"
Q1, Q3 = "q1_int8_matmul", "q3_roofline_plot"
WRONG_Q1 = {  # every Q1 answer wrong: each returns 1
    "q1_a_answer": "def bytes_loaded(B, D, F):\n    return 1",
    "q1_b_answer": "def bytes_written(B, D, F):\n    return 1",
    "q1_c_answer": "def total_ops(B, D, F):\n    return 1",
    "q1_d_answer": "def arithmetic_intensity(B, D, F):\n    return 1",
    "q1_e_answer": "def critical_batch(peak_ops_per_s, hbm_bytes_per_s):\n    return 1",
    "q1_f_answer": "def t_math(B, D, F):\n    return 1\n\n\ndef t_comms(B, D, F):\n    return 1",
    "q1_g_answer": "def t_lower(B, D, F):\n    return 1\n\n\ndef t_upper(B, D, F):\n    return 1",
}


def _notebook(
    name: str, answers: dict[str, str] | None = None, added: list[str] | None = None
) -> nbformat.NotebookNode:
    """The source notebook with the reference answers, then ``answers`` replacing some, then ``added`` cells."""
    nb = read(SOURCES / f"{name}.ipynb")
    for cell in nb.cells:
        if is_answer_cell(cell):
            cell.source = (answers or {}).get(grade_id(cell), solution_body(cell.source))
    for code in added or []:
        nb.cells.append(nbformat.v4.new_code_cell(code))
    return nb


def _run(nb: nbformat.NotebookNode, name: str, timeout: int = 60, graded: bool = True) -> dict[str, list]:
    """Execute in the sandbox; the outputs of each cell, by grade id (``{}`` for a notebook not graded at all,
    allowed only when ``graded`` is false: it scores 0)."""
    files = {p.name: p.read_bytes() for p in SOURCES.iterdir() if p.is_file() and p.suffix != ".ipynb"}
    config = (("nbgrader_config.py", (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")),)
    setups = tuple(c.source for c in read(SOURCES / f"{name}.ipynb").cells if cell_role(c) == "setup")
    cli = {"Execute": {"timeout": timeout}}
    task = Task("ada", "rooflines", name, nbformat.writes(nb), files, config, cli, default_bwrap(), setups=setups)
    outcome = execute(task)
    if outcome.error is not None and not graded:
        return {}
    assert outcome.error is None and outcome.executed, outcome
    executed = nbformat.reads(outcome.executed, as_version=4)
    return {grade_id(c) or f"cell {i}": c.get("outputs", []) for i, c in enumerate(executed.cells)}


def _passed(outputs: dict[str, list]) -> dict[str, bool]:
    """Whether each graded check passed (no error output), by grade id."""
    return {
        gid: not any(o["output_type"] == "error" for o in outs)
        for gid, outs in outputs.items()
        if gid.endswith("_test")
    }


def _hidden_lines(name: str) -> list[str]:
    """Every line of the notebook's hidden tests that is long enough to be told apart from ordinary text."""
    lines = []
    for cell in read(SOURCES / f"{name}.ipynb").cells:
        if is_grade_cell(cell) and "### BEGIN HIDDEN TESTS" in cell.source:
            block = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
            lines += [line.strip() for line in block.splitlines() if len(line.strip()) > 20]
    return lines


# Code added to the first answer cell of an all-wrong Q1, each trying to make the checks pass anyway.
FORGERIES = {
    "rebinds isclose": "isclose = lambda *a, **k: True",
    "through an alias": "import math\nself = math\nself.isclose = lambda *a, **k: True",
    "patches feedback.matches": "import feedback\nalias = feedback\nalias.matches = lambda *a, **k: True",
    "patches builtins": "import builtins\nbuiltins.isinstance = lambda *a: True",
    "input transformer": "get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])",
    "AssertionError replaced": "import builtins\nclass AssertionError(Exception):\n    pass\nbuiltins.AssertionError = AssertionError",
    "Real.register": "from numbers import Real\nReal.register(str)",
    "rebinds hint": "def hint(*a, **k):\n    return ''",
    "exec in globals": "exec('isclose = lambda *a, **k: True', globals())",
    "sys.modules": "import sys\nsys.modules['math'].isclose = lambda *a, **k: True",
}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_wrong_answers_behind_a_forgery_score_nothing(forgery: str) -> None:
    answers = dict(WRONG_Q1)
    answers["q1_a_answer"] += "\n\n" + FORGERIES[forgery]
    if forgery == "patches builtins":  # it breaks the kernel itself: the notebook is left ungraded, at its time-out
        assert not any(_passed(_run(_notebook(Q1, answers), Q1, timeout=3, graded=False)).values())
        return
    outputs = _run(_notebook(Q1, answers), Q1, timeout=10)
    assert not any(_passed(outputs).values())
    # each check failed on its own verdict, not by running out of time
    assert not [gid for gid, outs in outputs.items() if any(o.get("ename") == "CellTimeoutError" for o in outs)]


CLEVER_VALUES = {
    "equals everything": """
class Anything(float):
    def __eq__(self, other):
        return True
    __hash__ = float.__hash__
    def __float__(self):
        return 0.0
def bytes_loaded(B, D, F):
    return Anything(0.0)
""",
    "a string registered as a number": """
from numbers import Real
Real.register(str)
def bytes_loaded(B, D, F):
    return "B * D + D * F"
""",
    "not a number": "def bytes_loaded(B, D, F):\n    return float('nan')",
    "infinite": "def bytes_loaded(B, D, F):\n    return float('inf')",
    "a lookup of the check": """
import sys
def bytes_loaded(B, D, F):
    # look up the caller's frames for an expected value, as a hidden check once exposed it
    frame = sys._getframe(1)
    while frame is not None:
        for key in ("want", "expected"):
            if key in frame.f_locals:
                return frame.f_locals[key]
        frame = frame.f_back
    return 0
""",
    "right only outside the grader": """
import inspect
def bytes_loaded(B, D, F):
    if any("roofline_grader" in str(f.frame.f_globals.get("__name__")) for f in inspect.stack()):
        return 0
    return B * D + D * F
""",
}


@pytest.mark.parametrize("case", sorted(CLEVER_VALUES))
def test_a_value_is_judged_as_plain_data(case: str) -> None:
    """Part (a) fails, whatever the object returned claims about itself; the other parts keep their points."""
    passed = _passed(_run(_notebook(Q1, {"q1_a_answer": CLEVER_VALUES[case]}), Q1))
    assert passed.pop("q1_a_test") is False
    # (d), (f) and (g) call bytes_loaded (through arithmetic_intensity and t_comms); (b), (c) and (e) stand alone
    for gid in ("q1_d_test", "q1_f_test", "q1_g_test"):
        passed.pop(gid)
    assert all(passed.values()), passed


def test_a_function_that_prints_its_callers_source_shows_no_check() -> None:
    spy = """
import inspect, linecache, sys
shown = set()  # each text once: the checks call this many times, mostly with what an earlier call printed
def bytes_loaded(B, D, F):
    for info in inspect.stack():
        for text in (
            f"FRAME {info.filename} {info.function} {info.code_context}",
            "SOURCE " + "".join(linecache.getlines(info.filename))[:5000],
            f"LOCALS {({k: repr(v)[:3000] for k, v in info.frame.f_locals.items()})}",
        ):
            if text not in shown:
                shown.add(text)
                print(text)
    return B * D + D * F
"""
    outputs = _run(_notebook(Q1, {"q1_a_answer": spy}, added=["bytes_loaded(1, 2, 3)"]), Q1)
    assert all(_passed(outputs).values())
    text = json.dumps(outputs)
    assert "FRAME" in text  # the spy ran in its own cell, where the student may print what they like
    for line in _hidden_lines(Q1):
        assert line not in text, line
    assert "hidden_shapes" not in text and "HIDDEN TESTS" not in text


HONEST = {
    "%matplotlib inline": {Q3: ("q3_c_answer", "%matplotlib inline\n")},
    "%%time": {Q1: ("q1_a_answer", "%%time\n")},
    # after the first checks: the grader's code must reach the kernel again, not fail every later check
    "drops the grader's module": {Q1: ("q1_c_answer", "import sys\nsys.modules.pop('roofline_grader', None)\n")},
    "import sys": {Q1: ("q1_a_answer", "import sys\nprint(sys.version_info[0])\n")},
    "IPython.display": {Q1: ("q1_b_answer", "from IPython.display import display\ndisplay(3)\n")},
    "a given constant declared again": {Q1: ("q1_f_answer", "INT8_OPS_PER_S = 3.94e14\n")},
    "from math import *": {Q1: ("q1_c_answer", "from math import *\n")},
    "an exact Fraction": {
        Q1: (
            "q1_a_answer",
            "from fractions import Fraction\n\n\ndef bytes_loaded(B, D, F):\n    return Fraction(B * D + D * F, 1)\n\n\n",
        )
    },
}


@pytest.mark.parametrize("case", sorted(HONEST))
def test_honest_code_is_graded_normally(case: str) -> None:
    ((name, (gid, prefix)),) = HONEST[case].items()
    nb = _notebook(name)
    cell = cell_by_id(nb, gid)
    cell.source = prefix + cell.source
    assert all(_passed(_run(nb, name)).values())


def test_a_figure_labelled_with_format_passes_and_a_wrong_curve_fails() -> None:
    plot = textwrap.dedent(
        """
        batch_sizes = np.arange(1, 512)
        fig, ax = plt.subplots(figsize=(8, 4))
        label = "D = F = {}"
        for size in (4096, 1024):
            ax.plot(batch_sizes, attainable_flops(batch_sizes, size, size), label=label.format(size))
        ax.set_xlabel("batch size B")
        ax.set_ylabel("attainable bfloat16 FLOPs/s")
        ax.legend()
        """
    )
    assert all(_passed(_run(_notebook(Q3, {"q3_c_answer": plot}), Q3)).values())
    wrong = plot.replace("attainable_flops(batch_sizes, size, size)", "2 * attainable_flops(batch_sizes, size, size)")
    passed = _passed(_run(_notebook(Q3, {"q3_c_answer": wrong}), Q3))
    assert passed == {"q3_a_test": True, "q3_b_test": True, "q3_c_test": False}


def test_a_kernel_that_does_not_answer_fails_that_check_only() -> None:
    slow = (
        "import time\nstalled = []\n\n\ndef bytes_written(B, D, F):\n"
        "    if B > 4 and len(stalled) < 2:  # twice: the first calls of (b)'s and (d)'s checks\n"
        "        stalled.append(B)\n        time.sleep(60)\n    return B * F"
    )
    outputs = _run(_notebook(Q1, {"q1_b_answer": slow}), Q1, timeout=2)
    passed = _passed(outputs)
    # (b) and (d) each wait out the limit (the time-out holds again after an interrupt); every other check, (f) and
    # (g) calling bytes_written again among them, is answered
    assert [passed.pop(gid) for gid in ("q1_b_test", "q1_d_test")] == [False, False]
    assert all(passed.values()), passed
    # as nbgrader shows a time-out: the interrupted kernel's error, then its own (Execute.error_on_timeout)
    for gid in ("q1_b_test", "q1_d_test"):
        assert [o.get("ename") for o in outputs[gid]] == ["KeyboardInterrupt", "CellTimeoutError"], gid


def test_a_test_cell_saved_unlocked_is_judged_as_nbgrader_locks_it() -> None:
    """nbgrader locks every grade cell that is not a solution, whatever its flag (nbgrader.utils.is_locked): its
    documentation example saves its test cells with "locked": false, and serial nbgrader scores them."""
    right = _notebook(Q1)
    cell_by_id(right, "q1_a_test").metadata["nbgrader"]["locked"] = False
    assert all(_passed(_run(right, Q1)).values())
    wrong = _notebook(Q1, {"q1_a_answer": "def total_ops(B, D, F):\n    return B * D * F"})
    cell_by_id(wrong, "q1_a_test").metadata["nbgrader"]["locked"] = False
    assert _passed(_run(wrong, Q1))["q1_a_test"] is False


def test_the_wire_format_reads_only_plain_data() -> None:
    assert decode(encode([1, 2.5, "x", None, True, (3,), {"k": [1]}])) == [1, 2.5, "x", None, True, (3,), {"k": [1]}]
    forgeries = (
        {"ok": 1},
        ["i", "1"],
        ["f", "0.1"],
        ["b", 1],
        ["a", "object", [1], [1]],
        ["a", "float", [3], [1]],
        ["d", [[1, ["n"]]]],
    )
    for forged in forgeries:
        assert isinstance(decode(forged), Opaque), forged
    axes = decode(["axes", "x", "y", "t", [["l", ["a", "float", [2], [1, 2]], ["a", "float", [2], [3, 4]]]], ["l"]])
    assert isinstance(axes, AxesData) and axes.get_lines()[0].get_label() == "l"
    assert parse_reply("'not json'", 100) is None and parse_reply("'" + "x" * 200 + "'", 100) is None


def test_checks_import_the_instructors_helpers_not_the_students(tmp_path: Path) -> None:
    files = {"feedback.py": b"def hint(msg_id, **values):\n    return 'instructor: ' + msg_id\n"}
    judge = Judge.for_files(lambda request: {"names": {}}, files, tmp_path)
    judge.setup("from feedback import hint\nLIMIT = 2")
    outputs = judge.check("assert LIMIT == 3, hint('q.limit')")
    assert outputs == [
        {
            "output_type": "error",
            "ename": "AssertionError",
            "evalue": "instructor: q.limit",
            "traceback": ["AssertionError: instructor: q.limit"],
        }
    ]
