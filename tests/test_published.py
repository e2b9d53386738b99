"""The published Hopper matmul table: its data, its loader, its importer and what the book says of it.

Expected values are read off the XLA header by hand (``grep`` on
``matmul_interpolator_data.h`` in the tensorflow 2.21.0 wheel) or recomputed
here from the raw JSON rows with plain arithmetic, never with rooflinelib.
"""

from __future__ import annotations

import copy
import doctest
import importlib.util
import json
import math
import os
import re
import statistics
from importlib import resources
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

import rooflinelib as rl
from rooflinelib import published

ROOT = Path(__file__).resolve().parents[1]
NAME = "xla-sm90-bf16-matmul"
H100_BF16, H100_HBM = 1.979e15 / 2, 3.35e12  # NVIDIA datasheet: 1,979 TFLOPS with sparsity; 3.35 TB/s


def _raw() -> dict:
    return json.loads(resources.files("rooflinelib").joinpath(f"data/published/{NAME}.json").read_text("utf-8"))


def _importer():
    spec = importlib.util.spec_from_file_location(
        "import_xla_matmul_table", ROOT / "tools" / "import_xla_matmul_table.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _by_hand(b: int, m: int, n: int, k: int) -> tuple[float, float]:
    """FLOPs and bf16 bytes of b matmuls [m, k] @ [k, n]: 2bmnk, and 2 bytes per element of both inputs and the output."""
    return 2.0 * b * m * n * k, 2.0 * b * (m * k + k * n + m * n)


# ------------------------------------------------------------------ the data


def test_rows_match_the_header_spot_checks():
    rows = {tuple(r[:4]): r[4] for r in _raw()["rows"]}
    # (b, m, n, k): bf16 value, read off the header with grep; n != k ones catch a swapped column
    assert rows[(1, 4096, 4096, 4096)] == 780193877565849
    assert rows[(4, 4096, 2048, 4096)] == 804715405124361
    assert rows[(1, 256, 4096, 4096)] == 418449658612626
    assert rows[(1, 4096, 1024, 1024)] == 497563403151065
    assert rows[(2, 512, 256, 1024)] == 69184395876288
    assert rows[(1, 256, 4096, 2048)] == 345921979381443
    assert rows[(1, 256, 2048, 4096)] == 296286375275938
    assert rows[(1, 2048, 256, 4096)] == 333874945273631


def test_table_is_the_full_grid():
    rows = _raw()["rows"]
    shapes = {tuple(r[:4]) for r in rows}
    sizes = [256, 512, 1024, 2048, 4096]
    assert shapes == {(b, m, n, k) for b in (1, 2, 4) for m in sizes for n in sizes for k in sizes}
    assert len(rows) == 375


def test_provenance_says_where_and_how():
    prov = _raw()["provenance"]
    for key in ("what", "method", "device", "not_recorded", "source", "source_note", "taken_from", "license"):
        assert prov.get(key), f"provenance lacks {key!r}"
    assert prov["source"].startswith("https://github.com/openxla/xla/")
    assert "Apache-2.0" in prov["license"]


def test_no_measured_shape_beats_the_h100_sxm_roofline():
    """Physics: measured FLOPs/s <= min(peak, intensity * bandwidth) for every shape.

    It would fail for a chip with a lower roof (an H100 PCIe, 756 TFLOP/s) or
    for a mis-parsed row.
    """
    raw = _raw()
    assert raw["chip"] == "h100-sxm"
    for b, m, n, k, rate in raw["rows"]:
        flops, nbytes = _by_hand(b, m, n, k)
        roof = min(H100_BF16, flops / nbytes * H100_HBM)
        assert rate <= roof, f"{(b, m, n, k)}: {rate:.3e} > roof {roof:.3e}"
    assert max(r[4] for r in raw["rows"]) > 7.56e14 / 1.01, "the table should not fit under an H100 PCIe's roof"


def test_loaded_points_count_like_the_hand_formula():
    t = rl.get_published_matmuls(NAME)
    for p in t.points[::17]:
        flops, nbytes = _by_hand(p.b, p.m, p.n, p.k)
        assert p.flops == pytest.approx(flops, rel=1e-12)
        assert p.bytes == pytest.approx(nbytes, rel=1e-12)
        assert p.seconds == pytest.approx(flops / p.flops_per_s, rel=1e-12)


# ------------------------------------------------------------------ the loader


def test_sweep_is_ordered_and_filtered():
    t = rl.get_published_matmuls(NAME)
    s = t.sweep(2048, 4096, b=2)
    assert [p.m for p in s] == [256, 512, 1024, 2048, 4096]
    assert all((p.k, p.n, p.b) == (2048, 4096, 2) for p in s)
    with pytest.raises(ValueError, match=r"no measured \[B, 100\] @ \[100, 4096\] with b = 1; measured D: 256"):
        t.sweep(100, 4096)


def test_best_is_the_fastest_row():
    raw = _raw()
    best = max(raw["rows"], key=lambda r: r[4])
    b = rl.get_published_matmuls(NAME).best()
    assert [b.b, b.m, b.n, b.k, b.flops_per_s] == best


def test_unknown_table_suggests_close_names():
    with pytest.raises(KeyError, match="did you mean 'xla-sm90-bf16-matmul'"):
        rl.get_published_matmuls("xla-sm90-bf16")
    with pytest.raises(KeyError, match="known: xla-sm90-bf16-matmul"):
        rl.get_published_matmuls("mi300x")


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.pop("provenance"), "missing 'provenance'"),
        (lambda d: d.update(columns=["b", "m", "k", "n", "flops_per_s"]), "columns must be"),
        (lambda d: d["rows"].__setitem__(3, [1, 0, 256, 256, 1e12]), r"row 3 must be \[b, m, n, k, flops_per_s\]"),
        (lambda d: d["rows"].__setitem__(0, [1, 256, 256, 256, float("nan")]), "row 0 must be"),
        (lambda d: d["rows"].__setitem__(1, [1, 256, 256.5, 256, 1e12]), "row 1 must be"),
        (lambda d: d["rows"].__setitem__(2, [1, 256, 256, 1e12]), "row 2 must be"),
        (lambda d: d.update(rows=[]), "no rows"),
        (lambda d: d["rows"].__setitem__(4, [True, 256, 256, 256, 1e12]), "row 4 must be"),
        (lambda d: d["rows"].__setitem__(5, list(d["rows"][0])), "row 5 repeats the shape b=1, m=256, n=256, k=256"),
        (lambda d: d.update(provenance=["source", "x"]), "provenance must map names to text"),
    ],
)
def test_a_bad_file_fails_with_its_name_and_the_problem(change, message):
    raw = copy.deepcopy(_raw())
    change(raw)
    with pytest.raises(ValueError, match=f"^bad.json: {message}"):
        published._parse(raw, "bad.json")


