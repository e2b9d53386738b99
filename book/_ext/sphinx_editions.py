"""The Korean and Chinese editions: one set of executed chapters, three languages.

Each edition is the same Sphinx project built with another ``language``; the prose comes
from the gettext catalogs in ``locales/<lang>/LC_MESSAGES/`` (Sphinx's own i18n), and the
chapters' executed outputs come from the shared jupyter-cache, so no notebook runs twice.
This extension adds what Sphinx's i18n does not do for a notebook book:

- ``{glue:text}`` and ``{glue:}`` in a translated paragraph paste the page's own glued
  values (a translated paragraph is parsed on its own, away from the notebook's outputs);
- a figure is shown in the reader's language: the kernel renders each figure once per
  edition (``book/localfigures.py``) and keeps the other languages' PNGs in the output's
  metadata, and this build picks its own, failing on a missing translation or glyph;
- ``{edition-glossary}`` renders ``book/glossary.csv`` (English, Korean, Chinese, and why
  each word was chosen, in the page's language);
- every page links to the same page in the other editions and says so in
  ``<link rel="alternate" hreflang>``.

Example
-------
``python tools/editions.py build ko`` builds ``_build/html/ko/`` with ``language = "ko"``.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import re
import sys
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from myst_nb.core import render as nb_render
from myst_nb.ext.glue.roles import PasteRoleAny, PasteTextRole
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book"))
import localfigures  # book/localfigures.py: the same number templates as the figures

GLOSSARY = ROOT / "book" / "glossary.csv"
# Every edition, in the order the switcher shows them; English sits at the root of the site.
EDITIONS = {"en": "English", "ko": "한국어", "zh": "中文"}
METADATA_KEY = "roofline-course/editions"


def edition(app_or_config: Any) -> str:
    """The edition a build is for: its Sphinx ``language`` (``en`` when unset)."""
    config = getattr(app_or_config, "config", app_or_config)
    return (config.language or "en").split("_")[0]


# --- glue in translated paragraphs -------------------------------------------------------


def _own_page(role: Any) -> None:
    """Point a glue role at its own page when the paragraph was parsed away from the notebook."""
    env = getattr(role.document.settings, "env", None)
    if env is None or "::" in role.text:
        return
    renderer = role.document.get("nb_renderer")
    glued = renderer.renderer.nb_client.glue_data if renderer is not None else {}
    if role.text.split(":", 1)[0] in glued:
        return  # the page's own notebook is at hand: the usual lookup works
    role.text = f"/{env.doc2path(env.docname, False)}::{role.text}"


class TranslatedPasteText(PasteTextRole):
    """``{glue:text}`` that also works inside a translated paragraph."""

    def run(self) -> Any:
        if ":" not in self.text:
            self.text += ":s"  # the role reads a format after the last colon; "s" is its default
        _own_page(self)
        return super().run()


class TranslatedPasteAny(PasteRoleAny):
    """``{glue:}`` / ``{glue:any}`` that also works inside a translated paragraph."""

    def run(self) -> Any:
        _own_page(self)
        return super().run()


# --- figures in the reader's language ------------------------------------------------------

_render_image = nb_render.NbElementRenderer.render_image


def _render_localised_image(self: Any, data: Any) -> list[nodes.Element]:
    """myst-nb's image rendering, with the PNG swapped for this edition's."""
    lang = edition(self.renderer.sphinx_env.app) if hasattr(self.renderer, "sphinx_env") else "en"
    meta = (data.output_metadata or {}).get(data.mime_type, {}).get(METADATA_KEY)
    if lang != "en" and data.mime_type == "image/png":
        where = (self.renderer.sphinx_env.docname, data.line)
        if meta is None:
            LOGGER.warning(
                "a figure has no %s rendering; add `localfigures.install()` to the page's setup cell",
                lang,
                location=where,
            )
        else:
            for text in meta.get("missing", {}).get(lang, []):
                LOGGER.warning(
                    "figure text %r has no %s translation in locales/%s/LC_MESSAGES/figures.po",
                    text,
                    lang,
                    lang,
                    location=where,
                )
            for problem in meta.get("glyphs", {}).get(lang, []):
                LOGGER.warning("figure text in %s: %s", lang, problem, location=where)
            if lang in meta.get("png", {}):
                data = dataclasses.replace(data, content=meta["png"][lang])
    return _render_image(self, data)


ALT_CONTEXT = "alt"


class TranslateAltText(SphinxPostTransform):
    """Give every figure of a translated page its description in the page's language."""

    default_priority = 200
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        lang = edition(self.app)
        if lang == "en":
            return
        catalog = _catalog(lang, "figures")
        for image in self.document.findall(nodes.image):
            alt = " ".join(image.get("alt", "").split())
            if not alt:
                continue
            if (ALT_CONTEXT, alt) in catalog:
                image["alt"] = catalog[(ALT_CONTEXT, alt)]
            else:
                LOGGER.warning(
                    "a figure description has no %s translation in figures.po: %r", lang, alt[:60], location=image
                )


