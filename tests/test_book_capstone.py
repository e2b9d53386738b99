"""The capstone chapter and the one-page summary: every glued number where it stands, and their claims.

Expected values are worked out here with plain arithmetic on the published model fields and the
vendors' figures (written out next to each), never with ``rooflinelib``: the pages compute them
with ``rooflinelib``, so a wrong formula, table entry or rounding fails here. Uses the helpers of
``test_book_numbers`` and needs a built book.
"""

from __future__ import annotations

import pytest
from book_support import article, check_chapter_rhythm, glued, prose_blocks

# Llama 3 8B (config.json): D = 4096, F = 14336, 32 layers, 32 heads and 8 KV heads of 128, vocab 128256.
PARAMS_8B = 8_030_261_248  # 32 * 218,112,000 + 2 * 128256 * 4096 + 4096 (tests/test_models.py)
EMBED_8B = 128_256 * 4096  # 525,336,576
READ_8B = (PARAMS_8B - EMBED_8B) * 2  # bf16 bytes a decode step reads: 15,009,849,344
FLOPS_8B = 2 * (32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + EMBED_8B)  # per token: 15,009,316,864
PARAMS_70B = 70_553_706_496
H100_PEAK, H100_HBM = 9.895e14, 3.35e12  # dense bf16 (1,979 with sparsity / 2), 3.35 TB/s
V5E_PEAK, V5E_HBM, V5E_CAP = 1.97e14, 8.19e11, 16 * 2**30
B200_PEAK, B200_HBM = 2.25e15, 7.7e12
T1_H100 = READ_8B / H100_HBM  # 4.4806 ms
B_STAR_H100 = H100_PEAK / H100_HBM * READ_8B / FLOPS_8B  # 295.38


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
    "fit70_h100": "2",  # 141.1 / 80 = 1.76
    "fit70_v5e": "9",  # 141.1 / 17.18 = 8.21
    "fit70_v5e_int4": "3",  # 35.28 / 17.18 = 2.05
    "h100_cap": "80 GB",
    "v5e_cap_misread": "16 GB",
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
    "S": "2048",
    "S4": "512",
    "t_prefill": "31.07",  # 2048 * FLOPS_8B / 9.895e14
    "prefill_tps": f"{H100_PEAK / FLOPS_8B:,.0f}",  # 65,925
    "prefill_gain": "295.4",
    "kv_dim8": "1,024",
    "crit_kv": f"{exact_b(H100_PEAK / H100_HBM, 4096, 1024):.1f}",  # 461.9
    "crit_mlp": f"{exact_b(H100_PEAK / H100_HBM, 4096, 14336):.1f}",  # 325.6
    "t1_int8": "2.24",  # half of 4.4806
    "bstar_int8": "147.7",
    "t1_fp8": "2.24",
    "bstar_fp8": "295.4",
    "kv8": "131,072",  # 2 * 32 * 8 * 128 * 2
    "kv8_kib": "128",
    "kv70_kib": "320",  # 2 * 80 * 8 * 128 * 2 / 1024
    "kvq_kib": "56",  # 2 * 28 * 4 * 128 * 2 / 1024
    "gqa_factor": "4",  # 32 / 8
    "kv_seqs": "64",
    "kv_ctx": "4096",
    "kv_cache_gb": "34.36",  # 64 * 4096 * 131,072 = 34,359,738,368
    "kv_vs_weights": "2.1",  # / 16,060,522,496 = 2.14
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
    "w8_bf16": "16.06",
    "fit70_h100": "2",
    "bstar_h100": "295.4",
    "kv8": "131,072",
    "sum_kv_cap_tokens": f"{(8e10 - PARAMS_8B * 2) // 131_072:,.0f}",  # 487,819.6: whole tokens, 487,819
}


@pytest.mark.parametrize(
    ("page", "key", "expected"),
    [("real-model-real-chips", k, v) for k, v in CAPSTONE.items()] + [("summary", k, v) for k, v in SUMMARY.items()],
)
def test_glued_value_where_it_stands(page: str, key: str, expected: str) -> None:
    shown = [text for k, text in glued(page) if k == key]
    assert shown, f"{page}: the glued value {key!r} is not shown anywhere"
    assert all(text == expected for text in shown), f"{page}: {key!r} should render as {expected!r}, got {shown}"


