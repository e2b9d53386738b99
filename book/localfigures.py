"""Every figure of a chapter, drawn once and shown in each edition's language.

A chapter's notebook runs once, for all three editions. :func:`install` makes the kernel
attach to each PNG it displays a Korean and a Chinese rendering of the same figure: every
text on it (axis labels, legends, titles, region names) is looked up in
``locales/<lang>/LC_MESSAGES/figures.po`` and drawn with a CJK font from the npm package
``@embedpdf/fonts-kr`` or ``@embedpdf/fonts-sc`` (installed by ``npm ci``). The numbers on a
text are kept: a message is looked up with its numbers replaced by ``{0}``, ``{1}``, …

What cannot be rendered is recorded next to the PNGs instead of failing the kernel: a text
with no translation, and a glyph the font lacks. The book's ``editions`` extension turns both
into build errors for the edition concerned.

A notebook a reader launches speaks one edition's language at run time: ``install("ko")``
draws every figure in Korean (its texts from ``figures.po``, with the npm font where
``npm ci`` installed it, else the small subset in ``book/fonts/``) and puts what the code
prints into Korean (``outputs.po``), numbers kept.

Example
-------
>>> template("predicted B* ≈ 240.5")
('predicted B* ≈ {0}', ['240.5'])
>>> fill("예측한 B* ≈ {0}", ["240.5"])
'예측한 B* ≈ 240.5'
"""

from __future__ import annotations

import base64
import io
import os
import re
import sys
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import bookeditions  # book/bookeditions.py: the registry of editions (book/editions.toml)

ROOT = Path(__file__).resolve().parents[1]

METADATA_KEY = "roofline-course/editions"
# Edition -> (npm package, font file, the family name matplotlib reads from that file): each edition with a font.
FONTS = {e.code: (e.font.package, e.font.file, e.font.family) for e in bookeditions.editions() if e.font}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?:[eE][+\-\u2212]?\d+)?")
_MATH = re.compile(r"\$[^$]*\$")
_LETTER = re.compile(r"[^\W\d_]")
# a lower-case English word: three letters or more, or a short word that joins numbers ("1 to 128")
_PROSE_WORD = re.compile(r"\b(?:[a-z]{3,}|to|of|or|at|in|on|by)\b")


def needs_translation(text: str) -> bool:
    """True if ``text`` has a word outside math (tick labels and bare numbers have none).

    >>> needs_translation("$\\\\mathdefault{10^{3}}$"), needs_translation("1e12"), needs_translation("FLOPs/s")
    (False, False, True)
    """
    return bool(_LETTER.search(template(_MATH.sub("", text))[0]))


def has_prose(text: str) -> bool:
    """True if ``text`` has a lower-case English word (a glued value like ``lower``), not only names and numbers.

    >>> has_prose("14 times below"), has_prose("1 to 128"), has_prose("TPU v5e (Trillium), H100 SXM (fp32)")
    (True, True, False)
    """
    return bool(_PROSE_WORD.search(template(_MATH.sub("", text))[0]))


def template(text: str) -> tuple[str, list[str]]:
    """``text`` with each number replaced by ``{i}``, and the numbers in order."""
    numbers: list[str] = []

    def placeholder(match: re.Match[str]) -> str:
        numbers.append(match.group(0))
        return "{" + str(len(numbers) - 1) + "}"

    return _NUMBER.sub(placeholder, text), numbers


def fill(message: str, numbers: list[str]) -> str:
    """Put ``numbers`` back into a translated message's ``{i}`` slots."""
    return re.sub(r"\{(\d+)\}", lambda m: numbers[int(m.group(1))], message)


def catalog(language: str, name: str) -> dict[tuple[str | None, str], str]:
    """``(context, English) -> translation`` of ``locales/<language>/LC_MESSAGES/<name>.po``.

    Only finished translations: an empty or fuzzy one is left out, as Sphinx leaves it out.
    A missing file is an empty catalog.
    """
    path = ROOT / "locales" / language / "LC_MESSAGES" / f"{name}.po"
    if not path.is_file():
        return {}
    stat = path.stat()
    return dict(_read_catalog(path, language, stat.st_mtime_ns, stat.st_size))  # a copy: callers may change it


