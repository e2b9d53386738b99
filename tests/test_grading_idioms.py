"""Ordinary nbgrader check idioms, judged in the grader as ``nbgrader autograde`` scores them in the kernel.

Most cases run in this process (:mod:`grading.harness` plays the student's kernel, JSON both
ways, callbacks included), so each takes milliseconds; the last few run a notebook through the
real sandboxed kernel, where the kernel's channels matter (exceptions, callbacks on stdin,
printed output, objects).
"""

from __future__ import annotations

import collections
import json
import logging
import sys
import threading
import types
import warnings
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest
from grading_support import ROOT

from grading.execute import Task, cell_role, execute
from grading.harness import judged, score
from grading.judge import MAX_CALLBACKS, Opaque, decode, encode, own_message, parse_reply, student_names
from grading.sandbox import default_bwrap, probe

# nbgrader's user guide, ps1 problem 1 (its answer, its three checks)
SQUARES = '''
def squares(n):
    """Compute the squares of numbers from 1 to n."""
    if n < 1:
        raise ValueError("n must be greater than or equal to 1")
    return [i ** 2 for i in range(1, n + 1)]


def sum_of_squares(n):
    """Compute the sum of the squares of numbers from 1 to n."""
    return sum(squares(n))
'''
PS1_NAMES = {"squares", "sum_of_squares"}
CHECK_SQUARES = """
assert squares(1) == [1]
assert squares(2) == [1, 4]
assert squares(10) == [1, 4, 9, 16, 25, 36, 49, 64, 81, 100]
"""
CHECK_RAISES = """
try:
    squares(0)
except ValueError:
    pass
else:
    raise AssertionError("did not raise")
"""
CHECK_USES_SQUARES = """
orig_squares = squares
del squares
try:
    sum_of_squares(1)
except NameError:
    pass
else:
    raise AssertionError("sum_of_squares does not use squares")
finally:
    squares = orig_squares
"""


def _errors(outputs: list[dict]) -> list[str]:
    return [f"{o['ename']}: {o['evalue']}" for o in outputs if o["output_type"] == "error"]


def test_nbgraders_ps1_checks_pass_for_its_answer_and_fail_for_a_wrong_one() -> None:
    judge, kernel = judged(SQUARES, student_names=PS1_NAMES)
    for check in (CHECK_SQUARES, CHECK_RAISES, CHECK_USES_SQUARES):
        assert judge.check(check) == [], check
    assert "squares" in kernel.namespace  # restored by the check
    assert judge.check(CHECK_USES_SQUARES) == []  # and again: the restored function is the student's own
    # a sum_of_squares that does not use squares fails the third check; one that does not raise fails the second
    wrong = SQUARES.replace("return sum(squares(n))", "return sum(i * i for i in range(1, n + 1))")
    wrong = wrong.replace('raise ValueError("n must be greater than or equal to 1")', "return []")
    judge, _ = judged(wrong, student_names=PS1_NAMES)
    assert _errors(judge.check(CHECK_RAISES)) == ["AssertionError: did not raise"]
    assert _errors(judge.check(CHECK_USES_SQUARES)) == ["AssertionError: sum_of_squares does not use squares"]


# --- 1. exceptions ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "caught", "ename"),
    [
        ("raise ValueError('no')", "ValueError", "ValueError"),
        ("return 1 / 0", "ZeroDivisionError", "ZeroDivisionError"),
        ("return {}['k']", "KeyError", "KeyError"),
        ("return [][1]", "IndexError", "IndexError"),
        ("import math\n    return math.sqrt(-1)", "ValueError", "ValueError"),
        ("raise FileNotFoundError('gone')", "OSError", "FileNotFoundError"),
        ("raise UnicodeDecodeError('utf-8', b'x', 0, 1, 'bad')", "ValueError", "UnicodeDecodeError"),
    ],
)
def test_a_students_exception_is_raised_in_the_check_as_its_own_builtin_class(
    body: str, caught: str, ename: str
) -> None:
    judge, _ = judged(f"def f(x):\n    {body}", student_names={"f"})
    assert judge.check(f"try:\n    f(1)\nexcept {caught}:\n    pass\nelse:\n    raise AssertionError('no error')") == []
    assert judge.check(f"import pytest\nwith pytest.raises({caught}):\n    f(1)") == []
    same = f"type(err) is {ename}" if ename != "UnicodeDecodeError" else "isinstance(err, UnicodeDecodeError)"
    assert judge.check(f"try:\n    f(1)\nexcept {ename} as err:\n    assert {same}") == []
    # not caught: the cell's error names the student's class and says whose it is
    (error,) = judge.check("f(1)")
    assert error["ename"] == ename and error["traceback"][1:] == ["raised by f in the student's code"]