class TranslateTocCaptions(SphinxTransform):
    """Translate the table of contents' part captions, which are inserted after Sphinx translates a page."""

    default_priority = 101  # after sphinx-external-toc inserts the toctrees (100)

    def apply(self, **kwargs: Any) -> None:
        lang = edition(self.app)
        if lang == "en":
            return
        catalog = _catalog(lang, self.env.docname)  # the page's own catalog, e.g. book/intro.po
        for toctree in self.document.findall(addnodes.toctree):
            caption = toctree.get("caption")
            if caption and catalog.get((None, caption)):
                toctree["caption"] = catalog[(None, caption)]


def _chinese_search_words(app: Sphinx, config: Any) -> None:
    """Teach the Chinese search's word segmenter (jieba) the glossary's terms, so each is indexed whole."""
    if edition(config) != "zh":
        return
    words = set()
    for row in glossary_rows():
        for term in re.split(r"\s*/\s*", re.sub(r"[（(][^）)]*[）)]", "", row["zh"])):
            if re.search(r"[\u4e00-\u9fff]", term) and " " not in term.strip():
                words.add(term.strip())
    path = Path(app.doctreedir) / "jieba-glossary.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{word} 100 n\n" for word in sorted(words)), encoding="utf-8")
    config.html_search_options = {**(config.html_search_options or {}), "dict": str(path)}


@functools.cache
def pasted_catalog(lang: str) -> dict[str, str]:
    """Glued sentences and words (numbers as ``{0}``, …) -> translation, from ``pasted.po``."""
    return {english: text for (context, english), text in _catalog(lang, "pasted").items() if context is None}


@functools.cache
def _catalog(lang: str, name: str) -> dict[tuple[str | None, str], str]:
    """``(context, English) -> translation`` from ``locales/<lang>/LC_MESSAGES/<name>.po`` (empty if absent)."""
    return localfigures.catalog(lang, name)


class TranslatePastedText(SphinxPostTransform):
    """Put a glued value that has words in it (``lower``, ``4 of the 5``) into the page's language.

    Its numbers are kept: the value is looked up with each number replaced by ``{0}``, ``{1}``, …
    """

    default_priority = 20  # after myst-nb has pasted the values glued from other pages (5)
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        lang = edition(self.app)
        if lang == "en":
            return
        catalog = pasted_catalog(lang)
        for node in list(self.document.findall(nodes.inline)):
            if "pasted-text" not in node.get("classes", []):
                continue
            text = node.astext()
            if not localfigures.has_prose(text):
                continue
            key, numbers = localfigures.template(text)
            if key in catalog:
                translated = localfigures.fill(catalog[key], numbers)
                node.replace_self(nodes.inline(translated, translated, classes=node["classes"]))
            else:
                LOGGER.warning(
                    "pasted text %r has no %s translation in locales/%s/LC_MESSAGES/pasted.po",
                    key,
                    lang,
                    lang,
                    location=node,
                )


