"""The pictures of the ideas (``rooflinelib.diagrams``) and the formulas behind them.

Each picture's numbers must come from the spec table or from its arguments: the texts on the
chip are read back into numbers and compared with the table, the schedules and times with hand
arithmetic written next to each check.
"""

from __future__ import annotations

import itertools
import math
import re

import matplotlib
import pytest

import rooflinelib as rl
from rooflinelib import diagrams

matplotlib.use("Agg")
import matplotlib.pyplot as plt


@pytest.fixture
def ax():
    fig, axes = plt.subplots()
    yield axes
    plt.close(fig)


def texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


# --- the chip -------------------------------------------------------------------------------------------

FIGURE = re.compile(r"\d (TB/s|GB/s|TFLOPs/s|GiB|GB)\b")  # a text that states a figure (not "L2", "v5e")
UNITS = {"TB/s": 1e12, "GB/s": 1e9, "TFLOPs/s": 1e12, "GiB": 2**30, "GB": 1e9}


def read_back(text: str) -> float:
    """``'819 GB/s'`` -> 8.19e11; ``'ICI: 4 links × 45 GB/s'`` -> 4.5e10 (the per-link figure)."""
    number, unit = re.search(r"([\d.]+) (TB/s|GB/s|TFLOPs/s|GiB|GB)\b", text).groups()
    return float(number) * UNITS[unit]


def test_the_v5e_drawn_as_google_and_the_book_give_it(ax):
    """By hand from Google's v5e page: 16 GiB, 819 GB/s, 197 TFLOPs/s; the book's ICI table: 4 × 45 GB/s."""
    drawn = texts(diagrams.draw_chip("tpu-v5e", ax=ax))
    for expected in ("16 GiB", "819 GB/s", "197 TFLOPs/s bf16", "ICI: 4 links × 45 GB/s", "PCIe: 16 GB/s"):
        assert expected in drawn, f"{expected!r} is not on the TPU v5e picture: {drawn}"
    assert "DCN: 3.125 GB/s" in drawn, "every digit of the table's 3.125e9 must show"
    assert any("VMEM" in t for t in drawn) and any("MXU" in t for t in drawn)


@pytest.mark.parametrize("key", sorted(rl.ACCELERATORS))
def test_every_number_on_the_chip_is_the_tables(key: str, ax):
    acc = rl.get_accelerator(key)
    drawn = [t for t in texts(diagrams.draw_chip(key, ax=ax)) if FIGURE.search(t)]
    labels = diagrams.chip_labels(key)
    assert set(drawn) <= set(labels.values()), f"{key}: a number on the picture is not one of its labels"
    assert read_back(labels["hbm_bandwidth"]) == pytest.approx(acc.hbm_bandwidth, rel=1e-12)
    assert read_back(labels["peak"]) == pytest.approx(acc.peak("bf16"), rel=1e-12)
    for name, link in acc.links.items():
        assert read_back(labels[f"link:{name}"]) == pytest.approx(link.bandwidth, rel=1e-12), name
        if link.scope == "per link" and link.count:
            assert f"{link.count} links" in labels[f"link:{name}"]
    if acc.hbm_capacity is not None:
        assert read_back(labels["hbm"]) == pytest.approx(acc.hbm_capacity, rel=5e-3)  # shown in whole GB / GiB
    if acc.vector_flops is not None:
        assert read_back(labels["vector"]) == pytest.approx(acc.vector_flops, rel=1e-12)
    for label in labels.values():
        assert label in drawn or not FIGURE.search(label), f"{key}: {label!r} not drawn"


def test_a_gpus_vector_units_show_its_fp32_peak_and_a_tpu_without_one_shows_none():
    assert diagrams.chip_labels("h100-sxm")["vector"] == "67 TFLOPs/s fp32"  # NVIDIA's sheet: FP32 67 TFLOPS
    assert "vector" not in diagrams.chip_labels("tpu-v5e")  # the table has no VPU figure for it
    assert diagrams.chip_labels("tpu-v5p")["vector"] == "7 TFLOPs/s"  # the book's footnote, 7e12


def test_an_unknown_chip_is_refused_with_suggestions():
    with pytest.raises(KeyError, match="did you mean"):
        diagrams.draw_chip("tpu-v5")


# --- overlap ---------------------------------------------------------------------------------------------


