"""The capstone's two pages and the one-page summary: every glued number where it stands, and their claims.

Expected values are worked out here with plain arithmetic on the published model fields and the
vendors' figures (written out next to each), never with ``rooflinelib``: the pages compute them
with ``rooflinelib``, so a wrong formula, table entry or rounding fails here. Uses the helpers of
``test_book_numbers`` and needs a built book.
"""

from __future__ import annotations

import re

import pytest
from book_support import article, check_chapter_rhythm, glued, prose_blocks

# Llama 3 8B (config.json): D = 4096, F = 14336, 32 layers, 32 heads and 8 KV heads of 128, vocab 128256.
PARAMS_8B = 8_030_261_248  # 32 * 218,112,000 + 2 * 128256 * 4096 + 4096 (tests/test_models.py)
EMBED_8B = 128_256 * 4096  # 525,336,576
READ_8B = (PARAMS_8B - EMBED_8B) * 2  # bf16 bytes a decode step reads: 15,009,849,344
FLOPS_8B = 2 * (32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + EMBED_8B)  # per token: 15,009,316,864
PARAMS_70B = 70_553_706_496
H100_PEAK, H100_HBM = 9.895e14, 3.35e12  # dense bf16 (1,979 with sparsity / 2), 3.35 TB/s
H100_CAP = 81_559 * 2**20  # what an H100 SXM reports to nvidia-smi: 85,520,809,984 bytes
H200_CAP = 143_771 * 2**20  # 150,754,820,096 bytes
V5E_PEAK, V5E_HBM, V5E_CAP = 1.97e14, 8.19e11, 16 * 2**30
B200_PEAK, B200_HBM = 2.25e15, 7.7e12
H200_PEAK, H200_HBM = 9.895e14, 4.8e12  # the H100's dense bf16 peak, 4.8 TB/s: a ridge of 206.1
T1_H100 = READ_8B / H100_HBM  # 4.4806 ms
B_STAR_H100 = H100_PEAK / H100_HBM * READ_8B / FLOPS_8B  # 295.38
KV_8B, KV_70B = 2 * 32 * 8 * 128 * 2, 2 * 80 * 8 * 128 * 2  # 131,072 and 327,680 bytes a token
ATT_8B, ATT_70B = 4 * 32 * 32 * 128, 4 * 80 * 64 * 128  # attention FLOPs per new token and cached position
MM_70B = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672) + 128_256 * 8192  # 69,501,714,432
READ_70B = (PARAMS_70B - 128_256 * 8192) * 2  # 139,006,066,688 bytes
NVLINK, NVLINK_LATENCY = 4.5e11, 12.5e-6  # one way; the smallest all-reduce, measured


def step_8b(batch: int, context: int) -> float:
    """A decode step of Llama 3 8B on an H100: max(T_math, T_comms), every cache read."""
    t_math = batch * (FLOPS_8B + ATT_8B * context) / H100_PEAK
    t_comms = (READ_8B + batch * context * KV_8B) / H100_HBM
    return max(t_math, t_comms)


def limit(mm2: float, kv: float, att: float, peak: float, hbm: float) -> float:
    """The context limit: 2 P_mm / (kv * peak / hbm - 4 L N H)."""
    return mm2 / (kv * peak / hbm - att)


def step_70b(n: int, batch: int = 1, context: int = 0) -> tuple[float, float]:
    """(step time, all-reduce time) of Llama 3 70B on n H100s."""
    t_math = batch * (2 * MM_70B + ATT_70B * context) / n / H100_PEAK
    t_comms = (READ_70B / n + batch * context * KV_70B / min(n, 8)) / H100_HBM
    allreduce = 160 * max(NVLINK_LATENCY, 2 * (n - 1) / n * batch * 8192 * 2 / NVLINK)
    return max(t_math, t_comms) + allreduce, allreduce


def prefill_8b(prompts: int, length: int, attention: bool = True) -> float:
    flops = prompts * length * FLOPS_8B + (prompts * ATT_8B * length * (length + 1) / 2 if attention else 0)
    nbytes = READ_8B + (prompts * length * KV_8B if attention else 0)
    return max(flops / H100_PEAK, nbytes / H100_HBM)


# the shortest prompt whose prefill is compute-bound: T_math >= T_comms
PREFILL_MIN = next(
    n
    for n in range(1, 4096)
    if (n * FLOPS_8B + ATT_8B * n * (n + 1) / 2) / H100_PEAK >= (READ_8B + n * KV_8B) / H100_HBM
)


