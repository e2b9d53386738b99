"""The judge: every graded check runs here, in the grader's process, never in the student's kernel.

A notebook is graded in two rooms. The **run** is the student's kernel, in the sandbox: it
executes the answer cells and the locked set-up cells, and nothing else. The **judge** is
this module, in the grader: it executes every locked set-up cell again and every graded
check, with the instructor's text as nbgrader restored it from the gradebook (hidden tests
included). Neither the text of a check nor an expected value is ever sent to the kernel.

Inside a check, each name the check reads but does not define (``bytes_loaded``, ``ax``)
is looked up in the kernel just before the check runs:

- a function becomes a :class:`StudentFunction`: calling it sends the arguments to the
  kernel and returns the result, as plain data;
- a value comes back as plain data: ``None``, a bool, int, float or str, a list, tuple or
  dict (string keys) of these, a NumPy array of numbers or booleans, or for a Matplotlib ``Axes`` an
  :class:`AxesData` (its lines as arrays, its labels and legend texts);
- anything else becomes an :class:`Opaque` value, which equals nothing and is no number,
  so a check simply finds it wrong.

The kernel's answers are read as untrusted data: each reply by a strict JSON decoder whose
cost is bounded by the reply's length (:func:`parse_reply`), then as tagged plain data
(:func:`decode`), so whatever the student's code prints, raises, patches or returns can only
ever be a value judged by the check. A kernel that does not answer within the cell's time
limit fails the check (:class:`NoAnswer`).

Example
-------
>>> judge = Judge(ask=lambda request: {"names": {}}, modules={})
>>> judge.setup("LIMIT = 3")
>>> judge.check('assert LIMIT == 3\\nprint("Part (a): passed")')
[{'output_type': 'stream', 'name': 'stdout', 'text': 'Part (a): passed\\n'}]
>>> judge.check("assert LIMIT == 4, 'no'")[0]["evalue"]
'no'
"""

from __future__ import annotations

import ast
import base64
import binascii
import builtins
import io
import json
import math
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from grading import in_kernel

__all__ = [
    "AxesData",
    "Judge",
    "NoAnswer",
    "Opaque",
    "StudentFunction",
    "StudentRaised",
    "TimedOut",
    "decode",
    "encode",
    "expression",
    "own_message",
    "parse_reply",
]

SOURCE = Path(in_kernel.__file__).read_text(encoding="utf-8")

_MAX_DEPTH = 32
_MAX_ITEMS = 10_000_000
_MAX_TEXT = 100_000
_MAX_PRINTED = 100_000
_MAX_CONTAINERS = 1_000_000  # JSON lists and objects in one reply
_DTYPES = {"bool": np.bool_, "int": np.int64, "float": np.float64}
_WIRE: dict[str, np.dtype[Any]] = {
    "bool": np.dtype("u1"),
    "int": np.dtype("<i8"),
    "float": np.dtype("<f8"),
}  # as grading.in_kernel sends them


def expression(request: str, install: bool = True) -> str:
    """A Python expression that, evaluated in the kernel's namespace, is the JSON reply to ``request``.

    It runs :mod:`grading.in_kernel`, sent as text, so the kernel needs nothing installed; the
    first request compiles it into a module ``roofline_grader``, and later ones reuse it. With
    ``install=False`` the text is left out: the expression fails where the kernel lacks the module.

    >>> len(expression("{}", install=False)) < 200 < len(expression("{}"))
    True
    """
    if not install:
        return f"__import__('sys').modules['roofline_grader'].answer({request!r}, globals())"
    make = (
        "(lambda m: (exec(compile(SOURCE, 'roofline_grader', 'exec'), m.__dict__), "
        "s.modules.__setitem__('roofline_grader', m), m)[2])(__import__('types').ModuleType('roofline_grader'))"
    ).replace("SOURCE", repr(SOURCE))
    return f"(lambda s: (s.modules.get('roofline_grader') or {make}).answer({request!r}, globals()))(__import__('sys'))"


class NoAnswer(BaseException):
    """The kernel did not answer in time, or is gone: the check fails, and no check can catch this."""


