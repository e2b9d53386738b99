"""Honesty properties of rooflinelib.measure: what is timed, what is reported, what is recorded."""

import importlib.util
import itertools
import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import rooflinelib as rl
from rooflinelib import measure as M
from rooflinelib.measure import sweep as S

TINY = {
    "peak_n": 32,
    "stream_mib": 1,
    "D": 32,
    "batch_sizes": [1, 2, 4],
    "dot_lengths": [100, 1000],
    "staircase_min_kib": 4,
    "staircase_max_mib": 1 / 16,
    "repeats": 3,
}


class FakeClock:
    """A clock that advances only when told, so timings are exact."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


# ------------------------------------------------------------------ timing


def test_median_of_repeats_and_warmup_excluded():
    clock = FakeClock()
    durations = iter([100.0, 5.0, 1.0, 3.0, 2.0, 4.0])  # the first call is the warm-up
    calls = []

    def fn():
        calls.append(1)
        clock.now += next(durations)

    t = M.time_it(fn, warmup=1, repeats=5, clock=clock)
    assert len(calls) == 6
    assert t.times == (5.0, 1.0, 3.0, 2.0, 4.0)
    assert (t.median, t.min, t.max, t.repeats, t.warmup) == (3.0, 1.0, 5.0, 5, 1)


def test_sync_runs_before_the_clock_stops():
    """An asynchronous device: the work only 'finishes' when sync() is called."""
    clock = FakeClock()
    events = []
    backend_pending = []

    def launch():
        events.append("launch")
        backend_pending.append(2.0)  # queued work, not yet done

    def sync():
        events.append("sync")
        while backend_pending:
            clock.now += backend_pending.pop()

    t = M.time_it(launch, warmup=1, repeats=3, sync=sync, clock=clock)
    assert t.times == (2.0, 2.0, 2.0)  # without sync before the stop these would be 0
    assert events == ["launch", "sync"] * 4


# ------------------------------------------------------------------ backends


def _fake_torch(clock, log):
    class FakeTensor:
        def copy_(self, other):
            log.append("copy")
            return self

    def synchronize(device=None):
        log.append(f"sync {device}")
        clock.now += 1.0

    return SimpleNamespace(
        bfloat16="bf16",
        float16="fp16",
        float32="fp32",
        __version__="0.0-fake",
        version=SimpleNamespace(cuda="0.0"),
        randn=lambda *shape, device, dtype: (log.append(f"randn {dtype} on {device}"), FakeTensor())[1],
        matmul=lambda x, w: log.append("matmul"),
        dot=lambda x, y: log.append("dot"),
        add=lambda b, c, alpha, out: log.append("add"),
        cuda=SimpleNamespace(
            is_available=lambda: True,
            get_device_name=lambda device=None: f"Fake GPU {device}",
            device_count=lambda: 2,
            synchronize=synchronize,
        ),
    )


def test_gpu_path_with_fake_torch_syncs_every_timed_run():
    clock, log = FakeClock(), []
    be = M.TorchBackend("bf16", device="cuda:1", torch_module=_fake_torch(clock, log))
    p = M.measure_matmul(be, 4, 8, 8, warmup=2, repeats=3, clock=clock)
    assert log == ["randn bf16 on cuda:1"] * 2 + ["matmul", "sync cuda:1"] * 5
    assert p.median_s == 1.0 and p.repeats == 3 and p.warmup == 2
    assert p.bytes == 2 * (4 * 8 + 8 * 8 + 4 * 8)  # bf16: 2 bytes for each element of x, w and out
    assert be.info()["device"] == "Fake GPU cuda:1"


def test_with_dtype_keeps_the_device_and_module():
    """The peak in a second dtype must run on the same device as the rest of the measurement."""
    clock, log = FakeClock(), []
    fake = _fake_torch(clock, log)
    be = M.TorchBackend("bf16", device="cuda:1", torch_module=fake).with_dtype("fp32")
    assert (be.dtype, be.device, be.torch) == ("fp32", "cuda:1", fake)
    be.matmul(2, 2, 2)
    assert log == ["randn fp32 on cuda:1"] * 2
    assert M.NumpyBackend("fp32").with_dtype("fp64").dtype == "fp64"


class FakeJaxArray:
    def __init__(self, clock, log, cost=0.0):
        self.clock, self.log, self.cost = clock, log, cost

    def block_until_ready(self):
        self.log.append("block")
        self.clock.now += self.cost
        return self


def _fake_jax(clock, log):
    """Enough of jax for the backend: arrays placed on a device, jit-compiled functions that run asynchronously."""
    device = SimpleNamespace(device_kind="Fake TPU", __str__=lambda self: "fake:0")

    def jit(fn):
        log.append("jit")

        def run(*args):
            log.append("run")
            fn(*args)
            return FakeJaxArray(clock, log, cost=0.5)  # the work is queued; it costs 0.5 s once waited for

        return run

    def ones(shape, dtype):
        log.append(f"ones {shape} {dtype}")
        return np.ones(shape)

    return SimpleNamespace(
        __version__="0.0-fake",
        devices=lambda: [device],
        device_put=lambda x, d: (log.append(f"put on {d.device_kind}"), x)[1],
        jit=jit,
        numpy=SimpleNamespace(ones=ones, matmul=np.matmul, dot=np.dot),
    )


def test_jax_backend_with_fake_jax_blocks_on_every_timed_run():
    clock, log = FakeClock(), []
    be = M.JaxBackend("bf16", jax_module=_fake_jax(clock, log))
    p = M.measure_matmul(be, 4, 8, 8, warmup=1, repeats=3, clock=clock)
    assert log[:5] == ["ones (4, 8) bfloat16", "put on Fake TPU", "ones (8, 8) bfloat16", "put on Fake TPU", "jit"]
    assert log[5:] == ["run", "block"] * 4
    assert p.median_s == 0.5 and p.repeats == 3  # the wait is timed, not just the launch
    assert be.info()["device"] == "Fake TPU" and be.info()["jax"] == "0.0-fake"
    fp32 = be.with_dtype("fp32")
    assert (fp32.dtype, fp32.jax, fp32.device) == ("fp32", be.jax, be.device)
    for op in (fp32.dot(8), fp32.copy(8), fp32.triad(8)):
        op()
        fp32.sync()


def test_backends_are_independent_classes_behind_one_protocol():
    clock = FakeClock()
    backends = [
        M.NumpyBackend(),
        M.TorchBackend(torch_module=_fake_torch(clock, [])),
        M.JaxBackend(jax_module=_fake_jax(clock, [])),
    ]
    for be in backends:
        assert isinstance(be, M.Backend), type(be).__name__
        assert type(be).__mro__[1:] == (object,), f"{type(be).__name__} should not inherit another backend"


def test_optional_backends_without_their_package_say_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(RuntimeError, match="pip install torch"):
        M.TorchBackend()
    with pytest.raises(RuntimeError, match="pip install jax"):
        M.get_backend("jax")


def test_torch_backend_without_a_gpu_says_so():
    fake = _fake_torch(FakeClock(), [])
    fake.cuda.is_available = lambda: False
    with pytest.raises(RuntimeError, match="no CUDA device"):
        M.TorchBackend(torch_module=fake)
    assert M.TorchBackend(device="cpu", torch_module=fake).device == "cpu"


# ------------------------------------------------------------------ sweeps and budget


def test_budget_respected_and_truncation_recorded():
    clock = FakeClock()
    be = M.NumpyBackend("fp32")
    real = be.matmul

    def slow_matmul(B, D, F):
        fn = real(B, D, F)

        def run():
            clock.now += 0.1 * B  # each run costs 0.1 s per row of the batch
            return fn()

        return run

    be.matmul = slow_matmul
    pts, cut = M.sweep_matmul(be, 8, [1, 2, 4, 8, 16], repeats=3, budget_s=3.0, progress=False, clock=clock)
    assert cut is True
    assert [p.sizes["B"] for p in pts] == [1, 2, 4]  # B = 8 (3.2 s more) would overrun
    assert clock.now <= 3.0 + 1e-9
    pts, cut = M.sweep_matmul(be, 8, [1, 2], repeats=3, budget_s=None, progress=False, clock=clock)
    assert cut is False and len(pts) == 2


def test_intensities_use_the_librarys_counting():
    pts, _ = M.sweep_dot(M.NumpyBackend("fp32"), [1000], repeats=2, progress=False)
    assert pts[0].intensity == pytest.approx((2 * 1000 - 1) / (4 * 2 * 1000 + 4))
    p = M.measure_matmul(M.NumpyBackend("fp32"), 4, 16, 8, repeats=2)
    assert p.intensity == pytest.approx(2 * 4 * 16 * 8 / (4 * (4 * 16 + 16 * 8 + 4 * 8)))


def test_dot_counts_live_with_the_matmul_counts():
    assert rl.matmul.dot_flops(1000) == 1999.0
    assert rl.matmul.dot_bytes(1000, "bf16") == 2 * 2001
    with pytest.raises(ValueError, match="N must be a whole number"):
        rl.matmul.dot_flops(0)


def test_progress_bar_only_for_long_sweeps():
    items = [1, 2]
    assert S.progress_bar(items, "x", 0.5, True) is items
    assert S.progress_bar(items, "x", 5.0, False) is items
    bar = S.progress_bar(items, "x", 5.0, True)
    assert bar is not items and list(bar) == items


# ------------------------------------------------------------------ the whole run and its JSON


def test_measure_machine_records_sizes_threads_and_round_trips_json(tmp_path):
    m = M.measure_machine(budget_s=5, progress=False, **TINY)
    assert set(m.peak) == {"fp32", "fp64"} and set(m.stream) == {"copy", "triad"}
    assert m.peak["fp64"].sizes == {"B": 32, "D": 32, "F": 32}
    assert m.stream["copy"].sizes == {"n": 2**20 // 4}
    assert all(p.repeats == 3 and p.warmup == 1 for p in [*m.sweep, *m.dot])
    for key in ("cpu_count", "caches", "cpu", "blas_threads", "thread_pools", "numpy", "platform", "date", "backend"):
        assert key in m.machine, key
    assert [2 * p.sizes["n"] * 4 for p in m.staircase] == [4096, 8192, 16384, 32768, 65536]
    assert all(p.kind == "reread" and p.repeats == 3 and p.warmup == 1 for p in m.staircase)
    assert M.CpuFigures.from_dict(m.machine["cpu"]).fma_per_cycle_from == "assumed"
    blas_pools = [p for p in m.machine["thread_pools"] if p["user_api"] == "blas"]
    assert blas_pools and m.machine["blas_threads"] == blas_pools[0]["num_threads"] >= 1
    path = m.save(tmp_path / "m.json")
    assert json.loads(path.read_text())["format"] == M.FORMAT
    back = M.load_measurement(path)
    assert back == m
    assert back.peak_flops("fp32") == m.peak_flops("fp32")


def _measurement_dict():
    pt = {
        "kind": "matmul",
        "dtype": "fp32",
        "sizes": {"B": 1, "D": 8, "F": 8},
        "flops": 128.0,
        "bytes": 544.0,
        "median_s": 1e-6,
        "min_s": 1e-6,
        "max_s": 2e-6,
        "repeats": 3,
        "warmup": 1,
    }
    copy = {**pt, "kind": "copy", "sizes": {"n": 1000}, "flops": 0.0, "bytes": 8000.0}
    return {
        "machine": {"device": "x86_64", "date": "2026-01-01T00:00:00+00:00"},
        "peak": {"fp32": pt},
        "stream": {"copy": copy},
        "sweep": [dict(pt)],
        "dot": [],
        "sweep_D": 8,
        "budget_s": 10.0,
        "elapsed_s": 1.0,
        "truncated": False,
        "provenance": {"preset": "quick"},
    }


@pytest.mark.parametrize("version", [None, 1])
def test_format_1_files_still_load_without_a_staircase(tmp_path, version):
    """The layout before the cache staircase (format 1, or no number at all, as benchmarks/reference_gpu.py wrote
    it) loads into the current format with an empty staircase."""
    old = _measurement_dict() if version is None else {**_measurement_dict(), "format": version}
    (tmp_path / "old.json").write_text(json.dumps(old))
    m = M.load_measurement(tmp_path / "old.json")
    assert M.FORMAT == 2 and m.format == M.FORMAT and m.staircase == []
    assert m.peak_flops("fp32") == pytest.approx(128e6)
    assert m.bandwidth("copy") == pytest.approx(8e9)
    assert rl.memory_levels(m) == []  # no caches recorded: no levels to place points on


def test_unreadable_files_say_what_is_wrong(tmp_path):
    newer = {**_measurement_dict(), "format": M.FORMAT + 1}
    (tmp_path / "new.json").write_text(json.dumps(newer))
    with pytest.raises(ValueError, match="newer rooflinelib"):
        M.load_measurement(tmp_path / "new.json")
    typo = {**_measurement_dict(), "sweepD": 8}
    (tmp_path / "typo.json").write_text(json.dumps(typo))
    with pytest.raises(ValueError, match="unknown key.*sweepD"):
        M.load_measurement(tmp_path / "typo.json")
    bad_point = _measurement_dict()
    del bad_point["sweep"][0]["median_s"]
    (tmp_path / "pt.json").write_text(json.dumps(bad_point))
    with pytest.raises(ValueError, match="sweep point 0 lacks median_s"):
        M.load_measurement(tmp_path / "pt.json")
    negative = _measurement_dict()
    negative["stream"]["copy"]["bytes"] = -8000.0
    (tmp_path / "neg.json").write_text(json.dumps(negative))
    with pytest.raises(ValueError, match="stream 'copy': bytes must be a number >= 0, got -8000.0"):
        M.load_measurement(tmp_path / "neg.json")
    (tmp_path / "junk.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        M.load_measurement(tmp_path / "junk.json")


def _check_reference(name, ref):
    assert ref.sweep and "copy" in ref.stream, f"{name}: needs a sweep and a copy bandwidth"
    assert ref.machine.get("device") and ref.machine.get("date"), f"{name}: needs the device and the date"
    assert ref.peak_flops() > 0 and ref.bandwidth() > 0


def test_reference_measurements_are_valid(tmp_path):
    """Every bundled reference passes the checks, and the checks (and the folder loader) do run on a file."""
    bundled = rl.reference_measurements()
    for name, ref in bundled.items():
        _check_reference(name, ref)
    (tmp_path / "good.json").write_text(json.dumps(_measurement_dict()))
    (tmp_path / "notes.txt").write_text("not a measurement")
    loaded = rl.reference_measurements(tmp_path)
    assert list(loaded) == ["good"]
    _check_reference("good", loaded["good"])
    no_device = _measurement_dict()
    del no_device["machine"]["device"]
    with pytest.raises(AssertionError, match="device"):
        _check_reference("no-device", M.MachineMeasurement.from_dict(no_device))
    assert rl.reference_measurements(tmp_path / "missing") == {}


def test_reference_measurements_can_ask_for_cpu_or_accelerator_runs(tmp_path):
    """A CPU reference is never listed where the page lists accelerators, and the other way round."""
    cpu = _measurement_dict()
    cpu["machine"]["backend"] = "numpy"
    gpu = _measurement_dict()
    gpu["machine"].update(backend="torch", torch_device="cuda", device="NVIDIA H100")
    torch_cpu = _measurement_dict()
    torch_cpu["machine"].update(backend="torch", torch_device="cpu")
    old = _measurement_dict()  # written before the backend was recorded: numpy's
    for name, d in {"cpu": cpu, "gpu": gpu, "torch-cpu": torch_cpu, "old": old}.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(d))
    assert sorted(rl.reference_measurements(tmp_path, kind="cpu")) == ["cpu", "old", "torch-cpu"]
    assert sorted(rl.reference_measurements(tmp_path, kind="accelerator")) == ["gpu"]
    assert len(rl.reference_measurements(tmp_path)) == 4
    with pytest.raises(ValueError, match="kind must be 'cpu', 'accelerator' or None, got 'GPU'"):
        rl.reference_measurements(tmp_path, kind="GPU")
    bundled = rl.reference_measurements(kind="cpu")
    assert {"cpu-reference", "cpu-contended"} <= set(bundled)
    assert not set(bundled) & set(rl.reference_measurements(kind="accelerator"))


def _cpu_ref(name="cpu-reference"):
    return rl.reference_measurements(kind="cpu")[name]


def test_the_shipped_cpu_reference_is_quiet_and_says_how_it_was_made():
    """The page's main figures come from this file: it must pass the noise check and carry its provenance."""
    ref = _cpu_ref()
    health = rl.measurement_health(ref)
    assert health.ok, str(health)
    prov = ref.provenance
    assert prov["script"] == "benchmarks/reference_cpu.py" and prov["date"] and prov["settings"]["repeats"] >= 9
    assert prov.get("load_processes", 0) == 0 and prov["load_average_before"] < 1
    assert M.measured_on(ref) == "cpu" and ref.machine["cpu"]["model"]
    # the known effects are in it, and are not called noise: a cache-fed B = 1 (its 16 MiB of weights fit in the
    # last-level cache) above the main-memory roof, and B = 2 below B = 1, where BLAS changes its kernel
    b1, b2 = sorted(ref.sweep, key=lambda p: p.sizes["B"])[:2]
    assert b1.flops_per_s > 1.05 * ref.bandwidth("copy") * b1.intensity
    assert b2.flops_per_s < 0.85 * b1.flops_per_s
    assert ref.sweep_D**2 * 4 < ref.machine["last_level_cache_bytes"]


