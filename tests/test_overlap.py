"""No sentence of the source texts is copied into the course.

The course takes its facts, numbers and formulas from *How to Scale Your
Model*, but not its sentences. This test looks for any run of ``RUN`` or more
consecutive words of prose that a page or notebook shares with a source text
in ``shared/seeds`` (beside the repository; CI clones it there).

What counts as prose: Markdown text, and the comments and string literals of
code. Math (``$...$``, ``$$...$$``, ``{math}`` blocks), code blocks and inline
code are left out on both sides, then case and punctuation are normalised.

The seeds checked are a parameter: add a pattern to ``SEED_PATTERNS`` (for
example ``"001_*.txt"``), or set ``ROOFLINE_SEEDS="004_*.txt,001_*.txt"``, to
check another source the same way.
"""

from __future__ import annotations

import functools
import io
import os
import re
import sys
import tokenize
from pathlib import Path
from typing import Any

import nbformat
import pytest
import source_texts
from bs4 import BeautifulSoup
from source_texts import seed_files

ROOT = Path(__file__).resolve().parents[1]
SEEDS = source_texts.SEEDS
# which source texts to check; ROOFLINE_SEEDS="004_*.txt,001_*.txt" checks more without editing this file
SEED_PATTERNS = os.environ.get("ROOFLINE_SEEDS", "004_*.txt").split(",")
# each edition against the source text in its own language: the Korean translation, the Chinese summary
EDITION_SEEDS = {"ko": "001_*.txt", "zh": "003_*.txt"}
RUN = 12

PAGES = sorted((ROOT / "book").glob("*.md"))
NOTEBOOKS = sorted([*(ROOT / "solutions").rglob("*.ipynb"), *(ROOT / "exercises").rglob("*.ipynb")])

_CUT = "\x00"  # marks removed text; word runs never cross removed code blocks
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|\\\(.*?\\\)|\\\[.*?\\\]", re.S)
_FENCE = re.compile(r"^(`{3,}|:{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")


# --------------------------------------------------------------------------- words


def words(text: str) -> list[str]:
    """Lower-case words of ``text``, punctuation dropped (``"Let's go!"`` -> ``["let", "s", "go"]``).

    Korean separates words with spaces, as English does. Chinese does not: a run of Chinese
    characters is cut into words by jieba (the segmenter the book's Chinese search uses).
    """
    found: list[str] = []
    for word in re.findall(r"\w+", text.lower()):
        if _HAN.search(word):
            found += [w for w in _jieba().lcut(word) if w.strip()]
        else:
            found.append(word)
    return found


_HAN = re.compile(r"[\u4e00-\u9fff]")


@functools.cache
def _jieba() -> Any:
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


def code_prose(source: str) -> str:
    """The comments and string literals of Python code, each on its own line."""
    source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    parts: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                parts.append(tok.string.lstrip("#"))
            elif tok.type == tokenize.STRING:
                parts.append(re.sub(r"\{[^{}]*\}", _CUT, tok.string))  # f-string fields are code
    except (tokenize.TokenError, IndentationError, SyntaxError):
        parts = [line.split("#", 1)[1] for line in source.splitlines() if "#" in line]
    return f" {_CUT} ".join(parts)


def markdown_prose(text: str) -> str:
    """Prose of MyST Markdown: math and inline code removed; fenced code kept only as comments and strings."""

    def fence(m: re.Match[str]) -> str:
        head, body = m.group(0).split("\n", 1)
        if head.startswith(":") or re.match(
            r"`{3,}\{(admonition|note|warning|tip|caution|exercise|solution|"
            r"glue:figure|figure|important|seealso|dropdown)",
            head,
        ):
            return "\n" + markdown_prose(body.rsplit("\n", 1)[0]) + "\n"  # a directive: its body is prose
        if re.match(r"`{3,}\{math\}", head):
            return f"\n{_CUT}\n"
        return f"\n{_CUT} {code_prose(body.rsplit(chr(10), 1)[0])} {_CUT}\n"

    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)  # front matter
    text = _FENCE.sub(fence, text)
    text = re.sub(r"^:\w[\w-]*:.*$", "", text, flags=re.M)  # directive options
    text = _MATH.sub(" ", text)
    text = _INLINE_CODE.sub(" ", text)
    text = re.sub(r"\{[\w:-]+\}", " ", text)  # role names
    text = re.sub(r"\]\([^)]*\)", "] ", text)  # link targets
    return BeautifulSoup(f"<div>{text}</div>", "html.parser").get_text(" ")


