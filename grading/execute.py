"""The one step that runs on a worker: run a sanitized notebook in the sandbox and judge its checks here.

Everything a task needs travels with it (the notebook, the assignment's shipped files, the
instructor's nbgrader configuration as text), so workers need no shared file system. The
configured execute preprocessor (``c.Autograde.autograde_preprocessors``) runs the notebook,
with its kernel in the sandbox (:mod:`grading.kernel`, :mod:`grading.sandbox`) and held to the
task's limits (:mod:`grading.limits`). Only the answer cells, the cells the student added and the
locked set-up cells go to the kernel (:mod:`grading.roles`); every graded check is run by the judge
(:mod:`grading.judge`) in this process, at its place in the notebook (:mod:`grading.executor`).
Every connection to the kernel goes through the notebook's relay (:mod:`grading.relay`), which
counts what the kernel sends against ``--output`` (the judge's replies against ``--data``) before
this process takes it in. Nothing here touches the gradebook.

The names other modules used from here before it was split (:class:`Task`, :class:`Outcome`,
:func:`one_line`, :func:`cell_role`, :func:`executors`...) are still importable from it.

Example
-------
>>> task = Task("ada", "hw1", "q1", '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
...             files={}, config_files=(), cli_config={})
>>> outcome = execute(task)          # doctest: +SKIP
>>> outcome.error is None            # doctest: +SKIP
True
"""

from __future__ import annotations

import contextlib
import socket
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import nbformat

from grading.executor import executors, load_config, over, watched
from grading.kernel import ready_at_once, relayed, sandboxed
from grading.limits import not_graded, ran_too_long
from grading.private_api import check_versions
from grading.relay import DATA, Meter, Relay
from grading.roles import cell_role, notebook_without_hidden_tests, placed_setups, without_hidden_tests
from grading.room import Room
from grading.snapshot import Snapshot
from grading.tasks import Outcome, Task, one_line

__all__ = [
    "Outcome",
    "Task",
    "cell_role",
    "execute",
    "executors",
    "load_config",
    "one_line",
    "ready_at_once",
    "run_task",
    "without_hidden_tests",
]


PAGE = 4096  # what a file's data takes at least on the tmpfs of the kernel's working folder


def _safe(rel: str) -> bool:
    """Whether a submitted file's path names a file inside the kernel's folder (no notebook: it is written apart).

    >>> _safe("data/chip.json"), _safe("../x"), _safe("/etc/passwd"), _safe("q1.ipynb")
    (True, False, False, False)
    """
    parts = rel.split("/")
    return bool(rel) and not rel.endswith(".ipynb") and all(part not in ("", ".", "..") for part in parts)