@cache
def _read_catalog(path: Path, language: str, mtime_ns: int, size: int) -> dict[tuple[str | None, str], str]:
    """One version of a catalog file, parsed once (``mtime_ns`` and ``size`` name the version)."""
    from babel.messages.pofile import read_po

    with path.open("rb") as fh:
        return {(m.context, m.id): m.string for m in read_po(fh, locale=language) if m.id and m.string and not m.fuzzy}


@cache
def messages(language: str) -> dict[str, str]:
    """The figure messages of one edition: English template -> translated template."""
    return {english: text for (context, english), text in catalog(language, "figures").items() if context is None}


def font_file(language: str) -> Path:
    """Where ``npm ci`` puts the edition's CJK font."""
    package, name, _ = FONTS[language]
    return ROOT / "node_modules" / package / "fonts" / name


def subset_font(language: str) -> Path:
    """The edition's font cut down to the characters its figures draw (``book/fonts/``, ``tools/launch.py``).

    A notebook opened where ``npm ci`` has not run (Colab) draws with it: the whole font is megabytes.
    """
    return ROOT / "book" / "fonts" / f"RooflineCourseSans-{language}.otf"


@cache
def _register_font(language: str) -> str:
    from matplotlib import font_manager

    path = font_file(language)
    if not path.is_file():  # a launched notebook, opened where npm has not run
        path = subset_font(language)
        font_manager.fontManager.addfont(str(path))
        return str(font_manager.FontProperties(fname=str(path)).get_name())
    font_manager.fontManager.addfont(str(path))
    return FONTS[language][2]


def _fixed_labels(formatter: Any) -> Any:
    """The labels a tick formatter was given as a list, as a mutable mapping (``None`` for a computed formatter).

    ``set_ticks(ticks, labels)`` makes a ``FuncFormatter`` over a dict (matplotlib 3.5 and later), or a
    ``FixedFormatter`` over a list (earlier).
    """
    import functools

    from matplotlib.ticker import FixedFormatter

    if isinstance(formatter, FixedFormatter):
        return _ListAsDict(formatter.seq)
    func = getattr(formatter, "func", None)
    if isinstance(func, functools.partial) and func.args and isinstance(func.args[0], dict):
        return func.args[0]
    return None


class _ListAsDict(dict):  # type: ignore[type-arg]
    """A list seen as ``{index: item}``: writing an item writes the list."""

    def __init__(self, items: list[str]) -> None:
        super().__init__(enumerate(items))
        self.items_list = items

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        self.items_list[key] = value

    def update(self, other: Any = (), **kwargs: Any) -> None:
        for key, value in dict(other).items():
            self[key] = value


def render(fig: Any, language: str, **savefig: Any) -> tuple[str, list[str], list[str]]:
    """A PNG (base64) of ``fig`` in ``language``; the texts with no translation; the glyphs it lacked."""
    from matplotlib.text import Text

    table = messages(language)
    originals: list[tuple[Text, str]] = []
    missing: list[str] = []
    for artist in fig.findobj(Text):
        text = artist.get_text()
        if not text or not needs_translation(text):
            continue
        key, numbers = template(text)
        if key not in table:
            missing.append(key)
            continue
        originals.append((artist, text, artist.get_fontfamily()))
        artist.set_text(fill(table[key], numbers))
        # matplotlib falls back glyph by glyph only along an explicit list of families
        artist.set_fontfamily([*artist.get_fontfamily(), "DejaVu Sans", _register_font(language)])
    # tick labels given as a list (ax.set_yticks(ticks, ["transfer", "compute"])) are drawn anew from their
    # formatter at every draw: translate the formatter's labels, not the Text it last made
    formatters: list[tuple[dict[Any, str], dict[Any, str]]] = []
    for axes in fig.axes:
        for axis in (axes.xaxis, axes.yaxis):
            labels = _fixed_labels(axis.get_major_formatter())
            if labels is None:
                continue
            before = dict(labels)
            for position, label in before.items():
                key, numbers = template(str(label))
                if label and needs_translation(str(label)):
                    if key in table:
                        labels[position] = fill(table[key], numbers)
                    else:
                        missing.append(key)
            if labels != before:
                formatters.append((labels, before))
                done = {id(artist) for artist, _, _ in originals}
                for artist in axis.get_majorticklabels():  # the ticks' own Text objects, reused when drawn
                    if id(artist) not in done:
                        originals.append((artist, artist.get_text(), artist.get_fontfamily()))
                        artist.set_fontfamily([*artist.get_fontfamily(), "DejaVu Sans", _register_font(language)])
    buffer = io.BytesIO()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fig.savefig(buffer, format="png", **savefig)
    finally:
        for artist, text, family in originals:
            artist.set_text(text)
            artist.set_fontfamily(family)
        for labels, before in formatters:
            labels.update(before)
    glyphs = sorted({str(w.message) for w in caught if "missing from font" in str(w.message)})
    return base64.b64encode(buffer.getvalue()).decode("ascii"), sorted(set(missing)), glyphs


