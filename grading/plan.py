"""Plan a grading run: which submitted notebooks to grade, each made into a self-contained task.

Everything here is nbgrader's own work, driven one notebook at a time: the submission
records, the notebooks still to grade (or all of them with ``--force``), and sanitizing,
which restores every locked cell's text from the gradebook. Each sanitized notebook becomes
a :class:`grading.execute.Task` that carries what a worker needs (the notebook, the
assignment's shipped files, the instructor's configuration as text).

The one change to nbgrader's steps: a submission folder is read only through
:func:`grading.submission.read_submission` (no link followed, regular files only, within a
size cap), and what was read is written to ``autograded/``; nbgrader would copy the folder
with ``shutil.copy``, which follows links and reads a device file forever. What is left out
is listed (:class:`LeftOut`), and a notebook left out is not graded.

Example
-------
>>> problem = Refused("ada", "q1", "NotJSONError: not JSON")
>>> problem.reason
'NotJSONError: not JSON'
"""

from __future__ import annotations

import datetime
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.preprocessors import Preprocessor
from nbgrader import utils
from nbgrader.api import Gradebook
from nbgrader.apps.autogradeapp import AutogradeApp
from nbgrader.converters import Autograde
from nbgrader.converters.base import BaseConverter
from nbgrader.preprocessors import SaveAutoGrades
from traitlets import Any as AnyTrait

from grading.executor import executors
from grading.judge import student_names
from grading.limits import Limits
from grading.private_api import (
    clear_preprocessors,
    format_dest,
    format_source,
    hooked_converter,
    set_sanitizing,
)
from grading.roles import judged_order
from grading.submission import Submission, SubmissionError, read_file, read_submission, remove_links
from grading.tasks import Task, one_line

# values of a submitted notebook's JSON, lists and objects included (each costs a parser some 80 to 100 bytes, in the
# main process and in a worker alike); the course's reference notebooks hold under 2000
MAX_VALUES = 1_000_000
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # a JSON string


def json_values(data: bytes) -> int:
    """About how many values and keys a JSON text holds, counted without parsing it: every ``,`` ``:`` ``[`` and
    ``{`` outside its strings, each of which comes before a value or a key (or closes an empty list or object).

    Example
    -------
    >>> json_values(b'{"a": [1, 2.5, "x, y: [z]"], "b": {}}')  # 2 keys, 5 values, and one empty object
    8
    """
    bare = _STRING.sub(b"", data)
    return sum(bare.count(char) for char in (b",", b":", b"[", b"{"))


LISTED = 20  # files of one submission listed one by one as left out; the rest in one line
MAX_CELLS = 2000  # cells of a submitted notebook


class CheckedSchema:
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


class SaveAutoGradesOnce(SaveAutoGrades):
    """nbgrader's SaveAutoGrades with one gradebook transaction per notebook instead of one per cell.

    The same rows get the same values; they are committed together at the end, so a notebook
    whose landing fails half-way leaves the gradebook as it was (and is then scored 0 as a
    notebook that could not be graded). nbgrader commits after every graded cell, a write to
    disk each; ``benchmarks/gradebook.py`` times both.
    """

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.student_id = resources["nbgrader"]["student"]
        self.gradebook = Gradebook(resources["nbgrader"]["db_url"])
        with self.gradebook:  # leaving it without the commit below (an error) closes the session: a rollback
            commit, self.gradebook.db.commit = self.gradebook.db.commit, self.gradebook.db.flush
            nb, resources = super(SaveAutoGrades, self).preprocess(nb, resources)
            commit()
        return nb, resources


class _ReadSafely(BaseConverter):
    """Stands between nbgrader's ``Autograde`` and ``BaseConverter`` (see :class:`Grader`'s bases): its
    ``init_assignment`` replaces ``BaseConverter``'s, which copies the submission's other files with
    ``shutil.copy``, by writing the files :func:`grading.submission.read_submission` read."""

    submission: Submission | None = None

    def init_assignment(self, assignment_id: str, student_id: str) -> None:
        dest = Path(format_dest(self, assignment_id, student_id))
        remove_links(dest)  # what an earlier version may have copied there
        if self.submission is None:
            raise RuntimeError("the submission was not read before its set-up (Grader.submission)")
        for rel, data in self.submission.files.items():
            if rel.endswith(".ipynb"):
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            target.write_bytes(data)


