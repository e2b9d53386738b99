"""``{edition-glossary}``: the glossary in every edition's language, each term a target of ``{term}``.

It renders ``book/glossary.csv`` (a column per edition, and why each word was chosen, in the page's
language) and ``book/glossary-usage.csv`` (each term's definition), and makes each term a target of
Sphinx's ``{term}`` role under its English name: a chapter links ``{term}`arithmetic intensity```, its
translation ``{term}`산술 강도 <arithmetic intensity>```, and both lead to the same row.
"""

from __future__ import annotations

import csv
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from .common import ROOT, bookeditions, edition, is_original, require_version, theme_words

GLOSSARY = ROOT / "book" / "glossary.csv"
GLOSSARY_USAGE = ROOT / "book" / "glossary-usage.csv"


def glossary_rows() -> list[dict[str, str]]:
    """The rows of ``book/glossary.csv``, each checked to have every edition's word."""
    with GLOSSARY.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for number, row in enumerate(rows, start=2):
        for lang in bookeditions.codes():
            if not (row.get(lang) or "").strip():
                raise ExtensionError(f"{GLOSSARY.name}, line {number}: the {lang!r} term of {row.get('en')!r} is empty")
    return rows


def glossary_usage() -> dict[str, dict[str, str]]:
    """``book/glossary-usage.csv`` by English term: each term's one-sentence definition in every
    edition (``definition_<lang>``), and the renderings an edition avoids (``avoid_<lang>``, regular
    expressions separated by ``|``, checked by ``tests/test_editions.py``)."""
    with GLOSSARY_USAGE.open(encoding="utf-8", newline="") as fh:
        return {row["en"]: row for row in csv.DictReader(fh)}


class EditionGlossary(Directive):
    """A table of every term in every edition's language, with why the term was chosen in this edition's."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        env = self.state.document.settings.env
        env.note_dependency(str(GLOSSARY))  # the page is rebuilt when a term or a definition changes
        env.note_dependency(str(GLOSSARY_USAGE))
        lang = edition(env.app)
        words = theme_words(lang)
        original = is_original(env.app)
        columns = list(bookeditions.codes()) + [f"definition_{lang}"] + ([] if original else [f"why_{lang}"])
        headings = [e.name for e in bookeditions.editions()] + [words.get("Definition", "Definition")]
        headings += [] if original else [words.get("Why this word", "Why this word")]
        table = nodes.table(classes=["edition-glossary"])
        group = nodes.tgroup(cols=len(columns))
        table += group
        for _ in columns:
            group += nodes.colspec(colwidth=1)
        head, body = nodes.thead(), nodes.tbody()
        group += head
        group += body
        row = nodes.row()
        for heading in headings:
            row += nodes.entry("", nodes.paragraph(text=heading))
        head += row
        usage = glossary_usage()
        std = env.get_domain("std")
        for item in glossary_rows():
            item = {**usage.get(item["en"], {}), **item}
            row = nodes.row()
            for column in columns:
                row += nodes.entry("", nodes.paragraph(text=item.get(column) or ""))
            # every edition anchors a term at the same id, under its English name, for {term}`...` to link to
            node_id = term_id(item["en"])
            row["ids"].append(node_id)
            _note_term(std, item["en"], node_id, row)
            body += row
        return [table]


def term_id(english: str) -> str:
    """The anchor of a glossary term on the glossary page, the same in every edition.

    >>> term_id("high-bandwidth memory (HBM)")
    'term-high-bandwidth-memory-hbm'
    """
    return "term-" + nodes.make_id(english)


SPHINX_CHECKED = ("7.4.7",)  # the Sphinx versions _note_term was checked against


def _note_term(std: Any, name: str, node_id: str, row: nodes.Element) -> None:
    """Register a glossary term with Sphinx's standard domain, as its own ``glossary`` directive does.

    Workaround: the ``{term}`` role finds a term case-insensitively through ``StandardDomain._note_term``,
    which records the term's lower-case form besides the name as written; the public
    ``StandardDomain.note_object`` records only the latter, so ``{term}`high-bandwidth memory (HBM)``` would
    not resolve. The call is checked for the Sphinx versions in :data:`SPHINX_CHECKED` (``setup`` fails on
    any other).
    """
    std._note_term(name, node_id, location=row)


def setup(app: Sphinx) -> None:
    require_version("sphinx", SPHINX_CHECKED, "the glossary registers its terms through StandardDomain._note_term.")
    app.add_directive("edition-glossary", EditionGlossary)