def test_the_shipped_contended_run_is_noisy_and_says_why():
    bad = _cpu_ref("cpu-contended")
    health = rl.measurement_health(bad)
    assert not health.ok
    assert {p.check for p in health.problems} >= {"slowest", "median"}
    assert bad.provenance["load_processes"] >= 1 and "--force" in bad.provenance["command"]
    assert bad.provenance["health"] == str(health)  # what the check said when it was written, still true


def _health_run(kind, fast, slow=None, median=None, dtype="fp32", **sizes):
    flops = 2.0 * 1024**3 if kind == "matmul" else 0.0
    return M.Point(kind, dtype, sizes, flops, 8e6, median or fast, fast, slow or fast, 9, 1)


def test_measurement_health_names_a_spread_roof():
    peak = _health_run("matmul", 0.010, slow=0.019, median=0.0105, B=1024, D=1024, F=1024)
    copy = _health_run("copy", 1e-3, slow=1.5e-3, median=1.05e-3, n=10**6)
    m = M.MachineMeasurement(machine={}, peak={"fp32": peak}, stream={"copy": copy})
    assert rl.measurement_health(m).ok  # 1.9 times and 5%: within 2 times and 10%
    m.peak["fp32"] = _health_run("matmul", 0.010, slow=0.021, median=0.0105, B=1024, D=1024, F=1024)
    (problem,) = rl.measurement_health(m).problems
    assert (problem.check, problem.what, problem.limit) == ("slowest", "peak fp32", 2.0)
    assert problem.value == pytest.approx(2.1)
    m.peak["fp32"] = peak
    m.stream["copy"] = _health_run("copy", 1e-3, median=1.2e-3, n=10**6)
    (problem,) = rl.measurement_health(m).problems
    assert (problem.check, problem.what) == ("median", "copy") and problem.value == pytest.approx(1.2)
    assert "median run took 1.20 times the fastest" in str(rl.measurement_health(m))
    # the peak is the fastest matmul of its dtype: a sweep point that beat the square run is the one checked
    fast_sweep = _health_run("matmul", 0.001, median=0.005, B=128, D=1024, F=1024)
    fast_sweep.flops = 2.0 * 128 * 1024 * 1024 * 20
    m.stream["copy"], m.sweep, m.sweep_D = copy, [fast_sweep], 1024
    assert [(p.check, p.what) for p in rl.measurement_health(m).problems] == [("median", "peak fp32")]
    with pytest.raises(ValueError, match="median_spread must be >= 0"):
        rl.measurement_health(m, median_spread=-0.1)


