"""The grading pipeline around the judge: where set-up cells run, and the files a notebook reads and writes.

Each case runs a small notebook in the sandbox (``grading.execute.execute``), as the grading command's workers do.
"""

from __future__ import annotations

import nbformat
import pytest
from grading_support import ROOT

from grading.execute import Task, execute
from grading.sandbox import default_bwrap, probe

pytestmark = pytest.mark.skipif(probe(default_bwrap()) is not None, reason="no sandbox on this machine")

CONFIG = (("nbgrader_config.py", (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")),)


def _cell(source: str, grade_id: str | None = None, *, role: str = "kernel", points: int = 1) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if role != "kernel":
        meta = {"grade_id": grade_id, "locked": True, "schema_version": 3, "solution": False, "task": False}
        meta["grade"] = role == "check"
        if role == "check":
            meta["points"] = points
        cell.metadata["nbgrader"] = meta
    return cell


def _run(cells: list[nbformat.NotebookNode], **task: object) -> dict[str, list]:
    """Execute a notebook of ``cells``; the outputs of each graded check, by grade id."""
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    defaults: dict = {"files": {}, "config_files": CONFIG, "cli_config": {"Execute": {"timeout": 30}}}
    defaults.update(task)
    outcome = execute(Task("ada", "hw", "nb", nbformat.writes(nb), bwrap=default_bwrap(), **defaults))  # type: ignore[arg-type]
    assert outcome.error is None and outcome.executed, outcome
    executed = nbformat.reads(outcome.executed, as_version=4)
    return {
        c.metadata["nbgrader"]["grade_id"]: c.outputs
        for c in executed.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    }


def _failed(outputs: dict[str, list]) -> dict[str, str]:
    return {gid: o["evalue"] for gid, outs in outputs.items() for o in outs if o["output_type"] == "error"}


SETUPS = (("s1", "LIMIT = 1"), ("s2", "LIMIT = 2"))
ORDER = ("s1", "c1", "s2", "c2")


def test_a_set_up_cell_runs_in_the_judge_at_its_place_among_the_checks() -> None:
    """The kernel sees ``LIMIT = 1`` at the first check and ``LIMIT = 2`` at the second; so must the judge."""
    cells = [
        _cell("LIMIT = 1", "s1", role="setup"),
        _cell("assert LIMIT == 1, 'the first check sees the first value'", "c1", role="check"),
        _cell("LIMIT = 2", "s2", role="setup"),
        _cell("assert LIMIT == 2, 'the second check sees the second value'", "c2", role="check"),
    ]
    assert _failed(_run(cells, setups=SETUPS, order=ORDER)) == {}


def test_a_set_up_cell_the_submission_lacks_still_runs_before_the_checks_after_it() -> None:
    """A submission without the first set-up cell, binding the name itself, gets the instructor's value in the
    judge, at the instructor's place."""
    cells = [
        _cell("LIMIT = 99  # the student's own, in an added cell"),
        _cell("assert LIMIT == 1, 'the instructor s value'", "c1", role="check"),
        _cell("LIMIT = 2", "s2", role="setup"),
        _cell("assert LIMIT == 2, 'the second value'", "c2", role="check"),
    ]
    assert _failed(_run(cells, setups=SETUPS, order=ORDER)) == {}
