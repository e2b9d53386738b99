"""The judge: every graded check runs here, in the grader's process, never in the student's kernel.

A notebook is graded in two rooms. The **run** is the student's kernel, in the sandbox: it
executes the answer cells and the locked set-up cells, and nothing else. The **judge** is
this module, in the grader: it executes every locked set-up cell again and every graded
check, with the instructor's text as nbgrader restored it from the gradebook (hidden tests
included). Neither the text of a check nor an expected value is ever sent to the kernel.

**Whose names.** The student's names are those the assignment's source notebook binds at top
level in its answer cells (:func:`student_names`: its ``### BEGIN SOLUTION`` cells, imports
left out). A check looks each of them up in the kernel where it reads it, in its own code
and in the functions it defines (the check runs with a mapping whose lookups of a student's
name ask the kernel), and ``del name`` or ``name = value`` in a check (not inside a
function) is done in the kernel too. Every other name is the grader's: builtins, modules,
what the set-up cells bind (even where an answer binds it too), what the check binds. A
module is always the grader's own: a name no set-up cell binds that the kernel binds to a
module (``np``, an import of the answer cell) is the grader's module of that name or usual
alias, and a module the student's code returns is :class:`Opaque`. Without a
source notebook, a check's names that no set-up cell or check binds are looked up in the
kernel once, before the check runs (the rule of earlier releases), and rebinding them stays
in the grader.

**What crosses.** Only plain data (:func:`decode`, :func:`encode`): ``None``, booleans,
numbers (complex too), strings, bytes, lists, tuples (named ones as a named tuple of the
grader's with the same type name and fields), sets, frozensets, dicts with keys of those
kinds, NumPy arrays and scalars of numbers, booleans and strings with their dtype, and for a
Matplotlib ``Axes`` an :class:`AxesData`. Any other object of the student's (a function, a
class, an instance) stays in the kernel, in a table of handles, and is a
:class:`StudentObject` here: calling it, reading an attribute (``p.x``, ``squares.__doc__``),
setting an attribute, ``len``, ``iter``, indexing, ``str``, ``float``,
``isinstance(value, StudentClass)`` ask the kernel and bring back plain data or another
proxy. A proxy equals only itself and has no arithmetic and no ``in`` of its own (``x in p``
iterates it here): the student's code is never handed an instructor's value to compare with. A function a check passes to the student's code is a
callback: it runs here, as the check's code, and the kernel asks for it mid-call on its stdin
channel (:meth:`Judge.answer_input`), at most :data:`MAX_CALLBACKS` times per call; it cannot
itself call the student's code. A call also brings back the student's values the check has
read that the call changed, and a method call (``p.norm()``) is one request.

**As nbgrader scores it.** What the student's function raises is raised in the check as the
same built-in class (``ValueError``, ``KeyError``...); an exception class of the student's is a
class of the grader's with the same name, derived from the nearest built-in class it derives
from. What it prints reaches the check's ``sys.stdout`` (and ``sys.stderr``) when the call
returns, as do the lists, dicts, sets and arrays it changed in place. The check's own output
goes to per-thread streams; its last expression, displayed as IPython displays it, is an
``execute_result`` (nbgrader's partial credit), and anything written to ``sys.stderr`` (a
warning, say) a ``stderr`` stream (no credit), so nbgrader's ``determine_grade`` reads the
cell as it reads the kernel's. (``contextlib.redirect_stdout`` in a check replaces
``sys.stdout`` for the whole process while it lasts, as anywhere; grading workers judge one
notebook at a time.)

The kernel's answers are read as untrusted data: each reply by a strict JSON decoder whose
cost is bounded by the reply's length (:func:`parse_reply`), then as tagged plain data
(:func:`decode`), so whatever the student's code prints, raises, patches or returns can only
ever be a value judged by the check. A kernel that does not answer within the cell's time
limit fails the check (:class:`NoAnswer`), even if the check catches every exception.

What cannot be judged outside the kernel (a check that seeds a random generator the
student's function draws from, say) is listed in :attr:`Judge.findings`; such a check is
scored as the judge runs it.

Example
-------
>>> judge = Judge(ask=lambda request: {"names": {}}, modules={})
>>> judge.setup("LIMIT = 3")
>>> judge.check('assert LIMIT == 3\\nprint("Part (a): passed")')
[{'output_type': 'stream', 'name': 'stdout', 'text': 'Part (a): passed\\n'}]
>>> judge.check("assert LIMIT == 4, 'no'")[0]["evalue"]
'no'
>>> judge.check("LIMIT / 6")[0]["data"]
{'text/plain': '0.5'}
"""

from __future__ import annotations

import ast
import base64
import binascii
import builtins
import collections
import contextlib
import inspect
import io
import json
import keyword
import logging
import math
import operator
import re
import sys
import threading
import types
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from grading import in_kernel

__all__ = [
    "MAX_CALLBACKS",
    "AxesData",
    "Judge",
    "NoAnswer",
    "Opaque",
    "StudentClass",
    "StudentError",
    "StudentFunction",
    "StudentMethod",
    "StudentObject",
    "TimedOut",
    "decode",
    "encode",
    "expression",
    "own_message",
    "parse_reply",
    "student_names",
]

SOURCE = Path(in_kernel.__file__).read_text(encoding="utf-8")
log = logging.getLogger(__name__)

_MAX_DEPTH = 32
_MAX_ITEMS = 10_000_000
_MAX_TEXT = 100_000
_MAX_PRINTED = 100_000
_MAX_CONTAINERS = 1_000_000  # JSON lists and objects in one reply
_MAX_FIELDS = 255  # fields of a named tuple
_MAX_KINDS = 1000  # exception classes and named tuple types a judge makes
_MAX_METHODS = 256  # method names of an object (calling one of them is then one request)
MAX_CALLBACKS = 10_000  # calls of the check's functions by the student's code, in one call of the student's
_WIRE: dict[str, np.dtype[Any]] = {"bool": np.dtype("u1"), "int": np.dtype("<i8"), "float": np.dtype("<f8")}
_DTYPE = re.compile(r"\|(?:b1|i1|u1|S[1-9]\d{0,5})|<(?:i2|i4|i8|u2|u4|u8|f2|f4|f8|c8|c16|U[1-9]\d{0,5})")
_HANDLE = re.compile(r"[0-9a-f]{1,16}\.[0-9]{1,9}")
_KINDS = ("fn", "cls", "obj")
_ASKED_DUNDERS = frozenset({"__doc__", "__name__", "__qualname__", "__module__", "__annotations__", "__defaults__"})


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


class StudentError(Exception):
    """What the student's code raised, of a class the grader does not have (``raised`` by the student's class name).

    Only the judge makes these, for an exception class the student defined: a class of the same name, derived from
    the nearest built-in exception class the student's class derives from (``Exception`` when there is none).
    """


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


