"""The built book against an instructor's review: each wrong claim gone, each fix in place.

Every check reads the English build (``_build/html``, from ``make book``) or the
chapter source, and computes the value it expects from first principles or from
``rooflinelib``'s spec table, never from the page it checks.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import yaml
from bs4 import BeautifulSoup

import rooflinelib as rl
from rooflinelib.measure.results import MachineMeasurement, Point

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
BOOK = ROOT / "book"


def _soup(page: str) -> BeautifulSoup:
    path = HTML / "book" / f"{page}.html"
    if not path.is_file():
        pytest.fail(f"{path} is missing; run `make book` first")
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _text(page: str) -> str:
    """A page's article text, whitespace collapsed."""
    return " ".join(_soup(page).select_one("article").get_text(" ").split())


# The page that measures the machine it is built on: its glued values and cell outputs are that machine's figures.
MEASURED_PAGE = "measure-your-machine"


def _text_without_measurements(page: str) -> str:
    """:func:`_text`, less what the build machine measured: on the measure page, its glued values and outputs.

    A measured figure is not an answer, and on some machine one will fall within a rounding of any number
    a test looks for; the page's prose is still searched.
    """
    article = _soup(page).select_one("article")
    if page == MEASURED_PAGE:
        for tag in article.select("span.pasted-text, div.cell_output, div.output, table"):
            tag.decompose()
    return " ".join(article.get_text(" ").split())


def _toc_pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc["parts"]:
        pages += [chapter["file"] for chapter in part["chapters"]]
    return [p.split("/")[-1] for p in pages]


# --- wrong claims and labels -------------------------------------------------------------


def test_one_roof_per_execution_unit() -> None:
    text = _text("visualizing-rooflines")
    assert "One chip and number format has one compute roof" not in text
    assert "Each execution unit has its own compute roof" in text
    assert "MXU" in text and "VPU" in text and "tensor cores" in text


def test_yellow_band_label_matches_the_chips() -> None:
    """Between the lowest and the highest ridge, the chip with the lowest ridge is compute-bound."""
    chips = ["tpu-v5e", "tpu-v6e", "h200", "b200"]
    fig, ax = plt.subplots()
    rl.plot_roofline(chips, ax=ax)
    labels = [h.get_label() for h in ax.get_legend().legend_handles]
    plt.close(fig)
    assert not any("lower rooflines" in label for label in labels), labels
    assert "bandwidth-bound on some rooflines only" in labels
    accs = [rl.get_accelerator(c) for c in chips]
    ridges = sorted(a.critical_intensity("bf16") for a in accs)
    middle = (ridges[0] * ridges[-1]) ** 0.5
    lowest = min(accs, key=lambda a: a.peak("bf16"))  # the lowest roofline
    assert middle > lowest.critical_intensity("bf16"), "the lowest roofline is compute-bound inside the band"


def test_cpu_roofline_is_not_labelled_hbm() -> None:
    pts = [
        Point(
            "matmul",
            "fp32",
            {"B": b, "D": 64, "F": 64},
            2.0 * b * 64 * 64,
            4.0 * (2 * b * 64 + 64 * 64),
            1e-5 * b,
            1e-5 * b,
            1e-5 * b,
            3,
            1,
        )
        for b in (1, 4, 16)
    ]
    copy = Point("copy", "fp32", {"n": 10**6}, 0.0, 8e6, 1e-3, 1e-3, 1e-3, 3, 1)
    m = MachineMeasurement(
        machine={"backend": "numpy", "device": "x86_64"},
        stream={"copy": copy},
        peak={"fp32": pts[-1]},
        sweep=pts,
        sweep_D=64,
    )
    fig, ax = plt.subplots()
    rl.plot_measurement(m, ax=ax)
    labels = [line.get_label() for line in ax.get_lines()]
    plt.close(fig)
    assert not any("HBM" in label for label in labels), labels
    assert any("DRAM" in label for label in labels), labels


def test_ici_and_dcn_compared_per_chip() -> None:
    text = _text("where-does-the-time-go")
    v5e = rl.get_accelerator("tpu-v5e")
    ici, dcn = v5e.links["ici"], v5e.links["dcn"]
    assert "14.4 times less" not in text
    per_chip = ici.bandwidth * ici.count / dcn.bandwidth
    assert f"{per_chip:.1f} times less than its ICI links together" in text
    assert f"{ici.bandwidth / dcn.bandwidth:.1f}" not in text


def test_capacity_as_google_prints_it() -> None:
    soup = _soup("where-does-the-time-go")
    text = " ".join(soup.select_one("article").get_text(" ").split())
    assert re.search(r'prints [“"] ?16 GB ?[”"]', text), "the page should quote Google's '16 GB'"
    assert "2026-11-23" in text
    assert soup.select_one('article a[href="https://cloud.google.com/tpu/docs/v5e"]') is not None
    assert f"{100 * (2**30 / 1e9 - 1):.1f} %" in text


# --- the knee figure -----------------------------------------------------------------------


def test_knee_figure_has_caption_and_alt_text() -> None:
    soup = _soup("measure-your-machine")
    figure = soup.select_one("figure#fig-measured-knee") or soup.find(id="fig-measured-knee")
    assert figure is not None, "the knee figure has no name/caption"
    caption = figure.find("figcaption")
    assert caption is not None and "B*" in caption.get_text()
    img = figure.find("img")
    alt = img.get("alt", "")
    assert len(alt) > 80 and not re.search(r"\.(png|svg|jpg)\b", alt), alt


def _synthetic_measurement(D: int = 256) -> MachineMeasurement:
    sizes = [1, 2, 4, 8, 16, 32, 64, 128]
    pts = []
    for b in sizes:
        flops, nbytes = 2.0 * b * D * D, 4.0 * (2 * b * D + D * D)
        seconds = max(flops / 1e11, nbytes / 2e10)
        pts.append(Point("matmul", "fp32", {"B": b, "D": D, "F": D}, flops, nbytes, seconds, seconds, seconds, 3, 1))
    copy = Point("copy", "fp32", {"n": 10**6}, 0.0, 2e10 * 1e-3, 1e-3, 1e-3, 1e-3, 3, 1)
    return MachineMeasurement(
        machine={"backend": "numpy"}, stream={"copy": copy}, peak={"fp32": pts[-1]}, sweep=pts, sweep_D=D
    )


def test_knee_roofline_bends_at_b_star() -> None:
    """The drawn roofline has a vertex at B*, computed here from T_math = T_comms, not at a sampled B."""
    D = 256
    m = _synthetic_measurement(D)
    P, W = m.peak_flops("fp32"), m.bandwidth("copy")
    # 2 B D^2 / P = 4 (2 B D + D^2) / W  =>  B* = 4 D^2 P / (2 D^2 W - 8 D P)
    b_star = 4 * D * D * P / (2 * D * D * W - 8 * D * P)
    assert 1 < b_star < 128 and b_star not in (1, 2, 4, 8, 16, 32, 64, 128)
    fig, ax = plt.subplots()
    rl.plot_measured_knee(m, ax=ax)
    line = next(li for li in ax.get_lines() if li.get_label() == "roofline from measured P, W")
    x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    plt.close(fig)
    i = int(np.argmin(abs(x - b_star)))
    assert x[i] == pytest.approx(b_star, rel=1e-9), "B* is not a vertex of the drawn line"
    assert y[i] == pytest.approx(P, rel=1e-9)
    assert y[i - 1] < P * (1 - 1e-6) and y[i + 1] == pytest.approx(P), "the line should bend exactly at B*"
    slope = np.diff(np.log(y[: i + 1])) / np.diff(np.log(x[: i + 1]))
    assert (slope > 0.5).all(), "left of B* the roofline rises"


# --- the knee and the plateau: said only when the sweep has them ------------------------------------------
# The branches are tried on synthetic sweeps; the built page is checked against the numbers it shows.


def _sentences():  # book/sentences.py, as the page imports it
    import sys

    sys.path.insert(0, str(BOOK))
    import sentences

    return sentences


def _sweep(times: dict[int, float], D: int = 256, peak: float = 1e11, bw: float = 2e10) -> MachineMeasurement:
    """A measurement whose matmul sweep took ``times[B]`` seconds at its fastest (the median twice that)."""
    pts = [Point("matmul", "fp32", {"B": b, "D": D, "F": D}, 2.0 * b * D * D, 4.0 * (2 * b * D + D * D), 2 * t, t,
                 4 * t, 5, 1) for b, t in times.items()]  # fmt: skip
    square = Point("matmul", "fp32", {"B": 1024, "D": 1024, "F": 1024}, 2.0 * 2**30, 12.0 * 2**20, 1, 2**31 / peak,
                   1, 5, 1)  # fmt: skip
    copy = Point("copy", "fp32", {"n": 10**6}, 0.0, bw * 1e-3, 1e-3, 1e-3, 1e-3, 5, 1)
    return MachineMeasurement(machine={}, stream={"copy": copy}, peak={"fp32": square}, sweep=pts, sweep_D=D)


def _roofline_times(extra: dict[int, float] | None = None, D: int = 256, peak: float = 1e11, bw: float = 2e10):
    """Each B's roofline time, max(2BD²/P, 4(2BD + D²)/W), plus ``extra[B]`` seconds."""
    sizes = [1, 2, 4, 8, 16, 32, 64, 128]
    return {b: max(2 * b * D * D / peak, 4 * (2 * b * D + D * D) / bw) + (extra or {}).get(b, 0.0) for b in sizes}


def test_the_steadiness_rule_the_page_states_is_the_one_it_applies() -> None:
    import inspect

    defaults = {k: v.default for k, v in inspect.signature(rl.sweep_shape).parameters.items()}
    text = _plain("measure-your-machine")
    rule = re.search(r"each size within (\d+)% of the best rate before it, and keeps (\d+)% of it or more", text)
    assert rule, "the page states the rule a sweep must pass before a knee is read"
    assert int(rule.group(1)) == round(100 * defaults["tolerance"]) and int(rule.group(2)) == round(
        100 * defaults["hold"]
    )


