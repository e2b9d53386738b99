"""Graded as nbgrader grades it: the grading command against serial ``nbgrader autograde``, cell by cell.

Two assignments are graded twice each, from the same submissions (one course folder per way holds both):

- **reference**: stock serial ``nbgrader autograde``, nbgrader's own ``Execute`` running every cell in the
  student's kernel, in a course folder of its own whose ``nbgrader_config.py`` is written here (:data:`STOCK_CONFIG`)
  and lists nbgrader's own preprocessors by name. Nothing of the course's ``nbgrader_config.py`` reaches it, so
  whatever that file does to ``nbgrader autograde`` (routing it through the judge, say), the reference stays
  nbgrader's; ``JUPYTER_CONFIG_DIR`` points at an empty folder, so no user-wide config does either.
- **judged**: ``python -m grading autograde`` in a course folder with the course's own ``nbgrader_config.py``.

The assignments (``tests/fixtures``):

- ``ps1``, nbgrader's own user-guide assignment with its two documented submissions (bitdiddle, hacker); the
  source notebooks handed in as they are make a third student (source);
- ``idioms``, checks in the idioms instructors write every day (``tests/fixtures/idioms/README.md`` lists them),
  with four students: the reference answers (correct), the release as it is (blank), plausible mistakes (wrong),
  and the wrong answers rigged to fool the checks (rig).

Every grade cell's ``(auto_score, score)`` in the gradebook must be the same in both runs, except the cells of
:data:`KNOWN_DIFFERENCES`, each a strict xfail with its reason: when the grader learns to grade one of them as
nbgrader does, its test passes, fails as an unexpected pass, and the entry is to be removed. The rigging student
is not compared with nbgrader (serial nbgrader is fooled, on purpose); the grading command must give it no more
than the wrong answers it rigs, cell by cell.
"""

from __future__ import annotations

import concurrent.futures
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from grading_support import (
    ROOT,
    cell_by_id,
    course_env,
    generate,
    grade_id,
    grading_command,
    is_answer_cell,
    is_grade_cell,
    read,
    solution_body,
)

FIXTURES = ROOT / "tests" / "fixtures"
PS1, IDIOMS = "ps1", "idioms"
SOURCES = {PS1: FIXTURES / "nbgrader_ps1" / PS1, IDIOMS: FIXTURES / "idioms" / IDIOMS}
NOTEBOOKS = {PS1: ["problem1", "problem2"], IDIOMS: ["idioms", "seeded"]}
STUDENTS = {PS1: ["bitdiddle", "hacker", "source"], IDIOMS: ["correct", "blank", "wrong", "rig"]}
COMPARED = {a: [s for s in students if s != "rig"] for a, students in STUDENTS.items()}

# The reference run's nbgrader_config.py: nbgrader's defaults, named one by one (nbgrader 0.9's
# Autograde.sanitize_preprocessors and autograde_preprocessors), so that the reference is stock serial nbgrader
# whatever the course's own config sets. The layout and the time-out are the course's.
STOCK_CONFIG = """\
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearOutput,
    DeduplicateIds,
    Execute,
    IgnorePattern,
    LimitOutput,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)

c = get_config()
c.CourseDirectory.root = {root!r}
c.CourseDirectory.course_id = "fidelity"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.Execute.timeout = 60
c.Autograde.sanitize_preprocessors = [
    ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata
]
c.Autograde.autograde_preprocessors = [
    Execute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput, SaveAutoGrades, AssignLatePenalties,
    CheckCellMetadata,
]
"""

# ---------------------------------------------------------------------------------------------------------------
# The idioms assignment's students: answer cells that replace the reference answers
# ---------------------------------------------------------------------------------------------------------------