def test_the_schedule_ends_at_the_sum_without_overlap_and_near_the_max_with_it():
    # 3 ms of arithmetic, 2 ms of transfers: 5 ms one after the other; in 4 pieces 0.5 ms arrive before
    # the first piece can start, then 3 ms of arithmetic: 3.5 ms
    serial = diagrams.overlap_schedule(3e-3, 2e-3, 1)
    assert max(i.end for i in serial) == pytest.approx(5e-3)
    piped = diagrams.overlap_schedule(3e-3, 2e-3, 4)
    assert max(i.end for i in piped) == pytest.approx(3.5e-3)
    assert max(i.end for i in diagrams.overlap_schedule(3e-3, 2e-3, 1000)) == pytest.approx(3.002e-3)
    # bandwidth-bound: 2 ms of arithmetic behind 3 ms of transfers ends one piece of arithmetic after them
    assert max(i.end for i in diagrams.overlap_schedule(2e-3, 3e-3, 4)) == pytest.approx(3.5e-3)


@pytest.mark.parametrize(("t_math", "t_comms", "chunks"), [(3e-3, 2e-3, 4), (1e-6, 7e-6, 3), (5.0, 5.0, 7)])
def test_a_piece_is_computed_after_it_arrives_one_at_a_time(t_math, t_comms, chunks):
    schedule = diagrams.overlap_schedule(t_math, t_comms, chunks)
    loads = [i for i in schedule if i.kind == "transfer"]
    works = [i for i in schedule if i.kind == "compute"]
    assert len(loads) == len(works) == chunks
    assert all(w.start >= ld.end - 1e-15 for ld, w in zip(loads, works))
    assert all(b.start >= a.end - 1e-15 for lane in (loads, works) for a, b in itertools.pairwise(lane))
    assert sum(w.end - w.start for w in works) == pytest.approx(t_math)
    assert max(i.end for i in schedule) == pytest.approx(rl.pipelined_time(t_math, t_comms, chunks))


def test_the_overlap_picture_shows_both_totals(ax):
    drawn = texts(diagrams.draw_overlap(3e-3, 2e-3, chunks=4, ax=ax))
    assert "5 ms" in drawn and "3.5 ms" in drawn
    assert "3.5 µs" in texts(diagrams.draw_overlap(3e-6, 2e-6, unit="µs", ax=ax))
    with pytest.raises(ValueError, match="unit must be 'ms' or 'µs', got 's'"):
        diagrams.draw_overlap(3e-3, 2e-3, unit="s", ax=ax)


def test_pipelined_time_refuses_a_bad_number_of_pieces():
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="chunks must be a whole number >= 1"):
            rl.pipelined_time(1.0, 1.0, bad)


# --- reuse, tiles, two chips -----------------------------------------------------------------------------


def test_the_reuse_picture_prints_the_exact_intensity_and_sizes(ax):
    B, D, F = 256, 4096, 14336
    drawn = " | ".join(texts(diagrams.draw_matmul_reuse(B, D, F, ax=ax)))
    exact = B * D * F / (B * D + D * F + B * F)  # 2BDF / (2BD + 2DF + 2BF) = 236.96
    assert f"{exact:.1f} FLOPs/byte" in drawn and "≈ B = 256" in drawn
    assert "117.4 MB" in drawn and "2.1 MB" in drawn and "7.34 MB" in drawn  # 2DF, 2BD, 2BF bytes / 1e6
    assert "used by all B = 256 rows" in drawn


def test_the_tiling_picture_maps_m_k_n_onto_b_d_f(ax):
    diagrams.draw_tiling(2048, 2048, 4096, 512, 512, 1024, ax=ax)
    drawn = " | ".join(texts(ax))
    for mapping in (r"$m \times k$ = $B \times D$", r"$k \times n$ = $D \times F$", r"$m \times n$ = $B \times F$"):
        assert mapping in drawn
    assert "reads 4 tiles of X\nand 4 of Y" in drawn  # k / b_k = 2048 / 512
    coloured = [p for p in ax.patches if p.get_facecolor()[:3] != (1.0, 1.0, 1.0)]
    assert len(coloured) == 4 + 4 + 1  # a row of X's tiles, a column of Y's, one output tile
    assert len(ax.patches) == 4 * 4 + 4 * 4 + 4 * 4  # (m/bm)(k/bk) + (k/bk)(n/bn) + (m/bm)(n/bn)


def test_a_tile_that_does_not_divide_its_dimension_is_refused(ax):
    with pytest.raises(ValueError, match="bk must divide k: k = 1000, bk = 512"):
        diagrams.draw_tiling(2048, 1000, 4096, 512, 512, 1024, ax=ax)


