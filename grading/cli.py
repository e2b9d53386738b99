"""Command line: ``python -m grading autograde ASSIGNMENT``, ``python -m grading check ASSIGNMENT`` (the preflight:
:mod:`grading.preflight`) and ``python -m grading report ASSIGNMENT``.

Options the grading command does not know (``--Execute.timeout=20``, ``--student=ada``...)
go to nbgrader, as they would on ``nbgrader autograde``.

Each notebook's kernel runs alone in a sandbox (bubblewrap: no network, no privileges, no
course files) within the limits of ``--memory``, ``--cpu``, ``--procs``, ``--file-size``,
``--output``, ``--data`` and ``--wall``; see :mod:`grading.sandbox`. Where no sandbox can be set up the
command refuses to grade, unless ``--unsafe`` is given.

Exit status of ``autograde``: 0 when every notebook was graded without incident, 1 when
some notebooks are listed as problems (not graded, or graded after a time-out or a
kernel death), 2 when nothing could be graded (a usage error, no such assignment, no
submissions, no scheduler at that address, no sandbox, an assignment that fails its check).
Of ``check``: 0 when the assignment passes, 1 when it does not (each failing check is listed
by notebook and grade id), 2 when it could not be checked.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grading.cluster import default_workers
from grading.sandbox import Limits, default_bwrap, probe


def _grading_options(parser: argparse.ArgumentParser) -> None:
    """The options of the commands that run notebooks: where, how long, within what, in which sandbox."""
    parser.add_argument("assignment")
    parser.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="notebooks run at once on this machine (default: its cores, %(default)s here)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the Dask cluster of this scheduler (tcp://host:8786) instead of this machine",
    )
    parser.add_argument("--timeout", type=int, metavar="S", help="seconds per cell (overrides Execute.timeout)")
    limits = parser.add_argument_group(
        "limits per notebook", "a notebook that goes over one is not graded (it scores 0) and is listed with the reason"
    )
    d = Limits()
    limits.add_argument("--memory", metavar="SIZE", help="address space of the kernel (default: 2G)")
    limits.add_argument("--cpu", metavar="S", help=f"CPU seconds of the kernel (default: {d.cpu})")
    limits.add_argument("--procs", metavar="N", help=f"processes and threads of the kernel (default: {d.procs})")
    limits.add_argument(
        "--file-size", metavar="SIZE", help="size of any file written, and of all files in /tmp together (default: 64M)"
    )
    limits.add_argument(
        "--output",
        metavar="SIZE",
        help="what the kernel sends the grader as it runs (every message: output, display, status) (default: 16M)",
    )
    limits.add_argument(
        "--data",
        metavar="SIZE",
        help="what the kernel sends the grader for the checks (values, plots' data), all checks together "
        "(default: 64M)",
    )
    limits.add_argument("--wall", metavar="S", help=f"seconds for the whole notebook (default: {d.wall})")
    sandbox = parser.add_argument_group("sandbox")
    sandbox.add_argument(
        "--bwrap",
        metavar="PATH",
        default=default_bwrap(),
        help="the bubblewrap program (default: %(default)s)",
    )
    sandbox.add_argument(
        "--cold-kernels",
        action="store_true",
        help="start every kernel from scratch in its sandbox instead of forking it there from a warm parent "
        "(slower; the same sandbox and limits)",
    )
    sandbox.add_argument(
        "--unsafe",
        action="store_true",
        help="run kernels without the sandbox, with the grader's own rights, files and network "
        "(only for code you trust; --output, --data and --wall still apply)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m grading", description="Grade a whole class with nbgrader, in parallel, and report on it."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    auto = commands.add_parser("autograde", help="grade every submission of an assignment (like nbgrader autograde)")
    _grading_options(auto)
    auto.add_argument("--force", action="store_true", help="grade again notebooks that already have a grade")
    auto.add_argument(
        "--no-check",
        action="store_true",
        help="grade without first checking that the assignment's own answers get full marks (python -m grading check)",
    )
    check = commands.add_parser(
        "check",
        help="grade the source notebooks' own answers (every check must give full marks) and lint every check",
    )
    _grading_options(check)
    report = commands.add_parser("report", help="score distribution and misconceptions of a graded assignment")
    report.add_argument("assignment")
    report.add_argument("--out", type=Path, help="folder for the table and figure (default: reports/ASSIGNMENT)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; return the exit status."""
    args, extra = _parser().parse_known_args(argv)
    if args.command in ("autograde", "check"):
        return _grade(args, extra)
    if extra:
        print(f"unknown options: {' '.join(extra)}", file=sys.stderr)
        return 2
    from grading.report import report

    return report(args.assignment, args.out)


def _grade(args: argparse.Namespace, extra: list[str]) -> int:
    """``autograde`` and ``check``: the options checked, the sandbox probed, then the run."""
    verb = "grade" if args.command == "autograde" else "check"
    if args.workers < 1 or (args.timeout is not None and args.timeout < 1):
        print("--workers and --timeout must be at least 1", file=sys.stderr)
        return 2
    if not args.unsafe:  # before the slow imports: a machine without a sandbox is told at once
        reason = probe(args.bwrap)
        if reason is not None:
            print(f"Cannot {verb}: no sandbox for student code: {reason}; or pass --unsafe", file=sys.stderr)
            return 2
    from grading.autograde import AssignmentFails, GradingError, autograde, check
    from grading.private_api import UncheckedVersion, check_versions

    try:
        check_versions()
        limits = Limits.parse(
            memory=args.memory,
            cpu=args.cpu,
            procs=args.procs,
            file_size=args.file_size,
            output=args.output,
            data=args.data,
            wall=args.wall,
        )
    except (UncheckedVersion, ValueError) as err:
        print(f"Cannot {verb}: {err}" if isinstance(err, UncheckedVersion) else err, file=sys.stderr)
        return 2
    common = {
        "workers": args.workers,
        "scheduler": args.scheduler,
        "timeout": args.timeout,
        "nbgrader_args": extra,
        "limits": limits,
        "bwrap": args.bwrap,
        "unsafe": args.unsafe,
        "warm": not args.cold_kernels,
    }
    if args.command == "check":
        try:
            findings = check(args.assignment, **common)
        except GradingError as err:
            print(f"Cannot check: {err}", file=sys.stderr)
            return 2
        if findings:
            print(f"{args.assignment} fails its check: {len(findings)} problems")
            for finding in findings:
                print(f"  {finding.line()}")
            return 1
        print(f"{args.assignment}: every check gives the source answers full marks, and every check can be judged.")
        return 0
    try:
        summary = autograde(args.assignment, force=args.force, preflight_first=not args.no_check, **common)
    except AssignmentFails as err:
        print(f"Cannot grade: {err}", file=sys.stderr)
        return 2
    except GradingError as err:
        print(f"Cannot grade: {err}", file=sys.stderr)
        return 2
    print(f"Graded {summary.graded} notebooks; {summary.skipped} already graded were kept.")
    if summary.all_problems:
        print(f"{len(summary.all_problems)} notebooks need a look:")
        for problem in summary.all_problems:
            print(f"  {problem.line()}")
        return 1
    return 0
