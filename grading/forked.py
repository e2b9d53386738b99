"""Sandboxed kernels forked from a warm parent instead of started from scratch.

Starting a kernel costs about 0.6 s of CPU (Python, then importing ipykernel) and a notebook that
imports NumPy pays again; a notebook's own work takes milliseconds. So each worker process keeps
one zygote (:mod:`grading.zygote`) per kernel interpreter: a process, started outside the sandbox
from a clean environment, that has imported ipykernel and NumPy and never runs a notebook. For each
notebook the sandbox is built as before by bubblewrap (:func:`grading.sandbox.sandbox_args`),
around a first command that only waits; the zygote then forks a child into that sandbox's
namespaces and root, where it drops to the notebook's user and limits and becomes the kernel.
``Sandboxed.grading_fork_kernel`` (:mod:`grading.execute`) does the grader's half; :mod:`grading.zygote`
says what the child does.

The sandbox ends when the kernel does: its first command reads a pipe whose only writers are the
kernel and what the kernel starts.

Example
-------
>>> holder_command()[:2]
['/bin/sh', '-c']
"""

from __future__ import annotations

import atexit
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import types
from pathlib import Path
from typing import Any

from grading.sandbox import KERNEL_PROGRAM

START_TIMEOUT_S = 60.0  # the zygote's imports, on a busy machine
FORK_TIMEOUT_S = 30.0  # one kernel joining its sandbox

REGISTRY = "grading_forked_zygotes"  # where this process keeps its zygotes (see _registry)


class ZygoteError(RuntimeError):
    """The zygote could not start or could not fork a kernel (the caller starts the kernel the usual way)."""


def holder_command() -> list[str]:
    """The sandbox's first command: say it is ready, then read its standard input until every writer is gone."""
    return ["/bin/sh", "-c", "echo ready; exec cat > /dev/null"]


class Zygote:
    """One warm parent: ``python -c <grading.zygote>`` run with ``interpreter`` in environment ``env``."""

    def __init__(self, interpreter: str, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.home = tempfile.mkdtemp(prefix="grading-zygote-")  # a HOME of its own, empty: nothing to read there
        try:
            self.process = subprocess.Popen(
                [interpreter, "-c", KERNEL_PROGRAM],
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**env, "HOME": self.home},
                cwd=self.home,
                close_fds=True,
                start_new_session=True,  # no controlling terminal, for it or any kernel it forks
            )
        finally:
            theirs.close()
        self.channel = ours
        self._request_lock = threading.Lock()
        self._serial = 0
        reply = self._receive(START_TIMEOUT_S)
        if "ready" not in reply:
            self.close()
            raise ZygoteError(f"the zygote did not start ({reply.get('error', reply)})")

    def _receive(self, timeout: float) -> dict[str, Any]:
        ready, _, _ = select.select([self.channel], [], [], timeout)
        data = self.channel.recv(1 << 16) if ready else b""
        if not data:
            raise ZygoteError("the zygote did not answer" if not ready else "the zygote is gone")
        answer: dict[str, Any] = json.loads(data)
        return answer

    def alive(self) -> bool:
        return self.process.poll() is None

    def fork(self, request: dict[str, Any], alive_fd: int) -> int:
        """Fork a kernel into the sandbox ``request`` names; the pid of the child that waits for it."""
        with self._request_lock:
            self._serial += 1
            try:
                socket.send_fds(self.channel, [json.dumps({**request, "serial": self._serial}).encode()], [alive_fd])
                reply = self._receive(FORK_TIMEOUT_S)
                if reply.get("serial") != self._serial:
                    raise ZygoteError(f"the zygote answered request {reply.get('serial')}, not {self._serial}")
            except (OSError, ValueError, ZygoteError) as err:
                # a late answer, or none: this zygote is done with (the next notebook starts another), so that no
                # answer ever reaches the wrong notebook
                self.close()
                raise ZygoteError(f"the zygote failed ({type(err).__name__}: {err})") from err
        if "pid" not in reply:
            raise ZygoteError(f"the kernel could not join its sandbox ({reply.get('error', reply)})")
        return int(reply["pid"])

    def close(self) -> None:
        self.channel.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if os.path.isdir(self.home):
            os.rmdir(self.home)


def _registry() -> Any:
    """This process's zygotes and their lock, kept in ``sys.modules``: this module's code travels by value with
    each task (:mod:`grading.cluster`), so its own globals are new with every task."""
    fresh = types.ModuleType(REGISTRY)
    vars(fresh).update(lock=threading.Lock(), zygotes={})
    registry = sys.modules.setdefault(REGISTRY, fresh)
    if registry is fresh:  # the first in this process: its zygotes are stopped when the process ends
        atexit.register(lambda: [zygote.close() for zygote in list(fresh.zygotes.values())])
    return registry


def zygote_for(interpreter: str, env: dict[str, str]) -> Zygote:
    """This process's zygote for a kernel interpreter and environment (started when first needed)."""
    key = (interpreter, tuple(sorted(env.items())))
    registry = _registry()
    with registry.lock:
        found = registry.zygotes.get(key)
        if found is None or not found.alive():
            if found is not None:
                found.close()
            found = registry.zygotes[key] = Zygote(interpreter, env)
        zygote: Zygote = found
        return zygote


def bwrap_child(pid: int) -> int:
    """The first process bubblewrap started (its child): the one whose namespaces and root are the sandbox's."""
    for task in os.listdir(f"/proc/{pid}/task"):
        children = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        if children:
            return int(children[0])
    raise ZygoteError("the sandbox has no process to join")
