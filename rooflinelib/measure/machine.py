"""The whole run: presets, settings checked before anything is timed, and :func:`measure_machine`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rooflinelib import matmul as _mm
from rooflinelib._checks import as_number, as_size
from rooflinelib.measure.backend import Backend, get_backend
from rooflinelib.measure.results import MachineMeasurement
from rooflinelib.measure.sweep import (
    Budget,
    check_budget,
    check_sizes,
    measure_matmul,
    measure_stream,
    sweep_dot,
    sweep_matmul,
    sweep_working_set,
)
from rooflinelib.measure.system import machine_info
from rooflinelib.measure.timing import check_count

__all__ = ["PRESETS", "STAIRCASE_DEFAULTS", "check_settings", "measure_machine", "staircase_sizes"]

#: The cache staircase's sizes, for a preset that does not set them: from ``staircase_min_kib`` to
#: ``staircase_max_mib`` of working set (``None``: see :func:`staircase_sizes`), ``staircase_per_octave``
#: sizes per doubling.
STAIRCASE_DEFAULTS: dict[str, Any] = {"staircase_min_kib": 4, "staircase_max_mib": None, "staircase_per_octave": 1}

#: Sizes for a quick run (a few seconds on a laptop) and a full one (a minute or so).
PRESETS: dict[str, dict[str, Any]] = {
    "quick": {
        "peak_n": 1024,
        "stream_mib": 128,
        "D": 4096,
        "batch_sizes": [1, 2, 4, 8, 16, 32, 64, 128, 256],
        "dot_lengths": [2**12, 2**16, 2**20, 2**24],
        "repeats": 3,
    },
    "full": {
        "peak_n": 4096,
        "stream_mib": 512,
        "D": 8192,
        "batch_sizes": [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024],
        "dot_lengths": [2**10, 2**12, 2**14, 2**16, 2**18, 2**20, 2**22, 2**24, 2**26],
        "staircase_min_kib": 2,
        "staircase_max_mib": None,
        "staircase_per_octave": 2,
        "repeats": 7,
    },
}


def check_settings(preset: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The preset's sizes with ``overrides`` applied, each checked; plain JSON-ready values.

    Examples
    --------
    >>> check_settings("quick", {"D": 256, "batch_sizes": [8, 1]})["batch_sizes"]
    [1, 8]
    >>> check_settings("quick", {"stream_mib": 0})
    Traceback (most recent call last):
    ...
    ValueError: stream_mib must be > 0 MiB, got 0
    >>> check_settings("quick", {"D": -4})
    Traceback (most recent call last):
    ...
    ValueError: D must be a whole number of elements (an integer >= 1), got -4
    """
    if not isinstance(preset, str) or preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")
    cfg = {**STAIRCASE_DEFAULTS, **PRESETS[preset]}
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"unknown size setting(s) {sorted(unknown)}; use any of {sorted(cfg)}")
    cfg.update(overrides)
    max_mib = cfg["staircase_max_mib"]
    return {
        "peak_n": int(as_size("peak_n", cfg["peak_n"])),
        "stream_mib": float(as_number("stream_mib", cfg["stream_mib"], "MiB")),
        "D": int(as_size("D", cfg["D"])),
        "batch_sizes": check_sizes("batch_sizes", cfg["batch_sizes"]),
        "dot_lengths": check_sizes("dot_lengths", cfg["dot_lengths"]),
        "staircase_min_kib": float(as_number("staircase_min_kib", cfg["staircase_min_kib"], "KiB")),
        "staircase_max_mib": None if max_mib is None else float(as_number("staircase_max_mib", max_mib, "MiB")),
        "staircase_per_octave": check_count("staircase_per_octave", cfg["staircase_per_octave"], 1),
        "repeats": check_count("repeats", cfg["repeats"], 1),
    }


def staircase_sizes(
    min_kib: float, max_mib: float | None, per_octave: int = 1, last_level_cache: int | None = None
) -> list[int]:
    """Working sets in bytes for the cache staircase: ``min_kib`` up to ``max_mib``, ``per_octave`` per doubling.

    ``max_mib=None`` goes well past the last-level cache: eight times its size,
    kept between 64 MiB and 1 GiB (256 MiB when the cache's size is unknown).
    Sizes are rounded to whole KiB.

    Examples
    --------
    >>> [s // 1024 for s in staircase_sizes(4, 0.0625)]
    [4, 8, 16, 32, 64]
    >>> staircase_sizes(4, None, last_level_cache=32 * 2**20)[-1] // 2**20
    256
    >>> [s // 1024 for s in staircase_sizes(4, 1 / 32, per_octave=2)]
    [4, 6, 8, 11, 16, 23, 32]
    >>> staircase_sizes(4, 0.001)
    Traceback (most recent call last):
    ...
    ValueError: staircase_max_mib (0.001 MiB) must be at least staircase_min_kib (4 KiB)
    """
    top: float
    if max_mib is None:
        top = 256 * 2**20 if last_level_cache is None else min(max(8 * last_level_cache, 64 * 2**20), 2**30)
    else:
        top = max_mib * 2**20
    if top < min_kib * 2**10:
        raise ValueError(f"staircase_max_mib ({max_mib} MiB) must be at least staircase_min_kib ({min_kib:g} KiB)")
    steps = math.floor(per_octave * math.log2(top / (min_kib * 2**10)) + 1e-9)
    sizes = sorted({round(min_kib * 2 ** (k / per_octave)) * 2**10 for k in range(steps + 1)})
    return sizes