def test_a_students_exception_keeps_its_arguments_and_text() -> None:
    judge, _ = judged("def f(shape):\n    return {}[shape]", student_names={"f"})
    (error,) = judge.check("f((1000, 2000, 3000))")
    assert error["evalue"] == "(1000, 2000, 3000)"  # as the kernel shows KeyError((1000, 2000, 3000))
    assert judge.check("try:\n    f((1, 2))\nexcept KeyError as err:\n    assert err.args == ((1, 2),)") == []


def test_a_students_own_exception_class_is_only_what_it_derives_from() -> None:
    code = (
        "class Negative(Exception):\n    pass\n\n"
        "class TooSmall(ValueError):\n    pass\n\n"
        "def f(x):\n    raise Negative('n') if x < 0 else TooSmall('s')\n"
    )
    judge, _ = judged(code, student_names={"f", "Negative", "TooSmall"})
    outputs = judge.check(
        "import builtins\n"
        "try:\n    f(-1)\nexcept Exception as err:\n    got = err\n"
        "assert type(got).__name__ == 'Negative' and str(got) == 'n'\n"
        "assert not any(isinstance(got, c) for c in vars(builtins).values()\n"
        "               if isinstance(c, type) and issubclass(c, BaseException) and c is not Exception\n"
        "               and c is not BaseException)\n"
        "try:\n    f(1)\nexcept ValueError as err:\n    assert type(err).__name__ == 'TooSmall'\n"
    )
    assert outputs == []


def test_an_error_the_student_raised_is_never_the_checks_own_message() -> None:
    judge, _ = judged("def f(x):\n    raise AssertionError('[q1.a.wrong] planted')", student_names={"f"})
    (planted,) = judge.check("f(1)")
    assert planted["evalue"] == "[q1.a.wrong] planted" and own_message(planted) is None
    (reraised,) = judge.check("try:\n    f(1)\nexcept AssertionError as err:\n    raise err")
    assert own_message(reraised) is None
    (own,) = judge.check("try:\n    f(1)\nexcept AssertionError:\n    raise AssertionError('[q1.a.wrong] mine')")
    assert own_message(own) == "[q1.a.wrong] mine"


# --- 2. outputs nbgrader scores --------------------------------------------------------------------------------------


def test_the_last_expression_gives_partial_credit_as_under_nbgrader() -> None:
    judge, _ = judged("def f(x):\n    return x", student_names={"f"})
    outputs = judge.check("points = 0\nif f(1) == 1:\n    points += 0.5\nif f(2) == 3:\n    points += 0.5\npoints * 2")
    assert outputs[-1]["output_type"] == "execute_result" and outputs[-1]["data"]["text/plain"] == "1.0"
    assert score(outputs, points=2) == 1.0
    assert score(judge.check("f(0.5)"), points=2) == 0.5
    assert judge.check("f(0.5);") == [] and judge.check("f(None)") == []  # hidden, as IPython hides them
    assert score(judge.check("x = f(0.5)"), points=2) == 2


@pytest.mark.filterwarnings("default")
def test_what_a_check_writes_to_stderr_scores_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def shown(message: warnings.WarningMessage) -> None:  # as outside pytest, which records warnings itself
        sys.stderr.write(warnings.formatwarning(message.message, message.category, message.filename, message.lineno))

    monkeypatch.setattr(warnings, "_showwarnmsg_impl", shown)
    judge, _ = judged("def f(x):\n    return x", student_names={"f"})
    outputs = judge.check("import sys\nprint('careful', file=sys.stderr)\nassert f(1) == 1")
    assert outputs == [{"output_type": "stream", "name": "stderr", "text": "careful\n"}]
    assert score(outputs, points=3) == 0
    outputs = judge.check("import warnings\nwarnings.warn('deprecated call')\nassert f(1) == 1")
    assert [o["name"] for o in outputs] == ["stderr"] and "deprecated call" in outputs[0]["text"]
    assert score(outputs) == 0


