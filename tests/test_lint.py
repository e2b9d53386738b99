"""The repository is clean under ruff (lint and format) with the settings in pyproject.toml.

Run the same checks by hand with ``ruff check .`` and ``ruff format --check .``;
``ruff check --fix .`` and ``ruff format .`` repair most findings.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("command", [("check", "--output-format", "concise"), ("format", "--check")])
def test_ruff_is_clean(command: tuple[str, ...]) -> None:
    run = _ruff(*command)
    assert run.returncode == 0, run.stdout + run.stderr
