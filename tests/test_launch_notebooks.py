"""The notebooks readers launch (``editions/<lang>/book/*.ipynb``, written by ``tools/launch.py``).

Every page of every edition opens its own notebook on Colab, Binder and the download button; each
notebook holds what the built page shows (no MyST left, CommonMark-safe emphasis), is in sync with
the pages, and runs top to bottom offline in the course's environment, printing and drawing in its
edition's language.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
import yaml
from bs4 import BeautifulSoup
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book"))

import launch  # tools/launch.py

EDITIONS = launch.EDITIONS
NOTEBOOKS = {lang: sorted((ROOT / "editions" / lang / "book").glob("*.ipynb")) for lang in EDITIONS}
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
# Pages whose text and outputs are what the build machine measured: compared on their structure and code.
MEASURED = {"measure-your-machine"}
MYST = [
    (re.compile(r"\{glue(?::\w*)?\}`"), "a glue role"),
    (re.compile(r"\{(?:eq|ref|numref|doc|math|term|download)\}`"), "a role"),
    (re.compile(r"^\s*(?:>\s*)?(?:`{3,}|:{3,})\s*\{"), "a directive fence"),
    (re.compile(r"^\s*:{3,}\s*$", re.M), "a colon fence"),
    (re.compile(r"^\([\w-]+\)=\s*$", re.M), "a target"),
    (re.compile(r"^:(?:label|class|name|nocaption|tags):", re.M), "a directive option"),
]


def _require_build() -> None:
    if not all((HTML / ("" if lang == "en" else lang) / "book" / "intro.html").is_file() for lang in EDITIONS):
        pytest.fail("the book is not built: run `make book`")


def _markdown(nb: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "markdown"]


def _notebooks() -> list[tuple[str, Path]]:
    return [(lang, path) for lang in EDITIONS for path in NOTEBOOKS[lang]]


def _ids() -> list[str]:
    return [f"{lang}/{path.stem}" for lang, path in _notebooks()]


# ----------------------------------------------------------------------------- launch targets


@pytest.mark.parametrize("lang", EDITIONS)
def test_every_page_launches_its_editions_notebook(lang: str):
    """Colab, Binder and the download button of each page open the edition's launch notebook."""
    _require_build()
    site = HTML / ("" if lang == "en" else lang)
    pages = sorted((site / "book").glob("*.html"))
    launched = set()
    for page in pages:
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        buttons = [a["href"] for a in soup.select(".dropdown-launch-buttons a[href]")]
        if not buttons:
            assert not (ROOT / "editions" / lang / "book" / f"{page.stem}.ipynb").exists(), page.name
            continue
        expected = f"editions/{lang}/book/{page.stem}.ipynb"
        colab = [h for h in buttons if "colab.research.google.com" in h]
        binder = [h for h in buttons if "mybinder.org" in h]
        assert colab and binder, f"{lang}/{page.name}: launch buttons {buttons}"
        for href in colab + binder:
            assert href.endswith(expected), f"{lang}/{page.name}: {href} does not open {expected}"
        assert (ROOT / expected).is_file(), f"{expected} is not in the repository"
        downloads = [a["href"] for a in soup.select("a.btn-download-notebook-button[href]")]
        assert downloads, f"{lang}/{page.name}: no notebook download button"
        served = nbformat.read(page.parent / downloads[0], as_version=4)
        assert served.cells[0].source == launch.setup_cell(lang).source, f"{lang}/{page.name}: download"
        launched.add(page.stem)
    assert launched == {p.stem for p in NOTEBOOKS[lang]}, f"{lang}: notebooks without a page, or pages without one"
    assert len(launched) >= 10


def test_the_first_cell_installs_the_course_and_is_collapsed():
    repo = CONFIG["repository"]
    for lang, path in _notebooks():
        cell = nbformat.read(path, as_version=4).cells[0]
        assert cell.cell_type == "code" and "remove-cell" in cell.metadata["tags"], path
        assert cell.metadata["jupyter"]["source_hidden"], f"{path}: the set-up cell should be collapsed"
        assert f'COURSE_URL, COURSE_BRANCH = "{repo["url"]}", "{repo["branch"]}"' in cell.source, path
        assert f'LANGUAGE = "{lang}"' in cell.source, path


def test_hidden_cells_are_tagged_and_collapsed():
    for _, path in _notebooks():
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and {"remove-cell", "remove-input"} & set(cell.metadata.get("tags", [])):
                assert cell.metadata.get("jupyter", {}).get("source_hidden"), f"{path.name}: {cell.source[:60]!r}"


