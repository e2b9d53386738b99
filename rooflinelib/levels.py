"""One kernel, one intensity per memory level: the arithmetic of a hierarchical roofline.

A kernel moves different numbers of bytes at each level of memory. A tiled matmul's
blocks load each input into on-chip memory once per row or column of tiles, and its math
units read the same inputs from on-chip memory once per (smaller) tile they work on. On a
GPU the blocks' loads come from the L2 cache, so that count bounds the traffic from L2 into
shared memory; HBM, behind L2, may move as little as the compulsory bytes (each matrix once,
:func:`rooflinelib.matmul_bytes`). Its FLOPs are the same at every level, so it has one
intensity per level, and each level's bandwidth gives it one ceiling. The lowest ceiling binds. The chips' bandwidths are in the spec table
(:meth:`rooflinelib.Accelerator.memory_levels`); this module is arithmetic on numbers.
"""

from __future__ import annotations

from collections.abc import Mapping

from rooflinelib import matmul, roofline
from rooflinelib._checks import as_number, as_size
from rooflinelib.precision import PrecisionLike, dtype_bytes

__all__ = [
    "binding_level",
    "head_attention_bytes",
    "head_attention_flops",
    "level_ceilings",
    "level_intensities",
    "tiled_matmul_level_bytes",
]


def tiled_matmul_level_bytes(
    m: int, k: int, n: int, tiles: Mapping[str, tuple[int, int, int]], *, precision: PrecisionLike = "bf16"
) -> dict[str, float]:
    """Bytes an ``(m, k) @ (k, n)`` matmul moves at each memory level, given the tile read from that level.

    ``tiles`` maps a level to the ``(bm, bk, bn)`` tile its reader loads at a time: the
    Tiling section's count (:func:`rooflinelib.tiled_matmul_bytes`) with that tile, each
    input read once per row or column of output tiles and the output written once. On an
    H100, the blocks' tile counts the bytes into shared memory, from L2 or HBM (``"l2"``):
    an upper bound on HBM's bytes, which L2 cuts towards the compulsory traffic. The tile
    of each group of warps counts the bytes out of shared memory (``"smem"``).

    Examples
    --------
    >>> b = tiled_matmul_level_bytes(4096, 4096, 4096, {"l2": (128, 64, 256), "smem": (64, 64, 256)})
    >>> {level: round(2 * 4096**3 / nbytes, 1) for level, nbytes in b.items()}   # near 128*256/384, 64*256/320
    {'l2': 83.6, 'smem': 50.6}
    """
    if not isinstance(tiles, Mapping) or not tiles:
        raise ValueError(
            f"tiles must map a memory level to its (bm, bk, bn) tile, e.g. {{'hbm': (128, 64, 256)}}, got {tiles!r}"
        )
    out = {}
    for level, tile in tiles.items():
        if not isinstance(tile, (tuple, list)) or len(tile) != 3:
            raise ValueError(f"tiles[{level!r}] must be a (bm, bk, bn) tile such as (128, 64, 256), got {tile!r}")
        out[str(level)] = float(matmul.tiled_matmul_bytes(m, k, n, *tile, precision=precision))
    return out


def head_attention_flops(queries: int, kv_len: int, head_dim: int) -> float:
    """FLOPs of one attention head: ``Q K^T`` then ``P V``, each ``2 * queries * kv_len * head_dim``.

    No causal mask (a mask halves the work of a prefill); the softmax's few FLOPs per score are left out.

    Examples
    --------
    >>> head_attention_flops(1, 8192, 128)   # one decoded token against 8192 cached ones
    4194304.0
    """
    q, s, d = (
        float(as_size(name, v)) for name, v in (("queries", queries), ("kv_len", kv_len), ("head_dim", head_dim))
    )
    return 4 * q * s * d


def head_attention_bytes(queries: int, kv_len: int, head_dim: int, rows_per_load: int, *, dtype: str = "bf16") -> float:
    """Bytes one attention head moves at a level that delivers K and V once per ``rows_per_load`` query rows.

    ``K`` and ``V`` (``kv_len * head_dim`` values each) are read once per block of
    ``rows_per_load`` queries; ``Q`` is read and the output written once. Decoding
    (``queries = rows_per_load = 1``) reads the whole cache for one row; a
    FlashAttention-style prefill keeps a block of queries on the chip and reuses each
    K/V tile for all of them.

    Examples
    --------
    >>> f = head_attention_flops(8192, 8192, 128)
    >>> round(f / head_attention_bytes(8192, 8192, 128, 128), 1)   # 8192 / 65: near the block of 128 rows
    126.0
    >>> head_attention_bytes(8, 1024, 128, 3)
    Traceback (most recent call last):
    ...
    ValueError: rows_per_load=3 must divide queries=8: K and V are read once per block of rows
    """
    q, s, d, r = (
        int(as_size(name, v))
        for name, v in (
            ("queries", queries),
            ("kv_len", kv_len),
            ("head_dim", head_dim),
            ("rows_per_load", rows_per_load),
        )
    )
    if q % r:
        raise ValueError(f"rows_per_load={r} must divide queries={q}: K and V are read once per block of rows")
    b = float(dtype_bytes(dtype))
    return (q // r) * 2 * s * d * b + 2 * q * d * b


def level_intensities(flops: float, level_bytes: Mapping[str, float]) -> dict[str, float]:
    """FLOPs per byte at each level: the same FLOPs over each level's bytes.

    Examples
    --------
    >>> level_intensities(1e9, {"hbm": 1e7, "smem": 2e7})
    {'hbm': 100.0, 'smem': 50.0}
    """
    f = float(as_number("flops", flops, "FLOPs", scalar=True))
    if not isinstance(level_bytes, Mapping) or not level_bytes:
        raise ValueError(
            f"level_bytes must map each memory level to its bytes, e.g. {{'hbm': 1e9}}, got {level_bytes!r}"
        )
    return {
        str(k): f / float(as_number(f"level_bytes[{k!r}]", v, "bytes", scalar=True)) for k, v in level_bytes.items()
    }


def level_ceilings(intensities: Mapping[str, float], peak: float, bandwidths: Mapping[str, float]) -> dict[str, float]:
    """Each level's ceiling for the kernel: ``min(peak, intensity x that level's bandwidth)`` in FLOPs/s.

    Examples
    --------
    >>> level_ceilings({"hbm": 100.0, "smem": 50.0}, 1e15, {"hbm": 3e12, "smem": 3e13})
    {'hbm': 300000000000000.0, 'smem': 1000000000000000.0}
    """
    out = {}
    for level, intensity in intensities.items():
        if level not in bandwidths:
            raise KeyError(f"no bandwidth for memory level {level!r}; the chip has {', '.join(map(repr, bandwidths))}")
        out[level] = float(roofline.attainable_flops(intensity, peak, bandwidths[level]))
    return out


def binding_level(intensities: Mapping[str, float], peak: float, bandwidths: Mapping[str, float]) -> str:
    """The level whose ceiling is lowest, or ``"compute"`` when every level's ceiling is the peak.

    Examples
    --------
    >>> binding_level({"hbm": 100.0, "smem": 50.0}, 1e15, {"hbm": 3e12, "smem": 3e13})
    'hbm'
    >>> binding_level({"hbm": 400.0, "smem": 50.0}, 1e15, {"hbm": 3e12, "smem": 3e13})
    'compute'
    """
    ceilings = level_ceilings(intensities, peak, bandwidths)
    level = min(ceilings, key=ceilings.__getitem__)
    return "compute" if ceilings[level] >= peak else level
