"""Attacks on the judge's new paths (proxies, widened plain data, callbacks), by a reader of the grader's code; each
test asserts the safe behaviour.

1. Hash flooding: a kernel that answers with a set (or a dict) of integers that all hash alike (multiples of
   2**61 - 1, Python's modulus for ``hash(int)``) would make building the set quadratic in the reply's length, on
   the judge's thread, where neither ``--timeout`` nor ``--wall`` reaches: the decoder refuses keys that collide.
2. ``StopIteration`` raised by the student's function inside ``map`` would end the check's iteration early, so
   ``all(map(...))`` would pass a wrong answer (as in nbgrader's own kernel): it arrives as ``RuntimeError``.
3. A check's own binding of a student's name (a loop variable the solution also binds) is read back from the check,
   not from the kernel, whose copy the student controls.
4. A student's function that changes an argument in place never writes into a set-up cell's objects.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from grading_support import ROOT

from grading.execute import Task, cell_role, execute
from grading.harness import judged
from grading.judge import Judge, decode, parse_reply, student_names
from grading.sandbox import default_bwrap, probe

P = (1 << 61) - 1  # hash(k * P) == 0 for every int k


def _forged(reply: dict) -> Judge:
    """A judge whose kernel (its ``roofline_grader`` replaced by the student) answers every call with ``reply``."""

    def ask(request: dict) -> dict:
        if request["op"] == "resolve":
            return {"names": {n: ["h", "0.1", "fn", n] for n in request["names"]}}
        return parse_reply(json.dumps(reply), 64 << 20)

    return Judge(ask, {}, frozenset({"f"}))


@pytest.mark.parametrize("tag", ["set", "d"])
def test_a_reply_of_colliding_keys_costs_the_grader_no_more_than_its_length(tag: str) -> None:
    n = 24_000  # about 0.8 MB of reply
    items = [["i", P * k] for k in range(n)] if tag == "set" else [[["i", P * k], ["n"]] for k in range(n)]
    honest = [["i", k] for k in range(n)] if tag == "set" else [[["i", k], ["n"]] for k in range(n)]
    start = time.perf_counter()
    decode([tag, honest])
    baseline = time.perf_counter() - start
    judge = _forged({"ok": [tag, items]})
    start = time.perf_counter()
    outputs = judge.check("assert f() == 1")
    spent = time.perf_counter() - start
    assert outputs[-1]["ename"] == "AssertionError"
    assert spent < 20 * baseline + 0.5, (
        f"{spent:.1f} s for a reply an honest one of its size decodes in {baseline:.2f} s"
    )


def test_stop_iteration_from_the_students_function_does_not_pass_a_check() -> None:
    judge, _ = judged("def double(x):\n    raise StopIteration\n", student_names={"double"})
    outputs = judge.check("assert all(map(lambda x: double(x) == 2 * x, [1, 2, 3]))")
    assert any(o["output_type"] == "error" for o in outputs), outputs


# --- through the sandboxed kernel -----------------------------------------------------------------------------------

FLOOD = """### BEGIN SOLUTION
import sys, types, json
P = (1 << 61) - 1
TEXT = json.dumps({"names": {"f": ["h", "0.1", "fn", "f"]}, "ok": ["set", [["i", P * k] for k in range(N)]]})
class Reply:
    def __repr__(self):
        return TEXT
    def _repr_pretty_(self, printer, cycle):
        printer.text(TEXT)
fake = types.ModuleType("roofline_grader")
fake.answer = lambda request, namespace, ask_grader=None: Reply()
sys.modules["roofline_grader"] = fake
def f():
    return 0
