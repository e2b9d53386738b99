"""The Korean and Chinese assignments through the instructor's workflow.

For each edition, in the session's copy of the course (tests/session_course.py): ``nbgrader generate_assignment
rooflines-<lang>`` must reproduce the committed ``exercises/rooflines-<lang>/``; a small class
(mix_a: right answers for some parts, misconceptions in others) is graded by the course's grading
command and reported. The scores must equal the English assignment's for the same answers
(the hidden tests are the same), and a failing check must speak the edition's language.
"""

from __future__ import annotations

import csv

import pytest
from grading_support import NOTEBOOKS, ROOT, comparable, expected_scores, read
from session_course import EDITION_STUDENTS, TRANSLATED

Q1 = NOTEBOOKS[0]
EDITIONS = {lang: EDITION_STUDENTS for lang in TRANSLATED}  # mix_a passes some checks and fails others
EXPECTED = expected_scores()


@pytest.fixture(scope="module")
def graded(graded_class: dict) -> dict[str, dict]:
    """Each edition graded in the session's course (tests/session_course.py), one notebook at a time."""
    return graded_class["editions"]


@pytest.mark.parametrize("lang", sorted(EDITIONS))
def test_release_is_what_nbgrader_generates_from_the_edition_sources(graded: dict, lang: str) -> None:
    course, assignment = graded[lang]["course"], graded[lang]["assignment"]
    for path in sorted((ROOT / "exercises" / assignment).iterdir()):
        fresh = course / "exercises" / assignment / path.name
        if path.suffix == ".ipynb":
            same = comparable(fresh) == comparable(path)
        else:
            same = fresh.read_bytes() == path.read_bytes()
        assert same, (
            f"exercises/{assignment}/{path.name} is out of date: run `nbgrader generate_assignment {assignment} --force`"
        )


@pytest.mark.parametrize("lang", sorted(EDITIONS))
def test_edition_scores_equal_the_english_assignments(graded: dict, lang: str) -> None:
    run = graded[lang]
    assert run["auto"].returncode == 0, run["auto"].stdout[-2000:] + run["auto"].stderr[-2000:]
    for student in EDITIONS[lang]:
        got = {name: sum(score for score, _ in run["scores"][student][name].values()) for name in NOTEBOOKS}
        assert got == pytest.approx(EXPECTED[student]), (lang, student, got)


@pytest.mark.parametrize("lang", sorted(EDITIONS))
def test_a_failing_check_speaks_the_editions_language(graded: dict, lang: str) -> None:
    run = graded[lang]
    with (ROOT / "solutions" / "rooflines" / "feedback.csv").open(encoding="utf-8", newline="") as fh:
        catalogue = {row["id"]: row for row in csv.DictReader(fh)}
    executed = read(run["course"] / "autograded" / "mix_a" / run["assignment"] / f"{Q1}.ipynb")
    errors = [o.evalue for c in executed.cells for o in c.get("outputs", []) if o.output_type == "error"]
    first = catalogue["q1.int8-two-bytes"][lang].split("{")[0]
    assert any(e.startswith("[q1.int8-two-bytes] " + first) for e in errors), errors[:3]
    assert not any(catalogue["q1.int8-two-bytes"]["en"].split("{")[-1].split("}")[-1][:20] in e for e in errors)


@pytest.mark.parametrize("lang", sorted(EDITIONS))
def test_the_class_report_counts_the_editions_misconceptions(graded: dict, lang: str) -> None:
    run = graded[lang]
    assert run["report"].returncode == 0, run["report"].stdout + run["report"].stderr
    with (run["course"] / f"report-{lang}" / "misconceptions.csv").open(encoding="utf-8", newline="") as fh:
        rows = {row["id"]: row for row in csv.DictReader(fh)}
    assert (int(rows["q1.int8-two-bytes"]["students"]), int(rows["q1.int8-two-bytes"]["of"])) == (
        1,
        len(EDITIONS[lang]),
    )
