"""FLOPs and bytes of matrix multiplications, and the batch sizes where they turn compute-bound.

Notation follows the book: ``X[B, D] @ Y[D, F] -> Z[B, F]``, where ``X`` holds
activations (``B`` tokens), ``Y`` weights, and ``Z`` the output. Each operand
can have its own dtype: ``precision`` is one dtype name for all three or a
:class:`~rooflinelib.precision.Precision`, so int8 weights with bf16
activations is ``precision=Precision("bf16", w="int8")``.
"""

from __future__ import annotations

import math

import numpy as np

from rooflinelib._checks import ArrayLike, FloatOrArray, as_number, as_size
from rooflinelib.precision import DTYPE_BYTES, Precision, PrecisionLike, dtype_bytes

__all__ = [
    "DTYPE_BYTES",
    "Precision",
    "critical_batch_size",
    "data_parallel_critical_batch",
    "data_parallel_step_times",
    "dot_bytes",
    "dot_flops",
    "dtype_bytes",
    "matmul_bytes",
    "matmul_bytes_loaded",
    "matmul_bytes_written",
    "matmul_flops",
    "matmul_intensity",
    "per_example_matmul_bytes",
    "per_example_matmul_intensity",
    "ring_allgather_bytes",
    "ring_allreduce_bytes",
    "sharded_matmul_critical_d",
    "sharded_matmul_t_comms",
    "sharded_matmul_t_math",
    "square_matmul_size_for_time",
    "tiled_matmul_bytes",
    "tiled_matmul_flops",
    "tiled_matmul_intensity",
    "weight_gather_critical_batch",
    "weight_gather_t_comms",
]


def _sizes(**dims: ArrayLike) -> list[FloatOrArray]:
    return [as_size(name, value) for name, value in dims.items()]


def _out(x: FloatOrArray) -> FloatOrArray:
    return float(x) if np.ndim(x) == 0 else x


def matmul_flops(B: ArrayLike, D: ArrayLike, F: ArrayLike, *, exact: bool = False) -> FloatOrArray:
    """FLOPs of ``[B, D] @ [D, F]``: ``2BDF`` (or exactly ``BF(2D - 1)``).

    Each of the ``BF`` outputs is a length-``D`` dot product: ``D`` multiplies
    and ``D - 1`` adds. The book (and this course) uses ``2BDF``.

    Examples
    --------
    >>> matmul_flops(2, 3, 4)
    48.0
    >>> matmul_flops(2, 3, 4, exact=True)
    40.0
    """
    B, D, F = _sizes(B=B, D=D, F=F)
    return _out(B * F * (2 * D - 1) if exact else 2 * B * D * F)


def matmul_bytes_loaded(B: ArrayLike, D: ArrayLike, F: ArrayLike, *, precision: PrecisionLike = "bf16") -> FloatOrArray:
    """Bytes read from memory: the activations ``X[B, D]`` and the weights ``Y[D, F]``.

    Examples
    --------
    >>> matmul_bytes_loaded(1, 10, 10, precision=Precision("bf16", w="int8"))   # 2*10 + 1*100
    120.0
    """
    bx, bw, _ = Precision.from_any(precision).bytes
    B, D, F = _sizes(B=B, D=D, F=F)
    return _out(bx * B * D + bw * D * F)


def matmul_bytes_written(
    B: ArrayLike, D: ArrayLike, F: ArrayLike, *, precision: PrecisionLike = "bf16"
) -> FloatOrArray:
    """Bytes written back: the output ``Z[B, F]``.

    Examples
    --------
    >>> matmul_bytes_written(4, 1000, 8, precision="int8")
    32.0
    """
    _, _, bo = Precision.from_any(precision).bytes
    B, D, F = _sizes(B=B, D=D, F=F)
    return _out(bo * B * F)


def matmul_bytes(B: ArrayLike, D: ArrayLike, F: ArrayLike, *, precision: PrecisionLike = "bf16") -> FloatOrArray:
    """All bytes moved: loaded ``X`` and ``Y`` plus written ``Z``; in bf16 ``2BD + 2DF + 2BF``.

    Examples
    --------
    >>> matmul_bytes(1, 2, 3)                       # 2*2 + 2*6 + 2*3
    22.0
    >>> matmul_bytes(1, 2, 3, precision="int8")    # int8 everywhere: 2 + 6 + 3
    11.0
    """
    bx, bw, bo = Precision.from_any(precision).bytes
    B, D, F = _sizes(B=B, D=D, F=F)
    return _out(bx * B * D + bw * D * F + bo * B * F)


