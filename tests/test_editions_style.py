"""How the Korean and Chinese editions read: the defects a native reader notices, one test per kind.

Everything a student of an edition reads is checked: the built pages (``_build/html/<lang>``), the
chapters as notebooks (``editions/<lang>/book``), the exercise notebooks (``exercises/rooflines-<lang>``)
and the feedback messages (the ``<lang>`` column of ``feedback.csv``, as the notebooks show them):

- emphasis that CommonMark can close (no ``**`` or stray ``*`` left on the page) and no italic CJK;
- an English gloss in parentheses at most once per page, at the term's first use, never doubled or
  next to another parenthesis, and no bracket inside a bracket;
- Chinese punctuation in Chinese text (generated lists and outputs too) and no space between two
  Chinese characters (where an inserted value meets the sentence);
- Korean particles that fit the code name, unit or placeholder before them, no counter (개, 个) after a
  decimal, and one register per kind of document.
"""

from __future__ import annotations

import csv
import re
import string
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "book"))

import bookeditions

LANGS = bookeditions.translated()
HANGUL = "\uac00-\ud7a3"
HAN = "\u4e00-\u9fff"
CJK = f"[{HANGUL}{HAN}]"
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)


def _require_build() -> None:
    if not all(sorted((HTML / lang / "book").glob("*.html")) for lang in LANGS):
        pytest.fail("the editions are not built: run `make book` (English, then ko and zh)")


@cache
def _page(path: Path) -> BeautifulSoup:
    """A built page's article, its code and math replaced by a placeholder ``X``."""
    article = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser").find("article")
    for tag in article.select("script, style, .cell_input, div.highlight"):
        tag.decompose()
    for tag in article.select("code, .math, mjx-container"):
        tag.replace_with("X")
    return article


def _markdown(source: str) -> BeautifulSoup:
    """A notebook's markdown as CommonMark renders it (math masked first: CommonMark knows none)."""
    return BeautifulSoup(MarkdownIt("commonmark").render(_MATH.sub("X", source)), "html.parser")


@cache
def _notebooks(lang: str) -> list[tuple[str, BeautifulSoup]]:
    """``(name, rendered markdown)`` of each chapter notebook and exercise notebook of an edition."""
    found = []
    paths = sorted((ROOT / "editions" / lang / "book").glob("*.ipynb"))
    paths += sorted((ROOT / "exercises" / f"rooflines-{lang}").glob("*.ipynb"))
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        source = "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        soup = _markdown(source)
        for tag in soup.select("code, pre"):
            tag.replace_with("X")
        found.append((f"{path.parent.name}/{path.name}", soup))
    return found


