"""Command line: ``python -m grading autograde ASSIGNMENT`` and ``python -m grading report ASSIGNMENT``.

Options the grading command does not know (``--Execute.timeout=20``, ``--student=ada``...)
go to nbgrader, as they would on ``nbgrader autograde``.

Exit status of ``autograde``: 0 when every notebook was graded without incident, 1 when
some notebooks are listed as problems (not graded, or graded after a time-out or a
kernel death), 2 when nothing could be graded (a usage error, no such assignment, no
submissions, no scheduler at that address).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grading.cluster import default_workers


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m grading", description="Grade a whole class with nbgrader, in parallel, and report on it."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    auto = commands.add_parser("autograde", help="grade every submission of an assignment (like nbgrader autograde)")
    auto.add_argument("assignment")
    auto.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="notebooks run at once on this machine (default: its cores, %(default)s here)",
    )
    auto.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the Dask cluster of this scheduler (tcp://host:8786) instead of this machine",
    )
    auto.add_argument("--force", action="store_true", help="grade again notebooks that already have a grade")
    auto.add_argument("--timeout", type=int, metavar="S", help="seconds per cell (overrides Execute.timeout)")
    report = commands.add_parser("report", help="score distribution and misconceptions of a graded assignment")
    report.add_argument("assignment")
    report.add_argument("--out", type=Path, help="folder for the table and figure (default: reports/ASSIGNMENT)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; return the exit status."""
    args, extra = _parser().parse_known_args(argv)
    if args.command == "autograde":
        if args.workers < 1 or (args.timeout is not None and args.timeout < 1):
            print("--workers and --timeout must be at least 1", file=sys.stderr)
            return 2
        from grading.autograde import GradingError, autograde

        try:
            summary = autograde(
                args.assignment,
                workers=args.workers,
                scheduler=args.scheduler,
                force=args.force,
                timeout=args.timeout,
                nbgrader_args=extra,
            )
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
    if extra:
        print(f"unknown options: {' '.join(extra)}", file=sys.stderr)
        return 2
    from grading.report import report

    return report(args.assignment, args.out)