WRONG: dict[str, dict[str, str]] = {
    "idioms": {
        # off by one (0 to n - 1), so squares(0) returns [] and raises nothing; the sum written out again
        "squares_answer": '''def squares(n):
    """The squares of 1 to n, as a list."""
    return [i * i for i in range(n)]


def sum_of_squares(n):
    """The sum of the squares of 1 to n."""
    total = 0
    for i in range(1, n + 1):
        total += i * i
    return total''',
        # the norm as a sum of coordinates; the midpoint as a tuple
        "point_answer": '''from dataclasses import dataclass


@dataclass
class Point:
    x: float
    y: float

    def norm(self):
        """The distance from the origin."""
        return self.x + self.y


def midpoint(p, q):
    """The Point halfway between p and q."""
    return ((p.x + q.x) / 2, (p.y + q.y) / 2)''',
        # as_half right, with a debugging line left on stderr; fill_squares rebinds its argument
        "arrays_answer": '''import sys


def as_half(values):
    """values as a float32 array."""
    print("as_half got", values, file=sys.stderr)
    return np.asarray(values, dtype=np.float32)


def fill_squares(out):
    """Write (i + 1) ** 2 into out[i], in place."""
    out = np.arange(1, out.shape[0] + 1) ** 2
    return out''',
        # returns the greeting; maps words to lengths; forgets the lower case
        "text_answer": '''def greet(name):
    """Print "Hello, <name>!"."""
    return f"Hello, {name}!"


def word_lengths(words):
    """{length: how many words have that length}."""
    return {word: len(word) for word in words}


def unique_words(text):
    """The set of the words of text, in lower case."""
    return set(text.split())''',
        # ten halvings: about 2e-3, not 1e-9
        "bisect_answer": '''def bisect(f, lo, hi):
    """A root of f in [lo, hi], to within 1e-9."""
    for _ in range(10):
        mid = (lo + hi) / 2
        if f(lo) * f(mid) <= 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2''',
        # the first column (the day) averaged; the file written from the wrong squares
        "files_answer": '''def mean_reading(path):
    """The mean of the value column of a CSV file with a header line."""
    with open(path) as f:
        rows = f.read().splitlines()[1:]
    values = [float(row.split(",")[0]) for row in rows if row]
    return sum(values) / len(values)


with open("squares.txt", "w") as out:
    out.writelines(f"{value}\\n" for value in squares(5))''',
    },
    # faces 0 to 5
    "seeded": {
        "dice_answer": '''def roll_dice(n):
    """n rolls of a six-sided die, as an array."""
    return np.random.randint(0, 6, size=n)'''
    },
}

# What the rigging student adds after the wrong answers, cell by cell: the checks' helpers redefined or patched in
# the kernel, and returned objects that equal anything.
RIGGING: dict[str, dict[str, str]] = {
    "idioms": {
        "squares_answer": """


import functools
import math

import numpy

math.isclose = lambda *args, **kwargs: True
numpy.testing.assert_allclose = lambda *args, **kwargs: None


def abs(x):
    return 0


def isinstance(obj, kind):
    return True


def len(obj):
    return 3


def print(*args, **kwargs):
    pass


class Agreeable(list):
    def __eq__(self, other):
        return True

    __hash__ = None


_squares = squares


@functools.wraps(_squares)
def squares(n):
    return Agreeable(_squares(n))""",
        "point_answer": "\n\n\nPoint.__eq__ = lambda self, other: True",
        "text_answer": """


class AgreeableSet(set):
    def __eq__(self, other):
        return True

    __hash__ = None


_unique_words = unique_words


def unique_words(text):
    return AgreeableSet(_unique_words(text))""",
    },
}

# ---------------------------------------------------------------------------------------------------------------
# What serial nbgrader gives, by design of the fixtures (grade cell -> score); checked first, so that a fixture
# that does not test what it claims to fails here rather than passing unnoticed below
# ---------------------------------------------------------------------------------------------------------------