def test_a_sweep_on_its_roofline_gets_a_knee_and_a_plateau() -> None:
    said = _sentences().knee_paragraph(_sweep(_roofline_times()))
    assert re.fullmatch(r"reaches 80% of its plateau at B ≈ [\d.]+, [\d.]+ times the prediction", said["knee_sentence"])
    assert said["model_knee"].startswith("That ratio would not be 1") and said["knee_reason"].startswith("Here")
    assert said["sweep_caption"] == "As B grows, the matmul points climb towards the flat roof."


@pytest.mark.parametrize(
    ("slow", "words"),
    [
        (
            {32: 18, 64: 194, 128: 21},
            (
                "does not level off: at B = 128 it runs at only 11% of its best rate, reached at B = 64, and its "
                "timed runs spread from"
            ),
        ),  # 18, 194, 21
        ({2: 200}, "does not level off: at B = 4 it runs at only "),  # one early spike, never reached again
        ({16: 3}, "does not rise steadily: at B = 16 it runs at only "),  # one size slowed on the way up
    ],
)
def test_a_noisy_sweep_places_no_knee_and_no_plateau(slow: dict[int, float], words: str) -> None:
    times = _roofline_times()
    for b, gflops in slow.items():
        times[b] = 2.0 * b * 256 * 256 / (gflops * 1e9)
    said = _sentences().knee_paragraph(_sweep(times))
    assert said["knee_sentence"].startswith(words), said["knee_sentence"]
    assert said["knee_sentence"].endswith("too noisy to place a knee or a plateau")
    assert said["model_knee"] == "" and "idle machine" in said["knee_reason"]
    assert "do not climb steadily" in said["sweep_caption"]
    assert said["knee_left_cache"] == said["knee_left_matvec"] == "", "all below the roof, and B = 1 below B = 2"


# Synthetic sweeps in GFLOP/s, D = 2048, a 40 GB/s copy: the shapes a CPU's BLAS gives (OpenBLAS on a Zen 5 VM).
_CPU_D, _CPU_BW = 2048, 40e9


def _cpu_sweep(gflops: dict[int, float], spread: float = 0.02) -> MachineMeasurement:
    """A sweep at ``gflops[B]`` (fastest run), each size's median ``spread`` above its fastest, on a 40 GB/s copy."""
    D = _CPU_D
    pts = []
    for b, rate in gflops.items():
        flops, t = 2.0 * b * D * D, 2.0 * b * D * D / (rate * 1e9)
        pts.append(Point("matmul", "fp32", {"B": b, "D": D, "F": D}, flops, 4.0 * (2 * b * D + D * D),
                         t * (1 + spread), t, t * (1 + 2 * spread), 5, 1))  # fmt: skip
    copy = Point("copy", "fp32", {"n": 10**6}, 0.0, _CPU_BW * 1e-3, 1e-3, 1e-3, 1e-3, 5, 1)
    return MachineMeasurement(machine={}, stream={"copy": copy}, sweep=pts, sweep_D=D)


def _knee_by_hand(sizes: list[int], rates: list[float]) -> float:
    """80% of the best rate, log-log interpolation between the two sizes around it, written out again."""
    import math

    target = 0.8 * max(rates)
    i = next(i for i, r in enumerate(rates) if r >= target)
    b0, b1, r0, r1 = sizes[i - 1], sizes[i], rates[i - 1], rates[i]
    return math.exp(math.log(b0) + (math.log(target) - math.log(r0)) * math.log(b1 / b0) / math.log(r1 / r0))


def test_a_cache_fed_b1_point_is_left_out_and_the_knee_placed() -> None:
    """The build machine's sweep: B = 1 runs from the L3 (above the DRAM roof), B = 2 pays for packing.

    At B = 1 the intensity of [1, 2048] @ [2048, 2048] is 2·2048² / 4(2·2048 + 2048²) ≈ 0.4998 FLOPs/byte, so the
    40 GB/s roof allows 20.0 GFLOP/s; 84 GFLOP/s is 4.2 times that. Without it the sweep rises steadily, and its
    knee, 80% of 248 between B = 16 (181) and 32 (213), is about 23.7, not "too noisy".
    """
    rates = {1: 84, 2: 28, 4: 54, 8: 145, 16: 181, 32: 213, 64: 235, 128: 248}
    said = _sentences().knee_paragraph(_cpu_sweep(rates))
    roof1 = _CPU_BW * 2 * _CPU_D**2 / (4 * (2 * _CPU_D + _CPU_D**2))
    assert said["knee_left_cache"].startswith(f"The point at B = 1 is left out of the knee test: it ran "
                                            f"{84e9 / roof1:.1f} times faster than the main-memory roof allows")  # fmt: skip
    knee = _knee_by_hand([2, 4, 8, 16, 32, 64, 128], [28, 54, 145, 181, 213, 235, 248])
    assert round(knee, 1) == 23.7
    assert re.fullmatch(rf"reaches 80% of its plateau at B ≈ {knee:.1f}, [\d.]+ times the prediction",
                        said["knee_sentence"]), said["knee_sentence"]  # fmt: skip
    assert "noisy" not in " ".join(said.values())
    assert said["sweep_caption"].endswith("the points the knee test leaves out are named below.")


def test_a_matrix_vector_b1_point_is_left_out() -> None:
    """A B = 1 on the DRAM roof, but faster than B = 2: BLAS's gemv against its packing gemm; not noise."""
    rates = {1: 19.5, 2: 12, 4: 30, 8: 60, 16: 120, 32: 200, 64: 230, 128: 240}
    said = _sentences().knee_paragraph(_cpu_sweep(rates))
    assert said["knee_left_cache"] == ""
    assert said["knee_left_matvec"] == (
        f"The point at B = 1 is left out of the knee test: its FLOPs/s were {19.5 / 12:.1f} times those of B = 2. "
        "At B = 1 BLAS runs its matrix–vector routine; from B = 2 on it runs the matrix–matrix one, which first "
        "copies the weights into the layout its kernel reads (packing, see below)."
    )
    knee = _knee_by_hand([2, 4, 8, 16, 32, 64, 128], [12, 30, 60, 120, 200, 230, 240])
    assert f"B ≈ {knee:.1f}," in said["knee_sentence"], said["knee_sentence"]
    both = _sentences().knee_paragraph(_cpu_sweep({**rates, 1: 84, 2: 28}))  # B = 1 above the roof: cache-fed
    assert both["knee_left_cache"].startswith("The point at B = 1 is left out of the knee test: it ran")
    assert both["knee_left_matvec"] == "", "B = 1 is named once"
    # a cache-fed B = 4 and a matrix-vector B = 1 (faster than B = 2): two sentences, each its own glued value
    two = _sentences().knee_paragraph(_cpu_sweep({**rates, 4: 120}))
    assert two["knee_left_cache"].startswith("The point at B = 4 is left out of the knee test: it ran")
    assert two["knee_left_matvec"].startswith("The point at B = 1 is left out too: its FLOPs/s were")


def test_a_dip_whose_runs_agree_is_not_called_noise() -> None:
    """The same slow size run after run (spread 2%) is a cost at that size; with a 50% spread it is interference."""
    rates = {1: 10, 2: 20, 4: 40, 8: 80, 16: 40, 32: 200, 64: 230, 128: 240}
    steady = _sentences().knee_paragraph(_cpu_sweep(rates, spread=0.02))
    assert steady["knee_sentence"].startswith("does not rise steadily: at B = 16 it runs at only 50% of its rate at "
                                              "B = 8, a smaller size. Its median timed run is within 2% of its fastest")  # fmt: skip
    assert "noisy" not in steady["knee_sentence"] and "tells the two apart" in steady["knee_reason"]
    noisy = _sentences().knee_paragraph(_cpu_sweep(rates, spread=0.5))
    assert noisy["knee_sentence"].endswith("so this run is too noisy to place a knee or a plateau")
    assert "idle machine" in noisy["knee_reason"]
    for said in (steady, noisy):
        assert said["model_knee"] == "" and "do not climb steadily" in said["sweep_caption"]


def test_the_knee_figure_marks_the_points_left_out() -> None:
    fig, ax = plt.subplots()
    rl.plot_measured_knee(_cpu_sweep({1: 84, 2: 28, 4: 54, 8: 145, 16: 181, 32: 213, 64: 235, 128: 248}), ax=ax)
    lines = {li.get_label(): li for li in ax.get_lines()}
    plt.close(fig)
    assert list(lines["left out of the knee test"].get_xdata()) == [1]
    assert any(label.startswith("measured knee ≈ 23.7") for label in lines), list(lines)


def test_a_late_bend_is_put_down_to_fixed_costs_only_when_they_fit() -> None:
    """A fixed cost takes microseconds: 50 µs a call is one, 5 ms at the small sizes is not."""
    sentences = _sentences()
    fixed = sentences.knee_paragraph(_sweep(_roofline_times({b: 50e-6 for b in (1, 2, 4, 8, 16, 32, 64, 128)})))
    assert re.fullmatch(r"The sweep bends later than the model: at \d of the sizes below the knee it runs under 80% "
                        r"of its roof, each at most 50 µs slower than its roofline time, the size of a call's fixed "
                        r"costs \(see below\)\.", fixed["knee_reason"]), fixed["knee_reason"]  # fmt: skip
    gap = sentences.knee_paragraph(_sweep(_roofline_times({b: 5e-3 for b in (1, 2, 4, 8)})))
    assert gap["knee_reason"].startswith(
        "The sweep bends later than the model: at 4 of the sizes below the knee it "
        "runs under 80% of its roof, up to 5.0 ms slower"
    ), gap["knee_reason"]
    assert "too long for a call's fixed costs" in gap["knee_reason"]


def _shown_sweep() -> list[dict[str, float]]:
    rows = _table("GFLOP/s (fastest run)")
    assert rows, "the measure page shows its sweep in a table"
    out = []
    for r in rows:
        fastest = float(r["times (fastest, median, slowest)"].split(",")[0])
        out.append({"B": int(r["B"]), "rate": float(r["GFLOP/s (fastest run)"]),
                    "roof": float(r["roofline (GFLOP/s)"]), "ms": fastest})  # fmt: skip
    return out


