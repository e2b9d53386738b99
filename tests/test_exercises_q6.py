"""Question 6 (serving a language model on the roofline) against rooflinelib and against students' slips.

The reference answers and the counts the hidden checks compute are compared with
``rooflinelib.models`` and ``rooflinelib.serving``, an implementation written apart from both,
on every published model of its table, on made-up shapes and on the chips of its spec table.
Each named misconception gets its own message; answers written another way pass; numbers that
fit only the visible calls fail the hidden checks; the visible checks accept exactly what the
hidden ones accept; and the hidden checks, run in the student's namespace as serial nbgrader
runs them, leave every name of the student's alone.
"""

from __future__ import annotations

import ast
import importlib.util
import math
import random
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from grading_support import (
    ASSIGNMENT,
    MISTAKES,
    ROOT,
    SHIPPED_FILES,
    failing_checks,
    grade_id,
    run_in_process,
    solution_body,
)
from q6_support import HIDDEN, Q6, SOURCE, hidden_function, hidden_helpers

import rooflinelib as rl

CHIPS = ["tpu-v5e", "h100-sxm", "b200", "mi300x"]
FORMATS = {2: rl.Precision("bf16"), 1: rl.Precision("bf16", w="int8"), 0.5: rl.Precision("bf16", w="int4")}


def _reference() -> dict[str, object]:
    """The instructor's answer cells, run in one namespace: param_count, chips_to_fit, ..."""
    namespace: dict[str, object] = {}
    for cell in nbformat.read(SOURCE, as_version=4).cells:
        if cell.cell_type == "code" and (grade_id(cell) or "").endswith("_answer"):
            exec(solution_body(cell.source), namespace)  # noqa: S102 (our own notebook)
    return namespace


def _config(model: rl.Model) -> dict[str, object]:
    """A model of rooflinelib as Question 6 hands it to the student: the fields of its config.json."""
    return {
        "hidden": model.hidden,
        "mlp": model.mlp,
        "layers": model.layers,
        "heads": model.heads,
        "kv_heads": model.kv_heads,
        "head_dim": model.head_dim,
        "vocab": model.vocab,
        "tied_embeddings": model.tied_embeddings,
        "qkv_bias": model.qkv_bias,
    }


def _chip(key: str) -> dict[str, float]:
    acc = rl.get_accelerator(key)
    return {"peak_flops": acc.peak("bf16"), "hbm_bandwidth": acc.bandwidth("hbm"), "hbm_capacity": acc.hbm_capacity}


MADE_UP = [
    rl.Model.custom(
        "tied, no GQA",
        hidden=2048,
        mlp=6144,
        layers=18,
        heads=16,
        kv_heads=16,
        head_dim=96,
        vocab=256000,
        tied_embeddings=True,
    ),
    rl.Model.custom("biases", hidden=896, mlp=4864, layers=24, heads=14, kv_heads=2, vocab=151936, qkv_bias=True),
    rl.Model.custom("tiny", hidden=64, mlp=256, layers=2, heads=4, kv_heads=2, vocab=1000),
]
MODELS = [rl.get_model(key) for key in rl.MODELS] + MADE_UP


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_the_reference_answers_agree_with_rooflinelib(model: rl.Model) -> None:
    ref, cfg = _reference(), _config(model)
    assert ref["param_count"](cfg) == model.params  # type: ignore[operator]
    for key in CHIPS:
        chip = _chip(key)
        for w, precision in FORMATS.items():
            dtype = {2: "bf16", 1: "int8", 0.5: "int4"}[w]
            assert ref["chips_to_fit"](cfg, chip, w) == rl.chips_to_fit(model, key, dtype)  # type: ignore[operator]
            want = rl.decode_critical_batch(model, key, precision=precision)
            assert math.isclose(ref["decode_critical_batch"](cfg, chip, w), want, rel_tol=1e-12)  # type: ignore[operator]
            for batch in (1, 64, 4096):
                want = rl.decode_step_time(model, key, batch, precision=precision)
                assert math.isclose(ref["decode_step_time"](cfg, chip, batch, w), want, rel_tol=1e-12)  # type: ignore[operator]
            want = rl.prefill_time(model, key, 8, 512, precision=precision, attention=False)
            assert math.isclose(ref["prefill_time"](cfg, chip, 8, 512, w), want, rel_tol=1e-12)  # type: ignore[operator]
            for context in (100, 4096, 32768):
                want = rl.max_decode_batch(model, key, context, precision=precision)  # a bf16 cache
                assert ref["max_decode_batch"](cfg, chip, context, w) == want  # type: ignore[operator]
        assert ref["kv_bytes_per_token"](cfg) == rl.kv_cache_bytes_per_token(model)  # type: ignore[operator]
        want = rl.decode_context_limit(model, key)
        assert math.isclose(ref["context_limit"](cfg, chip), want, rel_tol=1e-12)  # type: ignore[operator]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_the_hidden_checks_count_as_rooflinelib_does(model: rl.Model) -> None:
    counts = hidden_helpers()["_hidden_counts"](_config(model))  # type: ignore[operator]
    assert counts == (model.params, model.matmul_params, model.streamed_params, rl.kv_cache_bytes_per_token(model))


