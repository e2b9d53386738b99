"""Autograde a whole class: plan, run, judge, land, with the running farmed out notebook by notebook.

- **plan** (:mod:`grading.plan`): nbgrader's own steps in this process find the notebooks
  to grade and sanitize each into a self-contained task;
- **run** (:mod:`grading.execute`), on a worker: the notebook's kernel in the sandbox,
  bounded by its room (:mod:`grading.room`);
- **judge** (:mod:`grading.judge`), on the same worker, outside the sandbox: every graded
  check, asking the kernel only for plain data;
- **land** (:mod:`grading.land`), back in this process, the gradebook's only writer:
  grades saved exactly as ``nbgrader autograde`` saves them.

A notebook that fails at any step costs that notebook only: it gets no autograded version,
scores 0 and is listed.

Example
-------
From the course root (where ``nbgrader_config.py`` is)::

    python -m grading autograde rooflines --workers 4
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import uuid
from collections.abc import Iterator
from typing import Any, TextIO

from distributed import as_completed
from nbconvert.writers.files import FilesWriter
from nbgrader.api import Gradebook
from nbgrader.converters import NbGraderException

from grading.cluster import connect, submit
from grading.execute import run_task
from grading.land import Landing, Summary
from grading.plan import CheckedSchema, Grader, LeftOut, Planned, Refused, guard, load_app, make_plan, tasks
from grading.preflight import Finding, preflight
from grading.private_api import use_schema_validator
from grading.progress import Progress
from grading.sandbox import Limits, default_bwrap, probe
from grading.tasks import one_line

__all__ = ["AssignmentFails", "GradingError", "Summary", "autograde", "check"]


class GradingError(Exception):
    """A problem with the whole run (no such assignment, no submissions, no cluster), not with one notebook."""


class AssignmentFails(GradingError):
    """The assignment fails its preflight (:mod:`grading.preflight`): its findings, one per failing check."""

    def __init__(self, assignment: str, findings: list[Finding]) -> None:
        self.findings = findings
        lines = "".join(f"\n  {finding.line()}" for finding in findings)
        super().__init__(
            f"the assignment {assignment} fails its own check (python -m grading check {assignment}; "
            f"--no-check grades anyway): {len(findings)} problems{lines}"
        )


@contextlib.contextmanager
def _cwd(path: str) -> Iterator[None]:
    here = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(here)


def _sandbox(unsafe: bool, bwrap: str | None, limits: Limits, stream: TextIO | None) -> str | None:
    """The bubblewrap to run kernels with (checked once, here), or None after the ``--unsafe`` warning."""
    if unsafe:
        print(
            "warning: --unsafe: student code runs with the grader's rights, files and network, "
            "bounded only by --output, --data and --wall",
            file=stream or sys.stderr,
        )
        return None
    bwrap = bwrap or default_bwrap()
    reason = probe(bwrap, limits)
    if reason is not None:
        raise GradingError(f"no sandbox for student code: {reason}; or pass --unsafe")
    return bwrap


def _grader(assignment: str, nbgrader_args: list[str], force: bool) -> tuple[Grader, Any]:
    """nbgrader's application and converter for the assignment, with every instructor setting loaded."""
    use_schema_validator(CheckedSchema())
    app = load_app(assignment, nbgrader_args)
    app.log.setLevel(logging.WARNING)
    grader = Grader(coursedir=app.coursedir, parent=app)
    grader.force = force
    guard(grader)
    return grader, app


def _find_submissions(grader: Grader, assignment: str) -> None:
    """nbgrader's search for the submissions (run in the course root); :class:`GradingError` if there are none."""
    _known(grader, assignment)
    try:
        grader.init_notebooks()
    except NbGraderException as err:
        raise GradingError(f"no submissions to grade ({err})") from err
    _exporter(grader)


def _exporter(grader: Grader) -> None:
    grader.writer = FilesWriter(parent=grader, config=grader.config)
    grader.exporter = grader.exporter_class(parent=grader, config=grader.config)
    # validate each notebook once after all preprocessors rather than after each one: same checks, less time
    grader.exporter.optimistic_validation = True


def _known(grader: Grader, assignment: str) -> None:
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        if assignment not in {a.name for a in gb.assignments}:
            raise GradingError(
                f"the gradebook has no assignment '{assignment}': run `nbgrader generate_assignment {assignment}` first"
            )