def _kept_rows(rows: list[dict[str, float]]) -> tuple[list[dict[str, float]], bool]:
    """The shown sweep less the points the knee test leaves out, by the rule the page states; and whether a rate
    lies within a percent of a threshold, where rounding may put it either side."""
    best = max(r["rate"] for r in rows)
    fed = [r for r in rows if r["rate"] > 1.05 * r["roof"] and r["rate"] < best]
    borderline = any(abs(r["rate"] / r["roof"] - 1.05) < 0.01 for r in rows)
    kept = [r for r in rows if r not in fed]
    if len(kept) >= 2 and (kept[0]["B"], kept[1]["B"]) == (1, 2):
        borderline |= abs(kept[1]["rate"] / kept[0]["rate"] - 0.85) < 0.01
        if kept[1]["rate"] < 0.85 * kept[0]["rate"]:
            kept = kept[1:]
    return kept, borderline


def test_the_knee_sentence_agrees_with_the_sweep_it_shows() -> None:
    rows, knee, caption = _shown_sweep(), _glued("knee_sentence"), _glued("sweep_caption")
    kept, borderline = _kept_rows(rows)
    left_out = " ".join(t for t in (_glued("knee_left_cache"), _glued("knee_left_matvec")) if t)
    if not borderline:
        assert bool(left_out) == (len(kept) < len(rows)), (left_out, rows)
        for r in rows:
            if r not in kept:
                assert f"B = {r['B']}" in left_out or "between B = " in left_out, (left_out, r)
    sizes, rates = [r["B"] for r in kept], [r["rate"] for r in kept]
    shape = rl.sweep_shape(sizes, rates)
    best = max(rates)
    # a share within a percent of a threshold may fall either side once rounded: then either sentence is right
    shares = [r / max(rates[: i + 1]) for i, r in enumerate(rates)] + [r / best for r in rates]
    borderline |= any(abs(x - t) < 0.01 for x in shares for t in (0.85, 0.8))
    unsteady = re.fullmatch(r"does not (rise steadily|level off): at B = (\d+) it runs at only (\d+)% of its (?:best )?"
                            r"rate(?:, reached)? at B = (\d+)(?:, a smaller size)?[.,] .*(too noisy to place a knee or "
                            r"a plateau|cannot be placed on a curve that does not rise to one)", knee)  # fmt: skip
    if not borderline:
        assert bool(unsteady) == (shape.problem in ("dip", "drop")), (knee, shape)
    if unsteady:
        b, pct, ref = int(unsteady.group(2)), int(unsteady.group(3)), int(unsteady.group(4))
        shown = dict(zip(sizes, rates))
        assert abs(100 * shown[b] / shown[ref] - pct) <= 0.5 + 100 * 0.05 / shown[ref] + 1e-9, (knee, shown)
        # noisy only when that size's own runs spread: its median more than 10% above its fastest
        times = next(r for r in _table("GFLOP/s (fastest run)") if int(r["B"]) == b)["times (fastest, median, slowest)"]
        fastest, median = (float(t) for t in times.replace(" ms", "").split(",")[:2])
        if abs(median / fastest - 1.10) > 0.02:
            assert ("too noisy" in knee) == (median > 1.10 * fastest), (knee, times)
        assert "do not climb steadily" in caption
        text = _plain("measure-your-machine")
        assert "80% of its plateau at" not in text and "That ratio would not be 1" not in text
        assert _glued("model_knee") == ""
        return
    assert caption.startswith("As B grows") or "too few sizes" in caption
    at = re.fullmatch(r"reaches 80% of its plateau at B ≈ ([\d.]+), ([\d.]+) times the prediction(?:;.*)?", knee)
    if at:  # the knee, recomputed from the rounded rates the page shows
        assert float(at.group(1)) == pytest.approx(rl.knee_batch_size(sizes, rates), rel=0.02)


def test_fixed_costs_are_offered_only_when_the_gap_is_microseconds() -> None:
    reason = _glued("knee_reason")
    slow = [r for r in _kept_rows(_shown_sweep())[0] if r["rate"] < 0.8 * r["roof"]]
    # each slow size's time beyond its roofline time: its fastest run's, less the roofline's share of it
    gaps = [r["ms"] * 1e3 * (1 - r["rate"] / r["roof"]) for r in slow]  # µs
    fixed = re.search(r"each at most (\d+) µs slower than its roofline time, the size of a call's fixed costs", reason)
    longer = re.search(r"up to ([\d.]+) ms slower than its roofline time\. That is too long", reason)
    if fixed:
        assert max(gaps) <= 100 + 10, gaps  # the rounding of the times shown
    if longer:
        assert max(gaps) >= 100 - 10, gaps
    bullet = _plain("measure-your-machine")
    assert "a call that takes microseconds no matter the size" not in bullet


def test_point_above_the_roof_is_explained() -> None:
    text = _text("measure-your-machine")
    assert any(
        s in text
        for s in ("One point sits above the roof", "points sit above the roof;", "No point of the sweep sits above")
    )
    assert "a point above it is being fed from a cache" in text


# --- answers shown before the problems -------------------------------------------------------


_H100 = re.compile(r"\bH100\b(?! PCIe| NVL)|\bh100(?:-sxm)?\b(?!-)")
_RIDGE = re.compile(r"\bridge\b|critical (?:batch|intensity)", re.I)
_SIDE = re.compile(r"\b(?:left|right) of (?:the|its) ridge")
_SHAPE = re.compile(r"\bB\s*=\s*\d+")
_RELATIVE = re.compile(r"\b(?:doubled|halved|tripled)\b")
_H100_FIGURES = re.compile(
    r"(\w+)\s*,\s*(\w+)\s*=\s*(\w+)\.peak\(\"bf16\"\)\s*,\s*\3\.(?:hbm_bandwidth|bandwidth\(\"hbm\"\))"
)


def _reading_units(page: str) -> list[str]:
    """What a reader takes in as one piece: each sentence of the prose, each figure's alt text and each code cell
    with its output and caption. (An alt text is not in the page's text, yet a screen reader reads it.)"""
    art = _soup(page).select_one("article")
    units = [" ".join(img["alt"].split()) for img in art.select("img[alt]")]
    units += [" ".join(cell.get_text(" ").split()) for cell in art.select("div.cell")]
    for tag in art.select("p, li, figcaption"):
        if tag.find_parent("div", class_="cell") is None:
            units += re.split(r"(?<=[.!?])\s+(?=[A-Z])", " ".join(tag.get_text(" ").split()))
    return units


def _h100_bindings(page: str) -> list[tuple[str, str]]:
    """Names the page's code binds to the H100's bf16 peak and HBM bandwidth: ``P, W = h100.peak("bf16"), ...``."""
    source = (BOOK / f"{page}.md").read_text(encoding="utf-8")
    return [(p, w) for p, w, chip in _H100_FIGURES.findall(source)
            if re.search(rf"\b{chip}\s*=\s*(?:xla\.accelerator|rl\.get_accelerator\(\"h100-sxm\"\))", source)
            or re.search(rf"\b{chip}\b[\w, ]*=\s*xla\.accelerator", source)]  # fmt: skip


def _ridge_leaks(units: list[str], bindings: list[tuple[str, str]]) -> list[str]:
    """Where a unit gives away the H100's ridge without printing it (Question 5's answer).

    Three ways: a ridge stated relative to another chip's ("nearly doubled from 153"), a given shape placed on a
    side of the H100's ridge ("B = 256 ... left of the ridge"), and shown code that divides the H100's peak by its
    bandwidth.
    """
    found = []
    for unit in units:
        if _H100.search(unit) and _RIDGE.search(unit):
            if _RELATIVE.search(unit) and re.search(r"\d", unit):
                found.append(f"a ridge relative to another chip's: {unit[:90]!r}")
            if _SIDE.search(unit) and _SHAPE.search(unit):
                found.append(f"a shape placed on a side of the ridge: {unit[:90]!r}")
        for peak, bandwidth in bindings:
            if re.search(rf"\b{peak}\s*/\s*{bandwidth}\b", unit):
                found.append(f"code divides the H100's {peak} by its {bandwidth}: {unit[:90]!r}")
    return found


def test_h100_ridge_not_in_chapters_before_the_problems() -> None:
    from answer_key import H100_SXM_DENSE, H100_SXM_HBM, numbers_in, reveals

    answers = {"critical_batch": H100_SXM_DENSE / H100_SXM_HBM, "critical_batch (book)": 298}
    pages = _toc_pages()
    found = []
    for page in pages[: pages.index("problems")]:
        units = _reading_units(page)
        alts = [" ".join(img["alt"].split()) for img in _soup(page).select("article img[alt]")]
        for key, answer in answers.items():
            for expr, value in numbers_in(" ".join([_text_without_measurements(page), *alts])):
                if reveals(expr, value, answer):
                    found.append(f"{page}: {key} shown as {expr!r}")
        found += [f"{page}: {leak}" for leak in _ridge_leaks(units, _h100_bindings(page))]
    assert found == []


def test_the_ridge_search_can_fail() -> None:
    from answer_key import H100_SXM_DENSE, H100_SXM_HBM, numbers_in, reveals

    answer = H100_SXM_DENSE / H100_SXM_HBM
    assert any(reveals(e, v, answer) for e, v in numbers_in("ridge at 295.4 FLOPs/byte"))
    # what the chapters once said, each giving the answer away without printing it
    said = [
        (
            "Within each maker's line the ridge climbs: from the A100 to the H100 the bf16 peak grew 3.2 times and HBM "
            "bandwidth only 1.6 times, so the ridge nearly doubled from 153.0 FLOPs/byte."
        ),
        (
            "Log-log roofline of the NVIDIA H100 SXM for dense bf16 with HBM bandwidth. A single marked point shows the "
            "matmul with B = 256 and D = F = 8192, just left of the ridge point."
        ),
        "best = xla.best() # the fastest shape measured ridge = P / W near = max((p for p in xla.points))",
    ]
    assert len(_ridge_leaks(said, [("P", "W")])) == 3
    assert _h100_bindings("beyond-the-roofline") == [("P", "W")], "the binding the code check looks for"


