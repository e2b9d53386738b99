"""The text Sphinx's i18n does not reach, in the page's language.

Sphinx translates a page's paragraphs from ``locales/<lang>/LC_MESSAGES/book/<page>.po``. What the
build generates or pastes is put in the edition's language here, each from its own catalog:

- glued values with words in them (``pasted.po``), numbers kept;
- what a chapter's code prints (``outputs.po``) and its code's comments (``code.po``);
- the words inside ``\\text{}`` of an equation (``math.po``);
- the problems' titles (``pasted.po``, context ``title``) and a solution's title (``theme.po``);
- the table of contents' part captions (the page's own catalog).

An edition with ``punctuation = "chinese"`` in ``book/editions.toml`` also gets Chinese punctuation in
generated lists, printed lines and titles.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

from .common import ROOT, catalog, edition, entry, is_original, localfigures, messages, theme_words

LOGGER = logging.getLogger(__name__)


def chinese_punctuation(app: Any) -> bool:
    """True when the edition writes Chinese punctuation (``punctuation = "chinese"`` in its registry entry)."""
    return entry(app).punctuation == "chinese"


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


def _edition_tag(app: Sphinx, config: Any) -> None:
    """Tag the build with its edition, so ``{only} edition_zh`` keeps a box for the Chinese edition alone.

    The errata about a source in one language (the Chinese study summary, the Korean translation)
    sit in the chapters of that language's edition; every edition lists them on the errata page.
    """
    app.tags.add(f"edition_{edition(config)}")


class TranslateTocCaptions(SphinxTransform):
    """Translate the table of contents' part captions, which are inserted after Sphinx translates a page."""

    default_priority = 101  # after sphinx-external-toc inserts the toctrees (100)

    def apply(self, **kwargs: Any) -> None:
        if is_original(self.app):
            return
        captions = catalog(edition(self.app), self.env.docname)  # the page's own catalog, e.g. book/intro.po
        for toctree in self.document.findall(addnodes.toctree):
            caption = toctree.get("caption")
            if caption and captions.get((None, caption)):
                toctree["caption"] = captions[(None, caption)]


class TranslatePastedText(SphinxPostTransform):
    """Put a glued value that has words in it (``lower``, ``4 of the 5``) into the page's language.

    Its numbers are kept: the value is looked up with each number replaced by ``{0}``, ``{1}``, …
    """

    default_priority = 20  # after myst-nb has pasted the values glued from other pages (5)
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        if is_original(self.app):
            return
        lang = edition(self.app)
        pasted = messages(lang, "pasted")
        for node in list(self.document.findall(nodes.inline)):
            if "pasted-text" not in node.get("classes", []):
                continue
            text = node.astext()
            if not localfigures.has_prose(text):
                listed = chinese_list(text) if chinese_punctuation(self.app) else text
                if listed != text:
                    node.replace_self(nodes.inline(listed, listed, classes=node["classes"]))
                continue
            key, numbers = localfigures.template(text)
            key = plain_quotes(key) if key not in pasted else key  # Sphinx's smart quotes: ’ where the catalog has '
            if key in pasted:
                translated = localfigures.fill(pasted[key], numbers)
                node.replace_self(nodes.inline(translated, translated, classes=node["classes"]))
            else:
                LOGGER.warning(
                    "pasted text %r has no %s translation in locales/%s/LC_MESSAGES/pasted.po",
                    key,
                    lang,
                    lang,
                    location=node,
                )


_SMART_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def plain_quotes(text: str) -> str:
    """``text`` with the curly quotes that Sphinx's smart quotes put in turned back into straight ones.

    >>> print(plain_quotes("of the reference run\u2019s \u201cbest\u201d"))
    of the reference run's "best"
    """
    return text.translate(_SMART_QUOTES)


class TranslateExerciseTitles(SphinxPostTransform):
    """Translate the problems' titles (``:::{exercise} Question 1 [int8 matmul]``), which gettext does not collect."""

    default_priority = 10  # before sphinx-exercise folds the title into "Exercise 1 (...)" (20)
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        if is_original(self.app):
            return
        lang = edition(self.app)
        titles = messages(lang, "pasted", context="title")
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


EXERCISE_NODES = ("solution_node", "exercise_node", "exercise_enumerable_node")  # sphinx-exercise's admonitions


