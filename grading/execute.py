"""The one step that runs on a worker: execute a sanitized notebook in a fresh temporary directory.

Everything a task needs travels with it (the notebook, the assignment's shipped files, the
instructor's nbgrader configuration as text), so workers need no shared file system. The
configured execute preprocessor (``c.Autograde.autograde_preprocessors``) runs unchanged,
wrapped only to notice time-outs and kernel deaths. Nothing here touches the gradebook.

Example
-------
>>> task = Task("ada", "hw1", "q1", '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
...             files={}, config_files=(), cli_config={})
>>> outcome = execute(task)          # doctest: +SKIP
>>> outcome.error is None            # doctest: +SKIP
True
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from jupyter_core.utils import ensure_async, run_sync
from nbclient import NotebookClient
from nbgrader.converters import Autograde
from traitlets.config import Config
from traitlets.config.loader import JSONFileConfigLoader, PyFileConfigLoader
from traitlets.utils.importstring import import_item


@dataclass(frozen=True)
class Task:
    """One notebook to execute: who, what, and everything needed to run it anywhere."""

    student: str
    assignment: str
    notebook: str
    source: str
    files: dict[str, bytes]
    config_files: tuple[tuple[str, str], ...]
    cli_config: dict[str, Any]


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


def load_config(config_files: tuple[tuple[str, str], ...], cli_config: dict[str, Any], folder: Path) -> Config:
    """Rebuild the instructor's configuration from the text of its files, then the command-line settings."""
    config = Config()
    for index, (name, text) in enumerate(config_files):
        path = folder / f"config{index}" / name
        path.parent.mkdir(parents=True)
        path.write_text(text, encoding="utf-8")
        loader_class = JSONFileConfigLoader if name.endswith(".json") else PyFileConfigLoader
        config.merge(loader_class(path.name, path=str(path.parent)).load_config())
    config.merge(Config(cli_config))
    return config


def executors(config: Config) -> list[tuple[int, type]]:
    """The configured autograde preprocessors that run the notebook, with their positions in the list."""
    found = []
    for index, item in enumerate(Autograde(config=config).autograde_preprocessors):
        cls = import_item(item) if isinstance(item, str) else item
        if isinstance(cls, type) and issubclass(cls, NotebookClient):
            found.append((index, cls))
    return found


def watched(cls: type) -> type:
    """A subclass of an execute preprocessor that records time-outs and kernel deaths.

    Its kernel also exits when the worker that started it dies (ipykernel's parent poller),
    so a killed worker leaves no kernel behind.
    """
    sync = run_sync  # a local name: the class body then finds it when this code travels by value

    class Watched(cls):
        extra_arguments: list[str]
        grading_timeouts: list[str]
        grading_kernel_died: bool
        grading_env: dict[str, str]

        async def async_start_new_kernel(self, **kwargs: Any) -> None:
            kwargs.setdefault("env", {**os.environ, **self.grading_env})
            if getattr(self.km, "ipykernel", False):
                self.extra_arguments = [*self.extra_arguments, f"--IPKernelApp.parent_handle={os.getpid()}"]
            await super().async_start_new_kernel(**kwargs)

        start_new_kernel = sync(async_start_new_kernel)

        async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
            gid = (cell or {}).get("metadata", {}).get("nbgrader", {}).get("grade_id") if cell else None
            self.grading_timeouts.append(gid or "a cell")
            return await super()._async_handle_timeout(timeout, cell)

        async def _async_cleanup_kernel(self) -> None:
            if self.km is not None and self.km.has_kernel and not await ensure_async(self.km.is_alive()):
                self.grading_kernel_died = True
            await super()._async_cleanup_kernel()

        _cleanup_kernel = sync(_async_cleanup_kernel)

    Watched.__name__ = cls.__name__
    Watched.__qualname__ = cls.__qualname__
    return Watched


def execute(task: Task) -> Outcome:
    """Execute one notebook in a fresh temporary directory; never raises.

    The kernel's working directory holds only the notebook and the shipped files, its
    temporary directory (``TMPDIR``) is private, and it talks to this process over IPC
    sockets in that directory, so kernels running side by side share neither ports nor
    files. Safe to call from several threads at once.
    """
    outcome = Outcome(task.student, task.notebook, host=socket.gethostname())
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="grading-") as tmp:
            root = Path(tmp)
            work = root / "work"
            (root / "tmp").mkdir()
            for rel, data in task.files.items():
                target = work / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            work.mkdir(exist_ok=True)
            (work / f"{task.notebook}.ipynb").write_text(task.source, encoding="utf-8")
            config = load_config(task.config_files, task.cli_config, root)
            config.KernelManager.transport = "ipc"
            config.KernelManager.ip = str(root / "kernel")
            nb = nbformat.reads(task.source, as_version=4)
            resources: dict[str, Any] = {
                "metadata": {"path": str(work), "name": task.notebook},
                "unique_key": task.notebook,
                "nbgrader": {"student": task.student, "assignment": task.assignment, "notebook": task.notebook},
            }
            for _, cls in executors(config):
                pp = watched(cls)(config=config)
                pp.grading_timeouts, pp.grading_kernel_died = [], False
                pp.grading_env = {"NBGRADER_EXECUTION": "autograde", "TMPDIR": str(root / "tmp")}
                nb, resources = pp(nb, resources)
                outcome.timeouts += pp.grading_timeouts
                outcome.kernel_died = outcome.kernel_died or pp.grading_kernel_died
            outcome.executed = nbformat.writes(nb)
    except Exception as err:  # noqa: BLE001 - any failure costs this notebook only
        outcome.error = one_line(err)
    outcome.seconds = time.perf_counter() - start
    return outcome


def run_task(task: Task) -> dict[str, Any]:
    """What a worker runs: :func:`execute`, its outcome as a plain dict."""
    return asdict(execute(task))
