"""The message catalogue (feedback.csv) and the notebooks that use it, and the problem statements' wording.

Every message a student can see is a row of the catalogue with a stable id; every
id a notebook uses is a row, every row is used, and a message never contains the
value it asks for.
"""

from __future__ import annotations

import ast
import csv
import importlib.util
import re

import pytest
from grading_support import ASSIGNMENT, NOTEBOOKS, ROOT, SHIPPED_FILES, read

SOURCE = ROOT / "solutions" / ASSIGNMENT
ID = re.compile(r"q[1-8]\.(?:[a-g]\.)?[a-z0-9]+(?:-[a-z0-9]+)*")


def _rows() -> list[dict[str, str]]:
    with (SOURCE / "feedback.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _used_ids() -> dict[str, set[str]]:
    """Ids passed to hint(...) in the code cells of each source notebook, found by parsing the code."""
    used: dict[str, set[str]] = {}
    for name in NOTEBOOKS:
        ids: set[str] = set()
        for cell in read(SOURCE / f"{name}.ipynb").cells:
            if cell.cell_type != "code":
                continue
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "hint":
                    first = node.args[0]
                    assert isinstance(first, ast.Constant), f"{name}: hint() needs a literal id, got {ast.dump(first)}"
                    ids.add(first.value)
        used[name] = ids
    return used


def _feedback_module():
    spec = importlib.util.spec_from_file_location("rooflines_feedback", SOURCE / "feedback.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_catalogue_rows_are_well_formed() -> None:
    rows = _rows()
    assert list(rows[0])[:4] == ["id", "question", "part", "en"]
    ids = [row["id"] for row in rows]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for row in rows:
        assert ID.fullmatch(row["id"]), row["id"]
        assert row["question"] == row["id"][1], row["id"]
        part = re.match(r"q\d\.([a-g])\.", row["id"])
        assert row["part"] == (part.group(1) if part else row["part"]) and re.fullmatch(r"[a-g]?", row["part"]), row
        assert row["en"].strip() and row["en"] == row["en"].strip(), row["id"]


def test_every_used_id_is_in_the_catalogue_and_every_row_is_used() -> None:
    catalogue = {row["id"] for row in _rows()}
    used = _used_ids()
    for name, ids in used.items():
        assert ids <= catalogue, f"{name} uses ids missing from feedback.csv: {sorted(ids - catalogue)}"
        question = name[1]
        assert all(i[1] == question for i in ids), (name, sorted(i for i in ids if i[1] != question))
    unused = catalogue - set().union(*used.values())
    assert not unused, f"rows of feedback.csv no notebook uses: {sorted(unused)}"


def test_no_message_contains_an_expected_value() -> None:
    """Messages may quote the student's value ({got}), never the answer; the answer-literal search runs on them too."""
    from answer_key import answers, numbers_in, reveals

    for name in NOTEBOOKS:
        q = name[1]
        text = "\n".join(row["en"] for row in _rows() if row["question"] == q)
        for key, answer in answers(name, text).items():
            if float(answer).is_integer() and abs(answer) < 100:
                continue  # small whole numbers are covered where code compares with them
            for literal, value in numbers_in(text):
                assert not reveals(literal, value, answer), (name, key, literal)


def test_hint_formats_and_fails_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    feedback = _feedback_module()
    assert feedback.hint("q1.g.swapped", low=2e-4, high=1e-4).startswith("[q1.g.swapped] t_lower (0.0002 s)")
    with pytest.raises(KeyError, match="q9.nothing"):
        feedback.hint("q9.nothing")
    monkeypatch.setenv("ROOFLINE_LANG", "ko")  # no such column yet: English is the fallback
    assert feedback.hint("q1.int8-two-bytes", name="x").startswith("[q1.int8-two-bytes] x: ")


def test_fingerprints_round_to_three_figures_and_tolerate_boundaries() -> None:
    feedback = _feedback_module()
    digest = feedback.fingerprint(243.2)
    assert feedback.matches(243.21, digest) and feedback.matches(243.4, digest)
    assert not feedback.matches(244.0, digest) and not feedback.matches(24.32, digest)
    assert not feedback.matches("243.2", digest) and not feedback.matches(None, digest)
    edge = feedback.fingerprint(1.245)  # "1.25e+00" in binary floating point? either way a nudge stays accepted
    assert feedback.matches(1.245 * (1 + 5e-7), edge) and feedback.matches(1.245 * (1 - 5e-7), edge)
    assert feedback.fingerprint(True) != feedback.fingerprint(False)


def test_shipped_files_are_the_same_in_source_and_release() -> None:
    for shipped in SHIPPED_FILES:
        assert (SOURCE / shipped).read_bytes() == (ROOT / "exercises" / ASSIGNMENT / shipped).read_bytes(), shipped


def test_every_problem_states_its_constants() -> None:
    """Each statement gives the figures its problem needs (the same ones the book uses)."""
    needed = {
        "q1_int8_matmul": ["`8.1e11`", "`3.94e14`"],
        "q2_int8_weights": ["`1.97e14`", "`8.2e11`"],
        "q3_roofline_plot": ["`1.97e14`", "`8.2e11`", "int8 weights", "each at its own width"],  # not Q2's byte count
        "q4_per_example_weights": ["`3.94e14`", "`8.1e11`", "int8"],
        "q5_h100": ["1,979 teraFLOPS", "3.35 TB/s", "With sparsity", "H100 SXM", "H100 PCIe", "H100 NVL"],
        "q6_serving_a_model": [
            "`peak_flops`",
            "`hbm_bandwidth`",
            "`hbm_capacity`",
            "`bytes_per_weight`",
            "`tied_embeddings`",
        ],
        # the spec table's TPU v5e (rooflinelib, tpu-v5e), and the one-way convention of the chapter
        "q7_sharded_matmul": ["`1.97e14`", "`4` ICI links", "`4.5e10` bytes/s **one way**", "`3.125e9`"],
        "q8_predict_then_measure": ["`fma_per_cycle`", "`simd_bits`", "`clock_hz`", "`4` bytes"],
    }
    for name, figures in needed.items():
        intro = read(SOURCE / f"{name}.ipynb").cells[0].source
        for figure in figures:
            assert figure in intro, (name, figure)


def test_the_learners_page_states_the_assignments_points() -> None:
    """docs/learners.md's total and hand-graded points are the source notebooks' own."""
    total = by_hand = 0
    for name in NOTEBOOKS:
        for cell in read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb").cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade"):
                total += meta["points"]
                by_hand += meta["points"] if meta.get("solution") else 0
    text = " ".join((ROOT / "docs" / "learners.md").read_text(encoding="utf-8").split())
    stated = re.search(r"(\d+) in all, of which (\d+)", text)
    assert stated, "docs/learners.md no longer states the assignment's points"
    assert (int(stated[1]), int(stated[2])) == (total, by_hand)
