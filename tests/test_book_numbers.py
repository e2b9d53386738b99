"""Every glued number and every numeric claim of the chapters, checked where it stands.

The expected strings come from hand arithmetic on the book's and the vendors'
figures (written out next to each), not from ``rooflinelib``; the pages compute
them with ``rooflinelib``, so a wrong formula, a wrong table entry or a wrong
rounding shows up here.

Each ``{glue:text}`` role of a page is matched, in document order, with the
text it rendered in the built HTML, so a value is checked at its own place, not
anywhere on the page. Prose claims are looked for in the page's paragraphs,
list items and admonitions, never in code or cell outputs.

Needs a built book: ``_build/html`` in the repository, or the ``html`` folder
named by the environment variable ``ROOFLINE_BOOK_HTML``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
_ROLE = re.compile(r"\{glue:text\}`([^`:]+)(?::[^`]*)?`")


def html_dir() -> Path:
    """The built book's ``html`` folder (``ROOFLINE_BOOK_HTML`` or ``_build/html``)."""
    return Path(os.environ.get("ROOFLINE_BOOK_HTML", ROOT / "_build" / "html"))


def article(page: str) -> BeautifulSoup:
    """The parsed ``<article>`` of a built page; fails with a hint when the book is not built."""
    path = html_dir() / "book" / f"{page}.html"
    if not path.is_file():
        pytest.fail(
            f"{path} is missing; build the book first (`make book`), or set ROOFLINE_BOOK_HTML "
            "to the html folder of a build"
        )
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    return soup.find("article") or soup


def glued(page: str) -> list[tuple[str, str]]:
    """``(key, rendered text)`` for every ``{glue:text}`` role of a page, in document order."""
    keys = _ROLE.findall((BOOK / f"{page}.md").read_text(encoding="utf-8"))
    spans = article(page).select("span.pasted-text")
    assert len(spans) == len(keys), (
        f"{page}: {len(keys)} glue roles in the source but {len(spans)} "
        "pasted values in the HTML; is the build up to date?"
    )
    return [(k, " ".join(s.get_text().split())) for k, s in zip(keys, spans)]


def prose_blocks(page: str) -> list[str]:
    """Text of each paragraph, list item and admonition title of a page, outside code cells and math."""
    art = article(page)
    for tag in art.select("div.cell, pre, script, style"):
        tag.decompose()
    for tag in art.select(".math"):
        tag.replace_with(" ".join(tag.get_text().replace("\\(", "").replace("\\)", "").split()))
    return [" ".join(t.get_text().split()) for t in art.select("p, li, .admonition-title")]


