"""Helpers for the nbgrader tests: a throw-away copy of the course and nbgrader runs inside it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "rooflines"
NOTEBOOKS = [
    "q1_int8_matmul",
    "q2_int8_weights",
    "q3_roofline_plot",
    "q4_per_example_weights",
    "q5_h100",
]


def course_env() -> dict[str, str]:
    """Environment for nbgrader subprocesses: this interpreter's scripts (alembic, jupyter) first on PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def copy_course(dest: Path) -> Path:
    """Copy what nbgrader needs (config, sources, release) into dest; return the new course root."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "nbgrader_config.py", dest / "nbgrader_config.py")
    shutil.copytree(ROOT / "solutions", dest / "solutions", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copytree(ROOT / "exercises", dest / "exercises", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return dest


def nbgrader(course: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run one nbgrader command in the course root; never raises on a non-zero exit."""
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course, env=course_env(), capture_output=True, text=True, timeout=timeout, check=False,
    )


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def grade_id(cell: nbformat.NotebookNode) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def is_grade_cell(cell: nbformat.NotebookNode) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade"))


def is_answer_cell(cell: nbformat.NotebookNode) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))


def solution_body(source: str) -> str:
    """An answer cell's instructor source without the solution markers (what a student would type)."""
    return "\n".join(line for line in source.splitlines() if "### BEGIN SOLUTION" not in line
                     and "### END SOLUTION" not in line)


def cell_by_id(nb: nbformat.NotebookNode, gid: str) -> nbformat.NotebookNode:
    for cell in nb.cells:
        if grade_id(cell) == gid:
            return cell
    raise KeyError(gid)
