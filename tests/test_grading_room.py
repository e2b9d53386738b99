"""A notebook's room holds its limits over all of its processes, in each mode.

Each sandbox test runs a small Python program in the real sandbox (``bwrap``) inside a
:class:`grading.room.Room`, as the grader runs a kernel: programs that go over a limit
together (forked children sharing the memory, processes burning CPU side by side, writes
spread over every folder they can write) are killed with a one-line reason naming the limit;
an honest program beside them runs to its end. Every mode runs where the machine offers it:
cgroup v2 needs its memory and pids controllers delegated to the grader, cgroup v1 needs root,
the watchdog runs anywhere.

Where cgroup v2 is not offered (a hybrid machine keeps memory and pids in cgroup v1), two
kinds of test still exercise its code: on a tree of plain files laid out as the kernel lays out
a cgroup v2 (which files the room writes and reads, how it picks its subtree and refuses one),
and, as root, on this kernel's own cgroup v2 hierarchy with the hugetlb controller standing in
for memory and pids (the subtree, the "no internal process" rule, joining, CPU time, killing
and leaving, for real).
"""

from __future__ import annotations

import dataclasses
import doctest
import errno
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import grading.room
from grading.room import GROUP, LEAF, Room, best_mode
from grading.sandbox import Limits, command, default_bwrap, probe, uid_for_task

CGROUP2 = grading.room._cgroup2_problem()
CGROUP1 = grading.room._cgroup1_problem()
MODES = [
    "watchdog",
    pytest.param(
        "cgroup", marks=pytest.mark.skipif(CGROUP1 is not None, reason=f"needs root and writable cgroup v1 ({CGROUP1})")
    ),
    pytest.param(
        "cgroup2",
        marks=pytest.mark.skipif(
            CGROUP2 is not None,
            reason=f"real cgroup v2 limits cannot run on this machine, which has no delegated cgroup v2 with the memory "
            f"and pids controllers ({CGROUP2}); the tests on a fake tree and with hugetlb standing in run instead",
        ),
    ),
]
SMALL = Limits(memory=256 << 20, cpu=20, procs=64, file_size=16 << 20, wall=60)

SANDBOX = pytest.mark.skipif(probe(default_bwrap()) is not None, reason="no sandbox on this machine")


@dataclass
class Run:
    """What came of one program run in a room."""

    reason: str | None
    status: int | None
    seconds: float
    out: str
    written: int  # bytes the host held in the room's folders when it was killed
    in_ipc: int  # of which in the socket folder
    leftovers: list[str]  # cgroups, mounts and processes still there once the room was left
    tmpfs: bool  # whether the room mounted its own tmpfs for /tmp and the socket folder


def _leftovers(cgroups: list[Path], root: Path, pids: list[int]) -> list[str]:
    found = [str(c) for c in cgroups if c.exists()]
    mounts = Path("/proc/mounts").read_text()
    found += [line for line in mounts.splitlines() if str(root) in line]
    found += [f"process {pid}" for pid in pids if grading.room._alive(pid)]
    return found


