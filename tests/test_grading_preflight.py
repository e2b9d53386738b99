"""The preflight, ``python -m grading check ASSIGNMENT``: the source notebooks' own answers graded through the whole
pipeline, and every check linted; ``python -m grading autograde`` refuses a class whose assignment fails it.

Each course gets a cache folder of its own (``XDG_CACHE_HOME``), so that every run really runs: the session's course
(tests/session_course.py), whose editions are checked before its class is graded, and the broken course.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from grading_support import ASSIGNMENT, ROOT, cell_by_id, copy_course, generate, grading_command
from session_course import EDITIONS, TRANSLATED

from grading.sandbox import default_bwrap, probe

# slow and sandbox as the grading tests of conftest.py's NEEDS: they grade the session course's class in the sandbox
pytestmark = [
    pytest.mark.skipif(probe(default_bwrap()) is not None, reason="no sandbox on this machine"),
    pytest.mark.sandbox,
    pytest.mark.slow,
]
Q1 = "q1_int8_matmul"
SEEDED = "import numpy as np\n\nnp.random.seed(0)\nassert bytes_loaded(4, 3, 5) == 27, 'the same draw each time'\n"


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("assignment", EDITIONS)
def test_every_edition_of_the_course_passes_its_check(graded_class: dict, assignment: str) -> None:
    """Each edition of the session's course (tests/session_course.py), checked in a cache folder of the session's
    own: the check runs, passes and is remembered; the class's grading (and for ``rooflines`` the check run again)
    finds the pass."""
    checked = graded_class["checks"][assignment]
    run = checked["run"]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "full marks" in run.stdout, run.stdout
    assert f"Checking {assignment}:" in run.stderr, "the check ran: " + run.stderr[-2000:]
    assert checked["remembered"], "a pass is remembered"
    assert ("again" in checked) == (assignment == ASSIGNMENT), "rooflines alone is checked twice"
    if assignment == ASSIGNMENT:  # the check run again finds the pass
        assert checked["again"].returncode == 0 and "Checking" not in checked["again"].stderr, checked["again"].stderr
    lang = {edition: code for code, edition in TRANSLATED.items()}.get(assignment)
    graded = graded_class["editions"][lang] if lang else graded_class["rooflines"]
    assert "Checking" not in graded["auto"].stderr, graded["auto"].stderr[-2000:]


@pytest.fixture(scope="module")
def broken_course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course whose Q1 fails its check (:func:`_broken_course`), made once for the tests that grade it."""
    return _broken_course(tmp_path_factory.mktemp("broken") / "course")


def _broken_course(folder: Path) -> Path:
    """A course whose Q1 has a check its own answer fails, and a check in an idiom the judge cannot decide.

    Its assignment is Q1 alone: the other notebooks, as the course has them, pass their check (the session course's
    check of ``rooflines``, above, finds nothing in any of them), so grading them here would only repeat that.
    """
    course = copy_course(folder)
    for top in ("solutions", "exercises"):
        for other in (course / top / "rooflines").glob("*.ipynb"):
            if other.stem != Q1:
                other.unlink()
    path = course / "solutions" / "rooflines" / f"{Q1}.ipynb"
    nb = nbformat.read(path, as_version=4)
    test = cell_by_id(nb, "q1_b_test")
    test.source = "assert bytes_written(4, 3, 5) == 21, 'one more byte than the answer writes'\n" + test.source
    seeded = nbformat.v4.new_code_cell(SEEDED)
    seeded.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "q1_seeded_test",
        "locked": True,
        "points": 1,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    nb.cells.insert(nb.cells.index(cell_by_id(nb, "q1_a_test")) + 1, seeded)
    nbformat.write(nb, path)
    generate(course, "rooflines")
    folder = course / "submitted" / "ada" / "rooflines"
    folder.mkdir(parents=True)
    for release in (course / "exercises" / "rooflines").iterdir():
        (folder / release.name).write_bytes(release.read_bytes())
    return course


def test_a_broken_assignment_is_refused_by_name(broken_course: Path, own_cache: Path) -> None:
    course = broken_course
    run = grading_command(course, "check", "rooflines", "--workers", "2", timeout=900)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    lines = run.stdout.splitlines()
    failing = [line for line in lines if line.strip().startswith(f"{Q1} q1_b_test:")]
    assert failing and "score 0 of 1 " in failing[0] and "one more byte" in failing[0], run.stdout
    seeded = [line for line in lines if line.strip().startswith(f"{Q1} q1_seeded_test:")]
    assert seeded and "np.random.seed" in seeded[0] and "bytes_loaded" in seeded[0], run.stdout
    named = {line.split()[1].rstrip(":") for line in lines if line.startswith("  ")}
    assert named == {"q1_b_test", "q1_seeded_test"}, run.stdout  # nothing else is named (the seeded check may be
    # named twice: its lint, and its reference answers failing where the draw in the kernel is not seeded)
    assert not list(own_cache.glob("roofline-grading/check-*.json")), "a failure is not remembered"


def test_autograde_refuses_a_class_whose_assignment_fails_its_check(broken_course: Path, own_cache: Path) -> None:
    course = broken_course
    refused = grading_command(course, "autograde", "rooflines", "--workers", "2", timeout=900)
    assert refused.returncode == 2, refused.stdout[-3000:] + refused.stderr[-3000:]
    assert "fails its own check" in refused.stderr and "q1_b_test" in refused.stderr, refused.stderr[-3000:]
    assert "q1_seeded_test" in refused.stderr and "--no-check" in refused.stderr, refused.stderr[-3000:]
    assert not (course / "autograded" / "ada").exists(), "nothing was graded"
    graded = grading_command(course, "autograde", "rooflines", "--workers", "2", "--no-check", timeout=900)
    notebooks = len(list((course / "solutions" / "rooflines").glob("*.ipynb")))
    said = graded.stdout + graded.stderr[-2000:]
    assert graded.returncode in (0, 1) and f"Graded {notebooks} notebooks" in graded.stdout, said


def test_the_course_source_is_not_changed_by_the_tests() -> None:
    assert "q1_seeded_test" not in (ROOT / "solutions" / "rooflines" / f"{Q1}.ipynb").read_text(encoding="utf-8")
