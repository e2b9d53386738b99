"""The registry of editions (``book/editions.toml``) is the one list of editions, and the build reaches
Sphinx and myst-nb through their extension points.

These tests need no built book: they read the registry, the repository's files and the installed packages.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import bookeditions

# A literal list of edition codes, ("ko", "zh") or ("en", "ko", "zh"), or `build ko zh`: the registry's job.
_LISTED = re.compile(r"""\(\s*(?:["'](?:en|ko|zh)["']\s*,\s*){1,2}["'](?:ko|zh)["']\s*,?\s*\)|\bko zh\b""")
CATALOGS = ("theme", "figures", "outputs", "pasted", "math", "code")


def test_the_registry_lists_the_original_first_and_each_edition_once():
    codes = bookeditions.codes()
    assert codes[0] == "en" and bookeditions.get("en").original
    assert len(set(codes)) == len(codes) >= 2
    assert bookeditions.translated() == codes[1:]


@pytest.mark.parametrize("code", bookeditions.translated())
def test_each_translated_edition_has_its_catalogs_font_and_glossary_column(code: str):
    entry = bookeditions.get(code)
    folder = ROOT / "locales" / code / "LC_MESSAGES"
    missing = [name for name in CATALOGS if not (folder / f"{name}.po").is_file()]
    assert not missing, f"{code}: locales/{code}/LC_MESSAGES/ lacks {missing}"
    assert (folder / "book").is_dir(), f"{code}: no page catalogs in locales/{code}/LC_MESSAGES/book/"
    assert entry.font is not None, f"{code}: a translated edition needs a font for its figures' texts"
    dependencies = json.loads((ROOT / "package.json").read_text(encoding="utf-8")).get("dependencies", {})
    assert entry.font.package in dependencies, f"{code}: its font package {entry.font.package} is not in package.json"
    header = (ROOT / "book" / "glossary.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert code in header and f"why_{code}" in header, f"{code}: book/glossary.csv has no {code} and why_{code} columns"
    assert re.search(entry.script, entry.name), f"{code}: its name {entry.name!r} is not written in its script"


def test_nothing_else_lists_the_editions():
    """The build, the tools, the book's helpers, the Makefile and the tests read the registry."""
    files = [ROOT / "Makefile", *(ROOT / "tools").glob("*.py"), *(ROOT / "book").rglob("*.py")]
    files.remove(ROOT / "book" / "bookeditions.py")  # the registry's reader: its examples show what it reads
    files += [path for path in (ROOT / "tests").glob("*.py") if path.name != Path(__file__).name]
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in files
        for match in _LISTED.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"editions listed outside book/editions.toml: {found}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "lists no [[edition]]"),
        ('[[edition]]\ncode = "en"\nname = "English"\nsphinx_language = "en"\n', "'script' must be a non-empty string"),
        (
            '[[edition]]\ncode = "en"\nname = "E"\nsphinx_language = "en"\nscript = "a"\nsearch = "french"\n',
            "search 'french' is not one of",
        ),
        ('[[edition]]\ncode = "english"\nname = "E"\nsphinx_language = "en"\nscript = "a"\n', "two- or three-letter"),
        ('[[edition]]\ncode = "en"\nname = "E"\nsphinx_language = "en"\nscript = "a"\ncolour = 1\n', "unknown field"),
    ],
)
def test_a_malformed_registry_says_what_is_wrong(tmp_path, monkeypatch, text: str, message: str):
    registry = tmp_path / "editions.toml"
    registry.write_text(text, encoding="utf-8")
    monkeypatch.setattr(bookeditions, "REGISTRY", registry)
    bookeditions.editions.cache_clear()
    try:
        with pytest.raises(bookeditions.RegistryError, match=re.escape(message)):
            bookeditions.editions()
    finally:
        bookeditions.editions.cache_clear()


def test_a_fourth_edition_is_one_entry(tmp_path, monkeypatch):
    """An entry added to the registry is an edition for everything that reads it."""
    registry = tmp_path / "editions.toml"
    registry.write_text(
        bookeditions.REGISTRY.read_text(encoding="utf-8")
        + '\n[[edition]]\ncode = "ja"\nname = "日本語"\nsphinx_language = "ja"\nscript = "[\\\\u3040-\\\\u30ff]"\n',
        encoding="utf-8",
    )
    monkeypatch.setattr(bookeditions, "REGISTRY", registry)
    bookeditions.editions.cache_clear()
    try:
        assert bookeditions.translated()[-1] == "ja"
        assert bookeditions.get("ja").html_lang == "ja" and not bookeditions.get("ja").original
        from sphinx_editions import html

        class App:
            class config:
                language = "ja"

        links = html._links(App(), "book/intro")  # type: ignore[arg-type]
        assert links["ja"] == "../../ja/book/intro.html" and links["en"] == "../../book/intro.html"
    finally:
        bookeditions.editions.cache_clear()


def test_figures_are_rendered_by_a_myst_nb_render_plugin_not_a_patch():
    """myst-nb finds the book's renderer by its entry point, and importing the extension changes nothing of myst-nb's."""
    from myst_nb.core.render import NbElementRenderer, load_renderer

    original = NbElementRenderer.render_image
    import sphinx_editions  # noqa: F401  the extension, as jupyter-book imports it

    assert NbElementRenderer.render_image is original
    renderer = load_renderer("roofline-editions")
    assert issubclass(renderer, NbElementRenderer) and renderer.render_image is not original


def test_the_search_languages_are_registered_through_sphinx(monkeypatch):
    """Each edition's search is added with ``app.add_search_language``, for the edition's own code."""
    from sphinx_editions import search

    added = []

    class App:
        def add_search_language(self, cls: type) -> None:
            added.append((cls.lang, cls.__mro__[1]))

    class Config:
        language = "zh_CN"

    search._register(App(), Config())  # type: ignore[arg-type]
    assert added == [("zh", search.SearchChineseSegmented)]


def test_an_unchecked_version_fails_loudly():
    from sphinx.errors import ExtensionError
    from sphinx_editions.common import require_version

    with pytest.raises(ExtensionError, match=r"sphinx \S+ is installed, but .* checked against 0\.0 only"):
        require_version("sphinx", ("0.0",), "a workaround leans on it.")


def test_comparing_two_builds_ignores_hashes_and_finds_a_changed_word(tmp_path):
    """tools/compare_sites.py, which checks that a change to the build leaves every page as a reader sees it."""
    sys.path.insert(0, str(ROOT / "tools"))
    import compare_sites

    page = '<html><head><link href="_static/a.css?digest={}"></head><body><p>{}</p><img src="_images/{}.png"></body>'
    for name, (digest, word, image) in {
        "one": ("1a2b3c4d5e", "ridge", "a" * 40),
        "two": ("9f8e7d6c5b", "ridge", "a" * 40),
    }.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "index.html").write_text(page.format(digest, word, image), encoding="utf-8")
    assert compare_sites.compare(tmp_path / "one", tmp_path / "two") == []
    (tmp_path / "two" / "index.html").write_text(page.format("1a2b3c4d5e", "knee", "b" * 40), encoding="utf-8")
    found = compare_sites.compare(tmp_path / "one", tmp_path / "two")
    assert "-      ridge" in found and "+      knee" in found
    assert "=== index.html: 1 of 1 figures differ" in found
