"""The roofline explorer: its pure logic, its plot and its widget callbacks (no browser)."""

import base64

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

import rooflinelib as rl
from rooflinelib.explorer import Explorer, explore, plot_explore


def test_explore_matches_estimate_and_verdict():
    s = explore("h100-sxm", "bf16", 256, 8192, 8192)
    est = rl.estimate_matmul("h100-sxm", 256, 8192, 8192)
    assert s["t_math"] == est.t_math and s["t_comms"] == est.t_comms
    assert s["attainable_flops"] == pytest.approx(est.flops / est.t_lower)
    assert s["side"].startswith("left")
    assert explore("h100-sxm", "bf16", 1024, 8192, 8192)["side"].startswith("right")


def test_plot_marks_the_point_where_explore_puts_it():
    s = explore("tpu-v5e", "int8", 64, 4096, 4096)
    fig, ax = plt.subplots()
    plot_explore(s, ax=ax)
    plt.close(fig)
    point = ax.get_lines()[-1]
    assert point.get_xdata()[0] == s["intensity"] and point.get_ydata()[0] == s["attainable_flops"]


def test_widget_callbacks_update_state_and_summary():
    ex = Explorer(draw=False)
    assert ex.state["bound"] == "communication-bound"
    ex.B.value = 2048
    assert ex.state["B"] == 2048 and ex.state["bound"] == "compute-bound"
    assert "compute-bound" in ex.summary.value and "T_math" in ex.summary.value


def test_changing_chip_refreshes_dtypes():
    ex = Explorer(draw=False)
    ex.chip.value = "tpu-v5e"
    assert set(ex.dtype.options) == set(rl.get_accelerator("tpu-v5e").dtypes)
    assert ex.state["chip"] == "tpu-v5e"


def test_bad_size_shows_error_and_keeps_last_state():
    ex = Explorer(draw=False)
    before = dict(ex.state)
    ex.D.value = 0
    assert "D must be" in ex.summary.value
    assert ex.state == before


def _png(ex):
    """The explorer's plot: the single output of its Output widget, decoded."""
    assert len(ex.output.outputs) == 1, ex.output.outputs
    return base64.b64decode(ex.output.outputs[0]["data"]["image/png"])


def test_update_draws_into_the_output():
    ex = Explorer()
    first = _png(ex)
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    ex.F.value = 4096
    assert ex.state["F"] == 4096
    redrawn = _png(ex)
    assert redrawn[:4] == b"\x89PNG" and redrawn != first
    assert "4096" in ex.output.outputs[0]["data"]["text/plain"]
    ex.D.value = -1  # invalid: the plot of the last valid state stays
    assert _png(ex) == redrawn
    assert Explorer(draw=False).output.outputs == ()


def test_chip_is_looked_up_like_everywhere_else():
    ex = Explorer(chip="H100_SXM", draw=False)
    assert ex.chip.value == "h100-sxm" and ex.state["chip"] == "h100-sxm"
    with pytest.raises(KeyError, match="unknown accelerator 'h200-sxm'"):
        Explorer(chip="h200-sxm", draw=False)


def test_bad_starting_values_are_refused_up_front():
    with pytest.raises(ValueError, match="dtype must be one of .* for NVIDIA H200 SXM, got 'int4'"):
        Explorer(dtype="int4", draw=False)
    with pytest.raises(ValueError, match=r"B must be a whole number of elements \(an integer >= 1\), got 0"):
        Explorer(B=0, draw=False)
    custom = rl.Accelerator.custom("my chip", {"bf16": 1e14}, 1e12)
    with pytest.raises(ValueError, match="chip must be one of the spec table's chips"):
        Explorer(chip=custom, draw=False)
