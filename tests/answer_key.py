"""The answer key of the exercises: every answer from first principles, and the search for it in visible text.

The answers are computed here from the problem constants (the chip figures each problem states), at
every shape a visible check uses; :func:`leaks` searches every number a student can read for them:
markdown, code, outputs, as a decimal, in scientific notation, rounded to a few significant figures,
or as a small product or quotient such as ``120 / 47``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from grading_support import ASSIGNMENT, NOTEBOOKS, ROOT, read

Q1, Q2, Q3, Q4, Q5, Q6, Q7, Q8 = NOTEBOOKS

# The problem constants (C3): Q1 and Q4 int8 chip, Q2 and Q3 bf16 chip, Q5 H100 SXM sheet.
INT8_PEAK, INT8_HBM = 3.94e14, 8.1e11
BF16_PEAK, BF16_HBM = 1.97e14, 8.2e11
H100_SXM_DENSE, H100_SXM_HBM = 1979e12 / 2, 3.35e12
# Q5 (d): NVIDIA's sheet for the two other H100 variants, with-sparsity bf16 peaks halved (the spec table's figures)
H100_PCIE_DENSE, H100_PCIE_HBM = 1513e12 / 2, 2.0e12
H100_NVL_DENSE, H100_NVL_HBM = 1671e12 / 2, 3.9e12


def _q1(B: int, D: int, F: int) -> dict[str, float]:
    ops, loaded, written = 2 * B * D * F, B * D + D * F, B * F
    t_math, t_comms = ops / INT8_PEAK, (loaded + written) / INT8_HBM
    return {
        "bytes_loaded": loaded,
        "bytes_written": written,
        "total_ops": ops,
        "arithmetic_intensity": ops / (loaded + written),
        "t_math": t_math,
        "t_comms": t_comms,
        "t_lower": max(t_math, t_comms),
        "t_upper": t_math + t_comms,
    }


def _q2(B: int, D: int, F: int) -> dict[str, float]:
    flops, loaded, written = 2 * B * D * F, 2 * B * D + D * F, 2 * B * F
    return {
        "bytes_loaded": loaded,
        "bytes_written": written,
        "total_flops": flops,
        "arithmetic_intensity": flops / (loaded + written),
    }


def _q3(B: int, D: int, F: int) -> dict[str, float]:
    flops = 2 * B * D * F
    time = max(flops / BF16_PEAK, (2 * B * D + D * F + 2 * B * F) / BF16_HBM)
    if flops / BF16_PEAK >= time:  # on the flat part the roofline is the stated peak itself
        return {}
    return {"attainable_flops": flops / time}


def _q3_crossover(D: int, F: int) -> float:
    return (D * F / BF16_HBM) / (2 * D * F / BF16_PEAK - 2 * (D + F) / BF16_HBM)


def _q4(B: int, D: int, F: int) -> dict[str, float]:
    return {"arithmetic_intensity": 2 * B * D * F / (B * D + B * D * F + B * F)}


# Question 4 (c): the chips and weight formats its check names, (int8 peak, HBM bytes/s, bytes per weight).
Q4_CHIPS = [(INT8_PEAK, INT8_HBM, 1.0), (1.3e12, 1e12, 1.0), (2.5e12, 1e12, 0.5)]


def first_compute_bound_d(peak: float, bandwidth: float, bytes_per_weight: float, largest: int = 10_000) -> float:
    """The smallest D = F at which int8[B, D] x [B, D, D] (weights of the given width) is compute-bound.

    Found by trying every D: B D (int8 input) + w B D^2 (weights) + B D (int8 output) bytes against 2 B D^2 OPs,
    compute-bound once the OPs take at least as long as the bytes. ``math.inf`` if no D up to ``largest`` is.

    >>> first_compute_bound_d(1.3e12, 1e12, 1.0)
    4
    """
    for D in range(1, largest + 1):
        B = 3  # any batch: it cancels, and checking it does no harm
        if 2 * B * D * D / peak >= (B * D + bytes_per_weight * B * D * D + B * D) / bandwidth:
            return D
    return math.inf


# Question 6: its two made-up models and chip, as its statement gives them, counted matrix by matrix.
Q6_CHIP = {"peak": 4.5e14, "bandwidth": 1.6e12, "capacity": 16e9}
Q6_MODELS = {
    "MODEL_A": (5120, 13824, 40, 40, 8, 128, 50304, False, False),  # D, F, L, N, K, H, V, tied, qkv bias
    "MODEL_B": (1536, 8960, 28, 12, 2, 128, 151936, True, True),
}


def _q6(name: str) -> dict[str, float]:
    D, F, L, N, K, H, V, tied, bias = Q6_MODELS[name]
    matrices = [D * N * H, D * K * H, D * K * H, N * H * D, D * F, D * F, F * D]
    params = L * (sum(matrices) + 2 * D + (N * H + 2 * K * H) * bias) + D + V * D * (1 if tied else 2)
    mm, read = L * sum(matrices) + V * D, params - (0 if tied else V * D)
    kv = 2 * L * K * H * 2  # KV cache bytes per token, bf16

    def time(tokens: int, w: float) -> float:
        return max(2 * tokens * mm / Q6_CHIP["peak"], w * read / Q6_CHIP["bandwidth"])

    def fits(context: int, w: float) -> int:
        spare = Q6_CHIP["capacity"] - w * params
        return int(spare // (context * kv)) if spare > 0 else 0

    out = {
        f"param_count({name})": params,
        f"chips_to_fit({name}, bf16)": -(-params * 2 // Q6_CHIP["capacity"]),
        f"decode_critical_batch({name}, bf16)": Q6_CHIP["peak"] / Q6_CHIP["bandwidth"] * read / mm,
        f"decode_critical_batch({name}, int8)": Q6_CHIP["peak"] / Q6_CHIP["bandwidth"] / 2 * read / mm,
        f"prefill_time({name}, 4 x 512)": time(4 * 512, 2),
        f"kv_bytes_per_token({name})": kv,
        f"context_limit({name})": 2 * mm / (kv * Q6_CHIP["peak"] / Q6_CHIP["bandwidth"] - 4 * L * N * H),
    }
    for batch, w in ((8, 2), (1024, 2), (8, 1)):
        out[f"decode_step_time({name}, {batch}, {w})"] = time(batch, w)
    for context, w in ((4096, 2), (2048, 1), (2048, 2)):
        out[f"max_decode_batch({name}, {context}, {w})"] = fits(context, w)
    return out


# Question 7: the TPU v5e of the spec table, as its statement gives it: bf16 peak, one ICI link one way, the
# chip's ICI links and its DCN per chip. Each chip of the D-split does half the FLOPs; a partial sum [B, F] is
# 2 B F bytes, sent one way while the other comes the other way; gathered weights are 2 D F bytes, over n links.
Q7_PEAK, Q7_ICI, Q7_LINKS, Q7_DCN = 1.97e14, 4.5e10, 4, 3.125e9


def _q7() -> dict[str, float]:
    B, D, F = 512, 8192, 8192
    flops_per_chip = 2 * B * D * F / 2
    partial_sum_bytes = 2 * B * F
    # T_math = T_comms: B D F / P = 2 B F / W for the split, 2 B D F / P = 2 D F / (n W) for the weights
    return {
        "t_math(2 chips)": flops_per_chip / Q7_PEAK,
        "t_math(4 chips)": 2 * B * D * F / 4 / Q7_PEAK,
        "t_comms": partial_sum_bytes / Q7_ICI,
        "critical_d": 2 * Q7_PEAK / Q7_ICI,
        "critical_batch(ICI)": Q7_PEAK / (Q7_LINKS * Q7_ICI),
        "critical_batch(DCN)": Q7_PEAK / Q7_DCN,
    }


# Question 8: its made-up CPU and roofline, as its statement gives them. A register of simd_bits holds
# simd_bits / 32 float32 numbers; an FMA is 2 FLOPs. The float32 sweep [B, D] @ [D, D] moves 4 (2 B D + D^2)
# bytes for 2 B D^2 FLOPs.
Q8_CPUS = {"float32": (8, 3.0e9, 256, 2, 4), "float64": (4, 2.5e9, 512, 1, 8)}  # cores, Hz, bits, FMA/cycle, bytes
Q8_PEAK, Q8_BANDWIDTH, Q8_D = 6.4e11, 4.0e10, 2048


def _q8() -> dict[str, float]:
    out = {}
    for name, (cores, hz, bits, fma, size) in Q8_CPUS.items():
        out[f"predicted_peak({name})"] = cores * hz * (bits / (8 * size)) * fma * 2
    out["ridge_point"] = Q8_PEAK / Q8_BANDWIDTH
    # 2 B D^2 / P = 4 (2 B D + D^2) / W  ->  B (2 D^2 / P - 8 D / W) = 4 D^2 / W
    D = Q8_D
    out["knee_batch"] = (4 * D**2 / Q8_BANDWIDTH) / (2 * D**2 / Q8_PEAK - 8 * D / Q8_BANDWIDTH)
    return out


# Answers that do not depend on a shape, including the book's own printed values.
FIXED = {
    Q1: {"critical_batch": INT8_PEAK / INT8_HBM / 2, "critical_batch (book)": 243},
    Q2: {"critical_batch": BF16_PEAK / BF16_HBM / 2, "critical_batch (book)": 120},
    Q3: {f"critical_batch({n}, {n})": _q3_crossover(n, n) for n in (4096, 1024)},
    Q4: {
        "intensity_limit": 2,
        **{f"smallest_compute_bound_d{chip}": first_compute_bound_d(*chip) for chip in Q4_CHIPS[1:]},
    },
    Q5: {
        "peak_bf16_flops": H100_SXM_DENSE,
        "hbm_bandwidth": H100_SXM_HBM,
        "critical_batch": H100_SXM_DENSE / H100_SXM_HBM,
        "critical_batch (book)": 298,
        "peak_bf16_flops (TFLOPS)": H100_SXM_DENSE / 1e12,
        "variant_ridge(H100 PCIe)": H100_PCIE_DENSE / H100_PCIE_HBM,
        "variant_ridge(H100 NVL)": H100_NVL_DENSE / H100_NVL_HBM,
    },
    Q6: {**_q6("MODEL_A"), **_q6("MODEL_B")},
    Q7: _q7(),
    Q8: _q8(),
}
PER_SHAPE = {Q1: _q1, Q2: _q2, Q3: _q3, Q4: _q4}
# Shapes the visible checks are known to use; any other (B, D, F) a visible cell mentions is added.
KNOWN_SHAPES = {Q1: [(4, 3, 5), (256, 8192, 8192)], Q2: [(4, 3, 5)], Q3: [(64, 4096, 4096)], Q4: [(4, 3, 5)]}

NUMBER = r"\d[\d,_]*(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?"
EXPRESSION = re.compile(rf"(?<![\w.])(?:{NUMBER})(?:\s*(?:\*\*|[*/])\s*(?:{NUMBER}))*")
SHAPE = re.compile(r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.S)
# A small whole-number answer (like 2) only counts where code compares something with it.
COMPARED = r"(?:==|!=|<=|>=|isclose\([^,()]*(?:\([^()]*\))?[^,()]*,|approx\()\s*{n}(?:\.0*)?(?![\d.eE])"


def visible_text(name: str) -> str:
    """Everything a student sees in the released notebook: markdown, code (hidden blocks removed), outputs."""
    parts = []
    for cell in read(ROOT / "exercises" / ASSIGNMENT / f"{name}.ipynb").cells:
        parts.append(HIDDEN.sub("", cell.source))
        for out in cell.get("outputs", []):
            parts.append(str(out.get("text", "")) + str(out.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def answers(name: str, text: str) -> dict[str, float]:
    """Every answer of the notebook at the shapes its visible cells use."""
    out = dict(FIXED[name])
    if name in PER_SHAPE:
        shapes = set(KNOWN_SHAPES[name]) | {tuple(int(v) for v in m) for m in SHAPE.findall(text)}
        for shape in sorted(shapes):
            if 0 in shape:
                continue
            for key, value in PER_SHAPE[name](*shape).items():
                out[f"{key}{shape}"] = value
    return out


def numbers_in(text: str) -> Iterator[tuple[str, float]]:
    """Every literal number and every small product/quotient of literals, with its value."""
    for match in EXPRESSION.finditer(text):
        expr = match.group(0)
        cleaned = re.sub(r"(?<=\d)[,_](?=\d)", "", expr)
        try:
            value = float(eval(cleaned, {"__builtins__": {}}))  # only digits, dots, e, * and / reach here
        except (SyntaxError, ZeroDivisionError, OverflowError, ValueError, TypeError):
            continue
        yield expr, value
        for token in re.findall(NUMBER, cleaned):  # each literal on its own too
            try:
                yield token, float(token)
            except ValueError:
                continue


def significant_digits(literal: str) -> int:
    """How many significant digits a literal shows (an expression such as 120 / 47 counts as exact)."""
    if re.search(r"[*/]", literal):
        return 99
    mantissa = re.split(r"[eE]", literal)[0].replace(",", "").replace("_", "").replace(".", "")
    return len(mantissa.lstrip("0")) or 1


def reveals(literal: str, value: float, answer: float) -> bool:
    """True if a literal gives the answer away: it equals it to about 3 significant figures.

    A one-digit literal (``2``) does not reveal a non-whole answer such as 1.9998.
    """
    if significant_digits(literal) < 2 and abs(answer) < 10:
        return False
    if answer == 0:
        return value == 0
    if float(answer).is_integer() and abs(answer) < 1e6:
        return value == answer
    return abs(value - answer) <= 0.005 * abs(answer)


def leaks(name: str) -> list[str]:
    text = visible_text(name)
    found = []
    for key, answer in answers(name, text).items():
        if float(answer).is_integer() and abs(answer) < 100:
            # small whole numbers (2, 20, 27, 47 ...) are everywhere in prose: look for them where code compares
            if re.search(COMPARED.format(n=int(answer)), text):
                found.append(f"{key} = {answer:g} compared with in a visible check")
            continue
        for expr, value in numbers_in(text):
            if reveals(expr, value, answer):
                found.append(f"{key} = {answer:.6g} shown as {expr!r}")
                break
    return found
