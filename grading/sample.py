"""Sample classes built from an assignment's own notebooks, for rehearsing and benchmarking the grading.

A student is made from the release notebooks: either left blank, or with every answer cell
holding the instructor's solution (the markers dropped), then optionally altered per notebook.

Example
-------
>>> reference_answer("### BEGIN SOLUTION\\nx = 1\\n### END SOLUTION")
'x = 1'
"""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import nbformat

#: A change made to one notebook of one student (it edits the notebook in place).
Alteration = Callable[[nbformat.NotebookNode], None]


def reference_answer(source: str) -> str:
    """An answer cell's instructor source without the solution markers (what a good student would type)."""
    return "\n".join(
        line for line in source.splitlines() if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
    )


def _nbgrader(cell: nbformat.NotebookNode) -> dict[str, Any]:
    return dict(cell.get("metadata", {}).get("nbgrader", {}))


def answer_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The cells a student writes in (nbgrader ``solution`` cells), in order."""
    return [cell for cell in nb.cells if _nbgrader(cell).get("solution")]


def solved(release: nbformat.NotebookNode, source: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of the release notebook with every answer cell filled in from the source notebook."""
    answers = {_nbgrader(c).get("grade_id"): reference_answer(c.source) for c in answer_cells(source)}
    nb = copy.deepcopy(release)
    for cell in answer_cells(nb):
        cell.source = answers[_nbgrader(cell).get("grade_id")]
    return nb


def write_student(
    course: Path,
    assignment: str,
    student: str,
    *,
    blank: bool = False,
    alter: Mapping[str, Alteration] | None = None,
    raw: Mapping[str, str] | None = None,
) -> Path:
    """Write one student's submission under ``submitted/`` of the course and return its folder.

    ``alter`` maps a notebook name (no extension) to a change applied to it; ``raw`` maps a
    notebook name to text written as the file instead of a notebook (a corrupt upload).
    """
    folder = course / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    for path in sorted((course / "exercises" / assignment).glob("*.ipynb")):
        name = path.stem
        target = folder / path.name
        if raw and name in raw:
            target.write_text(raw[name], encoding="utf-8")
            continue
        release = nbformat.read(path, as_version=4)
        nb = (
            release
            if blank
            else solved(release, nbformat.read(course / "solutions" / assignment / path.name, as_version=4))
        )
        if alter and name in alter:
            alter[name](nb)
        nbformat.write(nb, target)
    return folder


def replace_last_answer(code: str) -> Alteration:
    """An alteration that puts ``code`` in the notebook's last answer cell."""

    def change(nb: nbformat.NotebookNode) -> None:
        answer_cells(nb)[-1].source = code

    return change


def write_class(course: Path, assignment: str, n_students: int) -> list[str]:
    """A class of ``n_students``: mostly correct, some blank, some with a misconception, return their ids.

    Every fifth student hands in blank notebooks, every fifth (offset 2) ends each notebook
    with a failing check, and the others hand in the reference answers.
    """
    names = [f"student{i:03d}" for i in range(n_students)]
    for i, student in enumerate(names):
        if i % 5 == 1:
            write_student(course, assignment, student, blank=True)
        elif i % 5 == 3:
            notebooks = sorted(p.stem for p in (course / "exercises" / assignment).glob("*.ipynb"))
            write_student(
                course,
                assignment,
                student,
                alter={
                    nb: replace_last_answer(
                        f"raise AssertionError('[{nb.split('_')[0]}.sample-slip] a sample mistake')"
                    )
                    for nb in notebooks
                },
            )
        else:
            write_student(course, assignment, student)
    return names


def write_course(root: Path, dest: Path, assignment: str, n_students: int, env: Mapping[str, str]) -> list[str]:
    """A sample course in ``dest``: ``root``'s nbgrader configuration and notebooks, the assignment
    released with ``nbgrader generate_assignment`` (run with ``env``), and :func:`write_class`'s
    class of ``n_students``; return their ids."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(root / "nbgrader_config.py", dest)
    for folder in ("solutions", "exercises"):
        shutil.copytree(root / folder, dest / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--force"],
        cwd=dest,
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader generate_assignment {assignment} failed:\n{done.stderr[-3000:]}")
    return write_class(dest, assignment, n_students)