def figure_texts(fig: Any) -> list[str]:
    """The templates of every text on ``fig`` that a translation must cover."""
    from matplotlib.text import Text

    return sorted({template(t)[0] for a in fig.findobj(Text) if (t := a.get_text()) and needs_translation(t)})


def install(language: str | None = None) -> None:
    """Attach every edition's rendering to each PNG the kernel displays (inline figures and glue).

    With a ``language`` (or ``ROOFLINE_LANG`` set), the kernel speaks that edition's language instead:
    see :func:`speak`.
    """
    from IPython import get_ipython
    from matplotlib.figure import Figure

    language = language or os.environ.get("ROOFLINE_LANG")
    if language:
        speak(language)
        return
    shell = get_ipython()
    if shell is None:
        return
    shell.run_line_magic("matplotlib", "inline")  # registers the inline backend's PNG formatter
    formatter = shell.display_formatter.formatters["image/png"]
    english = formatter.lookup_by_type(Figure)
    if getattr(english, "_localised", False):
        return
    available = [lang for lang in FONTS if font_file(lang).is_file()]

    def localised(fig: Figure) -> Any:
        data = english(fig)
        if data is None or not available:
            return data
        found: dict[str, Any] = {"png": {}, "missing": {}, "glyphs": {}, "texts": figure_texts(fig)}
        for lang in available:
            png, missing, glyphs = render(fig, lang, bbox_inches="tight", dpi=fig.dpi)
            found["png"][lang], found["missing"][lang], found["glyphs"][lang] = png, missing, glyphs
        return data, {METADATA_KEY: found}

    localised._localised = True  # type: ignore[attr-defined]
    formatter.for_type(Figure, localised)


@cache
def _output_phrases(language: str) -> list[tuple[re.Pattern[str], str]]:
    """``outputs.po`` as substitutions, longest phrase first; ``{0}``, ``{1}`` stand for numbers."""
    phrases = [(english, text) for (context, english), text in catalog(language, "outputs").items() if context is None]
    compiled = []
    for english, text in sorted(phrases, key=lambda item: -len(item[0])):
        parts = re.split(r"\{(\d)\}", english)
        pattern = "".join(re.escape(p) if i % 2 == 0 else rf"(?P<n{p}>[\d.,]+)" for i, p in enumerate(parts))
        edge = r"(?<![\w-])" if english[:1].isalnum() else ""
        compiled.append((re.compile(edge + pattern + (r"(?![\w-])" if english[-1:].isalnum() else "")), text))
    return compiled


def translate_output(text: str, language: str) -> str:
    """What a chapter's code printed, in ``language``: each phrase of ``outputs.po`` replaced, numbers kept;
    in Chinese, a line with Chinese in it punctuated as Chinese (:func:`chinese_punctuation`).

    >>> translate_output("D =   4096: T_math  80.0 µs -> communication-bound", "en")
    'D =   4096: T_math  80.0 µs -> communication-bound'
    """
    for pattern, translation in _output_phrases(language):
        text = pattern.sub(
            lambda m, t=translation: re.sub(r"\{(\d)\}", lambda n: m.group(f"n{n.group(1)}"), t),  # type: ignore[misc]
            text,
        )
    return chinese_punctuation(text) if language == "zh" else text