def matmul_intensity(B: ArrayLike, D: ArrayLike, F: ArrayLike, *, precision: PrecisionLike = "bf16") -> FloatOrArray:
    """Arithmetic intensity ``2BDF / bytes``; in bf16 ``BDF / (BD + DF + BF)``, about ``B`` when ``B << D, F``.

    Examples
    --------
    >>> round(matmul_intensity(256, 8192, 8192), 1)    # close to B = 256 when B << D, F
    240.9
    """
    return matmul_flops(B, D, F) / matmul_bytes(B, D, F, precision=precision)


def critical_batch_size(
    peak_flops: ArrayLike,
    bandwidth: ArrayLike,
    D: ArrayLike | None = None,
    F: ArrayLike | None = None,
    *,
    precision: PrecisionLike = "bf16",
) -> FloatOrArray:
    """Batch size (tokens) above which ``[B, D] @ [D, F]`` is compute-bound.

    Without ``D`` and ``F`` this is the ``B << D, F`` approximation: the
    intensity tends to ``2B / w`` for ``w`` bytes per weight, so
    ``B* = critical_intensity * w / 2`` (240 for bf16 on a TPU v5e). With
    ``D`` and ``F`` it is the exact crossover ``T_math = T_comms``:

        B* = (w D F / W) / (2 D F / P - (x D + o F) / W)

    which is ``inf`` when the matmul can never be compute-bound.

    Examples
    --------
    >>> round(critical_batch_size(1.97e14, 8.2e11))                   # bf16, approximation
    240
    >>> int8_weights = Precision("bf16", w="int8")                    # bf16 compute
    >>> round(critical_batch_size(1.97e14, 8.2e11, precision=int8_weights))
    120
    >>> round(critical_batch_size(1.97e14, 8.2e11, 4096, 4096, precision=int8_weights))  # exact
    136
    """
    peak = as_number("peak_flops", peak_flops, "FLOP/s")
    bw_s = as_number("bandwidth", bandwidth, "bytes/s")
    bx, bw, bo = Precision.from_any(precision).bytes
    if D is None and F is None:
        return _out(peak / bw_s * bw / 2)
    if D is None or F is None:
        raise ValueError("give both D and F for the exact critical batch size, or neither for the B << D, F rule")
    D_, F_ = _sizes(D=D, F=F)
    denominator = 2 * D_ * F_ / peak - (bx * D_ + bo * F_) / bw_s
    with np.errstate(divide="ignore"):
        b_star = np.where(denominator > 0, (bw * D_ * F_ / bw_s) / np.where(denominator > 0, denominator, 1), math.inf)
    return _out(b_star)


def per_example_matmul_bytes(
    B: ArrayLike, D: ArrayLike, F: ArrayLike, *, precision: PrecisionLike = "int8"
) -> FloatOrArray:
    """Bytes of ``X[B, D] *_D W[B, D, F] -> Z[B, F]``: a separate weight matrix per example.

    The weights are now ``BDF`` elements, so bytes are ``x BD + w BDF + o BF``.

    Examples
    --------
    >>> per_example_matmul_bytes(2, 3, 4)   # int8: 6 + 24 + 8
    38.0
    """
    bx, bw, bo = Precision.from_any(precision).bytes
    B, D, F = _sizes(B=B, D=D, F=F)
    return _out(bx * B * D + bw * B * D * F + bo * B * F)


def per_example_matmul_intensity(
    B: ArrayLike, D: ArrayLike, F: ArrayLike, *, precision: PrecisionLike = "int8"
) -> FloatOrArray:
    """Intensity ``2BDF / (BD + BDF + BF)`` (int8): it tends to 2, whatever ``B`` is.

    Examples
    --------
    >>> round(per_example_matmul_intensity(512, 64, 64), 3)   # 2*64*64 / (64 + 64*64 + 64)
    1.939
    """
    return matmul_flops(B, D, F) / per_example_matmul_bytes(B, D, F, precision=precision)


