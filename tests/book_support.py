"""Reading the built book: a page's article, its glued values in order, its prose blocks.

Needs a built book: ``_build/html`` in the repository, or the ``html`` folder named by the
environment variable ``ROOFLINE_BOOK_HTML``.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
_ROLE = re.compile(r"\{glue:text\}`([^`:]+)(?::[^`]*)?`")


def html_dir() -> Path:
    """The built book's ``html`` folder (``ROOFLINE_BOOK_HTML`` or ``_build/html``)."""
    return Path(os.environ.get("ROOFLINE_BOOK_HTML", ROOT / "_build" / "html"))


def article(page: str) -> BeautifulSoup:
    """The parsed ``<article>`` of a built page; fails with a hint when the book is not built."""
    path = html_dir() / "book" / f"{page}.html"
    if not path.is_file():
        pytest.fail(
            f"{path} is missing; build the book first (`make book`), or set ROOFLINE_BOOK_HTML "
            "to the html folder of a build"
        )
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    return soup.find("article") or soup


# a box only another edition shows (``{only} edition_zh``: an erratum about a Chinese source)
_OTHER_EDITIONS = re.compile(r"^(`{3,}|:{3,})\{only\} edition_(?!en\b)\w+\n.*?^\1[ \t]*$", re.M | re.S)


@functools.cache  # each page is parsed once per run, not once per parametrized test
def glued(page: str) -> tuple[tuple[str, str], ...]:
    """``(key, rendered text)`` for every ``{glue:text}`` role of a page, in document order."""
    source = _OTHER_EDITIONS.sub("", (BOOK / f"{page}.md").read_text(encoding="utf-8"))
    keys = _ROLE.findall(source)
    # a quiz repeats each choice's explanation for its "show answer" view (section.question-show): skip the copy
    spans = [
        s for s in article(page).select("span.pasted-text") if not s.find_parent("section", class_="question-show")
    ]
    assert len(spans) == len(keys), (
        f"{page}: {len(keys)} glue roles in the source but {len(spans)} "
        "pasted values in the HTML; is the build up to date?"
    )
    return tuple((k, " ".join(s.get_text().split())) for k, s in zip(keys, spans))


@functools.cache
def prose_blocks(page: str) -> tuple[str, ...]:
    """Text of each paragraph, list item and admonition title of a page, outside code cells and math."""
    art = article(page)
    for tag in art.select("div.cell, pre, script, style"):
        tag.decompose()
    for tag in art.select(".math"):
        tag.replace_with(" ".join(tag.get_text().replace("\\(", "").replace("\\)", "").split()))
    return tuple(" ".join(t.get_text().split()) for t in art.select("p, li, .admonition-title"))


def check_chapter_rhythm(page: str) -> None:
    """A question first, a bold concept, a labelled equation, and a takeaway."""
    art = article(page)
    first = art.select_one("section > p")
    assert first is not None and "?" in first.get_text(), f"{page}: the first paragraph should ask the question"
    assert art.select("p strong"), f"{page}: no concept in bold"
    assert art.select("div.math-wrapper, span.eqno, div.math"), f"{page}: no displayed equation"
    assert art.select("span.eqno"), f"{page}: no labelled (numbered) equation"
    titles = [" ".join(t.get_text().split()) for t in art.select(".admonition-title")]
    assert "Takeaway" in titles, f"{page}: no takeaway box"
