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

These are **whole-step** rooflines: ``max(T_math, T_comms)`` of the step's summed FLOPs and
bytes, as if attention's cache reads overlapped the weight matmuls' arithmetic. A GPU runs the
kernels one after another, so :class:`DecodeEstimate` also gives each kind of kernel its own two
times and their **kernel-by-kernel** bound, the sum of each kernel's larger time.
Each sequence adds one token a step (speculative decoding adds several: ``new_tokens``) and reads
its own cache (sequences sharing a prefix, read once for all of them, are not modelled).

A **prefill** of ``sequences`` prompts of ``seq_len`` tokens is the same pass over
``sequences * seq_len`` tokens, with causal attention (token ``i`` attends to ``i`` positions:
``2 * L * N * H * seq_len * (seq_len + 1)`` FLOPs a prompt) and the cache written once.

With ``n_chips > 1`` the model is split by **tensor parallelism**: every weight matrix and the
KV heads are divided over the chips (beyond ``K`` chips each KV head is copied onto
``n_chips / K`` of them, :func:`kv_head_copies`, so a chip's share of the cache stops shrinking
at ``1 / K``), each chip does ``1 / n_chips`` of the FLOPs, and two **all-reduces** per layer sum the
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
from typing import Any, NamedTuple

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
    "kv_head_copies",
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

    Up to ``K`` chips each holds ``K / n`` whole KV heads; beyond ``K`` each KV head is copied onto
    ``n / K`` chips (:func:`kv_head_copies`), so those splits do not divide the cache further.

    Examples
    --------
    >>> tensor_parallel_sizes("llama-3-70b")     # 64 query heads, 8 KV heads
    (1, 2, 4, 8, 16, 32, 64)
    """
    m = get_model(model)
    return tuple(n for n in range(1, m.heads + 1) if m.heads % n == 0 and (m.kv_heads % n == 0 or n % m.kv_heads == 0))


def kv_head_copies(model: str | Model, n_chips: int) -> int:
    """How many chips of a tensor-parallel split hold each KV head: 1 up to ``K`` chips, ``n_chips / K`` beyond.

    Each chip keeps the keys and values of the query heads it computes. With more chips than KV
    heads a KV head serves query heads on several chips, and each of them keeps a copy: a chip's
    share of every sequence's cache is ``copies / n_chips``, never less than ``1 / K``.

    Examples
    --------
    >>> kv_head_copies("llama-3-70b", 8), kv_head_copies("llama-3-70b", 16)   # 8 KV heads
    (1, 2)
    >>> kv_head_copies("llama-3-70b", 3)
    Traceback (most recent call last):
    ...
    ValueError: n_chips must split Llama 3 70B's 64 query heads and 8 KV heads evenly (1, 2, 4, 8, 16, 32, 64), got 3
    """
    m = get_model(model)
    n = _n_chips(m, n_chips)
    return max(1, n // m.kv_heads)


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


def allreduce_time(
    chip: str | Accelerator, num_bytes: ArrayLike, n_chips: int, *, latency: float | None = None
) -> FloatOrArray:
    """Time of one all-reduce of ``num_bytes`` over ``n_chips`` chips: ``max(latency, 2 (n-1)/n * bytes / bandwidth)``.

    A ring all-reduce sends each chip's ``num_bytes`` in ``n`` pieces twice round the ring (a
    reduce-scatter, then an all-gather), over the chip's link to its group
    (:meth:`~rooflinelib.specs.Accelerator.scale_up_link`, one way); no all-reduce is taken to be
    faster than the link's ``collective_latency``, a measured small all-reduce, or than ``latency``
    (seconds) where given, to ask what a faster library would change. One chip needs none: 0.

    Examples
    --------
    >>> allreduce_time("h100-sxm", 2 * 8192, 2)     # one token of Llama 3 70B: latency-bound, 12.5 us
    1.25e-05
    >>> allreduce_time("h100-sxm", 2 * 8192, 2, latency=3e-6)
    3e-06
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
    if latency is not None:
        lat = float(as_number("latency", latency, "s", scalar=True))
    elif link.collective_latency is None:
        raise KeyError(
            f"{acc.name} has no collective_latency for its {link.name!r} link in the spec table; "
            "use a chip that has one, such as 'h100-sxm'"
        )
    else:
        lat = link.collective_latency
    out = np.maximum(lat, 2 * (n - 1) / n * np.asarray(nbytes) / link.bandwidth)
    return float(out) if np.ndim(out) == 0 else out