def test_measurement_health_leaves_the_known_effects_alone_and_names_a_noisy_sweep():
    D, bw = 2048, 40e9

    def mm(B, gflops, spread=1.02):
        s = 2 * B * D * D / (gflops * 1e9)
        return M.Point("matmul", "fp32", {"B": B, "D": D, "F": D}, 2.0 * B * D * D, 4.0 * (2 * B * D + D * D),
                       spread * s, s, 1.2 * s, 9, 1)  # fmt: skip

    # a cache-fed B = 1 (three times the main-memory roof) and B = 2 far below it, then a steady climb
    rates = {1: 64, 2: 25, 4: 49, 8: 128, 16: 165, 32: 196, 64: 225, 128: 237}
    copy = M.Point("copy", "fp32", {"n": 10**7}, 0.0, bw * 1e-3, 1e-3, 1e-3, 1e-3, 9, 1)
    m = M.MachineMeasurement(machine={}, stream={"copy": copy}, sweep=[mm(b, r) for b, r in rates.items()], sweep_D=D)
    assert rl.measurement_health(m).ok, str(rl.measurement_health(m))
    # a contended run: one size runs at a fraction of its neighbours, its timed runs spread
    m.sweep[-1] = mm(128, 30, spread=3.0)
    (problem,) = rl.measurement_health(m).problems
    assert (problem.check, problem.what, problem.B, problem.reference_B) == ("drop", "B = 128", 128, 64)
    assert problem.value == pytest.approx(30 / 225) and problem.limit == 0.8 and problem.spread == pytest.approx(3.0)
    m.sweep[-1], m.sweep[4] = mm(128, 237), mm(16, 50)  # B = 16 below B = 8: a dip
    (problem,) = rl.measurement_health(m).problems
    assert (problem.check, problem.what, problem.reference_B) == ("dip", "B = 16", 8)
    assert problem.limit == pytest.approx(0.85)


