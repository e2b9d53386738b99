"""The page around the text: the language switcher, links to the edition's own files, the theme's templates.

- Every page links to the same page in the other editions (``templates/page.html``, from the links
  :func:`_edition_links` puts in the page's context) and says so in ``<link rel="alternate" hreflang>``.
- A link to a chapter's notebook or to the exercises opens the edition's own copy (:class:`EditionLinks`),
  and so do the page's Colab and Binder buttons (:func:`_launch_buttons`, from the theme's ``header_buttons``).
- ``templates/`` overrides the theme templates that write an interface word without ``_()`` (so that
  ``theme.po`` reaches it) or fail WCAG 2.1 (a name that does not contain the visible label):

  ==============================  =====================================================================
  ``layout.html``                 sphinx-book-theme's, with ``_('Page')``
  ``sbt-sidebar-nav.html``        sphinx-book-theme's, with ``_('Main')``
  ``toggle-*-sidebar.html``       sphinx-book-theme's, with ``_('Toggle primary sidebar')``, …
  ``author.html``                 sphinx-book-theme's, with the byline one message, ``_("By {author}")``
  ``search-button-field.html``    pydata-sphinx-theme's, without the ``aria-label`` "Search" that hides
                                  the visible "Search Ctrl+K"
  ``theme-switcher.html``         pydata-sphinx-theme's, without its icons' titles, which are read as
                                  text outside the button's name; its tooltip says what it does
  ``page.html``                   Sphinx's, with the language switcher above the page
  ==============================  =====================================================================

  The copies are checked for the theme versions in :data:`THEMES_CHECKED`: a build with another
  version fails, asking for the copies to be compared with the new templates.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

from .common import bookeditions, edition, is_original, require_version

HERE = Path(__file__).resolve().parent
THEMES_CHECKED = {"sphinx-book-theme": ("1.3.0",), "pydata-sphinx-theme": ("0.17.1",)}
SPHINX_CHECKED = ("7.4.7",)


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


def _launch_buttons(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """The page's Colab and Binder buttons open the edition's launched notebook (``editions/<lang>/book/``)."""
    lang = edition(app)

    def page(match: re.Match[str]) -> str:
        return match.group(1) + _edition_path(lang, match.group(2))

    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []) if group.get("type") == "group" else [group]:
            url = button.get("url")
            if not url:
                continue
            url = re.sub(
                r"^(https://colab\.research\.google\.com/github/.+?/blob/[^/]+/)(book/[\w-]+\.(?:md|ipynb))$", page, url
            )
            button["url"] = re.sub(
                r"^(https://mybinder\.org/v2/gh/.+?urlpath=tree/)(book/[\w-]+\.(?:md|ipynb))$", page, url
            )


def _links(app: Sphinx, pagename: str) -> dict[str, str]:
    """Relative links from ``pagename`` in this edition to the same page in every edition."""
    up = "../" * pagename.count("/")
    to_root = up + ("" if is_original(app) else "../")
    return {e.code: f"{to_root}{'' if e.original else e.code + '/'}{pagename}.html" for e in bookeditions.editions()}


def _edition_links(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """The language switcher's links (``templates/page.html`` draws them) and the page's hreflang links."""
    if app.builder.format != "html" or "body" not in context:
        return
    lang = edition(app)
    links = _links(app, pagename)
    context["edition_links"] = [
        {"code": e.code, "name": e.name, "href": links[e.code], "current": e.code == lang}
        for e in bookeditions.editions()
    ]
    alternates = "".join(
        f'<link rel="alternate" hreflang="{other}" href="{href}" />\n' for other, href in links.items()
    )
    context["metatags"] = context.get("metatags", "") + alternates


def _no_space_after_caption_number(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """A Chinese title's number runs into its full-width bracket: ``练习 1（int8 矩阵乘法）``.

    Workaround: Sphinx's HTML writer ends a number it puts before a title (``<span class="caption-number">``)
    with a space, which Chinese does not write before ``（``; the space is written by
    ``HTML5Translator.add_fignumber`` with no setting for it, so it is taken out of the page's body here.
    Checked for the Sphinx versions in :data:`SPHINX_CHECKED`.
    """
    if "body" not in context or bookeditions.get(edition(app)).punctuation != "chinese":
        return
    context["body"] = re.sub(r'(<span class="caption-number">[^<]*?) (</span>（)', r"\1\2", context["body"])


def _templates(app: Sphinx, config: Any) -> None:
    """Put ``templates/`` in front of the themes' templates, and ``static/`` among the static files."""
    config.templates_path.insert(0, str(HERE / "templates"))
    config.html_static_path.append(str(HERE / "static"))


def setup(app: Sphinx) -> None:
    for distribution, versions in THEMES_CHECKED.items():
        require_version(distribution, versions, "book/_ext/sphinx_editions/templates/ holds copies of its templates.")
    require_version("sphinx", SPHINX_CHECKED, "a Chinese title's number is written with a space after it.")
    app.connect("config-inited", _templates)
    app.add_post_transform(EditionLinks)
    app.connect("html-page-context", _edition_links)
    app.connect("html-page-context", _launch_buttons, priority=600)  # after sphinx-book-theme's (501)
    app.connect("html-page-context", _no_space_after_caption_number)
    app.add_css_file("editions.css")
