"""Figures in the reader's language.

The kernel renders each figure once per edition (``book/localfigures.py``) and keeps the other
editions' PNGs in the output's metadata. :class:`EditionRenderer`, myst-nb's renderer for this book
(``nb_render_plugin: roofline-editions`` in ``_config.yml``; the entry point is in ``pyproject.toml``),
shows the edition's own PNG, and turns a missing translation or glyph into a build warning (an error
under ``-W``). :class:`TranslateAltText` gives each figure its description in the edition's language.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from docutils import nodes
from myst_nb.core.render import EntryPointError, MimeData, NbElementRenderer, load_renderer
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

from .common import METADATA_KEY, catalog, edition, is_original

LOGGER = logging.getLogger(__name__)
RENDER_PLUGIN = "roofline-editions"  # its entry point in group myst_nb.renderers (pyproject.toml)
ALT_CONTEXT = "alt"  # the context of a figure description in figures.po


class EditionRenderer(NbElementRenderer):
    """myst-nb's renderer, showing each PNG in the edition's language."""

    def render_image(self, data: MimeData) -> list[nodes.Element]:
        env = getattr(self.renderer, "sphinx_env", None)
        if env is None or data.mime_type != "image/png" or is_original(env.app):
            return super().render_image(data)
        lang = edition(env.app)
        meta = (data.output_metadata or {}).get(data.mime_type, {}).get(METADATA_KEY)
        where = (env.docname, data.line)
        if meta is None:
            LOGGER.warning(
                "a figure has no %s rendering; add `localfigures.install()` to the page's setup cell",
                lang,
                location=where,
            )
            return super().render_image(data)
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
        return super().render_image(data)


class TranslateAltText(SphinxPostTransform):
    """Give every figure of a translated page its description in the page's language."""

    default_priority = 200
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        if is_original(self.app):
            return
        lang = edition(self.app)
        descriptions = catalog(lang, "figures")
        for image in self.document.findall(nodes.image):
            alt = " ".join(image.get("alt", "").split())
            if not alt:
                continue
            if (ALT_CONTEXT, alt) in descriptions:
                image["alt"] = descriptions[(ALT_CONTEXT, alt)]
            else:
                LOGGER.warning(
                    "a figure description has no %s translation in figures.po: %r", lang, alt[:60], location=image
                )


def _check_renderer(app: Sphinx, config: Any) -> None:
    """Stop a build whose notebooks would be rendered without :class:`EditionRenderer`."""
    if config.nb_render_plugin != RENDER_PLUGIN:
        raise ExtensionError(
            f"nb_render_plugin is {config.nb_render_plugin!r}: set it to {RENDER_PLUGIN!r} (sphinx.config in "
            "_config.yml), or the editions show English figures"
        )
    try:
        load_renderer(RENDER_PLUGIN)
    except EntryPointError:
        raise ExtensionError(
            f"myst-nb finds no renderer {RENDER_PLUGIN!r}: its entry point is in pyproject.toml, installed with "
            "the project; run `make setup` (or `uv pip install -e .`) again"
        ) from None


def setup(app: Sphinx) -> None:
    app.connect("config-inited", _check_renderer)
    app.add_post_transform(TranslateAltText)
