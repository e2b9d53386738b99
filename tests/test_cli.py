"""The command line: output, exit codes and one-line errors."""

import json

import pytest

from rooflinelib.cli import main


def test_matmul_prints_the_estimate(capsys):
    assert main(["matmul", "--chip", "h100-sxm", "-B", "256", "-D", "8192", "-F", "8192", "--dtype", "bf16"]) == 0
    out = capsys.readouterr().out
    for word in ("FLOPs", "bytes", "intensity", "T_math", "T_comms", "bounds", "verdict"):
        assert word in out
    assert "communication-bound" in out  # intensity 241 < ridge 295


def test_unknown_chip_suggests_and_exits_1(capsys):
    assert main(["matmul", "--chip", "h100", "-B", "1", "-D", "8", "-F", "8"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rooflinelib: error: unknown accelerator 'h100'") and "h100-sxm" in err
    assert err.count("\n") == 1


def test_dtype_without_a_peak_is_an_error(capsys):
    assert main(["matmul", "--chip", "tpu-v5e", "-B", "1", "-D", "8", "-F", "8", "--dtype", "fp64"]) == 1
    err = capsys.readouterr().err
    assert "TPU v5e has no peak FLOPs/s for dtype 'fp64'; it has 'bf16', 'int8'" in err and err.count("\n") == 1


@pytest.mark.parametrize("bad", ["0", "-3", "2.5"])
def test_non_positive_sizes_exit_2(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["matmul", "--chip", "h100-sxm", "-B", bad, "-D", "8", "-F", "8"])
    assert exc.value.code == 2
    assert "argument -B: must be a positive whole number" in capsys.readouterr().err


def test_specs_lists_chips_and_shows_one(capsys):
    assert main(["specs"]) == 0
    assert "tpu-v5e" in capsys.readouterr().out
    assert main(["specs", "tpu-v5e"]) == 0
    out = capsys.readouterr().out
    assert "ridge" in out and "source:" in out


@pytest.mark.parametrize("sub", ["specs", "matmul", "measure"])
def test_help_for_every_subcommand(sub, capsys):
    with pytest.raises(SystemExit) as exc:
        main([sub, "--help"])
    assert exc.value.code == 0 and f"usage: rooflinelib {sub}" in capsys.readouterr().out


def test_specs_prints_figures_with_si_prefixes(capsys):
    assert main(["specs", "tpu-v5e"]) == 0
    out = capsys.readouterr().out
    assert "197 TFLOP/s" in out and "393 TOP/s" in out
    assert "HBM bandwidth 819 GB/s, capacity 17.2 GB" in out  # 16 GiB = 17.18e9 bytes
    assert (
        "hbm_capacity source: https://cloud.google.com/tpu/docs/v5e (printed as '16 GB', read on 2026-11-23; taken as 16 GiB"
        in out
    )
    assert "45 GB/s one-way (per link)" in out


def test_matmul_prints_times_with_units(capsys):
    # 2*256*8192*8192 FLOPs at 989.5e12 FLOP/s = 34.7 us; 2*(256*8192*2 + 8192**2) bytes at 3.35e12 = 42.6 us
    assert main(["matmul", "--chip", "h100-sxm", "-B", "256", "-D", "8192", "-F", "8192"]) == 0
    out = capsys.readouterr().out
    assert "T_math      34.7 µs" in out and "T_comms     42.6 µs" in out


def test_a_size_too_large_for_a_float_exits_2_without_a_traceback(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["matmul", "--chip", "h100-sxm", "-B", "9" * 401, "-D", "8", "-F", "8"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument -B: is too large: a 401-digit number" in err and "Traceback" not in err


def test_measure_into_an_impossible_folder_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["measure", "--out", str(blocker / "x"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rooflinelib: error: cannot create the --out folder") and err.count("\n") == 1


def test_measure_writes_json_and_png(tmp_path, monkeypatch, capsys):
    from rooflinelib import measure

    tiny = dict(peak_n=32, stream_mib=1, D=32, batch_sizes=[1, 2, 4], dot_lengths=[100], repeats=2)
    monkeypatch.setitem(measure.PRESETS, "quick", tiny)
    assert main(["measure", "--budget", "5", "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "peak matmul fp32" in out and "predicted B" in out
    data = json.loads((tmp_path / "result.json").read_text())
    assert data["budget_s"] == 5.0 and data["sweep"]
    assert (tmp_path / "roofline.png").read_bytes()[:4] == b"\x89PNG"


def test_measure_says_when_a_noisy_sweep_has_no_knee(tmp_path, monkeypatch, capsys):
    """A sweep that falls after its best (18, 194, 21 GFLOP/s) gets no measured knee, and the reason."""
    from rooflinelib import measure

    def point(B, gflops):
        flops = 2.0 * B * 256 * 256
        t = flops / (gflops * 1e9)
        return measure.Point("matmul", "fp32", {"B": B, "D": 256, "F": 256}, flops, 4.0 * (2 * B * 256 + 256 * 256),
                             t, t, t, 3, 1)  # fmt: skip

    sweep = [point(16, 10), point(32, 18), point(64, 194), point(128, 21)]
    copy = measure.Point("copy", "fp32", {"n": 1000}, 0.0, 8e3, 1e-6, 1e-6, 1e-6, 3, 1)
    fake = measure.MachineMeasurement(machine={}, peak={"fp32": sweep[2]}, stream={"copy": copy}, sweep=sweep,
                                      sweep_D=256)  # fmt: skip
    monkeypatch.setattr(measure, "measure_machine", lambda *args, **kwargs: fake)
    assert main(["measure", "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert (
        "measured B = none: the sweep does not rise steadily to a plateau (at B = 128 it runs at 11% of its rate" in out
    )


def test_measure_rejects_a_non_positive_budget(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["measure", "--budget", "0"])
    assert exc.value.code == 2
    assert "positive number of seconds" in capsys.readouterr().err
