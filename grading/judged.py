"""``nbgrader autograde`` (and formgrader's autograde button) through the grader's sandbox and judge.

:class:`JudgedExecute` is an nbgrader preprocessor that stands where the execute preprocessor stands
in ``c.Autograde.autograde_preprocessors``. For each notebook nbgrader autogrades, one at a time, it
does what a worker of ``python -m grading autograde`` does (:func:`grading.execute.execute`): the
kernel in the sandbox, within the limits, with the submission's files read without following links
and the shipped files over them, and every check run by the judge in this process. The executor it
wraps is ``c.JudgedExecute.execute_class`` (nbgrader's ``Execute`` by default), with its settings
(``c.Execute.timeout``...). The grading command reads the same setting, so both entry points run the
same executor; the grading command only adds parallelism (Dask) and its own reading of the
submission folders.

Where no sandbox can be set up, each notebook fails with the reason in nbgrader's log, and nothing
is run unsandboxed unless the instructor says so: ``--JudgedExecute.unsafe=True`` (no sandbox, the
judge still decides; as the grading command's ``--unsafe``), or ``--JudgedExecute.stock=True``
(nbgrader's own execution, checks in the student's kernel: only to compare with).

A notebook that cannot be graded (a link instead of a notebook, a limit it went over) gets an
error output in every autograded check, so it scores 0, as the grading command scores it.

Example
-------
In ``nbgrader_config.py``::

    from grading.judged import JudgedExecute

    c.JudgedExecute.execute_class = Execute           # or the course's own subclass of it
    c.Autograde.autograde_preprocessors = [JudgedExecute, IgnorePattern, ClearMetadataPreprocessor, ...]
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbconvert.preprocessors import Preprocessor
from nbgrader import utils as nbgrader_utils
from nbgrader.preprocessors import Execute
from traitlets import Bool, Type, Unicode

from grading.limits import Limits

__all__ = ["JudgedExecute", "scored_zero"]

_probed: dict[tuple[str, Limits], str | None] = {}  # (bwrap, limits) -> why no sandbox, or None: once per process


def scored_zero(nb: Any, reason: str) -> Any:
    """The notebook with an error output in every autograded check (each then scores 0), saying why.

    >>> cell = nbformat.v4.new_code_cell("assert True")
    >>> cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "t", "points": 1}
    >>> nb = scored_zero(nbformat.v4.new_notebook(cells=[cell]), "not graded: a link")
    >>> nbgrader_utils.determine_grade(nb.cells[0])
    (0, 1.0)
    """
    for cell in nb.cells:
        if cell.cell_type == "code" and nbgrader_utils.is_grade(cell) and not nbgrader_utils.is_solution(cell):
            error = {"ename": "NotGraded", "evalue": reason, "traceback": [f"NotGraded: {reason}"]}
            cell.outputs = [nbformat.v4.new_output("error", **error)]
    return nb


def _converter(pp: Any) -> Any:
    """The nbgrader converter (it has the course directory) above a preprocessor."""
    here = pp
    while here is not None and not hasattr(here, "coursedir"):
        here = getattr(here, "parent", None)
    if here is None:
        raise RuntimeError("JudgedExecute runs only inside nbgrader's autograde (no course directory above it)")
    return here


class JudgedExecute(Preprocessor):
    """nbgrader's execute step, run in the grader's sandbox with every check judged (see the module docstring)."""

    grading_entry = True  # grading.executor.executors unwraps it to execute_class

    execute_class = Type(
        Execute, klass=NotebookClient, help="the execute preprocessor the grader runs (nbgrader's Execute)"
    ).tag(config=True)
    bwrap = Unicode("", help="the bubblewrap program (default: bwrap on the PATH)").tag(config=True)
    unsafe = Bool(False, help="run kernels without the sandbox (the judge still decides every check)").tag(config=True)
    stock = Bool(False, help="run execute_class as nbgrader does: no sandbox, no judge (only to compare with)").tag(
        config=True
    )
    memory = Unicode(None, allow_none=True, help="as --memory of the grading command").tag(config=True)
    cpu = Unicode(None, allow_none=True, help="as --cpu").tag(config=True)
    procs = Unicode(None, allow_none=True, help="as --procs").tag(config=True)
    file_size = Unicode(None, allow_none=True, help="as --file-size").tag(config=True)
    output = Unicode(None, allow_none=True, help="as --output").tag(config=True)
    data = Unicode(None, allow_none=True, help="as --data").tag(config=True)
    wall = Unicode(None, allow_none=True, help="as --wall").tag(config=True)

    def __call__(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Always run (an nbconvert preprocessor is skipped unless enabled: a notebook left unexecuted would keep
        its checks' empty outputs, and score in full)."""
        return self.preprocess(nb, resources)

    def limits(self) -> Limits:
        return Limits.parse(
            memory=self.memory,
            cpu=self.cpu,
            procs=self.procs,
            file_size=self.file_size,
            output=self.output,
            data=self.data,
            wall=self.wall,
        )

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        if self.stock:
            self.log.warning("JudgedExecute.stock: the notebook runs as nbgrader runs it, unsandboxed and unjudged")
            stock: Any = self.execute_class(parent=self.parent)
            return stock(nb, resources)  # type: ignore[no-any-return]
        from grading.execute import execute
        from grading.plan import answer_names, instructor_order, setup_cells, shipped_files
        from grading.private_api import check_versions
        from grading.sandbox import default_bwrap, probe
        from grading.submission import SubmissionError, read_submission
        from grading.tasks import Task

        check_versions()
        info = resources["nbgrader"]
        student, assignment, notebook = info["student"], info["assignment"], info["notebook"]
        converter = _converter(self)
        coursedir = converter.coursedir
        limits = self.limits()
        bwrap: str | None = None
        if self.unsafe:
            self.log.warning("JudgedExecute.unsafe: %s's %s runs without the sandbox", student, notebook)
        else:
            bwrap = self.bwrap or default_bwrap()
            if (bwrap, limits) not in _probed:
                _probed[bwrap, limits] = probe(bwrap, limits)
            reason = _probed[bwrap, limits]
            if reason is not None:
                raise RuntimeError(
                    f"cannot grade {student}'s {notebook}: no sandbox for student code: {reason}; "
                    "or set JudgedExecute.unsafe"
                )
        top = Path(coursedir.format_path(coursedir.submitted_directory, ".", "."))
        folder = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
        name = f"{notebook}.ipynb"
        try:
            submission = read_submission(top, folder.relative_to(top).parts, notebooks={name}, ignore=coursedir.ignore)
            why = None if name in submission.files else submission.left_out.get(name, "not found")
        except (SubmissionError, ValueError) as err:
            submission, why = None, str(err)
        if why is not None or submission is None:
            self.log.error("%s's %s is not graded (it scores 0): not read: %s", student, notebook, why)
            return scored_zero(nb, f"the submitted notebook was not read: {why}"), resources
        task = Task(
            student,
            assignment,
            notebook,
            nbformat.writes(nb),
            shipped_files(converter, assignment),
            (),
            copy.deepcopy(self.config),
            bwrap,
            limits,
            setups=setup_cells(coursedir.db_url, assignment, notebook),
            order=instructor_order(converter, assignment, notebook),
            submitted={rel: data for rel, data in submission.files.items() if not rel.endswith(".ipynb")},
            kept=tuple(getattr(converter, "exclude_overwriting", {}).get(assignment, [])),
            student_names=answer_names(converter, assignment, notebook),
        )
        outcome = execute(task)
        for cell in outcome.timeouts:
            self.log.warning("%s's %s: interrupted after the time-out in %s", student, notebook, cell)
        if outcome.kernel_died:
            self.log.warning("%s's %s: the kernel died", student, notebook)
        if outcome.error is not None or outcome.executed is None:
            self.log.error("%s's %s is not graded (it scores 0): %s", student, notebook, outcome.error)
            return scored_zero(nb, str(outcome.error)), resources
        return nbformat.reads(outcome.executed, as_version=4), resources
