"""Run a notebook's kernel alone, unprivileged, offline and bounded, under bubblewrap (``bwrap``).

What the kernel sees: a fresh root holding read-only ``/usr``, the Python install and
environment it runs from, its own working folder (writable: the notebook, the other files of
the submission and the assignment's shipped files, as ``nbgrader autograde`` lays them out),
a private ``/tmp`` of ``file_size`` bytes, and the one folder of IPC sockets it talks to the
grader through. What it writes in its working folder counts against ``file_size`` with its
``/tmp`` (:mod:`grading.room`). It has its own mount, PID, IPC, UTS and network namespaces
(no network at all) and a user of its own (below), no capabilities, cannot gain privileges,
and dies with the worker that started it.

The limits are set inside the sandbox, just before the kernel starts, so that they count
only what the kernel and its children do: address space (``memory``), CPU seconds
(``cpu``), processes and threads (``procs``) and the size of any file written
(``file_size``). Processes are only counted for a user that is not root, so a grader
running as root starts each kernel as a user id of its own (``uid_for_task``); a grader
running as a normal user gives each kernel a user namespace of its own, in which the count
starts from zero. ``output``, ``data`` and ``wall`` are enforced by the grader (:mod:`grading.execute`).

Example
-------
>>> args = sandbox_args("bwrap", "/usr/bin/python3", work=Path("/w"), ipc=Path("/i"), limits=Limits(), env={})
>>> args[args.index("--chdir") + 1]
'/w'
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from grading import zygote
from grading.limits import Limits, describe, shown, sizes

__all__ = [  # Limits, describe, shown and sizes are grading.limits', named here too
    "Limits",
    "command",
    "default_bwrap",
    "describe",
    "kernel_env",
    "probe",
    "rlimits",
    "sandbox_args",
    "shown",
    "sizes",
    "uid_for_task",
]


# The program that becomes the kernel, started inside the sandbox (``python -c KERNEL_PROGRAM CONFIG
# python -m module ...``: it drops to the task's user, forbids gaining privileges, sets the limits, keeps other
# processes from reading its memory, then runs the module), or, run without arguments outside it, the warm
# parent that forks kernels into sandboxes (grading.forked): the same steps, in one place.
KERNEL_PROGRAM = Path(zygote.__file__).read_text(encoding="utf-8")

# Environment variables handed to the kernel (everything else is dropped): locale, plotting back end,
# and the course's and nbgrader's own settings.
PASSED_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "MPLBACKEND")
PASSED_PREFIXES = ("NBGRADER_", "ROOFLINE_")


def default_bwrap() -> str:
    """Where bubblewrap is: on the PATH, else Debian's place for it."""
    return shutil.which("bwrap") or "/usr/bin/bwrap"


def uid_for_task() -> int:
    """The user id a kernel runs as when the grader is root (0 otherwise: the grader's own, in a namespace).

    One per thread of the machine (thread ids are unique while they run), so that kernels
    running side by side never share a process count.
    """
    return 1_000_000_000 + threading.get_native_id() if os.geteuid() == 0 else 0


def _python_dirs(interpreter: str) -> list[str]:
    """The environment and the install an interpreter runs from (outside ``/usr``, which is bound anyway).

    Never ``/``: an interpreter named ``/bin/python3`` (``/bin`` a link to ``/usr/bin``) has ``/`` as its
    install folder by name, and binding it would show the kernel the whole machine.

    >>> "/" in _python_dirs("/bin/python3")
    False
    """
    found = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    found.append(str(Path(os.path.realpath(interpreter)).parents[1]))
    found.append(str(Path(interpreter).absolute().parents[1]))
    dirs: list[str] = []
    for path in found:
        real = os.path.realpath(path)
        for p in {path, real}:
            if p not in dirs and p != "/" and not p.startswith("/usr/") and p != "/usr" and os.path.isdir(p):
                dirs.append(p)
    return sorted(dirs, key=len)


