"""Turn XLA's published GPU matmul timing table into ``rooflinelib/data/published/<name>.json``.

The XLA compiler ships, in ``xla/service/gpu/model/matmul_interpolator_data.h``,
the measured speed of batched matmuls ``[b, m, k] @ [b, k, n]`` on each GPU
generation it models. TensorFlow's wheel on PyPI carries that header, so the
table can be re-imported without reaching GitHub:

    pip download --no-deps tensorflow==2.21.0 -d /tmp/tf
    python tools/import_xla_matmul_table.py --wheel /tmp/tf/tensorflow-2.21.0-*.whl

Only the chip key and dtype asked for are kept (default: ``sm_90``, bf16); the
table must be a complete grid, or nothing is written.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER_IN_WHEEL = "tensorflow/include/xla/service/gpu/model/matmul_interpolator_data.h"
UPSTREAM = "https://github.com/openxla/xla/blob/main/xla/service/gpu/model/matmul_interpolator_data.h"

_CHIP = re.compile(r'key:\s*"(sm_\d+)"')
_ENTRY = re.compile(r"entries\s*\{\s*b:\s*(\d+)\s*m:\s*(\d+)\s*n:\s*(\d+)\s*k:\s*(\d+)((?:\s*flops\s*\{[^}]*\})+)\s*\}")
_RATE = re.compile(r'flops\s*\{\s*key:\s*"([^"]+)"\s*value:\s*(\d+)\s*\}')


def parse_table(text: str, chip_key: str, dtype_key: str) -> list[list[int]]:
    """Rows ``[b, m, n, k, flops_per_s]`` for one chip key and dtype key of the header's text.

    Examples
    --------
    >>> text = '''entries { key: "sm_90" value {
    ...   entries { b: 1 m: 2 n: 2 k: 2 flops { key: "bf16xbf16->bf16" value: 16 } }
    ... } }'''
    >>> parse_table(text, "sm_90", "bf16xbf16->bf16")
    [[1, 2, 2, 2, 16]]
    """
    starts = [(m.group(1), m.start()) for m in _CHIP.finditer(text)]
    keys = [k for k, _ in starts]
    if chip_key not in keys:
        raise ValueError(f"no table for {chip_key!r} in the header; it has {', '.join(map(repr, keys)) or 'none'}")
    i = keys.index(chip_key)
    section = text[starts[i][1] : starts[i + 1][1] if i + 1 < len(starts) else len(text)]
    rows = []
    for e in _ENTRY.finditer(section):
        rates = dict(_RATE.findall(e.group(5)))
        if dtype_key not in rates:
            raise ValueError(
                f"entry b={e.group(1)} m={e.group(2)} n={e.group(3)} k={e.group(4)} "
                f"has no {dtype_key!r} rate; it has {', '.join(map(repr, rates))}"
            )
        rows.append([*(int(g) for g in e.groups()[:4]), int(rates[dtype_key])])
    blocks = len(re.findall(r"entries\s*\{\s*b:", section))
    if not rows or len(rows) != blocks:
        raise ValueError(f"the {chip_key!r} table has {blocks} entries but the importer could read {len(rows)}")
    return rows


def check_grid(rows: list[list[int]]) -> None:
    """Raise unless the rows are every (b, m, n, k) combination of their sizes exactly once."""
    axes = [sorted({r[i] for r in rows}) for i in range(4)]
    expected = len(axes[0]) * len(axes[1]) * len(axes[2]) * len(axes[3])
    seen = {tuple(r[:4]) for r in rows}
    if len(seen) != len(rows):
        raise ValueError("the table repeats a (b, m, n, k) shape")
    if len(rows) != expected:
        raise ValueError(f"the table has {len(rows)} shapes, but its sizes span a grid of {expected}")


def read_header(header: Path | None, wheel: Path | None) -> tuple[str, str]:
    """The header's text and a description of where it came from."""
    if wheel is not None:
        with zipfile.ZipFile(wheel) as zf:
            return zf.read(HEADER_IN_WHEEL).decode("utf-8"), f"{wheel.name}: {HEADER_IN_WHEEL}"
    assert header is not None
    return header.read_text(encoding="utf-8"), str(header.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--wheel", type=Path, help="a TensorFlow wheel that carries the header")
    src.add_argument("--header", type=Path, help="matmul_interpolator_data.h itself")
    parser.add_argument("--chip-key", default="sm_90", help="XLA's GPU key (default sm_90, Hopper)")
    parser.add_argument("--dtype-key", default="bf16xbf16->bf16")
    parser.add_argument("--dtype", default="bf16", help="rooflinelib's name for that dtype")
    parser.add_argument("--chip", default="h100-sxm", help="the rooflinelib chip to draw it against")
    parser.add_argument("--name", default="xla-sm90-bf16-matmul")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "rooflinelib" / "data" / "published")
    args = parser.parse_args(argv)

    try:
        text, taken_from = read_header(args.header, args.wheel)
        rows = parse_table(text, args.chip_key, args.dtype_key)
        check_grid(rows)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as err:
        print(f"import_xla_matmul_table: {err}", file=sys.stderr)
        return 1
    rows.sort()
    data = {
        "name": args.name,
        "chip": args.chip,
        "dtype": args.dtype,
        "provenance": {
            "what": (
                f"Measured speed of batched matmuls [b, m, k] @ [b, k, n] "
                f"({args.dtype_key}) from the XLA GPU compiler's default matmul performance "
                f"table, key {args.chip_key!r}"
            ),
            "method": (
                "As the source of XLA's table generator (xla/tools/matmul_perf_table_gen.cc) "
                "describes it: each dot is compiled with XLA and run once to warm up, then the "
                "GPU kernels of 5 runs, each on two sets of random inputs, are traced; the rate "
                "is 2·b·m·n·k FLOPs over the median kernel time"
            ),
            "device": (
                "The table names only the compute capability (sm_90, Hopper). XLA's "
                "hlo_op_profiles_data.h, made by another tool, labels its sm_90 profiles "
                "'NVIDIA H100 80GB HBM3', the device name of the H100 SXM"
            ),
            "not_recorded": (
                "the exact GPU, its clocks and power limit, the driver, CUDA and library "
                "versions, which kernels XLA chose, and the date"
            ),
            "source": UPSTREAM,
            "source_note": "main may have been regenerated since this copy was taken",
            "taken_from": taken_from,
            "license": "Apache-2.0; Copyright 2025 The OpenXLA Authors",
            "imported_with": "tools/import_xla_matmul_table.py",
        },
        "columns": ["b", "m", "n", "k", "flops_per_s"],
        "rows": rows,
    }
    out = args.out_dir / f"{args.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    body = ",\n".join("  " + json.dumps(r) for r in rows)
    head = json.dumps({k: v for k, v in data.items() if k != "rows"}, indent=1, ensure_ascii=False)[:-2]
    out.write_text(f'{head},\n "rows": [\n{body}\n ]\n}}\n', encoding="utf-8")
    print(f"wrote {len(rows)} shapes to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
