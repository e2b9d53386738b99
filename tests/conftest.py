"""Fixtures shared by the test modules."""

from __future__ import annotations

from pathlib import Path

import pytest
from grading_support import course_template as _course_template


@pytest.fixture(scope="session")
def course_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course with ``rooflines`` generated, once per session: copy it with ``generated_course``."""
    return _course_template(tmp_path_factory)
