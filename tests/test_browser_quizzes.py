"""The self-check quizzes, clicked in headless Chromium, in every edition, offline.

Each quiz is a ``{question}`` of teachbooks-questions (kept offline by
``book/_ext/offline_quizzes.py``). For every quiz page in English, Korean and Chinese:
clicking a wrong choice shows that choice's own explanation, in the edition's language,
and marks it wrong; clicking the right choice marks it right; and no request leaves the
machine. Uses the Chromium tab and local server of ``tests/test_browser_book.py``.
"""

from __future__ import annotations

import re

import pytest
from test_browser_book import EDITIONS, _open, _path, server, tab  # noqa: F401  (fixtures)

QUIZ_PAGES = {"book/where-does-the-time-go": 2, "book/matrix-multiplication": 3, "book/network-rooflines": 1}
# a character of the edition's own script, which an explanation in that language must contain
SCRIPT = {"en": re.compile(r"[A-Za-z]"), "ko": re.compile(r"[\uac00-\ud7a3]"), "zh": re.compile(r"[\u4e00-\u9fff]")}
CASES = [pytest.param(e, p, id=f"{e}-{p.split('/')[-1]}") for e in EDITIONS for p in QUIZ_PAGES]


def _state(option) -> tuple[str, bool, str]:
    """An option's footer classes, whether its explanation shows, and the explanation's text."""
    footer = option.locator("div.sd-card-footer")
    feedback = footer.locator("section.question-feedback")
    return (
        footer.get_attribute("class") or "",
        feedback.is_visible(),
        feedback.inner_text() if feedback.is_visible() else "",
    )


@pytest.mark.parametrize(("edition", "page_name"), CASES)
def test_quiz_choices_explain_themselves(tab, server, edition, page_name):  # noqa: F811
    _open(tab, f"{server}/{_path(edition, page_name)}")
    where = f"{edition}/{page_name}"
    quizzes = tab.locator("div.multiple-choice.single-select")
    assert quizzes.count() == QUIZ_PAGES[page_name], f"{where}: {quizzes.count()} quizzes"
    for q in range(quizzes.count()):
        options = quizzes.nth(q).locator("div.sd-card.option")
        right = [
            i for i in range(options.count()) if options.nth(i).locator("section.question-feedback.correct").count()
        ]
        assert len(right) == 1, f"{where} quiz {q + 1}: {len(right)} right answers"
        for i in range(options.count()):
            assert not _state(options.nth(i))[1], f"{where} quiz {q + 1}: an explanation shows before any click"
        seen = set()
        for i in [*(i for i in range(options.count()) if i != right[0]), right[0]]:
            options.nth(i).click()
            classes, shown, text = _state(options.nth(i))
            verdict = "correct" if i == right[0] else "incorrect"
            assert shown, f"{where} quiz {q + 1}: choice {i + 1} shows no explanation when clicked"
            assert verdict in classes.split(), f"{where} quiz {q + 1}: choice {i + 1} is not marked {verdict}"
            assert SCRIPT[edition].search(text), f"{where} quiz {q + 1}: explanation not in {edition}: {text!r}"
            assert text not in seen, f"{where} quiz {q + 1}: two choices share one explanation"
            seen.add(text)
            others = [j for j in range(options.count()) if j != i and _state(options.nth(j))[1]]
            assert not others, f"{where} quiz {q + 1}: another choice's explanation stays open"
    assert not tab.outside, f"{where}: requests left the machine: {tab.outside}"
