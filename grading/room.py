"""One notebook's room: its limits held over all of its processes and every byte it writes.

The sandbox (:mod:`grading.sandbox`) sets limits on each process (a clean ``MemoryError``
for one big allocation, a failed ``fork``...). A :class:`Room` adds the limits of the whole
notebook: memory, processes and threads, and CPU time summed over every process of its
sandbox, and one budget of ``limits.file_size`` bytes for everything it can write anywhere
(its ``/tmp``, its working folder beyond the files it starts with, and the folder of its sockets
together). A room over a limit is killed, all
of it, and says which limit in one line (:attr:`Room.reason`).

Three modes, chosen by :func:`best_mode` in the order of :data:`MODES` (or forced with ``mode=``);
:func:`describe_mode` says which one a machine gets, and why not a better one:

``"cgroup2"`` (cgroup v2 with the memory and pids controllers, in a subtree this process may
    manage): a cgroup per notebook, ``<subtree>/roofline-grading/<unique>``, with ``memory.max``
    set to ``limits.memory`` (``memory.swap.max`` 0: no swap; ``memory.oom.group`` 1: an OOM kill
    takes the whole notebook) and ``pids.max`` to ``limits.procs``. The room is over its memory
    limit when ``memory.events`` counts an ``oom`` (its own ``memory.max`` reached with nothing left
    to reclaim), over its process limit when ``pids.events`` counts a ``max`` (a refused ``fork``),
    over its CPU time when ``usage_usec`` of ``cpu.stat`` (in every cgroup, no controller needed)
    passes ``limits.cpu``. Memory in ``/tmp``, ``/dev/shm``, memfds and the kernel's own
    allocations counts. The room is killed with ``cgroup.kill`` (Linux 5.14), else by SIGKILL to
    each process of ``cgroup.procs`` until none is left. The subtree (:func:`_cgroup2_base`) is the
    cgroup this process runs in, where it is delegated to it: by systemd (``Delegate=yes``: run the
    grader under ``systemd-run --scope -p Delegate=yes``, with ``--user`` as a normal user), by
    permissions (a normal user who can write it), or, for root, where systemd does not manage the
    cgroup tree (a container: its own cgroup, ``/sys/fs/cgroup`` itself in a cgroup namespace).
    Controllers are enabled in its ``cgroup.subtree_control``; a cgroup with processes of its own
    cannot do that (cgroup v2's "no internal process" rule), so they move to a leaf
    ``<subtree>/roofline-grader`` first. ``/tmp`` and the socket folder are a tmpfs of
    ``limits.file_size`` (with the working folder) as in the ``"cgroup"`` mode where this process can mount
    one (root);
    otherwise the sandbox makes ``/tmp`` a tmpfs of that size itself and the room watches its use
    and the socket folder's bytes as the watchdog does.
``"cgroup"`` (the grader is root and cgroup v1's memory, pids and cpuacct controllers are mounted
    writable): a cgroup per notebook in each, created under the grader's own
    (``<controller>/<grader's cgroup>/roofline-grading/<unique>``), with
    ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes``: no swap) set to
    ``limits.memory`` and ``pids.max`` to ``limits.procs``; an OOM kill in the cgroup or a
    refused ``fork`` is noticed and kills the room; CPU time is ``cpuacct.usage``, polled.
    What the notebook keeps in ``/tmp`` counts against its memory too.
    ``/tmp``, the working folder and the socket folder are three folders of one tmpfs of
    ``limits.file_size`` bytes (and room for the files the working folder starts with, ``held``)
    mounted for this notebook alone, so no write can go past the budget; a full tmpfs kills the room. The cgroups and the mount are removed on leaving the room.
``"watchdog"`` (anywhere else): a thread polls ``/proc`` every ``poll`` seconds for every
    process descended from the watched ones and kills the room when their memory
    (``RssAnon + RssShmem``), their processes and threads, or their CPU time (live and
    reaped children's) go over a limit, or when the socket folder's bytes, what the working folder
    grew by since the kernel started, and the use of the sandbox's own ``/tmp`` tmpfs (``--size``)
    go over the write budget (each file counting at least :data:`INODE_BYTES`). A notebook can go past a limit by what it does
    in one poll, no more; memory it holds in files (``/dev/shm``, memfds) and does not map
    escapes the count.

A room over a limit stays killed: a process started in it afterwards is killed at the next
poll. Leaving the room (``with``, or :meth:`Room.close`) kills what is left of it and removes
its cgroups, its tmpfs and its socket folder, after an error too (in cgroup v2 the leaf the
grader moved to, and the controllers it enabled, stay for the next room).

How :mod:`grading.execute` uses it: one room per sandboxed notebook (not for ``--unsafe``),
around all of its kernels; the room makes the socket folder (``room.ipc``) and the kernel's working
folder (``room.work``, which execute fills before the kernel starts)::

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

import contextlib
import ctypes
import errno
import fcntl
import itertools
import os
import re
import shutil
import signal
import threading
import time
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from grading.limits import Limits, describe, went_over

__all__ = ["MODES", "Room", "best_mode", "describe_mode", "limit_reason"]

MODES = ("cgroup2", "cgroup", "watchdog")  # in the order best_mode prefers them
CONTROLLERS = ("memory", "pids", "cpuacct")  # cgroup v1
CONTROLLERS2 = ("memory", "pids")  # cgroup v2 (CPU time is in every cgroup's cpu.stat, without a controller)
CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "roofline-grading"  # the folder under the grader's own cgroup that holds one cgroup per notebook
LEAF = "roofline-grader"  # cgroup v2: where the processes of the grader's own cgroup move, to leave it without any
SYSTEMD = Path("/run/systemd/system")  # a folder where systemd manages the machine (and its cgroups): sd_booted(3)
INODES = 16384  # files, folders and sockets a notebook may make in its tmpfs (cgroup mode)
INODE_BYTES = 4096  # what each file or folder in the socket folder counts against the budget (watchdog mode)

_serial = itertools.count()


def _unique_name() -> str:
    """A name for a room's cgroup that no other room, in this process or another, uses at the same time."""
    return f"{os.getpid()}-{threading.get_native_id()}-{next(_serial)}-{os.urandom(3).hex()}"