# ----------------------------------------------------------------------------- what they say


def test_the_myst_check_notices_what_it_must():
    def found(text: str) -> list[str]:
        return [name for pattern, name in MYST if pattern.search(text)]

    assert found("H100 为 {glue:text}`h100_table_peak` FLOPs/s") == ["a glue role"]
    assert found(":::{admonition} Takeaway\ntext\n:::") == ["a directive fence", "a colon fence"]
    assert found("see {eq}`eq-matmul-flops`") == ["a role"]
    assert found("```{math}\n:label: x\n2BDF\n```") == ["a directive fence", "a directive option"]
    assert not found("$$\n2BDF \\tag{9}\n$$ and [errata](https://example.org/errata.html#x)")


@pytest.mark.parametrize(("lang", "path"), _notebooks(), ids=_ids())
def test_markdown_holds_no_myst(lang: str, path: Path):
    for text in _markdown(nbformat.read(path, as_version=4)):
        for pattern, name in MYST:
            found = pattern.search(text)
            assert not found, f"{lang}/{path.name}: {name}: …{text[max(0, found.start() - 40) : found.end() + 40]}…"


def _literal_asterisks(markdown: str) -> list[str]:
    """Runs of ``**`` that CommonMark (markdown-it-py) leaves as text, outside code."""
    html = MarkdownIt("commonmark").render(markdown)
    html = re.sub(r"<(code|pre)>.*?</\1>", " ", html, flags=re.S)
    text = BeautifulSoup(html, "html.parser").get_text()
    return [text[max(0, m.start() - 20) : m.end() + 20] for m in re.finditer(r"\*\*", text)]


def test_the_asterisk_check_notices_what_it_must():
    assert _literal_asterisks("**如何自查。**填写每个")
    assert not _literal_asterisks("<strong>如何自查。</strong>填写每个 and **bold** and `a**b`")
    converter = launch.PageMarkdown("https://example.org/", ROOT, "Answer")
    assert not _literal_asterisks(converter.convert("<p><strong>如何自查。</strong>填写每个</p>"))
    assert not _literal_asterisks(converter.convert("<p><strong>자가 점검.</strong>다음</p>"))


@pytest.mark.parametrize(("lang", "path"), _notebooks(), ids=_ids())
def test_commonmark_leaves_no_asterisks(lang: str, path: Path):
    nb = nbformat.read(path, as_version=4)
    left = [found for text in _markdown(nb) for found in _literal_asterisks(text)]
    outputs = [
        o["data"]["text/markdown"]
        for c in nb.cells
        for o in c.get("outputs", [])
        if "text/markdown" in o.get("data", {})
    ]
    left += [found for text in outputs for found in _literal_asterisks(text)]
    assert not left, f"{lang}/{path.name}: literal ** under CommonMark: {left[:3]}"


