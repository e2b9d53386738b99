"""The grading package's small parts: problem list, progress, report tables, task transport, docstrings."""

from __future__ import annotations

import asyncio
import doctest
import io
import json
import os
import pickle
import queue
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import cloudpickle
import pytest

import grading.execute
import grading.executor
import grading.in_kernel
import grading.judge
import grading.judged
import grading.kernel
import grading.land
import grading.limits
import grading.plan
import grading.preflight
import grading.private_api
import grading.problems
import grading.progress
import grading.relay
import grading.report
import grading.roles
import grading.room
import grading.sample
import grading.sandbox
import grading.snapshot
import grading.submission
import grading.tasks
from grading.cli import main
from grading.cluster import _Call
from grading.problems import Problem, load, merge, problems_path, save
from grading.progress import Progress
from grading.report import ClassResults, misconception_rows, score_rows
from grading.sandbox import Limits, command, sizes


@pytest.mark.parametrize(
    "module",
    [
        grading.execute,
        grading.executor,
        grading.limits,
        grading.private_api,
        grading.roles,
        grading.tasks,
        grading.snapshot,
        grading.preflight,
        grading.judged,
        grading.problems,
        grading.progress,
        grading.report,
        grading.sample,
        grading.sandbox,
        grading.in_kernel,
        grading.judge,
        grading.land,
        grading.plan,
        grading.relay,
        grading.submission,
    ],
)
def test_docstring_examples(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]
    assert result.attempted > 0 and result.failed == 0


def test_a_problem_is_printable_whatever_the_student_named_or_wrote() -> None:
    problem = Problem("ada", "\x1b[31mred", "NBFormatError: Unsupported nbformat version \x1b[2J\x07", graded=False)
    assert problem.line() == "ada / \\x1b[31mred: not graded: NBFormatError: Unsupported nbformat version \\x1b[2J\\x07"
    assert Problem("ada", "notes.html", "left out", graded=False, file=True).line() == "ada / notes.html: left out"
    assert len(Problem("ada", "q1", "x" * 10_000, graded=True).reason) == 500


def test_problem_list_round_trip_and_merge(tmp_path: Path) -> None:
    path = problems_path(tmp_path, "hw1")
    old = [Problem("ada", "q1", "time-out", graded=True), Problem("bob", "q2", "not JSON", graded=False)]
    save(path, old)
    assert load(path) == sorted(old, key=lambda p: p.student)
    # ada's q1 was graded again without trouble: dropped; bob's q2 was not graded again: kept
    new = [Problem("cy", "q3", "kernel died", graded=True)]
    assert merge(load(path), new, regraded={("ada", "q1")}) == [old[1], new[0]]
    assert load(tmp_path / "missing.json") == []


