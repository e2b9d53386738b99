"""Chip-aware estimates and the plotting helpers."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

import rooflinelib as rl


def test_estimate_matmul_matches_hand_arithmetic():
    B, D, F = 512, 8192, 4096
    est = rl.estimate_matmul("h100-sxm", B, D, F)
    flops = 2 * B * D * F
    nbytes = 2 * (B * D + D * F + B * F)
    assert est.flops == flops
    assert est.bytes == nbytes
    assert est.t_math == pytest.approx(flops / 9.895e14)
    assert est.t_comms == pytest.approx(nbytes / 3.35e12)
    assert est.t_lower == max(est.t_math, est.t_comms)
    assert est.t_upper == pytest.approx(est.t_math + est.t_comms)
    assert est.bound == "compute-bound"  # intensity ~ 431 > 295
    assert est.as_dict()["chip"] == "h100-sxm"


def test_estimate_matmul_mixed_precision_uses_compute_dtype_peak():
    est = rl.estimate_matmul("tpu-v5e", 200, 8192, 8192, precision=rl.Precision("bf16", w="int8"))
    assert est.bytes == 2 * 200 * 8192 + 8192 * 8192 + 2 * 200 * 8192
    assert est.t_math == pytest.approx(2 * 200 * 8192 * 8192 / 1.97e14)
    assert est.bound == "compute-bound"  # B = 200 > ~120 with int8 weights
    assert rl.estimate_matmul("tpu-v5e", 200, 8192, 8192).bound == "communication-bound"


def test_chip_critical_batch_size_h100():
    assert 295 <= rl.chip_critical_batch_size("h100-sxm") <= 298


def _labels(ax):
    return [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_plot_roofline_two_bandwidths_and_algorithms():
    fig, ax = plt.subplots()
    out = rl.plot_roofline(
        "tpu-v5e", bandwidths={"BW1": 8.2e11, "BW2": 2e12}, algorithms={"Algo 1": 50, "Algo 2": 800}, ax=ax
    )
    assert out is ax
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "BW1" in _labels(ax) and "BW2" in _labels(ax)
    assert "arithmetic intensity (FLOPs/byte)" == ax.get_xlabel()
    # three shaded regions: bound at both, bound only at BW1, compute-bound
    assert len(ax.patches) == 3
    # the BW1 line is flat at the peak beyond its ridge (240) and on the slope before it
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "BW1")
    x, y = line.get_data()
    assert y[-1] == pytest.approx(1.97e14)
    i = np.searchsorted(x, 10.0)
    assert y[i] == pytest.approx(x[i] * 8.2e11)
    plt.close(fig)


def test_plot_roofline_several_chips():
    fig, ax = plt.subplots()
    rl.plot_roofline(["tpu-v5e", "h100-sxm"], ax=ax)
    assert {"TPU v5e", "NVIDIA H100 SXM"} <= set(_labels(ax))
    plt.close(fig)


def test_plot_roofline_defaults_to_current_axes():
    fig, ax = plt.subplots()
    assert rl.plot_roofline("h200") is ax
    plt.close(fig)


def test_plot_roofline_bad_input():
    with pytest.raises(ValueError, match="bandwidths\\['x'\\] must be > 0"):
        rl.plot_roofline("tpu-v5e", bandwidths={"x": 0})
    with pytest.raises(KeyError, match="unknown accelerator"):
        rl.plot_roofline("tpu-v9")
    with pytest.raises(ValueError, match="low < high"):
        rl.plot_roofline("tpu-v5e", intensity_range=(100, 10))


def test_plot_matmul_batch_question3():
    fig, ax = plt.subplots()
    rl.plot_matmul_batch(
        "tpu-v5e", [(4096, 4096), (1024, 1024)], precision=rl.Precision("bf16", w="int8"), bandwidth=8.2e11, ax=ax
    )
    assert _labels(ax) == ["D = F = 4096", "D = F = 1024"]
    big = next(ln for ln in ax.get_lines() if ln.get_label() == "D = F = 4096")
    _, y = big.get_data()
    # below the knee (B=100) the curve is bandwidth-bound: FLOPs / (bytes / W)
    b = 100
    expected = 2 * b * 4096**2 / ((2 * b * 4096 + 4096**2 + 2 * b * 4096) / 8.2e11)
    assert y[b - 1] == pytest.approx(expected)
    assert y[-1] == pytest.approx(1.97e14)
    plt.close(fig)


def test_estimate_matmul_wants_single_sizes():
    with pytest.raises(TypeError, match="B must be a single number, got an array of shape \\(3,\\)"):
        rl.estimate_matmul("tpu-v5e", np.array([1, 2, 4]), 8192, 8192)
    with pytest.raises(ValueError, match="F must be a whole number"):
        rl.estimate_matmul("tpu-v5e", 1, 8192, 0)


def test_chip_critical_batch_size_int8_uses_int8_peak():
    # int8 everywhere on a TPU v5e: 393e12 OPs/s over 819e9 bytes/s, times 1 byte / 2
    assert rl.chip_critical_batch_size("tpu-v5e", precision="int8") == pytest.approx(3.93e14 / 8.19e11 / 2)


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [
        (dict(algorithms={"a": -1}), ValueError, "algorithms\\['a'\\] must be > 0 FLOPs/byte, got -1"),
        (dict(algorithms={"a": "10"}), TypeError, "algorithms\\['a'\\] must be a number"),
        (dict(algorithms=[10]), TypeError, "algorithms must map labels to numbers"),
        (dict(bandwidths={}), ValueError, "bandwidths must name at least one"),
        (dict(dtype="fp8"), KeyError, "TPU v5e has no peak FLOPs/s for dtype 'fp8'"),
        (dict(intensity_range=(1, 2, 3)), ValueError, "intensity_range must be \\(low, high\\)"),
    ],
)
def test_plot_roofline_checks_everything_before_drawing(kwargs, exc, message):
    fig, ax = plt.subplots()
    with pytest.raises(exc, match=message):
        rl.plot_roofline("tpu-v5e", ax=ax, **kwargs)
    assert not ax.get_lines() and not ax.patches and ax.get_xscale() == "linear"  # nothing drawn
    plt.close(fig)


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [
        (dict(shapes=[]), ValueError, "shapes must list at least one"),
        (dict(shapes=[(4096,)]), ValueError, "each shape must be a \\(D, F\\) pair"),
        (dict(shapes=[(4096, 0)]), ValueError, "F must be a whole number"),
        (dict(batch_sizes=[0, 1]), ValueError, "batch_sizes must be a whole number"),
        (dict(bandwidth=-1), ValueError, "bandwidth must be > 0"),
        (dict(precision="bfloat16"), KeyError, "unknown dtype"),
    ],
)
def test_plot_matmul_batch_checks_everything_before_drawing(kwargs, exc, message):
    fig, ax = plt.subplots()
    args = {"shapes": [(4096, 4096)], **kwargs}
    with pytest.raises(exc, match=message):
        rl.plot_matmul_batch("tpu-v5e", args.pop("shapes"), ax=ax, **args)
    assert not ax.get_lines()
    plt.close(fig)


def test_plot_helpers_pass_line_styles_through_and_leave_legend_size_alone():
    fig, ax = plt.subplots()
    rl.plot_roofline("tpu-v5e", ax=ax, lw=0.5, ls="--", color="purple")
    line = next(ln for ln in ax.get_lines() if ln.get_label().startswith("TPU v5e"))
    assert (line.get_linewidth(), line.get_linestyle(), line.get_color()) == (0.5, "--", "purple")
    with plt.rc_context({"legend.fontsize": 13}):
        rl.plot_roofline("tpu-v5e", ax=ax)
    assert ax.get_legend().get_texts()[0].get_fontsize() == 13
    rl.plot_matmul_batch("tpu-v5e", [(4096, 4096)], ax=ax, lw=0.7)
    assert next(ln for ln in ax.get_lines() if ln.get_label() == "D = F = 4096").get_linewidth() == 0.7
    plt.close(fig)


def test_plot_without_legend():
    fig, ax = plt.subplots()
    assert rl.plot_roofline("tpu-v5e", ax=ax, legend=False).get_legend() is None
    plt.close(fig)
