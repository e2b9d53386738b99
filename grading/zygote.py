"""The warm parent of the sandboxed kernels: it imports the kernel once, then forks one kernel per notebook.

Run with arguments (``python -c <this file's text> CONFIG python -m module ...``, inside a sandbox), the same
text is the program of a kernel started from scratch (:func:`wrap`); both end with :func:`drop_to`.

Run as ``python -c <this file's text>`` by :mod:`grading.forked`, outside the sandbox, as the
grader's own user (it never runs a notebook's code). It imports ipykernel, the modules a kernel
imports as it starts, and NumPy (:data:`WARM`), then reads
requests, one JSON message each, on the ``SOCK_SEQPACKET`` socket that is its standard input,
each with one file descriptor attached (the kernel's end of a pipe, below), and answers each
with ``{"pid": N}`` (the process it forked) or ``{"error": "..."}``, and the request's ``serial``.

A request names a running sandbox (bubblewrap's first process in it, ``target``) that
:mod:`grading.sandbox` built for one notebook, with all its namespaces and mounts. For each
request the zygote forks a child that

1. joins the notebook's cgroups (``cgroups``: files ``cgroup.procs`` to write its pid to);
2. joins the sandbox's namespaces (when the grader is not root, first the user namespace that
   owns the others; then IPC, UTS, network, PID, cgroup and mount; then the sandbox's own user
   namespace, in which no further one can be made) and its root, then forks the kernel, which is
   born in the sandbox's PID namespace, and waits for it;

and the kernel then

3. starts a session of its own (no controlling terminal, as bubblewrap's ``--new-session``),
   keeps the write end of a pipe whose read end is the standard input of the sandbox's first
   command (which reads it until every writer is gone, so the sandbox ends when the kernel does),
   points its standard streams at ``/dev/null`` and closes every other file descriptor;
4. goes to ``cwd``, drops to the notebook's user id (a grader running as root) or drops every
   capability (a grader running as a normal user), forbids gaining privileges, sets the limits
   (``rlimits``), keeps other processes from reading its memory, takes the sandbox's
   environment (``env``, and what the warm imports set there) and reseeds NumPy's global random
   generator (Python's own reseeds itself in a forked process);
5. runs the kernel module (``argv``: ``[module, *args]``) as ``python -m`` would.

So the kernel is a fresh process in exactly the namespaces, root, user and limits of a kernel
started inside the sandbox, and its memory is a copy of a process that has only imported
modules. ``os.fork`` is only called while this process has a single thread.
"""

from __future__ import annotations

import ctypes
import fcntl
import importlib
import json
import os
import resource
import runpy
import signal
import socket
import sys
import threading
from typing import Any

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 4, 24, 38, 47
CAP_AMBIENT_CLEAR_ALL = 4
NAMESPACES = ("ipc", "uts", "net", "pid", "cgroup", "mnt")  # after the user namespace that owns them
NS_GET_PARENT = 0xB702  # ioctl: the parent of a user namespace

# Imported before any fork, besides ipykernel.kernelapp: the modules every kernel imports as it starts (its
# debugger, completer, history database, event loop), and NumPy with the random generator each kernel reseeds.
# Not Matplotlib: its backend is chosen by the kernel as it starts.
WARM = (
    "ipykernel.ipkernel",
    "ipykernel.debugger",
    "IPython.core.debugger",
    "IPython.core.completerlib",
    "IPython.core.oinspect",
    "IPython.core.logger",
    "IPython.extensions.storemagic",
    "tornado.platform.asyncio",
    "faulthandler",
    "secrets",
    "sqlite3",
    "numpy",
    "numpy.random",
)

IMPORTED_ENV: dict[str, str] = {}  # what importing WARM set in the environment (main fills it in)

libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _drop_capabilities() -> None:
    """No capability left in any set (a grader that is not root: the kernel holds all of them in the sandbox's
    user namespace after joining it)."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    for cap in range(64):  # every capability number (the sandbox has no /proc to ask which exist)
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # fails harmlessly for numbers this kernel does not use
    libc.prctl(PR_CAP_AMBIENT, CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    data = (Data * 2)()
    _check(libc.capset(ctypes.byref(Header(0x20080522, 0)), data), "capset")


def _kernel(request: dict[str, Any], alive_fd: int, report_fd: int) -> None:
    """In the forked kernel process, inside the sandbox's namespaces: become the kernel (never returns).

    ``report_fd`` gets ``ok`` once the kernel is set up, or what went wrong, and is then closed.
    """
    os.setsid()  # no controlling terminal to type into (bubblewrap's --new-session)
    alive_fd, report_fd = fcntl.fcntl(alive_fd, fcntl.F_DUPFD, 100), fcntl.fcntl(report_fd, fcntl.F_DUPFD, 100)
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.dup2(alive_fd, 3)
    os.dup2(report_fd, 4)
    os.closerange(5, 1 << 16)
    try:
        _set_up(request)
    except BaseException as err:  # noqa: BLE001 - told to the grader, then this process is gone
        os.write(4, f"{type(err).__name__}: {err}".encode())
        os._exit(1)
    os.write(4, b"ok")
    os.close(4)
    # from here on the process is the kernel: it ends here, whatever happens, and reports nothing more
    code = 1
    try:
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    finally:
        os._exit(code)


def drop_to(uid: int, rlimits: list[tuple[str, int]]) -> None:
    """Every kernel's last steps, forked or started in the sandbox: become ``uid`` (where this process is root and
    ``uid`` is set), forbid gaining privileges, set the limits, keep other processes from reading its memory."""
    if os.geteuid() == 0 and uid:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    for name, value in rlimits:
        hard = value + 5 if name == "RLIMIT_CPU" else value
        resource.setrlimit(getattr(resource, name), (value, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "dumpable")


def wrap(config: str, command: list[str]) -> None:
    """Started in the sandbox from scratch (``python -c <this text> CONFIG python -m module ...``): :func:`drop_to`,
    then become the kernel, in this same process for ``-m`` (so that the steps still hold), else by ``execv``."""
    settings = json.loads(config)
    drop_to(settings["uid"], settings["limits"])
    if len(command) > 2 and command[1] == "-m":
        sys.argv = [command[2], *command[3:]]
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        os.execv(command[0], command)


def _set_up(request: dict[str, Any]) -> None:
    """The kernel's folder, user, privileges, limits, environment and arguments, as a kernel started in the sandbox."""
    os.chdir(request["cwd"])
    if not (os.geteuid() == 0 and request["uid"]):
        _drop_capabilities()
    drop_to(request["uid"], request["rlimits"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ.update(IMPORTED_ENV)
    if "numpy" in sys.modules:  # every kernel draws its own random numbers, as a fresh process would
        sys.modules["numpy"].random.seed()
    sys.argv = list(request["argv"])


def _child(request: dict[str, Any], alive: int, report: int) -> None:
    """The forked child: join the notebook's cgroups and sandbox, fork the kernel there and wait for it."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the zygote's reaper must not take the kernel's exit
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # gone with the zygote
    for procs in request["cgroups"]:
        with open(procs, "w") as fh:
            fh.write(str(os.getpid()))
    target = request["target"]
    first, last = [], []  # user namespaces: the one owning the sandbox's other namespaces, then the sandbox's own
    if request["userns"]:
        inner = os.open(f"/proc/{target}/ns/user", os.O_RDONLY)
        outer = fcntl.ioctl(inner, NS_GET_PARENT)
        if os.fstat(outer).st_ino == os.stat("/proc/self/ns/user").st_ino:  # not nested: one user namespace
            os.close(outer)
            first = [("user", inner)]
        else:  # bubblewrap's --disable-userns nests one more, in which the sandboxed command runs
            first, last = [("user", outer)], [("user", inner)]
    others = [
        (kind, os.open(f"/proc/{target}/ns/{kind}", os.O_RDONLY))
        for kind in NAMESPACES
        if os.path.exists(f"/proc/{target}/ns/{kind}")
    ]
    root = os.open(f"/proc/{target}/root", os.O_RDONLY)
    for kind, fd in [*first, *others, *last]:
        _check(libc.setns(fd, 0), f"setns {kind}")
        os.close(fd)
    os.fchdir(root)
    os.chroot(".")
    os.close(root)
    kernel = os.fork()
    if kernel == 0:
        try:
            _kernel(request, alive, report)
        except BaseException as err:  # noqa: BLE001 - told to the grader, then the kernel is gone
            os.write(report, f"{type(err).__name__}: {err}".encode())
        finally:
            os._exit(1)
    os.closerange(3, 1 << 16)
    _, status = os.waitpid(kernel, 0)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def serial_of(line: bytes) -> Any:
    """The number the grader gave a request, echoed in its answer (None when the request cannot be read)."""
    try:
        return json.loads(line).get("serial")
    except (ValueError, AttributeError):
        return None


def _reap(*_: object) -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def main() -> None:
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # gone with the worker that started it
    before = dict(os.environ)
    import ipykernel.kernelapp  # noqa: F401 - what every kernel imports: the point of a warm parent

    for name in WARM:  # one missing here is imported by the kernel that needs it
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # what these imports set in the environment (ipykernel's debugger sets PYDEVD_USE_FRAME_EVAL), each kernel sets
    # again over the sandbox's environment, as importing them there would
    IMPORTED_ENV.update({key: value for key, value in os.environ.items() if before.get(key) != value})

    signal.signal(signal.SIGCHLD, _reap)
    channel = socket.socket(fileno=0)  # a SOCK_SEQPACKET socket: one request (and the kernel's end of its pipe)
    channel.send(json.dumps({"ready": os.getpid()}).encode())
    while True:
        line, fds, _, _ = socket.recv_fds(channel, 1 << 20, 1)
        if not line:
            break
        try:
            if len(fds) != 1:
                raise ValueError("a request comes with exactly one file descriptor, the kernel's end of its pipe")
            if threading.active_count() != 1:
                raise RuntimeError("the zygote has more than one thread; it cannot fork safely")
            request = json.loads(line)
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(read)
                    channel.close()
                    _child(request, fds[0], write)
                except BaseException as err:  # noqa: BLE001
                    os.write(write, f"{type(err).__name__}: {err}".encode())
                finally:
                    os._exit(1)
            os.close(write)
            os.close(fds[0])
            with os.fdopen(read, "rb") as report:  # until the kernel is set up, or its set-up failed
                said = report.read(4096).decode(errors="replace")
            answer = {"pid": pid} if said == "ok" else {"error": said or "the kernel exited while it was set up"}
        except Exception as err:  # noqa: BLE001 - one failed request is answered, the zygote goes on
            answer = {"error": f"{type(err).__name__}: {err}"}
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        answer["serial"] = serial_of(line)
        channel.send(json.dumps(answer).encode())


if __name__ == "__main__":
    if len(sys.argv) > 1:  # the kernel's program in a sandbox started from scratch
        wrap(sys.argv[1], sys.argv[2:])
    else:  # the warm parent
        main()
