"""Chip-aware helpers: look a chip up in the spec table, then call the plain-number formulas."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rooflinelib import matmul, roofline
from rooflinelib._checks import ArrayLike
from rooflinelib.specs import Accelerator, get_accelerator

__all__ = ["MatmulEstimate", "estimate_matmul", "chip_critical_batch_size"]


@dataclass(frozen=True)
class MatmulEstimate:
    """Roofline estimate for one matmul on one chip (times in seconds)."""

    chip: str
    B: float
    D: float
    F: float
    flops: float
    bytes: float
    intensity: float
    critical_intensity: float
    t_math: float
    t_comms: float
    t_lower: float
    t_upper: float
    bound: str

    def as_dict(self) -> dict[str, float | str]:
        """The estimate as a plain dict, e.g. for JSON."""
        return asdict(self)


def estimate_matmul(
    chip: "str | Accelerator",
    B: float,
    D: float,
    F: float,
    *,
    dtype: str = "bf16",
    w_dtype: str | None = None,
    out_dtype: str | None = None,
    compute_dtype: str | None = None,
    memory: str = "hbm",
) -> MatmulEstimate:
    """FLOPs, bytes, intensity, T_math, T_comms, bounds and verdict for ``[B, D] @ [D, F]`` on ``chip``.

    ``dtype`` is the activations' dtype; weights and output default to it and
    the FLOPs run at the peak of ``compute_dtype`` (default ``dtype``).

    Examples
    --------
    >>> est = estimate_matmul("tpu-v5e", 128, 8192, 8192)
    >>> est.bound
    'communication-bound'
    >>> f"{est.t_lower * 1e6:.0f} us"
    '169 us'
    """
    acc = get_accelerator(chip)
    peak = acc.peak(compute_dtype or dtype)
    bandwidth = acc.bandwidth(memory)
    flops = matmul.matmul_flops(B, D, F)
    num_bytes = matmul.matmul_bytes(B, D, F, x_dtype=dtype, w_dtype=w_dtype, out_dtype=out_dtype)
    tm = roofline.t_math(flops, peak)
    tc = roofline.t_comms(num_bytes, bandwidth)
    lower, upper = roofline.runtime_bounds(tm, tc)
    return MatmulEstimate(
        chip=acc.key,
        B=float(B),
        D=float(D),
        F=float(F),
        flops=float(flops),
        bytes=float(num_bytes),
        intensity=float(roofline.arithmetic_intensity(flops, num_bytes)),
        critical_intensity=float(roofline.critical_intensity(peak, bandwidth)),
        t_math=float(tm),
        t_comms=float(tc),
        t_lower=float(lower),
        t_upper=float(upper),
        bound=str(roofline.bottleneck(tm, tc)),
    )


def chip_critical_batch_size(
    chip: "str | Accelerator",
    D: ArrayLike | None = None,
    F: ArrayLike | None = None,
    *,
    dtype: str = "bf16",
    w_dtype: str | None = None,
    out_dtype: str | None = None,
    compute_dtype: str | None = None,
    memory: str = "hbm",
) -> float:
    """Critical batch size of a matmul on a chip from the table (see :func:`critical_batch_size`).

    Examples
    --------
    >>> round(chip_critical_batch_size("h100-sxm"))    # dense bf16 / HBM
    295
    """
    acc = get_accelerator(chip)
    return matmul.critical_batch_size(  # type: ignore[return-value]
        acc.peak(compute_dtype or dtype),
        acc.bandwidth(memory),
        D,
        F,
        x_dtype=dtype,
        w_dtype=w_dtype,
        out_dtype=out_dtype,
    )
