"""The built book as a place to learn: practice in every chapter, terms linked, pictures where ideas appear.

Reads the built editions (``_build/html``, from ``make book``). The numbers a picture's description
gives are worked out here by hand or from the spec table, never read from the page.
"""

from __future__ import annotations

import csv
import re
import sys

import pytest
from book_support import BOOK, ROOT, html_dir, prose_blocks
from bs4 import BeautifulSoup
from docutils.nodes import make_id

import rooflinelib as rl

sys.path.insert(0, str(BOOK))

import bookeditions

EDITIONS = bookeditions.codes()
# The chapters that teach (the intro, the problems and the reference pages aside).
CONTENT = [
    "where-does-the-time-go",
    "visualizing-rooflines",
    "matrix-multiplication",
    "network-rooflines",
    "measure-your-machine",
    "beyond-the-roofline",
    "practice",
    "real-model-real-chips",
    "long-context",
]


def soup(edition: str, page: str) -> BeautifulSoup:
    path = html_dir() / ("" if edition == "en" else edition) / "book" / f"{page}.html"
    if not path.is_file():
        pytest.fail(f"{path} is missing; run `make book` first")
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def glossary_terms() -> list[str]:
    with (BOOK / "glossary.csv").open(encoding="utf-8", newline="") as fh:
        return [row["en"] for row in csv.DictReader(fh)]


# --- practice ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("page", CONTENT)
def test_every_content_chapter_has_two_self_checks(edition: str, page: str):
    quizzes = soup(edition, page).select("article div.multiple-choice.single-select")
    assert len(quizzes) >= 2, f"{edition}/{page}: {len(quizzes)} self-check(s), at least 2 expected"


def test_the_bugs_to_find_cite_the_errata_entries_they_come_from():
    """Each "(Errata, entry N.)" of the practice page names an entry about the same slip."""
    titles = {
        int(m.group(1)): m.group(2)
        for t in soup("en", "errata").select("article .admonition-title")
        if (m := re.match(r"(\d+)\. (.*)", " ".join(t.get_text().split())))
    }
    subjects = {17: "lower bound is the max", 16: "2BF bytes, not 4BF", 21: "FLOPs/s given as FLOPs/byte",
                20: "Halving one ridge", 8: "sparse vs dense", 19: "One H100 variant"}  # fmt: skip
    text = soup("en", "practice").select_one("article").get_text(" ")
    cited = {
        int(n) for group in re.findall(r"Errata, entr(?:y|ies) ([\d and]+)\.", text) for n in re.findall(r"\d+", group)
    }
    assert cited == set(subjects), f"the practice page cites entries {sorted(cited)}"
    for number, subject in subjects.items():
        assert subject in titles[number], f"errata entry {number} is {titles[number]!r}, not about {subject!r}"


# --- the glossary ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_glossary_anchors_every_term_at_the_same_place(edition: str):
    ids = {tr.get("id") for tr in soup(edition, "glossary").select("article tr[id]")}
    missing = [term for term in glossary_terms() if "term-" + make_id(term) not in ids]
    assert not missing, f"{edition}: glossary terms with no anchor: {missing[:5]}"


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("page", CONTENT)
def test_every_content_chapter_links_its_terms_to_the_glossary(edition: str, page: str):
    anchors = {tr.get("id") for tr in soup(edition, "glossary").select("article tr[id]")}
    links = [a["href"] for a in soup(edition, page).select("article a[href*='glossary.html#']")]
    assert len(set(links)) >= 2, f"{edition}/{page}: {len(set(links))} distinct glossary links"
    dangling = [h for h in links if h.split("#", 1)[1] not in anchors]
    assert not dangling, f"{edition}/{page}: links to no glossary entry: {dangling[:3]}"


def test_the_editions_link_the_same_terms():
    for page in CONTENT:
        english = sorted(a["href"] for a in soup("en", page).select("article a[href*='glossary.html#']"))
        for edition in bookeditions.translated():
            other = sorted(a["href"] for a in soup(edition, page).select("article a[href*='glossary.html#']"))
            assert other == english, f"{edition}/{page}: its glossary links differ from the English page's"


# --- pictures where their ideas first appear, numbers from the table ------------------------------------


