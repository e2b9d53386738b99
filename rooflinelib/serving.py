"""Serving a language model on the roofline: decode with its KV cache, prefill with attention, chips in a group.

A **decode step** of ``batch`` sequences, each with ``context`` tokens already in its KV cache,
costs, with ``P_mm`` the matmul weights, ``P_read`` the weights read (:mod:`rooflinelib.models`),
``L`` layers of ``N`` query heads and ``K`` key/value heads of width ``H``:

- FLOPs: ``batch * (2 * P_mm + 4 * L * N * H * context)``: each weight meets each new token in
  a multiply and an add, and each new query meets ``context`` cached keys (its scores, ``2 N H``
  FLOPs a position and layer) and as many values (their weighted sum, ``2 N H`` more);
- HBM bytes: the weights, once, ``w * P_read``, and every sequence's own cache,
  ``batch * context * kv_cache_bytes_per_token``. The weights are shared by the batch; the
  caches are not, so attention's intensity stays near ``N / K`` FLOPs per byte (bf16 cache)
  at any batch size.

A **prefill** of ``sequences`` prompts of ``seq_len`` tokens is the same pass over
``sequences * seq_len`` tokens, with causal attention (token ``i`` attends to ``i`` positions:
``2 * L * N * H * seq_len * (seq_len + 1)`` FLOPs a prompt) and the cache written once.

With ``n_chips > 1`` the model is split by **tensor parallelism**: every weight matrix and the
KV heads are divided over the chips (a KV head is copied when there are more chips than KV
heads), each chip does ``1 / n_chips`` of the FLOPs, and two **all-reduces** per layer sum the
partial outputs of ``o_proj`` and ``down_proj``, ``[tokens, D]`` in the output format. An
all-reduce over ``n`` chips takes ``max(latency, 2 (n - 1) / n * bytes / bandwidth)``: the ring's
bytes over the chips' link (:meth:`~rooflinelib.specs.Accelerator.scale_up_link`), and never less
than the link's ``collective_latency``, a measured small all-reduce from the spec table. The
all-reduces sit between two matmuls (the second needs their result), so their time adds to the
step's ``max(T_math, T_comms)``.

Left out: activations, norms and the activation function, the time to gather embedding rows,
the collectives of the embedding and output layers, and the KV cache of the new token itself.
Each estimate is a lower bound of a real kernel's time, but for the measured all-reduce latency,
which a faster collective library can beat.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rooflinelib import roofline
from rooflinelib._checks import ArrayLike, FloatOrArray, as_number, as_size
from rooflinelib.models import Model, forward_bytes, get_model, kv_cache_bytes_per_token, weight_bytes
from rooflinelib.precision import Precision, PrecisionLike, dtype_bytes
from rooflinelib.specs import Accelerator, get_accelerator

__all__ = [
    "DecodeEstimate",
    "allreduce_time",
    "attention_flops",
    "decode_context_limit",
    "decode_critical_batch",
    "decode_step_time",
    "estimate_decode",
    "max_decode_batch",
    "prefill_time",
    "tensor_parallel_sizes",
]


# ----------------------------------------------------------------------------- checks


def _tokens(name: str, value: ArrayLike, *, scalar: bool = False) -> FloatOrArray:
    """A token or sequence count: > 0 (``batch must be > 0, got 0``), then whole."""
    as_number(name, value, scalar=scalar)
    return as_size(name, value, scalar=scalar)


def _context(value: ArrayLike, *, scalar: bool = False) -> FloatOrArray:
    """Tokens already in each sequence's cache: a whole number >= 0."""
    arr = np.asarray(as_number("context", value, "tokens", allow_zero=True, scalar=scalar))
    bad = arr != np.floor(arr)
    if np.any(bad):
        raise ValueError(f"context must be a whole number of tokens (an integer >= 0), got {arr[bad].flat[0]:g}")
    return float(arr) if arr.ndim == 0 else arr


def _kv_dtype(kv_dtype: str | None, prec: Precision) -> str:
    """The cache's format: ``kv_dtype``, or the format the key and value projections write (``prec.out``)."""
    if kv_dtype is None:
        return prec.out
    dtype_bytes(kv_dtype)  # an unknown name fails here, naming the dtypes there are
    return kv_dtype