class Grader(hooked_converter(Autograde), _ReadSafely):  # type: ignore[misc]
    """nbgrader's Autograde converter, driven one notebook at a time instead of one student at a time.

    ``Autograde.init_assignment`` calls its base class's, which in this class's order of bases is
    :class:`_ReadSafely`'s: nbgrader's copy of the submission folder never runs.
    """

    executed = AnyTrait(None, allow_none=True)
    executor_positions: set[int] | None = None

    def grading_init_preprocessors(self, sanitizing: bool) -> None:
        if sanitizing or self.executed is None:
            super().grading_init_preprocessors(sanitizing)
            return
        clear_preprocessors(self.exporter)
        if self.executor_positions is None:
            self.executor_positions = {index for index, _ in executors(self.config)}
        positions = self.executor_positions
        for index, pp in enumerate(self.autograde_preprocessors):
            if index in positions:
                self.exporter.register_preprocessor(Executed(notebook=self.executed), enabled=True)
            elif pp is SaveAutoGrades:
                self.exporter.register_preprocessor(SaveAutoGradesOnce)
            else:
                self.exporter.register_preprocessor(pp)

    def folder(self, step: str, assignment: str, student: str) -> tuple[Path, list[str]]:
        """A student's folder of ``step`` (``submitted``...) as the instructor's top folder and the names below it
        that come from the student and assignment ids (with the default layout: ``submitted``, ``[ada, hw1]``)."""
        structure = utils.full_split(self.coursedir.directory_structure)
        own = next(
            (i for i, part in enumerate(structure) if "{student_id}" in part or "{assignment_id}" in part),
            len(structure),
        )
        names = {"nbgrader_step": step, "student_id": student, "assignment_id": assignment}
        parts = [part.format(**names) for part in structure]
        return Path(self.coursedir.root, *parts[:own]), parts[own:]

    def read(self, assignment: str, student: str, notebooks: list[str]) -> Submission:
        """Read a submission folder, without following links (:func:`grading.submission.read_submission`)."""
        top, parts = self.folder(self.coursedir.submitted_directory, assignment, student)
        return read_submission(top, parts, notebooks={Path(nb).name for nb in notebooks}, ignore=self.coursedir.ignore)

    def timestamp(self, dest_path: str) -> datetime.datetime | None:
        """nbgrader's ``CourseDirectory.get_existing_timestamp``, reading ``timestamp.txt`` without following a link
        (a link to ``/dev/zero``, or a FIFO, would never end), at most 4 kB; an invalid one is an error of that
        submission."""
        path = os.path.normpath(dest_path)
        for step in (self.coursedir.submitted_directory, self.coursedir.autograded_directory):
            top = os.path.normpath(self.coursedir.format_path(step, ".", "."))
            if path.startswith(top + os.sep):
                data = read_file(Path(top), Path(path).relative_to(top).parts, "timestamp.txt", 4096)
                break
        else:
            raise ValueError(f"not a folder of the course's submissions: {dest_path}")
        text = (data or b"").decode("utf-8", errors="replace").strip()
        if not text:
            return None
        try:
            parsed: datetime.datetime = utils.parse_utc(text)
        except ValueError:
            raise ValueError(f"Invalid timestamp string in {os.path.join(dest_path, 'timestamp.txt')}") from None
        return parsed

    def ids(self, folder: str) -> tuple[str, str]:
        """Assignment and student ids of a submission folder."""
        regexp = format_source(self, "(?P<assignment_id>.*)", "(?P<student_id>.*)", escape=True)
        match = re.match(regexp, folder)
        if match is None:
            raise ValueError(f"cannot tell the student of {folder}")
        return match["assignment_id"], match["student_id"]

    def outputs(self, assignment: str, student: str, notebooks: list[str]) -> dict[str, Path]:
        dest = Path(format_dest(self, assignment, student))
        return {nb: dest / (Path(nb).stem + self.exporter.file_extension) for nb in notebooks}

    def todo(self, assignment: str, student: str, notebooks: list[str]) -> list[str]:
        """The submitted notebooks to grade: those without an autograded version, or all of them with --force
        or when the submission is newer than the autograded one (as nbgrader decides)."""
        if self.coursedir.student_id_exclude and student in self.coursedir.student_id_exclude.split(","):
            return []
        outputs = self.outputs(assignment, student, notebooks)
        try:
            new = self.coursedir.get_existing_timestamp(format_source(self, assignment, student))
            old = self.coursedir.get_existing_timestamp(format_dest(self, assignment, student))
        except ValueError:  # an invalid timestamp: listed when its set-up fails
            return notebooks
        if self.force or (new is not None and old is not None and new > old):
            for path in outputs.values():
                path.unlink(missing_ok=True)
            return notebooks
        return [nb for nb in notebooks if not outputs[nb].exists()]

    def sanitize(self, path: str, data: bytes, mtime: float) -> tuple[str, dict[str, Any]]:
        """Run the sanitizing preprocessors on a submitted notebook, read as ``data`` (modified at ``mtime``), as
        nbconvert's ``from_filename`` would on ``path``; return it as text, not written anywhere."""
        set_sanitizing(self, True)
        self.grading_set_up_preprocessors()
        resources = self.init_single_notebook_resources(path)
        values = json_values(data)
        if values > MAX_VALUES:  # json would build them all before nbformat could say a word
            raise ValueError(
                f"the notebook's JSON holds {values} values, more than the {MAX_VALUES} a notebook may hold"
            )
        text = data.decode("utf-8")
        try:
            cells = json.loads(text).get("cells")
        except (ValueError, RecursionError, AttributeError):
            cells = None  # nbformat says what is wrong with it, below
        if isinstance(cells, list) and len(cells) > MAX_CELLS:  # nbgrader's steps cost about a millisecond a cell
            raise ValueError(f"the notebook has {len(cells)} cells, more than the {MAX_CELLS} a notebook may have")
        modified = datetime.datetime.fromtimestamp(mtime, tz=datetime.UTC)
        resources["metadata"] = ResourcesDict(
            name=Path(path).stem, path=os.path.dirname(path), modified_date=modified.strftime("%B %-d, %Y")
        )
        nb = nbformat.reads(text, as_version=4)
        output, _ = self.exporter.from_notebook_node(nb, resources=resources)
        return output, resources

    def finish(self, sanitized_resources: dict[str, Any], executed: str) -> None:
        """Run the configured autograde preprocessors after execution (grades saved here) and write the result."""
        info = sanitized_resources["nbgrader"]
        dest = Path(format_dest(self, info["assignment"], info["student"]))
        set_sanitizing(self, False)
        self.executed = nbformat.reads(executed, as_version=4)
        try:
            self.grading_set_up_preprocessors()
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
            set_sanitizing(self, True)

    def score_zero(self, assignment: str, student: str, notebook: str) -> None:
        """Give a notebook that could not be graded 0 points, as nbgrader does for a missing notebook."""
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            submitted = gb.find_submission_notebook(notebook, assignment, student)
            for grade in submitted.grades:
                grade.auto_score = 0
                grade.needs_manual_grade = False
            gb.db.commit()