IDIOMS_POINTS = {
    "squares_values": 1,
    "squares_doc": 1,
    "squares_invalid": 1,
    "uses_squares": 1,
    "partial_credit": 2,
    "partial_numpy": 2,
    "squares_n": 1,
    "point_object": 2,
    "point_type": 1,
    "point_midpoint": 1,
    "half_dtype": 1,
    "fill_in_place": 1,
    "greet_prints": 1,
    "word_lengths_dict": 1,
    "unique_words_set": 1,
    "bisect_root": 1,
    "reads_data": 1,
    "wrote_file": 1,
}
# a check whose last expression is a NumPy number scores full points whatever its value: nbgrader reads the number
# from its text, which NumPy 2 writes "np.float64(1.0)", not a float to nbgrader, so full points
NOTHING = {**dict.fromkeys(IDIOMS_POINTS, 0.0), "partial_numpy": 2.0}
# the rigged cells, where serial nbgrader is fooled: helpers redefined (abs, isinstance, len, print), patched
# (math.isclose, numpy.testing.assert_allclose) or outwitted (__eq__ of a list, a set and Point)
RIGGED = {
    "squares_values": 1.0,  # a list that equals anything
    "squares_doc": 1.0,  # (functools.wraps keeps the docstring, which the wrong answer has too)
    "partial_credit": 2.0,  # squares(3) == [1, 4, 9] counts, and 1 + 1 is the last expression
    "point_object": 2.0,  # abs() is 0
    "point_type": 1.0,  # isinstance() is True
    "point_midpoint": 1.0,  # Point.__eq__ is True
    "half_dtype": 1.0,  # print() prints nothing, so the debugging line no longer reaches stderr
    "fill_in_place": 1.0,  # numpy.testing.assert_allclose does nothing
    "unique_words_set": 1.0,  # len() is 3, a set that equals anything
    "bisect_root": 1.0,  # abs() is 0
    "reads_data": 1.0,  # math.isclose is True
}
STOCK_IDIOMS: dict[str, dict[str, dict[str, float]]] = {
    "correct": {
        "idioms": {k: float(v) for k, v in IDIOMS_POINTS.items()},
        "seeded": {"dice_range": 1.0, "dice_seeded": 1.0},
    },
    # the docstring is outside the solution block: the release has it
    "blank": {"idioms": {**NOTHING, "squares_doc": 1.0}, "seeded": {"dice_range": 0.0, "dice_seeded": 0.0}},
    # the docstring, and one of the two partial-credit cases (sum_of_squares is right); as_half is right too, but
    # its line on stderr zeroes its check, as nbgrader scores any cell with stderr output
    "wrong": {
        "idioms": {**NOTHING, "squares_doc": 1.0, "partial_credit": 1.0},
        "seeded": {"dice_range": 0.0, "dice_seeded": 0.0},
    },
    "rig": {"idioms": {**NOTHING, **RIGGED}, "seeded": {"dice_range": 0.0, "dice_seeded": 0.0}},
}

# ---------------------------------------------------------------------------------------------------------------
# Where the grading command does not yet grade as nbgrader does: (assignment, student, notebook, grade cell) ->
# why. Each is a strict xfail; remove an entry when its cell matches.
# ---------------------------------------------------------------------------------------------------------------

KNOWN_DIFFERENCES: dict[tuple[str, str, str, str], str] = {
    (IDIOMS, "correct", "idioms", "point_midpoint"): (
        "midpoint(...) == Point(1, 2) compares two of the student's objects: a proxy equals only itself, since the "
        "student's __eq__ (or the kernel's account of an object's fields) could be rigged"
    ),
    (IDIOMS, "correct", "seeded", "dice_seeded"): (
        "np.random.seed(0) seeds the grader's generator, not the kernel's, which has also drawn already for the "
        "check's visible run: unjudgeable outside the kernel, for the preflight to name"
    ),
}


