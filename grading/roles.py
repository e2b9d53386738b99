"""Who runs each cell of a notebook being graded, and the text of a check as the kernel may see it.

The roles are nbgrader's own (:func:`nbgrader.utils.is_grade`, ``is_solution``, ``is_locked``):
the kernel runs the answer cells and the cells the student added; a locked set-up cell runs in both
rooms (the kernel and the judge); a graded check runs in the judge only, its hidden tests never
reaching the kernel.

Example
-------
>>> cell_role({"cell_type": "markdown", "metadata": {}, "source": ""})
'kernel'
"""

from __future__ import annotations

import math
from typing import Any

import nbformat
from nbgrader import utils as nbgrader_utils
from nbgrader.preprocessors import ClearHiddenTests
from traitlets.config import Config

from grading.private_api import remove_hidden_tests

__all__ = [
    "cell_role",
    "judged_order",
    "notebook_without_hidden_tests",
    "place",
    "placed_setups",
    "without_hidden_tests",
]


def cell_role(cell: Any) -> str:
    """Who runs a cell: ``"kernel"``, ``"setup"`` (both rooms: a locked set-up cell) or ``"check"`` (the judge only:
    a test cell).

    The roles are nbgrader's own (:func:`nbgrader.utils.is_grade`, ``is_solution``, ``is_locked``): a grade cell
    that is not a solution is locked whatever its ``locked`` flag says, as nbgrader's documentation example saves
    its test cells with ``"locked": false``. nbgrader has already restored every locked cell's text and flags from
    the gradebook (``OverwriteCells``), and dropped the id of any cell the gradebook does not know, so these cells
    hold the instructor's text whatever the submission contained.

    >>> cell_role({"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "t", "grade": True, "locked": True}}})
    'check'
    >>> cell_role({"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "t", "grade": True, "locked": False}}})
    'check'
    >>> cell_role({"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "s", "locked": True}}})
    'setup'
    """
    cell = nbformat.from_dict(cell)
    if cell.get("cell_type") != "code" or not cell.metadata.get("nbgrader", {}).get("grade_id"):
        return "kernel"
    if nbgrader_utils.is_solution(cell):
        return "kernel"
    if nbgrader_utils.is_grade(cell):
        return "check"
    return "setup" if nbgrader_utils.is_locked(cell) else "kernel"


def without_hidden_tests(source: str, config: Config | None = None) -> str:
    """A check's text without its hidden tests, cut as nbgrader's ``ClearHiddenTests`` (as configured) cuts them.

    >>> without_hidden_tests("a = 1\\n### BEGIN HIDDEN TESTS\\nb = 2\\n### END HIDDEN TESTS\\nc = 3")
    'a = 1\\nc = 3'
    """
    clear = ClearHiddenTests(config=config or Config())
    begin, end = clear.begin_test_delimeter, clear.end_test_delimeter
    kept, hidden = [], False
    for line in source.splitlines():
        if begin in line:
            hidden = True
        elif end in line:
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept)


def notebook_without_hidden_tests(nb: Any, config: Config) -> str:
    """The notebook as the kernel may see it on disk: hidden tests removed (they reach it only as cells run)."""
    copy = nbformat.reads(nbformat.writes(nb), as_version=4)
    clear = ClearHiddenTests(config=config)
    clear.enforce_metadata = False
    for cell in copy.cells:
        if cell.cell_type == "code":
            remove_hidden_tests(clear, cell)
    return str(nbformat.writes(copy))


def judged_order(nb: Any) -> tuple[str, ...]:
    """The grade ids of a notebook's set-up cells and checks, in the notebook's order: where the judge runs each.

    >>> setup = {"cell_type": "code", "source": "", "metadata": {"nbgrader": {"grade_id": "s", "locked": True}}}
    >>> check = {"cell_type": "code", "source": "", "metadata": {"nbgrader": {"grade_id": "t", "grade": True}}}
    >>> judged_order({"cells": [check, setup]})
    ('t', 's')
    """
    return tuple(
        cell["metadata"]["nbgrader"]["grade_id"] for cell in nb["cells"] if cell_role(cell) in ("setup", "check")
    )


def place(grade_id: str | None, order: dict[str, int], *, check: bool) -> float:
    """Where a cell of the notebook being graded comes among the instructor's set-up cells and checks.

    A cell the instructor's order does not hold comes after every set-up cell when it is a check (all of them run
    before it: nothing it reads is then looked up in the student's kernel), and before every one otherwise.

    >>> place("t", {"s": 0, "t": 1}, check=True), place("x", {}, check=True), place("x", {}, check=False)
    (1, inf, -inf)
    """
    if grade_id is not None and grade_id in order:
        return order[grade_id]
    return math.inf if check else -math.inf


def placed_setups(setups: tuple[Any, ...], order: dict[str, int]) -> list[tuple[float, str]]:
    """The instructor's set-up cells, each ``(grade id, text)`` (or a text alone), with their places, in order.

    A set-up cell whose place is unknown (a text alone, or an id the order lacks) is placed before every check and
    set-up cell, so that it runs before the first of them, as it would if the order were unknown.

    >>> placed_setups((("b", "B = 2"), ("a", "A = 1"), "C = 3"), {"a": 0, "t": 1, "b": 2})
    [(-1, 'C = 3'), (0, 'A = 1'), (2, 'B = 2')]
    """
    placed = []
    for setup in setups:
        grade_id, source = (None, setup) if isinstance(setup, str) else setup
        placed.append((order.get(grade_id, -1) if grade_id is not None else -1, source))
    return sorted(placed, key=lambda item: item[0])
