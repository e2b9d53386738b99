"""Every glued number and every numeric claim of the chapters, checked where it stands.

The expected strings come from hand arithmetic on the book's and the vendors'
figures (written out next to each), not from ``rooflinelib``; the pages compute
them with ``rooflinelib``, so a wrong formula, a wrong table entry or a wrong
rounding shows up here.

Each ``{glue:text}`` role of a page is matched, in document order, with the
text it rendered in the built HTML, so a value is checked at its own place, not
anywhere on the page. Prose claims are looked for in the page's paragraphs,
list items and admonitions, never in code or cell outputs.

Needs a built book: ``_build/html`` in the repository, or the ``html`` folder
named by the environment variable ``ROOFLINE_BOOK_HTML``.
"""

from __future__ import annotations

import functools
import re

import pytest
from book_support import BOOK, ROOT, article, check_chapter_rhythm, glued, prose_blocks
from source_texts import seed_files

# Each glued value, as it must render wherever the page shows it.
GLUED = {
    "where-does-the-time-go": {
        "t_h100_ms": "1.01",  # 1e12 / 9.89e14 = 1.011e-3 s
        "t_v6e_ms": "1.1",  # 1e12 / 9.1e14 = 1.099e-3 s
        "v6e_diff_pct": "1",  # 1 - 9.1e14 / 9.18e14 = 0.87 %
        "h100_cap": "80 GB",  # 8.0e10 bytes
        "v5e_cap": "16 GiB",  # Google's "16 GB", read in GiB
        "v5e_cap_printed": "16 GB",  # as cloud.google.com/tpu/docs/v5e prints it
        "v5e_cap_date": "2026-11-23",
        "v5e_cap_bytes": "17,179,869,184",  # 16 * 2**30
        "gib_over_gb_pct": "7.4",  # 2**30 / 1e9 = 1.0737
        "bytes_fp32": "4",
        "bytes_bf16": "2",
        "bytes_fp8": "1",
        "v5e_dcn": "3.125e9",
        "v5e_ici_count": "4",
        "v5e_ici_chip": "1.8e11",  # 4 links * 4.5e10, one way
        "ici_over_dcn": "57.6",  # 1.8e11 / 3.125e9: per chip against per chip
        "ex_lo_ms": "3",  # max(3, 2)
        "ex_hi_ms": "5",  # 3 + 2
        "v5e_critical": "240",
        "v5e_vendor_shift_pct": "0.2",  # 240.54 / 240.24 - 1 = 0.125 %, rounded up to a tenth
        "dot_limit": "0.5",  # (2N - 1) / (4N + 2) -> 1/2
        "vpu_critical": "2.5",  # 7e12 / 2.765e12 = 2.53
        "ex_piped_ms": "3.5",  # 4 pieces: the first 2 / 4 ms of transfer, then 3 ms of arithmetic
        "quiz_frac": "50",  # 120 * 8.2e11 / 1.97e14 = 0.4995
    },
    "visualizing-rooflines": {
        "v5e_critical": "240",
        "ridge2": "120",  # 1.97e14 / 1.64e12 = 120.1
        "a1_bw1_frac": "25",  # 60 * 8.2e11 / 1.97e14 = 0.2497
        "a1_bw2_frac": "50",  # 60 * 1.64e12 / 1.97e14 = 0.4995
        "a2_frac": "100",
    },
    "matrix-multiplication": {
        "v5e_critical": "240",
        "b_exact_8192": "255",  # 240.24 * 8192^2 / (8192^2 - 240.24 * 16384) = 255.2
        "int_256": "240.9",  # 256 * 8192^2 / (256 * 16384 + 8192^2) = 240.94
        "int_256_gap": "6",  # 1 - 240.94 / 256 = 5.9 %
        "int_1024": "819.2",  # 1024 * 8192 / (2048 + 8192)
        "int_1024_gap": "20",
        "b_star_lo": "153.0",  # A100: 3.12e14 / 2.039e12 = 153.02
        "tokens": "2,097,152",  # 512 * 4096
        "local": "16,384",  # 2,097,152 / 128
        "tiled_limit": "341.3",  # 512 * 1024 / 1536
        "small_tile_limit": "64",  # 128 * 128 / 256
        "llama_D": "4,096",  # Llama 3 8B's config.json: hidden_size
        "llama_F": "14,336",  # intermediate_size
        "reuse_intensity": "237.0",  # 256 * 4096 * 14336 / (256 * 4096 + 4096 * 14336 + 256 * 14336) = 236.96
        "reuse_2B_intensity": "441.1",  # the same at B = 512: 441.11
    },
    "beyond-the-roofline": {
        "fixed_us": "5.0",  # XLA's [256, 256] @ [256, 256]: 2 * 256**3 / 6.7216e12 FLOPs/s = 4.992 µs
        "n_star": "1,352",  # (4.992e-6 * 9.895e14 / 2) ** (1/3) = 1351.9; its 6 n^2 bytes take 3.3 µs at 3.35e12
        "sq_below": "3",  # n = 256, 512, 1024 of XLA's squares lie below 1352
        "sq_below_max": "1024",
        "sq_below_ratio": "3.9",  # 8.496 µs measured / max(2 * 1024**3 / 9.895e14, 6 * 1024**2 / 3.35e12) = 2.170 µs
        "n_star_bound": "compute-bound",  # n / 3 = 450.7 FLOPs/byte, right of 9.895e14 / 3.35e12
        "h200_bf16_ridge": "206.1",  # 9.895e14 / 4.8e12
        "h200_fp32_ridge": "14.0",  # 6.7e13 / 4.8e12 = 13.96
        "h200_fp32_share": "6.8",  # 6.7e13 / 9.895e14 = 6.77 %
        "v5p_mxu_ridge": "166.0",  # 4.59e14 / 2.765e12
        "v5p_vpu_ridge": "2.5",  # 7e12 / 2.765e12 = 2.53
        "ew_ai_unfused": "0.25",  # 3 FLOPs per element over 3 * (2 + 2) bytes
        "ew_ai_fused": "0.75",  # 3 FLOPs per element over 2 + 2 bytes
        "ew_us_unfused": "41.9",  # 3 * 4 * 4096 * 4096 bytes / 4.8e12 bytes/s = 41.94 µs
        "ew_us_fused": "14.0",  # 4 * 4096 * 4096 / 4.8e12 = 13.98 µs
        "best_mfu": "81",  # XLA's best, 8.047e14 FLOPs/s over 9.895e14
        "best_mbu": "23",  # its 2.684e8 bytes in 3.416e-4 s over 3.35e12 bytes/s = 23.4 %
        "near_mfu": "67",  # 4 x [256, 4096] @ [4096, 4096] at 6.606e14 FLOPs/s over 9.895e14
        "near_mbu": "87",  # the same rate over 227.6 FLOPs/byte, over 3.35e12 bytes/s = 86.6 %
        "q_math_us": "0.27",  # 2 * 512**3 / 9.895e14 = 0.271 µs
        "q_comms_us": "0.47",  # 6 * 512**2 / 3.35e12 = 0.470 µs
        "qm_mfu": "19",  # 3.69e13 / 1.97e14 = 18.7 %
        # the hierarchical roofline: H100 shared memory = 32 banks x 4 bytes x 132 SMs x 1.83e9 = 3.092e13 bytes/s
        "h100_smem_tbs": "30.9",
        "h100_smem_ridge": "32.0",  # 9.895e14 / 3.092e13 = 32.00
        "v5e_vmem_tbs": "18.0",  # 22 x 819e9 = 1.8018e13
        "v5e_vmem_ridge": "10.9",  # 1.97e14 / 1.8018e13 = 10.93
        # 4096-cubed bf16 matmul. HBM, at least: X, Y and the output once, 2 * 3 * 4096**2 bytes = 100.7 MB,
        # 2 * 4096**3 FLOPs over them = 4096 / 3 = 1365.3 FLOPs/byte
        "mm_hbm_mb": "101",
        "mm_hbm_ai": "1,365.3",
        # into shared memory, blocks (128, 64, 256): X read 4096/256 times, Y 4096/128 times, output once
        "mm_l2_ai": "83.6",  # 4096 / (16 + 32 + 1) = 4096 / 49
        "mm_l2_gb": "1.64",  # 2 * 4096**2 * 49 = 1.644e9 bytes
        "mm_smem_ai": "50.6",  # 4096 / (4096/256 + 4096/64 + 1) = 4096 / 81
        "mm_l2_at_hbm": "280.0",  # 83.59 x 3.35e12 = 2.800e14
        "mm_l2_share": "28",  # 2.800e14 / 9.895e14 = 28.3 %
        "mm_xla_needs": "233",  # XLA's 4096-cubed square at 2 * 4096**3 / 1.7616e-4 s = 7.802e14, over 3.35e12
        "tiling_ai": "341.2",  # the Tiling section's example, tiles (512, 512, 1024)
        "dec_ai": "1.00",  # 4sd FLOPs over 4sd + 4d bytes: 8192 / 8193
        "dec_hbm_tflops": "3.35",
        "dec_gqa_8b": "4",  # Llama 3 8B: 32 query heads over 8 KV heads
        "pre_hbm_ai": "4,096",  # Q, K, V, output once: 4 q s d FLOPs over 8 s d bytes (q = s) = q / 2
        "pre_l2_ai": "126.0",  # s r / (s + r) = 8192 * 128 / 8320
        "pre_smem_ai": "63.5",  # 8192 * 64 / 8256
        "pre_l2_at_hbm": "422",  # 126.03 x 3.35e12
        "pr_hbm_ai": "1,365.3",  # the compulsory bytes again: 4096 / 3
        "pr_l2_ai": "31.8",  # blocks (64, 32, 64): 4096 / (64 + 64 + 1) = 31.75
        "pr_l2_gb": "4.33",  # 2 * 4096**2 * 129 = 4.329e9 bytes
        "pr_l2_tbs": "2.71",  # 4.329e9 / 1.6e-3 s = 2.706e12
        "pr_smem_ai": "15.9",  # warps (32, 32, 32): 4096 / 257 = 15.94
        "pr_tflops": "85.9",  # 2 * 4096**3 / 1.6e-3 s
        "pr_mfu": "8.7",  # 8.590e13 / 9.895e14 = 8.68 %
        "pr_smem_ceil": "492.8",  # 15.94 x 3.092e13
        "pr_smem_share": "17",  # 85.90 / 492.8 = 17.4 %
        "pr_big_x": "2.6",  # 4096/49 over 4096/129 = 129 / 49 = 2.63
        "pr_big_l2_ai": "83.6",
        "pr_big_smem_ai": "50.6",
        "qm_mbu": "75",  # 3.69e13 / 60 / 8.2e11 = 75.0 %
    },
    "measure-your-machine": {
        "xla_tiny_gap": "43",  # 4.992 µs measured / (3 * 2 * 256**2 bytes / 3.35e12 bytes/s = 0.1174 µs) = 42.5
    },
    "practice": {
        "d1_tmath": "2.40",  # 2 * 4096 * 8192 * 32768 / 9.18e14 = 2.396 ms
        "d1_tcomms": "0.53",  # 2 * (4096 * 8192 + 8192 * 32768 + 4096 * 32768) / 1.64e12 = 0.532 ms
        "d1_bound": "compute-bound",
        "d1_ridge": "560.4",  # 9.18e14 / 1.638e12
        "d2_embedding": "0.53",  # 128256 * 4096 = 525,336,576 parameters of the input embedding table
        "d2_gb": "15.01",  # 2 bytes * (8,030,261,248 - 525,336,576) parameters = 15.0098e9 bytes
        "d2_ms": "3.13",  # 15.0098e9 / 4.8e12 = 3.127 ms
        "d2_tokens_per_s": "320",  # 4.8e12 / 15.0098e9 = 319.8
        "d3_ridge": "246.7",  # 1.3074e15 / 5.3e12
        "d4_frac": "24",  # 50 / 206.15
        "d5_dstar": "8756",  # 2 * 1.97e14 / 4.5e10 = 8755.6
        "d5_ratio": "2.1",  # 8755.6 / 4096
        "b_ridge_q1": "243",  # 1.97e14 / 8.1e11 = 243.2
        "b_half_q1": "121.5",
        "b_q2": "120",  # 1.97e14 / 8.2e11 / 2
        "b_dstar_4bf": "17511.1",  # 4 * 1.97e14 / 4.5e10
        "b_nvl": "214.2",  # 8.355e14 / 3.9e12
        "b_dense": "9.895e14",  # 1.979e15 / 2
    },
    "intro": {
        "words_per_minute": "120",
        "quiz_minutes": "2",
    },
    "network-rooflines": {
        "half_crit": "4378",  # 1.97e14 / 4.5e10 = 4377.78, rounded
        "half_crit_exact": "4377.8",
        "book_half": "4377",  # as the book prints it
        "d_star": "8756",  # 2 * 4377.78 = 8755.56
        "d_star_exact": "8755.6",
        "book_d": "8755",
        # d_star_4bf (17511.1) is shown by the Chinese edition's erratum box and checked on the errata page
        "d_star_bidir": "4377.8",  # 2 * 1.97e14 / 9e10 = 4377.78
        "link_bidir": "9e10",
        "link_chips": "TPU v4 and TPU v5e",  # ICI 4.5e10 per link in the table
    },
    "problems": {
        "q1_crit": "486",  # 3.94e14 / 8.1e11 = 486.4
        "q1_b": "243",  # 486.4 / 2
        "bf16_rule": "240",
        "q1_vs_bf16": "2",  # 243.2 / 240.2 = 1.012: within 2 %, not within 1 %
        "q1_b_82": "240",  # 3.94e14 / 8.2e11 / 2 = 240.2
        "q1_b_vendor": "239.9",  # 3.93e14 / 8.19e11 / 2 = 239.93
        "q2_crit": "240",
        "q2_b": "120",  # 240.2 / 2
        "q2_b_q1hbm": "122",  # 1.97e14 / 8.1e11 / 2 = 121.6
        "q3_b4096": "136",  # exact, int8 weights: 2.046e-5 / 1.5035e-7 = 136.1
        "q3_b1024": "226",  # 1.2788e-6 / 5.650e-9 = 226.3
        "q3_ratio": "1.66",  # 226 / 136 = 1.662
        "q3_vs_rule": "1.88",  # 226 / 120 = 1.883
        "q2_b_fp8": "120",  # fp8 weights are one byte, as int8
        "q4_512": "1.999",  # 2 * 4096^2 / (4096 + 4096^2 + 4096) = 1.99902
        "q4_lowest_ridge": "229.2",  # int8 ridges only; TPU v4: 2.75e14 / 1.2e12 = 229.17
        "q5_dense": "9.895e14",  # 1.979e15 / 2
        "q5_b": "295.4",  # 9.895e14 / 3.35e12
        "q5_vs_tpu": "1.23",  # 295.37 / 240.24
        "q5_b_book": "298.5",  # 1e15 / 3.35e12
        "q5_b_printed": "298",
        "q5_b_sparse": "590.7",  # 1.979e15 / 3.35e12
        "q5_h100-pcie": "378.3",  # 7.565e14 / 2e12 = 378.25, a half: rounded up, as the course states
        "q5_h100-nvl": "214.2",  # 8.355e14 / 3.9e12 = 214.23
    },
    "errata": {
        # how numbers are shown
        "v5e_critical": "240",  # 1.97e14 / 8.2e11 = 240.24
        "v5e_critical_exact": "240.2",
        "v5e_critical_vendor": "240.5",  # 1.97e14 / 8.19e11 = 240.54
        "book_half": "4377",  # the book's truncation of 1.97e14 / 4.5e10 = 4377.78
        "half_crit_exact": "4377.8",
        "v5e_hbm_main": "8.2e11",
        "v5e_peak": "1.97e14",
        "q1_b": "243",
        "q1_b_82": "240",
        "q2_b_q1hbm": "122",
        "q3_ratio": "1.66",
        "q3_vs_rule": "1.88",
        "vpu_critical": "2.5",
        "int8_over_bf16": "2",  # 3.94e14 / 1.97e14
        "q5_b_book": "298.5",
        "q5_h100-sxm": "295.4",
        "d_star_exact": "8755.6",
        "d_star_4bf": "17511.1",  # 4 * 1.97e14 / 4.5e10 = 17511.1
        "local": "16,384",  # 512 * 4096 / 128
        "local_vs_typical": "16",  # 16,384 / 1024
        "nvl_b_int": "214",  # 8.355e14 / 3.9e12 = 214.2
        "v5e_crit_q1_int": "243",  # 1.97e14 / 8.1e11
        "half_243": "121.5",
        "rv_main_exact": "240.2",  # 1.97e14 / 8.2e11 = 240.24
        "rv_main": "240",
        "rv_vendor": "240.5",  # 1.97e14 / 8.19e11 = 240.54
        "rv_q1_exact": "243.2",  # 1.97e14 / 8.1e11 = 243.21 (= 3.94e14 / 8.1e11 / 2)
        "rv_q1": "243",
        "rv_int8_vendor": "239.9",  # 3.93e14 / 8.19e11 / 2 = 239.93
        "tile_flops_right": "4.29",  # 2 * 1024 * 1024 * 2048 / 1e9
        "tile_flops_as_printed": "2.15",  # 2 * 4 * 4 * 4 * 256^3 / 1e9
    },
}