def _b64(data: Any, size: int) -> bytes | None:
    """``size`` bytes from their base64 text, or None."""
    if not isinstance(data, str) or len(data) != 4 * ((size + 2) // 3):
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == size else None


def _dtype(text: Any) -> np.dtype[Any] | None:
    """A dtype of the few the wire carries (``<f4``, ``|u1``, ``<U5``...), read without evaluating anything."""
    return np.dtype(text) if isinstance(text, str) and _DTYPE.fullmatch(text) else None


def _array(kind: Any, shape: Any, data: Any) -> Any:
    dtype = _dtype(kind)
    if not (
        dtype is not None
        and isinstance(shape, list)
        and len(shape) <= 8
        and all(type(n) is int and 0 <= n <= _MAX_ITEMS for n in shape)
        and math.prod(shape) <= _MAX_ITEMS
    ):
        return Opaque("an array the grader cannot read")
    raw = _b64(data, math.prod(shape) * dtype.itemsize)
    if raw is None:
        return Opaque("an array the grader cannot read")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _scalar(kind: Any, data: Any) -> Any:
    dtype = _dtype(kind)
    raw = None if dtype is None or dtype.kind in "US" else _b64(data, dtype.itemsize)
    if raw is None:
        return Opaque("a value the grader cannot read")
    return np.frombuffer(raw, dtype=dtype)[0]


def _listed(tag: str, kind: Any, data: Any) -> Any:
    """A list or tuple of Python numbers of one kind, sent as their bytes."""
    if not (isinstance(data, str) and isinstance(kind, str) and kind in _WIRE):
        return Opaque("a value the grader cannot read")
    count = (len(data) * 3 // 4 - len(data[-2:]) + len(data[-2:].rstrip("="))) // _WIRE[kind].itemsize
    raw = _b64(data, count * _WIRE[kind].itemsize) if count <= _MAX_ITEMS else None
    if raw is None:
        return Opaque("a value the grader cannot read")
    flat = np.frombuffer(raw, dtype=_WIRE[kind])
    items = (flat.astype(bool) if kind == "bool" else flat).tolist()
    return items if tag == "L" else tuple(items)


class _NamedTuple(tuple):  # type: ignore[type-arg]
    """A named tuple of the grader's, made without evaluating any text (``collections.namedtuple`` does)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in zip(self._fields, self, strict=False))})"

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self, strict=False))

    def _replace(self, **changes: Any) -> Any:
        return type(self)(changes.pop(f, v) for f, v in zip(self._fields, self, strict=False))

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)


_named_types: dict[tuple[str, tuple[str, ...]], type] = {}  # for values decoded without a judge


def _named(typename: Any, fields: Any, kinds: dict[tuple[str, tuple[str, ...]], type]) -> type | None:
    """The grader's named tuple type of that name and fields, kept in ``kinds`` (at most :data:`_MAX_KINDS`: a judge
    has its own, so that one student's notebook cannot use up another's), or None."""

    def name(text: Any) -> bool:
        return isinstance(text, str) and len(text) <= 100 and text.isidentifier() and not keyword.iskeyword(text)

    if not (name(typename) and isinstance(fields, list) and len(fields) <= _MAX_FIELDS):
        return None
    if not all(name(f) and not f.startswith("_") for f in fields) or len(set(fields)) != len(fields):
        return None
    key = (typename, tuple(fields))
    if key not in kinds:
        if len(kinds) >= _MAX_KINDS:
            return None
        members: dict[str, Any] = {"__slots__": (), "_fields": key[1], "__module__": "__student__"}
        members.update({f: property(operator.itemgetter(i)) for i, f in enumerate(fields)})
        kinds[key] = type(typename, (_NamedTuple,), members)
    return kinds[key]


class _SetUpObjects:
    """The lists, dicts, sets, bytearrays and arrays reachable from the set-up cells' values (through containers,
    objects' attributes and the instructor's helper modules), which a student's function is never let write into.

    >>> table = {"a": [1, 2]}
    >>> held = _SetUpObjects([table])
    >>> held.holds([1, 2]), held.holds(table["a"]), held.holds(table)
    (False, True, True)
    >>> held = _SetUpObjects([np.arange(6).reshape(2, 3)])
    >>> held.holds(held.arrays[0][1]), held.holds(np.zeros(3))   # a view shares the set-up array's memory
    (True, False)
    """

    LIMIT = 100_000  # objects walked; past it, nothing is written back at all

    def __init__(self, values: Iterable[Any], helpers: Iterable[types.ModuleType] = ()) -> None:
        own = {id(module) for module in helpers}
        self.ids: set[int] = set()
        self.arrays: list[np.ndarray] = []
        seen: set[int] = set()
        todo = list(values)
        while todo and len(seen) < self.LIMIT:
            value = todo.pop()
            if id(value) in seen or isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
                continue
            seen.add(id(value))
            if isinstance(value, (list, dict, set, bytearray, np.ndarray)):
                self.ids.add(id(value))
            if isinstance(value, np.ndarray):
                self.arrays.append(value)
            elif isinstance(value, dict):
                todo.extend(value.values())
            elif isinstance(value, (list, set, tuple, frozenset)):
                todo.extend(value)
            elif isinstance(value, types.ModuleType):
                if id(value) in own:  # the instructor's own module (feedback), not numpy's
                    todo.extend(vars(value).values())
            elif isinstance(getattr(value, "__dict__", None), dict):
                todo.extend(vars(value).values())
        self.complete = not todo

    def holds(self, target: Any) -> bool:
        """Whether writing into ``target`` could change a set-up value."""
        if not self.complete:
            return True
        if id(target) in self.ids:
            return True
        return isinstance(target, np.ndarray) and any(np.may_share_memory(target, a) for a in self.arrays)


_MAX_SAME_HASH = 8  # keys of one set or dict that may share a hash


def _hashable(items: list[Any]) -> bool:
    """Whether ``items`` can be a set's elements or a dict's keys at a cost linear in their number: each is hashable,
    and no more than a few share one hash. Keys chosen to collide (integers that are multiples of 2**61 - 1 all hash
    alike) would make building the set take time quadratic in the reply's length; an honest kernel's set or dict,
    whose keys are distinct, has next to no collisions.

    >>> _hashable([1, 2, 3]), _hashable([[1]]), _hashable([k * (2**61 - 1) for k in range(1, 20)])
    (True, False, False)
    """
    try:
        hashes = collections.Counter(hash(item) for item in items)
    except TypeError:
        return False
    return not hashes or hashes.most_common(1)[0][1] <= _MAX_SAME_HASH


def decode(value: Any, depth: int = 0, judge: Judge | None = None) -> Any:
    """A value sent by the kernel, as plain data; anything malformed or of another kind is :class:`Opaque`.

    Tags: ``["n"]`` None, ``["b", bool]``, ``["i", int]``, ``["f", float]``, ``["c", re, im]`` complex,
    ``["s", str]``, ``["y", base64]`` bytes, ``["l", [...]]`` list, ``["t", [...]]`` tuple,
    ``["nt", type name, [fields], [...]]`` named tuple, ``["set", [...]]``, ``["fset", [...]]``,
    ``["d", [[key, value], ...]]`` dict (keys tagged too), ``["a", dtype, shape, base64]`` array and
    ``["np", dtype, base64]`` NumPy scalar (``dtype`` one of ``|b1 |i1 |u1 <i2 <i4 <i8 <u2 <u4 <u8 <f2 <f4 <f8
    <c8 <c16 <U{n} |S{n}``, the values little-endian), ``["L" or "T", kind, base64]`` a list or tuple of
    Python numbers of one kind (``bool``, ``int`` or ``float``: one byte, eight or eight each),
    ``["axes", xlabel, ylabel, title, [[label, x, y], ...], legend texts or None]``, ``["m", name]`` a
    module (as a value, :class:`Opaque`; see :meth:`Judge._lookup`), ``["h", handle, kind, name]`` an object
    kept in the kernel (a :class:`StudentObject` of ``judge``), ``["x", type name]`` anything else.

    Nothing in a value is evaluated, and its cost is bounded by its length: at most :data:`_MAX_DEPTH`
    levels, :data:`_MAX_ITEMS` items in an array or list, :data:`_MAX_TEXT` characters in a string.

    >>> decode(["t", [["i", 2], ["f", 0.5]]]), decode(["a", "<f8", [2], "AAAAAAAA8D8AAAAAAAAAQA=="])
    ((2, 0.5), array([1., 2.]))
    >>> decode(["d", [[["t", [["i", 1], ["i", 2]]], ["set", [["s", "a"]]]]]]), decode(["np", "<f4", "AAAAPw=="])
    ({(1, 2): {'a'}}, np.float32(0.5))
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
            try:
                return float(item)
            except OverflowError:  # an int beyond any float
                return unreadable
        if tag == "s" and type(item) is str and len(item) <= _MAX_TEXT:
            return item
        if tag == "y" and type(item) is str and len(item) % 4 == 0:
            size = len(item) * 3 // 4 - len(item[-2:]) + len(item[-2:].rstrip("="))
            raw = _b64(item, size)
            return unreadable if raw is None else raw
        if tag in ("l", "t", "set", "fset") and type(item) is list and len(item) <= _MAX_ITEMS:
            items = [decode(v, depth + 1, judge) for v in item]
            if tag in ("l", "t"):
                return items if tag == "l" else tuple(items)
            if not _hashable(items):
                return unreadable
            return set(items) if tag == "set" else frozenset(items)
        if tag == "d" and type(item) is list and all(type(kv) is list and len(kv) == 2 for kv in item):
            keys = [decode(k, depth + 1, judge) for k, _ in item]
            if not _hashable(keys) or any(isinstance(k, Opaque) for k in keys):
                return unreadable
            return dict(zip(keys, [decode(v, depth + 1, judge) for _, v in item], strict=True))
        if tag == "x":
            return Opaque(_text(item, 80))
        if tag == "m" and type(item) is str:  # as a value: no module of the grader's (see Judge._lookup)
            return Opaque(f"module {_text(item, 80)}")
    if tag == "c" and len(rest) == 2 and all(type(v) in (int, float) for v in rest):
        try:
            return complex(rest[0], rest[1])
        except OverflowError:
            return unreadable
    if tag == "np" and len(rest) == 2:
        return _scalar(*rest)
    if tag == "nt" and len(rest) == 3 and type(rest[2]) is list:
        cls = _named(rest[0], rest[1], judge._named_types if judge is not None else _named_types)
        if cls is None or len(rest[2]) != len(cls._fields):  # type: ignore[attr-defined]
            return unreadable
        return cls([decode(v, depth + 1, judge) for v in rest[2]])
    if tag == "a" and len(rest) == 3:
        return _array(*rest)
    if tag in ("L", "T") and len(rest) == 2:
        return _listed(tag, *rest)
    if tag == "h" and len(rest) in (3, 4):
        handle, kind, name = rest[:3]
        methods = rest[3] if len(rest) == 4 else []
        if not (isinstance(methods, list) and len(methods) <= _MAX_METHODS and all(map(_is_name, methods))):
            return unreadable
        if isinstance(handle, str) and _HANDLE.fullmatch(handle) and kind in _KINDS and judge is not None:
            return judge._proxy(handle, kind, _text(name, 80), frozenset(methods))
        return Opaque(f"{_text(name, 80)} object")
    if tag == "axes" and len(rest) == 5:
        xlabel, ylabel, title, lines, legend = rest
        if not (isinstance(lines, list) and all(isinstance(line, list) and len(line) == 3 for line in lines)):
            return unreadable
        drawn = [
            LineData(_text(label), decode(x, depth + 1, judge), decode(y, depth + 1, judge)) for label, x, y in lines
        ]
        texts = [_text(t) for t in legend] if isinstance(legend, list) else None
        return AxesData(_text(xlabel), _text(ylabel), _text(title), drawn, texts)
    return unreadable