def test_the_hidden_checks_use_the_published_shapes_and_the_spec_table() -> None:
    models, chips = hidden_helpers()["_hidden_cases"]()  # type: ignore[operator]
    for key, cfg in zip(["llama-3-8b", "llama-3-70b", "qwen2.5-7b"], models, strict=False):
        assert cfg == _config(rl.get_model(key)), key
    assert models[3] == _config(MADE_UP[0])
    assert chips == [_chip(key) for key in ("tpu-v5e", "h100-sxm", "b200")]


def _answers(**cells: str) -> dict[str, str]:
    return {f"q6_{part}_answer": source for part, source in cells.items()}


def _fits(
    spare: str = "chip['hbm_capacity'] - param_count(model) * w",
    kv: str = "2 * model['layers'] * model['kv_heads'] * model['head_dim'] * 2",
    rounding: str = "spare // per",
    guard: str = "    if spare <= 0:\n        return 0\n",
) -> str:
    """Part (f) written with one slip."""
    return (
        "def kv_bytes_per_token(model):\n    return 2 * model['layers'] * model['kv_heads'] * model['head_dim'] * 2\n\n\n"
        "def max_decode_batch(model, chip, context, w):\n"
        f"    spare = {spare}\n{guard}"
        f"    per = context * ({kv})\n"
        f"    return int({rounding})"
    )


def _limit(attention: str = "4 * L * N * H", kv: str = "2 * L * model['kv_heads'] * H * 2", flops: str = "2") -> str:
    """Part (g) written with one slip."""
    return (
        "def context_limit(model, chip):\n"
        "    L, N, H = model['layers'], model['heads'], model['head_dim']\n"
        "    ridge = chip['peak_flops'] / chip['hbm_bandwidth']\n"
        f"    return {flops} * matmul_weights(model) / (({kv}) * ridge - ({attention}))"
    )


# The reference's helpers, for slips that keep everything else right.
HELPERS = (
    "def matmul_weights(model):\n"
    "    D, F, L = model['hidden'], model['mlp'], model['layers']\n"
    "    N, K, H, V = model['heads'], model['kv_heads'], model['head_dim'], model['vocab']\n"
    "    return L * (2 * D * N * H + 2 * D * K * H + 3 * D * F) + V * D\n\n\n"
    "def weights_read(model):\n"
    "    return param_count(model) - (0 if model['tied_embeddings'] else model['vocab'] * model['hidden'])\n\n\n"
)


def _count(
    kv: str = "2 * D * K * H",
    mlp: str = "3 * D * F",
    norms: str = "2 * D",
    final: str = "D",
    tables: str = "(1 if m['tied_embeddings'] else 2) * V * D",
    bias: str = "m['qkv_bias']",
) -> str:
    return (
        "def param_count(m):\n"
        "    D, F, L, N, K, H, V = (m[k] for k in ('hidden', 'mlp', 'layers', 'heads', 'kv_heads', 'head_dim', 'vocab'))\n"
        f"    b = (N * H + 2 * K * H) if {bias} else 0\n"
        f"    return L * (2 * D * N * H + {kv} + {mlp} + {norms} + b) + {final} + {tables}"
    )


