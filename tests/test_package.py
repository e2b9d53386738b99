"""The package as a whole: its public names, read-only tables, lazy plotting import and metadata."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import rooflinelib as rl

ROOT = Path(__file__).resolve().parents[1]


def test_every_public_name_resolves() -> None:
    assert len(rl.__all__) == len(set(rl.__all__))
    for name in rl.__all__:
        assert getattr(rl, name) is not None, name
    assert set(rl.__all__) <= set(dir(rl))


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'plot_rooflines'"):
        rl.plot_rooflines  # noqa: B018


def test_import_does_not_load_matplotlib_until_a_plot_is_asked_for() -> None:
    code = (
        "import sys, rooflinelib as rl\n"
        "before = 'matplotlib' in sys.modules\n"
        "rl.plot_roofline\n"
        "print(before, 'matplotlib.pyplot' in sys.modules or 'rooflinelib.plotting' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["False", "True"]


@pytest.mark.parametrize(
    "table, key",
    [(rl.DTYPE_BYTES, "bf16"), (rl.ACCELERATORS, "tpu-v5e"), (rl.get_accelerator("h100-sxm").links, "pcie")],
)
def test_public_tables_are_read_only(table: dict[str, object], key: str) -> None:
    with pytest.raises(TypeError):
        table[key] = 3


def test_one_version_source() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    assert metadata.version("rooflinelib") == rl.__version__


def test_licence_is_an_spdx_expression_with_its_files() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT AND Apache-2.0"
    for path in project["license-files"]:
        assert (ROOT / path).is_file(), path
    assert "The Roofline Course contributors" in (ROOT / "LICENSE").read_text()