def test_progress_lines_without_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(total=3, stream=stream)
    progress.advance("ada", "q1", "graded")
    progress.advance("bob", "q2", "not graded: bad JSON")
    assert stream.getvalue().splitlines() == ["[1/3] ada / q1: graded", "[2/3] bob / q2: not graded: bad JSON"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal() -> None:
    stream = _Terminal()
    progress = Progress(total=4, stream=stream)
    progress.advance("ada", "q1", "graded")
    progress.close()
    text = stream.getvalue()
    assert "1/4" in text and "notebook" in text and "<" in text  # count and time left (elapsed<remaining)


def test_one_line_reason() -> None:
    assert grading.execute.one_line(RuntimeError("")) == "RuntimeError"
    assert grading.execute.one_line(OSError("disk full\ntrace")) == "OSError: disk full"


def test_calls_travel_by_value() -> None:
    blob = cloudpickle.dumps(_Call(divmod, 17, 5))
    assert pickle.loads(blob) == (3, 2)


def _results() -> ClassResults:
    results = ClassResults(students=["ada", "bob", "cy"])
    results.max_points = {("q1_x", "q1_a_test"): 2.0}
    results.scores = defaultdict(dict, {("q1_x", "q1_a_test"): {"ada": 2.0, "bob": 0.0, "cy": None}})
    results.graded = defaultdict(set, {"q1_x": {"ada", "bob"}})
    results.hits = defaultdict(set, {"q1.two-bytes": {"bob"}, "q9.unknown": {"ada", "bob"}})
    results.catalogue = {
        "q1.two-bytes": {"id": "q1.two-bytes", "question": "1", "part": "a", "en": "int8 is 1 byte"},
        "q1.never": {"id": "q1.never", "question": "1", "part": "b", "en": "never seen"},
    }
    return results


def test_score_distribution_rows() -> None:
    rows = score_rows(_results())
    assert [(r["score"], r["students"]) for r in rows] == [("2", 1), ("0", 1), ("not graded", 1)]


def test_misconception_rows_count_students_out_of_those_graded() -> None:
    rows = {r["id"]: r for r in misconception_rows(_results())}
    assert (rows["q1.two-bytes"]["students"], rows["q1.two-bytes"]["of"]) == (1, 2)  # q1_x graded for ada, bob
    assert rows["q1.never"]["students"] == 0
    assert rows["q9.unknown"]["message"] == "(not in the catalogue)" and rows["q9.unknown"]["of"] == 3


def test_figure_is_written(tmp_path: Path) -> None:
    results = _results()
    grading.report.figure(results, misconception_rows(results), tmp_path / "report.png")
    assert (tmp_path / "report.png").read_bytes().startswith(b"\x89PNG")


def test_bad_worker_count_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["autograde", "hw1", "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err


def test_bad_limits_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["autograde", "hw1", "--memory", "lots"]) == 2
    assert "512M or 2G" in capsys.readouterr().err
    assert main(["autograde", "hw1", "--procs", "0"]) == 2
    assert "--procs must be at least 1" in capsys.readouterr().err
    assert sizes("1.5G") == 3 << 29 and sizes("64m") == 64 << 20 and sizes("4096") == 4096
    with pytest.raises(ValueError, match="more than 0"):
        sizes("-1M")


def test_sandbox_binds_nothing_of_the_course(tmp_path: Path) -> None:
    work, ipc = tmp_path / "work", tmp_path / "ipc"
    argv = command(
        "/usr/bin/bwrap",
        [sys.executable, "-m", "ipykernel_launcher", "-f", str(ipc / "k.json")],
        work=work,
        ipc=ipc,
        limits=Limits(),
        uid=0,
        env={"SECRET_TOKEN": "x", "ROOFLINE_LANG": "ko", "MPLBACKEND": "Agg"},
    )
    binds = {(arg, argv[i + 1]) for i, arg in enumerate(argv) if arg in {"--bind", "--ro-bind"}}
    assert ("--bind", str(work)) in binds and ("--bind", str(ipc)) in binds
    # the only writable folders: the kernel's working folder and its sockets (its /tmp is a tmpfs of its own)
    assert sorted(path for how, path in binds if how == "--bind") == sorted([str(ipc), str(work)])
    root = Path(__file__).resolve().parents[1]
    # of the course, only its environment and the package folders of its editable installs (make setup's
    # rooflinelib), never the project around them: not solutions/, not gradebook.db
    packages = {str(root / "rooflinelib"), str(root / "grading")}
    for _, path in binds:
        inside = Path(path).is_relative_to(root)
        assert not inside or Path(path).is_relative_to(root / ".venv") or path in packages, path
    assert str(root) not in {path for _, path in binds}
    assert "--die-with-parent" in argv and "--new-session" in argv and "--clearenv" in argv
    assert {"--unshare-net", "--unshare-all"} & set(argv) and "--share-net" not in argv
    passed = {argv[i + 1] for i, arg in enumerate(argv) if arg == "--setenv"}
    assert {"ROOFLINE_LANG", "MPLBACKEND"} <= passed and "SECRET_TOKEN" not in passed


def test_a_reply_is_read_by_a_strict_decoder_whose_cost_is_bounded_by_its_length() -> None:
    """A reply is JSON, never Python: a list literal (which ``ast.literal_eval`` turned into a syntax tree of
    hundreds of bytes per item) is refused before any parsing, and so is a reply of too many lists."""
    import tracemalloc

    from grading.judge import parse_reply

    bomb = "[" + "0," * 500_000 + "0]"  # 1 MB
    nested = '{"ok": ["l", [' + ",".join(["[]"] * 1_100_000) + "]]}"  # 3.3 MB, 1.1 million lists
    tracemalloc.start()
    try:
        assert parse_reply(bomb, 16 << 20) is None
        assert parse_reply(repr(bomb), 16 << 20) is None
        assert parse_reply(nested, 16 << 20) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"parsing refused replies took {peak >> 20} MB"
    assert parse_reply('{"ok": ["a", "float", [1], "AAAAAAAA8D8="]}', 100) == {
        "ok": ["a", "float", [1], "AAAAAAAA8D8="]
    }
    assert parse_reply('{"ok": ["i", 1]}', 10) is None  # longer than its limit


def test_what_a_reply_costs_to_parse_is_what_it_weighs() -> None:
    """Parsed, a list of numbers takes some 40 bytes a number, ten times its text: the judge's meter weighs each
    comma, so 64M of replies cannot become 640 MB in the grader; base64 bytes (how values travel) weigh as they are."""
    honest = grading.relay.Meter(0, lambda: None, grading.relay.DATA)
    honest.add(b'{"ok": ["a", "float", [3], "AAAAAAAA8D8AAAAAAAAAQAAAAAAAAAhA"]}')
    assert honest.count < 2 * 61 + 4 * 64 + 4 * 32  # 61 bytes, two objects and lists, four commas
    numbers = b'{"ok": [' + b"1.5," * 100_000 + b"1.5]}"
    tripped: list[bool] = []
    meter = grading.relay.Meter(1 << 20, lambda: tripped.append(True), grading.relay.DATA)
    assert not meter.add(numbers) and tripped == [True]  # 400 kB of text weighs 3.6 MB
    assert meter.count >= 32 * 100_000


def _relay_pair(tmp_path: Path, limit: int) -> tuple:
    """A ZeroMQ PUB socket standing for a kernel's IOPub, a relay before it, and a SUB socket of the grader's."""
    import zmq

    kernel, tripped = str(tmp_path / "kernel"), []
    meter = grading.relay.Meter(limit, lambda: tripped.append(True))
    relay = grading.relay.Relay(tmp_path / "relay", kernel, {"out": meter})
    relay.listen([1])
    context = zmq.Context()
    pub = context.socket(zmq.PUB)
    pub.bind(f"ipc://{kernel}-1")
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(f"ipc://{relay.prefix('out')}-1")
    return context, pub, sub, relay, meter, tripped


def _subscribed(pub: object, sub: object) -> None:
    """Wait until the subscription has reached the publisher (a PUB socket drops what no one subscribed to)."""
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pub.send(b"ping")  # type: ignore[attr-defined]
        if sub.poll(100):  # type: ignore[attr-defined]
            while sub.poll(100):  # type: ignore[attr-defined]
                sub.recv_multipart()  # type: ignore[attr-defined]
            return
    raise AssertionError("the subscriber never connected through the relay")


def test_the_relay_counts_what_a_kernel_sends_before_zeromq_takes_it_in(tmp_path: Path) -> None:
    """ZeroMQ takes in every part of a message before anyone can look at it: one message of 40 parts of 1 MB (each
    part under any per-part limit) reached the grader whole. Through the relay, the grader's side takes in no more
    than the limit: the meter trips, the notebook is stopped, and the message never arrives."""
    context, pub, sub, relay, meter, tripped = _relay_pair(tmp_path, 8 << 20)
    try:
        _subscribed(pub, sub)
        part = b"x" * (1 << 20)
        for _ in range(40):
            pub.send(part, copy=False, flags=2)  # zmq.SNDMORE
        pub.send(b"end")
        assert not sub.poll(3000), "the 40 MB message reached the grader"
        assert tripped == [True]
        assert meter.count <= (8 << 20) + grading.relay.BUFFER + 2 * grading.relay.CHUNK
    finally:
        relay.close()
        context.destroy(linger=0)


def test_the_relay_passes_an_honest_conversation_and_weighs_json(tmp_path: Path) -> None:
    context, pub, sub, relay, meter, tripped = _relay_pair(tmp_path, 1 << 20)
    try:
        _subscribed(pub, sub)
        before = meter.count
        pub.send_multipart([b"header", b'{"a": [1, 2]}'])
        assert sub.poll(5000) and sub.recv_multipart() == [b"header", b'{"a": [1, 2]}']
        assert not tripped
        # 6 bytes of header, 13 of content, each frame's flags and length (4); a "{" and a "[" weigh 256 each, and
        # each of the two parts its PART more
        assert meter.count - before == 6 + 13 + 4 + 2 * 255 + 2 * grading.relay.PART
    finally:
        relay.close()
        context.destroy(linger=0)
    assert not (tmp_path / "relay").exists()


def _folder(tmp_path: Path) -> Path:
    """submitted/eve/hw1 holding a notebook, an honest extra file in a folder, and everything that must not be read."""
    folder = tmp_path / "submitted" / "eve" / "hw1"
    (folder / "data").mkdir(parents=True)
    (folder / "q1.ipynb").write_text("{}")
    (folder / "data" / "points.csv").write_text("1,2\n")
    (folder / "q2.ipynb").symlink_to(tmp_path / "solution.ipynb")
    (tmp_path / "solution.ipynb").write_text('{"the": "answers"}')
    (folder / "shadow").symlink_to("/etc/shadow")
    (folder / "zero.bin").symlink_to("/dev/zero")
    (folder / "etc").symlink_to("/etc")
    os.mkfifo(folder / "pipe")
    with (folder / "huge.bin").open("wb") as fh:  # sparse: no disk used
        fh.truncate(grading.submission.MAX_FILE + 1)
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"ignored")
    (folder / "q3.ipynb").mkdir()  # a folder where a notebook should be: nbgrader copies nothing it holds
    (folder / "q3.ipynb" / "inside.txt").write_text("x")
    return folder


