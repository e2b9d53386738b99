"""Kernels forked from a warm parent (grading.forked, grading.zygote) are the kernels of a cold start, only sooner.

Each test runs notebooks through ``grading.execute.execute`` in this process, so that they share one
zygote as a worker's notebooks do: what a notebook leaves behind must not reach the next, and a
forked kernel must see exactly what a kernel started from scratch in the same sandbox sees.
"""

from __future__ import annotations

import json
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

import grading.execute
import grading.kernel
import grading.zygote
from grading.execute import Task, execute
from grading.forked import ZygoteError
from grading.sandbox import default_bwrap, probe

pytestmark = pytest.mark.skipif(probe(default_bwrap()) is not None, reason="no sandbox on this machine")

# What a kernel can see of itself and its surroundings (/proc is not mounted in the sandbox).
LOOK = """
import json, os, resource, sys
print(json.dumps({
    "warm": "numpy" in sys.modules,
    "pid": os.getpid(),
    "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())],
    "cwd": os.getcwd(),
    "root": sorted(os.listdir("/")),
    "tmp": sorted(os.listdir("/tmp")),
    "env": dict(os.environ),
    "limits": {name: resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")},
    "argv": sys.argv,
    # a session of its own (or the sandbox's): no controlling terminal of the grader's to type into
    "own_session": os.getsid(0) in (1, os.getpid()),
    # its children's exits are its own to collect
    "exit_codes": sorted({__import__("subprocess").run(["sh", "-c", "exit 3"]).returncode for _ in range(20)}),
    "path": sys.path,
}))
"""

# What one notebook might leave for the next: files, a process, state in shared modules.
LEAVE = """
import builtins, subprocess, sys
import numpy
open("/tmp/left.txt", "w").write("left")
numpy.left = builtins.left = "left"
sys.modules["left"] = sys
sleeper = subprocess.Popen(["sleep", "60"])
print(sleeper.pid)
"""

FIND = """
import builtins, os, sys
import numpy
found = [os.path.exists("/tmp/left.txt"), hasattr(numpy, "left"), hasattr(builtins, "left"), "left" in sys.modules]
print(found, numpy.random.rand())
"""


def _run(code: str, warm: bool = True) -> str:
    nb = new_notebook(cells=[new_code_cell(code)])
    task = Task(
        "ada",
        "hw",
        "nb",
        nbformat.writes(nb),
        files={},
        config_files=(),
        cli_config={},
        bwrap=default_bwrap(),
        warm=warm,
    )
    outcome = execute(task)
    assert outcome.error is None, outcome.error
    outputs = json.loads(outcome.executed or "{}")["cells"][0]["outputs"]
    assert [o["output_type"] for o in outputs] == ["stream"], outputs
    text = outputs[0]["text"]
    return "".join(text) if isinstance(text, list) else str(text)


def test_a_forked_kernel_sees_what_a_kernel_started_from_scratch_sees() -> None:
    # each notebook has a temporary folder of its own: its name is all that may differ
    warm, cold = (json.loads(re.sub(r"grading-\w+", "grading-*", _run(LOOK, warm=w))) for w in (True, False))
    assert warm.pop("warm") is True and cold.pop("warm") is False  # the first ran in a kernel forked warm
    assert warm.pop("pid") <= 4 and cold.pop("pid") <= 4  # alone in a PID namespace of its own
    assert warm.pop("argv")[1:] == cold.pop("argv")[1:]  # the kernel's arguments (argv[0] is how it was started)
    assert warm.pop("path")[1:] == cold.pop("path")[1:]
    assert warm == cold
    assert warm["own_session"] is True and warm["exit_codes"] == [3]


def test_a_forked_kernel_holds_no_capability() -> None:
    code = (
        "import os\n"
        "for attempt in (lambda: os.setuid(0), lambda: os.chroot('/'), lambda: os.mknod('/tmp/null', 0o20666, 259)):\n"
        "    try:\n"
        "        attempt()\n"
        "        print('allowed')\n"
        "    except OSError as err:\n"
        "        print(err.errno)\n"
    )
    refused = _run(code).split()
    assert "allowed" not in refused and refused[1:] == ["1", "1"], refused  # setuid: EPERM, or EINVAL (0 not mapped)


def test_nothing_one_notebook_leaves_reaches_the_next() -> None:
    _run(LEAVE)
    first, second = _run(FIND), _run(FIND)
    assert first.startswith("[False, False, False, False]"), first
    assert first.split()[-1] != second.split()[-1]  # each kernel draws its own random numbers


def test_a_kernel_is_started_from_scratch_when_the_zygote_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object) -> None:
        raise ZygoteError("no zygote here")

    monkeypatch.setattr(grading.kernel, "zygote_for", broken)
    assert json.loads(_run(LOOK))["warm"] is False


def test_an_answer_never_reaches_the_wrong_notebook(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork that outlives its time-out leaves its answer queued: that zygote is given up, not asked again."""
    import os
    import sys

    import grading.forked

    zygote = grading.forked.Zygote(sys.executable, {"PATH": "/usr/bin:/bin"})
    request = {"target": 1 << 30, "userns": False, "cgroups": [], "cwd": "/", "uid": 0, "rlimits": [], "env": {}}
    read, write = os.pipe()
    try:
        # the time-out passes before the answer comes, however fast the zygote is: the answer is never ready
        monkeypatch.setattr(grading.forked.select, "select", lambda *_: ([], [], []))
        with pytest.raises(ZygoteError, match="did not answer"):
            zygote.fork({**request, "argv": ["late"]}, write)
        assert not zygote.alive()
    finally:
        zygote.close()
        os.close(read)
        os.close(write)
    # and each answer names the request it answers
    assert grading.zygote.serial_of(b'{"serial": 7}') == 7 and grading.zygote.serial_of(b"not json") is None
