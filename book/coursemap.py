"""How long each page of the course takes: reading time from its own words, plus its self-checks.

The introduction's table of chapters glues these numbers. A page's reading time is its prose
at :data:`WORDS_PER_MINUTE`, plus :data:`QUIZ_MINUTES` for each self-check, rounded up to the next
:data:`ROUND_TO` minutes. The rates are stated here once; change them and every time changes with them.

The prose is what a reader reads: paragraphs, lists, tables, admonitions (folded ones too, and those
fenced with backticks like code), quizzes and the captions of figures, which live in their code cells.
Code, equations, directive names and options, and labels are left out. A glued value counts as one word
(a number), except one that pastes a sentence of ``book/sentences.py`` chosen by what the build machine
measured: it counts as the mean length of the sentences it is chosen from (:data:`sentences.ROLES`).

Examples
--------
>>> prose_words("A **bold** word and {glue:text}`key` tokens.\\n```{code-cell}\\nx = 1\\n```\\n")
6
>>> prose_words("```{admonition} Takeaway\\n:class: tip\\nRead this.\\n```\\n")
3
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
_FENCE = re.compile(r"^(`{3,})(.*)$")
# the info string of a block of code or an equation: a code cell, a {code}/{math} directive, a language or none;
# a directive fenced with backticks (```{admonition} Takeaway) is prose
_CODE_INFO = re.compile(r"\{(?:code-cell|code|code-block|math|raw)\}.*|[\w+-]*[ \t]*")
_CELL_HEADER = re.compile(r"\A---\n(.*?)\n---\n", re.S)
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_GLUE = re.compile(r"\{glue:text\}`([^`:]+)(?::[^`]*)?`")
_ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
_DIRECTIVE = re.compile(r"^(?:`{3,}|:{3,})(?:\{[\w:-]+\})?", re.M)  # a fence and its directive name, not its title
_OPTION = re.compile(r"^:[\w-]+:.*$|^\(.*\)=$", re.M)
_WORD = re.compile(r"[^\W\d_][\w'’-]*")


def _without_code(text: str) -> tuple[str, list[str]]:
    """``text`` without its blocks of code and equations, and the bodies of its code cells.

    Fences are read in order, as a Markdown parser does: a bare fence closes the innermost open directive
    if it is at least as long, and otherwise opens a block of code.
    """
    lines, kept, cells, open_fences = text.split("\n"), [], [], []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence is None:
            kept.append(lines[i])
        elif not fence.group(2).strip() and open_fences and len(fence.group(1)) >= len(open_fences[-1]):
            open_fences.pop()  # the end of a directive
        elif _CODE_INFO.fullmatch(fence.group(2)):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == fence.group(1)), len(lines))
            if fence.group(2).startswith("{code-cell}"):
                cells.append("\n".join(lines[i + 1 : end]))
            i = end
        else:
            open_fences.append(fence.group(1))
            kept.append(lines[i])  # its title is read; _DIRECTIVE drops the fence and the name
        i += 1
    return "\n".join(kept), cells


def _captions(cell: str) -> str:
    """The figure caption of a code cell (``mystnb: figure: caption:`` in its header), or ``""``."""
    import yaml

    header = _CELL_HEADER.match(cell)
    options = yaml.safe_load(header.group(1)) if header else None
    figure = (options or {}).get("mystnb", {}).get("figure", {}) if isinstance(options, dict) else {}
    return str(figure.get("caption", "")) if isinstance(figure, dict) else ""


def _sentence_words(key: str, roles: dict[str, tuple[str | None, ...]] | None) -> float:
    """Words a glued value reads as: one (a number), or the mean length of the sentences it is chosen from."""
    if roles is None or key not in roles:
        return 1.0
    from sentences import MEASURE

    lengths = [1 if choice is None else len(_WORD.findall(MEASURE[choice])) for choice in roles[key]]
    return sum(lengths) / len(lengths)


def prose_words(source: str) -> int:
    """The words a reader reads in a MyST page: code, equations, directive lines and labels left out.

    A page that imports ``sentences`` reads each glued sentence at the mean length of its choices.
    """
    roles = None
    if re.search(r"^import sentences\b|^\s*import .*\bsentences\b", source, re.M):
        from sentences import ROLES

        roles = ROLES
    text, cells = _without_code(_FRONT_MATTER.sub("", source))
    text += "\n" + "\n".join(_captions(cell) for cell in cells)
    text = _MATH.sub(" ", text)
    glued = sum(_sentence_words(key, roles) for key in _GLUE.findall(text))
    text = _ROLE.sub(" word ", _GLUE.sub(" ", text))
    text = _DIRECTIVE.sub(" ", text)
    text = _OPTION.sub(" ", text)
    return round(len(_WORD.findall(text)) + glued)


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