# ----------------------------------------------------------------------------- decode


@dataclass(frozen=True)
class DecodeEstimate:
    """One decode step on the roofline, per chip of a group of ``n_chips`` (times in seconds).

    ``flops`` and ``hbm_bytes`` are what one chip does and reads (``kv_bytes`` of them the KV
    cache); ``t_math`` and ``t_comms`` their times at the chip's peaks and HBM bandwidth;
    ``allreduces`` the all-reduces a step waits for, taking ``t_allreduce`` together;
    ``time = max(t_math, t_comms) + t_allreduce``, the **whole-step** bound; ``bound`` the larger
    of the first two.

    The same times split by kernel: ``t_math_matmuls`` and ``t_comms_weights`` are the weight
    matmuls' arithmetic and the weights they read, ``t_math_attention`` and ``t_comms_cache``
    attention's arithmetic and the cache it reads. Kernels that run one after another cannot hide
    one's reads under another's arithmetic: ``time_kernels`` is the sum of each kernel's larger
    time, plus ``t_allreduce``, never less than ``time``.
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
    t_math_matmuls: float
    t_comms_weights: float
    t_math_attention: float
    t_comms_cache: float
    time_kernels: float

    @property
    def matmuls_bound(self) -> str:
        """The weight matmuls' own verdict, ``"compute-bound"`` or ``"communication-bound"``."""
        return str(roofline.bottleneck(self.t_math_matmuls, self.t_comms_weights))

    @property
    def attention_bound(self) -> str:
        """Attention's own verdict (``"communication-bound"`` whenever its cache is read at all)."""
        return str(roofline.bottleneck(self.t_math_attention, self.t_comms_cache))

    def as_dict(self) -> dict[str, Any]:
        """The estimate as a plain dict, e.g. for JSON."""
        return asdict(self)


class _Parts(NamedTuple):
    """A decode step's counts and times on one chip (floats, or arrays when batch or context are)."""

    flops: FloatOrArray
    hbm: FloatOrArray
    kv_bytes: FloatOrArray
    tm_matmuls: FloatOrArray
    tm_attention: FloatOrArray
    tc_weights: FloatOrArray
    tc_cache: FloatOrArray
    t_allreduce: FloatOrArray


def _peaks(
    acc: Accelerator, prec: Precision, compute_dtype: str | None, attention_dtype: str | None
) -> tuple[float, float]:
    """The peaks of the weight matmuls (``compute_dtype``, default the activations') and of attention (default the same)."""
    peak = acc.peak(compute_dtype or prec.x)
    return peak, (peak if attention_dtype is None else acc.peak(attention_dtype))


def _decode_parts(
    model: str | Model,
    chip: str | Accelerator,
    batch: ArrayLike,
    context: ArrayLike,
    kv_dtype: str | None,
    precision: PrecisionLike,
    compute_dtype: str | None,
    attention_dtype: str | None,
    n_chips: int,
    *,
    scalar: bool = False,
) -> _Parts:
    """Every count and time of a decode step, per chip."""
    m, acc, prec = get_model(model), get_accelerator(chip), Precision.from_any(precision)
    B, ctx = _tokens("batch", batch, scalar=scalar), _context(context, scalar=scalar)
    n = _n_chips(m, n_chips)
    kv = kv_cache_bytes_per_token(m, _kv_dtype(kv_dtype, prec))
    peak, peak_attention = _peaks(acc, prec, compute_dtype, attention_dtype)
    mm_flops = B * 2.0 * m.matmul_params / n
    att_flops = B * attention_flops(m, ctx) / n
    kv_bytes = B * ctx * kv * kv_head_copies(m, n) / n
    weights = forward_bytes(m, precision=prec) / n
    bw = acc.bandwidth("hbm")
    return _Parts(
        flops=mm_flops + att_flops,
        hbm=weights + kv_bytes,
        kv_bytes=kv_bytes,
        tm_matmuls=roofline.t_math(mm_flops, peak),
        tm_attention=roofline.t_math(att_flops, peak_attention),
        tc_weights=roofline.t_comms(weights, bw),
        tc_cache=roofline.t_comms(kv_bytes, bw),
        t_allreduce=2 * m.layers * allreduce_time(acc, B * m.hidden * prec.bytes[2], n),
    )


