"""The built book, loaded page by page in headless Chromium, in every edition.

Serves ``_build/html`` on localhost and opens every page of ``_toc.yml`` once in each of the
English, Korean and Chinese editions (``_build/html``, ``_build/html/ko``, ``_build/html/zh``).
In that one visit: the math was typeset (no raw ``$$`` left), every image loaded, no request
went anywhere but localhost, ``<html lang>`` names the edition, the language switcher and the
``hreflang`` links point at the same page in the other editions, a translated page's figures
are its own renderings rather than the English image files, axe-core (from npm) finds no
WCAG 2.1 A or AA violation, and where the page has them: every self-check quiz is clicked
(a wrong choice shows its own explanation in the edition's language and is marked wrong, the
right one is marked right), the problem answers start folded and open on a click, and the
buttons scripts write are in the edition's words. With ``ROOFLINE_SCREENSHOTS=1`` (``make
screenshots``), a full-page screenshot of every page is written to ``_build/screenshots/<edition>/``
for review.

Besides: each edition's switcher is followed to both other editions; each edition's search
page finds a term of that edition's text; and the search of each edition, run in the browser
on its own index, finds the defining page of every glossary term and of questions typed as a
reader types them (Korean words with their particles, Chinese without spaces).

Needs Debian's ``chromium`` and ``fonts-noto-cjk`` (``tools/install-browser.sh``
installs them when run as root) and a built book with its editions (``make book``).
It fails, rather than skips, when any of them is missing, so that CI cannot pass
without running it.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest
import yaml
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
sys.path.insert(0, str(ROOT / "book"))

import bookeditions

EDITIONS = bookeditions.codes()
# what each edition's <html lang> says: Simplified Chinese is built as Sphinx's zh_CN (its own search page strings)
HTML_LANG = {e.code: e.html_lang for e in bookeditions.editions()}


def _toc_pages() -> list[str]:
    """Every page of the book, in the order _toc.yml gives, so a new chapter is tested too."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        pages += [chapter["file"] for chapter in part["chapters"]]
    return pages


def _path(edition: str, page_name: str) -> str:
    """A page's path in an edition, relative to the site root: ``ko/book/intro.html``."""
    return ("" if edition == "en" else f"{edition}/") + f"{page_name}.html"


PAGES = _toc_pages()
PAGES_WITH_MATH = {
    "book/where-does-the-time-go",
    "book/visualizing-rooflines",
    "book/matrix-multiplication",
    "book/network-rooflines",
    "book/problems",
    "book/real-model-real-chips",
    "book/long-context",
    "book/errata",
}
PAGES_WITH_FIGURES = {
    "book/visualizing-rooflines": 2,
    "book/matrix-multiplication": 1,
    "book/problems": 1,
    "book/measure-your-machine": 2,
    "book/real-model-real-chips": 2,
    "book/long-context": 1,
}
# Words each edition's text uses, as a reader would type them into the search box:
# the glossary's (book/glossary.csv) terms for "roofline" and "arithmetic intensity",
# or for Chinese also a word of the index alone (jieba cuts 算术强度 into 算术 + 强度).
SEARCH_TERMS = [
    pytest.param("en", "roofline", id="en-roofline"),
    pytest.param("en", "arithmetic intensity", id="en-arithmetic-intensity"),
    pytest.param("ko", "루프라인", id="ko-roofline"),
    pytest.param("ko", "산술 강도", id="ko-arithmetic-intensity"),
    pytest.param("zh", "屋顶线", id="zh-roofline"),
    pytest.param("zh", "算术", id="zh-arithmetic"),
]
# Pages holding self-check quizzes (each must render every ``{question}`` its source holds), the problems page (its
# answers fold), and a page whose copy buttons and fold hints are checked in the Korean and Chinese editions.
QUIZ_PAGES = {
    page: len(re.findall(r"^:{3,}\{question\}", (Path(__file__).resolve().parents[1] / f"{page}.md").read_text(
        encoding="utf-8"), re.M))
    for page in ("book/where-does-the-time-go", "book/visualizing-rooflines", "book/matrix-multiplication",
                 "book/network-rooflines", "book/measure-your-machine", "book/beyond-the-roofline", "book/practice",
                 "book/real-model-real-chips", "book/long-context")
}  # fmt: skip
PROBLEMS, PROBLEM_ANSWERS = "book/problems", 7  # Questions 1 to 5, 7 and 8
BUTTONS_PAGE = "book/where-does-the-time-go"
# a character of the edition's own script, which a quiz explanation in that language must contain
SCRIPT = {"en": re.compile(r"[A-Za-z]"), "ko": re.compile(r"[\uac00-\ud7a3]"), "zh": re.compile(r"[\u4e00-\u9fff]")}
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-extensions",
]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server():
    missing = [_path(e, "index")[:-5] for e in EDITIONS if not (HTML / _path(e, "index")).is_file()]
    if missing:
        pytest.fail(f"{HTML} lacks the built editions {missing}; run `make book` first")
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _has_font(lang: str) -> bool:
    """Whether fontconfig knows a font for ``lang`` (``ko``, ``zh-cn``), as Chromium asks it."""
    if shutil.which("fc-list"):
        listed = subprocess.run(["fc-list", f":lang={lang}", "family"], capture_output=True, text=True, check=False)
        return bool(listed.stdout.strip())
    return any(Path("/usr/share/fonts").rglob("*CJK*"))  # fontconfig's library without its tools


