"""The grading pipeline around the judge: where set-up cells run, and the files a notebook reads and writes.

Each case runs a small notebook in the sandbox (``grading.execute.execute``), as the grading command's workers do.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from grading_support import ROOT

from grading.execute import Task, execute
from grading.sandbox import Limits, default_bwrap, probe

pytestmark = pytest.mark.skipif(probe(default_bwrap()) is not None, reason="no sandbox on this machine")

CONFIG = (("nbgrader_config.py", (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")),)


def _cell(source: str, grade_id: str | None = None, *, role: str = "kernel", points: int = 1) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if role != "kernel":
        meta = {"grade_id": grade_id, "locked": True, "schema_version": 3, "solution": False, "task": False}
        meta["grade"] = role == "check"
        if role == "check":
            meta["points"] = points
        cell.metadata["nbgrader"] = meta
    return cell


def _run(cells: list[nbformat.NotebookNode], **task: object) -> dict[str, list]:
    """Execute a notebook of ``cells``; the outputs of each graded check, by grade id."""
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    defaults: dict = {"files": {}, "config_files": CONFIG, "cli_config": {"Execute": {"timeout": 30}}}
    defaults.update(task)
    outcome = execute(Task("ada", "hw", "nb", nbformat.writes(nb), bwrap=default_bwrap(), **defaults))  # type: ignore[arg-type]
    assert outcome.error is None and outcome.executed, outcome
    executed = nbformat.reads(outcome.executed, as_version=4)
    return {
        c.metadata["nbgrader"]["grade_id"]: c.outputs
        for c in executed.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    }


def _failed(outputs: dict[str, list]) -> dict[str, str]:
    return {gid: o["evalue"] for gid, outs in outputs.items() for o in outs if o["output_type"] == "error"}


SETUPS = (("s1", "LIMIT = 1"), ("s2", "LIMIT = 2"))
ORDER = ("s1", "c1", "s2", "c2")


def test_a_set_up_cell_runs_in_the_judge_at_its_place_among_the_checks() -> None:
    """The kernel sees ``LIMIT = 1`` at the first check and ``LIMIT = 2`` at the second; so must the judge."""
    cells = [
        _cell("LIMIT = 1", "s1", role="setup"),
        _cell("assert LIMIT == 1, 'the first check sees the first value'", "c1", role="check"),
        _cell("LIMIT = 2", "s2", role="setup"),
        _cell("assert LIMIT == 2, 'the second check sees the second value'", "c2", role="check"),
    ]
    assert _failed(_run(cells, setups=SETUPS, order=ORDER)) == {}


def test_a_set_up_cell_the_submission_lacks_still_runs_before_the_checks_after_it() -> None:
    """A submission without the first set-up cell, binding the name itself, gets the instructor's value in the
    judge, at the instructor's place."""
    cells = [
        _cell("LIMIT = 99  # the student's own, in an added cell"),
        _cell("assert LIMIT == 1, 'the instructor s value'", "c1", role="check"),
        _cell("LIMIT = 2", "s2", role="setup"),
        _cell("assert LIMIT == 2, 'the second value'", "c2", role="check"),
    ]
    assert _failed(_run(cells, setups=SETUPS, order=ORDER)) == {}


SECRET = "the grader's own file"


def test_a_check_reads_the_files_the_answers_wrote_and_the_shipped_ones(tmp_path: Path) -> None:
    """The kernel's folder is writable; a check opening a file (``open``, ``np.loadtxt``) sees the folder as the
    kernel left it, the shipped files as the instructor shipped them."""
    cells = [
        _cell("with open('answers.txt', 'w') as fh:\n    fh.write('42')\nopen('data.csv', 'w').write('9,9\\n')"),
        _cell(
            "with open('answers.txt') as fh:\n    assert fh.read() == '42', 'written by the answer'", "c1", role="check"
        ),
        _cell(
            "import numpy as np\nassert np.loadtxt('data.csv', delimiter=',').tolist() == [1.0, 2.0], 'shipped'",
            "c2",
            role="check",
        ),
    ]
    outputs = _run(cells, files={"data.csv": b"1,2\n"})
    assert _failed(outputs) == {}


def test_a_check_never_reads_through_a_link_the_student_left(tmp_path: Path) -> None:
    """A link in the kernel's folder to a file of the grader's is not followed: the check finds no such file."""
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    secret.chmod(0o644)
    tmp_path.chmod(0o755)
    cells = [
        _cell(f"import os\nos.symlink({str(secret)!r}, 'answers.txt')\nos.symlink('/etc', 'conf')"),
        _cell(
            "import os\nfor name in ('answers.txt', 'conf/hostname'):\n"
            "    try:\n        with open(name) as fh:\n            print(name, fh.read())\n    except OSError as err:\n"
            "        print(name, type(err).__name__)\n"
            "try:\n    import student_module\nexcept ImportError:\n    print('no student module')\n"
            "print('cwd', os.getcwd())",
            "c1",
            role="check",
        ),
    ]
    here = os.getcwd()
    printed = "".join(o.get("text", "") for o in _run(cells)["c1"])
    assert SECRET not in printed and "answers.txt FileNotFoundError" in printed, printed
    assert "conf/hostname FileNotFoundError" in printed, printed
    assert "no student module" in printed and f"cwd {here}\n" not in printed, printed
    assert os.getcwd() == here


def test_a_module_the_student_wrote_is_never_imported_by_a_check() -> None:
    cells = [
        _cell("open('student_module.py', 'w').write('print(\"ran in the grader\")\\nVALUE = 1')"),
        _cell(
            "try:\n    import student_module\n    print('imported')\nexcept ImportError:\n    print('not imported')",
            "c1",
            role="check",
        ),
    ]
    printed = "".join(o.get("text", "") for o in _run(cells)["c1"])
    assert printed == "not imported\n", printed


def test_what_the_kernel_writes_in_its_folder_counts_against_the_file_size_limit() -> None:
    cells = [_cell("for n in range(4):\n    open(f'big{n}.bin', 'wb').write(bytes(600 << 10))")]
    nb = nbformat.v4.new_notebook(cells=cells)
    task = Task(
        "ada",
        "hw",
        "nb",
        nbformat.writes(nb),
        {},
        CONFIG,
        {"Execute": {"timeout": 30}},
        default_bwrap(),
        Limits(file_size=1 << 20),
    )
    outcome = execute(task)
    assert outcome.error is not None and "file size limit (1M, --file-size)" in outcome.error, outcome


def test_the_watchdog_counts_what_the_working_folder_grew_by_not_what_it_started_with(tmp_path: Path) -> None:
    """Without a tmpfs of its own (the watchdog), the working folder's files count from the kernel's start: 3M of
    shipped files are within a 1M budget; 2M more written are not."""
    import subprocess
    import sys

    from grading.room import Room

    limits = Limits(file_size=1 << 20)
    (tmp_path / "room").mkdir()
    with Room(limits, root=tmp_path / "room", mode="watchdog") as room:
        (room.work / "shipped.bin").write_bytes(bytes(3 << 20))
        quiet = subprocess.Popen(room.launcher([sys.executable, "-c", "print('ok')"]), stdout=subprocess.PIPE)
        room.watch(quiet.pid)
        quiet.communicate(timeout=60)
        assert room.reason is None
        code = f"open({str(room.work / 'written.bin')!r}, 'wb').write(bytes(2 << 20))"
        writer = subprocess.Popen(room.launcher([sys.executable, "-c", code]))
        room.watch(writer.pid)
        writer.wait(timeout=60)
        assert room.reason == "went over the file size limit (1M, --file-size)"