class TimedOut(NoAnswer):
    """The kernel did not answer within the cell's time limit."""


class StudentRaised(Exception):
    """The student's function raised ``ename: evalue`` in the kernel (a check may catch this, as any exception)."""

    def __init__(self, name: str, ename: str, evalue: str) -> None:
        self.function, self.ename, self.evalue = name, _text(ename, 100), _text(evalue, 2000)
        super().__init__(f"{name} raised {self.ename}: {self.evalue}")


class Opaque:
    """A value of a type the grader does not read: it equals nothing, is no number, and says only its type.

    >>> value = Opaque("Fraction")
    >>> value == 1, repr(value)
    (False, '<Fraction>')
    """

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = _text(kind, 80)

    def __repr__(self) -> str:
        return f"<{self.kind}>"

    __str__ = __repr__


class _Text:
    def __init__(self, text: str) -> None:
        self._text = text

    def get_text(self) -> str:
        return self._text


class LegendData:
    """The texts of a legend, as ``matplotlib.legend.Legend.get_texts`` gives them."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = [_Text(t) for t in texts]

    def get_texts(self) -> list[_Text]:
        return list(self.texts)


class LineData:
    """One line of a plot: its label and its data, as ``matplotlib.lines.Line2D`` gives them."""

    def __init__(self, label: str, x: Any, y: Any) -> None:
        self._label, self._x, self._y = label, x, y

    def get_label(self) -> str:
        return self._label

    def get_xdata(self) -> Any:
        return self._x

    def get_ydata(self) -> Any:
        return self._y


class AxesData:
    """What a check may read of a Matplotlib ``Axes``: its lines, labels, title and legend."""

    def __init__(self, xlabel: str, ylabel: str, title: str, lines: list[LineData], legend: list[str] | None) -> None:
        self._xlabel, self._ylabel, self._title = xlabel, ylabel, title
        self.lines = lines
        self._legend = None if legend is None else LegendData(legend)

    def get_lines(self) -> list[LineData]:
        return list(self.lines)

    def get_xlabel(self) -> str:
        return self._xlabel

    def get_ylabel(self) -> str:
        return self._ylabel

    def get_title(self) -> str:
        return self._title

    def get_legend(self) -> LegendData | None:
        return self._legend


def _text(value: Any, limit: int = _MAX_TEXT) -> str:
    return value[:limit] if isinstance(value, str) else "?"


def _numbers(kind: Any, data: Any, count: int) -> Any:
    """``count`` numbers of ``kind`` from their bytes in base64 (as :mod:`grading.in_kernel` sends them), or None."""
    wire = _WIRE.get(kind) if isinstance(kind, str) else None
    if wire is None or not isinstance(data, str) or len(data) != 4 * ((count * wire.itemsize + 2) // 3):
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) != count * wire.itemsize:
        return None
    return np.frombuffer(raw, dtype=wire).astype(_DTYPES[kind])


def _array(kind: Any, shape: Any, data: Any) -> Any:
    if not (
        isinstance(shape, list)
        and len(shape) <= 8
        and all(type(n) is int and 0 <= n <= _MAX_ITEMS for n in shape)
        and math.prod(shape) <= _MAX_ITEMS
    ):
        return Opaque("an array the grader cannot read")
    flat = _numbers(kind, data, math.prod(shape))
    return Opaque("an array the grader cannot read") if flat is None else flat.reshape(shape)


def _listed(tag: str, kind: Any, data: Any) -> Any:
    """A list or tuple of numbers of one kind, sent as their bytes."""
    if not (isinstance(data, str) and isinstance(kind, str) and kind in _WIRE):
        return Opaque("a value the grader cannot read")
    count = (len(data) * 3 // 4 - len(data[-2:]) + len(data[-2:].rstrip("="))) // _WIRE[kind].itemsize
    flat = _numbers(kind, data, count) if count <= _MAX_ITEMS else None
    if flat is None:
        return Opaque("a value the grader cannot read")
    items = flat.tolist()
    return items if tag == "L" else tuple(items)


def decode(value: Any, depth: int = 0) -> Any:
    """A value sent by the kernel, as plain data; anything malformed or of another kind is :class:`Opaque`.

    Tags: ``["n"]`` None, ``["b", bool]``, ``["i", int]``, ``["f", float]``, ``["s", str]``,
    ``["l", [...]]`` list, ``["t", [...]]`` tuple, ``["d", [[str key, value], ...]]`` dict,
    ``["a", kind, shape, bytes]`` array and ``["L" or "T", kind, bytes]`` list or tuple of numbers
    (``kind`` is ``bool``, ``int`` or ``float``; ``bytes`` the little-endian values, one byte, eight
    or eight each, in base64),
    ``["axes", xlabel, ylabel, title, [[label, x, y], ...], legend texts or None]``,
    ``["fn"]`` a function (only as a name's value), ``["x", type name]`` anything else.

    >>> decode(["t", [["i", 2], ["f", 0.5]]]), decode(["a", "float", [2], "AAAAAAAA8D8AAAAAAAAAQA=="])
    ((2, 0.5), array([1., 2.]))
    >>> decode(["x", "Decimal"]), decode({"__class__": "evil"})
    (<Decimal>, <a value the grader cannot read>)
    """
    unreadable = Opaque("a value the grader cannot read")
    if depth > _MAX_DEPTH or not isinstance(value, list) or not value or not isinstance(value[0], str):
        return unreadable
    tag, rest = value[0], value[1:]
    if tag == "n" and not rest:
        return None
    if len(rest) == 1:
        item = rest[0]
        if tag == "b" and type(item) is bool:
            return item
        if tag == "i" and type(item) is int:
            return item
        if tag == "f" and type(item) in (int, float):
            return float(item)
        if tag == "s" and type(item) is str and len(item) <= _MAX_TEXT:
            return item
        if tag in ("l", "t") and type(item) is list and len(item) <= _MAX_ITEMS:
            items = [decode(v, depth + 1) for v in item]
            return items if tag == "l" else tuple(items)
        if (
            tag == "d"
            and type(item) is list
            and all(type(kv) is list and len(kv) == 2 and type(kv[0]) is str for kv in item)
        ):
            return {key: decode(v, depth + 1) for key, v in item}
        if tag == "x":
            return Opaque(_text(item, 80))
    if tag == "a" and len(rest) == 3:
        return _array(*rest)
    if tag in ("L", "T") and len(rest) == 2:
        return _listed(tag, *rest)
    if tag == "axes" and len(rest) == 5:
        xlabel, ylabel, title, lines, legend = rest
        if not (isinstance(lines, list) and all(isinstance(line, list) and len(line) == 3 for line in lines)):
            return unreadable
        drawn = [LineData(_text(label), decode(x, depth + 1), decode(y, depth + 1)) for label, x, y in lines]
        texts = [_text(t) for t in legend] if isinstance(legend, list) else None
        return AxesData(_text(xlabel), _text(ylabel), _text(title), drawn, texts)
    return unreadable


def encode(value: Any, depth: int = 0) -> list[Any]:
    """An argument a check passes to a student's function, as tagged plain data.

    >>> encode((3, 2.5, np.arange(2)))
    ['t', [['i', 3], ['f', 2.5], ['a', 'int', [2], 'AAAAAAAAAAABAAAAAAAAAA==']]]
    """
    if depth > _MAX_DEPTH:
        raise TypeError("an argument nested too deeply for the grader to send")
    if value is None:
        return ["n"]
    if isinstance(value, (bool, np.bool_)):
        return ["b", bool(value)]
    if isinstance(value, (int, np.integer)):
        return ["i", int(value)]
    if isinstance(value, (float, np.floating)):
        return ["f", float(value)]
    if isinstance(value, str):
        return ["s", value]
    if isinstance(value, (list, tuple)):
        return ["l" if isinstance(value, list) else "t", [encode(v, depth + 1) for v in value]]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return ["d", [[k, encode(v, depth + 1)] for k, v in value.items()]]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        kind = {"b": "bool", "i": "int", "u": "int", "f": "float"}[value.dtype.kind]
        data = np.ascontiguousarray(value, dtype=_WIRE[kind]).tobytes()
        return ["a", kind, list(value.shape), base64.b64encode(data).decode("ascii")]
    raise TypeError(
        f"a check can pass numbers, strings, lists, dicts and arrays to a student's function, not {type(value)}"
    )


Ask = Callable[[dict[str, Any]], Any]


class StudentFunction:
    """A function defined in the student's kernel, called from a check: arguments go out, plain data comes back."""

    def __init__(self, name: str, ask: Ask) -> None:
        self.__name__ = name
        self._ask = ask

    def __repr__(self) -> str:
        return f"<function {self.__name__}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        request = {
            "op": "call",
            "name": self.__name__,
            "args": [encode(a) for a in args],
            "kwargs": {str(k): encode(v) for k, v in kwargs.items()},
        }
        reply = self._ask(request)
        if isinstance(reply, dict) and "ok" in reply:
            return decode(reply["ok"])
        if isinstance(reply, dict) and isinstance(reply.get("raised"), list) and len(reply["raised"]) == 2:
            raise StudentRaised(self.__name__, *reply["raised"])
        return Opaque("a value the grader cannot read")


