"""The class report: score distribution per question and part, misconceptions, notebooks not graded.

Scores come from the gradebook; misconceptions from the autograded notebooks: the checks' own
failed assertions, in the instructor's locked test cells, whose message starts with ``[<id>]``
(the ids listed in the assignment's ``feedback.csv`` catalogue). Nothing a student's own cells
print or raise counts, nor an error the student's code raised inside a check
(:func:`grading.judge.own_message`). The problem list comes from the last
``python -m grading autograde``.

Example
-------
From the course root, after grading::

    python -m grading report rooflines --out reports/rooflines

>>> misconception_ids("[q1.int8-two-bytes] int8 values take 1 byte")
['q1.int8-two-bytes']
"""

from __future__ import annotations

import csv
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from nbgrader.api import Gradebook
from nbgrader.apps.baseapp import NbGrader
from tabulate import tabulate

from grading import problems as problem_list
from grading.judge import own_message
from grading.problems import Problem
from grading.roles import cell_role

ID = re.compile(r"^\[([A-Za-z0-9_.-]+)\]")
BANDS = ("full marks", "partial", "zero", "not graded")
COLOURS = {"full marks": "#2e7d32", "partial": "#f9a825", "zero": "#c62828", "not graded": "#9e9e9e"}


def misconception_ids(evalue: str) -> list[str]:
    """The misconception id an error message starts with, as a list of zero or one id."""
    match = ID.match(evalue.strip())
    return [match.group(1)] if match else []


def check_messages(nb: nbformat.NotebookNode) -> set[str]:
    """The misconception ids of an autograded notebook: of the checks' own messages only (see the module).

    >>> from nbformat.v4 import new_code_cell, new_notebook, new_output
    >>> failed = new_output("error", ename="AssertionError", evalue="[q1.x] no", traceback=["AssertionError: [q1.x] no"])
    >>> check = new_code_cell(outputs=[failed], metadata={"nbgrader": {"grade_id": "t", "grade": True, "locked": True}})
    >>> check_messages(new_notebook(cells=[check, new_code_cell(outputs=[failed])]))
    {'q1.x'}
    """
    found: set[str] = set()
    for cell in nb.cells:
        if cell_role(cell) != "check":
            continue
        for output in cell.get("outputs", []):
            message = own_message(output)
            if message is not None:
                found.update(misconception_ids(message))
    return found