def _libc() -> ctypes.CDLL:
    """The C library with ``mount`` and ``umount2`` typed (made when needed: this module travels by value)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return libc


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def limit_reason(name: str, limits: Limits) -> str:
    """The one-line reason for going over a limit (:func:`grading.limits.went_over`).

    >>> limit_reason("memory", Limits())
    'went over the memory limit (2G, --memory)'
    """
    return went_over(name, limits)


def _own_cgroup(controller: str) -> Path:
    """This process's cgroup folder in a cgroup v1 controller (the controller's top where that is not in view)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            own = CGROUP_ROOT / controller / path.lstrip("/")
            return own if own.is_dir() else CGROUP_ROOT / controller
    raise OSError(f"no cgroup v1 {controller} controller")


def _cgroup1_problem() -> str | None:
    """Why this process cannot use cgroup v1 (the ``"cgroup"`` mode), or None where it can."""
    if os.geteuid() != 0:
        return "not cgroup v1: it needs root"
    try:
        for controller in CONTROLLERS:
            own = _own_cgroup(controller)
            if not os.access(own, os.W_OK):
                return f"not cgroup v1: {own} is not writable"
    except OSError as err:
        return f"not cgroup v1: {err}"
    return None


class _Unavailable(OSError):
    """The cgroup v2 mode is not available here; the message says what is missing and how to get it."""


def _read(path: Path) -> str:
    return path.read_text()


def _write(path: Path, value: str) -> None:
    """Write one value to a cgroup file, in one ``write`` (how the kernel takes it: one value, or one pid, a write)."""
    with open(path, "w") as fh:
        fh.write(value)