# Sentences whose numbers and words must stand together in the prose.
CLAIMS = {
    "where-does-the-time-go": [
        "9.1e14 here, 1 % below the vendor’s figure, and 9.2e14 in its Part 2, which is the vendor’s figure rounded",
        "critical intensity is 240 FLOPs/byte",
        "takes between 3 ms and 5 ms",
        "about 0.5 FLOP per byte",
        "critical intensity of about 2.5",
        "80–85 % of their advertised FLOPs/s",
    ],
    "visualizing-rooflines": [
        "At BW1 it reaches 25 % of the peak, at BW2 50 %",
        "Their peaks span a factor of 11.4, their ridge points a factor of 2.7",  # H200 206.1 to v6e 560.4
        "Each execution unit has its own compute roof",
        # A100 3.12e14 / 2.039e12 = 153.0, B200 2.25e15 / 7.7e12 = 292.2; 2250 / 312 = 7.2 times the peak,
        # 7.7 / 2.039 = 3.8 times the bandwidth (the A100 to the H100 would give the H100's ridge, Question 5's answer)
        "peak grew 7.2 times and HBM bandwidth only 3.8 times. So the ridge nearly doubled, from 153.0 to 292.2",
        # 9.18e14 / 1.638e12 = 560.4 over 1.97e14 / 8.19e11 = 240.5: 2.33 (the v5e's vendor ridge is not printed here)
        "The TPU v6e’s ridge, 560.4, is 2.3 times the v5e’s",
        "so its ridge, 206.1, lies below the H100",  # H200: 9.895e14 / 4.8e12
    ],
    "matrix-multiplication": [
        "critical batch size of 240 tokens",
        "between 153.0 and 560.4 tokens per replica: hundreds, never thousands",  # A100 and v6e (9.18e14 / 1.638e12)
        "usually under 1024 tokens while D and F are above 8000",
        (
            "TPUs range from 166.0 (TPU v5p) to 560.4 (TPU v6e (Trillium)), GPUs from 153.0 (NVIDIA A100 SXM 80GB) "
            "to 292.2 (NVIDIA B200 (HGX)). The two ranges overlap"
        ),
        "2 of the 5 TPUs (TPU v4, TPU v5e) are within 5% of 240",
    ],
    "network-rooflines": [
        "compute-bound when D > 8755.6",
        "It speaks only of “TPUs”",
    ],
    "problems": [
        "within 2 % of the bf16 rule",
        "the answer would be 122",
        "1.66 times as many tokens",
        "B_\\text{crit} \\approx 9.895e14 / 3.35e12 ≈ 295.4 tokens",
        # int8 activations, weights and arithmetic: 3.94e14 / 8.2e11 / 2 = 240.2, where bf16 started (1.97e14 / 8.2e11)
        "is compute-bound only from B > 240, back where bf16 started",
    ],
    "errata": [
        "Rates keep the significant figures their source gives them, such as 1.97e14 FLOPs/s from the book",
        "the network chapter prints 4377 for 4377.8",
        "226 / 120 = 1.88: almost double",
        "226 / 136 = 1.66: not",
        "gives a local batch of 16,384 tokens, 16 times that",
        "That threshold belongs to the H100 NVL (214.2",
        "gives 121.5",
        "is ambiguous rather than wrong",
        "fits an fp32 output, or a bf16 output tile read and written back",
        "is 2 × 1.97e14: twice its bf16 figure",
        "so the book’s is not a rounding of it",
        "The book calls HBM “on-chip memory”",
        "repeated by the Korean translation",
        "“another DF additions”",
        "so it is BF additions per chip",
        "The question gives 1.97e14 FLOPs/s and no bandwidth",
        "“almost doubles” the critical batch size",
        "“on most TPUs”",
        "counts the 2BDF int8 operations as “FLOPs”",
        "“two horizontal lines”",
        "“represents” the memory bandwidth",
        "“that is, 4BF bytes”",
        "still writes B > 120",
    ],
}


