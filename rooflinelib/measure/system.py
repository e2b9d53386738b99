"""Where a measurement was taken: platform, CPU count, last-level cache, numpy, BLAS and its thread pools, date."""

from __future__ import annotations

import datetime as _dt
import os
import platform
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["blas_name", "blas_threads", "last_level_cache_bytes", "machine_info", "thread_pools"]

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


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
            size = (index / "size").read_text().strip().upper().removesuffix("B")
            unit = size[-1] if size[-1:] in ("K", "M", "G") else ""
            nbytes = int(size.removesuffix(unit)) * _UNITS[unit]
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
    """Platform, Python, CPU count, numpy, BLAS threads and pools, date (UTC), then ``backend_info``.

    Examples
    --------
    >>> info = machine_info({"backend": "numpy"})
    >>> {"cpu_count", "blas_threads", "thread_pools", "date", "backend"} <= set(info)
    True
    """
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "last_level_cache_bytes": last_level_cache_bytes(),
        "numpy": np.__version__,
        "blas_threads": blas_threads(),
        "thread_pools": thread_pools(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    info.update(backend_info or {})
    return info