_ALIASES = {"np": "numpy", "plt": "matplotlib.pyplot", "mpl": "matplotlib", "pd": "pandas", "sp": "scipy"}


def _is_name(text: Any) -> bool:
    return isinstance(text, str) and len(text) <= 100 and text.isidentifier()


def _module(name: str, data: Any, modules: dict[str, types.ModuleType]) -> types.ModuleType | None:
    """The grader's own module for a name a check reads that the kernel binds to a module (``["m", module name]``):
    only the module of that name (``math``), or of its usual alias (``np``), an instructor's helper or one this
    process has imported; else None. A student cannot hand a check ``os`` for ``np``."""
    if not (isinstance(data, list) and len(data) == 2 and data[0] == "m" and isinstance(data[1], str)):
        return None
    module_name = data[1]
    if module_name not in (name, _ALIASES.get(name)):
        return None
    module = modules.get(module_name) or sys.modules.get(module_name)
    return module if isinstance(module, types.ModuleType) else None


def _np_wire(dtype: np.dtype[Any]) -> str | None:
    code = dtype.str[1:]
    wire = ("|" if dtype.itemsize == 1 or code[:1] == "S" else "<") + code
    return wire if _DTYPE.fullmatch(wire) else None


def encode(value: Any, depth: int = 0, judge: Judge | None = None) -> list[Any]:
    """An argument a check passes to a student's function, as tagged plain data (the tags of :func:`decode`).

    A :class:`StudentObject` of ``judge`` goes as its handle, and a function of the check's as a callback
    (``["cb", number]``), which the student's code may call (:meth:`Judge.answer_input`).

    >>> encode((3, 2.5, np.arange(2, dtype=np.int32)))
    ['t', [['i', 3], ['f', 2.5], ['a', '<i4', [2], 'AAAAAAEAAAA=']]]
    >>> encode({(1, 2): {"a"}, 1j: np.float32(0.5)})
    ['d', [[['t', [['i', 1], ['i', 2]]], ['set', [['s', 'a']]]], [['c', 0.0, 1.0], ['np', '<f4', 'AAAAPw==']]]]
    """
    if depth > _MAX_DEPTH:
        raise TypeError("an argument nested too deeply for the grader to send")
    if value is None:
        return ["n"]
    if isinstance(value, StudentMethod) and value._judge is judge:
        return ["hm", value._handle, value._name]
    if isinstance(value, StudentObject) and judge is not None and value._judge is judge and value._handle:
        return ["h", value._handle]
    if isinstance(value, np.generic) and value.dtype.kind not in "USO":
        wire = _np_wire(value.dtype)
        if wire is not None:
            return ["np", wire, base64.b64encode(np.asarray(value).astype(wire).tobytes()).decode("ascii")]
    if isinstance(value, (bool, np.bool_)):
        return ["b", bool(value)]
    if isinstance(value, (int, np.integer)):
        return ["i", int(value)]
    if isinstance(value, (float, np.floating)):
        return ["f", float(value)]
    if isinstance(value, complex):
        return ["c", value.real, value.imag]
    if isinstance(value, str):
        return ["s", str(value)]
    if isinstance(value, (bytes, bytearray)):
        return ["y", base64.b64encode(bytes(value)).decode("ascii")]
    if isinstance(value, tuple) and isinstance(getattr(type(value), "_fields", None), tuple):
        fields = [str(f) for f in type(value)._fields]  # type: ignore[attr-defined]
        return ["nt", type(value).__name__, fields, [encode(v, depth + 1, judge) for v in value]]
    if isinstance(value, (list, tuple)):
        return ["l" if isinstance(value, list) else "t", [encode(v, depth + 1, judge) for v in value]]
    if isinstance(value, (set, frozenset)):
        return ["set" if isinstance(value, set) else "fset", [encode(v, depth + 1, judge) for v in value]]
    if isinstance(value, dict):
        return ["d", [[encode(k, depth + 1, judge), encode(v, depth + 1, judge)] for k, v in value.items()]]
    if isinstance(value, np.ndarray):
        wire = _np_wire(value.dtype) if value.dtype.kind != "O" else None
        if wire is not None:
            data = np.ascontiguousarray(value, dtype=wire).tobytes()
            return ["a", wire, list(value.shape), base64.b64encode(data).decode("ascii")]
    if callable(value) and not isinstance(value, (type, StudentObject)) and judge is not None:
        return ["cb", judge._register_callback(value)]
    raise TypeError(
        "a check can pass numbers, strings, bytes, lists, tuples, sets, dicts, arrays, functions and the student's "
        f"own objects to a student's function, not {type(value).__name__}"
    )


