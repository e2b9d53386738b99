"""Where the tests find the source texts (``shared/seeds`` beside the repository), and what they do without them.

A fresh clone on its own has no seeds: the tests that read them are skipped, with the reason, instead of failing.
Set ``ROOFLINE_SEEDS_DIR`` to read them from elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEEDS = Path(os.environ.get("ROOFLINE_SEEDS_DIR", ROOT.parent / "shared" / "seeds"))


def seed_files(pattern: str, folder: Path | None = None) -> list[Path]:
    """The source texts matching ``pattern``; skips the test where the folder is absent, fails where none match."""
    folder = SEEDS if folder is None else folder
    if not folder.is_dir():
        pytest.skip(
            f"the source texts are not here: expected a folder {folder} (shared/seeds beside the repository, "
            "or ROOFLINE_SEEDS_DIR); copy the shared folder there to run this test"
        )
    files = sorted(folder.glob(pattern))
    if not files:
        pytest.fail(f"no source text matches {pattern!r} in {folder}")
    return files
