"""One notebook's room: its limits held over all of its processes and every byte it writes.

The sandbox (:mod:`grading.sandbox`) sets limits on each process (a clean ``MemoryError``
for one big allocation, a failed ``fork``...). A :class:`Room` adds the limits of the whole
notebook: memory, processes and threads, and CPU time summed over every process of its
sandbox, and one budget of ``limits.file_size`` bytes for everything it can write anywhere
(its ``/tmp`` and the folder of its sockets together). A room over a limit is killed, all
of it, and says which limit in one line (:attr:`Room.reason`).

Two modes, chosen by :func:`best_mode` (or forced with ``mode=``):

``"cgroup"`` (the grader is root and cgroup v1's memory, pids and cpuacct controllers are
    mounted writable): a cgroup per notebook in each, created under the grader's own
    (``<controller>/<grader's cgroup>/roofline-grading/<unique>``), with
    ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes``: no swap) set to
    ``limits.memory`` and ``pids.max`` to ``limits.procs``; an OOM kill in the cgroup or a
    refused ``fork`` is noticed and kills the room; CPU time is ``cpuacct.usage``, polled.
    What the notebook keeps in ``/tmp`` counts against its memory too.
    ``/tmp`` and the socket folder are two folders of one tmpfs of ``limits.file_size``
    bytes mounted for this notebook alone, so no write can go past the budget; a full
    tmpfs kills the room. The cgroups and the mount are removed on leaving the room.
``"watchdog"`` (anywhere else): a thread polls ``/proc`` every ``poll`` seconds for every
    process descended from the watched ones and kills the room when their memory
    (``RssAnon + RssShmem``), their processes and threads, or their CPU time (live and
    reaped children's) go over a limit, or when the socket folder's bytes plus the use of
    the sandbox's own ``/tmp`` tmpfs (``--size``) go over the write budget (each file
    counting at least :data:`INODE_BYTES`). A notebook can go past a limit by what it does
    in one poll, no more.

A room over a limit stays killed: a process started in it afterwards is killed at the next
poll. Leaving the room (``with``, or :meth:`Room.close`) kills what is left of it and removes
its cgroups, its tmpfs and its socket folder, after an error too.

How :mod:`grading.execute` uses it: one room per sandboxed notebook (not for ``--unsafe``),
around all of its kernels; the room makes the socket folder (``room.ipc``), so execute no
longer makes ``ipc/`` itself::

    with tempfile.TemporaryDirectory(prefix="grading-") as tmp, Room(task.limits, root=Path(tmp)) as room:
        ipc = room.ipc                                   # the socket folder: kernel.json and the sockets
        config.KernelManager.ip = str(ipc / "kernel")
        config.KernelManager.connection_file = str(ipc / "kernel.json")
        # in the kernel manager's _async_launch_kernel, after chowning ipc (not room.tmp) to uid:
        argv = room.launcher(command(bwrap, kernel_cmd, work=work, ipc=room.ipc, tmp=room.tmp,
                                     limits=task.limits, uid=uid, env=env))
        await super()._async_launch_kernel(argv, **kw)
        room.watch(self.provisioner.pid)                 # the bwrap process; again for a restarted kernel
        # stopping a notebook (wall time, output): room.kill() beside killing the kernel's pid
        nb, resources = pp(nb, resources)
        limit = room.reason or pp.grading_limit            # the room's evidence, or --output/--data/--wall
        if limit is not None:
            outcome.error = f"the notebook {limit}"      # "the notebook went over the memory limit (2G, --memory)"

``room.reason`` is read after the notebook has run and before the room is left (it looks
at the counters once more, so an OOM kill that ended the kernel is not missed); it is the
limit the room hit first. It is the only evidence that a limit of the room was hit: an error
in a cell (a ``MemoryError``, say, for one allocation the process's own limit refused) is
that cell's error, as it would be under nbgrader.

Example
-------
>>> import subprocess, tempfile
>>> from grading.sandbox import Limits
>>> with tempfile.TemporaryDirectory() as folder, Room(Limits(cpu=1), root=Path(folder)) as room:
...     process = subprocess.Popen(room.launcher(["python3", "-c", "while True: pass"]))
...     room.watch(process.pid)
...     status = process.wait(timeout=30)
...     room.reason
'went over the CPU time limit (1, --cpu)'
>>> room.mode in MODES
True
"""