@pytest.mark.parametrize(("page", "key", "expected"), [(p, k, v) for p, kv in GLUED.items() for k, v in kv.items()])
def test_glued_value_where_it_stands(page, key, expected):
    shown = [text for k, text in glued(page) if k == key]
    assert shown, f"{page}: the glued value {key!r} is not shown anywhere"
    wrong = [text for text in shown if text != expected]
    assert not wrong, f"{page}: {key!r} should render as {expected!r} at each of its {len(shown)} places, got {wrong}"


@pytest.mark.parametrize(("page", "claim"), [(p, c) for p, cs in CLAIMS.items() for c in cs])
def test_claim_stands_in_the_prose(page, claim):
    blocks = prose_blocks(page)
    assert any(claim in b for b in blocks), f"{page}: no paragraph says {claim!r}"


@pytest.mark.parametrize("page", sorted(p.stem for p in BOOK.glob("*.md")))
def test_no_unrendered_glue(page):
    text = article(page).get_text(" ")
    assert "{glue" not in text, f"{page}: a glue role was not resolved"


# Cells of the spec appendix's tables: (table index, chip, column header) -> text, by hand from vendor sheets.
SPEC_CELLS = {
    (0, "TPU v5e", "ridge, bf16 (FLOPs/byte)"): "240.5",  # 1.97e14 / 8.19e11, one decimal (table figure)
    (0, "TPU v4", "HBM capacity"): "32 GiB",  # Google lists GiB
    (0, "TPU v5p", "HBM capacity"): "95 GiB",
    (0, "NVIDIA H100 SXM", "HBM capacity"): "80 GB",  # NVIDIA lists GB
    (0, "NVIDIA H100 SXM", "bf16 peak (TFLOPs/s)"): "989.5",  # 1,979 with sparsity / 2
    (2, "NVIDIA H100 SXM", "bandwidth (TB/s)"): "30.9",  # 132 SMs x 128 bytes per clock x 1.83 GHz
    (2, "NVIDIA H100 SXM", "ridge, bf16 (FLOPs/byte)"): "32.0",  # 9.895e14 / 3.092e13
    (2, "TPU v5e", "bandwidth (TB/s)"): "18.0",  # 22 x 819 GB/s
    (2, "TPU v5e", "ridge, bf16 (FLOPs/byte)"): "10.9",
}