def test_a_submission_is_read_without_following_links_within_a_size_cap(tmp_path: Path) -> None:
    _folder(tmp_path)
    read = grading.submission.read_submission(
        tmp_path / "submitted", ["eve", "hw1"], notebooks={"q1.ipynb", "q2.ipynb", "q3.ipynb"}, ignore=["__pycache__"]
    )
    assert read.files == {"q1.ipynb": b"{}", "data/points.csv": b"1,2\n"}
    link = grading.submission.LINK
    assert read.left_out == {
        "q2.ipynb": link,
        "shadow": link,
        "zero.bin": link,
        "etc": link,
        "pipe": "not a regular file (a FIFO)",
        "huge.bin": "larger than 32M, the most a submitted file may hold",
        "q3.ipynb": "a folder, not a notebook",
    }
    # a folder that is itself a link is not read at all, nor a student folder that is one
    (tmp_path / "submitted" / "mallory").mkdir()
    (tmp_path / "submitted" / "mallory" / "hw1").symlink_to(tmp_path / "submitted" / "eve" / "hw1")
    (tmp_path / "submitted" / "trudy").symlink_to(tmp_path / "submitted" / "eve")
    for parts in (["mallory", "hw1"], ["trudy", "hw1"]):
        with pytest.raises(grading.submission.SubmissionError, match="symbolic link"):
            grading.submission.read_submission(tmp_path / "submitted", parts)
    assert grading.submission.read_file(tmp_path / "submitted", ["eve", "hw1"], "zero.bin", 100) is None
    assert grading.submission.read_file(tmp_path / "submitted", ["trudy", "hw1"], "q1.ipynb", 100) is None
    assert grading.submission.read_file(tmp_path / "submitted", ["eve", "hw1"], "q1.ipynb", 100) == b"{}"


