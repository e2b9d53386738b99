"""Grade the same sample class with serial ``nbgrader autograde`` and with ``python -m grading autograde``.

Builds a class of N students from the ``rooflines`` notebooks (see :func:`grading.sample.write_course`:
reference answers, blank notebooks and notebooks ending in a failing check), grades one copy
with nbgrader and another with the grading command, one after the other, then prints
notebooks per second for both, their ratio, and checks that every cell has the same score.

    python benchmarks/grading.py                       # 40 students, workers = cores
    python benchmarks/grading.py --students 18 --workers 2
    python benchmarks/grading.py --students 400 --only-grading   # a large class: the grading command alone
    python benchmarks/grading.py --students 10 --only-grading --cold-kernels   # kernels started from scratch
    python benchmarks/grading.py --students 10 --notebooks q1,q2,q3,q4,q5,q6   # an earlier release's six notebooks
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grading.cluster import default_workers
from grading.sample import write_course

ASSIGNMENT = "rooflines"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT)
    env.setdefault("MPLBACKEND", "Agg")
    return env


def _run(course: Path, *args: str) -> float:
    """Run a command in the course root; return its wall time in seconds."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=course, env=_env(), capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds


def scores(course: Path) -> dict[tuple[str, str, str], float | None]:
    """(student, notebook, grade cell) -> score, from the course's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {
            (sub.student_id, nb.name, grade.name): grade.score
            for sub in gb.assignment_submissions(ASSIGNMENT)
            for nb in sub.notebooks
            for grade in nb.grades
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument(
        "--only-grading", action="store_true", help="time the grading command alone (no serial nbgrader, no comparison)"
    )
    parser.add_argument(
        "--cold-kernels",
        action="store_true",
        help="the grading command starts every kernel from scratch (for comparison)",
    )
    parser.add_argument(
        "--notebooks",
        help="grade only the notebooks whose names start with these comma-separated prefixes (e.g. q1,q2): the "
        "others are left out of every submission, to compare with a release that had fewer",
    )
    args = parser.parse_args(argv)
    cold = ["--cold-kernels"] if args.cold_kernels else []
    if args.students < 1 or args.workers < 1:
        parser.error("--students and --workers must be 1 or more")
    with tempfile.TemporaryDirectory(prefix="grading-bench-") as tmp:
        base = Path(tmp) / "base"
        write_course(ROOT, base, ASSIGNMENT, args.students, _env())
        if args.notebooks:
            keep = tuple(args.notebooks.split(","))
            for path in (base / "submitted").glob(f"*/{ASSIGNMENT}/*.ipynb"):
                if not path.name.startswith(keep):
                    path.unlink()
        _run(base, "-c", "import matplotlib.pyplot")  # build the font cache once, outside the timings
        serial, parallel = Path(tmp) / "serial", Path(tmp) / "parallel"
        shutil.copytree(base, serial)
        shutil.copytree(base, parallel)
        notebooks = len(list((base / "submitted").glob(f"*/{ASSIGNMENT}/*.ipynb")))
        if args.only_grading:
            t_parallel = _run(parallel, "-m", "grading", "autograde", ASSIGNMENT, "--workers", str(args.workers), *cold)
            print(
                f"class: {args.students} students, {notebooks} notebooks; {os.cpu_count()} cores; --workers {args.workers}"
            )
            print(f"python -m grading autograde:    {t_parallel:7.1f} s  {notebooks / t_parallel:5.2f} notebooks/s")
            return 0
        # nbgrader's own execution (the course's configuration runs the grader's sandbox and judge by default)
        t_serial = _run(serial, "-m", "nbgrader", "autograde", ASSIGNMENT, "--create", "--JudgedExecute.stock=True")
        t_parallel = _run(parallel, "-m", "grading", "autograde", ASSIGNMENT, "--workers", str(args.workers), *cold)
        a, b = scores(serial), scores(parallel)
    same = a == b and len(a) > 0
    print(
        f"class: {args.students} students x {notebooks // args.students} notebooks = {notebooks} notebooks; "
        f"{os.cpu_count()} cores; --workers {args.workers}"
    )
    print(f"nbgrader autograde (serial):    {t_serial:7.1f} s  {notebooks / t_serial:5.2f} notebooks/s")
    print(f"python -m grading autograde:    {t_parallel:7.1f} s  {notebooks / t_parallel:5.2f} notebooks/s")
    print(f"speed-up: {t_serial / t_parallel:.2f}x; scores identical for all {len(a)} graded cells: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
