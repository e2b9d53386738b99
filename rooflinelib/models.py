"""Language models as data: shapes, parameters, weights and KV cache in bytes, and a forward pass's weights.

The shapes live in ``data/models.toml``, copied from each model's published ``config.json``
with its source. This module counts parameters from those shapes, lists the matmuls of one
layer, and estimates a forward pass's weight matmuls on a chip from the spec table. Decode
with its KV cache, prefill with attention, and chips in a group are in :mod:`rooflinelib.serving`.

A forward pass over ``T`` tokens (``T = B`` for one decode step of ``B`` sequences,
``T = B * S`` for the prefill of ``B`` prompts of ``S`` tokens: the ``[B, S, D]`` activations
are reshaped to ``[B * S, D]``) is counted as:

- FLOPs: ``2 * T * matmul_params``: every weight of every matmul meets every token once;
- bytes: every weight the pass reads, once (``streamed_params`` times bytes per weight). The
  input embedding table is not streamed: a lookup gathers one row per token.

Left out here: attention's own FLOPs and its reads of the KV cache, activations, the cost of
norms and the activation function, and communication between chips (:mod:`rooflinelib.serving`
adds the KV cache, attention and the all-reduces).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

from rooflinelib import roofline
from rooflinelib._checks import ArrayLike, FloatOrArray, as_number, as_size, did_you_mean
from rooflinelib.precision import Precision, PrecisionLike, dtype_bytes
from rooflinelib.specs import Accelerator, get_accelerator, normalize_name, read_table

__all__ = [
    "MODELS",
    "ForwardEstimate",
    "LayerMatmul",
    "Model",
    "chips_to_fit",
    "estimate_forward",
    "forward_bytes",
    "forward_flops",
    "get_model",
    "kv_cache_bytes_per_token",
    "layer_matmuls",
    "load_models",
    "param_count",
    "weight_bytes",
]


class LayerMatmul(NamedTuple):
    """One weight matrix of a Transformer layer: ``[T, D] @ [D, F]``, named as in the published checkpoint."""

    name: str
    D: int
    F: int


@dataclass(frozen=True)
class Model:
    """The shape of one decoder-only Transformer, as its published ``config.json`` gives it.

    Sizes follow the book's letters where it has them: ``hidden`` is ``D``, ``mlp`` is ``F``.
    Attention has ``heads`` query heads and ``kv_heads`` key/value heads, each ``head_dim`` wide.

    Examples
    --------
    >>> m = get_model("llama-3-8b")
    >>> m.hidden, m.mlp, m.layers, m.heads, m.kv_heads, m.vocab
    (4096, 14336, 32, 32, 8, 128256)
    >>> f"{m.params:,}"
    '8,030,261,248'
    """

    key: str
    name: str
    family: str
    source: str
    paper: str
    hidden: int
    mlp: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied_embeddings: bool
    qkv_bias: bool
    gated_mlp: bool
    notes: str = ""

    @classmethod
    def custom(
        cls,
        name: str,
        *,
        hidden: int,
        mlp: int,
        layers: int,
        heads: int,
        kv_heads: int,
        vocab: int,
        head_dim: int | None = None,
        tied_embeddings: bool = False,
        qkv_bias: bool = False,
        gated_mlp: bool = True,
    ) -> Model:
        """A model that is not in the table, e.g. a shape an exercise makes up; checked as the table is.

        ``head_dim`` defaults to ``hidden // heads``.

        Examples
        --------
        >>> tiny = Model.custom("tiny", hidden=64, mlp=256, layers=2, heads=4, kv_heads=2, vocab=1000)
        >>> tiny.params                     # 2 * (2*64*64 + 2*64*32 + 3*64*256 + 2*64) + 64 + 2*1000*64
        251200
        >>> Model.custom("bad", hidden=64, mlp=256, layers=2, heads=4, kv_heads=3, vocab=1000)
        Traceback (most recent call last):
        ...
        ValueError: custom model: bad.kv_heads must divide heads (4), got 3
        """
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"name must be a non-empty string, got {name!r}")
        if head_dim is None and isinstance(hidden, int) and isinstance(heads, int) and heads > 0:
            head_dim = hidden // heads
        entry = {
            "name": name,
            "family": "custom",
            "source": "user-supplied",
            "paper": "user-supplied",
            "hidden": hidden,
            "mlp": mlp,
            "layers": layers,
            "heads": heads,
            "kv_heads": kv_heads,
            "head_dim": head_dim,
            "vocab": vocab,
            "tied_embeddings": tied_embeddings,
            "qkv_bias": qkv_bias,
            "gated_mlp": gated_mlp,
        }
        return _model("custom model", name, entry)

    @property
    def q_dim(self) -> int:
        """Width of the queries (and of the attention output): ``heads * head_dim``."""
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the keys, and of the values: ``kv_heads * head_dim``."""
        return self.kv_heads * self.head_dim

    @property
    def layer_params(self) -> int:
        """Parameters of one layer: its matmul weights, the q/k/v biases if any, and two norm weights."""
        weights = sum(m.D * m.F for m in layer_matmuls(self))
        biases = self.q_dim + 2 * self.kv_dim if self.qkv_bias else 0
        return weights + biases + 2 * self.hidden

    @property
    def embedding_params(self) -> int:
        """Parameters of the input embedding table, ``vocab * hidden`` (shared with the output layer if tied)."""
        return self.vocab * self.hidden

    @property
    def params(self) -> int:
        """Every parameter: the layers, the final norm, the embedding table and (if not tied) the output layer."""
        tables = self.embedding_params * (1 if self.tied_embeddings else 2)
        return self.layers * self.layer_params + self.hidden + tables

    @property
    def matmul_params(self) -> int:
        """Weights that each token is multiplied by: every layer's matmuls and the output layer."""
        return self.layers * sum(m.D * m.F for m in layer_matmuls(self)) + self.vocab * self.hidden

    @property
    def streamed_params(self) -> int:
        """Parameters a forward pass reads in full: all but an untied input embedding table, which is only gathered."""
        return self.params - (0 if self.tied_embeddings else self.embedding_params)


