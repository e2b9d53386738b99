"""The only code the grader runs in a student's kernel: answer one request with plain data.

The grader never sends a check to the kernel. To judge a check it asks the kernel for the
values of the names the check reads (``resolve``) and for the results of the student's
functions at given arguments (``call``), and gets back plain data: numbers, booleans,
strings, lists, arrays of numbers, and for a Matplotlib ``Axes`` its lines as data and its
labels. Anything else is described by its type name only. An array travels as its bytes
(little-endian, base64), and so does a long list or tuple of numbers of one kind, so that a
figure of a million points is a few megabytes, not tens.

The reply is a :class:`Reply`, whose text as IPython shows it (``text/plain``) is the JSON
itself: the grader reads it with a strict JSON decoder, never as Python.

This file is sent as source text with every request (:func:`expression`) and runs in the
kernel's namespace, which the student controls: the student can change what it answers,
and that is fine, because the grader reads the answer as untrusted data
(:mod:`grading.judge`) and a forged answer is only a value like any other.

Example
-------
>>> namespace = {"double": lambda x: 2 * x}
>>> answer('{"op": "call", "name": "double", "args": [["i", 21]], "kwargs": {}}', namespace)
{"ok": ["i", 42]}
>>> encode([0.5] * 20)[:2]
['L', 'float']
"""

from __future__ import annotations

import base64
import json
import numbers
import struct
import sys
from typing import Any

_MAX_DEPTH = 32
_KINDS = {"b": "bool", "i": "int", "u": "int", "f": "float"}
_WIRE = {"bool": "|u1", "int": "<i8", "float": "<f8"}  # how each kind of number travels
_COMPACT = 16  # a list or tuple of at least this many numbers of one kind travels as an array's bytes