def _flat_keyed(text: str) -> dict[str, int]:
    """A cgroup v2 "flat keyed" file (``memory.events``, ``pids.events``, ``cpu.stat``): one ``KEY VALUE`` a line.

    >>> _flat_keyed("low 0\\nhigh 0\\nmax 12\\noom 1\\noom_kill 1\\n")
    {'low': 0, 'high': 0, 'max': 12, 'oom': 1, 'oom_kill': 1}
    """
    return {key: int(value) for key, value in (line.split() for line in text.splitlines() if line.strip())}


def _memory_went_over(events: dict[str, int]) -> bool:
    """Whether a cgroup's ``memory.events`` shows its own ``memory.max`` reached with nothing left to reclaim.

    That is ``oom`` (cgroup-v2.rst: usage reached the limit and an allocation was about to fail; the OOM
    killer then runs inside the cgroup). Not ``max`` alone: it counts each time usage was about to cross the
    limit, which reclaim (dropping page cache) usually settles. Not ``oom_kill`` alone: it counts processes
    of the cgroup killed by any OOM killer, the whole machine's included.

    >>> _memory_went_over({"max": 40, "oom": 0, "oom_kill": 0})  # page cache dropped, nothing failed
    False
    >>> _memory_went_over({"max": 0, "oom": 0, "oom_kill": 1})  # the machine ran out, not the notebook
    False
    >>> _memory_went_over({"max": 3, "oom": 1, "oom_kill": 1})
    True
    """
    return events.get("oom", 0) > 0


def _unescape(field: str) -> str:
    r"""A path from ``/proc/self/mountinfo``, where space, tab, newline and backslash are octal escapes.

    >>> _unescape(r"/mnt/my\040cgroups")
    '/mnt/my cgroups'
    """
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _cgroup2_mount(mountinfo: str, root: Path) -> tuple[Path, str]:
    """Where the cgroup v2 hierarchy is mounted, and which of its cgroups that mount shows at its top.

    Where systemd put it (CGROUP_DELEGATION.md): ``root`` itself (cgroup v2 alone), or
    ``root/unified`` (the hybrid setup, where the controllers usually stay in cgroup v1).

    >>> _cgroup2_mount("30 24 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw", Path("/sys/fs/cgroup"))
    (PosixPath('/sys/fs/cgroup'), '/')
    """
    found: dict[Path, str] = {}
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" in fields and fields[fields.index("-") + 1 :][:1] == ["cgroup2"]:
            found[Path(_unescape(fields[4]))] = _unescape(fields[3])  # a later mount on the same place hides it
    for place in (root, root / "unified"):
        if place in found:
            return place, found[place]
    raise _Unavailable(f"no cgroup v2 hierarchy is mounted at {root} or {root / 'unified'}")


def _own_cgroup2(membership: str, mount: Path, top: str) -> Path:
    """This process's cgroup v2 folder, from the ``0::PATH`` line of ``/proc/self/cgroup`` (``membership``).

    >>> _own_cgroup2("0::/user.slice/run-u7.scope\\n", Path("/sys/fs/cgroup"), "/")
    PosixPath('/sys/fs/cgroup/user.slice/run-u7.scope')
    """
    paths = [line[3:] for line in membership.splitlines() if line.startswith("0::")]
    if not paths:
        raise _Unavailable("this process is in no cgroup v2 (no 0:: line in /proc/self/cgroup)")
    below = os.path.relpath(paths[0], top)
    if below == ".." or below.startswith("../"):
        raise _Unavailable(f"this process's cgroup {paths[0]} is not in view under {mount} (which shows {top})")
    return mount if below == "." else mount / below


def _marked_delegated(cgroup: Path, mount: Path) -> bool:
    """Whether systemd delegated ``cgroup`` or a cgroup above it (``Delegate=yes`` on its service or scope).

    systemd marks such a cgroup with the extended attribute ``trusted.delegate`` (or ``user.delegate``,
    which a user's systemd can set) holding a true boolean, and reads the mark back the same way.
    """
    for place in [cgroup, *cgroup.parents]:
        for name in ("trusted.delegate", "user.delegate"):
            try:
                if os.getxattr(place, name).strip().lower() in (b"1", b"y", b"yes", b"true", b"t", b"on"):
                    return True
            except OSError:
                continue
        if place == mount:
            break
    return False


