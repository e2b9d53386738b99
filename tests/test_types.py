"""rooflinelib (and the grading package) type-check under ``mypy --strict`` (settings in pyproject.toml).

The same check by hand: ``mypy rooflinelib grading``. mypy keeps its cache in
``.mypy_cache``, so a second run takes a couple of seconds.
"""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]


def test_packages_type_check_strictly() -> None:
    targets = [str(ROOT / name) for name in ("rooflinelib", "grading") if (ROOT / name).is_dir()]
    out, err, status = api.run(
        [*targets, "--strict", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache")]
    )
    assert status == 0, out + err