### END SOLUTION
"""


def _cell(source: str, gid: str, kind: str, points: int = 1) -> nbformat.NotebookNode:
    meta = {"grade_id": gid, "locked": kind != "answer", "schema_version": 3, "solution": kind == "answer"}
    meta["grade"] = kind == "check"
    if kind == "check":
        meta["points"] = points
    return nbformat.v4.new_code_cell(source, metadata={"nbgrader": meta})


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.skipif(probe(default_bwrap()) is not None, reason="no sandbox on this machine")
def test_a_flooding_reply_cannot_hold_a_notebook_past_its_wall() -> None:
    nb = nbformat.v4.new_notebook(
        cells=[_cell(FLOOD.replace("N)", "120_000)"), "answer", "answer"), _cell("assert f() == 1", "check", "check")]
    )
    from grading.limits import Limits

    config = (("nbgrader_config.py", (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")),)
    task = Task(
        "ada",
        "flood",
        "flood",
        nbformat.writes(nb),
        {},
        config,
        {"Execute": {"timeout": 30}},
        default_bwrap(),
        setups=tuple(c.source for c in nb.cells if cell_role(c) == "setup"),
        student_names=student_names(nb),
        limits=Limits(wall=20),
    )
    start = time.perf_counter()
    outcome = execute(task)
    spent = time.perf_counter() - start
    assert outcome.timeouts == [], outcome.timeouts  # the kernel answered in time: the grader spent the rest
    assert spent < 60, f"the notebook took {spent:.0f} s under --wall 20 --timeout 30 ({outcome.error})"


# --- a check's own variable that is also a student's name ------------------------------------------------------------

# The instructor's solution binds ``n`` at top level (a loop that prints a table), so ``n`` is a student's name; the
# hidden check uses ``n`` as its loop variable. Its ``for n in ...`` is forwarded to the kernel and every read of ``n``
# asks the kernel, which the student controls: a kernel that keeps ``n`` at 2 makes a wrong ``square`` pass.
# The course has this shape: solutions/rooflines/q3_roofline_plot.ipynb, q3_c_answer binds ``size`` (``for size in
# (4096, 1024)``) and q3_c_test loops ``for size in (4096, 1024)``; a kernel that answers ``size`` = 4096 for both
# checks the 4096 curve twice, so a plot without the 1024 curve passes.
SOLUTION_WITH_LOOP = "def square(x):\n    return x * x\n\nfor n in range(3):\n    print(n, square(n))\n"
WRONG_SQUARE = "def square(x):\n    return 4\n"


def _rig(kernel: object, name: str, value: list) -> None:
    """The student's ``roofline_grader`` (the docs: "the student controls that kernel and can make it answer
    anything"): assignments of ``name`` are dropped and ``name`` always reads ``value``."""
    real = kernel.module.answer

    def answer(request: str, namespace: dict, ask_grader: object = None) -> object:
        asked = json.loads(request)
        if asked["op"] == "assign" and asked["name"] == name:
            asked["value"] = value
        reply = real(json.dumps(asked), namespace, ask_grader)
        return reply

    kernel.module.answer = answer


def test_a_checks_own_loop_variable_cannot_be_forged_by_the_kernel() -> None:
    names = student_names(
        nbformat.v4.new_notebook(
            cells=[
                nbformat.v4.new_code_cell(
                    "### BEGIN SOLUTION\n" + SOLUTION_WITH_LOOP + "### END SOLUTION\n",
                    metadata={"nbgrader": {"solution": True}},
                )
            ]
        )
    )
    assert names == {"square", "n"}
    judge, kernel = judged(WRONG_SQUARE, student_names=names)
    _rig(kernel, "n", ["i", 2])
    outputs = judge.check("for n in (2, 3, 4, 5):\n    assert square(n) == n * n, 'wrong'")
    assert any(o["output_type"] == "error" for o in outputs), "a wrong square passed"


