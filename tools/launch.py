"""The notebooks readers launch: one per chapter per edition, written from the built page.

What a reader opens on Colab or Binder, or downloads, is ``editions/<lang>/book/<page>.ipynb``
(``en``, ``ko``, ``zh``). Each is written from two things the book's build made:

- the page as the edition shows it (``_build/html[/<lang>]/book/<page>.html``): its text with
  every glued value pasted, admonitions, quizzes and solutions, equations and cross-references,
  all in the edition's language. Each stretch of the page between two code cells becomes a
  Markdown cell (CommonMark and a little HTML: ``<details>`` for what the page folds away,
  ``$$`` for equations, links to the built pages for cross-references);
- the executed chapter (``_build/jupyter_execute/book/<page>.ipynb``): every code cell, the
  hidden ones too (tagged as on the page and collapsed), with its outputs as the edition shows
  them (its printed text and figures in the edition's language).

A first cell, collapsed, makes the notebook run wherever it is opened: in a clone it finds the
helpers in the repository's ``book/`` folder and downloads nothing; alone (Colab), it installs
``rooflinelib`` from the repository and fetches the helpers, the edition's catalogues and its
font. It then puts printed text and figures in the edition's language at run time
(``localfigures.install``).

This is what QuantEcon's ``sphinx-tojupyter`` does for its lectures, from the built page rather
than the doctree: that builder leaves out executed outputs and hidden cells, which a launched
chapter needs.

Example
-------
``python tools/editions.py notebooks`` (after ``make book``) writes every edition's notebooks.
"""

from __future__ import annotations

import base64
import copy
import html
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import nbformat
import yaml
from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
EXECUTED = ROOT / "_build" / "jupyter_execute" / "book"
TARGET = ROOT / "editions"
sys.path.insert(0, str(ROOT / "book"))
sys.path.insert(0, str(ROOT / "tools"))

import bookeditions  # book/bookeditions.py: the registry of editions
import localfigures  # book/localfigures.py

from editions import kept_values, read_values, rename_values, translate_code  # tools/editions.py

EDITIONS = bookeditions.codes()

# What a notebook opened alone fetches from the repository (paths in the repository).
HELPERS = (
    "book/bookeditions.py",
    "book/editions.toml",
    "book/bookvalues.py",
    "book/localfigures.py",
    "book/sentences.py",
)
HIDDEN_TAGS = {"remove-cell", "remove-input"}


def config() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def site_url(lang: str) -> str:
    """Where the edition's built pages are published (``html.baseurl`` in ``_config.yml``)."""
    base = str(config()["html"]["baseurl"]).rstrip("/") + "/"
    return base if lang == "en" else f"{base}{lang}/"


def page_path(lang: str, page: str) -> Path:
    return HTML / ("" if lang == "en" else lang) / "book" / f"{page}.html"


def edition_files(lang: str) -> list[str]:
    """The repository files a notebook of this edition needs besides ``rooflinelib``."""
    files = list(HELPERS)
    if lang != "en":
        files += [f"locales/{lang}/LC_MESSAGES/{name}.po" for name in ("figures", "outputs")]
        files.append(localfigures.subset_font(lang).relative_to(ROOT).as_posix())
    return files


