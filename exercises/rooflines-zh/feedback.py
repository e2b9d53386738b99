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
"""

from __future__ import annotations

import csv
import hashlib
import os
from functools import cache
from pathlib import Path

__all__ = ["EDITION", "fingerprint", "hint", "language", "matches"]

EDITION = "zh"  # the edition's language: tools/editions.py writes "ko" or "zh" into each edition's copy
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
