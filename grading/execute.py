"""The one step that runs on a worker: run a sanitized notebook in the sandbox and judge its checks here.

Everything a task needs travels with it (the notebook, the assignment's shipped files, the
instructor's nbgrader configuration as text), so workers need no shared file system. The
configured execute preprocessor (``c.Autograde.autograde_preprocessors``) runs the notebook,
with its kernel in the sandbox (:mod:`grading.sandbox`) and held to the task's limits. Only
the answer cells, the cells the student added and the locked set-up cells go to the kernel;
every graded check is run by the judge (:mod:`grading.judge`) in this process, at its place
in the notebook, and its outcome becomes the cell's output, which nbgrader then scores as
usual. Every connection to the kernel goes through the notebook's relay (:mod:`grading.relay`),
which counts what the kernel sends against ``--output`` (the judge's replies against
``--data``) before this process takes it in. Nothing here touches the gradebook.

Example
-------
>>> task = Task("ada", "hw1", "q1", '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
...             files={}, config_files=(), cli_config={})
>>> outcome = execute(task)          # doctest: +SKIP
>>> outcome.error is None            # doctest: +SKIP
True
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import zmq
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_core.utils import ensure_async, run_sync
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbgrader import utils as nbgrader_utils
from nbgrader.converters import Autograde
from nbgrader.preprocessors import ClearHiddenTests
from traitlets.config import Config
from traitlets.config.loader import JSONFileConfigLoader, PyFileConfigLoader
from traitlets.utils.importstring import import_item

from grading.forked import ZygoteError, bwrap_child, holder_command, zygote_for
from grading.judge import Judge, NoAnswer, TimedOut, expression, parse_reply
from grading.relay import DATA, Meter, Relay, relayed_client
from grading.room import Room
from grading.sandbox import Limits, command, kernel_env, rlimits, sandbox_args, shown, uid_for_task


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
    bwrap: str | None = None  # the sandbox program; None runs the kernel unconfined (--unsafe)
    limits: Limits = field(default_factory=Limits)
    setups: tuple[str, ...] = ()  # the instructor's locked set-up cells (from the gradebook), for the judge
    warm: bool = True  # a sandboxed kernel is forked from a warm parent (grading.forked), not started from scratch
    student_names: frozenset[str] | None = (
        None  # what the answer cells bind (grading.judge.student_names), for the judge
    )


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

    class Sandboxed(base):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            uid = uid_for_task()
            if uid:  # the kernel runs as its own user: it must be able to read its connection file
                for path in [ipc, *ipc.iterdir()]:
                    os.chown(path, uid, uid)
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
            await super()._async_launch_kernel(room.launcher(argv), **kw)
            room.watch(self.provisioner.pid)

        async def grading_fork_kernel(self, kernel_cmd: list[str], uid: int, env: dict[str, str], kw: Any) -> None:
            """Build the sandbox around a command that waits, then have the zygote fork the kernel into it."""
            args = sandbox_args(bwrap, kernel_cmd[0], work=work, ipc=ipc, tmp=room.tmp, limits=task.limits, env=env)
            inside = kernel_env(kernel_cmd[0], env)  # what the sandbox's --setenv pairs set
            zygote = zygote_for(kernel_cmd[0], inside)
            read, write = os.pipe()  # the sandbox's first command reads it until the kernel (the only writer) is gone
            try:
                launch = {**kw, "stdin": read, "stdout": subprocess.PIPE}
                await super()._async_launch_kernel(room.launcher([*args, "--", *holder_command()]), **launch)
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

    class Relayed(manager):  # type: ignore[misc,valid-type]
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            relay.listen([self.shell_port, self.iopub_port, self.stdin_port, self.hb_port, self.control_port])
            await super()._async_launch_kernel(kernel_cmd, **kw)

    Relayed.__name__ = base.__name__
    return Relayed


def without_hidden_tests(source: str, config: Config | None = None) -> str:
    """A check's text without its hidden tests, cut as nbgrader's ``ClearHiddenTests`` (as configured) cuts them.

    >>> without_hidden_tests("a = 1\\n### BEGIN HIDDEN TESTS\\nb = 2\\n### END HIDDEN TESTS\\nc = 3")
    'a = 1\\nc = 3'
    """
    clear = ClearHiddenTests(config=config or Config())
    begin, end = clear.begin_test_delimeter, clear.end_test_delimeter
    kept, hidden = [], False
    for line in source.splitlines():
        if begin in line:
            hidden = True
        elif end in line:
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept)


def _field(message: Any, *keys: str) -> Any:
    """``message[keys[0]][keys[1]]...`` of a message the kernel sent, or None where any level is not a dict.

    >>> _field({"content": {"status": "ok"}}, "content", "status"), _field({"content": ["ok"]}, "content", "status")
    ('ok', None)
    """
    for key in keys:
        message = message.get(key) if isinstance(message, dict) else None
    return message


def cell_role(cell: Any) -> str:
    """Who runs a cell: ``"kernel"``, ``"setup"`` (both rooms: a locked set-up cell) or ``"check"`` (the judge only:
    a test cell).

    The roles are nbgrader's own (:func:`nbgrader.utils.is_grade`, ``is_solution``, ``is_locked``): a grade cell
    that is not a solution is locked whatever its ``locked`` flag says, as nbgrader's documentation example saves
    its test cells with ``"locked": false``. nbgrader has already restored every locked cell's text and flags from
    the gradebook (``OverwriteCells``), and dropped the id of any cell the gradebook does not know, so these cells
    hold the instructor's text whatever the submission contained.

    >>> cell_role({"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "t", "grade": True, "locked": True}}})
    'check'
    >>> cell_role({"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "t", "grade": True, "locked": False}}})
    'check'
    >>> cell_role({"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "s", "locked": True}}})
    'setup'
    """
    cell = nbformat.from_dict(cell)
    if cell.get("cell_type") != "code" or not cell.metadata.get("nbgrader", {}).get("grade_id"):
        return "kernel"
    if nbgrader_utils.is_solution(cell):
        return "kernel"
    if nbgrader_utils.is_grade(cell):
        return "check"
    return "setup" if nbgrader_utils.is_locked(cell) else "kernel"


def ready_at_once(base: type) -> type:
    """A subclass of an asynchronous kernel client class whose wait for a new kernel ends once the kernel is ready.

    jupyter_client's wait asks for the kernel's info until the reply comes on the shell channel and a message
    comes on IOPub (so IOPub is connected), then listens to IOPub until it has been quiet for 0.2 s, to drop
    what the kernel said as it started. That last step is left out: the notebook client reads only the IOPub
    messages whose parent is its own request, so what is left of the start is dropped there, and every
    notebook starts 0.2 s sooner. The rest is jupyter_client's ``KernelClient._async_wait_for_ready`` (8.10):
    compare the two when upgrading it.
    """
    if getattr(base, "grading_ready_at_once", False):
        return base

    class ReadyAtOnce(base):
        grading_ready_at_once = True

        async def wait_for_ready(self, timeout: float | None = None) -> None:
            deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
            while True:
                self.kernel_info()
                try:
                    reply = await ensure_async(self.shell_channel.get_msg(timeout=1))
                except queue.Empty:
                    reply = None
                if reply is not None and reply["msg_type"] == "kernel_info_reply":
                    try:
                        await ensure_async(self.iopub_channel.get_msg(timeout=0.2))
                    except queue.Empty:
                        pass  # IOPub not connected yet: ask again
                    else:
                        self._handle_kernel_info_reply(reply)
                        return
                if not await ensure_async(self.is_alive()):
                    raise RuntimeError("Kernel died before replying to kernel_info")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")

    return ReadyAtOnce


def watched(cls: type) -> type:
    """A subclass of an execute preprocessor that records time-outs and kernel deaths, and enforces limits.

    Its kernel also exits when the worker that started it dies (ipykernel's parent poller, or
    bubblewrap's ``--die-with-parent``), so a killed worker leaves no kernel behind. What the
    kernel sends is counted by the notebook's relay (:mod:`grading.relay`): past ``--output`` (or
    ``--data`` for the judge's replies) the notebook is stopped and nothing more is read.
    """
    sync = run_sync  # a local name: the class body then finds it when this code travels by value

    class DeadKernelGone(Exception):
        """The kernel died while the judge waited for its answer."""

    class Watched(cls):
        extra_arguments: list[str]
        grading_env: dict[str, str]
        grading_sandboxed: bool = False
        grading_limits: Limits
        grading_limit: str | None = None
        grading_judge: Judge | None = None
        grading_room: Room | None = None
        grading_client: Any = None
        grading_thread: concurrent.futures.ThreadPoolExecutor | None = None
        grading_files: dict[str, bytes]
        grading_setups: tuple[str, ...] = ()
        grading_student_names: frozenset[str] | None = None
        grading_judge_folder: Path
        grading_relay: Relay
        grading_output_meter: Meter
        grading_reply_limit: int = 64 << 20
        grading_installed: bool = False  # the kernel holds grading.in_kernel as a module (a request has run it)
        grading_timeouts: list[str]  # cells the time-out handler interrupted (set per notebook)
        grading_kernel_died: bool = False  # the kernel was seen dead (nbclient's check, or the judge's wait)
        grading_cell: str = ""  # the cell running now, as a time-out names it
        grading_check_timeout: bool = False  # the judge's requests for the running check ran out of time

        async def async_start_new_kernel(self, **kwargs: Any) -> None:
            kwargs.setdefault("env", {**os.environ, **self.grading_env})
            if getattr(self.km, "ipykernel", False) and not self.grading_sandboxed:
                self.extra_arguments = [*self.extra_arguments, f"--IPKernelApp.parent_handle={os.getpid()}"]
            await super().async_start_new_kernel(**kwargs)

        start_new_kernel = sync(async_start_new_kernel)

        async def async_start_new_kernel_client(self) -> Any:
            out = self.grading_relay.prefix("out")
            self.km.client_factory = ready_at_once(relayed_client(self.km.client_factory, out))
            client = await super().async_start_new_kernel_client()
            if self.grading_sandboxed:  # the kernel has read it: nothing in the sandbox may learn the key
                Path(self.km.connection_file).unlink(missing_ok=True)
            return client

        start_new_kernel_client = sync(async_start_new_kernel_client)

        def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
            """Drop every message once the notebook is stopped. Each message was counted against ``--output`` as it
            arrived (:mod:`grading.relay`); an output with a display id counts again for each earlier output it
            rewrites (nbclient gives them all its data), so one update cannot fill a notebook with copies."""
            if self.grading_limit is not None:
                return None
            content = msg.get("content", {})
            display_id = (content.get("transient") or {}).get("display_id") if isinstance(content, dict) else None
            if display_id and msg.get("msg_type") in {"execute_result", "display_data", "update_display_data"}:
                copies = sum(len(outputs) for outputs in self._display_id_map.get(display_id, {}).values())
                if copies and not self.grading_output_meter.charge(copies * len(json.dumps(content))):
                    return None
            return super().process_message(msg, cell, cell_index)

        def stop(self, reason: str) -> None:
            """Kill the kernel (safe from any thread); the notebook then ends as after a kernel death."""
            if self.grading_limit is None:
                self.grading_limit = reason
            if self.grading_room is not None:
                self.grading_room.kill()
            pid = getattr(getattr(self.km, "provisioner", None), "pid", None)
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

        async def async_execute_cell(
            self, cell: Any, cell_index: int, execution_count: int | None = None, store_history: bool = True
        ) -> Any:
            role = cell_role(cell)
            self.grading_cell = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or f"cell {cell_index + 1}"
            if role in ("kernel", "setup") or not cell.source.strip():
                try:
                    return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
                except DeadKernelError:
                    self.grading_kernel_died = True
                    raise
            # a check, decided by the judge; the kernel runs the check's visible part, as the student's own run did (a later cell may use
            # a name it defines); what it prints or raises is dropped: the judge's run decides the cell
            visible = nbformat.from_dict(
                {**cell, "source": without_hidden_tests(cell.source, self.config), "outputs": []}
            )
            await super().async_execute_cell(visible, cell_index, execution_count, False)
            self.grading_check_timeout = False
            outputs = await self.grading_in_judge(lambda judge: judge.check(cell.source, self.grading_cell))
            self.code_cells_executed += 1
            if self.grading_check_timeout:
                self.grading_timeouts.append(self.grading_cell)
            if (
                self.grading_check_timeout
                and outputs
                and outputs[-1].get("ename") == "TimedOut"
                and self.error_on_timeout
            ):
                # a time-out reads as nbgrader's own: the interrupted kernel's error, then Execute.error_on_timeout
                interrupted = {"output_type": "error", "ename": "KeyboardInterrupt", "evalue": "", "traceback": []}
                outputs[-1:] = [interrupted, {"output_type": "error", **self.error_on_timeout}]
            cell.outputs = [nbformat.from_dict(output) for output in outputs]
            cell.execution_count = execution_count or self.code_cells_executed
            self.nb.cells[cell_index] = cell  # nbclient put the kernel's copy there
            return cell

        execute_cell = sync(async_execute_cell)

        async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
            """nbclient's time-out handler, which records the cell it interrupts (the only evidence of a time-out:
            a cell's own error of the same name is the cell's)."""
            self.grading_timeouts.append(self.grading_cell)
            return await super()._async_handle_timeout(timeout, cell)

        async def _async_check_alive(self) -> None:
            try:
                await super()._async_check_alive()
            except DeadKernelError:
                self.grading_kernel_died = True
                raise

        async def grading_in_judge(self, work: Any) -> Any:
            """Run ``work(judge)`` on the judge's own thread, which talks to the kernel through a client of its own.

            A check has the cell time-out (``--timeout``) for all its requests together, as a
            cell has in nbgrader; the whole notebook is bounded by ``--wall``.
            """
            loop = asyncio.get_running_loop()
            if self.grading_limit is not None:  # stopped: it is not graded, and its kernel answers nothing more
                return [{"output_type": "error", "ename": "NoAnswer", "evalue": self.grading_limit, "traceback": []}]
            limit = self.timeout if self.timeout and self.timeout > 0 else 600
            deadline = time.monotonic() + limit
            if self.grading_thread is None:
                self.grading_thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="judge")

            def ask(request: dict[str, Any]) -> Any:
                try:
                    text = self.grading_ask(json.dumps(request), deadline - time.monotonic(), loop)
                except TimeoutError:
                    self.grading_check_timeout = True
                    raise TimedOut(f"the kernel did not answer within {limit} s (--timeout)") from None
                except DeadKernelGone:
                    self.grading_kernel_died = True
                    raise NoAnswer("the kernel died before it answered") from None
                return parse_reply(text, self.grading_reply_limit)

            if self.grading_judge is None:
                self.grading_judge = Judge.for_files(
                    ask, self.grading_files, self.grading_judge_folder, self.grading_student_names
                )
                for source in self.grading_setups:
                    self.grading_judge.setup(source)
            self.grading_judge.ask = ask
            return await loop.run_in_executor(self.grading_thread, work, self.grading_judge)

        def grading_close_client(self) -> None:
            """On the judge's thread: close its kernel client and the event loop the client made there."""
            if self.grading_client is not None:
                self.grading_client.stop_channels()
                self.grading_client.context.destroy(linger=0)
                self.grading_client = None
            with contextlib.suppress(RuntimeError):
                asyncio.get_event_loop().close()

        def grading_ask(self, request: str, timeout: float, loop: Any) -> Any:
            """Send one request to the kernel (from the judge's thread); its reply's text, or None.

            The first request carries :mod:`grading.in_kernel`'s text, which the kernel keeps as a module; later
            ones only name it, and go again with the text when the kernel no longer has the module.
            """
            deadline = time.monotonic() + timeout
            if self.grading_installed:
                text = self.grading_ask_once(expression(request, install=False), timeout, loop)
                if text is not None:
                    return text
            text = self.grading_ask_once(expression(request), deadline - time.monotonic(), loop)
            self.grading_installed = text is not None
            return text

        def grading_ask_once(self, code: str, timeout: float, loop: Any) -> Any:
            """Evaluate ``code`` in the kernel (from the judge's thread); the text of its value, or None. Meanwhile
            each ``input_request`` the kernel sends for it (a check's callback) is answered by the judge."""
            if timeout <= 0:
                raise TimeoutError
            if self.grading_client is None:
                # through the relay: every byte of every message it receives counts against --data
                client = relayed_client(BlockingKernelClient, self.grading_relay.prefix("data"))(context=zmq.Context())
                client.load_connection_info(self.km.get_connection_info(session=False))
                # stdin: the kernel asks for a check's callbacks there while it runs a call of the judge's
                client.start_channels(shell=True, iopub=False, stdin=True, hb=False, control=False)
                self.grading_client = client
            msg_id = self.grading_client.execute(
                "",
                silent=True,
                store_history=False,
                user_expressions={"r": code},
                allow_stdin=True,
                stop_on_error=False,
            )
            poller = zmq.Poller()
            poller.register(self.grading_client.shell_channel.socket, zmq.POLLIN)
            poller.register(self.grading_client.stdin_channel.socket, zmq.POLLIN)
            deadline = time.monotonic() + timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    with contextlib.suppress(Exception):
                        asyncio.run_coroutine_threadsafe(ensure_async(self.km.interrupt_kernel()), loop).result(10)
                    raise TimeoutError
                ready = dict(poller.poll(int(min(remaining, 1.0) * 1000)))
                if self.grading_client.stdin_channel.socket in ready:
                    msg = self.grading_client.get_stdin_msg(timeout=0)
                    if msg["msg_type"] == "input_request" and _field(msg, "parent_header", "msg_id") == msg_id:
                        prompt = _field(msg, "content", "prompt")
                        judge = self.grading_judge
                        reply = judge.answer_input(prompt) if judge is not None and isinstance(prompt, str) else ""
                        self.grading_client.input(reply)
                    continue
                if self.grading_client.shell_channel.socket not in ready:
                    alive = asyncio.run_coroutine_threadsafe(ensure_async(self.km.is_alive()), loop).result(10)
                    if not alive:
                        raise DeadKernelGone from None
                    continue
                msg = self.grading_client.get_shell_msg(timeout=0)
                if _field(msg, "parent_header", "msg_id") != msg_id:
                    continue
                found = _field(msg, "content", "user_expressions", "r")
                return _field(found, "data", "text/plain") if _field(found, "status") == "ok" else None

        def grading_close(self) -> None:
            """Close the judge's client and thread, once the notebook has run."""
            if self.grading_thread is not None:
                self.grading_thread.submit(self.grading_close_client).result(30)
                self.grading_thread.shutdown(wait=True)
                self.grading_thread = None

    Watched.__name__ = cls.__name__
    Watched.__qualname__ = cls.__qualname__
    return Watched


def over(pp: Any, limit: str) -> Any:
    """What a :class:`grading.relay.Meter` calls when a notebook's kernel has sent more than ``--output`` or
    ``--data``: the notebook is stopped, with its one-line reason."""
    size = shown(getattr(pp.grading_limits, limit))
    what = "of output" if limit == "output" else "of data for its checks"
    return lambda: pp.stop(f"sent more than {size} {what} (--{limit})")


def _without_hidden_tests(nb: Any, config: Config) -> str:
    """The notebook as the kernel may see it on disk: hidden tests removed (they reach it only as cells run)."""
    copy = nbformat.reads(nbformat.writes(nb), as_version=4)
    clear = ClearHiddenTests(config=config)
    clear.enforce_metadata = False
    for cell in copy.cells:
        if cell.cell_type == "code":
            clear._remove_hidden_test_region(cell)
    return str(nbformat.writes(copy))


def execute(task: Task) -> Outcome:
    """Execute one notebook in a fresh temporary directory; never raises.

    The kernel's working directory holds only the notebook (without hidden tests) and the
    shipped files, and it talks to this process over IPC sockets in a folder of its own, so
    kernels running side by side share neither ports nor files. With ``task.bwrap`` the
    kernel runs in the sandbox, bounded by ``task.limits``; a notebook that goes over a
    limit is not graded (``outcome.error`` says which limit). Safe to call from several
    threads at once.
    """
    outcome = Outcome(task.student, task.notebook, host=socket.gethostname())
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="grading-") as tmp, contextlib.ExitStack() as stack:
            root = Path(tmp)
            room = stack.enter_context(Room(task.limits, root=root)) if task.bwrap else None
            work = root / "work"
            ipc = room.ipc if room is not None else root / "ipc"
            (root / "tmp").mkdir()
            ipc.mkdir(exist_ok=True)
            work.mkdir()
            for rel, data in task.files.items():
                target = work / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            config = load_config(task.config_files, task.cli_config, root)
            nb = nbformat.reads(task.source, as_version=4)
            if not task.setups and any(cell_role(cell) == "setup" for cell in nb.cells):
                # the judge's trusted names come from the instructor's set-up cells, never from the submission's
                raise ValueError("the task carries none of the instructor's set-up cells (Task.setups)")
            (work / f"{task.notebook}.ipynb").write_text(_without_hidden_tests(nb, config), encoding="utf-8")
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
            for index, (_, cls) in enumerate(executors(config)):
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
                pp.grading_setups = task.setups
                pp.grading_student_names = task.student_names
                pp.grading_judge_folder = root / "judge"
                pp.kernel_manager_class = relayed(pp.kernel_manager_class, pp.grading_relay)
                if room is not None:
                    pp.grading_sandboxed = True
                    pp.kernel_manager_class = sandboxed(pp.kernel_manager_class, task, work, room)
                    pp.grading_room = room
                timer = threading.Timer(task.limits.wall, pp.stop, [f"ran for more than {task.limits.wall} s (--wall)"])
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
                    outcome.error = f"the notebook {pp.grading_limit}"
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