# Each glued value, as it must render wherever the page shows it.
GLUED = {
    "intro": {
        "v5e_critical": "240",  # 1.97e14 / 8.2e11 = 240.24
        "v5e_critical_exact": "240.2",
        "v5e_critical_vendor": "240.5",  # 1.97e14 / 8.19e11 = 240.54
        "book_half": "4377",  # the book's truncation of 1.97e14 / 4.5e10 = 4377.78
        "half_crit_exact": "4377.8",
    },
    "where-does-the-time-go": {
        "t_h100_ms": "1.01",  # 1e12 / 9.89e14 = 1.011e-3 s
        "t_v6e_ms": "1.1",  # 1e12 / 9.1e14 = 1.099e-3 s
        "v6e_diff_pct": "1",  # 1 - 9.1e14 / 9.18e14 = 0.87 %
        "h100_cap": "80 GB",  # 8.0e10 bytes
        "v5e_cap": "16 GiB",  # Google lists 16 GiB
        "v5e_dcn": "3.125e9",
        "ici_over_dcn": "14.4",  # 4.5e10 / 3.125e9
        "ex_lo_ms": "3",  # max(3, 2)
        "ex_hi_ms": "5",  # 3 + 2
        "v5e_critical": "240",
        "v5e_critical_exact": "240.2",
        "v5e_critical_vendor": "240.5",
        "dot_limit": "0.5",  # (2N - 1) / (4N + 2) -> 1/2
        "vpu_critical": "2.5",  # 7e12 / 2.765e12 = 2.53
    },
    "visualizing-rooflines": {
        "v5e_critical": "240",
        "ridge2": "120",  # 1.97e14 / 1.64e12 = 120.1
        "a1_bw1_frac": "25",  # 60 * 8.2e11 / 1.97e14 = 0.2497
        "a1_bw2_frac": "50",  # 60 * 1.64e12 / 1.97e14 = 0.4995
        "a2_frac": "100",
    },
    "matrix-multiplication": {
        "v5e_critical": "240",
        "b_exact_8192": "255",  # 240.24 * 8192^2 / (8192^2 - 240.24 * 16384) = 255.2
        "int_256": "240.9",  # 256 * 8192^2 / (256 * 16384 + 8192^2) = 240.94
        "int_256_gap": "6",  # 1 - 240.94 / 256 = 5.9 %
        "int_1024": "819.2",  # 1024 * 8192 / (2048 + 8192)
        "int_1024_gap": "20",
        "h100_bcrit": "295.4",  # 9.895e14 / 3.35e12 = 295.37
        "b_star_lo": "153",  # A100: 3.12e14 / 2.039e12 = 153.0
        "tokens": "2,097,152",  # 512 * 4096
        "local": "16,384",  # 2,097,152 / 128
        "tiled_limit": "341.3",  # 512 * 1024 / 1536
        "small_tile_limit": "64",  # 128 * 128 / 256
    },
    "network-rooflines": {
        "half_crit": "4378",  # 1.97e14 / 4.5e10 = 4377.78, rounded
        "half_crit_exact": "4377.8",
        "book_half": "4377",  # as the book prints it
        "d_star": "8756",  # 2 * 4377.78 = 8755.56
        "d_star_exact": "8755.6",
        "book_d": "8755",
        "d_star_4bf": "17511",  # 2 * 8755.56
        "d_star_bidir": "4378",  # 2 * 1.97e14 / 9e10
        "link_bidir": "9e10",
        "link_chips": "TPU v4 and TPU v5e",  # ICI 4.5e10 per link in the table
    },
    "problems": {
        "q1_crit": "486",  # 3.94e14 / 8.1e11 = 486.4
        "q1_b": "243",  # 486.4 / 2
        "bf16_rule": "240",
        "q1_vs_bf16": "2",  # 243.2 / 240.2 = 1.012: within 2 %, not within 1 %
        "q1_b_82": "240",  # 3.94e14 / 8.2e11 / 2 = 240.2
        "q1_b_vendor": "239.9",  # 3.93e14 / 8.19e11 / 2 = 239.93
        "q2_crit": "240",
        "q2_b": "120",  # 240.2 / 2
        "q2_b_q1hbm": "122",  # 1.97e14 / 8.1e11 / 2 = 121.6
        "q3_b4096": "136",  # exact, int8 weights: 2.046e-5 / 1.5035e-7 = 136.1
        "q3_b1024": "226",  # 1.2788e-6 / 5.650e-9 = 226.3
        "q3_ratio": "1.66",  # 226.3 / 136.1
        "q4_512": "1.999",  # 2 * 4096^2 / (4096 + 4096^2 + 4096) = 1.99902
        "q4_lowest_ridge": "9.6",  # A100 fp32: 1.95e13 / 2.039e12 = 9.56
        "q5_dense": "9.895e14",  # 1.979e15 / 2
        "q5_b": "295.4",  # 9.895e14 / 3.35e12
        "q5_vs_tpu": "1.23",  # 295.37 / 240.24
        "q5_b_book": "298.5",  # 1e15 / 3.35e12
        "q5_b_printed": "298",
        "q5_b_sparse": "590.7",  # 1.979e15 / 3.35e12
        "q5_h100-pcie": "378.2",  # 7.565e14 / 2e12 = 378.25 (binary: just under)
        "q5_h100-nvl": "214.2",  # 8.355e14 / 3.9e12 = 214.23
    },
    "errata": {
        "q1_b": "243",
        "q1_b_82": "240",
        "q2_b_q1hbm": "122",
        "q3_ratio": "1.66",
        "vpu_critical": "2.5",
        "int8_over_bf16": "2",  # 3.94e14 / 1.97e14
        "q5_b_book": "298.5",
        "q5_h100-sxm": "295.4",
        "d_star": "8756",
        "d_star_exact": "8755.6",
        "d_star_4bf": "17511",
        "tile_flops_right": "4.29",  # 2 * 1024 * 1024 * 2048 / 1e9
        "tile_flops_as_printed": "2.15",  # 2 * 4 * 4 * 4 * 256^3 / 1e9
    },
}