def test_question_3_does_not_state_question_2s_bytes() -> None:
    soup = _soup("problems")
    statement = soup.find(id="q3-roofline-plot")
    assert statement is not None
    words = " ".join(statement.get_text(" ").split())
    assert "2BD + DF + 2BF" not in words and "2BD+DF+2BF" not in words.replace(" ", "")
    assert "each operand at its own width" in words


def test_question_4_compares_int8_with_int8_ridges() -> None:
    text = _text("problems")
    lowest = min(
        (a.peak("int8") / a.bandwidth("hbm"), a.name) for a in rl.ACCELERATORS.values() if "int8" in a.peak_flops
    )
    assert f"{lowest[0]:.1f} OPs/byte ( {lowest[1]} )" in text or f"{lowest[0]:.1f} OPs/byte ({lowest[1]})" in text
    assert "(fp32)" not in text


# --- errata ----------------------------------------------------------------------------------


def _q3_crossovers() -> tuple[float, float, float]:
    P, W = 1.97e14, 8.2e11

    def crossover(n: int) -> float:  # 2Bn^2 / P = (2Bn + n^2 + 2Bn) / W
        return n * n * P / (2 * n * n * W - 4 * n * P)

    return crossover(4096), crossover(1024), P / W / 2


def test_almost_double_has_both_readings() -> None:
    big, small, rule = _q3_crossovers()
    for page in ("errata", "problems"):
        text = _text(page)
        assert f"{round(small)} / {round(rule)} = {round(small) / round(rule):.2f}" in text, page
        assert f"{round(small)} / {round(big)} = {round(small) / round(big):.2f}" in text, page


def test_noise_entries_dropped() -> None:
    text = _text("errata")
    assert "around 3" not in text
    assert "cut off, not rounded" not in text
    assert "around 3" not in _text("where-does-the-time-go")


def test_missed_errata_added() -> None:
    text = _text("errata")
    assert "quantized *activations*" in " ".join((BOOK / "errata.md").read_text().split())
    assert f"{512 * 4096 // 128:,}" in text and "1024" in text
    nvl = rl.chip_critical_batch_size("h100-nvl")
    assert re.search(rf"B\s*>\s*(\\\))?\s*{int(nvl)}\b", text) and "H100 NVL" in text
    assert f"{round(1.97e14 / 8.1e11) / 2:g}" in text
    assert "peak divided by the HBM bandwidth" in text


# --- for the self-study reader ---------------------------------------------------------------


def test_one_ridge_number_said_once_which_is_which() -> None:
    errata = _text("errata")
    v5e = rl.get_accelerator("tpu-v5e")
    variants = [
        1.97e14 / 8.2e11,
        1.97e14 / 8.1e11,
        v5e.peak("bf16") / v5e.bandwidth("hbm"),
        v5e.peak("int8") / v5e.bandwidth("hbm") / 2,
    ]
    assert "One quantity, six numbers" in errata
    for value in variants:
        assert f"{value:.1f}" in errata, value
    # the chapters that work the book's arithmetic show only the rounded number (a list of chips
    # from the spec table shows each chip's vendor-figure ridge, as the intro says)
    for page in ("where-does-the-time-go", "network-rooflines"):
        text = _text(page)
        for value in variants:
            assert f"{value:.1f}" not in text, (page, value)


def test_question_1_answer_not_before_the_problems() -> None:
    """The list of versions lives on the errata page, after the problems: two of them answer Question 1."""
    from answer_key import numbers_in, reveals

    answers = {"critical_batch": 3.94e14 / 8.1e11 / 2, "critical_batch (book)": 243}
    pages = _toc_pages()
    found = [
        f"{page}: {key} shown as {expr!r}"
        for page in pages[: pages.index("problems")]
        for key, answer in answers.items()
        for expr, value in numbers_in(_text_without_measurements(page))
        if reveals(expr, value, answer)
    ]
    assert found == []


def test_sharded_and_replica_defined_before_the_matmul_chapter() -> None:
    soup = _soup("where-does-the-time-go")
    strong = {s.get_text() for s in soup.select("article strong")}
    assert {"sharded", "replica", "per-replica batch"} <= strong


def test_blas_stream_and_last_level_cache_explained() -> None:
    text = _text("measure-your-machine")
    first = {word: text.index(word) for word in ("BLAS", "STREAM", "last-level cache")}
    assert "Basic Linear Algebra Subprograms" in text[first["BLAS"] : first["BLAS"] + 200]
    assert "memory-bandwidth benchmark" in text[first["STREAM"] : first["STREAM"] + 200]
    assert "largest and slowest of the processor's caches" in text[first["last-level cache"] :][:200].replace("’", "'")


def test_2_4_sparsity_explained_where_it_first_appears() -> None:
    for page in _toc_pages():
        text = _text(page)
        if "2:4" in text:
            assert "two of every four consecutive weights are zero" in text, page
            return
    pytest.fail("no page mentions 2:4 sparsity")


def test_fp8_where_formats_are_compared() -> None:
    assert "fp8" in _text("where-does-the-time-go")
    problems = _text("problems")
    assert "Weights in fp8" in problems and "same threshold" in problems
    assert "fp8 matmul moves the same bytes" in problems
    same = [a.name for k, a in rl.ACCELERATORS.items() if k.startswith("h100") and a.peak("fp8") == a.peak("int8")]
    assert same and all(name in problems for name in same)
    assert "fp8 peak" in _text("accelerator-specs")


def test_spec_appendix_says_what_google_prints() -> None:
    text = _text("accelerator-specs")
    assert "in the unit its vendor lists" not in text
    assert re.search(r"the v5e page: [“\"]16 GB[”\"]", text)


def test_intro_accounts_for_the_vendor_ridge_in_chip_lists() -> None:
    """240.5 is printed in the chip lists of two chapters; "How numbers are shown" (on the errata page, linked
    from the intro) says where, and where the others are."""
    vendor = f"{1.97e14 / 8.19e11:.1f}"
    assert vendor in _text("matrix-multiplication")
    shown = _text("errata")
    assert f"and {vendor} where a list of chips from the spec table" in shown
    assert "The folded box lists all six" in shown
    assert _soup("intro").select_one('article a[href="errata.html#how-numbers-are-shown"]') is not None


# --- a second instructor's read --------------------------------------------------------------