def _delegated_base(own: Path, mount: Path, *, euid: int, systemd: bool) -> Path:
    """The cgroup this process may build its notebooks' cgroups under (cgroup v2), or why there is none.

    It is the cgroup the process runs in (its parent, where the process moved to :data:`LEAF` below it
    before), as systemd's CGROUP_DELEGATION.md lays out: a manager uses the cgroup it was started in and
    what is below, where that was delegated to it. Delegated means writable (the directory, its
    ``cgroup.procs`` and ``cgroup.subtree_control``: cgroup-v2.rst's delegation to a user) and, for root
    on a machine systemd runs, marked by systemd as delegated, since all other cgroups there are
    systemd's own (a root process can write them all). ``cgroup.controllers`` must offer
    :data:`CONTROLLERS2`.
    """
    base = own.parent if own.name == LEAF and own != mount else own
    hint = "sudo systemd-run --scope" if euid == 0 else "systemd-run --user --scope"
    run = f"`{hint} -p Delegate=yes -- python -m grading autograde ...`"
    try:
        present = _read(base / "cgroup.controllers").split()
    except OSError as err:
        raise _Unavailable(f"cannot read the controllers of {base} ({err.strerror})") from err
    missing = [c for c in CONTROLLERS2 if c not in present]
    if missing:
        where = (
            "this machine keeps them in cgroup v1, systemd's hybrid setup"
            if mount.name == "unified"
            else f"run the grader in a scope that has them delegated, {run}"
        )
        listed = " ".join(sorted(present)) or "none"
        raise _Unavailable(
            f"{base} does not offer the {' and '.join(missing)} controller{'s' if len(missing) > 1 else ''}"
            f" (its cgroup.controllers: {listed}): {where}"
        )
    files = (base, base / "cgroup.procs", base / "cgroup.subtree_control")
    if not all(os.access(path, os.W_OK) for path in files):
        if euid == 0:
            raise _Unavailable(f"{base} is mounted read-only")
        raise _Unavailable(f"{base} is not delegated to this user (not writable): run the grader as {run}")
    if euid == 0 and systemd and not _marked_delegated(base, mount):
        raise _Unavailable(
            f"{base} is systemd's, not marked delegated (extended attribute trusted.delegate): run the grader as {run}"
        )
    return base


