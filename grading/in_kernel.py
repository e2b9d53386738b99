"""The only code the grader runs in a student's kernel: answer one request with plain data.

The grader never sends a check to the kernel. To judge a check it asks the kernel for the
values of the student's names the check reads (``resolve``), calls the student's functions,
classes and methods with plain-data arguments (``call``), reads attributes of the student's
objects (``attr``), asks a few questions of them (``special``: ``len``, ``iter``, ``str``,
``isinstance``...), and deletes or rebinds a student's name where the check does (``delete``,
``assign``). It gets back plain data: numbers, booleans, strings, bytes, lists, tuples
(named ones with their field names), sets, dicts, NumPy arrays and scalars of numbers or
strings, and for a Matplotlib ``Axes`` its lines as data and its labels. Any other object is
kept here in a table of handles and sent as its handle, its kind and its type's name; the
grader may then ask about it by handle. An array travels as its bytes (little-endian,
base64), and so does a long list or tuple of numbers of one kind.

While the grader calls a student's function, what it prints is captured and sent back, and
so are the arguments it changed in place. A function the check passes as an argument is a
*callback*: calling it here asks the grader, mid-call, through the kernel's stdin channel (an
``input_request`` whose prompt is the JSON request, answered by the grader's ``input_reply``),
and the grader runs the check's code and answers with plain data. The student's own
``input()`` gets nothing during a call: it raises, as it does under ``nbgrader autograde``.

The reply is a :class:`Reply`, whose text as IPython shows it (``text/plain``) is the JSON
itself: the grader reads it with a strict JSON decoder, never as Python.

This file is sent as source text with the first request (:func:`grading.judge.expression`)
and runs in the kernel's namespace, which the student controls: the student can change what
it answers, and that is fine, because the grader reads the answer as untrusted data
(:mod:`grading.judge`) and a forged answer is only a value like any other.

Example
-------
>>> namespace = {"double": lambda x: 2 * x}
>>> answer('{"op": "resolve", "names": ["double"]}', namespace).text.startswith('{"names": {"double": ["h", ')
True
>>> handle = json.loads(answer('{"op": "resolve", "names": ["double"]}', namespace).text)["names"]["double"][1]
>>> answer(json.dumps({"op": "call", "target": ["h", handle], "args": [["i", 21]], "kwargs": {}}), namespace)
{"ok": ["i", 42], "changed": {}, "out": "", "err": "", "names": {}}
>>> encode([0.5] * 20)[:2]
['L', 'float']
"""

from __future__ import annotations

import base64
import builtins
import io
import json
import numbers
import os
import struct
import sys
from typing import Any

_MAX_DEPTH = 32
_MAX_HANDLES = 100_000
_MAX_PRINTED = 100_000  # characters of printed output sent back per call, for stdout and stderr each
_MAX_ITER = 1_000_000  # items of a student's iterable read by ``special`` ``iter``
_DTYPES = ("b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16")
_COMPACT = 16  # a list or tuple of at least this many numbers of one kind travels as an array's bytes
_EPOCH = os.urandom(6).hex()  # tells this table of handles from an earlier one (the module may be sent again)
_MAX_METHODS = 256  # method names sent with an object, so that calling one is one request
_handles: dict[str, Any] = {}
_ids: dict[int, str] = {}
_methods: dict[int, tuple[type, list[str]]] = {}  # by id of a class: the public methods of its instances
_sent: dict[str, int | None] = {}  # a name's value as last sent to the grader (a hash of its JSON), None if unbound


