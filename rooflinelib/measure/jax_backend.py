"""An accelerator through JAX, optional: ``jax`` is imported only when the backend is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["JaxBackend"]

_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def _import_jax() -> Any:
    try:
        import jax
    except ImportError:
        raise RuntimeError("the jax backend needs JAX: pip install jax") from None
    return jax


class JaxBackend:
    """JAX on one device (default: the first of ``jax.devices()``) in ``dtype`` (bf16, fp16 or fp32).

    Every operation is jit-compiled (the warm-up run compiles it) and runs
    asynchronously; :meth:`sync` blocks until the last result is ready.
    ``jax_module`` replaces the ``jax`` import (tests pass a fake one).
    """

    name = "jax"

    def __init__(self, dtype: str = "bf16", device: Any = None, jax_module: Any = None) -> None:
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {list(_DTYPES)} for the jax backend, got {dtype!r}")
        self.jax = _import_jax() if jax_module is None else jax_module
        self._device = self.jax.devices()[0] if device is None else device
        self.device = str(self._device)
        self.dtype = dtype
        self._t = _DTYPES[dtype]
        self._last: Any = None

    def _ones(self, *shape: int) -> Any:
        return self.jax.device_put(self.jax.numpy.ones(shape, dtype=self._t), self._device)

    def _keep(self, fn: Callable[..., Any], *args: Any) -> Callable[[], object]:
        """``fn`` jit-compiled on ``args``; each run keeps its result for :meth:`sync` to wait on."""
        jitted = self.jax.jit(fn)

        def run() -> object:
            self._last = jitted(*args)
            return self._last

        return run

    def matmul(self, B: int, D: int, F: int) -> Callable[[], object]:
        """``[B, D] @ [D, F]``."""
        return self._keep(self.jax.numpy.matmul, self._ones(B, D), self._ones(D, F))

    def dot(self, N: int) -> Callable[[], object]:
        """The dot product of two length-``N`` vectors."""
        return self._keep(self.jax.numpy.dot, self._ones(N), self._ones(N))

    def copy(self, n: int) -> Callable[[], object]:
        """``a = b`` over ``n`` elements (into a fresh output: one read, one write)."""
        return self._keep(lambda x: x + 0, self._ones(n))

    def triad(self, n: int) -> Callable[[], object]:
        """``a = b + 3 c`` over ``n`` elements."""
        return self._keep(lambda b, c: b + 3 * c, self._ones(n), self._ones(n))

    def sync(self) -> None:
        """Block until the last result is ready."""
        if self._last is not None:
            self._last.block_until_ready()

    def info(self) -> dict[str, Any]:
        """The JAX version and the device's kind (e.g. ``"TPU v5 lite"``)."""
        return {
            "backend": self.name,
            "jax": self.jax.__version__,
            "device": getattr(self._device, "device_kind", str(self._device)),
            "jax_device": self.device,
        }

    def with_dtype(self, dtype: str) -> JaxBackend:
        """The same device (and jax module) in another dtype."""
        return JaxBackend(dtype, device=self._device, jax_module=self.jax)