_HAN = r"[\u4e00-\u9fff]"


def chinese_punctuation(text: str, every_line: bool = False) -> str:
    """Printed text punctuated as Chinese: ``通信受限; 临界批大小`` -> ``通信受限；临界批大小``.

    Only the lines with Chinese characters in them change (every line with ``every_line``, for a message
    whose Chinese arrives in a field); a bracketed value such as ``(512, 512, 1024)`` keeps its commas.

    >>> chinese_punctuation("B = 1: 18.33 ms, 通信受限; 临界批大小 240.5")
    'B = 1：18.33 ms，通信受限；临界批大小 240.5'
    >>> chinese_punctuation("分块 (512, 512, 1024): 强度 341.2, 位于脊点左侧 (带宽受限)")
    '分块 (512, 512, 1024)：强度 341.2，位于脊点左侧（带宽受限）'
    >>> chinese_punctuation("{name}: {x} FLOPs/byte, {t} µs", every_line=True)
    '{name}：{x} FLOPs/byte，{t} µs'
    """

    def line(text: str) -> str:
        if not every_line and not re.search(_HAN, text):
            return text
        text = re.sub(r"\s*\(([^()]*" + _HAN + r"[^()]*)\)", r"（\1）", text)
        text = re.sub(r"(?<=\S) +（", "（", text)
        parts = re.split(r"(\([^()]*\))", text)  # a bracketed value keeps its own commas
        for i in range(0, len(parts), 2):
            parts[i] = re.sub(r"(?<!\s); ", "；", parts[i])
            parts[i] = re.sub(r"(?<!\s): +", "：", parts[i])
            parts[i] = re.sub(r"(?<!\s), ", "，", parts[i])
            parts[i] = re.sub(r" ?-> ?", " → ", parts[i])
            parts[i] = re.sub(r"([：，；]) +(?=\S)", r"\1", parts[i])
        return "".join(parts)

    return "\n".join(line(part) for part in text.split("\n"))


def catalog_words(language: str) -> dict[str, str]:
    """The interface words of an edition (``theme.po``): English -> translation; empty for English."""
    return {english: text for (context, english), text in catalog(language, "theme").items() if context is None}


class _Translating(io.TextIOBase):
    """A text stream that writes what it is given in an edition's language (see :func:`translate_output`)."""

    def __init__(self, stream: Any, language: str) -> None:
        self.stream, self.language = stream, language

    def write(self, text: str) -> int:
        self.stream.write(translate_output(text, self.language))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def speak(language: str) -> None:
    """Make this kernel print and draw in ``language`` (an edition's code): a launched notebook's mode.

    Figures are drawn with every text translated through ``figures.po`` and the edition's font as
    fallback; printed text goes through ``outputs.po``. English leaves both as they are.
    """
    from IPython import get_ipython
    from matplotlib.figure import Figure

    shell = get_ipython()
    os.environ["ROOFLINE_LANG"] = language  # a chapter's own install() later keeps to this language
    if language == "en" or language not in FONTS:
        return
    import matplotlib as mpl

    mpl.rcParams["font.family"] = ["DejaVu Sans", _register_font(language)]  # glyph by glyph fallback
    if not isinstance(sys.stdout, _Translating):
        sys.stdout = _Translating(sys.stdout, language)
    if shell is None:
        return
    shell.run_line_magic("matplotlib", "inline")
    formatter = shell.display_formatter.formatters["image/png"]

    def drawn(fig: Figure) -> bytes:
        return base64.b64decode(render(fig, language, bbox_inches="tight", dpi=fig.dpi)[0])

    formatter.for_type(Figure, drawn)


def figure_strings(outputs: list[dict[str, Any]]) -> set[str]:
    """Every figure text (as a template) in executed outputs: a notebook's, or a page's glued values."""
    found: set[str] = set()
    for output in outputs:
        meta = (output.get("metadata") or {}).get("image/png", {}).get(METADATA_KEY, {})
        found.update(meta.get("texts", []))
    return found
