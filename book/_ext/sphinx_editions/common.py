"""What every part of the extension reads: which edition a build is for, the registry, the catalogs.

The registry of editions is ``book/editions.toml`` (read by ``book/bookeditions.py``); an edition's
words are in ``locales/<code>/LC_MESSAGES/*.po``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import sys
from pathlib import Path
from typing import Any

from sphinx.errors import ExtensionError

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "book"))
import bookeditions
import localfigures

METADATA_KEY = localfigures.METADATA_KEY


def edition(app_or_config: Any) -> str:
    """The code of the edition a build is for: the registry's entry whose Sphinx ``language`` it has.

    >>> from types import SimpleNamespace
    >>> edition(SimpleNamespace(language="zh_CN")), edition(SimpleNamespace(language=None))
    ('zh', 'en')
    """
    config = getattr(app_or_config, "config", app_or_config)
    language = config.language or bookeditions.editions()[0].sphinx_language
    for entry in bookeditions.editions():
        if entry.sphinx_language == language:
            return entry.code
    return language.split("_")[0]


def entry(app_or_config: Any) -> bookeditions.Edition:
    """The registry's entry for the edition a build is for."""
    return bookeditions.get(edition(app_or_config))


def is_original(app_or_config: Any) -> bool:
    """True when the build is the original edition's (English, at the root of the site)."""
    return entry(app_or_config).original


@functools.cache
def catalog(lang: str, name: str) -> dict[tuple[str | None, str], str]:
    """``(context, English) -> translation`` from ``locales/<lang>/LC_MESSAGES/<name>.po`` (empty if absent)."""
    return localfigures.catalog(lang, name)


def messages(lang: str, name: str, context: str | None = None) -> dict[str, str]:
    """``English -> translation`` of the messages of one catalog with the given context (none by default)."""
    return {english: text for (ctx, english), text in catalog(lang, name).items() if ctx == context}


@functools.cache
def theme_words(lang: str) -> dict[str, str]:
    """English interface string -> this edition's, from ``locales/<lang>/LC_MESSAGES/theme.po``."""
    return messages(lang, "theme")


def require_version(distribution: str, checked: tuple[str, ...], why: str) -> None:
    """Fail loudly unless ``distribution`` is at a version a workaround was checked against.

    A workaround that leans on another package's internals or copies its templates is checked by hand
    for each version; a build with another version stops here, saying what to check, instead of
    quietly producing a different site.
    """
    found = importlib.metadata.version(distribution)
    if found not in checked:
        raise ExtensionError(
            f"{distribution} {found} is installed, but book/_ext/sphinx_editions was checked against "
            f"{', '.join(checked)} only: {why} Check that it still holds for {found}, then add {found!r} to "
            f"the versions checked in book/_ext/sphinx_editions."
        )
