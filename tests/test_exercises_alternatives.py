"""Correct answers written differently from the reference still pass every check, hidden ones included.

Each case takes an instructor notebook (visible and hidden tests), swaps in
another answer for one part, runs it, and reads which test cells failed and why.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbconvert.preprocessors import ExecutePreprocessor

from grading_support import ASSIGNMENT, ROOT, grade_id

Answers = dict[str, str]


def _failures(notebook: str, answers: Answers, tmp_path: Path) -> dict[str, str]:
    """Run the solutions notebook with some answer cells replaced; return {test grade_id: error text}."""
    nb = nbformat.read(ROOT / "solutions" / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
    for cell in nb.cells:
        gid = grade_id(cell)
        if gid in answers:
            keep = [ln for ln in cell.source.splitlines() if "plt.subplots" in ln or "batch_sizes =" in ln]
            cell.source = "\n".join(keep + [answers[gid]])
    ExecutePreprocessor(timeout=60, allow_errors=True).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    failed = {}
    for cell in nb.cells:
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            failed[grade_id(cell) or "?"] = f"{errors[0]['ename']}: {errors[0]['evalue']}"
    return failed


Q3_PLOT = """
for size in (4096, 1024):
    plt.plot(batch_sizes, attainable_flops(batch_sizes, size, size), label=f"D = F = {size:,}")
    ax.axvline(critical_batch(size, size), ls="--", label=f"crossover, D = F = {size}")
ax.axhline(1.97e14, color="k", label="peak")
ax.legend()
"""

CORRECT = [
    ("q4_per_example_weights", {"q4_c_answer": "import numpy as np\nalways_comms_bound = np.all(np.array([2.0]) < 486)"}),
    ("q5_h100", {"q5_a_answer": "peak_bf16_flops = 1.979e15 / 2", "q5_c_answer": "critical_batch = 298.5"}),
    ("q5_h100", {"q5_a_answer": "peak_bf16_flops = 1e15", "q5_c_answer": "critical_batch = 295"}),
    ("q3_roofline_plot", {"q3_c_answer": Q3_PLOT}),
]


@pytest.mark.parametrize("notebook, answers", CORRECT, ids=[f"{n}:{','.join(a)}" for n, a in CORRECT])
def test_equivalent_correct_answers_pass(notebook: str, answers: Answers, tmp_path: Path) -> None:
    assert _failures(notebook, answers, tmp_path) == {}


def test_curve_in_another_unit_gets_a_unit_hint(tmp_path: Path) -> None:
    plot = """
for size in (4096, 1024):
    ax.plot(batch_sizes, attainable_flops(batch_sizes, size, size) / 1e12, label=f"D = F = {size}")
"""
    failed = _failures("q3_roofline_plot", {"q3_c_answer": plot}, tmp_path)
    assert list(failed) == ["q3_c_test"]
    assert "scaled by a factor 1e+12" in failed["q3_c_test"]