def _plain(page: str) -> str:
    """:func:`_text` with typographic quotes made plain, so a test can quote the source's ' and "."""
    return _text(page).translate(str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"'}))


def test_the_decimal_reading_is_smaller_by_the_right_share() -> None:
    """10^9 is 6.9 % less than 2^30; the GiB figure is 7.4 % more than the GB one. Each sentence says the one it means."""
    text = _plain("where-does-the-time-go")
    assert f"would come out {100 * (1 - 1e9 / 2**30):.1f} % too small" in _plain("practice")  # the self-check
    assert not re.search(r"falls \S+ % short", text)
    assert "without saying which gigabyte it means" in text.split("NVIDIA's H100 page prints", 1)[1][:80]


def test_capacity_wording_is_one_convention_everywhere() -> None:
    # the v5e is not in Google's comparison table: only the table's unit carries over to it
    assert "comparison table gives the same capacities" not in _plain("where-does-the-time-go")
    for page in ("where-does-the-time-go", "real-model-real-chips", "long-context", "accelerator-specs", "summary"):
        text = _text(page)
        assert "misread" not in text, page
        assert "Google lists" not in text, page
    specs = _soup("accelerator-specs")
    headers = [th.get_text(" ", strip=True) for th in specs.select("article th")]
    assert "HBM capacity, as printed" in headers
    v5e = rl.get_accelerator("tpu-v5e")
    assert "printed as '16 GB'" in v5e.source_of("hbm_capacity")
    assert "printed as '16 GB'" in _plain("accelerator-specs")
    text = _plain("accelerator-specs")
    assert "Every vendor's page prints" not in text  # the v4 page and the comparison table give GiB
    sentence = text[text.index("Google's pages differ") :][:300]
    assert "its TPU comparison table and its v4 page give GiB" in sentence
    assert 'its v5e, v5p and v6e pages print "GB"' in sentence
    assert re.search(r"\(\d+ GiB\)", rl.get_accelerator("tpu-v4").source_of("hbm_capacity"))  # what the sentence says
    for key in ("tpu-v5e", "tpu-v5p", "tpu-v6e"):
        assert re.search(r"print(?:s|ed as) '\d+ GB'", rl.get_accelerator(key).source_of("hbm_capacity")), key
    capstone = _plain("real-model-real-chips")
    assert re.search(r"prints \" ?16 GB ?\", which the course reads as 16 GiB", capstone)


def test_question_6_section_says_what_its_hidden_checks_run() -> None:
    from q6_support import hidden_helpers

    models, chips = hidden_helpers()["_hidden_cases"]()  # type: ignore[operator]
    published = {
        name: m
        for name, m in rl.MODELS.items()
        if any(c["hidden"] == m.hidden and c["mlp"] == m.mlp and c["layers"] == m.layers for c in models)
    }
    assert {"llama-3-8b", "llama-3-70b", "qwen2.5-7b"} <= set(published)
    assert any(c["tied_embeddings"] for c in models)
    table = [(a.peak("bf16"), a.bandwidth("hbm"), a.hbm_capacity) for a in rl.ACCELERATORS.values()]
    for chip in chips:  # every hidden chip is a row of the spec table
        assert any(
            np.isclose(chip["peak_flops"], p, rtol=1e-3)
            and np.isclose(chip["hbm_bandwidth"], b, rtol=1e-3)
            and np.isclose(chip["hbm_capacity"], c, rtol=1e-3)
            for p, b, c in table
        ), chip
    text = _plain("long-context")
    section = text[text.index("Question 6 turns both parts of the capstone into code") :][:700]
    assert "published models (Llama 3, Qwen2.5)" in section
    assert "a model with tied embeddings" in section and "chips from the spec table" in section
    assert "weights in bf16, int8 and int4" in section


def test_decode_time_flat_in_batch_only_for_short_contexts() -> None:
    text = _plain("real-model-real-chips")
    llama = rl.MODELS["llama-3-8b"]
    kv_per_token = 2 * llama.layers * llama.kv_heads * llama.head_dim * 2  # keys and values, bf16
    weights_read = 2 * (llama.params - llama.vocab * llama.hidden)  # bf16, all but the embedding table
    many = int(
        re.search(r"at \\\(B = 1\\\) and at \\\(B =\\\) (\d+) alike, while the conversations are short", text).group(1)
    )
    tenth = int(0.1 * weights_read / (many * kv_per_token))
    assert f"At {tenth} tokens of context the {many} caches add a tenth to the bytes of a step" in _plain(
        "long-context"
    )


def test_every_matmul_of_a_layer_needs_a_larger_batch_than_the_model() -> None:
    text = _plain("real-model-real-chips")
    assert "counts the weight bytes only" in text
    assert "gives every matmul its own critical batch, above the model's" in text


def test_summary_rounds_thresholds_the_safe_way() -> None:
    """D > 8755.6 holds from D = 8756 on: the table gives that whole D with ≥, not a rounded D with >."""
    text = _plain("summary")
    d_star = 2 * 1.97e14 / 4.5e10  # bf16 partial sums over one one-way v5e ICI link, the book's figures
    assert re.search(rf"D \\ge\\?\)? ?{int(d_star) + 1}\b", text), "the 2-chip threshold as the first whole D"
    assert not re.search(rf"D >\\?\)? ?{round(d_star)}\b", text)
    llama = rl.MODELS["llama-3-8b"]
    kv_per_token = 2 * llama.layers * llama.kv_heads * llama.head_dim * 2  # keys and values, bf16
    # an H100 SXM reports 81,559 MiB; whole tokens only: a part-token does not fit
    tokens = (81_559 * 2**20 - 2 * llama.params) / kv_per_token
    assert f"an H100 holds at most {int(tokens):,} tokens of it" in text  # the whole reported capacity: at most


def test_pages_after_the_problems_warn_before_they_show_answers() -> None:
    """A page placed after the problems that prints a fixed answer of one says so at its top."""
    from answer_key import FIXED, numbers_in, reveals

    pages = _toc_pages()
    revealing, warned = [], []
    for page in pages[pages.index("problems") + 1 :]:
        text = _text(page)
        shown = [
            key
            for fixed in FIXED.values()
            for key, answer in fixed.items()
            if not (float(answer).is_integer() and abs(answer) < 100)
            and any(reveals(e, v, answer) for e, v in numbers_in(text))
        ]
        if shown:
            revealing.append(page)
            notice = _soup(page).select_one("article div.answers-ahead")
            assert notice is not None, f"{page} shows {shown} without an 'Answers ahead' notice"
            assert text.index("Answers ahead") < 200, f"{page}: the notice is not at the top"
            warned.append(page)
    assert {"real-model-real-chips", "long-context", "summary", "accelerator-specs", "errata"} <= set(warned)
    for page in set(pages[pages.index("problems") + 1 :]) - set(revealing):
        assert _soup(page).select_one("article div.answers-ahead") is None, f"{page} warns of answers it does not show"


def test_question_3_notebook_does_not_state_question_2s_bytes() -> None:
    import nbformat

    for folder in ("solutions", "exercises"):
        nb = nbformat.read(ROOT / folder / "rooflines" / "q3_roofline_plot.ipynb", as_version=4)
        prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert "2BD + DF + 2BF" not in prose.replace("$", ""), folder
        assert "each at its own width" in prose, folder


def test_dot_products_above_the_roof_are_counted_not_assumed() -> None:
    text = _plain("measure-your-machine")
    assert "only the long ones, well past the last-level cache, sit on it" not in text
    assert re.search(r"In this run (every|no|\d+ of the \d+) dot product", text)


def test_terms_are_linked_where_they_are_first_used() -> None:
    """kernel, tokens, activations and DRAM in Chapter 1, tensor cores in Chapter 2: each word's first use links
    to its glossary entry (the first occurrence of the word in the page's prose is inside the link)."""
    from docutils.nodes import make_id

    for page, words in (("where-does-the-time-go", {"kernel": "kernel (compute)", "token": "token",
                                                    "activations": "activations", "DRAM": "DRAM"}),
                        ("visualizing-rooflines", {"tensor core": "Tensor Core"})):  # fmt: skip
        art = _soup(page).select_one("article")
        for tag in art.select("div.cell, pre, .math"):
            tag.decompose()
        text = " ".join(art.get_text(" ").split())
        for word, term in words.items():
            link = art.select_one(f'a[href="glossary.html#term-{make_id(term)}"]')
            assert link is not None, f"{page}: no link to the glossary's {term!r}"
            first = re.search(rf"\b{re.escape(word)}", text, re.I)
            linked = " ".join(link.get_text(" ").split())
            assert first and text[first.start() :].startswith(linked), f"{page}: {word!r} is used before its link"


def test_the_glossary_has_the_terms_the_capstone_and_the_chapters_use() -> None:
    text = _plain("glossary")
    for term in ("kernel (compute)", "DRAM", "tensor parallelism", "all-reduce", "Tensor Core"):
        assert term in text, term
    assert "kernel (GPU program)" not in text, "a kernel runs on TPUs and CPUs too"
    row = text[text.index("kernel (compute)") :][:400]
    assert "TPU" in row and "CPU" in row and "one operation" in row, row


def test_drill_2_reads_what_the_capstone_says_a_step_reads() -> None:
    """Both pages count a step's bytes as rl.forward_bytes does: every weight but the input embedding table."""
    from book_support import glued

    drill, capstone = dict(glued("practice")), dict(glued("real-model-real-chips"))
    assert drill["d2_gb"] == capstone["read8_gb"]
    assert "except the" in _plain("practice") and "input embedding table" in _plain("practice")


def test_glossary_defines_what_the_review_asked_for() -> None:
    text = _plain("glossary")
    for term in ("fp8", "int4", "GiB / GB", "per-replica batch", "exact critical batch size", "BLAS", "STREAM",
                 "last-level cache"):  # fmt: skip
        assert term in text, term
    fp8 = [a for a in rl.ACCELERATORS.values() if "fp8" in a.peak_flops]
    assert fp8 and all(1.9 <= a.peak("fp8") / a.peak("bf16") <= 2.1 for a in fp8)  # "about twice their bf16 peak"
    assert f"about {round(100 * (1 - 1e9 / 2**30))}% less" in text


def test_vpu_erratum_credits_the_source_for_naming_the_chip() -> None:
    text = _plain("errata")
    assert "switches to the v5p" not in text
    assert "names the VPU of the TPU v5p" in text


def test_the_cache_sentence_agrees_with_its_numbers() -> None:
    """The copy's arrays against the machine's last-level cache: the sentence the sizes call for."""
    text = _plain("measure-your-machine")
    larger = re.search(r"The copy's two arrays take (\d+) MiB, more than the (\d+) MiB last-level cache", text)
    fits = re.search(
        r"The copy's two arrays take (\d+) MiB, and this machine reports a last-level cache of (\d+) MiB", text
    )
    unknown = "does not report the size of its last-level cache" in text
    assert sum(map(bool, (larger, fits, unknown))) == 1
    if larger:
        assert int(larger.group(1)) >= int(larger.group(2))  # both rounded to a MiB: equal is possible
    if fits:
        assert int(fits.group(1)) <= int(fits.group(2))


def test_the_knee_is_compared_with_the_models_own_knee() -> None:
    """A perfect fit reaches 80% of the roof before B*, not at it: the page says where, and uses that."""
    text = _plain("measure-your-machine")
    assert "a ratio near 1 would be a perfect fit" not in text
    b_pred = float(re.search(r"the model predicts \\\(B\^\* \\approx\\\) ([\d.]+)", text).group(1))
    if "too noisy to place a knee or a plateau" in text:  # no measured knee to compare (the test above)
        assert "the model's own curve" not in text
        return
    own = re.search(
        r"the model's own curve at these sizes reaches 80% of the roof at B ≈ ([\d.]+), ([\d.]+) times B\*", text
    )
    assert own, "the model's own knee is not stated"
    b_model, ratio = float(own.group(1)), float(own.group(2))
    assert b_model < b_pred
    # The page divides unrounded values and shows B's to 0.1 and the ratio to 0.01; whatever this machine
    # measured, the ratio must lie in what the rounded B's allow, widened by the ratio's own rounding.
    assert _rounded_quotient_allows(ratio, b_model, b_pred, shown=0.05, ratio_shown=0.005)


def _rounded_quotient_allows(ratio: float, num: float, den: float, *, shown: float, ratio_shown: float) -> bool:
    """Whether ``ratio`` (rounded to ±``ratio_shown``) can be num/den for values rounded to ±``shown``.

    >>> _rounded_quotient_allows(0.80, 15.4, 19.4, shown=0.05, ratio_shown=0.005)  # 15.4/19.4 = 0.794
    True
    >>> _rounded_quotient_allows(0.85, 15.4, 19.4, shown=0.05, ratio_shown=0.005)
    False
    """
    low, high = (num - shown) / (den + shown), (num + shown) / (den - shown)
    return low - ratio_shown <= ratio <= high + ratio_shown


def test_last_level_cache_read_from_sysfs(tmp_path: Path) -> None:
    from rooflinelib.measure.system import last_level_cache_bytes

    for i, (level, size) in enumerate([(1, "32K"), (1, "32K"), (2, "1M"), (3, "36608K")]):
        (tmp_path / f"index{i}").mkdir()
        (tmp_path / f"index{i}" / "level").write_text(f"{level}\n")
        (tmp_path / f"index{i}" / "size").write_text(f"{size}\n")
    assert last_level_cache_bytes(tmp_path) == 36608 * 1024
    (tmp_path / "index3" / "size").write_text("garbage\n")
    assert last_level_cache_bytes(tmp_path) is None
    assert last_level_cache_bytes(tmp_path / "nowhere") is None


# --- the memory hierarchy: what the page says agrees with the tables it computed -------------------------
# The page measures the machine that builds it, so nothing here expects a value: each check compares one place
# of the page with another, allowing for the rounding of each figure as displayed.

_PLAIN = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"'})


def _glued(key: str) -> str:
    from book_support import glued

    return dict(glued("measure-your-machine"))[key].translate(_PLAIN)


def _table(header: str) -> list[dict[str, str]] | None:
    """The rows of the measure page's table that has a column named ``header``; ``None`` if the page has none."""
    for table in _soup("measure-your-machine").select("article table"):
        heads = [" ".join(th.get_text().split()) for th in table.select("thead th")]
        if header in heads:
            rows = table.select("tbody tr")
            return [dict(zip(heads, (" ".join(td.get_text().split()) for td in tr.select("td")))) for tr in rows]
    return None


def _bytes(text: str) -> float:
    """ "48 KiB", "1.5 MiB" as the page writes sizes (three significant figures), in bytes."""
    number, unit = text.split()
    return float(number) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[unit]


def _within(shown: float, value: float, half_unit: float) -> bool:
    return abs(shown - value) <= half_unit * (1 + 1e-9)


def test_the_staircase_sentences_agree_with_the_level_table() -> None:
    rows = _table("working sets used")
    note, main, steps = _glued("cache_note"), _glued("stair_main"), _glued("stair_steps")
    if rows is None:
        assert "does not report its caches" in note and main.startswith("Without the caches' sizes")
        return
    sizes = {r["level"]: _bytes(r["size"]) for r in rows if r["size"] != "–"}
    bw = {r["level"]: float(r["GB/s (one core)"]) for r in rows if r["GB/s (one core)"] != "–"}
    assert list(sizes) == [f"L{i}" for i in range(1, len(sizes) + 1)] and rows[-1]["level"] == "DRAM"
    # the caches named in prose are the table's (sizes: whole KiB in prose, three figures in the table)
    kib = re.search(r"an L1 of (\d+) KiB and an L2 of (\d+) KiB per core", note)
    assert kib, note
    for level, shown in zip(("L1", "L2"), kib.groups()):
        assert sizes[level] == pytest.approx(int(shown) * 1024, rel=5e-3), (level, shown)
    last = re.search(r"last-level cache \(L(\d)\) of ([\d.]+) MiB", note)
    if len(sizes) >= 3:
        assert last and f"L{last.group(1)}" == list(sizes)[-1]
        assert sizes[f"L{last.group(1)}"] == pytest.approx(float(last.group(2)) * 2**20, rel=5e-3)
    # the main sentence: the fastest measured cache and main memory, their ratio and main memory against the copy
    measured = [r["level"] for r in rows if r["level"] != "DRAM" and r["level"] in bw]
    steps_main = re.fullmatch(
        r"One core moves (\d+) GB/s while its working set fits in (L\d), and (\d+) GB/s from main memory: ([\d.]+) "
        r"times less\. \(Main memory's step is ([\d.]+) times the copy bandwidth measured above(: a different loop "
        r"over different sizes, on one core too|, near the 1\.5 that "
        r"write-allocate would give: .* so it moves what it is credited with)\.\)",
        main,
    )
    if "DRAM" not in bw:
        assert main.startswith("One core moves") and "no working set of the sweep was far enough" in main
        return
    assert steps_main, main
    first, dram = steps_main.group(2), float(steps_main.group(3))
    assert first == measured[0], "the sentence should start from the fastest level the table measured"
    assert _within(float(steps_main.group(1)), bw[first], 0.55) and _within(dram, bw["DRAM"], 0.55)
    ratio = float(steps_main.group(4))
    assert _rounded_quotient_allows(ratio, bw[first], bw["DRAM"], shown=0.05, ratio_shown=0.05)
    assert next(r for r in rows if r["level"] == first)["× main memory"] == steps_main.group(4)
    copy = float(_glued("copy_bw"))
    to_copy = float(steps_main.group(5))
    assert _rounded_quotient_allows(to_copy, bw["DRAM"], copy, shown=0.05, ratio_shown=0.005)
    alloc = "write-allocate" in steps_main.group(6)
    # the copy moves 3/2 of the bytes it is credited with (write-allocate): near 1.5 that explains the ratio
    if 1.3 + 0.01 <= to_copy <= 1.7 - 0.01:
        assert alloc, main
    elif not 1.3 - 0.01 <= to_copy <= 1.7 + 0.01:
        assert not alloc, main
    # the steps between caches: the sentence the table's numbers call for
    pairs = list(itertools.pairwise(measured))
    if not pairs:
        assert steps == ""
        return
    rise = re.fullmatch(r"(L\d) measures as fast as (L\d) or faster \((\d+) against (\d+) GB/s\): .*", steps)
    flat = re.fullmatch(r"From (L\d) to (L\d) the bandwidth drops by only (\d+)%: .*", steps)
    if rise:
        b, a = rise.group(1), rise.group(2)
        assert (a, b) in pairs and bw[b] >= bw[a] - 0.1
        assert _within(float(rise.group(3)), bw[b], 0.55) and _within(float(rise.group(4)), bw[a], 0.55)
    elif flat:
        a, b = flat.group(1), flat.group(2)
        assert (a, b) in pairs and bw[b] <= bw[a] + 0.1
        drop_lo, drop_hi = 100 * (1 - (bw[b] + 0.05) / (bw[a] - 0.05)), 100 * (1 - (bw[b] - 0.05) / (bw[a] + 0.05))
        assert drop_lo - 0.5 <= float(flat.group(3)) <= drop_hi + 0.5 and float(flat.group(3)) <= 15.5
    else:
        assert steps == "Each level is slower than the one above it.", steps
        assert all(bw[b] < 0.85 * bw[a] * (1 + 1e-3) + 0.1 for a, b in pairs)


def test_the_prediction_is_the_product_of_the_figures_in_the_table() -> None:
    value, verdict, scalar = _glued("pred_value"), _glued("pred_verdict"), _glued("pred_scalar")
    cores, clock, simd, fma = (_glued(k) for k in ("cpu_cores", "cpu_clock", "cpu_simd", "cpu_fma"))
    if "not reported" in (cores, clock, simd):
        assert re.fullmatch(r"This machine (does not report its (cores|clock)|reports no SIMD width this page "
                            r"knows), so there is no prediction to test\.", value), value  # fmt: skip
        assert verdict == ""
        return
    bits, lanes = map(int, re.fullmatch(r"(\d+) bits, (\d+) float32 lanes", simd).groups())
    assert lanes == bits // 32
    ghz = float(re.fullmatch(r"([\d.]+) GHz", clock).group(1))
    per_cycle = int(_glued("cpu_fma_per_cycle"))
    flops = 2 if fma.startswith("yes") else 1
    shown = re.fullmatch(
        r"With these figures the float32 prediction is (\d+) × ([\d.]+) GHz × (\d+) × (\d+) × (\d) = ([\d.]+) GFLOP/s\.",
        value,
    )
    assert shown, value
    assert shown.groups()[:5] == (cores, clock.split()[0], str(lanes), str(per_cycle), str(flops))
    product = int(cores) * lanes * per_cycle * flops
    predicted = float(shown.group(6))
    # the printed factors multiply to the printed product, within its own rounding (0.05 GFLOP/s)
    assert abs(product * ghz - predicted) <= 0.05 + 1e-9, (product, ghz, predicted)
    # the verdict: the measured peak over the prediction, and the sentence its size calls for
    said = re.match(r"The measured peak, ([\d.]+) GFLOP/s, is (?:only )?(\d+)% of the prediction", verdict)
    assert said, verdict
    measured, pct = float(said.group(1)), float(said.group(2))
    assert said.group(1) == _glued("peak32")
    lo, hi = (measured - 0.05) / (predicted + 0.05), (measured + 0.05) / (predicted - 0.05)
    assert 100 * lo - 0.5 <= pct <= 100 * hi + 0.5
    nominal = _glued("cpu_clock_from").startswith("cpu MHz in /proc/cpuinfo")
    if nominal and "faster than these figures allow" not in verdict:  # a nominal clock: no verdict on the units
        assert "that share does not say how full BLAS keeps the vector units" in verdict, verdict
        assert lo <= 1.1 + 0.005, (verdict, lo)
        branches = {"does not say how full": (0, 1.1)}
    else:
        branches = {"faster than these figures allow": (1.1, 1e9), "most of the cycles": (0.75, 1.1),
                    "The gap has several candidates": (0.4, 0.75), "too far below it": (0, 0.4)}  # fmt: skip
    (chosen,) = [span for words, span in branches.items() if words in verdict]
    assert chosen[0] <= hi + 0.005 and lo - 0.005 <= chosen[1], (verdict, lo, hi)
    # the scalar ceiling: the same product with one lane
    one = re.fullmatch(r"The scalar ceiling, one lane per FMA, is ([\d.]+) GFLOP/s, (\d+) times below the measured "
                       r"peak: .*", scalar)  # fmt: skip
    assert one, scalar
    assert _within(float(one.group(1)), predicted / lanes, 0.05 + 0.05 / lanes + 1e-9)
    assert _rounded_quotient_allows(float(one.group(2)), measured, float(one.group(1)), shown=0.05, ratio_shown=0.5)


@pytest.mark.parametrize("clock_hz", [2.5961e9, 2.59549e9, 3.0e9, 1.4999e9])
def test_the_printed_prediction_is_the_product_of_its_printed_factors(clock_hz: float) -> None:
    """2 × 2.60 GHz × 16 × 2 × 2 is 332.8, not 332.3: the clock is printed with the digits the product uses."""
    from rooflinelib.measure import CpuFigures

    value = _sentences().prediction(CpuFigures(cores=2, clock_hz=clock_hz, simd_bits=512, fma=True), 1.7e11)
    shown = re.fullmatch(r"With these figures the float32 prediction is (\d+) × ([\d.]+) GHz × (\d+) × (\d+) × (\d) = "
                         r"([\d.]+) GFLOP/s\.", value["pred_value"])  # fmt: skip
    assert shown, value["pred_value"]
    cores, ghz, lanes, fma, flops, product = (float(x) for x in shown.groups())
    assert abs(cores * ghz * lanes * fma * flops - product) <= 0.05 + 1e-9, value["pred_value"]
    assert value["cpu_clock"] == f"{shown.group(2)} GHz", "the table prints the clock the sentence multiplies"
    assert abs(ghz * 1e9 - clock_hz) <= 0.5e6 + 1e-3, "to the MHz"


def _count(sentence: str, *patterns: tuple[str, int | None]) -> int:
    """The count a sentence states: the first pattern that matches, its number (``None``: the pattern's group)."""
    for pattern, n in patterns:
        found = re.search(pattern, sentence)
        if found:
            return int(found.group(1)) if n is None else n
    raise AssertionError(f"no count in {sentence!r}")


def test_points_above_the_main_memory_roof_are_placed_on_their_levels() -> None:
    rows = _table("fits in") or []
    # the points the earlier sentences counted above the main-memory roof are the rows of the table
    sweep_over = _count(_glued("above_roof"), (r"^One point sits above", 1), (r"^(\d+) points sit above", None),
                        (r"^No point of the sweep", 0))  # fmt: skip
    n_dots = len(re.search(r"dot_lengths=\[([^\]]*)\]", (BOOK / "measure-your-machine.md").read_text()).group(1)
                 .split(","))  # fmt: skip
    dots_over = _count(_glued("dot_above"), (r"every dot product (of the sweep|runs above)", n_dots),
                       (r"(\d+) of the \d+ dot", None),
                       (r"no dot product", 0))  # fmt: skip
    assert len(rows) == sweep_over + dots_over
    assert sum(r["point"].startswith("[") for r in rows) == sweep_over
    sentence = _glued("place_sentence")
    if not rows:
        assert sentence == "No point runs above the main-memory roof, so none needs a higher ceiling."
        return
    levels = _table("working sets used")
    if levels is None:
        assert sentence == "Without the caches' sizes the points cannot be placed on levels."
        return
    sizes = [(r["level"], _bytes(r["size"])) for r in levels if r["size"] != "–"]
    level_bw = {r["level"]: r["GB/s (one core)"] for r in levels}
    peak = float(_glued("peak32"))
    over, under, worst = [], [], 0.0
    for row in rows:
        ws = _bytes(row["working set"])
        near = [name for name, size in sizes if abs(ws - size) <= 5e-3 * size]  # at a cache's size: either side
        expected = next((name for name, size in sizes if ws <= size), "DRAM")
        assert row["fits in"] == expected or near, row
        if row["measured / ceiling"] == "–":
            assert level_bw[row["fits in"]] == "–", row
            continue
        ceiling, rate, ratio = (float(row[k]) for k in ("ceiling there (GFLOP/s)", "measured (GFLOP/s)",
                                                         "measured / ceiling"))  # fmt: skip
        assert ceiling <= peak + 0.05, "a ceiling is capped by the measured peak"
        assert _rounded_quotient_allows(ratio, rate, ceiling, shown=0.05, ratio_shown=0.005), row
        (over if ratio > 1 else under if ratio < 1 else []).append(row)
        worst = max(worst, ratio)
    judged = [r for r in rows if r["measured / ceiling"] != "–"]
    if len(judged) < len(rows):
        numbers = re.fullmatch(r"Of the (\d+) points above the main-memory roof, (\d+) sit under the ceiling of the "
                               r"level they fit in and (\d+) above it\.", sentence)  # fmt: skip
        assert numbers and int(numbers.group(1)) == len(rows)
        assert _glued("place_unmeasured").startswith(f"{len(rows) - len(judged)} of them fit in a level")
        return
    n = len(rows)
    if not over and len(under) == n:
        assert sentence.startswith("The point above" if n == 1 else f"Each of the {n} points above"), sentence
        assert "sits under the ceiling" in sentence
    elif len(over) == n:
        assert sentence.startswith("The point above" if n == 1 else f"All {n} points above"), sentence
        assert "runs above the ceiling" in sentence or "run above the ceiling" in sentence
    if re.search(r"by up to ([\d.]+) times|too, ([\d.]+) times", sentence):
        shown = float(re.search(r"(?:by up to|too,) ([\d.]+) times", sentence).group(1))
        assert abs(shown - worst) <= 0.05 + 0.005 + 1e-9
    some = re.fullmatch(r"Of the (\d+) points above the main-memory roof, (\d+) sit under the ceiling of the level they "
                        r"fit in, and (\d+) above it, by up to [\d.]+ times\.", sentence)  # fmt: skip
    if some:
        assert int(some.group(1)) == n and int(some.group(3)) >= len(over) and int(some.group(2)) >= len(under)
    # a reason is given exactly when a point beats its ceiling
    reasons = _glued("place_reason") + _glued("place_peak")
    assert bool(reasons) == bool(over) or any(r["measured / ceiling"] == "1.00" for r in rows)


def test_one_cores_bandwidth_is_never_passed_off_as_the_machines() -> None:
    """The copy, the triad and the staircase run on one core, the matmuls on BLAS's threads: the page says so."""
    assert _glued("threads_note").startswith("numpy runs the copy and the triad on one core")
    assert "The loop runs on one core, as the copy and the triad do" in _plain("measure-your-machine")
    rows = _table("fits in") or []
    judged_matmuls = [r for r in rows if r["point"].startswith("[") and r["measured / ceiling"] != "–"]
    said = _glued("place_threads")
    assert bool(said) == bool(judged_matmuls), said
    if said:
        assert said.startswith("The ceilings are one core's, from the staircase")


def test_hierarchy_figures_have_captions_and_alt_text() -> None:
    soup = _soup("measure-your-machine")
    for name, words in (("fig-cache-staircase", "staircase"), ("fig-hierarchical-roofline", "hierarchical roofline")):
        figure = soup.find(id=name)
        assert figure is not None, name
        assert words in figure.find("figcaption").get_text(), name
        alt = figure.find("img").get("alt", "")
        assert len(alt) > 200 and "memory" in alt, name


def test_the_cloud_gpu_cell_is_shown_and_not_run_by_the_build() -> None:
    cells = [c for c in _soup("measure-your-machine").select("div.cell") if "time_cuda" in c.get_text()]
    assert len(cells) == 1
    assert cells[0].select_one(".cell_input") is not None and cells[0].select_one(".cell_output") is None
    text = _plain("measure-your-machine")
    assert "torch.cuda.synchronize() after every run and before it reads the clock" in text
    assert "start.elapsed_time(end)" in text


def test_a_nominal_clock_gives_no_verdict_on_the_vector_units() -> None:
    """/proc/cpuinfo's clock under a hypervisor is nominal: 83% of a prediction made with it says nothing."""
    from rooflinelib.measure import CpuFigures

    figures = dict(cores=2, clock_hz=2.596e9, simd_bits=512, fma=True)
    predicted = 2 * 2.596e9 * 16 * 2 * 2
    nominal = _sentences().prediction(CpuFigures(**figures, clock_from="cpuinfo"), 0.83 * predicted)
    assert nominal["pred_verdict"].startswith("The measured peak, 275.8 GFLOP/s, is 83% of the prediction. The clock "
                                              "in the prediction is the nominal one")  # fmt: skip
    assert "that share does not say how full BLAS keeps the vector units" in nominal["pred_verdict"]
    highest = _sentences().prediction(CpuFigures(**figures, clock_from="cpufreq"), 0.83 * predicted)
    assert "busy for most of the cycles" in highest["pred_verdict"]
    above = _sentences().prediction(CpuFigures(**figures, clock_from="cpuinfo"), 1.2 * predicted)
    assert "faster than these figures allow" in above["pred_verdict"]


def test_the_gpu_erratum_counts_every_gpu_of_the_table() -> None:
    """The book's "closer to 300" is the H100 SXM's ridge (Question 5): an erratum that leaves the H100s out misleads."""
    text = _plain("matrix-multiplication")
    said = re.search(r"(\d+) of the (\d+) GPUs of the table, the H100s among them, are within 5% of 300 "
                     r"\(((?:[^()]|\([^()]*\))*)\)", text)  # fmt: skip
    assert said, "the erratum counts the GPUs near the book's figure, H100s included"
    gpus = {a.name: a.peak_flops["bf16"] / a.hbm_bandwidth for a in rl.ACCELERATORS.values()
            if a.vendor != "Google" and "bf16" in a.peak_flops}  # fmt: skip
    near = sorted(n for n, ridge in gpus.items() if abs(ridge / 300 - 1) <= 0.06)  # the ridge, about B*
    assert "NVIDIA H100 SXM" in near and "NVIDIA H100 SXM" in said.group(3)
    assert int(said.group(2)) == len(gpus) and int(said.group(1)) == len(near), (said.groups(), near)


# --- the measure page teaches from the frozen reference run -----------------------------------------------------


def _reference(name: str = "cpu-reference") -> MachineMeasurement:
    return rl.reference_measurements(kind="cpu")[name]


def test_the_measure_page_reads_its_numbers_from_the_reference_run() -> None:
    """The roofs, the knee and the prediction are the shipped quiet run's, whatever machine built the page."""
    ref = _reference()
    assert _glued("peak32") == f"{ref.peak_flops('fp32') / 1e9:.1f}"
    assert _glued("peak64") == f"{ref.peak_flops('fp64') / 1e9:.1f}"
    assert _glued("copy_bw") == f"{ref.bandwidth('copy') / 1e9:.1f}"
    assert _glued("ridge") == f"{ref.peak_flops('fp32') / ref.bandwidth('copy'):.1f}"
    assert (
        _glued("b_pred")
        == f"{float(rl.critical_batch_size(ref.peak_flops('fp32'), ref.bandwidth('copy'), 2048, 2048, precision='fp32')):.1f}"
    )
    assert _glued("cpu_clock") == f"{ref.machine['cpu']['clock_hz'] / 1e9:.3f} GHz"
    # its provenance is on the page: the CPU, the date, the script and the repeats
    text = _plain("measure-your-machine")
    prov = ref.provenance
    for shown in (ref.machine["cpu"]["model"], prov["date"], prov["script"], f"{prov['settings']['repeats']} timed"):
        assert shown in text, shown
    assert "no sign of noise" in text  # the table's noise check of the reference run
    # the live run is drawn too, after the reference, with a verdict of its own
    soup = _soup("measure-your-machine")
    headings = [" ".join(h.get_text().split()).rstrip("#").strip() for h in soup.select("article h2")]
    assert headings.index("Your machine, live") > headings.index("A hierarchical roofline")
    assert soup.find(id="fig-live-roofline") is not None
    verdict = _glued("live_verdict")
    assert re.match(r"This live run (passes the noise check|looks noisy)", verdict), verdict


def test_the_measure_page_has_one_noise_box_and_no_hedges() -> None:
    text = _plain("measure-your-machine")
    for hedge in ("take both with care", "the load on the build machine", "On the build machine",
                  "other work on the build machine", "on a machine shared with other work"):  # fmt: skip
        assert hedge not in text, hedge
    soup = _soup("measure-your-machine")
    boxes = [a for a in soup.select("article div.admonition") if "What noise looks like" in a.get_text()]
    assert len(boxes) == 1
    assert soup.find(id="fig-noise") is not None
    ref, noisy = _reference(), _reference("cpu-contended")
    problems = rl.measurement_health(noisy).problems
    assert _glued("noise_ref_count") == "no sign of noise" and _glued("noise_count") == f"{len(problems)} signs"
    assert _glued("noise_loops") == str(noisy.provenance["load_processes"])
    best = max([*noisy.peak.values(), *noisy.sweep], key=lambda p: p.flops_per_s)
    assert _glued("noise_peak").startswith(f"Its fastest matmul's slowest run took {best.max_s / best.min_s:.0f} times")
    assert ref.peak_flops("fp32") > noisy.peak_flops("fp32")  # the figure's description says the peak is lower


def test_the_measure_page_states_the_rule_that_guards_the_fastest_run() -> None:
    from rooflinelib.measure import MAX_SPREAD, MEDIAN_SPREAD

    text = _plain("measure-your-machine")
    rule = re.search(r"requires each roof's median run to lie within (\d+) ?% of its fastest, and its slowest within "
                     r"([\d.]+) times it", text)  # fmt: skip
    assert rule, "the page says how the noise check guards the fastest run"
    assert int(rule.group(1)) == round(100 * MEDIAN_SPREAD) and float(rule.group(2)) == MAX_SPREAD
    assert re.search(r"We report the rate of the fastest run ?, as STREAM reports its best rate", text)


def test_the_clock_box_names_turbo_and_the_all_core_clock() -> None:
    soup = _soup("measure-your-machine")
    (box,) = [a for a in soup.select("article div.admonition") if "The clock moves both ways" in a.get_text()]
    said = " ".join(box.get_text().split())
    assert "Turbo:" in said and "above the nominal clock Linux reports" in said
    assert "AVX-512" in said and "below the single-core maximum clock" in said
    assert _glued("cpu_clock") in said


def test_the_in_core_ceilings_are_williams_and_drawn_capped_at_the_measured_peak() -> None:
    from rooflinelib.measure import CpuFigures

    ref = _reference()
    cpu = CpuFigures.from_dict(ref.machine["cpu"])
    # cores × clock × lanes × FMAs per cycle × FLOPs per instruction, from the reference CPU's own figures
    cores, clock, lanes, per_cycle = cpu.cores, cpu.clock_hz, cpu.simd_bits // 32, cpu.fma_per_cycle
    assert _glued("ceil_no_fma") == f"{cores * clock * lanes * per_cycle * 1 / 1e9:.1f}"
    assert _glued("ceil_no_simd") == f"{cores * clock * 1 * per_cycle * 2 / 1e9:.1f}"
    assert _glued("ceil_neither") == f"{cores * clock * 1 * per_cycle * 1 / 1e9:.1f}"
    text = _plain("measure-your-machine")
    assert "capped by the measured peak" in text
    assert "DRAM-only intensity" in text and "cache-aware" in text
    fig, ax = plt.subplots()
    rl.plot_hierarchical_roofline(ref, ax=ax)
    sloped = [li for li in ax.get_lines() if li.get_label().endswith("GB/s")]
    flat = {li.get_label().split(":")[0] for li in ax.get_lines() if li.get_label().endswith("GFLOP/s")}
    plt.close(fig)
    assert sloped and all(max(li.get_ydata()) == pytest.approx(ref.peak_flops("fp32")) for li in sloped)
    assert {"no FMA", "no SIMD (scalar ceiling)", "no SIMD, no FMA", "predicted in-core peak"} <= flat


def test_the_accelerator_section_draws_no_cpu_run() -> None:
    text = _plain("measure-your-machine")
    section = text[text.index("A real accelerator") :]
    assert not re.search(r"cpu-(reference|contended)\s*:", section), "a CPU run drawn as an accelerator"


# --- claims that hang on sizes: write-allocate's counts, a sweep inside the cache, the FMA units, the windows -----


def test_write_allocates_upper_counts_are_weighed_against_main_memory() -> None:
    """The copy may move 3 arrays for its 2, the triad 7 for its 3: the page scales the rates and compares them."""
    text = _plain("measure-your-machine")
    assert "the triad's two passes move seven" not in text and "moves two or three" in text
    copy, triad = float(_glued("copy_bw")), float(_glued("triad_bw"))
    upper = re.fullmatch(r"At the upper counts the copy would draw ([\d.]+) GB/s and the triad ([\d.]+) GB/s from "
                         r"main memory\.", _glued("alloc_upper"))  # fmt: skip
    assert upper, _glued("alloc_upper")
    copy3, triad7 = float(upper.group(1)), float(upper.group(2))
    assert _within(copy3, copy * 3 / 2, 0.05 * 3 / 2 + 0.05) and _within(triad7, triad * 7 / 3, 0.05 * 7 / 3 + 0.05)
    note = _glued("alloc_note")
    rows = _table("working sets used")
    dram = next((r["GB/s (one core)"] for r in rows or [] if r["level"] == "DRAM"), "–")
    if dram == "–":
        assert note == "Which count holds, only the processor's traffic counters could tell."
        return
    shown = re.search(r"the ([\d.]+) GB/s one core draws from main memory", note)
    assert shown and shown.group(1) == dram, note
    over = sum(rate > float(dram) for rate in (copy3, triad7))
    assert note.startswith(("Both are within", "One of them exceeds", "Both exceed")[over]), (note, over)


def test_a_sweep_inside_the_last_level_cache_is_said_to_be() -> None:
    """Working sets 4(2BD + D²) bytes at every B of the sweep table, against the last-level cache the page names."""
    D = int(_glued("D"))
    sweep = _table("share of the best")
    assert sweep, "the sweep's table is missing"
    sets = [4 * (2 * int(r["B"]) * D + D * D) / 2**20 for r in sweep]
    said, knee, test = (_glued(k) for k in ("sweep_resident", "sweep_resident_knee", "sweep_resident_test"))
    last = re.search(r"last-level cache \(L\d\) of ([\d.]+) MiB", _glued("cache_note"))
    if last is None or max(sets) >= float(last.group(1)):
        assert said == knee == test == ""
        return
    llc = float(last.group(1))
    numbers = re.fullmatch(r"Every size of this sweep keeps (\d+) to (\d+) MiB in play, less than the (\d+) MiB "
                           r"last-level cache, so its weights stay in that cache between runs\.", said)  # fmt: skip
    assert numbers, said
    assert [int(g) for g in numbers.groups()] == [round(min(sets)), round(max(sets)), round(llc)]
    assert knee.startswith("Yet the knee is judged against the main-memory roof.") and "lower bound" in knee
    bigger = next(d for d in (2 * D, 4 * D, 8 * D, 16 * D) if 4 * d * d / 2**20 > llc)  # weights past the cache
    assert test.endswith(f"D = {bigger} or more in float32."), test


def test_two_full_width_fma_units_are_backed_by_the_l1_data_cache() -> None:
    """48 KiB of L1d on an AMD core with AVX-512 marks Zen 5 (two 512-bit FMAs); Zen 4's half rate would halve it."""
    fma, half = _glued("pred_fma"), _glued("pred_fma_half")
    l1 = re.search(r"an L1 of (\d+) KiB", _glued("cache_note"))
    value = re.search(r"= ([\d.]+) GFLOP/s\.$", _glued("pred_value"))
    zen5 = ("AMD" in _glued("ref_cpu") and l1 is not None and l1.group(1) == "48"
            and _glued("cpu_simd").startswith("512 bits") and _glued("cpu_fma_per_cycle") == "2")  # fmt: skip
    if not (zen5 and value):
        assert fma == half == ""
        return
    assert fma.startswith("Two 512-bit FMAs fit this machine") and "48 KiB of L1 data cache" in fma, fma
    shown = re.fullmatch(r"With Zen 4's halved 512-bit rate the prediction would be ([\d.]+) GFLOP/s, below the "
                         r"measured peak of ([\d.]+) GFLOP/s\.", half)  # fmt: skip
    assert shown, half
    assert _within(float(shown.group(1)), float(value.group(1)) / 2, 0.05 / 2 + 0.05)
    assert shown.group(2) == _glued("peak32") and float(shown.group(1)) < float(shown.group(2))
    assert shown.group(1) == _glued("ceil_no_fma"), "half the FMAs per cycle: the product without FMA"


def test_each_cache_window_starts_above_the_level_before() -> None:
    """The prose says a cache's working sets are more than the level above holds: the table says '>' it."""
    rows = _table("working sets used")
    if rows is None:
        return
    caches = [r for r in rows if r["level"] != "DRAM"]
    assert caches[0]["working sets used"].startswith("≤ ")
    for above, row in itertools.pairwise(caches):
        assert row["working sets used"].startswith(f"> {above['size']}, ≤ "), row
    assert "at most half its size and more than the level above holds" in _plain("measure-your-machine")
