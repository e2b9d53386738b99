"""The execute preprocessor a notebook runs under: the instructor's, with the grader's limits and the judge.

:func:`watched` makes a subclass of the configured execute preprocessor (``c.Autograde.autograde_preprocessors``,
nbgrader's ``Execute`` by default) that runs the answer cells, the cells the student added and the locked set-up
cells in the kernel, and hands every graded check to the judge (:mod:`grading.judge`) in this process, at its place
in the notebook; the check's outcome becomes the cell's output, which nbgrader then scores as usual. The judge talks
to the kernel through a client of its own, through the notebook's relay (:mod:`grading.relay`), which counts the
kernel's replies against ``--data``. It also records time-outs and kernel deaths, and stops the notebook (killing
its kernel) past ``--output``, ``--data`` or ``--wall``.

Example
-------
>>> from nbgrader.preprocessors import Execute
>>> watched(Execute).__name__
'Execute'
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import nbformat
import zmq
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_core.utils import ensure_async, run_sync
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbgrader.converters import Autograde
from traitlets.config import Config
from traitlets.config.loader import JSONFileConfigLoader, PyFileConfigLoader
from traitlets.utils.importstring import import_item

from grading.judge import Judge, NoAnswer, TimedOut, expression, parse_reply
from grading.kernel import ready_at_once
from grading.limits import Limits, no_answer, sent_too_much
from grading.private_api import display_outputs, hooked_client
from grading.relay import Meter, Relay, relayed_client
from grading.roles import cell_role, place, without_hidden_tests
from grading.room import Room
from grading.snapshot import Snapshot, own_working_folder

__all__ = ["executors", "load_config", "over", "watched"]


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
    """The configured autograde preprocessors that run the notebook, with their positions in the list.

    nbgrader's entry point (:class:`grading.judged.JudgedExecute`, or any class marked ``grading_entry``) stands for
    the executor it wraps, its ``execute_class``: the grading command runs that one, as the entry point does.
    """
    found = []
    for index, item in enumerate(Autograde(config=config).autograde_preprocessors):
        cls = import_item(item) if isinstance(item, str) else item
        if isinstance(cls, type) and getattr(cls, "grading_entry", False):
            cls = cls(config=config).execute_class
        if isinstance(cls, type) and issubclass(cls, NotebookClient):
            found.append((index, cls))
    return found


def _field(message: Any, *keys: str) -> Any:
    """``message[keys[0]][keys[1]]...`` of a message the kernel sent, or None where any level is not a dict.

    >>> _field({"content": {"status": "ok"}}, "content", "status"), _field({"content": ["ok"]}, "content", "status")
    ('ok', None)
    """
    for key in keys:
        message = message.get(key) if isinstance(message, dict) else None
    return message


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

    class Watched(hooked_client(cls)):  # type: ignore[misc]
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
        grading_snapshot: Snapshot | None = None  # the kernel's working folder as checks see it (grading.snapshot)
        grading_no_folder: str | None = None  # why the judge's thread has no working folder of its own
        grading_student_names: frozenset[str] | None = None
        grading_setups: list[tuple[float, str]]  # the instructor's set-up cells, by their place (placed_setups)
        grading_order: dict[str, int]  # the place of each set-up cell and check in the instructor's notebook
        grading_setups_run: int = 0  # how many of grading_setups the judge has run
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
                copies = display_outputs(self, display_id)
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
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            self.grading_cell = gid or f"cell {cell_index + 1}"
            if role in ("kernel", "setup") or not cell.source.strip():
                try:
                    done = await super().async_execute_cell(cell, cell_index, execution_count, store_history)
                except DeadKernelError:
                    self.grading_kernel_died = True
                    raise
                if role == "setup":  # the judge runs it too, here: the checks after it see what it sets
                    await self.grading_set_up_to(place(gid, self.grading_order, check=False))
                return done
            await self.grading_set_up_to(place(gid, self.grading_order, check=True))
            # a check, decided by the judge; the kernel runs the check's visible part, as the student's own run did (a later cell may use
            # a name it defines); what it prints or raises is dropped: the judge's run decides the cell
            visible = nbformat.from_dict(
                {**cell, "source": without_hidden_tests(cell.source, self.config), "outputs": []}
            )
            await super().async_execute_cell(visible, cell_index, execution_count, False)
            self.grading_check_timeout = False
            outputs = await self.grading_in_judge(
                lambda judge: self.grading_refreshed(judge).check(cell.source, self.grading_cell)
            )
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

        async def grading_set_up_to(self, where: float) -> None:
            """Run in the judge every set-up cell of the instructor's that comes at or before ``where`` and has not
            run yet, in the instructor's order: one the submission lacks still runs before the checks after it."""
            todo = []
            while self.grading_setups_run < len(self.grading_setups):
                at, source = self.grading_setups[self.grading_setups_run]
                if at > where:
                    break
                todo.append(source)
                self.grading_setups_run += 1
            if todo:
                self.grading_check_timeout = False

                def set_up(judge: Judge) -> None:
                    for source in todo:
                        self.grading_refreshed(judge).setup(source)

                await self.grading_in_judge(set_up)

        def grading_refreshed(self, judge: Judge) -> Judge:
            """On the judge's thread, before a check or set-up cell: the copy of the kernel's folder brought up to
            date (the thread's working folder)."""
            if self.grading_no_folder is not None:
                raise RuntimeError(f"the judge has no working folder of its own ({self.grading_no_folder})")
            if self.grading_snapshot is not None:
                self.grading_snapshot.refresh()
            return judge

        def grading_own_folder(self) -> None:
            """The judge's thread's first step: a working folder of its own, the snapshot (grading.snapshot)."""
            if self.grading_snapshot is None:
                return
            try:
                own_working_folder(self.grading_snapshot.folder)
            except OSError as err:
                self.grading_no_folder = str(err)

        def grading_on_timeout(self) -> None:
            """nbclient's time-out handler is about to interrupt the running cell: record it (the only evidence of a
            time-out: a cell's own error of the same name is the cell's)."""
            self.grading_timeouts.append(self.grading_cell)

        def grading_on_dead_kernel(self) -> None:
            self.grading_kernel_died = True

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
                self.grading_thread = concurrent.futures.ThreadPoolExecutor(
                    1, thread_name_prefix="judge", initializer=self.grading_own_folder
                )

            def ask(request: dict[str, Any]) -> Any:
                try:
                    text = self.grading_ask(json.dumps(request), deadline - time.monotonic(), loop)
                except TimeoutError:
                    self.grading_check_timeout = True
                    raise TimedOut(no_answer(limit)) from None
                except DeadKernelGone:
                    self.grading_kernel_died = True
                    raise NoAnswer("the kernel died before it answered") from None
                return parse_reply(text, self.grading_reply_limit)

            if self.grading_judge is None:
                self.grading_judge = Judge.for_files(
                    ask, self.grading_files, self.grading_judge_folder, self.grading_student_names
                )
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
    return lambda: pp.stop(sent_too_much(limit, pp.grading_limits))