# --- 3. whose names ------------------------------------------------------------------------------------------------


def test_a_student_who_rebinds_helpers_changes_nothing_the_check_uses() -> None:
    rigged = (
        "def abs(x):\n    return 0\n\ndef len(x):\n    return 3\n\n"
        "def isclose(*a, **k):\n    return True\n\ndef assert_allclose(*a, **k):\n    pass\n\n"
        "def area(r):\n    return 1.0\n"
    )
    setup = "from math import isclose\nfrom numpy.testing import assert_allclose"
    judge, _ = judged(rigged, setups=[setup], student_names={"area"})
    for check in (
        "assert abs(area(1) - 3.14159) < 1e-3",
        "assert isclose(area(1), 3.14159, rel_tol=1e-3)",
        "assert_allclose(area(1), 3.14159, rtol=1e-3)",
        "assert len([area(1)]) == 3",
    ):
        assert _errors(judge.check(check)), check


def test_a_solution_that_defines_a_builtins_name_gets_the_students() -> None:
    judge, _ = judged("def max(values):\n    return sorted(values)[-1]", student_names={"max"})
    assert judge.check("assert max([3, 1, 2]) == 3\nassert type(max).__name__ == 'StudentFunction'") == []
    judge, _ = judged("x = 1", student_names={"max"})  # not defined by this student: the builtin
    assert judge.check("assert max([3, 1, 2]) == 3") == []


def test_functions_a_check_defines_see_the_students_names() -> None:
    judge, _ = judged(SQUARES, student_names=PS1_NAMES)
    check = (
        "def total(n):\n    return sum(squares(n))\n\nassert total(3) == 14\nassert (lambda: squares(2))() == [1, 4]"
    )
    assert judge.check(check) == []


def test_names_a_check_binds_are_the_graders_and_student_values_are_read_afresh() -> None:
    judge, kernel = judged("counter = []\ndef tick():\n    counter.append(1)\n", student_names={"counter", "tick"})
    assert judge.check("assert counter == []\ntick()\ntick()\nassert counter == [1, 1], counter") == []
    assert judge.check("mine = 3\nassert mine == 3") == [] and "mine" not in kernel.namespace


def test_modules_a_check_uses_are_the_graders_own() -> None:
    fake = "import types\nnp = types.SimpleNamespace(isclose=lambda *a, **k: True)\n"
    judge, _ = judged(fake + "def f():\n    return 1.0", setups=["import numpy as np"], student_names={"f"})
    assert judge.check("assert not np.isclose(f(), 2.0)") == []  # the set-up's np, not the kernel's
    judge, _ = judged("import numpy as np\nimport math\ndef f():\n    return 1.0", student_names={"f"})
    assert judge.check("assert np.isclose(f(), 1.0) and math is __import__('math') and np is __import__('numpy')") == []
    # a module under another module's name, or a module as a value, is no module of the grader's
    judge, _ = judged("import os as np\nimport os\ndef f():\n    return os", student_names={"f"})
    assert [o["ename"] for o in judge.check("np.getcwd()")] == ["NameError"]
    assert judge.check("assert type(f()).__name__ == 'Opaque'") == []
    # a name only the kernel binds (an import of the answer cell) is listed, with its fix
    judge, _ = judged("from math import sqrt\ndef f():\n    return 1.0", student_names={"f"})
    assert [o["ename"] for o in judge.check("assert sqrt(f()) == 1", grade_id="q_sqrt")] == ["NameError"]
    assert judge.findings[0]["grade_id"] == "q_sqrt" and "sqrt" in judge.findings[0]["fix"]


def test_without_the_source_the_earlier_rule_holds() -> None:
    judge, kernel = judged(SQUARES)
    assert judge.check(CHECK_SQUARES) == [] and judge.check(CHECK_RAISES) == []
    judge.check("del squares")
    assert "squares" in kernel.namespace


def test_the_student_names_of_a_source_notebook() -> None:
    nb = nbformat.read(ROOT / "solutions" / "rooflines" / "q3_roofline_plot.ipynb", as_version=4)
    names = student_names(nb)
    assert names is not None and {"attainable_flops", "critical_batch", "fig", "ax", "batch_sizes"} <= names
    assert not names & {"np", "plt", "isclose"}  # imports and set-up names are not the student's
    broken = nbformat.v4.new_code_cell("### BEGIN SOLUTION\ndef f(:\n### END SOLUTION")
    assert student_names(nbformat.v4.new_notebook(cells=[broken])) is None