def _masked(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """A measured page's notebook without what the machine measured: its code, and its headings."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            cells.append(("code", cell.source))
        else:
            cells.append(("markdown", "\n".join(line for line in cell.source.splitlines() if line.startswith("#"))))
    return cells


def test_launch_notebooks_are_in_sync_with_the_pages(tmp_path: Path):
    """editions/<lang>/book/ is what `tools/editions.py notebooks` writes from the built book."""
    _require_build()
    launch.write_launch_notebooks(tmp_path)
    for lang in EDITIONS:
        fresh = sorted((tmp_path / lang / "book").glob("*.ipynb"))
        assert [p.name for p in fresh] == [p.name for p in NOTEBOOKS[lang]], (
            f"{lang}: run `python tools/editions.py notebooks` (after make book)"
        )
        for new in fresh:
            old = ROOT / "editions" / lang / "book" / new.name
            if new.stem in MEASURED:
                same = _masked(nbformat.read(new, as_version=4)) == _masked(nbformat.read(old, as_version=4))
            else:
                same = new.read_bytes() == old.read_bytes()
            assert same, (
                f"editions/{lang}/book/{new.name} differs from the page: run `python tools/editions.py notebooks`"
            )


def test_notebooks_show_what_the_page_shows():
    """The page's pasted values, equations and folded answers are all in the notebook, not its source."""
    _require_build()
    nb = nbformat.read(ROOT / "editions" / "zh" / "book" / "where-does-the-time-go.ipynb", as_version=4)
    text = "\n".join(_markdown(nb))
    page = BeautifulSoup(
        (HTML / "zh" / "book" / "where-does-the-time-go.html").read_text(encoding="utf-8"), "html.parser"
    )
    pasted = {span.get_text() for span in page.select("article span.pasted-text")}
    assert pasted and all(value in text for value in pasted), sorted(v for v in pasted if v not in text)[:5]
    folded = page.select("article div.multiple-choice, article details.dropdown, article div.dropdown")
    assert text.count("<details>") == len(folded), "each quiz and each folded box is folded in the notebook too"
    assert text.count("$$") == 2 * len(page.select("article div.math"))
    assert "\\tag{1}" in text and "答案" in text
    problems = "\n".join(_markdown(nbformat.read(ROOT / "editions" / "ko" / "book" / "problems.ipynb", as_version=4)))
    solutions = BeautifulSoup((HTML / "ko" / "book" / "problems.html").read_text(encoding="utf-8"), "html.parser")
    # Questions 1 to 5, 7 and 8 (Question 6 closes the capstone)
    assert problems.count("<details>") == len(solutions.select("article div.solution")) == 7
    assert "colab.research.google.com/github/" in problems and "exercises/rooflines-ko/q1_int8_matmul.ipynb" in problems


# ----------------------------------------------------------------------------- they run, offline, in their language

# Run in the kernel before the notebooks: any network connection fails, and every figure's texts are recorded
# as it is drawn (after the edition's translation), for the check below. (It names nothing in the kernel's
# namespace that it needs later: each chapter starts with that namespace reset.)
INSTRUMENT = """
import socket, matplotlib
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.text import Text

def _offline(*args, **kwargs):
    raise OSError("the test runs offline: a launched notebook tried to connect")

socket.socket.connect = _offline
socket.create_connection = _offline
matplotlib._drawn_texts = []

def _recording(self, *args, _original=FigureCanvasBase.print_figure, _mpl=matplotlib, _Text=Text, **kwargs):
    _mpl._drawn_texts += [t.get_text() for t in self.figure.findobj(_Text) if t.get_text()]
    return _original(self, *args, **kwargs)

FigureCanvasBase.print_figure = _recording
"""
REPORT = """
import matplotlib
from IPython.display import display
display({"application/x-drawn-texts+json": list(matplotlib._drawn_texts)}, raw=True)
matplotlib._drawn_texts.clear()
"""
RESET = "%reset -f\nimport matplotlib.pyplot as plt\nplt.close('all')"
ENGLISH_WORD = re.compile(r"(?<![/\w])[a-z][a-z-]{2,}\b")  # a lower-case English word; units (FLOPs/byte) aside
SCRIPT = {lang: re.compile(launch.bookeditions.get(lang).script) for lang in launch.bookeditions.translated()}
# what a figure draws that is not a word of any language: math ($B \times D$), names (T_math), a function's name
# before its parenthesis (max(...)), and a line of code (acc += x)
NOT_WORDS = re.compile(r"\$[^$]*\$|\b\w*_\w*\b|\b[a-z]+(?=\()|\b\w+ [-+*/]?= \w+\b")


def _drawn_words(text: str) -> list[str]:
    """The English words a figure text draws, math, names and code aside.

    >>> _drawn_words("$X$: $B \\times D$ = 256 × 4096, 2.1 MB") + _drawn_words("max(T_math, T_comms); acc += x")
    []
    >>> _drawn_words("attainable bf16 FLOPs/s")
    ['attainable']
    """
    return ENGLISH_WORD.findall(NOT_WORDS.sub(" ", text))


def _run_edition(lang: str) -> tuple[str, dict[str, dict[str, list[str]]], float]:
    """Every notebook of an edition, top to bottom, in one kernel (its namespace reset between chapters):
    ``(error or "", {chapter: {"printed": [...], "drawn": [...]}}, seconds)``."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    whole = nbformat.v4.new_notebook()
    whole.cells.append(nbformat.v4.new_code_cell(INSTRUMENT))
    for path in NOTEBOOKS[lang]:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                cell.metadata["chapter"] = path.stem
                whole.cells.append(cell)
        report = nbformat.v4.new_code_cell(REPORT)
        report.metadata["chapter"] = path.stem
        whole.cells += [report, nbformat.v4.new_code_cell(RESET)]
    folder = ROOT / "editions" / lang / "book"
    started = time.perf_counter()
    client = NotebookClient(whole, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}})
    try:
        asyncio.run(client.async_execute())  # its own event loop, closed afterwards (one per thread)
    except CellExecutionError as error:
        failed = next(
            (c for c in whole.cells if any(o.get("output_type") == "error" for o in c.get("outputs", []))), None
        )
        chapter = failed.metadata.get("chapter", "?") if failed is not None else "?"
        return f"{lang}/{chapter}.ipynb: {str(error)[-1500:]}", {}, time.perf_counter() - started
    seen: dict[str, dict[str, list[str]]] = {}
    for cell in whole.cells:
        chapter = cell.metadata.get("chapter")
        if not chapter:
            continue
        found = seen.setdefault(chapter, {"printed": [], "drawn": []})
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                assert output.get("name") == "stdout", f"{lang}/{chapter}: {output['text'][-800:]}"
                found["printed"].append(output["text"])
            found["drawn"] += output.get("data", {}).get("application/x-drawn-texts+json", [])
    return "", seen, time.perf_counter() - started


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[str, dict[str, dict[str, list[str]]], float]]:
    """Each edition's notebooks run once: two editions at a time (CI has two cores), a kernel each."""
    before = {lang: sorted(p.name for p in (ROOT / "editions" / lang / "book").iterdir()) for lang in EDITIONS}
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(EDITIONS, pool.map(_run_edition, EDITIONS), strict=True))
    for lang in EDITIONS:
        after = sorted(p.name for p in (ROOT / "editions" / lang / "book").iterdir())
        for name in set(after) - set(before[lang]):
            target = ROOT / "editions" / lang / "book" / name
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        assert after == before[lang], (
            f"{lang}: a notebook fetched files beside itself in a clone: {set(after) - set(before[lang])}"
        )
    return results