# Sentences whose numbers and words must stand together in the prose.
CLAIMS = {
    "where-does-the-time-go": [
        "critical intensity is 240 FLOPs/byte",
        "takes between 3 ms and 5 ms",
        "about 0.5 FLOP per byte",
        "critical intensity of about 2.5",
        "80–85 % of their advertised FLOPs/s",
    ],
    "visualizing-rooflines": [
        "At BW1 it reaches 25 % of the peak, at BW2 50 %",
        "Their peaks span a factor of 11.4, their ridge points a factor of 2.3",
    ],
    "matrix-multiplication": [
        "critical batch size of 240 tokens",
        "the two ranges overlap",
        "2 of the 5 TPUs (TPU v4, TPU v5e) are within 5% of 240",
    ],
    "network-rooflines": [
        "compute-bound when D > 8755.6",
    ],
    "problems": [
        "within 2 % of the bf16 rule",
        "the answer would be 122",
        "1.66 times as many tokens",
        "B_\\text{crit} \\approx 9.895e14 / 3.35e12 ≈ 295.4 tokens",
    ],
    "errata": [
        "a ratio of 1.66",
        "the book prints 4377 and 8755",
    ],
}


@pytest.mark.parametrize(("page", "key", "expected"), [(p, k, v) for p, kv in GLUED.items() for k, v in kv.items()])
def test_glued_value_where_it_stands(page, key, expected):
    shown = [text for k, text in glued(page) if k == key]
    assert shown, f"{page}: the glued value {key!r} is not shown anywhere"
    wrong = [text for text in shown if text != expected]
    assert not wrong, f"{page}: {key!r} should render as {expected!r} at each of its {len(shown)} places, got {wrong}"


@pytest.mark.parametrize(("page", "claim"), [(p, c) for p, cs in CLAIMS.items() for c in cs])
def test_claim_stands_in_the_prose(page, claim):
    blocks = prose_blocks(page)
    assert any(claim in b for b in blocks), f"{page}: no paragraph says {claim!r}"


@pytest.mark.parametrize("page", sorted(p.stem for p in BOOK.glob("*.md")))
def test_no_unrendered_glue(page):
    text = article(page).get_text(" ")
    assert "{glue" not in text, f"{page}: a glue role was not resolved"


# Cells of the spec appendix's tables: (table index, chip, column header) -> text, by hand from vendor sheets.
SPEC_CELLS = {
    (0, "TPU v5e", "ridge, bf16 (FLOPs/byte)"): "240.5",  # 1.97e14 / 8.19e11, one decimal (table figure)
    (0, "TPU v4", "HBM capacity"): "32 GiB",  # Google lists GiB
    (0, "TPU v5p", "HBM capacity"): "95 GiB",
    (0, "NVIDIA H100 SXM", "HBM capacity"): "80 GB",  # NVIDIA lists GB
    (0, "NVIDIA H100 SXM", "bf16 peak (TFLOPs/s)"): "989.5",  # 1,979 with sparsity / 2
}


def _spec_cell(table: int, chip: str, column: str) -> list[str]:
    tab = article("accelerator-specs").select("table")[table]
    headers = [" ".join(th.get_text().split()) for th in tab.select("thead th")]
    col = headers.index(column)
    return [
        " ".join(tr.select("td")[col].get_text().split())
        for tr in tab.select("tbody tr")
        if " ".join(tr.select("td")[0].get_text().split()) == chip
    ]


@pytest.mark.parametrize(("where", "expected"), list(SPEC_CELLS.items()), ids=[f"{c}-{h}" for _, c, h in SPEC_CELLS])
def test_spec_table_cell(where, expected):
    assert _spec_cell(*where) == [expected]


def test_spec_links_keep_every_digit():
    """TPU v5e DCN is 3.125 GB/s; a two-decimal format would print 3.12."""
    tab = article("accelerator-specs").select("table")[1]
    rows = [[" ".join(td.get_text().split()) for td in tr.select("td")] for tr in tab.select("tbody tr")]
    assert [r[2] for r in rows if r[:2] == ["TPU v5e", "DCN"]] == ["3.125"]
