"""What a measurement needs from a device (:class:`Backend`), and :func:`get_backend` to pick one by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

__all__ = ["BACKENDS", "Backend", "get_backend"]


@runtime_checkable
class Backend(Protocol):
    """A device to time work on: operations to run, a way to wait for them, and what it is.

    Each operation method allocates its inputs once and returns a function
    with no arguments that runs the operation once; :meth:`sync` waits until
    every queued operation has finished (a no-op where calls are synchronous).
    """

    #: ``"numpy"``, ``"torch"``, ``"jax"``: what :func:`get_backend` calls it.
    name: str
    #: Element type of every operand, a key of :data:`rooflinelib.DTYPE_BYTES`.
    dtype: str
    #: Where the work runs, as the backend names it (``"cpu"``, ``"cuda"``, ``"cuda:1"``...).
    device: str

    def matmul(self, B: int, D: int, F: int) -> Callable[[], object]:
        """``[B, D] @ [D, F]``."""
        ...

    def dot(self, N: int) -> Callable[[], object]:
        """The dot product of two length-``N`` vectors."""
        ...

    def copy(self, n: int) -> Callable[[], object]:
        """``a = b`` over ``n`` elements."""
        ...

    def triad(self, n: int) -> Callable[[], object]:
        """``a = b + 3 c`` over ``n`` elements."""
        ...

    def sync(self) -> None:
        """Return once all launched work is done."""
        ...

    def info(self) -> dict[str, Any]:
        """What the device and its software are, for the record (JSON-ready values)."""
        ...

    def with_dtype(self, dtype: str) -> Backend:
        """The same backend on the same device, in another dtype."""
        ...


def _numpy(dtype: str | None) -> Backend:
    from rooflinelib.measure.numpy_backend import NumpyBackend

    return NumpyBackend(dtype or "fp32")


def _torch(dtype: str | None) -> Backend:
    from rooflinelib.measure.torch_backend import TorchBackend

    return TorchBackend(dtype or "bf16")


def _jax(dtype: str | None) -> Backend:
    from rooflinelib.measure.jax_backend import JaxBackend

    return JaxBackend(dtype or "bf16")


#: Backends by name, each a function of the dtype (``None``: the backend's default).
BACKENDS: dict[str, Callable[[str | None], Backend]] = {"numpy": _numpy, "torch": _torch, "jax": _jax}


def get_backend(name: str = "numpy", dtype: str | None = None) -> Backend:
    """A backend by name: ``"numpy"`` (default dtype fp32), ``"torch"`` or ``"jax"`` (default bf16).

    Examples
    --------
    >>> get_backend("numpy", "fp64").dtype
    'fp64'
    >>> get_backend("tpu")
    Traceback (most recent call last):
    ...
    ValueError: backend must be 'numpy', 'torch' or 'jax', got 'tpu'
    """
    if not isinstance(name, str) or name not in BACKENDS:
        raise ValueError(f"backend must be 'numpy', 'torch' or 'jax', got {name!r}")
    return BACKENDS[name](dtype)