def _spec_cell(table: int, chip: str, column: str) -> list[str]:
    tab = article("accelerator-specs").select("table")[table]
    headers = [" ".join(th.get_text().split()) for th in tab.select("thead th")]
    col = headers.index(column)
    return [
        " ".join(tr.select("td")[col].get_text().split())
        for tr in tab.select("tbody tr")
        if " ".join(tr.select("td")[0].get_text().split()) == chip
    ]


@pytest.mark.parametrize(("where", "expected"), list(SPEC_CELLS.items()), ids=[f"{c}-{h}" for _, c, h in SPEC_CELLS])
def test_spec_table_cell(where, expected):
    assert _spec_cell(*where) == [expected]


def test_spec_links_keep_every_digit():
    """TPU v5e DCN is 3.125 GB/s; a two-decimal format would print 3.12."""
    tab = article("accelerator-specs").select("table")[1]
    rows = [[" ".join(td.get_text().split()) for td in tr.select("td")] for tr in tab.select("tbody tr")]
    assert [r[2] for r in rows if r[:2] == ["TPU v5e", "DCN"]] == ["3.125"]


# What the course must never say again (a page's prose and outputs, case-insensitive).
NEVER_SAID = {
    "bandwidth growing along with FLOPs/s (the ridges climb: the memory wall)": re.compile(
        r"grown roughly along with|grew roughly along with|kept pace with FLOPs", re.I
    ),
    "GPU capacities read as decimal GB by 'the usual convention'": re.compile(r"usual convention", re.I),
    "int8 arithmetic as lowering the critical batch further": re.compile(r"int8 arithmetic would\s+do better still"),
    "the book's int8 peak as a rounding of Google's 3.93e14 (it is 2 × 1.97e14)": re.compile(
        r"rounds int8|int8 to 3\.94e14|rounded to 3\.94e14|3\.93e14,? rounded|3\.94e14 is (google's|the vendor's)", re.I
    ),
    "an erratum without a source (a 'common slip')": re.compile(r"common slip|easy slip", re.I),
    "HBM as on-chip memory, outside a quotation": re.compile(r"(?<!“)on-chip memory \(HBM\)|HBM is on-chip", re.I),
    "a bandwidth line's slope as what more bandwidth changes (on log-log axes it is always one)": re.compile(
        r"move the slope|slope (up|down)\b|steeper slope", re.I
    ),
    "a link name not as its makers write it (PCIe, Infinity Fabric)": re.compile(r"\bPCIE\b|INFINITY-FABRIC"),
    "the book's PCIe or DCN figure called one-way": re.compile(
        r"(PCIe|DCN)(?:(?!ICI|NVLink)(?:[^.]|\.\d)){0,40}\bone[- ]way", re.I
    ),
}


