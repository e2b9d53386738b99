"""The spec table against the vendors' datasheets, the loader's checks, and friendly lookups.

The expected figures below are typed in from the vendor pages cited in
``accelerators.toml`` (in the vendor's own units), not read from the data file,
so a typo in either place fails a test; astropy checks its constants against
CODATA the same way.
"""

import math

import pytest

import rooflinelib as rl
from rooflinelib.specs import load_accelerators

T = 1e12  # tera
G = 1e9  # giga
GB, GiB, MiB = 1e9, 2**30, 2**20

#: Dense peaks; NVIDIA and AMD print tensor-core figures "with sparsity", twice the dense ones.
VENDOR = {
    # cloud.google.com/tpu/docs/v4: 275 TFLOPs bf16 and int8, 32 GiB, 1200 GBps
    "tpu-v4": {"bf16": 275 * T, "int8": 275 * T, "hbm": 1200 * G, "capacity": 32 * GiB},
    # cloud.google.com/tpu/docs/v5e: 197 TFLOPs, 393 TOPs, 819 GBps; "16 GB", read as GiB like the other TPUs
    "tpu-v5e": {"bf16": 197 * T, "int8": 393 * T, "hbm": 819 * G, "capacity": 16 * GiB},
    # v5p: 459 TFLOPs, 918 TOPs, 2765 GBps; 95 GiB (tpu7x page's table)
    "tpu-v5p": {"bf16": 459 * T, "int8": 918 * T, "hbm": 2765 * G, "capacity": 95 * GiB},
    # v6e: 918 TFLOPs, 1836 TOPs, 1638 GBps; 32 GiB (tpu7x page's table)
    "tpu-v6e": {"bf16": 918 * T, "int8": 1836 * T, "hbm": 1638 * G, "capacity": 32 * GiB},
    # tpu7x: 2307 TFLOPs bf16, 4614 fp8, 192 GiB, 7380 GBps
    "tpu7x": {"bf16": 2307 * T, "fp8": 4614 * T, "hbm": 7380 * G, "capacity": 192 * GiB},
    # A100 SXM 80GB: fp32 19.5; tf32 312*, bf16 624*, int8 1248* (* with sparsity); 2039 GB/s; "80 GB",
    # which nvidia-smi reports as 81920MiB (the capacity the course computes with)
    "a100-sxm-80gb": {
        "fp32": 19.5 * T,
        "tf32": 312 * T / 2,
        "bf16": 624 * T / 2,
        "int8": 1248 * T / 2,
        "hbm": 2039 * G,
        "capacity": 81920 * MiB,
    },
    # H100 SXM: fp32 67; tf32 989*, bf16 1979*, fp8 3958*, int8 3958*; 3.35 TB/s; "80 GB", reported as 81559MiB
    "h100-sxm": {
        "fp32": 67 * T,
        "tf32": 989 * T / 2,
        "bf16": 1979 * T / 2,
        "fp8": 3958 * T / 2,
        "int8": 3958 * T / 2,
        "hbm": 3.35 * 1000 * G,
        "capacity": 81559 * MiB,
    },
    # H100 PCIe: fp32 51; tf32 756*, bf16 1513*, fp8 3026*, int8 3026*; 2 TB/s; 80 GB
    "h100-pcie": {
        "fp32": 51 * T,
        "tf32": 756 * T / 2,
        "bf16": 1513 * T / 2,
        "fp8": 3026 * T / 2,
        "int8": 3026 * T / 2,
        "hbm": 2000 * G,
        "capacity": 80 * GB,
    },
    # H100 NVL: fp32 60; tf32 835*, bf16 1671*, fp8 3341*, int8 3341*; 3.9 TB/s; 94 GB
    "h100-nvl": {
        "fp32": 60 * T,
        "tf32": 835 * T / 2,
        "bf16": 1671 * T / 2,
        "fp8": 3341 * T / 2,
        "int8": 3341 * T / 2,
        "hbm": 3900 * G,
        "capacity": 94 * GB,
    },
    # H200 SXM: the H100 SXM's compute; 4.8 TB/s; "141 GB", reported as 143771MiB
    "h200": {"bf16": 1979 * T / 2, "fp8": 3958 * T / 2, "hbm": 4800 * G, "capacity": 143771 * MiB},
    # B200, per GPU of an 8-GPU HGX: 4.5 PFLOPS bf16* and 9 PFLOPS fp8*; "180 GB", reported as 183359MiB
    "b200": {"bf16": 4500 * T / 2, "fp8": 9000 * T / 2, "capacity": 183359 * MiB},
    # MI300X (AMD prints the dense figures too): fp32 matrix 163.4, tf32 653.7, bf16 1307.4, fp8 2614.9;
    # 5.3 TB/s; 192 GB
    "mi300x": {
        "fp32": 163.4 * T,
        "tf32": 653.7 * T,
        "bf16": 1307.4 * T,
        "fp8": 2614.9 * T,
        "hbm": 5300 * G,
        "capacity": 192 * GB,
    },
}