def setup_cell(lang: str) -> nbformat.NotebookNode:
    """The first cell: find or fetch what the chapter needs, then speak the edition's language."""
    url, branch = config()["repository"]["url"], config()["repository"]["branch"]
    files = ",\n         ".join(f'"{path}"' for path in edition_files(lang))
    source = f'''# Opened on Colab or Binder? Install the course's package and helpers first.
# In a clone of the course they are found in its book/ folder and nothing is downloaded.
COURSE_URL, COURSE_BRANCH = "{url}", "{branch}"
LANGUAGE = "{lang}"  # this edition: what the code prints and draws is in its language
import sys
import types
from pathlib import Path

here = Path.cwd()
clone = next((p for p in (here, *here.parents) if (p / "book" / "localfigures.py").is_file()), None)
if clone is None:  # opened alone: fetch the helpers, the edition's catalogues and font
    import urllib.request

    clone = here
    for path in [{files}]:
        if not (here / path).is_file():
            (here / path).parent.mkdir(parents=True, exist_ok=True)
            urllib.request.urlretrieve(f"{{COURSE_URL}}/raw/{{COURSE_BRANCH}}/{{path}}", here / path)
sys.path.insert(0, str(clone / "book"))
try:
    import rooflinelib
except ImportError:
    %pip install --quiet "rooflinelib[measure] @ git+{{COURSE_URL}}@{{COURSE_BRANCH}}"
try:
    import myst_nb
except ImportError:  # glue() only feeds the built page, whose text this notebook already holds
    sys.modules["myst_nb"] = types.ModuleType("myst_nb")
    sys.modules["myst_nb"].glue = lambda *args, **kwargs: None
import localfigures

localfigures.install(LANGUAGE)
'''
    if lang != "en":
        source = translate_code(source, code_catalog(lang))[0]
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata = {"tags": ["remove-cell"], "jupyter": {"source_hidden": True}}
    return cell


def code_catalog(lang: str) -> dict[tuple[str, str], str]:
    """``code.po`` as :func:`editions.translate_code` reads it: comments, docstrings and messages of the code."""
    return {
        ("code", english): text
        for (context, english), text in localfigures.catalog(lang, "code").items()
        if not context
    }


# --- the page's text as Markdown ---------------------------------------------------------------------


def _punctuation(char: str) -> bool:
    return unicodedata.category(char).startswith(("P", "S"))


