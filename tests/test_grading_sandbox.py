"""A hostile class: the grading command runs each notebook alone, offline, unprivileged and bounded.

Honest students are graded beside students whose one Q2 notebook attacks the grader from an
answer cell: reading the answers, deleting the class's submissions, overwriting the gradebook,
reaching other kernels and the grader's ports, forking, allocating, writing and printing until
stopped, flooding the grader with messages of no cell or replies it cannot read, spying on the code
that calls its functions, and rigging the checks in every way a reader of the grader's code might
try. Others attack with their folder: a notebook or the whole folder linking to the solutions, extra
files linking to the gradebook, ``/etc/shadow`` and ``/dev/zero``, a FIFO, a device file; and one
plants catalogue ids for the class report. Honest work that once lost points is graded beside them:
a figure of 250,000 points a curve and an allocation NumPy refuses. Every attack caps itself (a few
hundred processes, 8 GB, 1 GB written, 100 MB printed), so a broken sandbox cannot take the machine
down.
"""

from __future__ import annotations

import concurrent.futures
import csv
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import stat
from pathlib import Path

import nbformat
import pytest
from grading_support import (
    ASSIGNMENT,
    MISTAKES,
    NOTEBOOKS,
    ROOT,
    _reference,
    build_class,
    cell_by_id,
    expected_scores,
    generated_course,
    gradebook_scores,
    grading_command,
    is_grade_cell,
    nbgrader,
    read,
)
from nbformat.v4 import new_code_cell, new_notebook

from grading.execute import Task, execute
from grading.room import best_mode
from grading.sandbox import Limits, command, default_bwrap

Q2, Q3 = NOTEBOOKS[1], NOTEBOOKS[2]
HONEST = ["reference", "mix_a"]
ANSWER = "q2_a_answer"