@dataclass
class ClassResults:
    """Everything the report shows, gathered from the course."""

    students: list[str]
    # (notebook, part) -> max points, and -> score per student (None: notebook not graded)
    max_points: dict[tuple[str, str], float] = field(default_factory=dict)
    scores: dict[tuple[str, str], dict[str, float | None]] = field(default_factory=lambda: defaultdict(dict))
    # misconception id -> students whose autograded notebook shows it
    hits: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # notebook -> students with an autograded version of it
    graded: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    catalogue: dict[str, dict[str, str]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def read_catalogue(path: Path) -> dict[str, dict[str, str]]:
    """The misconception catalogue (CSV with at least ``id``, ``question``, ``part``, ``en``), keyed by id."""
    if not path.is_file():
        return {}
    with path.open(newline="", encoding="utf-8") as fh:
        return {row["id"]: row for row in csv.DictReader(fh) if row.get("id")}


def gather(root: Path, assignment: str, db_url: str, course_id: str, source: Path, autograded: Path) -> ClassResults:
    """Read scores, misconceptions and problems of one assignment."""
    lost = {
        (p.student, p.notebook)
        for p in problem_list.load(problem_list.problems_path(autograded, assignment))
        if not p.graded and not p.file
    }
    results = ClassResults(students=[])
    with Gradebook(db_url, course_id) as gb:
        for submission in sorted(gb.assignment_submissions(assignment), key=lambda s: s.student_id):
            student = submission.student_id
            results.students.append(student)
            for notebook in submission.notebooks:
                not_graded = (student, notebook.name) in lost
                for grade in notebook.grades:
                    key = (notebook.name, grade.name)
                    results.max_points[key] = grade.max_score
                    results.scores[key][student] = None if not_graded else grade.score
    for student in results.students:
        for path in sorted((autograded / student / assignment).glob("*.ipynb")):
            results.graded[path.stem].add(student)
            for mid in check_messages(nbformat.read(path, as_version=4)):
                results.hits[mid].add(student)
    results.catalogue = read_catalogue(source / "feedback.csv")
    results.problems = problem_list.load(problem_list.problems_path(autograded, assignment))
    return results


def _question_notebook(question: str, notebooks: list[str]) -> str | None:
    """The notebook of a catalogue question number ('1' -> 'q1_...'), if there is exactly one."""
    found = [nb for nb in notebooks if re.match(rf"q0*{re.escape(question)}(_|$)", nb)]
    return found[0] if len(found) == 1 else None


def misconception_rows(results: ClassResults) -> list[dict[str, object]]:
    """One row per misconception seen or catalogued: how many students hit it, out of how many."""
    rows = []
    notebooks = sorted(results.graded)
    for mid in sorted(set(results.catalogue) | set(results.hits)):
        entry = results.catalogue.get(mid, {})
        question = entry.get("question") or mid.split(".")[0].lstrip("q")
        notebook = _question_notebook(question, notebooks)
        of = len(results.graded[notebook]) if notebook else len(results.students)
        rows.append(
            {
                "id": mid,
                "question": question,
                "part": entry.get("part", ""),
                "students": len(results.hits.get(mid, ())),
                "of": of,
                "message": entry.get("en", "(not in the catalogue)"),
            }
        )
    return sorted(rows, key=lambda r: (-int(r["students"]), str(r["id"])))  # type: ignore[call-overload]


def score_rows(results: ClassResults) -> list[dict[str, object]]:
    """One row per question, part and score reached, with the number of students; 'not graded' last."""
    rows = []
    for (notebook, part), per_student in sorted(results.scores.items()):
        counts = Counter("not graded" if s is None else f"{s:g}" for s in per_student.values())
        order = sorted((k for k in counts if k != "not graded"), key=float, reverse=True)
        order += ["not graded"] if "not graded" in counts else []
        for score in order:
            rows.append(
                {
                    "question": notebook,
                    "part": part,
                    "max_points": f"{results.max_points[(notebook, part)]:g}",
                    "score": score,
                    "students": counts[score],
                }
            )
    return rows


def _band(score: float | None, max_points: float) -> str:
    if score is None:
        return "not graded"
    return "full marks" if score >= max_points else "zero" if score <= 0 else "partial"


def figure(results: ClassResults, misconceptions: list[dict[str, object]], path: Path) -> None:
    """Left: per question and part, how many students got full marks, partial, zero or no grade.
    Right: how many students hit each misconception."""
    parts = sorted(results.scores)
    seen = [r for r in misconceptions if int(r["students"]) > 0]  # type: ignore[call-overload]
    height = max(3.0, 0.32 * max(len(parts), len(seen)) + 1.5)
    fig = Figure(figsize=(13, height))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.1, 1]})
    labels = [f"{nb} · {part}" for nb, part in parts]
    y = list(range(len(parts)))[::-1]
    starts = [0] * len(parts)
    for band in BANDS:
        counts = [sum(_band(s, results.max_points[key]) == band for s in results.scores[key].values()) for key in parts]
        if not any(counts):
            continue
        bars = left.barh(y, counts, left=starts, color=COLOURS[band], label=band)
        left.bar_label(
            bars, labels=[str(c) if c else "" for c in counts], label_type="center", color="white", fontsize=8
        )
        starts = [a + b for a, b in zip(starts, counts)]
    left.set_yticks(y, labels, fontsize=8)
    left.set_xlabel(f"students (of {len(results.students)})")
    left.set_title("Score per question and part")
    left.legend(loc="lower center", bbox_to_anchor=(0.5, 1.06), ncol=4, fontsize=8, frameon=False)
    if seen:
        ys = list(range(len(seen)))[::-1]
        bars = right.barh(ys, [int(r["students"]) for r in seen], color="#5c6bc0")  # type: ignore[call-overload]
        right.bar_label(bars, labels=[f"{r['students']} of {r['of']}" for r in seen], padding=3, fontsize=8)
        right.set_yticks(ys, [str(r["id"]) for r in seen], fontsize=8)
        right.set_xlim(0, max(int(r["of"]) for r in seen) * 1.15)  # type: ignore[call-overload]
        right.set_ylim(len(seen) - 0.5 - max(len(seen), 10), len(seen) - 0.5)  # thin bars, at the top
        right.set_xlabel("students")
    else:
        right.text(0.5, 0.5, "no misconception found", ha="center", va="center", transform=right.transAxes)
        right.set_axis_off()
    right.set_title("Misconceptions: students whose tests show each")
    for axes in (left, right):
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _write_csv(path: Path, rows: list[dict[str, object]], header: list[str]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)


def report(assignment: str, out: Path | None = None) -> int:
    """Write ``scores.csv``, ``misconceptions.csv``, ``problems.csv`` and ``report.png``; print the tables."""
    app = NbGrader()
    app.initialize([])
    coursedir = app.coursedir
    root = Path(coursedir.root)
    autograded = Path(coursedir.format_path(coursedir.autograded_directory, ".", ".")).resolve()
    source = Path(coursedir.format_path(coursedir.source_directory, ".", assignment))
    results = gather(root, assignment, coursedir.db_url, coursedir.course_id, source, autograded)
    if not results.students:
        print(f"No graded submissions of '{assignment}' in the gradebook: run python -m grading autograde first.")
        return 1
    out = out or root / "reports" / assignment
    out.mkdir(parents=True, exist_ok=True)
    scores = score_rows(results)
    misconceptions = misconception_rows(results)
    problems = [
        {"student": p.student, "notebook": p.notebook, "graded": p.graded or p.file, "reason": p.reason}
        for p in results.problems
    ]
    _write_csv(out / "scores.csv", scores, ["question", "part", "max_points", "score", "students"])
    _write_csv(out / "misconceptions.csv", misconceptions, ["id", "question", "part", "students", "of", "message"])
    _write_csv(out / "problems.csv", problems, ["student", "notebook", "graded", "reason"])
    figure(results, misconceptions, out / "report.png")
    print(f"{assignment}: {len(results.students)} students\n")
    print(tabulate(scores, headers="keys"), end="\n\n")
    seen = [{k: r[k] for k in ("id", "students", "of", "message")} for r in misconceptions if r["students"]]
    if seen:
        print(tabulate(seen, headers="keys", maxcolwidths=[None, None, None, 60]))
    unseen = len(misconceptions) - len(seen)
    print(f"{unseen} other catalogued misconceptions were not seen (all are in misconceptions.csv).\n")
    if problems:
        print(f"{len(problems)} notebooks were not graded cleanly:")
        print(tabulate(problems, headers="keys", maxcolwidths=[None, None, None, 70]))
    print(
        f"\nWritten: {', '.join(str(out / n) for n in ('scores.csv', 'misconceptions.csv', 'problems.csv', 'report.png'))}"
    )
    return 0