def _feedback(lang: str) -> list[tuple[str, str]]:
    """``(id, message)`` of each feedback message as a student sees it: placeholders filled with a value."""
    with (ROOT / "solutions" / "rooflines" / "feedback.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    shown = []
    for row in rows:
        names = {name for _, name, _, _ in string.Formatter().parse(row[lang]) if name}
        shown.append((f"feedback {row['id']}", row[lang].format(**dict.fromkeys(names, 7))))
    return shown


def _pages(lang: str) -> list[tuple[str, BeautifulSoup]]:
    _require_build()
    return [(f"{lang}/{p.name}", _page(p)) for p in sorted((HTML / lang / "book").glob("*.html"))]


def _documents(lang: str) -> list[tuple[str, BeautifulSoup]]:
    """Every page and notebook of an edition, as rendered HTML (code and math masked)."""
    return _pages(lang) + _notebooks(lang)


RUNNING = "p, li, dd, td, th, figcaption, .admonition-title, h1, h2, h3, h4"
RUNNING_TEXT = 30  # characters: a shorter block is a heading, a label or a table cell, which names a term


def _blocks(soup: BeautifulSoup) -> Iterator[str]:
    """The text of each paragraph-like block (innermost), in order; a code cell's output aside (tested apart)."""
    for tag in soup.select(RUNNING):
        if not tag.select(RUNNING) and not tag.find_parent(class_="cell_output"):
            yield tag.get_text()


def _texts(lang: str) -> Iterator[tuple[str, str]]:
    """``(where, text)`` of every block of every document, and every feedback message."""
    for where, soup in _documents(lang):
        for text in _blocks(soup):
            yield where, text
    yield from _feedback(lang)


def _quote(text: str, start: int, end: int) -> str:
    return "…" + text[max(0, start - 20) : end + 20].replace("\n", " ") + "…"


# ----------------------------------------------------------------------------- emphasis


def emphasis_left(soup: BeautifulSoup) -> list[str]:
    """Delimiters CommonMark could not pair (a literal ``**`` or a stray ``*``), and italic CJK."""
    found = []
    for text in _blocks(soup):
        for hit in re.finditer(r"\*\*|(?<![A-Za-z0-9^\]\)])\*", text):
            found.append(f"literal {hit.group(0)!r}: {_quote(text, hit.start(), hit.end())}")
    for tag in soup.select("em, i"):
        if re.search(CJK, tag.get_text()):
            found.append(f"italic CJK: {tag.get_text()[:40]!r}")
    return found


def test_the_emphasis_check_notices_what_it_must():
    def md(source: str) -> list[str]:
        return emphasis_left(_markdown(source))

    assert md("예측한 B\\*에서 꺾인다. 파선: 예측한 B\\*.") == []
    assert md("예측한 B*에서 꺾인다. 파선: 예측한 B*.")  # the second * closes the first: italic Hangul
    assert md("**링크(link).**다음 문장")  # a closing ** after punctuation, before a letter: left as it is
    assert md("**링크(link)**. 다음 문장") == [] and md("$B^*$ 와 *x*") == []
    assert md("*출처: 원서*")  # italic Hangul


@pytest.mark.parametrize("lang", LANGS)
def test_emphasis_closes_and_nothing_cjk_is_italic(lang: str):
    """CommonMark closes ``**`` only where it is right-flanking: ``**굵게**는`` works, ``**굵게.**는`` does not."""
    found = [f"{where}: {problem}" for where, soup in _documents(lang) for problem in emphasis_left(soup)]
    assert not found, f"{lang}: {len(found)} unpaired emphasis or italic CJK:\n" + "\n".join(found[:12])


# ----------------------------------------------------------------------------- glosses and brackets

_GLOSS = re.compile(r"(?P<before>\S{0,12}?)\**[(（](?P<en>[A-Za-z][A-Za-z \-]*[a-z][A-Za-z \-]*)[)）]")


def glossary() -> list[dict[str, str]]:
    with (ROOT / "book" / "glossary.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _native(row: dict[str, str], lang: str) -> str:
    return re.split(r"[(（]", row[lang])[0].strip()


def _english(row: dict[str, str]) -> str:
    return re.split(r"\s*/\s*|\s*\(", row["en"])[0].strip().lower()


def gloss_problems(text: str, lang: str, seen: dict[str, int]) -> list[str]:
    """What is wrong with the glosses of one block; ``seen`` counts the page's glosses so far."""
    found = []
    for hit in _GLOSS.finditer(text):
        before = text[: hit.start("en") - 1]
        if not re.search(CJK + r"\**$", before):
            continue  # a parenthesis after a name or a number: (Trillium), (HBM)
        english = hit.group("en").strip().lower()
        seen[english] = seen.get(english, 0) + 1
        if seen[english] > 1:
            found.append(f"{english!r} glossed again: {_quote(text, hit.start(), hit.end())}")
    for hit in re.finditer(r"([^\s(（)）]+)[(（]([^()（）]+)[)）]", text):
        inner = hit.group(2).strip()
        if re.search(CJK, inner) and hit.group(1).rstrip("*").endswith(inner):
            found.append(f"doubled gloss: {_quote(text, hit.start(), hit.end())}")
    for hit in re.finditer(r"[)）]\**\s*[(（]", text):
        found.append(f"two brackets side by side: {_quote(text, hit.start(), hit.end())}")
    return found


def nested_brackets(text: str) -> list[str]:
    """Brackets opened inside brackets: ``（TPU v6e (Trillium)）``."""
    found, depth = [], 0
    for i, char in enumerate(text):
        if char in "(（[［【":
            depth += 1
            if depth == 2:
                found.append(f"nested brackets: {_quote(text, i, i + 1)}")
        elif char in ")）]］】":
            depth = max(0, depth - 1)
    return found


def test_the_gloss_checks_notice_what_they_must():
    seen: dict[str, int] = {}
    assert not gloss_problems("리지 포인트(ridge point)는 꺾이는 곳이다.", "ko", seen)
    assert gloss_problems("다시 리지 포인트(ridge point)에서.", "ko", seen)
    assert gloss_problems("**링크(링크).**", "ko", {}) and gloss_problems("链路（link）（网络屋顶线）", "zh", {})
    assert not gloss_problems("TPU v6e (Trillium)와 HBM(고대역폭 메모리)", "ko", {})
    assert nested_brackets("（TPU v6e (Trillium)）") and not nested_brackets("（TPU v6e）与（H100）")


@pytest.mark.parametrize("lang", LANGS)
def test_a_gloss_is_given_once_per_page_at_the_first_use(lang: str):
    """English in parentheses after a term: once per page, at the term's first use, never doubled.

    The glossary page, which gives every term's English on purpose, is the exception.
    """
    rows = {_english(row): _native(row, lang) for row in glossary()}
    found = []
    for where, soup in _documents(lang):
        if where.endswith(("glossary.html", "glossary.ipynb")):
            continue
        chapter_notebook = where.startswith("book/")
        seen: dict[str, int] = {}
        running = ""  # the prose so far: paragraphs and list items (headings, tables and captions name, not use)
        shown: set[str] = set()
        for tag in soup.select(RUNNING):
            text = tag.get_text()
            if tag.select(RUNNING) or tag.find_parent(class_="cell_output") or text in shown:
                continue  # a block shown twice (a self-check's answer) is one use
            shown.add(text)
            found += [f"{where}: {p}" for p in gloss_problems(text, lang, seen)]
            for hit in _GLOSS.finditer(text):
                english = hit.group("en").strip().lower()
                native = rows.get(english)
                first = running + text[: hit.start()]
                if chapter_notebook:  # a page's own order is checked on the page
                    continue
                if native and seen.get(english) == 1 and re.search(re.escape(native) + r"(?![(（])", first):
                    found.append(f"{where}: {native!r} used before its gloss: {_quote(text, hit.start(), hit.end())}")
            if tag.name in ("p", "li", "dd") and len(text.strip()) >= RUNNING_TEXT:
                running += text + "\n"
    assert not found, f"{lang}: {len(found)} glosses to drop or move:\n" + "\n".join(found[:15])


@pytest.mark.parametrize("lang", LANGS)
def test_no_bracket_inside_a_bracket(lang: str):
    found = [f"{where}: {p}" for where, text in _texts(lang) for p in nested_brackets(text)]
    assert not found, f"{lang}: {len(found)} nested brackets:\n" + "\n".join(found[:12])


# ----------------------------------------------------------------------------- Chinese typography

CHINESE_PUNCTUATION = {
    "a half-width , ; : or ? after Chinese": re.compile(rf"[{HAN}）][,;:?!](?!//)"),
    "a half-width , ; : before Chinese": re.compile(rf"[,;:]\s*[{HAN}]"),
    "single quotes (use “”)": re.compile(r"[‘’]"),
    # a generated list: two items of two characters or more (not [B, D], B ≪ D, F or (4, 3, 5))
    "a list joined with ', ' (use 、)": re.compile(
        r"(?<![\w.])(?=[\w.]*[A-Za-z])[\w.]{2,}(?:\s\(\w+\))?, (?=[A-Za-z][\w.]+)"
    ),
    "a space between two Chinese characters": re.compile(rf"[{HAN}][ \u00a0]+[{HAN}]"),
}
# a half-width bracket pair next to Chinese: not a part's label (a), an equation's number (11), a call f(4, 3, 5),
# a value such as (512, 512, 1024) or a name's own bracket, NVIDIA B200 (HGX)
_HALF_WIDTH = re.compile(r"(?P<before>.?.?)\((?P<inner>[^()]*)\)(?P<after>.?.?)")


_CALL = re.compile(r"[A-Za-z_][\w.]*\([^()]*\)")  # code in a message: bytes_loaded(4, 3, 5), ax.set_xlabel(...)


def chinese_punctuation(text: str) -> list[str]:
    text = _CALL.sub("X", text)
    found = [
        f"{name}: {_quote(text, hit.start(), hit.end())}"
        for name, pattern in CHINESE_PUNCTUATION.items()
        for hit in pattern.finditer(text)
    ]
    for hit in _HALF_WIDTH.finditer(text):
        inner, before, after = hit.group("inner"), hit.group("before"), hit.group("after")
        if (
            re.search(f"[{HAN}]", inner)
            or (re.search(rf"[{HAN}，。：；]\s?$", before) or re.match(rf"^\s?[{HAN}]", after))
            and not re.fullmatch(r"[a-z]|[\d, ]+|[A-Z][\w ]*", inner)
        ):
            found.append(f"a half-width bracket in Chinese text: {_quote(text, hit.start(), hit.end())}")
    return found


def test_the_chinese_punctuation_check_notices_what_it_must():
    for bad in (
        "（TPU v4, TPU v5e）",
        "通信受限; 临界批大小 240.5",
        "提示词: 31.07 ms",
        "fp8 峰值 (TFLOPs/s)",
        "‘16 GB’",
    ):
        assert chinese_punctuation(bad), bad
    for bad in ("H200 具有 相同的峰值", "每 4 字节 大约"):
        assert chinese_punctuation(bad), bad
    assert not chinese_punctuation("（TPU v4、TPU v5e）的 bf16 峰值（TFLOPs/s）为 1.97e14，即 B = 240.5。")


@pytest.mark.parametrize("where", ["pages", "outputs", "notebooks", "feedback"])
def test_chinese_text_uses_chinese_punctuation(where: str):
    """Generated lists joined with 、, full-width ：；（）, “” quotes, and no space between Chinese characters."""
    if where == "pages":
        texts = [(w, t) for w, soup in _pages("zh") for t in _blocks(soup)]
    elif where == "outputs":
        _require_build()
        texts = [
            (p.name, block.get_text())
            for p in sorted((HTML / "zh" / "book").glob("*.html"))
            for block in BeautifulSoup(p.read_text(encoding="utf-8"), "html.parser").select(
                ".cell_output .output.stream, .cell_output .output.text_plain, .cell_output td, .cell_output th"
            )
        ]
    elif where == "notebooks":
        texts = [(w, t) for w, soup in _notebooks("zh") for t in _blocks(soup)]
    else:
        texts = _feedback("zh")
    found = [f"{w}: {p}" for w, text in texts for p in chinese_punctuation(text)]
    assert not found, f"zh {where}: {len(found)} slips:\n" + "\n".join(found[:15])


# ----------------------------------------------------------------------------- counters after decimals


@pytest.mark.parametrize("lang", LANGS)
def test_no_counter_after_a_decimal(lang: str):
    """``시퀀스 240.5개`` counts half a sequence: a decimal is a quantity, not a count."""
    counter = {"ko": "개", "zh": "个"}[lang]
    found = [
        f"{where}: {_quote(text, hit.start(), hit.end())}"
        for where, text in _texts(lang)
        for hit in re.finditer(rf"\d\.\d+\s*{counter}", text)
    ]
    assert not found, f"{lang}: {len(found)} counters after a decimal:\n" + "\n".join(found[:10])


# ----------------------------------------------------------------------------- Korean particles

# The last syllable's final consonant as a Korean reader says a name: True (받침), False (none) or
# None (ㄹ, which takes 로 like a vowel but 이/은/을/과 like a consonant).
_LETTER_FINAL = {c: c in "LMNR" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
_LETTER_FINAL.update({"L": None, "R": None})
_DIGIT_FINAL = dict(zip("0123456789", [True, None, False, True, False, False, True, None, None, False]))  # 일 칠 팔: ㄹ
# Words whose Korean reading the spelling rules below get wrong, or that end a code name often.
READINGS = {
    "time": True, "fit": True, "matmul": None, "roofline": True, "line": True, "written": True,
    "kernel": None, "format": True, "table": None, "plot": True, "int": False, "count": False,
    "bound": False, "size": False, "point": False, "test": False, "peak": False, "flops": False,
    "ops": False, "bytes": False, "byte": False, "weights": False, "weight": False, "batch": False,
    "intensity": False, "bandwidth": False, "loaded": False, "numpy": False, "matplotlib": True,
    "rooflinelib": True, "jupyter": False, "dict": False, "float": False, "list": False, "tuple": None,
    "true": False, "false": False, "none": True, "axes": False, "ax": False, "chip": True, "chips": False,
    "ms": False, "s": False, "gb": False, "gib": False, "mib": False, "tb": False, "kv": False, "id": False,
    "model": None, "cache": False, "config": False, "json": True, "step": True, "prefill": None, "decode": False,
    "book": True, "png": False, "lab": True, "flop": True, "fabric": True,
}  # fmt: skip


def reading_final(name: str) -> bool | None:
    """Whether ``name`` ends, read aloud in Korean, on a final consonant (None for ㄹ); see :data:`READINGS`.

    >>> reading_final("chips_to_fit"), reading_final("decode_step_time"), reading_final("bytes_loaded")
    (True, True, False)
    """
    words = re.split(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])", name)
    word = next((w for w in reversed(words) if w), "")
    if not word:
        return None
    if word.lower() in READINGS:
        return READINGS[word.lower()]
    if word[-1].isdigit():
        return _DIGIT_FINAL[word[-1]]
    if word.isupper():
        return _LETTER_FINAL[word[-1]]
    w = word.lower()
    if re.search(r"(?:m|me|n|ne|ng)$", w):
        return True
    if re.search(r"(?:l|le|ll)$", w):
        return None
    return bool(re.search(r"(?:^|[^aeiou])[aeiou][ptkb]$", w))  # a short vowel before p, t, k, b: 핏, 셋, 랩


def particle_problem(name: str, after: str) -> str | None:
    """What is wrong with the particle ``after`` a code name, unit or placeholder ``name`` (None if it fits)."""
    hit = re.match(rf"(이|가|은|는|을|를|과|와|으로|로)(?![{HANGUL}])|(으로|로)(?=[는도서써의])|(다)(?=[.,\s])", after)
    if not hit:
        return None
    particle = hit.group(0)
    if re.fullmatch(r"\{\d+\}", name):
        return None  # a number pasted in its place: checked on the built page, where the number is known
    if re.fullmatch(r"\{\w+(?:[:!][^{}]*)?\}", name):
        return f"{name}{particle}: a placeholder's value varies; rewrite so no particle follows it"
    final = reading_final(name)
    if particle == "다":
        return f"{name}다: write {name}이다"
    pairs = {"이": "가", "은": "는", "을": "를", "과": "와", "으로": "로"}
    consonant = next(c for c, v in pairs.items() if particle in (c, v))
    vowel = pairs[consonant]
    if consonant == "으로":
        want = vowel if final in (False, None) else consonant
    else:
        want = vowel if final is False else consonant
    return None if particle == want else f"{name}{particle}: read as it ends, so {want}"


def test_the_particle_check_notices_what_it_must():
    assert particle_problem("`chips_to_fit`", "가 ") and not particle_problem("`chips_to_fit`", "이 ")
    assert particle_problem("`decode_step_time`", "가") and particle_problem("{name}", "가 ")
    assert particle_problem("rooflinelib", "가") and not particle_problem("rooflinelib", "이")
    assert not particle_problem("`matmul`", "로") and particle_problem("`matmul`", "는")
    assert not particle_problem("FLOPs", "를") and not particle_problem("HBM", "은") and particle_problem("HBM", "는")
    assert particle_problem("8755.6", "다.") and not particle_problem("`x`", "의 값")
    assert [m.group(0) for m in _NAME.finditer("chips_to_fit가 내림을")] == ["chips_to_fit"]


# a name is ASCII: Python's \w would also take the Korean particle after it (chips_to_fit가 as one word)
_NAME = re.compile(
    r"((?<![}\w])`[^`\n]+`|\{\w+(?:[:!][^{}]*)?\}(?!`)|(?<![\w`])[A-Za-z_][A-Za-z0-9_./]*)"
)  # not a role's key


def korean_sources(math: bool = False) -> Iterator[tuple[str, str]]:
    """Every Korean text a student reads, as written (code spans and placeholders kept, math too if ``math``)."""
    from babel.messages.pofile import read_po

    for path in sorted((ROOT / "locales" / "ko").rglob("*.po")):
        with path.open("rb") as fh:
            for m in read_po(fh, locale="ko"):
                if m.id and m.string and m.string != m.id:
                    text = m.string if math else _MATH.sub("§", m.string)  # math: any reading
                    yield str(path.relative_to(ROOT / "locales")), text
    with (ROOT / "solutions" / "rooflines" / "feedback.csv").open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            yield f"feedback.csv {row['id']}", row["ko"]


def test_korean_particles_fit_the_code_name_unit_or_placeholder_before_them():
    """``chips_to_fit``이 (핏), ``bytes_loaded``가 (로디드), ``matmul``로 (멀); none after a ``{placeholder}``.

    After a bracket the particle belongs to the word before it: ``최대 성능(OPs/s)으로``.
    """
    found = []
    for where, text in korean_sources():
        for hit in _NAME.finditer(text):
            after = text[hit.end() :]
            problem = particle_problem(hit.group(0), after)
            if problem:
                found.append(f"{where}: {problem} in {_quote(text, hit.start(), hit.end())}")
        for hit in re.finditer(rf"([{HANGUL}])\([^()]*\)", text):
            final = (ord(hit.group(1)) - 0xAC00) % 28
            after = text[hit.end() :]
            wrong = {
                True: r"(가|는|를|와|로)(?![" + HANGUL + "])",
                False: r"(이|은|을|과|으로)(?![" + HANGUL + "])",
            }[final not in (0, 8)]
            if final == 8 and after.startswith("으로"):
                wrong = "으로"
            elif final == 8:
                wrong = r"(가|는|를|와)(?![" + HANGUL + "])"
            if re.match(wrong, after):
                found.append(f"{where}: particle after a bracket: {_quote(text, hit.start(), hit.end() + 2)}")
    assert not found, f"ko: {len(found)} particles that do not fit:\n" + "\n".join(found[:20])


# A numbered thing (그림 1, 표 2, 식 (17), 문제 3) is read in Sino-Korean like any number: 일·칠·팔·십 end on ㄹ or
# ㅂ, 삼·육 on ㅁ·ㄱ (은/을/과/이, 으로 except after ㄹ), 이·사·오·구 on a vowel (는/를/와/가, 로).
_NUMBERED = re.compile(rf"(그림|표|식|문제|연습|버그)\s*\(?(\d+)\)?\]?(?=[{HANGUL}])")


def numbered_particles(text: str) -> list[str]:
    """The particles in ``text`` that do not fit the figure, table, equation or problem number before them."""
    from test_editions import particle_error  # how a number is read aloud, shared with the glued values' check

    found = []
    for hit in _NUMBERED.finditer(text):
        problem = particle_error(hit.group(2), text[hit.end() :])
        if problem:
            found.append(f"{hit.group(1)} {problem}: {_quote(text, hit.start(), hit.end())}")
    return found


def test_the_numbered_particle_check_notices_what_it_must():
    assert numbered_particles("그림 1는 TPU") and not numbered_particles("그림 1은 TPU")
    assert numbered_particles("그림 2은 두 끝") and not numbered_particles("그림 2는 두 끝")
    assert numbered_particles("그림 17는") and numbered_particles("그림 8는") and not numbered_particles("그림 10은")
    assert numbered_particles("문제 3를 풀면") and not numbered_particles("문제 6을 풀면")
    assert not numbered_particles("식 (17)로 쓴다") and numbered_particles("식 (16)로 쓴다")
    assert not numbered_particles("표 4와 같다") and numbered_particles("표 4과 같다")
    assert (
        not numbered_particles("그림 3에서")
        and not numbered_particles("문제 5 (H100)")
        and not numbered_particles("표 1의")
    )


def test_korean_particles_fit_the_number_of_a_figure_table_equation_or_problem():
    """``그림 1은``, ``그림 2는``, ``그림 17은``: the particle is written for the number the build gives the figure."""
    found = [f"{where}: {p}" for where, text in _texts("ko") for p in numbered_particles(text)]
    assert not found, f"ko: {len(found)} particles that do not fit the number before them:\n" + "\n".join(found[:20])


# A shape ends on its last number (…, 2048] 이천사십팔: 은), a formula on its last symbol (\\cdot bm\\) 비엠: 으로);
# a bracket after either belongs to the word before it: [4096, 4096](강도 228)으로.
_SHAPE_END = re.compile(r"\[[^\[\]\n]*?(\d[\d,]*)\](?:\([^()]*\))?")
_FORMULA = re.compile(r"(?<!\$)\$([^$\n]+)\$(?!\$)(?:\([^()]*\))?|\\\((.+?)\\\)(?:\([^()]*\))?")
_FORMULA_LAST = re.compile(r"(?<![\\\w])([A-Za-z]{1,2}|\d+)[\s)]*$")  # bm, B, 17; not \cdot, not P_\text{mm}


def formula_particles(text: str) -> list[str]:
    """The particles in ``text`` (as written, math kept) that do not fit the shape or formula before them."""
    from test_editions import particle_error

    found = []
    for hit in _SHAPE_END.finditer(text):
        problem = particle_error(hit.group(1), text[hit.end() :])
        if problem:
            found.append(f"shape {problem}: {_quote(text, hit.start(), hit.end())}")
    for hit in _FORMULA.finditer(text):
        ends = _FORMULA_LAST.search(hit.group(1) or hit.group(2))
        if not ends:
            continue
        last, after = ends.group(1), text[hit.end() :]
        problem = particle_error(last, after) if last.isdigit() else particle_problem(last, after)
        if problem and not problem.endswith("이다"):
            found.append(f"formula {problem}: {_quote(text, hit.start(), hit.end())}")
    return found


def test_the_formula_particle_check_notices_what_it_must():
    assert formula_particles("형태인 4 × [4096, 4096] @ [4096, 2048]는 연산 제약이고")
    assert not formula_particles("형태인 4 × [4096, 4096] @ [4096, 2048]은 연산 제약이고")
    assert formula_particles("[4096, 4096](강도 228)로, 지붕의") and not formula_particles("[4096, 4096](강도 228)으로")
    assert formula_particles("\\(2 \\cdot tk \\cdot bm\\)로 쓴다") and not formula_particles(
        "\\(tk \\cdot bm\\)으로 쓴다"
    )
    assert formula_particles("\\(2 \\cdot (bk \\cdot bn)\\)는 모호하다") and not formula_particles(
        "\\((bk \\cdot bn)\\)은"
    )
    assert not formula_particles("\\(B\\)는 모델") and formula_particles("\\(B\\)은 모델")
    assert not formula_particles("\\(P_\\text{mm}\\)는") and not formula_particles("\\(D =\\) 4096을")
    assert formula_particles("$2 \\cdot tm \\cdot bm$로 쓴다") and not formula_particles("$(bk \\cdot bn)$은 모호")


def test_korean_particles_fit_the_shape_or_formula_before_them():
    """``[4096, 2048]은`` (이천사십팔), ``\\(… \\cdot bm\\)으로`` (비엠), ``\\(B\\)는`` (비)."""
    found = [f"{where}: {p}" for where, text in korean_sources(math=True) for p in formula_particles(text)]
    assert not found, f"ko: {len(found)} particles that do not fit the formula before them:\n" + "\n".join(found[:20])


def _final(syllable: str) -> int:
    """A Hangul syllable's final consonant: 0 (none), 8 (ㄹ) or another index."""
    return (ord(syllable) - 0xAC00) % 28


def word_particles(text: str, words: list[str]) -> list[str]:
    """The particles in ``text`` that do not fit the Korean word (a glossary term) right before them.

    The word is read as written, so its last syllable decides: 행렬을 (ㄹ), 지붕은, 포인트는. After a final
    consonant 를/는/가/와 never fit; after none 을/은/과 never do (이 aside: 포인트이다 is the copula).
    """
    found = []
    for word in words:
        if not re.fullmatch(rf"[{HANGUL} ]*[{HANGUL}]", word):
            continue
        final = _final(word[-1])
        wrong = r"(?:을|은|과|으로)" if not final else r"(?:를|는|와|가)" if final == 8 else r"(?:를|는|와|가|로)"
        for hit in re.finditer(rf"(?<![{HANGUL}]){re.escape(word)}({wrong})(?![{HANGUL}])", text):
            found.append(f"{word}{hit.group(1)}: {_quote(text, hit.start(), hit.end())}")
    return found


def test_the_word_particle_check_notices_what_it_must():
    words = ["임베딩 행렬", "리지 포인트", "지붕"]
    assert word_particles("임베딩 행렬를 뺀", words) and word_particles("임베딩 행렬는 예외", words)
    assert not word_particles("임베딩 행렬을 뺀 임베딩 행렬은 예외로", words) and not word_particles("행렬로", ["행렬"])
    assert word_particles("리지 포인트을", words) and not word_particles("리지 포인트이다", words)
    assert word_particles("지붕로 간다", words) and not word_particles("지붕으로 간다, 지붕가장", words)


def test_korean_particles_fit_the_glossary_term_before_them():
    """``임베딩 행렬을``, never ``임베딩 행렬를``: a term's particle follows its last syllable."""
    words = sorted({_native(row, "ko") for row in glossary()} | {"행렬"}, key=len, reverse=True)
    found = [f"{where}: {p}" for where, text in _texts("ko") for p in word_particles(text, words)]
    found += [f"{where}: {p}" for where, text in korean_sources() for p in word_particles(text, words)]
    assert not found, f"ko: {len(found)} particles that do not fit the term before them:\n" + "\n".join(found[:20])


# ----------------------------------------------------------------------------- one wording per thing (Korean)

# Things the glossary does not list that the Korean edition once named two ways: the wording kept, and the
# ones it replaced (the glossary's own terms are checked in test_editions.py, through glossary-usage.csv).
KO_ONE_WORDING = {
    "메모리 계층": r"메모리 단계|캐시 단계(?!마다의? 대역폭을 잰)",  # not 마지막 단계 캐시 (last-level cache)
    "계층적 루프라인": r"계층형",
    "원 / 사각형 (plot markers)": r"동그라미|네모",
    "수치 표기 방식 (the errata section's heading)": r"수를 보여 주는 방식",
    "연산 다이 위에 (HBM is not on the die)": r"연산 다이 안에",
    "N번 항목 (errata cross-references)": r"\(항목 \d+\)",
    "문제 N (the book's problems)": r"연습 문제 \d",
    "생성하다 (generating a token)": r"토큰(?:\(token\))?(?:[을를]| 하나를) (?:하나씩 )?(?:써 |쓰[는기지]|쓴다)",
    "가중치와 함께 / 가중치를 올리고 남은 (beside the weights)": r"가중치 (?:곁|옆)에",
    "디코드 단계 전체 (a decode step taken whole)": r"단계 전체로 본",
    "FLOPs/s with a prefix (GFLOPs/s, TFLOPs/s)": r"(?<![A-Za-z])[GT]FLOP/s",
    "텐서 코어(Tensor Core)": r"\(tensor core\)",
    "내 컴퓨터 측정하기 (the chapter's name)": r"내 기계 측정하기",
}


def wording_drift(text: str) -> list[str]:
    """The replaced wordings of :data:`KO_ONE_WORDING` in ``text``, each with the wording to write instead."""
    return [
        f"{hit.group(0)!r}, write {kept}: {_quote(text, hit.start(), hit.end())}"
        for kept, avoid in KO_ONE_WORDING.items()
        for hit in re.finditer(avoid, text)
    ]


def test_the_wording_check_notices_what_it_must():
    assert wording_drift("메모리 단계마다 옮긴 바이트") and not wording_drift("마지막 단계 캐시보다 큰 벡터")
    assert wording_drift("스윕(동그라미)과 내적(네모)") and not wording_drift("스윕(원)과 내적(사각형)")
    assert (
        wording_drift("토큰 하나를 쓰는 데")
        and wording_drift("토큰을 하나씩 쓴다")
        and not wording_drift("토큰을 생성한다")
    )
    assert wording_drift("연습 문제 1 (int8)") and not wording_drift("문제 1 (int8)") and not wording_drift("연습 문제")
    assert wording_drift("10 TFLOP/s") and not wording_drift("10 TFLOPs/s") and wording_drift("가중치 곁에 남은")
    assert wording_drift("[내 기계 측정하기](measure-your-machine.md)") and not wording_drift("내 컴퓨터 측정하기")


def test_korean_names_each_thing_one_way():
    """Each thing keeps the wording the edition chose: no 메모리 단계 beside 메모리 계층, no 동그라미 beside 원."""
    found = [f"{where}: {p}" for where, text in _texts("ko") for p in wording_drift(text)]
    found += [f"{where}: {p}" for where, text in korean_sources() for p in wording_drift(text)]
    assert not found, f"ko: {len(found)} things named another way:\n" + "\n".join(found[:20])


# ----------------------------------------------------------------------------- register

_SENTENCE_END = re.compile(rf"([{HANGUL}]?)([{HANGUL}])(다|요|까)(?=[.!?]\s|[.!?]$|[.!?][)）\"”])")
# a spoken contraction a textbook does not write: 하는 게 아니라 (것이), 쓰는 건 (것은), 할 걸 (것을)
_SPOKEN = re.compile(rf"(?<=[{HANGUL}]) (?:게|건|걸)(?= )")


def register_of(text: str) -> set[str]:
    """The registers of a Korean text's sentences: 합니다 (…니다. …니까?), 해라 (…다. …가?), 해요 (…요.).

    A spoken contraction (``하는 게 아니라``) counts as 해요: it is the register of speech, not of a textbook.
    """
    found = set()
    for hit in _SENTENCE_END.finditer(re.sub(r"“[^”]*”|\"[^\"]*\"", "", text)):
        before, last, ending = hit.groups()
        if ending == "요":
            found.add("해요")
        elif last in "니시" and before and (ord(before) - 0xAC00) % 28 == 17:  # 합니다, 습니다, 합시다: ㅂ before 니다
            found.add("합니다")
        elif ending == "다":
            found.add("해라")  # 한다, 이다, 아니다
        elif last == "니":
            found.add("해라")  # 하느니까? never a question's end; 니까? without ㅂ is not a register of its own
    if _SPOKEN.search(text):
        found.add("해요")
    return found


def test_the_register_check_notices_what_it_must():
    assert register_of("이 값은 240이다. 그래서 빠르다.") == {"해라"}
    assert register_of("이 값은 240입니다. 답하십시오.") == {"합니다"}
    assert register_of("실행합니다. 결과는 0이다.") == {"합니다", "해라"} and register_of("FLOPs가 아니다.") == {"해라"}
    assert register_of("“여기서 멈춘다.”라고 적습니다.") == {"합니다"}
    assert register_of("몇 분의 몇에 이릅니까?") == {"합니다"} and register_of("직선은 어떻게 됩니까?") == {"합니다"}
    assert register_of("몇 분의 몇에 이르는가?") == set() and register_of("어떻게 될까?") == set()
    assert register_of("줄이는 게 아니라 늘린다.") == {"해라", "해요"}
    assert register_of("줄이는 것이 아니라 늘린다.") == {"해라"} and register_of("게이트가 열린다.") == {"해라"}


def test_each_kind_of_korean_document_keeps_one_register():
    """Pages and chapter notebooks in 해라체 (a textbook's), exercises and feedback in 합니다체 (addressing the student)."""
    wrong = []
    for where, soup in _pages("ko") + [n for n in _notebooks("ko") if n[0].startswith("book/")]:
        for text in _blocks(soup):
            if register_of(text) - {"해라"}:
                wrong.append(f"{where} (해라체): {text[:80]!r}")
    for where, soup in [n for n in _notebooks("ko") if not n[0].startswith("book/")]:
        for text in _blocks(soup):
            if register_of(text) - {"합니다"}:
                wrong.append(f"{where} (합니다체): {text[:80]!r}")
    for where, text in _feedback("ko"):
        if register_of(text) - {"합니다"}:
            wrong.append(f"{where} (합니다체): {text[:80]!r}")
    assert not wrong, f"ko: {len(wrong)} blocks in another register:\n" + "\n".join(wrong[:12])


# ----------------------------------------------------------------------------- the interface's scripts


@pytest.mark.parametrize("lang", LANGS)
def test_the_interface_scripts_speak_the_editions_words(lang: str):
    """The copy button's tooltip and the search's result count come from theme.po, not the packages' own tables."""
    import json
    import sys

    sys.path.insert(0, str(ROOT / "book"))
    from localfigures import catalog

    _require_build()
    words = {english: text for (context, english), text in catalog(lang, "theme").items() if not context}
    static = HTML / lang / "_static"
    copybutton = (static / "copybutton.js").read_text(encoding="utf-8")
    before_icons = copybutton[: copybutton.index("<title>")]
    assert json.dumps(words["Copied!"], ensure_ascii=False) in before_icons, f"{lang}: copybutton.js draws another word"
    script = (static / "translations.js").read_text(encoding="utf-8")
    messages = json.loads(script[script.index("{") : script.rindex("}") + 1])["messages"]
    key = "Search finished, found ${resultCount} page(s) matching the search query."
    assert messages[key] == words[key], f"{lang}: the search's result count is not theme.po's"
    if lang == "ko":
        assert "${resultCount}개" in messages[key]  # a counter follows its number directly


# ----------------------------------------------------------------------------- multiples and references (Chinese)

# "快 3.8 倍", "高出 1.1 倍", "大 4 倍", "增长了 7.2 倍", "相差 11.4 倍", "小了一千倍": by the Chinese publishing rule
# "比 A 大 N 倍" means A × (N + 1), and a reduction is never "N 倍"; write "是 A 的 N 倍" or "只有 A 的 1/N"
_NUMBER_WORD = r"(?:[\d.,]+|X|7|[一二两三四五六七八九十百千万]+)"
_MULTIPLE = re.compile(
    rf"(?:[快慢高低大小多少长短]|增长了|增加了|提高了|降低了|减少了|缩小了|高出|相差)\s*了?\s*约?\s*{_NUMBER_WORD}\s*倍"
)


def multiple_problems(text: str) -> list[str]:
    """A multiple written as a difference ("快 3.8 倍"), which a Chinese reader takes as one more than meant."""
    return [f"an ambiguous multiple: {_quote(text, m.start(), m.end())}" for m in _MULTIPLE.finditer(text)]


def test_the_multiple_check_notices_what_it_must():
    for bad in ("扫描测量比屋顶线允许的快 3.8 倍。", "最多高出 1.1 倍", "缓存会大 4 倍", "峰值增长了 7.2 倍", "相差 11.4 倍",
                "小了一千倍", "带宽得低 43 倍", "最多相差两倍"):  # fmt: skip
        assert multiple_problems(bad), bad
    for good in ("速率是屋顶线所允许速率的 3.8 倍", "增长到原来的 7.2 倍", "至多是天花板的 1.1 倍", "只有 HBM 带宽的 1/43",
                 "带宽翻倍", "使用次数翻了一倍", "上界至多是下界的两倍", "是较大者的两倍"):  # fmt: skip
        assert not multiple_problems(good), good


@pytest.mark.parametrize("where", ["pages", "outputs", "notebooks", "feedback", "catalogs"])
def test_chinese_multiples_are_ratios(where: str):
    """Every "N 倍" says of what it is N times; a reduction is a fraction."""
    found = [f"{w}: {p}" for w, text in _chinese_texts(where) for p in multiple_problems(text)]
    assert not found, f"zh {where}: {len(found)} multiples to rewrite as ratios:\n" + "\n".join(found[:15])


def _chinese_texts(where: str) -> list[tuple[str, str]]:
    if where == "catalogs":  # every translation, figure texts and code comments too (glued values as X)
        from babel.messages.pofile import read_po

        found = []
        for path in sorted((ROOT / "locales" / "zh").rglob("*.po")):
            with path.open("rb") as fh:
                for m in read_po(fh, locale="zh"):
                    if m.id and m.string:
                        found.append((path.name, re.sub(r"\{[\w:-]+\}`[^`]*`|\{\d\}", "X", m.string)))
        return found
    if where == "pages":
        return [(w, t) for w, soup in _pages("zh") for t in _blocks(soup)]
    if where == "outputs":
        _require_build()
        return [
            (p.name, block.get_text())
            for p in sorted((HTML / "zh" / "book").glob("*.html"))
            for block in BeautifulSoup(p.read_text(encoding="utf-8"), "html.parser").select(
                ".cell_output .output.stream, .cell_output .output.text_plain, .cell_output td, .cell_output th"
            )
        ]
    if where == "notebooks":
        return [(w, t) for w, soup in _notebooks("zh") for t in _blocks(soup)]
    return _feedback("zh")


_FIGURE_REF = re.compile(rf"图 ?\d+(?=[{HAN}])|图\d")
_EQUATION_REF = re.compile(rf"(?P<before>[{HAN}]) ?\(\d{{1,2}}\)(?![\d.])")


def reference_problems(text: str) -> list[str]:
    """``图 5中`` (a figure's number runs into the next word) and ``在 (11) 中`` (an equation's number alone)."""
    found = [
        f"no space after a figure's number: {_quote(text, m.start(), m.end())}" for m in _FIGURE_REF.finditer(text)
    ]
    found += [
        f"an equation's number without 式: {_quote(text, m.start(), m.end())}"
        for m in _EQUATION_REF.finditer(text)
        if m.group("before") != "式"
    ]
    return found


def test_the_reference_check_notices_what_it_must():
    assert (
        reference_problems("保持图 5中的 D") and reference_problems("图 1把一块") and reference_problems("在 (11) 中令")
    )
    assert not reference_problems("保持图 5 中的 D，见图 17。") and not reference_problems("在式 (11) 中令")
    assert not reference_problems("分块 (512, 512, 1024)") and not reference_problems("第 (a) 小题")


@pytest.mark.parametrize("where", ["pages", "notebooks"])
def test_chinese_figure_and_equation_references(where: str):
    """A space after 图 N before the next word; an equation is cited as 式 (N)."""
    found = [f"{w}: {p}" for w, text in _chinese_texts(where) for p in reference_problems(text)]
    assert not found, f"zh {where}: {len(found)} references:\n" + "\n".join(found[:15])


# ----------------------------------------------------------------------------- English left in a table


# what a page's code writes into a table in English: a parenthesised word ("34.36 GB (printed)"), a verdict
# ("85.52 GB reported"), a cell of English words alone ("prefill") or a plural of a name ("H100s"); a name a
# table quotes or a code name (copy, sysfs, fma) is not one
_TABLE_ENGLISH = (
    re.compile(r"\(([a-z][a-z ]*)\)"),
    re.compile(r"\b(?:reported|printed|as given|one way)\b"),
    re.compile(r"^[a-z][a-z -]*$"),
    re.compile(r"\b[A-Z]\w*\d\w*s\b"),
)


def table_words(text: str) -> list[str]:
    """The English a page's code left in a table cell of the Chinese edition (URLs and quotations aside).

    >>> table_words("34.36 GB (printed)"), table_words("H100s"), table_words("prefill"), table_words("copy 带宽")
    (['printed'], ['H100s'], ['prefill'], [])
    >>> table_words("NVIDIA H100 SXM（标称 80 GB，设备报告 85.52 GB）")
    []
    """
    text = re.sub(r"https?://\S+|“[^”]*”|\"[^\"]*\"", " ", text).strip()
    found: list[str] = []
    for pattern in _TABLE_ENGLISH:
        found += [m.group(m.lastindex or 0) for m in pattern.finditer(text)]
    return list(dict.fromkeys(found))


def test_chinese_tables_have_no_english_words():
    """A table a page builds from code takes its cells from the page's catalog: ``(printed)``, ``H100s`` translated."""
    _require_build()
    found = []
    for path in sorted((HTML / "zh" / "book").glob("*.html")):
        if path.name == "glossary.html":
            continue  # gives every term's English on purpose
        for cell in _page(path).select("td, th"):
            words = table_words(cell.get_text(" "))
            if words:
                found.append(f"zh/{path.name}: {cell.get_text(' ').strip()[:60]!r}: {words}")
    assert not found, f"zh: {len(found)} table cells with English:\n" + "\n".join(found[:15])
