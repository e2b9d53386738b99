"""Point the course at another repository (a fork): one command, every link follows.

The repository is one setting, ``repository.url`` (and ``repository.branch``) in
``_config.yml``. Pages must also carry it literally, because a chapter opened on
Colab sees nothing of the repository and installs ``rooflinelib`` from that URL.
This command writes the new URL into ``_config.yml`` and replaces the old one
wherever the repository's tracked files contain it: in the chapters, the launched
notebooks (``editions/``, where it is also written inside JSON strings), their
Colab and Binder links, and the address of the published book (``html.baseurl``,
``https://OWNER.github.io/REPO/``); ``tests/test_book_cells.py`` and
``tests/test_repository_url.py`` fail if any place is left behind.

Example::

    python tools/set_repository_url.py https://github.com/you/roofline-course --branch main
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "_config.yml"


def current() -> tuple[str, str]:
    repo = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))["repository"]
    return str(repo["url"]), str(repo["branch"])


def pages_url(url: str) -> str:
    """Where GitHub Pages publishes a repository's book: ``https://OWNER.github.io/REPO/``.

    >>> pages_url("https://github.com/Roofline-Course/roofline-course")
    'https://roofline-course.github.io/roofline-course/'
    """
    owner, name = url.removeprefix("https://github.com/").split("/")
    return f"https://{owner.lower()}.github.io/{name}/"


def files_mentioning(text: str) -> list[Path]:
    found = subprocess.run(["git", "grep", "-l", "-F", text], cwd=ROOT, capture_output=True, text=True, check=False)
    return [ROOT / line for line in found.stdout.splitlines() if line]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="the new repository, e.g. https://github.com/you/roofline-course")
    parser.add_argument("--branch", help="the branch the book is built from (default: unchanged)")
    args = parser.parse_args(argv)
    new_url = args.url.rstrip("/")
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", new_url):
        parser.error(f"expected https://github.com/OWNER/REPO, got {args.url!r}")
    old_url, old_branch = current()
    new_branch = args.branch or old_branch
    old_repo, new_repo = old_url.removeprefix("https://github.com/"), new_url.removeprefix("https://github.com/")
    replacements = [
        (f"{old_url}/blob/{old_branch}/", f"{new_url}/blob/{new_branch}/"),
        (f'"{old_url}", "{old_branch}"', f'"{new_url}", "{new_branch}"'),
        (f'\\"{old_url}\\", \\"{old_branch}\\"', f'\\"{new_url}\\", \\"{new_branch}\\"'),  # in a notebook's JSON
        (f"/github/{old_repo}/blob/{old_branch}/", f"/github/{new_repo}/blob/{new_branch}/"),  # Colab
        (f"/v2/gh/{old_repo}/{old_branch}?", f"/v2/gh/{new_repo}/{new_branch}?"),  # Binder
        (pages_url(old_url), pages_url(new_url)),  # the published book
        (old_url, new_url),
    ]
    changed = []
    for path in files_mentioning(old_repo):
        text = path.read_text(encoding="utf-8")
        updated = text
        for old, new in replacements:
            updated = updated.replace(old, new)
        if path == CONFIG:
            updated = re.sub(r"(?m)^(\s*branch:\s*)\S+", rf"\g<1>{new_branch}", updated, count=1)
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            changed.append(path.relative_to(ROOT))
    print(f"{old_url} ({old_branch}) -> {new_url} ({new_branch}) in {len(changed)} files")
    for path in changed:
        print(f"  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
