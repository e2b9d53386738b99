"""Model shapes, parameter counts and inference estimates, against counts and arithmetic done by hand.

Every expected number below is worked out from the published config.json fields (written
next to it), not taken from ``rooflinelib``'s output.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

import rooflinelib as rl

ROOT = Path(__file__).resolve().parents[1]

# ----------------------------------------------------------------------------- hand counts
#
# Llama 3 8B: D = 4096, F = 14336, 32 layers, 32 heads and 8 KV heads of 128, vocab 128256, untied.
#   attention: q 4096*4096 = 16,777,216; k, v 4096*1024 = 4,194,304 each; o 16,777,216 -> 41,943,040
#   MLP (gate, up, down): 3 * 4096 * 14336 = 176,160,768
#   two RMSNorm weights: 8,192                     -> one layer 218,112,000; 32 layers 6,979,584,000
#   embedding table and output layer: 2 * 128256 * 4096 = 1,050,673,152; final norm 4,096
LLAMA_8B = 6_979_584_000 + 1_050_673_152 + 4_096  # = 8,030,261,248, "8B" (8.03e9)
# Llama 3 70B: D = 8192, F = 28672, 80 layers, 64 heads and 8 KV heads of 128.
#   attention: 2 * 8192*8192 + 2 * 8192*1024 = 134,217,728 + 16,777,216 = 150,994,944
#   MLP: 3 * 8192 * 28672 = 704,643,072; norms 16,384 -> one layer 855,654,400; 80 layers 68,452,352,000
#   tables: 2 * 128256 * 8192 = 2,101,346,304; final norm 8,192
LLAMA_70B = 68_452_352_000 + 2_101_346_304 + 8_192  # = 70,553,706,496
# Qwen2.5 7B: D = 3584, F = 18944, 28 layers, 28 heads and 4 KV heads of 128, vocab 152064, untied,
# biases on q, k, v.
#   attention: 2 * 3584*3584 + 2 * 3584*512 = 25,690,112 + 3,670,016; biases 3584 + 512 + 512 = 4,608
#   MLP: 3 * 3584 * 18944 = 203,685,888; norms 7,168 -> one layer 233,057,792; 28 layers 6,525,618,176
#   tables: 2 * 152064 * 3584 = 1,089,994,752; final norm 3,584
QWEN_7B = 6_525_618_176 + 1_089_994_752 + 3_584  # = 7,615,616,512 (Qwen: 7.61B, 6.53B without embeddings)


@pytest.mark.parametrize(
    ("key", "expected", "published"),
    [("llama-3-8b", LLAMA_8B, 8.03e9), ("llama-3-70b", LLAMA_70B, 70.55e9), ("qwen2.5-7b", QWEN_7B, 7.61e9)],
)
def test_parameter_count_matches_the_hand_count(key: str, expected: int, published: float) -> None:
    assert rl.param_count(key) == expected
    assert rl.param_count(key) == pytest.approx(published, rel=2e-3)


def test_qwen_without_embeddings_is_its_published_6_53e9() -> None:
    m = rl.get_model("qwen2.5-7b")
    assert m.params - 2 * m.embedding_params == pytest.approx(6.53e9, rel=1e-3)


def test_layer_matmuls_of_llama_3_8b() -> None:
    assert [tuple(m) for m in rl.layer_matmuls("llama-3-8b")] == [
        ("q_proj", 4096, 4096),
        ("k_proj", 4096, 1024),  # 8 KV heads * 128
        ("v_proj", 4096, 1024),
        ("o_proj", 4096, 4096),
        ("gate_proj", 4096, 14336),
        ("up_proj", 4096, 14336),
        ("down_proj", 14336, 4096),
    ]


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [("bf16", 16_060_522_496), ("fp8", 8_030_261_248), ("int8", 8_030_261_248), ("int4", 4_015_130_624)],
)
def test_weight_bytes_per_format(dtype: str, expected: int) -> None:
    assert rl.weight_bytes("llama-3-8b", dtype) == expected  # 8,030,261,248 x 2, 1, 1, 0.5 bytes


@pytest.mark.parametrize(
    ("model", "chip", "dtype", "expected"),
    [
        ("llama-3-8b", "tpu-v5e", "bf16", 1),  # 16.06e9 bytes < 16 GiB = 17.18e9 (16 GB would need 2)
        ("llama-3-70b", "h100-sxm", "bf16", 2),  # 141.1e9 / 80e9 = 1.76
        ("llama-3-70b", "h100-sxm", "fp8", 1),  # 70.55e9 < 80e9
        ("llama-3-70b", "tpu-v5e", "bf16", 9),  # 141.1e9 / 17.18e9 = 8.21
        ("llama-3-70b", "tpu-v5e", "int4", 3),  # 35.28e9 / 17.18e9 = 2.05
        ("llama-3-70b", "b200", "bf16", 1),  # 141.1e9 < 180e9
    ],
)
def test_chips_to_fit(model: str, chip: str, dtype: str, expected: int) -> None:
    assert rl.chips_to_fit(model, chip, dtype) == expected


def test_chips_to_fit_needs_a_capacity() -> None:
    chip = rl.Accelerator.custom("laptop", {"bf16": 1e13}, 1e11)
    with pytest.raises(ValueError, match="has no HBM capacity"):
        rl.chips_to_fit("llama-3-8b", chip)


@pytest.mark.parametrize(
    ("key", "expected"),
    [("llama-3-8b", 131_072), ("llama-3-70b", 327_680), ("qwen2.5-7b", 57_344)],
    # 2 (K and V) * layers * KV heads * 128 * 2 bytes: 2*32*8*128*2, 2*80*8*128*2, 2*28*4*128*2
)
def test_kv_cache_bytes_per_token(key: str, expected: int) -> None:
    assert rl.kv_cache_bytes_per_token(key) == expected
    assert rl.kv_cache_bytes_per_token(key, kv_dtype="int8") == expected / 2


def test_the_cache_keeps_its_own_format_when_the_weights_are_quantized() -> None:
    # int4 weights, bf16 activations: the projections write bf16 keys and values, 131,072 bytes a token
    int4 = rl.Precision("bf16", w="int4")
    est = rl.estimate_decode("llama-3-8b", "h100-sxm", 8, context=1000, precision=int4)
    assert est.kv_bytes == 8 * 1000 * 131_072
    assert est.hbm_bytes == READ_8B / 4 + 8 * 1000 * 131_072  # weights at half a byte
    fp8_cache = rl.estimate_decode("llama-3-8b", "h100-sxm", 8, context=1000, precision=int4, kv_dtype="fp8")
    assert fp8_cache.kv_bytes == 8 * 1000 * 65_536


# One decode step of Llama 3 8B on an H100 SXM (9.895e14 bf16 FLOPs/s, 3.35e12 bytes/s):
#   weights read: (8,030,261,248 - 525,336,576 embedding table) * 2 bytes = 15,009,849,344 bytes -> 4.4806 ms
#   FLOPs per token: 2 * (32 * 218,103,808 + 525,336,576) = 2 * 7,504,658,432 = 15,009,316,864 -> 15.17 us
READ_8B = 15_009_849_344
FLOPS_8B = 15_009_316_864


def test_decode_step_is_bound_by_the_weights_at_small_batch() -> None:
    est = rl.estimate_forward("llama-3-8b", "h100-sxm", 1)
    assert est.bytes == READ_8B and est.flops == FLOPS_8B
    assert est.t_comms == pytest.approx(READ_8B / 3.35e12) and est.t_math == pytest.approx(FLOPS_8B / 9.895e14)
    assert est.bound == "communication-bound"
    assert rl.decode_step_time("llama-3-8b", "h100-sxm", 1) == pytest.approx(4.4806e-3, rel=1e-4)
    # up to the critical batch the step costs the same
    assert rl.decode_step_time("llama-3-8b", "h100-sxm", 256) == pytest.approx(4.4806e-3, rel=1e-4)


def test_decode_step_time_takes_arrays() -> None:
    t = rl.decode_step_time("llama-3-8b", "h100-sxm", np.array([1, 1024]))
    assert t.shape == (2,)
    assert t[1] == pytest.approx(1024 * FLOPS_8B / 9.895e14)  # compute-bound: 15.53 ms


@pytest.mark.parametrize(
    ("chip", "expected"),
    # ridge * (15,009,849,344 / 15,009,316,864 = 1.0000355)
    [("h100-sxm", 9.895e14 / 3.35e12), ("tpu-v5e", 1.97e14 / 8.19e11), ("b200", 2.25e15 / 7.7e12)],
)
def test_decode_critical_batch_is_the_chips_ridge(chip: str, expected: float) -> None:
    b = rl.decode_critical_batch("llama-3-8b", chip)
    assert b == pytest.approx(expected * READ_8B / FLOPS_8B, rel=1e-9)  # (w / 2) * bytes / (FLOPs / 2), w = 2
    tm = b * FLOPS_8B / rl.get_accelerator(chip).peak("bf16")
    tc = READ_8B / rl.get_accelerator(chip).bandwidth("hbm")
    assert tm == pytest.approx(tc)  # the definition: T_math = T_comms


def test_int8_and_fp8_weights() -> None:
    int8_w = rl.Precision("bf16", w="int8")
    # int8 weights, bf16 compute: half the bytes, same FLOPs rate -> half the critical batch, 147.7
    assert rl.decode_critical_batch("llama-3-8b", "h100-sxm", precision=int8_w) == pytest.approx(147.70, abs=0.01)
    assert rl.decode_step_time("llama-3-8b", "h100-sxm", 1, precision=int8_w) == pytest.approx(4.4806e-3 / 2, rel=1e-3)
    # fp8 weights and compute: half the bytes at twice the FLOPs rate -> the same critical batch
    assert rl.decode_critical_batch("llama-3-8b", "h100-sxm", precision="fp8") == pytest.approx(295.39, abs=0.01)
    with pytest.raises(KeyError, match="TPU v5e has no peak FLOPs/s for dtype 'fp8'"):
        rl.decode_critical_batch("llama-3-8b", "tpu-v5e", precision="fp8")


def test_prefill_counts_tokens_not_sequences() -> None:
    # weights only: one prompt of 2048 tokens, 2048 * 15,009,316,864 FLOPs / 9.895e14 = 31.07 ms, compute-bound
    weights_only = rl.prefill_time("llama-3-8b", "h100-sxm", 1, 2048, attention=False)
    assert weights_only == pytest.approx(2048 * FLOPS_8B / 9.895e14)
    assert rl.prefill_time("llama-3-8b", "h100-sxm", 4, 512, attention=False) == weights_only


def test_splitting_over_chips_divides_the_time_and_adds_the_allreduces() -> None:
    # Llama 3 70B on 2 H100s: (70,553,706,496 - 1,050,673,152) * 2 bytes / (2 * 3.35e12) = 20.747 ms,
    # then 2 all-reduces in each of 80 layers, each of 1 token * 8192 * 2 bytes: latency-bound at 12.5 us
    assert rl.decode_step_time("llama-3-70b", "h100-sxm", 1, n_chips=2) == pytest.approx(
        20.747e-3 + 160 * 12.5e-6, rel=1e-4
    )


# ----------------------------------------------------------------------------- serving: the KV cache and attention
#
# Figures read straight from the spec table's file (not through rooflinelib's loader), and the model
# shapes counted by hand above: each function is recomputed here from first principles.

SPEC = tomllib.loads((ROOT / "rooflinelib" / "data" / "accelerators.toml").read_text(encoding="utf-8"))
H100 = SPEC["h100-sxm"]
PEAK, HBM, CAP = H100["peak_flops"]["bf16"], H100["hbm_bandwidth"], H100["hbm_capacity"]  # 9.895e14, 3.35e12
KV_8B = 2 * 32 * 8 * 128 * 2  # 131,072 bytes a token
ATT_8B = 4 * 32 * 32 * 128  # attention FLOPs per new token and cached position: 524,288


def test_a_decode_step_reads_every_sequences_cache() -> None:
    # Llama 3 8B, 64 sequences of 4096 tokens on an H100: 15.01e9 + 64 * 4096 * 131,072 = 49.37e9 bytes
    nbytes = READ_8B + 64 * 4096 * KV_8B
    flops = 64 * (FLOPS_8B + ATT_8B * 4096)
    assert rl.decode_step_time("llama-3-8b", "h100-sxm", 64, context=4096) == pytest.approx(nbytes / HBM)  # 14.74 ms
    assert nbytes / HBM == pytest.approx(14.74e-3, abs=0.01e-3)
    est = rl.estimate_decode("llama-3-8b", "h100-sxm", 64, context=4096)
    assert (est.flops, est.hbm_bytes, est.kv_bytes) == (pytest.approx(flops), nbytes, 64 * 4096 * KV_8B)
    assert est.t_math == pytest.approx(flops / PEAK) and est.bound == "communication-bound"
    assert (est.allreduces, est.t_allreduce) == (0, 0.0)
    # no cache: the weights alone, as before
    assert rl.decode_step_time("llama-3-8b", "h100-sxm", 64) == pytest.approx(READ_8B / HBM)


def test_attention_flops_decode_and_causal_prefill() -> None:
    assert rl.attention_flops("llama-3-8b", 4096) == ATT_8B * 4096
    # causal prefill of S tokens: token i attends to i positions, sum = S (S + 1) / 2
    assert rl.attention_flops("llama-3-8b", 3, prefill=True) == ATT_8B * (1 + 2 + 3)
    # share of a prefill's FLOPs: 3.6% at 2k, 14% at 8k, 57% at 32k (weights: 2 * S * 7,504,658,432)
    shares = [ATT_8B * S * (S + 1) / 2 / (S * FLOPS_8B) for S in (2048, 8192, 32768)]
    got = [
        rl.attention_flops("llama-3-8b", S, prefill=True) / rl.forward_flops("llama-3-8b", S)
        for S in (2048, 8192, 32768)
    ]
    assert got == pytest.approx(shares) and [round(x, 3) for x in got] == [0.036, 0.143, 0.572]


def test_attention_intensity_is_query_heads_over_kv_heads_whatever_the_batch() -> None:
    # per sequence: 4 L N H S FLOPs over 2 L K H S * 2 bytes of cache = N / K = 4 FLOPs/byte for Llama 3 8B
    for batch in (1, 64, 512):
        est = rl.estimate_decode("llama-3-8b", "h100-sxm", batch, context=4096)
        attention = batch * rl.attention_flops("llama-3-8b", 4096)
        assert attention / est.kv_bytes == pytest.approx(32 / 8)


@pytest.mark.parametrize(
    ("model", "chip", "expected"),
    [
        # S* = 2 P_mm / (kv * peak / bandwidth - 4 L N H)
        ("llama-3-8b", "h100-sxm", 15_009_316_864 / (KV_8B * 9.895e14 / 3.35e12 - ATT_8B)),  # 393
        ("llama-3-8b", "tpu-v5e", 15_009_316_864 / (KV_8B * 1.97e14 / 8.19e11 - ATT_8B)),  # 484
        # Llama 3 70B: P_mm = 80 * 855,638,016 + 128256 * 8192 = 69,501,714,432; kv 327,680; 4 * 80 * 64 * 128
        ("llama-3-70b", "h100-sxm", 2 * 69_501_714_432 / (327_680 * 9.895e14 / 3.35e12 - 4 * 80 * 64 * 128)),  # 1476
    ],
)
def test_the_context_limit(model: str, chip: str, expected: float) -> None:
    limit = rl.decode_context_limit(model, chip)
    assert limit == pytest.approx(expected)
    # below it a large enough batch is compute-bound, above it none is
    below, above = math.floor(limit) - 5, math.ceil(limit) + 5
    assert rl.decode_critical_batch(model, chip, context=below) < math.inf
    big = rl.estimate_decode(model, chip, 10**6, context=below)
    assert big.bound == "compute-bound"
    assert rl.decode_critical_batch(model, chip, context=above) == math.inf
    assert rl.estimate_decode(model, chip, 10**6, context=above).bound == "communication-bound"


def test_the_context_limit_ignores_the_weights_format_but_not_the_caches() -> None:
    int4 = rl.Precision("bf16", w="int4")
    assert rl.decode_context_limit("llama-3-8b", "h100-sxm", precision=int4) == rl.decode_context_limit(
        "llama-3-8b", "h100-sxm"
    )
    # an fp8 cache halves kv: 15,009,316,864 / (65,536 * 295.37 - 524,288) = 797
    assert rl.decode_context_limit("llama-3-8b", "h100-sxm", kv_dtype="fp8") == pytest.approx(
        FLOPS_8B / (KV_8B / 2 * PEAK / HBM - ATT_8B)
    )


@pytest.mark.parametrize("n_chips", [2, 4, 8])
def test_the_context_limit_holds_on_each_chip_of_a_split(n_chips: int) -> None:
    # each chip's T_math and T_comms are both divided by n (n <= K = 8): they still cross at S*
    limit = rl.decode_context_limit("llama-3-70b", "h100-sxm")
    below, above = math.floor(limit) - 5, math.ceil(limit) + 5
    for context, bound in ((below, "compute-bound"), (above, "communication-bound")):
        est = rl.estimate_decode("llama-3-70b", "h100-sxm", 10**6, context=context, n_chips=n_chips)
        assert est.bound == bound


# Llama 3 70B: 2 P_mm = 2 * 69,501,714,432; kv 327,680 bytes a token; 4 L N H = 4 * 80 * 64 * 128
MM2_70B, KV_70B, ATT_70B = 2 * 69_501_714_432, 327_680, 4 * 80 * 64 * 128


@pytest.mark.parametrize(("n_chips", "copies"), [(1, 1), (2, 1), (4, 1), (8, 1), (16, 2), (32, 4), (64, 8)])
def test_beyond_its_kv_heads_a_split_copies_each_one(n_chips: int, copies: int) -> None:
    # Llama 3 70B has 8 KV heads: 16 chips hold each twice, and a chip's share of the cache stays 1/8
    assert rl.kv_head_copies("llama-3-70b", n_chips) == copies
    est = rl.estimate_decode("llama-3-70b", "h100-sxm", 4, context=1000, n_chips=n_chips)
    assert est.kv_bytes == 4 * 1000 * KV_70B / min(n_chips, 8)
    # attention's intensity on each chip: 4 L N H S / n FLOPs over its share of the bytes, 8 FLOPs/byte up to 8 chips
    attention = 4 * ATT_70B * 1000 / n_chips
    assert attention / est.kv_bytes == pytest.approx(64 / 8 * min(n_chips, 8) / n_chips)


def test_the_context_limit_falls_beyond_the_kv_heads() -> None:
    # 16 chips: each reads twice its 1/16 of the cache, so S* = 2 P_mm / (2 kv ridge - 4 L N H) = 728, not 1,476
    want = MM2_70B / (2 * KV_70B * PEAK / HBM - ATT_70B)
    limit = rl.decode_context_limit("llama-3-70b", "h100-sxm", n_chips=16)
    assert limit == pytest.approx(want) and round(limit) == 728
    assert rl.decode_context_limit("llama-3-70b", "h100-sxm", n_chips=8) == pytest.approx(
        MM2_70B / (KV_70B * PEAK / HBM - ATT_70B)
    )
    below, above = math.floor(limit) - 5, math.ceil(limit) + 5
    for context, bound in ((below, "compute-bound"), (above, "communication-bound")):
        est = rl.estimate_decode("llama-3-70b", "h100-sxm", 10**6, context=context, n_chips=16)
        assert est.bound == bound
    assert rl.decode_critical_batch("llama-3-70b", "h100-sxm", context=above, n_chips=16) == math.inf
    assert rl.decode_critical_batch("llama-3-70b", "h100-sxm", context=above, n_chips=8) < math.inf


def test_the_context_limit_with_fp8_arithmetic() -> None:
    # fp8 weights and activations, bf16 cache and attention: the 2 P_mm FLOPs run at 1.979e15 FLOPs/s
    # S* = (2 P_mm / peak_fp8) / (kv / bw - 4 L N H / peak_bf16) = 196.5
    want = (FLOPS_8B / (2 * PEAK)) / (KV_8B / HBM - ATT_8B / PEAK)
    got = rl.decode_context_limit("llama-3-8b", "h100-sxm", precision="fp8", kv_dtype="bf16", attention_dtype="bf16")
    assert got == pytest.approx(want) and round(got) == 197
    below, above = math.floor(got) - 2, math.ceil(got) + 2
    for context, bound in ((below, "compute-bound"), (above, "communication-bound")):
        est = rl.estimate_decode(
            "llama-3-8b", "h100-sxm", 10**6, context=context, precision="fp8", kv_dtype="bf16", attention_dtype="bf16"
        )
        assert est.bound == bound
    # int8 weights with bf16 arithmetic leave it where it was
    int8_w = rl.Precision("bf16", w="int8")
    assert rl.decode_context_limit("llama-3-8b", "h100-sxm", precision=int8_w) == rl.decode_context_limit(
        "llama-3-8b", "h100-sxm"
    )


def test_the_context_limit_of_speculative_decoding() -> None:
    # 4 new tokens a sequence, the cache read once: S* = 2 * 4 P_mm / (kv ridge - 4 * 4 L N H) = 1,639.6
    want = 4 * FLOPS_8B / (KV_8B * PEAK / HBM - 4 * ATT_8B)
    got = rl.decode_context_limit("llama-3-8b", "h100-sxm", new_tokens=4)
    assert got == pytest.approx(want) and round(got) == 1640
    with pytest.raises(ValueError, match="new_tokens must be > 0, got 0"):
        rl.decode_context_limit("llama-3-8b", "h100-sxm", new_tokens=0)


def test_kernel_by_kernel_the_weight_matmuls_turn_compute_bound_at_any_context() -> None:
    # 512 sequences of 1,000 tokens: the whole step is memory-bound (past the context limit, 393) ...
    est = rl.estimate_decode("llama-3-8b", "h100-sxm", 512, context=1000)
    assert est.bound == "communication-bound"
    # ... but the weight matmuls alone do 512 * 2 P_mm FLOPs (7.77 ms) on 15.01 GB of weights (4.48 ms)
    assert est.t_math_matmuls == pytest.approx(512 * FLOPS_8B / PEAK)
    assert est.t_comms_weights == pytest.approx(READ_8B / HBM)
    assert est.matmuls_bound == "compute-bound"
    # and attention reads 512 * 1000 * 131,072 bytes (20.03 ms) for 512 * 1000 * 524,288 FLOPs (0.27 ms)
    assert est.t_comms_cache == pytest.approx(512 * 1000 * KV_8B / HBM)
    assert est.t_math_attention == pytest.approx(512 * 1000 * ATT_8B / PEAK)
    assert est.attention_bound == "communication-bound"
    # run one after the other, the kernels take the sum of their larger times, more than the whole-step bound
    kernels = 512 * FLOPS_8B / PEAK + 512 * 1000 * KV_8B / HBM
    assert est.time_kernels == pytest.approx(kernels) and est.time_kernels > est.time
    assert est.time == pytest.approx(max((512 * (FLOPS_8B + 1000 * ATT_8B)) / PEAK, (READ_8B + 512e3 * KV_8B) / HBM))
    # the matmuls' crossing is the batch without a cache, 295.4, whatever the context
    for context in (0, 1000, 32768):
        assert rl.estimate_decode("llama-3-8b", "h100-sxm", 296, context=context).matmuls_bound == "compute-bound"
        assert rl.estimate_decode("llama-3-8b", "h100-sxm", 295, context=context).matmuls_bound != "compute-bound"
    # with no cache the two bounds agree
    none = rl.estimate_decode("llama-3-8b", "h100-sxm", 64)
    assert none.time_kernels == none.time and none.attention_bound == "compute-bound"


def test_the_critical_batch_with_a_cache() -> None:
    # B* = (w P_read / bw) / ((2 P_mm + 4 L N H S) / peak - S kv / bw), S = 128
    want = (READ_8B / HBM) / ((FLOPS_8B + ATT_8B * 128) / PEAK - 128 * KV_8B / HBM)
    assert rl.decode_critical_batch("llama-3-8b", "h100-sxm", context=128) == pytest.approx(want)  # 438.1
    est = rl.estimate_decode("llama-3-8b", "h100-sxm", 438, context=128)
    assert est.t_math < est.t_comms < rl.estimate_decode("llama-3-8b", "h100-sxm", 439, context=128).t_math * 1.01


@pytest.mark.parametrize(
    ("model", "chip", "context", "n_chips", "expected"),
    [
        # (capacity - weights) // (context * kv): H100 reports 81,559 MiB = 85,520,809,984 bytes
        ("llama-3-8b", "h100-sxm", 4096, 1, (CAP - LLAMA_8B * 2) // (4096 * KV_8B)),  # 129
        ("llama-3-8b", "h100-sxm", 178, 1, (CAP - LLAMA_8B * 2) // (178 * KV_8B)),
        # TPU v5e, 16 GiB: the critical batch 240.5 leaves 35 tokens a sequence, so 240 sequences of 35 fit
        ("llama-3-8b", "tpu-v5e", 35, 1, (16 * 2**30 - LLAMA_8B * 2) // (35 * 131_072)),
        # the 70B does not fit on one H100 (141.1e9 bytes of weights): 0
        ("llama-3-70b", "h100-sxm", 4096, 1, 0),
        # on 2: each holds half the weights and half of the 8 KV heads
        ("llama-3-70b", "h100-sxm", 4096, 2, (CAP - LLAMA_70B) // (4096 * 327_680 / 2)),  # 22
        # on 16 (more chips than KV heads): each chip keeps one KV head, 1/8 of every cache
        ("llama-3-70b", "h100-sxm", 4096, 16, (CAP - LLAMA_70B * 2 / 16) // (4096 * 327_680 / 8)),
    ],
)
def test_the_largest_batch_hbm_holds(model: str, chip: str, context: int, n_chips: int, expected: float) -> None:
    assert rl.max_decode_batch(model, chip, context, n_chips=n_chips) == expected


def test_v5e_at_its_critical_batch_leaves_35_tokens_a_sequence() -> None:
    b_star = rl.decode_critical_batch("llama-3-8b", "tpu-v5e")
    tokens = (16 * 2**30 - LLAMA_8B * 2) / (b_star * KV_8B)
    assert math.floor(tokens) == 35
    assert rl.max_decode_batch("llama-3-8b", "tpu-v5e", 35) >= math.floor(b_star)
    assert rl.max_decode_batch("llama-3-8b", "tpu-v5e", 36) < math.floor(b_star)


def test_the_allreduces_of_tensor_parallel_decode() -> None:
    lat, link = H100["links"]["nvlink"]["collective_latency"], H100["links"]["nvlink"]["bandwidth"]  # 12.5 us, 4.5e11
    assert rl.allreduce_time("h100-sxm", 16_384, 1) == 0
    assert rl.allreduce_time("h100-sxm", 16_384, 2) == lat  # 16 kB: 18 ns on the wire, latency-bound
    assert rl.allreduce_time("h100-sxm", 1e9, 4) == pytest.approx(2 * 3 / 4 * 1e9 / link)  # bandwidth-bound
    # Llama 3 70B on 4 H100s, 512 sequences, 1024 tokens each: a layer's two all-reduces of 512 * 8192 * 2 bytes
    est = rl.estimate_decode("llama-3-70b", "h100-sxm", 512, context=1024, n_chips=4)
    per_allreduce = max(lat, 2 * 3 / 4 * 512 * 8192 * 2 / link)
    assert est.allreduces == 160 and est.t_allreduce == pytest.approx(160 * per_allreduce)
    weights = (LLAMA_70B - 128256 * 8192) * 2 / 4
    cache = 512 * 1024 * 327_680 / 4
    assert est.hbm_bytes == pytest.approx(weights + cache)
    assert est.time == pytest.approx(max(est.t_math, (weights + cache) / HBM) + 160 * per_allreduce)


def test_a_prefill_with_causal_attention_and_the_cache_it_writes() -> None:
    # one prompt of S tokens: T_math = (2 S P_mm + 2 L N H S (S+1)) / peak, T_comms = (weights + S kv) / bw
    for S in (64, 2048, 32768):
        tm = (S * FLOPS_8B + ATT_8B * S * (S + 1) / 2) / PEAK
        tc = (READ_8B + S * KV_8B) / HBM
        assert rl.prefill_time("llama-3-8b", "h100-sxm", 1, S) == pytest.approx(max(tm, tc))
    # compute-bound only from about 300 tokens: the first whole S with T_math >= T_comms
    first = next(
        S for S in range(1, 1000) if (S * FLOPS_8B + ATT_8B * S * (S + 1) / 2) / PEAK >= (READ_8B + S * KV_8B) / HBM
    )
    assert first == 295
    t = [rl.prefill_time("llama-3-8b", "h100-sxm", 1, S) for S in (first - 1, first)]
    assert t[0] == pytest.approx((READ_8B + (first - 1) * KV_8B) / HBM) and t[1] > t[0]
    # four prompts of 512 cost less attention than one of 2048: 4 * 512 * 513 against 2048 * 2049
    four, one = rl.prefill_time("llama-3-8b", "h100-sxm", 4, 512), rl.prefill_time("llama-3-8b", "h100-sxm", 1, 2048)
    assert four == pytest.approx((2048 * FLOPS_8B + 4 * ATT_8B * 512 * 513 / 2) / PEAK) and four < one


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rl.decode_step_time("llama-3-8b", "h100-sxm", 1, context=-1), ValueError, "context must be >= 0"),
        (lambda: rl.decode_step_time("llama-3-8b", "h100-sxm", 1, context=1.5), ValueError, "context must be a whole"),
        (lambda: rl.decode_step_time("llama-3-8b", "h100-sxm", 1, kv_dtype="fp4"), KeyError, "unknown dtype 'fp4'"),
        (lambda: rl.decode_step_time("llama-3-70b", "tpu-v5e", 1, n_chips=9), ValueError, "n_chips must split"),
        (lambda: rl.decode_step_time("llama-3-70b", "b200", 1, n_chips=2), KeyError, "has no collective_latency"),
        (lambda: rl.max_decode_batch("llama-3-8b", "h100-sxm", 0), ValueError, "context must be > 0, got 0"),
        (lambda: rl.estimate_decode("llama-3-8b", "h100-sxm", [1, 2]), TypeError, "batch must be a single number"),
        (lambda: rl.allreduce_time("h100-sxm", -1, 2), ValueError, "num_bytes must be >= 0 bytes"),
    ],
)
def test_serving_refuses_bad_input_clearly(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rl.decode_step_time("llama-3-8b", "h100-sxm", 0), ValueError, "batch must be > 0, got 0"),
        (lambda: rl.decode_step_time("llama-3-8b", "h100-sxm", -3), ValueError, "batch must be > 0, got -3"),
        (lambda: rl.decode_step_time("llama-3-8b", "h100-sxm", 2.5), ValueError, "batch must be a whole number"),
        (lambda: rl.prefill_time("llama-3-8b", "h100-sxm", 1, 0), ValueError, "seq_len must be > 0, got 0"),
        (lambda: rl.estimate_forward("llama-3-8b", "h100-sxm", [1, 2]), TypeError, "tokens must be a single number"),
        (lambda: rl.get_model("llama-3-7b"), KeyError, "did you mean 'llama-3-70b' or 'llama-3-8b'"),
        (lambda: rl.get_model("gpt-5"), KeyError, "unknown model 'gpt-5'"),
        (lambda: rl.get_model(8), TypeError, "model must be a name"),
        (lambda: rl.weight_bytes("llama-3-8b", "int2"), KeyError, "unknown dtype 'int2'"),
        (lambda: rl.decode_step_time("llama-3-8b", "h100", 1), KeyError, "unknown accelerator 'h100'"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def test_lookup_accepts_names_and_models() -> None:
    m = rl.get_model("Qwen2.5 7B")
    assert m.key == "qwen2.5-7b" and rl.get_model(m) is m and rl.get_model("LLAMA_3_8B").name == "Llama 3 8B"


def test_models_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        rl.MODELS["x"] = rl.MODELS["llama-3-8b"]  # type: ignore[index]


# ----------------------------------------------------------------------------- the data file


def test_each_model_names_its_published_config() -> None:
    raw = tomllib.loads((ROOT / "rooflinelib" / "data" / "models.toml").read_text(encoding="utf-8"))
    assert set(raw) == set(rl.MODELS)
    for key, entry in raw.items():
        assert entry["source"].startswith("https://huggingface.co/") and entry["source"].endswith("/config.json"), key
        assert entry["paper"].startswith("https://arxiv.org/"), key
        m = rl.MODELS[key]
        assert (m.hidden, m.mlp, m.layers, m.heads, m.kv_heads, m.vocab) == (
            entry["hidden"],
            entry["mlp"],
            entry["layers"],
            entry["heads"],
            entry["kv_heads"],
            entry["vocab"],
        )
        assert m.head_dim * m.heads == m.hidden, f"{key}: these three models have head_dim = hidden / heads"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[m]\nname = "M"\n', "m is missing 'hidden'"),
        ("[m]\nhiden = 4\n", r"m.hiden is not a known key; did you mean 'hidden'\?"),
        ("[m]\n" + "\n".join(f"{k} = 8" for k in ("mlp", "layers", "heads", "head_dim", "vocab"))
         + '\nhidden = 0\nkv_heads = 8\ntied_embeddings = false\nqkv_bias = false\ngated_mlp = true\n'
         + 'name = "M"\nfamily = "F"\nsource = "s"\npaper = "p"\n', "m.hidden must be a whole number >= 1, got 0"),
        ("[m]\n" + "\n".join(f"{k} = 8" for k in ("hidden", "mlp", "layers", "head_dim", "vocab"))
         + '\nheads = 12\nkv_heads = 8\ntied_embeddings = false\nqkv_bias = false\ngated_mlp = true\n'
         + 'name = "M"\nfamily = "F"\nsource = "s"\npaper = "p"\n', "m.kv_heads must divide heads \\(12\\), got 8"),
        ("[m\n", "not valid TOML"),
    ],
)  # fmt: skip
def test_loader_refuses_a_bad_table(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "models.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        rl.load_models(str(path))


def test_tied_embeddings_are_counted_once_and_streamed() -> None:
    from dataclasses import replace

    untied = rl.get_model("llama-3-8b")
    tied = replace(untied, key="tied", tied_embeddings=True)
    assert untied.params - tied.params == 128256 * 4096
    assert tied.streamed_params == tied.params  # the shared table is read whole, as the output layer
    assert untied.streamed_params == untied.params - 128256 * 4096
    assert math.isclose(rl.forward_bytes(tied), rl.forward_bytes(untied))


# ----------------------------------------------------------------------------- plots


def test_decode_time_plot_marks_the_critical_batch() -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        rl.plot_decode_time("llama-3-8b", ["h100-sxm"], ax=ax)
        (dot,) = [line for line in ax.get_lines() if line.get_label() == "_critical batch"]
        assert dot.get_xdata()[0] == pytest.approx(9.895e14 / 3.35e12 * READ_8B / FLOPS_8B)  # 295.38
        assert dot.get_ydata()[0] == pytest.approx(4.4806, rel=1e-4)  # ms, the flat level
        (line,) = [line for line in ax.get_lines() if line.get_label() == "NVIDIA H100 SXM"]
        assert line.get_ydata()[0] == pytest.approx(4.4806, rel=1e-4) and line.get_xdata()[0] == 1
        assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    finally:
        plt.close(fig)


def test_layer_plot_gives_a_matrix_and_its_transpose_one_marker() -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        rl.plot_layer_matmuls("llama-3-8b", "h100-sxm", [64, 2048], ax=ax)
        labels = ax.get_legend_handles_labels()[1]
        assert labels[-5:] == ["q_proj, o_proj", "k_proj, v_proj", "gate_proj, up_proj, down_proj", "64 tokens",
                               "2048 tokens"]  # fmt: skip
        points = sorted(round(float(line.get_xdata()[0]), 1) for line in ax.get_lines() if line.get_label() == "_point")
        # bf16 intensity BDF / (BD + DF + BF): 64 tokens 62.1 (4096 x 4096), 59.4 (x 1024), 62.7 (x 14336);
        # 2048 tokens 1024.0, 585.1, 1246.6
        assert points == [59.4, 62.1, 62.7, 585.1, 1024.0, 1246.6]
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="tokens must list at least one token count"):
        rl.plot_layer_matmuls("llama-3-8b", "h100-sxm", [])


def test_a_custom_model_on_a_custom_chip() -> None:
    """What a graded exercise needs: any shape, any chip, the same functions."""
    tiny = rl.Model.custom("tiny", hidden=64, mlp=256, layers=2, heads=4, kv_heads=2, vocab=1000)
    # per layer: q, o 64*64; k, v 64*32 (2 KV heads of 16); MLP 3*64*256; norms 2*64 -> 61,568
    assert tiny.params == 2 * 61_568 + 64 + 2 * 1000 * 64  # 251,200
    assert tiny.matmul_params == 2 * (2 * 4096 + 2 * 2048 + 3 * 16_384) + 64_000  # 186,880
    chip = rl.Accelerator.custom("toy", {"bf16": 1e12}, 1e10)
    # B* = ridge 100 * (187,200 read / 186,880 multiplied)
    assert rl.decode_critical_batch(tiny, chip) == pytest.approx(100 * 187_200 / 186_880)
    assert rl.decode_step_time(tiny, chip, 1) == pytest.approx(187_200 * 2 / 1e10)
    assert rl.kv_cache_bytes_per_token(tiny) == 2 * 2 * 2 * 16 * 2
    with pytest.raises(ValueError, match="tiny.layers must be a whole number >= 1, got 0"):
        rl.Model.custom("tiny", hidden=64, mlp=256, layers=0, heads=4, kv_heads=2, vocab=1000)


def test_context_plot_ends_each_line_at_the_largest_batch_hbm_holds() -> None:
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2)
    try:
        rl.plot_decode_context("llama-3-8b", "h100-sxm", [1024, 8192], ax=left)
        lines = {line.get_label(): line for line in left.get_lines()}
        fits = [(CAP - LLAMA_8B * 2) // (c * KV_8B) for c in (1024, 8192)]  # 517 and 64 sequences
        marks = [line for line in left.get_lines() if line.get_label() == "_largest batch"]
        assert [float(m.get_xdata()[0]) for m in marks] == fits
        # the square sits on its line: the step time at that batch, weights and every cache read
        assert float(marks[1].get_ydata()[0]) == pytest.approx((READ_8B + 64 * 8192 * KV_8B) / HBM * 1e3)
        assert float(lines["8,192 tokens of context"].get_xdata()[-1]) == 64
        assert float(lines["weights only"].get_ydata()[0]) == pytest.approx(READ_8B / HBM * 1e3)
        rl.plot_decode_throughput("llama-3-8b", "h100-sxm", [8192], ax=right)
        line = right.get_lines()[0]
        t = (READ_8B + 64 * 8192 * KV_8B) / HBM
        assert float(line.get_xdata()[-1]) == pytest.approx(64 / t) and float(line.get_ydata()[-1]) == pytest.approx(
            1 / t
        )
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="contexts must list at least one context length"):
        rl.plot_decode_context("llama-3-8b", "h100-sxm", [])


def test_layer_plot_puts_attention_at_query_heads_over_kv_heads() -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        rl.plot_layer_matmuls("llama-3-8b", "h100-sxm", [64], attention=True, ax=ax)
        stars = [line for line in ax.get_lines() if line.get_marker() == "*" and line.get_label() == "_point"]
        # 4 L N H FLOPs a cached position over its 2 L K H * 2 bytes: 32 / 8 = 4 FLOPs/byte, on the slope
        assert float(stars[0].get_xdata()[0]) == pytest.approx(4.0)
        assert float(stars[0].get_ydata()[0]) == pytest.approx(4.0 * 3.35e12)
        assert "attention (any batch)" in ax.get_legend_handles_labels()[1]
    finally:
        plt.close(fig)