def _tiles(m: ArrayLike, k: ArrayLike, n: ArrayLike, bm: ArrayLike, bk: ArrayLike, bn: ArrayLike) -> list[float]:
    sizes = [float(as_size(name, v)) for name, v in dict(m=m, k=k, n=n, bm=bm, bk=bk, bn=bn).items()]
    for dim, tile, dname, tname in (
        (sizes[0], sizes[3], "m", "bm"),
        (sizes[1], sizes[4], "k", "bk"),
        (sizes[2], sizes[5], "n", "bn"),
    ):
        if dim % tile:
            raise ValueError(f"{tname}={tile:g} must divide {dname}={dim:g}; pick a tile size that is a divisor")
    return sizes


def tiled_matmul_flops(m: int, k: int, n: int, bm: int, bk: int, bn: int) -> float:
    """FLOPs of an ``(m, k) @ (k, n)`` matmul done in ``(bm, bk) @ (bk, bn)`` tiles.

    ``2 * tm * tn * tk * bm * bk * bn`` with ``tm = m / bm`` etc., which is
    ``2mkn``: tiling changes the bytes, not the FLOPs.

    Examples
    --------
    >>> tiled_matmul_flops(1024, 1024, 1024, 128, 128, 128) == 2 * 1024**3
    True
    """
    m_, k_, n_, bm_, bk_, bn_ = _tiles(m, k, n, bm, bk, bn)
    tm, tk, tn = m_ / bm_, k_ / bk_, n_ / bn_
    return 2 * tm * tn * tk * bm_ * bk_ * bn_


def tiled_matmul_bytes(
    m: int, k: int, n: int, bm: int, bk: int, bn: int, *, precision: PrecisionLike = "bf16"
) -> float:
    """Bytes moved by the tiled matmul: each output tile reloads its input tiles.

    For each of the ``tm * tn`` output tiles we load ``tk`` pairs of input
    tiles (``bm*bk`` elements of ``x``, ``bk*bn`` of ``w``) and write the
    ``bm*bn`` output once.

    Examples
    --------
    >>> tiled_matmul_bytes(256, 256, 256, 128, 128, 128)   # 4 output tiles, 2 k-steps each
    655360.0
    """
    bx, bw, bo = Precision.from_any(precision).bytes
    m_, k_, n_, bm_, bk_, bn_ = _tiles(m, k, n, bm, bk, bn)
    tm, tk, tn = m_ / bm_, k_ / bk_, n_ / bn_
    return tm * tn * (tk * (bx * bm_ * bk_ + bw * bk_ * bn_) + bo * bm_ * bn_)


def tiled_matmul_intensity(
    m: int, k: int, n: int, bm: int, bk: int, bn: int, *, precision: PrecisionLike = "bf16"
) -> float:
    """Intensity of the tiled matmul; for large ``k`` it tends to ``bm*bn / (bm + bn)`` in bf16.

    Examples
    --------
    >>> round(tiled_matmul_intensity(4096, 2**20, 4096, 512, 512, 1024), 1)   # tends to 512*1024/1536 = 341.3
    341.2
    """
    flops = tiled_matmul_flops(m, k, n, bm, bk, bn)
    return flops / tiled_matmul_bytes(m, k, n, bm, bk, bn, precision=precision)


def sharded_matmul_t_math(
    B: ArrayLike, D: ArrayLike, F: ArrayLike, peak_flops: ArrayLike, *, n_chips: int = 2
) -> FloatOrArray:
    """Compute time of ``[B, D] @ [D, F]`` split along ``D`` over ``n_chips``: ``2BDF / (n P)``.

    Each chip multiplies its ``D / n`` slice; the (small) cost of adding the
    partial sums is ignored.

    Examples
    --------
    >>> sharded_matmul_t_math(1, 2, 1, 1.0) == 1 * 2 * 1 / 1.0   # BDF / P on 2 chips
    True
    """
    B, D, F = _sizes(B=B, D=D, F=F)
    n = as_size("n_chips", n_chips)
    return _out(2 * B * D * F / (n * as_number("peak_flops", peak_flops, "FLOP/s")))