def test_a_submission_of_too_many_or_too_deep_files_is_read_up_to_its_caps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / "deep" / "hw1"
    deep.joinpath(*["d"] * 20).mkdir(parents=True)
    read = grading.submission.read_submission(tmp_path / "deep", ["hw1"])
    assert list(read.left_out.values()) == ["nested more than 16 folders deep"]
    monkeypatch.setattr(grading.submission, "MAX_ENTRIES", 5)
    monkeypatch.setattr(grading.submission, "MAX_TOTAL", 10)
    folder = tmp_path / "many" / "hw1"
    folder.mkdir(parents=True)
    for n in range(6):
        (folder / f"f{n}").write_bytes(b"1234")
    read = grading.submission.read_submission(tmp_path / "many", ["hw1"])
    assert read.files == {"f0": b"1234", "f1": b"1234"}
    assert read.left_out == {
        "f2": "over the 10 bytes a submission's files may hold together",
        "f3": "over the 10 bytes a submission's files may hold together",
        "f4": "over the 10 bytes a submission's files may hold together",
        "f5": "beyond the first 5 files and folders of the submission",
    }


def test_links_left_in_the_graders_folder_are_removed_without_being_followed(tmp_path: Path) -> None:
    target = tmp_path / "gradebook.db"
    target.write_bytes(b"SQLite")
    dest = tmp_path / "autograded" / "eve" / "hw1"
    dest.mkdir(parents=True)
    (dest / "feedback.py").write_text("x")
    (dest / "grades.db").symlink_to(target)
    (dest / "etc").symlink_to("/etc")
    os.mkfifo(dest / "pipe")
    assert sorted(grading.submission.remove_links(dest)) == ["etc", "grades.db", "pipe"]
    assert sorted(p.name for p in dest.iterdir()) == ["feedback.py"] and target.read_bytes() == b"SQLite"


