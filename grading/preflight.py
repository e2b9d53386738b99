"""The preflight: ``python -m grading check ASSIGNMENT`` grades the instructor's own answers before any student's.

Two things can make a check grade wrongly for every student at once, and neither shows until a
class has been graded: a check that the reference answers themselves fail under the grader (the
judge runs checks outside the kernel, so a check that passes in Jupyter may not pass here), and a
check written in an idiom the judge cannot decide outside the kernel. The preflight finds both.

1. **The reference answers, graded.** Each source notebook (``source/ASSIGNMENT/*.ipynb``, the
   answers included) is handed in as a submission and goes through the whole pipeline: nbgrader's
   sanitizing (locked cells restored from the gradebook), the sandboxed kernel, the judge, nbgrader's
   scoring (:func:`nbgrader.utils.determine_grade`). Every autograded check must get full marks.
2. **A lint of every check** (:func:`lint`), each finding naming the notebook, the grade id and the
   fix: a check that seeds a random generator (``np.random.seed(0)``) and calls the student's code
   (the seed is the grader's, while the student's function draws in the kernel); a check reading a
   name that neither a set-up cell, an earlier check nor any answer defines (it would be read from
   whatever the kernel holds); and whatever the judge itself reports as beyond it (a ``Judge``
   method ``cannot_judge(source)``, or a check's error named in :data:`CANNOT_JUDGE`).

``python -m grading autograde`` runs the preflight first and refuses to grade a class whose
assignment fails it (``--no-check`` skips it). A pass is remembered (:func:`cache_folder`) under a
digest of everything it depends on: the grading package's code, the source notebooks, the shipped
files, the gradebook's cells of the assignment, the instructor's configuration and the limits; the
next run with the same digest does not run it again.

What was taken from elsewhere: Otter-Grader's ``otter assign`` runs the tests of an assignment
against its solution notebook when it builds the assignment, and stops on a failing test unless
told not to (``--no-run-tests``): here the same, with the reference answers graded by the grader
students get, and ``--no-check``. PrairieLearn runs the reference solution through the same
external grader as the students' submissions, so that what the grader can decide is tested on the
answer key: here the answers go through the sandbox and the judge, not through a plain kernel.

Example
-------
>>> nb = {"cells": [
...     {"cell_type": "code", "source": "def f():\\n    return 1", "metadata": {"nbgrader": {
...         "grade_id": "a", "solution": True, "grade": False, "locked": False}}},
...     {"cell_type": "code", "source": "import numpy as np\\nnp.random.seed(0)\\nassert f() == g", "metadata": {
...         "nbgrader": {"grade_id": "t", "grade": True, "solution": False, "locked": True, "points": 1}}}]}
>>> [(f.grade_id, f.problem.split(" (")[0].split(",")[0]) for f in lint(nb, "q1")]
[('t', 'seeds a random generator in the grader'), ('t', 'reads g')]
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import hashlib
import json
import os
import sys
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import nbformat
from nbgrader import utils as nbgrader_utils
from nbgrader.api import Gradebook

from grading.judge import _bound, _bound_at_top, _read  # the judge's own reading of which names a cell binds
from grading.roles import cell_role
from grading.tasks import Outcome, Task, one_line

__all__ = ["CANNOT_JUDGE", "Finding", "cache_folder", "lint", "preflight", "scored"]

CANNOT_JUDGE = ("CannotJudge", "Unjudgeable")  # error names a check's output may carry when the judge cannot decide it
SEEDS = {"seed", "manual_seed", "set_seed"}  # methods that seed a global generator (random, NumPy, PyTorch...)
STUDENT = "source-answers"  # the student id the reference answers are handed in as


@dataclass(frozen=True)
class Finding:
    """One thing wrong with an assignment: where (notebook, grade id), what, and how to fix it."""

    notebook: str
    grade_id: str
    problem: str
    fix: str = ""

    def line(self) -> str:
        """The finding in one line.

        >>> Finding("q1", "q1_a", "scores 0 of 2", "fix the check").line()
        'q1 q1_a: scores 0 of 2 (fix the check)'
        """
        return f"{self.notebook} {self.grade_id}: {self.problem}" + (f" ({self.fix})" if self.fix else "")


def _seeds(tree: ast.AST) -> list[str]:
    """The calls in a check that seed a global random generator (``np.random.seed(0)``, ``random.seed()``...)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in SEEDS:
            found.append(ast.unparse(func))
        elif isinstance(func, ast.Name) and func.id in SEEDS:
            found.append(func.id)
    return found


