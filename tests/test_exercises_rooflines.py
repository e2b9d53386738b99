"""The student notebooks: failing until filled in, and worth what they say.

That exercises/ is what nbgrader generates from solutions/ is checked in tests/test_nbgrader_rooflines.py,
which generates the assignment anyway.
"""

from __future__ import annotations

import importlib.util
import math
import re
import shutil
from fractions import Fraction
from pathlib import Path
from types import ModuleType

from grading_support import (
    ASSIGNMENT,
    NOTEBOOKS,
    ROOT,
    SHIPPED_FILES,
    cell_by_id,
    is_grade_cell,
    read,
    rubric,
    run_in_process,
)


def test_intro_tables_match_the_grade_cells() -> None:
    """The grade cells' points are the one source; each introduction's table and total must agree with them."""
    for name in NOTEBOOKS:
        nb = read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb")
        points = rubric(name)
        intro = nb.cells[0].source
        assert f"({sum(points.values())} points)" in intro, name
        table = dict(re.findall(r"^\| \((\w)\) \|.*\| (\d+) \|$", intro, re.M))
        # a check is <q>_<part>_test; an answer graded by hand is itself the grade cell, <q>_<part>_answer
        assert {f"{name[:2]}_{part}": int(p) for part, p in table.items()} == {
            gid.rsplit("_", 1)[0]: p for gid, p in points.items()
        }, name


def test_exercises_hold_no_solutions_or_hidden_tests() -> None:
    for name in NOTEBOOKS:
        text = (ROOT / "exercises" / ASSIGNMENT / f"{name}.ipynb").read_text(encoding="utf-8")
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text and "hidden_" not in text


def test_unfilled_exercises_fail_every_check(tmp_path: Path) -> None:
    """Run each release notebook as handed out, beside its shipped files: every check must fail."""
    src = ROOT / "exercises" / ASSIGNMENT
    for shipped in SHIPPED_FILES:
        shutil.copy2(src / shipped, tmp_path / shipped)
    for name in NOTEBOOKS:
        nb = run_in_process(read(src / f"{name}.ipynb"), tmp_path)
        for cell in nb.cells:
            if is_grade_cell(cell) and cell.cell_type == "code":  # an answer graded by hand has nothing to run
                errors = [o for o in cell.outputs if o.output_type == "error"]
                assert errors, f"{name}: check {cell.metadata['nbgrader']['grade_id']} passed on an empty exercise"
                printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
                assert not re.search(r"passed", printed)


def _feedback() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rooflines_feedback", ROOT / "solutions" / ASSIGNMENT / "feedback.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _answer(name: str, gid: str, scope: dict[str, object]) -> dict[str, object]:
    """Run one answer cell of a source notebook (its solution as written) in ``scope``; return the scope."""
    nb = read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb")
    exec(cell_by_id(nb, gid).source, scope)  # noqa: S102 (our own notebook: its reference answer)
    return scope


def _digests(source: str) -> list[str]:
    return re.findall(r'"([0-9a-f]{16})"', source)


def test_q4_c_reference_agrees_with_a_search_at_chips_and_formats_it_never_shows() -> None:
    """Question 4 (c): the reference's smallest D = F equals the first D a search finds, and the check accepts it."""
    from answer_key import Q4_CHIPS, first_compute_bound_d

    smallest = _answer("q4_per_example_weights", "q4_c_answer", {"math": math})["smallest_compute_bound_d"]
    chips = [
        (peak * 1e11, bw * 1e11, w)
        for peak in (3, 7, 11, 19, 26, 33, 58, 4860)
        for bw in (4, 10, 29)
        for w in (0.25, 0.5, 1.0, 1.5, 2.0)
    ]
    tried = 0
    for peak, bw, w in chips:
        ridge = Fraction(peak) / Fraction(bw)
        if w * ridge < 2 and (2 * ridge / (2 - Fraction(w) * ridge)).denominator == 1:
            continue  # a D exactly at the ridge: floating point may land on either side of it
        assert smallest(peak, bw, w) == first_compute_bound_d(peak, bw, w), (peak, bw, w)  # type: ignore[operator]
        tried += 1
    assert tried > 100
    # the visible check's one fingerprint is that of the searched answers, and B does not matter
    answers = ["inf" if (d := first_compute_bound_d(*chip)) == math.inf else str(d) for chip in Q4_CHIPS]
    assert answers[0] == "inf" and answers[1:] != ["1", "1"]
    check = cell_by_id(read(ROOT / "solutions" / ASSIGNMENT / "q4_per_example_weights.ipynb"), "q4_c_test").source
    assert _feedback().fingerprint(",".join(answers)) in _digests(check)


def test_q5_d_variants_are_the_spec_tables_and_the_check_accepts_their_ridges() -> None:
    """Question 5 (d): the PCIe and NVL columns hold the spec table's figures (with-sparsity peaks twice the dense)."""
    from answer_key import FIXED, Q5

    import rooflinelib as rl

    nb = read(ROOT / "solutions" / ASSIGNMENT / "q5_h100.ipynb")
    setup: dict[str, object] = {}
    setup_cell = cell_by_id(nb, "q5_setup").source.splitlines()
    exec("\n".join(line for line in setup_cell if "feedback" not in line), setup)  # noqa: S102 (our own notebook)
    table = setup["H100_VARIANTS"]
    assert isinstance(table, dict)
    check = cell_by_id(nb, "q5_d_test").source
    for variant, key in (("H100 PCIe", "h100-pcie"), ("H100 NVL", "h100-nvl")):
        chip = rl.get_accelerator(key)
        flops = table["BF16 Tensor Core"][variant]
        assert flops.endswith("*") and float(flops[:-1].split()[0].replace(",", "")) * 1e12 == 2 * chip.peak("bf16")
        assert float(table["GPU memory bandwidth"][variant].removesuffix("TB/s")) * 1e12 == chip.hbm_bandwidth
        ridge = FIXED[Q5][f"variant_ridge({variant})"]
        assert math.isclose(ridge, chip.peak("bf16") / chip.hbm_bandwidth)
        assert _feedback().fingerprint(ridge) in _digests(check), variant
    scope = _answer("q5_h100", "q5_a_answer", {})
    scope = _answer("q5_h100", "q5_b_answer", scope)
    ridge_of = _answer("q5_h100", "q5_d_answer", scope)["variant_ridge"]
    assert math.isclose(ridge_of(table, "H100 NVL"), FIXED[Q5]["variant_ridge(H100 NVL)"])  # type: ignore[operator]
