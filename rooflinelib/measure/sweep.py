"""Timed operations turned into :class:`Point` results, and sweeps over sizes that keep to a time budget."""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import numpy as np

from rooflinelib import matmul as _mm
from rooflinelib._checks import as_number, as_size
from rooflinelib.measure.backend import Backend
from rooflinelib.measure.results import Point
from rooflinelib.measure.timing import Clock, Timing, check_count, time_it

__all__ = [
    "Budget",
    "check_sizes",
    "measure_matmul",
    "measure_reread",
    "measure_stream",
    "progress_bar",
    "reread_repeats",
    "sweep_dot",
    "sweep_matmul",
    "sweep_working_set",
]

#: Bytes the staircase's loop moves per timed run at least, so that a call's fixed cost is a small part of it.
REREAD_TRAFFIC = 32 * 2**20

T = TypeVar("T")


def _point(kind: str, dtype: str, sizes: dict[str, int], flops: float, nbytes: float, t: Timing) -> Point:
    return Point(kind, dtype, sizes, float(flops), float(nbytes), t.median, t.min, t.max, t.repeats, t.warmup)


def _size(name: str, value: object) -> int:
    return int(as_size(name, value))


def check_sizes(name: str, values: object) -> list[int]:
    """A non-empty list of distinct whole sizes >= 1, as ints, smallest first.

    Examples
    --------
    >>> check_sizes("batch_sizes", [4, 1, 2])
    [1, 2, 4]
    >>> check_sizes("batch_sizes", [])
    Traceback (most recent call last):
    ...
    ValueError: batch_sizes must not be empty
    """
    if np.ndim(values) != 1:  # type: ignore[arg-type]
        raise ValueError(f"{name} must be a list of sizes, got {values!r}")
    sizes = sorted(int(s) for s in np.atleast_1d(as_size(name, values)))
    repeated = sorted({s for s in sizes if sizes.count(s) > 1})
    if repeated:
        raise ValueError(f"{name} must list each size once, got {', '.join(map(str, repeated))} more than once")
    return sizes


class Budget:
    """A deadline shared by the steps of a measurement; ``None`` means no limit.

    Examples
    --------
    >>> Budget(None).left()
    inf
    >>> Budget(0)
    Traceback (most recent call last):
    ...
    ValueError: budget_s must be > 0 s, got 0
    """

    def __init__(self, budget_s: float | None, clock: Clock = time.perf_counter) -> None:
        self.budget_s = check_budget(budget_s)
        self.clock, self.start = clock, clock()

    def elapsed(self) -> float:
        """Seconds since the budget started."""
        return self.clock() - self.start

    def left(self) -> float:
        """Seconds left (``inf`` without a limit; negative once overrun)."""
        return math.inf if self.budget_s is None else self.budget_s - self.elapsed()


def check_budget(budget_s: object) -> float | None:
    """``None`` (no limit) or a positive, finite number of seconds, as a float.

    Examples
    --------
    >>> check_budget(True)
    Traceback (most recent call last):
    ...
    TypeError: budget_s must be a number of seconds or None, got True
    """
    if budget_s is None:
        return None
    if isinstance(budget_s, bool) or not isinstance(budget_s, numbers.Real):
        raise TypeError(f"budget_s must be a number of seconds or None, got {budget_s!r}")
    return float(as_number("budget_s", budget_s, "s"))


def progress_bar(items: Sequence[T], desc: str, predicted_s: float, show: bool) -> Iterable[T]:
    """A tqdm bar over ``items`` when ``show`` is true and the work is predicted to take over a second.

    Examples
    --------
    >>> progress_bar([1, 2], "sizes", 0.5, True)      # too short to be worth a bar
    [1, 2]
    """
    if not show or predicted_s < 1.0:
        return items
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a declared dependency of measuring
        return items
    bar: Iterable[T] = tqdm(items, desc=desc, leave=False)
    return bar


def measure_matmul(
    backend: Backend, B: int, D: int, F: int, *, warmup: int = 1, repeats: int = 5, clock: Clock = time.perf_counter
) -> Point:
    """Time ``[B, D] @ [D, F]`` on ``backend``; FLOPs ``2BDF`` and bytes as :func:`rooflinelib.matmul_bytes` counts them.

    Examples
    --------
    >>> from rooflinelib.measure.numpy_backend import NumpyBackend
    >>> p = measure_matmul(NumpyBackend("fp32"), 8, 16, 16, repeats=3)
    >>> p.kind, p.sizes, p.repeats, p.bytes
    ('matmul', {'B': 8, 'D': 16, 'F': 16}, 3, 2048.0)
    """
    B, D, F = _size("B", B), _size("D", D), _size("F", F)
    flops = float(_mm.matmul_flops(B, D, F))
    nbytes = float(_mm.matmul_bytes(B, D, F, precision=backend.dtype))
    t = time_it(backend.matmul(B, D, F), warmup=warmup, repeats=repeats, sync=backend.sync, clock=clock)
    return _point("matmul", backend.dtype, {"B": B, "D": D, "F": F}, flops, nbytes, t)


