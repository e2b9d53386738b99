"""Measure this CPU for the book's frozen reference roofline (the numpy backend).

Runs the measurement that the chapter "Measure your machine" runs live, with
the same sizes but more timed runs, then writes
``rooflinelib/data/measurements/<name>.json`` with its provenance. Run it on an
idle machine (nothing else busy, the laptop on mains power), commit the file,
and the chapter draws its main figures from it; the reader's own live run is a
second plot beside them.

    python benchmarks/reference_cpu.py                    # writes cpu-reference.json
    python benchmarks/reference_cpu.py --name my-laptop --repeats 21
    python benchmarks/reference_cpu.py --name cpu-contended --load-processes 2 --force

A run that :func:`rooflinelib.measurement_health` finds noisy (a roof whose
timed runs spread, a sweep the roofline does not explain) is not written: the
script says what it found and exits with status 1. ``--force`` writes it anyway,
for a run meant to be noisy: ``--load-processes N`` starts N busy loops in other
processes for the length of the measurement, the way the book's example of a
contended run (``cpu-contended.json``) was made, and records them in the file.

The file is :meth:`rooflinelib.measure.MachineMeasurement.save`'s JSON (with
its ``format`` number); :func:`rooflinelib.load_measurement` reads it back.
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: The live page's sizes (book/measure-your-machine.md), so the two runs are comparable.
CPU_SIZES: dict[str, Any] = {
    "D": 2048,
    "batch_sizes": [1, 2, 4, 8, 16, 32, 64, 128],
    "peak_n": 1024,
    "stream_mib": 128,
    "dot_lengths": [2**12, 2**16, 2**20, 2**24],
}


def commit() -> str:
    """The checkout's commit, or ``"unknown"``."""
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def busy_loop() -> None:  # pragma: no cover - runs in a child process, until terminated
    """Keep one core busy: the load of ``--load-processes``."""
    x = 0
    while True:
        x = (x + 1) % 1_000_003


def start_load(n: int) -> list[multiprocessing.Process]:
    """``n`` busy-loop processes, started and given a moment to reach full speed."""
    procs = [multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(n)]
    for proc in procs:
        proc.start()
    if procs:
        time.sleep(1.0)
    return procs


def main(argv: list[str] | None = None) -> int:
    """Measure, write the JSON, print a one-line summary; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="cpu-reference", help="file stem for the JSON (cpu-reference)")
    parser.add_argument("--repeats", type=int, default=15, help="timed runs of each operation (15)")
    parser.add_argument("--out-dir", default=str(ROOT / "rooflinelib" / "data" / "measurements"))
    parser.add_argument(
        "--load-processes",
        type=int,
        default=0,
        metavar="N",
        help="busy loops run in N other processes while measuring, for a contended example (0)",
    )
    parser.add_argument("--force", action="store_true", help="write the file even if the run looks noisy")
    args = parser.parse_args(argv)
    if args.repeats < 3:
        parser.error(f"--repeats must be at least 3 for the noise check to mean anything, got {args.repeats}")
    if args.load_processes < 0:
        parser.error(f"--load-processes must be 0 or more, got {args.load_processes}")

    if str(ROOT) not in sys.path:  # run from a checkout without installing rooflinelib
        sys.path.insert(0, str(ROOT))
    from rooflinelib.measure import measure_machine, measurement_health

    load = os.getloadavg()[0]
    procs = start_load(args.load_processes)
    try:
        m = measure_machine("numpy", budget_s=None, progress=True, repeats=args.repeats, **CPU_SIZES)
    finally:
        for proc in procs:
            proc.terminate()
            proc.join()
    health = measurement_health(m)
    if not health.ok and not args.force:
        print(
            f"not written: this run looks noisy ({health}). Measure again on an idle machine, or pass --force "
            "to write it anyway.",
            file=sys.stderr,
        )
        return 1
    m.provenance.update(
        {
            "script": "benchmarks/reference_cpu.py",
            "commit": commit(),
            "date": dt.date.today().isoformat(),
            "load_average_before": round(load, 2),
            "load_processes": args.load_processes,
            "health": str(health),
            "label": f"{m.machine.get('cpu', {}).get('model', 'CPU')}, {m.machine.get('cpu_count')} threads"
            + (f", {args.load_processes} busy loops beside it" if args.load_processes else ""),
            "command": " ".join(["python benchmarks/reference_cpu.py", *(argv if argv is not None else sys.argv[1:])]),
        }
    )
    out = Path(args.out_dir) / f"{args.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    m.save(out)
    print(
        f"{m.machine.get('cpu', {}).get('model', 'CPU')}: peak fp32 {m.peak_flops('fp32') / 1e9:.1f} GFLOP/s, "
        f"copy {m.bandwidth('copy') / 1e9:.1f} GB/s; wrote {out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
