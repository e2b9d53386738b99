"""The grading command on a real Dask cluster on localhost: a scheduler and two workers, one killed mid-task.

The workers run in an empty folder, outside the checkout: the tasks bring what they need.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from distributed import Client
from grading_support import ASSIGNMENT, NOTEBOOKS, course_env, full_marks, generated_course
from grading_support import gradebook_scores as scores
from grading_support import grading_command as grading

Q2 = NOTEBOOKS[1]
DASK = str(Path(sys.executable).parent / "dask")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[dict]:
    address = f"tcp://127.0.0.1:{free_port()}"
    env = {k: v for k, v in course_env().items() if k != "PYTHONPATH"}
    common = {"cwd": tmp_path, "env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [
        subprocess.Popen(
            [DASK, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1], "--no-dashboard"], **common
        )
    ]
    procs += [
        subprocess.Popen(
            [
                DASK,
                "worker",
                address,
                "--host",
                "127.0.0.1",
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--name",
                name,
            ],
            **common,
        )
        for name in ("w1", "w2")
    ]
    try:
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
            yield {"address": address, "client": client, "workers": procs[1:]}
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)  # reap it, so no process outlives the test


def test_a_killed_worker_costs_nothing(cluster: dict, course_template: Path, tmp_path: Path) -> None:
    from grading.sample import answer_cells, write_student

    def slow(nb):  # the reference answer, after a pause long enough to be killed in
        answer_cells(nb)[-1].source += "\nimport time\ntime.sleep(3)"

    course = generated_course(course_template, tmp_path / "course")
    write_student(course, ASSIGNMENT, "ref", alter={Q2: slow})
    env = course_env()
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    only = "--notebook=q[12]_*"  # two notebooks are enough; nbgrader's own option passes through
    with subprocess.Popen(
        [sys.executable, "-m", "grading", "autograde", ASSIGNMENT, only, "--scheduler", cluster["address"]],
        cwd=course,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as run:
        client: Client = cluster["client"]
        deadline = time.monotonic() + 60
        victim = None
        while victim is None and time.monotonic() < deadline:
            for worker, keys in client.processing().items():
                if any(f"-{Q2}-" in str(key) for key in keys):
                    victim = worker
            time.sleep(0.2)
        assert victim is not None, "the slow notebook never started"
        time.sleep(1.0)  # into the notebook's pause
        pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        log, _ = run.communicate(timeout=120)
    assert sorted(proc.poll() or 0 for proc in cluster["workers"]) == [-signal.SIGKILL, 0]  # one killed, one alive
    assert run.returncode == 0, log[-3000:]
    got = scores(course)["ref"]
    assert full_marks(got[NOTEBOOKS[0]]) and full_marks(got[Q2]), got
    assert sorted(p.stem for p in (course / "autograded" / "ref" / ASSIGNMENT).glob("*.ipynb")) == NOTEBOOKS[:2]
    # a second run, without --force, finds everything graded
    again = grading(course, "autograde", ASSIGNMENT, only, "--scheduler", cluster["address"])
    assert again.returncode == 0 and "Graded 0 notebooks; 2 already graded were kept." in again.stdout, again.stdout
