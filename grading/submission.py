"""Read a submission folder without following links: regular files only, each and all of them within a size cap.

A submission folder is an upload the instructor unpacked, so it may hold anything an archive
can: symbolic links (to a solution notebook, the gradebook, ``/etc/shadow``), FIFOs and device
files (one that reads as ``/dev/zero`` never ends), very large files, very many files. The
grader's own process opens a submission only here: every folder and file is opened relative to
the folder above it with ``O_NOFOLLOW``, so no link is followed, not even one to a folder, nor
one standing for the submission folder itself; only regular files are read, each at most
:data:`MAX_FILE` bytes and all of them together at most :data:`MAX_TOTAL`. Everything left out
is named with the reason, so that the run can list it.

Example
-------
>>> import tempfile
>>> with tempfile.TemporaryDirectory() as top:
...     folder = Path(top, "ada", "hw1")
...     folder.mkdir(parents=True)
...     _ = (folder / "q1.ipynb").write_text("{}")
...     (folder / "notes.html").symlink_to("/etc/hostname")
...     read = read_submission(Path(top), ["ada", "hw1"], notebooks={"q1.ipynb"})
>>> read.files, read.left_out
({'q1.ipynb': b'{}'}, {'notes.html': 'a symbolic link (a submission is read without following links)'})
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "MAX_ENTRIES",
    "MAX_FILE",
    "MAX_TOTAL",
    "Submission",
    "SubmissionError",
    "read_bounded",
    "read_file",
    "read_submission",
    "remove_links",
]

MAX_FILE = 32 << 20  # bytes of one submitted file
MAX_TOTAL = 128 << 20  # bytes of a submission's files together
MAX_ENTRIES = 2000  # files and folders of one submission
MAX_DEPTH = 16  # folders within folders

LINK = "a symbolic link (a submission is read without following links)"
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class SubmissionError(Exception):
    """The submission folder itself cannot be read: it is a link, not a folder, or gone."""


@dataclass
class Submission:
    """What was read of a submission folder: its regular files, and what was left out, with why.

    Paths are relative to the folder, with ``/`` between names.
    """

    files: dict[str, bytes] = field(default_factory=dict)
    mtimes: dict[str, float] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)


def _size(n: int) -> str:
    return f"{n >> 20}M" if n >= 1 << 20 else f"{n} bytes"


def kind(mode: int) -> str | None:
    """Why a file of this mode is not read (None for a regular file or a folder).

    >>> kind(stat.S_IFLNK | 0o777), kind(stat.S_IFIFO | 0o644), kind(stat.S_IFREG | 0o644)
    ('a symbolic link (a submission is read without following links)', 'not a regular file (a FIFO)', None)
    """
    if stat.S_ISLNK(mode):
        return LINK
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return f"not a regular file ({_KINDS.get(stat.S_IFMT(mode), 'a special file')})"


def _open_folder(top: Path, parts: Sequence[str]) -> int:
    """A descriptor of ``top/parts...``: ``top`` is the instructor's (links followed), no part is followed."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            if part in ("", ".", "..") or "/" in part:
                raise SubmissionError(f"not a folder name: {part!r}")
            try:
                inner = os.open(part, _FOLDER, dir_fd=fd)
            except OSError as err:
                with contextlib.suppress(OSError):
                    if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                        raise SubmissionError(f"{part} is {LINK}") from None
                raise SubmissionError(f"cannot open {part} as a folder ({os.strerror(err.errno or 0)})") from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_at(folder: int, name: str, limit: int) -> tuple[bytes | None, float, str | None, int]:
    """Read one file of an open folder without following a link.

    (contents, mtime, None, size) for a regular file of at most ``limit`` bytes, else (None, 0, why, size).
    """
    try:
        fd = os.open(name, _FILE, dir_fd=folder)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return None, 0.0, LINK, 0
        return None, 0.0, f"cannot be read ({os.strerror(err.errno or 0)})", 0
    try:
        st = os.fstat(fd)
        why = kind(st.st_mode) or (None if stat.S_ISREG(st.st_mode) else "a folder")
        if why is not None:
            return None, 0.0, why, 0
        if st.st_size > limit:
            return None, 0.0, "too large", st.st_size
        data, size = read_bounded(fd, limit)
        if data is None:  # it grew while being read
            return None, 0.0, "too large", size
        return data, st.st_mtime, None, size
    finally:
        os.close(fd)