def _reference_cpu_script():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "reference_cpu.py"
    spec = importlib.util.spec_from_file_location("reference_cpu", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_reference_cpu_script_refuses_a_noisy_run_unless_forced(tmp_path, monkeypatch, capsys):
    """No measurement of this machine: the script is handed the shipped runs in place of measuring."""
    bench = _reference_cpu_script()
    runs = {"quiet": _cpu_ref(), "noisy": _cpu_ref("cpu-contended")}
    which = {"run": "noisy"}
    monkeypatch.setattr(
        M, "measure_machine", lambda *a, **k: M.MachineMeasurement.from_dict(runs[which["run"]].to_dict())
    )
    monkeypatch.setattr(bench, "commit", lambda: "abc1234")
    assert bench.main(["--name", "noisy", "--out-dir", str(tmp_path)]) == 1
    assert not (tmp_path / "noisy.json").exists()
    err = capsys.readouterr().err
    assert "not written: this run looks noisy" in err and "slowest run took" in err and "--force" in err
    assert bench.main(["--name", "noisy", "--out-dir", str(tmp_path), "--force"]) == 0
    written = rl.load_measurement(tmp_path / "noisy.json")
    assert written.provenance["health"].startswith("peak fp32") and written.provenance["load_processes"] == 0
    which["run"] = "quiet"
    assert bench.main(["--name", "quiet", "--out-dir", str(tmp_path)]) == 0
    quiet = rl.load_measurement(tmp_path / "quiet.json")
    assert quiet.provenance["health"] == "no sign of noise" and quiet.provenance["commit"] == "abc1234"
    with pytest.raises(SystemExit):
        bench.main(["--repeats", "2", "--out-dir", str(tmp_path)])


def test_cpu_ceilings_follow_williams():
    cpu = M.CpuFigures(cores=2, clock_hz=2.5e9, simd_bits=256, fma=True)
    # 2 cores × 2.5 GHz × 8 lanes × 2 FMAs per cycle × 2 FLOPs; halved without FMA; one lane; one lane, no FMA
    assert cpu.ceilings("fp32") == {"peak": 160e9, "no FMA": 80e9, "no SIMD": 20e9, "no SIMD, no FMA": 10e9}
    assert cpu.ceilings("fp64")["peak"] == 80e9 and cpu.ceilings("fp64")["no SIMD"] == 20e9
    assert cpu.ceilings()["peak"] == cpu.predicted_peak() and cpu.ceilings()["no SIMD"] == cpu.scalar_peak()
    no_fma = M.CpuFigures(cores=2, clock_hz=2.5e9, simd_bits=128, fma=False)
    assert no_fma.ceilings() == {"peak": 40e9, "no SIMD": 10e9}  # 4 lanes, 2 instructions per cycle, 1 FLOP each
    assert M.CpuFigures(cores=2, simd_bits=256, fma=True).ceilings() == {}


def test_reference_benchmark_writes_a_file_the_library_loads(tmp_path, monkeypatch):
    """benchmarks/reference_gpu.py on a fake GPU: its JSON loads and passes the reference checks."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "reference_gpu.py"
    spec = importlib.util.spec_from_file_location("reference_gpu", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(FakeClock(), []))
    monkeypatch.setattr(bench, "GPU_SIZES", {**TINY, "dot_lengths": [1000]})
    monkeypatch.setattr(bench, "driver_version", lambda: "999.9")
    assert bench.main(["--name", "fake-gpu", "--budget", "5", "--out-dir", str(tmp_path)]) == 0
    ref = rl.reference_measurements(tmp_path)["fake-gpu"]
    _check_reference("fake-gpu", ref)
    assert ref.machine["device"] == "Fake GPU cuda" and ref.provenance["driver"] == "999.9"
    assert set(ref.peak) == {"bf16"} and ref.sweep_D == TINY["D"]


# ------------------------------------------------------------------ the knee


def _pt(B, rate):
    return M.Point("matmul", "fp32", {"B": B, "D": 8, "F": 8}, rate, 1.0, 1.0, 1.0, 1.0, 1, 1)


def test_measured_knee_definition():
    pts = [_pt(1, 10), _pt(2, 20), _pt(4, 90), _pt(8, 100)]
    assert M.measured_knee(pts, 0.9) == pytest.approx(4.0)
    # 80 of 100 lies between B = 2 (20) and B = 4 (90): 2 * 2 ** (ln(80/20) / ln(90/20)) = 2 * 2 ** 0.9217
    assert M.measured_knee(pts, 0.8) == pytest.approx(2 * 2 ** (math.log(4) / math.log(4.5)))
    assert math.isnan(M.measured_knee(pts[:2]))
    with pytest.raises(ValueError, match="fraction"):
        M.measured_knee(pts, 1.5)


def test_knee_refuses_repeated_batch_sizes():
    with pytest.raises(ValueError, match="B must not repeat a batch size, got 1 3 times"):
        rl.knee_batch_size([1, 1, 1], [1, 2, 3])
    with pytest.raises(ValueError, match="got 4 2 times"):
        rl.knee_batch_size([1, 4, 4, 8], [1, 2, 3, 3])
    with pytest.raises(ValueError, match="B must not be empty"):
        rl.knee_batch_size([], [])


# ------------------------------------------------------------------ bad input, refused before measuring


@pytest.fixture
def nothing_measured(monkeypatch):
    """Fails the test if any timing starts: bad input must be refused before measuring."""

    def boom(*args, **kwargs):
        raise AssertionError("a measurement started before the input was checked")

    monkeypatch.setattr(S, "time_it", boom)


@pytest.mark.parametrize(
    ("setting", "error", "message"),
    [
        ({"stream_mib": 0}, ValueError, "stream_mib must be > 0 MiB, got 0"),
        ({"stream_mib": 1e-9}, ValueError, "stream_mib must hold at least one fp32 element"),
        ({"D": -4}, ValueError, r"D must be a whole number of elements \(an integer >= 1\), got -4"),
        ({"peak_n": 2.5}, ValueError, "peak_n must be a whole number"),
        ({"batch_sizes": []}, ValueError, "batch_sizes must not be empty"),
        ({"batch_sizes": [1, 2, 2]}, ValueError, "batch_sizes must list each size once, got 2"),
        ({"batch_sizes": 8}, ValueError, "batch_sizes must be a list of sizes, got 8"),
        ({"dot_lengths": [0]}, ValueError, "dot_lengths must be a whole number"),
        ({"repeats": 0}, ValueError, "repeats must be an integer >= 1, got 0"),
        ({"budget_s": True}, TypeError, "budget_s must be a number of seconds or None, got True"),
        ({"budget_s": 0}, ValueError, "budget_s must be > 0 s, got 0"),
        ({"budget_s": "10"}, TypeError, "budget_s must be a number of seconds"),
        ({"preset": "huge"}, ValueError, "preset must be one of"),
        ({"sizes": 3}, ValueError, "unknown size setting"),
        ({"backend": "tpu"}, ValueError, "backend must be 'numpy', 'torch' or 'jax', got 'tpu'"),
        ({"backend": 3}, TypeError, "backend must be 'numpy', 'torch', 'jax' or a Backend object, got 3"),
        ({"peak_dtypes": ["fp32", "bf16"]}, ValueError, "dtype must be one of"),
        ({"peak_dtypes": []}, ValueError, "peak_dtypes must be a non-empty list"),
        ({"staircase_max_mib": 0}, ValueError, "staircase_max_mib must be > 0 MiB, got 0"),
        ({"staircase_min_kib": 64, "staircase_max_mib": 0.01}, ValueError, "must be at least staircase_min_kib"),
        ({"staircase_per_octave": 0}, ValueError, "staircase_per_octave must be an integer >= 1, got 0"),
    ],
)
def test_measure_machine_refuses_bad_input_before_measuring(nothing_measured, setting, error, message):
    with pytest.raises(error, match=message):
        M.measure_machine(progress=False, **{"budget_s": 1, **setting})


def test_sweeps_and_single_measurements_check_their_sizes(nothing_measured):
    be = M.NumpyBackend()
    with pytest.raises(ValueError, match="D must be a whole number"):
        M.sweep_matmul(be, -4, [1, 2])
    with pytest.raises(ValueError, match="batch_sizes must not be empty"):
        M.sweep_matmul(be, 8, [])
    with pytest.raises(ValueError, match="repeats must be an integer >= 1"):
        M.sweep_dot(be, [10], repeats=0)
    with pytest.raises(ValueError, match="B must be a whole number"):
        M.measure_matmul(be, 0, 8, 8)
    with pytest.raises(ValueError, match="kind must be 'copy' or 'triad'"):
        M.measure_stream(be, "scale", 10)


def test_bad_timing_arguments_name_the_argument():
    with pytest.raises(ValueError, match="repeats must be an integer >= 1"):
        M.time_it(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="warmup must be an integer >= 0, got True"):
        M.time_it(lambda: None, warmup=True)
    with pytest.raises(ValueError, match="dtype must be one of"):
        M.NumpyBackend("bf16")


# ------------------------------------------------------------------ the memory hierarchy


def _sysfs_cache(root, entries):
    """A fake /sys/devices/system/cpu/cpu0/cache: (level, type, size, shared_cpu_list) per index."""
    for i, (level, kind, size, cpus) in enumerate(entries):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        for name, text in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", cpus)):
            (d / name).write_text(f"{text}\n")
    return root


def test_cache_levels_are_the_data_caches_innermost_first(tmp_path):
    from rooflinelib.measure.system import cache_levels

    cache = _sysfs_cache(
        tmp_path / "cache",
        [(3, "Unified", "36608K", "0-15,32-47"), (1, "Instruction", "32K", "0,32"), (2, "Unified", "2M", "0,32"),
         (1, "Data", "48K", "0,32")],
    )  # fmt: skip
    assert cache_levels(cache) == [
        {"level": 1, "bytes": 48 * 1024, "shared_by": 2},  # a core's own, shared by its two hyperthreads
        {"level": 2, "bytes": 2 * 2**20, "shared_by": 2},
        {"level": 3, "bytes": 36608 * 1024, "shared_by": 32},
    ]
    (cache / "index2" / "size").write_text("lots\n")
    assert cache_levels(cache) == []
    assert cache_levels(tmp_path / "nowhere") == []


def _cpu_files(tmp_path, cpuinfo, siblings=(), max_khz=None):
    (tmp_path / "cpuinfo").write_text(cpuinfo)
    for cpu, sibling_list in enumerate(siblings):
        topology = tmp_path / "sys" / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "core_cpus_list").write_text(sibling_list + "\n")
        if max_khz is not None:
            (tmp_path / "sys" / f"cpu{cpu}" / "cpufreq").mkdir()
            (tmp_path / "sys" / f"cpu{cpu}" / "cpufreq" / "cpuinfo_max_freq").write_text(f"{max_khz}\n")
    return tmp_path / "cpuinfo", tmp_path / "sys"


X86 = (
    "processor\t: {i}\nmodel name\t: Example Xeon\nflags\t\t: fpu sse sse2 avx avx2 fma{extra}\ncpu MHz\t\t: {mhz}\n\n"
)


def test_cpu_figures_from_x86_files(tmp_path):
    """Four logical CPUs on two cores (SMT), AVX2 with FMA, a cpufreq maximum: each figure and its source."""
    text = "".join(X86.format(i=i, extra="", mhz=mhz) for i, mhz in enumerate([1200.0, 3100.5, 800.0, 2000.0]))
    cpuinfo, sys_cpu = _cpu_files(tmp_path, text, siblings=["0,2", "1,3", "0,2", "1,3"], max_khz=3_500_000)
    cpu = M.read_cpu_figures(cpuinfo, sys_cpu, cpus=[0, 1, 2, 3])
    assert (cpu.model, cpu.cores, cpu.cores_from) == ("Example Xeon", 2, "topology")
    assert (cpu.clock_hz, cpu.clock_from) == (3.5e9, "cpufreq")  # the kernel's maximum, not a current clock
    assert (cpu.simd_bits, cpu.simd_from, cpu.fma, cpu.fma_from) == (256, "avx", True, "fma")
    assert (cpu.fma_per_cycle, cpu.fma_per_cycle_from) == (2, "assumed")
    # 2 cores × 3.5 GHz × 8 float32 lanes (256 / 32) × 2 FMAs per cycle × 2 FLOPs per FMA
    assert cpu.predicted_peak("fp32") == pytest.approx(224e9)
    assert cpu.predicted_peak("fp64") == pytest.approx(112e9)  # 4 lanes
    assert cpu.scalar_peak() == pytest.approx(28e9)  # 2 × 3.5e9 × 1 × 2 × 2
    assert cpu.unread() == []
    assert M.CpuFigures.from_dict(cpu.to_dict()) == cpu


def test_cpu_figures_fall_back_and_say_what_is_unread(tmp_path):
    # no cpufreq: the highest "cpu MHz"; no topology: the logical CPUs, counted as cores
    text = "".join(X86.format(i=i, extra=" avx512f", mhz=mhz) for i, mhz in enumerate([2400.0, 2600.0]))
    cpuinfo, sys_cpu = _cpu_files(tmp_path, text)
    cpu = M.read_cpu_figures(cpuinfo, sys_cpu, cpus=[0, 1])
    assert (cpu.cores, cpu.cores_from, cpu.clock_hz, cpu.clock_from) == (2, "cpu_count", 2.6e9, "cpuinfo")
    assert (cpu.simd_bits, cpu.simd_from, cpu.lanes("fp32")) == (512, "avx512f", 16)
    # Arm: "Features" with asimd (128-bit NEON, with FMA), no clock anywhere
    (tmp_path / "arm").write_text("processor\t: 0\nFeatures\t: fp asimd evtstrm crc32\n")
    arm = M.read_cpu_figures(tmp_path / "arm", tmp_path / "none", cpus=[0])
    assert (arm.simd_bits, arm.fma, arm.fma_from, arm.clock_hz) == (128, True, "asimd", None)
    assert arm.unread() == ["clock"] and arm.predicted_peak() is None and arm.scalar_peak() is None
    # nothing readable at all
    bare = M.read_cpu_figures(tmp_path / "missing", tmp_path / "none", cpus=[0])
    assert bare.unread() == ["clock", "SIMD width"] and bare.fma is None
    with pytest.raises(ValueError, match="SIMD width was not read"):
        bare.lanes("fp32")
    # without FMA an instruction is one FLOP
    no_fma = M.CpuFigures(cores=1, clock_hz=1e9, simd_bits=128, fma=False)
    assert no_fma.predicted_peak("fp32") == pytest.approx(1e9 * 4 * 2 * 1)
    with pytest.raises(ValueError, match="unknown key"):
        M.CpuFigures.from_dict({"cores": 1, "ghz": 3})


def test_in_core_peak_checks_its_figures():
    assert rl.in_core_peak(64, 2.0e9, 8, 2) == pytest.approx(64 * 2.0e9 * 8 * 2 * 2)
    with pytest.raises(ValueError, match="clock_hz must be > 0 Hz"):
        rl.in_core_peak(4, 0, 8, 2)


def test_staircase_sizes_span_the_caches():
    sizes = M.staircase_sizes(4, None, last_level_cache=32 * 2**20)
    assert sizes[0] == 4096 and sizes[-1] == 8 * 32 * 2**20  # well inside L1 to eight times the LLC
    assert all(b == 2 * a for a, b in itertools.pairwise(sizes))
    assert M.staircase_sizes(4, None, last_level_cache=2 * 2**20)[-1] == 64 * 2**20  # at least 64 MiB
    assert M.staircase_sizes(4, None, last_level_cache=2**30)[-1] == 2**30  # at most 1 GiB
    assert M.staircase_sizes(4, None)[-1] == 256 * 2**20  # cache unknown
    halves = M.staircase_sizes(16, 1 / 16, per_octave=2)
    assert halves == [16384, 23552, 32768, 46080, 65536]  # 16 × 2^(k/2) KiB, whole KiB


class CountingBackend:
    """A backend whose reread records what it was asked for and costs 1 µs per KiB moved (on the fake clock)."""

    name, dtype, device = "counting", "fp32", "cpu"

    def __init__(self, clock, calls, gbs=None):
        self.clock, self.calls, self.gbs = clock, calls, gbs or (lambda n: 1.0)

    def reread(self, n, repeats):
        self.calls.append((n, repeats))

        def run():
            self.clock.now += (1 + 3 * repeats) * n * 4 / (self.gbs(n) * 1e9)

        return run

    def sync(self):
        pass


def test_reread_counts_three_arrays_per_pass_and_zeroing():
    clock, calls = FakeClock(), []
    p = M.measure_reread(CountingBackend(clock, calls), 1000, warmup=1, repeats=3, clock=clock)
    passes = calls[0][1]
    assert calls == [(1000, passes)] and passes >= 2
    assert 3 * 1000 * 4 * passes >= S.REREAD_TRAFFIC  # enough traffic that a call's fixed cost is small
    assert p.bytes == 4 * 1000 * (1 + 3 * passes)  # acc = 0, then read x, read acc, write acc per pass
    assert p.bytes_per_s == pytest.approx(1e9) and p.flops == 0
    assert rl.measure.working_set(p) == 2 * 1000 * 4  # x and acc only, however many passes
    big = M.measure_reread(CountingBackend(clock, calls), 2**24, repeats=1, clock=clock)
    assert big.sizes["repeats"] == 2  # at least two passes, so that one is not all the zeroing
    with pytest.raises(TypeError, match="has no reread"):
        M.measure_reread(M.TorchBackend(device="cpu", torch_module=_fake_torch(clock, [])), 10)


def test_numpy_reread_adds_x_once_per_pass():
    """The loop the bytes are counted for: acc starts at zero and gains x once per pass, over one x in memory."""
    x_then_acc = M.NumpyBackend("fp64").reread(5, repeats=7)()
    assert x_then_acc.tolist() == [7.0] * 5


def test_staircase_keeps_to_its_budget_and_measures_the_first_size():
    clock, calls = FakeClock(), []
    be = CountingBackend(clock, calls, gbs=lambda n: 100.0 if n * 8 <= 2**20 else 1.0)
    sizes = [2**k for k in range(12, 26)]
    pts, cut = M.sweep_working_set(be, sizes, repeats=3, budget_s=1.0, progress=False, clock=clock)
    assert cut and clock.now <= 1.0 + 1e-9
    assert [rl.measure.working_set(p) for p in pts] == sizes[: len(pts)]
    # a slowest bandwidth makes the prediction pessimistic: it stops before the slow sizes, not inside them
    clock2, calls2 = FakeClock(), []
    be2 = CountingBackend(clock2, calls2, gbs=lambda n: 100.0 if n * 8 <= 2**20 else 1.0)
    pts2, _ = M.sweep_working_set(be2, sizes, repeats=3, budget_s=0.2, slowest_bandwidth=1e9, progress=False,
                                  clock=clock2)  # fmt: skip
    assert clock2.now <= 0.2 + 1e-9 and len(pts2) >= 1
    pts3, cut3 = M.sweep_working_set(be2, [2**30], repeats=1, budget_s=1e-9, progress=False, clock=clock2)
    assert len(pts3) == 1 and not cut3  # the first size is always measured
    with pytest.raises(ValueError, match="at least two fp32 numbers"):
        M.sweep_working_set(be2, [4], progress=False)


def _stair_point(working_set, gbs):
    n = working_set // 8  # two fp32 arrays
    return M.Point("reread", "fp32", {"n": n, "repeats": 2}, 0.0, gbs * 1e9, 1.0, 1.0, 1.0, 3, 1)


def _hierarchy(stair, caches=((1, 32 * 1024), (2, 1024 * 1024), (3, 16 * 2**20)), peak=1e11, sweep=(), dots=()):
    peak_point = M.Point("matmul", "fp32", {"B": 512, "D": 512, "F": 512}, peak, 1.0, 1.0, 1.0, 1.0, 3, 1)
    return M.MachineMeasurement(
        machine={"caches": [{"level": lv, "bytes": b, "shared_by": 1} for lv, b in caches]},
        peak={"fp32": peak_point},
        staircase=list(stair),
        sweep=list(sweep),
        dot=list(dots),
    )


def test_each_level_takes_the_median_of_the_working_sets_well_inside_it():
    KiB, MiB = 1024, 2**20
    stair = [_stair_point(ws, gbs) for ws, gbs in [
        (4 * KiB, 150), (8 * KiB, 210), (16 * KiB, 200),  # L1 (32 KiB): ≤ 16 KiB, median 200
        (32 * KiB, 190),                                   # at the edge of L1: in no window
        (64 * KiB, 120), (512 * KiB, 100),                 # L2 (1 MiB): (32 KiB, 512 KiB], median 110
        (1 * MiB, 80), (2 * MiB, 70),                      # (1 MiB in no window) L3 (16 MiB): (1 MiB, 8 MiB]
        (16 * MiB, 40), (32 * MiB, 30),                    # past L3 but not yet four times it
        (64 * MiB, 12), (128 * MiB, 11), (256 * MiB, 9),   # main memory: the largest sets, > 128 MiB
    ]]  # fmt: skip
    levels = rl.memory_levels(_hierarchy(stair))
    assert [(lv.name, lv.bandwidth, lv.points) for lv in levels] == [
        ("L1", 200e9, 3),
        ("L2", 110e9, 2),
        ("L3", 70e9, 1),
        ("DRAM", 9e9, 1),
    ]
    assert [(lv.low, lv.high) for lv in levels] == [(0, 16 * KiB), (32 * KiB, 512 * KiB), (MiB, 8 * MiB),
                                                     (256 * MiB, None)]  # fmt: skip
    few = rl.memory_levels(_hierarchy(stair[:4]))  # a sweep that stopped early: later levels unmeasured
    assert [lv.bandwidth for lv in few] == [200e9, None, None, None]


def test_one_fast_working_set_does_not_speak_for_a_level():
    """A busy machine, or a cache Linux does not report, can make one set run fast: it must not set the level."""
    KiB, MiB = 1024, 2**20
    # the build machine's staircase that credited one core with 61.7 GB/s of DRAM: 128 MiB ran fast, 256 MiB did not
    stair = [_stair_point(ws, gbs) for ws, gbs in [(4 * KiB, 220), (8 * KiB, 400), (16 * KiB, 221),
                                                   (64 * MiB, 60), (128 * MiB, 61.7), (256 * MiB, 29)]]  # fmt: skip
    l1, _, _, dram = rl.memory_levels(_hierarchy(stair))
    assert l1.bandwidth == 221e9, "the median of the three L1 sets, not the fastest"
    assert dram.bandwidth == 29e9 and dram.low == 256 * MiB, "main memory's largest set, not its fastest"
    # with two sets per octave, the last octave's sets give main memory its median
    octave = [_stair_point(ws, gbs) for ws, gbs in [(128 * MiB, 60), (181 * MiB, 31), (256 * MiB, 29)]]
    assert rl.memory_levels(_hierarchy(octave))[-1].bandwidth == 30e9


def test_a_rate_is_the_fastest_runs():
    """Other work only adds time: a point's rate comes from its fastest run, its spread keeps the others."""
    p = M.Point("matmul", "fp32", {"B": 32, "D": 2048, "F": 2048}, 2.68e8, 1.7e7, 1.6e-3, 1.53e-3, 29.3e-3, 5, 1)
    assert p.flops_per_s == pytest.approx(2.68e8 / 1.53e-3) and p.bytes_per_s == pytest.approx(1.7e7 / 1.53e-3)
    m = M.MachineMeasurement(machine={}, peak={"fp32": p})
    assert m.peak_flops("fp32") == pytest.approx(2.68e8 / 1.53e-3)


@pytest.mark.parametrize(
    ("rates", "steady", "problem", "at"),
    [
        ([10, 20, 40, 80, 100, 98, 101, 99], True, None, None),  # climbs, then a plateau within noise
        ([10, 20, 40, 36, 100, 98, 101, 99], True, None, None),  # a 10% dip on the way up is noise
        ([5, 9, 17, 30, 60, 18, 194, 21], False, "drop", 128),  # the busy build machine: 18, 194, 21 GFLOP/s
        ([5, 9, 17, 30, 60, 18, 194, 190], False, "dip", 32),  # one slow size before the best
        ([10, 200, 40, 60, 80, 100, 98, 101], False, "drop", 4),  # one spike at B = 2, then nothing near it
    ],
)
def test_a_sweep_must_rise_to_a_plateau_before_a_knee_is_read(rates, steady, problem, at):
    sizes = [1, 2, 4, 8, 16, 32, 64, 128]
    shape = rl.sweep_shape(sizes, rates)
    assert (shape.steady, shape.problem, shape.B) == (steady, problem, at)
    assert rl.sweep_shape(sizes[::-1], rates[::-1]) == shape, "the order of the points does not matter"
    if not steady:
        worst = next(r for b, r in zip(sizes, rates) if b == at)
        assert shape.share == pytest.approx(worst / dict(zip(sizes, rates))[shape.reference_B])


def test_sweep_shape_refuses_bad_input():
    assert rl.sweep_shape([1, 2], [1, 2]).problem == "few"
    with pytest.raises(ValueError, match="tolerance must be in"):
        rl.sweep_shape([1, 2, 4], [1, 2, 3], tolerance=1)
    with pytest.raises(ValueError, match="same length"):
        rl.sweep_shape([1, 2, 4], [1, 2])


def test_a_noisy_sweep_gets_no_knee_line():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def sweep(rates):
        pts = [M.Point("matmul", "fp32", {"B": b, "D": 64, "F": 64}, 2.0 * b * 64 * 64, 4.0 * (2 * b * 64 + 64 * 64),
                       2.0 * b * 64 * 64 / r, 2.0 * b * 64 * 64 / r, 2.0 * b * 64 * 64 / r, 3, 1)
               for b, r in zip([1, 2, 4, 8, 16], rates)]  # fmt: skip
        copy = M.Point("copy", "fp32", {"n": 1000}, 0.0, 8e3, 1e-6, 1e-6, 1e-6, 3, 1)
        return M.MachineMeasurement(machine={}, stream={"copy": copy}, sweep=pts, sweep_D=64)

    for rates, knee_drawn in (([1e9, 2e9, 4e9, 8e9, 8e9], True), ([1e9, 2e9, 8e9, 1e9, 8e9], False)):
        fig, ax = plt.subplots()
        rl.plot_measured_knee(sweep(rates), ax=ax)
        labels = [line.get_label() for line in ax.get_lines()]
        plt.close(fig)
        assert any(label.startswith("measured knee") for label in labels) == knee_drawn, labels


def test_a_point_is_judged_against_the_level_its_working_set_fits_in():
    KiB, MiB = 1024, 2**20
    stair = [_stair_point(8 * KiB, 200), _stair_point(256 * KiB, 100), _stair_point(4 * MiB, 50),
             _stair_point(64 * MiB, 10)]  # fmt: skip
    # a dot product of N fp32 numbers: 2N - 1 FLOPs over 4 (2N + 1) bytes
    dots = [M.Point("dot", "fp32", {"N": N}, 2 * N - 1, 4 * (2 * N + 1), t, t, t, 3, 1)
            for N, t in [(2**10, 1e-7), (2**16, 2e-5), (2**22, 1e-3), (2**24, 1e-2)]]  # fmt: skip
    m = _hierarchy(stair, dots=dots)
    placed = rl.place_points(m, dots)
    assert [p.level for p in placed] == ["L1", "L2", "DRAM", "DRAM"]  # 8 KiB, 512 KiB, 32 MiB, 128 MiB
    for pl, bw in zip(placed, [200e9, 100e9, 10e9, 10e9]):
        assert pl.ceiling == pytest.approx(min(1e11, pl.point.intensity * bw))
        assert pl.ratio == pytest.approx(pl.point.flops_per_s / pl.ceiling)
    # the L2 dot product runs at about 13 GFLOP/s: far above main memory's 10 GB/s × 0.25, under L2's ceiling
    l2 = placed[1]
    assert l2.point.flops_per_s > l2.point.intensity * 10e9 and l2.ratio < 1
    # a working set of exactly a cache's size fits in it; one byte more does not
    levels = rl.memory_levels(m)
    assert M.level_of(levels, 1 * MiB).name == "L2" and M.level_of(levels, MiB + 1).name == "L3"
    # a matmul is capped by the measured peak, whatever its level's bandwidth
    mm = M.Point("matmul", "fp32", {"B": 64, "D": 256, "F": 256}, 2 * 64 * 256 * 256, 4 * (64 * 256 * 2 + 256 * 256),
                 1e-4, 1e-4, 1e-4, 3, 1)  # fmt: skip
    (pm,) = rl.place_points(m, [mm])
    assert pm.level == "L2" and pm.ceiling == pytest.approx(min(1e11, mm.intensity * 100e9))
    assert rl.place_points(_hierarchy([]), dots)[0].ceiling is None  # no staircase: nothing to judge against


def test_hierarchical_roofline_draws_a_ceiling_per_level_and_colours_points_by_level():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    KiB, MiB = 1024, 2**20
    stair = [_stair_point(8 * KiB, 200), _stair_point(256 * KiB, 100), _stair_point(64 * MiB, 10)]
    dot = M.Point("dot", "fp32", {"N": 2**16}, 2**17 - 1, 4 * (2**17 + 1), 2e-5, 2e-5, 2e-5, 3, 1)
    m = _hierarchy(stair, dots=[dot])
    m.machine["cpu"] = {"cores": 4, "clock_hz": 3e9, "simd_bits": 256, "fma": True}
    fig, ax = plt.subplots()
    rl.plot_hierarchical_roofline(m, ax=ax)
    lines = {line.get_label(): line for line in ax.get_lines()}
    # L3 (16 MiB) had no working set in its window: no ceiling drawn for it
    assert "L1: 200 GB/s" in lines and "L2: 100 GB/s" in lines and "DRAM: 10 GB/s" in lines
    assert not any(label.startswith("L3") for label in lines)
    x, y = (np.asarray(v, float) for v in (lines["L2: 100 GB/s"].get_xdata(),
                                           lines["L2: 100 GB/s"].get_ydata()))  # fmt: skip
    # capped by the measured peak (1e11), as place_points caps a point's ceiling, not by the predicted one above it
    assert np.allclose(y, np.minimum(1e11, 100e9 * x)) and y.max() == pytest.approx(1e11)
    flat = {label: line.get_ydata()[0] for label, line in lines.items() if "GFLOP/s" in label}
    # Williams' in-core ceilings: 4 cores × 3 GHz × 8 float32 lanes (256 bits) × 2 FMAs per cycle × 2 FLOPs per FMA,
    # then one FLOP per instruction (no FMA), one lane (no SIMD, the scalar ceiling), and one lane without FMA
    assert flat == {"measured peak: 100 GFLOP/s": 1e11, "predicted in-core peak: 384 GFLOP/s": 384e9,
                    "no FMA: 192 GFLOP/s": 192e9, "no SIMD (scalar ceiling): 48 GFLOP/s": 48e9,
                    "no SIMD, no FMA: 24 GFLOP/s": 24e9}  # fmt: skip
    (marker,) = [line for line in ax.get_lines() if line.get_marker() == "s" and len(line.get_xdata()) == 1]
    assert marker.get_markerfacecolor() == lines["L2: 100 GB/s"].get_color()  # fits in L2: L2's colour
    plt.close(fig)
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="no memory level has a measured bandwidth"):
        rl.plot_hierarchical_roofline(_hierarchy([]), ax=ax)
    bare = _hierarchy([], dots=[dot])  # no staircase, but a copy: main memory's ceiling from the copy alone
    bare.stream["copy"] = M.Point("copy", "fp32", {"n": 2**20}, 0.0, 8 * 2**20, 1e-3, 1e-3, 1e-3, 3, 1)
    rl.plot_hierarchical_roofline(bare, ax=ax)
    assert [li.get_label() for li in ax.get_lines() if "GB/s" in li.get_label()] == ["DRAM: 8 GB/s"]
    plt.close(fig)
    fig, ax = plt.subplots()
    rl.plot_bandwidth_staircase(m, ax=ax)
    segments = [c for c in ax.collections if c.get_label().startswith(("L1", "L2", "DRAM"))]
    assert sorted(c.get_label() for c in segments) == ["DRAM: 10 GB/s", "L1: 200 GB/s", "L2: 100 GB/s"]
    plt.close(fig)