def _grade_cells(assignment: str, notebook: str) -> list[str]:
    """The grade and task cells of a source notebook, in order (the rows the gradebook holds for a submission)."""
    return [
        grade_id(c) or ""
        for c in read(SOURCES[assignment] / f"{notebook}.ipynb").cells
        if is_grade_cell(c) or c.metadata.get("nbgrader", {}).get("task")
    ]


CELLS = [
    (assignment, student, notebook, gid)
    for assignment in (PS1, IDIOMS)
    for student in COMPARED[assignment]
    for notebook in NOTEBOOKS[assignment]
    for gid in _grade_cells(assignment, notebook)
]

# ---------------------------------------------------------------------------------------------------------------
# Course folders, submissions and the two runs
# ---------------------------------------------------------------------------------------------------------------

Scores = dict[str, dict[str, dict[str, tuple[float | None, float]]]]  # student -> notebook -> cell -> (auto, score)


def _course(dest: Path, config: str) -> Path:
    """A course folder with both assignments' sources under solutions/, `config` as its nbgrader_config.py, and the
    assignments generated in one nbgrader process (the gradebook knows their cells; exercises/ holds the releases)."""
    for assignment, source in SOURCES.items():
        shutil.copytree(source, dest / "solutions" / assignment)
    (dest / "nbgrader_config.py").write_text(config, encoding="utf-8")
    generate(dest, *SOURCES)
    return dest


def _with_answers(nb: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    for gid, source in answers.items():
        cell_by_id(nb, gid).source = source
    return nb


def _submissions(course: Path, assignment: str) -> None:
    """Hand in every student's notebooks (and the released files beside them) under course/submitted."""
    release = course / "exercises" / assignment
    for student in STUDENTS[assignment]:
        folder = course / "submitted" / student / assignment
        if assignment == PS1 and student != "source":  # nbgrader's documented submissions, as they are
            shutil.copytree(FIXTURES / "nbgrader_ps1" / "students" / student / PS1, folder)
            continue
        shutil.copytree(release, folder)  # shipped files (jupyter.png, data/readings.csv) included
        for notebook in NOTEBOOKS[assignment]:
            source = read(SOURCES[assignment] / f"{notebook}.ipynb")
            if student == "source":  # the instructor's notebook, handed in as it is
                nbformat.write(source, folder / f"{notebook}.ipynb")
                continue
            nb = read(release / f"{notebook}.ipynb")
            if student != "blank":
                _with_answers(
                    nb, {grade_id(c) or "": solution_body(c.source) for c in source.cells if is_answer_cell(c)}
                )
            if student in ("wrong", "rig"):
                _with_answers(nb, WRONG.get(notebook, {}))
            if student == "rig":
                for gid, more in RIGGING.get(notebook, {}).items():
                    cell_by_id(nb, gid).source += more
            nbformat.write(nb, folder / f"{notebook}.ipynb")


def _scores(course: Path, assignment: str) -> Scores:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {
            sub.student_id: {nb.name: {g.name: (g.auto_score, g.score) for g in nb.grades} for nb in sub.notebooks}
            for sub in gb.assignment_submissions(assignment)
        }


def _grading_flags() -> list[str]:
    """``--no-check`` where the grading command has it (a preflight that refuses unjudgeable checks): the
    seeded check is to be graded here, to be compared."""
    usage = grading_command(ROOT, "autograde", "--help", timeout=120).stdout
    return ["--no-check"] if "--no-check" in usage else []


@dataclass(frozen=True)
class Graded:
    """One assignment graded both ways: the scores, and the course folders they were graded in."""

    stock: Scores  # stock serial nbgrader autograde
    judged: Scores  # python -m grading autograde
    stock_course: Path
    judged_course: Path


def _grade(base: Path) -> dict[str, Graded]:
    """Grade both assignments with stock serial nbgrader (one ``nbgrader autograde`` for both) and with the grading
    command, each way in a course of its own."""
    stock = base / "stock"
    stock.mkdir()
    _course(stock, STOCK_CONFIG.format(root=str(stock)))
    judged = _course(base / "judged", (ROOT / "nbgrader_config.py").read_text("utf-8"))
    for course in (stock, judged):
        for assignment in SOURCES:
            _submissions(course, assignment)
    env = course_env()
    env["JUPYTER_CONFIG_DIR"] = str(base / "no-jupyter-config")  # no user-wide nbgrader_config.py either
    env.pop("JUPYTER_CONFIG_PATH", None)
    # serial nbgrader, one kernel at a time, runs beside the grading command
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        stock_run = pool.submit(
            subprocess.run,
            [sys.executable, "-m", "nbgrader", "autograde", "*"],  # every assignment of the course
            cwd=stock,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        flags = _grading_flags()
        runs = {
            assignment: grading_command(judged, "autograde", assignment, *flags, timeout=900) for assignment in SOURCES
        }
        reference = stock_run.result()
    assert reference.returncode == 0, reference.stdout[-3000:] + reference.stderr[-6000:]
    graded = {}
    for assignment, run in runs.items():
        assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-6000:]  # 1: some notebooks are listed
        graded[assignment] = Graded(_scores(stock, assignment), _scores(judged, assignment), stock, judged)
    return graded


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Graded]]:
    """Both assignments graded once, both ways, when a test first asks for one."""
    done: dict[str, Graded] = {}

    def get(assignment: str) -> Graded:
        if not done:
            done.update(_grade(tmp_path_factory.mktemp("fidelity")))
        return done[assignment]

    yield get