def layer_matmuls(model: str | Model) -> tuple[LayerMatmul, ...]:
    """The weight matrices of one layer, ``(name, D, F)``, in the order a token meets them.

    Attention: ``q_proj``, ``k_proj``, ``v_proj`` (``hidden`` to the query or key/value width),
    ``o_proj`` (back to ``hidden``). MLP: ``gate_proj`` and ``up_proj`` (``hidden`` to ``mlp``;
    no gate without a gated MLP), ``down_proj`` (``mlp`` to ``hidden``).

    Examples
    --------
    >>> [(m.name, m.D, m.F) for m in layer_matmuls("llama-3-8b")][:3]
    [('q_proj', 4096, 4096), ('k_proj', 4096, 1024), ('v_proj', 4096, 1024)]
    """
    m = get_model(model)
    gate = (LayerMatmul("gate_proj", m.hidden, m.mlp),) if m.gated_mlp else ()
    return (
        LayerMatmul("q_proj", m.hidden, m.q_dim),
        LayerMatmul("k_proj", m.hidden, m.kv_dim),
        LayerMatmul("v_proj", m.hidden, m.kv_dim),
        LayerMatmul("o_proj", m.q_dim, m.hidden),
        *gate,
        LayerMatmul("up_proj", m.hidden, m.mlp),
        LayerMatmul("down_proj", m.mlp, m.hidden),
    )


def param_count(model: str | Model) -> int:
    """Every parameter of ``model`` (see :attr:`Model.params`).

    Examples
    --------
    >>> f"{param_count('llama-3-70b') / 1e9:.2f}e9"
    '70.55e9'
    """
    return get_model(model).params


def weight_bytes(model: str | Model, dtype: str = "bf16") -> float:
    """Bytes of all of ``model``'s parameters stored in ``dtype`` (quantization scales left out).

    Examples
    --------
    >>> f"{weight_bytes('llama-3-8b', 'bf16') / 1e9:.2f} GB"   # 8.03e9 parameters x 2 bytes
    '16.06 GB'
    >>> weight_bytes("llama-3-8b", "int3")
    Traceback (most recent call last):
    ...
    KeyError: "unknown dtype 'int3'; use one of 'fp64', 'fp32', 'tf32', 'bf16', 'fp16', 'fp8', 'int8', 'int4'"
    """
    return float(get_model(model).params * dtype_bytes(dtype))


def chips_to_fit(model: str | Model, chip: str | Accelerator, dtype: str = "bf16") -> int:
    """The fewest chips whose HBM together holds ``model``'s weights in ``dtype``.

    Capacities are the spec table's ``hbm_capacity``: what the device reports where a public
    report exists (an H100's "80 GB" is 81,559 MiB), else the printed figure. Weights only:
    nothing is left for the KV cache, activations or the runtime, and the count need not split
    the model evenly (see :func:`~rooflinelib.serving.tensor_parallel_sizes`), so a real
    deployment needs at least this many, often more.

    Examples
    --------
    >>> chips_to_fit("llama-3-70b", "h100-sxm", "bf16")   # 141.1 GB over 85.5 GB chips
    2
    >>> chips_to_fit("llama-3-70b", "h200", "bf16")       # 141.1 GB in 150.8 GB
    1
    """
    acc = get_accelerator(chip)
    if acc.hbm_capacity is None:
        raise ValueError(f"{acc.name} has no HBM capacity in the spec table; use a chip that has one")
    return math.ceil(weight_bytes(model, dtype) / acc.hbm_capacity)


