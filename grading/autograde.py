"""Autograde a whole class: nbgrader's own steps, with execution farmed out notebook by notebook.

This process does everything that touches the gradebook or the course files, exactly as
``nbgrader autograde`` does (submission records, sanitizing, saving grades, late penalties,
writing ``autograded/``), so it is the gradebook's only writer. Only the execution of each
sanitized notebook is shipped to a worker (:mod:`grading.execute`). A notebook that fails at
any step costs that notebook only: it gets no autograded version, scores 0 and is listed.

Example
-------
From the course root (where ``nbgrader_config.py`` is)::

    python -m grading autograde rooflines --workers 4
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import re
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import jsonschema
import nbformat
from distributed import as_completed
from nbconvert.preprocessors import Preprocessor
from nbconvert.writers.files import FilesWriter
from nbgrader import utils
from nbgrader.api import Gradebook
from nbgrader.apps.autogradeapp import AutogradeApp
from nbgrader.converters import Autograde, NbGraderException
from nbgrader.nbgraderformat import common as nbgrader_format
from traitlets import Any as AnyTrait

from grading import problems as problem_list
from grading.cluster import connect, submit
from grading.execute import Outcome, Task, executors, one_line, run_task
from grading.problems import Problem
from grading.progress import Progress
from grading.sandbox import Limits, default_bwrap, probe


class _CheckedSchema:
    """``jsonschema.validate`` with each schema checked once rather than once per cell (same errors, less time).

    nbgrader validates every cell's metadata twice per notebook, and ``jsonschema.validate``
    re-checks the schema itself on every call; in a grading run that is a third of this
    process's time.
    """

    def __init__(self) -> None:
        self._validators: dict[int, tuple[dict[str, Any], Any]] = {}

    def validate(self, instance: Any, schema: dict[str, Any]) -> None:
        cached = self._validators.get(id(schema))
        if cached is None or cached[0] is not schema:
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            cached = self._validators[id(schema)] = (schema, cls(schema))
        error = jsonschema.exceptions.best_match(cached[1].iter_errors(instance))
        if error is not None:
            raise error


class Executed(Preprocessor):
    """Stands in for the execute preprocessor: hands over the notebook a worker executed."""

    notebook = AnyTrait()

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        return nbformat.from_dict(self.notebook), resources


class Grader(Autograde):
    """nbgrader's Autograde converter, driven one notebook at a time instead of one student at a time."""

    executed = AnyTrait(None, allow_none=True)
    executor_positions: set[int] | None = None

    def _init_preprocessors(self) -> None:
        if self._sanitizing or self.executed is None:
            super()._init_preprocessors()
            return
        self.exporter._preprocessors = []
        if self.executor_positions is None:
            self.executor_positions = {index for index, _ in executors(self.config)}
        positions = self.executor_positions
        for index, pp in enumerate(self.autograde_preprocessors):
            if index in positions:
                self.exporter.register_preprocessor(Executed(notebook=self.executed), enabled=True)
            else:
                self.exporter.register_preprocessor(pp)

    def ids(self, folder: str) -> tuple[str, str]:
        """Assignment and student ids of a submission folder."""
        regexp = self._format_source("(?P<assignment_id>.*)", "(?P<student_id>.*)", escape=True)
        match = re.match(regexp, folder)
        if match is None:
            raise ValueError(f"cannot tell the student of {folder}")
        return match["assignment_id"], match["student_id"]

    def outputs(self, assignment: str, student: str, notebooks: list[str]) -> dict[str, Path]:
        dest = Path(self._format_dest(assignment, student))
        return {nb: dest / (Path(nb).stem + self.exporter.file_extension) for nb in notebooks}

    def todo(self, assignment: str, student: str, notebooks: list[str]) -> list[str]:
        """The submitted notebooks to grade: those without an autograded version, or all of them with --force
        or when the submission is newer than the autograded one (as nbgrader decides)."""
        if self.coursedir.student_id_exclude and student in self.coursedir.student_id_exclude.split(","):
            return []
        outputs = self.outputs(assignment, student, notebooks)
        new = self.coursedir.get_existing_timestamp(self._format_source(assignment, student))
        old = self.coursedir.get_existing_timestamp(self._format_dest(assignment, student))
        if self.force or (new is not None and old is not None and new > old):
            for path in outputs.values():
                path.unlink(missing_ok=True)
            return notebooks
        return [nb for nb in notebooks if not outputs[nb].exists()]

    def sanitize(self, path: str) -> tuple[str, dict[str, Any]]:
        """Run the sanitizing preprocessors on a submitted notebook; return it as text, not written anywhere."""
        self._sanitizing = True
        self._init_preprocessors()
        resources = self.init_single_notebook_resources(path)
        output, _ = self.exporter.from_filename(path, resources=resources)
        return output, resources

    def finish(self, sanitized_resources: dict[str, Any], executed: str) -> None:
        """Run the configured autograde preprocessors after execution (grades saved here) and write the result."""
        info = sanitized_resources["nbgrader"]
        dest = Path(self._format_dest(info["assignment"], info["student"]))
        self._sanitizing = False
        self.executed = nbformat.reads(executed, as_version=4)
        try:
            self._init_preprocessors()
            resources = self.init_single_notebook_resources(str(dest / f"{info['notebook']}.ipynb"))
            resources["metadata"] = {
                "name": info["notebook"],
                "path": str(dest),
                "modified_date": datetime.date.today().strftime("%B %-d, %Y"),
            }
            with utils.setenv(NBGRADER_EXECUTION="autograde"):
                output, resources = self.exporter.from_notebook_node(self.executed, resources=resources)
            self.write_single_notebook(output, resources)
        finally:
            self.executed = None
            self._sanitizing = True

    def score_zero(self, assignment: str, student: str, notebook: str) -> None:
        """Give a notebook that could not be graded 0 points, as nbgrader does for a missing notebook."""
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            submitted = gb.find_submission_notebook(notebook, assignment, student)
            for grade in submitted.grades:
                grade.auto_score = 0
                grade.needs_manual_grade = False
            gb.db.commit()