def execute(task: Task) -> Outcome:
    """Execute one notebook in a fresh temporary directory; never raises.

    The kernel's working directory holds the notebook (without hidden tests), the submission's
    other files and the shipped files over them, as ``nbgrader autograde`` lays them out; it is
    writable within ``--file-size``, and each check sees a grader-side copy of it
    (:mod:`grading.snapshot`). The kernel talks to this process over IPC sockets in a folder of its own, so
    kernels running side by side share neither ports nor files. With ``task.bwrap`` the
    kernel runs in the sandbox, bounded by ``task.limits``; a notebook that goes over a
    limit is not graded (``outcome.error`` says which limit). Safe to call from several
    threads at once.
    """
    outcome = Outcome(task.student, task.notebook, host=socket.gethostname())
    start = time.perf_counter()
    try:
        check_versions()
        with tempfile.TemporaryDirectory(prefix="grading-") as tmp, contextlib.ExitStack() as stack:
            root = Path(tmp)
            shipped = {rel: data for rel, data in task.files.items() if rel not in task.kept}
            folder = {**{rel: data for rel, data in task.submitted.items() if _safe(rel)}, **shipped}
            held = sum(-(-len(data) // PAGE) * PAGE + PAGE for data in folder.values()) + len(task.source) + PAGE
            room = stack.enter_context(Room(task.limits, root=root, held=held)) if task.bwrap else None
            work = room.work if room is not None else root / "work"
            ipc = room.ipc if room is not None else root / "ipc"
            (root / "tmp").mkdir()
            ipc.mkdir(exist_ok=True)
            work.mkdir(exist_ok=True)
            for rel, data in folder.items():  # as nbgrader lays the folder out: the shipped files over the student's
                target = work / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            config = load_config(task.config_files, task.cli_config, root)
            nb = nbformat.reads(task.source, as_version=4)
            if not task.setups and any(cell_role(cell) == "setup" for cell in nb.cells):
                # the judge's trusted names come from the instructor's set-up cells, never from the submission's
                raise ValueError("the task carries none of the instructor's set-up cells (Task.setups)")
            (work / f"{task.notebook}.ipynb").write_text(notebook_without_hidden_tests(nb, config), encoding="utf-8")
            for path in [work, *work.rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)
            config.KernelManager.transport = "ipc"
            config.KernelManager.ip = str(ipc / "kernel")
            config.KernelManager.connection_file = str(ipc / "kernel.json")
            resources: dict[str, Any] = {
                "metadata": {"path": str(work), "name": task.notebook},
                "unique_key": task.notebook,
                "nbgrader": {"student": task.student, "assignment": task.assignment, "notebook": task.notebook},
            }
            found = executors(config)
            if not found:  # nothing would run: every check would keep its empty outputs, and score in full
                raise ValueError("no execute preprocessor in c.Autograde.autograde_preprocessors")
            for index, (_, cls) in enumerate(found):
                pp = watched(cls)(config=config)
                pp.grading_limits = task.limits
                pp.grading_timeouts = []
                pp.grading_output_meter = Meter(task.limits.output, over(pp, "output"))
                # the judge's replies are parsed by its bounded decoder only (no notebook nodes), numbers included
                meters = {"out": pp.grading_output_meter, "data": Meter(task.limits.data, over(pp, "data"), DATA)}
                pp.grading_relay = stack.enter_context(
                    contextlib.closing(Relay(root / f"relay{index}", str(ipc / "kernel"), meters))
                )
                # the kernel is killed once the last cell has run: its outputs are in, and the notebook's room
                # kills whatever else it started, so a graceful shutdown (a request, then polling for the exit)
                # would only add time
                pp.shutdown_kernel = "immediate"
                pp.grading_env = {"NBGRADER_EXECUTION": "autograde", "TMPDIR": str(root / "tmp")}
                pp.grading_reply_limit = task.limits.data
                pp.grading_files = task.files
                pp.grading_student_names = task.student_names
                order = {grade_id: index for index, grade_id in enumerate(task.order)}
                pp.grading_setups = placed_setups(task.setups, order)
                pp.grading_order = order
                pp.grading_judge_folder = root / "judge"
                pp.grading_snapshot = Snapshot(work, root / f"snapshot{index}", shipped)
                pp.kernel_manager_class = relayed(pp.kernel_manager_class, pp.grading_relay)
                if room is not None:
                    pp.grading_sandboxed = True
                    pp.kernel_manager_class = sandboxed(pp.kernel_manager_class, task, work, room)
                    pp.grading_room = room
                timer = threading.Timer(task.limits.wall, pp.stop, [ran_too_long(task.limits)])
                timer.daemon = True
                timer.start()
                try:
                    nb, resources = pp(nb, resources)
                finally:
                    timer.cancel()
                    pp.grading_close()
                outcome.timeouts += pp.grading_timeouts
                outcome.kernel_died = outcome.kernel_died or pp.grading_kernel_died
                if room is not None:  # only the room's own evidence says a limit of the room was hit
                    pp.grading_limit = room.reason or pp.grading_limit
                if pp.grading_limit is not None:
                    outcome.error = not_graded(pp.grading_limit)
                    break
            else:
                outcome.executed = nbformat.writes(nb)
    except Exception as err:  # noqa: BLE001 - any failure costs this notebook only
        outcome.error = one_line(err)
    outcome.seconds = time.perf_counter() - start
    return outcome


def run_task(task: Task) -> dict[str, Any]:
    """What a worker runs: :func:`execute`, its outcome as a plain dict."""
    return asdict(execute(task))
