"""The Korean and Chinese editions: complete, faithful to the markup, one set of numbers.

Every translation lives in a gettext catalog under ``locales/<lang>/LC_MESSAGES/``: the pages
(``book/*.po``), the exercises (``exercises/<notebook>.po``), the feedback messages
(``exercises/feedback.po``) and the figure texts (``figures.po``). These tests read the
catalogs, the glossary and the built editions (``_build/html/<lang>``):

- every message with prose in it is translated, and a translation keeps its message's
  markup: glue roles (so the same keys are pasted), math, inline code, link targets,
  ``{placeholders}``;
- no number is typed into a translation: its numbers are a subset of the English message's;
- each built page pastes exactly the English page's values, and declares its language;
- the glossary has every term in every language, and each edition uses its terms;
- the edition assignments are the English notebooks with translated text, and in sync.
"""

from __future__ import annotations

import csv
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import nbformat
import pytest
from babel.messages.pofile import read_po
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[1]
LOCALES = ROOT / "locales"
LANGS = ("ko", "zh")
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book"))

import editions  # tools/editions.py
import localfigures  # book/localfigures.py

CATALOGS = sorted(p.relative_to(LOCALES / "ko") for p in (LOCALES / "ko").rglob("*.po"))

_ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]+\$", re.S)
_CODE = re.compile(r"(?<![}`])`[^`\n]+`(?!`)")
_TARGET = re.compile(r"\]\(([^)\s]+)\)")
_PLACEHOLDER = re.compile(
    r"(?<![{A-Za-z\\])\{[A-Za-z_]\w*(?:![rsa])?(?::[^{}]*)?\}(?![}`])"
)  # not \text{...}, not a role
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_ENGLISH_WORD = re.compile(r"\b[A-Za-z]*[a-z][A-Za-z]*\b")
UNITS = {"FLOPs", "TFLOPs", "GFLOPs", "OPs", "TOPs", "bytes", "byte"}


def messages(lang: str, catalog: Path) -> list:
    with (LOCALES / lang / catalog).open("rb") as fh:
        return [m for m in read_po(fh, locale=lang) if m.id]


def _role(role: str) -> str:
    """A role as a translation must keep it: ``{ref}`text <target>``` keeps its target, not its text."""
    name, content = role.split("`", 1)
    target = re.search(r"<([^<>]+)>`$", content)
    return f"{name}`<{target.group(1)}>`" if target else role


def markup(text: str) -> Counter[str]:
    """The pieces of a message that a translation must carry over unchanged."""
    pieces = [_role(r) for r in _ROLE.findall(text)] + _MATH.findall(text) + _PLACEHOLDER.findall(text)
    rest = _MATH.sub(" ", _ROLE.sub(" ", text))
    pieces += _CODE.findall(rest) + [f"]({t})" for t in _TARGET.findall(rest)]
    return Counter(" ".join(p.split()) for p in pieces)


def prose(text: str) -> str:
    """A message without its markup: what a translator translates."""
    for pattern in (_ROLE, _MATH, _CODE):
        text = pattern.sub(" ", text)
    return _TARGET.sub("] ", text)


def needs_translation(text: str) -> bool:
    """Prose: at least two English words of three letters or more that are not units."""
    return len([w for w in _ENGLISH_WORD.findall(prose(text)) if len(w) >= 3 and w not in UNITS]) >= 2


# ----------------------------------------------------------------------------- the helpers themselves


def test_markup_and_numbers_helpers_notice_what_they_must():
    en = "It is {glue:text}`q1_b` tokens, $2BDF$ FLOPs for `bytes_loaded` ([errata](errata.md)), {got!r}."
    good = "{glue:text}`q1_b` 토큰이며 $2BDF$ FLOPs, `bytes_loaded` ([정오표](errata.md)), {got!r}."
    assert markup(en) == markup(good)
    assert markup(en) != markup(good.replace("q1_b", "q2_b"))  # another glued value
    assert markup(en) != markup(good.replace("$2BDF$", "$2BD$"))  # edited math
    assert markup(en) != markup(good.replace("(errata.md)", "(intro.md)"))  # another target
    assert not markup(r"\text{intensity} = 2") and markup("{got}") == markup("{got} 값")
    assert markup("see {ref}`how numbers are shown <numbers>`") == markup("{ref}`수를 보여 주는 방식 <numbers>` 참고")
    assert markup("see {ref}`how numbers are shown <numbers>`") != markup("{ref}`수 <intro>` 참고")
    assert not set(_NUMBER.findall(prose("약 240 토큰"))) <= set(_NUMBER.findall("about {glue:text}`b` tokens"))
    assert needs_translation("The ridge point of the chip") and not needs_translation("TPU v5e (Trillium)")


