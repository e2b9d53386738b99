"""Question 6's instructor notebook, read by the tests: its hidden checks' functions and helpers."""

from __future__ import annotations

import ast
import re

import nbformat
from grading_support import ASSIGNMENT, ROOT, grade_id

Q6 = "q6_serving_a_model"
SOURCE = ROOT / "solutions" / ASSIGNMENT / f"{Q6}.ipynb"
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)


def hidden_function(gid: str) -> ast.FunctionDef:
    """The function a test cell's hidden block defines and calls (``_q6_hidden_a`` ...)."""
    cell = next(c for c in nbformat.read(SOURCE, as_version=4).cells if grade_id(c) == gid)
    block = HIDDEN.search(cell.source).group(1)  # type: ignore[union-attr]
    tree = ast.parse(block)
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert len(functions) == 1, f"{gid}: the hidden block should define one function"
    return functions[0]


def hidden_helpers() -> dict[str, object]:
    """What the hidden checks define before they compare: their cases and counts (as _hidden_cases, _hidden_counts)."""
    inner = [n for n in hidden_function("q6_a_test").body if isinstance(n, ast.FunctionDef)]
    namespace: dict[str, object] = {}
    exec(compile(ast.Module(body=inner, type_ignores=[]), "<hidden>", "exec"), namespace)  # noqa: S102 (our own notebook)
    return {"_hidden_cases": namespace["cases"], "_hidden_counts": namespace["counts"]}
