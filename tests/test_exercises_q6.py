"""Question 6 (serving a language model on the roofline) against rooflinelib and against students' slips.

The reference answers and the counts the hidden checks compute are compared with
``rooflinelib.models``, an implementation written apart from both, on every published
model of its table, on made-up shapes and on the chips of its spec table. Each named
misconception gets its own message; answers written another way pass; numbers that
fit only the visible calls fail the hidden checks.
"""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from grading_support import ASSIGNMENT, MISTAKES, ROOT, SHIPPED_FILES, grade_id, run_in_process, solution_body
from test_exercises_alternatives import _failures

import rooflinelib as rl

Q6 = "q6_serving_a_model"
SOURCE = ROOT / "solutions" / ASSIGNMENT / f"{Q6}.ipynb"
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)
CHIPS = ["tpu-v5e", "h100-sxm", "b200", "mi300x"]
FORMATS = {2: rl.Precision("bf16"), 1: rl.Precision("bf16", w="int8"), 0.5: rl.Precision("bf16", w="int4")}


def _reference() -> dict[str, object]:
    """The instructor's answer cells, run in one namespace: param_count, chips_to_fit, ..."""
    namespace: dict[str, object] = {}
    for cell in nbformat.read(SOURCE, as_version=4).cells:
        if cell.cell_type == "code" and (grade_id(cell) or "").endswith("_answer"):
            exec(solution_body(cell.source), namespace)  # noqa: S102 (our own notebook)
    return namespace


def _hidden_helpers() -> dict[str, object]:
    """What the hidden checks define before they compare: _hidden_cases and _hidden_counts."""
    cell = next(c for c in nbformat.read(SOURCE, as_version=4).cells if grade_id(c) == "q6_a_test")
    block = HIDDEN.search(cell.source).group(1)  # type: ignore[union-attr]
    namespace: dict[str, object] = {}
    exec(block.split("\n_models, _chips")[0], namespace)  # noqa: S102 (the definitions, not the loop)
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
            want = rl.prefill_time(model, key, 8, 512, precision=precision)
            assert math.isclose(ref["prefill_time"](cfg, chip, 8, 512, w), want, rel_tol=1e-12)  # type: ignore[operator]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_the_hidden_checks_count_as_rooflinelib_does(model: rl.Model) -> None:
    counts = _hidden_helpers()["_hidden_counts"](_config(model))  # type: ignore[operator]
    assert counts == (model.params, model.matmul_params, model.streamed_params)


def test_the_hidden_checks_use_the_published_shapes_and_the_spec_table() -> None:
    models, chips = _hidden_helpers()["_hidden_cases"]()  # type: ignore[operator]
    for key, cfg in zip(["llama-3-8b", "llama-3-70b", "qwen2.5-7b"], models, strict=False):
        assert cfg == _config(rl.get_model(key)), key
    assert models[3] == _config(MADE_UP[0])
    assert chips == [_chip(key) for key in ("tpu-v5e", "h100-sxm", "b200")]


def _answers(**cells: str) -> dict[str, str]:
    return {f"q6_{part}_answer": source for part, source in cells.items()}


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
]


@pytest.mark.parametrize(("answers", "test", "msg_id"), MISCONCEPTIONS, ids=[m for _, _, m in MISCONCEPTIONS])
def test_each_misconception_gets_its_message(answers: dict[str, str], test: str, msg_id: str, tmp_path: Path) -> None:
    failed = _failures(Q6, answers, tmp_path)
    assert failed.get(test, "").startswith(f"AssertionError: [{msg_id}]"), failed
    others = {check: error for check, error in failed.items() if check != test}
    if msg_id == "q6.not-a-number":  # a string where a count belongs breaks whatever computes with it
        assert all(e.startswith(("TypeError", "AssertionError: [q6.follows-part-a]")) for e in others.values()), others
    elif test == "q6_a_test":  # the later parts build on param_count: they may fail, pointing back at (a)
        assert all(
            re.match(r"AssertionError: \[q6\.(follows-part-a|[b-e]\.hidden-model)\]", e) for e in others.values()
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
    assert _failures(Q6, answers, tmp_path) == {}


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
    assert _failed_checks(memorised, tmp_path / "graded", hidden=True) == {f"q6_{part}_test" for part in "abcde"}