# ---------------------------------------------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------------------------------------------


def test_serial_nbgrader_grades_ps1_as_its_documentation_shows(graded: Callable[[str], Graded]) -> None:
    """The checks that fail are those of nbgrader's documented autograded notebooks (user_guide/autograded)."""
    stock = graded(PS1).stock
    auto = {s: {g: v[0] for g, v in stock[s]["problem1"].items()} for s in STUDENTS[PS1]}
    manual = {"sum_of_squares_equation": None, "cell-938593c4a215c6cc": None}  # for a person to grade
    # hacker and the source answer every autograded part (and changed Part D's cell: for a person to grade)
    for student in ("hacker", "source"):
        assert auto[student] == {
            "correct_squares": 1.0,
            "squares_invalid_input": 1.0,
            "correct_sum_of_squares": 0.5,
            "sum_of_squares_uses_squares": 0.5,
            "sum_of_squares_application": None,
            **manual,
        }, student
    # bitdiddle's squares start at 0 (both value checks fail), but raise ValueError and are called by
    # sum_of_squares; Part D is as released, which nbgrader scores 0 without a person
    assert auto["bitdiddle"] == {
        "correct_squares": 0.0,
        "squares_invalid_input": 1.0,
        "correct_sum_of_squares": 0.0,
        "sum_of_squares_uses_squares": 0.5,
        "sum_of_squares_application": 0.0,
        **manual,
    }
    assert {g: v[0] for g, v in stock["hacker"]["problem2"].items()} == {"part-a": None, "part-b": None}


def test_the_reference_runs_its_checks_in_the_kernel(graded: Callable[[str], Graded]) -> None:
    """The reference is nbgrader's own Execute: a failed check shows IPython's traceback, with the check's line
    (the judge's error is one line and never shows a check)."""
    nb = read(graded(PS1).stock_course / "autograded" / "bitdiddle" / PS1 / "problem1.ipynb")
    (error,) = [o for o in cell_by_id(nb, "correct_squares").outputs if o.output_type == "error"]
    shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))  # without IPython's colours
    assert "----> 2 assert squares(1) == [1]" in shown, shown


def test_serial_nbgrader_grades_the_idioms_as_designed(graded: Callable[[str], Graded]) -> None:
    stock = graded(IDIOMS).stock
    got = {s: {nb: {g: v[0] for g, v in cells.items()} for nb, cells in stock[s].items()} for s in STUDENTS[IDIOMS]}
    assert got == STOCK_IDIOMS


