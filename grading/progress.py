"""Progress of a grading run: a tqdm bar on a terminal, plain log lines otherwise.

Example
-------
>>> import io
>>> progress = Progress(total=2, stream=io.StringIO())
>>> progress.advance("ada", "q1", "graded")
>>> progress.stream.getvalue()
'[1/2] ada / q1: graded\\n'
"""

from __future__ import annotations

import sys
from typing import TextIO

from tqdm import tqdm

from grading.problems import printable


class Progress:
    """Notebooks done out of the total, with an estimated time left on a terminal."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = total
        self.done = 0
        isatty = getattr(self.stream, "isatty", lambda: False)()
        self.bar = tqdm(total=total, unit="notebook", file=self.stream, dynamic_ncols=True) if isatty else None

    def advance(self, student: str, notebook: str, note: str) -> None:
        """Count one notebook as finished (graded or not)."""
        self.done += 1
        student, notebook, note = printable(student), printable(notebook), printable(note)
        if self.bar is not None:
            self.bar.set_postfix_str(f"{student} / {notebook}", refresh=False)
            self.bar.update(1)
        else:
            print(f"[{self.done}/{self.total}] {student} / {notebook}: {note}", file=self.stream, flush=True)

    def message(self, text: str) -> None:
        """A line that does not break the bar."""
        text = printable(text, limit=2000)
        if self.bar is not None:
            self.bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