class Reply:
    """A reply whose ``text/plain`` in IPython is its JSON text as it is (a ``str`` would show as its ``repr``)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.text)


class _Bounded(io.StringIO):
    """A text stream that keeps at most :data:`_MAX_PRINTED` characters."""

    def write(self, text: Any) -> int:
        text = str(text)
        room = _MAX_PRINTED - self.tell()
        if room > 0:
            super().write(text[:room])
        return len(text)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _wire_dtype(dtype: Any) -> str | None:
    """The dtype as it travels (``<f4``, ``|u1``, ``<U5``), or None for one the grader does not read."""
    code = str(dtype.str[1:])
    if code in _DTYPES or (code[:1] in "US" and code[1:].isdigit()):
        return ("|" if dtype.itemsize == 1 or code[:1] == "S" else "<") + code
    return None


def _handle(value: Any) -> list[Any]:
    """``["h", handle, kind, type name]``: the value kept in the table, for the grader to ask about."""
    key = _ids.get(id(value))
    if key is None or _handles.get(key) is not value:
        if len(_handles) >= _MAX_HANDLES:
            return ["x", type(value).__name__]
        key = f"{_EPOCH}.{len(_handles) + 1}"
        _handles[key] = value
        _ids[id(value)] = key
    kind = "cls" if isinstance(value, type) else "fn" if callable(value) else "obj"
    name = getattr(value, "__name__", None) if kind != "obj" else None
    handle = ["h", key, kind, str(name if isinstance(name, str) else type(value).__name__)[:80]]
    return [*handle, _public_methods(type(value))] if kind == "obj" else handle


def _public_methods(cls: type) -> list[str]:
    """The names of the public functions an instance of ``cls`` has from its class (kept per class)."""
    kept = _methods.get(id(cls))
    if kept is None or kept[0] is not cls:
        try:
            names = [n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n, None))]
        except Exception:  # noqa: BLE001 - a class whose dir() fails
            names = []
        kept = _methods[id(cls)] = (cls, [str(n)[:100] for n in names[:_MAX_METHODS]])
    return kept[1]


def _compact(values: Any) -> list[Any] | None:
    """``[kind, bytes]`` for a long list or tuple of Python numbers of one kind, else None."""
    if len(values) < _COMPACT:
        return None
    if all(type(v) is bool for v in values):
        kind, packed = "bool", struct.pack(f"<{len(values)}B", *values)
    elif all(type(v) is int and -(1 << 63) <= v < 1 << 63 for v in values):
        kind, packed = "int", struct.pack(f"<{len(values)}q", *values)
    elif all(type(v) is float for v in values):
        kind, packed = "float", struct.pack(f"<{len(values)}d", *values)
    else:
        return None
    return [kind, _b64(packed)]


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
    """A value as tagged plain data (see :func:`grading.judge.decode` for the tags)."""
    numpy = sys.modules.get("numpy")
    if depth > _MAX_DEPTH:
        return ["x", "a structure nested too deeply"]
    if value is None:
        return ["n"]
    if numpy is not None and isinstance(value, numpy.generic):
        wire = _wire_dtype(value.dtype)
        if wire is not None and wire[1] not in "US":
            return ["np", wire, _b64(numpy.asarray(value).astype(wire).tobytes())]
    if isinstance(value, bool):
        return ["b", bool(value)]
    if isinstance(value, int):
        return ["i", int(value)]
    if isinstance(value, float):
        return ["f", float(value)]
    if isinstance(value, complex):
        return ["c", value.real, value.imag]
    if isinstance(value, str):
        return ["s", str(value)]
    if isinstance(value, (bytes, bytearray)):
        return ["y", _b64(bytes(value))]
    if isinstance(value, numbers.Real) and not (numpy is not None and isinstance(value, numpy.ndarray)):
        return ["f", float(value)]  # a Fraction, say: a real number, sent as its float value
    if numpy is not None and isinstance(value, numpy.ndarray):
        wire = _wire_dtype(value.dtype)
        if wire is None:
            return ["x", f"array of {value.dtype}"]
        return ["a", wire, list(value.shape), _b64(numpy.ascontiguousarray(value, dtype=wire).tobytes())]
    if isinstance(value, tuple) and isinstance(getattr(type(value), "_fields", None), tuple):
        fields = [str(f) for f in getattr(type(value), "_fields", ())]
        return ["nt", type(value).__name__, fields, [encode(item, depth + 1) for item in value]]
    if isinstance(value, (list, tuple)):
        tag = "l" if isinstance(value, list) else "t"
        compact = _compact(value)
        if compact is not None:
            return [tag.upper(), *compact]
        return [tag, [encode(item, depth + 1) for item in value]]
    if isinstance(value, (set, frozenset)):
        return ["set" if isinstance(value, set) else "fset", [encode(item, depth + 1) for item in value]]
    if isinstance(value, dict):
        return ["d", [[encode(key, depth + 1), encode(item, depth + 1)] for key, item in value.items()]]
    if isinstance(value, type(sys)):
        return ["m", str(value.__name__)]
    axes = _axes(value)
    if axes is not None:
        return axes
    return _handle(value)


def _callback_error(name: str, message: str) -> BaseException:
    cls = getattr(builtins, name, None) if isinstance(name, str) else None
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = RuntimeError
    try:
        return cls(message)
    except Exception:  # noqa: BLE001 - one that wants more arguments
        return RuntimeError(message)


class _Call:
    """One call the grader asked for: its captured output, and the way to ask the grader for a callback."""

    def __init__(self, ask_grader: Any) -> None:
        self.ask_grader = ask_grader
        self.out, self.err = _Bounded(), _Bounded()

    def flushed(self) -> tuple[str, str]:
        out, err = self.out.getvalue(), self.err.getvalue()
        for stream in (self.out, self.err):
            stream.seek(0)
            stream.truncate()
        return out, err


_active: list[_Call] = []  # the calls of the grader's running now (a callback may only run during one)


def _callback(ident: Any) -> Any:
    """A function of the check's: calling it asks the grader to run it, during a call of the grader's."""

    def callback(*args: Any, **kwargs: Any) -> Any:
        if not _active or _active[-1].ask_grader is None:
            raise RuntimeError("a function of the grader's runs only while the grader calls the student's code")
        call = _active[-1]
        out, err = call.flushed()
        request = {
            "callback": ident,
            "args": [encode(a) for a in args],
            "kwargs": {str(k): encode(v) for k, v in kwargs.items()},
            "out": out,
            "err": err,
        }
        text = call.ask_grader(json.dumps(request))
        if not text:
            raise RuntimeError("the grader has no such function now")
        reply = json.loads(text)
        if "ok" in reply:
            return decode(reply["ok"])
        error = _callback_error(*reply["raised"][:2])
        error.grading_callback = reply.get("token")  # type: ignore[attr-defined]
        raise error

    return callback


def decode(value: list[Any]) -> Any:
    """An argument sent by the grader, back as Python and NumPy objects (a handle as its object)."""
    tag = value[0]
    if tag == "n":
        return None
    if tag in ("b", "i", "f", "s"):
        return value[1]
    if tag == "c":
        return complex(value[1], value[2])
    if tag == "y":
        return base64.b64decode(value[1])
    if tag in ("l", "t", "set", "fset"):
        items = [decode(item) for item in value[1]]
        return {"l": list, "t": tuple, "set": set, "fset": frozenset}[tag](items)
    if tag == "nt":
        import collections

        return collections.namedtuple(value[1], value[2])(*[decode(item) for item in value[3]])
    if tag == "d":
        return {decode(key): decode(item) for key, item in value[1]}
    if tag in ("a", "np"):
        import numpy as np

        flat = np.frombuffer(base64.b64decode(value[-1]), dtype=value[1])
        return flat.reshape(value[2]).copy() if tag == "a" else flat[0]
    if tag in ("h", "hm"):
        if value[1] not in _handles:
            raise ReferenceError("the grader asked about an object this kernel no longer holds")
        return _handles[value[1]] if tag == "h" else getattr(_handles[value[1]], value[2])
    if tag == "cb":
        return _callback(value[1])
    raise ValueError(f"cannot decode an argument tagged {tag!r}")


def _raised(err: BaseException) -> list[Any]:
    """``[type name, message, name of its nearest built-in exception class, its arguments]`` (the arguments as
    plain data, or ``["n"]`` where they are too long)."""
    base = next(
        (c.__name__ for c in type(err).__mro__ if c.__module__ == "builtins" and getattr(builtins, c.__name__, 0) is c),
        "Exception",
    )
    try:
        args = encode(tuple(err.args))
        args = args if len(json.dumps(args)) <= 4000 else ["n"]
    except Exception:  # noqa: BLE001 - arguments that cannot be read
        args = ["n"]
    return [type(err).__name__, str(err)[:2000], base, args]


def _no_input(*args: Any, **kwargs: Any) -> str:
    raise EOFError("input() gets nothing while the grader calls this function")


def _kernel_input() -> Any:
    """The kernel's way to ask its client (``input_request`` on stdin), or None outside a kernel."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    kernel = getattr(shell, "kernel", None)
    return getattr(kernel, "raw_input", None)