@functools.cache
def _page_text(page: str) -> str:
    art = article(page)
    for tag in art.select(".cell_input, script, style"):
        tag.decompose()
    return " ".join(art.get_text().split())


@pytest.mark.parametrize("page", sorted(p.stem for p in BOOK.glob("*.md")))
@pytest.mark.parametrize("what", list(NEVER_SAID))
def test_never_said(page, what):
    if page == "accelerator-specs" and "one-way" in what:
        pytest.skip(
            "the appendix lists GPU PCIe links, one way by NVIDIA's halved figures; its TPU rows are checked below"
        )
    found = NEVER_SAID[what].findall(_page_text(page))
    assert not found, f"{page}: says {found} ({what})"


def test_never_said_can_fail():
    assert NEVER_SAID["the book's int8 peak as a rounding of Google's 3.93e14 (it is 2 × 1.97e14)"].search(
        "The book rounds int8 to 3.94e14 OPs/s"
    )
    assert NEVER_SAID["the book's PCIe or DCN figure called one-way"].search("DCN 3.125e9 bytes/s one way")
    assert not NEVER_SAID["the book's PCIe or DCN figure called one-way"].search(
        "ICI and NVLink bandwidths are stored one way; vendors quote both. PCIe and DCN as given"
    )
    assert not NEVER_SAID["the book's PCIe or DCN figure called one-way"].search(
        "DCN 3.125 GB/s (per chip) The ICI figure is one way"
    )