def sharded_matmul_t_comms(
    B: ArrayLike, F: ArrayLike, link_bandwidth: ArrayLike, *, precision: PrecisionLike = "bf16"
) -> FloatOrArray:
    """Time to send one chip's partial sum ``Z[B, F]`` to the other over one link, one way.

    A bf16 partial sum is ``BF`` values of 2 bytes: ``2BF`` bytes, not ``4BF``.

    Examples
    --------
    >>> sharded_matmul_t_comms(1, 4.5e10, 4.5e10)   # 2 bytes * 4.5e10 values at 4.5e10 bytes/s
    2.0
    """
    _, _, bo = Precision.from_any(precision).bytes
    B, F = _sizes(B=B, F=F)
    return _out(bo * B * F / as_number("link_bandwidth", link_bandwidth, "bytes/s"))


def sharded_matmul_critical_d(
    peak_flops: ArrayLike, link_bandwidth: ArrayLike, *, precision: PrecisionLike = "bf16"
) -> FloatOrArray:
    """The ``D`` above which the 2-chip, ``D``-sharded matmul is compute-bound.

    ``BDF / P > o BF / W`` gives ``D > o P / W``: it depends on ``D``, not ``B``,
    because both sides scale with ``BF``.

    Examples
    --------
    >>> round(sharded_matmul_critical_d(1.97e14, 4.5e10))   # TPU v5e over one ICI link
    8756
    """
    peak = as_number("peak_flops", peak_flops, "FLOP/s")
    bw = as_number("link_bandwidth", link_bandwidth, "bytes/s")
    _, _, bo = Precision.from_any(precision).bytes
    return _out(bo * peak / bw)


def ring_allgather_bytes(num_bytes: ArrayLike, n_chips: int) -> FloatOrArray:
    """Bytes each chip receives when a ring all-gathers a tensor of ``num_bytes``: ``(n - 1) / n`` of it.

    Each of the ``n`` chips starts with ``1 / n`` of the tensor and needs the
    other ``n - 1`` pieces; a ring passes them on one hop at a time, so every
    chip receives (and sends) ``n - 1`` pieces.

    Examples
    --------
    >>> ring_allgather_bytes(8.0, 4)     # 3 of the 4 quarters arrive
    6.0
    >>> ring_allgather_bytes(8.0, 1)     # one chip already has it all
    0.0
    """
    n = int(as_size("n_chips", n_chips, scalar=True))
    return _out((n - 1) / n * np.asarray(as_number("num_bytes", num_bytes, "bytes", allow_zero=True), float))


def ring_allreduce_bytes(num_bytes: ArrayLike, n_chips: int) -> FloatOrArray:
    """Bytes each chip sends in a ring all-reduce of ``num_bytes``: ``2 (n - 1) / n`` of it.

    An all-reduce is a reduce-scatter (each chip ends with the sum of one
    ``1 / n`` piece, having passed ``n - 1`` pieces on) followed by an
    all-gather of those sums (``n - 1`` pieces more).

    Examples
    --------
    >>> ring_allreduce_bytes(8.0, 4)     # 2 x 3 quarters
    12.0
    >>> ring_allreduce_bytes(8.0, 2)     # two chips: each sends half, then the other half's sum
    8.0
    """
    return _out(2 * np.asarray(ring_allgather_bytes(num_bytes, n_chips), float))


def weight_gather_t_comms(
    D: ArrayLike,
    F: ArrayLike,
    link_bandwidth: ArrayLike,
    *,
    n_chips: int,
    links: int = 1,
    precision: PrecisionLike = "bf16",
) -> FloatOrArray:
    """Time to all-gather a weight ``Y[D, F]`` sharded over a ring of ``n_chips``, onto every chip.

    Each chip receives :func:`ring_allgather_bytes` of the ``w D F`` weight
    bytes, over ``links`` links at once, each ``link_bandwidth`` bytes/s one way
    (``links=1``: a one-way ring; 2: a ring that sends both ways; more: a torus).

    Examples
    --------
    >>> weight_gather_t_comms(1, 4.5e10, 4.5e10, n_chips=2)   # half of 2 * 4.5e10 bytes at 4.5e10 bytes/s
    1.0
    """
    _, bw_bytes, _ = Precision.from_any(precision).bytes
    D, F = _sizes(D=D, F=F)
    k = int(as_size("links", links, scalar=True))
    received = ring_allgather_bytes(bw_bytes * np.asarray(D) * np.asarray(F), n_chips)
    return _out(np.asarray(received) / (k * np.asarray(as_number("link_bandwidth", link_bandwidth, "bytes/s"))))