def read_bounded(fd: int, limit: int) -> tuple[bytes | None, int]:
    """The bytes of an open regular file and their count, reading at most ``limit + 1``; None for the bytes when it
    holds more than ``limit`` (it grew since its ``fstat``)."""
    os.set_blocking(fd, True)
    chunks, size = [], 0
    while size <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return (None if size > limit else b"".join(chunks)), size


def read_file(top: Path, parts: Sequence[str], name: str, limit: int) -> bytes | None:
    """The contents of ``top/parts.../name`` read without following any link below ``top``; None if it is not a
    regular file of at most ``limit`` bytes (or is not there).

    >>> read_file(Path("/"), ["etc"], "no such file", 100) is None
    True
    """
    try:
        folder = _open_folder(top, parts)
    except (SubmissionError, OSError):
        return None
    try:
        return _read_at(folder, name, limit)[0]
    finally:
        os.close(folder)


def ignored(name: str, patterns: Iterable[str]) -> bool:
    """Whether a file or folder name matches one of nbgrader's ignore globs (as ``glob`` matches: a pattern that does
    not start with a dot matches no name that does).

    >>> ignored("__pycache__", ["__pycache__"]), ignored(".x.pyc", ["*.pyc"]), ignored("a.pyc", ["*.pyc"])
    (True, False, True)
    """
    for pattern in patterns:
        if name.startswith(".") and not pattern.startswith("."):
            continue
        if fnmatch.fnmatchcase(name, pattern):
            return True
    return False


def _notebooks(root: int, notebooks: set[str]) -> Iterator[tuple[str, str | None]]:
    """The top-level ``notebooks`` that an open folder holds, looked up by name, as :func:`_walk` yields them."""
    for name in sorted(n for n in notebooks if "/" not in n and n not in (".", "..")):
        try:
            mode = os.stat(name, dir_fd=root, follow_symlinks=False).st_mode
        except FileNotFoundError:
            continue
        except OSError as err:
            yield name, f"cannot be read ({os.strerror(err.errno or 0)})"
            continue
        yield name, "a folder, not a notebook" if stat.S_ISDIR(mode) else kind(mode)


def _walk(root: int, ignore: Sequence[str], notebooks: set[str]) -> Iterator[tuple[str, str | None]]:
    """Every entry to read below an open folder, as (relative path, why it is left out or None), breadth first.

    The top-level ``notebooks`` come first, looked up by name and not counted; then other entries, folders opened
    relative to their parent with ``O_NOFOLLOW``: at most :data:`MAX_ENTRIES` of them and :data:`MAX_DEPTH` levels.
    Past the cap, one entry more is yielded as left out, and nothing more is listed: a folder of a million files
    costs what one of :data:`MAX_ENTRIES` does. Each folder's entries come in name order, except in a folder listed
    only in part (past the cap), where they are those the file system gave first.
    """
    yield from _notebooks(root, notebooks)
    todo: list[tuple[str, int]] = [("", os.dup(root))]
    seen = 0
    try:
        while todo:
            prefix, fd = todo.pop(0)
            try:
                listed: list[os.DirEntry[str]] = []
                more = False
                with os.scandir(fd) as entries:
                    for entry in entries:
                        rel = prefix + entry.name
                        if not prefix and entry.name in notebooks:
                            continue  # read first, above
                        if ignored(entry.name, ignore) or (entry.name.endswith(".ipynb") and rel not in notebooks):
                            continue  # nbgrader neither copies nor grades these (nor what a folder named so holds)
                        if seen + len(listed) > MAX_ENTRIES:
                            more = True
                            break
                        listed.append(entry)
                listed.sort(key=lambda e: e.name)
                for n, entry in enumerate(listed):
                    rel = prefix + entry.name
                    seen += 1
                    if seen > MAX_ENTRIES:
                        rest = more or n + 1 < len(listed) or bool(todo)
                        tail = ", as is everything after it (not listed one by one)" if rest else ""
                        yield rel, f"beyond the first {MAX_ENTRIES} files and folders of the submission{tail}"
                        return
                    try:
                        mode = entry.stat(follow_symlinks=False).st_mode
                    except OSError as err:
                        yield rel, f"cannot be read ({os.strerror(err.errno or 0)})"
                        continue
                    if stat.S_ISDIR(mode):
                        if entry.name.endswith(".ipynb"):
                            yield rel, "a folder, not a notebook"
                            continue
                        if rel.count("/") + 1 >= MAX_DEPTH:
                            yield rel, f"nested more than {MAX_DEPTH} folders deep"
                            continue
                        try:
                            todo.append((rel + "/", os.open(entry.name, _FOLDER, dir_fd=fd)))
                        except OSError as err:
                            yield rel, LINK if err.errno == errno.ELOOP else f"cannot be opened ({err.strerror})"
                        continue
                    yield rel, kind(mode)
            finally:
                os.close(fd)
    finally:
        for _, fd in todo:
            os.close(fd)