from __future__ import annotations

import ctypes
import itertools
import os
import shutil
import signal
import threading
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from grading.sandbox import Limits, describe

__all__ = ["MODES", "Room", "best_mode", "describe_mode", "limit_reason"]

MODES = ("cgroup", "watchdog")
CONTROLLERS = ("memory", "pids", "cpuacct")
CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "roofline-grading"  # the folder under the grader's own cgroup that holds one cgroup per notebook
INODES = 16384  # files, folders and sockets a notebook may make in its tmpfs (cgroup mode)
INODE_BYTES = 4096  # what each file or folder in the socket folder counts against the budget (watchdog mode)

_NAMES = {"memory": "memory", "cpu": "CPU time", "procs": "processes", "file_size": "file size"}
_serial = itertools.count()


def _libc() -> ctypes.CDLL:
    """The C library with ``mount`` and ``umount2`` typed (made when needed: this module travels by value)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return libc


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def limit_reason(name: str, limits: Limits) -> str:
    """The one-line reason for going over a limit.

    >>> limit_reason("memory", Limits())
    'went over the memory limit (2G, --memory)'
    >>> limit_reason("file_size", Limits(file_size=16 << 20))
    'went over the file size limit (16M, --file-size)'
    """
    return f"went over the {_NAMES[name]} limit ({describe(limits)[name]}, --{name.replace('_', '-')})"


def _own_cgroup(controller: str) -> Path:
    """This process's cgroup folder in a cgroup v1 controller (the controller's top where that is not in view)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            own = CGROUP_ROOT / controller / path.lstrip("/")
            return own if own.is_dir() else CGROUP_ROOT / controller
    raise OSError(f"no cgroup v1 {controller} controller")


def best_mode() -> str:
    """``"cgroup"`` where this process can create cgroups and mount a tmpfs (root, cgroup v1), else ``"watchdog"``."""
    if os.geteuid() != 0 or not os.path.isfile("/proc/self/cgroup"):
        return "watchdog"
    try:
        for controller in CONTROLLERS:
            if not os.access(_own_cgroup(controller), os.W_OK):
                return "watchdog"
    except OSError:
        return "watchdog"
    return "cgroup"


@dataclass(frozen=True)
class _Proc:
    ppid: int
    start: int
    ticks: int  # utime + stime + cutime + cstime
    threads: int