def _table_value(chip, figure):
    if figure == "hbm":
        return chip.hbm_bandwidth
    if figure == "capacity":
        return chip.hbm_capacity
    return chip.peak(figure)


CASES = [(key, figure, value) for key, figures in VENDOR.items() for figure, value in figures.items()]


def test_table_has_every_chip_checked_here():
    assert set(VENDOR) == set(rl.ACCELERATORS)


@pytest.mark.parametrize("key, figure, vendor", CASES, ids=[f"{k}-{f}" for k, f, _ in CASES])
def test_table_matches_the_vendor_datasheet(key, figure, vendor):
    assert _table_value(rl.ACCELERATORS[key], figure) == pytest.approx(vendor, rel=1e-9)


@pytest.mark.parametrize(
    "key, link, one_way",
    [
        ("h100-sxm", "nvlink", 900 * G / 2),  # NVIDIA: 900 GB/s, both directions together
        ("a100-sxm-80gb", "nvlink", 600 * G / 2),
        ("b200", "nvlink", 1800 * G / 2),
        ("tpu-v5e", "ici", 4.5e10),  # the book's ICI table: 4.5e10 bytes/s one way per link
        ("tpu-v5p", "ici", 9e10),
    ],
)
def test_links_are_one_way(key, link, one_way):
    assert rl.ACCELERATORS[key].bandwidth(link) == pytest.approx(one_way)


def test_every_entry_and_link_has_a_source_and_conventions():
    for key, chip in rl.ACCELERATORS.items():
        assert chip.source.startswith("https://"), key
        assert chip.conventions.strip(), key
        for name, link in chip.links.items():
            assert link.source.startswith("https://"), (key, name)
            assert link.scope in {"per link", "per chip"}, (key, name)


def test_capacity_sources_quote_the_vendor_figure_and_unit():
    for key, chip in rl.ACCELERATORS.items():
        note = chip.source_of("hbm_capacity")
        assert note.startswith("https://") and (" GB" in note or " GiB" in note), key
    assert "16 GiB" in rl.ACCELERATORS["tpu-v5e"].source_of("hbm_capacity")
    assert "32 GiB" in rl.ACCELERATORS["tpu-v4"].source_of("hbm_capacity")
    # a figure without a source of its own falls back to the chip's
    assert rl.ACCELERATORS["h100-sxm"].source_of("peak_flops") == rl.ACCELERATORS["h100-sxm"].source


# What each device reports (nvidia-smi's memory.total), typed in from the public reports the table cites.
REPORTED = {"a100-sxm-80gb": 81920 * MiB, "h100-sxm": 81559 * MiB, "h200": 143771 * MiB, "b200": 183359 * MiB}
PRINTED = {
    "tpu-v4": "32 GiB",
    "tpu-v5e": "16 GB",
    "tpu-v5p": "95 GB",
    "tpu-v6e": "32 GB",
    "tpu7x": "192 GiB",
    "a100-sxm-80gb": "80 GB",
    "h100-sxm": "80 GB",
    "h100-pcie": "80 GB",
    "h100-nvl": "94 GB",
    "h200": "141 GB",
    "b200": "180 GB",
    "mi300x": "192 GB",
}