def _editable_packages(pythons: list[str]) -> list[str]:
    """The package folders of editable installs (``pip install -e``) in these Python folders.

    Such an install imports its package from the project it was installed from, which the sandbox
    does not show; each package folder (never the project around it) is bound read-only instead, so
    a kernel imports ``rooflinelib`` as the learner's own Python does. setuptools writes the folders
    in an ``__editable___*_finder.py`` as ``MAPPING = {name: folder}``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as venv:
    ...     site, package = Path(venv, "lib", "python3.11", "site-packages"), Path(venv, "src", "pkg")
    ...     site.mkdir(parents=True)
    ...     package.mkdir(parents=True)
    ...     _ = (site / "__editable___pkg_1_finder.py").write_text(f"MAPPING: dict[str, str] = {{'pkg': '{package}'}}")
    ...     _editable_packages([venv]) == [str(package)]
    True
    """
    found: list[str] = []
    for python in pythons:
        for finder in sorted(Path(python).glob("lib/python*/site-packages/__editable___*_finder.py")):
            try:
                tree = ast.parse(finder.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError):
                continue
            for node in tree.body:
                target: ast.expr
                if isinstance(node, ast.AnnAssign):
                    target, value = node.target, node.value
                elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target, value = node.targets[0], node.value
                else:
                    continue
                if not (isinstance(target, ast.Name) and target.id == "MAPPING" and value is not None):
                    continue
                try:
                    mapping = ast.literal_eval(value)
                except ValueError:
                    continue
                if isinstance(mapping, dict):
                    found += [str(v) for v in mapping.values() if isinstance(v, str) and os.path.isdir(v)]
    return [folder for folder in dict.fromkeys(found) if folder != "/"]


def _exposed(dirs: list[str], private: list[Path]) -> str | None:
    """A bound Python folder that holds one of the sandbox's private folders (so would show it read-only), or None.

    >>> _exposed(["/opt/py"], [Path("/opt/py/tmp/grading-1/work")])
    '/opt/py'
    >>> _exposed(["/opt/py"], [Path("/tmp/grading-1/work")]) is None
    True
    """
    for folder in dirs:
        for path in private:
            if Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder)):
                return folder
    return None


def sandbox_args(
    bwrap: str,
    interpreter: str,
    *,
    work: Path,
    ipc: Path,
    limits: Limits,
    env: dict[str, str],
    tmp: Path | None = None,
) -> list[str]:
    """The ``bwrap`` command line, up to the command it runs, of a sandbox for a kernel run by ``interpreter``.

    ``work`` is bound writable and is the working directory; ``ipc`` (the connection
    file and the kernel's sockets) is bound writable. The kernel's ``/tmp`` is a tmpfs of
    ``limits.file_size`` bytes of its own, or, with ``tmp``, that host folder bound
    writable (a :class:`grading.room.Room`'s, which holds it and ``ipc`` to one budget).
    ``env`` supplies the variables in :data:`PASSED_ENV` and those starting with
    :data:`PASSED_PREFIXES`.
    """
    root = os.geteuid() == 0
    args = [bwrap, "--die-with-parent", "--new-session"]
    if root:  # real root sets up the namespaces; the wrapper then becomes `uid`, without capabilities
        args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    else:
        args += ["--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{top}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--dev", "/dev"]
    if tmp is None:
        args += ["--perms", "1777", "--size", str(limits.file_size), "--tmpfs", "/tmp"]
    else:
        args += ["--bind", str(tmp), "/tmp"]
    pythons = _python_dirs(interpreter)
    pythons += [p for p in _editable_packages(pythons) if not any(Path(p).is_relative_to(d) for d in pythons)]
    exposed = _exposed(pythons, [work, ipc, *([tmp] if tmp is not None else [])])
    if exposed is not None:
        raise ValueError(
            f"the kernel's Python install {exposed} holds the grader's temporary folders; set TMPDIR elsewhere"
        )
    binds = [(p, "--ro-bind") for p in pythons]
    if os.path.isdir("/etc/fonts"):  # Matplotlib asks fontconfig for the fonts in /usr/share/fonts
        binds.append(("/etc/fonts", "--ro-bind"))
    binds += [(str(work), "--bind"), (str(ipc), "--bind")]
    made: set[str] = {"/", "/tmp", "/usr"}
    for path, _ in binds:
        for parent in reversed(Path(path).parents):
            if str(parent) not in made:
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
    for path, how in binds:
        args += [how, path, path]
    args += ["--chdir", str(work), "--clearenv"]
    for key, value in sorted(kernel_env(interpreter, env).items()):
        args += ["--setenv", key, value]
    return args


