"""Land a grading run's results: each executed notebook scored into the gradebook, or listed as a problem.

This process is the gradebook's only writer. A notebook that came back executed goes
through nbgrader's own remaining steps (saving grades, late penalties, writing
``autograded/``); one that could not be run, or landed, scores 0 as a missing notebook does,
and is listed with a one-line reason, in the run's summary and in
``autograded/grading-ASSIGNMENT.json``.

Example
-------
>>> incident(Outcome("ada", "q1", timeouts=["q1_a_test"]), 30)
'interrupted after 30 s in q1_a_test (a time-out scores 0)'
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grading import problems as problem_list
from grading.plan import Grader, Plan
from grading.problems import Problem
from grading.progress import Progress
from grading.tasks import Outcome, one_line


@dataclass
class Summary:
    """What a run did: notebooks graded, problems found in this run, and the full list kept on disk."""

    graded: int = 0
    problems: list[Problem] = field(default_factory=list)
    all_problems: list[Problem] = field(default_factory=list)
    skipped: int = 0


def incident(outcome: Outcome, timeout: Any) -> str | None:
    """The one-line note for a notebook that was graded with an incident, or None."""
    notes = []
    if outcome.timeouts:
        notes.append(f"interrupted after {timeout} s in {', '.join(outcome.timeouts)} (a time-out scores 0)")
    if outcome.kernel_died:
        notes.append("the kernel died (the code exited or crashed Python); the tests after that point score 0")
    return "; ".join(notes) or None


class Landing:
    """Where results come back to: the gradebook, ``autograded/``, the progress shown and the problem list."""

    def __init__(self, grader: Grader, assignment: str, progress: Progress, timeout: Any) -> None:
        self.grader, self.assignment, self.progress, self.timeout = grader, assignment, progress, timeout
        self.summary = Summary()
        self.regraded: set[tuple[str, str]] = set()

    def _problem(self, student: str, notebook: str, reason: str, graded: bool) -> None:
        self.summary.problems.append(Problem(student, notebook, reason, graded))
        if not graded:
            with contextlib.suppress(Exception):
                self.grader.score_zero(self.assignment, student, notebook)

    def refuse(self, student: str, notebook: str, reason: str) -> None:
        """A notebook that was not graded: 0 points, listed with its reason."""
        self.regraded.add((student, notebook))
        self._problem(student, notebook, reason, graded=False)
        self.progress.advance(student, notebook, f"not graded: {reason}")

    def leave_out(self, student: str, path: str, reason: str) -> None:
        """A file of a submission folder that was neither read nor copied: listed, no notebook's score changes."""
        problem = Problem(student, path, reason, graded=False, file=True)
        self.regraded.add((student, path))
        self.summary.problems.append(problem)
        self.progress.message(problem.line())

    def skip(self, student: str, notebook: str) -> None:
        self.progress.advance(student, notebook, "skipped: not a notebook of the assignment")

    def land(self, result: dict[str, Any] | BaseException, resources: dict[str, Any]) -> None:
        """One task's result (its outcome as a dict, or the error that lost it) into the gradebook."""
        info = resources["nbgrader"]
        student, notebook = info["student"], info["notebook"]
        if isinstance(result, BaseException):  # e.g. the workers running it died again and again
            outcome = Outcome(student, notebook, error=f"the task failed on the cluster ({one_line(result)})")
        else:
            outcome = Outcome(**result)
        if outcome.error is not None:
            self.refuse(student, notebook, outcome.error)
            return
        self.regraded.add((student, notebook))
        try:
            self.grader.finish(resources, outcome.executed or "")
        except Exception as err:  # noqa: BLE001
            self.grader.outputs(self.assignment, student, [notebook])[notebook].unlink(missing_ok=True)
            self.refuse(student, notebook, one_line(err))
            return
        self.summary.graded += 1
        note = incident(outcome, self.timeout)
        if note:
            self._problem(student, notebook, note, graded=True)
        shown = f"graded in {outcome.seconds:.1f} s on {outcome.host}" + (f" ({note})" if note else "")
        self.progress.advance(student, notebook, shown)

    def close(self, plan: Plan) -> Summary:
        """nbgrader's closing steps per student, then the problem list merged with earlier runs' and saved."""
        for _, student, _ in plan.submissions:
            with contextlib.suppress(Exception):
                self.grader.set_permissions(self.assignment, student)
                self.grader.run_post_convert_hook()
        self.progress.close()
        coursedir = self.grader.coursedir
        folder = Path(coursedir.format_path(coursedir.autograded_directory, ".", ".")).resolve()
        listing = problem_list.problems_path(folder, self.assignment)
        self.summary.all_problems = problem_list.merge(problem_list.load(listing), self.summary.problems, self.regraded)
        problem_list.save(listing, self.summary.all_problems)
        return self.summary