def weight_gather_critical_batch(
    peak_flops: ArrayLike,
    link_bandwidth: ArrayLike,
    *,
    n_chips: int | None = None,
    links: int = 1,
    precision: PrecisionLike = "bf16",
) -> FloatOrArray:
    """Tokens per chip above which ``[B, D] @ [D, F]`` outlasts the all-gather of its weights (FSDP-style).

    Each chip multiplies its own ``B`` tokens by the whole weight,
    ``T_math = 2 B D F / P``, after gathering it,
    ``T_comms = w D F (n - 1) / (n k W)`` (:func:`weight_gather_t_comms`). ``D F``
    cancels, so the threshold is in the batch:
    ``B > w (n - 1) / (2 n) * P / (k W)``, which for bf16 (``w = 2``) and many
    chips is ``P / (k W)``. ``n_chips=None`` gives that many-chip limit.

    Examples
    --------
    >>> round(weight_gather_critical_batch(1.97e14, 4.5e10))            # TPU v5e, one ICI link
    4378
    >>> round(weight_gather_critical_batch(1.97e14, 4.5e10, links=4))   # all four
    1094
    >>> round(weight_gather_critical_batch(1.97e14, 4.5e10, n_chips=2))
    2189
    """
    share = 1.0 if n_chips is None else float(ring_allgather_bytes(1.0, n_chips))
    return _batch_over_links(peak_flops, link_bandwidth, links, precision, share, flops_per_weight=2)


def data_parallel_critical_batch(
    peak_flops: ArrayLike,
    link_bandwidth: ArrayLike,
    *,
    n_chips: int | None = None,
    links: int = 1,
    precision: PrecisionLike = "bf16",
) -> FloatOrArray:
    """Tokens per chip above which a training step of ``[B, D] @ [D, F]`` outlasts the all-reduce of its gradient.

    Forward and backward take ``6 B D F`` FLOPs per chip (``2 B D F`` forward,
    twice that backward); the gradient of ``Y[D, F]``, ``w D F`` bytes, is
    all-reduced over a ring (:func:`ring_allreduce_bytes`) through ``links``
    links of ``link_bandwidth`` bytes/s each, one way. ``D F`` cancels:
    ``B > w (n - 1) / (3 n) * P / (k W)``; ``n_chips=None`` is the many-chip limit.

    Examples
    --------
    >>> round(data_parallel_critical_batch(1.97e14, 4.5e10))   # TPU v5e, one ICI link: two thirds of 4378
    2919
    """
    share = 2.0 if n_chips is None else float(ring_allreduce_bytes(1.0, n_chips))
    return _batch_over_links(peak_flops, link_bandwidth, links, precision, share, flops_per_weight=6)


def data_parallel_step_times(
    B: ArrayLike,
    D: ArrayLike,
    F: ArrayLike,
    peak_flops: ArrayLike,
    link_bandwidth: ArrayLike,
    *,
    n_chips: int,
    links: int = 1,
    precision: PrecisionLike = "bf16",
) -> tuple[FloatOrArray, FloatOrArray]:
    """``(T_math, T_comms)`` of one data-parallel training step of ``[B, D] @ [D, F]`` on each of ``n_chips`` chips.

    ``T_math`` is ``6 B D F`` FLOPs (``2 B D F`` forward, ``4 B D F`` backward) at ``peak_flops``;
    ``T_comms`` is the ring all-reduce of the weight's gradient, ``w D F`` bytes
    (:func:`ring_allreduce_bytes`), through ``links`` links of ``link_bandwidth`` bytes/s each,
    one way. They are equal at :func:`data_parallel_critical_batch`.

    Examples
    --------
    >>> t_math, t_comms = data_parallel_step_times(4096, 8192, 8192, 1.97e14, 4.5e10, n_chips=16)
    >>> round(t_math * 1e3, 2), round(t_comms * 1e3, 2)   # ms: 6 B D F / P, and 2 * 15/16 * 2 D F / W
    (8.37, 5.59)
    """
    peak = as_number("peak_flops", peak_flops, "FLOP/s")
    bw = as_number("link_bandwidth", link_bandwidth, "bytes/s")
    B, D, F = _sizes(B=B, D=D, F=F)
    k = int(as_size("links", links, scalar=True))
    _, w, _ = Precision.from_any(precision).bytes
    t_math = 6 * B * D * F / np.asarray(peak)
    t_comms = np.asarray(ring_allreduce_bytes(w * D * F, n_chips)) / (k * np.asarray(bw))
    return _out(t_math), _out(t_comms)


