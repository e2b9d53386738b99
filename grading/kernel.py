"""Starting a notebook's kernel: in its sandbox (from scratch, or forked from a warm parent), behind its relay.

Each function makes a subclass of a jupyter_client kernel manager or client class, so that the
execute preprocessor the instructor configured keeps its own classes:

- :func:`sandboxed`: the kernel starts in the sandbox of :mod:`grading.sandbox`, within the
  notebook's room (:mod:`grading.room`), forked there from a warm parent (:mod:`grading.forked`)
  where it can be;
- :func:`relayed`: the manager's own sockets go through the notebook's relay (:mod:`grading.relay`);
- :func:`ready_at_once`: a client's wait for a new kernel ends once it is ready
  (:func:`grading.private_api.ready_at_once`).

Example
-------
>>> from jupyter_client.manager import AsyncKernelManager
>>> sandboxed(AsyncKernelManager, task, work, room).__name__  # doctest: +SKIP
'AsyncKernelManager'
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from grading.forked import ZygoteError, bwrap_child, holder_command, zygote_for
from grading.private_api import launching, ready_at_once
from grading.relay import Relay, relayed_client
from grading.room import Room
from grading.sandbox import command, kernel_env, rlimits, sandbox_args, uid_for_task
from grading.tasks import Task

__all__ = ["ready_at_once", "relayed", "sandboxed"]


def _tree(folder: Path) -> list[Path]:
    """A folder and everything in it, no link followed."""
    found = [folder]
    for here, dirs, files in os.walk(folder):
        found += [Path(here, name) for name in [*dirs, *files]]
    return found


def sandboxed(base: type, task: Task, work: Path, room: Room) -> type:
    """A subclass of a kernel manager class that starts its kernel in the sandbox of :mod:`grading.sandbox`.

    The kernel is interrupted by a message rather than a signal (signals do not cross into
    the sandbox's PID namespace); ipykernel then interrupts itself and its children. The
    kernel starts in ``room``, which holds the notebook's limits over all of its processes.
    With ``task.warm`` it is forked into the sandbox from a warm parent (:mod:`grading.forked`),
    or started in it from scratch where that fails.
    """
    bwrap = task.bwrap or ""
    ipc = room.ipc

    class Sandboxed(launching(base)):  # type: ignore[misc]
        async def grading_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            uid = uid_for_task()
            if uid:  # the kernel runs as its own user: it reads its connection file, and owns its working folder
                for path in [ipc, *ipc.iterdir(), *_tree(work)]:
                    os.chown(path, uid, uid, follow_symlinks=False)
            self.kernel_spec.interrupt_mode = "message"
            env = kw.get("env") or dict(os.environ)
            # what the kernel writes to its own stdout and stderr stays out of the grader's log
            kw["stdout"] = kw["stderr"] = subprocess.DEVNULL
            if task.warm and len(kernel_cmd) > 2 and kernel_cmd[1] == "-m":
                try:
                    await self.grading_fork_kernel(kernel_cmd, uid, env, kw)
                    return
                except ZygoteError:
                    pass  # started from scratch below, in a sandbox of its own
            argv = command(
                bwrap,
                kernel_cmd,
                work=work,
                ipc=ipc,
                tmp=room.tmp,
                limits=task.limits,
                uid=uid,
                env=env,
                memory_held=room.holds_memory,
            )
            await super().grading_launch_kernel(room.launcher(argv), **kw)
            room.watch(self.provisioner.pid)

        async def grading_fork_kernel(self, kernel_cmd: list[str], uid: int, env: dict[str, str], kw: Any) -> None:
            """Build the sandbox around a command that waits, then have the zygote fork the kernel into it."""
            args = sandbox_args(bwrap, kernel_cmd[0], work=work, ipc=ipc, tmp=room.tmp, limits=task.limits, env=env)
            inside = kernel_env(kernel_cmd[0], env)  # what the sandbox's --setenv pairs set
            zygote = zygote_for(kernel_cmd[0], inside)
            read, write = os.pipe()  # the sandbox's first command reads it until the kernel (the only writer) is gone
            try:
                launch = {**kw, "stdin": read, "stdout": subprocess.PIPE}
                await super().grading_launch_kernel(room.launcher([*args, "--", *holder_command()]), **launch)
                os.close(read)
                read = -1
                room.watch(self.provisioner.pid)
                process = self.provisioner.process
                try:
                    started = process.stdout.readline() == b"ready\n"
                    process.stdout.close()
                    if not started:
                        raise ZygoteError("the sandbox did not start")
                    request = {
                        "target": bwrap_child(self.provisioner.pid),
                        "userns": os.geteuid() != 0,
                        "cgroups": room.procs_files(),
                        "cwd": str(work),
                        "uid": uid,
                        "rlimits": rlimits(task.limits, memory_held=room.holds_memory),
                        "env": {**inside, "PWD": str(work)},  # bubblewrap sets PWD where it changes directory
                        "argv": kernel_cmd[2:],
                    }
                    room.watch(zygote.fork(request, write))
                except (ZygoteError, OSError) as err:
                    process.kill()
                    process.wait()
                    raise ZygoteError(str(err)) from err
            finally:
                for fd in (read, write):
                    if fd >= 0:
                        os.close(fd)

    Sandboxed.__name__ = base.__name__
    return Sandboxed


def relayed(base: type, relay: Relay) -> type:
    """A subclass of a kernel manager class whose own sockets (the control channel it interrupts and shuts the
    kernel down on) go through ``relay``, counted as ``"out"``, and which has the relay listen for the kernel's
    ports before each kernel starts."""
    manager = relayed_client(base, relay.prefix("out"))

    class Relayed(launching(manager)):  # type: ignore[misc]
        async def grading_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            relay.listen([self.shell_port, self.iopub_port, self.stdin_port, self.hb_port, self.control_port])
            await super().grading_launch_kernel(kernel_cmd, **kw)

    Relayed.__name__ = base.__name__
    return Relayed