RIGGED_PLOT = """import sys, types, json
SOURCE = {source!r}  # grading/in_kernel.py, public in the course's repository
rigged = types.ModuleType("roofline_grader")
exec(compile(SOURCE, "roofline_grader", "exec"), rigged.__dict__)
real = rigged.answer
def answer(request, namespace, ask_grader=None):
    asked = json.loads(request)
    if asked["op"] == "assign" and asked["name"] == "size":
        asked["value"] = ["i", 4096]  # the check's `for size in (4096, 1024)` only ever sees 4096
    return real(json.dumps(asked), namespace, ask_grader)
rigged.answer = answer
sys.modules["roofline_grader"] = rigged
batch_sizes = np.arange(1, 512)
fig, ax = plt.subplots(figsize=(8, 4))
size = 4096
ax.plot(batch_sizes, attainable_flops(batch_sizes, 4096, 4096), label="D = F = 4096 and D = F = 1024")
ax.set_xlabel("batch size B")
ax.set_ylabel("attainable bfloat16 FLOPs/s")
ax.legend()
"""


PLOT_ONLY_4096 = RIGGED_PLOT[RIGGED_PLOT.index("batch_sizes =") :]


@pytest.fixture(scope="module")
def q3_graded(course_template: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two students hand in q3 with one curve (D = F = 4096) where the check wants two: one as is, one with the
    rigged ``roofline_grader``."""
    from grading_support import ASSIGNMENT, _reference, cell_by_id, generated_course, gradebook_scores, grading_command
    from grading_support import read as read_nb

    from grading.judge import SOURCE

    course = generated_course(course_template, tmp_path_factory.mktemp("redteam3") / "course")
    release = ROOT / "exercises" / ASSIGNMENT
    for student, answer in (("one_curve", PLOT_ONLY_4096), ("mallory", RIGGED_PLOT.format(source=SOURCE))):
        nb = _reference(
            read_nb(release / "q3_roofline_plot.ipynb"),
            read_nb(ROOT / "solutions" / ASSIGNMENT / "q3_roofline_plot.ipynb"),
        )
        cell_by_id(nb, "q3_c_answer").source = answer
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for shipped in ("feedback.py", "feedback.csv"):
            shutil.copy2(release / shipped, folder / shipped)
        (folder / "q3_roofline_plot.ipynb").write_text(nbformat.writes(nb), encoding="utf-8")
    grading_command(course, "autograde", ASSIGNMENT, "--workers", "1", "--timeout", "60", timeout=900)
    return gradebook_scores(course)


SANDBOXED = [
    pytest.mark.slow,
    pytest.mark.sandbox,
    pytest.mark.skipif(probe(default_bwrap()) is not None, reason="no sandbox on this machine"),
]


@pytest.mark.parametrize(
    "student",
    [
        pytest.param("one_curve", marks=SANDBOXED),
        pytest.param(
            "mallory",
            marks=SANDBOXED,
        ),
    ],
)
def test_a_plot_without_the_1024_curve_does_not_pass_q3_c(q3_graded: dict, student: str) -> None:
    cells = q3_graded[student]["q3_roofline_plot"]
    assert cells["q3_c_test"][0] == 0, cells


# --- copy-back into the set-up cells' objects ------------------------------------------------------------------------


def test_a_student_cannot_change_a_set_up_constant_that_later_checks_compare_with() -> None:
    """A set-up cell's values are the grader's ("whatever the submission did with its copies"), but a check that
    passes one to the student's function gets the function's in-place changes copied back into it, and every later
    check computes its expected values from them: here ``min(PRICES)`` becomes 0, and a wrong ``cheapest`` passes."""
    answers = "def total(prices):\n    prices[:] = [0, 0, 6]\n    return 6\n\ndef cheapest(prices):\n    return 0\n"
    judge, _ = judged(answers, setups=["PRICES = [1, 2, 3]"], student_names={"total", "cheapest"})
    assert judge.check("assert total(PRICES) == sum(PRICES)") == []
    outputs = judge.check("assert cheapest(PRICES) == min(PRICES), 'wrong'")
    assert any(o["output_type"] == "error" for o in outputs), "a wrong cheapest passed"


def test_a_malformed_callback_number_is_answered_not_raised() -> None:
    """``answer_input`` answers ``""`` to any prompt that is not a callback, a list as the callback's number included
    (it used to raise ``TypeError`` into the kernel client's loop)."""
    judge, _ = judged("def f():\n    return 1\n", student_names={"f"})
    assert judge.answer_input('{"callback": [1], "args": [], "kwargs": {}}') == ""
    assert judge.answer_input('{"callback": {"a": 1}, "args": [], "kwargs": {}}') == ""


# --- a second reading of the fixes above -----------------------------------------------------------------------------


def _forge_names(kernel: object, names: dict) -> None:
    """The student's ``roofline_grader``: every call's reply also claims ``names``, as if the call had changed them."""
    real = kernel.module.answer

    class Reply:
        def __init__(self, text: str) -> None:
            self.text = text

    def answer(request: str, namespace: dict, ask_grader: object = None) -> object:
        reply = real(request, namespace, ask_grader)
        if json.loads(request)["op"] != "call":
            return reply
        data = json.loads(reply.text)
        data.setdefault("names", {}).update(names)
        return Reply(json.dumps(data))

    kernel.module.answer = answer


def test_a_checks_own_value_the_kernel_cannot_hold_is_still_its_own() -> None:
    """A check binding a student's name to a Fraction (which the kernel cannot be sent) reads back its own value."""
    judge, kernel = judged("def f(x):\n    return 0\nr = 1\n", student_names={"f", "r"})
    _forge_names(kernel, {"r": ["i", 0]})
    outputs = judge.check("from fractions import Fraction\nr = Fraction(1, 3)\nv = f(1)\nassert v == 3 * r, 'wrong'")
    assert any(o["output_type"] == "error" for o in outputs), "a wrong f passed against a forged r"


@pytest.mark.parametrize(
    ("setup", "call", "later"),
    [
        (
            "import numpy as np\nM = np.arange(1, 7).reshape(2, 3)",
            "for row in M:\n    total(row)",
            "assert low(M) == M.min(), 'wrong'",
        ),
        (
            "import types\nCFG = types.SimpleNamespace(prices=[1, 2, 3])",
            "total(CFG.prices)",
            "assert low(CFG.prices) == min(CFG.prices), 'wrong'",
        ),
        ("T = [[i + 1] for i in range(150_000)]", "total(T[0])", "assert low(T[0]) == min(T[0]), 'wrong'"),
    ],
    ids=["array view", "attribute", "past the walk's limit"],
)
def test_no_set_up_value_is_written_back_into(setup: str, call: str, later: str) -> None:
    """A view of a set-up array, a list held by a set-up object's attribute, and a set-up too large to walk all stay
    as the set-up cell made them, whatever the student's function does to its argument."""
    answers = "def total(xs):\n    xs[:] = [0] * len(xs)\n    return 0\n\ndef low(xs):\n    return 0\n"
    judge, _ = judged(answers, setups=[setup], student_names={"total", "low"})
    assert not [o for o in judge.check(call) if o["output_type"] == "error"]
    outputs = judge.check(later)
    assert any(o["output_type"] == "error" for o in outputs), "a wrong low passed against a zeroed constant"


def test_a_callbacks_error_holding_a_students_object_is_answered() -> None:
    """The check's callback raised an error whose text would ask the kernel (it holds a student's object): the
    kernel still gets an answer, not a grader exception in the client's loop."""
    judge, _ = judged("class P:\n    pass\np = P()\n", student_names={"p", "P"})
    assert judge.check("x = p") == []
    number = judge._register_callback(lambda value: (_ for _ in ()).throw(KeyError(value)), kept=True)
    handle = judge._cache["p"]._handle
    reply = judge.answer_input(json.dumps({"callback": number, "args": [["h", handle]], "kwargs": {}}))
    assert json.loads(reply)["raised"][0] == "KeyError"


def test_an_int_beyond_any_float_is_unreadable_not_an_error() -> None:
    assert repr(decode(["f", 10**400])) == repr(decode(["c", 10**400, 0])) == "<a value the grader cannot read>"