@pytest.mark.slow  # starts kernels
@pytest.mark.parametrize("lang", EDITIONS)
def test_every_notebook_runs_offline_from_a_clone(lang: str, runs):
    error, seen, seconds = runs[lang]
    assert not error, error
    assert set(seen) == {p.stem for p in NOTEBOOKS[lang]}
    print(f"{lang}: {len(seen)} notebooks ran in {seconds:.1f} s")


@pytest.mark.slow  # starts kernels
@pytest.mark.parametrize("lang", ["ko", "zh"])
def test_korean_and_chinese_notebooks_print_and_draw_in_their_language(lang: str, runs):
    error, seen, _ = runs[lang]
    assert not error, error
    printed = [
        f"{chapter}: {w}"
        for chapter, found in seen.items()
        for text in found["printed"]
        for w in ENGLISH_WORD.findall(text)
    ]
    assert not printed, f"{lang}: English words printed: {printed[:10]}"
    drawn = [f"{chapter}: {text!r}" for chapter, found in seen.items() for text in found["drawn"] if _drawn_words(text)]
    assert not drawn, f"{lang}: English words drawn on figures: {drawn[:10]}"
    native_printed = sum(bool(SCRIPT[lang].search(t)) for f in seen.values() for t in f["printed"])
    native_drawn = sum(bool(SCRIPT[lang].search(t)) for f in seen.values() for t in f["drawn"])
    assert native_printed >= 5 and native_drawn >= 10, (lang, native_printed, native_drawn)


@pytest.mark.slow  # starts kernels
def test_english_notebooks_print_and_draw_in_english(runs):
    """The checks above can fail: the English run prints and draws English words."""
    error, seen, _ = runs["en"]
    assert not error, error
    assert sum(len(ENGLISH_WORD.findall(t)) for f in seen.values() for t in f["printed"]) > 20
    assert sum(bool(ENGLISH_WORD.search(t)) for f in seen.values() for t in f["drawn"]) > 10


def test_a_notebook_opened_alone_fetches_what_it_needs(tmp_path: Path, monkeypatch):
    """On Colab the first cell fetches the helpers, the edition's catalogues and font; here from the clone."""
    fetched = []

    def urlretrieve(url: str, target: Path) -> None:
        prefix = f"{CONFIG['repository']['url']}/raw/{CONFIG['repository']['branch']}/"
        assert url.startswith(prefix), url
        fetched.append(url.removeprefix(prefix))
        shutil.copy(ROOT / url.removeprefix(prefix), target)

    source = launch.setup_cell("ko").source
    head = source.split('sys.path.insert(0, str(clone / "book"))')[0]
    assert "%pip" not in head
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("urllib.request.urlretrieve", urlretrieve)
    exec(compile(head, "setup", "exec"), {})  # noqa: S102 - the cell's fetching part, on a folder outside the clone
    assert sorted(fetched) == sorted(launch.edition_files("ko"))
    assert (tmp_path / "book" / "localfigures.py").is_file() and (tmp_path / "book" / "fonts").is_dir()


