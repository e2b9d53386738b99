"""Honesty properties of rooflinelib.measure: what is timed, what is reported, what is recorded."""

import importlib.util
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

TINY = {"peak_n": 32, "stream_mib": 1, "D": 32, "batch_sizes": [1, 2, 4], "dot_lengths": [100, 1000], "repeats": 3}


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
    for key in ("cpu_count", "blas_threads", "thread_pools", "numpy", "platform", "date", "backend", "device"):
        assert key in m.machine, key
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


def test_files_without_a_format_number_load_as_format_1(tmp_path):
    """The layout written before the format number existed (as benchmarks/reference_gpu.py wrote it)."""
    (tmp_path / "old.json").write_text(json.dumps(_measurement_dict()))
    m = M.load_measurement(tmp_path / "old.json")
    assert m.format == 1 and m.peak_flops("fp32") == pytest.approx(128e6)
    assert m.bandwidth("copy") == pytest.approx(8e9)


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