def test_each_capacity_says_what_it_is_and_the_course_computes_with_the_device_report():
    for key, chip in rl.ACCELERATORS.items():
        assert chip.hbm_capacity_printed == PRINTED[key], key
        amount = PRINTED[key].split()[0]
        if key in REPORTED:
            assert chip.hbm_capacity_reported == chip.hbm_capacity == REPORTED[key], key
            assert chip.capacity_basis == "reported" and "MiB" in chip.source_of("hbm_capacity_reported"), key
            assert chip.source_of("hbm_capacity_reported").startswith("https://github.com/"), key
            # "about 7% above the printed figure read as decimal GB" (the table's header and the pages)
            assert 1.065 < REPORTED[key] / (float(amount) * GB) < 1.075, key
        else:
            assert chip.hbm_capacity_reported is None and chip.capacity_basis == "printed", key
            # elsewhere the printed figure: GiB for Google (its comparison table's unit), decimal GB otherwise
            per_unit = GiB if chip.vendor == "Google" else GB
            assert chip.hbm_capacity == float(amount) * per_unit, key


def test_collective_latencies_are_measured_floors_with_their_source():
    h100, v5e = rl.get_accelerator("h100-sxm"), rl.get_accelerator("tpu-v5e")
    assert h100.scale_up_link().name == "nvlink" and h100.scale_up_link().collective_latency == 12.5e-6
    assert "12.49 us" in h100.scale_up_link().collective_latency_source
    assert v5e.scale_up_link().name == "ici" and v5e.scale_up_link().collective_latency == 8e-6
    assert "8us" in v5e.scale_up_link().collective_latency_source
    # the v5e's figure is a small all-gather, the H100's an all-reduce measured on another Hopper chip
    assert (v5e.scale_up_link().collective, v5e.scale_up_link().collective_measured_on) == ("all-gather", "")
    assert (h100.scale_up_link().collective, h100.scale_up_link().collective_measured_on) == ("all-reduce", "H20")
    assert "AllGather" in v5e.scale_up_link().collective_latency_source
    assert "(H20)" in h100.scale_up_link().collective_latency_source
    assert rl.get_accelerator("mi300x").scale_up_link().name == "infinity-fabric"
    with pytest.raises(KeyError, match="has no chip-to-chip link"):
        rl.Accelerator.custom("laptop", {"fp32": 1e12}, 5e10).scale_up_link()


def test_per_figure_sources_are_kept():
    assert "roughly 7e12" in rl.ACCELERATORS["tpu-v5p"].source_of("vector_flops")
    assert rl.ACCELERATORS["tpu-v5p"].vector_flops == 7e12


@pytest.mark.parametrize("key, ridge", [("h100-sxm", 295), ("h100-pcie", 378), ("h100-nvl", 214)])
def test_h100_variants_have_different_ridge_points(key, ridge):
    # dense bf16 / HBM: 989.5/3.35, 756.5/2.0, 835.5/3.9 (TFLOP/s over TB/s)
    assert rl.get_accelerator(key).critical_intensity("bf16") == pytest.approx(ridge, abs=1)


def test_lookup_is_forgiving_about_case_and_separators():
    assert rl.get_accelerator("TPU_V5E") is rl.ACCELERATORS["tpu-v5e"]
    assert rl.get_accelerator(" h100 sxm ") is rl.ACCELERATORS["h100-sxm"]
    assert rl.get_accelerator(rl.ACCELERATORS["h200"]) is rl.ACCELERATORS["h200"]
    assert rl.accelerator_key("H100_SXM") == "h100-sxm"
    assert rl.normalize_name("TPU v5e") == "tpu-v5e"


@pytest.mark.parametrize(
    "name, suggestion",
    [("tpu-v5", "'tpu-v5e' or 'tpu-v5p'"), ("h100", "'h100-sxm'"), ("ironwood", "'tpu7x'"), ("h100-sxn", "'h100-sxm'")],
)
def test_unknown_chip_suggests_close_matches(name, suggestion):
    with pytest.raises(KeyError, match=f"unknown accelerator '{name}'; did you mean .*{suggestion}"):
        rl.get_accelerator(name)


