"""Checks judged in milliseconds: a student's kernel played in this process, for tests of the judge.

:class:`Kernel` runs answer code into a namespace of its own and answers the judge's requests
with :mod:`grading.in_kernel`, compiled afresh for each kernel (its table of handles is its
own), exactly as the sandboxed kernel does: each request and each reply goes through JSON, the
reply through the judge's strict decoder (:func:`grading.judge.parse_reply`), and a callback
the student's code makes mid-call goes to :meth:`grading.judge.Judge.answer_input` as the
kernel's ``input_request`` would. What it cannot play: a student who patches a module
(``numpy``) patches this process's, which the judge uses too; test those through the sandbox.

Example
-------
>>> judge, kernel = judged("def double(x):\\n    return 2 * x", student_names={"double"})
>>> judge.check("assert double(21) == 42")
[]
>>> score(judge.check("double(1) / 4"), points=2)
0.5
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterable
from typing import Any

from grading.judge import SOURCE, Judge, parse_reply

__all__ = ["Kernel", "judged", "score"]

LIMIT = 64 << 20  # characters of one reply, as ``--data`` allows by default


class Kernel:
    """A student's kernel in this process: a namespace, and :mod:`grading.in_kernel` answering in it."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"__name__": "__main__"}
        self.module = types.ModuleType("roofline_grader")
        exec(compile(SOURCE, "roofline_grader", "exec"), self.module.__dict__)  # noqa: S102 - the grader's own file
        self.judge: Judge | None = None
        self.requests: list[dict[str, Any]] = []

    def run(self, code: str) -> None:
        """Run a cell of the student's (an answer cell, or a set-up cell as the kernel runs it)."""
        exec(compile(code, "<cell>", "exec"), self.namespace)  # noqa: S102 - test code

    def ask(self, request: dict[str, Any]) -> Any:
        """Answer one of the judge's requests, through JSON both ways, as over the wire."""
        self.requests.append(request)
        reply = self.module.answer(json.dumps(request), self.namespace, self.input)
        return parse_reply(reply.text, LIMIT)

    def input(self, prompt: str) -> str:
        """The kernel's ``input_request``, answered by the judge's client."""
        return self.judge.answer_input(str(prompt)) if self.judge is not None else ""


def judged(
    answers: str | Iterable[str] = (),
    setups: Iterable[str] = (),
    student_names: Iterable[str] | None = None,
    modules: dict[str, types.ModuleType] | None = None,
) -> tuple[Judge, Kernel]:
    """A judge whose kernel has run the set-up cells and then ``answers``, and whose judge has run the set-ups."""
    kernel = Kernel()
    setups = list(setups)
    for code in setups:
        kernel.run(code)
    for code in [answers] if isinstance(answers, str) else answers:
        kernel.run(code)
    judge = Judge(kernel.ask, modules or {}, None if student_names is None else frozenset(student_names))
    kernel.judge = judge
    for code in setups:
        judge.setup(code)
    return judge, kernel


def score(outputs: list[dict[str, Any]], points: float = 1) -> float:
    """The points nbgrader's ``determine_grade`` gives a test cell of ``points`` with these outputs."""
    import nbformat
    from nbgrader.utils import determine_grade

    meta = {"nbgrader": {"grade": True, "grade_id": "t", "points": points, "solution": False, "locked": True}}
    cell = nbformat.v4.new_code_cell(outputs=[nbformat.from_dict(o) for o in outputs], metadata=meta)
    got, _ = determine_grade(cell)
    return float(got if got is not None else 0)