def _mutable(keys: list[str], objects: list[Any]) -> dict[str, Any]:
    """The arguments a call may change in place (lists, dicts, sets, arrays), by position or name, as plain data."""
    numpy = sys.modules.get("numpy")
    mutable: tuple[type, ...] = (list, dict, set, bytearray) + ((numpy.ndarray,) if numpy is not None else ())
    return {key: encode(value) for key, value in zip(keys, objects, strict=True) if isinstance(value, mutable)}


def _call(asked: dict[str, Any], namespace: dict[str, Any], ask_grader: Any) -> dict[str, Any]:
    call = _Call(ask_grader)
    saved = builtins.input, sys.stdout, sys.stderr
    try:
        target = decode(asked["target"]) if isinstance(asked["target"], list) else namespace[asked["target"]]
        if "method" in asked:
            target = getattr(target, asked["method"])
        args = [decode(arg) for arg in asked["args"]]
        kwargs = {key: decode(arg) for key, arg in asked["kwargs"].items()}
        keys = [*map(str, range(len(args))), *kwargs]
        objects = [*args, *kwargs.values()]
        before = _mutable(keys, objects)
        builtins.input, sys.stdout, sys.stderr = _no_input, call.out, call.err
        _active.append(call)
        try:
            result = target(*args, **kwargs)
        finally:
            _active.pop()
            builtins.input, sys.stdout, sys.stderr = saved
    except BaseException as err:  # noqa: BLE001 - whatever the student's code raises is reported, as data
        reply = {"raised": _raised(err), "token": getattr(err, "grading_callback", None)}
    else:
        after = _mutable(keys, objects)
        reply = {"ok": encode(result), "changed": {key: value for key, value in after.items() if before[key] != value}}
    reply["out"], reply["err"] = call.flushed()
    reply["names"] = _changed_names(asked.get("watch", []), namespace)
    return reply


