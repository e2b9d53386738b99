"""Chip-aware helpers: look a chip up in the spec table, then call the plain-number formulas."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rooflinelib import matmul, roofline
from rooflinelib._checks import ArrayLike, FloatOrArray, as_size
from rooflinelib.precision import Precision, PrecisionLike
from rooflinelib.specs import Accelerator, get_accelerator

__all__ = ["MatmulEstimate", "chip_critical_batch_size", "estimate_matmul"]


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
    chip: str | Accelerator,
    B: float,
    D: float,
    F: float,
    *,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
    memory: str = "hbm",
) -> MatmulEstimate:
    """FLOPs, bytes, intensity, T_math, T_comms, bounds and verdict for ``[B, D] @ [D, F]`` on ``chip``.

    ``precision`` gives the operands' dtypes (one name for all three, or a
    :class:`~rooflinelib.precision.Precision`); the FLOPs run at the chip's
    peak for ``compute_dtype`` (default: the activations' dtype). ``B``, ``D``
    and ``F`` are single sizes; for many sizes at once use the array functions
    of :mod:`rooflinelib.matmul` and :mod:`rooflinelib.roofline`.

    Examples
    --------
    >>> est = estimate_matmul("tpu-v5e", 128, 8192, 8192)
    >>> est.bound
    'communication-bound'
    >>> f"{est.t_lower * 1e6:.0f} us"
    '169 us'
    >>> estimate_matmul("tpu-v5e", [1, 2], 8192, 8192)
    Traceback (most recent call last):
    ...
    TypeError: B must be a single number, got an array of shape (2,)
    """
    B_, D_, F_ = (float(as_size(name, v, scalar=True)) for name, v in (("B", B), ("D", D), ("F", F)))
    prec = Precision.from_any(precision)
    acc = get_accelerator(chip)
    peak = acc.peak(compute_dtype or prec.x)
    bandwidth = acc.bandwidth(memory)
    flops = float(matmul.matmul_flops(B_, D_, F_))
    num_bytes = float(matmul.matmul_bytes(B_, D_, F_, precision=prec))
    tm = float(roofline.t_math(flops, peak))
    tc = float(roofline.t_comms(num_bytes, bandwidth))
    lower, upper = roofline.runtime_bounds(tm, tc)
    return MatmulEstimate(
        chip=acc.key,
        B=B_,
        D=D_,
        F=F_,
        flops=flops,
        bytes=num_bytes,
        intensity=float(roofline.arithmetic_intensity(flops, num_bytes)),
        critical_intensity=float(roofline.critical_intensity(peak, bandwidth)),
        t_math=tm,
        t_comms=tc,
        t_lower=float(lower),
        t_upper=float(upper),
        bound=str(roofline.bottleneck(tm, tc)),
    )


def chip_critical_batch_size(
    chip: str | Accelerator,
    D: ArrayLike | None = None,
    F: ArrayLike | None = None,
    *,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
    memory: str = "hbm",
) -> FloatOrArray:
    """Critical batch size of a matmul on a chip from the table (see :func:`~rooflinelib.matmul.critical_batch_size`).

    Examples
    --------
    >>> round(chip_critical_batch_size("h100-sxm"))    # dense bf16 / HBM
    295
    >>> round(chip_critical_batch_size("tpu-v5e", precision="int8"))   # int8 peak and int8 weights
    240
    """
    prec = Precision.from_any(precision)
    acc = get_accelerator(chip)
    return matmul.critical_batch_size(acc.peak(compute_dtype or prec.x), acc.bandwidth(memory), D, F, precision=prec)
