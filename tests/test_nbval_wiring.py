"""The notebook wiring: pytest re-executes .ipynb and MyST Markdown notebooks, and a broken cell fails."""

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]

MYST = textwrap.dedent(
    """\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    ---
    # A page

    ```{code-cell} ipython3
    import rooflinelib as rl
    assert round(rl.critical_intensity(1.97e14, 8.2e11)) == 240
    ```

    ```{code-cell} ipython3
    assert 1 + 1 == BROKEN
    ```
    """
)


def _write_ipynb(path: Path, sources: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)


@pytest.fixture()
def course_copy(tmp_path: Path) -> Path:
    for name in ("pyproject.toml", "conftest.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    for sub in ("book", "solutions"):
        (tmp_path / sub).mkdir()
    return tmp_path


def _run_pytest(where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "book", "solutions"],
        cwd=where, capture_output=True, text=True, timeout=300,
    )


def test_notebooks_under_book_and_solutions_are_executed(course_copy: Path) -> None:
    (course_copy / "book" / "page.md").write_text(MYST)
    _write_ipynb(course_copy / "solutions" / "ok.ipynb", ["x = 2", "assert x * 21 == 42"])
    result = _run_pytest(course_copy)
    out = result.stdout
    # three cells pass (two in ok.ipynb, the first of page.md); the broken one fails
    assert "1 failed, 3 passed" in out, out
    assert "NameError" in out and "BROKEN" in out, out
    assert result.returncode == 1


def test_plain_markdown_pages_are_not_collected(course_copy: Path) -> None:
    (course_copy / "book" / "notes.md").write_text("# Just prose\n\nNo code here.\n")
    _write_ipynb(course_copy / "solutions" / "ok.ipynb", ["assert True"])
    result = _run_pytest(course_copy)
    assert "1 passed" in result.stdout, result.stdout
    assert result.returncode == 0