@pytest.fixture(scope="module")
def tab(tmp_path_factory):
    """One Chromium tab, reused by every test; ``tab.outside`` lists requests that left localhost."""
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium not found; install it with `sudo bash tools/install-browser.sh` and run the tests again")
    for lang in ("ko", "zh-cn"):
        if not _has_font(lang):
            pytest.fail(
                f"no font for {lang} text, so its edition's pages would show boxes; "
                "install Debian's fonts-noto-cjk with `sudo bash tools/install-browser.sh`"
            )
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            ignore_default_args=["--enable-automation"],
            viewport={"width": 1280, "height": 900},
        )
        page = context.pages[0] if context.pages else context.new_page()
        page.outside = []

        def watch(request) -> None:
            url = urlparse(request.url)
            if url.scheme not in ("data", "blob", "about") and url.hostname not in ("127.0.0.1", "localhost"):
                page.outside.append(request.url)

        page.on("request", watch)
        yield page
        context.close()


def _open(tab, url: str):
    """Load a page in the shared tab and wait until its math is typeset and its fonts are in."""
    tab.outside.clear()
    tab.goto(url, wait_until="load")
    if tab.locator("script[src*='mathjax']").count():
        # MathJax 3 exposes a promise that resolves once the page is typeset.
        tab.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20_000)
        tab.evaluate("() => MathJax.startup.promise")
    # Images of the page are in at "load"; the fonts MathJax and the text ask for after it are not.
    tab.evaluate("() => document.fonts.ready.then(() => true)")
    return tab


def _switcher(tab) -> list[tuple[str, str, str | None]]:
    """The language switcher's links: ``(hreflang, absolute URL, aria-current)``."""
    return tab.eval_on_selector_all(
        "nav.edition-switcher a",
        "as => as.map(a => [a.getAttribute('hreflang'), a.href, a.getAttribute('aria-current')])",
    )


def _english_figures(page_name: str) -> dict[str, bytes]:
    """The image files the English page shows, read from the build: ``{src: bytes}``."""
    html = HTML / _path("en", page_name)
    soup = BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser")
    return {img["src"]: (html.parent / img["src"]).read_bytes() for img in soup.select("article img")}


def _search_index(edition: str) -> str:
    """An edition's ``searchindex.js`` as text, its ``\\uXXXX`` escapes decoded."""
    raw = (HTML / ("" if edition == "en" else edition) / "searchindex.js").read_text(encoding="utf-8")
    return json.dumps(json.loads(raw[raw.index("(") + 1 : raw.rindex(")")]), ensure_ascii=False)


CASES = [pytest.param(e, p, id=f"{e}-{p.split('/')[-1]}") for e in EDITIONS for p in PAGES]


