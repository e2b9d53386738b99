"""The kernel's working folder as a check sees it: a grader-side copy, made safely, and the judge's own working folder.

A check that opens a file (``open("answers.txt")``, ``np.loadtxt("data.csv")``, ``pd.read_csv``) runs
in the grader, possibly as root, while the student's code controls the kernel's working folder: it
can leave links there (to the gradebook, ``/etc/shadow``), FIFOs that never end, huge files, or swap
a file for a link while it is being read. So a check never sees that folder itself, only a
:class:`Snapshot`: before each check, every regular file of the kernel's folder is read the way
:mod:`grading.submission` reads a submission (each folder and file opened relative to the one
above it with ``O_NOFOLLOW``, regular files only, within :data:`grading.submission.MAX_FILE` each
and :data:`grading.submission.MAX_TOTAL` together, at most :data:`grading.submission.MAX_ENTRIES`
entries) and written into a folder of the grader's. A file unchanged since the last check (same
inode, size, modification and change times) is not read again. The assignment's shipped files
are the instructor's bytes there whatever the kernel did to its copies, as ``nbgrader autograde``
copies them over a submission's. A ``matplotlibrc`` is left out: Matplotlib would read it from the
working folder as the grader's own settings.

The check runs with that copy as its working folder. The judge runs checks on a thread of its own
(:mod:`grading.executor`), in a worker process that may run other threads (the notebook client's
event loop, the relay) and, when several notebooks are graded in one process (tests, a Dask worker
of several threads), other notebooks' judges. A process has one working folder, so ``os.chdir``
would move every thread at once; instead the judge's thread first leaves the working folder it
shares with its process (``unshare(CLONE_FS)``, Linux: the thread gets its own working folder,
root and umask) and then changes to the snapshot, which moves no other thread. Before that, any
relative entry of ``sys.path`` (``""`` for the folder Python started in) is made absolute, so
that an ``import`` in a check never finds a module the student left in the snapshot.

Example
-------
>>> import tempfile
>>> with tempfile.TemporaryDirectory() as top:
...     work, copy = Path(top, "work"), Path(top, "copy")
...     work.mkdir()
...     _ = (work / "answers.txt").write_text("42")
...     (work / "secret").symlink_to("/etc/hostname")
...     snapshot = Snapshot(work, copy, shipped={})
...     snapshot.refresh()
...     sorted(p.name for p in copy.iterdir())
['answers.txt']
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys
from pathlib import Path

from grading.submission import _FILE, MAX_FILE, MAX_TOTAL, _open_folder, _open_folder_at, _walk, read_bounded

__all__ = ["Snapshot", "own_working_folder"]

LEFT_OUT = {"matplotlibrc"}  # names the grader's own libraries would read from their working folder
CLONE_FS = 0x200


def own_working_folder(folder: Path) -> None:
    """Give the calling thread a working folder of its own, ``folder``, leaving the process's and other threads' as
    they are (see the module docstring); make ``sys.path`` absolute first. ``OSError`` where Linux cannot."""
    sys.path[:] = [entry if os.path.isabs(entry) else os.path.abspath(entry) for entry in sys.path]
    unshare = getattr(os, "unshare", None)
    if unshare is not None:  # Python 3.12
        unshare(CLONE_FS)
    else:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_FS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_FS) failed: the judge cannot have a working folder")
    os.chdir(folder)


class Snapshot:
    """A grader-side copy of a kernel's working folder ``work`` in ``folder``, refreshed by :meth:`refresh`.

    ``shipped`` (path: bytes) are the assignment's files, written once and kept as they are.
    """

    def __init__(self, work: Path, folder: Path, shipped: dict[str, bytes]) -> None:
        self.work, self.folder = Path(work), Path(folder)
        self.shipped = dict(shipped)
        self._keys: dict[str, tuple[int, int, int, int]] = {}
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for rel, data in self.shipped.items():
            self._write(rel, data)

    def refresh(self) -> None:
        """Copy every regular file of the kernel's folder that changed since the last refresh; drop those gone."""
        seen: set[str] = set()
        try:
            root = _open_folder(self.work.parent, [self.work.name])
        except OSError:
            root = -1
        if root >= 0:
            try:
                self._copy(root, seen)
            finally:
                os.close(root)
        for rel in set(self._keys) - seen:
            del self._keys[rel]
            try:
                (self.folder / rel).unlink()
            except OSError:
                pass

    def _copy(self, root: int, seen: set[str]) -> None:
        total = 0
        for rel, why in _walk(root, (), set()):
            *above, name = rel.split("/")
            if why is not None or rel in self.shipped or name in LEFT_OUT:
                continue
            try:
                inner = _open_folder_at(root, above)
            except OSError:
                continue
            try:
                fd = os.open(name, _FILE, dir_fd=inner)
            except OSError:
                continue
            finally:
                os.close(inner)
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE or total + st.st_size > MAX_TOTAL:
                    continue
                key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                if self._keys.get(rel) == key:
                    seen.add(rel)
                    total += st.st_size
                    continue
                data, _ = read_bounded(fd, min(MAX_FILE, MAX_TOTAL - total))
                if data is None or not self._write(rel, data):
                    continue
                seen.add(rel)
                total += len(data)
                self._keys[rel] = key
            finally:
                os.close(fd)

    def _write(self, rel: str, data: bytes) -> bool:
        """Write one file of the copy (the grader's own folder: nothing there is a link); whether it was written."""
        target = self.folder / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            return False
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        return True
