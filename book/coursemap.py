"""How long each page of the course takes: reading time from its own words, plus its self-checks.

The introduction's table of chapters glues these numbers. A page's reading time is its prose
(code cells, directive options, equations and markup left out; a glued value counts as one word)
at :data:`WORDS_PER_MINUTE`, plus :data:`QUIZ_MINUTES` for each self-check, rounded up to the next
:data:`ROUND_TO` minutes. The rates are stated here once; change them and every time changes with them.

Examples
--------
>>> prose_words("A **bold** word and {glue:text}`key` tokens.\\n```{code-cell}\\nx = 1\\n```\\n")
6
>>> minutes(words=600, quizzes=2)
10
"""

from __future__ import annotations

import math
import re
from pathlib import Path

__all__ = ["QUIZ_MINUTES", "ROUND_TO", "WORDS_PER_MINUTE", "minutes", "page_minutes", "prose_words", "quizzes"]

#: Reading speed for text with equations and numbers to check: well below the 200-250 of plain prose.
WORDS_PER_MINUTE = 120
#: Time for one self-check: read it, choose, read the explanation.
QUIZ_MINUTES = 2
#: Times are rounded up to a multiple of this.
ROUND_TO = 5

BOOK = Path(__file__).resolve().parent

_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_CODE = re.compile(r"^(`{3,}).*?^\1[ \t]*$", re.M | re.S)
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
_OPTION = re.compile(r"^:[\w-]+:.*$|^:{3,}.*$|^\(.*\)=$", re.M)
_WORD = re.compile(r"[^\W\d_][\w'’-]*")


def prose_words(source: str) -> int:
    """The words a reader reads in a MyST page: code, equations, directive lines and labels left out."""
    text = _FRONT_MATTER.sub("", source)
    text = _CODE.sub(" ", text)
    text = _MATH.sub(" ", text)
    text = _ROLE.sub(" word ", text)
    text = _OPTION.sub(" ", text)
    return len(_WORD.findall(text))


def quizzes(source: str) -> int:
    """How many self-checks (``{question}`` directives) a page holds."""
    return len(re.findall(r"^:{3,}\{question\}", source, re.M))


def minutes(words: int, quizzes: int) -> int:
    """Reading time at :data:`WORDS_PER_MINUTE`, plus the self-checks, rounded up to :data:`ROUND_TO`."""
    raw = words / WORDS_PER_MINUTE + quizzes * QUIZ_MINUTES
    return max(ROUND_TO, ROUND_TO * math.ceil(raw / ROUND_TO))


def page_minutes(page: str) -> int:
    """Minutes for ``book/<page>.md``.

    >>> page_minutes("where-does-the-time-go") >= 10
    True
    """
    source = (BOOK / f"{page}.md").read_text(encoding="utf-8")
    return minutes(prose_words(source), quizzes(source))
