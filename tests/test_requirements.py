"""The pinned toolchain: requirements.txt is compiled from requirements.in, fully pinned and hashed."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _requirements(path: Path) -> dict[str, Requirement]:
    """Requirement lines of a pip requirements file (continuations joined, comments and hashes dropped)."""
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    reqs = {}
    for line in text.splitlines():
        line = re.sub(r"--hash=\S+", "", line.split("#", 1)[0]).strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            reqs[canonicalize_name(req.name)] = req
    return reqs


def test_every_top_level_pin_is_in_the_lock_file_at_the_same_version() -> None:
    top, locked = _requirements(ROOT / "requirements.in"), _requirements(ROOT / "requirements.txt")
    for name, req in top.items():
        assert name in locked, f"{name} is in requirements.in but not in requirements.txt; run `make lock`"
        assert str(req.specifier) == str(locked[name].specifier), (
            f"{name}: requirements.in asks for {req.specifier}, requirements.txt has {locked[name].specifier}; "
            "run `make lock`"
        )


def test_the_lock_file_pins_exact_versions_with_hashes() -> None:
    text = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 1)[1])
    pinned = [e for e in entries if "==" in e]
    assert len(pinned) > 100
    for entry in pinned:
        assert "--hash=sha256:" in entry, f"no hash for {entry.splitlines()[0]}"
    for name, req in _requirements(ROOT / "requirements.txt").items():
        assert len(req.specifier) == 1 and next(iter(req.specifier)).operator == "==", f"{name} is not pinned exactly"


def _third_party_imports(folder: Path) -> set[str]:
    """Top-level modules a package's own files import, other than the standard library and itself."""
    import ast
    import sys

    found = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {folder.name, "__future__"}


def test_the_grading_package_declares_every_package_it_imports_and_the_lock_pins_them() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "grading" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {canonicalize_name(Requirement(d).name) for d in project["dependencies"]}
    distributions = {"jupyter_client": "jupyter-client", "jupyter_core": "jupyter-core", "zmq": "pyzmq"}
    imported = {canonicalize_name(distributions.get(m, m)) for m in _third_party_imports(ROOT / "grading")}
    assert imported <= declared, f"grading imports {sorted(imported - declared)} without declaring them"
    locked = _requirements(ROOT / "requirements.txt")
    assert declared <= set(locked), f"not pinned in requirements.txt: {sorted(declared - set(locked))}"


def test_the_rooflinelib_wheel_carries_no_course_tooling() -> None:
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert all(p == "rooflinelib" or p.startswith("rooflinelib.") for p in setuptools["packages"])