@pytest.mark.parametrize(("edition", "page_name"), CASES)
def test_page_renders_offline(tab, server, edition, page_name):
    here = f"{server}/{_path(edition, page_name)}"
    _open(tab, here)
    # for a person to look at (make screenshots); half a second a page
    if os.environ.get("ROOFLINE_SCREENSHOTS") == "1":
        shots = SHOTS / edition
        shots.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(shots / f"{page_name.split('/')[-1]}.png"), full_page=True)
    where = f"{edition}/{page_name}"

    assert tab.get_attribute("html", "lang") == HTML_LANG[edition], (
        f"{where}: <html lang> is not {HTML_LANG[edition]!r}"
    )

    text = tab.inner_text("article")
    assert "$$" not in text, f"{where}: raw $$ left in the page, so MathJax did not typeset it"
    assert not re.search(r"\|\s*[-—–:]{1,}\s*\|", text), (
        f"{where}: a Markdown table was printed raw instead of rendered"
    )
    assert "\\frac" not in text and "\\text{" not in text, f"{where}: raw TeX left in the page"
    if page_name in PAGES_WITH_MATH:
        assert tab.locator("mjx-container").count() > 0, (
            f"{where}: no typeset math found (is MathJax served from the build?)"
        )

    images = tab.eval_on_selector_all(
        "article img",
        "imgs => imgs.map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0, i.alt, i.currentSrc])",
    )
    broken = [src for src, ok, _, _ in images if not ok]
    assert not broken, f"{where}: images that did not load: {broken}"
    expected = PAGES_WITH_FIGURES.get(page_name, 0)
    assert len(images) >= expected, f"{where}: expected {expected} figures, found {len(images)}"
    for src, _, alt, _ in images:
        if page_name in PAGES_WITH_FIGURES:
            assert alt and len(alt) > 40, f"{where}: figure {src} has no useful alt text ({alt!r})"
    if edition != "en":
        english = _english_figures(page_name)
        assert len(images) == len(english), f"{where}: {len(images)} figures, the English page has {len(english)}"
        for src, _, _, url in images:
            assert urlparse(url).path.startswith(f"/{edition}/"), f"{where}: figure {src} is not the edition's own file"
            shown = (HTML / urlparse(url).path.lstrip("/")).read_bytes()
            same = [name for name, data in english.items() if data == shown]
            assert not same, f"{where}: figure {src} is the English image {same[0]}, not a {edition} rendering"

    alternates = dict(
        tab.eval_on_selector_all(
            "head link[rel=alternate][hreflang]", "ls => ls.map(l => [l.getAttribute('hreflang'), l.href])"
        )
    )
    assert set(alternates) == set(EDITIONS), f"{where}: hreflang links for {sorted(alternates)}, not {EDITIONS}"
    links = _switcher(tab)
    assert sorted(lang for lang, _, _ in links) == sorted(EDITIONS), f"{where}: switcher offers {links}"
    assert [lang for lang, _, cur in links if cur == "page"] == [edition], f"{where}: switcher marks {links} as current"
    for lang, url, _ in links:
        target = _path(lang, page_name)
        assert urlparse(url).path == f"/{target}", f"{where}: the {lang} link goes to {url}, not {target}"
        assert urlparse(alternates[lang]).path == f"/{target}", f"{where}: hreflang={lang} is {alternates[lang]}"
        assert (HTML / target).is_file(), f"{where}: the {lang} link goes to {target}, which was not built"
    assert not tab.outside, f"{where}: requests left the machine: {tab.outside}"

    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing; run `make book` (npm ci installs axe-core)")
    tab.add_script_tag(path=str(AXE))
    report = tab.evaluate(  # only the violations are read: axe leaves out the details of the passing rules
        "(tags) => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})", WCAG
    )
    violations = [f"{v['id']}: {[n['target'] for n in v['nodes']][:3]}" for v in report["violations"]]
    assert not violations, f"{where}: WCAG 2.1 A/AA violations (axe-core): {violations}"

    # What some pages hold besides: checked in the same visit, so no page is opened twice.
    if page_name in QUIZ_PAGES:
        check_quizzes(tab, where, edition, QUIZ_PAGES[page_name])
    if page_name == PROBLEMS:
        check_answers_folded(tab, where)
    if edition != "en" and page_name == BUTTONS_PAGE:
        check_script_buttons(tab, where)
    assert not tab.outside, f"{where}: requests left the machine: {tab.outside}"


@pytest.mark.parametrize(("edition", "lang"), [(e, lang) for e in EDITIONS for lang in EDITIONS if lang != e])
def test_the_switcher_leads_to_the_same_page_in_the_other_edition(tab, server, edition, lang):
    """Every page's switcher links are checked above; here each edition's switcher is followed to both others."""
    page_name = PAGES[EDITIONS.index(lang) % len(PAGES)]  # a different page for each target language
    where = f"{edition}/{page_name}"
    tab.outside.clear()
    tab.goto(f"{server}/{_path(edition, page_name)}", wait_until="domcontentloaded")
    tab.click(f"nav.edition-switcher a[hreflang='{lang}']")
    tab.wait_for_url(f"{server}/{_path(lang, page_name)}", wait_until="domcontentloaded")
    assert tab.get_attribute("html", "lang") == HTML_LANG[lang], (
        f"{where}: the {lang} link landed on a page in another language"
    )
    assert [e for e, _, cur in _switcher(tab) if cur == "page"] == [lang], (
        f"{where}: after following the {lang} link, the switcher does not mark {lang} as current"
    )
    assert tab.inner_text("article h1"), f"{where}: the {lang} page has no heading"
    assert not tab.outside, f"{where}: requests left the machine: {tab.outside}"


