"""Sentence length in the English body text of the content chapters.

A sentence that carries three or four qualifications loses a reader who is new to hardware. The
text measured is what a reader reads as running prose: paragraphs, list items, quiz questions and
their explanations, and the bodies of admonitions (folded ones too). Code, equations, tables,
headings, admonition titles, figure captions and directive options are left out. A glued value and
an inline equation count as one word each; a link counts as its text.

The caps were set from what the pages reach: the chapters that were rewritten for short sentences
have no sentence over :data:`HARD_CAP` words and few over :data:`SOFT_CAP`; the other chapters may
not grow more long sentences than they have (:data:`LONG_NOW`).
"""

from __future__ import annotations

import re
import sys

import pytest
from book_support import BOOK

sys.path.insert(0, str(BOOK))
import coursemap  # book/coursemap.py: how the course reads a page's prose

#: No sentence of a rewritten chapter is longer than this many words.
HARD_CAP = 40
#: Words above which a sentence counts as long; a rewritten chapter keeps few of them.
SOFT_CAP = 30
#: The rewritten chapters, and how many sentences over SOFT_CAP each may keep.
REWRITTEN = {
    "intro": 2,  # both in "A path through the course", which describes the reading times
    "where-does-the-time-go": 0,
    "visualizing-rooflines": 0,
    "matrix-multiplication": 0,
    "network-rooflines": 0,
    "summary": 0,
    "real-model-real-chips": 0,
    "long-context": 1,  # Question 6's statement, which names what the hidden checks hand the functions
}
#: The other content chapters: sentences over HARD_CAP words today, a ceiling that may only go down.
LONG_NOW = {
    "measure-your-machine": 11,
    "beyond-the-roofline": 4,
    "problems": 4,
    "practice": 1,
}

_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|:{3,}).*$", re.M)
_TABLE_ROW = re.compile(r"^[ \t]*\|.*$", re.M)
_HEADING = re.compile(r"^[ \t]*#+ .*$", re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_BLOCK_START = re.compile(r"^[ \t]*(?:[-*+] |\d+\. |\[[x ]\] |> )", re.M)  # list items, quiz choices, explanations
_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)
_INLINE_MATH = re.compile(r"\$[^$\n]+\$")
_NUMREF = re.compile(r"\{numref\}`[^`<]*`")  # renders as "Figure 3"
_EQ = re.compile(r"\{eq\}`[^`]*`")  # renders as "(3)"
_ROLE_WITH_TEXT = re.compile(r"\{[\w:-]+\}`([^`<]*?)\s*(?:<[^>]*>)?`")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
# a sentence ends at . ? or ! followed by a space and a capital, a digit or an opening mark
_SENTENCE_END = re.compile(r"(?<=[.?!])[)\"”’*_]*\s+(?=[A-Z(\"“*_`\d])")
_WORD = re.compile(r"[\w’'][\w’'.,/%-]*")


def sentences(source: str) -> list[str]:
    """The sentences of a MyST page's running prose, code, equations, tables and titles left out.

    >>> sentences("# Title\\n\\nOne short sentence. And a second one with $x$ in it.\\n\\n| a | b |\\n")
    ['One short sentence.', 'And a second one with X in it.']
    >>> sentences("```{admonition} A title\\n:class: note\\nIts body, e.g. this. Here.\\n```\\n")
    ['Its body, e.g. this.', 'Here.']
    """
    text, _ = coursemap._without_code(coursemap._FRONT_MATTER.sub("", source))
    for pattern in (_COMMENT, _FENCE_LINE, coursemap._OPTION, _TABLE_ROW, _HEADING):
        text = pattern.sub("\n", text)
    text = _BLOCK_START.sub("\n\n", text)
    text = _DISPLAY_MATH.sub("\n\n", text)
    text = _INLINE_MATH.sub(" X ", text)
    text = coursemap._GLUE.sub(" N ", text)
    text = _NUMREF.sub(" Figure 1 ", text)
    text = _EQ.sub(" (1) ", text)
    text = _ROLE_WITH_TEXT.sub(r" \1 ", text)
    text = _LINK.sub(r"\1", text)
    found = []
    for block in re.split(r"\n\s*\n", text):
        block = " ".join(block.split())
        found += [s for s in _SENTENCE_END.split(block) if _WORD.search(s)]
    return found


def words(sentence: str) -> int:
    """Words in a sentence: a number, a glued value or an inline equation is one.

    >>> words("At N tokens per chip the step takes N ms, 1.97e14 FLOPs/s.")
    12
    """
    return len(_WORD.findall(sentence))


def _long(page: str, cap: int) -> list[tuple[int, str]]:
    source = (BOOK / f"{page}.md").read_text(encoding="utf-8")
    return [(words(s), s) for s in sentences(source) if words(s) > cap]


def _report(found: list[tuple[int, str]]) -> str:
    return "\n".join(f"  [{n} words] {s}" for n, s in found)


def test_the_measure_finds_a_long_sentence() -> None:
    long = "This sentence, " + "which goes on and on, " * 10 + "ends here."
    assert words(long) > HARD_CAP and sentences(f"Short. {long}\n\n- Item one.\n") == ["Short.", long, "Item one."]


@pytest.mark.parametrize("page", sorted(REWRITTEN))
def test_rewritten_chapters_keep_sentences_short(page: str) -> None:
    too_long = _long(page, HARD_CAP)
    assert not too_long, f"{page}: split these sentences (over {HARD_CAP} words):\n{_report(too_long)}"
    long = _long(page, SOFT_CAP)
    assert len(long) <= REWRITTEN[page], (
        f"{page}: {len(long)} sentences over {SOFT_CAP} words, at most {REWRITTEN[page]}; split some of them:\n"
        + _report(long)
    )


@pytest.mark.parametrize("page", sorted(LONG_NOW))
def test_other_chapters_grow_no_more_long_sentences(page: str) -> None:
    long = _long(page, HARD_CAP)
    assert len(long) <= LONG_NOW[page], (
        f"{page}: {len(long)} sentences over {HARD_CAP} words, {LONG_NOW[page]} before; split the new ones:\n"
        + _report(long)
    )


def test_every_content_chapter_is_measured() -> None:
    import yaml

    toc = yaml.safe_load((BOOK.parent / "_toc.yml").read_text(encoding="utf-8"))
    chapters = {c["file"].removeprefix("book/") for part in toc["parts"][:1] for c in part["chapters"]}
    measured = set(REWRITTEN) | set(LONG_NOW)
    assert chapters <= measured, f"not measured: {sorted(chapters - measured)}"
