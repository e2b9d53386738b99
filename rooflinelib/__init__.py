"""rooflinelib: the numbers behind the Roofline Course.

Spec tables (:mod:`rooflinelib.specs`), roofline formulas
(:mod:`rooflinelib.roofline`), dtypes and matmul precisions
(:mod:`rooflinelib.precision`), matmul costs (:mod:`rooflinelib.matmul`),
chip-aware estimates (:mod:`rooflinelib.estimate`), language models and
their inference (:mod:`rooflinelib.models`), measurements of your own
machine (:mod:`rooflinelib.measure`) and published ones of real accelerators
(:mod:`rooflinelib.published`), and plots (:mod:`rooflinelib.plotting`).
Chapters write ``import rooflinelib as rl``.

Plotting, measuring and the explorer load on first use (PEP 562), so
``import rooflinelib`` and the ``rooflinelib specs`` command do not pay for
matplotlib.

Examples
--------
>>> import rooflinelib as rl
>>> round(rl.get_accelerator("h100-sxm").critical_intensity("bf16"))
295
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rooflinelib.estimate import MatmulEstimate, chip_critical_batch_size, estimate_matmul
from rooflinelib.matmul import (
    critical_batch_size,
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
from rooflinelib.models import (
    MODELS,
    ForwardEstimate,
    LayerMatmul,
    Model,
    chips_to_fit,
    decode_critical_batch,
    decode_step_time,
    estimate_forward,
    forward_bytes,
    forward_flops,
    get_model,
    kv_cache_bytes_per_token,
    layer_matmuls,
    load_models,
    param_count,
    prefill_time,
    weight_bytes,
)
from rooflinelib.precision import DTYPE_BYTES, Precision, dtype_bytes
from rooflinelib.published import PublishedMatmul, PublishedMatmuls, get_published_matmuls, published_matmuls
from rooflinelib.roofline import (
    RuntimeBounds,
    arithmetic_intensity,
    attainable_flops,
    bottleneck,
    critical_intensity,
    in_core_peak,
    is_compute_bound,
    knee_batch_size,
    runtime_bounds,
    t_comms,
    t_math,
)
from rooflinelib.specs import (
    ACCELERATORS,
    Accelerator,
    Link,
    accelerator_key,
    get_accelerator,
    load_accelerators,
    normalize_name,
)

if TYPE_CHECKING:
    from rooflinelib.explorer import Explorer, explore, plot_explore
    from rooflinelib.measure import (
        MachineMeasurement,
        load_measurement,
        measure_machine,
        measured_knee,
        memory_levels,
        place_points,
        read_cpu_figures,
        reference_measurements,
    )
    from rooflinelib.plotting import (
        plot_bandwidth_staircase,
        plot_decode_time,
        plot_hierarchical_roofline,
        plot_layer_matmuls,
        plot_matmul_batch,
        plot_measured_knee,
        plot_measurement,
        plot_published_roofline,
        plot_published_sweeps,
        plot_roofline,
    )

#: The package's version; the single source that pyproject.toml reads.
__version__ = "0.1.0"

#: Names loaded from their module on first use: name -> module.
_LAZY = {
    "Explorer": "rooflinelib.explorer",
    "explore": "rooflinelib.explorer",
    "plot_explore": "rooflinelib.explorer",
    "MachineMeasurement": "rooflinelib.measure",
    "load_measurement": "rooflinelib.measure",
    "measure_machine": "rooflinelib.measure",
    "measured_knee": "rooflinelib.measure",
    "memory_levels": "rooflinelib.measure",
    "place_points": "rooflinelib.measure",
    "read_cpu_figures": "rooflinelib.measure",
    "reference_measurements": "rooflinelib.measure",
    "plot_bandwidth_staircase": "rooflinelib.plotting",
    "plot_decode_time": "rooflinelib.plotting",
    "plot_hierarchical_roofline": "rooflinelib.plotting",
    "plot_layer_matmuls": "rooflinelib.plotting",
    "plot_matmul_batch": "rooflinelib.plotting",
    "plot_measured_knee": "rooflinelib.plotting",
    "plot_measurement": "rooflinelib.plotting",
    "plot_published_roofline": "rooflinelib.plotting",
    "plot_published_sweeps": "rooflinelib.plotting",
    "plot_roofline": "rooflinelib.plotting",
}


def __getattr__(name: str) -> Any:
    """Load a plotting, measuring or explorer name on first use (PEP 562)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rooflinelib' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "ACCELERATORS",
    "DTYPE_BYTES",
    "MODELS",
    "Accelerator",
    "Explorer",
    "ForwardEstimate",
    "LayerMatmul",
    "Link",
    "MachineMeasurement",
    "MatmulEstimate",
    "Model",
    "Precision",
    "PublishedMatmul",
    "PublishedMatmuls",
    "RuntimeBounds",
    "accelerator_key",
    "arithmetic_intensity",
    "attainable_flops",
    "bottleneck",
    "chip_critical_batch_size",
    "chips_to_fit",
    "critical_batch_size",
    "critical_intensity",
    "decode_critical_batch",
    "decode_step_time",
    "dtype_bytes",
    "estimate_forward",
    "estimate_matmul",
    "explore",
    "forward_bytes",
    "forward_flops",
    "get_accelerator",
    "get_model",
    "get_published_matmuls",
    "in_core_peak",
    "is_compute_bound",
    "knee_batch_size",
    "kv_cache_bytes_per_token",
    "layer_matmuls",
    "load_accelerators",
    "load_measurement",
    "load_models",
    "matmul_bytes",
    "matmul_bytes_loaded",
    "matmul_bytes_written",
    "matmul_flops",
    "matmul_intensity",
    "measure_machine",
    "measured_knee",
    "memory_levels",
    "normalize_name",
    "param_count",
    "per_example_matmul_bytes",
    "per_example_matmul_intensity",
    "place_points",
    "plot_bandwidth_staircase",
    "plot_decode_time",
    "plot_explore",
    "plot_hierarchical_roofline",
    "plot_layer_matmuls",
    "plot_matmul_batch",
    "plot_measured_knee",
    "plot_measurement",
    "plot_published_roofline",
    "plot_published_sweeps",
    "plot_roofline",
    "prefill_time",
    "published_matmuls",
    "read_cpu_figures",
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
    "weight_bytes",
]
