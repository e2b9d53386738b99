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
import functools
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
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book"))

import bookeditions  # book/bookeditions.py: the registry of editions
import localfigures  # book/localfigures.py

LANGS = bookeditions.translated()

import editions  # tools/editions.py

CATALOGS = sorted(p.relative_to(LOCALES / "ko") for p in (LOCALES / "ko").rglob("*.po"))

_ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]+\$", re.S)
_CODE = re.compile(r"(?<![}`])`[^`\n]+`(?!`)")
_TARGET = re.compile(r"\]\(([^)\s]+)\)")
_PLACEHOLDER = re.compile(
    r"(?<![{A-Za-z\\])\{[A-Za-z_]\w*(?:![rsa])?(?::[^{}]*)?\}(?![}`])"
)  # not \text{...}, not a role
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_FRACTION = re.compile(r"(?<![\d.])1/(?=\{)")
_ENGLISH_WORD = re.compile(r"\b[A-Za-z]*[a-z][A-Za-z]*\b")
UNITS = {"FLOPs", "TFLOPs", "GFLOPs", "OPs", "TOPs", "bytes", "byte", "KiB", "MiB", "GiB"}  # never translated


def messages(lang: str, catalog: Path) -> list:
    return list(_messages(lang, catalog))


@functools.cache
def _messages(lang: str, catalog: Path) -> tuple:
    """A catalog's messages, read once per test process (tests read them, never change them)."""
    with (LOCALES / lang / catalog).open("rb") as fh:
        return tuple(m for m in read_po(fh, locale=lang) if m.id)


def _role(role: str) -> str:
    """A role as a translation must keep it: ``{ref}`text <target>``` keeps its target, not its text.

    A glossary link's target is its English term: ``{term}`ridge point``` is kept by
    ``{term}`리지 포인트 <ridge point>```.
    """
    name, content = role.split("`", 1)
    target = re.search(r"<([^<>]+)>`$", content)
    if target:
        return f"{name}`<{target.group(1)}>`"
    return f"{name}`<{content[:-1]}>`" if name == "{term}" else role


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
    assert markup("the {term}`ridge point`") == markup("{term}`리지 포인트 <ridge point>`")
    assert markup("the {term}`ridge point`") != markup("{term}`리지 포인트 <critical intensity>`")
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


def printed_messages(lang: str):
    """Put back the English of a printed message a translation quotes translated: `(x) 문항: 통과` is `Part (x): passed`.

    The notebooks print their messages in the edition's language (the ``code`` messages of the exercise
    catalogs), so the text that quotes one quotes the translation; any part letter stands for ``(x)``.
    """
    table = {}
    for catalog in [c for c in CATALOGS if c.parts[1] == "exercises"]:
        for m in messages(lang, catalog):
            if m.context == "code" and m.string and re.search(r"\(a\)", m.id):
                table[m.string.replace("(a)", "(x)")] = m.id.replace("(a)", "(x)")

    def english(text: str) -> str:
        for translated, original in table.items():
            text = text.replace(f"`{translated}`", f"`{original}`")
        return text

    return english


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("catalog", CATALOGS, ids=str)
def test_translations_keep_every_glued_value_formula_and_name(lang: str, catalog: Path):
    spans = printed_messages(lang)
    wrong = [
        (
            m.id[:60],
            sorted((markup(m.id) - markup(spans(m.string))).elements()),
            sorted((markup(spans(m.string)) - markup(m.id)).elements()),
        )
        for m in messages(lang, catalog)
        if m.string and markup(m.id) != markup(spans(m.string))
    ]
    assert not wrong, f"{lang}/{catalog}: markup lost (-) or added (+): " + "; ".join(
        f"{i!r}: -{a} +{b}" for i, a, b in wrong[:4]
    )


