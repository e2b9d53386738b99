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
  each word was chosen, in the page's language), and makes each term a target of Sphinx's
  ``{term}`` role under its English name: a chapter links ``{term}`arithmetic intensity```, its
  translation ``{term}`산술 강도 <arithmetic intensity>```, and both lead to the same row;
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
import json
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


def _edition_tag(app: Sphinx, config: Any) -> None:
    """Tag the build with its edition, so ``{only} edition_zh`` keeps a box for the Chinese edition alone.

    The errata about a source in one language (the Chinese study summary, the Korean translation)
    sit in the chapters of that language's edition; every edition lists them on the errata page.
    """
    app.tags.add(f"edition_{edition(config)}")


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
    single = " ".join(sorted(word for word in words if len(word) == 1))
    config.html_search_options = {**(config.html_search_options or {}), "dict": str(path), "single_words": single}


@functools.cache
def pasted_catalog(lang: str) -> dict[str, str]:
    """Glued sentences and words (numbers as ``{0}``, …) -> translation, from ``pasted.po``."""
    return {english: text for (context, english), text in _catalog(lang, "pasted").items() if context is None}


@functools.cache
def _catalog(lang: str, name: str) -> dict[tuple[str | None, str], str]:
    """``(context, English) -> translation`` from ``locales/<lang>/LC_MESSAGES/<name>.po`` (empty if absent)."""
    return localfigures.catalog(lang, name)


def chinese_list(text: str) -> str:
    """A generated list of names as Chinese writes it, joined with 、 (numbers such as ``1,024`` kept).

    >>> chinese_list("TPU v4, TPU v5e"), chinese_list("TPU v5p 166.0, TPU7x (Ironwood) 312.6"), chinese_list("4, 3")
    ('TPU v4、TPU v5e', 'TPU v5p 166.0、TPU7x (Ironwood) 312.6', '4, 3')
    """
    items = text.split(", ")
    if len(items) < 2 or not all(re.search(r"[A-Za-z]", item) for item in items):
        return text
    return "、".join(items)


_HAN = r"[\u4e00-\u9fff]"


def chinese_output_punctuation(text: str) -> str:
    """A printed line with Chinese in it, punctuated as Chinese: ``通信受限; 临界批大小`` -> ``通信受限；临界批大小``.

    Only lines with Chinese characters change; a tuple of numbers such as ``(512, 512, 1024)`` keeps its commas.

    >>> chinese_output_punctuation("B = 1: 18.33 ms, 通信受限; 临界批大小 240.5")
    'B = 1：18.33 ms，通信受限；临界批大小 240.5'
    >>> chinese_output_punctuation("分块 (512, 512, 1024): 强度 341.2, 位于脊点左侧 (带宽受限)")
    '分块 (512, 512, 1024)：强度 341.2，位于脊点左侧（带宽受限）'
    """

    def line(text: str) -> str:
        if not re.search(_HAN, text):
            return text
        text = re.sub(r"\s*\(([^()]*" + _HAN + r"[^()]*)\)", r"（\1）", text)
        parts = re.split(r"(\([^()]*\))", text)  # a bracketed value keeps its own commas
        for i in range(0, len(parts), 2):
            parts[i] = re.sub(r"(?<!\s); ", "；", parts[i])
            parts[i] = re.sub(r"(?<!\s): +", "：", parts[i])
            parts[i] = re.sub(r"(?<!\s), ", "，", parts[i])
        return "".join(parts)

    return "\n".join(line(part) for part in text.split("\n"))


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
                listed = chinese_list(text) if lang == "zh" else text
                if listed != text:
                    node.replace_self(nodes.inline(listed, listed, classes=node["classes"]))
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


# --- what the chapters' code prints ------------------------------------------------------------


def translate_output(text: str, lang: str) -> str:
    """A printed output in the edition's language: each phrase of ``outputs.po`` replaced, numbers kept."""
    return localfigures.translate_output(text, lang)