def _processes() -> dict[int, _Proc]:
    """Every process of this machine (of this PID namespace), from ``/proc/<pid>/stat``."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            text = Path("/proc", name, "stat").read_text()
        except OSError:
            continue
        rest = text[text.rindex(")") + 2 :].split()
        table[int(name)] = _Proc(int(rest[1]), int(rest[19]), sum(map(int, rest[11:15])), int(rest[17]))
    return table


def _alive(pid: int) -> bool:
    """Whether a process runs (a zombie, dead but not yet waited for, does not)."""
    try:
        text = Path("/proc", str(pid), "stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2 :][:1] not in ("Z", "X")


def _memory(pid: int) -> int:
    """Bytes a process holds of its own: anonymous and shared memory (``RssAnon + RssShmem``)."""
    total = 0
    try:
        for line in Path("/proc", str(pid), "status").read_text().splitlines():
            if line.startswith(("RssAnon:", "RssShmem:")):
                total += int(line.split()[1]) << 10
    except OSError:
        pass
    return total


def _folder_bytes(folder: Path, stop: int) -> int:
    """Bytes of everything in a folder (at least :data:`INODE_BYTES` a file), counting no further than ``stop``."""
    total = 0
    for here, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            try:
                st = os.lstat(os.path.join(here, name))
            except OSError:
                continue
            total += max(st.st_blocks * 512, INODE_BYTES)
            if total > stop:
                return total
    return total


def _used(folder: str) -> int:
    """Bytes used on the file system holding a folder, and :data:`INODE_BYTES` for each file on it."""
    st = os.statvfs(folder)
    return (st.f_blocks - st.f_bfree) * st.f_frsize + max(st.f_files - st.f_ffree, 0) * INODE_BYTES


class Room:
    """One notebook's room: its processes and its writable folders, held to ``limits`` together.

    Parameters
    ----------
    limits
        The notebook's limits; the room holds ``memory``, ``procs``, ``cpu`` and
        ``file_size`` (``output`` and ``wall`` stay with the grader).
    root
        A fresh folder for this notebook; the room makes ``box/`` (cgroup mode) or
        ``ipc/`` (watchdog mode) in it.
    mode
        ``"cgroup"`` or ``"watchdog"``; by default :func:`best_mode`, falling back to the
        watchdog when cgroups or the tmpfs cannot be set up after all.
    poll
        Seconds between two looks at the room's counters.

    Attributes
    ----------
    mode
        The mode in use.
    ipc
        Host folder to bind writable as the socket folder (same path inside the sandbox).
    tmp
        Host folder to bind writable as the kernel's ``/tmp``, or None: the sandbox then
        makes ``/tmp`` a tmpfs of ``limits.file_size`` bytes itself (watchdog mode).

    Safe to use from several threads at once; several rooms, in threads or processes, never
    share a cgroup, a folder or a count.

    Example
    -------
    >>> import subprocess, tempfile
    >>> with tempfile.TemporaryDirectory() as folder, Room(Limits(), root=Path(folder)) as room:
    ...     process = subprocess.Popen(room.launcher(["python3", "-c", "print(6 * 7)"]), stdout=subprocess.PIPE)
    ...     room.watch(process.pid)
    ...     process.communicate()[0], room.reason
    (b'42\\n', None)
    """

    def __init__(self, limits: Limits, *, root: Path, mode: str | None = None, poll: float = 0.1) -> None:
        if mode not in (None, *MODES):
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.limits = limits
        self.root = Path(root)
        self.poll = poll
        self.mode = mode or best_mode()
        self.ipc: Path = self.root / "ipc"
        self.tmp: Path | None = None
        self._lock = threading.RLock()
        self._reason: str | None = None
        self._roots: list[tuple[int, int]] = []  # (pid, start time) of each watched process
        self._seen: dict[int, int] = {}  # every process seen in the room (watchdog mode): pid -> start time
        self._ticks = 0
        self._box: Path | None = None
        self._cgroups: dict[str, Path] = {}
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        if self.mode == "cgroup":
            try:
                self._set_up_cgroups()
            except OSError:
                self._tear_down()
                if mode == "cgroup":
                    raise
                self.mode, self.ipc, self.tmp = "watchdog", self.root / "ipc", None
        if self.mode == "watchdog":
            self.ipc.mkdir(mode=0o700)

    # ----- setting up and tearing down

    def _set_up_cgroups(self) -> None:
        box = self.root / "box"
        box.mkdir(mode=0o700)
        options = f"size={self.limits.file_size},nr_inodes={INODES},mode=0700".encode()
        if _libc().mount(b"tmpfs", bytes(box), b"tmpfs", 0x2 | 0x4, options) != 0:  # MS_NOSUID | MS_NODEV
            box.rmdir()
            raise OSError(ctypes.get_errno(), f"cannot mount a tmpfs on {box}")
        self._box = box
        self.ipc, self.tmp = box / "ipc", box / "tmp"
        self.ipc.mkdir(mode=0o700)
        self.tmp.mkdir()
        self.tmp.chmod(0o1777)
        name = f"{os.getpid()}-{threading.get_native_id()}-{next(_serial)}-{os.urandom(3).hex()}"
        for controller in CONTROLLERS:
            parent = _own_cgroup(controller) / GROUP
            for _ in range(10):  # another room may remove the shared parent between the two steps
                parent.mkdir(exist_ok=True)
                try:
                    (parent / name).mkdir()
                    break
                except FileNotFoundError:
                    continue
            self._cgroups[controller] = parent / name
        memory = self._cgroups["memory"]
        (memory / "memory.limit_in_bytes").write_text(str(self.limits.memory))
        if (memory / "memory.memsw.limit_in_bytes").exists():
            (memory / "memory.memsw.limit_in_bytes").write_text(str(self.limits.memory))
        (self._cgroups["pids"] / "pids.max").write_text(str(self.limits.procs))

    def _tear_down(self) -> None:
        """Remove the cgroups (once their processes are gone) and the tmpfs."""
        for cgroup in self._cgroups.values():
            for _ in range(100):
                try:
                    cgroup.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # still busy: processes that are dying
                    self._kill_cgroups()
                    time.sleep(0.05)
            try:
                cgroup.parent.rmdir()  # the shared parent, once no room uses it
            except OSError:
                pass
        self._cgroups = {}
        if self._box is not None:
            libc = _libc()
            if libc.umount2(bytes(self._box), 0) != 0:
                libc.umount2(bytes(self._box), 2)  # MNT_DETACH: gone as soon as nothing uses it
            try:
                self._box.rmdir()
            except OSError:
                pass
            self._box = None

    def close(self) -> None:
        """Kill what is left of the room, note its last reason, and remove its cgroups, tmpfs and folders."""
        with self._lock:
            if self._closed:
                return
            self._look()
            self._closed = True
        self._done.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self.kill()
        self._tear_down()
        if self.mode == "watchdog":  # what the notebook wrote on the host's disk goes now, not with its folder
            shutil.rmtree(self.ipc, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: types.TracebackType | None
    ) -> None:
        self.close()

    # ----- running

    def launcher(self, argv: list[str]) -> list[str]:
        """``argv`` started in this room: it joins the room's cgroups (cgroup mode), then becomes ``argv``.

        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder, Room(Limits(), root=Path(folder), mode="watchdog") as room:
        ...     room.launcher(["bwrap", "--", "python3"])
        ['bwrap', '--', 'python3']
        """
        if not self._cgroups:
            return list(argv)
        join = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
        return ["/bin/sh", "-c", join, "room", *self.procs_files(), "--", *argv]

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a process writes its pid to to join this room (none in watchdog mode)."""
        return [str(cgroup / "cgroup.procs") for cgroup in self._cgroups.values()]

    def watch(self, pid: int) -> None:
        """Hold the process ``pid`` (the sandbox's ``bwrap``) and all it starts to the room's limits.

        Call it as soon as the process has started; again for each kernel the notebook starts.
        """
        with self._lock:
            start = _processes().get(pid)
            if start is not None:
                self._roots.append((pid, start.start))
                self._seen[pid] = start.start
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._watch, name=f"room-{pid}", daemon=True)
                self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(self.poll):
            if self._look() is not None:
                self.kill()

    def _look(self) -> str | None:
        """:meth:`_check`, where a look that fails (a process gone half-way) is tried again at the next poll."""
        try:
            return self._check()
        except (OSError, ValueError, IndexError):
            return None

    @property
    def reason(self) -> str | None:
        """The limit the room went over first, as a one-line reason (``went over the memory limit (2G, --memory)``).

        None while it holds to its limits. Reading it looks at the counters once more.
        """
        with self._lock:
            if not self._closed:
                self._look()
            return self._reason

    def _over(self, name: str) -> str:
        with self._lock:
            if self._reason is None:
                self._reason = limit_reason(name, self.limits)
            return self._reason

    def _check(self) -> str | None:
        """Look at the room's counters once; note the first limit it went over."""
        with self._lock:
            if self._reason is not None or self._closed:
                return self._reason
            if self.mode == "cgroup" and self._cgroups:
                return self._check_cgroups()
            if self.mode == "watchdog":
                return self._check_processes()
            return None

    def _check_cgroups(self) -> str | None:
        memory, pids, cpu = (self._cgroups[c] for c in CONTROLLERS)
        oom = dict(line.split() for line in (memory / "memory.oom_control").read_text().splitlines())
        if int(oom.get("oom_kill", "0")) > 0 or oom.get("under_oom") == "1":
            return self._over("memory")
        events = dict(line.split() for line in (pids / "pids.events").read_text().splitlines())
        if int(events.get("max", "0")) > 0:
            return self._over("procs")
        if int((cpu / "cpuacct.usage").read_text()) > self.limits.cpu * 10**9:
            return self._over("cpu")
        if self._box is not None:
            st = os.statvfs(self._box)
            if st.f_bavail == 0 or st.f_favail == 0:
                return self._over("file_size")
        return None

    def _members(self, table: dict[int, _Proc]) -> list[int]:
        """The room's live processes, parents before their children."""
        found = [pid for pid, start in self._roots if pid in table and table[pid].start == start]
        children: dict[int, list[int]] = {}
        for pid, proc in table.items():
            children.setdefault(proc.ppid, []).append(pid)
        for pid in found:  # grows while it is read: breadth first
            found.extend(p for p in children.get(pid, []) if p not in found)
        return found

    def _check_processes(self) -> str | None:
        table = _processes()
        members = self._members(table)
        for pid in members:
            self._seen[pid] = table[pid].start
        if sum(table[pid].threads for pid in members) > self.limits.procs:
            return self._over("procs")
        self._ticks = max(self._ticks, sum(table[pid].ticks for pid in members))
        if self._ticks / _CLOCK_TICKS > self.limits.cpu:
            return self._over("cpu")
        if sum(_memory(pid) for pid in members) > self.limits.memory:
            return self._over("memory")
        written = _folder_bytes(self.ipc, self.limits.file_size)
        own = os.stat("/proc/self/ns/mnt").st_ino
        for pid in reversed(members):  # the sandbox's /tmp, seen through a process inside it
            try:
                if os.stat(f"/proc/{pid}/ns/mnt").st_ino != own:
                    written += _used(f"/proc/{pid}/root/tmp")
                    break
            except OSError:
                continue
        if written > self.limits.file_size:
            return self._over("file_size")
        return None

    # ----- killing

    def kill(self) -> None:
        """Kill every process of the room, and wait (a few seconds at most) until they are gone. Idempotent."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            # the watched processes too: one may not have joined the cgroups yet
            left = self._kill_cgroups() + self._kill_processes()
            if not left:
                return
            time.sleep(0.02)

    def _kill_cgroups(self) -> int:
        """SIGKILL every task in the room's cgroups; how many there were."""
        pids: set[int] = set()
        for cgroup in self._cgroups.values():
            try:
                pids.update(int(p) for p in (cgroup / "cgroup.procs").read_text().split())
            except OSError:
                continue
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return len(pids)

    def _kill_processes(self) -> int:
        """SIGKILL every live process seen in the room and all they started, children first; how many."""
        table = _processes()
        with self._lock:
            self._roots.extend((pid, start) for pid, start in self._seen.items() if (pid, start) not in self._roots)
            members = self._members(table)
            for pid in members:
                self._seen[pid] = table[pid].start
        for pid in reversed(members):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return sum(1 for pid in members if _alive(pid))

    # ----- telling

    def describe_mode(self) -> str:
        """One line for the run log: how this room holds its limits (:func:`describe_mode`)."""
        return describe_mode(self.mode, self.limits, self.poll)


def describe_mode(mode: str, limits: Limits, poll: float = 0.1) -> str:
    """One line for the run log: how rooms in ``mode`` hold ``limits``.

    >>> describe_mode("cgroup", Limits())
    'limits per notebook: cgroups (memory, pids, cpuacct) and one 64M tmpfs for /tmp and the socket folder'
    >>> describe_mode(best_mode(), Limits()).startswith("limits per notebook: ")
    True
    """
    if mode == "cgroup":
        size = describe(limits)["file_size"]
        return (
            f"limits per notebook: cgroups (memory, pids, cpuacct) and one {size} tmpfs for /tmp and the socket folder"
        )
    return f"limits per notebook: a watchdog over its processes and its socket folder and /tmp, every {poll:g} s"
