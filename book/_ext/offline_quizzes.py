"""Self-check quizzes: TeachBooks Questions' ``{question}`` directive, kept offline.

The chapters' multiple-choice quizzes use `teachbooks-questions
<https://pypi.org/project/teachbooks-questions/>`_ (TU Delft's TeachBooks project), whose
``{question}`` directive parses every option and every explanation as ordinary MyST, so
each is a paragraph that Sphinx's gettext step extracts and the Korean and Chinese
editions translate like any other (its buttons are parsed text too, and translated in
``locales/<lang>/LC_MESSAGES/book/*.po``).

The package also registers MathLive from a CDN and three module scripts that import a
computer-algebra engine from another CDN; they serve its short-answer questions, which
the course does not use. This extension loads the package and keeps only the scripts of
its own folder that need nothing from the network, so a page never asks for anything
outside the built book. ``tests/test_browser_book.py`` checks that in every edition.

Example
-------
In a chapter::

    :::{question}
    :nocaption:

    Which is the lower bound on the runtime?
    ---
    [x] The maximum of the two times.
    > Right: with perfect overlap ...
    [ ] Their sum.
    > The sum is the upper bound ...
    ---
    :::
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

# The package's scripts that fetch from a CDN, or serve only the question types that do.
NEEDS_NETWORK = (
    "teachbooks_sab.js",
    "teachbooks_sag.js",
    "teachbooks_math_utils.js",
    "teachbooks_fix_mathfield.js",
)


def offline(filename: str | None) -> bool:
    """Whether a script registered by the package may stay on the page.

    Examples
    --------
    >>> offline("teachbooks_mcss.js"), offline("https://cdn.jsdelivr.net/npm/mathlive")
    (True, False)
    >>> offline("teachbooks_sab.js")
    False
    """
    if filename is None:
        return True
    return "://" not in filename and not filename.startswith("//") and filename not in NEEDS_NETWORK


def _quiet_legacy_cards(app: Sphinx, config: Any) -> None:
    """The package writes its option cards with sphinx-design's older footer syntax, which still works."""
    config.suppress_warnings = [*config.suppress_warnings, "design.card_legacy"]


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("teachbooks_questions")
    app.connect("config-inited", _quiet_legacy_cards)
    app.registry.js_files = [(name, attrs) for name, attrs in app.registry.js_files if offline(name)]
    return {"parallel_read_safe": True, "parallel_write_safe": True}