MISCONCEPTIONS = [
    (_answers(a=_count(kv="2 * D * N * H")), "q6_a_test", "q6.a.all-heads-kv"),
    (_answers(a=_count(mlp="2 * D * F")), "q6_a_test", "q6.a.two-mlp-matrices"),
    (_answers(a=_count(tables="V * D")), "q6_a_test", "q6.a.one-table"),
    (_answers(a=_count(norms="0", final="0")), "q6_a_test", "q6.a.norms"),
    (_answers(a=_count(tables="2 * V * D")), "q6_a_test", "q6.a.tied-twice"),
    (_answers(a=_count(bias="False")), "q6_a_test", "q6.a.bias"),
    (_answers(a="def param_count(model):\n    return 1.1e10"), "q6_a_test", "q6.a.wrong"),
    (_answers(a="def param_count(model):\n    return 'many'"), "q6_a_test", "q6.not-a-number"),
    (
        _answers(b="def chips_to_fit(model, chip, w):\n    return param_count(model) * w // chip['hbm_capacity']"),
        "q6_b_test",
        "q6.b.rounded-down",
    ),
    (
        _answers(
            c=HELPERS + "def decode_step_time(model, chip, batch, w):\n"
            "    return 2 * batch * matmul_weights(model) / chip['peak_flops'] "
            "+ w * weights_read(model) / chip['hbm_bandwidth']"
        ),
        "q6_c_test",
        "q6.sum-not-max",
    ),
    (
        _answers(
            c=HELPERS + "def decode_step_time(model, chip, batch, w):\n"
            "    return max(2 * batch * matmul_weights(model) / chip['peak_flops'], "
            "w * param_count(model) / chip['hbm_bandwidth'])"
        ),
        "q6_c_test",
        "q6.c.embedding-read",
    ),
    (
        _answers(
            c=HELPERS + "def decode_step_time(model, chip, batch, w):\n"
            "    return w * weights_read(model) / chip['hbm_bandwidth']"
        ),
        "q6_c_test",
        "q6.c.ignores-batch",
    ),
    (
        _answers(
            c=HELPERS + "def decode_step_time(model, chip, batch, w):\n"
            "    return max(batch * matmul_weights(model) / chip['peak_flops'], "
            "w * weights_read(model) / chip['hbm_bandwidth'])"
        ),
        "q6_c_test",
        "q6.c.one-flop",
    ),
    (
        _answers(
            c=HELPERS + "def decode_step_time(model, chip, batch, w):\n"
            "    return max(2 * batch * matmul_weights(model) / chip['peak_flops'], "
            "2 * weights_read(model) / chip['hbm_bandwidth'])"
        ),
        "q6_c_test",
        "q6.c.ignores-bytes",
    ),
    (
        _answers(
            d="def decode_critical_batch(model, chip, w):\n"
            "    return chip['peak_flops'] / chip['hbm_bandwidth'] * w * weights_read(model) / matmul_weights(model)"
        ),
        "q6_d_test",
        "q6.d.no-half",
    ),
    (
        _answers(
            d="def decode_critical_batch(model, chip, w):\n"
            "    return chip['peak_flops'] / chip['hbm_bandwidth'] * weights_read(model) / matmul_weights(model)"
        ),
        "q6_d_test",
        "q6.d.ignores-bytes",
    ),
    (
        _answers(
            e="def prefill_time(model, chip, batch, prompt_len, w):\n    return decode_step_time(model, chip, batch, w)"
        ),
        "q6_e_test",
        "q6.e.sequences",
    ),
    (
        _answers(
            e="def prefill_time(model, chip, batch, prompt_len, w):\n"
            "    return decode_step_time(model, chip, prompt_len, w)"
        ),
        "q6_e_test",
        "q6.e.one-prompt",
    ),
    (
        _answers(
            e="def prefill_time(model, chip, batch, prompt_len, w):\n"
            "    return 2 * batch * prompt_len * matmul_weights(model) / chip['peak_flops'] "
            "+ w * weights_read(model) / chip['hbm_bandwidth']"
        ),
        "q6_e_test",
        "q6.sum-not-max",
    ),
    (_answers(f=_fits(spare="chip['hbm_capacity']")), "q6_f_test", "q6.f.weights-left"),
    (_answers(f=_fits(rounding="-(-spare // per)")), "q6_f_test", "q6.f.rounded-up"),
    (
        _answers(f=_fits(kv="2 * model['layers'] * model['heads'] * model['head_dim'] * 2")),
        "q6_f_test",
        "q6.f.query-heads",
    ),
    (
        _answers(f=_fits(kv="model['layers'] * model['kv_heads'] * model['head_dim'] * 2")),
        "q6_f_test",
        "q6.f.keys-only",
    ),
    (
        _answers(f=_fits(kv="2 * model['layers'] * model['kv_heads'] * model['head_dim'] * w")),
        "q6_f_test",
        "q6.f.cache-format",
    ),
    (_answers(f=_fits(guard="")), "q6_f_test", "q6.f.negative"),
    (_answers(g=_limit(attention="0")), "q6_g_test", "q6.g.no-attention"),
    (_answers(g=_limit(attention="4 * L * model['kv_heads'] * H")), "q6_g_test", "q6.g.attention-kv-heads"),
    (_answers(g=_limit(kv="2 * L * N * H * 2")), "q6_g_test", "q6.f.query-heads"),
    (_answers(g=_limit(flops="1")), "q6_g_test", "q6.g.one-flop"),
    (_answers(g="def context_limit(model, chip):\n    return 400.0"), "q6_g_test", "q6.g.wrong"),
]


