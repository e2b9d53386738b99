"""Results as plain data: :class:`Point`, :class:`MachineMeasurement`, their JSON, and the measured knee.

The JSON file is :meth:`MachineMeasurement.to_dict` written out, with a
``"format"`` number. Format 2 added the cache staircase (``"staircase"``), and
the caches and CPU figures in ``"machine"``; a format-1 file (or one written
before the number existed) loads with an empty staircase. A file from a newer
format is refused with a message saying so, rather than misread.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Any, NamedTuple

from rooflinelib.roofline import SweepShape, knee_batch_size

__all__ = [
    "CACHE_MARGIN",
    "FORMAT",
    "KINDS",
    "KneeSweep",
    "MachineMeasurement",
    "Point",
    "knee_sweep",
    "load_measurement",
    "measured_knee",
    "measured_on",
    "reference_measurements",
]

#: Version of the JSON layout written by :meth:`MachineMeasurement.save` (2: with the cache staircase).
FORMAT = 2


@dataclass
class Point:
    """One measured operation: what it was, its FLOPs and bytes, and how long it took.

    Examples
    --------
    >>> p = Point("matmul", "fp32", {"B": 1, "D": 2, "F": 2}, flops=8, bytes=28,
    ...           median_s=2e-6, min_s=1e-6, max_s=5e-6, repeats=3, warmup=1)
    >>> p.flops_per_s, round(p.intensity, 3)   # the fastest run's rate
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
        """FLOPs/s of the fastest timed run (``min_s``): see :mod:`rooflinelib.measure` for why not the median."""
        return self.flops / self.min_s

    @property
    def bytes_per_s(self) -> float:
        """Bytes/s of the fastest timed run (``min_s``)."""
        return self.bytes / self.min_s

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "point") -> Point:
        """A point from its dict; a missing or unknown key, or a value that is not a number, is named in the error.

        Examples
        --------
        >>> Point.from_dict({"kind": "dot", "dtype": "fp32", "sizes": {"N": 10}, "flops": 19, "bytes": 84,
        ...                  "median_s": "1e-6", "min_s": 1e-6, "max_s": 1e-6, "repeats": 3, "warmup": 1})
        Traceback (most recent call last):
        ...
        ValueError: point: median_s must be a number >= 0, got '1e-6'
        """
        _check_keys(d, {f.name for f in fields(cls)}, set(), where)
        for key in ("flops", "bytes", "median_s", "min_s", "max_s", "repeats", "warmup"):
            value = d[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ValueError(f"{where}: {key} must be a number >= 0, got {value!r}")
        sizes = d["sizes"]
        if not isinstance(sizes, Mapping) or not all(isinstance(v, int) and v >= 1 for v in sizes.values()):
            raise ValueError(f"{where}: sizes must map names to whole sizes >= 1, got {sizes!r}")
        return cls(**d)


def _check_keys(d: Mapping[str, Any], known: set[str], optional: set[str], where: str) -> None:
    if not isinstance(d, Mapping):
        # a malformed file is a bad value, reported like every other one in it
        raise ValueError(f"{where} must be a JSON object, got {type(d).__name__}")  # noqa: TRY004
    missing, unknown = known - optional - set(d), set(d) - known
    if missing:
        raise ValueError(f"{where} lacks {', '.join(sorted(missing))}")
    if unknown:
        raise ValueError(f"{where} has unknown key(s) {', '.join(sorted(unknown))}")


@dataclass
class MachineMeasurement:
    """Everything :func:`~rooflinelib.measure.measure_machine` found, as plain data that round-trips through JSON.

    Examples
    --------
    >>> p = Point("copy", "fp32", {"n": 1000}, 0, 8000, 1e-6, 1e-6, 1e-6, 3, 1)
    >>> m = MachineMeasurement(machine={"device": "cpu"}, stream={"copy": p})
    >>> m.bandwidth("copy")
    8000000000.0
    >>> MachineMeasurement.from_dict(m.to_dict()) == m
    True
    """

    machine: dict[str, Any]
    peak: dict[str, Point] = field(default_factory=dict)
    stream: dict[str, Point] = field(default_factory=dict)
    sweep: list[Point] = field(default_factory=list)
    dot: list[Point] = field(default_factory=list)
    #: Bandwidth against working set on one core (:func:`~rooflinelib.measure.sweep_working_set`), smallest first.
    staircase: list[Point] = field(default_factory=list)
    sweep_D: int = 0
    budget_s: float | None = None
    elapsed_s: float = 0.0
    truncated: bool = False
    provenance: dict[str, Any] = field(default_factory=dict)
    format: int = FORMAT

    def peak_flops(self, dtype: str | None = None) -> float:
        """Measured peak FLOPs/s for ``dtype`` (default: the sweep's dtype): :meth:`peak_point`'s rate."""
        return self.peak_point(dtype).flops_per_s

    def peak_point(self, dtype: str | None = None) -> Point:
        """The matmul whose rate is the peak for ``dtype`` (default: the sweep's dtype).

        The fastest matmul in ``dtype`` in this run: the square peak run, or a
        sweep point if one of those went faster.
        """
        if dtype is None:
            if not (self.sweep or self.peak):
                raise KeyError("no matmul measured")
            dtype = self.sweep[0].dtype if self.sweep else next(iter(self.peak))
        runs = [p for p in [*self.peak.values(), *self.sweep] if p.dtype == dtype]
        if not runs:
            raise KeyError(f"no matmul measured in dtype {dtype!r}; measured: {', '.join(map(repr, self.peak))}")
        return max(runs, key=lambda p: p.flops_per_s)

    def bandwidth(self, kind: str = "copy") -> float:
        """Measured memory bandwidth in bytes/s (fastest run) of ``"copy"`` or ``"triad"``."""
        if kind not in self.stream:
            raise KeyError(f"no {kind!r} bandwidth measured; measured: {', '.join(map(repr, self.stream))}")
        return self.stream[kind].bytes_per_s

    def to_dict(self) -> dict[str, Any]:
        """Plain dicts, lists and numbers, ready for :func:`json.dumps`."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "measurement") -> MachineMeasurement:
        """Rebuild a measurement from :meth:`to_dict` output (any format up to :data:`FORMAT`)."""
        known = {f.name for f in fields(cls)}
        _check_keys(d, known, known - {"machine"}, where)
        if not isinstance(d["machine"], Mapping):
            raise ValueError(f"{where}: machine must be a JSON object, got {d['machine']!r}")  # noqa: TRY004
        version = d.get("format", 1)  # files written before the format number are format 1
        if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= FORMAT:
            raise ValueError(
                f"{where}: format {version!r} is not one this rooflinelib reads (1 to {FORMAT}); "
                "a newer rooflinelib wrote it"
            )
        out = dict(d)
        out["peak"] = {k: Point.from_dict(v, f"{where}: peak {k!r}") for k, v in d.get("peak", {}).items()}
        out["stream"] = {k: Point.from_dict(v, f"{where}: stream {k!r}") for k, v in d.get("stream", {}).items()}
        out["sweep"] = [Point.from_dict(v, f"{where}: sweep point {i}") for i, v in enumerate(d.get("sweep", []))]
        out["dot"] = [Point.from_dict(v, f"{where}: dot point {i}") for i, v in enumerate(d.get("dot", []))]
        out["staircase"] = [
            Point.from_dict(v, f"{where}: staircase point {i}") for i, v in enumerate(d.get("staircase", []))
        ]
        out["format"] = FORMAT
        return cls(**out)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the measurement as JSON and return the path."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        return path


def _read(text: str, where: str) -> MachineMeasurement:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not valid JSON ({err})") from None
    return MachineMeasurement.from_dict(raw, where)


def load_measurement(path: str | os.PathLike[str]) -> MachineMeasurement:
    """Read a measurement written by :meth:`MachineMeasurement.save`."""
    path = Path(path)
    return _read(path.read_text(encoding="utf-8"), str(path))


#: What :func:`reference_measurements` can ask for: measurements of a CPU, or of an accelerator (a GPU, a TPU).
KINDS = ("cpu", "accelerator")


def measured_on(m: MachineMeasurement) -> str:
    """``"cpu"`` or ``"accelerator"``: what ``m`` was measured on, from the backend and device in ``m.machine``.

    The numpy backend always runs on the CPU; torch and jax on whatever device
    they recorded (``torch_device`` ``"cpu"``, or a jax device named ``cpu``, is
    the CPU). A file without a backend is numpy's, the only backend there was.

    Examples
    --------
    >>> measured_on(MachineMeasurement(machine={"backend": "numpy", "device": "x86_64"}))
    'cpu'
    >>> measured_on(MachineMeasurement(machine={"backend": "torch", "torch_device": "cuda"}))
    'accelerator'
    """
    backend = m.machine.get("backend", "numpy")
    if backend == "numpy":
        return "cpu"
    device = str(m.machine.get("torch_device") or m.machine.get("jax_device") or m.machine.get("device") or "")
    return "cpu" if device.lower().startswith(("cpu", "tfrt_cpu")) else "accelerator"


def reference_measurements(
    folder: str | os.PathLike[str] | Traversable | None = None, *, kind: str | None = None
) -> dict[str, MachineMeasurement]:
    """Measurements in ``folder`` (default: the package's ``data/measurements``), by file stem.

    ``kind``: ``"cpu"`` or ``"accelerator"`` keeps only those measured on one
    (:func:`measured_on`); ``None`` keeps all. The package holds a CPU reference
    (``cpu-reference``, made by ``benchmarks/reference_cpu.py``) and a run of the
    same CPU under load (``cpu-contended``); ``benchmarks/reference_gpu.py`` makes a
    GPU one.

    Examples
    --------
    >>> sorted(reference_measurements(kind="cpu"))
    ['cpu-contended', 'cpu-reference']
    >>> reference_measurements(kind="gpu")
    Traceback (most recent call last):
    ...
    ValueError: kind must be 'cpu', 'accelerator' or None, got 'gpu'
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be 'cpu', 'accelerator' or None, got {kind!r}")
    where: Traversable | Path
    if folder is None:
        where = resources.files("rooflinelib").joinpath("data/measurements")
    else:
        where = folder if isinstance(folder, Traversable) else Path(folder)
    if not where.is_dir():
        return {}
    entries: Iterable[Traversable | Path] = sorted(where.iterdir(), key=lambda e: e.name)
    found = {e.name[:-5]: _read(e.read_text(encoding="utf-8"), e.name) for e in entries if e.name.endswith(".json")}
    return {name: m for name, m in found.items() if kind is None or measured_on(m) == kind}


def measured_knee(points: Sequence[Point], fraction: float = 0.8) -> float:
    """Batch size where a measured sweep first reaches ``fraction`` of its plateau (its best FLOPs/s).

    :func:`rooflinelib.knee_batch_size` on the points' ``B`` and rates (their fastest runs).

    Examples
    --------
    >>> pts = [Point("matmul", "fp32", {"B": b, "D": 8, "F": 8}, 1.0, 1.0, 1 / f, 1 / f, 1 / f, 1, 1)
    ...        for b, f in [(1, 10), (4, 40), (16, 100), (64, 100)]]
    >>> round(measured_knee(pts, 0.8), 1)   # between B = 4 (40%) and B = 16 (100%)
    11.4
    """
    return knee_batch_size([p.sizes["B"] for p in points], [p.flops_per_s for p in points], fraction)


class KneeSweep(NamedTuple):
    """The points of a measured matmul sweep a knee may be read from, and those left out (:func:`knee_sweep`).

    ``points``: the sweep without the points below, smallest ``B`` first.
    ``cache_fed``: points that ran more than 5% above the main-memory roof
    (bandwidth × intensity) yet below the sweep's best rate: their bytes came
    partly from a cache, which the roof does not bound. ``matvec``: the ``B = 1``
    point when it ran faster than ``B = 2`` by more than the shape test's
    tolerance: at ``B = 1`` BLAS takes its matrix–vector routine, from ``B = 2``
    its matrix–matrix one, which first copies the weights into its own layout
    (packing). ``shape``: :func:`rooflinelib.sweep_shape` of ``points``.
    """

    points: list[Point]
    cache_fed: list[Point]
    matvec: Point | None
    shape: SweepShape


#: How far above the main-memory roof a point must run to count as fed from a cache (5%: timing noise stays below).
CACHE_MARGIN = 1.05


def knee_sweep(m: MachineMeasurement, dtype: str = "fp32", *, tolerance: float = 0.15) -> KneeSweep:
    """The sweep a knee is read from: ``m``'s matmul sweep in ``dtype`` less its cache-fed and matrix–vector points.

    A knee says where a sweep fed from main memory turns compute-bound. Two
    kinds of point are no evidence of that, and are left out (and named) before
    :func:`rooflinelib.sweep_shape` tests the rest: points fed from a cache (above
    the main-memory roof, below the best rate), and a ``B = 1`` point faster
    than ``B = 2``, whose matrix–vector routine skips the matrix–matrix
    routine's packing. The roof is ``m``'s measured peak and copy bandwidth.

    Examples
    --------
    >>> def mm(B, gflops):
    ...     s = 2 * B * 2048**2 / (gflops * 1e9)
    ...     return Point("matmul", "fp32", {"B": B, "D": 2048, "F": 2048}, 2 * B * 2048**2,
    ...                  4 * (2 * B * 2048 + 2048**2), s, s, s, 5, 1)
    >>> rates = {1: 84, 2: 28, 4: 54, 8: 145, 16: 181, 32: 213, 64: 235, 128: 248}  # GFLOP/s
    >>> copy = Point("copy", "fp32", {"n": 10**6}, 0, 40e6, 1e-3, 1e-3, 1e-3, 5, 1)   # 40 GB/s
    >>> m = MachineMeasurement(machine={}, stream={"copy": copy}, sweep=[mm(b, r) for b, r in rates.items()],
    ...                        sweep_D=2048)
    >>> k = knee_sweep(m)
    >>> [p.sizes["B"] for p in k.cache_fed], k.matvec, k.shape.steady, round(measured_knee(k.points), 1)
    ([1], None, True, 23.7)
    """
    from rooflinelib.roofline import sweep_shape

    pts = sorted((p for p in m.sweep if p.dtype == dtype), key=lambda p: p.sizes["B"])
    if not pts:
        return KneeSweep([], [], None, SweepShape(False, "few", None, None, None, None))
    peak, bw = m.peak_flops(dtype), m.bandwidth("copy")
    best = max(p.flops_per_s for p in pts)
    # above the sloped roof, below the best rate: a point the roof does not bound (its bytes came from a cache)
    cache_fed = [p for p in pts if bw * p.intensity < peak and CACHE_MARGIN * bw * p.intensity < p.flops_per_s < best]
    rest = [p for p in pts if p not in cache_fed]
    matvec = None
    faster_alone = len(rest) >= 2 and rest[1].flops_per_s < (1 - tolerance) * rest[0].flops_per_s
    if faster_alone and (rest[0].sizes["B"], rest[1].sizes["B"]) == (1, 2):
        matvec, rest = rest[0], rest[1:]
    shape = sweep_shape([p.sizes["B"] for p in rest], [p.flops_per_s for p in rest], tolerance=tolerance)
    return KneeSweep(rest, cache_fed, matvec, shape)
