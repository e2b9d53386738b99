"""What travels to a worker (:class:`Task`) and back (:class:`Outcome`).

Everything a task needs travels with it (the notebook, the files of its folder, the
instructor's nbgrader configuration as text), so workers need no shared file system.

Example
-------
>>> task = Task("ada", "hw1", "q1", "{}", files={}, config_files=(), cli_config={})
>>> task.limits.wall, Outcome("ada", "q1").error is None
(600, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grading.limits import Limits

__all__ = ["Outcome", "Task", "one_line"]


@dataclass(frozen=True)
class Task:
    """One notebook to execute: who, what, and everything needed to run it anywhere."""

    student: str
    assignment: str
    notebook: str
    source: str
    files: dict[str, bytes]  # the assignment's shipped files (its helper modules, its data)
    config_files: tuple[tuple[str, str], ...]
    cli_config: dict[str, Any]
    bwrap: str | None = None  # the sandbox program; None runs the kernel unconfined (--unsafe)
    limits: Limits = field(default_factory=Limits)
    # the instructor's locked set-up cells (from the gradebook), for the judge: (grade id, text), or a text alone
    setups: tuple[str | tuple[str, str], ...] = ()
    warm: bool = True  # a sandboxed kernel is forked from a warm parent (grading.forked), not started from scratch
    order: tuple[str, ...] = ()  # grade ids of the instructor's set-up cells and checks in order (roles.judged_order)
    submitted: dict[str, bytes] = field(default_factory=dict)  # the submission's other files (no notebook)
    kept: tuple[str, ...] = ()  # shipped files the submission's own copy stands for (Autograde.exclude_overwriting)
    student_names: frozenset[str] | None = None  # what the answer cells bind (grading.judge.student_names)


@dataclass
class Outcome:
    """What came back from a worker: the executed notebook, or why there is none."""

    student: str
    notebook: str
    executed: str | None = None
    error: str | None = None
    kernel_died: bool = False
    timeouts: list[str] = field(default_factory=list)
    seconds: float = 0.0
    host: str = ""


def one_line(err: BaseException) -> str:
    """A one-line reason for an exception.

    >>> one_line(ValueError("bad value\\nmore detail"))
    'ValueError: bad value'
    """
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__
