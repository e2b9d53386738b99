"""Every use the grading package makes of another library's private names, in one place, each behind a version guard.

The grader leans on a few internals of nbclient, jupyter_client, nbgrader and nbconvert: methods it
overrides (``_async_launch_kernel``...), attributes it reads or sets (``_display_id_map``,
``_sanitizing``...) and one copied method (jupyter_client's wait for a new kernel). None of them is
promised by its library, so each is used only here, and only on a version it was checked against:
:func:`check_versions` compares the installed versions with :data:`CHECKED` (from the lowest version the
package declares in ``grading/pyproject.toml`` up to the version locked in ``requirements-test.txt``, which
is also the declared upper bound) and checks that every private name listed in :data:`USED` is still there.
A version outside that range, or one that lacks a name, stops the grader with one clear message rather
than grading wrongly. To check a new version: read each use below against its source, then raise the
version here, in ``grading/pyproject.toml`` and in the lock together.

ipykernel and myst-nb are used through their public interfaces only (ipykernel's
``--IPKernelApp.parent_handle`` option and its interrupt by message; myst-nb not at all by the grader).

Example
-------
>>> check_versions()  # the installed versions are the locked ones
>>> _in_range("0.12.0", ("0.10", "0.11.0")), _in_range("0.11.0", ("0.10", "0.11.0"))
(False, True)
"""

from __future__ import annotations

import importlib
import queue
import time
from importlib import metadata
from typing import Any

from jupyter_core.utils import ensure_async

__all__ = [
    "CHECKED",
    "USED",
    "UncheckedVersion",
    "check_versions",
    "clear_preprocessors",
    "display_outputs",
    "format_dest",
    "format_source",
    "hooked_client",
    "hooked_converter",
    "launching",
    "ready_at_once",
    "remove_hidden_tests",
    "set_sanitizing",
    "use_schema_validator",
    "with_urls",
]

# distribution: (lowest version declared in grading/pyproject.toml, version checked: the lock's, the upper bound)
CHECKED: dict[str, tuple[str, str]] = {
    "nbclient": ("0.10", "0.11.0"),
    "jupyter_client": ("8.6", "8.10.0"),
    "nbgrader": ("0.9.6", "0.9.6"),
    "nbconvert": ("7.16", "7.17.2"),
}

# distribution: (module, class or None for the module itself, private name) for every name used below
USED: dict[str, list[tuple[str, str | None, str]]] = {
    "jupyter_client": [
        ("jupyter_client.manager", "KernelManager", "_async_launch_kernel"),
        ("jupyter_client.client", "KernelClient", "_handle_kernel_info_reply"),
        ("jupyter_client.client", "KernelClient", "_async_wait_for_ready"),  # copied in ready_at_once
        ("jupyter_client.client", "KernelClient", "_make_url"),
    ],
    "nbclient": [
        ("nbclient.client", "NotebookClient", "_async_handle_timeout"),
        ("nbclient.client", "NotebookClient", "_async_check_alive"),
        ("nbclient.client", "NotebookClient", "_display_id_map"),
    ],
    "nbgrader": [
        ("nbgrader.preprocessors.clearhiddentests", "ClearHiddenTests", "_remove_hidden_test_region"),
        ("nbgrader.converters.base", "BaseConverter", "_format_dest"),
        ("nbgrader.converters.base", "BaseConverter", "_format_source"),
        ("nbgrader.converters.autograde", "Autograde", "_init_preprocessors"),
        ("nbgrader.converters.autograde", "Autograde", "_sanitizing"),
        ("nbgrader.nbgraderformat.common", None, "jsonschema"),  # the module's import, replaced
    ],
    "nbconvert": [
        ("nbconvert.exporters.exporter", "Exporter", "_preprocessors"),
    ],
}


class UncheckedVersion(RuntimeError):
    """An installed library is at a version whose private names the grader was not checked against."""