# Code appended to the reference answer of Q2 (a); "{course}" and "{port}" are filled in by the fixture.
ATTACKS = {
    "reads_answers": """
import glob
for path in ["{course}/solutions/rooflines/q2_int8_weights.ipynb", "{course}/gradebook.db",
             "{course}/submitted/reference/rooflines/q2_int8_weights.ipynb", "../../../solutions", "/work"]:
    try:
        with open(path, "rb") as fh:
            print("READ", path, fh.read(3000))
    except OSError as err:
        print("DENIED", path, type(err).__name__)
print("FOUND", sorted(glob.glob("{course}/*") + glob.glob("/tmp/pytest-of-*")))
""",
    "deletes_submissions": """
import shutil
for path in ["../../../submitted", "{course}/submitted", "{course}/autograded"]:
    shutil.rmtree(path, ignore_errors=True)
""",
    "overwrites_gradebook": """
for path in ["{course}/gradebook.db", "../../../gradebook.db"]:
    try:
        with open(path, "wb") as fh:
            fh.write(b"gone")
        print("WROTE", path)
    except OSError as err:
        print("DENIED", path, type(err).__name__)
""",
    "reaches_kernels": """
import glob, os, socket
mine = os.path.dirname(os.getcwd())
found = [p for pattern in ["/tmp/grading-*/ipc/*", "/tmp/*/kernel*", "/root/.local/share/jupyter/runtime/*",
                           os.path.expanduser("~/.local/share/jupyter/runtime/*")]
         for p in glob.glob(pattern) if not p.startswith(mine)]
print("OTHERS", found)
for path in found[:20]:
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(1)
            sock.connect(path)
            sock.sendall(b"print('hello from another kernel')")
            print("SENT", path)
    except OSError as err:
        print("DENIED", path, type(err).__name__)
""",
    "calls_the_grader": """
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"hello")
    print("CONNECTED")
except OSError as err:
    print("NO NETWORK", type(err).__name__)
""",
    "forks": """
import os, time
for _ in range(400):
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
""",
    "allocates": """
hoard = []
for _ in range(128):  # 8 GB at most
    hoard.append(bytearray(64 << 20))
""",
    "writes": """
with open("/tmp/fill", "wb") as fh:
    for _ in range(1024):  # 1 GB at most
        fh.write(bytes(1 << 20))
""",
    "forks_memory": """
import os, time
for _ in range(3):  # each child below the per-process limit, together over the notebook's 2G
    if os.fork() == 0:
        hoard = b"\\x01" * (900 << 20)
        time.sleep(60)
        os._exit(0)
time.sleep(60)
""",
    "fills_folders": """
import os
from ipykernel.kernelapp import IPKernelApp
sockets = os.path.dirname(IPKernelApp.instance().connection_file)
for folder in ["/tmp", sockets, os.getcwd(), "/dev/shm", os.path.expanduser("~")]:
    for n in range(2):  # 2 x 20 MB per folder, each file well below --file-size; 64M in all
        try:
            with open(os.path.join(folder, f"fill{n}"), "wb") as fh:
                for _ in range(20):
                    fh.write(bytes(1 << 20))
        except OSError as err:
            print("DENIED", folder, type(err).__name__)
""",
    "prints": """
for _ in range(100):  # 100 MB
    print("x" * (1 << 20))
""",
    # prints everything its callers hold, to find the checks that call it (its answer is right)
    "spies_on_checks": """
import inspect, linecache
_answer, _seen = bytes_loaded, set()
def bytes_loaded(B, D, F):
    for info in inspect.stack():
        for text in (info.filename + " " + "".join(linecache.getlines(info.filename))[:3000],
                     repr({k: repr(v)[:2000] for k, v in info.frame.f_locals.items()})):
            if text not in _seen:  # each text once: the checks call it often, mostly with what it printed before
                _seen.add(text)
                print("SPY", text)
    return _answer(B, D, F)
""",
    # sends 48 MB of output with the parent of no cell, from the first call at a hidden shape: while the judge waits
    # for the answer, when no cell of the notebook is running
    "floods_iopub": """
_honest_bytes_loaded, _flooded = bytes_loaded, []
def bytes_loaded(B, D, F):
    if (B, D, F) != (4, 3, 5) and not _flooded:
        _flooded.append(1)
        kernel = get_ipython().kernel
        for _ in range(48):
            kernel.session.send(kernel.iopub_socket, "stream", {"name": "stdout", "text": "x" * (1 << 20)},
                                parent={"msg_id": "no-cell-of-the-notebook", "msg_type": "execute_request"})
    return _honest_bytes_loaded(B, D, F)
""",
    # answers every request of the grader with 15 MB it cannot read (5 checks: 75 MB)
    "bombs_replies": """
import sys, types
_fake = types.ModuleType("roofline_grader")
_fake.answer = lambda request, namespace: "y" * 15_000_000
sys.modules["roofline_grader"] = _fake
""",
    # the control: mix_b's wrong answer to (a), nothing else
    "wrong_plain": MISTAKES["mix_b"][Q2]["q2_a_answer"],
}
# The same wrong answer, with the checks rigged to pass: each must score exactly what the control scores.
FORGED = {
    "rebinds_checks": "isclose = lambda *args, **kwargs: True",
    "patches_builtins": "import builtins\nbuiltins.AssertionError = Warning\nbuiltins.print = lambda *a, **k: None",
    "transforms_input": "get_ipython().input_transformers_post.append(\n"
    "    lambda lines: ['pass\\n'] if any('Part (' in line for line in lines) else lines)",
    "aliases_modules": "import math, feedback\nm, f = math, feedback\nm.isclose = f.matches = lambda *a, **k: True",
    "registers_str": "from numbers import Real\nReal.register(str)\nReal.register(type(None))",
}
ATTACKS.update({name: MISTAKES["mix_b"][Q2]["q2_a_answer"] + "\n\n" + code + "\n" for name, code in FORGED.items()})
# Students whose notebook is not graded, and a word of the reason listed for it.
REFUSED = {
    "escapes": "nbformat",
    "forks": "processes",
    "writes": "file size",
    "prints": "output",
    "forks_memory": "memory",
    "fills_folders": "file size",
    "floods_iopub": "output",
    "bombs_replies": "data",
    "links_solution": "symbolic link",
    "many_cells": "more than the 2000 a notebook may have",
}
# "allocates" goes over --memory where a cgroup holds it: its processes have no address-space limit there (memory
# reserved but never touched is not refused, as under nbgrader), so the room stops it. In the watchdog mode each of
# its allocations is refused by the per-process limit (a clean MemoryError), and its notebook is graded in full.
if best_mode() != "watchdog":
    REFUSED["allocates"] = "memory"