Ask = Callable[[dict[str, Any]], Any]


class StudentObject:
    """An object kept in the student's kernel (a function, a class, an instance), seen from a check.

    What the check does with it asks the kernel and brings back plain data or another proxy:
    calling it, reading an attribute (of the dunder attributes only ``__doc__``, ``__name__``, ``__qualname__``,
    ``__module__``, ``__annotations__`` and ``__defaults__``), ``len``,
    ``iter``, ``value[key]``, ``str``, ``repr``, ``bool``, ``float``, ``int``, setting an attribute, and for a class
    ``isinstance(value, cls)`` and ``issubclass(c, cls)``. It equals only itself and has no
    arithmetic and no ``in`` of its own (``x in value`` iterates it here): the student's code
    is never handed an instructor's value to compare with.
    """

    __slots__ = ("__weakref__", "_handle", "_judge", "_kind", "_methods", "_name")

    def __init__(self, judge: Judge, handle: str, kind: str, name: str, methods: frozenset[str] = frozenset()) -> None:
        object.__setattr__(self, "_judge", judge)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_methods", methods)

    def _ask(self, how: str, **more: Any) -> Any:
        return self._judge._special(self, how, more)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name in self._methods:  # a method of its class: called in the same request that names it
            return StudentMethod(self._judge, self._handle, "fn", name)
        return self._ask("getattr", name=name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._ask("setattr", name=name, arg=value)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return hash((id(self._judge), self._handle))

    def __repr__(self) -> str:
        text = self._ask("repr")
        return text if isinstance(text, str) else f"<{self._name}>"

    def __str__(self) -> str:
        text = self._ask("str")
        return text if isinstance(text, str) else f"<{self._name}>"

    def __bool__(self) -> bool:
        return self._ask("bool") is True

    def __len__(self) -> int:
        size = self._ask("len")
        if type(size) is not int:
            raise TypeError(f"the length of {self._name} is not a number")
        return size

    def __iter__(self) -> Iterator[Any]:
        items = self._ask("iter")
        if not isinstance(items, list):
            raise TypeError(f"{self._name} cannot be iterated")
        return iter(items)

    def __getitem__(self, key: Any) -> Any:
        return self._ask("getitem", arg=key)

    def __float__(self) -> float:
        value = self._ask("float")
        if type(value) is not float:
            raise TypeError(f"{self._name} is not a number")
        return value

    def __int__(self) -> int:
        value = self._ask("int")
        if type(value) is not int:
            raise TypeError(f"{self._name} is not a number")
        return value

    def __instancecheck__(self, instance: Any) -> bool:
        return self._kind == "cls" and self._ask("isinstance", arg=instance) is True

    def __subclasscheck__(self, subclass: Any) -> bool:
        return self._kind == "cls" and self._ask("issubclass", arg=subclass) is True

    def __getattribute__(self, name: str) -> Any:
        if name in _ASKED_DUNDERS:  # the student's docstring, name...: not the proxy class's own
            return object.__getattribute__(self, "_ask")("getattr", name=name)
        return object.__getattribute__(self, name)


class StudentFunction(StudentObject):
    """A function (or a callable object) of the student's, as a check sees it: a :class:`StudentObject` that can be
    called, whose ``repr`` is its name and whose ``inspect.signature`` is the student's function's."""

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._judge._call(self, args, kwargs)

    def __repr__(self) -> str:
        return f"<function {self._name}>"

    @property
    def __signature__(self) -> inspect.Signature:
        """The student's function's parameters, their kinds and their defaults (plain data), as ``inspect`` reads
        them; no annotations."""
        described = self._ask("signature")
        try:
            parameters = [
                inspect.Parameter(name, inspect._ParameterKind(kind), default=default[0] if default else _EMPTY)
                for name, kind, default in described
            ]
            return inspect.Signature(parameters)
        except (TypeError, ValueError) as err:
            raise ValueError(f"no signature the grader can read for {self._name}") from err


_EMPTY = inspect.Parameter.empty


class StudentClass(StudentFunction):
    """A class of the student's, as a check sees it: call it to make an object, ``isinstance`` asks the kernel."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<class {self._name}>"


class StudentMethod(StudentFunction):
    """A method of a student's object (``p.norm``), named but not yet looked up: calling it is one request; anything
    else asks the kernel for the method itself first."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<method {self._name}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StudentMethod) and (other._judge, other._handle, other._name) == (
            self._judge,
            self._handle,
            self._name,
        )

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((id(self._judge), self._handle, self._name))

    def _ask(self, how: str, **more: Any) -> Any:
        owner = self._judge._proxies.get(self._handle)
        method = owner._ask("getattr", name=self._name) if owner is not None else None
        if not isinstance(method, StudentObject):
            raise TypeError(f"{self._name} is not a method the grader can read")
        return method._ask(how, **more)


