"""Honesty properties of rooflinelib.measure: what is timed, what is reported, what is recorded."""

import json
import math
from types import SimpleNamespace

import pytest

import rooflinelib as rl
from rooflinelib import measure as M

TINY = dict(peak_n=32, stream_mib=1, D=32, batch_sizes=[1, 2, 4], dot_lengths=[100, 1000], repeats=3)


class FakeClock:
    """A clock that advances only when told, so timings are exact."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


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


def test_gpu_path_with_fake_torch_syncs_every_timed_run():
    clock = FakeClock()
    log = []

    class FakeTensor:
        def copy_(self, other):
            log.append("copy")
            return self

    fake_torch = SimpleNamespace(
        bfloat16="bf16", float16="fp16", float32="fp32", __version__="0.0-fake",
        version=SimpleNamespace(cuda="0.0"),
        randn=lambda *shape, device, dtype: FakeTensor(),
        matmul=lambda x, w: log.append("matmul"),
        cuda=SimpleNamespace(is_available=lambda: True, get_device_name=lambda: "Fake GPU", device_count=lambda: 1,
                             synchronize=lambda: (log.append("sync"), setattr(clock, "now", clock.now + 1.0))),
    )
    be = M.TorchBackend("bf16", torch_module=fake_torch)
    p = M.measure_matmul(be, 4, 8, 8, warmup=2, repeats=3, clock=clock)
    assert log == ["matmul", "sync"] * 5
    assert p.median_s == 1.0 and p.repeats == 3 and p.warmup == 2
    assert p.bytes == rl.matmul_bytes(4, 8, 8, x_dtype="bf16")
    assert be.info()["device"] == "Fake GPU"


def test_torch_backend_without_torch_says_how_to_install():
    pytest.importorskip("numpy")
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="pip install torch"):
            M.TorchBackend()


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


def test_measure_machine_records_sizes_threads_and_round_trips_json(tmp_path):
    m = M.measure_machine(budget_s=5, progress=False, **TINY)
    assert set(m.peak) == {"fp32", "fp64"} and set(m.stream) == {"copy", "triad"}
    assert m.peak["fp64"].sizes == {"B": 32, "D": 32, "F": 32}
    assert all(p.repeats == 3 and p.warmup == 1 for p in [*m.sweep, *m.dot])
    for key in ("cpu_count", "blas_threads", "numpy", "platform", "date"):
        assert key in m.machine
    path = m.save(tmp_path / "m.json")
    json.loads(path.read_text())  # plain JSON
    back = M.load_measurement(path)
    assert back == m
    assert back.peak_flops("fp32") == m.peak_flops("fp32")


def test_intensities_use_the_librarys_counting():
    pts, _ = M.sweep_dot(M.NumpyBackend("fp32"), [1000], repeats=2, progress=False)
    assert pts[0].intensity == pytest.approx((2 * 1000 - 1) / (4 * 2 * 1000 + 4))
    p = M.measure_matmul(M.NumpyBackend("fp32"), 4, 16, 8, repeats=2)
    assert p.intensity == pytest.approx(rl.matmul_intensity(4, 16, 8, x_dtype="fp32"))


def _pt(B, rate):
    return M.Point("matmul", "fp32", {"B": B, "D": 8, "F": 8}, rate, 1.0, 1.0, 1.0, 1.0, 1, 1)


def test_measured_knee_definition():
    pts = [_pt(1, 10), _pt(2, 20), _pt(4, 90), _pt(8, 100)]
    assert M.measured_knee(pts, 0.9) == pytest.approx(4.0)
    assert 2 < M.measured_knee(pts, 0.8) < 4
    assert math.isnan(M.measured_knee(pts[:2]))
    with pytest.raises(ValueError, match="fraction"):
        M.measured_knee(pts, 1.5)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="budget_s must be a positive"):
        M.measure_machine(budget_s=0)
    with pytest.raises(ValueError, match="repeats must be an integer >= 1"):
        M.time_it(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="unknown size setting"):
        M.measure_machine(budget_s=1, sizes=3)
    with pytest.raises(ValueError, match="dtype must be one of"):
        M.NumpyBackend("bf16")


def test_progress_bar_only_for_long_sweeps():
    items = [1, 2]
    assert M._progress(items, "x", 0.5, True) is items
    assert M._progress(items, "x", 5.0, False) is items
    assert M._progress(items, "x", 5.0, True) is not items


def test_reference_measurements_are_valid():
    for name, ref in rl.reference_measurements().items():
        assert ref.sweep and "copy" in ref.stream, name
        assert ref.machine.get("device") and ref.machine.get("date"), name