class TranslateSolutionTitles(SphinxPostTransform):
    """A solution's title in the edition's word order: ``Solution to {exercise}`` from ``theme.po``.

    sphinx-exercise writes the title as its word for "Solution to" followed by a link to the exercise
    (``해답 연습 문제 1``); Korean puts the word after the link (``연습 문제 1 해답``). An edition with Chinese
    punctuation also gets full-width brackets around a title's subtitle (``练习 1（int8 矩阵乘法）``).
    """

    default_priority = 23  # after sphinx-exercise has resolved the titles (20-22)
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        if is_original(self.app):
            return
        words = theme_words(edition(self.app))
        pattern, marker = words.get("Solution to {exercise}", ""), words.get("Solution to", "")
        for title in list(self.document.findall(nodes.title)):
            parent = title.parent
            kind = type(parent).__name__
            if not isinstance(parent, nodes.Admonition) and kind not in EXERCISE_NODES:
                continue
            links = [child for child in title.children if isinstance(child, nodes.reference)]
            solution = kind == "solution_node" and len(links) == 1 and title.children[0].astext().strip() == marker
            if solution and pattern and marker:
                self._reorder(title, links[0], pattern)
            if chinese_punctuation(self.app):
                _full_width_brackets(title)

    @staticmethod
    def _reorder(title: nodes.title, link: nodes.reference, pattern: str) -> None:
        before, _, after = pattern.partition("{exercise}")
        if link.children and isinstance(link.children[0], nodes.Text):
            link.children[0] = nodes.Text(link.children[0].astext().lstrip())
        title.children = []
        if before:
            title += nodes.Text(before)
        title += link
        if after:
            title += nodes.Text(after)


def _full_width_brackets(element: nodes.Element) -> None:
    """A title's bracketed subtitle in full-width brackets: ``练习 1 (int8 矩阵乘法)`` -> ``练习 1（int8 矩阵乘法）``.

    sphinx-exercise writes the subtitle as three texts, `` (``, the title and ``)``; a subtitle with
    markup inside (math) keeps its brackets, as does a bracket within one text that holds markup.
    """
    for child in list(element.children):
        if isinstance(child, nodes.reference):
            _full_width_brackets(child)
    children = element.children
    for i, child in enumerate(children):
        if not isinstance(child, nodes.Text):
            continue
        value = str(child)
        new = re.sub(r" \(([^()]*)\)", r"（\1）", value)
        if new != value:
            element.replace(child, nodes.Text(new))
            continue
        if not value.endswith(" ("):
            continue
        for j in range(i + 1, len(children)):
            inner = children[j]
            if not isinstance(inner, nodes.Text):
                break
            if str(inner).startswith(")"):
                element.replace(child, nodes.Text(value[:-2] + "（"))
                element.replace(inner, nodes.Text("）" + str(inner)[1:]))
                break
            if "(" in str(inner) or ")" in str(inner):
                break


class TranslateOutputs(SphinxPostTransform):
    """Put what a chapter's code prints (``-> communication-bound``) into the page's language."""

    default_priority = 20
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        if is_original(self.app):
            return
        lang = edition(self.app)
        for block in list(self.document.findall(nodes.literal_block)):
            if "output" in block.get("classes", []) and "stream" in block.get("classes", []):
                text = block.astext()
                translated = localfigures.translate_output(text, lang)
                if chinese_punctuation(self.app):
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
        if is_original(self.app):
            return
        words = messages(edition(self.app), "math")
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
        if is_original(self.app):
            return
        import sys

        sys.path.insert(0, str(ROOT / "tools"))
        from editions import shown_code

        lang = edition(self.app)
        for block in list(self.document.findall(nodes.literal_block)):
            parent = block.parent
            if parent is None or "cell_input" not in parent.get("classes", []):
                continue
            source = block.astext()
            translated = shown_code(source, lang, self.env.docname.removeprefix("book/"))
            if translated != source:
                block.children = [nodes.Text(translated)]
                block.rawsource = translated


def setup(app: Sphinx) -> None:
    app.connect("config-inited", _edition_tag)
    app.add_transform(TranslateTocCaptions)
    app.add_post_transform(TranslatePastedText)
    app.add_post_transform(TranslateOutputs)
    app.add_post_transform(TranslateMathWords)
    app.add_post_transform(TranslateCodeComments)
    app.add_post_transform(TranslateExerciseTitles)
    app.add_post_transform(TranslateSolutionTitles)