def measure_stream(
    backend: Backend, kind: str, n: int, *, warmup: int = 1, repeats: int = 5, clock: Clock = time.perf_counter
) -> Point:
    """Time a STREAM-style ``"copy"`` (``a = b``) or ``"triad"`` (``a = b + s*c``) over ``n`` elements.

    Bytes are counted the STREAM way: 2 arrays for copy, 3 for triad (the
    numpy triad actually makes two passes, so it moves more than it is
    credited with and reads a little low).

    Examples
    --------
    >>> from rooflinelib.measure.numpy_backend import NumpyBackend
    >>> measure_stream(NumpyBackend("fp64"), "copy", 1000, repeats=2).bytes
    16000.0
    """
    if kind not in ("copy", "triad"):
        raise ValueError(f"kind must be 'copy' or 'triad', got {kind!r}")
    n = _size("n", n)
    arrays, flops = (2, 0) if kind == "copy" else (3, 2 * n)
    nbytes = arrays * n * _mm.dtype_bytes(backend.dtype)
    fn = backend.copy(n) if kind == "copy" else backend.triad(n)
    t = time_it(fn, warmup=warmup, repeats=repeats, sync=backend.sync, clock=clock)
    return _point(kind, backend.dtype, {"n": n}, flops, nbytes, t)


def _sweep(
    measure: Callable[[int, int, int], Point],
    sizes: Sequence[int],
    desc: str,
    budget: Budget,
    repeats: int,
    show_progress: bool,
) -> tuple[list[Point], bool]:
    """Measure each size, smallest first, keeping within ``budget``; returns the points and whether it stopped early.

    The smallest size is first run once to predict the rest: each size is
    predicted from the one before it, its time scaled in proportion to the
    size. That over-predicts where fixed costs dominate, so the budget errs on
    the safe side. The first size is always measured.
    """
    repeats = check_count("repeats", repeats, 1)
    probe = measure(sizes[0], 0, 1)
    last_t, last_s = probe.median_s, sizes[0]
    predicted = sum(last_t * s / last_s * (repeats + 1) for s in sizes)
    points: list[Point] = []
    for s in progress_bar(sizes, desc, predicted, show_progress):
        cost = last_t * s / last_s * (repeats + 1)
        if cost > budget.left() and points:
            return points, True
        p = measure(s, 1, repeats)
        last_t, last_s = p.median_s, s
        points.append(p)
    return points, False


def sweep_matmul(
    backend: Backend,
    D: int,
    batch_sizes: Sequence[int],
    *,
    repeats: int = 3,
    budget_s: float | None = None,
    progress: bool = True,
    clock: Clock = time.perf_counter,
) -> tuple[list[Point], bool]:
    """Measure ``[B, D] @ [D, D]`` for each ``B``, smallest first; returns ``(points, truncated)``.

    Stops before a size predicted to overrun ``budget_s`` (at least one size is
    always measured) and says so with ``truncated=True``.

    Examples
    --------
    >>> from rooflinelib.measure.numpy_backend import NumpyBackend
    >>> pts, cut = sweep_matmul(NumpyBackend("fp32"), 32, [1, 4, 16], repeats=2, progress=False)
    >>> [p.sizes["B"] for p in pts], cut
    ([1, 4, 16], False)
    """
    D = _size("D", D)
    sizes = check_sizes("batch_sizes", batch_sizes)
    budget = Budget(budget_s, clock)

    def one(B: int, warmup: int, reps: int) -> Point:
        return measure_matmul(backend, B, D, D, warmup=warmup, repeats=reps, clock=clock)

    return _sweep(one, sizes, "matmul sweep", budget, repeats, progress)


def sweep_dot(
    backend: Backend,
    lengths: Sequence[int],
    *,
    repeats: int = 3,
    budget_s: float | None = None,
    progress: bool = True,
    clock: Clock = time.perf_counter,
) -> tuple[list[Point], bool]:
    """Measure the dot product of two length-``N`` vectors for each ``N``; returns ``(points, truncated)``.

    Examples
    --------
    >>> from rooflinelib.measure.numpy_backend import NumpyBackend
    >>> pts, _ = sweep_dot(NumpyBackend("fp32"), [100, 1000], repeats=2, progress=False)
    >>> round(pts[1].intensity, 3)    # (2N - 1) / (4 (2N + 1))
    0.25
    """
    sizes = check_sizes("dot_lengths", lengths)
    budget = Budget(budget_s, clock)

    def one(N: int, warmup: int, reps: int) -> Point:
        t = time_it(backend.dot(N), warmup=warmup, repeats=reps, sync=backend.sync, clock=clock)
        return _point("dot", backend.dtype, {"N": N}, _mm.dot_flops(N), _mm.dot_bytes(N, backend.dtype), t)

    return _sweep(one, sizes, "dot products", budget, repeats, progress)