def test_unknown_chip_without_close_match_lists_all():
    with pytest.raises(KeyError, match="known: tpu-v4, "):
        rl.get_accelerator("abacus")


def test_lookup_of_a_non_string_is_a_type_error():
    with pytest.raises(TypeError, match="accelerator must be a name such as 'tpu-v5e', got 5"):
        rl.get_accelerator(5)  # type: ignore[arg-type]


def test_unknown_dtype_or_memory_lists_what_exists():
    chip = rl.get_accelerator("tpu-v5e")
    with pytest.raises(KeyError, match="TPU v5e has no peak FLOPs/s for dtype 'fp8'; it has 'bf16', 'int8'"):
        chip.peak("fp8")
    with pytest.raises(KeyError, match="has no bandwidth for 'nvlink'; it has 'hbm', 'vmem', 'ici'"):
        chip.bandwidth("nvlink")


def test_custom_accelerator_validates():
    chip = rl.Accelerator.custom("laptop", {"fp32": 2e11}, 4e10)
    assert chip.critical_intensity("fp32") == 5.0
    with pytest.raises(ValueError, match="hbm_bandwidth must be > 0 bytes/s, got 0"):
        rl.Accelerator.custom("broken", {"fp32": 1e12}, 0)
    with pytest.raises(TypeError, match=r"peak_flops\['bf16'\] must be a single number, got an array of shape \(2,\)"):
        rl.Accelerator.custom("gpu", {"bf16": [1e14, 2e14]}, 1e12)
    with pytest.raises(KeyError, match="unknown dtype 'bfloat16'"):
        rl.Accelerator.custom("gpu", {"bfloat16": 1e14}, 1e12)
    with pytest.raises(ValueError, match="peak_flops must map at least one dtype"):
        rl.Accelerator.custom("gpu", {}, 1e12)


def test_spec_table_is_read_only():
    with pytest.raises(TypeError):
        rl.ACCELERATORS["new"] = None  # type: ignore[index]
    with pytest.raises(AttributeError):
        rl.ACCELERATORS["h200"].hbm_bandwidth = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        rl.ACCELERATORS["h200"].peak_flops["bf16"] = 1.0  # type: ignore[index]
    with pytest.raises(TypeError):
        rl.ACCELERATORS["h200"].links["pcie"] = None  # type: ignore[index]


# ----------------------------------------------------------------------------- the loader's checks

GOOD = """
[chip]
name = "Chip"
vendor = "V"
source = "https://example.com"
conventions = "dense"
peak_flops = { bf16 = 1e15 }
hbm_bandwidth = 2e12
hbm_capacity = 8e10
hbm_capacity_printed = "80 GB"
  [chip.links.ici]
  bandwidth = 4.5e10
  scope = "per link"
  source = "https://example.com"
"""


def _load(tmp_path, text):
    path = tmp_path / "chips.toml"
    path.write_text(text)
    return load_accelerators(str(path))


