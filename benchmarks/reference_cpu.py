"""Measure this CPU for the book's frozen reference roofline (the numpy backend).

Runs the measurement that the chapter "Measure your machine" runs live, with
the same sizes but more timed runs, then writes
``rooflinelib/data/measurements/<name>.json`` with its provenance. Run it on an
idle machine (nothing else busy, the laptop on mains power), commit the file,
and the chapter draws its main figures from it; the reader's own live run is a
second plot beside them.

    python benchmarks/reference_cpu.py                    # writes cpu-reference.json
    python benchmarks/reference_cpu.py --name my-laptop --repeats 21

The file is :meth:`rooflinelib.measure.MachineMeasurement.save`'s JSON (with
its ``format`` number); :func:`rooflinelib.load_measurement` reads it back.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
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


def main(argv: list[str] | None = None) -> int:
    """Measure, write the JSON, print a one-line summary; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="cpu-reference", help="file stem for the JSON (cpu-reference)")
    parser.add_argument("--repeats", type=int, default=15, help="timed runs of each operation (15)")
    parser.add_argument("--out-dir", default=str(ROOT / "rooflinelib" / "data" / "measurements"))
    args = parser.parse_args(argv)

    if str(ROOT) not in sys.path:  # run from a checkout without installing rooflinelib
        sys.path.insert(0, str(ROOT))
    from rooflinelib.measure import measure_machine

    load = os.getloadavg()[0]
    m = measure_machine("numpy", budget_s=None, progress=True, repeats=args.repeats, **CPU_SIZES)
    m.provenance.update(
        {
            "script": "benchmarks/reference_cpu.py",
            "commit": commit(),
            "date": dt.date.today().isoformat(),
            "load_average_before": round(load, 2),
            "label": f"{m.machine.get('cpu', {}).get('model', 'CPU')}, {m.machine.get('cpu_count')} threads",
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
