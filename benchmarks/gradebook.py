"""Time saving one notebook's grades into the gradebook: nbgrader's SaveAutoGrades against the grader's.

nbgrader commits after every graded cell; :class:`grading.plan.SaveAutoGradesOnce` writes the same
rows in one transaction per notebook. This builds a class of N students (see
grading.sample.write_course), records their submissions in a fresh gradebook, saves every
notebook's grades with each preprocessor in turn (alternating, so drift in the machine's load
touches both alike), checks that both leave the same rows, and prints the time per notebook.

    python benchmarks/gradebook.py                 # 10 students, 6 notebooks each, 3 rounds
    python benchmarks/gradebook.py --students 40 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nbgrader.api import Gradebook
from nbgrader.preprocessors import SaveAutoGrades

from grading.plan import SaveAutoGradesOnce
from grading.sample import write_course

ASSIGNMENT = "rooflines"


def _rows(db_url: str, reset: bool = False) -> list[tuple[object, ...]]:
    """Every grade row of the assignment; with ``reset``, cleared first (so the next save must write them all)."""
    with Gradebook(db_url) as gb:
        grades = [
            (s.student.id, nb.name, g)
            for s in gb.assignment_submissions(ASSIGNMENT)
            for nb in s.notebooks
            for g in nb.grades
        ]
        if reset:
            for _, _, g in grades:
                g.auto_score, g.needs_manual_grade = None, True
            gb.db.commit()
        return sorted((student, nb, g.name, g.auto_score, g.needs_manual_grade) for student, nb, g in grades)


def _save_all(pp_class: type, db_url: str, notebooks: list[tuple[str, str, nbformat.NotebookNode]]) -> float:
    """Seconds per notebook to save every notebook's grades with ``pp_class``."""
    start = time.perf_counter()
    for student, name, nb in notebooks:
        resources = {"nbgrader": {"notebook": name, "assignment": ASSIGNMENT, "student": student, "db_url": db_url}}
        pp_class().preprocess(nb, resources)
    return (time.perf_counter() - start) / len(notebooks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", module="sqlalchemy")  # nbgrader's add_submission trips an autoflush warning
    if args.students < 1 or args.rounds < 1:
        parser.error("--students and --rounds must be 1 or more")
    with tempfile.TemporaryDirectory(prefix="gradebook-bench-") as tmp:
        course = Path(tmp)
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        write_course(ROOT, course, ASSIGNMENT, args.students, env)
        db_url = f"sqlite:///{course / 'gradebook.db'}"
        notebooks = []
        with Gradebook(db_url) as gb:
            for folder in sorted((course / "submitted").iterdir()):
                gb.update_or_create_student(folder.name)
                gb.add_submission(ASSIGNMENT, folder.name)
                for path in sorted((folder / ASSIGNMENT).glob("*.ipynb")):
                    notebooks.append((folder.name, path.stem, nbformat.read(path, as_version=4)))
        times: dict[str, list[float]] = {"nbgrader SaveAutoGrades": [], "SaveAutoGradesOnce": []}
        rows = {}
        for _ in range(args.rounds):
            for label, pp in (("nbgrader SaveAutoGrades", SaveAutoGrades), ("SaveAutoGradesOnce", SaveAutoGradesOnce)):
                _rows(db_url, reset=True)
                times[label].append(_save_all(pp, db_url, notebooks))
                rows[label] = _rows(db_url)
        same = rows["nbgrader SaveAutoGrades"] == rows["SaveAutoGradesOnce"] and len(rows["SaveAutoGradesOnce"]) > 0
    print(f"{len(notebooks)} notebooks ({args.students} students), {args.rounds} rounds; median time per notebook:")
    medians = {label: statistics.median(t) for label, t in times.items()}
    for label, median in medians.items():
        print(f"  {label:24s} {median * 1e3:7.1f} ms")
    ratio = medians["nbgrader SaveAutoGrades"] / medians["SaveAutoGradesOnce"]
    print(f"ratio {ratio:.2f}x; the same rows in the gradebook: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