def MAXB(cap: float, weights: float, ctx: int, kv: int) -> int:
    """The most sequences of ctx tokens whose caches fit beside the weights."""
    return int((cap - weights) // (ctx * kv))


def exact_b(ridge: float, D: int, F: int) -> float:
    """The matmul chapter's exact critical batch, bf16 everywhere."""
    return ridge * D * F / (D * F - ridge * (D + F))


CAPSTONE = {
    "p8": "8,030,261,248",
    "p8_e9": "8.03",
    "p70_e9": "70.55",
    "mlp_share": "70%",  # 32 * 3 * 4096 * 14336 / 8,030,261,248 = 0.702
    "tables_share": "13%",  # 2 * 525,336,576 / 8,030,261,248 = 0.131
    "w8_bf16": "16.06",
    "w70_bf16": "141.11",  # 70,553,706,496 * 2
    "w70_int4": "35.28",  # / 2
    "w70_int8": "70.55",
    "v5e_cap": "16 GiB",
    "v5e_cap_gb": "17.18",  # 16 * 2**30 = 17,179,869,184
    "v5e_spare_gb": "1.12",  # 17,179,869,184 - 16,060,522,496
    "fit70_h100": "2",  # 141.1 / 85.52 = 1.65
    "fit70_v5e": "9",  # 141.1 / 17.18 = 8.21
    "fit70_v5e_int4": "3",  # 35.28 / 17.18 = 2.05
    "h100_cap": "80 GB",  # as printed
    "h100_mib": "81,559",
    "h100_cap_used": f"{H100_CAP / 1e9:.2f} GB",  # 85.52
    "h200_mib": "143,771",
    "h200_cap_used": f"{H200_CAP / 1e9:.2f} GB",  # 150.75: 141.11 GB of weights fit
    "h200_printed": "141 GB",
    "heads70": "64",
    "kv_heads70": "8",
    "tp70_sizes": "1, 2, 4, 8, 16, 32 or 64",  # divisors of 64 that divide 8 or are multiples of it
    "tp70_v5e": "16",  # the first of them from 9 on
    "fit8_misread": "2",  # 16.06 / 16 = 1.004
    "fit8_v5e": "1",
    "read8_gb": "15.01",
    "read_over_mm": f"{READ_8B / FLOPS_8B:.5f}",  # 1.00004
    "bstar_v5e": f"{V5E_PEAK / V5E_HBM * READ_8B / FLOPS_8B:.1f}",  # 240.5
    "bstar_h100": "295.4",
    "bstar_b200": f"{B200_PEAK / B200_HBM * READ_8B / FLOPS_8B:.1f}",  # 292.2
    "t1_h100": "4.48",
    "b_many": "64",
    "math_share_many": "22%",  # 64 * FLOPS_8B / 9.895e14 / T1_H100 = 0.2167
    "b_floor": "295",
    "tps1": f"{1 / T1_H100:,.0f}",  # 223
    "tps_star": f"{295 / T1_H100:,.0f}",  # 65,840
    "tps_star_128": f"{295 / step_8b(295, 128):,.0f}",  # 49,514: 295 caches of 128 tokens add 4.95 GB
    "tps_star_1024": f"{295 / step_8b(295, 1024):,.0f}",  # 18,098
    "ctx_tenth_star": f"{0.1 * READ_8B / (295 * KV_8B):.0f}",  # 38.8 tokens each add a tenth to 15.01 GB
    "S": "2048",
    "S4": "512",
    "S8k": "8192",
    "S32k": "32768",
    "t_prefill": f"{prefill_8b(1, 2048) * 1e3:.2f}",  # 32.18: 31.07 of matmuls and 3.6% of attention
    "t_prefill_mm": "31.07",  # 2048 * FLOPS_8B / 9.895e14
    "t_four": f"{prefill_8b(4, 512) * 1e3:.2f}",  # 31.34
    "prefill_min": f"{PREFILL_MIN}",  # 295
    "att_2k": f"{ATT_8B * 2049 / 2 / FLOPS_8B:.1%}",  # 3.6%
    "att_8k": f"{ATT_8B * 8193 / 2 / FLOPS_8B:.1%}",  # 14.3%
    "att_32k": f"{ATT_8B * 32769 / 2 / FLOPS_8B:.1%}",  # 57.2%
    "lm_share": f"{128_256 * 4096 * 2 / FLOPS_8B:.0%}",  # the output layer: 525,336,576 of 7,504,658,432 = 7.0%
    # logits for the last position only: 32768 * 2 * (P_mm - V D) + 2 V D matmul FLOPs
    "att_32k_last": f"{ATT_8B * 32768 * 32769 / 2 / (32768 * (FLOPS_8B - 2 * EMBED_8B) + 2 * EMBED_8B):.1%}",  # 61.5%
    "prefill_tps": f"{2048 / prefill_8b(1, 2048):,.0f}",  # 63,648
    "prefill_gain": f"{2048 / prefill_8b(1, 2048) * T1_H100:.1f}",  # 285.2
    "kv_dim8": "1,024",
    "crit_kv": f"{exact_b(H100_PEAK / H100_HBM, 4096, 1024):.1f}",  # 461.9
    "crit_mlp": f"{exact_b(H100_PEAK / H100_HBM, 4096, 14336):.1f}",  # 325.6
    "kv8": "131,072",  # 2 * 32 * 8 * 128 * 2
    "kv8_kib": "128",
    "kv70_kib": "320",  # 2 * 80 * 8 * 128 * 2 / 1024
    "kvq_kib": "56",  # 2 * 28 * 4 * 128 * 2 / 1024
    "gqa_factor": "4",  # 32 / 8
    "kv_seqs": "64",
    "kv_ctx": "4,096",
    "kv_cache_gb": "34.36",  # 64 * 4096 * 131,072 = 34,359,738,368
    "kv_vs_weights": "2.1",  # / 16,060,522,496 = 2.14
    "ctx_tenth": "178",  # 0.1 * 15,009,849,344 / (64 * 131,072) = 178.9
    "t_ctx_ms": f"{step_8b(64, 4096) * 1e3:.2f}",  # 14.74
    "h100_used": f"{H100_CAP / 1e9:.2f} GB",
    "maxb_h100": f"{MAXB(H100_CAP, PARAMS_8B * 2, 4096, KV_8B)}",  # 129
    "maxb_v5e": f"{MAXB(V5E_CAP, PARAMS_8B * 2, 4096, KV_8B)}",  # 2
    "fig_contexts": "128, 1,024, 4,096 and 32,768",
    "tps_ctx1": f"{1 / step_8b(1, 4096):,.0f}",  # 215
    "tps_ctx64_all": f"{64 / step_8b(64, 4096):,.0f}",  # 4,343
    "tps_ctx64_each": f"{1 / step_8b(64, 4096):,.0f}",  # 68
    "tps_ctxmax_all": f"{129 / step_8b(129, 4096):,.0f}",  # 5,128
    "tps_ctxmax_each": f"{1 / step_8b(129, 4096):,.1f}",  # 39.8
    "att8": "4",  # N / K = 32 / 8
    "att70": "8",  # 64 / 8
    "attq": "7",  # 28 / 4
    "bstar_ctx64": f"{T1_H100 / ((FLOPS_8B + ATT_8B * 64) / H100_PEAK - 64 * KV_8B / H100_HBM):.1f}",  # 352.8
    "bstar_ctx128": f"{T1_H100 / ((FLOPS_8B + ATT_8B * 128) / H100_PEAK - 128 * KV_8B / H100_HBM):.1f}",  # 438.1
    "bstar_ctx256": f"{T1_H100 / ((FLOPS_8B + ATT_8B * 256) / H100_PEAK - 256 * KV_8B / H100_HBM):.1f}",  # 847.3
    "limit8_h100": f"{limit(FLOPS_8B, KV_8B, ATT_8B, H100_PEAK, H100_HBM):,.0f}",  # 393
    "limit8_v5e": f"{limit(FLOPS_8B, KV_8B, ATT_8B, V5E_PEAK, V5E_HBM):,.0f}",  # 484
    "limit70_h100": f"{limit(2 * MM_70B, KV_70B, ATT_70B, H100_PEAK, H100_HBM):,.0f}",  # 1,476
    "limit8_fp8": f"{limit(FLOPS_8B, KV_8B / 2, ATT_8B, H100_PEAK, H100_HBM):,.0f}",  # 797
    "limit8_h200": f"{limit(FLOPS_8B, KV_8B, ATT_8B, H200_PEAK, H200_HBM):,.0f}",  # 566: ridge 206.1
    "ridge_h200": "206.1",  # 9.895e14 / 4.8e12
    # fp8 weights and activations: the matmuls at 1.979e15, attention and the cache in bf16
    "limit8_fp8_arith": f"{FLOPS_8B / (2 * H100_PEAK) / (KV_8B / H100_HBM - ATT_8B / H100_PEAK):,.0f}",  # 197
    "spec_tokens": "4",
    # 4 new tokens a sequence, each cache read once: 2 * 4 P_mm / (kv ridge - 4 * 4 L N H)
    "limit8_spec": f"{limit(4 * FLOPS_8B, KV_8B, 4 * ATT_8B, H100_PEAK, H100_HBM):,.0f}",  # 1,640
    # 16 chips, 8 KV heads: each chip reads 1/8 of every cache, twice its 1/16 share
    "limit70_h100_16": f"{limit(2 * MM_70B, 2 * KV_70B, ATT_70B, H100_PEAK, H100_HBM):,.0f}",  # 728
    "tp_beyond": "16",  # the first split of 64 query heads over more chips than 8 KV heads
    "kv_copies70_16": "2",  # 16 / 8
    "att70_16": f"{ATT_70B / 16 / (KV_70B / 8):.0f}",  # 4: a 16th of the FLOPs on an 8th of the cache
    # kernel by kernel, 512 sequences of 1,000 tokens on an H100
    "kern_mm_math": f"{512 * FLOPS_8B / H100_PEAK * 1e3:.2f}",  # 7.77
    "kern_mm_read": f"{T1_H100 * 1e3:.2f}",  # 4.48
    "kern_att_read": f"{512 * 1000 * KV_8B / H100_HBM * 1e3:.2f}",  # 20.03
    "kern_att_math": f"{512 * 1000 * ATT_8B / H100_PEAK * 1e3:.2f}",  # 0.27
    "kern_time": f"{(512 * FLOPS_8B / H100_PEAK + 512 * 1000 * KV_8B / H100_HBM) * 1e3:.2f}",  # 27.80
    "kern_whole": f"{step_8b(512, 1000) * 1e3:.2f}",  # 24.51
    "v5e_tokens_at_bstar": "35",  # 1.12e9 / (240.5 * 131,072) = 35.5
    "quiz_ctx": "1,000",
    "quiz_big": "512",
    "quiz_maxb": f"{MAXB(H100_CAP, PARAMS_8B * 2, 1000, KV_8B)}",  # 529
    "ar70": "160",  # 2 all-reduces in each of 80 layers
    "ar_latency_us": "12.5",
    "ar_bytes_kb": "16.4",  # 8192 * 2 bytes
    "ar_wire_ns": "36",  # 16,384 / 4.5e11
    "ar_cross": f"{int(NVLINK_LATENCY * NVLINK // (8192 * 2))}",  # 343 sequences on two chips
    "ar70_ms": "2.00",  # 160 * 12.5 us
    "ar_share2": f"{step_70b(2)[1] / step_70b(2)[0]:.0%}",  # 9%
    "ar_share8": f"{step_70b(8)[1] / step_70b(8)[0]:.0%}",  # 28%
    "maxb70_2": f"{int((H100_CAP - PARAMS_70B) // (4096 * KV_70B / 2))}",  # 22
    "maxb70_4": f"{int((H100_CAP - PARAMS_70B / 2) // (4096 * KV_70B / 4))}",  # 149
    "maxb70_8": f"{int((H100_CAP - PARAMS_70B / 4) // (4096 * KV_70B / 8))}",  # 404
    "maxb70_h200": f"{MAXB(H200_CAP, PARAMS_70B * 2, 4096, KV_70B)}",  # 7
    "t1_int8": "2.24",  # half of 4.4806
    "bstar_int8": "147.7",
    "t1_fp8": "2.24",
    "bstar_fp8": "295.4",
    "v5e_int8_tops": "393",
    "t1_v5e_int8": f"{READ_8B / 2 / V5E_HBM * 1e3:.2f}",  # 9.16
    "bstar_v5e_int8": f"{3.93e14 / V5E_HBM / 2 * READ_8B / FLOPS_8B:.1f}",  # 239.9: int8 peak, one byte a weight
    "bstar_v5e_int8w": f"{V5E_PEAK / V5E_HBM / 2 * READ_8B / FLOPS_8B:.1f}",  # 120.3
}

SUMMARY = {
    "sum_flops": "1e12",
    "sum_tm_ms": "1.01",  # 1e12 / 9.895e14
    "sum_bytes": "1e9",
    "sum_tc_ms": "0.30",  # 1e9 / 3.35e12 = 0.2985 ms
    "sum_lower_ms": "1.01",
    "sum_upper_ms": "1.31",  # 1.0106 + 0.2985
    "dot_limit": "0.5",
    "v5e_critical": "240",  # the book's 1.97e14 / 8.2e11
    "int_256": "240.9",
    "sum_bcrit_bf16": "240",
    "sum_bcrit_int8w": "120",
    "b_exact_8192": "255",
    "d_star_min": "8756",  # the first whole D past 2 * 1.97e14 / 4.5e10 = 8755.6
    "sum_v5e_peak": "1.97e14",
    "sum_v5e_link": "4.5e10",
    "w8_bf16": "16.06",
    "fit70_h100": "2",
    "fit70_h200": "1",  # 141.11e9 < 150.75e9
    "h100_mib": "81,559",
    "bstar_h100": "295.4",
    "bstar_h100_ctx128": CAPSTONE["bstar_ctx128"],
    "kv8": "131,072",
    "sum_kv_cap_tokens": f"{(H100_CAP - PARAMS_8B * 2) // 131_072:,.0f}",  # 529,939.9: whole tokens
    "sum_t_ctx": CAPSTONE["t_ctx_ms"],
    "sum_t_noctx": "4.48",
    "sum_limit8": CAPSTONE["limit8_h100"],
    "sum_limit8_fp8_arith": CAPSTONE["limit8_fp8_arith"],
    "sum_crit_min": CAPSTONE["crit_mlp"],  # 325.6: the MLP's matrices, the widest
    "sum_crit_max": CAPSTONE["crit_kv"],  # 461.9: k and v, the narrowest
    "sum_att8": "4",
    "sum_att_2k": CAPSTONE["att_2k"],
    "sum_ar70": "160",
    "sum_ar70_ms": "2.00",
    "sum_ar_latency": "12.5",
}


PART1, PART2 = "real-model-real-chips", "long-context"
# what part 2 computes again from part 1 (it runs on its own) and shows; everything else is shown on one page
SHARED = {"t1_h100", "bstar_h100", "bstar_v5e", "w70_bf16", "crit_kv", "fit70_v5e", "b_floor", "tps_star"}
PART2_KEYS = SHARED | {
    k
    for k in CAPSTONE
    if k.startswith(("kv", "ar", "att", "limit", "cap", "maxb", "tps_", "kern_", "quiz_", "bstar_ctx", "tp"))
    and k not in {"att_2k", "att_8k", "att_32k", "att_32k_last", "tps1", "tps_star", "kv_dim8"}
} | {"ctx_tenth", "ctx_tenth_star", "t_ctx_ms", "h100_used", "fig_contexts", "gqa_factor", "ridge_h200",
     "spec_tokens", "heads70", "v5e_tokens_at_bstar"}  # fmt: skip
PAGE_KEYS = {PART1: (set(CAPSTONE) - PART2_KEYS) | SHARED, PART2: PART2_KEYS}


def test_every_capstone_value_has_its_page() -> None:
    """Each value stands on the page this file assigns it to, and on no other capstone page."""
    for page, keys in PAGE_KEYS.items():
        shown = {k for k, _ in glued(page)} & set(CAPSTONE)
        assert shown == keys, f"{page}: shows {sorted(shown - keys)} too, lacks {sorted(keys - shown)}"


@pytest.mark.parametrize(
    ("page", "key", "expected"),
    [(page, k, CAPSTONE[k]) for page, keys in PAGE_KEYS.items() for k in sorted(keys)]
    + [("summary", k, v) for k, v in SUMMARY.items()],
)
def test_glued_value_where_it_stands(page: str, key: str, expected: str) -> None:
    shown = [text for k, text in glued(page) if k == key]
    assert shown, f"{page}: the glued value {key!r} is not shown anywhere"
    assert all(text == expected for text in shown), f"{page}: {key!r} should render as {expected!r}, got {shown}"


CLAIMS = {
    "real-model-real-chips": [
        "One prompt of 2048 tokens thus runs at",
        "bf16 weights and arithmetic, up to a critical batch equal to the chip’s ridge point",
        "Most of them, 70%, sit in its MLPs",
        "fits on a single B200",
        "it fits on one H100’s 80 GB",
        "Llama 3 8B in bf16 fits on one TPU v5e, but only just",
        "at B = 1 and at B = 64 alike, while the conversations are short",
        "halves too, to 147.7",
        "the critical batch stays at 295.4",
        "the decode times here are lower bounds",
        "one step takes at least 4.48 ms",
        "That is a roofline bound",
        "writes at most 65,840 tokens/s for the same cost per step.",
        "weights leave at most 1.12 GB free",
        "between 325.6 and 461.9 tokens",
        "FLOP counts for model FLOPs utilization often take the whole square, twice as many",
        "against that count attention adds 61.5% at 32768 tokens",
        "fit on one H200",
        "a prefill of fewer than 295 tokens in all still waits on the weights",
        "weight bytes only, the whole chain turns compute-bound",
        "step that overlaps them poorly takes up to their sum, twice as long",
        "back up to 239.9",
        "The table below counts the weights alone",
    ],
    "long-context": [
        "2.1 times the weights",
        "the decode times here are lower bounds",
        "takes 14.74 ms instead of 4.48",
        "For Llama 3 8B on an H100 the limit is 393 tokens, on a TPU v5e 484",
        "a whole decode step is memory-bound at every batch size",
        "holds only while the caches are nearly empty",
        "not the longest context a model accepts",
        "A shorter context moves you below the limit. The limit itself moves with the cache’s format",
        "with the chip’s ridge (an H200: 566)",
        "Per kernel, the weight matmuls of 512 sequences are compute-bound; attention never is",
        "The weight matmuls take 7.77 ms of arithmetic for 4.48 ms of weight reads: compute-bound",
        "stays memory-bound at any batch",
        "4 a step moves Llama 3 8B’s limit on an H100 to 1,640 tokens",
        "With int8 weights and bf16 arithmetic it stays at 393 tokens",
        "the limit falls to 197 tokens, with the cache and attention still in bf16",
        "on 16 chips each KV head is copied onto 2",
        "context limit then falls from 1,476 tokens to 728",
        "two H100s hold at most 22 sequences",
        "A single H200 holds the weights and at most 7 such sequences",
        "largest batches here are thus upper bounds",
        "In this count, at 12.5 µs each, the 160 of them cost 2.00 ms whatever the number of chips",
        "With sequences of different lengths, what counts is their average",
        "a pessimistic assumption, not a floor",
        "These limits set arithmetic against bandwidth and ignore capacity",
        "tensor-parallel split of the 9 TPU v5es its bf16 weights need therefore takes 16",
    ],
    "summary": [
        "D \\ge 8756",  # D > 8755.6 from D = 8756 on
        "the book’s TPU v5e, 1.97e14 FLOPs/s over an ICI link of 4.5e10 bytes/s",
        "an H100 holds at most 529,939 tokens of it beside the weights",
        "of which a program can allocate less",
        "The times are roofline bounds",
        "not a model’s longest context",
        "393 tokens per sequence in bf16, 197 with fp8 weights and activations (attention in bf16)",
        "fp8 arithmetic runs the",
        "each matmul from 325.6 to 461.9 tokens",
        "the course takes the larger of the two, a lower bound; the usual α–β model adds them",
        "the ridge of the format the arithmetic runs in",
        "that latency is NCCL’s, measured on Hopper (H20) GPUs",
    ],
}


# What the capstone and the summary must never say again (an instructor's review of them).
NEVER = {
    "extra sequences ride along for free, without a condition": re.compile(r"(?<!no longer )ride along for free"),
    "the usual convention of GPU spec sheets": re.compile(r"usual convention", re.I),
    "the KV cache left to later parts of the source book": re.compile(r"later parts of", re.I),
    "prefill compute-bound without a condition": re.compile(
        r"prefill counts tokens, not sequences, and is compute-bound"
    ),
    "four prompts as long as one, attention left out": re.compile(r"take exactly as long"),
    "n_chips as perfect scaling with no communication": re.compile(r"adds no communication"),
    "a shorter context moving the context limit": re.compile(r"or a shorter\s+context moves the limit"),
    "HBM filling before the arithmetic catches up, beside 'no batch of any size'": re.compile(r"HBM fills long before"),
    "the weights' format never entering the context limit": re.compile(r"The weights’ format does not enter"),
    "the cache untouched by quantization, the arithmetic left out": re.compile(r"touches the cache:"),
    "prefill compute-bound from B* tokens, activations left out": re.compile(r"once it holds about"),
    "attention's intensity fixed whatever the batch, unconditionally": re.compile(r"No batch moves it\."),
    "an H100 holding a cache with no 'at most'": re.compile(r"an H100 holds \d"),
    "a step time given without its bound": re.compile(r"one step takes \d"),
}


@pytest.mark.parametrize("page", [PART1, PART2, "summary"])
@pytest.mark.parametrize("what", list(NEVER))
def test_a_misleading_claim_is_gone(page: str, what: str) -> None:
    found = [b for b in prose_blocks(page) if NEVER[what].search(b)]
    assert not found, f"{page}: still says {what}: {found}"


@pytest.mark.parametrize(("page", "claim"), [(p, c) for p, cs in CLAIMS.items() for c in cs])
def test_claim_stands_in_the_prose(page: str, claim: str) -> None:
    assert any(claim in block for block in prose_blocks(page)), f"{page}: no paragraph says {claim!r}"


def _table(page: str, index: int) -> tuple[list[str], list[list[str]]]:
    tab = article(page).select("table")[index]
    headers = [" ".join(th.get_text().split()) for th in tab.select("thead th")]
    rows = [[" ".join(td.get_text().split()) for td in tr.select("td")] for tr in tab.select("tbody tr")]
    return headers, rows


def test_capstone_tables() -> None:
    headers, rows = _table(PART1, 0)  # the models
    assert [r[headers.index("parameters (10⁹)")] for r in rows] == ["8.03", "70.55", "7.62"]  # Qwen: 7,615,616,512
    headers, rows = _table(PART1, 2)  # chips to hold the weights
    col = headers.index(f"NVIDIA H100 SXM (80 GB, {H100_CAP / 1e9:.2f} GB reported)")
    assert {(r[0], r[1]): r[col] for r in rows}[("Llama 3 70B", "bf16")] == "2"
    assert {(r[0], r[1]): r[headers.index("TPU v5e (16 GiB)")] for r in rows}[("Llama 3 70B", "int8")] == "5"  # 4.1
    headers, rows = _table(PART1, 3)  # one layer on an H100
    crit = {r[0]: r[headers.index("critical batch")] for r in rows}
    assert crit["k_proj"] == f"{exact_b(H100_PEAK / H100_HBM, 4096, 1024):.1f}"
    assert crit["q_proj"] == f"{exact_b(H100_PEAK / H100_HBM, 4096, 4096):.1f}"  # 345.2
    headers, rows = _table(PART2, 0)  # the context limit per model and chip
    assert headers == ["model", "TPU v5e", "NVIDIA H100 SXM", "NVIDIA B200 (HGX)"]
    limits = {r[0]: r[1:] for r in rows}
    assert limits["Llama 3 8B"] == [
        f"{limit(FLOPS_8B, KV_8B, ATT_8B, p, b):,.0f}"
        for p, b in ((V5E_PEAK, V5E_HBM), (H100_PEAK, H100_HBM), (B200_PEAK, B200_HBM))
    ]
    assert limits["Llama 3 70B"][1] == f"{limit(2 * MM_70B, KV_70B, ATT_70B, H100_PEAK, H100_HBM):,.0f}"
    headers, rows = _table(PART2, 1)  # Llama 3 70B on 2, 4 and 8 H100s
    assert headers[4:6] == ["largest batch at 4,096 tokens", "B at 4,096 tokens"]
    batches = []
    for row, n in zip(rows, (2, 4, 8), strict=True):
        t1, ar1 = step_70b(n)
        maxb = int((H100_CAP - PARAMS_70B * 2 / n) // (4096 * KV_70B / min(n, 8)))  # 22, 149, 404
        batch = min(64, maxb)  # 64 sequences, or all that fit beside the weights
        t_b, ar_b = step_70b(n, batch, 4096)
        low1 = 160 * 3e-6  # the same all-reduces at 3 us each, latency-bound both times
        low_b = 160 * max(3e-6, 2 * (n - 1) / n * batch * 8192 * 2 / NVLINK)
        assert row == [str(n), f"{t1 * 1e3:.2f}", f"{ar1 / t1:.0%}", f"{low1 / (t1 - ar1 + low1):.0%}"] + [
            str(maxb),
            str(batch),
            f"{t_b * 1e3:.2f}",
            f"{ar_b / t_b:.0%}",
            f"{low_b / (t_b - ar_b + low_b):.0%}",
        ]
        batches.append(int(row[5]))
    assert batches == [22, 64, 64], "every row runs a batch whose caches fit beside its weights"
    headers, rows = _table(PART1, 4)  # quantized weights
    bf16 = next(r for r in rows if r[:2] == ["bf16", "bf16"])
    assert bf16[2:] == ["18.33", "240.5", "4.48", "295.4", "1.95", "292.2"]  # 15.01e9 / 8.19e11, 3.35e12, 7.7e12
    v5e_fp8 = next(r for r in rows if r[0] == "fp8")
    assert v5e_fp8[2:4] == ["—", "—"], "the TPU v5e has no fp8 peak in the spec table"
    int8_all = next(r for r in rows if r[:2] == ["int8", "int8"])
    assert int8_all[2:4] == [CAPSTONE["t1_v5e_int8"], CAPSTONE["bstar_v5e_int8"]], "the v5e's int8 path is shown"


def test_summary_ridge_table() -> None:
    headers, rows = _table("summary", -1)
    cells = {r[0]: r[1:] for r in rows}
    assert headers == ["chip", "bf16 (FLOPs/byte)", "fp8 (FLOPs/byte)", "int8 (OPs/byte)"]
    assert cells["TPU v5e"] == ["240.5", "—", "479.9"]  # 1.97e14 / 8.19e11; 3.93e14 / 8.19e11
    assert cells["NVIDIA H100 SXM"] == ["295.4", "590.7", "590.7"]  # 1.979e15 / 3.35e12
    assert cells["NVIDIA B200 (HGX)"] == ["292.2", "584.4", "584.4"]  # 4.5e15 / 7.7e12
    assert cells["TPU7x (Ironwood)"] == ["312.6", "625.2", "—"]  # 4.614e15 / 7.38e12


@pytest.mark.parametrize("page", [PART1, PART2])
def test_capstone_rhythm(page: str) -> None:
    """A question first, a bold concept, labelled equations and a takeaway, as every chapter."""
    check_chapter_rhythm(page)


@pytest.mark.parametrize(("page", "figures"), [(PART1, 2), (PART2, 1)])
def test_capstone_figures_have_descriptions(page: str, figures: int) -> None:
    images = article(page).select("img")
    assert len(images) == figures
    assert all(len(img.get("alt", "")) > 100 for img in images), "each figure needs a real description"


def test_capstone_has_a_self_check_on_the_context_limit() -> None:
    text = " ".join(article(PART2).get_text(" ").split())
    assert "Self-check. Llama 3 8B decodes conversations of 1,000 tokens each on an H100" in text
    assert "None: 1,000 tokens is beyond the context limit." in text


@pytest.mark.parametrize("page", [PART1, PART2])
def test_each_part_opens_with_what_it_concludes(page: str) -> None:
    """Before the question, a box of five conclusions, each with a number the page computes (glued)."""
    art = article(page)
    box = next(a for a in art.select("div.admonition") if "What you will conclude" in a.get_text())
    first = art.select_one("section > p")
    assert first is not None and box.sourceline < first.sourceline, f"{page}: the box comes after the question"
    items = box.select("li")
    assert len(items) == 5, f"{page}: {len(items)} conclusions, 5 expected"
    assert all(li.select("span.pasted-text") for li in items), f"{page}: a conclusion without a computed number"


# A body sentence has at most this many words (words of glued values and inline math counted once each).
MAX_SENTENCE_WORDS = 32


@pytest.mark.parametrize("page", [PART1, PART2])
def test_body_sentences_are_short(page: str) -> None:
    long = [
        (len(sentence.split()), sentence)
        for block in prose_blocks(page)
        for sentence in re.split(r"(?<=[.?!])\s+", block)
        if len(sentence.split()) > MAX_SENTENCE_WORDS
    ]
    assert not long, f"{page}: {len(long)} sentences over {MAX_SENTENCE_WORDS} words: {long[:3]}"


@pytest.mark.parametrize("page", [PART1, PART2])
def test_course_coined_wording_is_gone_or_flagged(page: str) -> None:
    """'taken whole' and 'kernel by kernel' are not standard terms: plain words replace them, and the
    course's own 'context limit' links to a glossary entry that says it is the course's term."""
    text = " ".join(prose_blocks(page))
    assert "taken whole" not in text and "kernel by kernel" not in text.lower(), page
    if page == PART2:
        link = article(page).select_one("a[href*='glossary.html#term-context-limit-term-of-this-course']")
        assert link is not None and "context limit" in link.get_text(), "the coined term links to its entry"


def _crossing(fits, bstar) -> int:  # type: ignore[no-untyped-def]
    """The first whole context at which the largest batch that fits is below B*(S), by counting up."""
    s = 1
    while fits(s) >= bstar(s):
        s += 1
    return s


def _crossing_70b(n: int) -> int:
    def fits(s: int) -> int:  # (capacity - weights / n) // (one sequence's cache / n); n <= 8 KV heads
        return int((H100_CAP - PARAMS_70B * 2 / n) // (s * KV_70B / n))

    def bstar(s: int) -> float:  # weight read time over what one sequence adds to T_math less T_comms
        return (READ_70B / n / H100_HBM) / ((2 * MM_70B + ATT_70B * s) / n / H100_PEAK - s * KV_70B / n / H100_HBM)

    return _crossing(fits, bstar)


def _crossing_8b() -> int:
    def fits(s: int) -> int:
        return int((H100_CAP - PARAMS_8B * 2) // (s * KV_8B))

    def bstar(s: int) -> float:
        return (READ_8B / H100_HBM) / ((FLOPS_8B + ATT_8B * s) / H100_PEAK - s * KV_8B / H100_HBM)

    return _crossing(fits, bstar)


def _crit(d: int, f: int) -> float:
    """A bf16 matmul's critical batch with its activations: T D F / (T D + D F + T F) = ridge, solved for T."""
    ridge = H100_PEAK / H100_HBM
    return ridge * d * f / (d * f - ridge * (d + f))


def test_capacity_fused_and_latency_figures() -> None:
    share = {k: text for page in (PART1, PART2) for k, text in glued(page)}
    for n, rough in ((2, 260), (4, 880), (8, 1180)):
        expected = _crossing_70b(n)
        assert abs(expected - rough) < 0.03 * rough  # the review's own estimate
        assert share[f"cap70_{n}"] == f"{expected:,}"
    assert share["cap8_h100"] == f"{_crossing_8b():,}"
    assert abs(_crossing_8b() - 322) <= 2
    qkv, gate_up = _crit(4096, 4096 + 2 * 1024), _crit(4096, 2 * 14336)
    assert share["crit_qkv"] == f"{qkv:.1f}" and share["crit_gu"] == f"{gate_up:.1f}"
    assert share["crit_fused_max"] == f"{_crit(4096, 4096):.1f}" == "345.2"
    low = 160 * 3e-6  # 160 all-reduces at 3 us, latency-bound at B = 1
    step8, ar8 = step_70b(8)
    assert share["ar_share8_low"] == f"{low / (step8 - ar8 + low):.0%}"
    summary = {k: text for k, text in glued("summary")}
    assert summary["sum_crit_fused_max"] == f"{_crit(4096, 4096):.1f}"