class Reply:
    """A reply whose ``text/plain`` in IPython is its JSON text as it is (a ``str`` would show as its ``repr``)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.text)


def _bytes(numpy: Any, values: Any, kind: str) -> str:
    return base64.b64encode(numpy.ascontiguousarray(values, dtype=_WIRE[kind]).tobytes()).decode("ascii")


def _compact(values: Any) -> list[Any] | None:
    """``[kind, bytes]`` for a long list or tuple of Python or NumPy numbers of one kind, else None."""
    if len(values) < _COMPACT:
        return None
    numpy = sys.modules.get("numpy")
    bools: tuple[type, ...] = (bool,) if numpy is None else (bool, numpy.bool_)
    ints: tuple[type, ...] = (int,) if numpy is None else (int, numpy.integer)
    floats: tuple[type, ...] = (float,) if numpy is None else (float, numpy.floating)
    if all(isinstance(v, bools) for v in values):
        kind, packed = "bool", struct.pack(f"<{len(values)}B", *map(bool, values))
    elif all(isinstance(v, ints) and not isinstance(v, bools) and -(1 << 63) <= int(v) < 1 << 63 for v in values):  # type: ignore[call-overload]
        kind, packed = "int", struct.pack(f"<{len(values)}q", *map(int, values))
    elif all(isinstance(v, floats) for v in values):
        kind, packed = "float", struct.pack(f"<{len(values)}d", *map(float, values))
    else:
        return None
    return [kind, base64.b64encode(packed).decode("ascii")]


def _axes(value: Any) -> list[Any] | None:
    """A Matplotlib Axes as ``["axes", xlabel, ylabel, title, lines, legend texts or None]``."""
    module = sys.modules.get("matplotlib.axes")
    if module is None or not isinstance(value, module.Axes):
        return None
    import numpy as np

    lines = []
    for line in value.get_lines():
        data = []
        for raw in (line.get_xdata(), line.get_ydata()):
            try:
                data.append(encode(np.asarray(raw, dtype=float)))
            except (TypeError, ValueError):
                data.append(encode(raw))
        lines.append([str(line.get_label()), *data])
    legend = value.get_legend()
    texts = None if legend is None else [str(text.get_text()) for text in legend.get_texts()]
    return ["axes", str(value.get_xlabel()), str(value.get_ylabel()), str(value.get_title()), lines, texts]


def encode(value: Any, depth: int = 0) -> list[Any]:
    """A value as tagged plain data (see :mod:`grading.judge` for the tags)."""
    numpy = sys.modules.get("numpy")
    if depth > _MAX_DEPTH:
        return ["x", "a structure nested too deeply"]
    if value is None:
        return ["n"]
    if isinstance(value, bool) or (numpy is not None and isinstance(value, numpy.bool_)):
        return ["b", bool(value)]
    if isinstance(value, int) or (numpy is not None and isinstance(value, numpy.integer)):
        return ["i", int(value)]
    if isinstance(value, float) or (numpy is not None and isinstance(value, numpy.floating)):
        return ["f", float(value)]
    if isinstance(value, str):
        return ["s", str(value)]
    if isinstance(value, numbers.Real):  # a Fraction, say: a real number, sent as its float value
        return ["f", float(value)]
    if numpy is not None and isinstance(value, numpy.ndarray):
        kind = _KINDS.get(value.dtype.kind)
        if kind is None or (value.dtype.kind == "u" and value.size and value.max() >= 1 << 63):
            return ["x", f"array of {value.dtype}"]
        return ["a", kind, list(value.shape), _bytes(numpy, value, kind)]
    if isinstance(value, (list, tuple)):
        tag = "l" if isinstance(value, list) else "t"
        compact = _compact(value)
        if compact is not None:
            return [tag.upper(), *compact]
        return [tag, [encode(item, depth + 1) for item in value]]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return ["d", [[str(key), encode(item, depth + 1)] for key, item in value.items()]]
    axes = _axes(value)
    if axes is not None:
        return axes
    if callable(value):
        return ["fn"]
    return ["x", type(value).__name__]


def decode(value: list[Any]) -> Any:
    """An argument sent by the grader, back as Python and NumPy objects."""
    tag = value[0]
    if tag == "n":
        return None
    if tag in ("b", "i", "f", "s"):
        return value[1]
    if tag in ("l", "t"):
        items = [decode(item) for item in value[1]]
        return items if tag == "l" else tuple(items)
    if tag == "d":
        return {key: decode(item) for key, item in value[1]}
    if tag == "a":
        import numpy as np

        flat = np.frombuffer(base64.b64decode(value[3]), dtype=_WIRE[value[1]])
        dtype = {"bool": bool, "int": np.int64, "float": np.float64}[value[1]]
        return flat.astype(dtype).reshape(value[2])
    raise ValueError(f"cannot decode an argument tagged {tag!r}")


def answer(request: str, namespace: dict[str, Any]) -> Reply:
    """The JSON reply to one request, looked up in or called from ``namespace``."""
    return Reply(_answer(request, namespace))


def _answer(request: str, namespace: dict[str, Any]) -> str:
    asked = json.loads(request)
    if asked["op"] == "resolve":
        found = {}
        for name in asked["names"]:
            if name in namespace:
                try:
                    found[name] = encode(namespace[name])
                except Exception as err:  # noqa: BLE001 - the student's object could not be read
                    found[name] = ["x", type(err).__name__]
        return json.dumps({"names": found})
    name = asked["name"]
    function = namespace.get(name)
    if function is None:
        return json.dumps({"raised": ["NameError", f"name '{name}' is not defined"]})
    try:
        args = [decode(arg) for arg in asked["args"]]
        kwargs = {key: decode(arg) for key, arg in asked["kwargs"].items()}
        result = function(*args, **kwargs)
    except BaseException as err:  # noqa: BLE001 - whatever the student's code raises is reported, as data
        return json.dumps({"raised": [type(err).__name__, str(err)[:2000]]})
    try:
        return json.dumps({"ok": encode(result)})
    except Exception as err:  # noqa: BLE001
        return json.dumps({"ok": ["x", f"a value that could not be read ({type(err).__name__})"]})
