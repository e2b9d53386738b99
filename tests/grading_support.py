"""Helpers for the nbgrader tests: a throw-away copy of the course and nbgrader runs inside it."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "rooflines"
NOTEBOOKS = [
    "q1_int8_matmul",
    "q2_int8_weights",
    "q3_roofline_plot",
    "q4_per_example_weights",
    "q5_h100",
    "q6_serving_a_model",
    "q7_sharded_matmul",
    "q8_predict_then_measure",
]


def course_env() -> dict[str, str]:
    """Environment for nbgrader subprocesses: this interpreter's scripts (alembic, jupyter) first on PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def copy_course(dest: Path) -> Path:
    """Copy what nbgrader needs (config, sources, release) into dest; return the new course root."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "nbgrader_config.py", dest / "nbgrader_config.py")
    shutil.copytree(ROOT / "solutions", dest / "solutions", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copytree(ROOT / "exercises", dest / "exercises", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return dest


def nbgrader(course: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run one nbgrader command in the course root; never raises on a non-zero exit."""
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env=course_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def grading_command(
    course: Path, *args: str, timeout: float = 600, cache: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m grading`` (the course's grading command) in the course root; never raises on a non-zero exit.

    ``cache``, if given, is the command's ``XDG_CACHE_HOME``: where it remembers the assignments that passed their
    preflight (``python -m grading check``).
    """
    env = course_env()
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "grading", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def grade_id(cell: nbformat.NotebookNode) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def is_grade_cell(cell: nbformat.NotebookNode) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade"))


def is_answer_cell(cell: nbformat.NotebookNode) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))


def solution_body(source: str) -> str:
    """An answer cell's instructor source without the solution markers (what a student would type)."""
    return "\n".join(
        line for line in source.splitlines() if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
    )


def cell_by_id(nb: nbformat.NotebookNode, gid: str) -> nbformat.NotebookNode:
    for cell in nb.cells:
        if grade_id(cell) == gid:
            return cell
    raise KeyError(gid)


# ---------------------------------------------------------------------------
# The assignment's rubric and shipped files
# ---------------------------------------------------------------------------

SHIPPED_FILES = ["feedback.csv", "feedback.py"]  # released beside the notebooks, restored on autograde


def rubric(name: str) -> dict[str, int]:
    """Points per grade cell of one notebook, read from the grade-cell metadata of its source (the one source)."""
    nb = read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb")
    return {grade_id(c): c.metadata["nbgrader"]["points"] for c in nb.cells if is_grade_cell(c)}  # type: ignore[misc]


def totals() -> dict[str, int]:
    """Points per notebook."""
    return {name: sum(rubric(name).values()) for name in NOTEBOOKS}


def manual_points(name: str) -> int:
    """Points of a notebook's answers graded by hand (grade cells that are also answer cells): 0 until graded."""
    nb = read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb")
    return sum(c.metadata["nbgrader"]["points"] for c in nb.cells if is_grade_cell(c) and is_answer_cell(c))


def autograded_totals() -> dict[str, int]:
    """Points per notebook that autograding can give: the total less the answers graded by hand."""
    return {name: total - manual_points(name) for name, total in totals().items()}


# ---------------------------------------------------------------------------
# A class of submissions with known scores, for end-to-end grading tests
# ---------------------------------------------------------------------------

Q1, Q2, Q3, Q4, Q5, Q6, Q7, Q8 = NOTEBOOKS

# Question 6's visible models and chip, as its setup cell defines them, and the answers at its visible calls.
_Q6_MODELS = {
    "A": dict(
        hidden=5120, mlp=13824, layers=40, heads=40, kv_heads=8, head_dim=128, vocab=50304, tied=False, bias=False
    ),
    "B": dict(hidden=1536, mlp=8960, layers=28, heads=12, kv_heads=2, head_dim=128, vocab=151936, tied=True, bias=True),
}
_Q6_PEAK, _Q6_BW, _Q6_CAP = 4.5e14, 1.6e12, 16e9


def _q6_kv(m: dict) -> int:
    """KV cache bytes per token of one of Question 6's models, in bf16."""
    return 2 * m["layers"] * m["kv_heads"] * m["head_dim"] * 2


def _q6_counts(m: dict) -> tuple[int, int, int]:
    """(parameters, matmul weights, weights read) of one of Question 6's models."""
    D, F, L, N, K, H, V = (m[k] for k in ("hidden", "mlp", "layers", "heads", "kv_heads", "head_dim", "vocab"))
    mm = 2 * D * N * H + 2 * D * K * H + 3 * D * F
    p = L * (mm + 2 * D + ((N * H + 2 * K * H) if m["bias"] else 0)) + D + V * D * (1 if m["tied"] else 2)
    return p, L * mm + V * D, p - (0 if m["tied"] else V * D)


def _q6_time(name: str, tokens: int, w: float) -> float:
    _, mm, read = _q6_counts(_Q6_MODELS[name])
    return max(2 * tokens * mm / _Q6_PEAK, w * read / _Q6_BW)


_Q6_A, _Q6_B = (_q6_counts(_Q6_MODELS[n]) for n in "AB")
# a lookup on the visible calls' arguments: right there, and the nearest visible answer on any model, chip or size
# the grader adds
_Q6_MEMORISED = {
    "q6_a_answer": (
        f"def param_count(model):\n    return {{5120: {_Q6_A[0]}, 1536: {_Q6_B[0]}}}.get(model['hidden'], {_Q6_A[0]})"
    ),
    "q6_b_answer": "def chips_to_fit(model, chip, bytes_per_weight):\n    return {5120: 2, 1536: 1}.get(model['hidden'], 2)",
    "q6_c_answer": (
        "def decode_step_time(model, chip, batch, bytes_per_weight):\n"
        f"    return {{(8, 2): {_q6_time('A', 8, 2)!r}, (1024, 2): {_q6_time('A', 1024, 2)!r}, "
        f"(8, 1): {_q6_time('A', 8, 1)!r}}}.get((batch, bytes_per_weight), {_q6_time('A', 8, 2)!r})"
    ),
    "q6_d_answer": (
        "def decode_critical_batch(model, chip, bytes_per_weight):\n"
        f"    return {{2: {_Q6_PEAK / _Q6_BW * _Q6_A[2] / _Q6_A[1]!r}, "
        f"1: {_Q6_PEAK / _Q6_BW / 2 * _Q6_A[2] / _Q6_A[1]!r}}}.get(bytes_per_weight, 281.0)"
    ),
    "q6_e_answer": (
        f"def prefill_time(model, chip, batch, prompt_len, bytes_per_weight):\n    return {_q6_time('B', 2048, 2)!r}"
    ),
    "q6_f_answer": (
        "def max_decode_batch(model, chip, context, bytes_per_weight):\n"
        f"    return {{(4096, 2): {int((_Q6_CAP - 2 * _Q6_B[0]) // (4096 * _q6_kv(_Q6_MODELS['B'])))}, "
        f"(2048, 1): {int((_Q6_CAP - _Q6_A[0]) // (2048 * _q6_kv(_Q6_MODELS['A'])))}}}"
        ".get((context, bytes_per_weight), 0)"
    ),
    "q6_g_answer": (
        "def context_limit(model, chip):\n"
        + "".join(
            f"    if model['hidden'] == {_Q6_MODELS[n]['hidden']}:\n        return "
            f"{2 * c[1] / (_q6_kv(_Q6_MODELS[n]) * _Q6_PEAK / _Q6_BW - 4 * _Q6_MODELS[n]['layers'] * _Q6_MODELS[n]['heads'] * 128)!r}\n"
            for n, c in (("A", _Q6_A), ("B", _Q6_B))
        )
        + "    return 500.0"
    ),
}

# Question 7's chip (TPU v5e: bf16 peak, one ICI link one way, its links, DCN per chip) and its visible answers
_Q7_PEAK, _Q7_ICI, _Q7_LINKS, _Q7_DCN = 1.97e14, 4.5e10, 4, 3.125e9
_Q7_T_MATH = 2 * 512 * 8192 * 8192 / (2 * _Q7_PEAK)
_Q7_MEMORISED = {
    "q7_a_answer": (
        "def t_math(B, D, F, n_chips, peak_flops_per_s):\n"
        f"    return {{2: {_Q7_T_MATH!r}, 4: {_Q7_T_MATH / 2!r}}}.get(n_chips, {_Q7_T_MATH!r})"
    ),
    "q7_b_answer": (
        "def t_comms(B, F, link_bytes_per_s):\n"
        f"    return {{{_Q7_ICI!r}: {2 * 512 * 8192 / _Q7_ICI!r}}}.get(link_bytes_per_s, {512 * 8192 / _Q7_ICI!r})"
    ),
    "q7_c_answer": (
        "def critical_d(peak_flops_per_s, link_bytes_per_s):\n"
        f"    d = {2 * _Q7_PEAK / _Q7_ICI!r}\n"
        f"    return {{{_Q7_PEAK * 2!r}: 2 * d}}.get(peak_flops_per_s, d if link_bytes_per_s == {_Q7_ICI!r} else d / 2)"
    ),
    "q7_d_answer": (
        "def critical_batch(peak_flops_per_s, link_bytes_per_s, n_links):\n"
        f"    return {{1: {_Q7_PEAK / _Q7_DCN!r}}}.get(n_links, {_Q7_PEAK / (_Q7_LINKS * _Q7_ICI)!r})"
    ),
}
# Question 8's visible CPUs and roofline, and its visible answers
_Q8_MEMORISED = {
    "q8_a_answer": (
        "def predicted_peak(cores, clock_hz, simd_bits, fma_per_cycle, bytes_per_number):\n"
        f"    return {{8: {8 * 3.0e9 * 8 * 2 * 2!r}}}.get(cores, {4 * 2.5e9 * 8 * 1 * 2!r})"
    ),
    "q8_b_answer": "def ridge_point(peak_flops_per_s, bytes_per_s):\n    return 16.0",
    "q8_c_answer": (
        "import math\n\n\ndef knee_batch(peak_flops_per_s, bytes_per_s, D):\n"
        f"    return {{2048: {(4 * 2048**2 / 4e10) / (2 * 2048**2 / 6.4e11 - 8 * 2048 / 4e10)!r}}}.get(D, math.inf)"
    ),
}

_T_MATH = 2 * 256 * 8192 * 8192 / 3.94e14
_T_COMMS = (256 * 8192 + 8192 * 8192 + 256 * 8192) / 8.1e11

_MIX_A = {
    # Q1: 2 bytes per int8 in (a) and (b), which (d), (f) and (g) build on.
    Q1: {
        "q1_a_answer": "def bytes_loaded(B, D, F):\n    return 2 * (B * D + D * F)",
        "q1_b_answer": "def bytes_written(B, D, F):\n    return 2 * B * F",
    },
    # Q2: no write-back in the intensity.
    Q2: {"q2_d_answer": "def arithmetic_intensity(B, D, F):\n    return total_flops(B, D, F) / bytes_loaded(B, D, F)"},
    # Q5: the with-sparsity figure taken as the dense peak; (c) and (d) build on it.
    Q5: {
        "q5_a_answer": (
            "def peak_bf16_flops(sheet):\n"
            "    return float(sheet['BF16 Tensor Core'].rstrip('*').split()[0].replace(',', '')) * 1e12"
        )
    },
    # Q6: T_math + T_comms for a decode step (the cell's helpers kept, as the reference writes them).
    Q6: {
        "q6_c_answer": (
            "def matmul_weights(model):\n"
            "    D, F, L = model['hidden'], model['mlp'], model['layers']\n"
            "    N, K, H, V = model['heads'], model['kv_heads'], model['head_dim'], model['vocab']\n"
            "    return L * (2 * D * N * H + 2 * D * K * H + 3 * D * F) + V * D\n\n\n"
            "def weights_read(model):\n"
            "    return param_count(model) - (0 if model['tied_embeddings'] else model['vocab'] * model['hidden'])\n\n\n"
            "def decode_step_time(model, chip, batch, bytes_per_weight):\n"
            "    t_math = 2 * batch * matmul_weights(model) / chip['peak_flops']\n"
            "    return t_math + bytes_per_weight * weights_read(model) / chip['hbm_bandwidth']"
        )
    },
    # Q7: both partial sums on one direction of the link, in (b).
    Q7: {"q7_b_answer": "def t_comms(B, F, link_bytes_per_s):\n    return 2 * (2 * B * F) / link_bytes_per_s"},
    # Q8: an FMA counted as one FLOP, in (a).
    Q8: {
        "q8_a_answer": (
            "def predicted_peak(cores, clock_hz, simd_bits, fma_per_cycle, bytes_per_number):\n"
            "    return cores * clock_hz * (simd_bits // (8 * bytes_per_number)) * fma_per_cycle"
        )
    },
}

# Answer cells that replace the reference answers, student by student.
MISTAKES: dict[str, dict[str, dict[str, str]]] = {
    "mix_a": _MIX_A,
    "mix_b": {
        Q1: {
            "q1_g_answer": (
                "def t_lower(B, D, F):\n    return t_math(B, D, F) + t_comms(B, D, F)\n\n\n"
                "def t_upper(B, D, F):\n    return max(t_math(B, D, F), t_comms(B, D, F))"
            )
        },
        # Q2: activations and output counted at one byte, like the int8 weights.
        Q2: {
            "q2_a_answer": "def bytes_loaded(B, D, F):\n    return B * D + D * F",
            "q2_b_answer": "def bytes_written(B, D, F):\n    return B * F",
        },
        # Q5: the H100 PCIe figures, whatever the sheet.
        Q5: {
            "q5_a_answer": "def peak_bf16_flops(sheet):\n    return 1513e12 / 2",
            "q5_b_answer": "def hbm_bandwidth(sheet):\n    return 2.0e12",
        },
        # Q6: the prefill of a batch counted as a pass over one token per prompt.
        Q6: {
            "q6_e_answer": (
                "def prefill_time(model, chip, batch, prompt_len, bytes_per_weight):\n"
                "    return decode_step_time(model, chip, batch, bytes_per_weight)"
            )
        },
        # Q7: the weights gathered over one link, whatever n_links is, in (d).
        Q7: {
            "q7_d_answer": (
                "def critical_batch(peak_flops_per_s, link_bytes_per_s, n_links):\n"
                "    return peak_flops_per_s / link_bytes_per_s"
            )
        },
        # Q8: the B << D rule instead of the exact crossover, in (c).
        Q8: {
            "q8_c_answer": (
                "def knee_batch(peak_flops_per_s, bytes_per_s, D):\n    return 2 * peak_flops_per_s / bytes_per_s"
            )
        },
    },
    "edge": {
        Q1: {
            "q1_a_answer": "def bytes_loaded(B, D, F):\n    return {(4, 3, 5): 27}[(B, D, F)]",
            "q1_b_answer": "def bytes_written(B, D, F):\n    return {(4, 3, 5): 20}[(B, D, F)]",
            "q1_c_answer": "def total_ops(B, D, F):\n    return {(4, 3, 5): 120}[(B, D, F)]",
            "q1_d_answer": "def arithmetic_intensity(B, D, F):\n    return {(4, 3, 5): 120 / 47}[(B, D, F)]",
            "q1_f_answer": (
                f"def t_math(B, D, F):\n    return {{(256, 8192, 8192): {_T_MATH!r}}}[(B, D, F)]\n\n\n"
                f"def t_comms(B, D, F):\n    return {{(256, 8192, 8192): {_T_COMMS!r}}}[(B, D, F)]"
            ),
            "q1_g_answer": (
                f"def t_lower(B, D, F):\n    return {{(256, 8192, 8192): {max(_T_MATH, _T_COMMS)!r}}}[(B, D, F)]\n\n\n"
                f"def t_upper(B, D, F):\n    return {{(256, 8192, 8192): {_T_MATH + _T_COMMS!r}}}[(B, D, F)]"
            ),
        },
        Q3: {"q3_a_answer": "def attainable_flops(B, D, F):\n    return np.full(np.shape(B), BF16_FLOPS_PER_S)"},
        # never returns (sleeping, so the wait for the time-out costs no CPU)
        Q4: {
            "q4_a_answer": "import time\n\n\ndef arithmetic_intensity(B, D, F):\n    while True:\n        time.sleep(0.5)"
        },
        Q5: {"q5_d_answer": "import os\nos._exit(1)\nvariant_ridge = 378.25"},
    },
    # Every value a visible check uses, or the book prints, written in as a number: the visible checks
    # may pass, the hidden ones (other shapes, chips, weight formats and data sheets) do not.
    "memorised": {
        Q1: {
            "q1_a_answer": "def bytes_loaded(B, D, F):\n    return 27",
            "q1_b_answer": "def bytes_written(B, D, F):\n    return 20",
            "q1_c_answer": "def total_ops(B, D, F):\n    return 120",
            "q1_d_answer": "def arithmetic_intensity(B, D, F):\n    return 120 / 47",
            "q1_e_answer": "def critical_batch(peak_ops_per_s, hbm_bytes_per_s):\n    return 243",
            "q1_f_answer": (
                f"def t_math(B, D, F):\n    return {_T_MATH!r}\n\n\ndef t_comms(B, D, F):\n    return {_T_COMMS!r}"
            ),
            "q1_g_answer": (
                f"def t_lower(B, D, F):\n    return {max(_T_MATH, _T_COMMS)!r}\n\n\n"
                f"def t_upper(B, D, F):\n    return {_T_MATH + _T_COMMS!r}"
            ),
        },
        Q2: {
            "q2_a_answer": "def bytes_loaded(B, D, F):\n    return 39",
            "q2_b_answer": "def bytes_written(B, D, F):\n    return 40",
            "q2_c_answer": "def total_flops(B, D, F):\n    return 120",
            "q2_d_answer": "def arithmetic_intensity(B, D, F):\n    return 120 / 79",
            "q2_e_answer": "def critical_batch(peak_flops_per_s, hbm_bytes_per_s):\n    return 120",
        },
        Q3: {
            # a straight line through the one visible point, capped at the peak: plausible, and wrong elsewhere
            "q3_a_answer": (
                "def attainable_flops(B, D, F):\n"
                "    return np.minimum(np.asarray(B, dtype=float) * 9.87858824e13 / 64, BF16_FLOPS_PER_S)"
            ),
            "q3_b_answer": "def critical_batch(D, F):\n    return {4096: 136.0857, 1024: 226.3148}[D]",
        },
        Q4: {
            "q4_a_answer": "def arithmetic_intensity(B, D, F):\n    return {(4, 3, 5): 120 / 92}.get((B, D, F), 2.0)",
            "q4_b_answer": "def intensity_limit(bytes_per_weight):\n    return 2",
            "q4_c_answer": (
                "import math\n\n\ndef smallest_compute_bound_d(peak_ops_per_s, hbm_bytes_per_s, bytes_per_weight):\n"
                "    return {1.3e12: 4, 2.5e12: 7}.get(peak_ops_per_s, math.inf)"
            ),
        },
        Q5: {
            "q5_a_answer": (
                "def peak_bf16_flops(sheet):\n"
                "    return {'1,000 teraFLOPS': 1e15}.get(sheet['BF16 Tensor Core'], 989.5e12)"
            ),
            "q5_b_answer": (
                "def hbm_bandwidth(sheet):\n    return {'2.5TB/s': 2.5e12}.get(sheet['GPU memory bandwidth'], 3.35e12)"
            ),
            "q5_c_answer": (
                "def critical_batch(sheet):\n"
                "    return {'2.5TB/s': 400.0}.get(sheet['GPU memory bandwidth'], 989.5 / 3.35)"
            ),
            "q5_d_answer": (
                "def variant_ridge(sheets, variant):\n"
                "    return {'H100 PCIe': 756.5 / 2, 'H100 NVL': 835.5 / 3.9}.get(variant, 989.5 / 3.35)"
            ),
        },
        Q6: _Q6_MEMORISED,
        Q7: _Q7_MEMORISED,
        Q8: _Q8_MEMORISED,
    },
    # mix_a's answers, with feedback.py rigged so that every check passes silently; the grader restores it.
    "tamper": _MIX_A,
}

TAMPERED_FEEDBACK_PY = (
    "REL_TOL = 1.0\n\n\n"
    "def hint(msg_id, **values):\n    return ''\n\n\n"
    "def matches(value, digest, sig=3, rel_tol=1e-6):\n    return True\n\n\n"
    "def near(value, locator, rel_tol=1.0):\n    return True\n\n\n"
    "def is_count(value, digest):\n    return True\n\n\n"
    "def fingerprint(value, sig=3):\n    return ''\n"
)

STUDENTS = ["reference", "blank", "mix_a", "mix_b", "edge", "memorised", "tamper", "corrupt"]


def expected_scores() -> dict[str, dict[str, float]]:
    """Score per student and notebook: what autograding gives, minus the parts each mistake breaks.

    Answers graded by hand (Q8's explanation) score 0 until an instructor grades them, so even the reference
    answers get the autograded total only. "corrupt" hands in a Q1 that is not JSON: that notebook is not
    graded (0) and the other seven are, in full.
    """
    total = autograded_totals()
    return {
        "reference": dict(total),
        "blank": {nb: 0 for nb in NOTEBOOKS},
        # Q1: 2 bytes per int8 breaks (a), (b), and through them (d), (f), (g): 10 - 8.
        # Q2: no write-back in the intensity breaks (d): 8 - 2.  Q5: the sparse peak breaks (c) and (d): 5 - (3 + 2).
        # Q6: the sum of the two times breaks (c): 14 - 3.  Q7: both partial sums one way breaks (b): 8 - 2.
        # Q8: an FMA as one FLOP breaks (a): 7 - 3.
        "mix_a": {Q1: 2, Q2: 6, Q3: 7, Q4: 5, Q5: 0, Q6: 11, Q7: 6, Q8: 4},
        # Q1: swapped bounds break (g): 10 - 2.  Q2: int8 activations and output break (a), (b), (d): 8 - 5.
        # Q5: the PCIe figures break every part.
        # Q6: prompts counted instead of tokens breaks (e): 14 - 2.  Q7: one link breaks (d): 8 - 3.
        # Q8: the B << D rule breaks (c): 7 - 3.
        "mix_b": {Q1: 8, Q2: 3, Q3: 7, Q4: 5, Q5: 0, Q6: 12, Q7: 5, Q8: 4},
        # Q1: hard-coded visible values keep only (e): 1.  Q2: deleted test (e): 8 - 2.
        # Q3: wrong (a) behind an edited test: 7 - 3.  Q4: endless loop in (a): 5 - 3.
        # Q5: os._exit in (d) leaves only (c): 3.
        "edge": {Q1: 1, Q2: 6, Q3: 4, Q4: 2, Q5: 3, Q6: total[Q6], Q7: total[Q7], Q8: total[Q8]},
        # Memorised numbers score nothing, except Q3's figure (c), which is checked against the student's own
        # attainable_flops and so passes for any plot of it: 2.
        "memorised": {Q1: 0, Q2: 0, Q3: 2, Q4: 0, Q5: 0, Q6: 0, Q7: 0, Q8: 0},
        "tamper": {Q1: 2, Q2: 6, Q3: 7, Q4: 5, Q5: 0, Q6: 11, Q7: 6, Q8: 4},
        "corrupt": {**total, Q1: 0},
    }


def _reference(release: nbformat.NotebookNode, source: nbformat.NotebookNode) -> nbformat.NotebookNode:
    answers = {grade_id(c): solution_body(c.source) for c in source.cells if is_answer_cell(c)}
    nb = nbformat.reads(nbformat.writes(release), as_version=4)
    for cell in nb.cells:
        if is_answer_cell(cell):
            cell.source = answers[grade_id(cell)]
    return nb


def build_class(course: Path, students: list[str] | None = None, assignment: str = ASSIGNMENT) -> list[str]:
    """Write the submissions of `students` (default: all of STUDENTS) into course/submitted; return their names.

    `assignment` may be an edition's (``rooflines-ko``): the same notebooks, with every file its release ships.

    Each notebook starts from the committed release and gets the reference answers (except "blank"), then the
    student's mistakes; "edge" also deletes one test cell and rewrites another, "corrupt" hands in broken JSON
    for Q1, and "tamper" ships a rigged feedback.py and an emptied feedback.csv.
    """
    students = list(STUDENTS if students is None else students)
    release_dir = ROOT / "exercises" / assignment
    for student in students:
        folder = course / "submitted" / student / assignment
        folder.mkdir(parents=True)
        for shipped in release_dir.iterdir():  # feedback.py, feedback.csv
            if shipped.suffix != ".ipynb":
                shutil.copy2(shipped, folder / shipped.name)
        for name in NOTEBOOKS:
            release = read(release_dir / f"{name}.ipynb")
            nb = (
                release
                if student == "blank"
                else _reference(release, read(ROOT / "solutions" / assignment / f"{name}.ipynb"))
            )
            for gid, src in MISTAKES.get(student, {}).get(name, {}).items():
                cell_by_id(nb, gid).source = src
            if student == "edge" and name == Q2:  # the student deleted a test cell
                nb.cells = [c for c in nb.cells if grade_id(c) != "q2_e_test"]
            if student == "edge" and name == Q3:  # and rewrote another to always pass
                cell_by_id(nb, "q3_a_test").source = 'print("Part (a): passed")'
            path = folder / f"{name}.ipynb"
            if student == "corrupt" and name == Q1:
                path.write_text('{"cells": [ this is not JSON', encoding="utf-8")
            else:
                nbformat.write(nb, path)
        if student == "tamper":
            (folder / "feedback.py").write_text(TAMPERED_FEEDBACK_PY, encoding="utf-8")
            (folder / "feedback.csv").write_text("id,question,part,en\n", encoding="utf-8")
    return students


@contextlib.contextmanager
def notebook_folder(folder: Path) -> Iterator[None]:
    """Run code as a notebook in ``folder`` would: that folder as the working folder and first on ``sys.path``, its
    own ``feedback`` module; everything restored after, Matplotlib's figures closed."""
    import matplotlib.pyplot as plt  # here, so that importing this module stays light

    cwd, path = Path.cwd(), list(sys.path)
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    sys.modules.pop("feedback", None)  # the copy beside this notebook, not one imported earlier
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.path[:] = path
        sys.modules.pop("feedback", None)
        plt.close("all")


def run_in_process(nb: nbformat.NotebookNode, folder: Path) -> nbformat.NotebookNode:
    """Run a notebook's code cells in this process, one namespace, from `folder`; record errors as outputs.

    Like a kernel with ``allow_errors``: a failing cell gets an ``error`` output and the next cell still runs.
    Printed text becomes a ``stream`` output. Used where many notebooks are run with answers we wrote, so
    that no kernel has to start for each; student submissions are always run in a kernel by the grader.
    """
    namespace: dict[str, object] = {"__name__": "__main__"}
    with notebook_folder(folder):
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            out = io.StringIO()
            cell.outputs = []
            try:
                with contextlib.redirect_stdout(out), warnings.catch_warnings():
                    warnings.simplefilter("default")
                    exec(compile(cell.source, f"<cell {grade_id(cell) or '?'}>", "exec"), namespace)  # noqa: S102
            except Exception as err:  # noqa: BLE001 (recorded as the cell's error, as a kernel would)
                cell.outputs.append(
                    nbformat.v4.new_output("error", ename=type(err).__name__, evalue=str(err), traceback=[])
                )
            if out.getvalue():
                cell.outputs.insert(0, nbformat.v4.new_output("stream", name="stdout", text=out.getvalue()))
    return nb


# nbgrader's generate_assignment, for several assignments in one process (nbgrader's own API): the import of
# nbgrader and the gradebook's set-up are paid once. Prints what failed and exits 1 if any did.
GENERATE = """
import sys
from nbgrader.apps import NbGraderAPI
from traitlets.config.loader import PyFileConfigLoader
api = NbGraderAPI(config=PyFileConfigLoader("nbgrader_config.py", path=".").load_config())
failed = [(name, result["log"]) for name in sys.argv[1:] if not (result := api.generate_assignment(name, force=True))["success"]]
for name, log in failed:
    print(f"generate_assignment {name} failed:\\n{log}")
sys.exit(1 if failed else 0)
"""


def generate(course: Path, *assignments: str) -> None:
    """``nbgrader generate_assignment NAME --force`` for each assignment, in the course root (one process)."""
    run = subprocess.run(
        [sys.executable, "-c", GENERATE, *assignments],
        cwd=course,
        env=course_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]


def course_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the course with the assignment generated, made once per test session and shared.

    Under pytest-xdist every worker process asks for it; the first to take the lock builds it in the
    session's own temporary root (``pytest-N``), the others wait and find it there. Use a copy of it
    (:func:`generated_course`), never the template itself.
    """
    import fcntl
    import os as _os

    base = tmp_path_factory.getbasetemp()
    root = base.parent if _os.environ.get("PYTEST_XDIST_WORKER") else base  # pytest-N/popen-gwK -> pytest-N
    template, done = root / "course-template", root / "course-template.done"
    with open(root / "course-template.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(template, ignore_errors=True)
            generate(copy_course(template), ASSIGNMENT)
            done.touch()
    return template


def generated_course(template: Path, dest: Path) -> Path:
    """A copy, in dest, of the course with the assignment generated (the gradebook knows its cells)."""
    shutil.copytree(template, dest)
    return dest


def gradebook_scores(course: Path, assignment: str = ASSIGNMENT) -> dict[str, dict[str, dict[str, list[float]]]]:
    """student -> notebook -> grade cell -> [score, max score], from the course's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {
            sub.student_id: {nb.name: {g.name: [g.score, g.max_score] for g in nb.grades} for nb in sub.notebooks}
            for sub in gb.assignment_submissions(assignment)
        }


def comparable(path: Path) -> list[tuple]:
    """A release notebook as nbgrader writes it: each cell's type, id, source, nbgrader metadata and outputs."""
    nb = read(path)
    return [(c.cell_type, c.get("id"), c.source, c.metadata.get("nbgrader"), c.get("outputs", [])) for c in nb.cells]


def full_marks(cells: dict[str, list[float]]) -> bool:
    """Every grade cell of a notebook at its maximum (as gradebook_scores gives them)."""
    return all(score == top and top > 0 for score, top in cells.values())


def failing_checks(notebook: str, answers: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """Run the solutions notebook with some answer cells replaced, its checks judged as grading judges them; return
    {grade_id: error text} for every cell that failed.

    The answers and set-up cells run in this process's stand-in for the student's kernel
    (:class:`grading.harness.Kernel`), and every check in :class:`grading.judge.Judge`, which reads the student's
    names (those the source notebook's answer cells bind) through :mod:`grading.in_kernel`, JSON both ways: the
    checks are judged as the grading command judges them, without a kernel to start.
    """
    from grading.harness import Kernel
    from grading.judge import Judge, student_names
    from grading.roles import cell_role

    source = nbformat.read(ROOT / "solutions" / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
    nb = nbformat.reads(nbformat.writes(source), as_version=4)
    for cell in nb.cells:
        gid = grade_id(cell)
        if gid in answers:
            keep = [ln for ln in cell.source.splitlines() if "plt.subplots" in ln or "batch_sizes =" in ln]
            cell.source = "\n".join(keep + [answers[gid]])
    shipped = {name: (ROOT / "solutions" / ASSIGNMENT / name).read_bytes() for name in SHIPPED_FILES}
    for name, data in shipped.items():  # feedback.py and its catalogue sit beside the notebook
        (tmp_path / name).write_bytes(data)
    kernel = Kernel()
    judge = Judge.for_files(kernel.ask, shipped, tmp_path / "judge", student_names(source))
    kernel.judge = judge
    failed: dict[str, str] = {}
    with notebook_folder(tmp_path):
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            role, gid = cell_role(cell), grade_id(cell) or "?"
            if role == "check":
                errors = [o for o in judge.check(cell.source, gid) if o.get("output_type") == "error"]
                if errors:
                    failed[gid] = f"{errors[0]['ename']}: {errors[0]['evalue']}"
                continue
            try:
                with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                    warnings.simplefilter("default")
                    kernel.run(cell.source)
            except Exception as err:  # noqa: BLE001 (recorded as the cell's error, as a kernel would)
                failed[gid] = f"{type(err).__name__}: {err}"
            if role == "setup":
                judge.setup(cell.source)
    return failed
