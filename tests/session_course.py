"""One course graded once for the test session: every edition of the assignment, its class, its preflight.

:func:`graded_class` copies the course, generates ``rooflines`` and its editions (``rooflines-ko``,
``rooflines-zh``) in one nbgrader process, and then, in a cache folder of its own (``XDG_CACHE_HOME``, so that
every preflight really runs):

1. runs ``python -m grading check`` on each edition (``rooflines`` twice: the second run finds the pass remembered);
2. hands in the class of :data:`grading_support.STUDENTS` for ``rooflines`` and mix_a for each other edition;
3. grades ``rooflines`` with the grading command (two notebooks at a time) while serial stock ``nbgrader
   autograde`` grades a copy holding the edge student; then the class report, nbgrader's ``generate_feedback``
   and ``export``, run at once; then each other edition, with its report;
4. removes one autograded notebook and grades the class again (a re-run grades just that one).

Each edition is graded with the options its check ran with (:data:`OPTIONS`): a pass is remembered per
assignment and options, so the grading finds it and does not run the preflight again.

The tests of ``test_grading_preflight``, ``test_nbgrader_rooflines`` and ``test_editions_grading`` read their
part of the result (the ``checks``, ``rooflines`` and ``editions`` entries); those files run on one pytest-xdist
worker (``ONE_WORKER`` in tests/conftest.py), so that the course is graded once.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from grading_support import (
    ASSIGNMENT,
    NOTEBOOKS,
    ROOT,
    build_class,
    copy_course,
    course_env,
    generate,
    gradebook_scores,
    grading_command,
    nbgrader,
)

sys.path.insert(0, str(ROOT / "book"))
import bookeditions  # book/bookeditions.py: the registry of editions

Q2 = NOTEBOOKS[1]
TRANSLATED = {lang: f"{ASSIGNMENT}-{lang}" for lang in bookeditions.translated()}  # rooflines-ko, rooflines-zh
EDITIONS = [ASSIGNMENT, *TRANSLATED.values()]
# Imports are warmed first, so a cell that takes this long is the endless loop, not a slow first import.
CELL_TIMEOUT_S = 6
# The grading command's options per edition, for its check and its grading alike (a pass is remembered per options).
OPTIONS = {ASSIGNMENT: ["--timeout", str(CELL_TIMEOUT_S)], **{assignment: [] for assignment in TRANSLATED.values()}}
# Each other edition's class: mix_a passes some checks and fails others.
EDITION_STUDENTS = ["mix_a"]
# Graded by plain serial `nbgrader autograde` too: hard-coded answers failing hidden checks, a deleted and an
# edited test cell, a time-out and a kernel death. (benchmarks/grading.py compares a whole class.)
SERIAL_STUDENTS = ["edge"]
# The course configures nbgrader autograde to run every notebook in the grader's sandbox and judge (grading/judged.py);
# serial nbgrader is compared as nbgrader itself runs a notebook, every check in the student's kernel: its stock
# execution, which the course's configuration restores with this option (and logs that it does).
STOCK = ["--JudgedExecute.stock=True"]

GRADEBOOK_DUMP = """
import json, sys
from nbgrader.api import Gradebook
out = {}
with Gradebook(sys.argv[1]) as gb:
    for student in gb.students:
        try:
            sub = gb.find_submission(sys.argv[2], student.id)
        except Exception:
            continue
        out[student.id] = {nb.name: {"score": nb.score, "cells": {g.name: g.score for g in nb.grades}}
                           for nb in sub.notebooks}
