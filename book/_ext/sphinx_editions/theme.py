"""The interface around the text in the edition's language, from ``locales/<lang>/LC_MESSAGES/theme.po``.

Sphinx, the themes and the extensions (sphinx-togglebutton, sphinx-exercise, sphinx-copybutton) bring
their own catalogs; ``theme.po`` comes first for every string it names. Its words reach the page
through gettext (the templates' ``_()``, the themes' ``translate``), the configuration values built
from interface words (title, author, search box, toggle hints), and two scripts the extensions ship.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from .common import edition, is_original, require_version, theme_words

SPHINX_CHECKED = ("7.4.7",)  # the Sphinx versions the workarounds below were checked against
COPYBUTTON_CHECKED = ("0.5.2",)

# Message domains whose strings an edition's ``theme.po`` translates first (Sphinx's and the themes'
# own catalogs stay behind it, for everything it does not name).
THEME_DOMAINS = ("sphinx", "booktheme", "togglebutton", "exercise")
COPY_BUTTON = {
    "copy": "Copy",
    "copy_to_clipboard": "Copy to clipboard",
    "copy_success": "Copied!",
    "copy_failure": "Failed to copy",
}


def _theme_translations(app: Sphinx, config: Any) -> None:
    """Put ``theme.po`` in front of Sphinx's, the themes' and the extensions' own translations.

    Their catalogs miss strings (``Color mode``) or word them for another region (Traditional
    Chinese ``列印``); a string ``theme.po`` names is taken from it, any other from theirs.
    The configuration values built from interface words (title, author, search box, toggle hints)
    are set here too.

    Workaround: ``app.add_message_catalog`` adds a catalog *behind* a domain's first one, and the
    themes load theirs first, so ours is put in front in ``sphinx.locale.translators`` directly, and
    made ``app.translator`` (what the templates' ``_()`` reads). Checked for the Sphinx versions in
    :data:`SPHINX_CHECKED`.
    """
    import gettext
    import io

    from babel.messages.catalog import Catalog
    from babel.messages.mofile import write_mo
    from sphinx import locale

    if is_original(config):
        return
    lang = edition(config)
    words = theme_words(lang)
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


def _finish_static(app: Sphinx, exception: Exception | None) -> None:
    """An edition's own words in the interface's scripts, where the theme and extensions bring their own.

    ``translations.js`` (Sphinx's search messages, e.g. how many pages were found) takes every string
    ``theme.po`` names; ``copybutton.js`` gets the copy button's words before it draws its icons.

    Workaround: Sphinx copies ``translations.js`` from its own catalog, and sphinx-copybutton's script
    draws its icons' titles from a table that lacks Korean as it loads; neither takes words from
    outside, so both files are edited once written. Checked for the versions in :data:`SPHINX_CHECKED`
    and :data:`COPYBUTTON_CHECKED`.
    """
    if exception is not None or app.builder.format != "html" or is_original(app):
        return
    words = theme_words(edition(app))
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


def setup(app: Sphinx) -> None:
    require_version("sphinx", SPHINX_CHECKED, "theme.po is put in front of sphinx.locale.translators.")
    require_version("sphinx-copybutton", COPYBUTTON_CHECKED, "copybutton.js is given the edition's words.")
    app.connect("config-inited", _theme_translations, priority=400)  # before extensions read their words
    app.connect("build-finished", _finish_static)