class TranslateExerciseTitles(SphinxPostTransform):
    """Translate the problems' titles (``:::{exercise} Question 1 [int8 matmul]``), which gettext does not collect."""

    default_priority = 10  # before sphinx-exercise folds the title into "Exercise 1 (...)" (20)
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        lang = edition(self.app)
        if lang == "en":
            return
        titles = {english: text for (context, english), text in _catalog(lang, "pasted").items() if context == "title"}
        # the page's own titles, and the copies a solution reads its exercise's title from
        registry = getattr(self.env, "sphinx_exercise_registry", {})
        trees = [self.document] + [entry["node"] for entry in registry.values() if "node" in entry]
        subtitles = [n for tree in trees for n in tree.findall(nodes.subtitle)]
        for node in subtitles:
            if type(node).__name__ != "exercise_subtitle" or node.get("translated_title"):
                continue
            node["translated_title"] = True
            english = node.astext()
            if english in titles:
                node.children = [nodes.Text(titles[english])]
            else:
                LOGGER.warning("exercise title %r has no %s translation in pasted.po", english, lang, location=node)


# --- the glossary ------------------------------------------------------------------------


def glossary_rows() -> list[dict[str, str]]:
    """The rows of ``book/glossary.csv``, each checked to have every edition's word."""
    with GLOSSARY.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for number, row in enumerate(rows, start=2):
        for lang in EDITIONS:
            if not (row.get(lang) or "").strip():
                raise ExtensionError(f"{GLOSSARY.name}, line {number}: the {lang!r} term of {row.get('en')!r} is empty")
    return rows


class EditionGlossary(Directive):
    """A table of every term in the three languages, with why the term was chosen in this edition's."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        lang = edition(self.state.document.settings.env.app)
        columns = list(EDITIONS) + ([f"why_{lang}"] if lang != "en" else [])
        headings = list(EDITIONS.values()) + ({"ko": ["선택한 이유"], "zh": ["选词理由"]}.get(lang, []))
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
        for item in glossary_rows():
            row = nodes.row()
            for column in columns:
                row += nodes.entry("", nodes.paragraph(text=item.get(column, "")))
            body += row
        return [table]


# --- the language switcher ---------------------------------------------------------------


def _links(app: Sphinx, pagename: str) -> dict[str, str]:
    """Relative links from ``pagename`` in this edition to the same page in every edition."""
    lang = edition(app)
    up = "../" * pagename.count("/")
    to_root = up + ("" if lang == "en" else "../")
    return {other: f"{to_root}{'' if other == 'en' else other + '/'}{pagename}.html" for other in EDITIONS}


def _switcher(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    if app.builder.format != "html" or "body" not in context:
        return
    lang = edition(app)
    links = _links(app, pagename)
    items = "".join(
        f'<li><a href="{href}" hreflang="{other}" lang="{other}"'
        + (' aria-current="page"' if other == lang else "")
        + f">{EDITIONS[other]}</a></li>"
        for other, href in links.items()
    )
    label = {"en": "Language", "ko": "언어", "zh": "语言"}[lang]
    context["body"] = f'<nav class="edition-switcher" aria-label="{label}"><ul>{items}</ul></nav>\n' + context["body"]
    alternates = "".join(
        f'<link rel="alternate" hreflang="{other}" href="{href}" />\n' for other, href in links.items()
    )
    context["metatags"] = context.get("metatags", "") + alternates


CSS = """
.edition-switcher ul { list-style: none; display: flex; gap: 0.8em; justify-content: flex-end; margin: 0 0 0.5em; padding: 0; font-size: 0.9em; }
.edition-switcher a[aria-current="page"] { font-weight: bold; text-decoration: none; }
"""


def _write_css(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        target = Path(app.outdir) / "_static" / "editions.css"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(CSS, encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    nb_render.NbElementRenderer.render_image = _render_localised_image  # type: ignore[method-assign]
    app.setup_extension("myst_nb")  # its glue domain first, then our roles over it
    app.add_role_to_domain("glue", "text", TranslatedPasteText(), override=True)
    app.add_role_to_domain("glue", "", TranslatedPasteAny(), override=True)
    app.add_role_to_domain("glue", "any", TranslatedPasteAny(), override=True)
    app.add_directive("edition-glossary", EditionGlossary)
    app.add_post_transform(TranslateAltText)
    app.add_transform(TranslateTocCaptions)
    app.add_post_transform(TranslatePastedText)
    app.add_post_transform(TranslateExerciseTitles)
    app.connect("config-inited", _chinese_search_words)
    app.connect("html-page-context", _switcher)
    app.connect("build-finished", _write_css)
    app.add_css_file("editions.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["EDITIONS", "edition", "glossary_rows", "setup"]