def kv_cache_bytes_per_token(model: str | Model, kv_dtype: str = "bf16") -> float:
    """Bytes of KV cache one token adds: a key and a value per layer and KV head, ``2 * L * K * H * b``.

    ``b`` is the bytes per number of the cache's own format, ``kv_dtype``, which need not be
    the weights': a model served with int4 weights usually keeps its cache in bf16.

    Examples
    --------
    >>> kv_cache_bytes_per_token("llama-3-8b")   # 2 * 32 layers * 8 heads * 128 * 2 bytes = 128 KiB
    131072.0
    >>> kv_cache_bytes_per_token("llama-3-8b", "fp8")
    65536.0
    """
    m = get_model(model)
    return float(2 * m.layers * m.kv_heads * m.head_dim * dtype_bytes(kv_dtype))


def _tokens(name: str, value: ArrayLike, *, scalar: bool = False) -> FloatOrArray:
    """A token or sequence count: > 0 (``batch must be > 0, got 0``), then whole."""
    as_number(name, value, scalar=scalar)
    return as_size(name, value, scalar=scalar)


def forward_flops(model: str | Model, tokens: ArrayLike) -> FloatOrArray:
    """Matmul FLOPs of a forward pass over ``tokens`` tokens: ``2 * tokens * matmul_params``.

    Attention's own FLOPs (scores and weighted sums over the context) are left out.

    Examples
    --------
    >>> f"{forward_flops('llama-3-8b', 1):.3e}"
    '1.501e+10'
    """
    return 2 * _tokens("tokens", tokens) * get_model(model).matmul_params


def forward_bytes(model: str | Model, *, precision: PrecisionLike = "bf16") -> float:
    """Bytes of weights a forward pass reads from HBM, once, whatever the number of tokens.

    ``precision``'s ``w`` is the weights' dtype. KV cache reads and activations are left out.

    Examples
    --------
    >>> f"{forward_bytes('llama-3-8b') / 1e9:.2f} GB"   # bf16: all but the 1.05 GB input embedding table
    '15.01 GB'
    """
    _, w, _ = Precision.from_any(precision).bytes
    return float(get_model(model).streamed_params * w)


@dataclass(frozen=True)
class ForwardEstimate:
    """Roofline estimate of one forward pass (times in seconds, over ``n_chips`` chips together)."""

    model: str
    chip: str
    tokens: float
    n_chips: int
    flops: float
    bytes: float
    t_math: float
    t_comms: float
    t_lower: float
    t_upper: float
    bound: str

    def as_dict(self) -> dict[str, Any]:
        """The estimate as a plain dict, e.g. for JSON."""
        return asdict(self)


def _peak_and_bandwidth(chip: str | Accelerator, prec: Precision, compute_dtype: str | None) -> tuple[float, float]:
    acc = get_accelerator(chip)
    return acc.peak(compute_dtype or prec.x), acc.bandwidth("hbm")


def _times(
    model: str | Model,
    chip: str | Accelerator,
    tokens: ArrayLike,
    precision: PrecisionLike,
    compute_dtype: str | None,
    n_chips: int,
) -> tuple[FloatOrArray, FloatOrArray]:
    prec = Precision.from_any(precision)
    peak, bw = _peak_and_bandwidth(chip, prec, compute_dtype)
    n = float(as_size("n_chips", n_chips, scalar=True))
    tm = roofline.t_math(forward_flops(model, tokens), n * peak)
    tc = roofline.t_comms(forward_bytes(model, precision=prec), n * bw)
    return tm, tc


