"""Where a measurement was taken: platform, CPU count, caches, the CPU's figures, numpy, BLAS and its threads, date."""

from __future__ import annotations

import datetime as _dt
import os
import platform
from pathlib import Path
from typing import Any

import numpy as np

from rooflinelib.measure.cpu import _cpu_list, read_cpu_figures

__all__ = ["blas_name", "blas_threads", "cache_levels", "last_level_cache_bytes", "machine_info", "thread_pools"]

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


def _size_bytes(text: str) -> int:
    """``"48K"``, ``"32768K"``, ``"1M"`` or ``"512"`` (as sysfs writes a cache's size) in bytes."""
    size = text.strip().upper().removesuffix("B")
    unit = size[-1] if size[-1:] in ("K", "M", "G") else ""
    return int(size.removesuffix(unit)) * _UNITS[unit]


def cache_levels(cpu_dir: str | Path = "/sys/devices/system/cpu/cpu0/cache") -> list[dict[str, Any]]:
    """The data caches of the first CPU, innermost first, from Linux's sysfs; ``[]`` where they are not reported.

    Each entry has ``level`` (1, 2, 3...), ``bytes`` and ``shared_by`` (how many
    logical CPUs share that cache: 1 for a core's own L1, the socket's CPUs for
    a shared L3). Instruction caches are left out: data never lives there.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for i, (level, kind, size, cpus) in enumerate([(1, "Data", "48K", "0"), (1, "Instruction", "32K", "0"),
    ...                                                 (2, "Unified", "1024K", "0"), (3, "Unified", "32M", "0-7")]):
    ...     (d / f"index{i}").mkdir()
    ...     for name, text in [("level", level), ("type", kind), ("size", size), ("shared_cpu_list", cpus)]:
    ...         _ = (d / f"index{i}" / name).write_text(f"{text}\\n")
    >>> [(c["level"], c["bytes"] // 1024, c["shared_by"]) for c in cache_levels(d)]
    [(1, 48, 1), (2, 1024, 1), (3, 32768, 8)]
    >>> cache_levels(d / "missing")
    []
    """
    found: dict[int, dict[str, Any]] = {}
    try:
        for index in sorted(Path(cpu_dir).glob("index*")):
            kind = (index / "type").read_text().strip() if (index / "type").is_file() else "Unified"
            if kind == "Instruction":
                continue
            level = int((index / "level").read_text().strip())
            shared = index / "shared_cpu_list"
            cpus = _cpu_list(shared.read_text()) if shared.is_file() else set()
            found[level] = {"level": level, "bytes": _size_bytes((index / "size").read_text()),
                            "shared_by": max(len(cpus), 1)}  # fmt: skip
    except (OSError, ValueError):
        return []
    return [found[level] for level in sorted(found)]


def last_level_cache_bytes(cpu_dir: str | Path = "/sys/devices/system/cpu/cpu0/cache") -> int | None:
    """Size of the first CPU's highest-level cache, from Linux's sysfs; ``None`` where it is not reported.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for i, (level, size) in enumerate([(1, "48K"), (2, "2048K"), (3, "32768K")]):
    ...     (d / f"index{i}").mkdir()
    ...     _ = (d / f"index{i}" / "level").write_text(f"{level}\\n")
    ...     _ = (d / f"index{i}" / "size").write_text(f"{size}\\n")
    >>> last_level_cache_bytes(d) // 2**20
    32
    >>> last_level_cache_bytes(d / "missing") is None
    True
    """
    best: tuple[int, int] | None = None
    try:
        for index in Path(cpu_dir).glob("index*"):
            level = int((index / "level").read_text().strip())
            nbytes = _size_bytes((index / "size").read_text())
            if best is None or level > best[0]:
                best = (level, nbytes)
    except (OSError, ValueError):
        return None
    return None if best is None else best[1]


def blas_name() -> str:
    """Name and version of the BLAS numpy was built with, e.g. ``"scipy-openblas 0.3.29"``.

    Examples
    --------
    >>> isinstance(blas_name(), str)
    True
    """
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()
    except (KeyError, TypeError, AttributeError):  # pragma: no cover - an older numpy or an odd build
        return "unknown"


def thread_pools() -> list[dict[str, Any]]:
    """The native thread pools loaded in this process (BLAS, OpenMP), as :mod:`threadpoolctl` reports them.

    Each entry has ``user_api`` (``"blas"`` or ``"openmp"``), ``internal_api``
    (``"openblas"``, ``"mkl"``...), ``num_threads`` and ``version``. Empty if
    threadpoolctl is not installed.

    Examples
    --------
    >>> all(p["num_threads"] >= 1 for p in thread_pools())
    True
    """
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl is a declared dependency of measuring
        return []
    keys = ("user_api", "internal_api", "num_threads", "version")
    return [{k: pool.get(k) for k in keys} for pool in threadpool_info()]


def blas_threads() -> int | str:
    """Threads the BLAS uses: from threadpoolctl, else the usual environment variables, else ``"unknown"``.

    Examples
    --------
    >>> n = blas_threads()
    >>> n == "unknown" or n >= 1
    True
    """
    counts = [p["num_threads"] for p in thread_pools() if p["user_api"] == "blas"]
    if counts:
        return int(counts[0])
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return "unknown"


def machine_info(backend_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """Platform, Python, CPU count, caches, the CPU's figures, numpy, BLAS threads and pools, date (UTC), then ``backend_info``.

    Examples
    --------
    >>> info = machine_info({"backend": "numpy"})
    >>> {"cpu_count", "caches", "cpu", "blas_threads", "thread_pools", "date", "backend"} <= set(info)
    True
    """
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "last_level_cache_bytes": last_level_cache_bytes(),
        "caches": cache_levels(),
        "cpu": read_cpu_figures().to_dict(),
        "numpy": np.__version__,
        "blas_threads": blas_threads(),
        "thread_pools": thread_pools(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    info.update(backend_info or {})
    return info