def test_every_erratum_names_its_source():
    """Each entry on the errata page says where the slip comes from."""
    # the page's notice and the folded notes of "How numbers are shown" are not entries; entries are numbered
    boxes = [
        b
        for b in article("errata").select("div.admonition:not(.answers-ahead)")
        if re.match(r"\d+\. ", " ".join(b.select_one(".admonition-title").get_text().split()))
    ]
    assert len(boxes) >= 17
    unsourced = [" ".join(b.get_text().split())[:60] for b in boxes if "Source:" not in b.get_text()]
    assert not unsourced, f"errata entries without a source: {unsourced}"


def test_tpu_pcie_and_dcn_are_not_called_one_way():
    """The book gives TPU PCIe and DCN figures "per TPU", without a direction; the appendix keeps them as given."""
    tab = article("accelerator-specs").select("table")[1]
    rows = [[" ".join(td.get_text().split()) for td in tr.select("td")] for tr in tab.select("tbody tr")]
    tpu_rows = [r for r in rows if r[0].startswith("TPU v") and r[1] in ("PCIe", "DCN")]
    assert tpu_rows and all(r[3] == "as given" for r in tpu_rows), tpu_rows


# Quotations the chapters and the errata make from the source texts, checked against the sources themselves:
# (seed file prefix, the text exactly as that source prints it).
SOURCE_QUOTES = {
    "HBM called on-chip memory (book)": ("004", "on-chip memory (HBM)"),
    "HBM called on-chip memory (Korean translation)": ("001", "온칩 메모리(HBM)"),
    "HBM placed inside the chip (Chinese summary)": ("003", "加速器芯片**内部**的数据流动"),
    "the 2-chip footnote's DF additions": ("004", "(another DF additions)"),
    "tiling footnote tile sizes": ("004", "tile sizes $bm$, $bk$, $bm$"),
    "tiling footnote FLOPs": ("004", r"$2 \cdot tm \cdot tn \cdot tk \cdot bm \cdot bk \cdot bm$"),
    "tiling footnote bytes": ("004", r"(tk \cdot (bm \cdot bk + bk \cdot bn) + 2 \cdot bm \cdot bn)$"),
    "tiling FLOPs in the Korean translation": ("001", r"tk \cdot m \cdot bk \cdot bm"),
    "Question 2 states only FLOPs/s": (
        "004",
        "At what batch size do we become compute bound? Assume `1.97e14` bfloat16 FLOPs/s.",
    ),
    "Question 2's answer": ("004", "$$B > 120$$"),
    "Question 3's almost doubles": ("004", "D=F=1024 almost doubles the critical batch size"),
    "Question 3's code bandwidth": ("004", "comms_time = (2*B*D + D*F + 2*B*F) / 8.2e11"),
    "VPU footnote": ("004", "The TPU v5p VPU can do roughly 7e12 FLOPs / second"),
    "activation quantization caveat": ("004", "if we quantize our activations but still do full-precision FLOPs"),
    "local batch of 16k": ("004", "a local batch size of 16k tokens"),
    "learner: B > 214": ("002", "So we are compute bound if B > 214."),
    "learner: 2B > 243": ("002", "So compute bound if 2B > 243:"),
    "learner: B > 120": ("002", "we are compute bound when B > 120 instead of B > 240"),
    "learner: peak FLOPs/s as FLOPs/byte": ("002", "Given peak FLOPS/s of TPU v5e MXU is 240 FLOPs / byte"),
    "240 on most TPUs": ("004", "on most TPUs, we need our per-replica token batch size to be greater than 240"),
    "GPUs closer to 300": ("004", "slightly higher (closer to 300)"),
    "int8 OPs called FLOPs": ("004", "So this is still $2BDF$ FLOPs."),
    "int8 peak about 2x bf16": ("004", "our int8 peak OPs/s is `3.94e14` (about 2x bfloat16)"),
    "Question 1's bandwidth": ("004", "Assume our HBM bandwidth is `8.1e11` bytes/s"),
    "main text's bandwidth": ("004", "load `8.2e11` bytes/s from HBM"),
    "network threshold truncated": ("004", r"= 4377$ or $D > 8755$"),
    "the two-chip link": ("004", "Say we can copy `4.5e10` bytes in each direction"),
    "typical shapes": ("004", "$B < 1024$ tokens (*not sequences*) but $D$ and $F > 8000$"),
    "achievable peak": ("004", "around 80-85% of the claimed peak FLOPs, while TPUs can get closer to 95%"),
    "v6e and H100 peaks": ("004", "about 9.89e14 bfloat16"),
    "Question 5 truncated": ("004", "`1e15 / 3.35e12 = 298`"),
    "two horizontal lines (Chinese summary)": ("003", "图表中的两条水平线代表硬件的**峰值计算能力**"),
    "slope represents bandwidth (Chinese summary)": ("003", "其斜率代表**内存带宽**"),
    "4BF bytes (Chinese summary)": ("003", "（即 $4 * B * F$ 字节）"),
    "swapped bounds (Chinese summary)": ("003", "$upper = max(T_{math}, T_{comms})$"),
    "Question 2 with 8.1e11 (Chinese summary)": ("003", "2B > 1.97e14$ / 8.1e11  => B > 120"),
}


