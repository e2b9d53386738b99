"""rooflinelib: the numbers behind the Roofline Course.

Spec tables (:mod:`rooflinelib.specs`), roofline formulas
(:mod:`rooflinelib.roofline`), dtypes and matmul precisions
(:mod:`rooflinelib.precision`), matmul costs (:mod:`rooflinelib.matmul`),
chip-aware estimates (:mod:`rooflinelib.estimate`), language models
(:mod:`rooflinelib.models`) and serving them, KV cache and all
(:mod:`rooflinelib.serving`), measurements of your own
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
from rooflinelib.levels import (
    binding_level,
    head_attention_bytes,
    head_attention_flops,
    level_ceilings,
    level_intensities,
    tiled_matmul_level_bytes,
)
from rooflinelib.matmul import (
    critical_batch_size,
    data_parallel_critical_batch,
    data_parallel_step_times,
    matmul_bytes,
    matmul_bytes_loaded,
    matmul_bytes_written,
    matmul_flops,
    matmul_intensity,
    per_example_matmul_bytes,
    per_example_matmul_intensity,
    ring_allgather_bytes,
    ring_allreduce_bytes,
    sharded_matmul_critical_d,
    sharded_matmul_t_comms,
    sharded_matmul_t_math,
    square_matmul_size_for_time,
    tiled_matmul_bytes,
    tiled_matmul_flops,
    tiled_matmul_intensity,
    weight_gather_critical_batch,
    weight_gather_t_comms,
)
from rooflinelib.models import (
    MODELS,
    ForwardEstimate,
    LayerMatmul,
    Model,
    chips_to_fit,
    estimate_forward,
    forward_bytes,
    forward_flops,
    get_model,
    kv_cache_bytes_per_token,
    layer_matmuls,
    load_models,
    param_count,
    weight_bytes,
)
from rooflinelib.precision import DTYPE_BYTES, Precision, dtype_bytes
from rooflinelib.published import PublishedMatmul, PublishedMatmuls, get_published_matmuls, published_matmuls
from rooflinelib.roofline import (
    RuntimeBounds,
    SweepShape,
    arithmetic_intensity,
    attainable_flops,
    bottleneck,
    critical_intensity,
    in_core_peak,
    is_compute_bound,
    knee_batch_size,
    memory_bandwidth_utilization,
    model_flops_utilization,
    pipelined_time,
    runtime_bounds,
    sweep_shape,
    t_comms,
    t_math,
)
from rooflinelib.serving import (
    DecodeEstimate,
    allreduce_time,
    attention_flops,
    capacity_crossing,
    decode_context_limit,
    decode_critical_batch,
    decode_step_time,
    estimate_decode,
    kv_head_copies,
    max_decode_batch,
    prefill_time,
    tensor_parallel_sizes,
)
from rooflinelib.specs import (
    ACCELERATORS,
    SCALE_UP_LINKS,
    Accelerator,
    Link,
    OnChipMemory,
    accelerator_key,
    get_accelerator,
    load_accelerators,
    normalize_name,
)

if TYPE_CHECKING:
    from rooflinelib.diagrams import (
        chip_labels,
        draw_chip,
        draw_matmul_reuse,
        draw_overlap,
        draw_tiling,
        draw_two_chip_split,
        overlap_schedule,
    )
    from rooflinelib.explorer import Explorer, explore, plot_explore
    from rooflinelib.measure import (
        MachineMeasurement,
        knee_sweep,
        load_measurement,
        measure_machine,
        measured_knee,
        measurement_health,
        memory_levels,
        place_points,
        read_cpu_figures,
        reference_measurements,
    )
    from rooflinelib.plotting import (
        plot_bandwidth_staircase,
        plot_compute_roofs,
        plot_data_parallel_step,
        plot_decode_context,
        plot_decode_throughput,
        plot_decode_time,
        plot_hierarchical_roofline,
        plot_layer_matmuls,
        plot_level_roofline,
        plot_link_rooflines,
        plot_matmul_batch,
        plot_measured_knee,
        plot_measurement,
        plot_overhead_floor,
        plot_published_roofline,
        plot_published_sweeps,
        plot_roofline,
    )

#: The package's version; the single source that pyproject.toml reads.
__version__ = "0.1.0"

#: Names loaded from their module on first use: name -> module.
_LAZY = {
    "chip_labels": "rooflinelib.diagrams",
    "draw_chip": "rooflinelib.diagrams",
    "draw_matmul_reuse": "rooflinelib.diagrams",
    "draw_overlap": "rooflinelib.diagrams",
    "draw_tiling": "rooflinelib.diagrams",
    "draw_two_chip_split": "rooflinelib.diagrams",
    "overlap_schedule": "rooflinelib.diagrams",
    "Explorer": "rooflinelib.explorer",
    "explore": "rooflinelib.explorer",
    "plot_explore": "rooflinelib.explorer",
    "MachineMeasurement": "rooflinelib.measure",
    "load_measurement": "rooflinelib.measure",
    "measure_machine": "rooflinelib.measure",
    "measured_knee": "rooflinelib.measure",
    "measurement_health": "rooflinelib.measure",
    "knee_sweep": "rooflinelib.measure",
    "memory_levels": "rooflinelib.measure",
    "place_points": "rooflinelib.measure",
    "read_cpu_figures": "rooflinelib.measure",
    "reference_measurements": "rooflinelib.measure",
    "plot_decode_context": "rooflinelib.plotting",
    "plot_decode_throughput": "rooflinelib.plotting",
    "plot_compute_roofs": "rooflinelib.plotting",
    "plot_data_parallel_step": "rooflinelib.plotting",
    "plot_bandwidth_staircase": "rooflinelib.plotting",
    "plot_decode_time": "rooflinelib.plotting",
    "plot_hierarchical_roofline": "rooflinelib.plotting",
    "plot_layer_matmuls": "rooflinelib.plotting",
    "plot_level_roofline": "rooflinelib.plotting",
    "plot_matmul_batch": "rooflinelib.plotting",
    "plot_measured_knee": "rooflinelib.plotting",
    "plot_measurement": "rooflinelib.plotting",
    "plot_overhead_floor": "rooflinelib.plotting",
    "plot_link_rooflines": "rooflinelib.plotting",
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
    "SCALE_UP_LINKS",
    "Accelerator",
    "DecodeEstimate",
    "Explorer",
    "ForwardEstimate",
    "LayerMatmul",
    "Link",
    "MachineMeasurement",
    "MatmulEstimate",
    "Model",
    "OnChipMemory",
    "Precision",
    "PublishedMatmul",
    "PublishedMatmuls",
    "RuntimeBounds",
    "SweepShape",
    "accelerator_key",
    "allreduce_time",
    "arithmetic_intensity",
    "attainable_flops",
    "attention_flops",
    "binding_level",
    "bottleneck",
    "capacity_crossing",
    "chip_critical_batch_size",
    "chip_labels",
    "chips_to_fit",
    "critical_batch_size",
    "critical_intensity",
    "data_parallel_critical_batch",
    "data_parallel_step_times",
    "decode_context_limit",
    "decode_critical_batch",
    "decode_step_time",
    "draw_chip",
    "draw_matmul_reuse",
    "draw_overlap",
    "draw_tiling",
    "draw_two_chip_split",
    "dtype_bytes",
    "estimate_decode",
    "estimate_forward",
    "estimate_matmul",
    "explore",
    "forward_bytes",
    "forward_flops",
    "get_accelerator",
    "get_model",
    "get_published_matmuls",
    "head_attention_bytes",
    "head_attention_flops",
    "in_core_peak",
    "is_compute_bound",
    "knee_batch_size",
    "knee_sweep",
    "kv_cache_bytes_per_token",
    "kv_head_copies",
    "layer_matmuls",
    "level_ceilings",
    "level_intensities",
    "load_accelerators",
    "load_measurement",
    "load_models",
    "matmul_bytes",
    "matmul_bytes_loaded",
    "matmul_bytes_written",
    "matmul_flops",
    "matmul_intensity",
    "max_decode_batch",
    "measure_machine",
    "measured_knee",
    "measurement_health",
    "memory_bandwidth_utilization",
    "memory_levels",
    "model_flops_utilization",
    "normalize_name",
    "overlap_schedule",
    "param_count",
    "per_example_matmul_bytes",
    "per_example_matmul_intensity",
    "pipelined_time",
    "place_points",
    "plot_bandwidth_staircase",
    "plot_compute_roofs",
    "plot_data_parallel_step",
    "plot_decode_context",
    "plot_decode_throughput",
    "plot_decode_time",
    "plot_explore",
    "plot_hierarchical_roofline",
    "plot_layer_matmuls",
    "plot_level_roofline",
    "plot_link_rooflines",
    "plot_matmul_batch",
    "plot_measured_knee",
    "plot_measurement",
    "plot_overhead_floor",
    "plot_published_roofline",
    "plot_published_sweeps",
    "plot_roofline",
    "prefill_time",
    "published_matmuls",
    "read_cpu_figures",
    "reference_measurements",
    "ring_allgather_bytes",
    "ring_allreduce_bytes",
    "runtime_bounds",
    "sharded_matmul_critical_d",
    "sharded_matmul_t_comms",
    "sharded_matmul_t_math",
    "square_matmul_size_for_time",
    "sweep_shape",
    "t_comms",
    "t_math",
    "tensor_parallel_sizes",
    "tiled_matmul_bytes",
    "tiled_matmul_flops",
    "tiled_matmul_intensity",
    "tiled_matmul_level_bytes",
    "weight_bytes",
    "weight_gather_critical_batch",
    "weight_gather_t_comms",
]