# figure id -> (page, the section it belongs in)
PICTURES = {
    "fig-chip-v5e": ("where-does-the-time-go", "time-spent-moving-bytes"),
    "fig-overlap": ("where-does-the-time-go", "two-bounds-on-the-runtime"),
    "fig-matmul-reuse": ("matrix-multiplication", "the-critical-batch-size"),
    "fig-tiling": ("matrix-multiplication", "tiling"),
    "fig-two-chips": ("network-rooflines", "a-matmul-split-over-two-chips"),
    "fig-overhead-floor": ("beyond-the-roofline", "a-third-bound-the-fixed-cost-of-a-call"),
    "fig-compute-roofs": ("beyond-the-roofline", "more-than-one-compute-roof"),
    "fig-h100-levels": ("beyond-the-roofline", "a-hierarchical-roofline-for-an-h100-and-a-tpu"),
    "fig-profiler-reading": ("beyond-the-roofline", "from-this-course-to-the-profilers"),
}


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("figure", list(PICTURES))
def test_each_picture_stands_where_its_idea_appears_with_a_description(edition: str, figure: str):
    page, section = PICTURES[figure]
    fig = soup(edition, page).select_one(f"#{figure}")
    assert fig is not None, f"{edition}/{page}: no figure {figure}"
    assert fig.find_parent("section").get("id") == section, f"{edition}/{page}: {figure} is not in #{section}"
    alt = fig.find("img").get("alt") or ""
    assert len(alt.split()) >= 12 or (edition != "en" and len(alt) >= 40), f"{edition}: {figure} has no description"


def alt(figure: str) -> str:
    page, _ = PICTURES[figure]
    return " ".join(soup("en", page).select_one(f"#{figure} img")["alt"].split())


def test_the_chip_is_drawn_and_described_with_the_tables_figures():
    v5e = rl.get_accelerator("tpu-v5e")
    text = alt("fig-chip-v5e")
    # Google's v5e page and the book's ICI table: 16 GiB, 819 GB/s, 197 TFLOPs/s, 4 links of 45 GB/s
    assert f"{v5e.hbm_capacity / 2**30:.0f} GiB" == "16 GiB" and "16 GiB" in text
    assert f"{v5e.hbm_bandwidth / 1e9:g} GB/s" in text and f"{v5e.peak('bf16') / 1e12:g} TFLOPs/s bf16" in text
    ici = v5e.links["ici"]
    assert f"ICI, {ici.count} links of {ici.bandwidth / 1e9:g} GB/s" in text
    assert f"PCIe, {v5e.links['pcie'].bandwidth / 1e9:g} GB/s" in text
    assert f"DCN, {v5e.links['dcn'].bandwidth / 1e9:g} GB/s" in text
    drawn = set(rl.chip_labels("tpu-v5e").values())
    assert {"16 GiB", "819 GB/s", "197 TFLOPs/s bf16", "ICI: 4 links × 45 GB/s", "DCN: 3.125 GB/s"} <= drawn


def test_the_overlap_timeline_is_described_with_its_schedule():
    # 3 ms of arithmetic, 2 ms of transfers; in 4 pieces of 0.5 ms and 0.75 ms: the first piece arrives at
    # 0.5 ms, the arithmetic then runs without a gap to 0.5 + 3 = 3.5 ms; one after the other, 2 + 3 = 5 ms
    text = alt("fig-overlap")
    for said in ("from 0 to 2 ms, then one orange compute bar from 2 to 5 ms", "from 0.5 to 3.5 ms",
                 "ends at 3.5 ms", "at 3 ms and their sum at 5 ms"):  # fmt: skip
        assert said in text, said
    schedule = rl.overlap_schedule(3e-3, 2e-3, 4)
    assert min(i.start for i in schedule if i.kind == "compute") == pytest.approx(0.5e-3)


def test_the_reuse_picture_uses_llama_3_8b_and_says_its_sizes():
    llama = rl.get_model("llama-3-8b")
    B, D, F = 256, llama.hidden, llama.mlp
    assert (D, F) == (4096, 14336)  # the model's config.json: hidden_size, intermediate_size
    text = alt("fig-matmul-reuse")
    assert f"W, {D} by {F}, {2 * D * F / 1e6:.1f} MB" in text  # 2 * 4096 * 14336 = 117.44 MB
    assert f"X, {B} by {D}, {2 * B * D / 1e6:.1f} MB" in text  # 2.10 MB
    assert f"Z, {B} by {F}, {2 * B * F / 1e6:.2f} MB" in text  # 7.34 MB
    assert f"intensity {B * D * F / (B * D + D * F + B * F):.1f} FLOPs/byte" in text  # 236.96


def test_the_tiling_picture_maps_m_k_n_onto_b_d_f():
    text = alt("fig-tiling")
    assert "X of m by k, that is B by D" in text and "Y of k by n, that is D by F" in text
    assert "Z of m by n, that is B by F" in text
    said = "m is B (the rows: tokens), k is D (the length of each dot product) and n is F (the output width)"
    assert any(said in block for block in prose_blocks("matrix-multiplication"))