def test_the_two_chip_picture_shows_the_networks_times(ax):
    drawn = " | ".join(
        texts(diagrams.draw_two_chip_split(512, 8192, 8192, peak_flops=1.97e14, link_bandwidth=4.5e10, ax=ax))
    )
    assert "= 174.4 µs" in drawn  # B D F / FLOPs/s = 512 * 8192**2 / 1.97e14 = 1.744e-4 s
    assert "= 186.4 µs" in drawn  # 2 B F / link = 2 * 512 * 8192 / 4.5e10 = 1.864e-4 s
    assert "2BF = 8.39 MB each way" in drawn


# --- more roofs, overhead, utilisation -----------------------------------------------------------------


def test_compute_roofs_are_drawn_at_their_own_ridges(ax):
    h100 = rl.get_accelerator("h100-sxm")
    rl.plot_compute_roofs(h100, {"bf16": h100.peak("bf16"), "fp32": h100.peak("fp32")}, ax=ax)
    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert labels == ["HBM, 3.35 TB/s", "bf16: 989.5 TFLOPs/s, ridge 295.4", "fp32: 67 TFLOPs/s, ridge 20"]
    roofs = {line.get_label().split(":")[0]: line for line in ax.get_lines() if ":" in line.get_label()}
    assert roofs["fp32"].get_xdata()[0] == pytest.approx(6.7e13 / 3.35e12)  # the fp32 roof starts at its ridge, 20


def test_compute_roofs_default_to_every_figure_the_table_has(ax):
    rl.plot_compute_roofs("tpu-v5p", ax=ax)
    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert any(label.startswith("vector unit: 7 TFLOPs/s, ridge 2.532") for label in labels), labels  # 7e12 / 2.765e12
    with pytest.raises(ValueError, match="roofs must name at least one peak"):
        rl.plot_compute_roofs("tpu-v5p", {}, ax=ax)


def test_the_smallest_matmul_above_an_overhead_by_hand():
    # H100 SXM bf16: 2 n^3 / 9.895e14 >= 5e-6 from n = (5e-6 * 9.895e14 / 2)^(1/3) = 1352.3, so 1353;
    # its bytes, 6 n^2 = 1.1e7, take 3.3 µs at 3.35e12 bytes/s: the arithmetic decides
    assert rl.square_matmul_size_for_time(5e-6, 9.895e14, 3.35e12) == 1353
    # with an absurdly fast chip only the bytes count: 6 n^2 / 1e12 >= 1e-3 from n = sqrt(1e9 / 6) = 12909.9
    assert rl.square_matmul_size_for_time(1e-3, 1e30, 1e12) == 12910
    # int8 everywhere moves 3 n^2 bytes: sqrt(1e9 / 3) = 18257.4
    assert rl.square_matmul_size_for_time(1e-3, 1e30, 1e12, precision="int8") == 18258
    with pytest.raises(ValueError, match="seconds must be > 0 s"):
        rl.square_matmul_size_for_time(-1, 1e14, 1e12)


@pytest.mark.parametrize("seconds", [1e-9, 3e-7, 5e-6, 2e-3, 1.0])
def test_the_smallest_matmul_is_the_first_that_takes_long_enough(seconds):
    peak, bw = 1.97e14, 8.19e11
    n = rl.square_matmul_size_for_time(seconds, peak, bw)

    def t(size: int) -> float:
        return max(2 * size**3 / peak, 6 * size**2 / bw)

    assert t(n) >= seconds and (n == 1 or t(n - 1) < seconds)


def test_mfu_and_mbu_by_hand():
    # a [4096, 4096] @ [4096, 4096] bf16 matmul, 2 * 4096^3 = 1.374e11 FLOPs, in 170 µs on a 9.895e14 chip
    assert rl.model_flops_utilization(2 * 4096**3, 170e-6, 9.895e14) == pytest.approx(0.81707, rel=1e-4)
    # 16 GB of weights read in 6 ms at 3.35e12 bytes/s: 2.667e12 / 3.35e12
    assert rl.memory_bandwidth_utilization(16e9, 6e-3, 3.35e12) == pytest.approx(0.79602, rel=1e-4)
    with pytest.raises(ValueError, match="seconds must be > 0 s"):
        rl.model_flops_utilization(1e9, 0, 1e14)
    assert math.isclose(rl.memory_bandwidth_utilization(0, 1.0, 1e12), 0.0)