def test_a_bad_chip_or_dtype_fails_clearly():
    raw = copy.deepcopy(_raw())
    raw["chip"] = "h100"
    with pytest.raises(KeyError, match="did you mean 'h100-sxm'"):
        published._parse(raw, "bad.json")
    raw = copy.deepcopy(_raw())
    raw["dtype"] = "bf17"
    with pytest.raises(KeyError, match="unknown dtype 'bf17'"):
        published._parse(raw, "bad.json")


def test_a_folder_of_tables_checks_names_and_json(tmp_path):
    raw = _raw()
    (tmp_path / f"{NAME}.json").write_text(json.dumps(raw), encoding="utf-8")
    assert list(published._load_folder(tmp_path)) == [NAME]
    (tmp_path / "renamed.json").write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ValueError, match="^renamed.json: its name is 'xla-sm90-bf16-matmul'"):
        published._load_folder(tmp_path)
    (tmp_path / "renamed.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="^renamed.json: not valid JSON"):
        published._load_folder(tmp_path)
    (tmp_path / "renamed.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="^renamed.json: must hold a JSON object, got list"):
        published._load_folder(tmp_path)


def test_the_sweep_plot_puts_each_measurement_on_its_own_line_colour():
    import matplotlib.pyplot as plt

    t = rl.get_published_matmuls(NAME)
    fig, ax = plt.subplots()
    rl.plot_published_sweeps(t, [(1024, 1024), (4096, 4096)], ax=ax)
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    circles = [ln for ln in ax.get_lines() if ln.get_label() == "_measured"]
    assert len(circles) == 2
    for (D, label), dots in zip([(1024, "D = F = 1024"), (4096, "D = F = 4096")], circles):
        assert list(dots.get_xdata()) == [256, 512, 1024, 2048, 4096]
        assert list(dots.get_ydata()) == [r for m, r in _sweep(_raw()["rows"], D)]
        assert dots.get_color() == lines[label].get_color()
    with pytest.raises(ValueError, match="shapes must list at least one"):
        rl.plot_published_sweeps(t, [], ax=ax)
    plt.close(fig)


# ------------------------------------------------------------------ the knee


def test_knee_interpolates_on_log_axes_in_any_order():
    # rates 100, 400, 1000, 1000: 80% of 1000 = 800 lies between B = 4 (400) and B = 16 (1000).
    # log-log: B = 4 * 4 ** (ln(800/400) / ln(1000/400)) = 4 * 4 ** 0.7565 = 4 * 2.854 = 11.42
    assert rl.knee_batch_size([64, 4, 16, 1], [1000, 400, 1000, 100]) == pytest.approx(11.42, abs=0.01)
    assert math.isnan(rl.knee_batch_size([1, 2], [1, 2]))
    with pytest.raises(ValueError, match="same length, got 3 and 2"):
        rl.knee_batch_size([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="flops_per_s must be > 0 FLOPs/s, got 0"):
        rl.knee_batch_size([1, 2, 3], [1, 0, 2])


# ------------------------------------------------------------------ the importer

HEADER = """
constexpr char kDefaultMatmulPTable[] = R"pb(
  entries {
    key: "sm_100"
    value {
      entries { b: 1 m: 2 n: 2 k: 2 flops { key: "bf16xbf16->bf16" value: 99 } }
    }
  }
  entries {
    key: "sm_90"
    value {
      entries {
        b: 1
        m: 2
        n: 2
        k: 2
        flops { key: "bf16xbf16->bf16" value: 16 }
        flops { key: "f32xf32->f32" value: 8 }
      }
      entries {
        b: 1
        m: 4
        n: 2
        k: 2
        flops { key: "bf16xbf16->bf16" value: 32 }
        flops { key: "f32xf32->f32" value: 9 }
      }
    }
  }
)pb";
"""


def test_importer_reads_one_chip_and_dtype():
    imp = _importer()
    result = doctest.testmod(imp)
    assert result.attempted > 0 and result.failed == 0
    assert imp.parse_table(HEADER, "sm_90", "bf16xbf16->bf16") == [[1, 2, 2, 2, 16], [1, 4, 2, 2, 32]]
    assert imp.parse_table(HEADER, "sm_90", "f32xf32->f32") == [[1, 2, 2, 2, 8], [1, 4, 2, 2, 9]]
    assert imp.parse_table(HEADER, "sm_100", "bf16xbf16->bf16") == [[1, 2, 2, 2, 99]]
    with pytest.raises(ValueError, match="no table for 'sm_80' in the header; it has 'sm_100', 'sm_90'"):
        imp.parse_table(HEADER, "sm_80", "bf16xbf16->bf16")
    with pytest.raises(ValueError, match="has no 'f8' rate"):
        imp.parse_table(HEADER, "sm_90", "f8")


def test_importer_refuses_entries_it_cannot_read():
    imp = _importer()
    odd = HEADER.replace(
        "        b: 1\n        m: 4\n        n: 2\n        k: 2\n",
        "        b: 1\n        k: 2\n        m: 4\n        n: 2\n",
    )
    assert odd != HEADER
    with pytest.raises(ValueError, match="the 'sm_90' table has 2 entries but the importer could read 1"):
        imp.parse_table(odd, "sm_90", "bf16xbf16->bf16")


def test_importer_refuses_an_incomplete_or_repeated_grid():
    imp = _importer()
    imp.check_grid([[1, 2, 2, 2, 1], [1, 4, 2, 2, 1]])
    with pytest.raises(ValueError, match="3 shapes, but its sizes span a grid of 4"):
        imp.check_grid([[1, 2, 2, 2, 1], [1, 4, 2, 2, 1], [1, 4, 4, 2, 1]])
    with pytest.raises(ValueError, match="repeats"):
        imp.check_grid([[1, 2, 2, 2, 1], [1, 2, 2, 2, 2]])


def test_importer_round_trips_through_the_loader(tmp_path, capsys):
    imp = _importer()
    header = tmp_path / "matmul_interpolator_data.h"
    header.write_text(HEADER, encoding="utf-8")
    assert imp.main(["--header", str(header), "--name", "tiny", "--out-dir", str(tmp_path)]) == 0
    raw = json.loads((tmp_path / "tiny.json").read_text(encoding="utf-8"))
    table = published._parse(raw, "tiny.json")
    assert [(p.m, p.flops_per_s) for p in table.points] == [(2, 16.0), (4, 32.0)]
    assert table.provenance["taken_from"] == "matmul_interpolator_data.h"


def test_importer_fails_in_one_line_and_writes_nothing(tmp_path, capsys):
    imp = _importer()
    header = tmp_path / "h.h"
    header.write_text(HEADER.replace('key: "sm_90"', 'key: "sm_89"'), encoding="utf-8")
    assert imp.main(["--header", str(header), "--out-dir", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("import_xla_matmul_table: no table for 'sm_90'") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ what the book says


def _page() -> str:
    path = Path(os.environ.get("ROOFLINE_BOOK_HTML", ROOT / "_build" / "html")) / "book" / "measure-your-machine.html"
    if not path.is_file():
        pytest.fail(f"{path} is missing; run `make book` first (or set ROOFLINE_BOOK_HTML to a build's html folder)")
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    for tag in soup(["script", "style"]):
        tag.decompose()
    return re.sub(r"\s+", " ", soup.get_text(" "))


def _sweep(rows, D):
    return sorted((m, rate) for b, m, n, k, rate in rows if (b, n, k) == (1, D, D))


def test_the_page_quotes_the_table_correctly():
    rows = _raw()["rows"]
    text = _page()
    ridge = H100_BF16 / H100_HBM  # 295.4
    best = max(rows, key=lambda r: r[4])
    left = []
    for b, m, n, k, rate in rows:
        flops, nbytes = _by_hand(b, m, n, k)
        if flops / nbytes < ridge:
            left.append((rate / (flops / nbytes * H100_HBM), (b, m, n, k), flops / nbytes, rate * nbytes / flops))
    frac, (b, m, n, k), intensity, bw = max(left)
    right = [r[4] / H100_BF16 for r in rows if _by_hand(*r[:4])[0] / _by_hand(*r[:4])[1] >= ridge]
    tiny = min(rows, key=lambda r: _by_hand(*r[:4])[0])  # 1 x [256, 256] @ [256, 256]
    t_flops, t_bytes = _by_hand(*tiny[:4])
    claims = [
        "989.5 TFLOP/s dense bf16",
        "3.35 TB/s HBM",
        "where its ridge falls is left for Question 5 to work out",  # not printed: it is Question 5's answer
        f"The table’s best rate, {best[4] / 1e12:.0f} TFLOP/s, is more than an H100 PCIe can do at all ( 756.5 TFLOP/s)",
        "which has the same peak and 4.8 TB/s of HBM",  # NVIDIA H200 datasheet
        f"all {len(rows)} measured shapes",
        (
            f"The best rate is for {best[0]} × [{best[1]}, {best[3]}] @ [{best[3]}, {best[2]}] , and it is only "
            f"{100 * best[4] / H100_BF16:.0f} % of the spec peak"
        ),
        f"the {len(right)} shapes right of the ridge reach a median of {100 * statistics.median(right):.0f} % of the peak",
        f"Of the {len(left)} shapes left of the ridge",
        f"{b} × [{m}, {k}] @ [{k}, {n}] (intensity {intensity:.0f} ), at {100 * frac:.0f} % of it",
        f"It moves {_by_hand(b, m, n, k)[1] / 1e6:.0f} MB per run",
        f"effective {bw / 1e12:.1f} TB/s or more",
        f"at a median of {100 * statistics.median(x[0] for x in left):.0f} %",
        (
            f"[256, 256] @ [256, 256] , takes {t_flops / tiny[4] * 1e6:.1f} µs, where the roofline allows "
            f"{max(t_flops / H100_BF16, t_bytes / H100_HBM) * 1e6:.2f} µs"
        ),
    ]
    # D = F = 4096: exact crossover 2BD^2/P = 2(2BD + D^2)/W  =>  B* = P / (W - 2P/D)
    big = _sweep(rows, 4096)
    target = 0.8 * max(r for _, r in big)
    (b0, r0), (b1, r1) = next((big[i - 1], big[i]) for i in range(1, len(big)) if big[i][1] >= target)
    knee = b0 * (b1 / b0) ** (math.log(target / r0) / math.log(r1 / r0))
    b_star = H100_BF16 / (H100_HBM - 2 * H100_BF16 / 4096)  # 345.2
    small = _sweep(rows, 1024)
    B, rate = small[-1]
    claims += [
        f"predicts \\(B^* \\approx\\) {b_star:.0f}",
        f"level off at {100 * big[-1][1] / H100_BF16:.0f} % of the spec peak",
        f"between \\(B =\\) {b0} and {b1} (about {knee:.0f} by interpolation, {knee / b_star:.1f} times",
        f"compute-bound from \\(B^* \\approx\\) {H100_BF16 / (H100_HBM - 2 * H100_BF16 / 1024):.0f}",  # 698.1
        f"at only {100 * rate / H100_BF16:.0f} % of the peak",
        (
            f"it takes {2 * B * 1024 * 1024 / rate * 1e6:.1f} µs where \\(T_\\text{{math}}\\) is "
            f"{2 * B * 1024 * 1024 / H100_BF16 * 1e6:.1f} µs"
        ),
        (
            f"at \\(B =\\) 256 this matmul takes {2 * 256 * 1024 * 1024 / small[0][1] * 1e6:.1f} µs, and at "
            f"\\(B =\\) 512 , {2 * 512 * 1024 * 1024 / small[1][1] * 1e6:.1f} µs"
        ),
    ]
    missing = [c for c in claims if c not in text]
    assert not missing, f"not on the page: {missing}"


def test_the_pages_general_claims_hold_for_the_data():
    """What the prose says in words must stay true of the data.

    The best rate is 80-85% of peak; B* and the measured knee fall in the same
    doubling step; bigger D is faster at every B; doubling B from 256 to 512 at
    D = 1024 takes "about the same time"; the smallest shape takes many times
    its roofline time; an H200 has the H100 SXM's peak and more bandwidth.
    """
    rows = _raw()["rows"]
    assert 0.80 <= max(r[4] for r in rows) / H100_BF16 <= 0.85
    sweeps = {D: dict(_sweep(rows, D)) for D in (1024, 2048, 4096)}
    for B in sweeps[1024]:
        assert sweeps[1024][B] < sweeps[2048][B] < sweeps[4096][B], f"B = {B}"
    big = _sweep(rows, 4096)
    knee = rl.knee_batch_size([m for m, _ in big], [r for _, r in big])
    b_star = H100_BF16 / (H100_HBM - 2 * H100_BF16 / 4096)
    step = next(b for b, _ in big if b > knee)
    assert step / 2 < b_star < step and step / 2 < knee < step
    t256, t512 = (2 * B * 1024 * 1024 / sweeps[1024][B] for B in (256, 512))
    assert t512 / t256 < 1.2
    flops, nbytes = _by_hand(1, 256, 256, 256)
    assert flops / min(rows, key=lambda r: _by_hand(*r[:4])[0])[4] > 10 * max(flops / H100_BF16, nbytes / H100_HBM)
    h200 = rl.get_accelerator("h200")
    assert h200.peak("bf16") == H100_BF16 and h200.hbm_bandwidth > H100_HBM


def test_every_data_file_ships_in_the_package():
    """pyproject's package-data globs must cover every file under rooflinelib/data, or `pip install .` loses it."""
    import fnmatch
    import tomllib

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["package-data"][
        "rooflinelib"
    ]
    data = ROOT / "rooflinelib" / "data"
    files = [p.relative_to(ROOT / "rooflinelib").as_posix() for p in data.rglob("*") if p.is_file()]
    assert "data/published/xla-sm90-bf16-matmul.json" in files
    unshipped = [f for f in files if not any(fnmatch.fnmatchcase(f, g) for g in globs)]
    assert not unshipped, f"not in package-data: {unshipped}"
