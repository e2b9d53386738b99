"""rooflinelib type-checks cleanly with mypy (settings in pyproject.toml)."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]


def test_rooflinelib_type_checks():
    out, err, status = api.run([str(ROOT / "rooflinelib"), "--config-file", str(ROOT / "pyproject.toml")])
    assert status == 0, out + err