@pytest.mark.parametrize(("edition", "term"), SEARCH_TERMS)
def test_search_finds_term(tab, server, edition, term):
    prefix = "" if edition == "en" else f"{edition}/"
    index = _search_index(edition)
    missing = [word for word in term.split() if word not in index]
    assert not missing, (
        f"{edition}: {missing} not in searchindex.js, so searching {term!r} cannot show the search works"
    )
    _open(tab, f"{server}/{prefix}search.html?q={quote(term)}")
    tab.wait_for_function(
        "() => typeof Search !== 'undefined' && Search.status && Search.status.innerText.length > 0", timeout=20_000
    )
    results = tab.eval_on_selector_all("#search-results ul.search li a", "as => as.map(a => a.href)")
    assert results, f"{edition}: searching {term!r} found nothing: {tab.inner_text('#search-results')!r}"
    stray = [url for url in results if not urlparse(url).path.startswith(f"/{prefix}")]
    assert not stray, f"{edition}: searching {term!r} led out of the edition to {stray}"
    assert not tab.outside, f"{edition}: search made requests that left the machine: {tab.outside}"


def check_answers_folded(tab, where: str) -> None:
    """The problems page: each answer starts folded and opens on a click."""
    solutions = tab.locator("div.solution")
    count = solutions.count()
    assert count == PROBLEM_ANSWERS, f"{where}: expected {PROBLEM_ANSWERS} answers on the problems page, found {count}"
    for i in range(count):
        sol = solutions.nth(i)
        body = sol.locator(".solution-content, section").first
        assert not body.is_visible(), f"{where}: answer {i + 1} is open on load; it should start folded"
        sol.locator("button.toggle-button").first.click()
        body.wait_for(state="visible", timeout=15_000)
        assert body.is_visible(), f"{where}: answer {i + 1} did not open when clicked"


# Each option of a quiz, read in one call: its footer's classes, whether its explanation shows (a box of
# some size that is not visibility:hidden, as Playwright's is_visible decides) and that explanation's text,
# and whether it holds the right answer's explanation.
OPTION_STATES = """quiz => [...quiz.querySelectorAll('div.sd-card.option')].map(option => {
    const footer = option.querySelector('div.sd-card-footer');
    const feedback = footer && footer.querySelector('section.question-feedback');
    const box = feedback && feedback.getBoundingClientRect();
    const shown = !!feedback && box.width > 0 && box.height > 0 && getComputedStyle(feedback).visibility !== 'hidden';
    return {classes: footer ? footer.className : '', shown, text: shown ? feedback.innerText : '',
            right: !!option.querySelector('section.question-feedback.correct')};
})"""


def check_quizzes(tab, where: str, edition: str, expected: int) -> None:
    """Each self-check quiz of the page (teachbooks-questions' ``{question}``, kept offline by
    ``book/_ext/offline_quizzes.py``): a wrong choice shows its own explanation, in the edition's
    language, and is marked wrong; the right choice is marked right; one explanation shows at a time.

    Every choice is clicked as a reader clicks it; after each click, the states of all the quiz's
    choices are read at once (``OPTION_STATES``)."""
    quizzes = tab.locator("div.multiple-choice.single-select")
    assert quizzes.count() == expected, f"{where}: {quizzes.count()} quizzes, expected {expected}"
    for q in range(quizzes.count()):
        quiz = quizzes.nth(q)
        options = quiz.locator("div.sd-card.option")
        states = quiz.evaluate(OPTION_STATES)
        assert len(states) == options.count() > 1, f"{where} quiz {q + 1}: {len(states)} choices"
        right = [i for i, state in enumerate(states) if state["right"]]
        assert len(right) == 1, f"{where} quiz {q + 1}: {len(right)} right answers"
        assert not any(state["shown"] for state in states), (
            f"{where} quiz {q + 1}: an explanation shows before any click"
        )
        seen = set()
        for i in [*(i for i in range(len(states)) if i != right[0]), right[0]]:
            options.nth(i).click()
            states = quiz.evaluate(OPTION_STATES)
            classes, shown, text = states[i]["classes"], states[i]["shown"], states[i]["text"]
            verdict = "correct" if i == right[0] else "incorrect"
            assert shown, f"{where} quiz {q + 1}: choice {i + 1} shows no explanation when clicked"
            assert verdict in classes.split(), f"{where} quiz {q + 1}: choice {i + 1} is not marked {verdict}"
            assert SCRIPT[edition].search(text), f"{where} quiz {q + 1}: explanation not in {edition}: {text!r}"
            assert text not in seen, f"{where} quiz {q + 1}: two choices share one explanation"
            seen.add(text)
            others = [j + 1 for j, state in enumerate(states) if j != i and state["shown"]]
            assert not others, f"{where} quiz {q + 1}: the explanation of choice {others} stays open"