def _version(text: str) -> tuple[int, ...]:
    """The numeric release of a version string (``"8.10.0"`` -> ``(8, 10, 0)``; a suffix such as ``rc1`` is dropped).

    >>> _version("8.10.0"), _version("0.10"), _version("7.17.2.post1")
    ((8, 10, 0), (0, 10), (7, 17, 2))
    """
    parts = []
    for part in text.split("."):
        digits = "".join(c for c in part if c.isdigit()) if part[:1].isdigit() else ""
        if not digits or digits != part:
            if digits:
                parts.append(int(digits))
            break
        parts.append(int(part))
    return tuple(parts)


def _in_range(version: str, bounds: tuple[str, str]) -> bool:
    low, high = (_version(b) for b in bounds)
    here = _version(version)
    return low <= here[: len(low)] and here <= high


def _missing(dist: str) -> list[str]:
    """The private names of ``dist`` in :data:`USED` that its installed version lacks."""
    gone = []
    for module_name, class_name, name in USED[dist]:
        try:
            owner: Any = importlib.import_module(module_name)
            if class_name is not None:
                owner = getattr(owner, class_name)
        except (ImportError, AttributeError):
            gone.append(f"{module_name}.{class_name or ''}")
            continue
        if not hasattr(owner, name) and name not in getattr(owner, "__annotations__", {}):
            gone.append(f"{module_name}.{class_name + '.' if class_name else ''}{name}")
    return gone


_checked = False


def check_versions() -> None:
    """Raise :class:`UncheckedVersion`, saying what to do, unless every library in :data:`CHECKED` is at a version
    the grader was checked against and still has every private name it uses (checked once per process)."""
    global _checked
    if _checked:
        return
    problems = []
    for dist, bounds in CHECKED.items():
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            problems.append(f"{dist} is not installed")
            continue
        if not _in_range(version, bounds):
            problems.append(f"{dist} {version} is installed; the grader was checked with {bounds[0]} to {bounds[1]}")
            continue
        gone = _missing(dist)
        if gone:
            problems.append(f"{dist} {version} lacks {', '.join(gone)}")
    if problems:
        raise UncheckedVersion(
            "the grader relies on private parts of libraries (grading/private_api.py) and cannot vouch for these: "
            + "; ".join(problems)
            + ". Install the locked versions (pip install -r requirements-test.txt), or check each use in "
            "grading/private_api.py against the new version and raise its bound there and in grading/pyproject.toml"
        )
    _checked = True


# --- jupyter_client -------------------------------------------------------------------------------------------


def launching(base: type) -> type:
    """A subclass of a kernel manager class whose launch (jupyter_client's private ``_async_launch_kernel``) calls
    ``grading_launch_kernel(kernel_cmd, **kw)``; a subclass overrides that, and its ``super()`` call launches."""
    if "grading_launch_kernel" in dir(base):
        return base

    class Launching(base):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            await self.grading_launch_kernel(kernel_cmd, **kw)

        async def grading_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            await base._async_launch_kernel(self, kernel_cmd, **kw)  # type: ignore[attr-defined]

    Launching.__name__ = base.__name__
    return Launching


def with_urls(base: type, prefix: str) -> type:
    """A subclass of a kernel client (or manager) class whose channels connect to ``ipc://PREFIX-PORT`` (through
    jupyter_client's private ``_make_url``) rather than to the kernel's own address."""

    class Relayed(base):
        grading_prefix = prefix

        def _make_url(self, channel: str) -> str:
            return f"ipc://{prefix}-{getattr(self, f'{channel}_port')}"

    Relayed.__name__ = base.__name__
    return Relayed