@pytest.mark.parametrize("lang", ["ko", "zh"])
def test_the_shipped_font_draws_every_figure_text(lang: str):
    """Opened where npm has not run (Colab), a notebook draws with book/fonts/: it has every glyph the figures use."""
    import localfigures
    from fontTools.ttLib import TTFont

    cmap = TTFont(localfigures.subset_font(lang)).getBestCmap()
    texts = [text for (context, _), text in localfigures.catalog(lang, "figures").items() if context is None]
    missing = sorted({char for text in texts for char in text if not char.isspace() and ord(char) not in cmap})
    assert texts and not missing, f"{lang}: run `python tools/editions.py fonts`; missing {''.join(missing[:20])}"
    assert localfigures.subset_font(lang).stat().st_size < 200_000


def test_tick_labels_given_as_a_list_are_drawn_in_the_editions_language():
    """``ax.set_yticks(ticks, ["transfer", "compute"])`` is drawn anew from its formatter: translated there."""
    import localfigures
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_yticks([0, 1], ["transfer", "compute"])
    drawn: list[list[str]] = []
    save = fig.savefig

    def spy(*args, **kwargs):
        save(*args, **kwargs)
        drawn.append([label.get_text() for label in ax.get_yticklabels()])

    fig.savefig = spy
    _, missing, glyphs = localfigures.render(fig, "zh")
    words = localfigures.messages("zh")
    assert drawn == [[words["transfer"], words["compute"]]] and not missing and not glyphs
    assert [label.get_text() for label in ax.get_yticklabels()] == ["transfer", "compute"]  # the figure is unchanged
    ax.set_xticks([0], ["no such label"])
    assert localfigures.render(fig, "zh")[1] == ["no such label"]  # an untranslated list is reported
    plt.close(fig)


# ----------------------------------------------------------------------------- the code, in the edition's words

HAN = re.compile(r"[\u4e00-\u9fff]")


def _code_cells(lang: str, page: str) -> list[tuple[nbformat.NotebookNode, nbformat.NotebookNode]]:
    """``(launch cell, executed English cell)`` of a chapter's code cells, in order (the set-up cell aside)."""
    nb = nbformat.read(ROOT / "editions" / lang / "book" / f"{page}.ipynb", as_version=4)
    shown = [c for c in nb.cells[1:] if c.cell_type == "code"]
    executed = nbformat.read(ROOT / "_build" / "jupyter_execute" / "book" / f"{page}.ipynb", as_version=4)
    english = [c for c in executed.cells if c.cell_type == "code" and not launch._is_install_cell(c)]
    assert len(shown) == len(english), f"{lang}/{page}: the notebook is out of sync; run tools/editions.py notebooks"
    return list(zip(shown, english, strict=True))