def test_a_good_file_loads(tmp_path):
    chip = _load(tmp_path, GOOD)["chip"]
    assert chip.peak("bf16") == 1e15 and chip.bandwidth("ici") == 4.5e10 and chip.hbm_capacity == 8e10


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("hbm_bandwidth = 2e12", "hbm_bandwidth = -5", "chip.hbm_bandwidth must be > 0 bytes/s, got -5"),
        (
            "hbm_bandwidth = 2e12",
            'hbm_bandwidth = "lots"',
            "chip.hbm_bandwidth must be a number in bytes/s, got 'lots'",
        ),
        ("hbm_bandwidth = 2e12", "hbm_bandwidth = nan", "chip.hbm_bandwidth must be a finite number"),
        ("hbm_bandwidth = 2e12", "hbm_bandwidth = true", "chip.hbm_bandwidth must be a number in bytes/s, got True"),
        ("bf16 = 1e15", "bf16 = 0", "chip.peak_flops.bf16 must be > 0 FLOP/s, got 0"),
        ("bf16 = 1e15", "bf16 = inf", "chip.peak_flops.bf16 must be a finite number"),
        ("bf16 = 1e15", "bfloat16 = 1e15", "chip.peak_flops.bfloat16 is not a known key"),
        ("peak_flops = { bf16 = 1e15 }", "peak_flops = {}", "chip.peak_flops must name at least one dtype"),
        ("hbm_capacity = 8e10", "hbm_capacity = -1", "chip.hbm_capacity must be > 0 bytes, got -1"),
        (
            "hbm_capacity = 8e10",
            "hbm_capacty = 8e10",
            "chip.hbm_capacty is not a known key; did you mean 'hbm_capacity'",
        ),
        ("hbm_capacity = 8e10\n", "", "chip is missing 'hbm_capacity'"),
        ('vendor = "V"', "vendor = 3", "chip.vendor must be non-empty text, got 3"),
        ("bandwidth = 4.5e10", "bandwidth = -4.5e10", "chip.links.ici.bandwidth must be > 0 bytes/s"),
        ('scope = "per link"', 'scope = "both ways"', "chip.links.ici.scope must be 'per link' or 'per chip'"),
        ('scope = "per link"', 'scope = "per link"\n  count = 0', "chip.links.ici.count must be a whole number >= 1"),
        ('scope = "per link"', 'scope = "per link"\n  speed = 1', "chip.links.ici.speed is not a known key"),
        ('hbm_capacity_printed = "80 GB"\n', "", "chip is missing 'hbm_capacity_printed'"),
        (
            "hbm_capacity = 8e10",
            'hbm_capacity = 8e10\nhbm_capacity_reported = 8.5e10\nhbm_capacity_reported_source = "https://example.com"',
            "chip.hbm_capacity must be the reported figure, 85000000000 bytes",
        ),
        (
            "hbm_capacity = 8e10",
            "hbm_capacity = 8.5e10\nhbm_capacity_reported = 8.5e10",
            "chip is missing 'hbm_capacity_reported_source'",
        ),
        (
            'scope = "per link"',
            'scope = "per link"\n  collective_latency = 1e-6',
            "chip.links.ici must give collective_latency, collective_latency_source and collective together",
        ),
        (
            'scope = "per link"',
            'scope = "per link"\n  collective_latency = 1e-6\n  collective_latency_source = "s"',
            "chip.links.ici must give collective_latency, collective_latency_source and collective together",
        ),
        (
            'scope = "per link"',
            'scope = "per link"\n  collective_latency = 1e-6\n  collective_latency_source = "s"\n  collective = "gather"',
            "chip.links.ici.collective must be 'all-reduce' or 'all-gather', got 'gather'",
        ),
        (
            'scope = "per link"',
            'scope = "per link"\n  collective_measured_on = "H20"',
            "chip.links.ici gives collective_measured_on without a collective_latency",
        ),
        (
            'scope = "per link"',
            'scope = "per link"\n  collective_latency = 0\n  collective_latency_source = "s"\n  collective = "all-reduce"',
            "chip.links.ici.collective_latency must be > 0 s, got 0",
        ),
    ],
)
def test_bad_figures_and_keys_are_refused_with_chip_and_field(tmp_path, old, new, message):
    assert old in GOOD
    with pytest.raises(ValueError, match="^chips.toml: " + message.replace("(", r"\(").replace(")", r"\)")):
        _load(tmp_path, GOOD.replace(old, new, 1))


def test_invalid_toml_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="chips.toml: not valid TOML"):
        _load(tmp_path, "[chip\n")


def test_nan_is_not_silently_loaded(tmp_path):
    # the reason for the checks: before them, nan loaded and every ridge point became nan
    with pytest.raises(ValueError):
        _load(tmp_path, GOOD.replace("bf16 = 1e15", "bf16 = nan"))
    assert not math.isnan(rl.ACCELERATORS["tpu-v5e"].critical_intensity())