def tensor_parallel_sizes(model: str | Model) -> tuple[int, ...]:
    """The chip counts a model splits over evenly: divisors of its query heads that divide its KV heads or are multiples of them.

    Examples
    --------
    >>> tensor_parallel_sizes("llama-3-70b")     # 64 query heads, 8 KV heads
    (1, 2, 4, 8, 16, 32, 64)
    """
    m = get_model(model)
    return tuple(n for n in range(1, m.heads + 1) if m.heads % n == 0 and (m.kv_heads % n == 0 or n % m.kv_heads == 0))


def _n_chips(model: Model, n_chips: int) -> int:
    n = int(as_size("n_chips", n_chips, scalar=True))
    sizes = tensor_parallel_sizes(model)
    if n not in sizes:
        raise ValueError(
            f"n_chips must split {model.name}'s {model.heads} query heads and {model.kv_heads} KV heads evenly "
            f"({', '.join(map(str, sizes))}), got {n}"
        )
    return n


# ----------------------------------------------------------------------------- pieces


def attention_flops(model: str | Model, context: ArrayLike, *, prefill: bool = False) -> FloatOrArray:
    """Attention's own FLOPs for one sequence: scores and weighted sums over its cached keys and values.

    Decode (``prefill=False``): one new token attends to ``context`` positions, ``4 L N H context``.
    Prefill: a prompt of ``context`` tokens attends causally, token ``i`` to ``i`` positions, so
    ``4 L N H (1 + 2 + ... + context) = 2 L N H context (context + 1)``.

    Examples
    --------
    >>> f"{attention_flops('llama-3-8b', 4096):.3e}"     # 4 * 32 layers * 32 heads * 128 * 4096
    '2.147e+09'
    >>> round(float(attention_flops("llama-3-8b", 2048, prefill=True) / (2 * 2048 * 7_504_658_432)), 4)
    0.0358
    """
    m = get_model(model)
    ctx = _context(context)
    per_position = 4.0 * m.layers * m.q_dim
    return per_position * ctx * (ctx + 1) / 2 if prefill else per_position * ctx


def allreduce_time(chip: str | Accelerator, num_bytes: ArrayLike, n_chips: int) -> FloatOrArray:
    """Time of one all-reduce of ``num_bytes`` over ``n_chips`` chips: ``max(latency, 2 (n-1)/n * bytes / bandwidth)``.

    A ring all-reduce sends each chip's ``num_bytes`` in ``n`` pieces twice round the ring (a
    reduce-scatter, then an all-gather), over the chip's link to its group
    (:meth:`~rooflinelib.specs.Accelerator.scale_up_link`, one way); no all-reduce is taken to be
    faster than the link's ``collective_latency``, a measured small all-reduce. One chip needs none: 0.

    Examples
    --------
    >>> allreduce_time("h100-sxm", 2 * 8192, 2)     # one token of Llama 3 70B: latency-bound, 12.5 us
    1.25e-05
    >>> allreduce_time("b200", 1e6, 2)
    Traceback (most recent call last):
    ...
    KeyError: "NVIDIA B200 (HGX) has no collective_latency for its 'nvlink' link in the spec table; use a chip that has one, such as 'h100-sxm'"
    """
    acc = get_accelerator(chip)
    nbytes = as_number("num_bytes", num_bytes, "bytes", allow_zero=True)
    n = int(as_size("n_chips", n_chips, scalar=True))
    if n == 1:
        return 0.0 if np.ndim(nbytes) == 0 else np.zeros_like(nbytes)
    link = acc.scale_up_link()
    if link.collective_latency is None:
        raise KeyError(
            f"{acc.name} has no collective_latency for its {link.name!r} link in the spec table; "
            "use a chip that has one, such as 'h100-sxm'"
        )
    out = np.maximum(link.collective_latency, 2 * (n - 1) / n * np.asarray(nbytes) / link.bandwidth)
    return float(out) if np.ndim(out) == 0 else out


# ----------------------------------------------------------------------------- decode