def _cgroup2_base() -> Path:
    """This machine's :func:`_delegated_base` for this process, or :class:`_Unavailable` saying why not."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text()
        membership = Path("/proc/self/cgroup").read_text()
    except OSError as err:
        raise _Unavailable(f"cannot read this process's cgroups ({err.strerror})") from err
    mount, top = _cgroup2_mount(mountinfo, CGROUP_ROOT)
    own = _own_cgroup2(membership, mount, top)
    return _delegated_base(own, mount, euid=os.geteuid(), systemd=SYSTEMD.is_dir())


def _cgroup2_problem() -> str | None:
    """Why this process cannot use cgroup v2 (the ``"cgroup2"`` mode), or None where it can."""
    try:
        _cgroup2_base()
    except _Unavailable as err:
        return f"not cgroup v2: {err}"
    return None


def _enable(cgroup: Path) -> None:
    """Enable :data:`CONTROLLERS2` in ``cgroup``'s ``cgroup.subtree_control``, so that its children can hold limits.

    A cgroup (the root cgroup aside) may enable them only while it holds no process of its own
    (cgroup-v2.rst, "No Internal Process Constraint": the write fails with EBUSY). Its processes (the
    grader, when ``cgroup`` is the one it runs in) then move to the leaf :data:`LEAF` below it, as
    CGROUP_DELEGATION.md asks of a manager delegated the cgroup it was started in.
    """
    enabled = _read(cgroup / "cgroup.subtree_control").split()
    wanted = " ".join(f"+{c}" for c in CONTROLLERS2 if c not in enabled)
    if not wanted:
        return
    for _ in range(10):  # a process of the cgroup may fork while the others move
        try:
            _write(cgroup / "cgroup.subtree_control", wanted)
            return
        except OSError as err:
            if err.errno != errno.EBUSY:
                raise
        leaf = cgroup / LEAF
        leaf.mkdir(exist_ok=True)
        for pid in _read(cgroup / "cgroup.procs").split():
            try:
                _write(leaf / "cgroup.procs", pid)
            except ProcessLookupError:  # gone meanwhile
                continue
    raise OSError(errno.EBUSY, f"cannot enable {wanted} in {cgroup}: processes keep appearing in it")


@contextlib.contextmanager
def _holding(cgroup: Path) -> Iterator[None]:
    """One room at a time, in any thread or process, changes the cgroups below ``cgroup`` (a lock on its folder).

    Two rooms might otherwise remove and use the shared parent, or enable controllers, at once.
    (A file lock, not a :class:`threading.Lock`: this module travels by value, and a lock does not.)
    """
    fd = os.open(cgroup, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def best_mode() -> str:
    """The first of :data:`MODES` this process can use: ``"cgroup2"``, ``"cgroup"`` (root, cgroup v1), ``"watchdog"``.

    Nothing is changed on the machine to find out; :func:`describe_mode` says why a mode was passed over.
    """
    if _cgroup2_problem() is None:
        return "cgroup2"
    if _cgroup1_problem() is None:
        return "cgroup"
    return "watchdog"


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
        A fresh folder for this notebook; the room makes ``box/`` (a tmpfs, where it can
        mount one: root, cgroup modes) or ``ipc/`` (elsewhere) in it.
    mode
        One of :data:`MODES`; by default :func:`best_mode`, falling back to the next mode
        that works when cgroups or the tmpfs cannot be set up after all. A mode asked for
        by name that cannot be set up raises :class:`OSError` saying why.
    poll
        Seconds between two looks at the room's counters.

    Attributes
    ----------
    mode
        The mode in use.
    subtree
        In cgroup v2 mode, the delegated cgroup the room's cgroup was made under; else None.
    ipc
        Host folder to bind writable as the socket folder (same path inside the sandbox).
    tmp
        Host folder to bind writable as the kernel's ``/tmp``, or None: the sandbox then
        makes ``/tmp`` a tmpfs of ``limits.file_size`` bytes itself (watchdog mode, and
        cgroup v2 without the right to mount).

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

    def __init__(
        self, limits: Limits, *, root: Path, mode: str | None = None, poll: float = 0.1, held: int = 0
    ) -> None:
        if mode not in (None, *MODES):
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.limits = limits
        self.root = Path(root)
        self.poll = poll
        self.mode = mode or best_mode()
        self.subtree: Path | None = None  # cgroup v2: the delegated cgroup the room's cgroup is under
        self.ipc: Path = self.root / "ipc"
        self.work: Path = self.root / "work"  # the kernel's working folder, writable: it starts with ``held`` bytes
        self.held = held
        self._work_base: int | None = None  # the working folder's bytes when the kernel started (no tmpfs of its own)
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
        if self.mode == "cgroup2":
            try:
                self._set_up_cgroup2()
            except OSError:
                self._tear_down()
                if mode == "cgroup2":
                    raise
                self.mode, self.tmp, self.subtree = "cgroup" if _cgroup1_problem() is None else "watchdog", None, None
        if self.mode == "cgroup":
            try:
                self._set_up_cgroups()
            except OSError:
                self._tear_down()
                if mode == "cgroup":
                    raise
                self.mode, self.ipc, self.tmp = "watchdog", self.root / "ipc", None
        if self._box is None:  # the socket folder and the working folder are folders of the host's
            self.ipc = self.root / "ipc"
            self.ipc.mkdir(mode=0o700)
            self.work = self.root / "work"
            self.work.mkdir(mode=0o755)

    # ----- setting up and tearing down

    def _mount_box(self) -> None:
        """Mount the tmpfs of ``limits.file_size`` bytes that holds ``ipc/`` and ``tmp/`` (OSError where it cannot)."""
        box = self.root / "box"
        box.mkdir(mode=0o700)
        size = self.limits.file_size + self.held
        options = f"size={size},nr_inodes={INODES},mode=0700".encode()
        if _libc().mount(b"tmpfs", bytes(box), b"tmpfs", 0x2 | 0x4, options) != 0:  # MS_NOSUID | MS_NODEV
            box.rmdir()
            raise OSError(ctypes.get_errno(), f"cannot mount a tmpfs on {box}")
        self._box = box
        self.ipc, self.tmp, self.work = box / "ipc", box / "tmp", box / "work"
        self.ipc.mkdir(mode=0o700)
        self.work.mkdir(mode=0o755)
        self.tmp.mkdir()
        self.tmp.chmod(0o1777)

    def _set_up_cgroup2(self) -> None:
        """One cgroup v2 for the room under the delegated subtree, its limits set; the tmpfs where root can mount it."""
        base = _cgroup2_base()
        self.subtree = base
        group, name = base / GROUP, _unique_name()
        with _holding(base):
            _enable(base)
            group.mkdir(exist_ok=True)
            _enable(group)
            (group / name).mkdir()
        cgroup = group / name
        self._cgroups = {"cgroup2": cgroup}
        settings = {
            "memory.max": (str(self.limits.memory), True),
            "memory.swap.max": ("0", False),  # where swap is accounted: no swap, as memory.memsw in cgroup v1
            "memory.oom.group": ("1", False),  # an OOM kill takes every process of the notebook at once
            "pids.max": (str(self.limits.procs), True),
        }
        for file, (value, needed) in settings.items():
            if file.split(".")[0] not in CONTROLLERS2:
                continue
            if (cgroup / file).exists():
                _write(cgroup / file, value)
            elif needed:
                raise _Unavailable(f"{cgroup / file} is missing although {base} offers {file.split('.')[0]}")
        if "usage_usec" not in _flat_keyed(_read(cgroup / "cpu.stat")):
            raise _Unavailable(f"{cgroup / 'cpu.stat'} has no usage_usec (CPU time of a cgroup needs Linux 4.15)")
        if os.geteuid() == 0:
            try:
                self._mount_box()
            except OSError:
                pass  # no mount rights after all: the sandbox makes /tmp itself, and the room watches it

    def _set_up_cgroups(self) -> None:
        self._mount_box()
        name = _unique_name()
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
                except OSError as err:
                    if err.errno != errno.EBUSY:  # gone already, or not a cgroup's folder
                        break
                    self._kill_cgroups()  # still busy: processes that are dying
                    time.sleep(0.05)
            try:
                with _holding(cgroup.parent.parent) if self.mode == "cgroup2" else contextlib.nullcontext():
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
        on_host = self._box is None
        self._tear_down()
        if on_host:  # what the notebook wrote on the host's disk goes now, not with its folder
            shutil.rmtree(self.ipc, ignore_errors=True)
            shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: types.TracebackType | None
    ) -> None:
        self.close()

    # ----- running

    def launcher(self, argv: list[str]) -> list[str]:
        """``argv`` started in this room: it joins the room's cgroups (cgroup modes), then becomes ``argv``.

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
        if self._box is None and self._work_base is None:  # what the kernel finds there is not its own writing
            self._work_base = _folder_bytes(self.work, 1 << 62)
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
            if self.mode == "cgroup2" and self._cgroups:
                return self._check_cgroup2()
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

    def _check_cgroup2(self) -> str | None:
        cgroup = self._cgroups["cgroup2"]
        # CONTROLLERS2 names the controllers the room holds its limits with
        if "memory" in CONTROLLERS2 and _memory_went_over(_flat_keyed(_read(cgroup / "memory.events"))):
            return self._over("memory")
        # a fork refused by pids.max (on kernels before the hierarchical pids.events, a refusal in this cgroup)
        if "pids" in CONTROLLERS2 and _flat_keyed(_read(cgroup / "pids.events")).get("max", 0) > 0:
            return self._over("procs")
        if _flat_keyed(_read(cgroup / "cpu.stat"))["usage_usec"] > self.limits.cpu * 10**6:
            return self._over("cpu")
        if self._box is not None:
            st = os.statvfs(self._box)
            if st.f_bavail == 0 or st.f_favail == 0:
                return self._over("file_size")
        elif self._written([int(pid) for pid in _read(cgroup / "cgroup.procs").split()]) > self.limits.file_size:
            return self._over("file_size")
        return None

    def _written(self, members: list[int]) -> int:
        """Bytes in the socket folder, what the working folder grew by, and the use of the sandbox's own ``/tmp``
        (seen through a process in it)."""
        written = _folder_bytes(self.ipc, self.limits.file_size)
        base = self._work_base or 0
        written += max(0, _folder_bytes(self.work, self.limits.file_size + base) - base)
        own = os.stat("/proc/self/ns/mnt").st_ino
        for pid in reversed(members):
            try:
                if os.stat(f"/proc/{pid}/ns/mnt").st_ino != own:
                    return written + _used(f"/proc/{pid}/root/tmp")
            except OSError:
                continue
        return written

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
        if self._written(members) > self.limits.file_size:
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
        """SIGKILL every process in the room's cgroups; how many of them are still alive.

        In cgroup v2 ``cgroup.kill`` (Linux 5.14) has the kernel kill them all, forks racing with it
        included; each process listed in ``cgroup.procs`` gets a SIGKILL too (all there is on older
        kernels), and :meth:`kill` repeats this until none is left.
        """
        pids: set[int] = set()
        for cgroup in self._cgroups.values():
            if self.mode == "cgroup2" and (cgroup / "cgroup.kill").exists():
                try:
                    _write(cgroup / "cgroup.kill", "1")
                except OSError:
                    pass
            try:
                pids.update(int(p) for p in (cgroup / "cgroup.procs").read_text().split())
            except OSError:
                continue
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return sum(1 for pid in pids if _alive(pid))

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

    @property
    def holds_memory(self) -> bool:
        """Whether a cgroup caps the memory the notebook's processes use (so no process needs an address-space limit)."""
        return self.mode in ("cgroup", "cgroup2")

    def describe_mode(self) -> str:
        """One line for the run log: how this room holds its limits, and why not in a better mode (:func:`describe_mode`)."""
        return _describe(self.mode, self.limits, self.poll, subtree=self.subtree, tmpfs=self._box is not None)


