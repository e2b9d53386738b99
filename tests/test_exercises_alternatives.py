"""Correct answers written differently from the reference still pass every check, hidden ones included.

Each case takes an instructor notebook (visible and hidden tests), swaps in
another answer for one part, runs it, and reads which test cells failed and why.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from grading_support import failing_checks

Answers = dict[str, str]


Q3_PLOT = """
for size in (4096, 1024):
    plt.plot(batch_sizes, attainable_flops(batch_sizes, size, size), label=f"D = F = {size:,}")
    ax.axvline(critical_batch(size, size), ls="--", label=f"crossover, D = F = {size}")
ax.axhline(1.97e14, color="k", label="peak")
ax.set(xlabel="Batch size", ylabel="FLOP/s (bf16)")
ax.legend()
"""

Q5_REGEX = """
import re


def peak_bf16_flops(sheet):
    text = sheet["BF16 Tensor Core"]
    tera = float(re.sub(r"[^0-9.]", "", text))
    return tera * 1e12 / (2 if "*" in text else 1)


def hbm_bandwidth(sheet):
    return float(re.match(r"[0-9.]+", sheet["GPU memory bandwidth"]).group()) * 1e12
"""

# Q4 (c) by search: the first D whose intensity reaches the ridge, with the weights at their own width
Q4_SEARCH = """
import math


def smallest_compute_bound_d(peak_ops_per_s, hbm_bytes_per_s, bytes_per_weight):
    if 2 / bytes_per_weight <= peak_ops_per_s / hbm_bytes_per_s:
        return math.inf
    D = 1
    while 2 * D * D / (2 * D + bytes_per_weight * D * D) < peak_ops_per_s / hbm_bytes_per_s:
        D += 1
    return D
"""

# Q4 (c) solved for D in NumPy, returning a NumPy integer or a float infinity
Q4_NUMPY = """
import numpy as np


def smallest_compute_bound_d(peak_ops_per_s, hbm_bytes_per_s, bytes_per_weight):
    ridge = np.float64(peak_ops_per_s) / hbm_bytes_per_s
    room = 2 - bytes_per_weight * ridge
    return np.int64(max(1, np.ceil(2 * ridge / room))) if room > 0 else float("inf")
"""

# Q5 (d) without the helpers: each variant's column read directly
Q5_COLUMNS = """
def column(row, variant):
    return row if isinstance(row, str) else row[variant]


def variant_ridge(sheets, variant):
    flops = column(sheets["BF16 Tensor Core"], variant)
    dense = float(flops.rstrip("*").split()[0].replace(",", "")) * 1e12 / (2 if flops.endswith("*") else 1)
    return dense / (float(column(sheets["GPU memory bandwidth"], variant).replace("TB/s", "")) * 1e12)
"""

Q4_C = "import math\n\n\ndef smallest_compute_bound_d(peak_ops_per_s, hbm_bytes_per_s, bytes_per_weight):\n"

CORRECT = [
    ("q1_int8_matmul", {"q1_e_answer": "critical_batch = lambda peak, bw: 0.5 * peak / bw"}),
    (
        "q3_roofline_plot",
        {
            "q3_b_answer": (
                "def critical_batch(D, F):\n"
                "    return D * F / (2 * D * F * HBM_BYTES_PER_S / BF16_FLOPS_PER_S - 2 * (D + F))"
            )
        },
    ),
    ("q3_roofline_plot", {"q3_c_answer": Q3_PLOT}),
    ("q4_per_example_weights", {"q4_c_answer": Q4_SEARCH}),
    ("q4_per_example_weights", {"q4_c_answer": Q4_NUMPY}),
    ("q5_h100", {"q5_a_answer": Q5_REGEX, "q5_b_answer": "pass"}),
    (
        "q5_h100",
        {
            "q5_a_answer": "pass",
            "q5_b_answer": "pass",
            "q5_c_answer": Q5_COLUMNS + "\n\ndef critical_batch(sheet):\n    return variant_ridge(sheet, None)",
            "q5_d_answer": "pass",
        },
    ),
]


@pytest.mark.parametrize("notebook, answers", CORRECT, ids=[f"{n}:{','.join(a)}" for n, a in CORRECT])
def test_equivalent_correct_answers_pass(notebook: str, answers: Answers, tmp_path: Path) -> None:
    assert failing_checks(notebook, answers, tmp_path) == {}


def test_curve_in_another_unit_gets_a_unit_hint(tmp_path: Path) -> None:
    plot = """
for size in (4096, 1024):
    ax.plot(batch_sizes, attainable_flops(batch_sizes, size, size) / 1e12, label=f"D = F = {size}")
