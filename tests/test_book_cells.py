"""The chapters' code cells: what the reader sees runs on its own, plumbing stays hidden,
and each chapter can install what it needs when opened on Colab or Binder.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import jupytext
import pytest
import yaml
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
PAGES = sorted(p for p in (ROOT / "book").glob("*.md") if "kernelspec:" in p.read_text(encoding="utf-8")[:1000])
PLUMBING = ("glue", "sci", "rounded", "myst_nb", "bookvalues.sci", "capacity")


def _cells(page: Path) -> list[tuple[str, set[str]]]:
    nb = jupytext.read(page)
    return [(c.source, set(c.metadata.get("tags", []))) for c in nb.cells if c.cell_type == "code"]


def _python(source: str) -> ast.Module:
    return ast.parse(TransformerManager().transform_cell(source))


def _visible(page: Path) -> list[str]:
    return [src for src, tags in _cells(page) if "remove-cell" not in tags and "remove-input" not in tags]


def _bound(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def unbound_names(sources: list[str]) -> set[str]:
    """Names the cells read but never define (builtins aside), in any order of the cells."""
    trees = [_python(s) for s in sources]
    bound = set(dir(builtins)).union(*(_bound(t) for t in trees))
    used = {n.id for t in trees for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return used - bound


def test_checker_finds_a_name_from_a_hidden_cell():
    assert unbound_names(["for chip, b in gpus.items():\n    print(chip, b)"]) == {"gpus"}
    assert unbound_names(["x = [i for i in range(3)]", "print(x)"]) == set()


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_visible_code_runs_on_what_the_reader_sees(page):
    missing = unbound_names(_visible(page))
    assert not missing, f"{page.name}: shown code uses {sorted(missing)}, defined only in hidden cells"


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_plumbing_is_hidden(page):
    for src in _visible(page):
        tree = _python(src)
        calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        imports = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        shown = (calls | imports | modules) & set(PLUMBING)
        assert not shown, f"{page.name}: a shown cell uses {sorted(shown)}; move it to a hidden cell:\n{src}"


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_plot_styling_is_hidden(page):
    """Figure settings (``plt.rcParams``, ``mpl.rc``) are plumbing too: they belong in a hidden cell."""
    shown = [src for src in _visible(page) if "rcParams" in src or "mpl.rc(" in src]
    assert not shown, f"{page.name}: a shown cell sets plot styling; move it to a hidden cell:\n{shown[0]}"


SHOWN_WIDTH = 78  # characters a code cell shows without scrolling, at the book's page width


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_shown_code_fits_the_page(page):
    long = [line for src in _visible(page) for line in src.splitlines() if len(line) > SHOWN_WIDTH]
    assert not long, f"{page.name}: shown code lines wider than {SHOWN_WIDTH} characters scroll sideways: {long}"


def _launch_pages() -> list[Path]:
    return [p for p in PAGES if _visible(p)]


@pytest.mark.parametrize("page", _launch_pages(), ids=[p.stem for p in _launch_pages()])
def test_first_cell_installs_the_course_when_missing(page):
    source, tags = _cells(page)[0]
    assert "remove-cell" in tags, f"{page.name}: the first code cell should be the hidden install cell"
    tree = _python(source)
    consts = {
        t.id: v.value
        for n in tree.body
        if isinstance(n, ast.Assign)
        for t, v in zip(
            n.targets[0].elts if isinstance(n.targets[0], ast.Tuple) else n.targets,
            n.value.elts if isinstance(n.value, ast.Tuple) else [n.value],
        )
        if isinstance(t, ast.Name) and isinstance(v, ast.Constant)
    }
    repo = CONFIG["repository"]
    assert consts.get("COURSE_URL") == repo["url"], f"{page.name}: COURSE_URL differs from _config.yml's repository.url"
    assert consts.get("COURSE_BRANCH") == repo["branch"], f"{page.name}: COURSE_BRANCH differs from repository.branch"
    tries = [n for n in tree.body if isinstance(n, ast.Try)]
    assert len(tries) == 1, f"{page.name}: the install cell should be one try/except ImportError"
    (guard,) = tries
    tried = {a.name for n in guard.body if isinstance(n, ast.Import) for a in n.names}
    assert "rooflinelib" in tried, f"{page.name}: the install cell should try `import rooflinelib` first"
    assert [ast.unparse(h.type) for h in guard.handlers] == ["ImportError"]
    outside = ast.unparse(ast.Module(body=[n for n in tree.body if n is not guard], type_ignores=[]))
    assert "pip" not in outside, f"{page.name}: installs outside the ImportError branch"
    assert "pip" in ast.unparse(guard.handlers[0]), f"{page.name}: the ImportError branch should %pip install"


def test_the_build_needs_no_install():
    """Where the book is built, the imports the install cell tries already succeed."""
    import importlib.util
    import sys

    sys.path.insert(0, str(ROOT / "book"))
    try:
        assert importlib.util.find_spec("rooflinelib") and importlib.util.find_spec("bookvalues")
    finally:
        sys.path.remove(str(ROOT / "book"))