# ----------------------------------------------------------------------------- catalogs


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("catalog", CATALOGS, ids=str)
def test_every_message_with_prose_is_translated(lang: str, catalog: Path):
    missing = [m.id[:70] for m in messages(lang, catalog) if needs_translation(m.id) and not m.string]
    fuzzy = [m.id[:70] for m in messages(lang, catalog) if m.fuzzy and m.string]
    assert not missing, f"{lang}/{catalog}: {len(missing)} message(s) not translated, e.g. {missing[:3]}"
    assert not fuzzy, f"{lang}/{catalog}: fuzzy translations (review, then drop the fuzzy flag): {fuzzy[:3]}"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("catalog", CATALOGS, ids=str)
def test_translations_keep_every_glued_value_formula_and_name(lang: str, catalog: Path):
    wrong = [
        (
            m.id[:60],
            sorted((markup(m.id) - markup(m.string)).elements()),
            sorted((markup(m.string) - markup(m.id)).elements()),
        )
        for m in messages(lang, catalog)
        if m.string and markup(m.id) != markup(m.string)
    ]
    assert not wrong, f"{lang}/{catalog}: markup lost (-) or added (+): " + "; ".join(
        f"{i!r}: -{a} +{b}" for i, a, b in wrong[:4]
    )


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("catalog", CATALOGS, ids=str)
def test_no_number_is_typed_into_a_translation(lang: str, catalog: Path):
    """Numbers come from glue roles and the English text; a translation adds none of its own."""
    typed = [
        (m.id[:60], sorted(set(_NUMBER.findall(prose(m.string))) - set(_NUMBER.findall(m.id))))
        for m in messages(lang, catalog)
        if m.string and not set(_NUMBER.findall(prose(m.string))) <= set(_NUMBER.findall(m.id))
    ]
    assert not typed, f"{lang}/{catalog}: numbers not in the English message: {typed[:4]}"


# ----------------------------------------------------------------------------- glossary