print(json.dumps(out))
"""


def digest(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` by relative path: its SHA-256."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def dump(course: Path, assignment: str = ASSIGNMENT) -> dict:
    """student -> notebook -> {"score", "cells": {grade cell: score}}, read from the course's gradebook."""
    run = subprocess.run(
        [sys.executable, "-c", GRADEBOOK_DUMP, f"sqlite:///{course / 'gradebook.db'}", assignment],
        env=course_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(run.stdout)


def _check(course: Path, cache: Path, assignment: str) -> dict:
    """``python -m grading check`` on one edition: the run and the passes it remembered; for ``rooflines``, the check
    run again (it finds the pass; each edition's grading finding its own pass is tested in every edition)."""
    stamps = set(cache.glob("roofline-grading/check-*.json"))
    run = grading_command(course, "check", assignment, "--workers", "2", *OPTIONS[assignment], timeout=900, cache=cache)
    remembered = sorted(set(cache.glob("roofline-grading/check-*.json")) - stamps)
    checked = {"run": run, "remembered": remembered}
    if assignment == ASSIGNMENT:
        checked["again"] = grading_command(
            course, "check", assignment, "--workers", "2", *OPTIONS[assignment], timeout=900, cache=cache
        )
    return checked


def _rooflines(course: Path, cache: Path, base: Path) -> dict:
    """The English class graded by the grading command, and its edge student by serial stock nbgrader."""
    # serial nbgrader grades a copy holding the edge student, for a cell-by-cell comparison
    serial = base / "serial"
    shutil.copytree(course, serial)
    for folder in (serial / "submitted").iterdir():
        if folder.name not in SERIAL_STUDENTS:
            shutil.rmtree(folder)
    before = digest(course / "submitted")
    # in a thread, with nbgrader()'s time limit: a stuck serial run is killed, its output read as it comes
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        serial_run = pool.submit(
            nbgrader, serial, "autograde", ASSIGNMENT, "--create", f"--Execute.timeout={CELL_TIMEOUT_S}", *STOCK
        )
        auto = grading_command(course, "autograde", ASSIGNMENT, "--workers", "2", *OPTIONS[ASSIGNMENT], cache=cache)
        reference = serial_run.result()
    serial_log = reference.stderr
    assert reference.returncode == 0, serial_log[-3000:]
    assert "JudgedExecute.stock" in serial_log, "serial nbgrader ran its stock execution: " + serial_log[-3000:]
    # three readers of the graded course, run at once
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        out = str(course / "class-report")
        reporting = pool.submit(grading_command, course, "report", ASSIGNMENT, "--out", out, cache=cache)
        feeding_back = pool.submit(nbgrader, course, "generate_feedback", ASSIGNMENT)
        exporting = pool.submit(nbgrader, course, "export", "--to", str(course / "grades.csv"))
        report, feedback, export = reporting.result(), feeding_back.result(), exporting.result()
    return {
        "course": course,
        "auto": auto,
        "report": report,
        "feedback": feedback,
        "export": export,
        "before": before,
        "scores": dump(course),
        "serial_course": serial,
        "serial": dump(serial),
    }


def _rerun(graded: dict, cache: Path) -> None:
    """An interrupted run leaves notebooks without an autograded version: a re-run grades just those."""
    course = graded["course"]
    (course / "autograded" / "mix_a" / ASSIGNMENT / f"{Q2}.ipynb").unlink()
    graded["rerun"] = grading_command(
        course, "autograde", ASSIGNMENT, "--workers", "1", *OPTIONS[ASSIGNMENT], cache=cache
    )
    graded["scores_after_rerun"] = dump(course)


def _edition(course: Path, cache: Path, lang: str) -> dict:
    """One other edition's class graded by the grading command, and its class report."""
    assignment = TRANSLATED[lang]
    auto = grading_command(course, "autograde", assignment, "--workers", "1", *OPTIONS[assignment], cache=cache)
    report = grading_command(course, "report", assignment, "--out", str(course / f"report-{lang}"), cache=cache)
    scores = gradebook_scores(course, assignment)
    return {"assignment": assignment, "auto": auto, "report": report, "course": course, "scores": scores}


def graded_class(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The course, checked and graded (see the module): ``{"course", "cache", "checks", "rooflines", "editions"}``."""
    base = tmp_path_factory.mktemp("graded-class")
    cache = base / "cache"
    course = copy_course(base / "course")
    generate(course, *EDITIONS)
    # warm matplotlib's font cache and the bytecode caches so the per-cell timeout only ever catches the endless loop
    subprocess.run([sys.executable, "-c", "import matplotlib.pyplot, numpy, ipykernel"], env=course_env(), check=True)
    checks = {assignment: _check(course, cache, assignment) for assignment in EDITIONS}
    build_class(course)
    for assignment in TRANSLATED.values():
        build_class(course, EDITION_STUDENTS, assignment)
    rooflines = _rooflines(course, cache, base)
    with concurrent.futures.ThreadPoolExecutor(len(TRANSLATED)) as pool:
        runs = {lang: pool.submit(_edition, course, cache, lang) for lang in TRANSLATED}
        editions = {lang: run.result() for lang, run in runs.items()}
    _rerun(rooflines, cache)
    rooflines["after"] = digest(course / "submitted")  # after every edition's grading and the re-run
    return {"course": course, "cache": cache, "checks": checks, "rooflines": rooflines, "editions": editions}