def test_the_grading_plan_reads_the_names_from_the_source_notebook(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from grading.plan import answer_names

    (tmp_path / "source" / "hw1").mkdir(parents=True)
    cell = nbformat.v4.new_code_cell("### BEGIN SOLUTION\ndef squares(n):\n    return n\n### END SOLUTION")
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), tmp_path / "source" / "hw1" / "ps1.ipynb")
    coursedir = types.SimpleNamespace(
        source_directory="source", format_path=lambda step, student, assignment: str(tmp_path / step / assignment)
    )
    grader = types.SimpleNamespace(coursedir=coursedir, config=None, log=logging.getLogger("test-plan"))
    assert answer_names(grader, "hw1", "ps1") == {"squares"}  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, "test-plan"):
        assert answer_names(grader, "hw1", "missing") is None  # type: ignore[arg-type]
    assert "the student's names are not known" in caplog.text


# --- 4. objects -----------------------------------------------------------------------------------------------------

POINT = '''
import math
eq_calls = []


class Point:
    """A point of the plane."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def norm(self):
        return math.hypot(self.x, self.y)

    def __eq__(self, other):
        eq_calls.append(other)
        return True

    def __len__(self):
        return 2

    def __iter__(self):
        return iter((self.x, self.y))

    def __repr__(self):
        return f"Point({self.x}, {self.y})"


def origin():
    """The origin."""
    return Point(0, 0)
'''


def test_a_students_objects_answer_as_plain_data_or_proxies() -> None:
    judge, kernel = judged(POINT, student_names={"Point", "origin", "eq_calls"})
    check = (
        "p = Point(3, 4)\n"
        "assert (p.x, p.y) == (3, 4) and p.norm() == 5.0\n"
        "assert isinstance(p, Point) and not isinstance(3, Point) and isinstance(origin(), Point)\n"
        "assert len(p) == 2 and list(p) == [3, 4] and 4 in p and repr(p) == 'Point(3, 4)'\n"
        "assert origin.__doc__ == 'The origin.' and Point.__doc__ == 'A point of the plane.'\n"
        "assert p == p and p != Point(3, 4)\n"
    )
    assert judge.check(check) == []
    assert kernel.namespace["eq_calls"] == []


def test_a_students_function_has_its_signature_and_an_object_is_not_callable() -> None:
    judge, _ = judged(
        POINT + "\ndef scale(p, k=2, *, inplace=False):\n    return p\n", student_names={"Point", "scale"}
    )
    check = (
        "import inspect\n"
        "params = inspect.signature(scale).parameters\n"
        "assert list(params) == ['p', 'k', 'inplace'] and params['k'].default == 2\n"
        "assert params['inplace'].kind is inspect.Parameter.KEYWORD_ONLY\n"
        "assert list(inspect.signature(Point(1, 2).norm).parameters) == []\n"
        "assert callable(Point) and callable(scale) and not callable(Point(1, 2))\n"
    )
    assert judge.check(check) == []


def test_a_method_call_is_one_request_and_values_read_follow_calls() -> None:
    judge, kernel = judged(
        POINT + "\nlog = []\ndef record(x):\n    log.append(x)\n", student_names={"Point", "log", "record"}
    )
    assert judge.check("p = Point(3, 4)") == []
    before = len(kernel.requests)
    assert judge.check("assert p.norm() == 5.0") == []
    assert len(kernel.requests) - before == 1  # the method is named in the call itself
    assert judge.check("p.x, p.y = 6, 8\nassert p.norm() == 10.0 and p.x == 6") == []
    before = len(kernel.requests)
    assert judge.check("assert log == []\nfor i in range(3):\n    record(i)\nassert log == [0, 1, 2], log") == []
    assert len(kernel.requests) - before == 4  # one read of log, three calls that bring back its new values


def test_a_forged_eq_is_never_handed_the_instructors_value() -> None:
    judge, kernel = judged(POINT + "\ndef answer():\n    return Point(1, 1)\n", student_names={"answer"})
    assert _errors(judge.check("assert answer() == 3"))
    assert _errors(judge.check("assert answer() == (1, 1)"))
    assert _errors(judge.check("assert 3 == answer()"))
    assert _errors(judge.check("assert answer() + 0 == 3"))
    assert _errors(judge.check("import math\nassert math.isclose(answer(), 3)"))
    assert kernel.namespace["eq_calls"] == []


