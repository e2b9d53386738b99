"""Build and maintain the Korean and Chinese editions of the book.

The English book is built by ``jupyter-book build .`` into ``_build/html``. Each other
edition is the same project built with ``language = <lang>`` into ``_build/html/<lang>``,
reading its prose from ``locales/<lang>/LC_MESSAGES/book/*.po`` and its executed chapters
from the English build's jupyter-cache (nothing is executed again).

Usage::

    python tools/editions.py build            # every translated edition (book/editions.toml), after the English
    python tools/editions.py build ko         # one edition
    python tools/editions.py update-po        # after editing English prose: refresh every .po
    python tools/editions.py exercises        # write solutions/rooflines-<lang>/ from the .po files
    python tools/editions.py notebooks        # write editions/<lang>/book/*.ipynb from the built pages
    python tools/editions.py fonts            # cut book/fonts/ (the launched notebooks' CJK fonts) from npm's

The exercises are translated the same way: one ``.po`` per notebook under
``locales/<lang>/LC_MESSAGES/exercises/`` (one message per markdown cell, its nbgrader
``grade_id`` as context; each comment, docstring and ``print`` message of a code cell, context
``code``) and ``feedback.po`` (one message per catalogue id). Only those texts of a code cell are
translated, so every edition defines the same names and runs the same hidden tests. An edition's
``feedback.py`` names its language (``EDITION = "ko"``), so its messages need no other file.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat
import yaml
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book"))
import bookeditions

BUILD = ROOT / "_build"
LOCALES = ROOT / "locales"
# The translated editions, as book/editions.toml lists them.
LANGUAGES = bookeditions.translated()
# Sphinx's name for each edition's language: Simplified Chinese is zh_CN, for which Sphinx and the
# theme ship their own translations (search page, navigation); our catalogs stay in locales/zh.
SPHINX_LANGUAGE = {e.code: e.sphinx_language for e in bookeditions.editions()}
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")
SOURCE = ROOT / "solutions"
ASSIGNMENT = "rooflines"
CATALOGUE = SOURCE / ASSIGNMENT / "feedback.csv"


def edition_config(language: str, target: Path) -> Path:
    """Write ``_config.yml`` for one edition: same book, another language, the shared cache."""
    config: dict[str, Any] = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    sphinx = config.setdefault("sphinx", {})
    sphinx["local_extensions"] = {name: str(ROOT / path) for name, path in sphinx.get("local_extensions", {}).items()}
    sphinx_language = SPHINX_LANGUAGE[language]
    locales = LOCALES
    if sphinx_language != language:  # Sphinx reads locales/<its language name>/: point that name at ours
        locales = target.parent / "locales"
        locales.mkdir(parents=True, exist_ok=True)
        link = locales / sphinx_language
        if not link.exists():
            link.symlink_to(LOCALES / language, target_is_directory=True)
    sphinx.setdefault("config", {}).update({"language": sphinx_language, "locale_dirs": [str(locales)]})
    config.setdefault("execute", {})["cache"] = str(BUILD / ".jupyter_cache")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return target


def jupyter_book(config: Path, out: Path, *extra: str) -> None:
    """Run ``jupyter-book build`` on the repository with another configuration file."""
    command = [
        str(JUPYTER_BOOK),
        "build",
        "-q",
        "-W",
        "-n",
        "--keep-going",
        "--config",
        str(config),
        "--path-output",
        str(out),
        *extra,
        str(ROOT),
    ]
    result = subprocess.run(command, cwd=ROOT, check=False)
    if result.returncode:
        sys.exit(f"the {config.stem.removeprefix('_config.')} edition failed to build (see above)")


def build(language: str) -> Path:
    """Build one edition into ``_build/html/<language>`` and return that folder."""
    BUILD.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"edition-{language}-", dir=BUILD) as tmp:
        work = Path(tmp)
        jupyter_book(edition_config(language, work / f"_config.{language}.yml"), work)
        target = BUILD / "html" / language
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(work / "_build" / "html", target)
    _edition_sources(language, target)
    return target


NOTEBOOKS = ROOT / "editions"


def _page_messages(language: str, page: str) -> list[tuple[str, str]]:
    """``(English, translation)`` of a chapter's messages and its problems' titles, longest first."""
    from localfigures import catalog

    found = {english: text for (_, english), text in catalog(language, f"book/{page}").items() if text}
    found |= {english: text for (context, english), text in catalog(language, "pasted").items() if context == "title"}
    return sorted(found.items(), key=lambda item: -len(item[0]))


def translate_markdown(source: str, translations: list[tuple[str, str]]) -> str:
    """A markdown cell with each translated message put in place of its English (line breaks may differ).

    One pass, longest message first: a translation put in place is never searched again, so a
    gloss it carries (``링크(link)``) is not translated a second time (``링크(링크)``).

    >>> translate_markdown("**The link.** A link", [("The link.", "링크(link)."), ("link", "링크")])
    '**링크(link).** A 링크'
    """
    table = {" ".join(english.split()): text for english, text in translations if english.split()}
    if not table:
        return source
    alternatives = sorted(table, key=len, reverse=True)
    pattern = re.compile(
        r"(?<![\w])(?:" + "|".join(r"\s+".join(map(re.escape, e.split())) for e in alternatives) + r")(?![\w])"
    )
    return pattern.sub(lambda m: table[" ".join(m.group(0).split())], source)


_ONLY = re.compile(r"^(`{3,}|:{3,})\{only\} edition_(\w+)\n(.*?)^\1[ \t]*$\n?", re.M | re.S)


def only_for(language: str, source: str) -> str:
    """A markdown cell as an edition shows it: ``{only} edition_<lang>`` blocks kept for that edition alone."""
    return _ONLY.sub(lambda m: m.group(3) if m.group(2) == language else "", source)


def chapter_notebook(language: str, page: Path) -> nbformat.NotebookNode:
    """A chapter as a notebook in an edition's language: its markdown translated, its code unchanged."""
    import jupytext

    nb = jupytext.read(page)
    translations = _page_messages(language, page.stem)
    from localfigures import catalog

    math_words = {english: text for (context, english), text in catalog(language, "math").items() if not context}
    comments = {
        ("code", english): text for (context, english), text in catalog(language, "code").items() if not context
    }
    for number, cell in enumerate(nb.cells):
        cell.id = f"{page.stem}-{number}"  # the same notebook every time it is written
        if cell.cell_type == "code":  # the comments the book shows (code.po); hidden plumbing stays as it is
            cell.source = translate_code(cell.source, comments)[0]
        if cell.cell_type == "markdown":
            source = only_for(language, cell.source)
            source = translate_markdown(source, translations)
            source = re.sub(
                r"\\text\{([^{}]*)\}", lambda m: "\\text{" + math_words.get(m.group(1), m.group(1)) + "}", source
            )
            cell.source = re.sub(
                r"(github\.com/[^/\s]+/[^/\s]+/blob/[^/\s]+/(?:exercises|solutions)/rooflines)/",
                rf"\1-{language}/",
                source,
            )
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata.pop("jupytext", None)
    return nb