class TranslateOutputs(SphinxPostTransform):
    """Put what a chapter's code prints (``-> communication-bound``) into the page's language."""

    default_priority = 20
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        lang = edition(self.app)
        if lang == "en":
            return
        for block in list(self.document.findall(nodes.literal_block)):
            if "output" in block.get("classes", []) and "stream" in block.get("classes", []):
                text = block.astext()
                translated = translate_output(text, lang)
                if lang == "zh":
                    translated = chinese_output_punctuation(translated)
                if translated != text:
                    block.children = [nodes.Text(translated)]
                    block.rawsource = translated


class TranslateMathWords(SphinxPostTransform):
    """The words of an equation in the page's language: ``\\text{communication bytes}`` from ``math.po``.

    Sphinx's i18n cannot translate a display equation (it re-parses the translation as a literal
    block), and a translation must keep its inline math as written; so the words inside ``\\text{}``
    are swapped here. Subscripts such as ``T_\\text{math}`` are names, not words: ``math.po`` omits them.
    """

    default_priority = 20
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        lang = edition(self.app)
        if lang == "en":
            return
        words = {english: text for (context, english), text in _catalog(lang, "math").items() if context is None}
        for node in list(self.document.findall(lambda n: isinstance(n, (nodes.math, nodes.math_block)))):
            latex = node.astext()
            new = re.sub(r"\\text\{([^{}]*)\}", lambda m: "\\text{" + words.get(m.group(1), m.group(1)) + "}", latex)
            if new != latex:
                node.children = [nodes.Text(new)]
                if "latex" in node:
                    node["latex"] = new


class TranslateCodeComments(SphinxPostTransform):
    """A chapter's code as the reader sees it, in the page's language: its comments (``code.po``), what it
    prints (``outputs.po``) and draws (``figures.po``), as the edition's launched notebook runs it.

    Only comments, docstrings and shown strings change (``tools/editions.py`` finds them): every edition
    shows the same names.
    """

    default_priority = 20
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        lang = edition(self.app)
        if lang == "en":
            return
        sys.path.insert(0, str(ROOT / "tools"))
        from editions import shown_code

        for block in list(self.document.findall(nodes.literal_block)):
            parent = block.parent
            if parent is None or "cell_input" not in parent.get("classes", []):
                continue
            source = block.astext()
            translated = shown_code(source, lang, self.env.docname.removeprefix("book/"))
            if translated != source:
                block.children = [nodes.Text(translated)]
                block.rawsource = translated


# --- the site around the text: theme strings, title, footer, launch buttons ---------------------

# Message domains whose strings an edition's ``theme.po`` translates first (Sphinx's and the themes'
# own catalogs stay behind it, for everything it does not name).
THEME_DOMAINS = ("sphinx", "booktheme", "togglebutton", "exercise")
COPY_BUTTON = {
    "copy": "Copy",
    "copy_to_clipboard": "Copy to clipboard",
    "copy_success": "Copied!",
    "copy_failure": "Failed to copy",
}
ATTRIBUTES = ("title", "aria-label", "placeholder", "data-bs-title", "data-bs-original-title", "alt")


@functools.cache
def theme_catalog(lang: str) -> dict[str, str]:
    """English interface string -> this edition's, from ``locales/<lang>/LC_MESSAGES/theme.po``."""
    return {english: text for (context, english), text in _catalog(lang, "theme").items() if context is None}