# --- 5. plain data --------------------------------------------------------------------------------------------------

WIDE = """
import collections
import numpy as np
Pair = collections.namedtuple("Pair", ["left", "right"])
VALUES = {
    "f32": np.arange(3, dtype=np.float32), "i32": np.arange(3, dtype=np.int32), "u8": np.arange(3, dtype=np.uint8),
    "c64": np.array([1j], dtype=np.complex64), "text": np.array(["ab", "c"]), "raw": np.array([b"ab"]),
    "scalar32": np.float32(0.5), "int16": np.int16(7), "flag": np.bool_(True), "big": np.uint64(2 ** 64 - 1),
    "set": {1, 2}, "frozen": frozenset({"a"}), "keys": {1: "one", (2, 3): "pair", "s": None}, "pair": Pair(1, 2),
    "z": 1 + 2j, "bytes": b"\\x00\\xff", "nested": [({1}, (2.5, "x"))],
}
def value(key):
    return VALUES[key]
"""


def test_plain_data_keeps_its_kind_both_ways() -> None:
    judge, _ = judged(WIDE, student_names={"value", "VALUES"})
    check = """
import numpy as np
assert value("f32").dtype == np.float32 and value("i32").dtype == np.int32 and value("u8").dtype == np.uint8
assert value("c64").dtype == np.complex64 and value("c64")[0] == 1j
assert value("text").tolist() == ["ab", "c"] and value("raw").tolist() == [b"ab"]
h = value("scalar32")
assert type(h) is np.float32 and h.dtype == np.float32 and h == 0.5
assert type(value("int16")) is np.int16 and type(value("flag")) is np.bool_ and value("big") == 2 ** 64 - 1
assert value("set") == {1, 2} and type(value("frozen")) is frozenset
assert value("keys") == {1: "one", (2, 3): "pair", "s": None}
pair = value("pair")
assert pair == (1, 2) and pair.left == 1 and pair.right == 2 and type(pair).__name__ == "Pair"
assert pair._fields == ("left", "right") and repr(pair) == "Pair(left=1, right=2)"
assert value("z") == 1 + 2j and value("bytes") == b"\\x00\\xff" and value("nested") == [({1}, (2.5, "x"))]
"""
    assert judge.check(check) == []
    # and back: what a check sends arrives as it was
    judge, _ = judged(
        "def kind(x):\n    return type(x).__name__, getattr(x, 'dtype', None) and str(x.dtype), x",
        student_names={"kind"},
    )
    back = """
import collections
import numpy as np
P = collections.namedtuple("P", "a b")
for sent, name, dtype in [
    (np.arange(2, dtype=np.float32), "ndarray", "float32"), (np.uint8(3), "uint8", "uint8"),
    ({1, 2}, "set", None), (frozenset(), "frozenset", None), ({(1, 2): 3}, "dict", None), (P(1, 2), "P", None),
    (2j, "complex", None), (b"x", "bytes", None), (np.array(["a"]), "ndarray", "<U1"), ((1,), "tuple", None),
]:
    got_name, got_dtype, got = kind(sent)
    assert (got_name, got_dtype) == (name, dtype), (sent, got_name, got_dtype)
    assert np.array_equal(got, sent) if isinstance(sent, np.ndarray) else got == sent
"""
    assert judge.check(back) == []


def test_one_notebook_cannot_use_up_anothers_named_tuple_types() -> None:
    code = "import collections\nMANY = [collections.namedtuple(f'T{i}', 'a')(i) for i in range(1100)]"
    judge, _ = judged(code, student_names={"MANY"})
    assert judge.check("assert type(MANY[0]).__name__ == 'T0'\nassert type(MANY[-1]).__name__ == 'Opaque'") == []
    judge, _ = judged(WIDE, student_names={"value"})
    assert judge.check("assert value('pair').left == 1") == []