def test_the_report_counts_only_a_checks_own_failed_assertion() -> None:
    """A student's own cell, or the student's function raising inside a check, cannot add a row to the report."""
    from nbformat.v4 import new_code_cell, new_notebook

    from grading.judge import Judge
    from grading.report import check_messages

    def ask(request: dict) -> dict:
        if request["op"] == "resolve":
            return {"names": {"f": ["fn"]}}
        return {"raised": ["AssertionError", "[q3.a.wrong] planted"]}

    judge = Judge(ask, {})
    planted = judge.check("f(1)")
    own = judge.check("assert False, '[q1.a.wrong] the check'")
    meta = {"nbgrader": {"grade_id": "t", "grade": True, "locked": True}}
    cells = [
        new_code_cell(outputs=planted, metadata=meta),
        new_code_cell(outputs=own, metadata=meta),
        new_code_cell(outputs=own),  # the same text in a cell of the student's own
    ]
    assert planted[0]["evalue"] == "[q3.a.wrong] planted"  # shown to the student as their own error
    assert check_messages(new_notebook(cells=cells)) == {"q1.a.wrong"}


def test_the_grading_task_travels_by_value() -> None:
    """A worker needs none of this package: the task, its code and every module it uses pickle by value."""
    from grading.cluster import _by_value
    from grading.execute import Task, run_task

    _by_value()
    blob = cloudpickle.dumps(_Call(run_task, Task("ada", "a", "nb", "{}", {}, (), {})))
    assert b"grading.room" in blob or b"Room" in blob
    assert len(blob) > 10_000  # the code itself, not a reference to it


@pytest.fixture
def alembic_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """nbgrader creates a new gradebook by running ``alembic``, installed beside this Python."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")


def _gradebook(path: Path) -> str:
    """A gradebook with one assignment, one notebook of two one-point checks, and ada's submission."""
    from nbgrader.api import Gradebook

    db_url = f"sqlite:///{path}"
    with Gradebook(db_url) as gb:
        gb.update_or_create_assignment("hw")
        gb.update_or_create_notebook("nb", "hw")
        for name in ("t1", "t2"):
            gb.update_or_create_grade_cell(name, "nb", "hw", max_score=1, cell_type="code")
        gb.update_or_create_student("ada")
        with warnings.catch_warnings():  # nbgrader's add_submission trips SQLAlchemy's autoflush warning
            warnings.simplefilter("ignore")
            gb.add_submission("hw", "ada")
    return db_url


