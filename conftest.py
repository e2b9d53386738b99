"""Repository-wide pytest set-up.

nbval re-executes notebooks, but only ``.ipynb`` files. Chapters written as
MyST Markdown notebooks (``.md`` files whose front matter names a Jupyter
kernel) are read with jupytext and handed to nbval the same way, so every
executable page of the book is re-run by ``pytest``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import jupytext
import nbformat
import pytest
from nbval.plugin import IPyNbFile

import matplotlib

matplotlib.use("Agg")  # doctests and tests never open a window


def _is_myst_notebook(path: Path) -> bool:
    if path.suffix != ".md":
        return False
    head = path.read_text(encoding="utf-8")[:2000]
    return head.startswith("---") and "kernelspec:" in head


class MystNotebookFile(IPyNbFile):
    """An nbval collector for a MyST Markdown notebook."""

    def collect(self) -> Any:
        def read(path: str, as_version: int = 4, **_: Any) -> nbformat.NotebookNode:
            return jupytext.read(path, as_version=as_version)

        with mock.patch.object(nbformat, "read", read):
            yield from super().collect()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    opt = parent.config.option
    if (opt.nbval or opt.nbval_lax) and _is_myst_notebook(file_path):
        return MystNotebookFile.from_parent(parent, path=file_path)
    return None
