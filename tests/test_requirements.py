"""The pinned toolchain, in two groups, each compiled from its ``.in`` file, fully pinned and hashed.

``requirements.txt`` is what reading and building the book needs (``make book``); ``requirements-test.txt``
adds grading and the test tools (``make test``) at the same pins.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
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


LOCKS = {"requirements.in": "requirements.txt", "requirements-test.in": "requirements-test.txt"}
# Needed to grade and to test, never to read the book: none of them may be in the book's lock.
NOT_FOR_READERS = ["nbgrader", "dask", "distributed", "pytest", "nbval", "playwright", "mypy", "ruff"]


@pytest.mark.parametrize(("top", "lock"), LOCKS.items())
def test_every_top_level_pin_is_in_its_lock_file_at_the_same_version(top: str, lock: str) -> None:
    wanted, locked = _requirements(ROOT / top), _requirements(ROOT / lock)
    for name, req in wanted.items():
        assert name in locked, f"{name} is in {top} but not in {lock}; run `make lock`"
        assert str(req.specifier) == str(locked[name].specifier), (
            f"{name}: {top} asks for {req.specifier}, {lock} has {locked[name].specifier}; run `make lock`"
        )


def test_the_test_lock_adds_to_the_book_lock_and_changes_none_of_its_pins() -> None:
    book, test = _requirements(ROOT / "requirements.txt"), _requirements(ROOT / "requirements-test.txt")
    assert set(book) < set(test)
    for name, req in book.items():
        assert str(req.specifier) == str(test[name].specifier), f"{name}: the two lock files pin it differently"


def test_the_book_lock_has_no_grading_or_test_tools() -> None:
    book = _requirements(ROOT / "requirements.txt")
    assert not set(NOT_FOR_READERS) & set(book), sorted(set(NOT_FOR_READERS) & set(book))


@pytest.mark.parametrize("lock", LOCKS.values())
def test_the_lock_file_pins_exact_versions_with_hashes(lock: str) -> None:
    text = (ROOT / lock).read_text(encoding="utf-8")
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 1)[1])
    pinned = [e for e in entries if "==" in e]
    assert len(pinned) > 50
    for entry in pinned:
        assert "--hash=sha256:" in entry, f"no hash for {entry.splitlines()[0]}"
    for name, req in _requirements(ROOT / lock).items():
        assert len(req.specifier) == 1 and next(iter(req.specifier)).operator == "==", f"{name} is not pinned exactly"


def _imports(source: str) -> set[str]:
    """Top-level modules a piece of Python imports (``%`` magics and ``!`` lines skipped)."""
    source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def _third_party_imports(folder: Path) -> set[str]:
    """Top-level modules a package's own files import, other than the standard library and itself."""
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
    locked = _requirements(ROOT / "requirements-test.txt")
    assert declared <= set(locked), f"not pinned in requirements-test.txt: {sorted(declared - set(locked))}"


# Module name -> distribution, where they differ; and modules the book imports only when they are installed.
DISTRIBUTIONS = {"bs4": "beautifulsoup4", "yaml": "pyyaml", "IPython": "ipython", "myst_nb": "myst-nb"}
OPTIONAL = {"torch", "jax"}  # rooflinelib.measure's other backends, imported inside a try
# the course's own modules: rooflinelib, book/'s helpers and Sphinx extensions, tools/
LOCAL = {
    "rooflinelib",
    *(path.stem for path in (ROOT / "book").glob("*.py")),
    *(path.stem for path in (ROOT / "book" / "_ext").iterdir() if not path.name.startswith(("_", "."))),
    *(path.stem for path in (ROOT / "tools").glob("*.py")),
}


def test_the_book_lock_has_every_package_the_book_build_imports() -> None:
    """The chapters' code cells, the book's Sphinx extensions and helpers, rooflinelib, tools/editions.py and launch.py."""
    import jupytext

    sources = [
        cell.source
        for chapter in sorted((ROOT / "book").glob("*.md"))
        for cell in jupytext.read(chapter).cells
        if cell.cell_type == "code"
    ]
    files = [*(ROOT / "book").rglob("*.py"), *(ROOT / "rooflinelib").rglob("*.py")]
    files += [ROOT / "tools" / "editions.py", ROOT / "tools" / "launch.py"]
    sources += [path.read_text(encoding="utf-8") for path in files]
    modules = set().union(*map(_imports, sources)) - set(sys.stdlib_module_names) - {"__future__"} - OPTIONAL - LOCAL
    needed = {canonicalize_name(DISTRIBUTIONS.get(m, m)) for m in modules}
    book = _requirements(ROOT / "requirements.txt")
    assert needed, "found no imports: the scan is broken"
    assert needed <= set(book), f"the book imports {sorted(needed - set(book))}, which requirements.txt does not pin"


def test_the_rooflinelib_wheel_carries_no_course_tooling() -> None:
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert all(p == "rooflinelib" or p.startswith("rooflinelib.") for p in setuptools["packages"])


def test_reading_a_notebook_builds_no_grammar() -> None:
    """jsonschema's optional format checkers stay out of the test lock (requirements-test-overrides.txt says why):
    with rfc3987-syntax installed, every process that imports nbformat (the grader, each Dask worker, each
    nbgrader command) spends about 1.5 s building its grammars."""
    import subprocess

    locked = _requirements(ROOT / "requirements-test.txt")
    assert "rfc3987-syntax" not in locked, "re-lock with `make lock`, which applies requirements-test-overrides.txt"
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, nbformat, nbgrader.api; print(sorted({'rfc3987_syntax', 'lark'} & set(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert loaded == "[]", f"importing nbformat loads {loaded}"


def test_libraries_whose_private_names_grading_uses_are_bounded_by_the_lock() -> None:
    """grading/private_api.py vouches for its libraries up to the versions it was checked with: the locked ones. The
    package declares them as its upper bounds, and its lower bounds as the lowest it accepts."""
    import tomllib

    from grading.private_api import CHECKED

    project = tomllib.loads((ROOT / "grading" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {canonicalize_name(r.name): r for r in map(Requirement, project["dependencies"])}
    locked = _requirements(ROOT / "requirements-test.txt")
    for dist, (low, high) in CHECKED.items():
        name = canonicalize_name(dist)
        bounds = {(s.operator, s.version) for s in declared[name].specifier}
        pinned = {s.version for s in locked[name].specifier if s.operator == "=="}
        assert pinned == {high}, f"{dist}: checked with {high}, the lock pins {pinned}"
        assert bounds == {(">=", low), ("<=", high)}, f"{dist}: grading/pyproject.toml says {declared[name]}"