def _backends(backend: str | Backend, peak_dtypes: Sequence[str] | None) -> tuple[Backend, list[Backend]]:
    """The run's backend and one per peak dtype, all built (so a bad dtype fails) before anything is timed."""
    be = get_backend(backend) if isinstance(backend, str) else backend
    if not isinstance(be, Backend):
        raise TypeError(f"backend must be 'numpy', 'torch', 'jax' or a Backend object, got {backend!r}")
    if peak_dtypes is None:
        peak_dtypes = ["fp32", "fp64"] if be.name == "numpy" else [be.dtype]
    if isinstance(peak_dtypes, str) or not peak_dtypes:
        raise ValueError(f"peak_dtypes must be a non-empty list of dtypes such as ['fp32'], got {peak_dtypes!r}")
    return be, [be if d == be.dtype else be.with_dtype(d) for d in peak_dtypes]


def measure_machine(
    backend: str | Backend = "numpy",
    *,
    preset: str = "quick",
    budget_s: float | None = 10.0,
    peak_dtypes: Sequence[str] | None = None,
    progress: bool = True,
    **overrides: Any,
) -> MachineMeasurement:
    """Peak matmul FLOPs/s, copy and triad bandwidth, the cache staircase, a matmul sweep over ``B`` and dot products.

    Every argument is checked before anything is timed.

    Parameters
    ----------
    backend : ``"numpy"`` (the CPU), ``"torch"`` or ``"jax"`` (a GPU/TPU, bf16), or a backend object.
    preset : ``"quick"`` or ``"full"``, the sizes in :data:`PRESETS`.
    budget_s : seconds the whole run may take (``None``: no limit); sweeps stop early to keep it.
    peak_dtypes : dtypes whose peak is measured (numpy: fp32 and fp64; others: the backend's dtype).
    progress : show progress bars for sweeps predicted to take over a second.
    overrides : replace any entry of the preset, e.g. ``D=2048`` or ``repeats=5``.

    Examples
    --------
    >>> m = measure_machine(budget_s=2, progress=False, peak_n=64, stream_mib=1, D=64,
    ...                     batch_sizes=[1, 8], dot_lengths=[1000], staircase_max_mib=1)
    >>> sorted(m.peak), sorted(m.stream), len(m.sweep) <= 2
    (['fp32', 'fp64'], ['copy', 'triad'], True)
    >>> measure_machine(stream_mib=0)
    Traceback (most recent call last):
    ...
    ValueError: stream_mib must be > 0 MiB, got 0
    """
    cfg = check_settings(preset, overrides)
    check_budget(budget_s)
    be, peak_backends = _backends(backend, peak_dtypes)
    n_elem = int(cfg["stream_mib"] * 2**20 / _mm.dtype_bytes(be.dtype))
    if n_elem < 1:
        raise ValueError(f"stream_mib must hold at least one {be.dtype} element, got {cfg['stream_mib']!r} MiB")

    info = machine_info(be.info())
    stair = callable(getattr(be, "reread", None))  # the cache staircase: the CPU's numpy backend has its loop
    stair_sizes = staircase_sizes(
        cfg["staircase_min_kib"], cfg["staircase_max_mib"], cfg["staircase_per_octave"],
        info.get("last_level_cache_bytes"),
    )  # fmt: skip

    budget = Budget(budget_s)
    reps, n = cfg["repeats"], cfg["peak_n"]
    result = MachineMeasurement(machine=info, sweep_D=cfg["D"], budget_s=budget.budget_s)
    for b in peak_backends:
        result.peak[b.dtype] = measure_matmul(b, n, n, n, repeats=reps)
    for kind in ("copy", "triad"):
        result.stream[kind] = measure_stream(be, kind, n_elem, repeats=reps)
    cut0 = False
    if stair:
        result.staircase, cut0 = sweep_working_set(
            be,
            stair_sizes,
            repeats=reps,
            budget_s=None if budget_s is None else max(budget.left(), 0.1) * 0.25,
            slowest_bandwidth=result.stream["copy"].bytes_per_s,
            progress=progress,
        )
    # what is left of the budget goes 3:1 to the matmul sweep and the dot products
    sweep_budget = None if budget_s is None else max(budget.left(), 0.1) * 0.75
    result.sweep, cut1 = sweep_matmul(
        be, cfg["D"], cfg["batch_sizes"], repeats=reps, budget_s=sweep_budget, progress=progress
    )
    dot_budget = None if budget_s is None else max(budget.left(), 0.05)
    result.dot, cut2 = sweep_dot(be, cfg["dot_lengths"], repeats=reps, budget_s=dot_budget, progress=progress)
    result.truncated = cut0 or cut1 or cut2
    result.elapsed_s = budget.elapsed()
    result.provenance = {"preset": preset, "settings": cfg}
    return result
