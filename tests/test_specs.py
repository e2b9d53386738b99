"""The spec table: the data file and the loaded objects agree, and lookups fail helpfully."""

import tomllib
from importlib import resources

import pytest

import rooflinelib as rl

REQUIRED = {
    "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x",
    "a100-sxm-80gb", "h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "mi300x",
}


@pytest.fixture(scope="module")
def raw_table():
    data = resources.files("rooflinelib").joinpath("data/accelerators.toml").read_bytes()
    return tomllib.loads(data.decode())


def test_table_has_every_required_chip():
    assert REQUIRED <= set(rl.ACCELERATORS)


def test_data_file_and_loaded_table_agree(raw_table):
    assert set(raw_table) == set(rl.ACCELERATORS)
    for key, entry in raw_table.items():
        chip = rl.ACCELERATORS[key]
        assert dict(chip.peak_flops) == {d: float(v) for d, v in entry["peak_flops"].items()}, key
        assert chip.hbm_bandwidth == float(entry["hbm_bandwidth"]), key
        assert chip.hbm_capacity == float(entry["hbm_capacity"]), key
        assert set(chip.links) == set(entry.get("links", {})), key
        for name, link in entry.get("links", {}).items():
            assert chip.links[name].bandwidth == float(link["bandwidth"]), (key, name)


def test_every_entry_and_link_has_a_source_and_conventions(raw_table):
    for key, entry in raw_table.items():
        assert entry["source"].startswith("https://"), key
        assert entry["conventions"].strip(), key
        for name, link in entry.get("links", {}).items():
            assert link["source"].startswith("https://"), (key, name)
            assert link["scope"] in {"per link", "per chip"}, (key, name)


def test_values_are_in_si_base_units(raw_table):
    # catches a figure typed in TFLOP/s or GB/s: every chip here does > 1e13 FLOP/s
    # (dense bf16) and moves > 1e11 bytes/s from HBM
    for key, entry in raw_table.items():
        assert 1e13 < entry["peak_flops"]["bf16"] < 1e17, key
        assert 1e11 < entry["hbm_bandwidth"] < 1e14, key
        assert 1e9 < entry["hbm_capacity"] < 1e13, key


def test_dense_not_sparse_h100_figures():
    # NVIDIA's sheet: 1,979 TFLOPS bf16 *with sparsity*; dense is half
    assert rl.get_accelerator("h100-sxm").peak("bf16") == pytest.approx(1.979e15 / 2, rel=1e-3)


@pytest.mark.parametrize("key, ridge", [("h100-sxm", 295), ("h100-pcie", 378), ("h100-nvl", 214)])
def test_h100_variants_have_different_ridge_points(key, ridge):
    # dense bf16 / HBM: 989.5/3.35, 756.5/2.0, 835.5/3.9 (TFLOP/s over TB/s)
    assert rl.get_accelerator(key).critical_intensity("bf16") == pytest.approx(ridge, abs=1)


def test_tpu_v5e_critical_intensity_vendor_vs_book():
    chip = rl.get_accelerator("tpu-v5e")
    assert chip.critical_intensity("bf16") == pytest.approx(1.97e14 / 8.19e11)  # 240.5 with 819 GB/s
    assert round(chip.critical_intensity("bf16")) == 241


def test_one_way_link_convention():
    # NVIDIA quotes 900 GB/s NVLink for H100 SXM, bidirectional: 450 GB/s one way
    assert rl.get_accelerator("h100-sxm").bandwidth("nvlink") == 4.5e11
    # the book's ICI figure for v5e: 4.5e10 bytes/s one way per link
    assert rl.get_accelerator("tpu-v5e").bandwidth("ici") == 4.5e10


def test_lookup_is_forgiving_about_case_and_separators():
    assert rl.get_accelerator("TPU_V5E") is rl.ACCELERATORS["tpu-v5e"]
    assert rl.get_accelerator(rl.ACCELERATORS["h200"]) is rl.ACCELERATORS["h200"]


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


def test_unknown_dtype_or_memory_lists_what_exists():
    chip = rl.get_accelerator("tpu-v5e")
    with pytest.raises(KeyError, match="TPU v5e has no peak FLOPs/s for dtype 'fp8'; it has 'bf16', 'int8'"):
        chip.peak("fp8")
    with pytest.raises(KeyError, match="has no bandwidth for 'nvlink'; it has 'hbm', 'ici'"):
        chip.bandwidth("nvlink")


def test_custom_accelerator_validates():
    chip = rl.Accelerator.custom("laptop", {"fp32": 2e11}, 4e10)
    assert chip.critical_intensity("fp32") == 5.0
    with pytest.raises(ValueError, match="hbm_bandwidth must be > 0 bytes/s, got 0"):
        rl.Accelerator.custom("broken", {"fp32": 1e12}, 0)


def test_spec_table_is_read_only():
    with pytest.raises(TypeError):
        rl.ACCELERATORS["new"] = None  # type: ignore[index]
    with pytest.raises(AttributeError):
        rl.ACCELERATORS["h200"].hbm_bandwidth = 1.0  # type: ignore[misc]
