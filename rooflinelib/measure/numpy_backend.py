"""The CPU through numpy: its BLAS does the matmuls."""

from __future__ import annotations

import platform
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from rooflinelib.measure.system import blas_name, blas_threads

__all__ = ["NumpyBackend"]

_DTYPES: dict[str, type[np.floating[Any]]] = {"fp32": np.float32, "fp64": np.float64}


class NumpyBackend:
    """The CPU through numpy. ``dtype`` is ``"fp32"`` or ``"fp64"``; calls return when the work is done.

    Examples
    --------
    >>> be = NumpyBackend("fp64")
    >>> be.matmul(2, 3, 4)().shape
    (2, 4)
    >>> be.with_dtype("fp32").dtype, be.device
    ('fp32', 'cpu')
    """

    name = "numpy"
    device = "cpu"

    def __init__(self, dtype: str = "fp32") -> None:
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)} for the numpy backend, got {dtype!r}")
        self.dtype = dtype
        self._np = _DTYPES[dtype]

    def _rand(self, *shape: int) -> npt.NDArray[Any]:
        return np.random.default_rng(0).standard_normal(shape, dtype=self._np)

    def matmul(self, B: int, D: int, F: int) -> Callable[[], object]:
        """``[B, D] @ [D, F]`` into a preallocated output."""
        x, w = self._rand(B, D), self._rand(D, F)
        out = np.empty((B, F), dtype=self._np)
        return lambda: np.matmul(x, w, out=out)

    def dot(self, N: int) -> Callable[[], object]:
        """The dot product of two length-``N`` vectors."""
        x, y = self._rand(N), self._rand(N)
        return lambda: np.dot(x, y)

    def copy(self, n: int) -> Callable[[], object]:
        """``a = b`` over ``n`` elements."""
        src, dst = np.ones(n, self._np), np.zeros(n, self._np)
        return lambda: np.copyto(dst, src)

    def triad(self, n: int) -> Callable[[], object]:
        """``a = b + 3 c`` over ``n`` elements, in place (two passes over ``a``)."""
        a, b, c = np.zeros(n, self._np), np.ones(n, self._np), np.full(n, 2.0, self._np)

        def run() -> object:
            np.multiply(c, 3.0, out=a)
            return np.add(a, b, out=a)

        return run

    def reread(self, n: int, repeats: int) -> Callable[[], object]:
        """``acc += x`` ``repeats`` times over the same two length-``n`` arrays, in one numpy call.

        The call sums a view that repeats ``x`` (stride 0, nothing copied) into
        ``acc``: numpy sets ``acc`` to zero, then adds ``x`` once per repeat,
        reading ``x`` and ``acc`` and writing ``acc``. The working set stays
        ``2 n`` numbers however many repeats there are, so after the first pass
        it is fed from the fastest cache that holds it, and the call's fixed
        cost (about a microsecond) is paid once for all the repeats.

        Examples
        --------
        >>> run = NumpyBackend("fp32").reread(4, repeats=3)
        >>> run().tolist()
        [3.0, 3.0, 3.0, 3.0]
        """
        x, acc = np.ones(n, self._np), np.zeros(n, self._np)
        rows = np.lib.stride_tricks.as_strided(x, shape=(repeats, n), strides=(0, x.itemsize), writeable=False)
        return lambda: np.add.reduce(rows, axis=0, out=acc, initial=0.0)

    def sync(self) -> None:
        """Nothing to wait for: numpy returns when the work is done."""

    def info(self) -> dict[str, Any]:
        """The CPU, numpy, its BLAS and the BLAS's thread count."""
        return {
            "backend": self.name,
            "device": platform.processor() or platform.machine(),
            "numpy": np.__version__,
            "blas": blas_name(),
            "blas_threads": blas_threads(),
        }

    def with_dtype(self, dtype: str) -> NumpyBackend:
        """The CPU in another dtype."""
        return NumpyBackend(dtype)