@dataclass(frozen=True)
class Refused:
    """A notebook that cannot be sent to run (not a notebook, a submission that cannot be set up)."""

    student: str
    notebook: str
    reason: str


@dataclass(frozen=True)
class LeftOut:
    """A file of a submission folder that was neither read nor copied (a link, a special file, too large)."""

    student: str
    path: str
    reason: str


@dataclass(frozen=True)
class Skipped:
    """A file nbgrader does not know as a notebook of the assignment: neither graded nor a problem."""

    student: str
    notebook: str


@dataclass(frozen=True)
class Planned:
    """A task to send to a worker, with nbgrader's resources for landing its result."""

    task: Task
    resources: dict[str, Any]


@dataclass
class Plan:
    """The notebooks to grade, by submission, and what every task of the run shares."""

    submissions: list[tuple[str, str, list[str]]]  # (assignment, student, notebook paths)
    skipped: int
    shipped: dict[str, bytes]
    config_files: tuple[tuple[str, str], ...]
    cli_config: dict[str, Any]

    @property
    def count(self) -> int:
        return sum(len(todo) for *_, todo in self.submissions)


def load_app(assignment: str, nbgrader_args: list[str]) -> AutogradeApp:
    """nbgrader's own autograde application, with its configuration loaded (files in the usual places, then
    the command line), so that every instructor setting applies."""
    app = AutogradeApp()
    app.initialize([assignment, *nbgrader_args])
    app.coursedir.assignment_id = assignment
    return app


