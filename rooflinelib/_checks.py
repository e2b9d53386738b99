"""Input validation shared by the math modules.

Every public function checks its inputs here first, so a bad value fails with
a message that names the argument, shows the value and says what is allowed,
instead of a silent ``inf``/``nan`` or a traceback from deep inside numpy.
"""

from __future__ import annotations

import math
from typing import Union

import numpy as np
import numpy.typing as npt

#: A scalar or an array of scalars; functions return the same kind they get.
ArrayLike = Union[float, int, npt.NDArray[np.floating], npt.NDArray[np.integer]]
FloatOrArray = Union[float, npt.NDArray[np.float64]]


def as_number(name: str, value: object, unit: str = "", *, allow_zero: bool = False) -> FloatOrArray:
    """Return ``value`` as a float (or float array), checked to be finite and positive.

    Parameters
    ----------
    name : the argument's name, used in the error message.
    value : a number or an array-like of numbers.
    unit : the unit shown in the error message, e.g. ``"bytes/s"``.
    allow_zero : accept 0 (for counts such as FLOPs or bytes that may be zero).

    Examples
    --------
    >>> as_number("bandwidth", 8.2e11, "bytes/s")
    820000000000.0
    >>> as_number("bandwidth", 0, "bytes/s")
    Traceback (most recent call last):
    ...
    ValueError: bandwidth must be > 0 bytes/s, got 0
    """
    if isinstance(value, bool) or value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}") from None
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


def as_size(name: str, value: object) -> FloatOrArray:
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
        arr = as_number(name, value, allow_zero=True)
    except ValueError as err:
        if "finite" in str(err):
            raise
        arr = np.asarray(value, dtype=np.float64)  # negative: reported below as not a whole size
    values = np.asarray(arr)
    if np.any(values < 1) or np.any(values != np.floor(values)):
        bad_mask = (values < 1) | (values != np.floor(values))
        bad = values[bad_mask].flat[0] if values.ndim else float(values)
        raise ValueError(f"{name} must be a whole number of elements (an integer >= 1), got {_fmt(bad)}")
    return float(values) if values.ndim == 0 else values


def _fmt(x: float) -> str:
    """Format a bad value the way a person would type it (0, not 0.0)."""
    x = float(x)
    if math.isfinite(x) and x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(x)