def _stream(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


PROSE_WORD = re.compile(r"(?<![/\w])(?:[a-z][a-z-]{2,}|to|of|or|at|in|on|by)\b")  # units (ms, FLOPs/byte) aside


def code_disagreements(source: str, printed: str, chapter_printed: str, chapter_english: str) -> list[str]:
    """Where a shown cell's code would print other words than the notebook shows: an English value the chapter's
    output shows translated (``"Algo 1"`` above ``算法 1``), or English words or half-width ``:``/``,`` in a
    message whose own output (``printed``) is Chinese.

    >>> code_disagreements('x = {"Algo 1": 1}\\nprint(f"{n} at {b}: {x}")', "算法 1，BW1：1", "算法 1，BW1：1",
    ...                    "Algo 1 at BW1: 1")
    ['a value shown translated below: "Algo 1"', 'an English message above Chinese output: "{n} at {b}: {x}"']
    >>> code_disagreements('x = {"算法 1": 1}\\nprint(f"{n}，{b}：{x}")', "算法 1，BW1：1", "算法 1，BW1：1",
    ...                    "Algo 1 at BW1: 1")
    []
    """
    import tokenize

    found = []
    for token in tokenize.generate_tokens(iter(source.splitlines(keepends=True)).__next__):
        if token.type != tokenize.STRING or token.string[:1] not in "\"'":
            continue
        text = token.string[1:-1]
        if text and text in chapter_english and text not in chapter_printed and PROSE_WORD.search(text.lower()):
            found.append(f"a value shown translated below: {token.string}")
    if not HAN.search(printed):
        return found
    for message in re.findall(r"print\(f?\"([^\"]*)\"", source):
        words = re.sub(r"\{[^{}]*\}", " ", message)
        unbracketed = re.sub(r"\([^()]*\)", "", words)  # a tuple shown as a value keeps its commas: (512, 512, 1024)
        if PROSE_WORD.search(words) or (HAN.search(words) and re.search(r"[:,;] ", unbracketed)):
            found.append(f'an English message above Chinese output: "{message}"')
    return found


def test_chinese_code_prints_what_the_notebook_shows_under_it():
    """The code a Chinese student reads, and edits, prints the words and punctuation of the output under it."""
    found = []
    for path in NOTEBOOKS["zh"]:
        cells = _code_cells("zh", path.stem)
        chapter_printed = "\n".join(_stream(shown) for shown, _ in cells)
        chapter_english = "\n".join(_stream(english) for _, english in cells)
        for shown, _ in cells:
            if _hidden(shown):
                continue
            for problem in code_disagreements(shown.source, _stream(shown), chapter_printed, chapter_english):
                found.append(f"zh/{path.stem}: {problem}")
    assert not found, f"zh: {len(found)} disagreements:\n" + "\n".join(found[:15])


def _hidden(cell: nbformat.NotebookNode) -> bool:
    return bool({"remove-cell", "remove-input"} & set(cell.metadata.get("tags", [])))


def test_the_first_and_hidden_cells_speak_the_editions_language():
    """Colab shows the set-up cell and the hidden cells: their comments and assert messages are Chinese too."""
    from editions import code_texts

    found = []
    for path in NOTEBOOKS["zh"]:
        cells = nbformat.read(path, as_version=4).cells
        for cell in cells:
            if cell.cell_type != "code":
                continue
            for *_, text in code_texts(cell.source, asserts=True):
                if ENGLISH_WORD.search(text) and not HAN.search(text):
                    found.append(f"zh/{path.stem}: {text[:70]!r}")
    assert not found, f"zh: {len(found)} comments or messages in English (code.po):\n" + "\n".join(found[:15])


# ----------------------------------------------------------------------------- the problems, opened alone

FETCH_FROM_CLONE = """
import shutil, urllib.request
from pathlib import Path

def _from_clone(url, target, _root=Path({root!r}), _prefix={prefix!r}):
    assert url.startswith(_prefix), url
    source = _root / url.removeprefix(_prefix)
    if not source.is_file():  # GitHub answers a missing file with 404
        import urllib.error
        raise urllib.error.HTTPError(url, 404, "Not Found", None, None)
    shutil.copy(source, target)

urllib.request.urlretrieve = _from_clone
"""


@pytest.mark.slow  # starts kernels
@pytest.mark.parametrize(
    "assignment", ["rooflines", *(f"rooflines-{lang}" for lang in launch.bookeditions.translated())]
)
def test_a_problem_opened_alone_fetches_its_checks_and_speaks_its_language(assignment: str, tmp_path: Path):
    """On Colab a problem's notebook is alone: its first code cell fetches feedback.py and feedback.csv from its
    own assignment folder (an edition's feedback.py names its language), and every check runs in that language.
    (The solution is run, so that every visible check passes; the fetching is redirected to this clone.)"""
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "solutions" / assignment / "q1_int8_matmul.ipynb", as_version=4)
    student = nbformat.read(ROOT / "exercises" / assignment / "q1_int8_matmul.ipynb", as_version=4)
    fetch = next(c for c in nb.cells if c.cell_type == "code")
    assert fetch.source == next(c for c in student.cells if c.cell_type == "code").source
    assert f"exercises/{assignment}/" in fetch.source
    repo = CONFIG["repository"]
    prefix = f"{repo['url']}/raw/{repo['branch']}/"
    nb.cells.insert(0, nbformat.v4.new_code_cell(FETCH_FROM_CLONE.format(root=str(ROOT), prefix=prefix)))
    nb.cells.append(nbformat.v4.new_code_cell("import feedback\nfeedback.language()"))
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    asyncio.run(client.async_execute())
    assert {p.name for p in tmp_path.iterdir()} >= {"feedback.py", "feedback.csv"}
    assert nb.cells[-1].outputs[0]["data"]["text/plain"] == repr(assignment.partition("-")[2] or "en")
    passed = [o["text"] for c in nb.cells for o in c.get("outputs", []) if o.get("name") == "stdout"]
    assert passed, "no visible check printed its verdict"
