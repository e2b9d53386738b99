"""On-chip bandwidths in the spec table, the per-level arithmetic, and the hierarchical roofline plot.

Expected values are worked out here from first principles: the sources' figures typed in (banks,
SMs, clock, the book's ratio), and closed forms of the byte counts (each input read once per row or
column of output tiles), never read from rooflinelib.
"""

from __future__ import annotations

import math
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

import rooflinelib as rl
from rooflinelib.specs import load_accelerators

# The H100 SXM: 32 banks x 4 bytes per clock per SM (CUDA programming guide), 132 SMs, 1.83 GHz.
H100_SMEM = 32 * 4 * 132 * 1.83e9
H100_PEAK, H100_HBM = 1979e12 / 2, 3.35e12
# The TPU v5e: VMEM about 22 times its 819 GB/s HBM (How to Scale Your Model, Part 2).
V5E_VMEM, V5E_PEAK = 22 * 819e9, 197e12


# --- the spec table --------------------------------------------------------------------------------------


def test_h100_shared_memory_is_banks_times_sms_times_clock():
    smem = rl.get_accelerator("h100-sxm").on_chip["smem"]
    assert math.isclose(smem.bandwidth, H100_SMEM)  # 30.92 TB/s
    assert smem.derivation == "132 SMs x 128 bytes/clock x 1.83 GHz"
    assert math.isclose(rl.get_accelerator("h100-sxm").critical_intensity("bf16", "smem"), 32.0, rel_tol=1e-3)


def test_the_clock_is_the_one_the_tensor_peak_assumes():
    """989.5 TFLOPs/s over 132 SMs at 1.83 GHz is 4096 bf16 FLOPs per SM per clock: a whole power of two."""
    per_sm_clock = H100_PEAK / (132 * 1.83e9)
    assert abs(per_sm_clock - 4096) / 4096 < 1e-3


def test_tpu_v5e_vmem_is_22_times_hbm():
    v5e = rl.get_accelerator("tpu-v5e")
    assert math.isclose(v5e.bandwidth("vmem"), V5E_VMEM)  # 18.0 TB/s; the book's 1.78e13 uses 8.1e11
    assert math.isclose(v5e.critical_intensity("bf16", "vmem"), V5E_PEAK / V5E_VMEM)  # 10.9, the book's "10-20"
    assert v5e.memory_levels() == {"hbm": 819e9, "vmem": V5E_VMEM}


def test_every_on_chip_figure_has_a_source_that_names_its_inputs():
    seen = 0
    for chip in rl.ACCELERATORS.values():
        for memory in chip.on_chip.values():
            seen += 1
            assert "https://" in memory.source, f"{chip.key}.{memory.key}: no address in its source"
            if "x" in memory.derivation and "HBM" not in memory.derivation:  # per clock: each input is sourced
                assert memory.source.startswith("derived:")
                for figure in ("132 SMs", "128 bytes per clock", "1.83 GHz", "32 banks", "docs.nvidia.com"):
                    assert figure in memory.source, f"{chip.key}.{memory.key}: the source does not give {figure!r}"
            if "HBM" in memory.derivation:
                assert "22x higher than HBM" in memory.source
    assert seen == 2


def test_no_l2_figure_is_invented():
    assert set(rl.get_accelerator("h100-sxm").memory_levels()) == {"hbm", "smem"}
    with pytest.raises(KeyError, match="has no bandwidth for 'l2'; it has 'hbm', 'smem', 'nvlink', 'pcie'"):
        rl.get_accelerator("h100-sxm").bandwidth("l2")


BASE = """[x]
name = "X"
vendor = "V"
source = "https://example.com"
conventions = "dense"
peak_flops = { bf16 = 1e15 }
hbm_bandwidth = 1e12
hbm_capacity = 8e10
hbm_capacity_printed = "80 GB"
"""


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('[x.on_chip.smem]\nname = "S"\nsource = "s"\n', "x.on_chip.smem must give exactly one of 'bandwidth'"),
        (
            '[x.on_chip.smem]\nname = "S"\nsource = "s"\nbandwidth = 1e13\ntimes_hbm = 10\n',
            "got bandwidth, times_hbm",
        ),
        ('[x.on_chip.smem]\nname = "S"\nsource = "s"\nunits = 10\nbytes_per_clock = 128\n', "missing 'clock_hz'"),
        ('[x.on_chip.smem]\nname = "S"\nsource = "s"\ntimes_hbm = -2\n', "x.on_chip.smem.times_hbm"),
        ('[x.on_chip.smem]\nname = "S"\nbandwidth = 1e13\n', "x.on_chip.smem is missing 'source'"),
        ('[x.on_chip.smem]\nname = "S"\nsource = "s"\nbandwith = 1e13\n', "bandwith is not a known key"),
        ('[x.on_chip.hbm]\nname = "H"\nsource = "s"\nbandwidth = 1e13\n', "is not on the chip"),
    ],
)
def test_the_loader_refuses_a_bad_on_chip_entry(tmp_path: pathlib.Path, entry: str, message: str):
    path = tmp_path / "chips.toml"
    path.write_text(BASE + entry)
    with pytest.raises(ValueError, match=message):
        load_accelerators(str(path))