def _executed(*checks: tuple[str, bool]) -> object:
    """A notebook of check cells, each passed or failed (an error output)."""
    import nbformat

    cells = []
    for grade_id, passed in checks:
        cell = nbformat.v4.new_code_cell("assert True", execution_count=1)
        cell.metadata["nbgrader"] = {
            "grade": True,
            "solution": False,
            "locked": True,
            "grade_id": grade_id,
            "points": 1,
        }
        if not passed:
            cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=[])]
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


def _scores(db_url: str) -> dict[str, tuple[object, object]]:
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        grades = gb.find_submission_notebook("nb", "hw", "ada").grades
        return {g.name: (g.auto_score, g.needs_manual_grade) for g in grades}


@pytest.mark.usefixtures("alembic_on_path")
def test_grades_saved_in_one_transaction_equal_nbgraders(tmp_path: Path) -> None:
    from nbgrader.preprocessors import SaveAutoGrades

    resources = {"notebook": "nb", "assignment": "hw", "student": "ada"}
    saved = {}
    for pp in (SaveAutoGrades, grading.plan.SaveAutoGradesOnce):
        db_url = _gradebook(tmp_path / f"{pp.__name__}.db")
        pp().preprocess(_executed(("t1", True), ("t2", False)), {"nbgrader": {**resources, "db_url": db_url}})
        saved[pp] = _scores(db_url)
    assert saved[SaveAutoGrades] == saved[grading.plan.SaveAutoGradesOnce] == {"t1": (1.0, False), "t2": (0.0, False)}


@pytest.mark.usefixtures("alembic_on_path")
def test_grades_of_a_notebook_that_fails_half_way_are_not_saved(tmp_path: Path) -> None:
    from nbgrader.api import MissingEntry

    db_url = _gradebook(tmp_path / "gradebook.db")
    before = _scores(db_url)
    broken = _executed(("t1", True), ("not-in-the-gradebook", True))  # the second check cannot be found
    with pytest.raises(MissingEntry):
        grading.plan.SaveAutoGradesOnce().preprocess(
            broken, {"nbgrader": {"notebook": "nb", "assignment": "hw", "student": "ada", "db_url": db_url}}
        )
    assert _scores(db_url) == before  # t1's score was not committed on its own


class _FakeChannel:
    """A kernel client's channel holding the messages it will hand out; ``None`` stands for a wait that times out."""

    def __init__(self, messages: list[dict | None]) -> None:
        self.messages, self.reads = messages, 0

    async def get_msg(self, timeout: float) -> dict:
        self.reads += 1
        message = self.messages.pop(0) if self.messages else None
        if message is None:
            raise queue.Empty
        return message


class _FakeClient:
    def __init__(self, shell: list[dict | None], iopub: list[dict | None], alive: bool = True) -> None:
        self.shell_channel, self.iopub_channel, self.alive = _FakeChannel(shell), _FakeChannel(iopub), alive
        self.asked, self.handled = 0, None

    def kernel_info(self) -> None:
        self.asked += 1

    async def is_alive(self) -> bool:
        return self.alive

    def _handle_kernel_info_reply(self, msg: dict) -> None:
        self.handled = msg


def test_a_new_kernel_is_ready_once_it_answers_without_listening_on() -> None:
    reply, status = {"msg_type": "kernel_info_reply"}, {"msg_type": "status"}
    ready = grading.kernel.ready_at_once(_FakeClient)
    # answered, IOPub connected: ready after one read of IOPub (jupyter_client would listen 0.2 s more)
    client = ready([reply], [status, status, status])
    asyncio.run(client.wait_for_ready(5))
    assert (client.asked, client.iopub_channel.reads, client.handled) == (1, 1, reply)
    # IOPub not connected yet: the kernel is asked again
    client = ready([reply, reply], [None, status])
    asyncio.run(client.wait_for_ready(5))
    assert (client.asked, client.iopub_channel.reads, client.handled) == (2, 2, reply)
    # another message on the shell channel first: the kernel is asked again
    client = ready([{"msg_type": "execute_reply"}, reply], [status])
    asyncio.run(client.wait_for_ready(5))
    assert (client.asked, client.handled) == (2, reply)
    # no answer from a dead kernel, or none in time from a live one
    client = ready([None], [], alive=False)
    with pytest.raises(RuntimeError, match="died"):
        asyncio.run(client.wait_for_ready(5))
    client = ready([None, None], [])
    with pytest.raises(RuntimeError, match="respond"):
        asyncio.run(client.wait_for_ready(0))
    assert client.asked == 1
    # wrapped once only
    assert grading.kernel.ready_at_once(ready) is ready