def estimate_forward(
    model: str | Model,
    chip: str | Accelerator,
    tokens: int,
    *,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
    n_chips: int = 1,
) -> ForwardEstimate:
    """FLOPs, bytes, T_math, T_comms, bounds and verdict of a forward pass over ``tokens`` tokens.

    ``precision`` gives the dtypes (``Precision("bf16", w="int8")`` for int8 weights); the FLOPs
    run at the chip's peak for ``compute_dtype`` (default: the activations' dtype). With
    ``n_chips`` the weights and the work are split evenly over that many chips, and the
    communication between them is left out: this is the weights' share of a pass only, and
    :func:`~rooflinelib.serving.estimate_decode` adds the KV cache, attention and the all-reduces.

    Examples
    --------
    >>> est = estimate_forward("llama-3-8b", "h100-sxm", 1)
    >>> est.bound, f"{est.t_lower * 1e3:.2f} ms"
    ('communication-bound', '4.48 ms')
    """
    tm, tc = _times(model, chip, _tokens("tokens", tokens, scalar=True), precision, compute_dtype, n_chips)
    lower, upper = roofline.runtime_bounds(tm, tc)
    return ForwardEstimate(
        model=get_model(model).key,
        chip=get_accelerator(chip).key,
        tokens=float(tokens),
        n_chips=int(n_chips),
        flops=float(forward_flops(model, tokens)),
        bytes=forward_bytes(model, precision=precision),
        t_math=float(tm),
        t_comms=float(tc),
        t_lower=float(lower),
        t_upper=float(upper),
        bound=str(roofline.bottleneck(tm, tc)),
    )


# ----------------------------------------------------------------------------- loading and lookup

_SIZES = ("hidden", "mlp", "layers", "heads", "kv_heads", "head_dim", "vocab")
_FLAGS = ("tied_embeddings", "qkv_bias", "gated_mlp")
_TEXTS = ("name", "family", "source", "paper")
_KEYS = {*_SIZES, *_FLAGS, *_TEXTS, "notes"}


def _model(origin: str, key: str, entry: object) -> Model:
    def fail(where: str, message: str) -> ValueError:
        return ValueError(f"{origin}: {key}{where} {message}")

    if not isinstance(entry, Mapping):
        raise fail("", f"must be a table, got {entry!r}")
    for name in entry:
        if name not in _KEYS:
            raise fail(f".{name}", f"is not a known key; {did_you_mean(name, sorted(_KEYS))}")
    for name in (*_SIZES, *_FLAGS, *_TEXTS):
        if name not in entry:
            raise fail("", f"is missing {name!r}")
    for name in _SIZES:
        value = entry[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise fail(f".{name}", f"must be a whole number >= 1, got {value!r}")
    for name in _FLAGS:
        if not isinstance(entry[name], bool):
            raise fail(f".{name}", f"must be true or false, got {entry[name]!r}")
    for name in (*_TEXTS, "notes"):
        if name in entry and (not isinstance(entry[name], str) or (name != "notes" and not entry[name].strip())):
            raise fail(f".{name}", f"must be non-empty text, got {entry[name]!r}")
    if entry["heads"] % entry["kv_heads"]:
        raise fail(".kv_heads", f"must divide heads ({entry['heads']}), got {entry['kv_heads']}")
    return Model(key=key, **{name: entry[name] for name in (*_TEXTS, *_SIZES, *_FLAGS)}, notes=entry.get("notes", ""))


def load_models(path: str | None = None) -> Mapping[str, Model]:
    """Read and check the model table (the packaged ``data/models.toml`` unless ``path`` is given).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> bad = pathlib.Path(tempfile.mkdtemp()) / "models.toml"
    >>> _ = bad.write_text('[tiny]\\nname = "Tiny"\\nhidden = 0\\n')
    >>> load_models(str(bad))
    Traceback (most recent call last):
    ...
    ValueError: models.toml: tiny is missing 'mlp'
    """
    origin, table = read_table(path, "models.toml")
    return MappingProxyType({key: _model(origin, key, entry) for key, entry in table.items()})


#: Every model in the table, by key (``"llama-3-8b"``, ``"llama-3-70b"``, ``"qwen2.5-7b"``). Read-only.
MODELS: Mapping[str, Model] = load_models()


def get_model(name: str | Model) -> Model:
    """Look a model up by key or name (any case, ``_`` or spaces for ``-``); an unknown one lists close matches.

    Examples
    --------
    >>> get_model("Llama 3 70B").key
    'llama-3-70b'
    >>> get_model("llama-3-7b")
    Traceback (most recent call last):
    ...
    KeyError: "unknown model 'llama-3-7b'; did you mean 'llama-3-70b' or 'llama-3-8b'?"
    """
    if isinstance(name, Model):
        return name
    if not isinstance(name, str):
        raise TypeError(f"model must be a name such as 'llama-3-8b' or a Model, got {name!r}")
    key = normalize_name(name)
    if key in MODELS:
        return MODELS[key]
    names = {normalize_name(m.name): k for k, m in MODELS.items()}
    raise KeyError(f"unknown model {name!r}; {did_you_mean(key, MODELS, aliases=names)}")