def _theme_translations(app: Sphinx, config: Any) -> None:
    """Put ``theme.po`` in front of Sphinx's, the themes' and the extensions' own translations.

    Their catalogs miss strings (``Color mode``) or word them for another region (Traditional
    Chinese ``列印``); a string ``theme.po`` names is taken from it, any other from theirs.
    The configuration values built from interface words (title, author, search box, toggle hints)
    are set here too.
    """
    import gettext
    import io

    from babel.messages.catalog import Catalog
    from babel.messages.mofile import write_mo
    from sphinx import locale

    lang = edition(config)
    if lang == "en":
        return
    words = theme_catalog(lang)
    catalog = Catalog(locale=lang)
    for english, text in words.items():
        catalog.add(english, text)
    data = io.BytesIO()
    write_mo(data, catalog)
    for domain in THEME_DOMAINS:
        ours = gettext.GNUTranslations(io.BytesIO(data.getvalue()))
        theirs = locale.translators.get(("general", domain))
        if theirs is not None and theirs.__class__ is not gettext.NullTranslations:
            ours.add_fallback(theirs)
        locale.translators[("general", domain)] = ours
        if domain == "sphinx":
            app.translator = ours  # what the HTML templates' _() reads
    title = words.get(config.html_title or "", config.html_title)
    config.html_title = config.project = title
    config.author = words.get(config.author, config.author)
    config.html_theme_options = {**(config.html_theme_options or {})}
    config.html_theme_options["search_bar_text"] = words.get("Search this book...", "Search this book...")
    # sphinx-copybutton picks its words by <html lang> from a table that lacks Korean: give it this edition's
    # (copybutton.js also draws its "copied" icon's title when it loads: _finish_static puts these words in it)
    copy = {key: words.get(english, english) for key, english in COPY_BUTTON.items()}
    app.add_js_file(
        None,
        body=f"if (typeof messages !== 'undefined') {{ messages[{json.dumps(lang)}] = {json.dumps(copy, ensure_ascii=False)}; "
        f"messages[document.documentElement.lang] = messages[{json.dumps(lang)}]; locale = document.documentElement.lang; }}",
        priority=600,  # after copybutton.js (500), before the page is loaded and its buttons are made
    )
    config.togglebutton_hint = words.get("Click to show", "Click to show")
    config.togglebutton_hint_hide = words.get("Click to hide", "Click to hide")


def _edition_path(lang: str, path: str) -> str:
    """A repository path in this edition: a chapter's launched notebook, an edition's assignment."""
    if re.fullmatch(r"book/[\w-]+\.(?:md|ipynb)", path):
        return f"editions/{lang}/{path.rsplit('.', 1)[0]}.ipynb"
    if lang == "en":
        return path
    return re.sub(r"^(exercises|solutions)/rooflines/", rf"\1/rooflines-{lang}/", path)


_GITHUB_FILE = re.compile(r"https://github\.com/([^/]+/[^/]+)/(?:blob|tree)/([^/]+)/(.+)$")


def launch_urls(repository: str, branch: str, path: str) -> tuple[str, str]:
    """The Colab and Binder addresses that open ``path`` of the repository (``owner/name``) as a notebook."""
    return (
        f"https://colab.research.google.com/github/{repository}/blob/{branch}/{path}",
        f"https://mybinder.org/v2/gh/{repository}/{branch}?urlpath=tree/{path}",
    )


class EditionLinks(SphinxPostTransform):
    """Send a reader to the edition's own files: ``exercises/rooflines/`` becomes ``rooflines-<lang>/``, and a
    problem's notebook opens on Colab, with a Binder link beside it, so it runs without cloning anything."""

    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        lang = edition(self.app)
        for node in list(self.document.findall(nodes.reference)):
            found = _GITHUB_FILE.match(node.get("refuri", ""))
            if not found:
                continue
            repository, branch, path = found.group(1), found.group(2), _edition_path(lang, found.group(3))
            node["refuri"] = f"https://github.com/{repository}/blob/{branch}/{path}"
            if re.fullmatch(r"exercises/rooflines[\w-]*/[\w-]+\.ipynb", path) and node.parent is not None:
                colab, binder = launch_urls(repository, branch, path)
                node["refuri"] = colab
                binder_link = nodes.reference("Binder", "Binder", refuri=binder, internal=False)
                index = node.parent.index(node)
                for offset, new in enumerate((nodes.Text(" ("), binder_link, nodes.Text(")")), start=1):
                    node.parent.insert(index + offset, new)