def test_the_loader_computes_a_derived_bandwidth(tmp_path: pathlib.Path):
    path = tmp_path / "chips.toml"
    path.write_text(
        BASE + '[x.on_chip.l1]\nname = "L1"\nsource = "s"\nunits = 10\nbytes_per_clock = 64\nclock_hz = 2e9\n'
    )
    assert load_accelerators(str(path))["x"].bandwidth("l1") == 10 * 64 * 2e9


# --- the arithmetic ----------------------------------------------------------------------------------------


def hand_tiled_intensity(m: int, k: int, n: int, bm: int, bn: int) -> float:
    """bf16: X (2mk bytes) read n/bn times, Y (2kn) read m/bm times, the output (2mn) written once."""
    return 2 * m * k * n / (2 * m * k * (n / bn) + 2 * k * n * (m / bm) + 2 * m * n)


def test_a_tiled_matmul_has_one_intensity_per_level():
    n = 4096
    flops = rl.tiled_matmul_flops(n, n, n, 128, 64, 256)
    got = rl.level_intensities(
        flops, rl.tiled_matmul_level_bytes(n, n, n, {"l2": (128, 64, 256), "smem": (64, 64, 256)})
    )
    assert math.isclose(got["l2"], hand_tiled_intensity(n, n, n, 128, 256))  # 4096 / 49 = 83.6
    assert math.isclose(got["smem"], hand_tiled_intensity(n, n, n, 64, 256))  # 4096 / 81 = 50.6
    assert math.isclose(got["l2"], 4096 / 49) and math.isclose(got["smem"], 4096 / 81)


def test_hbm_needs_only_the_compulsory_bytes_far_right_of_the_ridge():
    """Each matrix once, 2 * 3 * 4096**2 bytes, against the tile count into shared memory."""
    n = 4096
    flops = 2 * n**3
    compulsory = 2 * (n * n + n * n + n * n)  # bf16 X, Y and the output, each once
    assert rl.matmul_bytes(n, n, n) == compulsory
    assert math.isclose(flops / compulsory, 4096 / 3)  # 1365.3 FLOPs/byte
    assert flops / compulsory > 4 * H100_PEAK / H100_HBM  # the HBM ridge is 295.4
    into_smem = rl.tiled_matmul_level_bytes(n, n, n, {"l2": (128, 64, 256)})["l2"]
    assert into_smem == 2 * n * n * 49 > compulsory  # X read 16 times, Y 32 times, the output once
    assert flops / into_smem * H100_HBM < 0.3 * H100_PEAK  # 280 TFLOPs/s, were L2 no faster than HBM


def test_a_prefill_reads_q_k_v_and_the_output_once_from_hbm():
    q = s = 8192
    d = 128
    compulsory = rl.head_attention_bytes(q, s, d, q)  # one block of all the rows: K and V read once
    assert compulsory == 2 * (q * d + 2 * s * d + q * d)  # bf16 Q, K, V, output
    assert math.isclose(rl.head_attention_flops(q, s, d) / compulsory, q / 2)  # 4096 FLOPs/byte


def test_decode_attention_does_about_one_flop_per_byte_at_every_level():
    s, d = 8192, 128
    flops = rl.head_attention_flops(1, s, d)
    assert flops == 4 * s * d
    intensity = flops / rl.head_attention_bytes(1, s, d, 1)
    assert math.isclose(intensity, s / (s + 1))  # 4sd FLOPs over 2 * 2sd (K, V) + 2 * 2d (q in, out) bytes


def test_a_flashattention_block_multiplies_the_intensity_by_its_rows():
    q = s = 8192
    d = 128
    for rows in (64, 128):
        intensity = rl.head_attention_flops(q, s, d) / rl.head_attention_bytes(q, s, d, rows)
        assert math.isclose(intensity, s * rows / (s + rows))  # 126.0 for 128 rows, 63.5 for 64


