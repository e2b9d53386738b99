"""The book's editions: one set of executed chapters, one Sphinx project, a build per language.

Each edition listed in ``book/editions.toml`` (read by ``book/bookeditions.py``) is the same Sphinx
project built with its own ``language``: the prose comes from the gettext catalogs in
``locales/<code>/LC_MESSAGES/`` (Sphinx's own i18n), and the chapters' executed outputs from the
shared jupyter-cache, so no notebook runs twice. This extension adds what Sphinx's i18n does not do
for a notebook book, one job per module:

==================  ====================================================================================
``common``          which edition a build is for; the registry and the catalogs; version guards
``glue``            ``{glue:text}`` and ``{glue:}`` inside a translated paragraph
``figures``         each figure in the edition's language (myst-nb's ``nb_render_plugin``), its description
``translate``       what the build generates or pastes: glued words, printed output, code comments,
                    equations' words, problem and solution titles, part captions
``search``          each edition's search language (``app.add_search_language``)
``glossary``        ``{edition-glossary}``: the terms in every edition's language, targets of ``{term}``
``theme``           the interface's words (``theme.po``) in front of Sphinx's and the themes' catalogs
``html``            the language switcher, hreflang links, launch links, template overrides
==================  ====================================================================================

Example
-------
``python tools/editions.py build ko`` builds ``_build/html/ko/`` with ``language = "ko"``.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

from . import figures, glossary, glue, html, search, theme, translate
from .common import bookeditions, edition
from .glossary import glossary_rows, term_id

INTRO = "book/intro"


def _reread_intro(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Read the intro again whenever another page changed: its table gives each page's reading time,
    computed from the pages' sources when it runs (it is executed every time it is read)."""
    return [INTRO] if INTRO in env.all_docs and (added | changed | removed) - {INTRO} else []


def setup(app: Sphinx) -> dict[str, Any]:
    for module in (glue, figures, translate, search, glossary, theme, html):
        module.setup(app)
    app.connect("env-get-outdated", _reread_intro)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["bookeditions", "edition", "glossary_rows", "setup", "term_id"]
