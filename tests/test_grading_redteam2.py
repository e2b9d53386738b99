"""More attacks by a reader of the grader's code; each test asserts the safe behaviour and is marked ``xfail`` (strict)
while the attack works, so that the fix has to remove its mark.

1. Honest work that ``nbgrader autograde`` grades in full loses points (measured beside serial ``nbgrader autograde``
   on the same submissions):
   - a module or data file the student hands in beside the notebook is not in the kernel's folder (fixed: the
     kernel's folder holds the submission's files, the shipped ones over them);
   - a notebook that writes a file beside itself fails there (fixed: the kernel's folder is writable);
   - ``import rooflinelib`` (installed by ``make setup``, as the learners' page says) fails in the sandbox: its
     editable install points at the repository, which the sandbox does not show;
   - an allocation that is only reserved, never touched (``np.zeros`` of 1.75 GiB), raises ``MemoryError``
     (``RLIMIT_AS`` counts address space, not memory; nbgrader's kernel gets it from Linux's default overcommit);
   - a 1 MB printout of a list of pairs sends "more than 16M of output": every ``[`` weighs 256 bytes, inside a
     printed string too, and the whole notebook is not graded.
2. A notebook of a few million JSON numbers in a cell's metadata (26 MiB, 135 lists and objects: under every cap)
   takes about 2 GB in the main process and as much in a worker, and 40 s of the main process's time.
3. A submission folder: a notebook sorted after 2000 other top-level entries is not read (0 points), and every
   entry of a folder is listed and kept in memory, however many there are.
4. A student's own cell raising an exception named ``CellTimeoutError``, or saying "kernel died", is listed as a
   time-out or a kernel death of the grader.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from grading_support import (
    ASSIGNMENT,
    ROOT,
    _reference,
    cell_by_id,
    generated_course,
    gradebook_scores,
    grading_command,
    read,
)

from grading.execute import Task, cell_role, execute
from grading.sandbox import default_bwrap, probe
from grading.submission import MAX_ENTRIES, read_submission

pytestmark = pytest.mark.skipif(probe(default_bwrap()) is not None, reason="no sandbox on this machine")

Q1, Q4 = "q1_int8_matmul", "q4_per_example_weights"
MY_ANSWERS = "def bytes_loaded(B, D, F):\n    return B * D + D * F\n"
FROM_MY_MODULE = "from my_answers import bytes_loaded  # written in my_answers.py, handed in beside the notebook"
FROM_DATA_FILE = (
    "import json\n\nCHIP = json.load(open('data/chip.json'))\n\n\n"
    "def t_math(B, D, F):\n    return total_ops(B, D, F) / CHIP['int8_ops_per_s']\n\n\n"
    "def t_comms(B, D, F):\n    return (bytes_loaded(B, D, F) + bytes_written(B, D, F)) / CHIP['hbm_bytes_per_s']\n"
)
CHIP = '{"int8_ops_per_s": 3.94e14, "hbm_bytes_per_s": 8.1e11}'
WRITES_NOTES = "with open('notes.txt', 'w') as fh:\n    fh.write('q1 (a): one byte per int8 entry')\n\n"
WITH_ROOFLINELIB = (
    "import rooflinelib as rl\n\n\n"
    "def critical_batch(peak_ops_per_s, hbm_bytes_per_s):\n"
    "    return rl.critical_intensity(peak_ops_per_s, hbm_bytes_per_s) / 2\n"
)
# counts entries by building the arrays, the second one in float64 by mistake: 1.75 GiB at the hidden shape
# (256, 8192, 28672), reserved (calloc) and never touched; nbgrader autograde gives it full marks
RESERVES = (
    "import numpy as np\n\n\ndef bytes_loaded(B, D, F):\n"
    "    return np.zeros((B, D), np.int8).size + np.zeros((D, F)).size\n"
)
PRINTS_PAIRS = "print([[b, 2 * b] for b in range(1, 70_000)])  # every (B, bytes) pair of my sweep"
FLOATS = 3_000_000  # numbers in one cell's metadata: 12 MB, 4 lists and objects more than an honest notebook


def _reference_of(name: str) -> nbformat.NotebookNode:
    release = ROOT / "exercises" / ASSIGNMENT
    return _reference(read(release / f"{name}.ipynb"), read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb"))


def _submit(course: Path, student: str, name: str, text: str) -> Path:
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    for shipped in ("feedback.py", "feedback.csv"):
        shutil.copy2(ROOT / "exercises" / ASSIGNMENT / shipped, folder / shipped)
    (folder / f"{name}.ipynb").write_text(text, encoding="utf-8")
    return folder


def _with(name: str, gid: str, source: str) -> str:
    nb = _reference_of(name)
    cell_by_id(nb, gid).source = source
    return nbformat.writes(nb)


@pytest.fixture(scope="module")
def graded(course_template: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    course = generated_course(course_template, tmp_path_factory.mktemp("redteam2") / "course")
    folder = _submit(course, "own_module", Q1, _with(Q1, "q1_a_answer", FROM_MY_MODULE))
    (folder / "my_answers.py").write_text(MY_ANSWERS, encoding="utf-8")
    folder = _submit(course, "data_file", Q1, _with(Q1, "q1_f_answer", FROM_DATA_FILE))
    (folder / "data").mkdir()
    (folder / "data" / "chip.json").write_text(CHIP, encoding="utf-8")
    answer = cell_by_id(_reference_of(Q1), "q1_a_answer").source
    _submit(course, "writes_beside", Q1, _with(Q1, "q1_a_answer", WRITES_NOTES + answer))
    _submit(course, "uses_rooflinelib", Q1, _with(Q1, "q1_e_answer", WITH_ROOFLINELIB))
    _submit(course, "reserves", Q1, _with(Q1, "q1_a_answer", RESERVES))
    nb = _reference_of(Q1)
    nb.cells.append(nbformat.v4.new_code_cell(PRINTS_PAIRS))
    _submit(course, "prints_pairs", Q1, nbformat.writes(nb))
    nb = json.loads(nbformat.writes(_reference_of(Q1)))
    nb["cells"][0]["metadata"]["x"] = "@@"
    _submit(course, "many_numbers", Q1, json.dumps(nb).replace('"@@"', "[" + ",".join(["1e9"] * FLOATS) + "]"))
    run = grading_command(course, "autograde", ASSIGNMENT, "--workers", "1", "--timeout", "60", timeout=900)
    listed = json.loads((course / "autograded" / f"grading-{ASSIGNMENT}.json").read_text())["problems"]
    problems = {(p["student"], p["notebook"]): p for p in listed}
    return {"run": run, "scores": gradebook_scores(course), "problems": problems}


HONEST = [
    pytest.param("own_module", Q1),
    pytest.param("data_file", Q1),
    pytest.param("writes_beside", Q1),
    pytest.param("uses_rooflinelib", Q1),
    pytest.param("reserves", Q1),
    pytest.param("prints_pairs", Q1),
]


@pytest.mark.parametrize(("student", "name"), HONEST)
def test_honest_work_scores_what_nbgrader_gives(graded: dict, student: str, name: str) -> None:
    """Each of these notebooks holds the reference answers, written as a student might; ``nbgrader autograde`` gives
    every one of them full marks."""
    cells = graded["scores"].get(student, {}).get(name, {})
    problem = graded["problems"].get((student, name))
    assert cells and all(score == top for score, top in cells.values()), (cells, problem)
    assert problem is None, problem


def test_a_notebook_of_millions_of_numbers_is_refused_before_it_is_parsed(graded: dict) -> None:
    """Like a notebook of more than 2000 cells, one of more JSON values than the grader parses cheaply is refused with
    a one-line reason, in the main process, before nbgrader's steps or a worker parse it (each of them holds some
    80 bytes for each 4-byte number: 2 GB for a 26 MiB file, in the main process and in a worker alike)."""
    problem = graded["problems"].get(("many_numbers", Q1))
    assert problem is not None and not problem["graded"], problem
    assert "JSON" in problem["reason"] and "\n" not in problem["reason"], problem


def test_a_notebook_is_read_whatever_other_files_its_folder_holds(tmp_path: Path) -> None:
    """read_submission promises the notebooks first; 2001 frames of an animation sorted before it push it out."""
    folder = tmp_path / "ada" / "hw1"
    folder.mkdir(parents=True)
    (folder / "q1.ipynb").write_text("{}", encoding="utf-8")
    for n in range(MAX_ENTRIES + 1):
        (folder / f"frame{n:05d}.png").write_bytes(b"")
    read = read_submission(tmp_path, ["ada", "hw1"], notebooks={"q1.ipynb"})
    assert "q1.ipynb" in read.files, read.left_out.get("q1.ipynb")


def test_a_folder_of_very_many_entries_is_not_listed_entry_by_entry(tmp_path: Path) -> None:
    """Past the cap nothing is read, and nothing more should be kept either: 300,000 empty files cost the main
    process 100 MB and 7 s today, 3 million ten times that."""
    folder = tmp_path / "ada" / "hw1"
    folder.mkdir(parents=True)
    for n in range(10 * MAX_ENTRIES):
        os.close(os.open(folder / f"f{n:06d}", os.O_CREAT | os.O_WRONLY, 0o644))
    read = read_submission(tmp_path, ["ada", "hw1"])
    assert len(read.left_out) <= MAX_ENTRIES, len(read.left_out)


PLANTED = {
    "time-out": "class CellTimeoutError(Exception):\n    pass\n\n\nraise CellTimeoutError('no reply')",
    "kernel death": "raise RuntimeError('my kernel died yesterday, so this cell is unfinished')",
}


@pytest.mark.parametrize("incident", sorted(PLANTED))
def test_a_students_own_error_is_not_an_incident_of_the_grader(incident: str) -> None:
    """outcome.timeouts and outcome.kernel_died come from the names and texts of errors in every cell, so a student's
    cell can list its notebook as "interrupted after 60 s in cell 25" or "the kernel died" in the run's problems and
    the report's problems.csv; only the grader's own evidence (its time-out handler, a dead kernel) should."""
    nb = read(ROOT / "solutions" / ASSIGNMENT / f"{Q1}.ipynb")
    nb.cells.append(nbformat.v4.new_code_cell(PLANTED[incident]))
    shipped = (ROOT / "solutions" / ASSIGNMENT).iterdir()
    files = {p.name: p.read_bytes() for p in shipped if p.is_file() and p.suffix != ".ipynb"}
    config = (("nbgrader_config.py", (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")),)
    setups = tuple(c.source for c in nb.cells if cell_role(c) == "setup")
    cli = {"Execute": {"timeout": 30}}
    task = Task("ada", ASSIGNMENT, Q1, nbformat.writes(nb), files, config, cli, default_bwrap(), setups=setups)
    outcome = execute(task)
    assert outcome.error is None, outcome.error
    assert outcome.timeouts == [] and not outcome.kernel_died, (outcome.timeouts, outcome.kernel_died)
