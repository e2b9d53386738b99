"""Fixtures shared by the test modules."""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import pytest
from grading_support import ROOT
from grading_support import course_template as _course_template


@pytest.fixture(scope="session")
def course_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course with ``rooflines`` generated, once per session: copy it with ``generated_course``."""
    return _course_template(tmp_path_factory)


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The course with every edition checked and its class graded, once per session (tests/session_course.py).

    Its users run on one pytest-xdist worker under ``--dist loadfile`` (:data:`ONE_WORKER`), so that one worker
    grades it.
    """
    from session_course import graded_class as _graded_class

    return _graded_class(tmp_path_factory)


# Test files whose tests run on one pytest-xdist worker under ``--dist loadfile`` (``make test``), as if they were one
# file: they share a session fixture that is worth making once (the graded_class fixture). (``--dist loadgroup`` with
# ``xdist_group`` marks would say the same, but pytest-xdist 3.8 ignores the marks under pytest 9.2:
# pytest-dev/pytest-xdist#1386.)
ONE_WORKER = {
    "tests/test_editions_grading.py": "graded_class",
    "tests/test_grading_preflight.py": "graded_class",
    "tests/test_nbgrader_rooflines.py": "graded_class",
}


# Test files split into one unit per edition under ``--dist loadfile``: their tests name the edition first in their
# parameters (``[ko-intro]``), and the two processes share them with the rest of the suite.
PER_EDITION = {"tests/test_browser_book.py"}


@functools.cache
def _edition_first() -> re.Pattern[str]:
    """A test id's first parameter, where it is an edition's code (read from the registry when first needed, so that
    a broken registry fails its own tests rather than every test run)."""
    sys.path.insert(0, str(ROOT / "book"))
    import bookeditions  # book/bookeditions.py: the registry of editions

    return re.compile(r"\[(" + "|".join(map(re.escape, bookeditions.codes())) + r")\b")


def unit_of(nodeid: str, scope: str) -> str:
    """The unit of work a test is sent to a process in: its file, or the group of :data:`ONE_WORKER` its file is in,
    or for a file of :data:`PER_EDITION`, its file and edition.

    >>> unit_of("tests/test_browser_book.py::test_page_renders_offline[ko-intro]", "tests/test_browser_book.py")
    'tests/test_browser_book.py::ko'
    >>> unit_of("tests/test_nbgrader_rooflines.py::test_x", "tests/test_nbgrader_rooflines.py")
    'graded_class'
    """
    if scope in PER_EDITION and (edition := _edition_first().search(nodeid)):
        return f"{scope}::{edition.group(1)}"
    return ONE_WORKER.get(scope, scope)


class _FilesSharingAWorker:
    """The ``--dist loadfile`` scheduler, with the files of :data:`ONE_WORKER` sent to one worker together and those of
    :data:`PER_EDITION` split by edition."""

    @staticmethod
    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
        if config.getoption("dist") != "loadfile":
            return None
        from xdist.scheduler import LoadFileScheduling

        class Scheduling(LoadFileScheduling):
            def _split_scope(self, nodeid: str) -> str:
                return unit_of(nodeid, super()._split_scope(nodeid))

        return Scheduling(config, log)  # type: ignore[arg-type]


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):  # its hook is known only where pytest-xdist is installed
        config.pluginmanager.register(_FilesSharingAWorker(), "files-sharing-a-worker")