@pytest.mark.parametrize("what", list(SOURCE_QUOTES))
def test_quoted_source_says_it(what):
    prefix, quote = SOURCE_QUOTES[what]
    found = seed_files(f"{prefix}_*.txt")
    assert quote in found[0].read_text(encoding="utf-8"), f"{found[0].name} does not say {quote!r} ({what})"


def test_measured_knee_is_placed():
    """The knee is read from the frozen reference run, a quiet one, so the page always places it: at the knee of
    that run's sweep, less the points the roofline explains, interpolated between its sizes."""
    import rooflinelib as rl

    text = " ".join(prose_blocks("measure-your-machine"))
    assert "too few sizes" not in text and "too noisy to place a knee" not in text
    assert "measured sweep (8 sizes, B from 1 to 128)" in text
    ref = rl.reference_measurements(kind="cpu")["cpu-reference"]
    kept = rl.knee_sweep(ref)
    assert kept.shape.steady
    knee = rl.measured_knee(kept.points)
    b_star = float(rl.critical_batch_size(ref.peak_flops("fp32"), ref.bandwidth("copy"), 2048, 2048, precision="fp32"))
    assert f"reaches 80% of its plateau at B ≈ {knee:.1f}, {knee / b_star:.1f} times the prediction" in text


CHAPTERS = [
    "where-does-the-time-go",
    "visualizing-rooflines",
    "matrix-multiplication",
    "network-rooflines",
    "measure-your-machine",
    "beyond-the-roofline",
]


@pytest.mark.parametrize("page", CHAPTERS)
def test_chapter_rhythm(page):
    """A question first, a bold concept, a labelled equation, and a takeaway."""
    check_chapter_rhythm(page)


def test_problem_links_point_at_the_exercises():
    """Each problem's "Autograded version" link names a notebook the repository ships."""
    ROOT_URL = "https://github.com/roofline-course/roofline-course/blob/main/"
    links = re.findall(re.escape(ROOT_URL) + r"(exercises/rooflines/[\w.]+\.ipynb)", (BOOK / "problems.md").read_text())
    assert len(set(links)) == 8, links  # Questions 1 to 8 (Question 6's box points to the capstone, and links too)
    missing = [f for f in links if not (ROOT / f).is_file()]
    assert not missing, f"problems.md links to notebooks that do not exist: {missing}"
