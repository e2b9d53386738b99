"""The memory hierarchy of a measurement: each level's bandwidth from the cache staircase, and points placed on it.

A **level** is a data cache that Linux reports (``L1``, ``L2``, ``L3``...) or
main memory (``DRAM``). A cache's bandwidth is the median bandwidth of the
staircase's working sets that sit well inside it: at most ``inside`` (half)
of its size and more than the level above it holds. Main memory's is the
median of the largest working sets, those within a factor of two of the
largest, provided they are at least ``past`` (four) times the last-level
cache. A median, not the best: one working set that a busy machine or a
cache that Linux does not report lets run fast must not speak for the whole
level. Each set's bandwidth is that of its fastest run, as everywhere in
:mod:`rooflinelib.measure`. The staircase runs on one core. A point of the matmul
sweep or of the dot products is placed on the fastest level that can hold its
working set (every byte it counts): that level's bandwidth times its
intensity, capped by the measured peak, is the ceiling it is judged against.

Everything here is arithmetic on a :class:`MachineMeasurement`, so it works
the same on a measurement loaded from a file.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rooflinelib.measure.results import MachineMeasurement, Point
from rooflinelib.precision import dtype_bytes
from rooflinelib.roofline import attainable_flops

__all__ = ["MEMORY", "Level", "Placement", "level_of", "memory_levels", "place_points", "working_set"]

#: The name of the level behind the last cache.
MEMORY = "DRAM"


@dataclass(frozen=True)
class Level:
    """One level of the hierarchy, with what the staircase measured of it.

    ``bytes`` is the cache's size (``None`` for main memory); ``low`` and
    ``high`` bound the working sets whose bandwidth counts for it: a cache's are
    more than ``low`` (the size of the level above, 0 for L1) and at most ``high``.
    For main memory ``high`` is ``None`` and ``low`` is the smallest working set
    used; ``bandwidth`` is their median bandwidth in bytes/s (``None`` if no
    working set fell in that range) and ``points`` how many there were.
    ``shared_by``: logical CPUs sharing the cache (1: a core's own).
    """

    name: str
    bytes: int | None
    low: float
    high: float | None
    bandwidth: float | None
    points: int
    shared_by: int = 1


@dataclass(frozen=True)
class Placement:
    """A measured point on the ceiling of the level its working set fits in.

    ``ceiling`` is ``min(peak, intensity × level bandwidth)`` in FLOPs/s, or
    ``None`` if that level's bandwidth was not measured.
    """

    point: Point
    level: str
    working_set: float
    ceiling: float | None

    @property
    def ratio(self) -> float | None:
        """Measured FLOPs/s over the ceiling (above 1: faster than the level's measured bandwidth allows)."""
        return None if self.ceiling is None else self.point.flops_per_s / self.ceiling


def working_set(p: Point) -> float:
    """Bytes an operation keeps in play: the staircase's two arrays, or every byte a matmul or dot counts.

    Examples
    --------
    >>> working_set(Point("reread", "fp32", {"n": 1024, "repeats": 10}, 0, 1.0, 1, 1, 1, 1, 1))
    8192
    >>> working_set(Point("dot", "fp32", {"N": 1000}, 1999, 8004.0, 1, 1, 1, 1, 1))
    8004.0
    """
    if p.kind == "reread":
        return 2 * p.sizes["n"] * int(dtype_bytes(p.dtype))
    return p.bytes


def _caches(machine: Mapping[str, Any]) -> list[dict[str, Any]]:
    caches = machine.get("caches") or []
    if not isinstance(caches, list) or not all(isinstance(c, Mapping) and {"level", "bytes"} <= set(c) for c in caches):
        raise ValueError(f"machine['caches'] must be a list of {{'level', 'bytes'}} entries, got {caches!r}")
    return sorted(caches, key=lambda c: c["level"])


def memory_levels(m: MachineMeasurement, *, inside: float = 0.5, past: float = 4.0) -> list[Level]:
    """The caches the measurement's machine reports, then main memory, each with its staircase bandwidth.

    ``[]`` when the machine reported no caches (the staircase cannot be split
    into levels then).

    Examples
    --------
    >>> def stair(kib, gbs):   # a staircase point of 2 arrays of kib/2 KiB at gbs GB/s
    ...     n = kib * 1024 // 8
    ...     return Point("reread", "fp32", {"n": n, "repeats": 2}, 0, 1e9 * gbs, 1.0, 1.0, 1.0, 3, 1)
    >>> m = MachineMeasurement(machine={"caches": [{"level": 1, "bytes": 32 * 1024},
    ...                                            {"level": 2, "bytes": 1024 * 1024}]},
    ...                        staircase=[stair(4, 190), stair(8, 200), stair(16, 230), stair(64, 100),
    ...                                   stair(256, 90), stair(1024, 60), stair(8192, 50), stair(16384, 20)])
    >>> [(lv.name, lv.bandwidth / 1e9 if lv.bandwidth else None, lv.points) for lv in memory_levels(m)]
    [('L1', 200.0, 3), ('L2', 95.0, 2), ('DRAM', 20.0, 1)]

    Main memory's 16 MiB set runs at 20 GB/s; the 8 MiB one, half as large, is
    left out, as are the sets less than four times the last cache.
    """
    caches = _caches(m.machine)
    if not caches:
        return []
    stair = [(working_set(p), p.bytes_per_s) for p in m.staircase]
    levels, below = [], 0.0
    for cache in caches:
        high = inside * cache["bytes"]
        inside_sets = [bw for ws, bw in stair if below < ws <= high]
        levels.append(_level(f"L{cache['level']}", cache["bytes"], below, high, inside_sets, cache.get("shared_by", 1)))
        below = float(cache["bytes"])
    past_sets = [(ws, bw) for ws, bw in stair if ws >= past * below]
    largest = max((ws for ws, _ in past_sets), default=0.0)
    used = [(ws, bw) for ws, bw in past_sets if ws > largest / 2]
    low = min((ws for ws, _ in used), default=past * below)
    levels.append(_level(MEMORY, None, low, None, [bw for _, bw in used], 0))
    return levels


def _level(name: str, size: int | None, low: float, high: float | None, bandwidths: list[float], shared: int) -> Level:
    return Level(name, size, low, high, statistics.median(bandwidths) if bandwidths else None, len(bandwidths), shared)


def level_of(levels: Sequence[Level], nbytes: float) -> Level:
    """The fastest level that can hold ``nbytes``: the first cache at least that large, else main memory.

    Examples
    --------
    >>> levels = [Level("L1", 32768, 0, 16384, 2e11, 2), Level("L2", 2**20, 32768, 2**19, 1e11, 3),
    ...           Level("DRAM", None, 2**22, None, 2e10, 2)]
    >>> [level_of(levels, b).name for b in (1000, 32768, 40000, 2**21)]
    ['L1', 'L1', 'L2', 'DRAM']
    """
    if not levels:
        raise ValueError("no memory levels: the measurement's machine reported no caches")
    return next((lv for lv in levels if lv.bytes is not None and nbytes <= lv.bytes), levels[-1])


def place_points(
    m: MachineMeasurement, points: Iterable[Point], *, dtype: str | None = None, levels: Sequence[Level] | None = None
) -> list[Placement]:
    """Each point on the ceiling of the level its working set fits in: ``min(peak, intensity × bandwidth)``.

    ``peak`` is the measured peak in ``dtype`` (default: the sweep's).

    Examples
    --------
    >>> stair = [Point("reread", "fp32", {"n": 1024, "repeats": 2}, 0, 2e11, 1.0, 1.0, 1.0, 3, 1),
    ...          Point("reread", "fp32", {"n": 2**20, "repeats": 2}, 0, 1e10, 1.0, 1.0, 1.0, 3, 1)]
    >>> peak = Point("matmul", "fp32", {"B": 64, "D": 64, "F": 64}, 1e12, 1.0, 1.0, 1.0, 1.0, 3, 1)
    >>> m = MachineMeasurement(machine={"caches": [{"level": 1, "bytes": 2**15}]}, peak={"fp32": peak},
    ...                        staircase=stair)
    >>> dot = Point("dot", "fp32", {"N": 1000}, 1999, 8004, 1e-7, 1e-7, 1e-7, 3, 1)
    >>> p, = place_points(m, [dot])
    >>> p.level, round(p.ceiling / 1e9, 2), round(p.ratio, 2)   # 1999 / 8004 FLOPs/byte × 200 GB/s
    ('L1', 49.95, 0.4)
    """
    levels = memory_levels(m) if levels is None else list(levels)
    peak = m.peak_flops(dtype)
    out = []
    for p in points:
        ws = working_set(p)
        level = level_of(levels, ws)
        ceiling = None if level.bandwidth is None else float(attainable_flops(p.intensity, peak, level.bandwidth))
        out.append(Placement(p, level.name, ws, ceiling))
    return out
