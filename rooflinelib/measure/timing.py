"""The timing harness: warm-up runs thrown away, then timed repeats, each stopped after ``sync``."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import SupportsIndex

__all__ = ["Clock", "Timing", "check_count", "time_it"]

#: A function returning seconds from some fixed start, like :func:`time.perf_counter`.
Clock = Callable[[], float]


@dataclass(frozen=True)
class Timing:
    """Seconds taken by the timed repeats of one operation (warm-up runs excluded).

    Examples
    --------
    >>> t = Timing((3.0, 1.0, 2.0), warmup=1)
    >>> t.median, t.min, t.max, t.repeats
    (2.0, 1.0, 3.0, 3)
    """

    times: tuple[float, ...]
    warmup: int

    @property
    def median(self) -> float:
        """Median of the repeats (a result's rate is the fastest run's: see :mod:`rooflinelib.measure`)."""
        return float(statistics.median(self.times))

    @property
    def min(self) -> float:
        """Fastest repeat: the time a result's rate is computed from."""
        return float(min(self.times))

    @property
    def max(self) -> float:
        """Slowest repeat."""
        return float(max(self.times))

    @property
    def repeats(self) -> int:
        """Number of timed repeats."""
        return len(self.times)


def check_count(name: str, value: object, minimum: int) -> int:
    """Return ``value`` as an ``int``, checked to be a whole number ``>= minimum`` (``True`` is not a count).

    Examples
    --------
    >>> check_count("repeats", 0, 1)
    Traceback (most recent call last):
    ...
    ValueError: repeats must be an integer >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, SupportsIndex) or value.__index__() < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value.__index__()


def time_it(
    fn: Callable[[], object],
    *,
    warmup: int = 1,
    repeats: int = 5,
    sync: Callable[[], object] | None = None,
    clock: Clock = time.perf_counter,
) -> Timing:
    """Run ``fn`` ``warmup`` times untimed, then ``repeats`` times timed.

    ``sync`` is called after every call of ``fn`` and *before* the clock is
    read, so work still queued on a device counts toward its run.

    Examples
    --------
    >>> t = time_it(lambda: sum(range(1000)), warmup=2, repeats=3)
    >>> t.repeats, t.warmup, t.min <= t.median <= t.max
    (3, 2, True)
    """
    warmup = check_count("warmup", warmup, 0)
    repeats = check_count("repeats", repeats, 1)
    for _ in range(warmup):
        fn()
        if sync is not None:
            sync()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        if sync is not None:
            sync()
        times.append(clock() - start)
    return Timing(tuple(times), warmup)
