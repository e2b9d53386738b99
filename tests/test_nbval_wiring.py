"""The notebook wiring: pytest re-executes the nbgrader sources, the book build executes the chapters,
and in both a broken cell is an error, not a pass."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _write_ipynb(path: Path, sources: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)


@pytest.fixture()
def course(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copy(ROOT / "pyproject.toml", pytester.path / "pyproject.toml")
    for sub in ("rooflinelib", "tests", "book", "solutions"):
        (pytester.path / sub).mkdir()
    return pytester


@pytest.mark.slow  # a pytest of its own, starting a kernel for each notebook
def test_solution_notebooks_are_executed_and_a_broken_cell_fails(course: pytest.Pytester) -> None:
    _write_ipynb(course.path / "solutions" / "ok.ipynb", ["x = 2", "assert x * 21 == 42"])
    _write_ipynb(course.path / "solutions" / "broken.ipynb", ["y = 1", "assert y == BROKEN"])
    result = course.runpytest_subprocess("-p", "no:cacheprovider", "solutions")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*NameError*BROKEN*"])


def test_the_book_build_fails_on_a_broken_cell() -> None:
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["execute"]["execute_notebooks"] in {"cache", "force"}, "chapters must be executed by the build"
    assert config["execute"]["allow_errors"] is False
    assert config["sphinx"]["config"]["nb_execution_raise_on_error"] is True
    book_recipe = re.search(r"^book:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert book_recipe and "jupyter-book build -W" in book_recipe.group(1), (
        "warnings (and errors) must fail `make book`"
    )
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    # directly, or through the stamp `make book` touches, rebuilt when a file the book is built from is newer
    stamp = re.search(r"^\$\(BOOK_STAMP\): \$\(BOOK_INPUTS\)\n\t\$\(MAKE\) book\n", makefile, re.M)
    sources = re.search(r"^BOOK_SOURCES := (.*(?:\\\n.*)*)", makefile, re.M)
    assert book_recipe and book_recipe.group(1).rstrip().endswith("touch $(BOOK_STAMP)")
    assert stamp and sources and {"book", "locales", "rooflinelib", "solutions"} <= set(sources.group(1).split())
    assert re.search(r"^test: (?:.* )?(?:book|\$\(BOOK_STAMP\)) ", makefile, re.M), (
        "`make test` must build (and so execute) the book before running the tests"
    )
