"""A GPU (or the CPU) through PyTorch, optional: ``torch`` is imported only when the backend is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rooflinelib.measure.timing import Timing, check_count

__all__ = ["TorchBackend", "time_cuda"]

_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def _import_torch() -> Any:
    try:
        import torch
    except ImportError:
        raise RuntimeError("the torch backend needs PyTorch: pip install torch") from None
    return torch


class TorchBackend:
    """PyTorch on ``device`` (``"cuda"``, ``"cuda:1"``, ``"cpu"``...) in ``dtype`` (bf16, fp16 or fp32).

    Kernels on a GPU run asynchronously, so :meth:`sync` waits for
    ``torch.cuda.synchronize()`` before the clock is read. ``torch_module``
    replaces the ``torch`` import (tests pass a fake one).
    """

    name = "torch"

    def __init__(self, dtype: str = "bf16", device: str = "cuda", torch_module: Any = None) -> None:
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {list(_DTYPES)} for the torch backend, got {dtype!r}")
        if not isinstance(device, str) or not device:
            raise ValueError(f"device must be a torch device name such as 'cuda' or 'cpu', got {device!r}")
        self.torch = _import_torch() if torch_module is None else torch_module
        self.on_gpu = device.startswith("cuda")
        if self.on_gpu and not self.torch.cuda.is_available():
            raise RuntimeError(
                "the torch backend found no CUDA device (torch.cuda.is_available() is False); "
                "use device='cpu' or the numpy backend"
            )
        self.dtype, self.device = dtype, device
        self._t = getattr(self.torch, _DTYPES[dtype])

    def _rand(self, *shape: int) -> Any:
        return self.torch.randn(*shape, device=self.device, dtype=self._t)

    def matmul(self, B: int, D: int, F: int) -> Callable[[], object]:
        """``[B, D] @ [D, F]``."""
        x, w = self._rand(B, D), self._rand(D, F)
        return lambda: self.torch.matmul(x, w)

    def dot(self, N: int) -> Callable[[], object]:
        """The dot product of two length-``N`` vectors."""
        x, y = self._rand(N), self._rand(N)
        return lambda: self.torch.dot(x, y)

    def copy(self, n: int) -> Callable[[], object]:
        """``a = b`` over ``n`` elements, in place."""
        src, dst = self._rand(n), self._rand(n)
        return lambda: dst.copy_(src)

    def triad(self, n: int) -> Callable[[], object]:
        """``a = b + 3 c`` over ``n`` elements, one fused kernel."""
        a, b, c = self._rand(n), self._rand(n), self._rand(n)
        return lambda: self.torch.add(b, c, alpha=3.0, out=a)

    def sync(self) -> None:
        """Wait for every queued kernel, so the clock stops after the work, not the launch."""
        if self.on_gpu:
            self.torch.cuda.synchronize(self.device)

    def info(self) -> dict[str, Any]:
        """torch and CUDA versions; on a GPU its name and how many are visible."""
        t = self.torch
        info: dict[str, Any] = {
            "backend": self.name,
            "torch": t.__version__,
            "cuda": getattr(t.version, "cuda", None),
            "torch_device": self.device,
        }
        if self.on_gpu:
            info["device"] = t.cuda.get_device_name(self.device)
            info["device_count"] = t.cuda.device_count()
        return info

    def with_dtype(self, dtype: str) -> TorchBackend:
        """The same device (and torch module) in another dtype."""
        return TorchBackend(dtype, device=self.device, torch_module=self.torch)


def time_cuda(
    fn: Callable[[], object], *, warmup: int = 3, repeats: int = 10, device: str = "cuda", torch_module: Any = None
) -> Timing:
    """Time ``fn`` on a GPU with CUDA events, the GPU's own clock: warm-up runs first, then ``repeats`` timed runs.

    The warm-up runs (cuBLAS picks its kernel and the memory is allocated on
    the first call) are waited for with ``torch.cuda.synchronize`` and thrown
    away. Each timed run records a start event in the GPU's queue, launches
    ``fn``, records an end event, and waits for the end event before reading
    ``start.elapsed_time(end)``: the time between the two events by the GPU's
    own clock. A gap while an idle GPU waits for the launch is counted; the
    host's return from waiting is not. ``torch_module`` replaces the ``torch`` import
    (tests pass a fake one).

    Examples
    --------
    >>> time_cuda(lambda: None, warmup=-1, torch_module=object())
    Traceback (most recent call last):
    ...
    ValueError: warmup must be an integer >= 0, got -1
    """
    warmup, repeats = check_count("warmup", warmup, 0), check_count("repeats", repeats, 1)
    torch = _import_torch() if torch_module is None else torch_module
    if not torch.cuda.is_available():
        raise RuntimeError("time_cuda needs a CUDA GPU (torch.cuda.is_available() is False); on a CPU use time_it")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize(device)
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)  # elapsed_time is in milliseconds
    return Timing(tuple(times), warmup)