# Q3 (c) drawn with 250,000 points a curve: every part right, as nbgrader finds it
DENSE_PLOT = ("batch_sizes = np.arange(1, 512)", "batch_sizes = np.linspace(1, 511, 250_000)")
# an exploratory cell whose allocation NumPy refuses at once, on any machine (a MemoryError subclass)
EXPLORES = "import numpy as np\nexploration = np.zeros((10**6, 10**6), dtype=np.int8)"
# catalogue ids of questions no student of this class gets wrong: raised by the student's own cell, and by the
# student's function inside a check (it fails that check, as it should, but the message is the student's)
PLANTED = ("q3.a.wrong", "q3.a.shape")
MISLEADS = (
    "\n\n_honest_bytes_written = bytes_written\n"
    "def bytes_written(B, D, F):\n"
    "    if (B, D, F) != (4, 3, 5):\n"
    f"        raise AssertionError('[{PLANTED[1]}] planted by the student')\n"
    "    return _honest_bytes_written(B, D, F)\n"
)
# valid JSON, and a notebook version that nbformat quotes as it is in its error
ESCAPES_NOTEBOOK = r'{"nbformat": "\u001b[2J\u001b]0;graded 10 of 10\u0007", "cells": []}'
# extra files of "links_extras" (an honest Q2), none of which may be read or copied, and the one that is
LEFT_OUT = ["etc", "grades.db", "notes.html", "pipe", "shadow", "timestamp.txt", "zero.bin"]
LIMITS = ["--procs", "256", "--memory", "2G", "--file-size", "64M", "--output", "16M", "--wall", "120"]


def _digest(folder: Path) -> dict[str, str]:
    """Every entry below ``folder``, never following a link: a regular file's digest, a link's target, a kind."""
    found = {}
    for here, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(here, name)
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                found[str(path.relative_to(folder))] = "link to " + os.readlink(path)
            elif stat.S_ISREG(mode):
                found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
            elif not stat.S_ISDIR(mode):
                found[str(path.relative_to(folder))] = f"special {stat.S_IFMT(mode)}"
    return found


