"""Compare two builds of the book: what a reader sees on every page, and every other file, build hashes aside.

Each HTML page is reduced to its structure and text (one line per element with its attributes, one per
run of text, whitespace collapsed), with the hashes a build writes into names and links (``?digest=…``,
``?v=…``, the content hash of an image's file name) replaced by ``H``; the figures are compared by their
files' names, which are the hashes of their content. Any other file is compared byte for byte.

Usage::

    cp -a _build/html /tmp/site-before      # before a change to the build
    make book
    python tools/compare_sites.py /tmp/site-before _build/html

It prints each difference and exits with 1 if there is any. The pages that show what the build machine
measured (``book/measure-your-machine.html``) differ from build to build.
"""

from __future__ import annotations

import argparse
import difflib
import re
from pathlib import Path

from bs4 import BeautifulSoup, Comment, NavigableString, Tag

_HASH = re.compile(r"[0-9a-f]{20,64}")
_QUERY = re.compile(r"([?&])(digest|v)=[0-9A-Za-z]+")


def normalise(text: str) -> str:
    """``text`` with the hashes a build writes replaced by ``H``.

    >>> normalise("_static/styles.css?digest=3ee479438cf8b5e0d341")
    '_static/styles.css?digest=H'
    >>> normalise("../_images/0f7c3d2e9a1b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d.png")
    '../_images/H.png'
    """
    return _HASH.sub("H", _QUERY.sub(r"\1\2=H", text))


def page_lines(html: str) -> list[str]:
    """A page as lines: each element with its sorted attributes, each run of text, indented by depth.

    >>> page_lines('<p class="a"> Hello,\\n  world <b>!</b></p>')
    ['<p class="a">', '  Hello, world', '  <b>', '    !']
    """
    lines: list[str] = []

    def walk(node: Tag, depth: int) -> None:
        for child in node.children:
            if isinstance(child, Comment):
                continue
            if isinstance(child, NavigableString):
                text = " ".join(str(child).split())
                if text:
                    lines.append("  " * depth + normalise(text))
            elif isinstance(child, Tag):
                attrs = "".join(
                    f' {key}="{normalise(" ".join(value) if isinstance(value, list) else str(value))}"'
                    for key, value in sorted(child.attrs.items())
                )
                lines.append("  " * depth + f"<{child.name}{attrs}>")
                walk(child, depth + 1)

    walk(BeautifulSoup(html, "html.parser"), 0)
    return lines


def images(html: str) -> list[str]:
    """The ``src`` of every image of a page, as written (a figure's file name is its content's hash)."""
    return [str(img.get("src")) for img in BeautifulSoup(html, "html.parser").find_all("img")]


def compare(before: Path, after: Path, context: int = 1) -> list[str]:
    """Every difference between two built sites, as lines to print (none if they are the same)."""
    out: list[str] = []
    old = {normalise(str(p.relative_to(before))): p for p in before.rglob("*") if p.is_file()}
    new = {normalise(str(p.relative_to(after))): p for p in after.rglob("*") if p.is_file()}
    out += [f"only before: {name}" for name in sorted(set(old) - set(new))]
    out += [f"only after: {name}" for name in sorted(set(new) - set(old))]
    for name in sorted(set(old) & set(new)):
        if name.endswith(".html"):
            a, b = old[name].read_text(encoding="utf-8"), new[name].read_text(encoding="utf-8")
            diff = list(difflib.unified_diff(page_lines(a), page_lines(b), lineterm="", n=context))[2:]
            if diff:
                out += [f"=== {name}", *diff]
            if images(a) != images(b):
                changed = sum(x != y for x, y in zip(images(a), images(b), strict=False))
                out.append(f"=== {name}: {changed} of {len(images(a))} figures differ")
        elif "_images/" not in name and old[name].read_bytes() != new[name].read_bytes():
            out.append(f"differs: {name}")  # a figure is compared by its name, on its page
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="the html folder of one build")
    parser.add_argument("after", type=Path, help="the html folder of the other")
    args = parser.parse_args(argv)
    for folder in (args.before, args.after):
        if not (folder / "index.html").is_file():
            parser.error(f"{folder} holds no index.html: give the html folder of a build, such as _build/html")
    differences = compare(args.before, args.after)
    print("\n".join(differences) if differences else "no differences")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