def check(
    assignment: str,
    *,
    workers: int,
    scheduler: str | None = None,
    timeout: int | None = None,
    nbgrader_args: list[str] | None = None,
    stream: TextIO | None = None,
    limits: Limits | None = None,
    bwrap: str | None = None,
    unsafe: bool = False,
    warm: bool = True,
) -> list[Finding]:
    """The preflight of an assignment (:mod:`grading.preflight`): its findings, none when it passes."""
    limits = limits or Limits()
    bwrap = _sandbox(unsafe, bwrap, limits, stream)
    grader, app = _grader(assignment, list(nbgrader_args or []), force=False)
    with _cwd(grader.coursedir.root):
        _known(grader, assignment)
        _exporter(grader)
        with contextlib.ExitStack() as stack:

            def cluster() -> Any:  # started only when the preflight has to run
                try:
                    return stack.enter_context(connect(scheduler, workers))
                except OSError as err:
                    raise GradingError(f"cannot reach the Dask scheduler at {scheduler} ({one_line(err)})") from err

            return preflight(
                cluster, grader, app, assignment, bwrap=bwrap, limits=limits, warm=warm, timeout=timeout, stream=stream
            )


def autograde(
    assignment: str,
    *,
    workers: int,
    scheduler: str | None = None,
    force: bool = False,
    timeout: int | None = None,
    nbgrader_args: list[str] | None = None,
    stream: TextIO | None = None,
    limits: Limits | None = None,
    bwrap: str | None = None,
    unsafe: bool = False,
    warm: bool = True,
    preflight_first: bool = True,
) -> Summary:
    """Grade every submission of an assignment; see the module docstring.

    Kernels run in the sandbox started by ``bwrap`` (default: :func:`default_bwrap`; checked
    once, before anything is graded: :class:`GradingError` when it cannot work here), bounded
    by ``limits``; ``unsafe=True`` runs them unconfined, after a warning. With ``warm`` (the default) each
    sandboxed kernel is forked into its sandbox from a warm parent (:mod:`grading.forked`). With
    ``preflight_first`` (the default) the assignment's preflight runs first (:mod:`grading.preflight`), on the same
    cluster, and a failing one stops the run before anything is graded (:class:`AssignmentFails`).
    """
    limits = limits or Limits()
    bwrap = _sandbox(unsafe, bwrap, limits, stream)
    grader, app = _grader(assignment, list(nbgrader_args or []), force)
    with _cwd(grader.coursedir.root), contextlib.ExitStack() as stack:
        _find_submissions(grader, assignment)
        try:
            client = stack.enter_context(connect(scheduler, workers))
        except OSError as err:
            raise GradingError(f"cannot reach the Dask scheduler at {scheduler} ({one_line(err)})") from err
        if preflight_first:  # before anything of the class is touched (--force removes autograded notebooks)
            findings = preflight(
                client, grader, app, assignment, bwrap=bwrap, limits=limits, warm=warm, timeout=timeout, stream=stream
            )
            if findings:
                raise AssignmentFails(assignment, findings)
        plan = make_plan(grader, app, assignment, timeout)
        shown_timeout = timeout if timeout is not None else app.config.get("Execute", {}).get("timeout", 30)
        progress = Progress(plan.count, stream)
        landing = Landing(grader, assignment, progress, shown_timeout)
        landing.summary.skipped = plan.skipped
        if plan.skipped:
            progress.message(f"{plan.skipped} notebooks already graded are kept (--force grades them again)")
        running = as_completed(with_results=False)
        pending: dict[Any, dict[str, Any]] = {}

        def drain(block: bool) -> None:
            while pending and (block or running.has_ready()):
                for future in running.next_batch(block=True):
                    try:
                        result: Any = future.result()
                    except Exception as err:  # noqa: BLE001 - the task was lost on the cluster
                        result = err
                    landing.land(result, pending.pop(future))

        for item in tasks(grader, plan, bwrap, limits, warm):
            if isinstance(item, Refused):
                landing.refuse(item.student, item.notebook, item.reason)
            elif isinstance(item, LeftOut):
                landing.leave_out(item.student, item.path, item.reason)
            elif isinstance(item, Planned):
                key = f"grade-{item.task.student}-{item.task.notebook}-{uuid.uuid4().hex[:8]}"
                future = submit(client, run_task, item.task, key=key)
                pending[future] = item.resources
                running.add(future)
            else:
                landing.skip(item.student, item.notebook)
            drain(block=False)
        drain(block=True)
        return landing.close(plan)