"""
    failed = failing_checks("q3_roofline_plot", {"q3_c_answer": plot}, tmp_path)
    assert list(failed) == ["q3_c_test"]
    assert failed["q3_c_test"].startswith("AssertionError: [q3.c.scaled]")
    assert "divided by 1e+12" in failed["q3_c_test"]


def test_curve_in_a_named_unit_passes(tmp_path: Path) -> None:
    plot = """
for size in (4096, 1024):
    ax.plot(batch_sizes, attainable_flops(batch_sizes, size, size) / 1e12, label=f"D = F = {size}")
ax.set(xlabel="batch size", ylabel="attainable TFLOP/s")
ax.legend()
"""
    assert failing_checks("q3_roofline_plot", {"q3_c_answer": plot}, tmp_path) == {}
    wrong_prefix = plot.replace("TFLOP/s", "GFLOP/s")
    failed = failing_checks("q3_roofline_plot", {"q3_c_answer": wrong_prefix}, tmp_path)
    assert failed["q3_c_test"].startswith("AssertionError: [q3.c.scaled]")


@pytest.mark.parametrize(
    "xlabel, ylabel", [("배치 크기 B", "초당 FLOPs"), ("批大小 B", "每秒 FLOPs"), ("batch size", "FLOPs per second")]
)
def test_axis_words_of_every_edition_pass(xlabel: str, ylabel: str, tmp_path: Path) -> None:
    """A Korean or Chinese student labels the axes in their own language: the check accepts it."""
    plot = f"""
for size in (4096, 1024):
    ax.plot(batch_sizes, attainable_flops(batch_sizes, size, size), label=f"D = F = {{size}}")