def check_script_buttons(tab, where: str) -> None:
    """The copy buttons and the fold hints are written by JavaScript after load: in the edition's words too."""
    tab.wait_for_selector(".copybtn", state="attached", timeout=20_000)
    tips = set(tab.eval_on_selector_all(".copybtn", "bs => bs.map(b => b.dataset.tooltip)"))
    hints = set(
        tab.eval_on_selector_all(
            ".toggle-button, .toggle-hidden-text, .toggle-button-hidden", "bs => bs.map(b => b.innerText)"
        )
    )
    english = [t for t in tips | hints if re.search(r"[A-Za-z]{3,}", t or "")]
    assert tips and not english, f"{where}: buttons in English: {english}"


def _glossary() -> list[dict[str, str]]:
    import csv

    with (ROOT / "book" / "glossary.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _term(row: dict[str, str], edition: str) -> str:
    """A glossary term as a reader types it: ``FLOPs(부동소수점 연산 수)`` -> ``FLOPs``, ``tile / tiling`` -> ``tile``."""
    return re.split(r"\s*/\s*|\s*[(（]", row[edition])[0].strip()


# Queries as readers type them, and the page that defines what they ask about.
QUERIES = [
    ("ko", "강도", "book/where-does-the-time-go"),
    ("ko", "대역폭", "book/where-does-the-time-go"),
    ("ko", "산술 강도가", "book/where-does-the-time-go"),
    ("ko", "임계 배치 크기는", "book/matrix-multiplication"),
    ("ko", "양방향 대역폭", "book/network-rooflines"),
    ("zh", "什么是算术强度", "book/where-does-the-time-go"),
    ("zh", "矩阵乘法的临界批大小", "book/matrix-multiplication"),
    ("zh", "双向带宽", "book/network-rooflines"),
    ("en", "arithmetic intensity", "book/where-does-the-time-go"),
    ("en", "critical batch size", "book/matrix-multiplication"),
    ("en", "context limit", "book/long-context"),
    ("ko", "컨텍스트 한계", "book/long-context"),
    ("zh", "上下文极限", "book/long-context"),
]


def _search_all(tab, server, edition: str, queries: list[str]) -> dict[str, list[str]]:
    """Run the edition's own search code (searchtools.js and its splitter) on each query: the pages found."""
    prefix = "" if edition == "en" else f"{edition}/"
    _open(tab, f"{server}/{prefix}search.html")
    tab.wait_for_function("() => typeof Search !== 'undefined' && Search._index", timeout=20_000)
    return tab.evaluate(
        """(queries) => Object.fromEntries(queries.map((q) => {
             const [query, terms, excluded, highlight, objects] = Search._parseQuery(q);
             const found = Search._performSearch(query, terms, excluded, highlight, objects);
             return [q, found.map((r) => r[0])];
           }))""",
        queries,
    )


@pytest.mark.parametrize("edition", EDITIONS)
def test_search_finds_the_defining_page_of_every_term(tab, server, edition):
    """Every glossary term finds the glossary (which defines it); reader's questions find their chapter."""
    terms = sorted({_term(row, edition) for row in _glossary()})
    asked = [(q, page) for lang, q, page in QUERIES if lang == edition]
    found = _search_all(tab, server, edition, terms + [q for q, _ in asked])
    missing = [t for t in terms if "book/glossary" not in found[t]]
    assert not missing, f"{edition}: searching these glossary terms does not find the glossary: {missing}"
    for query, page in asked:
        assert page in found[query], f"{edition}: searching {query!r} finds {found[query]}, not {page}"
    assert not tab.outside, f"{edition}: search made requests that left the machine: {tab.outside}"