def notebook_prose(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    parts = [
        markdown_prose(c.source) if c.cell_type == "markdown" else code_prose(c.source)
        for c in nb.cells
        if c.cell_type in ("markdown", "code")
    ]
    return f" {_CUT} ".join(parts)


def html_prose(path: Path) -> str:
    """The rendered article text of a built page, without math, code, scripts or navigation."""
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    article = soup.find("article") or soup
    for tag in article.select("script, style, pre, code, nav, .math, mjx-container, .cell_input"):
        tag.replace_with(f" {_CUT} ")
    return article.get_text(" ")


def seed_prose(path: Path) -> str:
    return markdown_prose(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- runs


def ngrams(text: str, n: int = RUN) -> set[tuple[str, ...]]:
    grams: set[tuple[str, ...]] = set()
    for segment in text.split(_CUT):
        w = words(segment)
        grams.update(tuple(w[i : i + n]) for i in range(len(w) - n + 1))
    return grams


def shared_runs(text: str, seed_grams: set[tuple[str, ...]], n: int = RUN) -> list[str]:
    """Every maximal run of ``n`` or more consecutive words of ``text`` that also occurs in the seed."""
    runs: list[str] = []
    for segment in text.split(_CUT):
        w = words(segment)
        hits = [i for i in range(len(w) - n + 1) if tuple(w[i : i + n]) in seed_grams]
        start = end = None
        for i in hits:
            if end is not None and i <= end - n + 1:
                end = i + n
                continue
            if start is not None:
                runs.append(" ".join(w[start:end]))
            start, end = i, i + n
        if start is not None:
            runs.append(" ".join(w[start:end]))
    return runs


def _seed_files(pattern: str) -> list[Path]:
    return seed_files(pattern, SEEDS)


@pytest.fixture(scope="module", params=SEED_PATTERNS)
def seed_grams(request: pytest.FixtureRequest) -> set[tuple[str, ...]]:
    grams: set[tuple[str, ...]] = set()
    for f in _seed_files(request.param):
        grams |= ngrams(seed_prose(f))
    return grams


def _check(name: str, text: str, grams: set[tuple[str, ...]]) -> None:
    runs = shared_runs(text, grams)
    assert not runs, (
        f"{name} shares {len(runs)} run(s) of {RUN}+ words with a source text; say it in "
        "our own words:\n" + "\n".join(f"  - {r!r}" for r in runs)
    )


# --------------------------------------------------------------------------- tests


def test_detector_finds_a_copied_sentence():
    """The checker flags a sentence lifted from a seed, even with math and code removed in the middle."""
    seed = (
        "Say we want to do the matmul $X[B, D]$ in int8 precision (1 byte per parameter) "
        "instead of bfloat16. Assume `8.1e11` bytes/s."
    )
    page = "Intro. Say we want to do the matmul $Y$ in INT8 precision, 1 byte per parameter, instead of bfloat16!"
    assert shared_runs(markdown_prose(page), ngrams(markdown_prose(seed)))
    assert not shared_runs("we want to do a matmul in int8 at one byte per value", ngrams(markdown_prose(seed)))
    assert "why" in code_prose("x = 1  # why this\ny = f'{x} why'")


def test_missing_seed_folder_skips_with_the_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(sys.modules[__name__], "SEEDS", tmp_path / "absent")
    with pytest.raises(pytest.skip.Exception, match="source texts are not here"):
        _seed_files("004_*.txt")
    (tmp_path / "present").mkdir()
    monkeypatch.setattr(sys.modules[__name__], "SEEDS", tmp_path / "present")
    with pytest.raises(pytest.fail.Exception, match="no source text matches"):
        _seed_files("004_*.txt")


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_is_in_our_own_words(page: Path, seed_grams):
    _check(str(page.relative_to(ROOT)), markdown_prose(page.read_text(encoding="utf-8")), seed_grams)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[str(p.relative_to(ROOT)) for p in NOTEBOOKS])
def test_notebook_is_in_our_own_words(notebook: Path, seed_grams):
    _check(str(notebook.relative_to(ROOT)), notebook_prose(notebook), seed_grams)


def _built_pages() -> list[Path]:
    html = Path(os.environ.get("ROOFLINE_BOOK_HTML", ROOT / "_build" / "html"))
    return sorted((html / "book").glob("*.html"))


@pytest.mark.parametrize("page", _built_pages() or [None], ids=lambda p: p.stem if p else "not-built")
def test_rendered_page_is_in_our_own_words(page: Path | None, seed_grams):
    if page is None:
        pytest.skip("the book is not built (build it, or set ROOFLINE_BOOK_HTML to a build's html folder)")
    _check(f"rendered {page.name}", html_prose(page), seed_grams)


# --------------------------------------------------------------------------- the Korean and Chinese editions


def po_prose(path: Path) -> str:
    """The translated messages of a gettext catalog, each its own segment."""
    from babel.messages.pofile import read_po

    with path.open("rb") as fh:
        return f" {_CUT} ".join(markdown_prose(m.string) for m in read_po(fh) if m.id and m.string)


def test_detector_cuts_chinese_into_words():
    seed = "屋顶线模型告诉我们一个算法的运行时间受限于计算还是受限于通信带宽以及为什么会这样"
    assert len(words(seed)) >= 12
    assert shared_runs(f"前言。{seed}。", ngrams(seed))


@pytest.mark.parametrize("lang", sorted(EDITION_SEEDS))
def test_edition_is_in_its_own_words(lang: str):
    """Each edition's pages, exercises, messages and rendered text share no 12-word run with its seed."""
    grams: set[tuple[str, ...]] = set()
    for f in _seed_files(EDITION_SEEDS[lang]):
        grams |= ngrams(seed_prose(f))
    for catalog in sorted((ROOT / "locales" / lang).rglob("*.po")):
        _check(str(catalog.relative_to(ROOT)), po_prose(catalog), grams)
    for notebook in sorted((ROOT / "solutions" / f"rooflines-{lang}").glob("*.ipynb")):
        _check(str(notebook.relative_to(ROOT)), notebook_prose(notebook), grams)
    html = Path(os.environ.get("ROOFLINE_BOOK_HTML", ROOT / "_build" / "html")) / lang / "book"
    for page in sorted(html.glob("*.html")):
        _check(f"rendered {lang}/{page.name}", html_prose(page), grams)