def cli_config(app: AutogradeApp, timeout: int | None) -> dict[str, Any]:
    """The command line's nbgrader settings, with ``--timeout`` as ``Execute.timeout``."""
    config = {section: dict(values) for section, values in app.cli_config.items()}
    if timeout is not None:
        config.setdefault("Execute", {})["timeout"] = timeout
    return config


def shipped_files(grader: Any, assignment: str) -> dict[str, bytes]:
    """The assignment's files beside its notebooks in the source folder (those nbgrader copies over a submission)."""
    source = Path(grader.coursedir.format_path(grader.coursedir.source_directory, ".", assignment))
    return {
        str(p.relative_to(source)): p.read_bytes()
        for p in map(Path, utils.find_all_files(str(source), grader.coursedir.ignore + ["*.ipynb"]))
    }


def make_plan(grader: Grader, app: AutogradeApp, assignment: str, timeout: int | None) -> Plan:
    """What to grade (nbgrader has found the submissions: ``grader.init_notebooks()``), in student order."""
    shipped = shipped_files(grader, assignment)
    submissions, skipped = [], 0
    for folder in sorted(grader.assignments):
        assignment_id, student = grader.ids(folder)
        todo = grader.todo(assignment_id, student, sorted(grader.assignments[folder]))
        if todo:
            submissions.append((assignment_id, student, todo))
        skipped += len(grader.assignments[folder]) - len(todo)
    config_files = tuple((Path(p).name, Path(p).read_text(encoding="utf-8")) for p in app.loaded_config_files)
    return Plan(submissions, skipped, shipped, config_files, cli_config(app, timeout))


def setup_cells(db_url: str, assignment: str, notebook: str) -> tuple[tuple[str, str], ...]:
    """The instructor's locked set-up cells of a notebook (locked code cells that are neither a test nor an answer),
    each as its grade id and text, as the gradebook holds them: what the judge runs, each at its place."""
    with Gradebook(db_url) as gb:
        nb = gb.find_notebook(notebook, assignment)
        not_setup = {c.name for c in nb.grade_cells} | {c.name for c in nb.solution_cells}
        return tuple(
            (c.name, c.source)
            for c in nb.source_cells
            if c.locked and c.cell_type == "code" and c.name not in not_setup
        )


def instructor_order(grader: Any, assignment: str, notebook: str) -> tuple[str, ...]:
    """The grade ids of the set-up cells and checks of the instructor's source notebook, in its order (where the
    judge runs each set-up cell among the checks); empty where the source notebook cannot be read, and then every
    set-up cell runs before the first check."""
    source = Path(grader.coursedir.format_path(grader.coursedir.source_directory, ".", assignment))
    try:
        return judged_order(nbformat.read(source / f"{notebook}.ipynb", as_version=4))
    except (OSError, ValueError, KeyError, TypeError):
        return ()


