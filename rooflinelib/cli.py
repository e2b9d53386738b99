"""Command line: ``python -m rooflinelib`` or ``rooflinelib``.

Subcommands: ``specs`` (the chips, or one chip's table), ``matmul`` (a roofline
estimate for one matmul) and ``measure`` (measure this machine, save JSON and
a PNG roofline). Errors print one line, ``rooflinelib: error: ...``, to stderr
and exit with status 1 (2 for a malformed command line, as argparse does).

Examples
--------
>>> main(["matmul", "--chip", "tpu-v5e", "-B", "128", "-D", "8192", "-F", "8192"])  # doctest: +ELLIPSIS
matmul [128, 8192] @ [8192, 8192] on TPU v5e (bf16)
...
verdict     communication-bound
0
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rooflinelib._checks import as_size
from rooflinelib.estimate import estimate_matmul
from rooflinelib.precision import DTYPE_BYTES
from rooflinelib.specs import ACCELERATORS, Accelerator, get_accelerator

__all__ = ["build_parser", "main"]

PROG = "rooflinelib"


class _Error(Exception):
    """A user error: printed as one line, exit status 1."""


def _size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number (>= 1), got {value}")
    try:
        as_size("size", value)
    except ValueError as err:  # e.g. 401 digits: more than a float holds
        raise argparse.ArgumentTypeError(str(err).removeprefix("size ")) from None
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _ops_unit(dtype: str) -> str:
    """Integer peaks are operations, not floating-point operations."""
    return "OP/s" if dtype.startswith("int") else "FLOP/s"


def _si(x: float, unit: str, places: int | None = None) -> str:
    """``x`` with an SI prefix, e.g. ``819 GB/s`` (matplotlib's engineering formatter, loaded when needed)."""
    from matplotlib.ticker import EngFormatter

    return str(EngFormatter(unit=unit, places=places, sep=" ").format_data(x))


def _chip(name: str) -> Accelerator:
    try:
        return get_accelerator(name)
    except KeyError as err:
        raise _Error(err.args[0]) from None


def cmd_specs(args: argparse.Namespace) -> int:
    if args.chip is None:
        width = max(map(len, ACCELERATORS))
        for key, acc in ACCELERATORS.items():
            peaks = ", ".join(f"{d} {_si(v, _ops_unit(d))}" for d, v in acc.peak_flops.items())
            print(f"{key:<{width}}  {acc.name}: {peaks}; HBM {_si(acc.hbm_bandwidth, 'B/s')}")
        return 0
    acc = _chip(args.chip)
    print(f"{acc.name} ({acc.key}, {acc.vendor})")
    for dtype, peak in acc.peak_flops.items():
        ridge = acc.critical_intensity(dtype)
        print(f"  peak {dtype:<5} {_si(peak, _ops_unit(dtype)):>14}   ridge {ridge:7.1f} FLOPs/byte (HBM)")
    print(
        f"  HBM bandwidth {_si(acc.hbm_bandwidth, 'B/s')}, capacity "
        f"{_si(acc.hbm_capacity, 'B', 1) if acc.hbm_capacity else 'n/a'}"
    )
    for link in acc.links.values():
        print(f"  {link.name:<5} {_si(link.bandwidth, 'B/s')} one-way ({link.scope})")
    print(f"  conventions: {acc.conventions}")
    print(f"  source: {acc.source}")
    for figure, source in acc.sources.items():
        print(f"  {figure} source: {source}")
    return 0


def cmd_matmul(args: argparse.Namespace) -> int:
    acc = _chip(args.chip)
    est = estimate_matmul(acc, args.B, args.D, args.F, precision=args.dtype)
    rows = [
        ("FLOPs", f"{est.flops:.4g}"),
        ("bytes", f"{est.bytes:.4g}"),
        ("intensity", f"{est.intensity:.1f} FLOPs/byte (chip's ridge {est.critical_intensity:.1f})"),
        ("T_math", _si(est.t_math, "s", 1)),
        ("T_comms", _si(est.t_comms, "s", 1)),
        ("bounds", f"{_si(est.t_lower, 's', 1)} (overlapped) .. {_si(est.t_upper, 's', 1)} (serial)"),
        ("verdict", est.bound),
    ]
    print(f"matmul [{args.B}, {args.D}] @ [{args.D}, {args.F}] on {acc.name} ({args.dtype})")
    for label, value in rows:
        print(f"{label:<11} {value}")
    return 0


def cmd_measure(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rooflinelib import matmul as mm
    from rooflinelib.measure import knee_sweep, measure_machine, measured_knee, memory_levels
    from rooflinelib.plotting import plot_measurement

    out = Path(args.out)
    try:  # before measuring, so a bad folder fails at once
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _Error(f"cannot create the --out folder {str(out)!r}: {err.strerror or err}") from None
    if not os.access(out, os.W_OK):
        raise _Error(f"cannot write to the --out folder {str(out)!r}: permission denied")
    try:
        m = measure_machine(args.backend, preset=args.preset, budget_s=args.budget, progress=not args.no_progress)
    except RuntimeError as err:  # an optional backend that is missing or has no device
        raise _Error(str(err)) from None
    json_path = m.save(out / "result.json")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    plot_measurement(m, ax=ax)
    fig.savefig(out / "roofline.png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    for dtype in m.peak:
        print(f"peak matmul {dtype:<5} {_si(m.peak_flops(dtype), 'FLOP/s')}")
    for kind in m.stream:
        print(f"{kind:<17} {_si(m.bandwidth(kind), 'B/s')}")
    levels = [f"{lv.name} {_si(lv.bandwidth, 'B/s')}" for lv in memory_levels(m) if lv.bandwidth is not None]
    if levels:
        print(f"one core, by level: {', '.join(levels)}")
    dtype = m.sweep[0].dtype if m.sweep else next(iter(m.peak))
    b_star = mm.critical_batch_size(m.peak_flops(dtype), m.bandwidth(), m.sweep_D, m.sweep_D, precision=dtype)
    kept = knee_sweep(m, dtype) if m.sweep else None
    shape = kept.shape if kept is not None else None
    if shape is not None and shape.problem in ("dip", "drop"):
        measured = (
            f"none: the sweep does not rise steadily to a plateau (at B = {shape.B:g} it runs at "
            f"{shape.share:.0%} of its rate at B = {shape.reference_B:g}); measure again to tell a cost at "
            "that size (it comes back) from other work on the machine (it does not)"
        )
    else:
        measured = f"{measured_knee(kept.points if kept else m.sweep):.1f}"
    if kept is not None and (kept.cache_fed or kept.matvec is not None):
        left = [p.sizes["B"] for p in kept.cache_fed] + ([1] if kept.matvec is not None else [])
        measured += f" (left out: B = {', '.join(map(str, sorted(left)))}, cache-fed or matrix-vector)"
    print(f"knee at D = F = {m.sweep_D}: predicted B = {b_star:.1f}, measured B = {measured}")
    cut = " (budget reached: some sizes skipped)" if m.truncated else ""
    print(f"took {m.elapsed_s:.1f} s{cut}; wrote {json_path} and {out / 'roofline.png'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with one sub-parser per subcommand."""
    parser = argparse.ArgumentParser(prog=PROG, description="Roofline analysis of ML accelerators.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{specs,matmul,measure}")

    p = sub.add_parser(
        "specs",
        help="list the chips, or show one chip's table",
        description="List every chip in the spec table, or show one chip's figures.",
    )
    p.add_argument("chip", nargs="?", help="a chip key such as h100-sxm (omit to list all)")
    p.set_defaults(func=cmd_specs)

    p = sub.add_parser(
        "matmul",
        help="roofline estimate of [B, D] @ [D, F] on a chip",
        description="FLOPs, bytes, intensity, T_math, T_comms, bounds and verdict of a matmul.",
    )
    p.add_argument("--chip", required=True, help="chip key, e.g. h100-sxm (see `rooflinelib specs`)")
    p.add_argument("-B", type=_size, required=True, help="batch size (tokens)")
    p.add_argument("-D", type=_size, required=True, help="input dimension")
    p.add_argument("-F", type=_size, required=True, help="output dimension")
    p.add_argument("--dtype", default="bf16", choices=list(DTYPE_BYTES), help="dtype of every operand (bf16)")
    p.set_defaults(func=cmd_matmul)

    p = sub.add_parser(
        "measure",
        help="measure this machine; save result.json and roofline.png",
        description="Measure peak matmul FLOPs/s, memory bandwidth, a matmul sweep over B and "
        "dot products, within a time budget.",
    )
    p.add_argument("--budget", type=_positive, default=30.0, help="seconds the run may take (30)")
    p.add_argument("--out", default="measurement", help="folder for result.json and roofline.png (./measurement)")
    p.add_argument("--preset", choices=["quick", "full"], default="quick", help="problem sizes (quick)")
    p.add_argument(
        "--backend",
        choices=["numpy", "torch", "jax"],
        default="numpy",
        help="numpy: the CPU; torch/jax: a GPU in bf16 (needs the package)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_measure)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (_Error, ValueError, KeyError) as err:
        msg = err.args[0] if err.args else str(err)
        print(f"{PROG}: error: {msg}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