@pytest.mark.parametrize(
    "forged",
    [
        ["a", "object", [1], "AA=="],
        ["a", "<f8", [2], "AAAAAAAA8D8="],  # one number where the shape says two
        ["a", "<U0", [1], ""],
        ["np", "<U1", "YQAAAA=="],
        ["np", ">f8", "AAAAAAAA8D8="],
        ["d", [[["l", []], ["n"]]]],  # an unhashable key
        ["set", [["l", []]]],
        ["nt", "Pair", ["_x"], [["i", 1]]],
        ["nt", "Pair", ["a", "a"], [["i", 1], ["i", 2]]],
        ["nt", "x y", ["a"], [["i", 1]]],
        ["nt", "Pair", ["a"], [["i", 1], ["i", 2]]],
        ["c", "1", 0],
        ["y", "not base64!"],
        ["h", "../1", "obj", "x"],
        ["h", "a.1", "module", "x"],
        ["m", "no_such_module_here"],
    ],
)
def test_the_decoder_stays_strict(forged: list) -> None:
    assert isinstance(decode(forged), Opaque), forged


def test_the_decoders_bounds_hold() -> None:
    deep: list = ["n"]
    for _ in range(40):
        deep = ["l", [deep]]
    assert "a value the grader cannot read" in repr(decode(deep))
    assert isinstance(decode(["a", "<f8", [10**8], ""]), Opaque)
    assert isinstance(decode(["s", "x" * 200_000]), Opaque)
    assert isinstance(decode(["nt", "P", [f"f{i}" for i in range(300)], [["n"]] * 300]), Opaque)
    assert parse_reply("[" * 10, 100) is None


# --- 6. arguments changed in place -----------------------------------------------------------------------------------


def test_arguments_a_student_fills_are_copied_back() -> None:
    code = (
        "def fill(values, table, grid, seen, *, extra=None):\n"
        "    values.append(3)\n    table['k'] = [1]\n    grid[0, 0] = 9\n    seen.add('s')\n"
        "    if extra is not None:\n        extra.extend([7, 8])\n"
    )
    judge, _ = judged(code, student_names={"fill"})
    check = (
        "import numpy as np\n"
        "values, table, grid, seen, extra = [1], {}, np.zeros((2, 2), dtype=np.int32), set(), []\n"
        "alias = values\n"
        "assert fill(values, table, grid, seen, extra=extra) is None\n"
        "assert alias == [1, 3] and table == {'k': [1]} and grid[0, 0] == 9 and grid.dtype == np.int32\n"
        "assert seen == {'s'} and extra == [7, 8]\n"
    )
    assert judge.check(check) == []


# --- 7. the check's functions, called by the student's code -------------------------------------------------------

BISECT = """
def bisect(f, lo, hi, tol=1e-12):
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if f(lo) * f(mid) <= 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def apply(f, x):
    return f(x)
"""


def test_a_check_may_pass_its_own_functions_to_the_students() -> None:
    judge, _ = judged(BISECT, student_names={"bisect", "apply"})
    assert judge.check("import math\nassert math.isclose(bisect(lambda x: x * x - 2, 0, 2), math.sqrt(2))") == []
    assert (
        judge.check("def g(x, *, k=1):\n    return {'x': x, 'k': k}\nassert apply(g, (1, 2)) == {'x': (1, 2), 'k': 1}")
        == []
    )
    # an error in the check's function is the check's own, even through the student's code
    (error,) = judge.check("def g(x):\n    assert x > 5, '[q.wrong] too small'\napply(g, 1)")
    assert own_message(error) == "[q.wrong] too small"


def test_callbacks_are_bounded_and_cannot_reach_the_students_code() -> None:
    judge, _ = judged(
        "def many(f):\n    for i in range(20_000):\n        f(i)\n\ndef helper():\n    return 1\n",
        student_names={"many", "apply", "helper"},
    )
    (error,) = judge.check("many(lambda i: i)")
    assert error["ename"] == "RuntimeError" and str(MAX_CALLBACKS) in error["evalue"]
    judge, _ = judged(BISECT + "def helper():\n    return 1\n", student_names={"apply", "helper"})
    (error,) = judge.check("apply(lambda x: helper(), 1)")
    assert error["ename"] == "RuntimeError" and "busy" in error["evalue"]


def test_a_students_input_gets_nothing_during_a_call() -> None:
    judge, _ = judged(
        "def ask():\n    try:\n        return input('expected value? ')\n    except Exception as err:\n"
        "        return type(err).__name__\n",
        student_names={"ask"},
    )
    assert judge.check("assert ask() == 'EOFError'") == []
    # the kernel's own way to ask (raw_input), with any prompt: a callback of no call of the judge's is nothing
    for prompt in ("expected value? ", json.dumps({"callback": 1, "args": [], "kwargs": {}}), "{" * 100):
        assert judge.answer_input(prompt) == ""