@dataclass(frozen=True)
class DecodeEstimate:
    """One decode step on the roofline, per chip of a group of ``n_chips`` (times in seconds).

    ``flops`` and ``hbm_bytes`` are what one chip does and reads (``kv_bytes`` of them the KV
    cache); ``t_math`` and ``t_comms`` their times at the chip's peak and HBM bandwidth;
    ``allreduces`` the all-reduces a step waits for, taking ``t_allreduce`` together;
    ``time = max(t_math, t_comms) + t_allreduce``; ``bound`` the larger of the first two.
    """

    model: str
    chip: str
    batch: float
    context: float
    n_chips: int
    flops: float
    hbm_bytes: float
    kv_bytes: float
    t_math: float
    t_comms: float
    allreduces: int
    t_allreduce: float
    time: float
    bound: str

    def as_dict(self) -> dict[str, Any]:
        """The estimate as a plain dict, e.g. for JSON."""
        return asdict(self)


def _decode_parts(
    model: str | Model,
    chip: str | Accelerator,
    batch: ArrayLike,
    context: ArrayLike,
    kv_dtype: str | None,
    precision: PrecisionLike,
    compute_dtype: str | None,
    n_chips: int,
    *,
    scalar: bool = False,
) -> tuple[FloatOrArray, ...]:
    """(flops, hbm bytes, kv bytes, T_math, T_comms, T_allreduce) of a decode step, per chip."""
    m, acc, prec = get_model(model), get_accelerator(chip), Precision.from_any(precision)
    B, ctx = _tokens("batch", batch, scalar=scalar), _context(context, scalar=scalar)
    n = _n_chips(m, n_chips)
    kv = kv_cache_bytes_per_token(m, _kv_dtype(kv_dtype, prec))
    flops = B * (2.0 * m.matmul_params + attention_flops(m, ctx)) / n
    kv_bytes = B * ctx * kv / min(n, m.kv_heads)
    hbm = forward_bytes(m, precision=prec) / n + kv_bytes
    tm = roofline.t_math(flops, acc.peak(compute_dtype or prec.x))
    tc = roofline.t_comms(hbm, acc.bandwidth("hbm"))
    t_ar = 2 * m.layers * allreduce_time(acc, B * m.hidden * prec.bytes[2], n)
    return flops, hbm, kv_bytes, tm, tc, t_ar


def decode_step_time(
    model: str | Model,
    chip: str | Accelerator,
    batch: ArrayLike,
    *,
    context: ArrayLike = 0,
    kv_dtype: str | None = None,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
    n_chips: int = 1,
) -> FloatOrArray:
    """Roofline time of one decode step of ``batch`` sequences, each with ``context`` tokens of KV cache.

    ``max(T_math, T_comms)`` with the weights and every sequence's cache read from HBM and
    attention's FLOPs counted (see the module's notes), plus the all-reduces when ``n_chips > 1``.
    ``precision`` gives the weights' and activations' formats (``Precision("bf16", w="int8")``);
    ``kv_dtype`` the cache's (default: the format the projections write, ``precision.out``, so
    int4 weights keep a bf16 cache); the FLOPs run at the chip's peak for ``compute_dtype``
    (default: the activations'). ``batch`` and ``context`` may be arrays (broadcast together).

    Examples
    --------
    >>> f"{decode_step_time('llama-3-8b', 'h100-sxm', 64) * 1e3:.2f} ms"     # the weights alone
    '4.48 ms'
    >>> f"{decode_step_time('llama-3-8b', 'h100-sxm', 64, context=4096) * 1e3:.1f} ms"   # + 34.4 GB of cache
    '14.7 ms'
    >>> decode_step_time("llama-3-8b", "h100-sxm", 0)
    Traceback (most recent call last):
    ...
    ValueError: batch must be > 0, got 0
    """
    *_, tm, tc, t_ar = _decode_parts(model, chip, batch, context, kv_dtype, precision, compute_dtype, n_chips)
    out = np.maximum(tm, tc) + t_ar
    return float(out) if np.ndim(out) == 0 else out