class PageMarkdown(MarkdownConverter):
    """A built page's HTML as CommonMark for Jupyter and Colab.

    Emphasis is written with ``**``/``*`` only where CommonMark closes it whatever surrounds it
    (its text neither starts nor ends with punctuation); otherwise as ``<strong>``/``<em>``, which
    next to CJK punctuation (``**如何自查。**填写``) CommonMark would leave as literal asterisks.
    """

    def __init__(self, page_url: str, images: Path, answer: str, **options: Any) -> None:
        super().__init__(heading_style="ATX", bullets="-", escape_misc=False, **options)
        self.page_url = page_url
        self.images = images
        self.answer = answer
        self.attachments: dict[str, dict[str, str]] = {}

    # inline
    def _emphasis(self, markup: str, tag: str, text: str) -> str:
        inner = text.strip()
        if not inner:
            return text
        if _punctuation(inner[0]) or _punctuation(inner[-1]) or "\n" in inner:
            return f"<{tag}>{inner}</{tag}>"
        return f"{markup}{inner}{markup}"

    def process_text(self, el: Any, parent_tags: set[str] | None = None) -> str:
        """Text as Markdown; a ``**bold**`` the page's own parser left as text (next to CJK punctuation)
        becomes the ``<strong>`` its author meant."""
        text = str(super().process_text(el, parent_tags=parent_tags))
        if parent_tags and "_noformat" in parent_tags:
            return text
        return re.sub(r"\\\*\\\*([^*\n]+?)\\\*\\\*", r"<strong>\1</strong>", text)

    def convert_strong(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return self._emphasis("**", "strong", text)

    convert_b = convert_strong

    def convert_em(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return self._emphasis("*", "em", text)

    convert_i = convert_em

    def convert_span(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        classes = el.get("class") or []
        if "math" in classes:
            latex = el.get_text().strip()
            latex = latex.removeprefix("\\(").removesuffix("\\)").strip()
            return f"${latex}$"
        if "eqno" in classes:
            return ""
        return text

    def convert_a(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        classes = el.get("class") or []
        if "headerlink" in classes:
            return ""
        href = str(el.get("href", ""))
        if "reference" in classes and "internal" in classes or not re.match(r"[a-z]+:", href):
            el = copy.copy(el)
            el["href"] = urljoin(self.page_url, href)
            el["title"] = ""
        return super().convert_a(el, text, parent_tags)

    def convert_img(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        src = str(el.get("src", ""))
        alt = " ".join(str(el.get("alt", "")).split())
        path = (self.images / src).resolve()
        if path.is_file():
            name = path.name
            self.attachments[name] = {"image/png": base64.b64encode(path.read_bytes()).decode("ascii")}
            return f"![{alt}](attachment:{name})"
        return f"![{alt}]({urljoin(self.page_url, src)})"

    # blocks
    def convert_div(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        classes = el.get("class") or []
        if "math" in classes:
            latex = "".join(str(t) for t in el.find_all(string=True, recursive=False)).strip()
            latex = latex.removeprefix("\\[").removesuffix("\\]").strip()
            number = el.find("span", class_="eqno")
            label = "".join(number.find_all(string=True, recursive=False)).strip().strip("()") if number else ""
            tag = f" \\tag{{{label}}}" if label else ""
            return f"\n\n$$\n{latex}{tag}\n$$\n\n"
        if "multiple-choice" in classes:
            return self._question(el)
        if "admonition" in classes:
            return self._admonition(el, folded="dropdown" in classes)
        return super().convert_div(el, text, parent_tags)

    def convert_nav(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return ""

    def convert_figure(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return f"\n\n{text.strip()}\n\n"

    def convert_figcaption(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return f"\n\n{text.strip()}\n\n"

    def _inner(self, el: Tag) -> str:
        return self.process_tag(el, parent_tags=set()).strip()

    def _admonition(self, el: Tag, folded: bool) -> str:
        body = copy.copy(el)
        body.name = "section"  # converted as a plain block
        heading = body.find("p", class_="admonition-title")
        title = summary = ""
        if heading is not None:
            heading.extract()
            title, summary = " ".join(self._inner(heading).split()), " ".join(heading.get_text().split())
        content = self._inner(body)
        if folded:  # a solution: folded away, as the page folds it (a summary shows no Markdown)
            return f"\n\n<details>\n<summary>{html.escape(summary)}</summary>\n\n{content}\n\n</details>\n\n"
        lines = [f"<strong>{title}</strong>" if title else "", "", *content.splitlines()]
        quoted = "\n".join(f"> {line}".rstrip() for line in lines if title or line)
        return f"\n\n{quoted.strip()}\n\n"

    def _question(self, el: Tag) -> str:
        """A self-check quiz: the question, its options, and the answer with each option's feedback folded."""
        pretext = el.find("section", class_="question-pretext")
        parts = [self._inner(pretext) if pretext else ""]
        options = el.find_all("section", class_="question-option")
        feedback = el.find_all("section", class_="question-feedback")
        letters = "ABCDEFGHIJ"
        parts.append("\n".join(f"- ({letters[i]}) {' '.join(self._inner(o).split())}" for i, o in enumerate(options)))
        answers = []
        for i, (option, note) in enumerate(zip(options, feedback, strict=True)):
            mark = "✓" if "correct" in (note.get("class") or []) else "✗"
            answers.append(f"- ({letters[i]}) {mark} {' '.join(self._inner(note).split())}")
        parts.append(f"<details>\n<summary>{self.answer}</summary>\n\n" + "\n".join(answers) + "\n\n</details>")
        return "\n\n" + "\n\n".join(p for p in parts if p) + "\n\n"


def _tidy(markdown: str) -> str:
    markdown = re.sub(r"[ \t]+\n", "\n", markdown)
    markdown = re.sub(r"\n{3,}", "\n\n", markdown)
    return markdown.strip()


# --- the page, cell by cell ---------------------------------------------------------------------------


def _article(lang: str, page: str) -> Tag:
    path = page_path(lang, page)
    if not path.is_file():
        sys.exit(f"{path.relative_to(ROOT)} is missing: build the book first (make book)")
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    article = soup.find("article")
    if article is None:
        sys.exit(f"{path.relative_to(ROOT)} has no <article>: not a page of the book")
    for junk in article.find_all(["script", "nav"]):
        junk.decompose()
    return article


def _chunks(article: Tag) -> list[list[Any]]:
    """The page in order, split at its code cells: ``[html pieces...]`` and code-cell ``Tag``s."""
    out: list[Any] = [[]]

    def walk(node: Tag) -> None:
        for child in node.children:
            if isinstance(child, Tag) and "cell" in (child.get("class") or []):
                out.append(child)
                out.append([])
            elif isinstance(child, Tag) and child.find("div", class_="cell"):
                walk(child)  # a section with code in it: its heading and text are among its children
            else:
                out[-1].append(child)

    walk(article)
    return out


def _hidden(cell: nbformat.NotebookNode) -> bool:
    tags = set(cell.metadata.get("tags", []))
    return "remove-cell" in tags or {"remove-input", "remove-output"} <= tags


def _is_install_cell(cell: nbformat.NotebookNode) -> bool:
    return "COURSE_URL" in cell.source and "remove-cell" in cell.metadata.get("tags", [])


def _outputs(
    cell: nbformat.NotebookNode, shown: Tag, lang: str, converter: PageMarkdown
) -> list[nbformat.NotebookNode]:
    """A code cell's outputs as the edition's page shows them."""
    if "remove-output" in cell.metadata.get("tags", []):
        return []
    outputs = []
    for output in copy.deepcopy(cell.get("outputs", [])):
        if output.get("output_type") == "stream" and lang != "en":
            output["text"] = localfigures.translate_output(output["text"], lang)
        if "data" in output:
            meta = output.get("metadata", {}).get("image/png", {}).pop(localfigures.METADATA_KEY, None)
            if meta and lang != "en":
                output["data"]["image/png"] = meta["png"][lang]
            if "text/markdown" in output["data"] and lang != "en":
                rendered = shown.find("div", class_="cell_output")
                if rendered is not None:
                    output["data"]["text/markdown"] = _tidy(converter.convert(str(rendered))) + "\n"
            if not output.get("metadata", {}).get("image/png", True):
                output["metadata"].pop("image/png")
        if "execution_count" in output:
            output["execution_count"] = None
        outputs.append(output)
    return outputs


def launch_notebook(lang: str, page: str) -> nbformat.NotebookNode:
    """The notebook of one chapter in one edition: the page's text, its code, its outputs."""
    sys.path.insert(0, str(ROOT / "tools"))
    from editions import shown_code

    executed = nbformat.read(EXECUTED / f"{page}.ipynb", as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code" and not _is_install_cell(c)]
    answer = localfigures.catalog_words(lang).get("Answer", "Answer")
    url = urljoin(site_url(lang), f"book/{page}.html")
    converter = PageMarkdown(url, page_path(lang, page).parent, answer)
    nb = nbformat.v4.new_notebook()
    nb.cells.append(setup_cell(lang))
    comments = code_catalog(lang)
    kept: dict[str, str] = {}  # the values the shown code keeps in the edition's words, renamed wherever they are read
    for cell in code:
        if "remove-cell" not in cell.metadata.get("tags", []):
            kept |= kept_values(cell.source, lang, page)
    pending = list(code)

    def add_code(cell: nbformat.NotebookNode, shown: Tag | None) -> None:
        tags = list(cell.metadata.get("tags", []))
        if "remove-cell" in tags:  # plumbing the page never shows, but Colab does: its words in the edition's language
            source = cell.source if lang == "en" else translate_code(cell.source, comments, asserts=True)[0]
            source = rename_values(source, kept, read_values(kept, lang))
        else:
            source = shown_code(cell.source, lang, page, kept)
        new = nbformat.v4.new_code_cell(source)
        new.metadata = {"tags": tags} if tags else {}
        if HIDDEN_TAGS & set(tags):
            new.metadata["jupyter"] = {"source_hidden": True}
        if shown is not None:
            new.outputs = _outputs(cell, shown, lang, converter)
        nb.cells.append(new)

    for chunk in _chunks(_article(lang, page)):
        if isinstance(chunk, Tag):  # a code cell the page shows: the hidden ones before it run first
            while pending and _hidden(pending[0]):
                add_code(pending.pop(0), None)
            if not pending:
                sys.exit(f"{page}: the {lang} page shows more code cells than the chapter has")
            add_code(pending.pop(0), chunk)
            caption = chunk.find("figcaption")
            if caption is not None:
                nb.cells.append(nbformat.v4.new_markdown_cell(_tidy(converter.convert(str(caption)))))
            continue
        converter.attachments = {}
        text = _tidy(converter.convert("".join(str(piece) for piece in chunk)))
        if text:
            cell = nbformat.v4.new_markdown_cell(text)
            if converter.attachments:
                cell.attachments = dict(converter.attachments)
            nb.cells.append(cell)
    for cell in pending:  # hidden cells after the last shown one
        if not _hidden(cell):
            sys.exit(f"{page}: the {lang} page shows fewer code cells than the chapter has")
        add_code(cell, None)
    for number, cell in enumerate(nb.cells):
        cell.id = f"{page}-{number}"  # the same notebook every time it is written
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return nb


def write_launch_notebooks(target: Path = TARGET, editions: tuple[str, ...] = EDITIONS) -> list[Path]:
    """Write ``<target>/<lang>/book/<page>.ipynb`` for every chapter and edition; return the paths."""
    from editions import chapters

    written = []
    for lang in editions:
        folder = target / lang / "book"
        folder.mkdir(parents=True, exist_ok=True)
        for page in chapters():
            if not (EXECUTED / f"{page.stem}.ipynb").is_file():
                continue  # a page with no code (the glossary) has no launch buttons
            path = folder / f"{page.stem}.ipynb"
            nbformat.write(launch_notebook(lang, page.stem), path)
            written.append(path)
    return written


def write_fonts() -> list[Path]:
    """Cut each edition's Noto Sans CJK font (npm) down to what its figures draw: ``book/fonts/``.

    A launched notebook opened alone fetches it (the whole font is megabytes); the characters are
    ASCII and every character of the edition's ``figures.po`` translations. The fonts are under the
    SIL Open Font License 1.1 (``book/fonts/OFL.txt``); "Noto Sans" is a Reserved Font Name, which a
    modified version (a subset is one) may not carry, so the subset is named ``Roofline Course Sans``.
    """
    from fontTools import subset

    written = []
    for lang in localfigures.FONTS:
        source = localfigures.font_file(lang)
        if not source.is_file():
            sys.exit(f"{source.relative_to(ROOT)} is missing: run `npm ci` (make book does) first")
        chars = {chr(c) for c in range(0x20, 0x7F)} | set("×≈≤≥→←–—·µ−…%（）：，。、")
        for (context, _), text in localfigures.catalog(lang, "figures").items():
            if context is None:
                chars |= set(text)
        options = subset.Options()
        options.name_IDs = ["*"]  # keep the family name matplotlib reads, and the licence
        options.notdef_outline = True
        options.layout_features = ["*"]
        font = subset.load_font(str(source), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(text="".join(sorted(chars)))
        subsetter.subset(font)
        font_entry = bookeditions.get(lang).font
        assert font_entry is not None  # localfigures.FONTS holds the editions with a font
        family = font_entry.subset_family
        for record in font["name"].names:
            if record.nameID in (1, 4, 16):
                record.string = family if record.nameID != 4 else f"{family} Regular"
            elif record.nameID in (3, 6):
                record.string = family.replace(" ", "") + "-Regular"
        if "CFF " in font:
            cff = font["CFF "].cff
            top = cff.topDictIndex[0]
            top.FamilyName, top.FullName = family, f"{family} Regular"
            cff.fontNames = [family.replace(" ", "") + "-Regular"]
        target = localfigures.subset_font(lang)
        target.parent.mkdir(parents=True, exist_ok=True)
        subset.save_font(font, str(target), options)
        written.append(target)
    return written


__all__ = ["EDITIONS", "PageMarkdown", "launch_notebook", "setup_cell", "write_launch_notebooks"]