def answer_names(grader: Grader, assignment: str, notebook: str) -> frozenset[str] | None:
    """The names the answer cells of the instructor's source notebook bind (:func:`grading.judge.student_names`):
    those a check looks up in the student's kernel. None, said in a log line, where the source notebook is not in
    the course's source folder or cannot be read: the judge then takes a check's names that no set-up cell binds
    as the student's."""
    source = Path(grader.coursedir.format_path(grader.coursedir.source_directory, ".", assignment), f"{notebook}.ipynb")
    try:
        names = student_names(nbformat.read(source, as_version=4), grader.config)
    except (OSError, ValueError) as err:
        names, why = None, one_line(err)
    else:
        why = "an answer cell is not Python"
    if names is None:
        grader.log.warning(
            "%s: the student's names are not known (%s); a check's names that no set-up cell binds are looked "
            "up in the kernel",
            source,
            why,
        )
    return names


def guard(grader: Grader) -> None:
    """Make nbgrader read every ``timestamp.txt`` through :meth:`Grader.timestamp` (it would follow a link)."""
    grader.coursedir.get_existing_timestamp = grader.timestamp


def tasks(
    grader: Grader, plan: Plan, bwrap: str | None, limits: Limits, warm: bool = True
) -> Iterator[Planned | Refused | Skipped | LeftOut]:
    """Each notebook of the plan, sanitized and made into a task (its kernel forked from a warm parent when
    ``warm``), or refused with a one-line reason; and each file of a submission folder that was left out."""
    setups: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}
    orders: dict[tuple[str, str], tuple[str, ...]] = {}
    names: dict[tuple[str, str], frozenset[str] | None] = {}
    for assignment_id, student, todo in plan.submissions:
        grader.notebooks = todo
        unread: str | None = None
        try:
            submission = grader.read(assignment_id, student, todo)
        except SubmissionError as err:  # the folder itself is a link, say: nothing of it is read
            submission, unread = Submission(), str(err)
        grader.submission = submission
        try:
            grader.run_pre_convert_hook()
            grader.init_assignment(assignment_id, student)  # the student's records, even when nothing was read
        except Exception as err:  # noqa: BLE001 - this student's set-up failed; the others go on
            for path in todo:
                yield Refused(student, Path(path).stem, f"could not set up the submission ({one_line(err)})")
            continue
        finally:
            grader.submission = None
        if unread is not None:
            for path in todo:
                yield Refused(student, Path(path).stem, f"not read: {unread}")
            continue
        notebooks = {Path(path).name for path in todo}
        submitted = {rel: data for rel, data in submission.files.items() if not rel.endswith(".ipynb")}
        kept = tuple(grader.exclude_overwriting.get(assignment_id, []))
        left_out = [(rel, why) for rel, why in submission.left_out.items() if rel not in notebooks]
        for rel, why in left_out[:LISTED]:
            yield LeftOut(student, rel, f"left out, neither read nor copied to autograded/: {why}")
        if len(left_out) > LISTED:
            more = f"{len(left_out) - LISTED} more files"
            yield LeftOut(student, more, "left out, neither read nor copied to autograded/ (not listed one by one)")
        for path in sorted(set(todo) - set(grader.notebooks)):  # nbgrader skips notebooks it does not know
            yield Skipped(student, Path(path).stem)
        for path in grader.notebooks:
            notebook, name = Path(path).stem, Path(path).name
            if name not in submission.files:
                yield Refused(student, notebook, f"not read: {submission.left_out.get(name, 'not found')}")
                continue
            try:
                text, resources = grader.sanitize(path, submission.files[name], submission.mtimes[name])
            except Exception as err:  # noqa: BLE001 - e.g. a file that is not a notebook
                yield Refused(student, notebook, one_line(err))
                continue
            if (assignment_id, notebook) not in setups:
                setups[assignment_id, notebook] = setup_cells(grader.coursedir.db_url, assignment_id, notebook)
                orders[assignment_id, notebook] = instructor_order(grader, assignment_id, notebook)
                names[assignment_id, notebook] = answer_names(grader, assignment_id, notebook)
            task = Task(
                student,
                assignment_id,
                notebook,
                text,
                plan.shipped,
                plan.config_files,
                plan.cli_config,
                bwrap,
                limits,
                setups[assignment_id, notebook],
                warm,
                orders[assignment_id, notebook],
                submitted,
                kept,
                names[assignment_id, notebook],
            )
            yield Planned(task, resources)