def kernel_env(interpreter: str, env: dict[str, str]) -> dict[str, str]:
    """The whole environment of a kernel in the sandbox: its own settings, then from ``env`` the variables in
    :data:`PASSED_ENV` and those starting with :data:`PASSED_PREFIXES` (everything else is dropped).

    >>> kernel_env("/venv/bin/python", {"LANG": "C.UTF-8", "SECRET": "x"})["PATH"], "SECRET" in kernel_env("p", {})
    ('/venv/bin:/usr/bin:/bin', False)
    """
    inside = {
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "MPLCONFIGDIR": "/tmp/.matplotlib",
        "PATH": f"{Path(interpreter).parent}:/usr/bin:/bin",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    inside.update({k: v for k, v in env.items() if k in PASSED_ENV or k.startswith(PASSED_PREFIXES)})
    return inside


def rlimits(limits: Limits, *, memory_held: bool = False) -> list[tuple[str, int]]:
    """The limits each of the kernel's processes gets, as ``resource`` names them.

    ``--memory`` is an address-space limit per process only where nothing else holds it (the watchdog
    room). Where a cgroup caps the memory the notebook uses (``memory_held``), the address space is left
    alone: an address-space limit counts memory reserved but never touched (an ``np.zeros`` the answer
    only asks the size of), and would refuse honest work that nbgrader runs.

    >>> rlimits(Limits())[0]
    ('RLIMIT_AS', 2147483648)
    >>> [name for name, _ in rlimits(Limits(), memory_held=True)]
    ['RLIMIT_CPU', 'RLIMIT_NPROC', 'RLIMIT_FSIZE']
    """
    memory = [] if memory_held else [("RLIMIT_AS", limits.memory)]
    return [
        *memory,
        ("RLIMIT_CPU", limits.cpu + 1),  # a second past the notebook's own limit, which its room holds
        ("RLIMIT_NPROC", limits.procs),
        ("RLIMIT_FSIZE", limits.file_size),
    ]


def command(
    bwrap: str,
    kernel_cmd: list[str],
    *,
    work: Path,
    ipc: Path,
    limits: Limits,
    uid: int,
    env: dict[str, str],
    tmp: Path | None = None,
    memory_held: bool = False,
) -> list[str]:
    """The ``bwrap`` command line that runs ``kernel_cmd`` (``[python, -m, module, ...]``) in the sandbox
    (:func:`sandbox_args`), through a wrapper that drops to ``uid`` and sets the limits (:func:`rlimits`)."""
    args = sandbox_args(bwrap, kernel_cmd[0], work=work, ipc=ipc, limits=limits, env=env, tmp=tmp)
    config = json.dumps({"uid": uid, "limits": rlimits(limits, memory_held=memory_held)})
    return [*args, "--", kernel_cmd[0], "-c", KERNEL_PROGRAM, config, *kernel_cmd]


_SANDBOXED: set[tuple[str, Limits | None]] = set()  # (bwrap, limits) a kernel started with in this process


def probe(bwrap: str | None, limits: Limits | None = None) -> str | None:
    """Why kernels cannot be sandboxed on this machine (one line), or None when they can.

    Starts this interpreter once in the sandbox and imports the kernel there; once that worked,
    later calls with the same ``bwrap`` and ``limits`` in this process answer None at once (a
    failure is probed again: it may have been a busy machine's time-out).
    """
    if not bwrap:
        return "bubblewrap (bwrap) is not installed; install it with: apt-get install bubblewrap"
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux, this is {sys.platform}"
    if not os.access(bwrap, os.X_OK):
        return f"bubblewrap is not at {bwrap}; install it with: apt-get install bubblewrap"
    limits = limits or Limits()  # no limits given probes the defaults, so both calls share one answer
    if (bwrap, limits) in _SANDBOXED:
        return None
    with tempfile.TemporaryDirectory(prefix="grading-probe-") as tmp:
        work, ipc = Path(tmp, "work"), Path(tmp, "ipc")
        work.mkdir()
        ipc.mkdir()
        uid = uid_for_task()
        if uid:
            os.chown(ipc, uid, uid)
        check = [sys.executable, "-m", "ipykernel_launcher", "--version"]
        argv = command(bwrap, check, work=work, ipc=ipc, limits=limits, uid=uid, env={})
        try:
            run = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"bubblewrap could not run ({type(err).__name__}: {err})"
    if run.returncode != 0:
        lines = [line for line in (run.stderr or run.stdout).splitlines() if line.strip()]
        detail = lines[-1].strip() if lines else f"exit status {run.returncode}"
        return f"a kernel cannot start in the sandbox ({detail}); user namespaces may be disabled on this machine"
    _SANDBOXED.add((bwrap, limits))
    return None