def _launch_buttons(html: str, lang: str) -> str:
    """The page's Colab and Binder buttons open the edition's launched notebook (``editions/<lang>/book/``)."""
    page = lambda m: m.group(1) + _edition_path(lang, m.group(2))
    html = re.sub(
        r"(colab\.research\.google\.com/github/[^\"']+?/blob/[^/\"']+/)(book/[\w-]+\.(?:md|ipynb))", page, html
    )
    return re.sub(r"(mybinder\.org/v2/gh/[^\"']+?urlpath=tree/)(book/[\w-]+\.(?:md|ipynb))", page, html)


def _localise_html(html: str, lang: str) -> str:
    """An edition's page with its interface words, launch buttons and exercise titles in its language."""
    words = theme_catalog(lang)
    head, sep, rest = html.partition("<article")
    body, sep2, tail = rest.partition("</article>")

    def attribute(match: re.Match) -> str:
        value = match.group(3)
        return f"{match.group(1)}={match.group(2)}{words.get(value, value)}{match.group(2)}"

    def text(match: re.Match) -> str:
        value = match.group(2)
        return f"{match.group(1)}{words.get(value, value)}{match.group(3)}"

    names = "|".join(map(re.escape, ATTRIBUTES))
    pattern_attr = re.compile(rf'(\b(?:{names}))=(["\'])([^"\'<>]*)\2')
    pattern_text = re.compile(r"(>\s*)([^<>]*?[A-Za-z][^<>]*?)(\s*<)")

    def outside(part: str) -> str:
        return pattern_text.sub(text, pattern_attr.sub(attribute, part))

    head, tail = outside(head), outside(tail)
    body = pattern_attr.sub(attribute, body)
    author = words.get("The Roofline Course contributors", "")
    head = re.sub(
        r'(<p class="component-author">).*?(</p>)',
        lambda m: m.group(1) + "\n" + words.get("By {author}", "By {author}").format(author=author) + "\n" + m.group(2),
        head,
        flags=re.S,
    )
    tail = re.sub(
        r'(<p class="component-author">).*?(</p>)',
        lambda m: m.group(1) + "\n" + words.get("By {author}", "By {author}").format(author=author) + "\n" + m.group(2),
        tail,
        flags=re.S,
    )
    # a solution's title: "Solution to" + the exercise's title, in this language's order
    solution = words.get("Solution to {exercise}", "")
    marker = words.get("Solution to", "")

    def solution_title(match: re.Match) -> str:
        link = f"{match.group(1)}{match.group(2).strip()}</a>"
        return '<p class="admonition-title">' + solution.format(exercise=link) + "</p>"

    if solution and marker:
        body = re.sub(
            r'<p class="admonition-title">'
            + re.escape(marker)
            + r'\s*(<a class="reference internal" href="[^"]*">)(.*?)</a>\s*</p>',
            solution_title,
            body,
            flags=re.S,
        )
    if lang == "zh":  # full-width brackets around a Chinese title: 练习 1（int8 矩阵乘法）
        body = re.sub(
            r'(<p class="admonition-title">.*?</p>)',
            lambda m: re.sub(r" \(([^()<>]*)\)", r"（\1）", m.group(1)),
            body,
            flags=re.S,
        )
        body = re.sub(r'(<span class="caption-number">[^<]*?) (</span>（)', r"\1\2", body)
    return head + sep + body + sep2 + tail


def _accessible_html(html: str) -> str:
    """Fix the theme's two WCAG 2.1 failures: names that do not contain the visible label.

    The search button is named "Search" but shows "Search Ctrl+K"; its visible text names it.
    The colour-mode button's icons carry titles ("Light"), which the icon font turns into text that is
    not part of the button's name ("Color mode"); the button's tooltip already says what it does.
    """
    html = re.sub(r'(<button class="btn search-button-field[^"]*"[^>]*?) aria-label="[^"]*"', r"\1", html)
    html = re.sub(r'<i class="theme-switch [^>]*>', lambda m: re.sub(r'\s+title="[^"]*"', "", m.group(0)), html)
    return html