class GradingError(Exception):
    """A problem with the whole run (no such assignment, no submissions, no cluster), not with one notebook."""


@dataclass
class Summary:
    """What a run did: notebooks graded, problems found in this run, and the full list kept on disk."""

    graded: int = 0
    problems: list[Problem] = field(default_factory=list)
    all_problems: list[Problem] = field(default_factory=list)
    skipped: int = 0


def load_app(assignment: str, nbgrader_args: list[str]) -> AutogradeApp:
    """nbgrader's own autograde application, with its configuration loaded (files in the usual places, then
    the command line), so that every instructor setting applies."""
    app = AutogradeApp()
    app.initialize([assignment, *nbgrader_args])
    app.coursedir.assignment_id = assignment
    return app


def _cli_config(app: AutogradeApp, timeout: int | None) -> dict[str, Any]:
    config = {section: dict(values) for section, values in app.cli_config.items()}
    if timeout is not None:
        config.setdefault("Execute", {})["timeout"] = timeout
    return config


@contextlib.contextmanager
def _cwd(path: str) -> Iterator[None]:
    here = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(here)


def _reason(outcome: Outcome, timeout: Any) -> str | None:
    """The one-line note for a notebook that was graded with an incident, or None."""
    notes = []
    if outcome.timeouts:
        notes.append(f"interrupted after {timeout} s in {', '.join(outcome.timeouts)} (a time-out scores 0)")
    if outcome.kernel_died:
        notes.append("the kernel died (the code exited or crashed Python); the tests after that point score 0")
    return "; ".join(notes) or None


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
) -> Summary:
    """Grade every submission of an assignment; see the module docstring.

    Kernels run in the sandbox started by ``bwrap`` (default: :func:`default_bwrap`; checked
    once, before anything is graded: :class:`GradingError` when it cannot work here), bounded
    by ``limits``; ``unsafe=True`` runs them unconfined, after a warning.
    """
    limits = limits or Limits()
    bwrap = None if unsafe else (bwrap or default_bwrap())
    if bwrap is None:
        print(
            "warning: --unsafe: student code runs with the grader's rights, files and network, "
            "bounded only by --output and --wall",
            file=stream or sys.stderr,
        )
    else:
        reason = probe(bwrap, limits)
        if reason is not None:
            raise GradingError(f"no sandbox for student code: {reason}; or pass --unsafe")
    nbgrader_format.jsonschema = _CheckedSchema()
    app = load_app(assignment, list(nbgrader_args or []))
    app.log.setLevel(logging.WARNING)
    grader = Grader(coursedir=app.coursedir, parent=app)
    grader.force = force
    config_files = tuple((Path(p).name, Path(p).read_text(encoding="utf-8")) for p in app.loaded_config_files)
    cli_config = _cli_config(app, timeout)
    shown_timeout = timeout if timeout is not None else app.config.get("Execute", {}).get("timeout", 30)
    root = grader.coursedir.root
    summary = Summary()
    regraded: set[tuple[str, str]] = set()
    with _cwd(root):
        with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
            if assignment not in {a.name for a in gb.assignments}:
                raise GradingError(
                    f"the gradebook has no assignment '{assignment}': "
                    f"run `nbgrader generate_assignment {assignment}` first"
                )
        try:
            grader.init_notebooks()
        except NbGraderException as err:
            raise GradingError(f"no submissions to grade ({err})") from err
        grader.writer = FilesWriter(parent=grader, config=grader.config)
        grader.exporter = grader.exporter_class(parent=grader, config=grader.config)
        # validate each notebook once after all preprocessors rather than after each one: same checks, less time
        grader.exporter.optimistic_validation = True
        source = Path(grader.coursedir.format_path(grader.coursedir.source_directory, ".", assignment))
        shipped = {
            str(p.relative_to(source)): p.read_bytes()
            for p in map(Path, utils.find_all_files(str(source), grader.coursedir.ignore + ["*.ipynb"]))
        }
        plan = []
        for folder in sorted(grader.assignments):
            assignment_id, student = grader.ids(folder)
            todo = grader.todo(assignment_id, student, sorted(grader.assignments[folder]))
            if todo:
                plan.append((assignment_id, student, todo))
            summary.skipped += len(grader.assignments[folder]) - len(todo)
        progress = Progress(sum(len(todo) for *_, todo in plan), stream)
        if summary.skipped:
            progress.message(f"{summary.skipped} notebooks already graded are kept (--force grades them again)")

        def problem(student: str, notebook: str, reason: str, graded: bool) -> None:
            summary.problems.append(Problem(student, notebook, reason, graded))
            if not graded:
                with contextlib.suppress(Exception):
                    grader.score_zero(assignment, student, notebook)

        def land(future: Any, sanitized: dict[str, Any]) -> None:
            info = sanitized["nbgrader"]
            student, notebook = info["student"], info["notebook"]
            regraded.add((student, notebook))
            try:
                outcome = Outcome(**future.result())
            except Exception as err:  # noqa: BLE001 - e.g. the workers running it died again and again
                outcome = Outcome(student, notebook, error=f"the task failed on the cluster ({one_line(err)})")
            if outcome.error is not None:
                problem(student, notebook, outcome.error, graded=False)
                progress.advance(student, notebook, f"not graded: {outcome.error}")
                return
            try:
                grader.finish(sanitized, outcome.executed or "")
            except Exception as err:  # noqa: BLE001
                grader.outputs(assignment, student, [notebook])[notebook].unlink(missing_ok=True)
                problem(student, notebook, one_line(err), graded=False)
                progress.advance(student, notebook, f"not graded: {one_line(err)}")
                return
            summary.graded += 1
            note = _reason(outcome, shown_timeout)
            if note:
                problem(student, notebook, note, graded=True)
            progress.advance(
                student,
                notebook,
                f"graded in {outcome.seconds:.1f} s on {outcome.host}" + (f" ({note})" if note else ""),
            )

        with contextlib.ExitStack() as stack:
            try:
                client = stack.enter_context(connect(scheduler, workers))
            except OSError as err:
                raise GradingError(f"cannot reach the Dask scheduler at {scheduler} ({one_line(err)})") from err
            running = as_completed(with_results=False)
            pending: dict[Any, dict[str, Any]] = {}

            def drain(block: bool) -> None:
                while pending and (block or running.has_ready()):
                    for future in running.next_batch(block=True):
                        land(future, pending.pop(future))

            for assignment_id, student, todo in plan:
                grader.notebooks = todo
                try:
                    grader.run_pre_convert_hook()
                    grader.init_assignment(assignment_id, student)
                except Exception as err:  # noqa: BLE001 - this student's set-up failed; the others go on
                    for path in todo:
                        regraded.add((student, Path(path).stem))
                        problem(
                            student, Path(path).stem, f"could not set up the submission ({one_line(err)})", graded=False
                        )
                        progress.advance(student, Path(path).stem, "not graded")
                    continue
                for path in sorted(set(todo) - set(grader.notebooks)):  # nbgrader skips notebooks it does not know
                    progress.advance(student, Path(path).stem, "skipped: not a notebook of the assignment")
                for path in grader.notebooks:
                    notebook = Path(path).stem
                    try:
                        text, resources = grader.sanitize(path)
                    except Exception as err:  # noqa: BLE001 - e.g. a file that is not a notebook
                        regraded.add((student, notebook))
                        problem(student, notebook, one_line(err), graded=False)
                        progress.advance(student, notebook, f"not graded: {one_line(err)}")
                        continue
                    task = Task(
                        student, assignment_id, notebook, text, shipped, config_files, cli_config, bwrap, limits
                    )
                    future = submit(client, run_task, task, key=f"grade-{student}-{notebook}-{uuid.uuid4().hex[:8]}")
                    pending[future] = resources
                    running.add(future)
                drain(block=False)
            drain(block=True)

        for _, student, _ in plan:
            with contextlib.suppress(Exception):
                grader.set_permissions(assignment, student)
                grader.run_post_convert_hook()
        progress.close()
        listing = problem_list.problems_path(
            Path(grader.coursedir.format_path(grader.coursedir.autograded_directory, ".", ".")).resolve(), assignment
        )
        summary.all_problems = problem_list.merge(problem_list.load(listing), summary.problems, regraded)
        problem_list.save(listing, summary.all_problems)
    return summary