@pytest.mark.parametrize("assignment", [PS1, IDIOMS])
def test_both_runs_grade_the_same_cells(graded: Callable[[str], Graded], assignment: str) -> None:
    stock, judged = graded(assignment).stock, graded(assignment).judged
    shape = {s: {nb: sorted(cells) for nb, cells in notebooks.items()} for s, notebooks in stock.items()}
    assert {s: {nb: sorted(cells) for nb, cells in notebooks.items()} for s, notebooks in judged.items()} == shape
    assert sorted(shape) == sorted(STUDENTS[assignment])


@pytest.mark.parametrize(
    ("assignment", "student", "notebook", "cell"),
    [
        pytest.param(
            *key,
            id="-".join(key),
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[key])] if key in KNOWN_DIFFERENCES else [],
        )
        for key in CELLS
    ],
)
def test_a_cell_is_graded_as_serial_nbgrader_grades_it(
    graded: Callable[[str], Graded], assignment: str, student: str, notebook: str, cell: str
) -> None:
    stock, judged = graded(assignment).stock, graded(assignment).judged
    want = stock[student][notebook][cell]
    assert judged.get(student, {}).get(notebook, {}).get(cell) == want, f"serial nbgrader gives {want}"


def test_the_rigging_fools_serial_nbgrader(graded: Callable[[str], Graded]) -> None:
    """The rigs are real: against serial nbgrader they earn the cells of RIGGED (checked in full above)."""
    stock = graded(IDIOMS).stock
    more = {g for g, (auto, _) in stock["rig"]["idioms"].items() if (auto or 0) > (stock["wrong"]["idioms"][g][0] or 0)}
    assert more == {g for g, points in RIGGED.items() if points > STOCK_IDIOMS["wrong"]["idioms"][g]}


# Cells where the rig only silences the student's own output, not a check: the rigging student's ``print`` does
# nothing, so its (right) ``as_half`` leaves no debugging line on stderr, which zeroes the wrong student's cell. The
# answer is right, so the point is the student's under both graders.
OWN_OUTPUT_ONLY = {("idioms", "half_dtype")}


def test_rigging_earns_nothing_from_the_grading_command(graded: Callable[[str], Graded]) -> None:
    stock, judged = graded(IDIOMS).stock, graded(IDIOMS).judged
    for notebook in NOTEBOOKS[IDIOMS]:
        for gid, (_, score) in judged["rig"][notebook].items():
            if (notebook, gid) in OWN_OUTPUT_ONLY:
                assert score == stock["rig"][notebook][gid][0], (notebook, gid)
                continue
            assert score <= judged["wrong"][notebook][gid][1], (notebook, gid)


def test_the_preflight_names_the_checks_it_cannot_judge_and_nothing_else(graded: Callable[[str], Graded]) -> None:
    """``python -m grading check`` names each check the grading command does not yet grade as nbgrader does (the
    seeded draw, a comparison of two of the student's objects), so none of them scores silently, and no other."""
    course = graded(IDIOMS).judged_course
    run = grading_command(course, "check", IDIOMS, timeout=300)
    said = run.stdout + run.stderr
    assert run.returncode == 1, said
    expected = sorted(gid for assignment, student, _, gid in KNOWN_DIFFERENCES if assignment == IDIOMS)
    cells = _grade_cells(IDIOMS, "idioms") + _grade_cells(IDIOMS, "seeded")
    named = sorted(gid for gid in cells if re.search(rf"\b{gid}\b", said))
    assert named == expected, said


def test_known_differences_name_graded_cells() -> None:
    """Every entry is a compared cell (a typo would leave a difference untested)."""
    assert set(KNOWN_DIFFERENCES) <= set(CELLS)
    assert all(student != "rig" for _, student, _, _ in KNOWN_DIFFERENCES)
