"""The notebooks that could not be graded cleanly, kept beside the autograded notebooks.

Example
-------
>>> p = Problem("ada", "q4_per_example_weights", "NotJSONError: Notebook does not appear to be JSON", graded=False)
>>> p.line()
'ada / q4_per_example_weights: not graded: NotJSONError: Notebook does not appear to be JSON'
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path


def printable(text: str, limit: int = 500) -> str:
    r"""Text that is safe to print on a terminal: control characters written as escapes, at most ``limit`` characters.

    A reason can quote a submission (a file that is not JSON), and a file's name is the student's to choose.

    >>> printable("q1\x1b[2J.ipynb\n")
    'q1\\x1b[2J.ipynb\\n'
    """
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Problem:
    """One notebook of one student, and why it was not (fully) graded; or a file of a submission that was left out.

    ``graded`` is False when the notebook has no autograded version (it scores 0), and True
    when it was graded but something cost it points, such as a time-out or a kernel death.
    ``file`` is True for a file of the submission folder that was neither read nor copied
    (``notebook`` is then its path in the folder). Every field is kept printable (:func:`printable`).
    """

    student: str
    notebook: str
    reason: str
    graded: bool
    file: bool = False

    def __post_init__(self) -> None:
        for name in ("student", "notebook", "reason"):
            object.__setattr__(self, name, printable(getattr(self, name)))

    def line(self) -> str:
        """One line for the end-of-run list."""
        if self.file:
            return f"{self.student} / {self.notebook}: {self.reason}"
        return f"{self.student} / {self.notebook}: {'graded, but' if self.graded else 'not graded:'} {self.reason}"


def problems_path(autograded: Path, assignment: str) -> Path:
    """Where the list for an assignment is kept: ``autograded/grading-<assignment>.json``."""
    return autograded / f"grading-{assignment}.json"


def load(path: Path) -> list[Problem]:
    """The list saved by an earlier run, or an empty list."""
    if not path.is_file():
        return []
    return [Problem(**item) for item in json.loads(path.read_text(encoding="utf-8"))["problems"]]


def save(path: Path, problems: Iterable[Problem]) -> None:
    """Write the list, sorted by student and notebook."""
    path.parent.mkdir(parents=True, exist_ok=True)
    items = sorted(problems, key=lambda p: (p.student, p.notebook, p.reason))
    path.write_text(json.dumps({"problems": [asdict(p) for p in items]}, indent=1) + "\n", encoding="utf-8")


def merge(old: Iterable[Problem], new: Iterable[Problem], regraded: set[tuple[str, str]]) -> list[Problem]:
    """Keep earlier problems of notebooks not graded again in this run, and add this run's.

    >>> a = Problem("ada", "q1", "old", graded=True)
    >>> merge([a], [], regraded={("ada", "q1")})
    []
    """
    again = {(printable(student), printable(notebook)) for student, notebook in regraded}  # as Problem keeps them
    return [p for p in old if (p.student, p.notebook) not in again] + list(new)