def ready_at_once(base: type) -> type:
    """A subclass of an asynchronous kernel client class whose wait for a new kernel ends once the kernel is ready.

    jupyter_client's wait asks for the kernel's info until the reply comes on the shell channel and a message
    comes on IOPub (so IOPub is connected), then listens to IOPub until it has been quiet for 0.2 s, to drop
    what the kernel said as it started. That last step is left out: the notebook client reads only the IOPub
    messages whose parent is its own request, so what is left of the start is dropped there, and every
    notebook starts 0.2 s sooner. The rest is a copy of jupyter_client's ``KernelClient._async_wait_for_ready``
    (8.10), for a client its manager made: compare the two when upgrading it.
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


# --- nbclient -------------------------------------------------------------------------------------------------


def hooked_client(cls: type) -> type:
    """A subclass of a notebook client (an execute preprocessor) that tells itself of a time-out and a dead kernel:
    nbclient's private time-out handler calls ``grading_on_timeout()`` before it interrupts the kernel, and its
    private liveness check calls ``grading_on_dead_kernel()`` before it raises ``DeadKernelError``."""
    from nbclient.exceptions import DeadKernelError

    class Hooked(cls):
        def grading_on_timeout(self) -> None:
            """Called as a cell runs past its time-out."""

        def grading_on_dead_kernel(self) -> None:
            """Called when the kernel is found dead."""

        async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
            self.grading_on_timeout()
            return await super()._async_handle_timeout(timeout, cell)

        async def _async_check_alive(self) -> None:
            try:
                await super()._async_check_alive()
            except DeadKernelError:
                self.grading_on_dead_kernel()
                raise

    Hooked.__name__ = cls.__name__
    Hooked.__qualname__ = cls.__qualname__
    return Hooked


def display_outputs(client: Any, display_id: str) -> int:
    """How many outputs a notebook client has shown so far with ``display_id`` (its private ``_display_id_map``):
    an update to that display rewrites each of them."""
    return sum(len(outputs) for outputs in client._display_id_map.get(display_id, {}).values())


# --- nbgrader and nbconvert -----------------------------------------------------------------------------------


def remove_hidden_tests(clear: Any, cell: Any) -> bool:
    """Cut the hidden tests out of a code cell in place, as nbgrader's ``ClearHiddenTests`` does (its private
    ``_remove_hidden_test_region``); whether there were any."""
    return bool(clear._remove_hidden_test_region(cell))


def format_dest(converter: Any, assignment: str, student: str) -> str:
    """A converter's output folder of a student's assignment (nbgrader's private ``BaseConverter._format_dest``)."""
    return str(converter._format_dest(assignment, student))


def format_source(converter: Any, assignment: str, student: str, escape: bool = False) -> str:
    """A converter's input folder of a student's assignment (nbgrader's private ``BaseConverter._format_source``)."""
    return str(converter._format_source(assignment, student, escape=escape))


def set_sanitizing(converter: Any, sanitizing: bool) -> None:
    """Say whether nbgrader's ``Autograde`` is sanitizing (its private ``_sanitizing``: which preprocessors run)."""
    converter._sanitizing = sanitizing


def hooked_converter(cls: type) -> type:
    """A subclass of nbgrader's ``Autograde`` whose private ``_init_preprocessors`` calls
    ``grading_init_preprocessors(sanitizing)``; ``super().grading_init_preprocessors(sanitizing)`` there is
    nbgrader's own, and ``grading_set_up_preprocessors()`` runs it."""

    class Hooked(cls):
        def _init_preprocessors(self) -> None:
            self.grading_init_preprocessors(bool(self._sanitizing))

        def grading_init_preprocessors(self, sanitizing: bool) -> None:
            cls._init_preprocessors(self)  # type: ignore[attr-defined]

        def grading_set_up_preprocessors(self) -> None:
            """Set up the exporter's preprocessors again (for sanitizing, or for autograding)."""
            self._init_preprocessors()

    Hooked.__name__ = cls.__name__
    return Hooked


def clear_preprocessors(exporter: Any) -> None:
    """Remove every preprocessor an nbconvert exporter has (its private ``_preprocessors``)."""
    exporter._preprocessors = []


def use_schema_validator(validator: Any) -> None:
    """Have nbgrader validate its cell metadata with ``validator.validate(instance, schema)`` (it calls
    ``jsonschema.validate`` through its ``nbgraderformat.common`` module's import of ``jsonschema``)."""
    from nbgrader.nbgraderformat import common

    common.jsonschema = validator
