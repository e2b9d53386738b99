"""rooflinelib: the numbers behind the Roofline Course.

Spec tables (:mod:`rooflinelib.specs`), roofline formulas
(:mod:`rooflinelib.roofline`), matmul costs (:mod:`rooflinelib.matmul`),
chip-aware estimates (:mod:`rooflinelib.estimate`), measurements of your own
machine (:mod:`rooflinelib.measure`) and published ones of real accelerators
(:mod:`rooflinelib.published`), and plots (:mod:`rooflinelib.plotting`).
Chapters write ``import rooflinelib as rl``.

Examples
--------
>>> import rooflinelib as rl
>>> round(rl.get_accelerator("h100-sxm").critical_intensity("bf16"))
295
"""

from rooflinelib.estimate import MatmulEstimate, chip_critical_batch_size, estimate_matmul
from rooflinelib.explorer import Explorer, explore, plot_explore
from rooflinelib.measure import (
    MachineMeasurement,
    knee_batch_size,
    load_measurement,
    measure_machine,
    measured_knee,
    reference_measurements,
)
from rooflinelib.matmul import (
    DTYPE_BYTES,
    critical_batch_size,
    dtype_bytes,
    matmul_bytes,
    matmul_bytes_loaded,
    matmul_bytes_written,
    matmul_flops,
    matmul_intensity,
    per_example_matmul_bytes,
    per_example_matmul_intensity,
    sharded_matmul_critical_d,
    sharded_matmul_t_comms,
    sharded_matmul_t_math,
    tiled_matmul_bytes,
    tiled_matmul_flops,
    tiled_matmul_intensity,
)
from rooflinelib.plotting import (
    plot_matmul_batch,
    plot_measurement,
    plot_published_roofline,
    plot_published_sweeps,
    plot_roofline,
)
from rooflinelib.published import PublishedMatmul, PublishedMatmuls, get_published_matmuls, published_matmuls
from rooflinelib.roofline import (
    RuntimeBounds,
    arithmetic_intensity,
    attainable_flops,
    bottleneck,
    critical_intensity,
    is_compute_bound,
    runtime_bounds,
    t_comms,
    t_math,
)
from rooflinelib.specs import ACCELERATORS, Accelerator, Link, get_accelerator, load_accelerators

__version__ = "0.1.0"

__all__ = [
    "ACCELERATORS",
    "Accelerator",
    "DTYPE_BYTES",
    "Explorer",
    "Link",
    "MachineMeasurement",
    "MatmulEstimate",
    "PublishedMatmul",
    "PublishedMatmuls",
    "RuntimeBounds",
    "arithmetic_intensity",
    "attainable_flops",
    "bottleneck",
    "chip_critical_batch_size",
    "critical_batch_size",
    "critical_intensity",
    "dtype_bytes",
    "estimate_matmul",
    "explore",
    "get_accelerator",
    "get_published_matmuls",
    "is_compute_bound",
    "knee_batch_size",
    "load_accelerators",
    "load_measurement",
    "matmul_bytes",
    "matmul_bytes_loaded",
    "matmul_bytes_written",
    "matmul_flops",
    "matmul_intensity",
    "measure_machine",
    "measured_knee",
    "per_example_matmul_bytes",
    "per_example_matmul_intensity",
    "published_matmuls",
    "plot_explore",
    "plot_matmul_batch",
    "plot_measurement",
    "plot_published_roofline",
    "plot_published_sweeps",
    "plot_roofline",
    "reference_measurements",
    "runtime_bounds",
    "sharded_matmul_critical_d",
    "sharded_matmul_t_comms",
    "sharded_matmul_t_math",
    "t_comms",
    "t_math",
    "tiled_matmul_bytes",
    "tiled_matmul_flops",
    "tiled_matmul_intensity",
]