CLAIMS = {
    "real-model-real-chips": [
        "Most of them, 70%, sit in the MLPs",
        "fits on a single B200",
        "it fits on one H100’s 80 GB",
        "Llama 3 8B in bf16 fits on one TPU v5e, but only just",
        "at B = 1 and at B = 64 alike",
        "four prompts of 512 tokens take exactly as long",
        "the critical batch halves too, to 147.7",
        "the critical batch stays at 295.4",
        "2.1 times the weights",
        "the decode times here are lower bounds",
    ],
    "summary": ["D \\ge 8756"],  # D > 8755.6 from D = 8756 on
}


@pytest.mark.parametrize(("page", "claim"), [(p, c) for p, cs in CLAIMS.items() for c in cs])
def test_claim_stands_in_the_prose(page: str, claim: str) -> None:
    assert any(claim in block for block in prose_blocks(page)), f"{page}: no paragraph says {claim!r}"


def _table(page: str, index: int) -> tuple[list[str], list[list[str]]]:
    tab = article(page).select("table")[index]
    headers = [" ".join(th.get_text().split()) for th in tab.select("thead th")]
    rows = [[" ".join(td.get_text().split()) for td in tr.select("td")] for tr in tab.select("tbody tr")]
    return headers, rows


def test_capstone_tables() -> None:
    headers, rows = _table("real-model-real-chips", 0)  # the models
    assert [r[headers.index("parameters (10⁹)")] for r in rows] == ["8.03", "70.55", "7.62"]  # Qwen: 7,615,616,512
    headers, rows = _table("real-model-real-chips", 2)  # chips to hold the weights
    col = headers.index("NVIDIA H100 SXM (80 GB)")
    assert {(r[0], r[1]): r[col] for r in rows}[("Llama 3 70B", "bf16")] == "2"
    assert {(r[0], r[1]): r[headers.index("TPU v5e (16 GiB)")] for r in rows}[("Llama 3 70B", "int8")] == "5"  # 4.1
    headers, rows = _table("real-model-real-chips", 3)  # one layer on an H100
    crit = {r[0]: r[headers.index("critical batch")] for r in rows}
    assert crit["k_proj"] == f"{exact_b(H100_PEAK / H100_HBM, 4096, 1024):.1f}"
    assert crit["q_proj"] == f"{exact_b(H100_PEAK / H100_HBM, 4096, 4096):.1f}"  # 345.2
    headers, rows = _table("real-model-real-chips", 4)  # quantized weights
    bf16 = next(r for r in rows if r[0] == "bf16")
    assert bf16[2:] == ["18.33", "240.5", "4.48", "295.4", "1.95", "292.2"]  # 15.01e9 / 8.19e11, 3.35e12, 7.7e12
    v5e_fp8 = next(r for r in rows if r[0] == "fp8")
    assert v5e_fp8[2:4] == ["—", "—"], "the TPU v5e has no fp8 peak in the spec table"


def test_summary_ridge_table() -> None:
    headers, rows = _table("summary", -1)
    cells = {r[0]: r[1:] for r in rows}
    assert headers == ["chip", "bf16 (FLOPs/byte)", "fp8 (FLOPs/byte)", "int8 (OPs/byte)"]
    assert cells["TPU v5e"] == ["240.5", "—", "479.9"]  # 1.97e14 / 8.19e11; 3.93e14 / 8.19e11
    assert cells["NVIDIA H100 SXM"] == ["295.4", "590.7", "590.7"]  # 1.979e15 / 3.35e12
    assert cells["NVIDIA B200 (HGX)"] == ["292.2", "584.4", "584.4"]  # 4.5e15 / 7.7e12
    assert cells["TPU7x (Ironwood)"] == ["312.6", "625.2", "—"]  # 4.614e15 / 7.38e12


def test_capstone_rhythm() -> None:
    """A question first, a bold concept, labelled equations and a takeaway, as every chapter."""
    check_chapter_rhythm("real-model-real-chips")


def test_capstone_figures_have_descriptions() -> None:
    images = article("real-model-real-chips").select("img")
    assert len(images) == 2
    assert all(len(img.get("alt", "")) > 100 for img in images), "each figure needs a real description"
