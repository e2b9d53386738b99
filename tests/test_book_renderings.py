"""One number, one rendering, on every page of the built book.

The course's rule (book/intro.md, "How numbers are shown"): a glue key names one
quantity everywhere, so it must render the same on every page that shows it;
a ratio from the book's figures is a whole number and the same ratio from the
spec table keeps one decimal, so a known quantity never appears with a second
rounding; and no page shows Python's raw float or exponent formatting.

Needs a built book (see ``test_book_numbers``).
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from book_support import BOOK, article, glued

PAGES = sorted(p.stem for p in BOOK.glob("*.md"))

# Renderings that a known quantity must never take (what a second rounding policy would print).
NEVER = {
    "TPU v5e ridge, 1.97e14 / 8.19e11 = 240.54, rounded to a whole number": re.compile(r"(?<![\d.])241(?![\d.])"),
    "TPU v5e DCN 3.125e9 cut to three digits": re.compile(r"3\.12(e\+?0?9| GB/s)"),
    "Python exponent format (write 1.97e14, not 1.97e+14)": re.compile(r"\d[eE]\+\d"),
    "a raw float with seven or more decimals": re.compile(r"\d\.\d{7,}"),
}


def _all_text(page: str) -> str:
    """Prose and cell outputs of a page (not code inputs, which are code, nor math)."""
    art = article(page)
    for tag in art.select(".cell_input, script, style, .math"):
        tag.decompose()
    return " ".join(art.get_text().split())


def test_each_key_renders_one_way_across_pages():
    """A glue key used on several pages (or twice on one) shows the same text everywhere."""
    seen: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for page in PAGES:
        for key, text in glued(page):
            seen[key][text].add(page)
    clashes = {k: {t: sorted(p) for t, p in v.items()} for k, v in seen.items() if len(v) > 1}
    assert not clashes, f"glue keys rendered more than one way: {clashes}"


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("what", list(NEVER))
def test_no_second_rendering(page, what):
    found = NEVER[what].findall(_all_text(page))
    assert not found, f"{page}: shows {found} ({what})"


def test_the_checks_can_fail():
    """The patterns catch what they are meant to catch."""
    assert NEVER["TPU v5e ridge, 1.97e14 / 8.19e11 = 240.54, rounded to a whole number"].search("ridge 241 FLOPs")
    assert not NEVER["TPU v5e ridge, 1.97e14 / 8.19e11 = 240.54, rounded to a whole number"].search("2410 or 241.5")
    assert NEVER["TPU v5e DCN 3.125e9 cut to three digits"].search("3.12e+09 bytes/s")
    assert NEVER["TPU v5e DCN 3.125e9 cut to three digits"].search("DCN 3.12 GB/s")
    assert not NEVER["TPU v5e DCN 3.125e9 cut to three digits"].search("3.125e9 and 3.12e14")
    assert NEVER["Python exponent format (write 1.97e14, not 1.97e+14)"].search("4.92e+13")
    assert NEVER["a raw float with seven or more decimals"].search("1.6666666666666667")