def _finish_pages(app: Sphinx, exception: Exception | None) -> None:
    """Rewrite every built page: the theme's accessibility fixes, and an edition's own words."""
    if exception is not None or app.builder.format != "html":
        return
    lang = edition(app)
    for path in Path(app.outdir).rglob("*.html"):
        html = path.read_text(encoding="utf-8")
        new = _launch_buttons(_accessible_html(html), lang)
        if lang != "en":
            new = _localise_html(new, lang)
        if new != html:
            path.write_text(new, encoding="utf-8")


# --- search in each edition's language ---------------------------------------------------------

# Korean particles (조사) and copula endings that follow a noun, longest first: 강도가, 강도는 and
# 강도를 are all the word 강도. The index holds each word as written and without its particle;
# a query word is looked up as typed, then without its particle.
KOREAN_PARTICLES = sorted(
    [
        "에서부터",
        "으로부터",
        "이라는",
        "이라고",
        "이라면",
        "이지만",
        "이므로",
        "에서는",
        "에서도",
        "에서의",
        "에게서",
        "으로는",
        "으로도",
        "으로서",
        "으로써",
        "으로의",
        "로부터",
        "에게는",
        "과는",
        "와는",
        "과의",
        "와의",
        "과도",
        "와도",
        "에서",
        "에게",
        "에는",
        "에도",
        "에의",
        "으로",
        "로는",
        "로도",
        "로서",
        "로써",
        "로의",
        "라는",
        "라고",
        "라면",
        "이다",
        "이며",
        "이고",
        "이면",
        "이나",
        "이란",
        "이든",
        "까지",
        "부터",
        "처럼",
        "보다",
        "만큼",
        "마다",
        "조차",
        "밖에",
        "대로",
        "이랑",
        "하고",
        "의",
        "은",
        "는",
        "이",
        "가",
        "을",
        "를",
        "에",
        "와",
        "과",
        "도",
        "만",
        "로",
        "나",
        "란",
        "며",
        "랑",
    ],
    key=len,
    reverse=True,
)
HANGUL_WORD = re.compile(r"[\uac00-\ud7a3]+")
SCRIPT_RUN = re.compile(r"[\uac00-\ud7a3]+|[^\uac00-\ud7a3]+")


def korean_stems(word: str) -> list[str]:
    """``word`` without each particle it may end in (강도가 -> [강도]); at least one syllable is kept."""
    return [word[: -len(p)] for p in KOREAN_PARTICLES if word.endswith(p) and len(word) > len(p)]


# The query side, in the browser: a Korean word unknown to the index is looked up without its
# particle; a Chinese run of characters is cut into the longest words the index knows, the way
# jieba cut the pages (什么是算术强度 -> 算术强度), leaving out words that only ask the question.
SPLITTER_JS = r"""
var EDITION_PARTICLES = %(particles)s;
var EDITION_QUESTION_WORDS = new Set(%(question_words)s);
var splitQuery = (query) => {
  const index = (typeof Search !== "undefined" && Search._index) || {};
  const known = (w) => [index.terms, index.titleterms].some(
    (t) => t && Object.prototype.hasOwnProperty.call(t, w.toLowerCase()));
  const out = [];
  const words = query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu).filter((t) => t);
  for (const word of words) {
    for (const run of word.match(/[\u3400-\u9fff\uf900-\ufaff]+|[\uac00-\ud7a3]+|[^\u3400-\u9fff\uf900-\ufaff\uac00-\ud7a3]+/gu)) {
      if (/^[\uac00-\ud7a3]+$/.test(run)) {
        const stems = EDITION_PARTICLES.filter((p) => run.endsWith(p) && run.length > p.length)
          .map((p) => run.slice(0, run.length - p.length));
        out.push(known(run) ? run : (stems.find(known) || run));
      } else if (/^[\u3400-\u9fff\uf900-\ufaff]+$/.test(run)) {
        let i = 0;
        while (i < run.length) {
          let j = run.length;
          while (j > i + 1 && !known(run.slice(i, j))) j--;
          const piece = run.slice(i, j);
          if (known(piece) && !EDITION_QUESTION_WORDS.has(piece)) out.push(piece);
          else if (j - i > 1 && !EDITION_QUESTION_WORDS.has(piece)) out.push(piece);
          i = j;
        }
      } else {
        out.push(run);
      }
    }
  }
  return out;
};
"""
CHINESE_QUESTION_WORDS = ["什么", "什么是", "为什么", "怎么", "怎样", "如何", "哪些", "哪个", "多少", "是否", "是不是"]