def test_the_two_chip_picture_says_the_networks_times():
    text = alt("fig-two-chips")
    # B = 512, D = F = 8192 with the book's 1.97e14 FLOPs/s and 4.5e10 bytes/s each way:
    # T_math = B D F / FLOPs/s = 174.4 µs; T_comms = 2 B F / link = 186.4 µs; 2 B F = 8.39 MB
    assert "2BF = 8.39 MB each way" in text and "T_math = 174.4 µs" in text and "T_comms = 186.4 µs" in text


def test_the_overhead_floor_is_described_with_its_numbers():
    text = alt("fig-overhead-floor")
    xla = rl.get_published_matmuls("xla-sm90-bf16-matmul")
    tiny = min((p for p in xla.points if p.b == 1 and p.m == p.n == p.k), key=lambda p: p.m)
    assert f"fixed cost of {tiny.seconds * 1e6:.3g} microseconds" in text  # 2 * 256**3 / 6.72e12 = 4.99 µs
    # (4.992e-6 * 9.895e14 / 2) ** (1/3) = 1351.9: the first whole n is 1352
    assert "vertical line at n = 1352" in text


def test_the_hierarchical_rooflines_are_described_with_their_numbers():
    """The H100's two roofs and each kernel's intensity per level, worked out by hand."""
    smem = 32 * 4 * 132 * 1.83e9  # banks x bytes x SMs x clock
    peak, hbm = 1979e12 / 2, 3.35e12
    levels = alt("fig-h100-levels")
    for said in (
        f"HBM at {hbm / 1e12:.2f} TB/s",  # its ridge, Question 5's answer, is left for the problems page
        f"shared memory at {smem / 1e12:.1f} TB/s, with its ridge at {peak / smem:.1f}",  # 30.9, 32.0
        f"tiled matmul at {4096 / 3:,.1f} FLOPs per HBM byte, on the flat peak",  # each matrix once: 1,365.3
        f"{4096 / 81:.1f} per shared-memory byte",  # 50.6: past the ridge, on the peak
        f"prefill attention at {8192 // 2:,} per HBM byte, on the peak",  # Q, K, V, output once: q / 2
        f"{8192 * 64 / 8256:.1f} per shared-memory byte, on the peak",  # 63.5
    ):
        assert said in levels, f"the hierarchical roofline's description should say {said!r}"
    assert f"{4096 / 49:.1f}" not in levels, "the tile count (into shared memory) has no roof to be drawn on"
    reading = alt("fig-profiler-reading")
    achieved = 2 * 4096**3 / 1.6e-3
    for said in (
        f"achieved {achieved / 1e12:.1f} TFLOPs/s",  # 85.9
        f"at {4096 / 257:.1f} FLOPs per shared-memory byte",  # 15.9
        f"({4096 / 257 * smem / 1e12:.1f} TFLOPs/s there)",  # 492.8
        f"at {4096 / 3:,.1f} FLOPs per HBM byte, right of the HBM ridge",  # compulsory, past 989.5 / 3.35 = 295
    ):
        assert said in reading, f"the worked reading's description should say {said!r}"


def test_the_worked_reading_says_its_counters_are_illustrative():
    page = " ".join(
        soup("en", "beyond-the-roofline").select_one("#from-this-course-to-the-profilers").get_text().split()
    )
    assert "Its counter values are illustrative, not a capture: no profiler ran." in page
    assert "not a profiler capture" in alt("fig-profiler-reading") or "not a profiler capture" in page


# --- a newcomer's path ------------------------------------------------------------------------------------


def test_the_intro_uses_no_word_it_has_not_defined():
    """Ridge, 2:4 sparsity and thresholds belong to the chapters; the intro points to them."""
    intro = soup("en", "intro").select_one("article")
    text = " ".join(intro.get_text(" ").split())
    for word in ("ridge", "2:4", "threshold on", "critical intensity"):
        assert word not in text, f"the intro says {word!r} before any chapter defines it"
    assert intro.select_one('a[href="errata.html#how-numbers-are-shown"]') is not None
    assert soup("en", "errata").select_one("section#how-numbers-are-shown") is not None