def _sent_value(name: str, namespace: dict[str, Any]) -> Any:
    """A name's value as plain data (None where it is unbound), with what was sent noted."""
    try:
        found = encode(namespace[name]) if name in namespace else None
    except Exception as err:  # noqa: BLE001 - the student's object could not be read
        found = ["x", type(err).__name__]
    _sent[name] = None if found is None else hash(json.dumps(found))
    return found


def _changed_names(names: list[str], namespace: dict[str, Any]) -> dict[str, Any]:
    """The values of ``names`` that differ from what was last sent (after a call: its code may have changed them)."""
    changed = {}
    for name in names:
        before = _sent.get(name)
        found = _sent_value(name, namespace)
        if _sent[name] != before:
            changed[name] = found
    return changed


def _special(asked: dict[str, Any]) -> Any:
    value = decode(asked["target"])
    how = asked["how"]
    if how == "getattr":
        return getattr(value, asked["name"])
    if how == "iter":
        items = []
        for item in value:
            items.append(item)
            if len(items) > _MAX_ITER:
                raise OverflowError("more items than the grader reads")
        return items
    if how == "getitem":
        return value[decode(asked["arg"])]
    if how == "setattr":
        return setattr(value, asked["name"], decode(asked["arg"]))
    if how == "signature":  # [name, kind, [default] or []] of each parameter
        import inspect

        parameters = inspect.signature(value).parameters.values()
        return [[p.name, int(p.kind), [] if p.default is p.empty else [p.default]] for p in parameters]
    if how in ("isinstance", "issubclass"):
        other = decode(asked["arg"])
        return isinstance(other, value) if how == "isinstance" else issubclass(other, value)
    functions: dict[str, Any] = {"len": len, "bool": bool, "str": str, "repr": repr, "float": float, "int": int}
    return functions[how](value)


def answer(request: str, namespace: dict[str, Any], ask_grader: Any = None) -> Reply:
    """The JSON reply to one request, looked up in or called from ``namespace``.

    ``ask_grader(prompt)`` sends a callback's request to the grader and returns its reply's text;
    by default the kernel's own ``raw_input``, which asks the grader on the stdin channel.
    """
    return Reply(json.dumps(_answer(json.loads(request), namespace, ask_grader)))


def _answer(asked: dict[str, Any], namespace: dict[str, Any], ask_grader: Any) -> dict[str, Any]:
    op = asked["op"]
    if op == "resolve":
        found = {}
        for name in asked["names"]:
            value = _sent_value(name, namespace)
            if value is not None:
                found[name] = value
        return {"names": found}
    if op == "call":
        return _call(asked, namespace, ask_grader if ask_grader is not None else _kernel_input())
    try:
        if op == "delete":
            del namespace[asked["name"]]
            return {"ok": ["n"]}
        if op == "assign":
            namespace[asked["name"]] = decode(asked["value"])
            return {"ok": ["n"]}
        return {"ok": encode(_special(asked))}
    except KeyError as err:
        if op == "delete":
            message = f"name {asked['name']!r} is not defined"
            return {"raised": ["NameError", message, "NameError", ["t", [["s", message]]]]}
        return {"raised": _raised(err)}
    except BaseException as err:  # noqa: BLE001
        return {"raised": _raised(err)}