class _PerThread:
    """``sys.stdout`` or ``sys.stderr`` as each thread sees it: a judge's buffer on a judge's thread, else what it
    replaced (whose other attributes, ``fileno`` and ``encoding`` say, it shows)."""

    def __init__(self, fallback: Any) -> None:
        self.fallback = fallback
        self.local = threading.local()

    def target(self) -> Any:
        return getattr(self.local, "buffer", None) or self.fallback

    def write(self, text: str) -> int:
        return int(self.target().write(text) or 0)

    def flush(self) -> None:
        with contextlib.suppress(Exception):
            self.target().flush()

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target(), name)


def _per_thread(name: str) -> _PerThread:
    """``sys.<name>`` made per-thread, if it is not yet. No lock (the module travels by value, a lock does not): two
    threads that both wrap it make one wrapper fall back to the other, and each thread's writes still reach its own
    buffer."""
    current = getattr(sys, name)
    if not isinstance(current, _PerThread):
        current = _PerThread(current)
        setattr(sys, name, current)
    return current


class _Bounded(io.StringIO):
    """A text buffer that keeps at most :data:`_MAX_PRINTED` characters."""

    def write(self, text: Any) -> int:
        text = str(text)
        room = _MAX_PRINTED - self.tell()
        if room > 0:
            super().write(text[:room])
        return len(text)


@contextlib.contextmanager
def _captured() -> Iterator[tuple[_Bounded, _Bounded]]:
    """What this thread writes to ``sys.stdout`` and ``sys.stderr`` meanwhile, in two buffers."""
    out, err = _Bounded(), _Bounded()
    streams = (_per_thread("stdout"), _per_thread("stderr"))
    for stream, buffer in zip(streams, (out, err), strict=True):
        stream.local.buffer = buffer
    try:
        yield out, err
    finally:
        for stream in streams:
            stream.local.buffer = None


_MISSING = object()


class _Names(dict):  # type: ignore[type-arg]
    """The checks' namespace: the grader's names as a dict; a student's name asks the kernel, where it is read,
    deleted or bound (top-level ``LOAD_NAME``, ``STORE_NAME``, ``DELETE_NAME`` and functions' ``LOAD_GLOBAL`` go
    through these methods when the globals are a dict subclass)."""

    def __init__(self, judge: Judge) -> None:
        super().__init__()
        self.judge = judge

    def __getitem__(self, name: str) -> Any:
        try:
            return dict.__getitem__(self, name)
        except KeyError:
            return self.judge._student_value(name)

    def __setitem__(self, name: str, value: Any) -> None:
        if self.judge._forwarded(name):
            self.judge._assign(name, value)
        else:
            dict.__setitem__(self, name, value)

    def __delitem__(self, name: str) -> None:
        if self.judge._forwarded(name):
            self.judge._delete(name)
        else:
            dict.__delitem__(self, name)


def _quiet(source: str) -> bool:
    """Whether IPython would not display the cell's last expression (it ends in ``;``)."""
    try:
        from IPython.core.displayhook import DisplayHook

        return bool(DisplayHook.semicolon_at_end_of_expression(source))
    except (ImportError, AttributeError):  # an IPython without it
        return source.rstrip().endswith(";")


_formatter: Any = None


def _plain_text(value: Any) -> str:
    """``text/plain`` of a value as IPython's display hook shows it (``1.0``, ``0.5``, ``np.float64(0.5)``)."""
    global _formatter
    if _formatter is None:
        from IPython.core.formatters import PlainTextFormatter

        _formatter = PlainTextFormatter()
    return str(_formatter(value))


def _instance(cls: type[BaseException], message: str) -> BaseException:
    """``cls(message)``, or where its constructor wants more (``UnicodeDecodeError``), a subclass that takes it."""
    with contextlib.suppress(Exception):  # a class whose constructor wants other arguments
        return cls(message)
    members = {"__init__": lambda self, *a: BaseException.__init__(self, *a), "__str__": lambda self: message}
    try:
        return type(cls.__name__, (cls,), members)(message)  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001
        return StudentError(f"{cls.__name__}: {message}")


