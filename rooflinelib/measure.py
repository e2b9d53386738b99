"""Measure the machine you are on: peak matmul FLOPs/s, memory bandwidth, a batch sweep.

Timing rules, applied everywhere here: warm-up runs are done and thrown away,
then the operation is repeated and the **median** reported with the min-max
spread; a backend's ``sync()`` (e.g. ``torch.cuda.synchronize``) runs before
every clock stop, so asynchronous devices are timed for the work, not for the
launch. Every result records its sizes, dtype, repeats and the thread counts.

Results are plain data: :class:`MachineMeasurement` turns into a dict (and
JSON) and back, so machines can be shared and compared. Backends:
:class:`NumpyBackend` (the CPU's BLAS, always there), :class:`TorchBackend`
and :class:`JaxBackend` (optional; imported only when asked for).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import time
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence

import numpy as np

from rooflinelib import matmul as _mm
from rooflinelib._checks import as_number, as_size

__all__ = [
    "Timing",
    "Point",
    "MachineMeasurement",
    "Backend",
    "NumpyBackend",
    "TorchBackend",
    "JaxBackend",
    "get_backend",
    "time_it",
    "dot_flops",
    "dot_bytes",
    "measure_matmul",
    "measure_stream",
    "sweep_matmul",
    "sweep_dot",
    "measure_machine",
    "measured_knee",
    "knee_batch_size",
    "load_measurement",
    "reference_measurements",
    "machine_info",
    "PRESETS",
]

Clock = Callable[[], float]


# --------------------------------------------------------------------------- timing


@dataclass(frozen=True)
class Timing:
    """Seconds taken by the timed repeats of one operation (warm-up runs excluded)."""

    times: tuple[float, ...]
    warmup: int

    @property
    def median(self) -> float:
        """Median of the repeats, the figure every result reports."""
        return float(np.median(self.times))

    @property
    def min(self) -> float:
        return float(min(self.times))

    @property
    def max(self) -> float:
        return float(max(self.times))

    @property
    def repeats(self) -> int:
        return len(self.times)


def _check_count(name: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def time_it(
    fn: Callable[[], object],
    *,
    warmup: int = 1,
    repeats: int = 5,
    sync: Callable[[], object] | None = None,
    clock: Clock = time.perf_counter,
) -> Timing:
    """Run ``fn`` ``warmup`` times untimed, then ``repeats`` times timed.

    ``sync`` is called after every call of ``fn`` and *before* the clock is
    read, so work still queued on a device counts toward its run.

    Examples
    --------
    >>> t = time_it(lambda: sum(range(1000)), warmup=2, repeats=3)
    >>> t.repeats, t.warmup, t.min <= t.median <= t.max
    (3, 2, True)
    """
    warmup = _check_count("warmup", warmup, 0)
    repeats = _check_count("repeats", repeats, 1)
    sync = sync or (lambda: None)
    for _ in range(warmup):
        fn()
        sync()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        sync()
        times.append(clock() - start)
    return Timing(tuple(times), warmup)


# --------------------------------------------------------------------------- backends


class Backend(Protocol):
    """What the measurements need from a device: operations to time and a way to wait for them."""

    name: str
    dtype: str

    def matmul(self, B: int, D: int, F: int) -> Callable[[], object]: ...
    def dot(self, N: int) -> Callable[[], object]: ...
    def copy(self, n: int) -> Callable[[], object]: ...
    def triad(self, n: int) -> Callable[[], object]: ...
    def sync(self) -> None: ...
    def info(self) -> dict[str, Any]: ...


_NUMPY_DTYPES: dict[str, Any] = {"fp32": np.float32, "fp64": np.float64}


class NumpyBackend:
    """The CPU through numpy (its BLAS does the matmuls). ``dtype`` is ``"fp32"`` or ``"fp64"``.

    Examples
    --------
    >>> be = NumpyBackend("fp64")
    >>> run = be.matmul(2, 3, 4)
    >>> run().shape
    (2, 4)
    """

    name = "numpy"

    def __init__(self, dtype: str = "fp32") -> None:
        if dtype not in _NUMPY_DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_NUMPY_DTYPES)} for the numpy backend, got {dtype!r}")
        self.dtype = dtype
        self._np = _NUMPY_DTYPES[dtype]

    def _rand(self, *shape: int) -> np.ndarray:
        return np.random.default_rng(0).standard_normal(shape, dtype=self._np)

    def matmul(self, B: int, D: int, F: int) -> Callable[[], object]:
        x, w = self._rand(B, D), self._rand(D, F)
        out = np.empty((B, F), dtype=self._np)
        return lambda: np.matmul(x, w, out=out)

    def dot(self, N: int) -> Callable[[], object]:
        x, y = self._rand(N), self._rand(N)
        return lambda: np.dot(x, y)

    def copy(self, n: int) -> Callable[[], object]:
        src, dst = np.ones(n, self._np), np.zeros(n, self._np)
        return lambda: np.copyto(dst, src)

    def triad(self, n: int) -> Callable[[], object]:
        a, b, c = np.zeros(n, self._np), np.ones(n, self._np), np.full(n, 2.0, self._np)

        def run() -> np.ndarray:  # a = b + s * c, in place, no temporaries
            np.multiply(c, 3.0, out=a)
            return np.add(a, b, out=a)

        return run

    def sync(self) -> None:
        """Nothing to wait for: numpy returns when the work is done."""

    def info(self) -> dict[str, Any]:
        return {"device": platform.processor() or platform.machine(), "numpy": np.__version__,
                "blas": _blas_name(), "blas_threads": _blas_threads()}


class TorchBackend(NumpyBackend):
    """A GPU through PyTorch (optional). Needs ``torch`` and a visible CUDA device."""

    name = "torch"
    _DTYPES = ("bf16", "fp16", "fp32")

    def __init__(self, dtype: str = "bf16", device: str = "cuda", torch_module: Any = None) -> None:
        if dtype not in self._DTYPES:
            raise ValueError(f"dtype must be one of {list(self._DTYPES)} for the torch backend, got {dtype!r}")
        if torch_module is None:
            try:
                import torch as torch_module  # type: ignore[no-redef]
            except ImportError:
                raise RuntimeError("the torch backend needs PyTorch: pip install torch") from None
        self.torch = torch_module
        if device == "cuda" and not self.torch.cuda.is_available():
            raise RuntimeError("the torch backend found no CUDA device (torch.cuda.is_available() is False)")
        self.dtype, self.device = dtype, device
        self._t = {"bf16": self.torch.bfloat16, "fp16": self.torch.float16, "fp32": self.torch.float32}[dtype]

    def _rand(self, *shape: int) -> Any:
        return self.torch.randn(*shape, device=self.device, dtype=self._t)

    def matmul(self, B: int, D: int, F: int) -> Callable[[], object]:
        x, w = self._rand(B, D), self._rand(D, F)
        return lambda: self.torch.matmul(x, w)

    def dot(self, N: int) -> Callable[[], object]:
        x, y = self._rand(N), self._rand(N)
        return lambda: self.torch.dot(x, y)

    def copy(self, n: int) -> Callable[[], object]:
        src, dst = self._rand(n), self._rand(n)
        return lambda: dst.copy_(src)

    def triad(self, n: int) -> Callable[[], object]:
        a, b, c = self._rand(n), self._rand(n), self._rand(n)
        return lambda: self.torch.add(b, c, alpha=3.0, out=a)

    def sync(self) -> None:
        """Wait for every queued kernel, so the clock stops after the work, not the launch."""
        if self.device != "cpu":
            self.torch.cuda.synchronize()

    def info(self) -> dict[str, Any]:
        t = self.torch
        info: dict[str, Any] = {"torch": t.__version__, "cuda": getattr(t.version, "cuda", None)}
        if self.device != "cpu":
            info["device"] = t.cuda.get_device_name()
            info["device_count"] = t.cuda.device_count()
        return info


class JaxBackend(TorchBackend):
    """An accelerator through JAX (optional); ``sync`` blocks on the last result."""

    name = "jax"

    def __init__(self, dtype: str = "bf16", jax_module: Any = None) -> None:
        if dtype not in self._DTYPES:
            raise ValueError(f"dtype must be one of {list(self._DTYPES)} for the jax backend, got {dtype!r}")
        if jax_module is None:
            try:
                import jax as jax_module  # type: ignore[no-redef]
            except ImportError:
                raise RuntimeError("the jax backend needs JAX: pip install jax") from None
        self.jax, self.dtype, self._last = jax_module, dtype, None
        self._t = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[dtype]

    def _rand(self, *shape: int) -> Any:
        return self.jax.numpy.ones(shape, dtype=self._t)

    def _keep(self, fn: Callable[..., Any], *args: Any) -> Callable[[], object]:
        jitted = self.jax.jit(fn)

        def run() -> object:
            self._last = jitted(*args)
            return self._last

        return run

    def matmul(self, B: int, D: int, F: int) -> Callable[[], object]:
        return self._keep(self.jax.numpy.matmul, self._rand(B, D), self._rand(D, F))

    def dot(self, N: int) -> Callable[[], object]:
        return self._keep(self.jax.numpy.dot, self._rand(N), self._rand(N))

    def copy(self, n: int) -> Callable[[], object]:
        return self._keep(lambda x: x + 0, self._rand(n))  # a fresh output: one read, one write

    def triad(self, n: int) -> Callable[[], object]:
        return self._keep(lambda b, c: b + 3 * c, self._rand(n), self._rand(n))

    def sync(self) -> None:
        if self._last is not None:
            self._last.block_until_ready()

    def info(self) -> dict[str, Any]:
        dev = self.jax.devices()[0]
        return {"jax": self.jax.__version__, "device": getattr(dev, "device_kind", str(dev))}


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
    if name == "numpy":
        return NumpyBackend(dtype or "fp32")
    if name == "torch":
        return TorchBackend(dtype or "bf16")
    if name == "jax":
        return JaxBackend(dtype or "bf16")
    raise ValueError(f"backend must be 'numpy', 'torch' or 'jax', got {name!r}")


# --------------------------------------------------------------------------- results


@dataclass
class Point:
    """One measured operation: what it was, its FLOPs and bytes, and how long it took.

    Examples
    --------
    >>> p = Point("matmul", "fp32", {"B": 1, "D": 2, "F": 2}, flops=8, bytes=28,
    ...           median_s=1e-6, min_s=1e-6, max_s=2e-6, repeats=3, warmup=1)
    >>> p.flops_per_s, round(p.intensity, 3)
    (8000000.0, 0.286)
    """

    kind: str
    dtype: str
    sizes: dict[str, int]
    flops: float
    bytes: float
    median_s: float
    min_s: float
    max_s: float
    repeats: int
    warmup: int

    @property
    def intensity(self) -> float:
        """FLOPs per byte, counted the way :mod:`rooflinelib.matmul` counts them."""
        return self.flops / self.bytes

    @property
    def flops_per_s(self) -> float:
        """FLOPs/s at the median time."""
        return self.flops / self.median_s

    @property
    def bytes_per_s(self) -> float:
        """Bytes/s at the median time."""
        return self.bytes / self.median_s


@dataclass
class MachineMeasurement:
    """Everything :func:`measure_machine` found, as plain data that round-trips through JSON."""

    machine: dict[str, Any]
    peak: dict[str, Point] = field(default_factory=dict)
    stream: dict[str, Point] = field(default_factory=dict)
    sweep: list[Point] = field(default_factory=list)
    dot: list[Point] = field(default_factory=list)
    sweep_D: int = 0
    budget_s: float | None = None
    elapsed_s: float = 0.0
    truncated: bool = False
    provenance: dict[str, Any] = field(default_factory=dict)

    def peak_flops(self, dtype: str | None = None) -> float:
        """Measured peak FLOPs/s for ``dtype`` (default: the sweep's dtype).

        The best median rate of any matmul in ``dtype`` in this run: the square
        peak run, or a sweep point if one of those went faster.
        """
        dtype = dtype or (self.sweep[0].dtype if self.sweep else next(iter(self.peak)))
        rates = [p.flops_per_s for p in [*self.peak.values(), *self.sweep] if p.dtype == dtype]
        if not rates:
            raise KeyError(f"no matmul measured in dtype {dtype!r}; measured: {', '.join(map(repr, self.peak))}")
        return max(rates)

    def bandwidth(self, kind: str = "copy") -> float:
        """Measured memory bandwidth in bytes/s (median) of ``"copy"`` or ``"triad"``."""
        if kind not in self.stream:
            raise KeyError(f"no {kind!r} bandwidth measured; measured: {', '.join(map(repr, self.stream))}")
        return self.stream[kind].bytes_per_s

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MachineMeasurement":
        d = dict(d)
        d["peak"] = {k: Point(**v) for k, v in d.get("peak", {}).items()}
        d["stream"] = {k: Point(**v) for k, v in d.get("stream", {}).items()}
        d["sweep"] = [Point(**v) for v in d.get("sweep", [])]
        d["dot"] = [Point(**v) for v in d.get("dot", [])]
        return cls(**d)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the measurement as JSON and return the path."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        return path


def load_measurement(path: str | os.PathLike[str]) -> MachineMeasurement:
    """Read a measurement written by :meth:`MachineMeasurement.save`."""
    return MachineMeasurement.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def reference_measurements() -> dict[str, MachineMeasurement]:
    """Reference measurements bundled with the package (``data/measurements/*.json``), by file stem.

    Empty until one is added; see ``benchmarks/reference_gpu.py``.
    """
    folder = resources.files("rooflinelib").joinpath("data/measurements")
    if not folder.is_dir():
        return {}
    out = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            out[entry.name[:-5]] = MachineMeasurement.from_dict(json.loads(entry.read_text(encoding="utf-8")))
    return out


# --------------------------------------------------------------------------- counting


def dot_flops(N: int) -> float:
    """FLOPs of a length-``N`` dot product: ``N`` multiplies and ``N - 1`` adds.

    Examples
    --------
    >>> dot_flops(1000)
    1999.0
    """
    return float(2 * as_size("N", N) - 1)


def dot_bytes(N: int, dtype: str = "fp32") -> float:
    """Bytes of a dot product: two length-``N`` vectors in, one scalar out.

    Examples
    --------
    >>> dot_bytes(1000)           # 4 * 2000 + 4
    8004.0
    """
    return float(_mm.dtype_bytes(dtype) * (2 * as_size("N", N) + 1))


def _point(kind: str, dtype: str, sizes: dict[str, int], flops: float, nbytes: float, t: Timing) -> Point:
    return Point(kind, dtype, sizes, float(flops), float(nbytes), t.median, t.min, t.max, t.repeats, t.warmup)


# --------------------------------------------------------------------------- measurements


def measure_matmul(
    backend: Backend, B: int, D: int, F: int, *, warmup: int = 1, repeats: int = 5, clock: Clock = time.perf_counter
) -> Point:
    """Time ``[B, D] @ [D, F]`` on ``backend``; FLOPs ``2BDF`` and bytes as :func:`matmul_bytes` counts them.

    Examples
    --------
    >>> p = measure_matmul(NumpyBackend("fp32"), 8, 16, 16, repeats=3)
    >>> p.kind, p.sizes, p.repeats, p.bytes
    ('matmul', {'B': 8, 'D': 16, 'F': 16}, 3, 2048.0)
    """
    t = time_it(backend.matmul(B, D, F), warmup=warmup, repeats=repeats, sync=backend.sync, clock=clock)
    flops = float(_mm.matmul_flops(B, D, F))
    nbytes = float(_mm.matmul_bytes(B, D, F, x_dtype=backend.dtype))
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
    >>> measure_stream(NumpyBackend("fp64"), "copy", 1000, repeats=2).bytes
    16000.0
    """
    if kind not in ("copy", "triad"):
        raise ValueError(f"kind must be 'copy' or 'triad', got {kind!r}")
    fn = backend.copy(n) if kind == "copy" else backend.triad(n)
    t = time_it(fn, warmup=warmup, repeats=repeats, sync=backend.sync, clock=clock)
    arrays, flops = (2, 0) if kind == "copy" else (3, 2 * n)
    return _point(kind, backend.dtype, {"n": n}, flops, arrays * n * _mm.dtype_bytes(backend.dtype), t)


class _Budget:
    """A deadline shared by the steps of a measurement; ``None`` means no limit."""

    def __init__(self, budget_s: float | None, clock: Clock = time.perf_counter) -> None:
        if budget_s is not None and not (isinstance(budget_s, (int, float)) and budget_s > 0):
            raise ValueError(f"budget_s must be a positive number of seconds (or None for no limit), got {budget_s!r}")
        self.clock, self.start, self.budget_s = clock, clock(), budget_s

    def left(self) -> float:
        return math.inf if self.budget_s is None else self.budget_s - (self.clock() - self.start)


def _progress(items: Sequence[Any], desc: str, predicted_s: float, progress: bool) -> Iterable[Any]:
    """A tqdm bar over ``items`` when asked for and the work is predicted to take over a second."""
    if not progress or predicted_s < 1.0:
        return items
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return items
    return tqdm(items, desc=desc, leave=False)


def _sweep(
    measure: Callable[[Any, int, int], Point],
    sizes: Sequence[int],
    desc: str,
    budget: _Budget,
    repeats: int,
    progress: bool,
) -> tuple[list[Point], bool]:
    """Measure each size, smallest first, keeping within ``budget``; returns the points and whether it stopped early.

    The smallest size is first run once to predict the rest: each size is
    predicted from the one before it, its time scaled in proportion to the
    size. That over-predicts where fixed costs dominate, so the budget errs on
    the safe side.
    """
    sizes = sorted(sizes)
    probe = measure(sizes[0], 0, 1)
    last_t, last_s = probe.median_s, sizes[0]
    predicted = sum(last_t * s / last_s * (repeats + 1) for s in sizes)
    points: list[Point] = []
    for s in _progress(sizes, desc, predicted, progress):
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
    """Measure ``[B, D] @ [D, D]`` for each ``B``; returns ``(points, truncated)``.

    Stops before a size predicted to overrun ``budget_s`` (at least one size is
    always measured) and says so with ``truncated=True``.

    Examples
    --------
    >>> pts, cut = sweep_matmul(NumpyBackend("fp32"), 32, [1, 4, 16], repeats=2, progress=False)
    >>> [p.sizes["B"] for p in pts], cut
    ([1, 4, 16], False)
    """
    budget = _Budget(budget_s, clock)
    return _sweep(lambda B, w, r: measure_matmul(backend, B, D, D, warmup=w, repeats=r, clock=clock),
                  batch_sizes, "matmul sweep", budget, repeats, progress)


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
    >>> pts, _ = sweep_dot(NumpyBackend("fp32"), [100, 1000], repeats=2, progress=False)
    >>> round(pts[1].intensity, 3)    # (2N - 1) / (4 (2N + 1))
    0.25
    """
    budget = _Budget(budget_s, clock)

    def one(N: int, w: int, r: int) -> Point:
        t = time_it(backend.dot(N), warmup=w, repeats=r, sync=backend.sync, clock=clock)
        return _point("dot", backend.dtype, {"N": N}, dot_flops(N), dot_bytes(N, backend.dtype), t)

    return _sweep(one, lengths, "dot products", budget, repeats, progress)


#: Sizes for a quick run (a few seconds on a laptop) and a full one (a minute or so).
PRESETS: dict[str, dict[str, Any]] = {
    "quick": {"peak_n": 1024, "stream_mib": 128, "D": 4096, "batch_sizes": [1, 2, 4, 8, 16, 32, 64, 128, 256],
              "dot_lengths": [2**12, 2**16, 2**20, 2**24], "repeats": 3},
    "full": {"peak_n": 4096, "stream_mib": 512, "D": 8192,
             "batch_sizes": [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024],
             "dot_lengths": [2**10, 2**12, 2**14, 2**16, 2**18, 2**20, 2**22, 2**24, 2**26], "repeats": 7},
}


def machine_info(backend: Backend | None = None) -> dict[str, Any]:
    """Where and how a measurement was taken: platform, CPU count, numpy and BLAS, date (UTC)."""
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "blas_threads": _blas_threads(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    if backend is not None:
        info["backend"] = backend.name
        info.update(backend.info())
    return info


def measure_machine(
    backend: str | Backend = "numpy",
    *,
    preset: str = "quick",
    budget_s: float | None = 10.0,
    peak_dtypes: Sequence[str] | None = None,
    progress: bool = True,
    **overrides: Any,
) -> MachineMeasurement:
    """Peak matmul FLOPs/s, copy and triad bandwidth, a matmul sweep over ``B`` and dot products.

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
    ...                     batch_sizes=[1, 8], dot_lengths=[1000])
    >>> sorted(m.peak), sorted(m.stream), len(m.sweep) <= 2
    (['fp32', 'fp64'], ['copy', 'triad'], True)
    """
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")
    unknown = set(overrides) - set(PRESETS[preset])
    if unknown:
        raise ValueError(f"unknown size setting(s) {sorted(unknown)}; use any of {sorted(PRESETS[preset])}")
    cfg = {**PRESETS[preset], **overrides}
    budget = _Budget(budget_s)
    be = get_backend(backend) if isinstance(backend, str) else backend
    if peak_dtypes is None:
        peak_dtypes = ["fp32", "fp64"] if be.name == "numpy" else [be.dtype]
    reps, n = cfg["repeats"], cfg["peak_n"]
    result = MachineMeasurement(machine=machine_info(be), sweep_D=cfg["D"], budget_s=budget_s)
    for dtype in peak_dtypes:
        b = be if dtype == be.dtype else type(be)(dtype)  # type: ignore[call-arg]
        result.peak[dtype] = measure_matmul(b, n, n, n, repeats=reps)
    n_elem = int(cfg["stream_mib"] * 2**20 / _mm.dtype_bytes(be.dtype))
    for kind in ("copy", "triad"):
        result.stream[kind] = measure_stream(be, kind, n_elem, repeats=reps)
    # what is left of the budget goes 3:1 to the matmul sweep and the dot products
    sweep_budget = None if budget_s is None else max(budget.left(), 0.1) * 0.75
    result.sweep, cut1 = sweep_matmul(be, cfg["D"], cfg["batch_sizes"], repeats=reps, budget_s=sweep_budget,
                                      progress=progress)
    dot_budget = None if budget_s is None else max(budget.left(), 0.05)
    result.dot, cut2 = sweep_dot(be, cfg["dot_lengths"], repeats=reps, budget_s=dot_budget, progress=progress)
    result.truncated = cut1 or cut2
    result.elapsed_s = budget.clock() - budget.start
    result.provenance = {"preset": preset, "settings": cfg}
    return result


def knee_batch_size(B: Sequence[float], flops_per_s: Sequence[float], fraction: float = 0.8) -> float:
    """Batch size where a sweep of rates first reaches ``fraction`` of its best rate.

    ``B`` and ``flops_per_s`` are the sweep's batch sizes and the rates reached
    there, in any order. Between two sizes the crossing is interpolated on
    log-log axes. If the smallest size already reaches the target, the knee is
    at or below it and that size is returned; ``nan`` if fewer than three
    points (too few to tell a bend from noise).

    Examples
    --------
    >>> round(knee_batch_size([1, 4, 16, 64], [10, 40, 100, 100]), 1)   # between B = 4 (40%) and 16
    11.4
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    if len(B) != len(flops_per_s):
        raise ValueError(f"B and flops_per_s must be the same length, got {len(B)} and {len(flops_per_s)}")
    if len(B) < 3:
        return math.nan
    b = np.asarray(as_number("B", B), float)
    f = np.asarray(as_number("flops_per_s", flops_per_s, "FLOPs/s"), float)
    order = np.argsort(b)
    b, f = b[order], f[order]
    target = fraction * f.max()
    i = int(np.argmax(f >= target))
    if i == 0:
        return float(b[0])
    lb, lf = np.log(b[i - 1 : i + 1]), np.log(f[i - 1 : i + 1])
    return float(np.exp(lb[0] + (np.log(target) - lf[0]) * (lb[1] - lb[0]) / (lf[1] - lf[0])))


def measured_knee(points: Sequence[Point], fraction: float = 0.8) -> float:
    """Batch size where a measured sweep first reaches ``fraction`` of its plateau (its best FLOPs/s).

    :func:`knee_batch_size` on the points' ``B`` and median rates.

    Examples
    --------
    >>> pts = [Point("matmul", "fp32", {"B": b, "D": 8, "F": 8}, 1.0, 1.0, 1 / f, 1 / f, 1 / f, 1, 1)
    ...        for b, f in [(1, 10), (4, 40), (16, 100), (64, 100)]]
    >>> round(measured_knee(pts, 0.8), 1)   # between B = 4 (40%) and B = 16 (100%)
    11.4
    """
    return knee_batch_size([p.sizes["B"] for p in points], [p.flops_per_s for p in points], fraction)


# --------------------------------------------------------------------------- BLAS details


def _blas_name() -> str:
    try:
        cfg = np.show_config(mode="dicts")  # numpy >= 1.25
        blas = cfg["Build Dependencies"]["blas"]
        return f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()
    except Exception:  # pragma: no cover - older numpy or an odd build
        return "unknown"


def _blas_threads() -> int | str:
    """BLAS thread count from threadpoolctl if installed, else the usual environment variables, else 'unknown'."""
    try:
        from threadpoolctl import threadpool_info

        counts = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
        if counts:
            return int(counts[0])
    except ImportError:
        pass
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return "unknown"