def glossary() -> list[dict[str, str]]:
    with (ROOT / "book" / "glossary.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_glossary_has_every_term_in_every_language_and_says_why_for_choices():
    rows = glossary()
    for row in rows:
        for column in ("en", "ko", "zh"):
            assert row[column].strip(), f"glossary.csv: {row['en']!r} has no {column} term"
    for lang in LANGS:
        explained = [row["en"] for row in rows if row[f"why_{lang}"].strip()]
        assert len(explained) >= 10, f"glossary.csv: only {len(explained)} {lang} choices are explained"
    token = next(row for row in rows if row["en"] == "token")
    assert "令牌" not in token["zh"], "令牌 is the security-token sense; the zh edition uses another word"


# Terms with one meaning wherever they appear: each edition's word must be used for them.
CORE_TERMS = ["arithmetic intensity", "critical intensity", "ridge point", "critical batch size", "dot product"]


def _term(row: dict[str, str], lang: str) -> str:
    """The word a translation must contain: the glossary entry without its parenthesised English."""
    return re.split(r"[(（]", row[lang])[0].strip()


@pytest.mark.parametrize("lang", LANGS)
def test_each_edition_uses_its_glossary_terms(lang: str):
    rows = {row["en"]: row for row in glossary()}
    off = []
    for catalog in CATALOGS:
        for m in messages(lang, catalog):
            for term in CORE_TERMS:
                if (
                    m.string
                    and re.search(rf"\b{term}\b", re.sub(r"\\text\{[^}]*\}", " ", prose(m.id)), re.I)
                    and _term(rows[term], lang) not in m.string
                ):
                    off.append(f"{catalog}: {term!r} -> expected {_term(rows[term], lang)!r} in {m.string[:50]!r}")
    assert not off, f"{lang}: a glossary term is translated another way:\n" + "\n".join(off[:8])


# ----------------------------------------------------------------------------- figures


@pytest.mark.parametrize("lang", LANGS)
def test_every_figure_text_renders_in_the_editions_font(lang: str):
    """Every translated figure text has a glyph for each of its characters in the edition's font."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    english = [m.id for m in messages(lang, Path("LC_MESSAGES", "figures.po")) if m.string and m.context != "alt"]
    for i, text in enumerate(english):
        ax.text(0, i, localfigures.fill(text, ["7"] * 8))  # drawn in English, rendered in the edition's language
    _, missing, glyphs = localfigures.render(fig, lang, dpi=40)
    plt.close(fig)
    assert english and not missing
    assert not glyphs, f"{lang}: glyphs missing from the font: {glyphs[:3]}"


def test_a_missing_glyph_or_translation_is_reported(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(localfigures, "messages", lambda lang: {"compute-bound": "연산 제약 \u2c00"})  # Glagolitic
    fig, ax = plt.subplots()
    ax.set_xlabel("compute-bound")
    ax.set_title("a text nobody translated")
    _, missing, glyphs = localfigures.render(fig, "ko", dpi=40)
    plt.close(fig)
    assert missing == ["a text nobody translated"]
    assert glyphs and "missing from font" in glyphs[0]
    with pytest.raises(UserWarning, match="missing from font"):  # the suite's own setting: an error
        fig, ax = plt.subplots()
        ax.set_title("\u2c00")
        fig.savefig(__import__("io").BytesIO(), format="png")
    plt.close("all")


# ----------------------------------------------------------------------------- built editions


def _pages(lang: str) -> list[Path]:
    return sorted((HTML / lang / "book").glob("*.html"))


def _require_build() -> None:
    if not all(_pages(lang) for lang in LANGS) or not (HTML / "book").is_dir():
        pytest.fail("the editions are not built: run `make book` (English, then ko and zh)")


@pytest.mark.parametrize("lang", LANGS)
def test_each_page_pastes_exactly_the_english_values(lang: str):
    """One set of numbers: every glued value on a translated page is the English page's, one for one.

    A glued phrase ("14 times below") is translated with its numbers kept: values compare by their numbers.
    """
    _require_build()
    for page in sorted((HTML / "book").glob("*.html")):
        english = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        translated = BeautifulSoup((HTML / lang / "book" / page.name).read_text(encoding="utf-8"), "html.parser")
        values = [
            Counter(tuple(sorted(localfigures.template(s.get_text())[1])) for s in soup.select(".pasted-text"))
            for soup in (english, translated)
        ]
        assert values[0] == values[1], (
            f"{lang}/{page.name}: pasted values differ: {values[0] - values[1]} / {values[1] - values[0]}"
        )
        assert translated.html["lang"] == {"ko": "ko", "zh": "zh-CN"}[lang]
        assert len(english.select("img")) == len(translated.select("img")), f"{lang}/{page.name}: figures differ"


@pytest.mark.parametrize("lang", LANGS)
def test_translated_pages_are_in_their_language(lang: str):
    """Most of each page's text is in the edition's script (code and numbers aside)."""
    _require_build()
    script = {"ko": r"[\uac00-\ud7a3]", "zh": r"[\u4e00-\u9fff]"}[lang]
    for page in _pages(lang):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        article = soup.find("article")
        for tag in article.select("pre, code, .math, table, .cell_output, script"):
            tag.decompose()
        text = article.get_text(" ")
        native = len(re.findall(script, text))
        english = len(re.findall(r"\b[a-z]{4,}\b", text))
        assert native > 5 * english, f"{lang}/{page.name}: {english} English words against {native} native characters"


# ----------------------------------------------------------------------------- exercises


def test_edition_assignments_are_in_sync_with_their_catalogs(tmp_path: Path):
    """solutions/rooflines-<lang>/ is what `tools/editions.py exercises` writes from the .po files."""
    source = tmp_path / "solutions"
    shutil.copytree(ROOT / "solutions" / "rooflines", source / "rooflines")
    editions.write_exercises(source=source)
    for folder in [f"rooflines-{lang}" for lang in LANGS] + ["rooflines"]:
        for fresh in sorted((source / folder).iterdir()):
            committed = ROOT / "solutions" / folder / fresh.name
            assert committed.is_file() and fresh.read_bytes() == committed.read_bytes(), (
                f"solutions/{folder}/{fresh.name} is out of date: run `python tools/editions.py exercises`"
            )


@pytest.mark.parametrize("lang", LANGS)
def test_edition_notebooks_have_the_english_code_and_translated_text(lang: str):
    for english in sorted((ROOT / "solutions" / "rooflines").glob("*.ipynb")):
        nb_en = nbformat.read(english, as_version=4)
        nb = nbformat.read(ROOT / "solutions" / f"rooflines-{lang}" / english.name, as_version=4)
        assert [c.cell_type for c in nb.cells] == [c.cell_type for c in nb_en.cells]
        for cell, cell_en in zip(nb.cells, nb_en.cells):
            assert cell.metadata == cell_en.metadata
            if cell.cell_type == "code":
                assert cell.source == cell_en.source, "code, tests and names are the same in every edition"
            elif needs_translation(cell_en.source):
                assert cell.source != cell_en.source, f"{lang}/{english.name}: an English cell is left"
    assert (ROOT / "solutions" / f"rooflines-{lang}" / "language.txt").read_text().strip() == lang


@pytest.mark.parametrize("lang", LANGS)
def test_feedback_messages_exist_in_every_language(lang: str, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "solutions" / f"rooflines-{lang}"))
    monkeypatch.delenv("ROOFLINE_LANG", raising=False)
    sys.modules.pop("feedback", None)
    import feedback

    try:
        assert feedback.language() == lang
        with (ROOT / "solutions" / "rooflines" / "feedback.csv").open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
        for row in rows:
            assert row[lang].strip(), f"feedback.csv: {row['id']} has no {lang} message"
            assert sorted(_PLACEHOLDER.findall(row[lang])) == sorted(_PLACEHOLDER.findall(row["en"])), row["id"]
        message = feedback.hint("q1.int8-two-bytes", name="bytes_loaded")
        assert message.startswith("[q1.int8-two-bytes] ") and message != "[q1.int8-two-bytes] " + rows[1]["en"]
    finally:
        sys.modules.pop("feedback", None)


def test_figure_catalog_covers_every_figure_of_the_english_build():
    """figures.po has every text the English build drew (re-run `tools/editions.py update-po` if not)."""
    _require_build()
    drawn: set[str] = set()
    for notebook in editions.EXECUTED.glob("*.ipynb"):
        outputs, glued = editions.executed_outputs(notebook)
        drawn |= localfigures.figure_strings(outputs + glued)
    for lang in LANGS:
        known = {m.id for m in messages(lang, Path("LC_MESSAGES", "figures.po")) if m.string}
        assert drawn <= known, f"{lang}: figure texts without a translation: {sorted(drawn - known)[:5]}"


def _english(row: dict[str, str]) -> str:
    """The English term as a reader meets it: ``tile / tiling`` -> ``tile``, ``link`` -> ``link``."""
    return re.split(r"\s*/\s*|\s*\(", row["en"])[0].strip()


# The course's own concepts: on every page, the first sentence that uses one names it in English too.
FIRST_USE_TERMS = [
    "roofline", "arithmetic intensity", "critical intensity", "ridge point", "compute roof", "compute-bound",
    "communication-bound", "bandwidth-bound", "critical batch size", "lower bound", "upper bound", "token",
]  # fmt: skip
RUNNING_TEXT = 30  # characters: shorter messages are headings, captions and table cells


@pytest.mark.parametrize("lang", LANGS)
def test_first_use_of_a_term_on_a_page_gives_the_english(lang: str):
    """On each page, the first sentence that uses one of the course's concepts also names it in English."""
    rows = [r for r in glossary() if r["en"] in FIRST_USE_TERMS]
    missing = []
    for catalog in [c for c in CATALOGS if c.parts[1] == "book" and c.stem != "glossary"]:
        seen: set[str] = set()
        for m in messages(lang, catalog):
            if len(prose(m.string)) < RUNNING_TEXT:
                continue
            for row in rows:
                term = _term(row, lang)
                if row["en"] in seen or term not in prose(m.string):
                    continue
                seen.add(row["en"])
                if _english(row).lower() not in m.string.lower():
                    missing.append(f"{catalog.stem}: {term} ({_english(row)}) in {m.string[:40]!r}")
    assert not missing, f"{lang}: {len(missing)} first uses without the English term, e.g.\n" + "\n".join(missing[:10])


# ----------------------------------------------------------------------------- a student's paths


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@pytest.mark.parametrize("lang", LANGS)
def test_links_and_buttons_lead_to_the_editions_own_files(lang: str):
    """Exercise links, Colab and Binder open the edition's notebooks; the download buttons serve its sources."""
    _require_build()
    for page in _pages(lang):
        soup = _soup(page)
        hrefs = [a.get("href", "") for a in soup.select("a[href]")]
        english = [h for h in hrefs if re.search(r"/(exercises|solutions)/rooflines/", h)]
        assert not english, f"{lang}/{page.name}: links to the English assignment: {english[:2]}"
        launch = [h for h in hrefs if "colab.research.google.com" in h or "mybinder.org" in h]
        assert launch or not (HTML / lang / "_sources" / "book" / f"{page.stem}.ipynb").exists(), (
            f"{lang}/{page.name}: a notebook page without launch buttons"
        )
        for href in launch:
            path = re.search(r"(editions/\w+/book/[\w-]+\.ipynb)$", href)
            assert path and path.group(1).startswith(f"editions/{lang}/"), f"{lang}/{page.name}: {href}"
            assert (ROOT / path.group(1)).is_file(), f"{lang}/{page.name}: {path.group(1)} is not in the repository"
    script = {"ko": r"[\uac00-\ud7a3]", "zh": r"[\u4e00-\u9fff]"}[lang]
    for source in sorted((HTML / lang / "_sources" / "book").glob("*.*")):
        text = source.read_text(encoding="utf-8")
        if source.suffix == ".ipynb":
            nb = nbformat.reads(text, as_version=4)
            text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        else:
            text = re.sub(r"```\{code-cell\}.*?```", " ", text, flags=re.S)
        native, english = len(re.findall(script, prose(text))), len(re.findall(r"\b[a-z]{4,}\b", prose(text)))
        assert native > 5 * english, f"{lang}: the download {source.name} is not in the edition's language"


def test_edition_notebooks_are_in_sync_with_their_catalogs(tmp_path: Path):
    """editions/<lang>/book/*.ipynb (what Colab and Binder open) is what `tools/editions.py notebooks` writes."""
    editions.write_notebooks(target=tmp_path)
    for lang in LANGS:
        fresh = sorted((tmp_path / lang / "book").glob("*.ipynb"))
        committed = sorted((ROOT / "editions" / lang / "book").glob("*.ipynb"))
        assert [p.name for p in fresh] == [p.name for p in committed], f"{lang}: run `python tools/editions.py notebooks`"
        for new in fresh:
            old = ROOT / "editions" / lang / "book" / new.name
            assert new.read_bytes() == old.read_bytes(), f"editions/{lang}/book/{new.name} is out of date"
            nb = nbformat.read(new, as_version=4)
            english = [c.source for c in nb.cells if c.cell_type == "markdown" and "exercises/rooflines/" in c.source]
            assert not english, f"{lang}/{new.name}: a link to the English assignment"


# Words an interface may keep in English: product names, keys, file types.
INTERFACE_ENGLISH = {"Binder", "Colab", "Ctrl", "PDF", "JavaScript", "FLOPs", "ipynb", "pdf", "html"}


@pytest.mark.parametrize("lang", LANGS)
def test_the_interface_around_the_text_is_in_the_editions_language(lang: str):
    """Theme words, tooltips, labels, search box, site title and footer: no English left."""
    from bs4 import Comment

    _require_build()
    title = {"ko": "루프라인 강좌", "zh": "屋顶线课程"}[lang]
    for page in [*_pages(lang), HTML / lang / "search.html"]:
        soup = _soup(page)
        assert soup.title.get_text().endswith(title), f"{lang}/{page.name}: <title> {soup.title.get_text()!r}"
        for tag in soup.select("article, script, style, noscript"):
            tag.decompose()
        left = set()
        for tag in soup.find_all(True):
            for attribute in ("title", "aria-label", "placeholder", "data-bs-title", "alt"):
                left |= {w for w in re.findall(r"[A-Za-z]{3,}", tag.get(attribute) or "") if w not in INTERFACE_ENGLISH}
        for text in soup.find_all(string=True):
            if not isinstance(text, Comment):
                left |= {w for w in re.findall(r"[A-Za-z]{3,}", text) if w not in INTERFACE_ENGLISH}
        assert not left, f"{lang}/{page.name}: English words in the interface: {sorted(left)[:10]}"