def _splitter() -> str:
    import json

    return SPLITTER_JS % {
        "particles": json.dumps(KOREAN_PARTICLES, ensure_ascii=False),
        "question_words": json.dumps(CHINESE_QUESTION_WORDS, ensure_ascii=False),
    }


def _search_languages() -> None:
    """Register the Korean and Chinese search languages with Sphinx (it has no Korean one)."""
    from sphinx import search
    from sphinx.search.en import SearchEnglish
    from sphinx.search.zh import SearchChinese

    class SearchKorean(SearchEnglish):
        """English words stemmed as in English; each Korean word indexed as written and without its particle."""

        lang = "ko"
        language_name = "Korean"
        js_splitter_code = _splitter()
        js_stemmer_code = (
            SearchEnglish.js_stemmer_code
            + "\nvar EnglishStemmer = Stemmer;\n"
            + "Stemmer = function () { const en = new EnglishStemmer();"
            + " this.stemWord = (w) => (/[\\uac00-\\ud7a3]/.test(w) ? w : en.stemWord(w)); };\n"
        )

        def split(self, input: str) -> list[str]:
            words = []
            for token in super().split(input):  # FLOPs는 -> FLOPs (a particle glued to a Latin word is dropped)
                runs = SCRIPT_RUN.findall(token)
                for i, run in enumerate(runs):
                    if HANGUL_WORD.fullmatch(run):
                        if i and run in KOREAN_PARTICLES:
                            continue
                        words += [run, *korean_stems(run)]
                    else:
                        words.append(run)
            return words

        def stem(self, word: str) -> str:
            return word if HANGUL_WORD.search(word) else super().stem(word)

    class SearchChineseSegmented(SearchChinese):
        """jieba for the pages (as Sphinx does), and the same words found in a query by the browser."""

        js_splitter_code = _splitter()

        def init(self, options: dict[str, str]) -> None:
            super().init(options)
            self.single = set(options.get("single_words", "").split())

        def word_filter(self, stemmed_word: str) -> bool:
            return len(stemmed_word) > 1 or stemmed_word in self.single  # 块 (tile) is a word on its own

        def stem(self, word: str) -> str:
            # a Latin word is stemmed as the browser stems the query (OPs -> op), whatever its length
            return self.stemmer.stemWord(word.lower()) if self.latin1_letters.fullmatch(word) else word.lower()

    search.languages["ko"] = SearchKorean
    search.languages["zh"] = SearchChineseSegmented


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


GLOSSARY_USAGE = ROOT / "book" / "glossary-usage.csv"


def glossary_usage() -> dict[str, dict[str, str]]:
    """``book/glossary-usage.csv`` by English term: each term's one-sentence definition in every
    edition (``definition_<lang>``), and the renderings an edition avoids (``avoid_<lang>``, regular
    expressions separated by ``|``, checked by ``tests/test_editions.py``)."""
    with GLOSSARY_USAGE.open(encoding="utf-8", newline="") as fh:
        return {row["en"]: row for row in csv.DictReader(fh)}


class EditionGlossary(Directive):
    """A table of every term in the three languages, with why the term was chosen in this edition's."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        env = self.state.document.settings.env
        env.note_dependency(str(GLOSSARY))  # the page is rebuilt when a term or a definition changes
        env.note_dependency(str(GLOSSARY_USAGE))
        lang = edition(env.app)
        columns = list(EDITIONS) + [f"definition_{lang}"] + ([f"why_{lang}"] if lang != "en" else [])
        headings = list(EDITIONS.values()) + [{"en": "Definition", "ko": "정의", "zh": "定义"}[lang]]
        headings += {"ko": ["선택한 이유"], "zh": ["选词理由"]}.get(lang, [])
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
            std._note_term(item["en"], node_id, location=row)
            body += row
        return [table]


def term_id(english: str) -> str:
    """The anchor of a glossary term on the glossary page, the same in every edition.

    >>> term_id("high-bandwidth memory (HBM)")
    'term-high-bandwidth-memory-hbm'
    """
    return "term-" + nodes.make_id(english)


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
/* links inside a coloured admonition: the theme's link blue is 4.3:1 on the pale blue, under WCAG's 4.5:1 */
html[data-theme="light"] .admonition a, html[data-theme="light"] div.admonition a { color: #0a4fb3; }
"""