@pytest.mark.parametrize(("answers", "test", "msg_id"), MISCONCEPTIONS, ids=[m for _, _, m in MISCONCEPTIONS])
def test_each_misconception_gets_its_message(answers: dict[str, str], test: str, msg_id: str, tmp_path: Path) -> None:
    failed = failing_checks(Q6, answers, tmp_path)
    assert failed.get(test, "").startswith(f"AssertionError: [{msg_id}]"), failed
    others = {check: error for check, error in failed.items() if check != test}
    if msg_id == "q6.not-a-number":  # a string where a count belongs breaks whatever computes with it
        assert all(e.startswith(("TypeError", "AssertionError: [q6.follows-part-a]")) for e in others.values()), others
    elif test == "q6_a_test":  # the later parts build on param_count: they may fail, pointing back at (a)
        assert all(
            re.match(r"AssertionError: \[q6\.(follows-part-a|[b-f]\.hidden-model)\]", e) for e in others.values()
        ), others
    else:
        assert not others, f"only {test} should fail: {failed}"


EQUIVALENT = [
    # the attention counted as query-width and key/value-width matrices, the tables by a loop
    _answers(
        a="def param_count(m):\n"
        "    q, kv, D = m['heads'] * m['head_dim'], m['kv_heads'] * m['head_dim'], m['hidden']\n"
        "    layer = D * q + 2 * D * kv + q * D + 3 * D * m['mlp'] + 2 * D + (q + 2 * kv) * m['qkv_bias']\n"
        "    tables = sum(m['vocab'] * D for _ in range(1 if m['tied_embeddings'] else 2))\n"
        "    return m['layers'] * layer + D + tables"
    ),
    # rounding up by integer arithmetic, in numpy
    _answers(
        b="import numpy as np\n\n\ndef chips_to_fit(model, chip, w):\n"
        "    return int(np.ceil(param_count(model) * w / chip['hbm_capacity']))"
    ),
    # the roofline through the critical batch, and the prefill through decode_step_time
    _answers(
        d="def decode_critical_batch(model, chip, w):\n"
        "    return w * weights_read(model) / chip['hbm_bandwidth'] * chip['peak_flops'] / (2 * matmul_weights(model))",
        e="def prefill_time(model, chip, batch, prompt_len, w):\n"
        "    return decode_step_time(model, chip, batch * prompt_len, w)",
    ),
]


@pytest.mark.parametrize("answers", EQUIVALENT, ids=lambda a: ",".join(a))
def test_answers_written_another_way_pass(answers: dict[str, str], tmp_path: Path) -> None:
    assert failing_checks(Q6, answers, tmp_path) == {}