def _run(tmp_path: Path, mode: str, code: str, limits: Limits = SMALL, timeout: float = 30) -> Run:
    """Run ``code`` in the sandbox, in a room of its own, as :mod:`grading.execute` runs a kernel."""
    root, work = tmp_path / "room", tmp_path / "work"
    root.mkdir()
    work.mkdir()
    start = time.perf_counter()
    with Room(limits, root=root, mode=mode) as room:
        assert room.mode == mode
        uid = uid_for_task()
        if uid:
            os.chown(room.ipc, uid, uid)
        code = code.replace("{ipc}", str(room.ipc))
        argv = command(
            default_bwrap(), [sys.executable, "-c", code], work=work, ipc=room.ipc, tmp=room.tmp, limits=limits,
            uid=uid, env={},
        )  # fmt: skip
        process = subprocess.Popen(room.launcher(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        room.watch(process.pid)
        try:
            out, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            room.kill()
            out, _ = process.communicate()
        seconds = time.perf_counter() - start
        reason = room.reason
        written = sum(p.stat().st_size for f in (room.ipc, room.tmp) if f for p in f.rglob("*") if p.is_file())
        in_ipc = sum(p.stat().st_size for p in room.ipc.rglob("*") if p.is_file())
        seen = list(room._seen)
        cgroups = list(room._cgroups.values())
        tmpfs = room.tmp is not None
    return Run(reason, process.returncode, seconds, out, written, in_ipc, _leftovers(cgroups, root, seen), tmpfs)


def test_docstring_examples() -> None:
    result = doctest.testmod(grading.room, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@SANDBOX
@pytest.mark.parametrize("mode", MODES)
def test_forked_children_that_together_exceed_the_memory_limit_are_killed(tmp_path: Path, mode: str) -> None:
    """Four children, each holding a third of the limit: no one process is over it, the room is."""
    code = """
import os, time
for _ in range(4):
    if os.fork() == 0:
        hoard = b"x" * (85 << 20)
        time.sleep(30)
        os._exit(0)
time.sleep(30)
"""
    run = _run(tmp_path, mode, code)
    assert run.reason == "went over the memory limit (256M, --memory)", run
    assert run.seconds < 20 and not run.leftovers, run


@SANDBOX
@pytest.mark.parametrize("mode", MODES)
def test_writing_every_writable_folder_stops_at_one_budget(tmp_path: Path, mode: str) -> None:
    """The socket folder and /tmp (and any other folder it finds it can write) share the file-size budget.

    In cgroup mode no byte goes past it; the watchdog lets through what is written between
    two of its looks, so the writes here come at about 60 MB/s (3 MB every 50 ms).
    """
    code = """
import os, time
folders = ["{ipc}", "/tmp", "/tmp/deeper", "/dev/shm", "/var/tmp", "/", os.getcwd(), os.path.expanduser("~")]
os.makedirs("/tmp/deeper", exist_ok=True)
chunk = b"x" * (1 << 20)
for i in range(64):  # 64 MB at most in each folder
    for n, folder in enumerate(folders):
        try:
            with open(os.path.join(folder, f"fill-{n}-{i}"), "wb") as fh:
                fh.write(chunk)
        except OSError:
            pass
    time.sleep(0.05)
time.sleep(30)
"""
    limits = Limits(memory=1 << 30, cpu=20, procs=64, file_size=16 << 20)
    run = _run(tmp_path, mode, code, limits)
    assert run.reason == "went over the file size limit (16M, --file-size)", run
    assert run.seconds < 20 and not run.leftovers, run
    # all a tmpfs of 16M can hold; a room that watches the folders may let through what is written in one poll
    assert run.written <= (16 << 20 if run.tmpfs else 24 << 20), run
    assert run.in_ipc < 12 << 20, run  # half of each round went to /tmp, and counted


@SANDBOX
@pytest.mark.parametrize("mode", MODES)
def test_forking_beyond_the_process_limit_is_stopped(tmp_path: Path, mode: str) -> None:
    code = """
import os, time
for _ in range(200):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
    except BlockingIOError:
        break
time.sleep(30)
"""
    # memory enough for 64 copies of the interpreter: the watchdog counts each copy's shared pages again, so under
    # SMALL's 256M it could see the memory limit crossed before the process limit
    run = _run(tmp_path, mode, code, dataclasses.replace(SMALL, memory=2 << 30))
    assert run.reason == "went over the processes limit (64, --procs)", run
    assert run.seconds < 20 and not run.leftovers, run


@SANDBOX
@pytest.mark.parametrize("mode", MODES)
def test_processes_burning_cpu_together_are_stopped_at_the_cpu_limit(tmp_path: Path, mode: str) -> None:
    """Four processes: each stays under its own CPU limit, the four of them go over the room's."""
    code = """
import os, time
for _ in range(3):
    if os.fork() == 0:
        break
end = time.time() + 30
while time.time() < end:
    pass
"""
    run = _run(tmp_path, mode, code, Limits(memory=1 << 30, cpu=2, procs=64, file_size=16 << 20))
    assert run.reason == "went over the CPU time limit (2, --cpu)", run
    assert run.seconds < 15 and not run.leftovers, run


@SANDBOX
@pytest.mark.parametrize("mode", MODES)
def test_an_honest_program_runs_to_its_end_and_leaves_nothing(tmp_path: Path, mode: str) -> None:
    code = """
import os, subprocess, sys
with open("/tmp/result.txt", "w") as fh:
    fh.write("42" * 1000)
child = subprocess.run([sys.executable, "-c", "print(sum(range(10**6)))"], capture_output=True, text=True)
print(open("/tmp/result.txt").read()[:2], child.stdout.strip(), os.listdir("{ipc}"))
"""
    run = _run(tmp_path, mode, code)
    assert run.reason is None and run.status == 0, run
    assert run.out.strip() == "42 499999500000 []", run
    assert not run.leftovers and not (tmp_path / "room" / "box").exists(), run


@SANDBOX
@pytest.mark.parametrize("mode", MODES)
def test_an_honest_program_beside_a_hog_is_untouched(tmp_path: Path, mode: str) -> None:
    """Rooms side by side share no count: the honest one finishes while the other is killed."""
    honest = "import time\nx = b'y' * (150 << 20)\ntime.sleep(2)\nprint('done', len(x))"
    hog = "import os, time\nfor _ in range(3):\n    os.fork()\nx = b'y' * (100 << 20)\ntime.sleep(30)"
    results: dict[str, Run] = {}

    def run(name: str, code: str) -> None:
        (tmp_path / name).mkdir()
        results[name] = _run(tmp_path / name, mode, code)

    threads = [threading.Thread(target=run, args=item) for item in (("honest", honest), ("hog", hog))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results["honest"].reason is None and results["honest"].out.strip() == f"done {150 << 20}", results
    assert results["hog"].reason == "went over the memory limit (256M, --memory)", results


def test_kill_is_idempotent_and_a_closed_room_stays_closed(tmp_path: Path) -> None:
    with Room(SMALL, root=tmp_path) as room:
        process = subprocess.Popen(room.launcher([sys.executable, "-c", "import time; time.sleep(30)"]))
        room.watch(process.pid)
        room.kill()
        room.kill()
        assert process.wait(timeout=10) == -9
        assert room.reason is None
    room.close()
    assert room.reason is None and not list(tmp_path.iterdir())


def test_a_forced_cgroup_mode_that_cannot_be_set_up_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grading.room, "CGROUP_ROOT", tmp_path / "no-cgroups")
    with pytest.raises(OSError):
        Room(SMALL, root=tmp_path, mode="cgroup")
    assert not [line for line in Path("/proc/mounts").read_text().splitlines() if str(tmp_path) in line]
    assert best_mode() == "watchdog"
    (tmp_path / "auto").mkdir()
    with Room(SMALL, root=tmp_path / "auto") as room:
        assert room.mode == "watchdog" and room.tmp is None and room.ipc.is_dir()


def test_a_room_falls_back_to_the_watchdog_where_cgroups_cannot_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grading.room, "best_mode", lambda: "cgroup")
    monkeypatch.setattr(grading.room, "CGROUP_ROOT", tmp_path / "no-cgroups")
    with Room(SMALL, root=tmp_path) as room:
        assert room.mode == "watchdog" and room.tmp is None and room.ipc == tmp_path / "ipc" and room.ipc.is_dir()
        assert room.launcher(["true"]) == ["true"]
        assert not (tmp_path / "box").exists()
    assert not [line for line in Path("/proc/mounts").read_text().splitlines() if str(tmp_path) in line]


def test_the_sandbox_binds_the_rooms_tmp_or_makes_its_own(tmp_path: Path) -> None:
    def argv(tmp: Path | None) -> list[str]:
        kernel = [sys.executable, "-m", "ipykernel_launcher"]
        return command(
            "/usr/bin/bwrap", kernel, work=tmp_path, ipc=tmp_path / "ipc", limits=SMALL, uid=0, env={}, tmp=tmp
        )

    own = argv(None)
    assert own[own.index("--tmpfs") - 2 : own.index("--tmpfs") + 2] == ["--size", str(16 << 20), "--tmpfs", "/tmp"]
    bound = argv(tmp_path / "box" / "tmp")
    assert "--tmpfs" not in bound and bound[bound.index("/tmp") - 2 : bound.index("/tmp") + 1] == [
        "--bind", str(tmp_path / "box" / "tmp"), "/tmp",
    ]  # fmt: skip


def test_a_room_that_cannot_make_its_cgroup2_falls_back_to_the_next_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused() -> Path:
        raise grading.room._Unavailable("no delegated cgroup v2 here")

    monkeypatch.setattr(grading.room, "best_mode", lambda: "cgroup2")
    monkeypatch.setattr(grading.room, "_cgroup2_base", refused)
    with Room(SMALL, root=tmp_path) as room:
        assert room.mode == ("cgroup" if CGROUP1 is None else "watchdog") and room.ipc.is_dir()
    assert not [line for line in Path("/proc/mounts").read_text().splitlines() if str(tmp_path) in line]
    with pytest.raises(OSError, match="no delegated cgroup v2 here"):
        Room(SMALL, root=tmp_path / "forced", mode="cgroup2")


@pytest.mark.skipif(CGROUP2 is None, reason="this machine offers cgroup v2 with memory and pids")
def test_a_forced_cgroup2_mode_says_what_this_machine_lacks(tmp_path: Path) -> None:
    with pytest.raises(OSError) as caught:
        Room(SMALL, root=tmp_path, mode="cgroup2")
    assert CGROUP2 == f"not cgroup v2: {caught.value}"
    assert not list(tmp_path.iterdir())


def test_describe_mode_says_which_mode_and_why_not_a_better_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grading.room, "_cgroup2_problem", lambda: "not cgroup v2: no memory controller")
    monkeypatch.setattr(grading.room, "_cgroup1_problem", lambda: "not cgroup v1: it needs root")
    line = grading.room.describe_mode("watchdog", SMALL, poll=0.2)
    assert line == (
        "limits per notebook: a watchdog over its processes and its socket folder and /tmp, every 0.2 s; "
        "not cgroup v2: no memory controller; not cgroup v1: it needs root"
    )
    line = grading.room.describe_mode("cgroup", SMALL)
    assert line.endswith("tmpfs for /tmp and the socket folder; not cgroup v2: no memory controller"), line


# ----- cgroup v2 on a tree of plain files laid out as the kernel lays one out (no kernel needed)

KERNEL_FILES = {  # a new cgroup v2's files, where its parent enabled memory and pids (cgroup-v2.rst)
    "cgroup.controllers": "memory pids\n",
    "cgroup.subtree_control": "",
    "cgroup.procs": "",
    "cgroup.kill": "",
    "cpu.stat": "usage_usec 0\nuser_usec 0\nsystem_usec 0\n",
    "memory.max": "max\n",
    "memory.swap.max": "max\n",
    "memory.oom.group": "0\n",
    "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
    "pids.max": "max\n",
    "pids.events": "max 0\n",
}


def _fake_cgroup(path: Path, **files: str) -> Path:
    os.makedirs(path, exist_ok=True)
    for name, text in {**KERNEL_FILES, **{k.replace("_", ".", 1): v for k, v in files.items()}}.items():
        (path / name).write_text(text)
    return path


@pytest.fixture
def fake_cgroup2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cgroup v2 subtree of plain files delegated to the grader: a folder made below it gets a cgroup's files."""
    base = _fake_cgroup(tmp_path / "cgroup" / "user.slice" / "run-u7.scope")
    mkdir = Path.mkdir

    def kernel_mkdir(self: Path, mode: int = 0o777, parents: bool = False, exist_ok: bool = False) -> None:
        existed = self.exists()
        mkdir(self, mode, parents, exist_ok)
        if not existed and base in self.parents:  # its parent handed memory and pids down to it
            _fake_cgroup(self)

    monkeypatch.setattr(Path, "mkdir", kernel_mkdir)
    monkeypatch.setattr(grading.room, "_cgroup2_base", lambda: base)
    (tmp_path / "room").mkdir()
    return base


def test_a_cgroup2_room_sets_its_limits_in_a_cgroup_of_its_own(fake_cgroup2: Path, tmp_path: Path) -> None:
    assert best_mode() == "cgroup2"
    limits = Limits(memory=256 << 20, cpu=2, procs=64, file_size=16 << 20)
    with Room(limits, root=tmp_path / "room") as room:
        assert room.mode == "cgroup2" and room.subtree == fake_cgroup2
        (cgroup,) = room._cgroups.values()
        assert cgroup.parent == fake_cgroup2 / "roofline-grading"
        written = {name: (cgroup / name).read_text() for name in ("memory.max", "memory.swap.max", "pids.max")}
        assert written == {"memory.max": "268435456", "memory.swap.max": "0", "pids.max": "64"}
        assert (cgroup / "memory.oom.group").read_text() == "1"
        for parent in (fake_cgroup2, cgroup.parent):  # each level hands memory and pids down to the next
            assert (parent / "cgroup.subtree_control").read_text() == "+memory +pids", parent
        argv = room.launcher(["bwrap", "--", "python3"])
        assert argv[:2] == ["/bin/sh", "-c"] and argv[-5:] == [
            str(cgroup / "cgroup.procs"),
            "--",
            "bwrap",
            "--",
            "python3",
        ]
        assert room.procs_files() == [str(cgroup / "cgroup.procs")]
        assert room.reason is None
        assert f"a cgroup v2 (memory.max, pids.max, cpu.stat) under {fake_cgroup2}" in room.describe_mode()
        assert (room.tmp is not None) == (os.geteuid() == 0) and room.ipc.is_dir()
    assert (cgroup / "cgroup.kill").read_text() == "1"  # leaving the room killed what was left, by the kernel


def test_a_cgroup2_room_without_the_memory_files_refuses(fake_cgroup2: Path, tmp_path: Path) -> None:
    mkdir = Path.mkdir

    def without_memory(self: Path, *args: object, **kw: object) -> None:
        mkdir(self, *args, **kw)  # type: ignore[arg-type]
        if self.parent.name == GROUP:
            for name in ("memory.max", "memory.events"):
                (self / name).unlink()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "mkdir", without_memory)
        with pytest.raises(OSError, match="memory.max is missing"):
            Room(SMALL, root=tmp_path / "room", mode="cgroup2")