def estimate_decode(
    model: str | Model,
    chip: str | Accelerator,
    batch: int,
    *,
    context: int = 0,
    kv_dtype: str | None = None,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
    n_chips: int = 1,
) -> DecodeEstimate:
    """Every part of one decode step (see :func:`decode_step_time`), for one batch size and context.

    Examples
    --------
    >>> est = estimate_decode("llama-3-70b", "h100-sxm", 1, n_chips=2)
    >>> est.allreduces, f"{est.t_comms * 1e3:.2f} ms", f"{est.t_allreduce * 1e3:.2f} ms"   # 160 x 12.5 us
    (160, '20.75 ms', '2.00 ms')
    """
    flops, hbm, kv_bytes, tm, tc, t_ar = _decode_parts(
        model, chip, batch, context, kv_dtype, precision, compute_dtype, n_chips, scalar=True
    )
    m, n = get_model(model), int(n_chips)
    return DecodeEstimate(
        model=m.key,
        chip=get_accelerator(chip).key,
        batch=float(batch),
        context=float(context),
        n_chips=n,
        flops=float(flops),
        hbm_bytes=float(hbm),
        kv_bytes=float(kv_bytes),
        t_math=float(tm),
        t_comms=float(tc),
        allreduces=2 * m.layers if n > 1 else 0,
        t_allreduce=float(t_ar),
        time=float(max(float(tm), float(tc)) + float(t_ar)),
        bound=str(roofline.bottleneck(float(tm), float(tc))),
    )


def decode_critical_batch(
    model: str | Model,
    chip: str | Accelerator,
    *,
    context: float = 0,
    kv_dtype: str | None = None,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
) -> float:
    """Batch size at which a decode step's T_math reaches its T_comms (``inf`` where it never does).

    With no cache, ``2 B P_mm / peak = w P_read / bandwidth`` gives
    ``B* = (peak / bandwidth) * (w / 2) * (P_read / P_mm)``: the chip's ridge times ``w / 2``, as
    for one matmul, the last factor within a few parts in ten thousand of 1. With ``context``
    tokens of cache, each sequence adds ``context * kv`` bytes as well as its FLOPs:
    ``B* = (w P_read / bandwidth) / (f / peak - context * kv / bandwidth)``, with
    ``f = 2 P_mm + 4 L N H context``, which grows without bound as the context nears
    :func:`decode_context_limit`. Splitting the model over chips changes neither side's ratio.

    Examples
    --------
    >>> round(decode_critical_batch("llama-3-8b", "h100-sxm"), 1)          # the H100's bf16 ridge, 295.4
    295.4
    >>> int8_weights = Precision("bf16", w="int8")
    >>> round(decode_critical_batch("llama-3-8b", "h100-sxm", precision=int8_weights), 1)
    147.7
    >>> round(decode_critical_batch("llama-3-8b", "h100-sxm", context=128), 1)
    438.1
    >>> decode_critical_batch("llama-3-8b", "h100-sxm", context=4096)
    inf
    """
    m, acc, prec = get_model(model), get_accelerator(chip), Precision.from_any(precision)
    ctx = float(_context(context, scalar=True))
    peak, bw = acc.peak(compute_dtype or prec.x), acc.bandwidth("hbm")
    kv = kv_cache_bytes_per_token(m, _kv_dtype(kv_dtype, prec))
    per_sequence = (2.0 * m.matmul_params + float(attention_flops(m, ctx))) / peak - ctx * kv / bw
    if per_sequence <= 0:
        return math.inf
    return float(forward_bytes(m, precision=prec) / bw / per_sequence)


def decode_context_limit(
    model: str | Model,
    chip: str | Accelerator,
    *,
    kv_dtype: str | None = None,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
) -> float:
    """Context length (tokens per sequence) beyond which decode is memory-bound at every batch size.

    Each sequence adds ``f / peak`` to T_math, with ``f = 2 P_mm + 4 L N H S``, and
    ``S * kv / bandwidth`` to T_comms. While the second is smaller, a large enough batch makes
    the step compute-bound; once it is not, T_comms stays ahead at any batch, since it also
    holds the weights. Equal at ``S* = 2 P_mm / (kv * peak / bandwidth - 4 L N H)``: the weights'
    format does not enter, nor the number of chips of a tensor-parallel split with no more chips
    than KV heads (it divides both times alike). ``inf`` if attention alone is compute-bound (an intensity above the
    ridge), which no model here comes near.

    Examples
    --------
    >>> round(decode_context_limit("llama-3-8b", "h100-sxm"))
    393
    >>> round(decode_context_limit("llama-3-8b", "tpu-v5e")), round(decode_context_limit("llama-3-70b", "h100-sxm"))
    (484, 1476)
    """
    m, acc, prec = get_model(model), get_accelerator(chip), Precision.from_any(precision)
    peak, bw = acc.peak(compute_dtype or prec.x), acc.bandwidth("hbm")
    kv = kv_cache_bytes_per_token(m, _kv_dtype(kv_dtype, prec))
    denominator = kv * peak / bw - float(attention_flops(m, 1))
    return math.inf if denominator <= 0 else float(2.0 * m.matmul_params / denominator)