# ------------------------------------------------------------------ timing a GPU by its own clock


def _fake_cuda_events(clock, log):
    """torch.cuda with events that stamp the fake clock when the queued work has run."""

    class Event:
        def __init__(self, enable_timing=False):
            assert enable_timing, "an event made without enable_timing=True cannot be timed"
            self.t = None

        def record(self):
            log.append("record")
            self.t = clock.now + sum(pending)  # stamped by the GPU after the work queued before it

        def synchronize(self):
            log.append("wait")
            clock.now = max(clock.now, self.t)
            pending.clear()

        def elapsed_time(self, end):
            assert not pending, "elapsed_time read before the end event was waited for"
            return (end.t - self.t) * 1e3  # milliseconds, as torch reports them

    pending = []

    def synchronize(device=None):
        log.append("sync")
        clock.now += sum(pending)
        pending.clear()

    return SimpleNamespace(is_available=lambda: True, Event=Event, synchronize=synchronize), pending


def test_time_cuda_times_the_work_between_events_after_warm_up():
    clock, log = FakeClock(), []
    cuda, pending = _fake_cuda_events(clock, log)
    durations = iter([9.0, 9.0, 0.002, 0.003, 0.001])  # two slow warm-ups, then three timed runs

    def launch():
        log.append("launch")
        clock.now += 1e-5  # the launch itself costs the host 10 µs, which events do not see
        pending.append(next(durations))

    t = M.time_cuda(launch, warmup=2, repeats=3, torch_module=SimpleNamespace(cuda=cuda))
    assert log == ["launch", "launch", "sync"] + ["record", "launch", "record", "wait"] * 3
    assert t.times == pytest.approx((0.00201, 0.00301, 0.00101)) and t.warmup == 2  # not the 9 s warm-ups
    assert t.median == pytest.approx(0.00201)
    cuda.is_available = lambda: False
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        M.time_cuda(launch, torch_module=SimpleNamespace(cuda=cuda))