def decode_step_time(
    model: str | Model,
    chip: str | Accelerator,
    batch: ArrayLike,
    *,
    context: ArrayLike = 0,
    kv_dtype: str | None = None,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
    attention_dtype: str | None = None,
    n_chips: int = 1,
) -> FloatOrArray:
    """Roofline time of one decode step of ``batch`` sequences, each with ``context`` tokens of KV cache.

    ``max(T_math, T_comms)`` with the weights and every sequence's cache read from HBM and
    attention's FLOPs counted (see the module's notes), plus the all-reduces when ``n_chips > 1``:
    a whole-step bound (:class:`DecodeEstimate` also gives the kernel-by-kernel one).
    ``precision`` gives the weights' and activations' formats (``Precision("bf16", w="int8")``);
    ``kv_dtype`` the cache's (default: the format the projections write, ``precision.out``, so
    int4 weights keep a bf16 cache); the weight matmuls run at the chip's peak for
    ``compute_dtype`` (default: the activations'), attention at the peak for ``attention_dtype``
    (default: the same). ``batch`` and ``context`` may be arrays (broadcast together).

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
    p = _decode_parts(model, chip, batch, context, kv_dtype, precision, compute_dtype, attention_dtype, n_chips)
    out = np.maximum(p.tm_matmuls + p.tm_attention, p.tc_weights + p.tc_cache) + p.t_allreduce
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
    attention_dtype: str | None = None,
    n_chips: int = 1,
) -> DecodeEstimate:
    """Every part of one decode step (see :func:`decode_step_time`), for one batch size and context.

    Examples
    --------
    >>> est = estimate_decode("llama-3-70b", "h100-sxm", 1, n_chips=2)
    >>> est.allreduces, f"{est.t_comms * 1e3:.2f} ms", f"{est.t_allreduce * 1e3:.2f} ms"   # 160 x 12.5 us
    (160, '20.75 ms', '2.00 ms')

    Kernel by kernel, 512 sequences of 1,000 tokens: the weight matmuls compute-bound, attention not.

    >>> est = estimate_decode("llama-3-8b", "h100-sxm", 512, context=1000)
    >>> f"{est.t_math_matmuls * 1e3:.2f} ms > {est.t_comms_weights * 1e3:.2f} ms", est.attention_bound
    ('7.77 ms > 4.48 ms', 'communication-bound')
    >>> est.bound, f"{est.time * 1e3:.2f} ms", f"{est.time_kernels * 1e3:.2f} ms"
    ('communication-bound', '24.51 ms', '27.80 ms')
    """
    p = _decode_parts(
        model, chip, batch, context, kv_dtype, precision, compute_dtype, attention_dtype, n_chips, scalar=True
    )
    m, n = get_model(model), int(n_chips)
    tm_mm, tm_att, tc_w, tc_kv, t_ar = (
        float(x) for x in (p.tm_matmuls, p.tm_attention, p.tc_weights, p.tc_cache, p.t_allreduce)
    )
    tm, tc = tm_mm + tm_att, tc_w + tc_kv
    return DecodeEstimate(
        model=m.key,
        chip=get_accelerator(chip).key,
        batch=float(batch),
        context=float(context),
        n_chips=n,
        flops=float(p.flops),
        hbm_bytes=float(p.hbm),
        kv_bytes=float(p.kv_bytes),
        t_math=tm,
        t_comms=tc,
        allreduces=2 * m.layers if n > 1 else 0,
        t_allreduce=t_ar,
        time=max(tm, tc) + t_ar,
        bound=str(roofline.bottleneck(tm, tc)),
        t_math_matmuls=tm_mm,
        t_comms_weights=tc_w,
        t_math_attention=tm_att,
        t_comms_cache=tc_kv,
        time_kernels=max(tm_mm, tc_w) + max(tm_att, tc_kv) + t_ar,
    )


def decode_critical_batch(
    model: str | Model,
    chip: str | Accelerator,
    *,
    context: float = 0,
    kv_dtype: str | None = None,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
    attention_dtype: str | None = None,
    n_chips: int = 1,
) -> float:
    """Batch size at which a decode step's T_math reaches its T_comms (``inf`` where it never does).

    With no cache, ``2 B P_mm / peak = w P_read / bandwidth`` gives
    ``B* = (peak / bandwidth) * (w / 2) * (P_read / P_mm)``: the chip's ridge times ``w / 2``, as
    for one matmul, the last factor within a few parts in ten thousand of 1. With ``context``
    tokens of cache, each sequence adds ``context * kv`` bytes as well as its FLOPs:
    ``B* = (w P_read / bandwidth) / (f / peak - context * kv / bandwidth)``, with
    ``f = 2 P_mm + 4 L N H context``, which grows without bound as the context nears
    :func:`decode_context_limit`. A tensor-parallel split over no more chips than KV heads divides
    both sides alike; beyond, each chip's share of the cache is ``copies`` times larger
    (:func:`kv_head_copies`). This is the whole step's crossing: kernel by kernel, the weight
    matmuls turn compute-bound at the batch without a cache, whatever the context.

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
    copies = kv_head_copies(m, n_chips)
    peak, peak_attention = _peaks(acc, prec, compute_dtype, attention_dtype)
    bw = acc.bandwidth("hbm")
    kv = kv_cache_bytes_per_token(m, _kv_dtype(kv_dtype, prec))
    per_sequence = (
        2.0 * m.matmul_params / peak + float(attention_flops(m, ctx)) / peak_attention - ctx * kv * copies / bw
    )
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
    attention_dtype: str | None = None,
    n_chips: int = 1,
    new_tokens: int = 1,
) -> float:
    """The context limit: tokens per sequence beyond which the whole decode step is memory-bound at every batch size.

    Not the longest context a model accepts: the context at which one more sequence adds as much
    time to the step's HBM reads as to its arithmetic. Each sequence adds ``f / peak`` to
    T_math, with ``f = 2 P_mm + 4 L N H S``, and ``S * kv / bandwidth`` to T_comms. While the
    second is smaller, a large enough batch makes the step compute-bound; once it is not, T_comms
    stays ahead at any batch, since it also holds the weights. Equal at
    ``S* = 2 P_mm / (kv * peak / bandwidth - 4 L N H)``.

    What it assumes, each an argument:

    - The **arithmetic's format** (``compute_dtype``, default the activations', and
      ``attention_dtype``, default the same): fp8 arithmetic doubles the peak the ``2 P_mm``
      term runs at. The weights' storage format alone does not enter (weight-only quantization).
    - The **cache's format** (``kv_dtype``) and the chip's ridge.
    - **One new token** per sequence and step (``new_tokens``): speculative decoding verifies
      several, each attending to the whole cache, which is read once for all of them:
      ``S* = 2 q P_mm / (kv * peak / bandwidth - 4 q L N H)``.
    - A tensor-parallel split (``n_chips``) over no more chips than KV heads divides both times
      alike; beyond, each KV head is copied (:func:`kv_head_copies`), each chip reads
      ``copies`` times its share of the cache, and the limit falls about as many times.
    - Each sequence reads its own cache, and the step is a **whole-step** roofline,
      ``max(T_math, T_comms)``: kernel by kernel the weight matmuls still turn compute-bound at the
      batch :func:`decode_critical_batch` gives without a cache, while attention stays memory-bound.

    ``inf`` if attention alone is compute-bound (an intensity above the ridge), which no model
    here comes near.

    Examples
    --------
    >>> round(decode_context_limit("llama-3-8b", "h100-sxm"))
    393
    >>> round(decode_context_limit("llama-3-8b", "tpu-v5e")), round(decode_context_limit("llama-3-70b", "h100-sxm"))
    (484, 1476)
    >>> round(decode_context_limit("llama-3-70b", "h100-sxm", n_chips=16))     # 2 copies of each KV head
    728
    >>> round(decode_context_limit("llama-3-8b", "h100-sxm", precision="fp8", kv_dtype="bf16", attention_dtype="bf16"))
    197
    >>> round(decode_context_limit("llama-3-8b", "h100-sxm", new_tokens=4))     # speculative decoding
    1640
    """
    m, acc, prec = get_model(model), get_accelerator(chip), Precision.from_any(precision)
    q = int(_tokens("new_tokens", new_tokens, scalar=True))
    copies = kv_head_copies(m, n_chips)
    peak, peak_attention = _peaks(acc, prec, compute_dtype, attention_dtype)
    bw = acc.bandwidth("hbm")
    kv = kv_cache_bytes_per_token(m, _kv_dtype(kv_dtype, prec))
    # per sequence and cached token: bytes' time less attention's time; the weight matmuls' time over it
    denominator = kv * copies / bw - q * float(attention_flops(m, 1)) / peak_attention
    return math.inf if denominator <= 0 else float(2.0 * q * m.matmul_params / peak / denominator)


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
    cache, ``context * kv * copies / n_chips`` (:func:`kv_head_copies`: ``1 / K`` of it beyond
    ``K`` chips). This is an upper bound: it counts the whole capacity the device reports, of
    which a program can allocate less (the CUDA context and the runtime keep some), and leaves
    nothing for activations, so a real server fits fewer.

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
    per_sequence = ctx * kv_cache_bytes_per_token(m, _kv_dtype(kv_dtype, prec)) * kv_head_copies(m, n) / n
    return int(spare // per_sequence)


def capacity_crossing(
    model: str | Model,
    chip: str | Accelerator,
    *,
    kv_dtype: str | None = None,
    precision: PrecisionLike = "bf16",
    n_chips: int = 1,
) -> int:
    """The shortest context (whole tokens) from which no batch that fits in HBM is compute-bound.

    From there on :func:`max_decode_batch` falls below :func:`decode_critical_batch`: the step is
    memory-bound at every batch the chips can hold, before the context limit
    (:func:`decode_context_limit`), where the critical batch grows without bound. The largest batch
    counts the whole reported capacity (an upper bound), so this context is an upper bound too.

    Examples
    --------
    >>> capacity_crossing("llama-3-8b", "h100-sxm"), capacity_crossing("llama-3-70b", "h100-sxm", n_chips=2)
    (323, 256)
    """
    m = get_model(model)
    kw = dict(kv_dtype=kv_dtype, precision=precision, n_chips=n_chips)

    def short(ctx: int) -> bool:
        return max_decode_batch(m, chip, ctx, **kw) < decode_critical_batch(m, chip, context=ctx, **kw)  # type: ignore[arg-type]

    hi = math.ceil(decode_context_limit(m, chip, **kw))  # type: ignore[arg-type]
    lo = 1
    if short(lo):
        return lo
    while hi - lo > 1:  # short(lo) is False, short(hi) is True: B* is infinite from the limit on
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if short(mid) else (mid, hi)
    return hi


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
        hbm = hbm + tokens * kv_cache_bytes_per_token(m, _kv_dtype(kv_dtype, prec)) * kv_head_copies(m, n) / n
    tm = roofline.t_math(flops / n, acc.peak(compute_dtype or prec.x))
    tc = roofline.t_comms(hbm, acc.bandwidth("hbm"))
    out = np.maximum(tm, tc) + 2 * m.layers * allreduce_time(acc, tokens * m.hidden * prec.bytes[2], n)
    return float(out) if np.ndim(out) == 0 else out