def _bound(tree: ast.AST) -> set[str]:
    """Every name a piece of code binds, in any scope (assignments, imports, definitions, arguments)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _bound_at_top(tree: ast.Module) -> set[str]:
    """The names a cell binds in its own (module) scope: what it leaves defined for the cells after it."""
    names: set[str] = set()
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    comprehensions = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, scopes):
            if not isinstance(node, ast.Lambda):
                names.add(node.name)
            continue
        if isinstance(node, comprehensions):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        todo.extend(ast.iter_child_nodes(node))
    return names


def _read(tree: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


class Judge:
    """The trusted namespace of one notebook's checks, and the way to run set-up cells and checks in it.

    ``ask(request)`` sends a request to the student's kernel and returns its parsed JSON
    reply (raising :class:`NoAnswer` when there is none in time); ``modules`` maps the
    names of the instructor's helper modules (``feedback``) to module objects, which the
    checks' imports get instead of anything on ``sys.path``.
    """

    def __init__(self, ask: Ask, modules: dict[str, types.ModuleType]) -> None:
        self.ask = ask
        self._modules = modules
        self._printed = io.StringIO()
        self._builtins = dict(vars(builtins))
        self._builtins.update(print=self._print, __import__=self._import)
        self.namespace: dict[str, Any] = {"__builtins__": self._builtins, "__name__": "__main__"}
        self._trusted: set[str] = set()

    @classmethod
    def for_files(cls, ask: Ask, files: dict[str, bytes], folder: Path) -> Judge:
        """A judge whose checks import the assignment's own helper modules (``*.py`` among ``files``).

        The files are written to ``folder`` (outside the sandbox) and each module is loaded
        fresh, so several notebooks and editions graded in one process never share one.
        """
        modules = {}
        for rel, data in files.items():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        for rel in files:
            if "/" not in rel and rel.endswith(".py"):
                name = rel[:-3]
                module = types.ModuleType(name)
                module.__file__ = str(folder / rel)
                exec(compile((folder / rel).read_text(encoding="utf-8"), module.__file__, "exec"), module.__dict__)  # noqa: S102 - the instructor's own file
                modules[name] = module
        return cls(ask, modules)

    def _print(self, *args: Any, sep: str | None = " ", end: str | None = "\n", **_: Any) -> None:
        if self._printed.tell() < _MAX_PRINTED:
            self._printed.write((" " if sep is None else sep).join(map(str, args)) + ("\n" if end is None else end))

    def _import(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level == 0 and name in self._modules:
            return self._modules[name]
        return __import__(name, globals, locals, fromlist, level)

    def _run(self, source: str) -> list[dict[str, Any]]:
        self._printed = io.StringIO()
        outputs: list[dict[str, Any]] = []
        error: dict[str, Any] | None = None
        try:
            tree = ast.parse(source)
            self._resolve(_read(tree) - _bound(tree) - self._trusted - set(self._builtins))
            self._trusted |= _bound_at_top(tree)
            exec(compile(tree, "<check>", "exec"), self.namespace)  # noqa: S102 - the instructor's check
        except StudentRaised as err:  # shown as the kernel would show it: the student's own error, said to be theirs
            error = _error(err.ename, err.evalue, f"raised by {err.function} in the student's code")
        except BaseException as err:  # noqa: BLE001 - any failure fails the check; NoAnswer included
            error = _error(type(err).__name__, _text(str(err), 2000))
        printed = self._printed.getvalue()
        if printed:
            outputs.append({"output_type": "stream", "name": "stdout", "text": printed})
        if error is not None:
            outputs.append(error)
        return outputs

    def _resolve(self, names: Iterable[str]) -> None:
        """Bind each name to its current value in the kernel (a :class:`StudentFunction` for a function)."""
        wanted = sorted(names)
        if not wanted:
            return
        reply = self.ask({"op": "resolve", "names": wanted})
        found = reply.get("names") if isinstance(reply, dict) else None
        found = found if isinstance(found, dict) else {}
        for name in wanted:
            value = found.get(name)
            if value is None:
                self.namespace.pop(name, None)
            elif value == ["fn"]:
                self.namespace[name] = StudentFunction(name, lambda request: self.ask(request))
            else:
                self.namespace[name] = decode(value)

    def setup(self, source: str) -> None:
        """Run a locked set-up cell (constants, imports of ``isclose`` and ``hint``) in the judge's namespace.

        The grader runs every set-up cell of the instructor's notebook (from the gradebook)
        before the first check, whatever the submission did with its copies.

        Its failures are the instructor's to see, not the student's: they are raised.
        """
        outputs = self._run(source)
        errors = [o for o in outputs if o["output_type"] == "error"]
        if errors:
            raise RuntimeError(f"a locked set-up cell fails in the grader: {errors[0]['evalue']}")
        # every name it left defined (``import *`` and ``:=`` included) is the instructor's, never the kernel's
        self._trusted |= set(self.namespace)

    def check(self, source: str) -> list[dict[str, Any]]:
        """Run one graded check; return the cell's outputs as nbgrader reads them (an ``error`` output fails it).

        The error's traceback is its one line ``ename: evalue``, so no line of the check is shown.
        """
        return self._run(source)


def _error(ename: str, evalue: str, *more: str) -> dict[str, Any]:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": [f"{ename}: {evalue}", *more]}


def own_message(output: dict[str, Any]) -> str | None:
    """The message of a check's own failed assertion in an output of a check cell, or None for anything else.

    The judge writes a check's error with the one traceback line ``ename: evalue``; an error the
    student's code raised inside a check gets a second line naming the function, so its text,
    whatever it says, is never taken for the check's.

    >>> own_message(_error("AssertionError", "[q1.a.wrong] no"))
    '[q1.a.wrong] no'
    >>> own_message(_error("AssertionError", "[q1.a.wrong] no", "raised by f in the student's code")) is None
    True
    """
    if output.get("output_type") != "error" or output.get("ename") != "AssertionError":
        return None
    evalue = output.get("evalue")
    if not isinstance(evalue, str) or output.get("traceback") != [f"AssertionError: {evalue}"]:
        return None
    return evalue


def parse_reply(text: Any, limit: int) -> Any:
    """The kernel's reply (the ``text/plain`` of a ``user_expressions`` entry: a JSON object), or None.

    A strict, bounded decoder: the text must be a JSON object of at most ``limit`` characters and
    :data:`_MAX_CONTAINERS` lists and objects (counted before parsing), so what parsing it costs is
    bounded by what was received; nothing in it is ever evaluated as Python.

    >>> parse_reply('{"ok": ["i", 1]}', 1000)
    {'ok': ['i', 1]}
    >>> parse_reply("__import__('os')", 1000), parse_reply("[" * 500 + "]" * 500, 1000)
    (None, None)
    """
    if not isinstance(text, str) or len(text) > limit or not text.startswith("{"):
        return None
    if text.count("[") + text.count("{") > _MAX_CONTAINERS:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