# --- 8. printed output ----------------------------------------------------------------------------------------------


def test_what_a_student_prints_reaches_the_checks_stdout() -> None:
    judge, _ = judged(
        "import sys\ndef shout(x):\n    print('value', x)\n    return x\n\ndef warn():\n    print('w', file=sys.stderr)\n",
        student_names={"shout", "warn"},
    )
    check = (
        "import contextlib, io\n"
        "buffer = io.StringIO()\n"
        "with contextlib.redirect_stdout(buffer):\n    shout(3)\n    print('mine')\n"
        "assert buffer.getvalue() == 'value 3\\nmine\\n', buffer.getvalue()\n"
        "_ = shout(4)\n"
    )
    assert judge.check(check) == [{"output_type": "stream", "name": "stdout", "text": "value 4\n"}]
    assert score(judge.check("warn()")) == 0


def test_output_is_captured_per_thread() -> None:
    judges = [judged("def f(i):\n    print('from', i)\n    return i", student_names={"f"})[0] for _ in range(4)]
    results: dict[int, list] = {}

    def run(i: int) -> None:
        results[i] = judges[i].check("\n".join(f"f({i})\nprint('check', {i})" for _ in range(50)))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, outputs in results.items():
        assert outputs == [{"output_type": "stream", "name": "stdout", "text": f"from {i}\ncheck {i}\n" * 50}]


# --- what cannot be judged ------------------------------------------------------------------------------------------


def test_checks_the_judge_cannot_run_as_the_kernel_would_are_listed() -> None:
    judge, _ = judged("import numpy as np\ndef draw():\n    return np.random.rand()", student_names={"draw"})
    judge.check("import numpy as np\nnp.random.seed(0)\nassert 0 <= draw() < 1", grade_id="q_seed")
    (error,) = judge.check("import threading\ndraw(threading.Lock())", grade_id="q_pass")
    assert error["ename"] == "TypeError"
    assert [(f["grade_id"], f["idiom"].split()[0]) for f in judge.findings] == [
        ("q_seed", "calls"),
        ("q_pass", "passes"),
    ]
    assert all(f["fix"] for f in judge.findings)
    judge, _ = judged("marks = [1]", student_names={"marks"})
    outputs = judge.check(
        "import threading\nimport matplotlib.pyplot as plt\nax = plt.gca()\nmarks = threading.Lock()\nassert marks.acquire()",
        "q_plot",
    )
    assert outputs == [] and [f["idiom"].split()[:2] for f in judge.findings] == [["calls", "gca():"], ["binds", "the"]]
    assert judge.check("assert marks == [1]") == []  # the kernel kept its own


def test_the_wire_encodes_what_the_kernel_decodes() -> None:
    Pair = collections.namedtuple("Pair", "a b")
    for value in [Pair(1, 2.5), {(1, "a"): {2}}, [np.int8(3), np.float16(0.5)], b"x", 3j, frozenset({1})]:
        assert decode(json.loads(json.dumps(encode(value)))) == value
    with pytest.raises(TypeError):
        encode(object())


# --- through the sandboxed kernel -----------------------------------------------------------------------------------


def SANDBOX(test: Any) -> Any:  # a mark: these start sandboxed kernels (the others take milliseconds)
    skip = pytest.mark.skipif(probe(default_bwrap()) is not None, reason="no sandbox on this machine")
    return pytest.mark.slow(pytest.mark.sandbox(skip(test)))


def _cell(source: str, gid: str, kind: str, points: int = 1) -> nbformat.NotebookNode:
    meta = {"grade_id": gid, "locked": kind != "answer", "schema_version": 3, "solution": kind == "answer"}
    meta["grade"] = kind == "check"
    if kind == "check":
        meta["points"] = points
    return nbformat.v4.new_code_cell(source, metadata={"nbgrader": meta})