def test_the_lowest_ceiling_binds():
    levels = {"hbm": H100_HBM, "smem": H100_SMEM}
    decode = {"hbm": 1.0, "smem": 1.0}
    assert rl.level_ceilings(decode, H100_PEAK, levels) == {"hbm": H100_HBM, "smem": H100_SMEM}
    assert rl.binding_level(decode, H100_PEAK, levels) == "hbm"
    assert rl.binding_level({"hbm": 20.0, "smem": 1.0}, H100_PEAK, levels) == "smem"  # 6.7e13 > 3.09e13
    assert rl.binding_level({"hbm": 300.0, "smem": 33.0}, H100_PEAK, levels) == "compute"  # both past their ridges


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rl.tiled_matmul_level_bytes(64, 64, 64, {}), ValueError, "tiles must map a memory level"),
        (lambda: rl.tiled_matmul_level_bytes(64, 64, 64, {"hbm": (32, 32)}), ValueError, r"tiles\['hbm'\] must be"),
        (lambda: rl.tiled_matmul_level_bytes(64, 64, 64, {"hbm": (48, 32, 32)}), ValueError, "must divide m=64"),
        (lambda: rl.head_attention_bytes(8, 64, 128, 3), ValueError, "rows_per_load=3 must divide queries=8"),
        (lambda: rl.head_attention_flops(0, 64, 128), ValueError, "queries"),
        (lambda: rl.level_intensities(1e9, {"hbm": 0}), ValueError, r"level_bytes\['hbm'\]"),
        (lambda: rl.level_ceilings({"l2": 10.0}, 1e15, {"hbm": 1e12}), KeyError, "no bandwidth for memory level 'l2'"),
    ],
)
def test_the_arithmetic_rejects_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


# --- the plot ----------------------------------------------------------------------------------------------


def test_the_plot_draws_a_roof_per_level_and_a_point_per_level_on_its_roof():
    fig, ax = plt.subplots()
    rl.plot_level_roofline("h100-sxm", {"k": {"hbm": 10.0, "smem": 10.0}}, ax=ax)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["HBM: 3.35 TB/s", "shared memory (L1): 30.9 TB/s", "bf16 peak: 989.5 TFLOPs/s", "k"]
    points = sorted(
        (tuple(line.get_xdata()), tuple(line.get_ydata())) for line in ax.lines if len(line.get_xdata()) == 1
    )
    assert points == [((10.0,), (10 * H100_HBM,)), ((10.0,), (10 * H100_SMEM,))]
    plt.close(fig)


def test_an_achieved_rate_puts_every_level_point_at_that_height():
    fig, ax = plt.subplots()
    rl.plot_level_roofline("h100-sxm", {"k": {"hbm": 30.0, "smem": 15.0}}, achieved={"k": 8e13}, ax=ax)
    ys = {line.get_ydata()[0] for line in ax.lines if len(line.get_xdata()) == 1}
    assert ys == {8e13}
    plt.close(fig)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"kernels": {}}, ValueError, "kernels must map a label"),
        ({"kernels": {"k": 5}}, ValueError, r"kernels\['k'\] must map memory levels"),
        ({"kernels": {"k": {"l2": 5.0}}}, KeyError, "has no bandwidth for memory level 'l2'; it has 'hbm', 'smem'"),
        ({"kernels": {"k": {"hbm": -1.0}}}, ValueError, r"kernels\['k'\]\['hbm'\]"),
        (
            {"kernels": {"k": {"hbm": 5.0}}, "achieved": {"q": 1e12}},
            KeyError,
            "achieved names 'q', which is not a kernel",
        ),
        ({"kernels": {"k": {"hbm": 5.0}}, "achieved": {"k": 0}}, ValueError, r"achieved\['k'\]"),
        ({"kernels": {"k": {"hbm": 5.0}}, "dtype": "fp4"}, KeyError, "no peak FLOPs/s for dtype 'fp4'"),
    ],
)
def test_the_plot_rejects_bad_input_before_drawing(kwargs, error, message):
    fig, ax = plt.subplots()
    with pytest.raises(error, match=message):
        rl.plot_level_roofline("h100-sxm", ax=ax, **kwargs)
    assert not ax.lines, "nothing may be drawn before the arguments are checked"
    plt.close(fig)


def test_the_plot_names_unknown_chips():
    with pytest.raises(KeyError, match="unknown accelerator 'h100'"):
        rl.plot_level_roofline("h100", {"k": {"hbm": 5.0}})