# ------------------------------------------------------------------ the page's cloud-GPU cell


def _colab_cell():
    """The shown cell of the measure page that a reader runs on a cloud GPU (not run by the build)."""
    import jupytext

    nb = jupytext.read(Path(__file__).resolve().parents[1] / "book" / "measure-your-machine.md")
    cells = [c for c in nb.cells if c.cell_type == "code" and "skip-execution" in c.metadata.get("tags", [])]
    assert len(cells) == 1, "the page should have one shown, unexecuted cell: the cloud-GPU one"
    return cells[0].source


def test_the_cloud_gpu_cell_parses_and_runs_on_a_fake_gpu(monkeypatch):
    """What the page tells a Colab reader to run: valid Python, and with a (fake) CUDA torch it measures the GPU,
    warms every operation up untimed, and times the matmul by CUDA events after three warm-ups."""
    import ast

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from IPython.core.inputtransformer2 import TransformerManager

    source = TransformerManager().transform_cell(_colab_cell())
    tree = ast.parse(source)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert {"TorchBackend", "time_cuda"} <= imported

    clock, log = FakeClock(), []
    fake = _fake_torch(clock, log)
    cuda, pending = _fake_cuda_events(clock, log)
    fake.cuda.Event, fake.cuda.synchronize = cuda.Event, cuda.synchronize
    fake.matmul = lambda x, w: (log.append("matmul"), pending.append(1e-3))  # each matmul queues 1 ms of work
    monkeypatch.setitem(sys.modules, "torch", fake)
    shown = []
    namespace = {"rl": rl, "plt": SimpleNamespace(subplots=plt.subplots, show=lambda: shown.append(1))}
    monkeypatch.setattr("builtins.print", lambda *args, **kw: log.append(("print", *args)))
    exec(compile(tree, "colab-cell", "exec"), namespace)  # noqa: S102 (the page's own code, as a reader runs it)
    plt.close("all")
    on_gpu, t = namespace["on_gpu"], namespace["t"]
    assert on_gpu.machine["backend"] == "torch" and on_gpu.machine["device"] == "Fake GPU cuda"
    assert on_gpu.peak["fp16"].sizes == {"B": 4096, "D": 4096, "F": 4096}
    points = [*on_gpu.peak.values(), *on_gpu.stream.values(), *on_gpu.sweep, *on_gpu.dot]
    assert points and all(p.warmup == 1 for p in points)  # "runs each operation once untimed first"
    assert on_gpu.staircase == []  # the cache sweep is the CPU's
    first_event = log.index("record")
    assert log[first_event - 4 : first_event] == ["matmul"] * 3 + ["sync"]  # three warm-ups, waited for
    assert t.repeats == 10 and t.warmup == 3 and t.median == pytest.approx(1e-3) and shown == [1]