def chapters() -> list[Path]:
    """The book's pages, as ``_toc.yml`` lists them."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    names = [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part["chapters"]]
    return [ROOT / f"{name}.md" for name in names]


def write_notebooks(target: Path = NOTEBOOKS) -> list[Path]:
    """Write ``editions/<lang>/book/<page>.ipynb`` for every edition: what every edition's
    Colab, Binder and download buttons open (``tools/launch.py``; after ``make book``)."""
    from launch import write_launch_notebooks

    return write_launch_notebooks(target)


def _edition_sources(language: str, html: Path) -> None:
    """The download buttons serve the edition's launched notebook (``tools/launch.py``) and its own source."""
    import jupytext
    from launch import launch_notebook

    sources = html / "_sources" / "book"
    for page in chapters():
        if (sources / f"{page.stem}.ipynb").exists():
            nbformat.write(launch_notebook(language, page.stem), sources / f"{page.stem}.ipynb")
        if language != "en" and (sources / f"{page.stem}.md").exists():
            nb = chapter_notebook(language, page)
            nb.metadata = jupytext.read(page).metadata
            jupytext.write(nb, sources / f"{page.stem}.md", fmt="md:myst")


def update_po() -> None:
    """Extract every translatable message of the English book and merge it into each ``.po``."""
    work = BUILD / "editions" / "gettext"
    jupyter_book(
        edition_config("en", work / "_config.gettext.yml"), work, "--builder", "custom", "--custom-builder", "gettext"
    )
    pot = work / "_build" / "gettext"
    # the templates' words (the theme's and book/_ext's) are translated in theme.po, not in a sphinx.po of their own
    (pot / "sphinx.pot").unlink(missing_ok=True)
    command = [
        str(Path(sys.executable).with_name("sphinx-intl")),
        "update",
        "-p",
        str(pot),
        "-d",
        str(LOCALES),
        "-w",
        "0",
        *[arg for lang in LANGUAGES for arg in ("-l", lang)],
    ]
    before = {lang: book_translations(lang) for lang in LANGUAGES}
    subprocess.run(command, cwd=ROOT, check=True)
    for lang in LANGUAGES:
        carry_translations(lang, before[lang])


def book_translations(language: str) -> dict[str, str]:
    """Every finished translation of the book's pages in ``language``, by its English text.

    Read before the catalogs are updated, it is the compendium :func:`carry_translations` fills
    them from: a paragraph moved to another page (a chapter split in two) keeps its translation.
    """
    found: dict[str, str] = {}
    for path in sorted((LOCALES / language / "LC_MESSAGES" / "book").glob("*.po")):
        with path.open("rb") as fh:
            for message in read_po(fh, locale=language):
                if message.id and message.string and not message.fuzzy and isinstance(message.id, str):
                    found.setdefault(message.id, str(message.string))
    return found