def reread_repeats(n: int, itemsize: int, traffic: float = REREAD_TRAFFIC) -> int:
    """Repeats of ``acc += x`` over ``n`` numbers that move at least ``traffic`` bytes (two at least).

    Examples
    --------
    >>> reread_repeats(1024, 4), reread_repeats(2**26, 4)
    (2731, 2)
    """
    return max(2, math.ceil(traffic / (3 * n * itemsize)))


def measure_reread(
    backend: Backend, n: int, *, warmup: int = 1, repeats: int = 5, clock: Clock = time.perf_counter
) -> Point:
    """Time ``acc += x`` over two length-``n`` arrays, repeated in one call (the backend's ``reread``).

    The working set is ``2 n`` numbers. Bytes are counted the STREAM way:
    zeroing ``acc`` writes ``n`` numbers, and each pass reads ``x`` and ``acc``
    and writes ``acc``, three arrays; the passes are ``sizes["repeats"]``, chosen by
    :func:`reread_repeats`.

    Examples
    --------
    >>> from rooflinelib.measure.numpy_backend import NumpyBackend
    >>> p = measure_reread(NumpyBackend("fp32"), 1024, repeats=2)
    >>> p.kind, p.sizes, p.bytes == 4 * 1024 * (1 + 3 * 2731)
    ('reread', {'n': 1024, 'repeats': 2731}, True)
    """
    n = _size("n", n)
    if not callable(getattr(backend, "reread", None)):
        raise TypeError(f"the {backend.name} backend has no reread(n, repeats) operation, so it has no cache sweep")
    itemsize = int(_mm.dtype_bytes(backend.dtype))
    passes = reread_repeats(n, itemsize)
    fn = backend.reread(n, passes)  # type: ignore[attr-defined]
    t = time_it(fn, warmup=warmup, repeats=repeats, sync=backend.sync, clock=clock)
    return _point("reread", backend.dtype, {"n": n, "repeats": passes}, 0, (1 + 3 * passes) * n * itemsize, t)


def sweep_working_set(
    backend: Backend,
    working_sets: Sequence[int],
    *,
    repeats: int = 3,
    budget_s: float | None = None,
    slowest_bandwidth: float | None = None,
    progress: bool = True,
    clock: Clock = time.perf_counter,
) -> tuple[list[Point], bool]:
    """Bandwidth against working set (the cache staircase): :func:`measure_reread` at each size, in bytes.

    Each working set of ``w`` bytes is two arrays of ``w / 2`` bytes. Sizes run
    smallest first; before each, its time is predicted from the bytes it moves
    at the bandwidth last measured, or at ``slowest_bandwidth`` (say, the
    measured copy) if that is lower, since a larger working set may come from
    a slower memory. A size predicted to overrun ``budget_s`` ends the sweep
    (``truncated=True``); the first is always measured.

    Examples
    --------
    >>> from rooflinelib.measure.numpy_backend import NumpyBackend
    >>> pts, cut = sweep_working_set(NumpyBackend("fp32"), [2**13, 2**16], repeats=2, progress=False)
    >>> [2 * p.sizes["n"] * 4 for p in pts], cut
    ([8192, 65536], False)
    """
    sizes = check_sizes("working_sets", working_sets)
    repeats = check_count("repeats", repeats, 1)
    itemsize = int(_mm.dtype_bytes(backend.dtype))
    if sizes[0] < 2 * itemsize:
        raise ValueError(
            f"working_sets must be at least two {backend.dtype} numbers ({2 * itemsize} bytes), got {sizes[0]}"
        )
    budget = Budget(budget_s, clock)
    floor = (
        math.inf if slowest_bandwidth is None else float(as_number("slowest_bandwidth", slowest_bandwidth, "bytes/s"))
    )
    elements = [w // (2 * itemsize) for w in sizes]
    probe = measure_reread(backend, elements[0], warmup=0, repeats=1, clock=clock)
    bandwidth = probe.bytes_per_s

    def cost(n: int) -> float:
        return (1 + 3 * reread_repeats(n, itemsize)) * n * itemsize / min(bandwidth, floor) * (repeats + 1)

    points: list[Point] = []
    for n in progress_bar(elements, "cache sweep", sum(map(cost, elements)), progress):
        if points and cost(n) > budget.left():
            return points, True
        p = measure_reread(backend, n, warmup=1, repeats=repeats, clock=clock)
        bandwidth = p.bytes_per_s
        points.append(p)
    return points, False