@pytest.mark.parametrize(
    "name, text, reason",
    [
        ("memory.events", "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n", "went over the memory limit (256M, --memory)"),
        ("memory.events", "low 0\nhigh 0\nmax 40\noom 0\noom_kill 0\n", None),  # page cache dropped, nothing failed
        ("memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 1\n", None),  # the machine's OOM killer, not ours
        ("pids.events", "max 3\n", "went over the processes limit (64, --procs)"),
        (
            "cpu.stat",
            "usage_usec 2000001\nuser_usec 2000001\nsystem_usec 0\n",
            "went over the CPU time limit (2, --cpu)",
        ),
        ("cpu.stat", "usage_usec 1999999\nuser_usec 1999999\nsystem_usec 0\n", None),
    ],
)
def test_a_cgroup2_room_reads_its_limits_from_its_own_cgroup(
    fake_cgroup2: Path, tmp_path: Path, name: str, text: str, reason: str | None
) -> None:
    limits = Limits(memory=256 << 20, cpu=2, procs=64, file_size=16 << 20)
    with Room(limits, root=tmp_path / "room", mode="cgroup2") as room:
        (room._cgroups["cgroup2"] / name).write_text(text)
        assert room.reason == reason


def test_without_cgroup_kill_each_process_of_the_cgroup_is_killed(fake_cgroup2: Path, tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        with Room(SMALL, root=tmp_path / "room", mode="cgroup2") as room:
            cgroup = room._cgroups["cgroup2"]
            (cgroup / "cgroup.kill").unlink()  # before Linux 5.14
            (cgroup / "cgroup.procs").write_text(f"{sleeper.pid}\n")
            room.kill()
            assert sleeper.wait(timeout=5) == -9
    finally:
        sleeper.kill()
        sleeper.wait()


def test_controllers_are_enabled_once_the_cgroups_own_processes_moved_to_a_leaf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cgroup-v2.rst's "no internal process" rule: enabling memory in a cgroup with processes fails with EBUSY."""
    base = _fake_cgroup(tmp_path / "scope", cgroup_procs="4242\n4343\n")
    control, own, procs = base / "cgroup.subtree_control", base / "cgroup.procs", base / LEAF / "cgroup.procs"
    writes: list[tuple[Path, str]] = []

    def write(path: Path, value: str) -> None:  # as the kernel takes it
        writes.append((path, value))
        if path == control and own.read_text().split():
            raise OSError(errno.EBUSY, "Device or resource busy")
        if path == procs:  # the process leaves the cgroup it was in
            own.write_text("".join(f"{pid}\n" for pid in own.read_text().split() if pid != value))
        path.write_text(value)

    monkeypatch.setattr(grading.room, "_write", write)
    grading.room._enable(base)
    assert writes == [(control, "+memory +pids"), (procs, "4242"), (procs, "4343"), (control, "+memory +pids")]
    writes.clear()
    control.write_text("memory pids\n")
    grading.room._enable(base)  # enabled already: nothing to write
    control.write_text("pids\n")
    grading.room._enable(base)
    assert writes == [(control, "+memory")]


def test_enabling_gives_up_when_processes_keep_coming(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = _fake_cgroup(tmp_path / "scope", cgroup_procs="4242\n")

    def write(path: Path, value: str) -> None:
        if path.name == "cgroup.subtree_control":
            raise OSError(errno.EBUSY, "Device or resource busy")
        path.write_text(value)

    monkeypatch.setattr(grading.room, "_write", write)
    with pytest.raises(OSError, match="processes keep appearing"):
        grading.room._enable(base)


MOUNTINFO_UNIFIED = (
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
)
MOUNTINFO_HYBRID = (
    "25 24 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:4 - tmpfs tmpfs ro,mode=755\n"
    "26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:5 - cgroup2 cgroup2 rw\n"
    "28 25 0:26 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:7 - cgroup cgroup rw,memory\n"
)


def test_the_cgroup2_hierarchy_is_found_where_systemd_mounts_it() -> None:
    root = Path("/sys/fs/cgroup")
    assert grading.room._cgroup2_mount(MOUNTINFO_UNIFIED, root) == (root, "/")
    assert grading.room._cgroup2_mount(MOUNTINFO_HYBRID, root) == (root / "unified", "/")
    with pytest.raises(OSError, match="no cgroup v2 hierarchy is mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified"):
        grading.room._cgroup2_mount(MOUNTINFO_HYBRID.replace("cgroup2", "tmpfs"), root)
    # a container's view: the mount shows the container's cgroup at its top
    shown = "40 30 0:30 /system.slice/box.scope /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    mount, top = grading.room._cgroup2_mount(shown, root)
    own = grading.room._own_cgroup2("0::/system.slice/box.scope/init\n", mount, top)
    assert own == root / "init"
    assert grading.room._own_cgroup2("0::/\n", mount, "/") == root
    with pytest.raises(OSError, match="not in view"):
        grading.room._own_cgroup2("0::/user.slice\n", mount, top)
    with pytest.raises(OSError, match="no 0:: line"):
        grading.room._own_cgroup2("4:memory:/\n1:name=systemd:/\n", mount, top)


def _writable_only_if_the_mode_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Permission bits as a normal user meets them (root may write anything)."""
    if os.geteuid() == 0:
        monkeypatch.setattr(os, "access", lambda path, mode: bool(os.stat(path).st_mode & 0o200))


def test_the_subtree_is_the_delegated_cgroup_the_grader_runs_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mount = tmp_path / "cgroup"
    scope = _fake_cgroup(mount / "user.slice" / "user@1000.service" / "app.slice" / "run-u7.scope")
    choose = grading.room._delegated_base
    assert choose(scope, mount, euid=1000, systemd=True) == scope
    assert choose(_fake_cgroup(scope / LEAF), mount, euid=1000, systemd=True) == scope  # the grader moved there
    assert choose(scope, mount, euid=0, systemd=False) == scope  # root where systemd does not manage cgroups
    with pytest.raises(
        OSError, match=r"is systemd.s, not marked delegated .*`sudo systemd-run --scope -p Delegate=yes"
    ):
        choose(scope, mount, euid=0, systemd=True)
    try:
        os.setxattr(scope.parent, "user.delegate", b"1")  # the mark systemd sets on a cgroup it delegated
    except OSError as err:
        pytest.skip(f"no extended attributes on {tmp_path}: {err}")
    assert choose(scope, mount, euid=0, systemd=True) == scope
    _writable_only_if_the_mode_allows(monkeypatch)
    for path in (scope, scope / "cgroup.subtree_control"):
        path.chmod(path.stat().st_mode & ~0o222)
    with pytest.raises(OSError, match="not delegated to this user.*`systemd-run --user --scope -p Delegate=yes"):
        choose(scope, mount, euid=1000, systemd=True)


def test_a_subtree_without_memory_and_pids_is_refused_with_what_to_do(tmp_path: Path) -> None:
    mount = tmp_path / "cgroup"
    scope = _fake_cgroup(mount / "user.slice" / "run-u7.scope", cgroup_controllers="cpu pids\n")
    with pytest.raises(OSError) as caught:
        grading.room._delegated_base(scope, mount, euid=1000, systemd=True)
    assert str(caught.value) == (
        f"{scope} does not offer the memory controller (its cgroup.controllers: cpu pids): run the grader in a scope "
        "that has them delegated, `systemd-run --user --scope -p Delegate=yes -- python -m grading autograde ...`"
    )
    hybrid = _fake_cgroup(tmp_path / "unified", cgroup_controllers="hugetlb\n")
    with pytest.raises(OSError, match=r"the memory and pids controllers \(its cgroup.controllers: hugetlb\): this "):
        grading.room._delegated_base(hybrid, hybrid, euid=0, systemd=False)


# ----- cgroup v2 on this kernel, with the hugetlb controller standing in for memory and pids (as root)


@pytest.fixture
def kernel_cgroup2(monkeypatch: pytest.MonkeyPatch) -> object:
    """A cgroup of this kernel's cgroup v2 hierarchy holding a process, as the grader's delegated cgroup does.

    The room makes its cgroups below it for real; hugetlb, the one controller a hybrid machine leaves
    to cgroup v2, stands in for memory and pids, whose limits cannot be set here.
    """
    if os.geteuid() != 0:
        pytest.skip("making cgroups in this machine's cgroup v2 hierarchy needs root")
    try:
        mount, top = grading.room._cgroup2_mount(Path("/proc/self/mountinfo").read_text(), grading.room.CGROUP_ROOT)
        own = grading.room._own_cgroup2(Path("/proc/self/cgroup").read_text(), mount, top)
    except OSError as err:
        pytest.skip(str(err))
    if "hugetlb" not in (own / "cgroup.controllers").read_text().split():
        pytest.skip(f"{own} does not offer the hugetlb controller to stand in for memory and pids")
    control = own / "cgroup.subtree_control"
    added = "hugetlb" not in control.read_text().split()
    if added:
        try:
            control.write_text("+hugetlb")
        except OSError as err:
            pytest.skip(f"cannot enable hugetlb in {own}: {err}")
    base = own / f"roofline-test-{os.getpid()}-{os.urandom(3).hex()}"
    base.mkdir()
    sleeper = subprocess.Popen(["sleep", "120"])
    (base / "cgroup.procs").write_text(str(sleeper.pid))
    monkeypatch.setattr(grading.room, "CONTROLLERS2", ("hugetlb",))
    monkeypatch.setattr(grading.room, "_cgroup2_base", lambda: base)
    try:
        yield base, sleeper
    finally:
        sleeper.kill()
        sleeper.wait()
        for cgroup in (base / GROUP, base / LEAF, base):
            for _ in range(50):
                try:
                    cgroup.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
        if added:
            control.write_text("-hugetlb")


def _cgroup_of(pid: int) -> str:
    return next(line[3:] for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if line.startswith("0::"))


@SANDBOX
def test_on_this_kernel_a_cgroup2_room_counts_cpu_time_kills_and_leaves_nothing(
    kernel_cgroup2: tuple[Path, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    base, sleeper = kernel_cgroup2
    code = """
import os, time
for _ in range(3):
    if os.fork() == 0:
        break
end = time.time() + 30
while time.time() < end:
    pass
"""
    (tmp_path / "hog").mkdir()
    run = _run(tmp_path / "hog", "cgroup2", code, Limits(memory=1 << 30, cpu=2, procs=64, file_size=16 << 20))
    assert run.reason == "went over the CPU time limit (2, --cpu)", run
    assert run.seconds < 15 and not run.leftovers, run
    # the subtree's own process moved to a leaf, so that the subtree could hand the controller down
    assert _cgroup_of(sleeper.pid).endswith(f"/{base.name}/{LEAF}")
    assert "hugetlb" in (base / "cgroup.subtree_control").read_text().split()
    assert not (base / GROUP).exists()  # the shared parent goes with the last room
    (tmp_path / "honest").mkdir()
    run = _run(tmp_path / "honest", "cgroup2", "print(6 * 7)")
    assert run.reason is None and run.status == 0 and run.out == "42\n", run
    assert not run.leftovers and run.tmpfs, run


def test_on_this_kernel_leaving_a_cgroup2_room_kills_what_it_never_watched(
    kernel_cgroup2: tuple[Path, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    mount, _ = grading.room._cgroup2_mount(Path("/proc/self/mountinfo").read_text(), grading.room.CGROUP_ROOT)
    with Room(SMALL, root=tmp_path, mode="cgroup2") as room:
        cgroup = room._cgroups["cgroup2"]
        assert any(path.name.startswith("hugetlb.") for path in cgroup.iterdir())  # the controller reached it
        process = subprocess.Popen(room.launcher(["sleep", "60"]))  # joins the cgroup; the room is not told its pid
        deadline = time.monotonic() + 10
        while str(process.pid) not in (cgroup / "cgroup.procs").read_text().split():
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.01)
        assert _cgroup_of(process.pid) == f"/{cgroup.relative_to(mount)}"
    assert process.wait(timeout=5) == -9 and not cgroup.exists()


def test_the_room_travels_by_value_to_cluster_workers() -> None:
    """grading.cluster pickles this module by value with each task: no module-level lock or other unpicklable state."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(grading.room)
    try:
        room_class = cloudpickle.loads(cloudpickle.dumps(Room))
        assert room_class.__name__ == "Room" and cloudpickle.loads(cloudpickle.dumps(best_mode))() in grading.room.MODES
    finally:
        cloudpickle.unregister_pickle_by_value(grading.room)


# --- the sandbox probed once a process --------------------------------------------------------------------------------


def _counting_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The command lines :func:`grading.sandbox.probe` starts from now on."""
    import grading.sandbox

    started: list[list[str]] = []
    real = subprocess.run

    def run(argv: list[str], *args: object, **kwargs: object) -> subprocess.CompletedProcess:
        started.append(argv)
        return real(argv, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(grading.sandbox.subprocess, "run", run)
    return started


@SANDBOX
def test_a_sandbox_that_worked_is_not_probed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every grading test file asks at import whether the sandbox works: one kernel start answers them all."""
    started = _counting_runs(monkeypatch)
    assert probe(default_bwrap()) is None and probe(default_bwrap()) is None
    assert started == []  # answered by the probe this process made at import (SANDBOX above)
    assert probe(default_bwrap(), Limits(procs=200)) is None and len(started) == 1  # other limits: probed
    assert probe(default_bwrap(), Limits(procs=200)) is None and len(started) == 1
    assert probe(default_bwrap(), Limits()) is None and len(started) == 1  # the defaults: what None probed


def test_a_sandbox_that_failed_is_probed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure may be a busy machine's time-out: it is not remembered."""
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n", encoding="utf-8")
    broken.chmod(0o755)
    started = _counting_runs(monkeypatch)
    for tries in (1, 2):
        reason = probe(str(broken))
        assert reason is not None and "setting up uid map: Permission denied" in reason, reason
        assert len(started) == tries