def carry_translations(language: str, compendium: dict[str, str]) -> list[Path]:
    """Fill each page's untranslated or fuzzy message whose English text ``compendium`` translates.

    Only an exact match is taken, and only catalogs that gain a translation are written again
    (with the line width ``sphinx-intl update -w 0`` uses). Returns the catalogs written.

    Examples
    --------
    >>> carry_translations("ko", {}) == []
    True
    """
    written = []
    for path in sorted((LOCALES / language / "LC_MESSAGES" / "book").glob("*.po")):
        with path.open("rb") as fh:
            catalog = read_po(fh, locale=language)
        filled = 0
        for message in catalog:
            if message.id and (not message.string or message.fuzzy) and message.id in compendium:
                message.string = compendium[message.id]
                message.flags.discard("fuzzy")
                message.previous_id = []
                filled += 1
        if filled:
            with path.open("wb") as fh:
                write_po(fh, catalog, width=0)
            written.append(path)
    return written


def _merge(template: Catalog, path: Path, language: str) -> None:
    """Write ``template`` to ``path``, keeping every translation whose English text is unchanged."""
    if path.exists():
        with path.open("rb") as fh:
            catalog = read_po(fh, locale=language)
        catalog.update(template, no_fuzzy_matching=True)
    else:
        catalog = Catalog(locale=language)
        for message in template:
            if message.id:
                catalog.add(message.id, context=message.context)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        write_po(fh, catalog, width=0, ignore_obsolete=True, omit_header=True)


def markdown_cells(notebook: Path) -> list[tuple[str, str]]:
    """``(grade_id, source)`` of every markdown cell a student reads (not their own answers), and of every model
    answer an instructor grades by hand (a markdown answer cell with points), which each edition's grader reads."""
    nb = nbformat.read(notebook, as_version=4)
    cells = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and (not meta.get("solution", False) or meta.get("grade", False)):
            cells.append((meta.get("grade_id", ""), cell.source))
    return cells


CODE_CONTEXT = "code"  # the context of a code cell's comments, docstrings and printed messages
_STRING = re.compile(r"(?s)([rRuU]?)(\"\"\"|'''|\"|')(.*)\2")
_FSTRING = re.compile(r"(?s)([fF][rR]?|[rR][fF])(\"|')(.*)\2")  # a printed f-string, its fields kept as written
# Editions whose assignments translate the f-strings their code prints (print(f"measured: {x:.1f} GFLOP/s")):
# a translation keeps every {field} of the English, as written.
PRINTED_FSTRINGS = ("zh",)
_WORDS = re.compile(r"[A-Za-z]{3,}")


def code_texts(
    source: str, english_only: bool = True, asserts: bool = False, fstrings: bool = False
) -> list[tuple[int, int, str, str]]:
    """What a student reads in a code cell: ``(start, end, prefix, text)`` of each comment, docstring and
    ``print("...")`` message with English words in it (and, with ``asserts``, each ``assert``'s message; with
    ``fstrings``, each ``print(f"...")`` message, its fields as written); ``source[start:end]`` is its text alone.

    nbgrader's ``### BEGIN SOLUTION``-style markers are left alone, and so is every other string: names,
    keys and format strings are code.

    >>> [t for *_, t in code_texts('assert x > 0, "x is positive"  # a check', asserts=True)]
    ['x is positive', 'a check']
    >>> [t for *_, t in code_texts('print(f"measured: {x:.1f} GB/s")', fstrings=True)]
    ['measured: {x:.1f} GB/s']
    """
    import io
    import tokenize

    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def at(row: int, col: int) -> int:
        return offsets[row - 1] + col

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    found = []
    for i, token in enumerate(tokens):
        start, end = at(*token.start), at(*token.end)
        if token.type == tokenize.COMMENT and not token.string.startswith("###"):
            text = token.string.lstrip("#").strip()
            if _WORDS.search(text) or not english_only:
                found.append((end - len(token.string.lstrip("#").lstrip()), end, "comment", text))
        elif token.type == tokenize.STRING:
            before = [t for t in tokens[:i] if t.type not in (tokenize.NL, tokenize.COMMENT)]
            docstring = not before or before[-1].type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
            printed = len(before) >= 2 and before[-1].string == "(" and before[-2].string == "print"
            message = asserts and before and before[-1].string == "," and _assert_message(before)
            quoted = _STRING.fullmatch(token.string) or (fstrings and printed and _FSTRING.fullmatch(token.string))
            if (docstring or printed or message) and quoted and (_WORDS.search(quoted.group(3)) or not english_only):
                inner = start + len(quoted.group(1)) + len(quoted.group(2))
                found.append((inner, inner + len(quoted.group(3)), quoted.group(2), quoted.group(3)))
    return found


def _assert_message(before: list[Any]) -> bool:
    """Whether the string after ``before`` (tokens, the last a comma) is an ``assert`` statement's message."""
    import tokenize

    depth = 0
    for token in reversed(before[:-1]):
        if token.type == tokenize.OP and token.string in ")]}":
            depth += 1
        elif token.type == tokenize.OP and token.string in "([{":
            depth -= 1
        ends = token.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT) or token.string == ";"
        if ends or (depth == 0 and token.string == ","):  # another statement, or a comma of the condition's own
            return False
        if token.type == tokenize.NAME and token.string == "assert" and depth == 0:
            return True
    return False


def _fields_of(text: str) -> list[str]:
    """The replacement fields of an f-string's text, as written (``{x:.1f}``)."""
    return [text[start:end] for start, end in _fields(text)]