def describe_mode(mode: str, limits: Limits, poll: float = 0.1) -> str:
    """One line for the run log: how rooms in ``mode`` hold ``limits`` here, and why each better mode was passed over.

    >>> print(describe_mode("cgroup", Limits()))  # doctest: +ELLIPSIS
    limits per notebook: cgroups v1 (memory, pids, cpuacct) and one 64M tmpfs for /tmp and the socket folder...
    >>> describe_mode(best_mode(), Limits()).startswith("limits per notebook: ")
    True
    """
    subtree = None
    if mode == "cgroup2":
        try:
            subtree = _cgroup2_base()
        except _Unavailable:
            pass
    return _describe(mode, limits, poll, subtree=subtree, tmpfs=mode == "cgroup" or os.geteuid() == 0)


def _describe(mode: str, limits: Limits, poll: float, *, subtree: Path | None, tmpfs: bool) -> str:
    size = describe(limits)["file_size"]
    if tmpfs:
        files = f"one {size} tmpfs for /tmp and the socket folder"
    else:
        files = f"/tmp a tmpfs of {size} and the socket folder watched every {poll:g} s"
    if mode == "cgroup2":
        return (
            f"limits per notebook: a cgroup v2 (memory.max, pids.max, cpu.stat) under {subtree or 'a delegated cgroup'}"
            f" and {files}"
        )
    problems = [_cgroup2_problem()]
    if mode == "cgroup":
        how = f"cgroups v1 (memory, pids, cpuacct) and {files}"
    else:
        how = f"a watchdog over its processes and its socket folder and /tmp, every {poll:g} s"
        problems.append(_cgroup1_problem())
    return "; ".join([f"limits per notebook: {how}", *(p for p in problems if p)])
