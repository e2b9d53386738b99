"""The registry of the book's editions: ``book/editions.toml``, read and checked.

Everything that lists the editions reads them here: the Sphinx extension (``book/_ext/sphinx_editions``),
``tools/editions.py`` (which builds them), ``book/localfigures.py`` (each edition's figure font),
``tools/launch.py`` (the launched notebooks), the Makefile (through ``tools/editions.py build``) and the tests.

Example
-------
>>> [e.code for e in editions()]
['en', 'ko', 'zh']
>>> translated()
('ko', 'zh')
>>> get("zh").sphinx_language, get("zh").html_lang
('zh_CN', 'zh-CN')
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REGISTRY = Path(__file__).resolve().with_name("editions.toml")
SEARCHES = ("korean", "chinese")  # the search languages book/_ext/sphinx_editions/search.py defines
PUNCTUATIONS = ("chinese",)


@dataclass(frozen=True)
class Font:
    """A CJK font the figures draw an edition's texts with: an npm package, a file in it, its family name, and
    the family name of its subset in ``book/fonts/`` (a subset may not carry the font's reserved name)."""

    package: str
    file: str
    family: str
    subset_family: str


@dataclass(frozen=True)
class Edition:
    """One edition of the book (see the comments of ``book/editions.toml`` for each field)."""

    code: str
    name: str
    sphinx_language: str
    script: str
    search: str | None = None
    punctuation: str | None = None
    font: Font | None = None

    @property
    def html_lang(self) -> str:
        """The page's ``<html lang>``, as Sphinx writes it from ``language``.

        >>> get("ko").html_lang
        'ko'
        """
        return self.sphinx_language.replace("_", "-")

    @property
    def original(self) -> bool:
        """True for the edition the book is written in (the first; built at the root of the site)."""
        return self.code == editions()[0].code


class RegistryError(ValueError):
    """``book/editions.toml`` is malformed: the message says which entry, what is wrong, and how to fix it."""


_FIELDS = {"code", "name", "sphinx_language", "script", "search", "punctuation", "font"}


def _edition(number: int, entry: dict[str, object]) -> Edition:
    where = f"{REGISTRY.name}, edition {number}"
    unknown = set(entry) - _FIELDS
    if unknown:
        raise RegistryError(f"{where}: unknown field(s) {sorted(unknown)}; the fields are {sorted(_FIELDS)}")
    for field in ("code", "name", "sphinx_language", "script"):
        if not isinstance(entry.get(field), str) or not entry[field]:
            raise RegistryError(f"{where}: {field!r} must be a non-empty string, not {entry.get(field)!r}")
    code = str(entry["code"])
    if not re.fullmatch(r"[a-z]{2,3}", code):
        raise RegistryError(f"{where}: code {code!r} must be a two- or three-letter language code such as 'ja'")
    if entry.get("search") not in (None, *SEARCHES):
        raise RegistryError(f"{where}: search {entry['search']!r} is not one of {SEARCHES}; leave it out for Sphinx's")
    if entry.get("punctuation") not in (None, *PUNCTUATIONS):
        raise RegistryError(f"{where}: punctuation {entry['punctuation']!r} is not one of {PUNCTUATIONS}")
    try:
        re.compile(str(entry["script"]))
    except re.error as exc:
        raise RegistryError(f"{where}: script {entry['script']!r} is not a regular expression ({exc})") from None
    font = entry.get("font")
    if font is not None:
        keys = {"package", "file", "family", "subset_family"}
        if not isinstance(font, dict) or set(font) != keys:
            raise RegistryError(f"{where}: font must be a table of {sorted(keys)}, not {font!r}")
        font = Font(**{key: str(value) for key, value in font.items()})
    return Edition(
        code=code,
        name=str(entry["name"]),
        sphinx_language=str(entry["sphinx_language"]),
        script=str(entry["script"]),
        search=entry.get("search"),  # type: ignore[arg-type]
        punctuation=entry.get("punctuation"),  # type: ignore[arg-type]
        font=font,
    )


@cache
def editions() -> tuple[Edition, ...]:
    """Every edition, in the registry's order (the original first)."""
    with REGISTRY.open("rb") as fh:
        entries = tomllib.load(fh).get("edition", [])
    if not entries:
        raise RegistryError(f"{REGISTRY} lists no [[edition]]")
    found = tuple(_edition(number, entry) for number, entry in enumerate(entries, start=1))
    codes = [e.code for e in found]
    if len(set(codes)) != len(codes):
        raise RegistryError(f"{REGISTRY.name}: an edition code is listed twice: {codes}")
    return found


def codes() -> tuple[str, ...]:
    """Every edition's code, the original first."""
    return tuple(e.code for e in editions())


def translated() -> tuple[str, ...]:
    """The codes of the translated editions: every edition but the original."""
    return codes()[1:]


def get(code: str) -> Edition:
    """The edition ``code``; a clear error for one the registry does not list.

    >>> get("fr")
    Traceback (most recent call last):
    ...
    bookeditions.RegistryError: no edition 'fr' in editions.toml (the editions are en, ko, zh); add an [[edition]] entry
    """
    for e in editions():
        if e.code == code:
            return e
    raise RegistryError(
        f"no edition {code!r} in {REGISTRY.name} (the editions are {', '.join(codes())}); add an [[edition]] entry"
    )


__all__ = ["Edition", "Font", "RegistryError", "codes", "editions", "get", "translated"]
