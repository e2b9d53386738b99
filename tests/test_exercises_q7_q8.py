"""Questions 7 (a matmul across chips) and 8 (predict, then measure): misconceptions named, other right answers passing.

Each case swaps one answer of the instructor notebook (visible and hidden checks) and reads which check failed and
with which catalogue id. The right answers are also computed here from first principles (tests/answer_key.py) and
compared with the reference answers and with rooflinelib, so no expected value comes from the code under test.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
from answer_key import FIXED, Q7_DCN, Q7_ICI, Q7_LINKS, Q7_PEAK, Q8_BANDWIDTH, Q8_CPUS, Q8_D, Q8_PEAK
from grading_support import ASSIGNMENT, Q7, Q8, ROOT, failing_checks, is_answer_cell, read, solution_body

import rooflinelib as rl

Answers = dict[str, str]


def _reference_functions(name: str) -> dict[str, object]:
    """The reference answers of a notebook, defined in a namespace of their own (set-up cell first)."""
    nb = read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb")
    namespace: dict[str, object] = {"math": math}
    for cell in nb.cells:
        if cell.cell_type == "code" and is_answer_cell(cell) and not cell.metadata["nbgrader"].get("grade"):
            if "measure_machine" in cell.source:
                continue  # the measurement is not an answer a check reads
            exec(solution_body(cell.source), namespace)  # noqa: S102 (the course's own reference answers)
    return namespace


def test_reference_answers_agree_with_the_answer_key_and_rooflinelib() -> None:
    key7, ref7 = FIXED[Q7], _reference_functions(Q7)
    assert ref7["t_math"](512, 8192, 8192, 2, Q7_PEAK) == pytest.approx(key7["t_math(2 chips)"])  # type: ignore[operator]
    assert ref7["t_comms"](512, 8192, Q7_ICI) == pytest.approx(key7["t_comms"])  # type: ignore[operator]
    assert ref7["critical_d"](Q7_PEAK, Q7_ICI) == pytest.approx(key7["critical_d"])  # type: ignore[operator]
    assert ref7["critical_batch"](Q7_PEAK, Q7_ICI, Q7_LINKS) == pytest.approx(key7["critical_batch(ICI)"])  # type: ignore[operator]
    assert ref7["critical_batch"](Q7_PEAK, Q7_DCN, 1) == pytest.approx(key7["critical_batch(DCN)"])  # type: ignore[operator]
    # the chapter's own functions give the same two-chip figures, and the statement's chip is the spec table's
    assert key7["critical_d"] == pytest.approx(rl.sharded_matmul_critical_d(Q7_PEAK, Q7_ICI))
    assert key7["t_math(2 chips)"] == pytest.approx(rl.sharded_matmul_t_math(512, 8192, 8192, Q7_PEAK))
    assert key7["t_comms"] == pytest.approx(rl.sharded_matmul_t_comms(512, 8192, Q7_ICI))
    v5e = rl.get_accelerator("tpu-v5e")
    assert (v5e.peak("bf16"), v5e.links["ici"].bandwidth, v5e.links["ici"].count) == (Q7_PEAK, Q7_ICI, Q7_LINKS)
    assert v5e.links["ici"].scope == "per link" and v5e.links["dcn"].bandwidth == Q7_DCN

    key8, ref8 = FIXED[Q8], _reference_functions(Q8)
    for name, cpu in Q8_CPUS.items():
        assert ref8["predicted_peak"](*cpu) == pytest.approx(key8[f"predicted_peak({name})"])  # type: ignore[operator]
        cores, hz, bits, fma, size = cpu
        assert key8[f"predicted_peak({name})"] == pytest.approx(rl.in_core_peak(cores, hz, bits // (8 * size), fma))
    assert ref8["ridge_point"](Q8_PEAK, Q8_BANDWIDTH) == pytest.approx(key8["ridge_point"])  # type: ignore[operator]
    assert ref8["knee_batch"](Q8_PEAK, Q8_BANDWIDTH, Q8_D) == pytest.approx(key8["knee_batch"])  # type: ignore[operator]
    exact = rl.critical_batch_size(Q8_PEAK, Q8_BANDWIDTH, Q8_D, Q8_D, precision="fp32")
    assert key8["knee_batch"] == pytest.approx(exact)
    assert ref8["knee_batch"](Q8_PEAK, Q8_BANDWIDTH, 32) == math.inf  # type: ignore[operator]


# Right answers written otherwise than the reference: they pass every check, the hidden ones (other shapes,
# chips, links, CPUs and machines) included.
CORRECT = [
    (
        Q7,
        {
            "q7_a_answer": "def t_math(B, D, F, n_chips, peak_flops_per_s):\n    return B * D * F * 2 / n_chips / peak_flops_per_s",
            "q7_b_answer": "def t_comms(B, F, link_bytes_per_s):\n    bf16 = 2\n    return bf16 * B * F / link_bytes_per_s",
            "q7_c_answer": (
                "def critical_d(peak_flops_per_s, link_bytes_per_s):\n"
                "    return t_math(1, 1, 1, 2, 1 / peak_flops_per_s) ** 0 * 2 * peak_flops_per_s / link_bytes_per_s"
            ),
            "q7_d_answer": (
                "def critical_batch(peak_flops_per_s, link_bytes_per_s, n_links):\n"
                "    return (peak_flops_per_s / link_bytes_per_s) / n_links"
            ),
        },
    ),
    (
        Q8,
        {
            "q8_a_answer": (
                "def predicted_peak(cores, clock_hz, simd_bits, fma_per_cycle, bytes_per_number):\n"
                "    lanes = (simd_bits / 8) / bytes_per_number\n"
                "    return 2.0 * fma_per_cycle * lanes * clock_hz * cores"
            ),
            "q8_c_answer": (
                "import math\n\n\ndef knee_batch(peak_flops_per_s, bytes_per_s, D):\n"
                "    ridge = ridge_point(peak_flops_per_s, bytes_per_s)\n"
                "    return 2 * ridge * D / (D - 4 * ridge) if D > 4 * ridge else float('inf')"
            ),
        },
    ),
]


@pytest.mark.parametrize("notebook, answers", CORRECT, ids=[n for n, _ in CORRECT])
def test_other_right_answers_pass_the_hidden_checks(notebook: str, answers: Answers, tmp_path: Path) -> None:
    assert failing_checks(notebook, answers, tmp_path) == {}


MISCONCEPTIONS = [
    # Q7 (a): the whole matmul on every chip; a multiply-accumulate as one FLOP; the chip count ignored
    (Q7, "q7_a_answer", "def t_math(B, D, F, n, peak):\n    return 2 * B * D * F / peak", "q7.a.whole-matmul"),
    (Q7, "q7_a_answer", "def t_math(B, D, F, n, peak):\n    return B * D * F / (n * peak)", "q7.mac-one-flop"),
    (Q7, "q7_a_answer", "def t_math(B, D, F, n, peak):\n    return B * D * F / peak", "q7.ignores-input"),
    # Q7 (b): both partial sums on one direction; values counted instead of bytes (or both directions for one)
    (Q7, "q7_b_answer", "def t_comms(B, F, w):\n    return 4 * B * F / w", "q7.both-ways-added"),
    (Q7, "q7_b_answer", "def t_comms(B, F, w):\n    return 2 * B * F / (2 * w)", "q7.b.half"),
    (Q7, "q7_b_answer", "def t_comms(B, F, w):\n    return B * F / w", "q7.b.half"),
    # Q7 (c): each chip given the whole matmul (or the swap over both directions); both sums one way
    (Q7, "q7_c_answer", "def critical_d(p, w):\n    return p / w", "q7.c.half"),
    (Q7, "q7_c_answer", "def critical_d(p, w):\n    return 4 * p / w", "q7.both-ways-added"),
    (Q7, "q7_c_answer", "def critical_d(p, w):\n    return 8755.56", "q7.ignores-input"),
    # Q7 (d): one link; links multiplying the batch; both directions of each link (or 1 byte a weight); MAC = 1 FLOP
    (Q7, "q7_d_answer", "def critical_batch(p, w, n):\n    return p / w", "q7.d.one-link"),
    (Q7, "q7_d_answer", "def critical_batch(p, w, n):\n    return n * p / w", "q7.d.links-multiplied"),
    (Q7, "q7_d_answer", "def critical_batch(p, w, n):\n    return p / (2 * n * w)", "q7.d.twice-as-fast"),
    (Q7, "q7_d_answer", "def critical_batch(p, w, n):\n    return 2 * p / (n * w)", "q7.mac-one-flop"),
    # Q8 (a): an FMA as one FLOP; lanes in bytes, in bits, or bits over bytes; the clock in GHz; float64 as float32
    (
        Q8,
        "q8_a_answer",
        "def predicted_peak(c, hz, bits, fma, size):\n    return c * hz * bits // (8 * size) * fma",
        "q8.a.half",
    ),
    (
        Q8,
        "q8_a_answer",
        "def predicted_peak(c, hz, bits, fma, size):\n    return c * hz * (bits // 8) * fma * 2",
        "q8.a.lanes-in-bytes",
    ),
    (
        Q8,
        "q8_a_answer",
        "def predicted_peak(c, hz, bits, fma, size):\n    return c * hz * bits * fma * 2",
        "q8.a.lanes-in-bits",
    ),
    (
        Q8,
        "q8_a_answer",
        "def predicted_peak(c, hz, bits, fma, size):\n    return c * hz * (bits // size) * fma * 2",
        "q8.a.bits-per-byte",
    ),
    (
        Q8,
        "q8_a_answer",
        "def predicted_peak(c, hz, bits, fma, size):\n    return c * hz / 1e9 * bits / 32 * fma * 2",
        "q8.a.gigahertz",
    ),
    (
        Q8,
        "q8_a_answer",
        "def predicted_peak(c, hz, bits, fma, size):\n    return c * hz * bits / 32 * fma * 2",
        "q8.a.ignores-format",
    ),
    # Q8 (b): FLOPs per byte upside down
    (Q8, "q8_b_answer", "def ridge_point(p, w):\n    return w / p", "q8.b.inverted"),
    # Q8 (c): the B << D rule; bf16 bytes, exact or as the rule; no write-back; no answer where none exists
    (Q8, "q8_c_answer", "def knee_batch(p, w, D):\n    return 2 * p / w", "q8.c.small-batch-rule"),
    (Q8, "q8_c_answer", "def knee_batch(p, w, D):\n    return p / w", "q8.c.two-bytes"),
    (
        Q8,
        "q8_c_answer",
        "import math\n\n\ndef knee_batch(p, w, D):\n    s = 2 * D * D / p - 4 * D / w\n    return 2 * D * D / w / s if s > 0 else math.inf",
        "q8.c.two-bytes",
    ),
    (
        Q8,
        "q8_c_answer",
        "import math\n\n\ndef knee_batch(p, w, D):\n    s = 2 * D * D / p - 4 * D / w\n    return 4 * D * D / w / s if s > 0 else math.inf",
        "q8.c.no-write-back",
    ),
    (
        Q8,
        "q8_c_answer",
        "def knee_batch(p, w, D):\n    return 4 * D * D / w / (2 * D * D / p - 8 * D / w)",
        "q8.c.never",
    ),
]


@pytest.mark.parametrize(
    "notebook, cell, answer, msg_id",
    MISCONCEPTIONS,
    ids=[f"{c[0][:2]}:{c[3]}:{i}" for i, c in enumerate(MISCONCEPTIONS)],
)
def test_each_misconception_is_named(notebook: str, cell: str, answer: str, msg_id: str, tmp_path: Path) -> None:
    failed = failing_checks(notebook, {cell: answer}, tmp_path)
    test = cell.replace("_answer", "_test")
    assert list(failed) == [test] and failed[test].startswith(f"AssertionError: [{msg_id}]"), failed


def test_the_measurement_and_explanation_are_not_autograded() -> None:
    """No check reads Question 8's measurement, and its explanation is graded by hand, with points."""
    nb = read(ROOT / "solutions" / ASSIGNMENT / f"{Q8}.ipynb")
    checks = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    measured = {
        "m",
        "cpu",
        "measured",
        "bandwidth",
        "predicted",
        "predicted_knee",
        "rl",
    }  # what the measuring cell defines
    for check in checks:
        names = {n.id for n in ast.walk(ast.parse(check.source)) if isinstance(n, ast.Name)}
        assert not names & measured, (check.metadata["nbgrader"]["grade_id"], names & measured)
        assert "read_cpu_figures" not in check.source and "measure_machine" not in check.source
    manual = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "markdown"]
    assert [(c.metadata["nbgrader"]["grade_id"], c.metadata["nbgrader"]["solution"]) for c in manual] == [
        ("q8_e_answer", True)
    ]
    assert manual[0].metadata["nbgrader"]["points"] > 0