def _submission(course: Path, student: str, notebook: nbformat.NotebookNode | None = None, name: str = Q2) -> Path:
    """A student's folder with the shipped files and, if given, one notebook; its path."""
    release = ROOT / "exercises" / ASSIGNMENT
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    for shipped in ("feedback.py", "feedback.csv"):
        (folder / shipped).write_bytes((release / shipped).read_bytes())
    if notebook is not None:
        (folder / f"{name}.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    return folder


def _reference_of(name: str) -> nbformat.NotebookNode:
    release = ROOT / "exercises" / ASSIGNMENT
    return _reference(read(release / f"{name}.ipynb"), read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb"))


def _hostile_folders(course: Path) -> list[str]:
    """The students whose folder attacks, and the honest work that once lost points."""
    # a Q2 that is a link to the solution notebook, and a whole folder that is a link to the solutions
    folder = _submission(course, "links_solution")
    (folder / f"{Q2}.ipynb").symlink_to(course / "solutions" / ASSIGNMENT / f"{Q2}.ipynb")
    (course / "submitted" / "links_folder").mkdir()
    (course / "submitted" / "links_folder" / ASSIGNMENT).symlink_to(course / "solutions" / ASSIGNMENT)
    # an honest Q2 beside extra files that are links, special files and one honest extra file
    folder = _submission(course, "links_extras", _reference_of(Q2))
    (folder / "notes.html").symlink_to(course / "solutions" / ASSIGNMENT / f"{Q2}.ipynb")
    (folder / "grades.db").symlink_to(course / "gradebook.db")
    (folder / "shadow").symlink_to("/etc/shadow")
    (folder / "zero.bin").symlink_to("/dev/zero")
    (folder / "timestamp.txt").symlink_to("/dev/zero")
    (folder / "etc").symlink_to("/etc")
    os.mkfifo(folder / "pipe")
    if os.geteuid() == 0:  # as an unpacked archive can hold: a device file that reads as /dev/zero
        os.mknod(folder / "zero", stat.S_IFCHR | 0o644, os.makedev(1, 5))
    (folder / "data").mkdir()
    (folder / "data" / "points.csv").write_text("B,seconds\n1,0.5\n", encoding="utf-8")
    # honest work: a dense figure, an exploratory cell NumPy refuses
    nb = _reference_of(Q3)
    cell = cell_by_id(nb, "q3_c_answer")
    cell.source = cell.source.replace(*DENSE_PLOT)
    _submission(course, "dense_plot", nb, name=Q3)
    nb = _reference_of(Q2)
    nb.cells.insert(nb.cells.index(cell_by_id(nb, ANSWER)) + 1, nbformat.v4.new_code_cell(EXPLORES))
    _submission(course, "explores", nb)
    # a Q2 whose reason for being refused would carry terminal escapes (clear the screen, retitle the window), and
    # files named with them (once listed, they would be printed on the instructor's terminal), more than are listed
    folder = _submission(course, "escapes")
    (folder / f"{Q2}.ipynb").write_text(ESCAPES_NOTEBOOK, encoding="utf-8")
    for n in range(30):
        (folder / f"\x1b[31mred{n:02d}").symlink_to("/etc/hostname")
    # a Q2 of 3000 cells, each a test cell the gradebook does not know (nbgrader looks each up: a millisecond a cell)
    nb = _reference_of(Q2)
    for n in range(3000):
        cell = nbformat.v4.new_code_cell("")
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": f"fake{n}", "locked": True, "solution": False}
        cell.metadata["nbgrader"].update(points=1, schema_version=3)
        nb.cells.append(cell)
    _submission(course, "many_cells", nb)
    # planted catalogue ids: the student's own cell, and the student's function inside a check
    nb = _reference_of(Q2)
    cell_by_id(nb, "q2_b_answer").source += MISLEADS
    nb.cells.append(nbformat.v4.new_code_cell(f"raise AssertionError('[{PLANTED[0]}] planted by the student')"))
    _submission(course, "misleads_report", nb)
    return sorted([*LEFT_OUT, "zero"] if os.geteuid() == 0 else LEFT_OUT)


def _outputs(path: Path) -> str:
    """Everything a notebook's cells printed or raised, as one string."""
    return json.dumps([cell.get("outputs", []) for cell in read(path).cells])


def _hostile_class(course: Path, port: int) -> list[str]:
    """The hostile class in a generated course: honest students, every attack, the hostile folders."""
    build_class(course, HONEST)
    release = ROOT / "exercises" / ASSIGNMENT
    for student, attack in ATTACKS.items():
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for shipped in ("feedback.py", "feedback.csv"):
            (folder / shipped).write_bytes((release / shipped).read_bytes())
        nb = _reference(read(release / f"{Q2}.ipynb"), read(ROOT / "solutions" / ASSIGNMENT / f"{Q2}.ipynb"))
        cell = cell_by_id(nb, ANSWER)
        code = attack.replace("{course}", str(course)).replace("{port}", str(port))
        cell.source = code if attack.startswith("def ") else cell.source + "\n" + code
        (folder / f"{Q2}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    return _hostile_folders(course)


# nbgrader's converter copies a submission folder before any preprocessor runs, following links: it reads a link to
# /dev/zero forever. So nbgrader autograde is given the hostile class without that one folder.
NBGRADER_CANNOT_COPY = ["links_extras"]


@pytest.fixture(scope="module")
def graded(course_template: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    course = generated_course(course_template, tmp_path_factory.mktemp("sandbox") / "course")
    twin = generated_course(course_template, tmp_path_factory.mktemp("sandbox-nbgrader") / "course")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    left_out = _hostile_class(course, port)
    _hostile_class(twin, port)
    for student in NBGRADER_CANNOT_COPY:
        shutil.rmtree(twin / "submitted" / student)
    before = _digest(course / "submitted")
    # the same class through nbgrader's own command, configured (nbgrader_config.py) to run the same sandbox and judge,
    # in a twin course at the same time (serial nbgrader leaves a core idle while it waits on a kernel)
    options = [f"--JudgedExecute.{LIMITS[i][2:].replace('-', '_')}={LIMITS[i + 1]}" for i in range(0, len(LIMITS), 2)]
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        twin_run = pool.submit(
            nbgrader, twin, "autograde", ASSIGNMENT, "--create", "--Execute.timeout=30", *options, timeout=900
        )
        run = grading_command(
            course, "autograde", ASSIGNMENT, "--workers", "2", "--timeout", "30", *LIMITS, timeout=420
        )
        listed = json.loads((course / "autograded" / f"grading-{ASSIGNMENT}.json").read_text())["problems"]
        feedback = nbgrader(course, "generate_feedback", ASSIGNMENT)
        report = grading_command(course, "report", ASSIGNMENT)
        through_nbgrader = twin_run.result()
    try:  # whichever grader the attack reached
        connection, _ = listener.accept()
        connection.close()
        called = True
    except BlockingIOError:
        called = False
    listener.close()
    return {
        "nbgrader": through_nbgrader,
        "nbgrader_scores": gradebook_scores(twin),
        "course": course,
        "run": run,
        "before": before,
        "after": _digest(course / "submitted"),
        "scores": gradebook_scores(course),
        "problems": {(p["student"], p["notebook"]): p for p in listed},
        "called": called,
        "left_out": left_out,
        "feedback": feedback,
        "report": report,
    }


def _hidden_lines() -> list[str]:
    """The lines of every hidden test of the assignment, long enough to be told apart from other text."""
    lines = []
    for name in NOTEBOOKS:
        for cell in read(ROOT / "solutions" / ASSIGNMENT / f"{name}.ipynb").cells:
            if is_grade_cell(cell) and "### BEGIN HIDDEN TESTS" in cell.source:
                block = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
                lines += [line.strip() for line in block.splitlines() if len(line.strip()) > 20]
    return lines


def _log(graded: dict) -> str:
    return graded["run"].stdout[-3000:] + graded["run"].stderr[-3000:]


@pytest.mark.parametrize("student", HONEST)
def test_honest_students_score_as_when_graded_alone(graded: dict, student: str) -> None:
    got = {nb: sum(score for score, _ in cells.values()) for nb, cells in graded["scores"][student].items()}
    assert got == pytest.approx(expected_scores()[student]), _log(graded)


def test_nbgrader_autograde_gives_the_same_scores_cell_by_cell(graded: dict) -> None:
    """nbgrader's own command, configured by the course to run each notebook in the same sandbox and judge, grades
    the hostile class as the grading command does, every cell of every notebook."""
    ours = {s: nbs for s, nbs in graded["scores"].items() if s not in NBGRADER_CANNOT_COPY}
    theirs = graded["nbgrader_scores"]
    assert set(theirs) == set(ours), graded["nbgrader"].stderr[-3000:]
    differ = {
        (student, name): (cells, theirs[student].get(name))
        for student, notebooks in ours.items()
        for name, cells in notebooks.items()
        if theirs[student].get(name) != cells
    }
    assert not differ, (list(differ.items())[:3], graded["nbgrader"].stderr[-3000:])


def test_submissions_and_gradebook_are_intact(graded: dict) -> None:
    assert graded["after"] == graded["before"]
    with sqlite3.connect(graded["course"] / "gradebook.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert not graded["called"], "a kernel reached a port of the grader's machine"


@pytest.mark.parametrize("student", sorted(FORGED))
def test_forged_checks_score_what_the_values_deserve(graded: dict, student: str) -> None:
    """Rigging the checks in the kernel changes nothing: the grader judges, and the control's wrong (a) fails."""
    cells = graded["scores"][student][Q2]
    control = graded["scores"]["wrong_plain"][Q2]
    assert cells == control, (cells, control, _log(graded))
    assert control["q2_a_test"][0] == 0 and sum(score for score, _ in control.values()) > 0
    assert (student, Q2) not in graded["problems"]


@pytest.mark.parametrize("student", sorted(set(ATTACKS) - set(REFUSED) - set(FORGED) - {"wrong_plain"}))
def test_attacks_that_fail_cost_nothing_and_reach_nothing(graded: dict, student: str) -> None:
    """The attack finds nothing to read, delete, overwrite or reach; the honest answers still score in full."""
    cells = graded["scores"][student][Q2]
    assert all(score == top for score, top in cells.values()), (cells, _log(graded))
    text = _outputs(graded["course"] / "autograded" / student / ASSIGNMENT / f"{Q2}.ipynb")
    for leak in ("READ", "WROTE", "SENT", "CONNECTED"):
        assert f'"{leak} ' not in text and f'"{leak}\\n' not in text, (leak, text[:2000])
    assert "OTHERS []" in text or student != "reaches_kernels", text[:2000]
    assert "FOUND []" in text or student != "reads_answers", text[:2000]
    assert (student, Q2) not in graded["problems"]


@pytest.mark.parametrize("student", sorted(REFUSED))
def test_attacks_that_go_over_a_limit_or_cheat_score_zero_with_a_reason(graded: dict, student: str) -> None:
    cells = graded["scores"][student][Q2]
    assert all(score == 0 for score, _ in cells.values()), cells
    problem = graded["problems"][(student, Q2)]
    named = {REFUSED[student]}
    if student == "forks" and best_mode() == "watchdog":
        # the watchdog counts each process's anonymous memory, pages shared copy-on-write with the kernel included
        # (it may not read the kernel's memory maps to tell them apart), so 400 forks can also cross --memory first
        named.add("memory")
    assert not problem["graded"] and any(name in problem["reason"] for name in named), problem
    assert "\n" not in problem["reason"]
    assert any(line.strip().startswith(f"{student} / {Q2}: not graded") for line in graded["run"].stdout.splitlines())
    assert not (graded["course"] / "autograded" / student / ASSIGNMENT / f"{Q2}.ipynb").exists()


def test_no_hidden_test_reaches_an_answer_or_the_feedback(graded: dict) -> None:
    """Hidden tests run as cells: nothing a student's own cells print, nor the feedback, shows them."""
    course = graded["course"]
    hidden = _hidden_lines()
    for path in (course / "autograded").rglob("*.ipynb"):
        text = json.dumps([c.get("outputs", []) for c in read(path).cells])
        assert "HIDDEN TESTS" not in text and "hidden_" not in text, path
        assert not [line for line in hidden if line in text], path
    # what a function prints while the grader calls it reaches the check's output, as under nbgrader; the frames the
    # spy prints are the kernel's, which never hold a check: no line of one (above), no frame of the grader's judge
    spied = _outputs(course / "autograded" / "spies_on_checks" / ASSIGNMENT / f"{Q2}.ipynb")
    assert "SPY" in spied and "<check>" not in spied and "judge.py" not in spied
    assert graded["feedback"].returncode == 0, graded["feedback"].stderr[-3000:]
    pages = list((course / "feedback").rglob("*.html"))
    graded_notebooks = list((course / "autograded").glob(f"*/{ASSIGNMENT}/*.ipynb"))
    # two honest students' six notebooks, one Q2 per attack not refused, and Q2 or Q3 of each student of the folders
    expected = len(HONEST) * len(NOTEBOOKS) + len(set(ATTACKS) - set(REFUSED)) + 4
    assert len(pages) == len(graded_notebooks) == expected, sorted(str(p) for p in pages)
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "HIDDEN TESTS" not in text and "hidden_shapes" not in text, page


def test_the_run_lists_only_the_refused_notebooks_and_the_files_left_out(graded: dict) -> None:
    assert graded["run"].returncode == 1, _log(graded)
    expected = {(student, Q2) for student in REFUSED}
    expected |= {("links_folder", name) for name in NOTEBOOKS}  # a folder that is a link: none of it is read
    expected |= {("links_extras", name) for name in graded["left_out"]}
    expected |= {("escapes", f"\\x1b[31mred{n:02d}") for n in range(20)} | {("escapes", "10 more files")}
    assert set(graded["problems"]) == expected, sorted(graded["problems"])


def test_nothing_a_student_names_or_writes_reaches_the_terminal_as_a_control_character(graded: dict) -> None:
    """A reason can quote a submission, and a file's name is the student's: both are printed with escapes."""
    for text in (graded["run"].stdout, graded["run"].stderr, graded["report"].stdout):
        assert "\x1b" not in text and "\x07" not in text, [line for line in text.splitlines() if "\x1b" in line]
    assert "\\x1b[2J" in graded["problems"][("escapes", Q2)]["reason"]


@pytest.mark.parametrize(("student", "name"), [("dense_plot", Q3), ("explores", Q2), ("links_extras", Q2)])
def test_honest_work_scores_what_nbgrader_gives(graded: dict, student: str, name: str) -> None:
    """A figure of 250,000 points a curve is judged (its Axes is 16 MB of data, within --data); an exploratory
    cell whose allocation NumPy refuses is an error in that cell only, not the room's memory limit; and an honest
    Q2 beside extra files that are links and special files is graded as if they were not there."""
    cells = graded["scores"][student][name]
    assert all(score == top for score, top in cells.values()), (cells, _log(graded))
    assert (student, name) not in graded["problems"], graded["problems"][(student, name)]


def _tree(folder: Path) -> dict[str, str]:
    """Every entry below a folder of the grader's (never following a link), by relative path: its kind."""
    kinds = {stat.S_IFREG: "file", stat.S_IFDIR: "folder"}
    return {
        str(Path(here, name).relative_to(folder)): kinds.get(stat.S_IFMT(Path(here, name).lstat().st_mode), "other")
        for here, dirs, files in os.walk(folder)
        for name in dirs + files
    }


def test_links_and_special_files_never_reach_the_graders_copies(graded: dict) -> None:
    """A submission is read without following links: neither the solutions, the gradebook, /etc/shadow nor
    /dev/zero reaches autograded/ or feedback/ (which goes back to the student), and the run ends."""
    course = graded["course"]
    secrets = [(course / "gradebook.db").read_bytes()[:16]]  # SQLite's header
    if os.access("/etc/shadow", os.R_OK):
        secrets.append(Path("/etc/shadow").read_bytes()[:64])
    solution = (course / "solutions" / ASSIGNMENT / f"{Q2}.ipynb").read_bytes()
    for top in ("autograded", "feedback"):
        tree = _tree(course / top)
        assert set(tree.values()) <= {"file", "folder"}, {k: v for k, v in tree.items() if v == "other"}
        for rel, kind in tree.items():
            if kind == "file":
                data = (course / top / rel).read_bytes()
                assert not any(secret in data for secret in secrets) and data != solution, rel
        copied = {rel for rel, kind in tree.items() if rel.startswith(f"links_extras/{ASSIGNMENT}/")}
        prefix = f"links_extras/{ASSIGNMENT}"
        assert {f"{prefix}/{name}" for name in ("feedback.py", "feedback.csv", "data", "data/points.csv")} <= copied
        assert not {f"{prefix}/{name}" for name in graded["left_out"]} & copied, copied
    for name in graded["left_out"]:
        reason = graded["problems"][("links_extras", name)]["reason"]
        assert "left out" in reason and "\n" not in reason, reason
    assert "symbolic link" in graded["problems"][("links_extras", "notes.html")]["reason"]
    assert "FIFO" in graded["problems"][("links_extras", "pipe")]["reason"]


def test_a_notebook_or_folder_that_is_a_link_is_not_read(graded: dict) -> None:
    """The solutions linked as a notebook, or as the whole folder, score nothing (nbgrader would give full marks)."""
    assert all(score == 0 for score, _ in graded["scores"]["links_solution"][Q2].values())
    for name in NOTEBOOKS:
        problem = graded["problems"][("links_folder", name)]
        assert not problem["graded"] and "symbolic link" in problem["reason"], problem
        cells = graded["scores"].get("links_folder", {}).get(name, {})
        assert all(score == 0 for score, _ in cells.values()), cells
    assert not (graded["course"] / "autograded" / "links_folder" / ASSIGNMENT / f"{Q2}.ipynb").exists()


def test_the_class_report_counts_only_the_checks_own_messages(graded: dict) -> None:
    """Ids a student raises in a cell of their own, or from a function a check calls, are not the checks' messages."""
    assert graded["report"].returncode == 0, graded["report"].stdout[-2000:] + graded["report"].stderr[-2000:]
    path = graded["course"] / "reports" / ASSIGNMENT / "misconceptions.csv"
    with path.open(encoding="utf-8", newline="") as fh:
        rows = {row["id"]: row for row in csv.DictReader(fh)}
    for planted in PLANTED:
        assert rows[planted]["students"] == "0", rows[planted]
    # the checks' own messages are still counted: the control's wrong (a) is one of them
    assert any(mid.startswith("q2.a") and int(row["students"]) > 0 for mid, row in rows.items()), rows
    # the planted function fails its check, as it should
    assert graded["scores"]["misleads_report"][Q2]["q2_b_test"][0] == 0


def test_without_a_sandbox_the_command_refuses_unless_unsafe(graded: dict) -> None:
    course = graded["course"]
    only = ["--student=reference", f"--notebook={Q2}", "--force"]
    refused = grading_command(course, "autograde", ASSIGNMENT, "--bwrap", str(course / "no-bwrap"), *only)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "--unsafe" in refused.stderr, refused.stderr
    assert "bubblewrap" in refused.stderr and refused.stdout == ""
    unsafe = grading_command(
        course, "autograde", ASSIGNMENT, "--bwrap", str(course / "no-bwrap"), "--unsafe", "--workers", "1", *only
    )
    assert "Graded 1 notebooks" in unsafe.stdout, unsafe.stdout + unsafe.stderr
    assert f"[1/1] reference / {Q2}: graded" in unsafe.stderr and unsafe.stderr.count("--unsafe") == 1
    cells = gradebook_scores(course)["reference"][Q2]
    assert all(score == top for score, top in cells.values())


def _task(code: str, **limits: int) -> Task:
    """A one-cell notebook to execute in the sandbox, with nbgrader's configuration and the given limits."""
    nb = new_notebook(cells=[new_code_cell(code)])
    config = (("nbgrader_config.py", (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")),)
    cli = {"Execute": {"timeout": 60}}
    return Task("ada", ASSIGNMENT, "probe", nbformat.writes(nb), {}, config, cli, default_bwrap(), Limits(**limits))


def test_a_notebook_that_hangs_or_spins_is_stopped_at_its_limit() -> None:
    slept = execute(_task("import time\nfor _ in range(120):\n    time.sleep(0.5)", wall=2))
    assert slept.executed is None and "ran for more than 2 s (--wall)" in str(slept.error), slept
    assert slept.seconds < 30
    spun = execute(_task("while True:\n    pass", cpu=1))
    assert spun.executed is None and "CPU time limit (1, --cpu)" in str(spun.error), spun


def test_the_sandbox_never_binds_the_whole_machine_or_a_folder_holding_its_own(tmp_path: Path) -> None:
    """An interpreter named /bin/python3 has / as its install folder by name; one installed above the grader's
    temporary folders would show them (and every other notebook's) to the kernel."""
    work, ipc = tmp_path / "work", tmp_path / "ipc"
    argv = command(
        "bwrap", ["/bin/python3", "-m", "ipykernel_launcher"], work=work, ipc=ipc, limits=Limits(), uid=0, env={}
    )
    binds = [argv[i + 1] for i, arg in enumerate(argv) if arg in ("--ro-bind", "--bind")]
    assert "/" not in binds, binds
    python = tmp_path / "bin" / "python3"
    with pytest.raises(ValueError, match="holds the grader's temporary folders"):
        command("bwrap", [str(python), "-m", "ipykernel_launcher"], work=work, ipc=ipc, limits=Limits(), uid=0, env={})