ax.set(xlabel="{xlabel}", ylabel="{ylabel}")
ax.legend()
"""
    assert failing_checks("q3_roofline_plot", {"q3_c_answer": plot}, tmp_path) == {}


@pytest.mark.parametrize(
    "plot, msg_id",
    [
        (
            (
                "for s in (4096, 1024):\n    ax.plot(batch_sizes, attainable_flops(batch_sizes, s, s), label=f'D = F = {s}')\n"
                "ax.set_ylabel('FLOPs/s')\nax.legend()"
            ),
            "q3.c.xlabel",
        ),
        (
            (
                "for s in (4096, 1024):\n    ax.plot(batch_sizes, attainable_flops(batch_sizes, s, s), label=f'D = F = {s}')\n"
                "ax.set_xlabel('batch size')\nax.set_ylabel('throughput')\nax.legend()"
            ),
            "q3.c.ylabel",
        ),
        (
            (
                "for s in (4096, 1024):\n    ax.plot(batch_sizes, attainable_flops(batch_sizes, s, s), label=f'D = F = {s}')\n"
                "ax.set_xlabel('batch size')\nax.set_ylabel('FLOPs/s')"
            ),
            "q3.c.no-legend",
        ),
        (
            (
                "ax.plot(batch_sizes, attainable_flops(batch_sizes, 4096, 4096), label='D = F = 4096')\nax.legend()\n"
                "ax.plot(batch_sizes, attainable_flops(batch_sizes, 1024, 1024), label='D = F = 1024')\n"
                "ax.set_xlabel('batch size')\nax.set_ylabel('FLOPs/s')"
            ),
            "q3.c.legend-entry",
        ),
    ],
)
def test_plot_without_labels_or_legend_is_named(plot: str, msg_id: str, tmp_path: Path) -> None:
    failed = failing_checks("q3_roofline_plot", {"q3_c_answer": plot}, tmp_path)
    assert list(failed) == ["q3_c_test"] and failed["q3_c_test"].startswith(f"AssertionError: [{msg_id}]")


@pytest.mark.parametrize(
    "notebook, answers, test, msg_id",
    [
        # a later part right on a wrong earlier part points back at that part, not at its own formula
        (
            "q1_int8_matmul",
            {
                "q1_f_answer": (
                    "def t_math(B, D, F):\n    return total_ops(B, D, F) / 1.97e14\n\n\n"
                    "def t_comms(B, D, F):\n    return (bytes_loaded(B, D, F) + bytes_written(B, D, F)) / HBM_BYTES_PER_S"
                )
            },
            "q1_g_test",
            "q1.g.follows-part-f",
        ),
        (
            "q1_int8_matmul",
            {"q1_c_answer": "def total_ops(B, D, F):\n    return 3 * B * D * F"},
            "q1_d_test",
            "q1.d.follows-earlier-parts",
        ),
        (
            "q5_h100",
            {"q5_b_answer": "def hbm_bandwidth(sheet):\n    return float(sheet['GPU memory bandwidth'][:-4]) * 1e9"},
            "q5_c_test",
            "q5.c.follows-parts-a-b",
        ),
        # the sheet-reading helpers earn no points, but the check of (c) names a slip in them
        ("q5_h100", {"q5_b_answer": "def hbm_bandwidth(sheet):\n    return 3.35"}, "q5_c_test", "q5.b.tbps"),
        # the exact count (D - 1 adds) is named as a different convention, not as a plain error
        (
            "q1_int8_matmul",
            {"q1_c_answer": "def total_ops(B, D, F):\n    return B * F * (2 * D - 1)"},
            "q1_c_test",
            "q1.c.exact-adds",
        ),
        (
            "q5_h100",
            {
                "q5_a_answer": (
                    "def peak_bf16_flops(sheet):\n"
                    "    return float(sheet['BF16 Tensor Core'].split()[0].replace(',', '')) * 1e12 / 2"
                )
            },
            "q5_c_test",
            "q5.c.halved-unstarred",
        ),
        (
            "q5_h100",
            {
                "q5_a_answer": (
                    "def peak_bf16_flops(sheet):\n"
                    "    return float(sheet['BF16 Tensor Core'].split()[0].replace(',', '.')) * 1e12 / 2"
                )
            },
            "q5_c_test",
            "q5.a.thousands-comma",
        ),
        (
            "q2_int8_weights",
            {"q2_e_answer": "def critical_batch(peak, bw):\n    return peak / bw"},
            "q2_e_test",
            "q2.e.all-bf16",
        ),
        (
            "q1_int8_matmul",
            {"q1_e_answer": "def critical_batch(peak, bw):\n    return 1.97e14 / 8.2e11"},
            "q1_e_test",
            "q1.e.bf16-answer",
        ),
        (
            "q2_int8_weights",
            {"q2_e_answer": "def critical_batch(peak, bw):\n    return 3.94e14 / 8.1e11 / 2"},
            "q2_e_test",
            "q2.e.q1-answer",
        ),
        (
            "q4_per_example_weights",
            {"q4_b_answer": "def intensity_limit(bytes_per_weight):\n    return 1 / bytes_per_weight"},
            "q4_b_test",
            "q4.b.mac-one-op",
        ),
        # Q4 (c): a batch size instead of a size D (the shared-weight rule, B > ridge / 2)
        (
            "q4_per_example_weights",
            {"q4_c_answer": f"{Q4_C}    return math.ceil(peak_ops_per_s / hbm_bytes_per_s / 2)"},
            "q4_c_test",
            "q4.c.batch-not-size",
        ),
        # Q4 (c): the large-D limit compared with the ridge, as if every D reached it
        (
            "q4_per_example_weights",
            {
                "q4_c_answer": f"{Q4_C}    return 1 if peak_ops_per_s / hbm_bytes_per_s < 2 / bytes_per_weight else math.inf"
            },
            "q4_c_test",
            "q4.c.limit-only",
        ),
        # Q4 (c): int8 weights whatever bytes_per_weight says
        (
            "q4_per_example_weights",
            {"q4_c_answer": Q4_SEARCH.replace("bytes_per_weight *", "1 *").replace("2 / bytes_per_weight", "2")},
            "q4_c_test",
            "q4.c.weight-bytes",
        ),
        # Q4 (c): the crossing itself, not the whole D after it
        (
            "q4_per_example_weights",
            {
                "q4_c_answer": f"{Q4_C}    r = peak_ops_per_s / hbm_bytes_per_s\n    return math.inf if bytes_per_weight * r >= 2 else 2 * r / (2 - bytes_per_weight * r)"
            },
            "q4_c_test",
            "q4.c.not-whole",
        ),
        # Q5 (d): the PCIe's FLOPs over the SXM's bandwidth, the slip of reading two columns
        (
            "q5_h100",
            {
                "q5_d_answer": Q5_COLUMNS.replace(
                    'sheets["GPU memory bandwidth"], variant', 'sheets["GPU memory bandwidth"], "H100 SXM"'
                )
            },
            "q5_d_test",
            "q5.d.mixed-variants",
        ),
        (
            "q5_h100",
            {"q5_d_answer": Q5_COLUMNS.replace("row[variant]", "row['H100 SXM']")},
            "q5_d_test",
            "q5.d.sxm-figures",
        ),
        (
            "q5_h100",
            {"q5_d_answer": Q5_COLUMNS.replace("row[variant]", "row['H100 PCIe']")},
            "q5_d_test",
            "q5.d.other-variant",
        ),
        (
            "q5_h100",
            {"q5_d_answer": Q5_COLUMNS.replace('(2 if flops.endswith("*") else 1)', "1")},
            "q5_d_test",
            "q5.d.sparse",
        ),
    ],
)
def test_misconception_is_named(notebook: str, answers: Answers, test: str, msg_id: str, tmp_path: Path) -> None:
    failed = failing_checks(notebook, answers, tmp_path)
    assert failed.get(test, "").startswith(f"AssertionError: [{msg_id}]"), failed
