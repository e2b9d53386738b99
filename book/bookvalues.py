"""The figures that *How to Scale Your Model*, Part 1, assumes, stated once.

The chapters compare each of these with the spec table in ``rooflinelib``
(vendor figures) and say which one they use. Nothing here is computed: these
are the inputs as the book prints them, with where it prints them.

Examples
--------
>>> BOOK["v5e_hbm"].value, BOOK["v5e_hbm_q1"].value
(820000000000.0, 810000000000.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

__all__ = [
    "BOOK",
    "EXERCISES_URL",
    "PRINTED",
    "SCALING_BOOK",
    "BookValue",
    "Printed",
    "capacity",
    "capacity_used",
    "rounded",
    "sci",
]

SCALING_BOOK = "https://jax-ml.github.io/scaling-book/roofline/"
EXERCISES_URL = "https://github.com/roofline-course/roofline-course/blob/main/exercises/rooflines/"


@dataclass(frozen=True)
class BookValue:
    """One number as the book states it, with its unit and where it appears."""

    value: float
    unit: str
    where: str


BOOK: dict[str, BookValue] = {
    "v5e_bf16": BookValue(1.97e14, "FLOPs/s", "TPU v5e bf16 peak, throughout Part 1"),
    "v5e_hbm": BookValue(8.2e11, "bytes/s", "TPU v5e HBM bandwidth, main text and Question 3"),
    "v5e_hbm_q1": BookValue(8.1e11, "bytes/s", "TPU v5e HBM bandwidth, Question 1"),
    "v5e_int8": BookValue(3.94e14, "OPs/s", "TPU v5e int8 peak, Question 1"),
    "v6e_bf16": BookValue(9.1e14, "FLOPs/s", "TPU v6e bf16 peak, first section of Part 1"),
    "v6e_bf16_part2": BookValue(9.2e14, "FLOPs/s", "TPU v6e bf16 peak, Part 2"),
    "h100_bf16": BookValue(9.89e14, "FLOPs/s", "H100 bf16 peak, first section of Part 1"),
    "h100_bf16_sparse": BookValue(1.979e15, "FLOPs/s", "H100 SXM datasheet bf16, 'with sparsity', Question 5"),
    "h100_bf16_q5": BookValue(1e15, "FLOPs/s", "H100 dense bf16 as rounded in the answer to Question 5"),
    "h100_hbm": BookValue(3.35e12, "bytes/s", "H100 SXM HBM bandwidth, Question 5"),
    "two_chip_link": BookValue(4.5e10, "bytes/s", "bytes/s each way between the two TPUs, network section"),
    "v5p_vpu": BookValue(7e12, "FLOPs/s", "TPU v5p VPU, dot-product footnote"),
    "gpu_bcrit": BookValue(300, "tokens", "GPU critical batch size, 'closer to 300', matmul section"),
    "typical_max_batch": BookValue(1024, "tokens", "per-replica batch is usually below this, matmul section"),
    "typical_min_dim": BookValue(8000, "", "D and F are usually above this, matmul section"),
}


@dataclass(frozen=True)
class Printed:
    """A figure exactly as a vendor's page prints it, with the page and the day it was read."""

    text: str
    page: str
    date: str


# What vendors' pages print where the spec table has to interpret them (the unit of "GB").
PRINTED: dict[str, Printed] = {
    "tpu-v5e": Printed("16 GB", "https://cloud.google.com/tpu/docs/v5e", "2026-11-23"),
}


def sci(x: float, digits: int = 3) -> str:
    """Write ``x`` the way the book does: ``1.97e14``, not ``1.97e+14``.

    Examples
    --------
    >>> sci(1.97e14), sci(8.19e11), sci(2 * 8.2e11 / 2, 2), sci(1.0005e3, 4), sci(-9.9995e-3, 4)
    ('1.97e14', '8.19e11', '8.2e11', '1.001e3', '-1e-2')
    """
    if not math.isfinite(x) or x == 0:
        mantissa, _, exponent = f"{x:.{digits - 1}e}".partition("e")
    else:  # a half rounds up, as in :func:`rounded`: sci(1.0005e3, 4) is 1.001e3, not 1e3
        exponent = str(Decimal(repr(float(x))).adjusted())
        mantissa = rounded(float(Decimal(repr(float(x))).scaleb(-int(exponent))), digits - 1)
        if abs(float(mantissa)) >= 10:  # 9.995 rounded to 10.00: one place up
            exponent = str(int(exponent) + 1)
            mantissa = rounded(float(mantissa) / 10, digits - 1)
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    return f"{mantissa}e{int(exponent)}"


def rounded(x: float, digits: int = 0, *, grouping: bool = False) -> str:
    """Write ``x`` with ``digits`` decimals, a half rounded up (away from zero), as the course states.

    Python's own formatting (``f"{x:.0f}"``) rounds a half to the even neighbour, so 12,312.5 would
    print as 12,312; the course's rule, rounding to the nearest, with a half going up, makes it
    12,313. The number is read as it prints (``repr``), so ``2.675`` rounds to ``2.68`` although the
    float stored is a hair below it. ``grouping`` puts a comma between thousands.

    Examples
    --------
    >>> rounded(1.97e14 / 1.6e10, grouping=True), f"{1.97e14 / 1.6e10:,.0f}"
    ('12,313', '12,312')
    >>> rounded(0.5), rounded(2.5), rounded(-2.5), rounded(2.675, 2), rounded(240.24, 1)
    ('1', '3', '-3', '2.68', '240.2')
    """
    if not isinstance(digits, int) or digits < 0:
        raise ValueError(f"digits must be a whole number >= 0, got {digits!r}")
    if not math.isfinite(x):
        raise ValueError(f"only a finite number can be rounded for display, got {x!r}")
    value = Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    value = abs(value) if value == 0 else value  # no "-0"
    return f"{value:,f}" if grouping else f"{value:f}"


def capacity(chip: Any) -> str:
    """An HBM capacity as the vendor prints it, in the unit the course reads it in.

    Google's v5e, v5p and v6e pages print "GB" (see :data:`PRINTED`); its TPU comparison table
    gives TPU capacities in GiB, which is how the course reads them all. NVIDIA and AMD print
    "GB" too, and their devices report more than that many decimal gigabytes: the course computes
    with the device's own report where a public one exists (:func:`capacity_used`).

    Examples
    --------
    >>> import rooflinelib as rl
    >>> capacity(rl.get_accelerator("tpu-v5e")), capacity(rl.get_accelerator("h100-sxm"))
    ('16 GiB', '80 GB')
    """
    amount, _ = chip.hbm_capacity_printed.split()
    return f"{amount} GiB" if chip.vendor == "Google" else f"{amount} GB"


def capacity_used(chip: Any) -> str:
    """The bytes of HBM the course computes with, in decimal GB (two decimals): the device's report where public.

    Examples
    --------
    >>> import rooflinelib as rl
    >>> capacity_used(rl.get_accelerator("h100-sxm")), capacity_used(rl.get_accelerator("tpu-v5e"))
    ('85.52 GB', '17.18 GB')
    """
    return f"{rounded(chip.hbm_capacity / 1e9, 2)} GB"