def test_the_intro_lists_every_chapter_with_a_time_and_a_core_path():
    import yaml

    table = soup("en", "intro").select_one("article table")
    rows = [[" ".join(td.get_text().split()) for td in tr.select("td")] for tr in table.select("tbody tr")]
    linked = [tr.select_one("a")["href"].removesuffix(".html") for tr in table.select("tbody tr")]
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    chapters = [c["file"].split("/")[-1] for c in toc["parts"][0]["chapters"]]
    assert linked == chapters, "the path lists the course's chapters in their order"
    minutes = {page: int(row[2]) for page, row in zip(linked, rows)}
    assert all(m > 0 and m % 5 == 0 for m in minutes.values()), minutes
    core = [page for page, row in zip(linked, rows) if row[3] == "✓"]
    assert {"where-does-the-time-go", "matrix-multiplication"} <= set(core) and len(core) < len(linked)
    text = " ".join(soup("en", "intro").select_one("article").get_text(" ").split())
    sys.path.insert(0, str(BOOK))
    import coursemap

    stale = {p: (m, coursemap.page_minutes(p)) for p, m in minutes.items() if m != coursemap.page_minutes(p)}
    assert not stale, f"the intro's times (shown, from the sources now) are stale: {stale}"
    assert f"about {sum(minutes[p] for p in core)} minutes" in text, "the core path's time is the sum of its rows"
    assert f"about {sum(minutes.values())} minutes" in text, "the course's time is the sum of the table"


_WORD = re.compile(r"[^\W\d_][\w'’-]*")
PATH = ["where-does-the-time-go", "visualizing-rooflines", "matrix-multiplication", "network-rooflines",
        "measure-your-machine", "beyond-the-roofline", "problems", "practice", "real-model-real-chips",
        "long-context"]  # fmt: skip


def _words_read(page: str) -> int:
    """The words a reader reads on a built page: its prose, admonitions, quizzes, tables and figure captions,
    with its glued values as pasted; not code, printed output or equations."""
    art = soup("en", page).select_one("article")
    captions = " ".join(f.get_text(" ") for f in art.select("figcaption"))
    for tag in art.select("div.cell_input, div.cell_output, pre, script, style, .math, section.question-show, "
                          ".headerlink"):  # fmt: skip
        tag.decompose()
    return len(_WORD.findall(art.get_text(" ") + " " + captions))


@pytest.mark.parametrize("page", PATH)
def test_reading_time_counts_the_words_the_page_shows(page: str):
    """The intro's times read a page's source: its count must be the built page's, give or take.

    Sentences chosen by what the build machine measured, figure captions and admonitions fenced like code
    are read too; a count of the source alone once gave the measure page two thirds of its words.
    """
    sys.path.insert(0, str(BOOK))
    import coursemap

    estimate = coursemap.prose_words((BOOK / f"{page}.md").read_text(encoding="utf-8"))
    shown = _words_read(page)
    assert 0.85 * shown <= estimate <= 1.2 * shown, f"{page}: {estimate} words counted, {shown} on the built page"


def test_every_sentence_the_measure_page_can_paste_has_its_place():
    """book/sentences.py's ROLES say which glued value each sentence can fill: all of them, on the page."""
    sys.path.insert(0, str(BOOK))
    import sentences

    chosen = {key for choices in sentences.ROLES.values() for key in choices if key is not None}
    assert chosen == set(sentences.MEASURE), (
        f"no role: {set(sentences.MEASURE) - chosen}, unknown: {chosen - set(sentences.MEASURE)}"
    )
    source = (BOOK / "measure-your-machine.md").read_text(encoding="utf-8")
    pasted = set(re.findall(r"\{glue:text\}`([^`:]+)`", source))
    assert set(sentences.ROLES) <= pasted, f"roles the page does not paste: {set(sentences.ROLES) - pasted}"


def test_the_intro_says_where_the_self_checks_are():
    """Self-checks sit through each chapter, not at its end, and the problems have none: the intro says so."""
    sys.path.insert(0, str(BOOK))
    import coursemap

    counts = {page: coursemap.quizzes((BOOK / f"{page}.md").read_text(encoding="utf-8")) for page in PATH}
    assert counts["problems"] == 0 and all(n > 0 for page, n in counts.items() if page != "problems"), counts
    text = " ".join(soup("en", "intro").select_one("article").get_text(" ").split())
    assert "Each chapter ends with self-checks" not in text
    assert "Every chapter but the problems has self-checks, each placed where the idea it tests is explained" in text


def test_b_d_and_f_are_met_on_a_real_model():
    llama = rl.get_model("llama-3-8b")
    said = [b for b in prose_blocks("matrix-multiplication") if f"{llama.name} has {llama.layers} layers" in b]
    assert said, "the matmul chapter should tie B, D and F to Llama 3 8B where it defines them"
    assert "D = 4,096" in said[0] and "F = 14,336" in said[0]  # Llama 3 8B's config.json: 4096 and 14336


def test_the_third_bound_and_the_utilisations_are_named():
    text = " ".join(soup("en", "beyond-the-roofline").select_one("article").get_text(" ").split())
    for named in ("fixed cost", "latency", "Model FLOPs utilisation", "memory bandwidth utilisation", "fusion",
                  "Nsight Compute", "XProf", "Advisor", "Empirical Roofline Toolkit"):  # fmt: skip
        assert named.lower() in text.lower(), named