_SPELLED = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fifth": 5, "fifths": 5,
    "tenth": 10, "tenths": 10, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
}  # fmt: skip
_WHOLE = {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twenty", "thirty", "forty", "fifty", "sixty"}  # fmt: skip
_DECIMAL = {"half": "0.5", "tenth": "0.1", "quarter": "0.25"}  # a fraction a translation may write as a decimal


def spelled_numbers(english: str) -> set[str]:
    """The numbers an English message spells out, which a translation may write in digits.

    >>> sorted(spelled_numbers("about four fifths of the peak, between two and three hundred"), key=int)
    ['2', '3', '4', '5', '200', '300']
    >>> sorted(spelled_numbers("half a FLOP per byte")), sorted(spelled_numbers("about a quarter"))
    (['0.5', '1', '2'], ['0.25', '1', '4'])
    """
    words = re.findall(r"[a-z]+", english.lower())
    found = {str(_SPELLED[w]) for w in words if w in _SPELLED}
    found |= {_DECIMAL[w] for w in words if w in _DECIMAL}  # half a FLOP: 0.5 FLOP
    if any(_SPELLED.get(w, 0) > 1 and not w.endswith("s") for w in words if w not in _WHOLE):
        found.add("1")  # a quarter: 4분의 1
    for hit in re.finditer(r"\b(\w+)(?: (?:and|or|to) (\w+))? hundred", english.lower()):  # "two and three hundred"
        found |= {str(_SPELLED[w] * 100) for w in hit.groups() if w in _SPELLED}
    return found


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("catalog", CATALOGS, ids=str)
def test_no_number_is_typed_into_a_translation(lang: str, catalog: Path):
    """Numbers come from glue roles and the English text; a translation adds none of its own."""

    def numbers(text: str) -> set[str]:
        return set(_NUMBER.findall(text))

    def typed_in(text: str) -> set[str]:
        # "1/{0}" and "1/{glue:text}`gap`" write "{0} times below" as a fraction; prose drops the glue role
        return numbers(prose(_FRACTION.sub("", text)))

    typed = [
        (m.id[:60], sorted(typed_in(m.string) - numbers(m.id) - spelled_numbers(m.id)))
        for m in messages(lang, catalog)
        if m.string and not typed_in(m.string) <= numbers(m.id) | spelled_numbers(m.id)
    ]
    assert not typed, f"{lang}/{catalog}: numbers not in the English message: {typed[:4]}"


# ----------------------------------------------------------------------------- glossary


def glossary() -> list[dict[str, str]]:
    with (ROOT / "book" / "glossary.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_a_message_moved_to_another_page_keeps_its_translation(tmp_path: Path, monkeypatch):
    """update-po fills a page's new or fuzzy message from another page's catalog, exact English only."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    book = tmp_path / "ko" / "LC_MESSAGES" / "book"
    book.mkdir(parents=True)
    old, new = Catalog(locale="ko"), Catalog(locale="ko")
    old.add("A paragraph that moved.", "옮겨 간 문단.")
    old.add("A paragraph left behind.", "남은 문단.")
    new.add("A paragraph that moved.", "")  # a new page's catalog: nothing translated yet
    new.add("A paragraph left behind, now changed.", "남은 문단.", flags=["fuzzy"])  # similar, not the same
    for name, catalog in (("old", old), ("new", new)):
        with (book / f"{name}.po").open("wb") as fh:
            write_po(fh, catalog)
    monkeypatch.setattr(editions, "LOCALES", tmp_path)
    compendium = editions.book_translations("ko")
    assert editions.carry_translations("ko", compendium) == [book / "new.po"]
    with (book / "new.po").open("rb") as fh:
        carried = {m.id: (m.string, m.fuzzy) for m in read_po(fh) if m.id}
    assert carried["A paragraph that moved."] == ("옮겨 간 문단.", False)
    assert carried["A paragraph left behind, now changed."] == ("남은 문단.", True), "only an exact match is taken"


def test_glossary_has_every_term_in_every_language_and_says_why_for_choices():
    rows = glossary()
    for row in rows:
        for column in bookeditions.codes():
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

    A glued phrase ("14 times below") is translated with its numbers kept: values compare by their numbers
    (a fraction "1/14" written for "14 times below" counts as its 14).
    """
    _require_build()
    for page in sorted((HTML / "book").glob("*.html")):
        english = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        translated = BeautifulSoup((HTML / lang / "book" / page.name).read_text(encoding="utf-8"), "html.parser")
        for box in translated.select(".edition-only"):  # an erratum about this edition's own source
            box.decompose()
        values = [
            Counter(
                tuple(sorted(localfigures.template(re.sub(r"(?<![\d.])1/(?=\d)", "", s.get_text()))[1]))
                for s in soup.select(".pasted-text")
            )
            for soup in (english, translated)
        ]
        assert values[0] == values[1], (
            f"{lang}/{page.name}: pasted values differ: {values[0] - values[1]} / {values[1] - values[0]}"
        )
        assert translated.html["lang"] == bookeditions.get(lang).html_lang
        assert len(english.select("img")) == len(translated.select("img")), f"{lang}/{page.name}: figures differ"


@pytest.mark.parametrize("lang", LANGS)
def test_translated_pages_are_in_their_language(lang: str):
    """Most of each page's text is in the edition's script (code and numbers aside)."""
    _require_build()
    script = bookeditions.get(lang).script
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
                assert editions.code_skeleton(cell.source) == editions.code_skeleton(cell_en.source), (
                    f"{lang}/{english.name}: code, tests and names are the same in every edition"
                )
                fs = lang in editions.PRINTED_FSTRINGS  # print(f"measured: {x:.1f} GB/s") too
                english_texts = {
                    text for *_, text in editions.code_texts(cell_en.source, fstrings=fs) if needs_translation(text)
                }
                left = english_texts & {text for *_, text in editions.code_texts(cell.source, fstrings=fs)}
                assert not left, f"{lang}/{english.name}: comments, docstrings or messages left in English: {left}"
            elif needs_translation(cell_en.source):
                assert cell.source != cell_en.source, f"{lang}/{english.name}: an English cell is left"
    assert not (ROOT / "solutions" / f"rooflines-{lang}" / "language.txt").exists(), "the helper names its language"


def test_a_printed_fstring_is_translated_with_its_fields_as_written():
    en = 'print(f"measured: {x / 1e9:.1f} GB/s (copy)")'
    zh = 'print(f"实测：{x / 1e9:.1f} GB/s（复制）")'
    assert [t for *_, t in editions.code_texts(en, fstrings=True)] == ["measured: {x / 1e9:.1f} GB/s (copy)"]
    assert editions.code_skeleton(en) == editions.code_skeleton(zh)
    assert editions.code_skeleton(en) != editions.code_skeleton(zh.replace("{x / 1e9:.1f}", "{x:.1f}"))
    done = {(editions.CODE_CONTEXT, "measured: {x / 1e9:.1f} GB/s (copy)"): "实测：{x / 1e9:.1f} GB/s（复制）"}
    assert editions.translate_code(en, done, fstrings=True) == (zh, [])
    done = {key: text.replace("{x / 1e9:.1f}", "{x:.1f}") for key, text in done.items()}  # a field rewritten
    source, missing = editions.translate_code(en, done, fstrings=True)
    assert source == en and len(missing) == 1 and "fields differ" in missing[0]


@pytest.mark.parametrize("lang", LANGS)
def test_feedback_messages_exist_in_every_language(lang: str, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "solutions" / f"rooflines-{lang}"))
    monkeypatch.delenv("ROOFLINE_LANG", raising=False)
    sys.modules.pop("feedback", None)
    import feedback

    try:
        assert feedback.language() == lang == feedback.EDITION
        with (ROOT / "solutions" / "rooflines" / "feedback.csv").open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
        for row in rows:
            assert row[lang].strip(), f"feedback.csv: {row['id']} has no {lang} message"
            assert sorted(_PLACEHOLDER.findall(row[lang])) == sorted(_PLACEHOLDER.findall(row["en"])), row["id"]
        message = feedback.hint("q1.int8-two-bytes", name="bytes_loaded")
        assert message.startswith("[q1.int8-two-bytes] ") and message != "[q1.int8-two-bytes] " + rows[1]["en"]
    finally:
        sys.modules.pop("feedback", None)


@pytest.mark.parametrize("lang", LANGS)
def test_a_student_with_the_two_files_a_notebook_names_gets_every_message_in_its_language(lang: str, tmp_path: Path):
    """A notebook of exercises/rooflines-<lang>/ with only feedback.py and feedback.csv beside it speaks <lang>.

    Each notebook tells the student to keep those two files; nothing else (no side file, no variable) is needed.
    """
    import json
    import os
    import subprocess

    release = ROOT / "exercises" / f"rooflines-{lang}"
    for name in ("feedback.py", "feedback.csv", "q1_int8_matmul.ipynb"):
        shutil.copy2(release / name, tmp_path / name)
    nb = nbformat.read(release / "q1_int8_matmul.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "feedback.py" in text and "feedback.csv" in text, f"{lang}: the notebook names the two files to keep"
    with (release / "feedback.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    script = (
        "import csv, json, string, feedback\n"
        "rows = list(csv.DictReader(open('feedback.csv', encoding='utf-8', newline='')))\n"
        "out = {}\n"
        "for row in rows:\n"
        "    names = {n for _, n, _, _ in string.Formatter().parse(row['en']) if n}\n"
        "    out[row['id']] = feedback.hint(row['id'], **{n: 7 for n in names})\n"
        "print(json.dumps(out))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ROOFLINE_LANG"}
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    shown = json.loads(run.stdout)
    for row in rows:
        names = {n for n in re.findall(r"\{(\w+)", row["en"])}
        assert shown[row["id"]] == f"[{row['id']}] " + row[lang].format(**dict.fromkeys(names, 7)), (
            f"{lang}: {row['id']} is not shown in the edition's language"
        )


def test_a_figure_text_the_measure_page_draws_only_sometimes_keeps_its_translation():
    """The measured knee's label is drawn only for a steady sweep: a build on a busy machine draws none, and
    update-po must not drop its translation then (another build, or a reader's notebook, will draw it)."""
    kept = editions.measured_figure_texts()
    assert ("measured knee ≈ {0}", "book/measure-your-machine.md") in kept
    assert all("{0}" in text and page in editions.MEASURED_PAGES for text, page in kept)
    for lang in LANGS:
        translated = {m.id for m in messages(lang, Path("LC_MESSAGES", "figures.po")) if m.string and not m.fuzzy}
        assert "measured knee ≈ {0}" in translated, lang


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
# a glossary link as its reader sees it: {term}`산술 강도 <arithmetic intensity>` -> 산술 강도
_GLOSSARY_LINK = re.compile(r"\{term\}`([^`<]*?)\s*(?:<[^<>]*>)?`")


_GLUE_ROLE = re.compile(r"\{glue(?::text)?\}`([\w.]+)(?::[^`]*)?`")


def glued_words(lang: str, page: str) -> dict[str, str]:
    """The glued values of a page that are words, as the edition shows them (``pasted.po``): name -> text.

    A glued word is read like any other: ``{glue:text}`n_star_bound``` is the page's 연산 제약.
    """
    import ast
    import json

    path = editions.EXECUTED / f"{page}.glue.json"
    if not path.is_file():
        return {}
    pasted = {english: text for (_, english), text in localfigures.catalog(lang, "pasted").items()}
    words = {}
    for name, output in json.loads(path.read_text(encoding="utf-8")).items():
        raw = output.get("data", {}).get("text/plain", "")
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, str) and value in pasted:
            words[name] = pasted[value]
    return words


def test_a_glued_word_is_read_as_the_edition_shows_it():
    _require_build()
    words = glued_words("ko", "beyond-the-roofline")
    assert words and all(re.search("[\uac00-\ud7a3]", w) for w in words.values()), words
    shown = _GLUE_ROLE.sub(lambda m: words.get(m.group(1), " "), "이 행렬 곱셈은 {glue:text}`n_star_bound`이다")
    assert _term(next(r for r in glossary() if r["en"] == "compute-bound"), "ko") in shown


@pytest.mark.parametrize("lang", LANGS)
def test_first_use_of_a_term_on_a_page_gives_the_english(lang: str):
    """On each page, the first sentence that uses one of the course's concepts also names it in English.

    A concept a glued value names (``rl.bottleneck``'s compute-bound) is used where the value is pasted.
    """
    rows = [r for r in glossary() if r["en"] in FIRST_USE_TERMS]
    missing = []
    for catalog in [c for c in CATALOGS if c.parts[1] == "book" and c.stem != "glossary"]:
        seen: set[str] = set()
        words = glued_words(lang, catalog.stem)
        for m in messages(lang, catalog):
            shown = _GLUE_ROLE.sub(lambda g, words=words: words.get(g.group(1), g.group(0)), m.string)
            text = prose(_GLOSSARY_LINK.sub(r"\1", shown))  # a linked term is read like any other word
            if len(text) < RUNNING_TEXT:
                continue
            for row in rows:
                term = _term(row, lang)
                if row["en"] in seen or term not in text:
                    continue
                seen.add(row["en"])
                if _english(row).lower() not in m.string.lower():
                    missing.append(f"{catalog.stem}: {term} ({_english(row)}) in {m.string[:40]!r}")
    assert not missing, f"{lang}: {len(missing)} first uses without the English term, e.g.\n" + "\n".join(missing[:10])


# ----------------------------------------------------------------------------- a student's paths


def _parsed(path: Path) -> BeautifulSoup:
    """A built page, parsed afresh: a tree the caller may change."""
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@functools.cache
def _soup(path: Path) -> BeautifulSoup:
    """A built page, parsed once per test process and shared: only to be read (:func:`_parsed` to change it)."""
    return _parsed(path)


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
        for href in launch:  # a chapter's launched notebook, or a problem's notebook of this edition's assignment
            path = re.search(rf"(editions/{lang}/book/[\w-]+\.ipynb|exercises/rooflines-{lang}/[\w-]+\.ipynb)$", href)
            assert path, f"{lang}/{page.name}: {href} does not open this edition's notebook"
            assert (ROOT / path.group(1)).is_file(), f"{lang}/{page.name}: {path.group(1)} is not in the repository"
    script = bookeditions.get(lang).script
    for source in sorted((HTML / lang / "_sources" / "book").glob("*.*")):
        text = source.read_text(encoding="utf-8")
        if source.suffix == ".ipynb":
            nb = nbformat.reads(text, as_version=4)
            text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        else:
            text = re.sub(r"```\{code-cell\}.*?```", " ", text, flags=re.S)
        native, english = len(re.findall(script, prose(text))), len(re.findall(r"\b[a-z]{4,}\b", prose(text)))
        assert native > 5 * english, f"{lang}: the download {source.name} is not in the edition's language"


# Words an interface may keep in English: product names, keys, file types.
# "int": of int8, a number format's name, as bf16 and fp8 are (a heading the page's contents repeat)
# "MFU", "MBU": the names of two utilisations, kept as acronyms in every edition as FLOPs is (a heading the
# page's contents repeat)
INTERFACE_ENGLISH = {"Binder", "Colab", "Ctrl", "PDF", "JavaScript", "FLOPs", "ipynb", "pdf", "html", "int"}
INTERFACE_ENGLISH |= {"MFU", "MBU"}
INTERFACE_ENGLISH |= {"TPU"}  # a chip's name, in a heading the page's contents list repeats


@pytest.mark.parametrize("lang", LANGS)
def test_the_interface_around_the_text_is_in_the_editions_language(lang: str):
    """Theme words, tooltips, labels, search box, site title and footer: no English left."""
    from bs4 import Comment

    _require_build()
    title = {"ko": "루프라인 강좌", "zh": "屋顶线课程"}[lang]
    for page in [*_pages(lang), HTML / lang / "search.html"]:
        soup = _parsed(page)  # its article, scripts and styles are dropped below
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


# ----------------------------------------------------------------------------- one word per concept


def usage() -> dict[str, dict[str, str]]:
    with (ROOT / "book" / "glossary-usage.csv").open(encoding="utf-8", newline="") as fh:
        return {row["en"]: row for row in csv.DictReader(fh)}


def test_every_glossary_term_has_a_definition_in_every_language():
    defined = usage()
    for row in glossary():
        for column in ("definition_en", "definition_ko", "definition_zh"):
            text = (defined.get(row["en"]) or {}).get(column) or ""
            assert text.strip(), f"book/glossary-usage.csv: {row['en']!r} has no {column}"
            assert "$" not in text and "\\" not in text, f"{row['en']!r}: {column} is shown as plain text, no TeX"
    assert set(defined) <= {row["en"] for row in glossary()}, "glossary-usage.csv names a term glossary.csv lacks"


_UNTRANSLATED = re.compile(r"\$\$.*?\$\$|\$[^$]+\$|`[^`]*`|\{[\w:-]+\}`[^`]*`|\]\([^)]*\)|https?://\S+", re.S)


def _student_texts(lang: str, mask: str = " ") -> list[tuple[str, str]]:
    """``(where, text)`` of everything a reader of the edition reads: pages, exercises, feedback, figures.

    The catalogs (pages, figure texts, glued phrases, exercise cells, feedback messages), the edition
    notebooks (assignments and chapters) and the feedback catalogue's column, code and math left out.
    """
    texts = [  # a message kept as it is (an equation, whose words math.po translates) is not written by a translator
        (f"{catalog}", m.string)
        for catalog in CATALOGS
        for m in messages(lang, catalog)
        if m.string and m.string != m.id
    ]
    for notebook in sorted((ROOT / "solutions" / f"rooflines-{lang}").glob("*.ipynb")) + sorted(
        (ROOT / "editions" / lang / "book").glob("*.ipynb")
    ):
        nb = nbformat.read(notebook, as_version=4)
        texts += [(notebook.name, c.source) for c in nb.cells if c.cell_type == "markdown"]
    with (ROOT / "solutions" / "rooflines" / "feedback.csv").open(encoding="utf-8", newline="") as fh:
        texts += [(f"feedback.csv {row['id']}", row[lang]) for row in csv.DictReader(fh)]
    return [(where, _UNTRANSLATED.sub(mask, text)) for where, text in texts]


@pytest.mark.parametrize("lang", LANGS)
def test_no_glossary_term_drifts(lang: str):
    """Each concept has one rendering: the ones glossary-usage.csv lists to avoid appear nowhere a student reads."""
    avoid = {
        row["en"]: [re.compile(p) for p in row[f"avoid_{lang}"].split("|") if p]
        for row in usage().values()
        if row[f"avoid_{lang}"].strip()
    }
    drift = [
        f"{where}: {term!r} written {hit.group(0)!r} in …{text[max(0, hit.start() - 15) : hit.end() + 15]}…"
        for where, text in _student_texts(lang)
        for term, patterns in avoid.items()
        for pattern in patterns
        for hit in [pattern.search(text)]
        if hit
    ]
    assert not drift, f"{lang}: {len(drift)} renderings the glossary avoids:\n" + "\n".join(drift[:12])


# ----------------------------------------------------------------------------- typography

_MASKED = re.compile(r"\$\$.*?\$\$|\$[^$]+\$|`[^`]*`|\{[\w:-]+\}`[^`]*`|\{\w*(?::[^{}]*)?\}", re.S)
_CJK = r"[\u4e00-\u9fff]"
CHINESE_TYPOGRAPHY = {
    # a table's cell may end in ） before its |
    "a space after full-width punctuation": re.compile(r"[。，、；：？！）」』】》]\**[ \u00a0]+(?=[^\s|])"),
    "a space before full-width punctuation": re.compile(r"[^\s*][ \u00a0]+[。，、；：？！）」』】》]"),
    "half-width punctuation between Chinese characters": re.compile(_CJK + r"[,;:?!]\s*" + _CJK),
    "a space between a number and %": re.compile(r"[\dX][ \u00a0]+%"),
}


def _chinese_typography(text: str) -> list[str]:
    return [
        f"{name}: …{text[max(0, hit.start() - 10) : hit.end() + 10]}…"
        for name, pattern in CHINESE_TYPOGRAPHY.items()
        for hit in pattern.finditer(text)
    ]


def test_the_typography_check_notices_what_it_must():
    assert _chinese_typography("计算。 然后") and _chinese_typography("计算,然后") and _chinese_typography("低 6 %")
    assert _chinese_typography("是 X 。") and not _chinese_typography("是 X。然后（bf16）占 2 字节，约 6%。")


def test_chinese_typography_in_catalogs_and_built_pages():
    """No space after 。？ etc., no half-width ,;:?! between Chinese characters, no space before %."""
    found = [
        f"{where}: {p}"
        for where, text in _student_texts("zh", "X")
        for p in _chinese_typography(_MASKED.sub("X", text))
    ]
    _require_build()
    for page in _pages("zh"):
        article = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").find("article")
        for tag in article.select("pre, script, .cell_output"):
            tag.decompose()
        for tag in article.select("code, .math, .pasted-text"):
            tag.replace_with("X" if "pasted-text" not in tag.get("class", []) else tag.get_text())
        for block in article.find_all(["p", "li", "td", "th", "h1", "h2", "h3", "figcaption", "dt", "dd"]):
            found += [f"{page.name}: {p}" for p in _chinese_typography(block.get_text())]
    assert not found, f"zh: {len(found)} typography slips:\n" + "\n".join(sorted(set(found))[:12])


@pytest.mark.parametrize("lang", LANGS)
def test_percent_is_written_without_a_space(lang: str):
    spaced = [f"{where}: {text[max(0, m.start() - 15) : m.end()]}" for where, text in _student_texts(lang, "X")
              for m in re.finditer(r"(?:\d|X)[ \u00a0]+%", _MASKED.sub("X", text))]  # fmt: skip
    assert not spaced, f"{lang}: '%' after a space: {spaced[:5]}"


# ----------------------------------------------------------------------------- Korean particles after numbers

# The last syllable of a number read aloud in Sino-Korean (8755.6: 팔천칠백오십오 점 육).
_DIGIT = dict(zip("0123456789", "영일이삼사오육칠팔구"))
_POWERS = ((10**12, "조"), (10**8, "억"), (10**4, "만"), (1000, "천"), (100, "백"), (10, "십"))


def spoken_end(value: str) -> str | None:
    """The syllable a glued value ends on when read aloud, or None if it does not end in a number."""
    text = value.strip().replace(",", "").rstrip("]")  # a shape, [4096, 2048], is read to its last number
    exponent = re.search(r"\de[+-]?(\d+)$", text)
    if exponent:
        return spoken_end(exponent.group(1))  # 3.93e14, read 삼 점 구삼 이 십사: ends like 14
    found = re.search(r"(\d+(?:\.\d+)?)\s*(%|×)?$", text)
    if not found:
        return None
    number, unit = found.groups()
    if unit:
        return {"%": "트", "×": "배"}[unit]
    if "." in number or int(number) % 10:
        return _DIGIT[number[-1]]
    n = int(number)
    return "영" if n == 0 else next(word for power, word in _POWERS if n % power == 0)


_PARTICLES = [
    ("으로", "로"),
    ("은", "는"),
    ("을", "를"),
    ("과", "와"),
    ("이", "가"),
]  # after a final consonant / a vowel
_COPULA = re.compile(r"^(다|며|고|면|므로|라고|라는|라면|지만)(?![\uac00-\ud7a3])")


def particle_error(value: str, after: str) -> str | None:
    """What is wrong with the particle ``after`` a glued ``value`` (None if it fits)."""
    end = spoken_end(value)
    if end is None or not after or not re.match(r"[\uac00-\ud7a3]", after):
        return None
    final = (ord(end) - 0xAC00) % 28  # 0: no final consonant; 8: ㄹ
    if final and _COPULA.match(after):
        return f"{value}{after[:3]}: read as …{end}, so 이{after[:2]}"
    for consonant, vowel in _PARTICLES:
        if re.match(r"이(다|며|고|므로|라|면|지만|어서|었)", after):
            return None  # the full copula fits after any number
        got = consonant if after.startswith(consonant) else vowel if after.startswith(vowel) else None
        if got is None:
            continue
        want = (vowel if final in (0, 8) else consonant) if consonant == "으로" else (consonant if final else vowel)
        return None if got == want else f"{value}{after[:3]}: read as …{end}, so {want}"
    return None


def test_particle_rules_notice_what_they_must():
    assert particle_error("8755.6", "다.") and not particle_error("8755.6", "이다.")
    assert not particle_error("295.4", "이다.") and particle_error("240", "를") and not particle_error("240", "을")
    assert particle_error("3.93e14", "을") and not particle_error("50%", "를") and not particle_error("128", "로")
    assert particle_error("6", "로") and not particle_error("6", "으로") and not particle_error("ms", "를")
    assert particle_error("4 × [4096, 4096] @ [4096, 2048]", "는") and not particle_error("[256, 4096]", "은")


def test_korean_particles_fit_glued_numbers():
    """A glued number takes the particle of how it is read aloud; the copula after any glued value is 이다."""
    copula = re.compile(r"(\{glue:text\}`[^`]+`|\{\w*(?::[^{}]*)?\})" + _COPULA.pattern.lstrip("^"))
    bare = [f"{where}: {m.group(0)}" for where, text in _student_texts("ko") for m in copula.finditer(text)]
    bare = [f"{c}: {m.string[max(0, m.start() - 10) : m.end()]}" for c in CATALOGS for x in messages("ko", c)
            for m in copula.finditer(x.string or "")] + bare  # fmt: skip
    assert not bare, "ko: after a glued value write 이다/이며/이고 (its number may end in a consonant):\n" + "\n".join(
        bare[:8]
    )
    _require_build()
    wrong = []
    for page in _pages("ko"):
        for span in _soup(page).select(".pasted-text"):
            after = "".join(str(s) if isinstance(s, str) else s.get_text() for s in span.next_siblings)[:80]
            after = re.sub(r"^\([^()]*\)", "", after)  # a bracket after a value: the particle is the value's
            problem = particle_error(span.get_text(), after)
            if problem:
                wrong.append(f"{page.name}: {problem}")
    assert not wrong, "ko: particles that do not fit the number before them:\n" + "\n".join(wrong[:10])


@pytest.mark.parametrize("lang", LANGS)
def test_what_the_chapters_print_is_in_the_editions_language(lang: str):
    """A chapter's printed output says `-> 통신 제약`, not `-> communication-bound` (names and units aside)."""
    _require_build()
    left = []
    for page in _pages(lang):
        for block in _soup(page).select(".cell_output .output.stream"):
            words = set(re.findall(r"(?<![/\w])[a-z][a-z-]{2,}\b", block.get_text()))  # units (FLOPs/byte) aside
            left += [f"{page.name}: {w}" for w in sorted(words)]
    assert not left, f"{lang}: English words in printed outputs: {left[:10]}"


# T_\text{math}: names, not words
SUBSCRIPTS = {"math", "comms", "crit", "upper", "lower", "int8", "bf16", "read"} | {"fixed", "link"}


@pytest.mark.parametrize("lang", LANGS)
def test_equations_are_whole_and_speak_the_editions_language(lang: str):
    """Every equation keeps its formula, and its words (\\text{communication bytes}) are the edition's."""
    _require_build()
    english_math = {
        page.name: [m.get_text() for m in _soup(page).select(".math")]
        for page in sorted((HTML / "book").glob("*.html"))
    }
    for page in _pages(lang):
        maths = [m.get_text() for m in _soup(page).select(".math")]
        assert len(maths) >= len(english_math[page.name]) and not any("::" in m for m in maths), (
            f"{lang}/{page.name}: an equation was lost in translation"
        )
        words = []
        for math in maths:
            for text in re.findall(r"\\text\{([^{}]*)\}", math):
                rest = re.sub(
                    r"\b(?:T?FLOPs|OPs|bytes)(?:/(?:s|byte))?\b|\b(?:HBM|MLP)\b", " ", text
                )  # names every edition keeps
                words += [w for w in re.findall(r"\b[A-Za-z]{3,}\b", rest) if w not in SUBSCRIPTS]
        assert not words, f"{lang}/{page.name}: English words in equations: {sorted(set(words))}"


@pytest.mark.parametrize("lang", LANGS)
def test_the_comments_of_the_code_a_page_shows_are_in_its_language(lang: str):
    """`# book's H100 bf16 peak` reads `# 책의 H100 bf16 최대 성능` in the Korean chapter; the code is unchanged."""
    _require_build()
    left = []
    for page in _pages(lang):
        for block in _soup(page).select(".cell_input pre, article div.highlight pre"):  # code cells and code blocks
            for *_, text in editions.code_texts(block.get_text(), english_only=False):
                left += [f"{page.name}: {text!r}" for w in re.findall(r"(?<![/\w])[a-z]{3,}(?![/\w])", text)][:1]
    assert not left, f"{lang}: English comments in the code the pages show: {left[:8]}"