def _run_notebook(cells: list[nbformat.NotebookNode], timeout: int = 30) -> dict[str, list]:
    nb = nbformat.v4.new_notebook(cells=cells)
    names = student_names(nb)
    setups = tuple(c.source for c in nb.cells if cell_role(c) == "setup")
    config = (("nbgrader_config.py", (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")),)
    task = Task(
        "ada",
        "idioms",
        "idioms",
        nbformat.writes(nb),
        {},
        config,
        {"Execute": {"timeout": timeout}},
        default_bwrap(),
        setups=setups,
        student_names=names,
    )
    outcome = execute(task)
    assert outcome.error is None and outcome.executed, outcome
    executed = nbformat.reads(outcome.executed, as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c.outputs for c in executed.cells if c.metadata.get("nbgrader")}


@SANDBOX
def test_the_idioms_through_the_sandboxed_kernel() -> None:
    answer = (
        "### BEGIN SOLUTION\n"
        + SQUARES
        + BISECT
        + POINT
        + "\nimport numpy as np\n\n"
        + ("def fill(values):\n    values.extend([1, 2])\n    print('filled')\n### END SOLUTION\n")
    )
    cells = [
        _cell("import math", "setup", "setup"),
        _cell(answer, "answer", "answer"),
        _cell(CHECK_SQUARES, "squares", "check"),
        _cell(CHECK_RAISES, "raises", "check"),
        _cell(CHECK_USES_SQUARES, "uses", "check"),
        _cell("assert math.isclose(bisect(lambda x: x * x - 2, 0, 2), math.sqrt(2))", "callback", "check"),
        _cell(
            "import contextlib, io\nbuffer, values = io.StringIO(), []\n"
            "with contextlib.redirect_stdout(buffer):\n    fill(values)\n"
            "assert buffer.getvalue() == 'filled\\n' and values == [1, 2]",
            "printed",
            "check",
        ),
        _cell(
            "p = Point(3, 4)\nassert p.norm() == 5.0 and isinstance(p, Point) and p.x == 3\n"
            "assert origin.__doc__ == 'The origin.'\nassert not (p == 3)",
            "objects",
            "check",
        ),
        _cell("squares(0)", "uncaught", "check"),
        _cell("0.5 * len(squares(2))", "partial", "check", points=2),
    ]
    outputs = _run_notebook(cells)
    for gid in ("squares", "raises", "uses", "callback", "printed", "objects"):
        assert outputs[gid] == [], (gid, outputs[gid])
    (error,) = outputs["uncaught"]
    assert error["ename"] == "ValueError" and own_message(error) is None
    assert score(outputs["partial"], points=2) == 1.0


@SANDBOX
def test_a_student_who_rigs_the_kernel_earns_nothing_through_the_sandbox() -> None:
    rigged = (
        "### BEGIN SOLUTION\nimport numpy as np, math, builtins\n"
        "np.isclose = np.allclose = lambda *a, **k: True\nmath.isclose = lambda *a, **k: True\n"
        "builtins.abs = lambda x: 0\n"
        "class Anything(float):\n    def __eq__(self, other):\n        return True\n    __hash__ = float.__hash__\n"
        "def area(r):\n    return Anything(1.0)\n"
        "def roots(f):\n    return 1.0\n### END SOLUTION\n"
    )
    cells = [
        _cell("import math\nimport numpy as np", "setup", "setup"),
        _cell(rigged, "answer", "answer"),
        _cell("assert area(1) == math.pi", "eq", "check"),
        _cell("assert math.isclose(area(1), math.pi)", "isclose", "check"),
        _cell("assert np.isclose(area(1), math.pi)", "npisclose", "check"),
        _cell("assert abs(area(1) - math.pi) < 1e-9", "abs", "check"),
        _cell("assert math.isclose(roots(lambda x: x * x - 2), math.sqrt(2))", "callback", "check"),
    ]
    outputs = _run_notebook(cells)
    for gid in ("eq", "isclose", "npisclose", "abs", "callback"):
        assert any(o["output_type"] == "error" for o in outputs[gid]), gid


@SANDBOX
def test_a_students_input_during_a_call_gets_nothing_through_the_sandbox() -> None:
    code = (
        "### BEGIN SOLUTION\ndef ask():\n    try:\n        return input('expected? ')\n"
        "    except Exception as err:\n        return type(err).__name__\n\n"
        "def ask_kernel():\n    return get_ipython().kernel.raw_input('expected? ')\n### END SOLUTION\n"
    )
    outputs = _run_notebook(
        [
            _cell(code, "answer", "answer"),
            _cell("assert ask() == 'EOFError'", "input", "check"),
            _cell("assert ask_kernel() == ''", "raw", "check"),
        ]
    )
    assert outputs["input"] == [] and outputs["raw"] == []
