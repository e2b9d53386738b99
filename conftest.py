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
    "test_grading_pipeline": ("sandbox", "slow"),
    "test_grading_preflight": ("sandbox", "slow"),  # runs the grading command on every edition
    "test_grading_redteam": ("sandbox", "slow"),
    "test_grading_redteam2": ("sandbox", "slow"),
    "test_grading_room": ("sandbox", "slow"),
    "test_grading_sandbox": ("sandbox", "slow"),
    "test_nbgrader_rooflines": ("sandbox", "slow"),
}


def pytest_configure(config: pytest.Config) -> None:
    """Refuse a :data:`NEEDS` entry that names no test file (a renamed file would lose its tier unnoticed)."""
    missing = sorted(name for name in NEEDS if not (Path(__file__).parent / "tests" / f"{name}.py").is_file())
    if missing:
        raise pytest.UsageError(f"conftest.py NEEDS names no file tests/<name>.py: {missing}; rename or drop them")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with what its file needs (:data:`NEEDS`), then put the files with slow tests first.

    ``make test`` hands whole files to its two processes (``--dist loadfile``) in this order: the long grading files
    start first and the many short files fill in at the end, so that neither process is left with one long file
    after the other has finished. The order within a file is kept.
    """
    for item in items:
        path = Path(str(item.path))
        marks = ("slow",) if path.suffix == ".ipynb" else NEEDS.get(path.stem, ())
        for mark in marks:
            item.add_marker(mark)
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)  # a stable sort: False (slow) first
