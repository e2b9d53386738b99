"""Measure a datacenter GPU for the book's reference roofline (needs PyTorch and a CUDA device).

Runs a bf16 matmul sweep over B at D = F = 8192, the bf16 peak at 8192^3, an
HBM copy and triad over 2 GiB arrays and bf16 dot products, then writes
``rooflinelib/data/measurements/<name>.json`` with its provenance. Commit that
file and the chapter "Measure your machine" draws it.

    python benchmarks/reference_gpu.py                  # name from the GPU, e.g. nvidia-h100-80gb-hbm3
    python benchmarks/reference_gpu.py --name h100-sxm --budget 300 --device cuda:1

The file is :meth:`rooflinelib.measure.MachineMeasurement.save`'s JSON (with
its ``format`` number); :func:`rooflinelib.load_measurement` reads it back.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

GPU_SIZES: dict[str, Any] = {
    "peak_n": 8192,
    "stream_mib": 2048,
    "D": 8192,
    "batch_sizes": [1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 320, 384, 512, 768, 1024, 2048, 4096],
    "dot_lengths": [2**16, 2**20, 2**24, 2**28],
    "repeats": 20,
}


def driver_version() -> str:
    """The NVIDIA driver's version from ``nvidia-smi``, or ``"unknown"``."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    """Measure, write the JSON, print a one-line summary; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", help="file stem for the JSON (default: from the device name)")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds the run may take (300)")
    parser.add_argument("--device", default="cuda", help="torch device to measure (cuda)")
    parser.add_argument("--out-dir", default=str(ROOT / "rooflinelib" / "data" / "measurements"))
    args = parser.parse_args(argv)

    if str(ROOT) not in sys.path:  # run from a checkout without installing rooflinelib
        sys.path.insert(0, str(ROOT))
    from rooflinelib.measure import TorchBackend, measure_machine

    backend = TorchBackend("bf16", device=args.device)
    m = measure_machine(backend, preset="full", budget_s=args.budget, **GPU_SIZES)
    m.provenance.update(
        {"driver": driver_version(), "script": "benchmarks/reference_gpu.py", "label": m.machine.get("device", "GPU")}
    )
    name = args.name or re.sub(r"[^a-z0-9]+", "-", str(m.machine.get("device", "gpu")).lower()).strip("-")
    out = Path(args.out_dir) / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    m.save(out)
    print(
        f"{m.machine.get('device')}: peak bf16 {m.peak_flops('bf16') / 1e12:.1f} TFLOP/s, "
        f"copy {m.bandwidth('copy') / 1e12:.2f} TB/s, truncated={m.truncated}; wrote {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
