"""Fixtures shared by the test modules."""

from __future__ import annotations

from pathlib import Path

import pytest
from grading_support import course_template as _course_template


@pytest.fixture(scope="session")
def course_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course with ``rooflines`` generated, once per session: copy it with ``generated_course``."""
    return _course_template(tmp_path_factory)


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The course with every edition checked and its class graded, once per session (tests/session_course.py).

    Its users share the pytest-xdist group ``graded_class`` (``pytest -n 2 --dist loadgroup``), so that one worker
    grades it.
    """
    from session_course import graded_class as _graded_class

    return _graded_class(tmp_path_factory)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup``, a test without an ``xdist_group`` mark goes with the rest of its file, as under
    ``--dist loadfile``: a module's fixtures are made on one worker only."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