def max_decode_batch(
    model: str | Model,
    chip: str | Accelerator,
    context: int,
    *,
    kv_dtype: str | None = None,
    precision: PrecisionLike = "bf16",
    n_chips: int = 1,
) -> int:
    """The most sequences of ``context`` tokens whose KV cache fits in HBM beside the weights (0 if the weights do not).

    Each chip of a group of ``n_chips`` holds ``1 / n_chips`` of the weights (all of them, in
    ``precision.w``: :func:`~rooflinelib.models.weight_bytes`) and its share of every sequence's
    cache, ``context * kv / min(n_chips, K)``. Nothing is left for activations or the runtime,
    so a real server fits fewer.

    Examples
    --------
    >>> max_decode_batch("llama-3-8b", "h100-sxm", 4096)   # (85.52e9 - 16.06e9) / (4096 * 131,072)
    129
    >>> max_decode_batch("llama-3-70b", "h100-sxm", 4096), max_decode_batch("llama-3-70b", "h100-sxm", 4096, n_chips=2)
    (0, 22)
    """
    m, acc, prec = get_model(model), get_accelerator(chip), Precision.from_any(precision)
    if acc.hbm_capacity is None:
        raise ValueError(f"{acc.name} has no HBM capacity in the spec table; use a chip that has one")
    ctx = float(_tokens("context", context, scalar=True))
    n = _n_chips(m, n_chips)
    spare = acc.hbm_capacity - weight_bytes(m, prec.w) / n
    if spare <= 0:
        return 0
    per_sequence = ctx * kv_cache_bytes_per_token(m, _kv_dtype(kv_dtype, prec)) / min(n, m.kv_heads)
    return int(spare // per_sequence)


# ----------------------------------------------------------------------------- prefill


def prefill_time(
    model: str | Model,
    chip: str | Accelerator,
    sequences: ArrayLike,
    seq_len: ArrayLike,
    *,
    attention: bool = True,
    kv_dtype: str | None = None,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
    n_chips: int = 1,
) -> FloatOrArray:
    """Roofline time of the prefill of ``sequences`` prompts of ``seq_len`` tokens each.

    The activations ``[sequences, seq_len, D]`` reshape to ``[sequences * seq_len, D]``: each
    matmul sees that many tokens, and the weights are still read once. With ``attention`` (the
    default), causal attention's FLOPs, which grow with ``seq_len**2``, are counted, and the KV
    cache the prompts leave is written to HBM; ``attention=False`` gives the weights-only count.
    With ``n_chips > 1`` the all-reduces of ``[tokens, D]`` are added as in decode.

    Examples
    --------
    >>> f"{prefill_time('llama-3-8b', 'h100-sxm', 1, 2048) * 1e3:.1f} ms"   # 31.1 ms of matmuls + 3.6% attention
    '32.2 ms'
    >>> f"{prefill_time('llama-3-8b', 'h100-sxm', 1, 2048, attention=False) * 1e3:.1f} ms"
    '31.1 ms'
    """
    m, acc, prec = get_model(model), get_accelerator(chip), Precision.from_any(precision)
    S, P = _tokens("seq_len", seq_len), _tokens("sequences", sequences)
    n = _n_chips(m, n_chips)
    tokens = P * S
    flops = 2.0 * tokens * m.matmul_params
    hbm: FloatOrArray = forward_bytes(m, precision=prec) / n
    if attention:
        flops = flops + P * attention_flops(m, S, prefill=True)
        hbm = hbm + tokens * kv_cache_bytes_per_token(m, _kv_dtype(kv_dtype, prec)) / min(n, m.kv_heads)
    tm = roofline.t_math(flops / n, acc.peak(compute_dtype or prec.x))
    tc = roofline.t_comms(hbm, acc.bandwidth("hbm"))
    out = np.maximum(tm, tc) + 2 * m.layers * allreduce_time(acc, tokens * m.hidden * prec.bytes[2], n)
    return float(out) if np.ndim(out) == 0 else out