def _finish_static(app: Sphinx, exception: Exception | None) -> None:
    """An edition's own words in the interface's scripts, where the theme and extensions bring their own.

    ``translations.js`` (Sphinx's search messages, e.g. how many pages were found) takes every string
    ``theme.po`` names; ``copybutton.js`` gets the copy button's words before it draws its icons.
    """
    lang = edition(app)
    if exception is not None or app.builder.format != "html" or lang == "en":
        return
    words = theme_catalog(lang)
    static = Path(app.outdir) / "_static"
    translations = static / "translations.js"
    if translations.is_file():
        script = translations.read_text(encoding="utf-8")
        start, end = script.index("{"), script.rindex("}") + 1
        data = json.loads(script[start:end])
        data["messages"].update({key: words[key] for key in data.get("messages", {}) if words.get(key)})
        translations.write_text(script[:start] + json.dumps(data, ensure_ascii=False, indent=4) + script[end:], "utf-8")
    copybutton = static / "copybutton.js"
    if copybutton.is_file():
        script = copybutton.read_text(encoding="utf-8")
        copy = {key: words.get(english, english) for key, english in COPY_BUTTON.items()}
        own = f"messages[document.documentElement.lang] = {json.dumps(copy, ensure_ascii=False)};\n"
        if own not in script and "let locale = 'en'" in script:
            copybutton.write_text(script.replace("let locale = 'en'", own + "let locale = 'en'", 1), "utf-8")


def _write_css(app: Sphinx, exception: Exception | None) -> None:
    _finish_pages(app, exception)
    _finish_static(app, exception)
    if exception is None and app.builder.format == "html":
        target = Path(app.outdir) / "_static" / "editions.css"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(CSS, encoding="utf-8")


# --- the intro's table of chapters -------------------------------------------------------


INTRO = "book/intro"


def _reread_intro(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Read the intro again whenever another page changed: its table gives each page's reading time,
    computed from the pages' sources when it runs (it is executed every time it is read)."""
    return [INTRO] if INTRO in env.all_docs and (added | changed | removed) - {INTRO} else []


def setup(app: Sphinx) -> dict[str, Any]:
    nb_render.NbElementRenderer.render_image = _render_localised_image  # type: ignore[method-assign]
    _search_languages()
    app.setup_extension("myst_nb")  # its glue domain first, then our roles over it
    app.add_role_to_domain("glue", "text", TranslatedPasteText(), override=True)
    app.add_role_to_domain("glue", "", TranslatedPasteAny(), override=True)
    app.add_role_to_domain("glue", "any", TranslatedPasteAny(), override=True)
    app.add_directive("edition-glossary", EditionGlossary)
    app.add_post_transform(TranslateAltText)
    app.add_transform(TranslateTocCaptions)
    app.add_post_transform(TranslatePastedText)
    app.add_post_transform(TranslateOutputs)
    app.add_post_transform(TranslateMathWords)
    app.add_post_transform(TranslateCodeComments)
    app.add_post_transform(TranslateExerciseTitles)
    app.connect("config-inited", _edition_tag)
    app.connect("config-inited", _chinese_search_words)
    app.connect("config-inited", _theme_translations, priority=400)  # before extensions read their words
    app.add_post_transform(EditionLinks)
    app.connect("html-page-context", _switcher)
    app.connect("env-get-outdated", _reread_intro)
    app.connect("build-finished", _write_css)
    app.add_css_file("editions.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["EDITIONS", "edition", "glossary_rows", "setup", "term_id"]
