"""Every numeric claim of the chapters, checked in the rendered HTML.

The expected strings come from hand arithmetic on the book's and the vendors'
figures (written out next to each), not from ``rooflinelib``; the pages compute
them with ``rooflinelib``, so a wrong formula or a wrong table entry shows up
here. Needs the built book (``make book``).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

HTML = Path(__file__).resolve().parents[1] / "_build" / "html" / "book"

CLAIMS = {
    "where-does-the-time-go": [
        "1.01 ms",            # 1e12 / 9.89e14 = 1.011e-3 s
        "1.1 ms",             # 1e12 / 9.1e14 = 1.099e-3 s
        "80–85 %",            # achievable share of peak on H100/B200 (book)
        "95 %",               # on TPUs (book)
        "critical intensity is 240 FLOPs/byte",   # 1.97e14 / 8.2e11 = 240.2
        "240.5",              # 1.97e14 / 8.19e11 = 240.54 (vendor HBM)
        "about 0.5 FLOP per byte",                # (2N-1)/(4N+2) -> 1/2
        "about 2.5",          # v5p VPU 7e12 / 2.765e12 = 2.53
        "between 3 ms and 5 ms",                  # max(3, 2), 3 + 2
    ],
    "visualizing-rooflines": [
        "the ridge, 240 FLOPs/byte",  # 1.97e14 / 8.2e11
        "at BW2 it stops at 120",     # 1.97e14 / 1.64e12 = 120.1
        "At BW1 it reaches 25 %",     # 60 * 8.2e11 / 1.97e14 = 0.2497
        "at BW2 50 %",                # 60 * 1.64e12 / 1.97e14 = 0.4995
    ],
    "matrix-multiplication": [
        "critical batch size of 240 tokens",   # 1.97e14 / 8.2e11
        "about 295 tokens",                    # H100 SXM: 9.895e14 / 3.35e12 = 295.4
        "2,097,152 tokens",                    # 512 * 4096
        "16,384",                              # 2,097,152 / 128
        "341.3",                               # 512 * 1024 / (512 + 1024)
    ],
    "network-rooflines": [
        "is 4378",             # 1.97e14 / 4.5e10 = 4377.8
        "8755.6",              # 2 * 1.97e14 / 4.5e10 = 8755.56
        "D > 8756",            # rounded
        "D > 17511",           # counting 4BF bytes: 2 * 8755.56
    ],
    "problems": [
        "= 486",               # 3.94e14 / 8.1e11 = 486.4
        "B > 243",             # 486.4 / 2
        "B > 120",             # 1.97e14 / 8.2e11 / 2 = 120.1 (int8 weights)
        "B \\approx 136",             # exact crossover, D = F = 4096, int8 weights, by hand: 2.046e-5 / 1.5035e-7 = 136.1
        "B \\approx 226",             # exact crossover, D = F = 1024: 1.2788e-6 / 5.650e-9 = 226.3
        "≈ 295 tokens",        # 1.979e15 / 2 / 3.35e12 = 295.4
        "298.5",               # the book's 1e15 / 3.35e12
        "SXM ≈ 295",
        "PCIe ≈ 378",          # 7.565e14 / 2e12 = 378.3
        "NVL ≈ 214",           # 8.355e14 / 3.9e12 = 214.2
        "1.999",               # Q4, B=512, D=F=4096: 2*D*F / (D + D*F + F) = 33554432 / 16785408 = 1.99902
    ],
    "errata": [
        "243 with 8.1e11 but 240 with 8.2e11",  # 3.94e14 / 8.1e11 / 2 = 243.2; / 8.2e11 / 2 = 240.2
        "9.895e14",            # 1.979e15 / 2
        "298.5",
        "PCIe and NVL",
        "are 378 and 214",
        "D > 8756 (8755.6) to D > 17511",
        "lower",
    ],
}


def _text(page: str) -> str:
    path = HTML / f"{page}.html"
    if not path.is_file():
        pytest.fail(f"{path} is missing; run `make book` first")
    raw = path.read_text(encoding="utf-8")
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", "", raw)).replace("\\(", "").replace("\\)", "")
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize(("page", "claim"), [(p, c) for p, cs in CLAIMS.items() for c in cs])
def test_claim_is_on_the_page(page, claim):
    assert claim in _text(page), f"{page}: expected the rendered page to say {claim!r}"


@pytest.mark.parametrize("page", list(CLAIMS))
def test_no_unrendered_glue(page):
    text = _text(page)
    assert "{glue" not in text, f"{page}: a glue role was not resolved"
