"""A notebook's room holds its limits over all of its processes, in either mode.

Each test runs a small Python program in the real sandbox (``bwrap``) inside a
:class:`grading.room.Room`, as the grader runs a kernel: programs that go over a limit
together (forked children sharing the memory, processes burning CPU side by side, writes
spread over every folder they can write) are killed with a one-line reason naming the limit;
an honest program beside them runs to its end. Both modes run where they can: the cgroup
mode needs root and cgroup v1, the watchdog runs anywhere.
"""

from __future__ import annotations

import dataclasses
import doctest
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import grading.room
from grading.room import Room, best_mode
from grading.sandbox import Limits, command, default_bwrap, probe, uid_for_task

MODES = [
    "watchdog",
    pytest.param(
        "cgroup", marks=pytest.mark.skipif(best_mode() != "cgroup", reason="needs root and writable cgroup v1")
    ),
]
SMALL = Limits(memory=256 << 20, cpu=20, procs=64, file_size=16 << 20, wall=60)

pytestmark = pytest.mark.skipif(probe(default_bwrap()) is not None, reason="no sandbox on this machine")


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


def _leftovers(room: Room, root: Path, pids: list[int]) -> list[str]:
    found = [str(c) for c in room._cgroups.values() if c.exists()]
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
    return Run(reason, process.returncode, seconds, out, written, in_ipc, _leftovers(room, root, seen))


def test_docstring_examples() -> None:
    result = doctest.testmod(grading.room, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


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
    # all a tmpfs of 16M can hold; the watchdog may let through what is written in one poll
    assert run.written <= (16 << 20 if mode == "cgroup" else 24 << 20), run
    assert run.in_ipc < 12 << 20, run  # half of each round went to /tmp, and counted


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