_GREETING = b"\xff" + bytes(8) + b"\x7f\x03\x01NULL" + bytes(16) + b"\x00" + bytes(31)  # ZMTP 3.1, NULL


def _frames(parts: list[bytes]) -> bytes:
    """ZMTP 3 frames (short and long) holding ``parts``, one message."""
    out = b""
    for i, part in enumerate(parts):
        more = int(i < len(parts) - 1)
        size = len(part).to_bytes(1 if len(part) < 256 else 8, "big")
        out += bytes([more | (2 if len(size) == 8 else 0)]) + size + part
    return out


def _weight_byte_by_byte(parts: list[bytes], weights: dict[bytes, int]) -> int:
    """What JSON texts weigh, walking each one byte by byte: brackets and commas outside strings."""
    total = 0
    for part in parts:
        total += grading.relay.PART
        in_string = escaped = False
        for byte in part:
            char = bytes([byte])
            if in_string:
                escaped, in_string = (False, True) if escaped else (char == b"\\", char != b'"')
            elif char == b'"':
                in_string = True
            else:
                total += weights.get(char, 1) - 1
    return total


def test_only_json_outside_strings_weighs_however_the_bytes_are_split() -> None:
    """Printed brackets are text (one byte each); JSON's own brackets weigh what they cost, and splitting the bytes
    at any point (chunks of the relay, parts of a message) changes nothing."""
    import random

    rng = random.Random(7)
    for _ in range(400):
        parts = [
            bytes(rng.choice(b'[]{},:"\\a1 ') for _ in range(rng.randint(0, 400))) for _ in range(rng.randint(1, 4))
        ]
        stream = _GREETING + _frames(parts)
        for weights in (grading.relay.OUTPUT, grading.relay.DATA):
            scanner, pos, total = grading.relay.Scanner(weights), 0, 0
            while pos < len(stream):
                step = rng.randint(1, 50)
                total += scanner.feed(stream[pos : pos + step])
                pos += step
            assert total == len(stream) + _weight_byte_by_byte(parts, weights), parts
    printed = json.dumps({"name": "stdout", "text": str([[b, 2 * b] for b in range(1, 70_000)])}).encode()
    scanner = grading.relay.Scanner(grading.relay.OUTPUT)
    stream = _GREETING + _frames([printed])
    assert sum(scanner.feed(stream[i : i + 4096]) for i in range(0, len(stream), 4096)) < len(stream) + 1000
    # a part that ends inside a string does not hide the next part's lists
    hidden = _GREETING + _frames([b'"open', b"[" * 1000])
    assert grading.relay.Scanner(grading.relay.OUTPUT).feed(hidden) >= 1000 * 256


def test_a_library_at_a_version_the_grader_was_not_checked_with_stops_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grading.private_api, "_checked", False)
    monkeypatch.setitem(grading.private_api.CHECKED, "nbclient", ("0.1", "0.2.0"))
    with pytest.raises(
        grading.private_api.UncheckedVersion, match=r"nbclient 0\.\d+\.\d+ is installed; .* 0\.1 to 0\.2"
    ):
        grading.private_api.check_versions()
    assert not grading.private_api._checked


def test_a_private_name_gone_from_a_library_stops_the_grader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grading.private_api, "_checked", False)
    used = [*grading.private_api.USED["nbclient"], ("nbclient.client", "NotebookClient", "_gone_in_this_version")]
    monkeypatch.setitem(grading.private_api.USED, "nbclient", used)
    with pytest.raises(grading.private_api.UncheckedVersion, match="lacks nbclient.client.NotebookClient._gone_in"):
        grading.private_api.check_versions()
