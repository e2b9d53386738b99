"""Repository-wide pytest set-up.

Notebooks are re-executed by nbval (``--nbval-lax`` in ``pyproject.toml``): the
nbgrader sources under ``solutions/``. The book's chapters are MyST Markdown
notebooks that ``make book`` already executes, failing on any error (``-W`` and
``nb_execution_raise_on_error``); ``make test`` builds the book first, so they
are not run a second time here.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")  # doctests and tests never open a window

pytest_plugins = ["pytester"]  # tests/test_nbval_wiring.py runs pytest on a throw-away tree


# What each test file needs beyond the package, so that a tier can be chosen with ``-m``: ``make test`` runs them all,
# ``make test-fast`` leaves out ``sandbox``, ``slow`` and ``browser``. The nbgrader sources re-executed by nbval start
# a kernel each, so they count as ``slow``.
NEEDS: dict[str, tuple[str, ...]] = {
    "test_book_capstone": ("needs_book",),
    "test_book_learning": ("needs_book",),
    "test_book_cells": ("needs_book",),
    "test_book_numbers": ("needs_book",),
    "test_book_renderings": ("needs_book",),
    "test_book_review": ("needs_book",),
    "test_editions": ("needs_book",),
    "test_editions_style": ("needs_book",),
    "test_launch_notebooks": ("needs_book",),  # its tests that start kernels are marked slow in the module
    "test_browser_book": ("needs_book", "browser", "slow"),
    "test_editions_grading": ("sandbox", "slow"),
    "test_grading_dask": ("sandbox", "slow"),
    "test_grading_fidelity": ("sandbox", "slow"),
    "test_grading_forked": ("sandbox", "slow"),
    "test_grading_judge": ("sandbox", "slow"),
    "test_grading_redteam": ("sandbox", "slow"),
    "test_grading_redteam2": ("sandbox", "slow"),
    "test_grading_room": ("sandbox", "slow"),
    "test_grading_sandbox": ("sandbox", "slow"),
    "test_nbgrader_rooflines": ("sandbox", "slow"),
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with what its file needs (:data:`NEEDS`)."""
    for item in items:
        path = Path(str(item.path))
        marks = ("slow",) if path.suffix == ".ipynb" else NEEDS.get(path.stem, ())
        for mark in marks:
            item.add_marker(mark)
