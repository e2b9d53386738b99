"""Measure the machine you are on: peak matmul FLOPs/s, memory bandwidth, a batch sweep.

Timing rules, applied everywhere here (:mod:`~rooflinelib.measure.timing`):
warm-up runs are done and thrown away, then the operation is repeated and the
**median** reported with the min-max spread; a backend's ``sync()`` (e.g.
``torch.cuda.synchronize``) runs before every clock stop, so asynchronous
devices are timed for the work, not for the launch. Every result records its
sizes, dtype, repeats and the thread counts.

The modules, one job each:

- :mod:`~rooflinelib.measure.timing`: the timing harness;
- :mod:`~rooflinelib.measure.backend`: the :class:`Backend` protocol and
  :func:`get_backend`; :class:`NumpyBackend` (the CPU's BLAS, always there),
  :class:`TorchBackend` and :class:`JaxBackend` (optional; imported only when built);
- :mod:`~rooflinelib.measure.results`: :class:`Point` and :class:`MachineMeasurement`,
  plain data that round-trips through JSON, and :func:`measured_knee`;
- :mod:`~rooflinelib.measure.sweep`: one operation timed into a :class:`Point`, sweeps within a budget;
- :mod:`~rooflinelib.measure.system`: platform, BLAS and thread pools, for the record;
- :mod:`~rooflinelib.measure.machine`: the presets and :func:`measure_machine`.

FLOPs and bytes are counted by :mod:`rooflinelib.matmul`; the knee of a sweep
is :func:`rooflinelib.knee_batch_size`.
"""

from rooflinelib.measure.backend import BACKENDS, Backend, get_backend
from rooflinelib.measure.jax_backend import JaxBackend
from rooflinelib.measure.machine import PRESETS, check_settings, measure_machine
from rooflinelib.measure.numpy_backend import NumpyBackend
from rooflinelib.measure.results import (
    FORMAT,
    MachineMeasurement,
    Point,
    load_measurement,
    measured_knee,
    reference_measurements,
)
from rooflinelib.measure.sweep import measure_matmul, measure_stream, sweep_dot, sweep_matmul
from rooflinelib.measure.system import machine_info
from rooflinelib.measure.timing import Timing, time_it
from rooflinelib.measure.torch_backend import TorchBackend

__all__ = [
    "BACKENDS",
    "FORMAT",
    "PRESETS",
    "Backend",
    "JaxBackend",
    "MachineMeasurement",
    "NumpyBackend",
    "Point",
    "Timing",
    "TorchBackend",
    "check_settings",
    "get_backend",
    "load_measurement",
    "machine_info",
    "measure_machine",
    "measure_matmul",
    "measure_stream",
    "measured_knee",
    "reference_measurements",
    "sweep_dot",
    "sweep_matmul",
    "time_it",
]
