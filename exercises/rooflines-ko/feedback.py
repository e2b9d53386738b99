"""Messages and answer fingerprints for the checks of the `rooflines` notebooks.

Every message a check can show lives once in ``feedback.csv`` next to this file,
one row per id, one column per language (``en``, ``ko``, ``zh``). The language is
the edition's, :data:`EDITION` below (each edition's copy of this file names its
own), or the environment variable ``ROOFLINE_LANG`` if set. So a notebook needs only
the two files it names, this one and ``feedback.csv``, to speak its language.

A visible check must say whether an answer is right without printing it, so it
compares a *fingerprint*: the SHA-256 digest of the value rounded to three
significant figures. The grader's hidden checks compare the values themselves,
with a tolerance, at inputs the notebook never shows. To write a new check,
compute the digest of the right value once, beside this file:
``python -c "from feedback import fingerprint; print(fingerprint(2 * 4 * 3 * 5))"``,
and put the printed literal in the check.

Where a visible check must accept exactly what its hidden checks accept, it
compares with :func:`near` (a value within ``REL_TOL`` of the right one, as
``math.isclose(value, right, rel_tol=REL_TOL)`` decides in a hidden check) or with
:func:`is_count` (a whole number equal to the right one, as ``==`` decides):
``python -c "from feedback import locate; print(locate(0.0123))"`` and
``python -c "from feedback import count_fingerprint; print(count_fingerprint(42))"``.
"""

from __future__ import annotations

import csv
import hashlib
import math
import os
from functools import cache
from pathlib import Path

__all__ = [
    "EDITION",
    "REL_TOL",
    "count_fingerprint",
    "fingerprint",
    "hint",
    "is_count",
    "language",
    "locate",
    "matches",
    "near",
]

#: The relative tolerance of the checks that use :func:`near`, visible and hidden alike.
REL_TOL = 1e-3

EDITION = "ko"  # the edition's language: tools/editions.py writes "ko" or "zh" into each edition's copy
CATALOGUE = Path(__file__).with_name("feedback.csv")


@cache
def _rows() -> dict[str, dict[str, str]]:
    with CATALOGUE.open(encoding="utf-8", newline="") as fh:
        return {row["id"]: row for row in csv.DictReader(fh)}


def language() -> str:
    """The language of the messages: ``ROOFLINE_LANG`` if set, else the edition's (:data:`EDITION`)."""
    return os.environ.get("ROOFLINE_LANG") or EDITION


def hint(msg_id: str, **values: object) -> str:
    """The message with id ``msg_id``, prefixed by ``[msg_id]``, its placeholders filled from ``values``.

    Examples
    --------
    >>> hint("q1.a.wrong", got=30)
    '[q1.a.wrong] bytes_loaded(4, 3, 5) returned 30, which is not right. Count, for each array the matmul has to read, how many entries it has and how many bytes each entry takes.'
    """
    rows = _rows()
    if msg_id not in rows:
        raise KeyError(f"unknown feedback id {msg_id!r}: it is not a row of {CATALOGUE.name}")
    row = rows[msg_id]
    text = row.get(language()) or row["en"]
    return f"[{msg_id}] " + text.format(**values)


def fingerprint(value: object, sig: int = 3) -> str:
    """SHA-256 digest (16 hex digits) of a number rounded to ``sig`` significant figures.

    Booleans are hashed as ``True``/``False``; any other non-number as its ``str``.

    Examples
    --------
    >>> fingerprint(1234.5) == fingerprint(1.23e3) != fingerprint(1.24e3)
    True
    """
    if isinstance(value, (bool, str)) or type(value).__name__ == "bool_":
        text = str(bool(value)) if not isinstance(value, str) else value
    else:
        try:
            text = f"{float(value):.{sig - 1}e}"  # type: ignore[arg-type]
        except (TypeError, ValueError):
            text = str(value)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def matches(value: object, digest: str, sig: int = 3, rel_tol: float = 1e-6) -> bool:
    """True if ``value`` rounds to the number whose fingerprint is ``digest``.

    A correct value that lands on a rounding boundary (…4999 against …5000) is
    still accepted: ``value`` nudged up and down by ``rel_tol`` is tried too.

    Examples
    --------
    >>> matches(123.4, fingerprint(123.0)), matches(124.9, fingerprint(123.0))
    (True, False)
    """
    if isinstance(value, (bool, str)) or type(value).__name__ == "bool_":
        return fingerprint(value, sig) == digest
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return any(fingerprint(number * (1 + k * rel_tol), sig) == digest for k in (-1, 0, 1))


def _number(value: object) -> float | None:
    """``value`` as a finite float, or ``None`` for anything that is not a real number (``True`` included)."""
    if isinstance(value, (bool, str, bytes)) or type(value).__name__ == "bool_":
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def locate(value: float, rel_tol: float = REL_TOL) -> str:
    """A locator of a positive number for :func:`near`: the digest of its cell on a log grid, and where in it.

    The grid's cells are ``log(1 + rel_tol)`` wide in ``log(value)``; the locator gives the
    cell's digest and the value's place in the cell (a fraction, to 15 digits), which says
    nothing about the value without the cell.

    Examples
    --------
    >>> locate(0.0123)
    'a97f4a8d9f0e39c0+0.645271717793548'
    """
    step = math.log1p(rel_tol)
    position = math.log(value) / step
    cell = math.floor(position)
    return f"{_digest(str(cell))}+{position - cell:.15f}"


def near(value: object, locator: str, rel_tol: float = REL_TOL) -> bool:
    """True if ``value`` is within ``rel_tol`` of the number ``locator`` stands for: ``math.isclose`` on it.

    The same test a hidden check makes with ``math.isclose(value, right, rel_tol=rel_tol)``,
    the right value rebuilt from its cell (found by trying the cells around ``value``'s own).

    Examples
    --------
    >>> where = locate(0.0123)
    >>> near(0.0123 * (1 + 3e-4), where), near(0.0123 * 1.0011, where), near("0.0123", where)
    (True, False, False)
    """
    number = _number(value)
    if number is None or number <= 0:
        return False
    digest, _, fraction = locator.partition("+")
    step = math.log1p(rel_tol)
    own = math.floor(math.log(number) / step)
    for cell in range(own - 2, own + 3):
        if _digest(str(cell)) == digest:
            return math.isclose(number, math.exp((cell + float(fraction)) * step), rel_tol=rel_tol)
    return False


def count_fingerprint(value: int) -> str:
    """Digest of a whole number, for :func:`is_count`.

    Examples
    --------
    >>> count_fingerprint(42) == count_fingerprint(42.0)
    True
    """
    return _digest(str(int(value)))


def is_count(value: object, digest: str) -> bool:
    """True if ``value`` is a whole number equal to the one whose digest is ``digest`` (what ``==`` decides).

    Examples
    --------
    >>> is_count(42, count_fingerprint(42)), is_count(42.0, count_fingerprint(42)), is_count(42.5, count_fingerprint(42))
    (True, True, False)
    """
    number = _number(value)
    return number is not None and number.is_integer() and count_fingerprint(int(number)) == digest
