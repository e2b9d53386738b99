"""The roofline model: pure formulas on floats or numpy arrays.

Every function takes plain numbers (FLOPs, bytes, FLOPs/s, bytes/s) and
returns a float for scalar input or an array for array input. Nothing here
knows about chips; :mod:`rooflinelib.specs` supplies the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from rooflinelib._checks import ArrayLike, FloatOrArray, as_number, as_size

__all__ = [
    "RuntimeBounds",
    "SweepShape",
    "arithmetic_intensity",
    "attainable_flops",
    "bottleneck",
    "critical_intensity",
    "in_core_peak",
    "is_compute_bound",
    "knee_batch_size",
    "memory_bandwidth_utilization",
    "model_flops_utilization",
    "pipelined_time",
    "runtime_bounds",
    "sweep_shape",
    "t_comms",
    "t_math",
]


def t_math(flops: ArrayLike, peak_flops: ArrayLike) -> FloatOrArray:
    """Time in seconds to do ``flops`` at ``peak_flops`` FLOPs/s.

    Examples
    --------
    >>> f"{t_math(1e12, 9.89e14) * 1e3:.2f} ms"   # 1e12 FLOPs on an H100 (bf16, dense)
    '1.01 ms'
    """
    return as_number("flops", flops, "FLOPs", allow_zero=True) / as_number("peak_flops", peak_flops, "FLOP/s")


def t_comms(num_bytes: ArrayLike, bandwidth: ArrayLike) -> FloatOrArray:
    """Time in seconds to move ``num_bytes`` at ``bandwidth`` bytes/s.

    Examples
    --------
    >>> t_comms(8.2e11, 8.2e11)   # one second's worth of TPU v5e HBM traffic
    1.0
    """
    return as_number("num_bytes", num_bytes, "bytes", allow_zero=True) / as_number("bandwidth", bandwidth, "bytes/s")


class RuntimeBounds(NamedTuple):
    """Lower and upper bounds on a runtime, in seconds.

    ``lower`` assumes compute and communication overlap perfectly,
    ``upper`` assumes they do not overlap at all.
    """

    lower: FloatOrArray
    upper: FloatOrArray


def runtime_bounds(t_math: ArrayLike, t_comms: ArrayLike) -> RuntimeBounds:
    """Lower bound ``max(T_math, T_comms)`` and upper bound ``T_math + T_comms``.

    The upper bound is never more than twice the lower bound.

    Examples
    --------
    >>> runtime_bounds(3e-3, 1e-3)
    RuntimeBounds(lower=0.003, upper=0.004)
    """
    tm = as_number("t_math", t_math, "s", allow_zero=True)
    tc = as_number("t_comms", t_comms, "s", allow_zero=True)
    lower, upper = np.maximum(tm, tc), np.add(tm, tc)
    if np.ndim(lower) == 0:
        return RuntimeBounds(float(lower), float(upper))
    return RuntimeBounds(lower, upper)


def pipelined_time(t_math: ArrayLike, t_comms: ArrayLike, chunks: int) -> FloatOrArray:
    """Runtime when the work is cut into ``chunks`` equal pieces and the transfer of one overlaps the arithmetic
    on the one before: ``max(T_math, T_comms) + min(T_math, T_comms) / chunks``.

    The first piece must arrive before any arithmetic starts (and the last result is computed after the
    last transfer), so one piece of the shorter time is never hidden. With more pieces it tends to the
    lower bound ``max(T_math, T_comms)``; with one piece it is the upper bound, the sum.

    Examples
    --------
    >>> round(pipelined_time(3e-3, 2e-3, 4) * 1e3, 3)    # ms: 3 + 2 / 4
    3.5
    >>> pipelined_time(3e-3, 2e-3, 1) == sum(runtime_bounds(3e-3, 2e-3)) - max(3e-3, 2e-3)
    True
    >>> pipelined_time(3e-3, 2e-3, 0)
    Traceback (most recent call last):
    ...
    ValueError: chunks must be a whole number >= 1, got 0
    """
    tm = as_number("t_math", t_math, "s", allow_zero=True)
    tc = as_number("t_comms", t_comms, "s", allow_zero=True)
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
        raise ValueError(f"chunks must be a whole number >= 1, got {chunks!r}")
    n = float(chunks)
    out = np.maximum(tm, tc) + np.minimum(tm, tc) / n
    return float(out) if np.ndim(out) == 0 else out


def model_flops_utilization(flops: ArrayLike, seconds: ArrayLike, peak_flops: ArrayLike) -> FloatOrArray:
    """MFU: the FLOPs a computation needs (the model's count, not what the kernel happened to execute),
    per second it took, as a fraction of the chip's peak.

    Examples
    --------
    >>> round(model_flops_utilization(2 * 4096**3, 1.7e-4, 9.895e14), 3)   # [4096, 4096] @ [4096, 4096] in 170 µs
    0.817
    """
    done = as_number("flops", flops, "FLOPs", allow_zero=True) / as_number("seconds", seconds, "s")
    return _fraction(done / as_number("peak_flops", peak_flops, "FLOP/s"))


def memory_bandwidth_utilization(num_bytes: ArrayLike, seconds: ArrayLike, bandwidth: ArrayLike) -> FloatOrArray:
    """MBU: the bytes a computation must move (its minimum traffic), per second it took, as a fraction of
    the memory's peak bandwidth.

    Examples
    --------
    >>> round(memory_bandwidth_utilization(1.6e10, 6e-3, 3.35e12), 3)   # 16 GB of weights read in 6 ms
    0.796
    """
    done = as_number("num_bytes", num_bytes, "bytes", allow_zero=True) / as_number("seconds", seconds, "s")
    return _fraction(done / as_number("bandwidth", bandwidth, "bytes/s"))


def _fraction(x: FloatOrArray) -> FloatOrArray:
    return float(x) if np.ndim(x) == 0 else x


def arithmetic_intensity(flops: ArrayLike, num_bytes: ArrayLike) -> FloatOrArray:
    """FLOPs performed per byte moved.

    Examples
    --------
    >>> N = 1_000_000   # bf16 dot product: 2N-1 FLOPs, 2N + 2N bytes in, 2 bytes out
    >>> round(arithmetic_intensity(2 * N - 1, 4 * N + 2), 4)
    0.5
    """
    return as_number("flops", flops, "FLOPs", allow_zero=True) / as_number("num_bytes", num_bytes, "bytes")


def critical_intensity(peak_flops: ArrayLike, bandwidth: ArrayLike) -> FloatOrArray:
    """FLOPs per byte above which a computation is compute-bound (the ridge point).

    Examples
    --------
    >>> round(critical_intensity(1.97e14, 8.2e11))   # TPU v5e, bf16, HBM (the book's rounding)
    240
    >>> round(critical_intensity(3.94e14, 8.1e11))   # TPU v5e, int8
    486
    """
    return as_number("peak_flops", peak_flops, "FLOP/s") / as_number("bandwidth", bandwidth, "bytes/s")


def in_core_peak(
    cores: ArrayLike, clock_hz: ArrayLike, simd_lanes: ArrayLike, fma_per_cycle: ArrayLike, flops_per_fma: float = 2
) -> FloatOrArray:
    """Peak FLOPs/s from a processor's own figures: cores × clock × SIMD lanes × FMAs per cycle × FLOPs per FMA.

    Williams, Waterman and Patterson's in-core ceiling: every core issues
    ``fma_per_cycle`` vector fused multiply-adds each cycle, each on
    ``simd_lanes`` numbers, and an FMA counts as two FLOPs (a multiply and an
    add). One lane gives the scalar ceiling; ``flops_per_fma=1`` a processor
    without FMA that issues one multiply or add per instruction.

    Examples
    --------
    >>> in_core_peak(8, 3.0e9, 16, 2) / 1e9     # 8 cores, 3 GHz, AVX-512 float32, two FMA units
    1536.0
    >>> in_core_peak(8, 3.0e9, 1, 2) / 1e9      # the same cores, scalar code
    96.0
    >>> in_core_peak(0, 3.0e9, 16, 2)
    Traceback (most recent call last):
    ...
    ValueError: cores must be > 0 cores, got 0
    """
    return (
        as_number("cores", cores, "cores")
        * as_number("clock_hz", clock_hz, "Hz")
        * as_number("simd_lanes", simd_lanes, "lanes")
        * as_number("fma_per_cycle", fma_per_cycle, "FMAs per cycle")
        * as_number("flops_per_fma", flops_per_fma, "FLOPs")
    )


def attainable_flops(intensity: ArrayLike, peak_flops: ArrayLike, bandwidth: ArrayLike) -> FloatOrArray:
    """The roofline: FLOPs/s reachable at a given intensity, ``min(peak, intensity * bandwidth)``.

    Examples
    --------
    >>> attainable_flops(100.0, 1.97e14, 8.2e11)   # below the ridge: bandwidth-bound
    82000000000000.0
    >>> attainable_flops(1000.0, 1.97e14, 8.2e11)  # above it: the compute roof
    197000000000000.0
    """
    i = as_number("intensity", intensity, "FLOPs/byte", allow_zero=True)
    peak = as_number("peak_flops", peak_flops, "FLOP/s")
    bw = as_number("bandwidth", bandwidth, "bytes/s")
    out = np.minimum(peak, i * bw)
    return float(out) if np.ndim(out) == 0 else out


def is_compute_bound(t_math: ArrayLike, t_comms: ArrayLike) -> bool | np.ndarray:
    """True where compute takes at least as long as communication.

    At exactly ``T_math == T_comms`` (the ridge point) both units are saturated;
    we count that as compute-bound.

    Examples
    --------
    >>> is_compute_bound(2e-3, 1e-3)
    True
    """
    tm = as_number("t_math", t_math, "s", allow_zero=True)
    tc = as_number("t_comms", t_comms, "s", allow_zero=True)
    out = np.greater_equal(tm, tc)
    return bool(out) if np.ndim(out) == 0 else out


def bottleneck(t_math: ArrayLike, t_comms: ArrayLike) -> str | np.ndarray:
    """``"compute-bound"`` or ``"communication-bound"`` (an array of them for array input).

    Examples
    --------
    >>> bottleneck(1e-3, 4e-3)
    'communication-bound'
    """
    compute = is_compute_bound(t_math, t_comms)
    if isinstance(compute, bool):
        return "compute-bound" if compute else "communication-bound"
    return np.where(compute, "compute-bound", "communication-bound")


def knee_batch_size(B: Sequence[float], flops_per_s: Sequence[float], fraction: float = 0.8) -> float:
    """Batch size where a sweep of rates first reaches ``fraction`` of its best rate.

    ``B`` and ``flops_per_s`` are the sweep's batch sizes (each once) and the
    rates reached there, in any order. Between two sizes the crossing is
    interpolated on log-log axes. If the smallest size already reaches the
    target, the knee is at or below it and that size is returned; ``nan`` if
    fewer than three points (too few to tell a bend from noise).

    Examples
    --------
    >>> round(knee_batch_size([1, 4, 16, 64], [10, 40, 100, 100]), 1)   # between B = 4 (40%) and 16
    11.4
    >>> knee_batch_size([1, 1, 1], [1, 2, 3])
    Traceback (most recent call last):
    ...
    ValueError: B must not repeat a batch size, got 1 3 times
    """
    frac = float(as_number("fraction", fraction))
    if frac > 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    if np.ndim(B) != 1 or np.ndim(flops_per_s) != 1:
        raise ValueError("B and flops_per_s must be flat sequences of numbers, one rate per batch size")
    if len(B) != len(flops_per_s):
        raise ValueError(f"B and flops_per_s must be the same length, got {len(B)} and {len(flops_per_s)}")
    b = np.asarray(as_size("B", B), float)
    f = np.asarray(as_number("flops_per_s", flops_per_s, "FLOPs/s"), float)
    values, counts = np.unique(b, return_counts=True)
    if np.any(counts > 1):
        i = int(np.argmax(counts > 1))
        raise ValueError(f"B must not repeat a batch size, got {values[i]:g} {counts[i]} times")
    if len(b) < 3:
        return float("nan")
    order = np.argsort(b)
    b, f = b[order], f[order]
    target = frac * f.max()
    i = int(np.argmax(f >= target))
    if i == 0:
        return float(b[0])
    lb, lf = np.log(b[i - 1 : i + 1]), np.log(f[i - 1 : i + 1])
    return float(np.exp(lb[0] + (np.log(target) - lf[0]) * (lb[1] - lb[0]) / (lf[1] - lf[0])))


class SweepShape(NamedTuple):
    """Whether a sweep of rates has a shape a knee and a plateau can be read from (:func:`sweep_shape`).

    ``steady`` is true when the rate rises, within ``tolerance``, up to its best and
    stays at least ``hold`` of the best after it. Otherwise ``problem`` says how it
    fails: ``"few"`` (fewer than three sizes), ``"dip"`` (before the best, a size runs
    more than ``tolerance`` below the best rate of a smaller size) or ``"drop"`` (after
    the best, a size falls under ``hold`` of it). ``B`` is the batch size that fails
    worst, ``share`` its rate over the rate it fell from, and ``reference_B`` the size
    of that rate; ``best_B`` is where the sweep is fastest.
    """

    steady: bool
    problem: str | None
    B: float | None
    share: float | None
    reference_B: float | None
    best_B: float | None


def sweep_shape(
    B: Sequence[float], flops_per_s: Sequence[float], *, tolerance: float = 0.15, hold: float = 0.8
) -> SweepShape:
    """Whether a sweep rises to a plateau, within noise: the test a knee and a plateau must pass to mean anything.

    A roofline sweep should climb with ``B`` and then level off. Measured on a busy
    machine it can do neither: one size can run ten times slower than its neighbours.
    This checks, in order of ``B``, that every size before the fastest runs at least
    ``1 - tolerance`` of the best rate of any smaller size (a small dip is noise), and
    that every size after the fastest keeps at least ``hold`` of its rate (the plateau
    holds). The worst failure is reported.

    Examples
    --------
    >>> sweep_shape([1, 4, 16, 64], [10, 40, 100, 95]).steady           # climbs, then levels off
    True
    >>> s = sweep_shape([16, 32, 64, 128], [60e9, 18e9, 194e9, 21e9])  # a busy machine
    >>> s.problem, s.B, round(s.share, 2), s.reference_B
    ('drop', 128.0, 0.11, 64.0)
    >>> sweep_shape([1, 2], [1, 2]).problem
    'few'
    """
    tol, keep = float(as_number("tolerance", tolerance)), float(as_number("hold", hold))
    if not (tol < 1 and 0 < keep <= 1):
        raise ValueError(f"tolerance must be in [0, 1) and hold in (0, 1], got {tolerance!r} and {hold!r}")
    if np.ndim(B) != 1 or np.ndim(flops_per_s) != 1 or len(B) != len(flops_per_s):
        raise ValueError("B and flops_per_s must be flat sequences of the same length, one rate per batch size")
    b = np.asarray(as_size("B", B), float)
    f = np.asarray(as_number("flops_per_s", flops_per_s, "FLOPs/s"), float)
    if len(b) < 3:
        return SweepShape(False, "few", None, None, None, None)
    order = np.argsort(b)
    b, f = b[order], f[order]
    best = int(np.argmax(f))
    worst: tuple[float, str, int, int] | None = None  # (share, problem, index, reference index)
    for j in range(1, len(f)):
        ref = int(np.argmax(f[:j])) if j <= best else best
        share = f[j] / f[ref]
        failed = share < 1 - tol if j <= best else share < keep
        if failed and (worst is None or share < worst[0]):
            worst = (share, "dip" if j <= best else "drop", j, ref)
    if worst is None:
        return SweepShape(True, None, None, None, None, float(b[best]))
    share, problem, j, ref = worst
    return SweepShape(False, problem, float(b[j]), float(share), float(b[ref]), float(b[best]))
