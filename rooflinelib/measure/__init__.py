"""Measure the machine you are on: peak matmul FLOPs/s, memory bandwidth, a batch sweep.

Timing rules, applied everywhere here (:mod:`~rooflinelib.measure.timing`):
warm-up runs are done and thrown away, then the operation is repeated; every
repeat's time is kept (median, fastest and slowest), and a rate is that of the
**fastest** run, as STREAM reports its best rate and Python's ``timeit`` advises:
other work on the machine only ever adds time, so the fastest run is the nearest
to what the hardware can do, and a roof, a best case, is compared with best cases.
A backend's ``sync()`` (e.g.
``torch.cuda.synchronize``) runs before every clock stop, so asynchronous
devices are timed for the work, not for the launch. Every result records its
sizes, dtype, repeats and the thread counts.

The modules, one job each:

- :mod:`~rooflinelib.measure.timing`: the timing harness;
- :mod:`~rooflinelib.measure.backend`: the :class:`Backend` protocol and
  :func:`get_backend`; :class:`NumpyBackend` (the CPU's BLAS, always there),
  :class:`TorchBackend` and :class:`JaxBackend` (optional; imported only when built);
- :mod:`~rooflinelib.measure.results`: :class:`Point` and :class:`MachineMeasurement`,
  plain data that round-trips through JSON, :func:`measured_knee` and :func:`knee_sweep`;
- :mod:`~rooflinelib.measure.sweep`: one operation timed into a :class:`Point`, sweeps within a budget;
- :mod:`~rooflinelib.measure.system`: platform, caches, BLAS and thread pools, for the record;
- :mod:`~rooflinelib.measure.cpu`: the CPU's own figures (cores, clock, SIMD width, FMA) and the peak they predict;
- :mod:`~rooflinelib.measure.health`: :func:`measurement_health`, the signs that other work slowed a measurement;
- :mod:`~rooflinelib.measure.hierarchy`: memory levels from the cache staircase, and points placed on them;
- :mod:`~rooflinelib.measure.machine`: the presets and :func:`measure_machine`.

:func:`time_cuda` times a function on a GPU with CUDA events, as a cross-check
of the host-clock timings.

FLOPs and bytes are counted by :mod:`rooflinelib.matmul`; the knee of a sweep
is :func:`rooflinelib.knee_batch_size`.
"""

from rooflinelib.measure.backend import BACKENDS, Backend, get_backend
from rooflinelib.measure.cpu import CpuFigures, read_cpu_figures
from rooflinelib.measure.health import MAX_SPREAD, MEDIAN_SPREAD, Health, Problem, measurement_health
from rooflinelib.measure.hierarchy import Level, Placement, level_of, memory_levels, place_points, working_set
from rooflinelib.measure.jax_backend import JaxBackend
from rooflinelib.measure.machine import PRESETS, check_settings, measure_machine, staircase_sizes
from rooflinelib.measure.numpy_backend import NumpyBackend
from rooflinelib.measure.results import (
    FORMAT,
    KneeSweep,
    MachineMeasurement,
    Point,
    knee_sweep,
    load_measurement,
    measured_knee,
    measured_on,
    reference_measurements,
)
from rooflinelib.measure.sweep import (
    measure_matmul,
    measure_reread,
    measure_stream,
    sweep_dot,
    sweep_matmul,
    sweep_working_set,
)
from rooflinelib.measure.system import cache_levels, machine_info
from rooflinelib.measure.timing import Timing, time_it
from rooflinelib.measure.torch_backend import TorchBackend, time_cuda

__all__ = [
    "BACKENDS",
    "FORMAT",
    "MAX_SPREAD",
    "MEDIAN_SPREAD",
    "PRESETS",
    "Backend",
    "CpuFigures",
    "Health",
    "JaxBackend",
    "KneeSweep",
    "Level",
    "MachineMeasurement",
    "NumpyBackend",
    "Placement",
    "Point",
    "Problem",
    "Timing",
    "TorchBackend",
    "cache_levels",
    "check_settings",
    "get_backend",
    "knee_sweep",
    "level_of",
    "load_measurement",
    "machine_info",
    "measure_machine",
    "measure_matmul",
    "measure_reread",
    "measure_stream",
    "measured_knee",
    "measured_on",
    "measurement_health",
    "memory_levels",
    "place_points",
    "read_cpu_figures",
    "reference_measurements",
    "staircase_sizes",
    "sweep_dot",
    "sweep_matmul",
    "sweep_working_set",
    "time_cuda",
    "time_it",
    "working_set",
]