def idioms_not_judged(tree: ast.Module, student: frozenset[str], students: set[str]) -> list[tuple[str, str]]:
    """``(idiom, fix)`` for each idiom of a check (``tree``) the judge cannot run as the kernel would; ``student`` are
    the student's names, ``students`` those of them the check reads."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Global) and set(node.names) & student:
            found.append(
                (
                    "binds a student's name with `global` inside a function: that binding stays in the grader",
                    "bind or delete the student's name at the check's top level",
                )
            )
        func = node.func if isinstance(node, ast.Call) else None
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if called in ("gca", "gcf") and isinstance(func, ast.Attribute):
            found.append(
                (
                    (
                        f"calls {called}(): the current figure is the grader's, empty; the student's figures live in the "
                        "kernel"
                    ),
                    "read the student's figure or Axes by the name the answer binds (ax, fig)",
                )
            )
        if students and called in ("seed", "set_state", "setstate"):
            found.append(
                (
                    (
                        f"calls {called}() to seed a random generator: the student's code draws from the kernel's "
                        "generators, which the check does not seed (scored as the judge runs it)"
                    ),
                    (
                        "seed in the answer cell's instructions, or pass a seed or the drawn values to the student's "
                        "function as arguments"
                    ),
                )
            )
    return found


class Judge:
    """The trusted namespace of one notebook's checks, and the way to run set-up cells and checks in it.

    ``ask(request)`` sends a request to the student's kernel and returns its parsed JSON
    reply (raising :class:`NoAnswer` when there is none in time); ``modules`` maps the
    names of the instructor's helper modules (``feedback``) to module objects, which the
    checks' imports get instead of anything on ``sys.path``. ``student_names`` are the names
    the assignment's answer cells bind (:func:`student_names`); None keeps the rule of earlier
    releases (see the module). While the kernel runs a call of the judge's, it asks the
    judge for a check's callbacks: the kernel's client passes each ``input_request`` prompt to
    :meth:`answer_input` and sends back its reply.

    ``findings`` lists the idioms of the checks run so far that the judge cannot run as the
    kernel would (each a dict of ``grade_id``, ``idiom`` and ``fix``), for a linter or a report.
    """

    def __init__(self, ask: Ask, modules: dict[str, types.ModuleType], student_names: Any = None) -> None:
        self.ask = ask
        self._modules = modules
        self._builtins = dict(vars(builtins))
        self._builtins.update(__import__=self._import)
        self.namespace: dict[str, Any] = _Names(self)
        dict.update(self.namespace, {"__builtins__": self._builtins, "__name__": "__main__"})
        self._student: set[str] | None = None if student_names is None else set(student_names)
        self._trusted: set[str] = set()
        self._setting_up = False
        self._cache: dict[str, Any] = {}
        self._own: set[str] = set()  # the student's names the running check bound itself
        self._setup_objects = _SetUpObjects(())  # what the set-up cells bound: never written back into
        self._proxies: dict[str, StudentObject] = {}
        self._callbacks: dict[int, Callable[..., Any]] = {}
        self._kept_callbacks: dict[int, Callable[..., Any]] = {}  # bound to a student's name by the check
        self._callback_errors: dict[str, BaseException] = {}
        self._callbacks_run = 0
        self._numbered = 0
        self._in_callback = 0
        self._raised: dict[int, tuple[BaseException, str]] = {}
        self._failed: NoAnswer | None = None
        self._kinds: dict[tuple[str, type], type] = {}
        self._named_types: dict[tuple[str, tuple[str, ...]], type] = {}  # for values decoded without a judge
        self._grade_id: str | None = None
        self.findings: list[dict[str, str]] = []

    @classmethod
    def for_files(cls, ask: Ask, files: dict[str, bytes], folder: Path, student_names: Any = None) -> Judge:
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
        return cls(ask, modules, student_names)

    def _import(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level == 0 and name in self._modules:
            return self._modules[name]
        return __import__(name, globals, locals, fromlist, level)

    # -- talking to the kernel ------------------------------------------------------------------------------------

    def _request(self, request: dict[str, Any]) -> Any:
        if self._failed is not None:
            raise type(self._failed)(*self._failed.args)
        if self._in_callback:
            raise RuntimeError(
                "a function the check passes to the student's code cannot use the student's code itself "
                "(the kernel is busy running it)"
            )
        try:
            return self.ask(request)
        except NoAnswer as err:
            self._failed = err
            raise

    def _proxy(self, handle: str, kind: str, name: str, methods: frozenset[str]) -> StudentObject:
        proxy = self._proxies.get(handle)
        if proxy is None or proxy._kind != kind or proxy._methods != methods:
            cls = {"fn": StudentFunction, "cls": StudentClass}.get(kind, StudentObject)
            proxy = cls(self, handle, kind, name, methods)
            self._proxies[handle] = proxy
        return proxy

    def _printed(self, reply: dict[str, Any]) -> None:
        """What the student's code printed during a request, written where the check writes."""
        for key, stream in (("out", sys.stdout), ("err", sys.stderr)):
            text = reply.get(key)
            if isinstance(text, str) and text:
                stream.write(_text(text, _MAX_PRINTED))

    def _outcome(self, reply: Any, function: str) -> Any:
        """The value a reply carries, or the student's exception it says was raised (raised here)."""
        if not isinstance(reply, dict):
            return Opaque("a value the grader cannot read")
        self._printed(reply)
        raised = reply.get("raised")
        if isinstance(raised, list) and len(raised) in (2, 3, 4):
            token = reply.get("token")
            original = self._callback_errors.get(token) if isinstance(token, str) else None
            if original is not None:  # the check's own callback raised it, and the student's code let it through
                raise original
            raise self._student_exception(raised, function)
        if "ok" not in reply:
            return Opaque("a value the grader cannot read")
        return decode(reply["ok"], judge=self)

    def _student_exception(self, raised: list[Any], function: str) -> BaseException:
        ename, evalue = _text(raised[0], 100), _text(raised[1], 2000)
        base_name = raised[2] if len(raised) >= 3 and isinstance(raised[2], str) else ename
        base = getattr(builtins, base_name, None)
        if not (isinstance(base, type) and issubclass(base, BaseException)):
            base = Exception
        if issubclass(base, (StopIteration, StopAsyncIteration)):
            # as Python treats one leaving a generator: it must not end a check's loop (all(map(...))) early
            ename, evalue = "RuntimeError", f"{function} raised {ename}"
            base_name, base, raised = "RuntimeError", RuntimeError, raised[:2]
        cls: type[BaseException] = base
        if not (ename == base_name and getattr(builtins, ename, None) is base):  # a class of the student's
            cls = self._exception_class(ename, base)
        args: Any = decode(raised[3], judge=self) if len(raised) == 4 else None
        plain = isinstance(args, tuple) and not any(isinstance(a, (Opaque, StudentObject)) for a in args)
        err = _instance(cls, evalue)
        if plain and type(err) is cls:  # its own arguments: KeyError((1, 2)) reads (1, 2), as in the kernel
            with contextlib.suppress(Exception):
                again = cls(*args)
                if str(again) == evalue:
                    err = again
        self._raised[id(err)] = (err, function)
        return err

    def _exception_class(self, ename: str, base: type[BaseException]) -> type[BaseException]:
        name = ename if ename.isidentifier() else "StudentError"
        key = (name, base)
        if key not in self._kinds:
            if len(self._kinds) >= _MAX_KINDS:
                return StudentError
            bases: tuple[type, ...] = (base, StudentError) if issubclass(base, Exception) else (base,)
            try:
                self._kinds[key] = type(name, bases, {"__module__": "__student__"})
            except TypeError:  # bases whose layouts do not mix
                self._kinds[key] = type(name, (StudentError,), {"__module__": "__student__"})
        return self._kinds[key]

    def _call(self, proxy: StudentObject, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self._callbacks.clear()
        self._callback_errors.clear()
        self._callbacks_run = 0
        try:
            sent = [encode(a, judge=self) for a in args]
            named = {str(k): encode(v, judge=self) for k, v in kwargs.items()}
        except TypeError as err:
            self._finding(
                f"passes a value that is not plain data to {proxy._name} ({err})",
                "pass numbers, strings, lists, dicts, arrays or functions (the student's code may not see the "
                "check's other objects)",
            )
            raise
        request: dict[str, Any] = {"op": "call", "target": ["h", proxy._handle] if proxy._handle else proxy._name}
        if isinstance(proxy, StudentMethod):
            request["method"] = proxy._name
        # the student's values the check has read: the reply carries those the call changed (no request more)
        watched = sorted(
            name
            for name, value in self._cache.items()
            if not isinstance(value, StudentObject) and name not in self._own
        )
        request.update(args=sent, kwargs=named, watch=watched)
        try:
            reply = self._request(request)
            if isinstance(reply, dict) and isinstance(reply.get("names"), dict):
                for name in set(watched) & set(reply["names"]):
                    data = reply["names"][name]
                    self._cache[name] = _MISSING if data is None else self._found(name, data)
            value = self._outcome(reply, proxy._name)
            changed = reply.get("changed") if isinstance(reply, dict) else None
            if isinstance(changed, dict):
                self._copy_back(changed, args, kwargs)
            return value
        finally:
            self._callbacks.clear()
            self._callback_errors.clear()

    def _copy_back(self, changed: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Copy what the student's function changed in place into the check's own arguments."""
        for key, data in list(changed.items())[: len(args) + len(kwargs)]:
            if not isinstance(key, str):
                continue
            target = args[int(key)] if key.isdigit() and int(key) < len(args) else kwargs.get(key)
            if self._setup_objects.holds(target):  # the instructor's constant stays as the set-up cell made it
                continue
            value = decode(data, judge=self)
            if (isinstance(target, list) and isinstance(value, list)) or (
                isinstance(target, bytearray) and isinstance(value, bytes)
            ):
                target[:] = value
            elif (isinstance(target, dict) and isinstance(value, dict)) or (
                isinstance(target, set) and isinstance(value, set)
            ):
                target.clear()
                target.update(value)
            elif (
                isinstance(target, np.ndarray)
                and isinstance(value, np.ndarray)
                and target.shape == value.shape
                and target.flags.writeable
            ):
                target[...] = value

    def _special(self, proxy: StudentObject, how: str, more: dict[str, Any]) -> Any:
        if not proxy._handle:
            raise TypeError(f"the grader can only call {proxy._name}")
        request: dict[str, Any] = {"op": "special", "target": ["h", proxy._handle], "how": how}
        if "name" in more:
            request["name"] = more["name"]
        arg = more.get("arg")
        if how == "setattr" and callable(arg) and not isinstance(arg, (type, StudentObject)):
            request["arg"] = ["cb", self._register_callback(arg, kept=True)]  # the student's code may call it later
        elif "arg" in more:
            try:
                request["arg"] = encode(arg, judge=self)
            except TypeError:
                if how in ("isinstance", "issubclass"):
                    return False  # an object of the grader's is no instance of a student's class
                raise
        self._callbacks.clear()
        try:
            return self._outcome(self._request(request), proxy._name)
        finally:
            self._callbacks.clear()

    def _register_callback(self, function: Callable[..., Any], kept: bool = False) -> int:
        self._numbered += 1
        (self._kept_callbacks if kept else self._callbacks)[self._numbered] = function
        return self._numbered

    def answer_input(self, prompt: str) -> str:
        """The reply to the kernel's ``input_request`` during a call: a callback's result, or ``""``.

        The prompt of a callback is the JSON ``{"callback": number, "args": [...], "kwargs": {...}, "out": printed,
        "err": printed}``; the reply is ``{"ok": value}`` or ``{"raised": [name, message], "token": ...}``. Any other
        prompt (the student's own ``input()``) gets an empty string.
        """
        request = parse_reply(prompt, 64 << 20)
        number = request.get("callback") if isinstance(request, dict) else None
        if type(number) is not int:
            return ""
        function = self._callbacks.get(number) or self._kept_callbacks.get(number)
        if request is None or function is None:
            return ""
        self._printed(request)
        self._callbacks_run += 1
        if self._callbacks_run > MAX_CALLBACKS:
            message = f"the student's code called the check's functions more than {MAX_CALLBACKS} times in one call"
            return json.dumps({"raised": ["RuntimeError", message]})
        args, kwargs = request.get("args"), request.get("kwargs")
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            return json.dumps({"raised": ["TypeError", "a malformed call"]})
        self._in_callback += 1
        try:
            result = function(
                *[decode(a, judge=self) for a in args], **{str(k): decode(v, judge=self) for k, v in kwargs.items()}
            )
            return json.dumps({"ok": encode(result, judge=self)})
        except BaseException as err:  # noqa: BLE001 - the check's code failed; the student's code sees an error
            token = str(len(self._callback_errors) + 1)
            self._callback_errors[token] = err
            try:  # its text may hold a student's object, whose repr would ask the kernel mid-call
                message = _text(object.__str__(err) if isinstance(err, StudentObject) else str(err), 2000)
            except BaseException:  # noqa: BLE001
                message = type(err).__name__
            return json.dumps({"raised": [type(err).__name__, message], "token": token})
        finally:
            self._in_callback -= 1

    # -- the student's names ----------------------------------------------------------------------------------------

    def _is_student(self, name: str) -> bool:
        return self._student is not None and name in self._student

    def _forwarded(self, name: str) -> bool:
        return not self._setting_up and self._is_student(name)

    def _student_value(self, name: str) -> Any:
        if not self._is_student(name):
            raise KeyError(name)
        if name not in self._cache:
            self._lookup([name])
        value = self._cache.get(name, _MISSING)
        if value is _MISSING:
            raise KeyError(name)
        return value

    def _found(self, name: str, data: Any) -> Any:
        if data == ["fn"]:  # an older kernel module's word for a function: called by its name
            return StudentFunction(self, "", "fn", name)
        return decode(data, judge=self)

    def _lookup(self, names: list[str]) -> None:
        """Ask the kernel for the values of ``names`` at once: a student's name is cached for the check; another
        name is bound only to the grader's own module of the name the kernel's module has."""
        reply = self._request({"op": "resolve", "names": sorted(names)})
        found = reply.get("names") if isinstance(reply, dict) else None
        found = found if isinstance(found, dict) else {}
        for name in names:
            data = found.get(name)
            if self._is_student(name):
                self._cache[name] = _MISSING if data is None else self._found(name, data)
                continue
            module = _module(name, data, self._modules)
            if module is not None:
                dict.__setitem__(self.namespace, name, module)
            elif data is not None:
                self._finding(
                    f"reads {name}, which only the student's kernel binds (an import or a name outside the answer "
                    "cells' solutions): the check does not see it",
                    f"bind {name} in a set-up cell or in the check",
                )

    def _assign(self, name: str, value: Any) -> None:
        if callable(value) and not isinstance(value, (type, StudentObject)):  # the student's code may call it later
            data: list[Any] = ["cb", self._register_callback(value, kept=True)]
        else:
            try:
                data = encode(value, judge=self)
            except TypeError:  # the kernel cannot hold it: the check sees its own value, the kernel keeps its own
                self._finding(
                    f"binds the student's name {name} to a {type(value).__name__}, which the kernel cannot hold: "
                    "the check sees it, the student's code does not",
                    f"bind another name than {name}",
                )
                self._cache[name] = value
                self._own.add(name)  # the check's own binding, whether or not the kernel holds a copy
                return
        self._outcome(self._request({"op": "assign", "name": name, "value": data}), name)
        # the check reads back what it bound, never the kernel's copy (which the student's code could change):
        # the kernel holds it for the student's code to use
        self._cache[name] = value
        self._own.add(name)

    def _delete(self, name: str) -> None:
        self._outcome(self._request({"op": "delete", "name": name}), name)
        self._cache[name] = _MISSING
        self._own.discard(name)

    def _prepare(self, tree: ast.Module) -> None:
        """Before a check runs: its findings, and one request for the kernel's values of the names it reads."""
        read = _read(tree)
        if self._student is None:  # the rule of earlier releases: every name nothing here binds is the kernel's
            unbound = read - _bound(tree) - self._trusted - set(self._builtins)
            self._trusted |= _bound_at_top(tree)
            if unbound:
                reply = self._request({"op": "resolve", "names": sorted(unbound)})
                found = reply.get("names") if isinstance(reply, dict) else None
                found = found if isinstance(found, dict) else {}
                for name in sorted(unbound):
                    module = _module(name, found.get(name), self._modules)
                    if found.get(name) is None:
                        dict.pop(self.namespace, name, None)
                    else:
                        dict.__setitem__(self.namespace, name, module or self._found(name, found[name]))
            return
        students = read & self._student
        self._findings(tree, students)
        others = read - self._student - _bound(tree) - set(self.namespace.keys()) - set(self._builtins)
        if students or others:
            self._lookup(sorted(students | others))

    def _findings(self, tree: ast.Module, students: set[str]) -> None:
        for idiom, fix in idioms_not_judged(tree, frozenset(self._student or ()), students):
            self._finding(idiom, fix)

    @staticmethod
    def cannot_judge(source: str, student: Collection[str]) -> list[tuple[str, str]]:
        """The idioms of a check's text that the judge cannot run as the kernel would, each with its fix, given the
        student's names (what the answers bind); what the preflight lists before a class is graded.

        >>> Judge.cannot_judge("import matplotlib.pyplot as plt\\nassert plt.gca().get_title()", {"f"})[0][0][:14]
        'calls gca(): t'
        """
        tree = ast.parse(source)
        names = frozenset(student)
        return idioms_not_judged(tree, names, _read(tree) & names)

    def _finding(self, idiom: str, fix: str) -> None:
        finding = {"grade_id": self._grade_id or "?", "idiom": idiom, "fix": fix}
        if finding not in self.findings:
            self.findings.append(finding)
            log.warning("cannot judge as the kernel would: check %s %s; %s", finding["grade_id"], idiom, fix)

    # -- running cells ----------------------------------------------------------------------------------------------

    def _run(self, source: str) -> list[dict[str, Any]]:
        self._failed, self._raised, self._cache, self._own = None, {}, {}, set()
        result: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        with _captured() as (out, err):
            try:
                tree = ast.parse(source)
                self._prepare(tree)
                last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
                if last is not None:
                    tree.body.pop()
                exec(compile(tree, "<check>", "exec"), self.namespace)  # noqa: S102 - the instructor's check
                if last is not None:  # shown as IPython shows a cell's last expression: nbgrader's partial credit
                    value = eval(compile(ast.Expression(last.value), "<check>", "eval"), self.namespace)
                    if value is not None and not _quiet(source):
                        data = {"text/plain": _plain_text(value)}
                        result = {
                            "output_type": "execute_result",
                            "execution_count": None,
                            "data": data,
                            "metadata": {},
                        }
            except BaseException as caught:  # noqa: BLE001 - any failure fails the check; NoAnswer included
                error = self._error_output(caught)
        if self._failed is not None:  # the kernel did not answer: that fails the check, whatever it caught
            error = _error(type(self._failed).__name__, _text(str(self._failed), 2000))
        outputs = [
            {"output_type": "stream", "name": n, "text": b.getvalue()} for n, b in (("stdout", out), ("stderr", err))
        ]
        outputs = [o for o in outputs if o["text"]]
        if result is not None:
            outputs.append(result)
        if error is not None:
            outputs.append(error)
        self._raised = {}
        return outputs

    def _error_output(self, err: BaseException) -> dict[str, Any]:
        try:
            message = _text(str(err), 2000)
        except BaseException:  # noqa: BLE001 - its text asks the kernel, which is gone
            message = ""
        entry = self._raised.get(id(err))
        if entry is not None and entry[0] is err:  # shown as the kernel would show it: the student's, said to be theirs
            return _error(type(err).__name__, message, f"raised by {entry[1]} in the student's code")
        return _error(type(err).__name__, message)

    def setup(self, source: str) -> None:
        """Run a locked set-up cell (constants, imports of ``isclose`` and ``hint``) in the judge's namespace.

        The grader runs every set-up cell of the instructor's notebook (from the gradebook)
        before the first check, whatever the submission did with its copies. Every name it
        leaves bound is the grader's, even where an answer binds the same name.

        Its failures are the instructor's to see, not the student's: they are raised.
        """
        self._setting_up = True
        try:
            outputs = self._run(source)
        finally:
            self._setting_up = False
        errors = [o for o in outputs if o["output_type"] == "error"]
        if errors:
            raise RuntimeError(f"a locked set-up cell fails in the grader: {errors[0]['evalue']}")
        # every name it left defined (``import *`` and ``:=`` included) is the instructor's, never the kernel's
        self._trusted |= set(self.namespace.keys())
        self._setup_objects = _SetUpObjects(dict.values(self.namespace), self._modules.values())
        if self._student is not None:
            self._student -= self._trusted

    def check(self, source: str, grade_id: str | None = None) -> list[dict[str, Any]]:
        """Run one graded check; return the cell's outputs as nbgrader reads them (see the module).

        An error's traceback is its one line ``ename: evalue``, so no line of the check is shown; an error the
        student's code raised has a second line naming the student's function.
        """
        self._grade_id = grade_id
        return self._run(source)


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


def _bound_at_top(tree: ast.Module, imports: bool = True) -> set[str]:
    """The names a cell binds in its own (module) scope: what it leaves defined for the cells after it (with
    ``imports=False``, not those its imports bind)."""
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
            if imports:
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        todo.extend(ast.iter_child_nodes(node))
    return names


def _read(tree: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def student_names(nb: Any, config: Any = None) -> frozenset[str] | None:
    """The student's names of an assignment's notebook: what its answer cells bind at top level, imports left out.

    ``nb`` is the instructor's source notebook; an answer cell is an nbgrader solution cell, or a code cell holding
    nbgrader's ``ClearSolutions`` begin delimiter (as ``config`` sets it, ``BEGIN SOLUTION`` by default). The whole
    cell counts, the stub around the solution block too (``def squares(n):`` above ``### BEGIN SOLUTION``). None
    where a cell cannot be read as Python (the judge then falls back to the rule of earlier releases).

    >>> import nbformat
    >>> cell = nbformat.v4.new_code_cell("import math\\ndef squares(n):\\n    ### BEGIN SOLUTION\\n    return n\\n"
    ...                                  "    ### END SOLUTION\\nLIMIT = 3")
    >>> sorted(student_names(nbformat.v4.new_notebook(cells=[cell])))
    ['LIMIT', 'squares']
    """
    from IPython.core.inputtransformer2 import TransformerManager
    from nbgrader import utils
    from nbgrader.preprocessors import ClearSolutions

    begin = ClearSolutions(config=config).begin_solution_delimeter
    names: set[str] = set()
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        if not (utils.is_solution(cell) or begin in cell.source):
            continue
        try:
            tree = ast.parse(TransformerManager().transform_cell(cell.source))
        except (SyntaxError, ValueError):
            return None
        names |= _bound_at_top(tree, imports=False)
    return frozenset(names)


def _error(ename: str, evalue: str, *more: str) -> dict[str, Any]:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": [f"{ename}: {evalue}", *more]}


def own_message(output: dict[str, Any]) -> str | None:
    """The message of a check's own failed assertion in an output of a check cell, or None for anything else.

    The judge writes a check's error with the one traceback line ``ename: evalue``; an error the
    student's code raised inside a check (the judge keeps the exceptions it made for the student's
    code) gets a second line naming the function, which the student cannot write, so its text,
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