def _batch_over_links(
    peak_flops: ArrayLike,
    link_bandwidth: ArrayLike,
    links: int,
    precision: PrecisionLike,
    share: float,
    flops_per_weight: float,
) -> FloatOrArray:
    """Tokens per chip at which ``flops_per_weight`` FLOPs per weight and token take as long as sending ``share``
    times every weight's bytes through ``links`` links: ``B = w * share / flops_per_weight * P / (k W)``."""
    peak = as_number("peak_flops", peak_flops, "FLOP/s")
    bw = as_number("link_bandwidth", link_bandwidth, "bytes/s")
    _, bw_bytes, _ = Precision.from_any(precision).bytes
    k = int(as_size("links", links, scalar=True))
    return _out(bw_bytes * share / flops_per_weight * np.asarray(peak) / (k * np.asarray(bw)))


def square_matmul_size_for_time(
    seconds: float, peak_flops: float, bandwidth: float, *, precision: PrecisionLike = "bf16"
) -> int:
    """The smallest ``n`` whose ``[n, n] @ [n, n]`` matmul takes at least ``seconds`` by the roofline.

    The roofline time is the lower bound ``max(T_math, T_comms)``, with ``2 n**3`` FLOPs and every
    operand moved once. Give a kernel's fixed per-call cost as ``seconds`` and every smaller matmul
    spends less time on its FLOPs and bytes than on that overhead: a third bound, which the two-number
    roofline does not draw.

    Examples
    --------
    >>> n = square_matmul_size_for_time(5e-6, 9.895e14, 3.35e12)   # H100 SXM, bf16, 5 µs
    >>> n, 2 * n**3 / 9.895e14 >= 5e-6 > 2 * (n - 1)**3 / 9.895e14
    (1353, True)
    >>> square_matmul_size_for_time(0, 9.895e14, 3.35e12)
    Traceback (most recent call last):
    ...
    ValueError: seconds must be > 0 s, got 0
    """
    t = float(as_number("seconds", seconds, "s", scalar=True))
    peak = float(as_number("peak_flops", peak_flops, "FLOP/s", scalar=True))
    bw = float(as_number("bandwidth", bandwidth, "bytes/s", scalar=True))
    per_element = sum(Precision.from_any(precision).bytes)  # bytes per n**2: X, Y and Z

    def roofline_time(n: int) -> float:
        return max(2.0 * n**3 / peak, per_element * n**2 / bw)

    n = max(1, min(math.ceil(float((t * peak / 2) ** (1 / 3))), math.ceil(math.sqrt(t * bw / per_element))))
    while n > 1 and roofline_time(n - 1) >= t:  # the closed forms can be one off in floating point
        n -= 1
    while roofline_time(n) < t:
        n += 1
    return n


def dot_flops(N: int) -> float:
    """FLOPs of a length-``N`` dot product: ``N`` multiplies and ``N - 1`` adds.

    Examples
    --------
    >>> dot_flops(1000)
    1999.0
    """
    return float(2 * as_size("N", N) - 1)


def dot_bytes(N: int, dtype: str = "fp32") -> float:
    """Bytes of a dot product: two length-``N`` vectors read, one scalar written, all in ``dtype``.

    Examples
    --------
    >>> dot_bytes(1000)           # 4 * (2 * 1000 + 1)
    8004.0
    """
    return float(dtype_bytes(dtype) * (2 * as_size("N", N) + 1))