def _failed_checks(answers: dict[str, str], folder: Path, *, hidden: bool) -> set[str]:
    """The checks that fail with these answers, with or without the hidden tests."""
    nb = nbformat.read(SOURCE, as_version=4)
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
        elif not hidden:
            cell.source = HIDDEN.sub("", cell.source)
    folder.mkdir()
    for shipped in SHIPPED_FILES:
        shutil.copy2(ROOT / "solutions" / ASSIGNMENT / shipped, folder / shipped)
    run_in_process(nb, folder)
    return {grade_id(c) or "?" for c in nb.cells if any(o.get("output_type") == "error" for o in c.get("outputs", []))}


def test_numbers_that_fit_only_the_visible_calls_pass_the_visible_checks_and_fail_the_hidden(tmp_path: Path) -> None:
    memorised = MISTAKES["memorised"][Q6]
    assert _failed_checks(memorised, tmp_path / "visible", hidden=False) == set()
    assert _failed_checks(memorised, tmp_path / "graded", hidden=True) == {f"q6_{part}_test" for part in "abcdefg"}


# ----------------------------------------------------------------------------- tolerance: visible = hidden


def _feedback():
    spec = importlib.util.spec_from_file_location("q6_feedback", SOURCE.with_name("feedback.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_a_visible_check_accepts_exactly_what_a_hidden_one_does() -> None:
    """near() against a locator decides as math.isclose(value, right, rel_tol=REL_TOL) does, boundaries included."""
    fb = _feedback()
    rng = random.Random(6)
    rights = [0.014085024, 281.26035180106004, 497.8968325791855, 1e-9, 3.3e7] + [
        10 ** rng.uniform(-8, 8) for _ in range(200)
    ]
    for right in rights:
        where = fb.locate(right)
        offsets = [0, 3e-4, -3e-4, 9.99e-4, -9.99e-4, 1.001e-3, -1.001e-3, 2e-3, 0.02, -0.02]
        offsets += [rng.uniform(-2e-3, 2e-3) for _ in range(40)]
        for offset in offsets:
            value = right * (1 + offset)
            assert fb.near(value, where) == math.isclose(value, right, rel_tol=fb.REL_TOL), (right, offset)
    # the locator of one value says nothing of another's; non-numbers and non-positive values never match
    assert not fb.near(2.0, fb.locate(1.0)) and not fb.near(True, fb.locate(1.0)) and not fb.near(-1.0, fb.locate(1.0))
    assert fb.is_count(42, fb.count_fingerprint(42)) and not fb.is_count(42.0001, fb.count_fingerprint(42))


def _scaled(factor: float, *, counts: bool) -> dict[str, str]:
    """Every answer cell of the reference, its real-valued results (and, with counts, its counts too) times factor."""
    scale = {
        "c": "decode_step_time",
        "d": "decode_critical_batch",
        "e": "prefill_time",
        "g": "context_limit",
    }
    if counts:
        scale.update({"a": "param_count", "b": "chips_to_fit", "f": "max_decode_batch"})
    answers = {}
    for cell in nbformat.read(SOURCE, as_version=4).cells:
        gid = grade_id(cell) or ""
        part = gid[3:4]
        if gid.endswith("_answer") and part in scale:
            name = scale[part]
            body = solution_body(cell.source).replace(f"def {name}(", f"def _right_{name}(")
            wrapper = f"\n\n\ndef {name}(*args):\n    return _right_{name}(*args) * {factor!r}\n"
            if part in "ab":  # later parts call param_count and chips_to_fit: they keep the right ones
                wrapper = ""
            answers[gid] = body + wrapper
    return answers


def test_within_3e_4_earns_every_point_and_2_percent_off_earns_none(tmp_path: Path) -> None:
    """Real-valued parts pass 3e-4 off in visible and hidden checks alike, and fail 2% off; counts must be exact."""
    for factor in (1 + 3e-4, 1 - 3e-4):
        assert _failed_checks(_scaled(factor, counts=False), tmp_path / f"close{factor}", hidden=True) == set()
    far = {f"q6_{part}_test" for part in "cdeg"}
    for factor in (1.02, 0.98):
        assert _failed_checks(_scaled(factor, counts=False), tmp_path / f"far{factor}", hidden=False) == far
        assert _failed_checks(_scaled(factor, counts=False), tmp_path / f"farh{factor}", hidden=True) == far
    # a count 2% off is another count: (a), (b) and (f) fail, here and hidden (and (a) takes the rest down with it)
    off = _failed_checks(_off_counts(), tmp_path / "counts", hidden=False)
    assert {"q6_a_test", "q6_b_test", "q6_f_test"} <= off


def _off_counts() -> dict[str, str]:
    """The counts of (a), (b) and (f) each 2% off, rounded to a whole number: another count."""
    answers = {}
    for cell in nbformat.read(SOURCE, as_version=4).cells:
        gid = grade_id(cell) or ""
        names = {"q6_a_answer": "param_count", "q6_b_answer": "chips_to_fit", "q6_f_answer": "max_decode_batch"}
        if gid in names:
            name = names[gid]
            body = solution_body(cell.source).replace(f"def {name}(", f"def _right_{name}(")
            answers[gid] = body + (
                f"\n\n\ndef {name}(*args):\n"
                f"    right = _right_{name}(*args)\n"
                "    return round(right * 1.02) if round(right * 1.02) != right else right + 1\n"
            )
    return answers


# ----------------------------------------------------------------------------- the student's names stay the student's


STUDENT_NAMES = ("_c", "_m", "_p", "_i", "_w", "_b", "_s", "_mm", "_read", "_want", "_models", "_chips", "_hidden_cases",
                 "_hidden_counts", "models", "chips", "cases", "counts", "want", "w", "c", "m")  # fmt: skip


def test_hidden_checks_leave_the_students_names_alone(tmp_path: Path) -> None:
    """Run as serial nbgrader runs it (one namespace), a correct answer whose helpers have the hidden checks' old
    and new local names passes every part, and every one of those names still holds the student's value."""
    answers = {}
    for cell in nbformat.read(SOURCE, as_version=4).cells:
        gid = grade_id(cell) or ""
        if gid.endswith("_answer"):
            answers[gid] = solution_body(cell.source)
    # part (a) keeps helpers under the names the old hidden checks reassigned, and uses them in every call
    answers["q6_a_answer"] = (
        "".join(f"{name} = {name!r}\n" for name in STUDENT_NAMES)
        + "\n\ndef _c(model):\n    return model['hidden']\n\n\n"
        + answers["q6_a_answer"].replace('D, F, L = model["hidden"]', "D, F, L = _c(model)")
        + "\n\n\ndef _check_names():\n"
        + "".join(f"    assert {name} == {name!r}, {name!r}\n" for name in STUDENT_NAMES if name != "_c")
        + "    assert _c({'hidden': 7}) == 7\n"
    )
    assert "_c(model)" in answers["q6_a_answer"]
    answers["q6_g_answer"] += "\n\n_check_names()\n"  # after every hidden check before (g) has run
    nb = nbformat.read(SOURCE, as_version=4)
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    nb.cells.append(nbformat.v4.new_code_cell("_check_names()\nassert '_q6_hidden_g' not in globals()"))
    folder = tmp_path / "serial"
    folder.mkdir()
    for shipped in SHIPPED_FILES:
        shutil.copy2(ROOT / "solutions" / ASSIGNMENT / shipped, folder / shipped)
    run_in_process(nb, folder)
    failed = {grade_id(c) or "last": [o["evalue"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
              for c in nb.cells}  # fmt: skip
    assert {k: v for k, v in failed.items() if v} == {}


def test_each_hidden_block_is_one_function_called_then_deleted() -> None:
    for cell in nbformat.read(SOURCE, as_version=4).cells:
        gid = grade_id(cell) or ""
        if gid.endswith("_test"):
            function = hidden_function(gid)
            block = HIDDEN.search(cell.source).group(1)  # type: ignore[union-attr]
            tree = ast.parse(block)
            bound = {
                t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
            }
            top = [n for n in tree.body if not isinstance(n, ast.FunctionDef)]
            assert [ast.unparse(n) for n in top] == [f"{function.name}()", f"del {function.name}"], gid
            assert not bound & {
                n.id for n in ast.walk(ast.Module(body=top, type_ignores=[])) if isinstance(n, ast.Name)
            }
