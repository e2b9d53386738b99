"""Input validation shared by the modules, and the one "did you mean" helper.

Every public function checks its inputs here first, so a bad value fails with
a message that names the argument, shows the value and says what is allowed,
instead of a silent ``inf``/``nan`` or a traceback from deep inside numpy.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

__all__ = ["ArrayLike", "FloatOrArray", "as_number", "as_size", "did_you_mean"]

#: A scalar or an array of scalars; functions return the same kind they get.
ArrayLike = float | int | npt.NDArray[np.floating] | npt.NDArray[np.integer]
FloatOrArray = float | npt.NDArray[np.float64]


def _not_a_number(name: str, value: object) -> TypeError:
    return TypeError(f"{name} must be a number or an array of numbers, got {value!r}")


def _as_float_array(name: str, value: object) -> npt.NDArray[np.float64]:
    """``value`` as a float64 array; strings, bools, None and objects are refused, not converted."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        raise _not_a_number(name, value)
    if isinstance(value, numbers.Integral):
        try:
            return np.asarray(float(value))
        except OverflowError:
            digits = len(str(abs(int(value))))
            raise ValueError(
                f"{name} is too large: a {digits}-digit number does not fit a float (max about 1.8e308)"
            ) from None
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # e.g. ragged nested lists
        raise _not_a_number(name, value) from None
    if arr.dtype == object:
        items = arr.ravel().tolist()
        if not all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in items):
            raise _not_a_number(name, value)
        return np.asarray([_as_float_array(name, v) for v in items], dtype=np.float64).reshape(arr.shape)
    if arr.dtype.kind not in "iuf":  # refuses "1e9" strings, bools, complex numbers
        raise _not_a_number(name, value)
    return arr.astype(np.float64)


def as_number(
    name: str, value: object, unit: str = "", *, allow_zero: bool = False, scalar: bool = False
) -> FloatOrArray:
    """Return ``value`` as a float (or float array), checked to be finite and positive.

    Parameters
    ----------
    name : the argument's name, used in the error message.
    value : a number or an array-like of numbers (strings are refused, not parsed).
    unit : the unit shown in the error message, e.g. ``"bytes/s"``.
    allow_zero : accept 0 (for counts such as FLOPs or bytes that may be zero).
    scalar : accept a single number only, not an array.

    Examples
    --------
    >>> as_number("bandwidth", 8.2e11, "bytes/s")
    820000000000.0
    >>> as_number("bandwidth", 0, "bytes/s")
    Traceback (most recent call last):
    ...
    ValueError: bandwidth must be > 0 bytes/s, got 0
    >>> as_number("num_bytes", ["1e9"])
    Traceback (most recent call last):
    ...
    TypeError: num_bytes must be a number or an array of numbers, got ['1e9']
    """
    arr = _as_float_array(name, value)
    if scalar and arr.ndim != 0:
        raise TypeError(f"{name} must be a single number, got an array of shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    unit_txt = f" {unit}" if unit else ""
    bound = ">= 0" if allow_zero else "> 0"
    if not np.all(np.isfinite(arr)):
        bad = arr[~np.isfinite(arr)].flat[0] if arr.ndim else float(arr)
        raise ValueError(f"{name} must be a finite number{unit_txt}, got {_fmt(bad)}")
    bad_mask = arr < 0 if allow_zero else arr <= 0
    if np.any(bad_mask):
        bad = arr[bad_mask].flat[0] if arr.ndim else float(arr)
        raise ValueError(f"{name} must be {bound}{unit_txt}, got {_fmt(bad)}")
    if arr.ndim == 0:
        return float(arr)
    return arr


def as_size(name: str, value: object, *, scalar: bool = False) -> FloatOrArray:
    """Return a matrix dimension (B, D, F, ...) checked to be a positive whole number.

    Sizes are returned as floats so that products such as ``2*B*D*F`` never
    overflow a fixed-width integer.

    Examples
    --------
    >>> as_size("B", 256)
    256.0
    >>> as_size("D", 0.5)
    Traceback (most recent call last):
    ...
    ValueError: D must be a whole number of elements (an integer >= 1), got 0.5
    """
    try:
        arr = as_number(name, value, allow_zero=True, scalar=scalar)
    except ValueError as err:
        if "must be >= 0" not in str(err):
            raise
        arr = _as_float_array(name, value)  # negative: reported below as not a whole size
    values = np.asarray(arr)
    bad_mask = (values < 1) | (values != np.floor(values))
    if np.any(bad_mask):
        bad = values[bad_mask].flat[0] if values.ndim else float(values)
        raise ValueError(f"{name} must be a whole number of elements (an integer >= 1), got {_fmt(bad)}")
    return float(values) if values.ndim == 0 else values


def did_you_mean(word: str, options: Iterable[str], *, aliases: Mapping[str, str] | None = None) -> str:
    """The end of an "unknown name" message: close matches if any, else every option.

    An option (or an alias, which maps other text to an option) that contains
    ``word`` counts as close; otherwise :func:`difflib.get_close_matches` decides.

    Examples
    --------
    >>> did_you_mean("tpu-v5", ["tpu-v4", "tpu-v5e", "tpu-v5p"])
    "did you mean 'tpu-v5e' or 'tpu-v5p'?"
    >>> did_you_mean("abacus", ["tpu-v4", "h100-sxm"])
    'known: tpu-v4, h100-sxm'
    """
    options = list(options)
    texts = {o: o for o in options} | dict(aliases or {})
    close = [texts[t] for t in texts if word and word in t]
    if not close:
        close = [texts[t] for t in difflib.get_close_matches(word, list(texts), n=3, cutoff=0.6)]
    close = list(dict.fromkeys(close))[:3]
    if not close:
        return f"known: {', '.join(options) or 'none'}"
    quoted = [repr(c) for c in close]
    return "did you mean " + (quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]) + "?"


def _fmt(x: float) -> str:
    """Format a bad value the way a person would type it (0, not 0.0)."""
    x = float(x)
    if math.isfinite(x) and x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(x)
