"""The repository the book points at is one setting (``repository.url`` in ``_config.yml``)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
GITHUB = re.compile(r"https://github\.com/([\w.-]+/[\w.-]+)")
# Repositories the course cites that are not the course itself.
CITED = {
    "jax-ml/scaling-book",
    "openxla/xla",
    # sources of the spec table's device-reported capacities and collective latencies
    "NVIDIA/TensorRT-LLM",
    "NVIDIA/nccl",
    "deepseek-ai/DeepEP",
    "modal-labs/modal-client",
    # nbgrader, whose user-guide assignment tests/fixtures/nbgrader_ps1 holds
    "jupyter/nbgrader",
}
PLACEHOLDER = "OWNER/REPO"  # how the README and the fork command write "your repository"
EXAMPLES = {"tools/set_repository_url.py", "tests/test_repository_url.py"}  # examples of other URLs


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    skip = ("exercises/", "rooflinelib/data/published/")
    return [p for p in out.splitlines() if not p.startswith(skip) and p not in EXAMPLES]


def test_every_link_to_the_course_repository_uses_the_configured_url() -> None:
    url = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]["url"]
    own = GITHUB.fullmatch(url)
    assert own, f"repository.url in _config.yml must be https://github.com/OWNER/REPO, got {url!r}"
    stray = []
    for name in _tracked():
        path = ROOT / name
        if path.suffix not in {".md", ".py", ".yml", ".ipynb", ".txt", ".toml"} or not path.is_file():
            continue
        for repo in GITHUB.findall(path.read_text(encoding="utf-8", errors="replace")):
            if repo not in {own.group(1), PLACEHOLDER} and repo not in CITED:
                stray.append(f"{name}: {repo}")
    assert not stray, f"links to another repository (run tools/set_repository_url.py): {stray}"


def test_the_fork_command_moves_every_link(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    for name in ("_config.yml", "tools/set_repository_url.py"):  # the working tree's versions
        shutil.copy(ROOT / name, clone / name)
    old = yaml.safe_load((clone / "_config.yml").read_text(encoding="utf-8"))["repository"]["url"]
    subprocess.run(
        [sys.executable, "tools/set_repository_url.py", "https://github.com/someone/fork", "--branch", "teaching"],
        cwd=clone,
        check=True,
        capture_output=True,
    )
    config = yaml.safe_load((clone / "_config.yml").read_text(encoding="utf-8"))["repository"]
    assert config == {**config, "url": "https://github.com/someone/fork", "branch": "teaching"}
    left = subprocess.run(
        ["git", "grep", "-l", "-F", old], cwd=clone, capture_output=True, text=True, check=False
    ).stdout
    assert not left, f"still pointing at {old}: {left}"
    page = (clone / "book" / "where-does-the-time-go.md").read_text(encoding="utf-8")
    assert '"https://github.com/someone/fork", "teaching"' in page
    # the launched notebooks: their first cell, their problems' Colab and Binder links, their links to the book
    old_repo = old.removeprefix("https://github.com/")
    left = subprocess.run(
        ["git", "grep", "-l", "-F", old_repo], cwd=clone, capture_output=True, text=True, check=False
    ).stdout
    assert not left, f"still naming {old_repo}: {left}"
    launched = nbformat.read(clone / "editions" / "ko" / "book" / "problems.ipynb", as_version=4)
    assert 'COURSE_URL, COURSE_BRANCH = "https://github.com/someone/fork", "teaching"' in launched.cells[0].source
    text = "\n".join(c.source for c in launched.cells if c.cell_type == "markdown")
    assert "colab.research.google.com/github/someone/fork/blob/teaching/exercises/rooflines-ko/" in text
    assert "mybinder.org/v2/gh/someone/fork/teaching?urlpath=tree/exercises/rooflines-ko/" in text
    assert "https://someone.github.io/fork/ko/book/" in text
    assert yaml.safe_load((clone / "_config.yml").read_text(encoding="utf-8"))["html"]["baseurl"] == (
        "https://someone.github.io/fork/"
    )
