"""The built book, loaded page by page in headless Chromium.

Serves ``_build/html`` on localhost and checks, for every chapter, that the
math was typeset (no raw ``$$`` left), every image loaded, the problem answers
start folded and open on a click, and that no request went anywhere but
localhost. A full-page screenshot of each chapter is written to
``_build/screenshots/`` for review.

Needs Debian's ``chromium`` (``make test`` installs it when run as root) and
a built book (``make test`` builds it). It fails, rather than skips, when either is
missing, so that CI cannot pass without running it.
"""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _toc_pages() -> list[str]:
    """Every page of the book, in the order _toc.yml gives, so a new chapter is tested too."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        pages += [chapter["file"] for chapter in part["chapters"]]
    return pages


PAGES = _toc_pages()
PAGES_WITH_MATH = {
    "book/where-does-the-time-go",
    "book/visualizing-rooflines",
    "book/matrix-multiplication",
    "book/network-rooflines",
    "book/problems",
    "book/errata",
}
PAGES_WITH_FIGURES = {
    "book/visualizing-rooflines": 2,
    "book/matrix-multiplication": 1,
    "book/problems": 1,
    "book/measure-your-machine": 2,
}
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
    if not (HTML / "index.html").is_file():
        pytest.fail(f"{HTML} has no built book; run `make book` first")
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium not found; install it with `sudo apt-get install chromium` and run the tests again")
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
        yield context
        context.close()


def _open(browser, server: str, page_name: str):
    """Load a page; return it with the list of off-machine requests it made."""
    page = browser.new_page()
    outside: list[str] = []

    def watch(request) -> None:
        url = urlparse(request.url)
        if url.scheme in ("data", "blob", "about"):
            return
        if url.hostname not in ("127.0.0.1", "localhost"):
            outside.append(request.url)

    page.on("request", watch)
    page.goto(f"{server}/{page_name}.html", wait_until="networkidle")
    if page.locator("script[src*='mathjax']").count():
        # MathJax 3 exposes a promise that resolves once the page is typeset.
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20_000)
        page.evaluate("() => MathJax.startup.promise")
    page.wait_for_load_state("networkidle")
    return page, outside


@pytest.mark.parametrize("page_name", PAGES)
def test_page_renders_offline(browser, server, page_name):
    page, outside = _open(browser, server, page_name)
    try:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{page_name.split('/')[-1]}.png"), full_page=True)

        text = page.inner_text("article")
        assert "$$" not in text, f"{page_name}: raw $$ left in the page, so MathJax did not typeset it"
        assert not re.search(r"\|\s*[-—–:]{1,}\s*\|", text), (
            f"{page_name}: a Markdown table was printed raw instead of rendered"
        )
        assert "\\frac" not in text and "\\text{" not in text, f"{page_name}: raw TeX left in the page"
        n_math = page.locator("mjx-container").count()
        if page_name in PAGES_WITH_MATH:
            assert n_math > 0, f"{page_name}: no typeset math found (is MathJax served from the build?)"

        images = page.eval_on_selector_all(
            "article img", "imgs => imgs.map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0, i.alt])"
        )
        broken = [src for src, ok, _ in images if not ok]
        assert not broken, f"{page_name}: images that did not load: {broken}"
        expected = PAGES_WITH_FIGURES.get(page_name, 0)
        assert len(images) >= expected, f"{page_name}: expected {expected} figures, found {len(images)}"
        for src, _, alt in images:
            if page_name in PAGES_WITH_FIGURES:
                assert alt and len(alt) > 40, f"{page_name}: figure {src} has no useful alt text ({alt!r})"

        assert not outside, f"{page_name}: requests left the machine: {outside}"
    finally:
        page.close()


def test_answers_folded_and_open_on_click(browser, server):
    page, outside = _open(browser, server, "book/problems")
    try:
        solutions = page.locator("div.solution")
        assert solutions.count() == 5, f"expected 5 answers on the problems page, found {solutions.count()}"
        for i in range(5):
            sol = solutions.nth(i)
            body = sol.locator(".solution-content, section").first
            assert not body.is_visible(), f"answer {i + 1} is open on load; it should start folded"
            sol.locator("button.toggle-button").first.click()
            body.wait_for(state="visible", timeout=5_000)
            assert body.is_visible(), f"answer {i + 1} did not open when clicked"
        assert not outside, f"requests left the machine: {outside}"
    finally:
        page.close()
