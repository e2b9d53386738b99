"""Time one worker's notebooks, kernels forked from a warm parent against kernels started from scratch.

Builds a sample class (:func:`grading.sample.write_course`), plans its notebooks as the grading
command does, then runs each notebook with :func:`grading.execute.execute` in this process, one at
a time: first every notebook with a forked kernel, then every one started from scratch (after one
warm-up each). Prints, per question and mode, the wall time, this process's CPU time (the worker's
part: nbclient, the judge) and the rest of the machine's CPU time while it ran (the kernel, its
sandbox and room, the warm parent, the system), all per notebook. Run it on an idle machine.

    python benchmarks/kernels.py                 # 3 students, 18 notebooks per mode
    python benchmarks/kernels.py --students 5
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grading.autograde import _cwd, _find_submissions, _grader
from grading.execute import Task, execute
from grading.plan import Planned, make_plan, tasks
from grading.sample import write_course
from grading.sandbox import Limits, default_bwrap, probe

MODES = {"forked": True, "from scratch": False}


def _busy() -> float:
    """CPU seconds the whole machine has spent busy (``/proc/stat``)."""
    with open("/proc/stat") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _own() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def planned(students: int, folder: Path) -> list[Task]:
    """The tasks the grading command would send for a sample class of ``students``."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    course = folder / "course"
    write_course(ROOT, course, "rooflines", students, env)
    with _cwd(str(course)):
        grader, app = _grader("rooflines", [], False)
        _find_submissions(grader, "rooflines")
        plan = make_plan(grader, app, "rooflines", None)
        return [item.task for item in tasks(grader, plan, default_bwrap(), Limits()) if isinstance(item, Planned)]


def _timed(task: Task) -> tuple[float, float, float]:
    """(wall, this process's CPU, the rest of the machine's CPU) of one notebook, in seconds."""
    wall, own, busy = time.perf_counter(), _own(), _busy()
    outcome = execute(task)
    if outcome.error is not None:
        raise SystemExit(f"{task.student} / {task.notebook}: {outcome.error}")
    own = _own() - own
    return time.perf_counter() - wall, own, max(0.0, _busy() - busy - own)


def measure(found: list[Task]) -> dict[str, dict[str, list[tuple[float, float, float]]]]:
    """Each notebook with a forked kernel then with one from scratch, in turn, so that both meet the same machine;
    after a warm-up of every notebook in both modes (the zygote started, the judge's imports made)."""
    first = {task.notebook: task for task in reversed(found)}
    for task in first.values():
        for warm in (True, False):
            execute(dataclasses.replace(task, warm=warm))
    rows: dict[str, dict[str, list[tuple[float, float, float]]]] = {
        mode: collections.defaultdict(list) for mode in MODES
    }
    for task in found:
        for mode, warm in MODES.items():
            rows[mode][task.notebook].append(_timed(dataclasses.replace(task, warm=warm)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=3)
    args = parser.parse_args(argv)
    if args.students < 1:
        parser.error("--students must be 1 or more")
    reason = probe(default_bwrap())
    if reason is not None:
        raise SystemExit(f"no sandbox here: {reason}")
    with tempfile.TemporaryDirectory(prefix="kernels-bench-") as tmp:
        found = planned(args.students, Path(tmp))
        results = measure(found)
    print(
        f"{len(found)} notebooks per mode, one at a time; seconds per notebook (wall / worker CPU / rest of machine CPU)"
    )
    print(f"{'notebook':26s} {'forked kernel':>22s} {'kernel from scratch':>24s}")
    totals = {mode: [0.0, 0.0, 0.0] for mode in results}
    for name in sorted(results["forked"]):
        cells = []
        for mode, rows in results.items():
            mean = [sum(row[i] for row in rows[name]) / len(rows[name]) for i in range(3)]
            totals[mode] = [t + sum(row[i] for row in rows[name]) for i, t in enumerate(totals[mode])]
            cells.append(" / ".join(f"{value:.2f}" for value in mean))
        print(f"{name:26s} {cells[0]:>22s} {cells[1]:>24s}")
    shown = [" / ".join(f"{value / len(found):.2f}" for value in totals[mode]) for mode in results]
    print(f"{'all':26s} {shown[0]:>22s} {shown[1]:>24s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