def read_submission(
    top: Path, parts: Sequence[str], *, notebooks: Iterable[str] = (), ignore: Sequence[str] = ()
) -> Submission:
    """Read the submission folder ``top/parts...`` (``top`` is the instructor's, such as ``submitted/``).

    Reads the top-level ``notebooks`` (names such as ``q1.ipynb``) first, then every other file
    that nbgrader would copy (not a notebook, not matched by ``ignore``), never following a
    link. :class:`SubmissionError` when the folder itself cannot be read (a link, say).
    """
    wanted = set(notebooks)
    folder = _open_folder(top, parts)
    read = Submission()
    try:
        entries = list(_walk(folder, ignore, wanted))
        entries.sort(key=lambda item: (item[0] not in wanted, item[0]))  # the notebooks first
        total = 0
        for rel, why in entries:
            if why is None:
                *above, name = rel.split("/")
                try:
                    inner = _open_folder_at(folder, above)
                except OSError as err:
                    why = LINK if err.errno == errno.ELOOP else f"cannot be read ({os.strerror(err.errno or 0)})"
                else:
                    try:
                        data, mtime, why, size = _read_at(inner, name, min(MAX_FILE, MAX_TOTAL - total))
                    finally:
                        os.close(inner)
                    if why == "too large":
                        why = (
                            f"larger than {_size(MAX_FILE)}, the most a submitted file may hold"
                            if size > MAX_FILE
                            else f"over the {_size(MAX_TOTAL)} a submission's files may hold together"
                        )
                    if data is not None:
                        read.files[rel], read.mtimes[rel] = data, mtime
                        total += len(data)
            if why is not None:
                read.left_out[rel] = why
    finally:
        os.close(folder)
    return read


def _open_folder_at(folder: int, parts: Sequence[str]) -> int:
    fd = os.dup(folder)
    try:
        for part in parts:
            inner = os.open(part, _FOLDER, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def remove_links(folder: Path) -> list[str]:
    """Remove every link and special file below ``folder`` (never following one); the relative paths removed.

    The grader's own folders (``autograded/<student>/``) hold only regular files it wrote; this clears what an
    earlier version may have copied there, before anything is written or its permissions are set.
    """
    removed: list[str] = []
    if folder.is_symlink():
        folder.unlink()
        return ["."]
    if not folder.is_dir():
        return removed
    for here, dirs, files in os.walk(folder):  # os.walk lists a link to a folder among dirs and never enters it
        for name in [*dirs, *files]:
            path = os.path.join(here, name)
            mode = os.lstat(path).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                os.unlink(path)
                removed.append(os.path.relpath(path, folder))
        dirs[:] = [
            d for d in dirs if os.path.isdir(os.path.join(here, d)) and not os.path.islink(os.path.join(here, d))
        ]
    return removed