def translate_code(
    source: str, done: dict[tuple[str, str], str], asserts: bool = False, fstrings: bool = False
) -> tuple[str, list[str]]:
    """A code cell with its comments, docstrings and printed messages (and ``assert`` messages, with
    ``asserts``; printed f-strings, with ``fstrings``) translated; and those untranslated, or translated with
    other fields than the English f-string's."""
    missing = []
    for start, end, kind, text in reversed(code_texts(source, asserts=asserts, fstrings=fstrings)):
        key = (CODE_CONTEXT, text)
        if key not in done:
            missing.append(text)
            continue
        new = done[key]
        if fstrings and sorted(_fields_of(new)) != sorted(_fields_of(text)):
            missing.append(f"{text} (the translation's fields differ)")
            continue
        if kind not in ("comment", '"""', "'''"):
            new = new.replace("\\", "\\\\").replace(kind, "\\" + kind)
        source = source[:start] + new + source[end:]
    return source, missing


# --- the strings a chapter's code prints and draws, in an edition's language ------------------------

_FIELD = 9_000_000  # an f-string's field stands in a message as this number plus its index
_SENTINEL = re.compile(r"90000(\d\d)")


def _fields(inner: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each replacement field ``{...}`` of an f-string's text (``{{`` is a brace)."""
    found, i = [], 0
    while i < len(inner):
        if inner.startswith(("{{", "}}"), i):
            i += 2
            continue
        if inner[i] == "{":
            depth, j = 1, i + 1
            while j < len(inner) and depth:
                depth += {"{": 1, "}": -1}.get(inner[j], 0)
                j += 1
            found.append((i, j))
            i = j
            continue
        i += 1
    return found


Run = tuple[list[tuple[int, int]], str | None, str | None, bool]


def _string_runs(source: str) -> list[Run]:
    """Each run of adjacent string literals in ``source``: the ``(start, end)`` of its pieces, the call
    (``print``) and keyword argument (``headers``) it stands in, if any, and whether it is a value the
    code reads (``x == "compute-bound"``, ``BOOK["v5e_hbm"]``) rather than text it shows.

    Works with Python 3.11's tokenizer, where an f-string is one token, and 3.12's, where it is several.
    """
    import io
    import tokenize

    offsets = [0]
    for line in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))

    def at(pos: tuple[int, int]) -> int:
        return offsets[pos[0] - 1] + pos[1]

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    fstring_start = getattr(tokenize, "FSTRING_START", -1)
    fstring_end = getattr(tokenize, "FSTRING_END", -1)
    skip = (tokenize.NL, tokenize.COMMENT, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    frames: list[list[str | None]] = []  # [opener, call name, keyword]
    runs: list[Run] = []
    previous: list[tokenize.TokenInfo] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.type in (tokenize.STRING, fstring_start):
            start = at(token.start)
            if token.type == fstring_start:
                depth = 1
                while depth:
                    i += 1
                    depth += {fstring_start: 1, fstring_end: -1}.get(tokens[i].type, 0)
            piece = (start, at(tokens[i].end))
            if previous and previous[-1].type in (tokenize.STRING, fstring_end) and runs:
                runs[-1][0].append(piece)
            else:
                calls = [f for f in frames if f[0] == "("]
                call, keyword = (calls[-1][1], calls[-1][2]) if calls else (None, None)
                before = [t.string for t in previous[-2:]]
                read = bool(before) and (
                    before[-1] in ("==", "!=", "in", "is", "not", "<", ">", "<=", ">=")
                    or (before[-1] == "[" and len(before) == 2 and (before[0].isidentifier() or before[0] in ")]"))
                )
                runs.append(([piece], call, keyword, read))
            previous.append(tokens[i])
            i += 1
            continue
        if token.type == tokenize.OP:
            if token.string in "([{":
                name = previous[-1].string if previous and previous[-1].type == tokenize.NAME else None
                frames.append([token.string, name if token.string == "(" else None, None])
            elif token.string in ")]}" and frames:
                frames.pop()
            elif token.string == "=" and frames and frames[-1][0] == "(" and previous[-1].type == tokenize.NAME:
                frames[-1][2] = previous[-1].string
            elif token.string == "," and frames:
                frames[-1][2] = None
        if token.type not in skip:
            previous.append(token)
        i += 1
    return runs


_LITERAL = re.compile(r"(?s)([A-Za-z]*)(\"\"\"|'''|\"|')(.*)\2")
PRINTING = {"print"}  # a call whose strings are printed (outputs.po); others may be drawn (figures.po)


def _message(pieces: list[tuple[str, str, str]]) -> tuple[str, list[str]]:
    """A run of literals as one text, each f-string field as a sentinel number; and the fields."""
    text, fields = "", []
    for prefix, _, inner in pieces:
        if "f" not in prefix.lower():
            text += inner
            continue
        last = 0
        for start, end in _fields(inner):
            text += inner[last:start] + str(_FIELD + len(fields))
            fields.append(inner[start:end])
            last = end
        text += inner[last:]
    return text, fields


def _split(text: str, sizes: list[int]) -> list[str]:
    """``text`` cut into ``len(sizes)`` parts in the proportions of ``sizes``, at a space where it can,
    never inside a field."""
    protected = [(m.start(), m.end()) for m in _SENTINEL.finditer(text)]
    allowed = [k for k in range(len(text) + 1) if not any(a < k < b for a, b in protected)]
    total, parts, last, seen = sum(sizes) or 1, [], 0, 0
    for size in sizes[:-1]:
        seen += size
        want = round(len(text) * seen / total)
        after = [k for k in allowed if k >= last]
        spaces = [k for k in after if k > last and text[k - 1] == " "]
        best = min(spaces or after, key=lambda k: abs(k - want))
        parts.append(text[last:best])
        last = best
    return [*parts, text[last:]]


def translate_strings(source: str, lookup: Any, reads: Any = None) -> str:
    """``source`` with each run of string literals that ``lookup(text, call, keyword, fields)`` translates replaced.

    ``text`` is the run's text with its f-string fields as sentinel numbers (``fields`` their source, in
    order); a value the code reads (``x["Algo 1"]``) is left alone, or given to ``reads(text)``; each returns the
    translation (sentinels kept) or ``None``. The code around the strings, and every field, stay the same.

    >>> translate_strings('print(f"{n:5d} tokens")', lambda text, call, kw, fields: text.replace("tokens", "토큰"))
    'print(f"{n:5d} 토큰")'
    """
    for spans, call, keyword, read in reversed(_string_runs(source)):
        if read and reads is None:
            continue
        pieces = [_LITERAL.fullmatch(source[start:end]) for start, end in spans]
        if not all(pieces) or any(set(p.group(1).lower()) & set("br") for p in pieces if p):
            continue
        groups = [p.groups() for p in pieces if p]
        text, fields = _message(groups)
        new = reads(text) if read else lookup(text, call, keyword, fields)
        if not new or new == text:
            continue
        out = []
        for (prefix, quote, _), part in zip(groups, _split(new, [len(g[2]) for g in groups]), strict=True):
            if len(quote) == 1:
                part = part.replace("\\", "\\\\").replace(quote, "\\" + quote)
            if "f" in prefix.lower() or _SENTINEL.search(part):
                part = part.replace("{", "{{").replace("}", "}}")
                part = _SENTINEL.sub(lambda m, fields=fields: fields[int(m.group(1))], part)
                prefix = prefix if "f" in prefix.lower() else prefix + "f"
            out.append(f"{prefix}{quote}{part}{quote}")
        between = [source[spans[k][1] : spans[k + 1][0]] for k in range(len(spans) - 1)] + [""]
        joined = "".join(piece + gap for piece, gap in zip(out, between, strict=True))
        source = source[: spans[0][0]] + joined + source[spans[-1][1] :]
    return source


#: Editions whose code shows its kept values (``{"Algo 1": 60.0}``) in their language: an edition's ``outputs.po``
#: must then also translate the messages those values are printed in (``{0} at {1}:``), which it opts into here.
KEPT_VALUES = LANGUAGES
# a field whose value the edition prints in its own words: a verdict such as ``est.bound`` or ``state['side']``
_VERDICT = re.compile(r"\b(?:bound|bottleneck|scope)\b|\[['\"](?:bound|side)['\"]\]")


def kept_values(source: str, language: str, page: str | None = None) -> dict[str, str]:
    """The values a cell keeps that :func:`shown_code` shows translated: English -> the edition's text."""
    found: dict[str, str] = {}

    def note(text: str, call: str | None, keyword: str | None, fields: list[str]) -> str | None:
        new = _kept_value(text, call, keyword, language, page)
        if new:
            found[text] = new
        return None

    translate_strings(source, note)
    return found


def _kept_value(text: str, call: str | None, keyword: str | None, language: str, page: str | None = None) -> str | None:
    """A value the code keeps (not an argument a function may read, not a message) that a catalog translates whole:
    what it prints (``outputs.po``), draws (``figures.po``) or, a phrase of several words, writes into the page's
    table (the page's catalog: ``"one way"``)."""
    sys.path.insert(0, str(ROOT / "book"))
    from localfigures import catalog

    if language not in KEPT_VALUES or call is not None or keyword is not None or _SENTINEL.search(text):
        return None
    whole = _printed_or_drawn(text, language)
    if whole:
        return whole
    if page:
        cell = {e: t for (c, e), t in catalog(language, f"book/{page}").items() if not c}.get(text)
        return cell if cell and cell != text else None
    return None


def _printed_or_drawn(text: str, language: str) -> str | None:
    """``text`` as ``outputs.po`` or ``figures.po`` translates the whole of it (numbers kept), if either does."""
    sys.path.insert(0, str(ROOT / "book"))
    from localfigures import catalog, fill, messages, template

    key, numbers = template(text)
    phrases = {e: t for (c, e), t in catalog(language, "outputs").items() if not c}
    whole = phrases.get(key) or messages(language).get(key)
    return fill(whole, numbers) if whole else None


def read_values(kept: dict[str, str], language: str) -> dict[str, str]:
    """The ``kept`` values the code may also read as keys (``algorithms["Algo 1"]``): those a student sees printed
    or drawn. A table's label (``("what", prov["what"])``) is renamed where it is shown, not where data is read."""
    return {english: text for english, text in kept.items() if _printed_or_drawn(english, language)}


def rename_values(source: str, kept: dict[str, str], reads: dict[str, str] | None = None) -> str:
    """``source`` with every string that is one of the ``kept`` values in the edition's text, and every key it reads
    that is one of ``reads`` (all of ``kept`` by default): a notebook whose code shows ``{"算法 1": 60.0}`` reads
    ``algorithms["算法 1"]`` in its hidden cells too.

    >>> rename_values('a = x["Algo 1"]', {"Algo 1": "算法 1"})
    'a = x["算法 1"]'
    >>> rename_values('rows = [("what", prov["what"])]', {"what": "测量项"}, reads={})
    'rows = [("测量项", prov["what"])]'
    """
    if not kept:
        return source
    reads = kept if reads is None else reads
    return translate_strings(source, lambda text, *_: kept.get(text), reads=reads.get)


def shown_code(source: str, language: str, page: str, kept: dict[str, str] | None = None) -> str:
    """A chapter's code cell as an edition shows and runs it: its comments (``code.po``), what it prints
    (``outputs.po``), the texts it draws (``figures.po``) and its tables' headings (the page's catalog)
    in the edition's language. Names, keys a function reads, fields and numbers stay as they are.

    A value the code keeps and later prints or draws (``{"Algo 1": 60.0}``, ``("unfused", unfused)``) is
    put in the edition's language too when a catalog translates the whole of it, so that the code a
    student reads, and edits, prints what the page shows under it; ``kept`` (:func:`kept_values` of the
    whole notebook) renames the same values where another cell defined them and this one reads them. In Chinese, a printed message is
    punctuated as the output is (``：``, ``，``), also when its Chinese arrives through such a value.
    """
    if language == "en":
        return source
    from localfigures import catalog, chinese_punctuation, fill, messages, template, translate_output

    comments = {("code", e): t for (c, e), t in catalog(language, "code").items() if not c}
    source = translate_code(source, comments, asserts=True)[0]
    page_words = {e: t for (c, e), t in catalog(language, f"book/{page}").items() if not c}
    figures = messages(language)

    kept = {**kept_values(source, language, page), **(kept or {})}  # the cell's own, and the notebook's
    renamed = rename_values(source, kept, read_values(kept, language))
    carried = renamed != source  # a value in the edition's language reaches what this cell prints
    source = renamed

    def lookup(text: str, call: str | None, keyword: str | None, fields: list[str]) -> str | None:
        if call in PRINTING:
            printed = translate_output(text, language)
            verdicts = [str(_FIELD + i) for i, f in enumerate(fields) if _VERDICT.search(f)]
            if language == "zh" and (carried or printed != text or verdicts):
                for number in verdicts:  # printed in Chinese: its brackets are full-width
                    printed = re.sub(rf"\s*\(({number})\)", r"（\1）", printed)
                printed = chinese_punctuation(printed, every_line=True)
            return printed
        if keyword == "headers":
            return page_words.get(text)
        if call is None:  # a key or a value the code keeps ({"Algo 1": 60.0}); figures translate it when drawn
            return None
        key, numbers = template(text)
        return fill(figures[key], numbers) if key in figures else None

    return translate_strings(source, lookup)


def code_skeleton(source: str) -> list[str]:
    """A code cell's tokens without the texts ``code_texts`` translates: the same in every edition (an
    edition's notebook fetches its files from its own assignment folder, ``exercises/rooflines-<lang>/``)."""
    source = re.sub(rf"exercises/{ASSIGNMENT}-(?:{'|'.join(LANGUAGES)})/", f"exercises/{ASSIGNMENT}/", source)
    texts = code_texts(source, english_only=False, fstrings=True)
    for start, end, kind, text in reversed(texts):
        prefix = re.search(r"[A-Za-z]{0,2}$", source[: start - len(kind)]).group()  # type: ignore[union-attr]
        fields = "".join(_fields_of(text)) if kind != "comment" and "f" in prefix.lower() else ""
        source = source[:start] + "…" + fields + source[end:]
    return source.split()


def catalogue_rows() -> list[dict[str, str]]:
    """The misconception catalogue, one dict per id."""
    with CATALOGUE.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def alt_texts(executed: Path) -> list[str]:
    """The description of every figure of a chapter: its cells' ``mystnb.image.alt`` and ``:alt:`` options."""
    found = []
    for cell in json.loads(executed.read_text(encoding="utf-8"))["cells"]:
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
        if alt:
            found.append(" ".join(alt.split()))
    page = ROOT / "book" / f"{executed.stem}.md"
    found += [" ".join(m.split()) for m in re.findall(r"^:alt: (.+)$", page.read_text(encoding="utf-8"), re.M)]
    return found


EXECUTED = BUILD / "jupyter_execute" / "book"


def executed_outputs(notebook: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The outputs of an English-build chapter in ``_build/jupyter_execute``, and the values it glued."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    glued = notebook.with_suffix(".glue.json")
    values = list(json.loads(glued.read_text(encoding="utf-8")).values()) if glued.is_file() else []
    return [output for cell in cells for output in cell.get("outputs", [])], values


def update_figure_po() -> None:
    """Refresh ``locales/<lang>/LC_MESSAGES/figures.po`` from the texts on the English build's figures."""
    from localfigures import figure_strings

    if not any(EXECUTED.glob("*.ipynb")):
        sys.exit("build the English book first (make book): the figure texts are read from its executed chapters")
    template = Catalog()
    measured = measured_figure_texts()
    for notebook in sorted(EXECUTED.glob("*.ipynb")):
        outputs, glued = executed_outputs(notebook)
        page = f"book/{notebook.stem}.md"
        drawn = figure_strings(outputs + glued) | {text for text, where in measured if where == page}
        for text in sorted(drawn):
            template.add(text, locations=[(page, 0)])
        for alt in alt_texts(notebook):
            template.add(alt, context="alt", locations=[(page, 0)])
    for language in LANGUAGES:
        _merge(template, LOCALES / language / "LC_MESSAGES" / "figures.po", language)


#: Chapters that draw what the build machine measured: a figure text there may be drawn by one build and not by
#: the next (the measured knee of a sweep too noisy for one), so its translation is kept when this build lacks it.
MEASURED_PAGES = ("book/measure-your-machine.md",)


def measured_figure_texts() -> set[tuple[str, str]]:
    """``(text, page)``: the translated figure texts of a :data:`MEASURED_PAGES` chapter that carry a measured number
    (``measured knee ≈ {0}``); a text without one is drawn by every build, and dropped when no build draws it."""
    found = set()
    for language in LANGUAGES:
        path = LOCALES / language / "LC_MESSAGES" / "figures.po"
        if not path.exists():
            continue
        with path.open("rb") as fh:
            for m in read_po(fh, locale=language):
                pages = {location for location, _ in m.locations} & set(MEASURED_PAGES)
                if m.id and m.string and not m.fuzzy and m.context is None and pages and "{0}" in m.id:
                    found.add((m.id, min(pages)))
    return found


def update_pasted_po() -> None:
    """Refresh ``locales/<lang>/LC_MESSAGES/pasted.po``: every glued value with words in it.

    That is each such value of the English build, and every sentence ``book/sentences.py`` can
    choose, so that an edition built on another machine finds the sentence that machine chose.
    """
    from localfigures import has_prose, template
    from sentences import templates

    found = set(templates())
    for notebook in sorted(EXECUTED.glob("*.ipynb")):
        for value in executed_outputs(notebook)[1]:
            data = value.get("data", {})
            text = str(data.get("text/plain", "")).strip("'\"")
            if list(data) == ["text/plain"] and has_prose(text):
                found.add(template(text)[0])
    catalog = Catalog()
    for text in sorted(found):
        catalog.add(text)
    for page in sorted((ROOT / "book").glob("*.md")):  # problem titles: an exercise directive's argument
        for title in re.findall(r"^:{3,}\{exercise\} (.+)$", page.read_text(encoding="utf-8"), re.M):
            catalog.add(title.strip(), context="title")
    for language in LANGUAGES:
        _merge(catalog, LOCALES / language / "LC_MESSAGES" / "pasted.po", language)


def chapter_code_texts() -> list[str]:
    """Every comment, docstring, printed message and ``assert`` message of the chapters' code cells, hidden
    ones too, and of the first cell of their launch notebooks (``tools/launch.py``): ``code.po``'s messages."""
    import jupytext
    from launch import setup_cell

    found = [text for *_, text in code_texts(setup_cell("en").source, asserts=True)]
    for page in chapters():
        if not page.exists():
            continue
        for cell in jupytext.read(page).cells:
            if cell.cell_type == "code":
                found += [text for *_, text in code_texts(cell.source, asserts=True)]
    return list(dict.fromkeys(found))


def update_code_po(languages: tuple[str, ...] = LANGUAGES) -> None:
    """Refresh ``locales/<lang>/LC_MESSAGES/code.po``: what the chapters' code says in words (see
    :func:`chapter_code_texts`); the launch notebooks show it, hidden cells included, in the edition's language."""
    template = Catalog()
    for text in chapter_code_texts():
        template.add(text)
    for language in languages:
        _merge(template, LOCALES / language / "LC_MESSAGES" / "code.po", language)


def update_exercise_po() -> None:
    """Refresh ``locales/<lang>/LC_MESSAGES/exercises/*.po`` from the English notebooks and catalogue."""
    for language in LANGUAGES:
        templates: dict[str, Catalog] = {}
        for notebook in sorted((SOURCE / ASSIGNMENT).glob("*.ipynb")):
            template = Catalog()
            for grade_id, text in markdown_cells(notebook):
                template.add(text, context=grade_id)
            for cell in nbformat.read(notebook, as_version=4).cells:
                if cell.cell_type == "code":
                    for *_, text in code_texts(cell.source, fstrings=language in PRINTED_FSTRINGS):
                        template.add(text, context=CODE_CONTEXT)
            templates[notebook.stem] = template
        feedback = Catalog()
        for row in catalogue_rows():
            feedback.add(row["en"], context=row["id"])
        templates["feedback"] = feedback
        for name, template in templates.items():
            _merge(template, LOCALES / language / "LC_MESSAGES" / "exercises" / f"{name}.po", language)


def _translations(language: str, name: str) -> dict[tuple[str, str], str]:
    from localfigures import catalog

    return {
        (context or "", english): text for (context, english), text in catalog(language, f"exercises/{name}").items()
    }


_EDITION_LINE = re.compile(r'^EDITION = "en"', re.M)


def edition_helper(source: str, language: str) -> str:
    """An edition's ``feedback.py``: the English one with ``EDITION = "<language>"``.

    The notebooks tell a student to keep two files beside them, ``feedback.py`` and ``feedback.csv``;
    the helper itself names the edition, so its messages come in the notebook's language with no other file.

    >>> edition_helper('x = 1\\nEDITION = "en"  # the language', "ko").splitlines()[1]
    'EDITION = "ko"  # the language'
    """
    new, count = _EDITION_LINE.subn(f'EDITION = "{language}"', source)
    if count != 1:
        raise ValueError(f'feedback.py must define the edition\'s language once, as EDITION = "en"; found {count}')
    return new


def write_exercises(languages: tuple[str, ...] = LANGUAGES, source: Path = SOURCE) -> list[str]:
    """Write each edition's source assignment, and the catalogue's language columns; return what is untranslated."""
    missing: list[str] = []
    rows = catalogue_rows()
    for language in languages:
        done = _translations(language, "feedback")
        for row in rows:
            row[language] = done.get((row["id"], row["en"]), "")
            if not row[language]:
                missing.append(f"{language}: feedback {row['id']}")
    fields = ["id", "question", "part", "en", *LANGUAGES]
    catalogue = source / ASSIGNMENT / "feedback.csv"
    with catalogue.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    for language in languages:
        target = source / f"{ASSIGNMENT}-{language}"
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for shipped in sorted((source / ASSIGNMENT).iterdir()):
            if shipped.suffix != ".ipynb" and shipped.is_file():
                shutil.copy2(shipped, target / shipped.name)
        helper = target / "feedback.py"
        helper.write_text(edition_helper(helper.read_text(encoding="utf-8"), language), encoding="utf-8")
        for notebook in sorted((source / ASSIGNMENT).glob("*.ipynb")):
            done = _translations(language, notebook.stem)
            nb = nbformat.read(notebook, as_version=4)
            for cell in nb.cells:
                meta = cell.metadata.get("nbgrader", {})
                if cell.cell_type == "code":  # its comments, docstrings and printed messages; its own folder
                    cell.source, untranslated = translate_code(cell.source, done, fstrings=language in PRINTED_FSTRINGS)
                    cell.source = cell.source.replace(f"exercises/{ASSIGNMENT}/", f"exercises/{ASSIGNMENT}-{language}/")
                    missing += [f"{language}: {notebook.stem} code {text[:40]!r}" for text in untranslated]
                    continue
                if cell.cell_type != "markdown" or (meta.get("solution", False) and not meta.get("grade", False)):
                    continue
                key = (meta.get("grade_id", ""), cell.source)
                if key in done:
                    cell.source = done[key]
                else:
                    missing.append(f"{language}: {notebook.stem} cell {key[0] or '?'}")
            nb.metadata["language_info"] = nb.metadata.get("language_info", {})
            nbformat.write(nb, target / notebook.name)
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser(
        "build", help="build editions into _build/html/<lang> (after the English build); all of them by default"
    )
    p_build.add_argument("languages", nargs="*", metavar="LANG", help=f"one of {', '.join(LANGUAGES)}")
    sub.add_parser("update-po", help="refresh every .po under locales/ from the English pages and exercises")
    sub.add_parser("exercises", help="write solutions/rooflines-<lang>/ and feedback.csv's language columns")
    sub.add_parser("notebooks", help="write editions/<lang>/book/*.ipynb (every edition) from the built book")
    sub.add_parser("fonts", help="write book/fonts/: the figures' characters of each edition's npm font")
    args = parser.parse_args(argv)
    if args.command == "build":
        _edition_sources("en", BUILD / "html")  # the English build's download: its launched notebook
        # The editions share nothing they write (each builds in its own folder, reading the executed chapters
        # from the English build's cache), so they build side by side.
        languages = args.languages or LANGUAGES
        unknown = sorted(set(languages) - set(LANGUAGES))
        if unknown:
            parser.error(
                f"no edition {', '.join(unknown)} in book/editions.toml; the editions are {', '.join(LANGUAGES)}"
            )
        with ThreadPoolExecutor(max_workers=max(1, len(languages))) as pool:
            for built in pool.map(build, languages):
                print(f"built {built.relative_to(ROOT)}")
    elif args.command == "update-po":
        update_po()
        update_figure_po()
        update_pasted_po()
        update_code_po()
        update_exercise_po()
    elif args.command == "notebooks":
        write_notebooks()
    elif args.command == "fonts":
        from launch import write_fonts

        for path in write_fonts():
            print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")
    else:
        missing = write_exercises()
        for item in missing:
            print(f"untranslated: {item}")
        return 1 if missing else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