def _called(tree: ast.AST) -> set[str]:
    return {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def lint(nb: Any, notebook: str) -> list[Finding]:
    """The checks of an instructor's notebook written in idioms the judge cannot decide outside the kernel."""
    from grading.judge import Judge

    cells = [c for c in nb["cells"] if c.get("cell_type") == "code"]
    answers: set[str] = set()  # what the answers (and the other cells the kernel runs) define, anywhere
    for cell in cells:
        if cell_role(cell) == "kernel":
            tree = _parse("".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"])
            if tree is not None:
                answers |= _bound_at_top(tree)
    known = set(dir(builtins))  # what the judge has by the time each check runs
    findings = []
    for cell in cells:
        role = cell_role(cell)
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        tree = _parse(source)
        if role == "setup" and tree is not None:
            known |= _bound_at_top(tree)
        if role != "check" or tree is None:
            continue
        gid = cell["metadata"]["nbgrader"]["grade_id"]
        from_kernel = _read(tree) - _bound(tree) - known
        seeded = _seeds(tree)
        if seeded and _called(tree) & from_kernel:
            findings.append(
                Finding(
                    notebook,
                    gid,
                    f"seeds a random generator in the grader ({', '.join(seeded)}) and calls the student's "
                    f"{', '.join(sorted(_called(tree) & from_kernel))}, which draws in the kernel",
                    "give the student's function a seed or a numpy Generator to draw from, and draw the check's "
                    "own data from np.random.default_rng(SEED)",
                )
            )
        starred = "*" in known | answers | _bound(tree)  # `from m import *`: names this lint cannot list
        for name in [] if starred else sorted(from_kernel - answers):
            findings.append(
                Finding(
                    notebook,
                    gid,
                    f"reads {name}, which no answer, set-up cell or earlier check defines (the judge would take "
                    "whatever the student's kernel holds)",
                    f"define {name} in a locked set-up cell, or read it from an answer",
                )
            )
        for idiom, fix in Judge.cannot_judge(source, answers):
            if not seeded or "seed a random generator" not in idiom:  # a seeded check is named above, with its fix
                findings.append(Finding(notebook, gid, idiom, fix))
        known |= _bound_at_top(tree)
    return findings


def scored(notebook: str, outcome: Outcome) -> list[Finding]:
    """The checks of an executed source notebook that did not get full marks (or why it was not graded at all)."""
    if outcome.error is not None or outcome.executed is None:
        return [Finding(notebook, "(notebook)", f"not graded: {outcome.error}", "run it in Jupyter to see why")]
    findings = []
    for cell in nbformat.reads(outcome.executed, as_version=4).cells:
        if cell.cell_type != "code" or not nbgrader_utils.is_grade(cell) or nbgrader_utils.is_solution(cell):
            continue
        score, top = nbgrader_utils.determine_grade(cell)
        if score is not None and score >= top:
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        gid = cell.metadata["nbgrader"]["grade_id"]
        if errors and errors[-1].get("ename") in CANNOT_JUDGE:
            findings.append(Finding(notebook, gid, f"cannot be judged: {errors[-1].get('evalue')}", "rewrite it"))
            continue
        why = ""
        if errors:
            lines = str(errors[-1].get("evalue", "")).splitlines()
            why = f"{errors[-1].get('ename')}: {lines[0] if lines else ''}".rstrip(": ")
        findings.append(
            Finding(
                notebook,
                gid,
                f"the reference answers score {score or 0:g} of {top:g}" + (f" ({why})" if why else ""),
                "the check fails its own answers under the grader: fix the check or the answer",
            )
        )
    return findings


def cache_folder() -> Path:
    """Where passed preflights are remembered: ``$XDG_CACHE_HOME/roofline-grading`` (``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "roofline-grading"


def _digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


def _gradebook(db_url: str, assignment: str, names: list[str]) -> tuple[bytes, dict[str, tuple[tuple[str, str], ...]]]:
    """In one gradebook session: what the gradebook holds of the notebooks' cells (for the digest), and each
    notebook's set-up cells (as :func:`grading.plan.setup_cells` gives them); a notebook it lacks has none."""
    rows: list[tuple[Any, ...]] = []
    setups: dict[str, tuple[tuple[str, str], ...]] = {}
    with Gradebook(db_url) as gb:
        for name in names:
            try:
                nb = gb.find_notebook(name, assignment)
            except Exception:  # noqa: BLE001 - nbgrader's MissingEntry: the notebook is refused below
                rows.append((name, None))
                continue
            not_setup = {c.name for c in nb.grade_cells} | {c.name for c in nb.solution_cells}
            rows += [(name, c.name, c.cell_type, c.locked, c.source) for c in nb.source_cells]
            rows += [(name, c.name, c.max_score) for c in nb.grade_cells]
            setups[name] = tuple(
                (c.name, c.source)
                for c in nb.source_cells
                if c.locked and c.cell_type == "code" and c.name not in not_setup
            )
    return json.dumps(sorted(map(str, rows))).encode(), setups


@dataclass
class _Prepared:
    """What the preflight of an assignment depends on, and its digest."""

    digest: str
    paths: list[Path]
    shipped: dict[str, bytes]
    config_files: tuple[tuple[str, str], ...]
    cli: dict[str, Any]
    setups: dict[str, tuple[tuple[str, str], ...]]


def _prepare(grader: Any, app: Any, assignment: str, bwrap: str | None, limits: Any, timeout: Any) -> _Prepared:
    """What the preflight depends on (source notebooks, shipped files, the gradebook's cells, configuration, limits,
    the grading package's code), read once, and its digest."""
    from grading.plan import cli_config, shipped_files

    source = Path(grader.coursedir.format_path(grader.coursedir.source_directory, ".", assignment))
    paths = sorted(source.glob("*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no source notebooks in {source}")
    shipped = shipped_files(grader, assignment)
    config_files = tuple((Path(p).name, Path(p).read_text(encoding="utf-8")) for p in app.loaded_config_files)
    cli = cli_config(app, timeout)
    cells, setups = _gradebook(grader.coursedir.db_url, assignment, [p.stem for p in paths])
    package = sorted(Path(__file__).parent.glob("*.py"))
    parts = [p.read_bytes() for p in package] + [p.name.encode() + p.read_bytes() for p in paths]
    parts += [k.encode() + v for k, v in sorted(shipped.items())] + [t.encode() for _, t in config_files]
    parts += [json.dumps(cli, sort_keys=True, default=str).encode(), repr(limits).encode(), str(bwrap).encode()]
    parts.append(cells)
    return _Prepared(_digest(parts), paths, shipped, config_files, cli, setups)


def _tasks(
    grader: Any, assignment: str, prepared: _Prepared, bwrap: str | None, limits: Any, warm: bool
) -> tuple[list[Task], list[Finding]]:
    """The source notebooks as tasks, each sanitized as a submission, and the lint of their checks."""
    from grading.plan import answer_names, instructor_order

    tasks, findings = [], []
    top = grader.coursedir.format_path(grader.coursedir.submitted_directory, STUDENT, assignment)
    for path in prepared.paths:
        data = path.read_bytes()
        findings += lint(nbformat.reads(data.decode("utf-8"), as_version=4), path.stem)
        try:
            if path.stem not in prepared.setups:
                raise LookupError(f"the gradebook has no notebook {path.stem} in {assignment}")
            text, _ = grader.sanitize(os.path.join(top, path.name), data, path.stat().st_mtime)
        except Exception as err:  # noqa: BLE001 - e.g. a notebook the gradebook does not know
            fix = f"run nbgrader generate_assignment {assignment}"
            findings.append(Finding(path.stem, "(notebook)", f"cannot be handed in: {one_line(err)}", fix))
            continue
        task = Task(STUDENT, assignment, path.stem, text, prepared.shipped, prepared.config_files, prepared.cli, bwrap)
        order = instructor_order(grader, assignment, path.stem)
        names = answer_names(grader, assignment, path.stem)
        tasks.append(
            dataclasses.replace(
                task, limits=limits, setups=prepared.setups[path.stem], warm=warm, order=order, student_names=names
            )
        )
    return tasks, findings


def preflight(
    client: Any,
    grader: Any,
    app: Any,
    assignment: str,
    *,
    bwrap: str | None,
    limits: Any,
    warm: bool = True,
    timeout: int | None = None,
    stream: TextIO | None = None,
) -> list[Finding]:
    """Grade the source notebooks on the cluster of ``client`` (or of ``client()``, called only when they must run)
    and lint their checks; the findings, none when the assignment passes (a pass is remembered, and then not run
    again)."""
    from grading.cluster import submit
    from grading.execute import run_task

    prepared = _prepare(grader, app, assignment, bwrap, limits, timeout)
    stamp = cache_folder() / f"check-{prepared.digest}.json"
    if stamp.exists():  # this very assignment, graded by this very code, passed
        return []
    tasks, findings = _tasks(grader, assignment, prepared, bwrap, limits, warm)
    if callable(client):
        client = client()
    out = stream or sys.stderr
    print(f"Checking {assignment}: grading its {len(tasks)} source notebooks' own answers", file=out)
    futures = [
        (task.notebook, submit(client, run_task, task, key=f"check-{task.notebook}-{uuid.uuid4().hex[:8]}"))
        for task in tasks
    ]
    for notebook, future in futures:
        try:
            outcome = Outcome(**future.result())
        except Exception as err:  # noqa: BLE001 - the task was lost on the cluster
            outcome = Outcome(STUDENT, notebook, error=f"{type(err).__name__}: {err}")
        findings += scored(notebook, outcome)
    if not findings:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(json.dumps({"assignment": assignment, "passed": True}), encoding="utf-8")
    return findings
