"""The network chapter's weight-gather and all-reduce numbers, computed again from first principles.

The chip figures are read from the spec table's TOML directly (not through ``rooflinelib``'s loader),
the ring collectives are simulated piece by piece, and the thresholds are solved from
``T_math = T_comms`` written out here; the built page must show the same numbers.
"""

from __future__ import annotations

import re
import tomllib
from decimal import ROUND_HALF_UP, Decimal

import pytest
from book_support import ROOT, glued, prose_blocks

import rooflinelib as rl

SPEC = tomllib.loads((ROOT / "rooflinelib" / "data" / "accelerators.toml").read_text(encoding="utf-8"))
V5E = SPEC["tpu-v5e"]
PEAK = V5E["peak_flops"]["bf16"]  # FLOP/s
ICI = V5E["links"]["ici"]  # one way, per link
W, K = ICI["bandwidth"], ICI["count"]


def _whole(x: float) -> str:
    """``x`` to the nearest whole number, a half going up, with thousands separated: the course's stated rule."""
    return f"{Decimal(str(x)).quantize(Decimal(1), rounding=ROUND_HALF_UP):,}"


def _ring_allgather(n: int, piece: float) -> list[float]:
    """Bytes each of ``n`` chips receives in a ring all-gather, by passing pieces one hop at a time."""
    have = [{i} for i in range(n)]
    received = [0.0] * n
    for step in range(n - 1):
        sends = [(i, (i - step) % n) for i in range(n)]  # chip i forwards the piece it got last step
        for i, p in sends:
            j = (i + 1) % n
            assert p not in have[j]
            have[j].add(p)
            received[j] += piece
    assert all(len(h) == n for h in have), "every chip ends with every piece"
    return received


def _ring_allreduce_sent(n: int, nbytes: float) -> list[float]:
    """Bytes each chip sends in a ring all-reduce: a reduce-scatter of n - 1 steps, then an all-gather."""
    piece = nbytes / n
    sent = [0.0] * n
    for _ in range(n - 1):  # reduce-scatter: each chip passes one partial sum on per step
        for i in range(n):
            sent[i] += piece
    gathered = _ring_allgather(n, piece)  # all-gather of the summed pieces: what is received is sent
    return [s + g for s, g in zip(sent, gathered)]


@pytest.mark.parametrize("n", [2, 3, 8, 16])
def test_the_ring_factors_are_what_a_ring_moves(n: int) -> None:
    nbytes = 64e6
    assert _ring_allgather(n, nbytes / n) == pytest.approx([rl.ring_allgather_bytes(nbytes, n)] * n)
    assert _ring_allreduce_sent(n, nbytes) == pytest.approx([rl.ring_allreduce_bytes(nbytes, n)] * n)
    assert rl.ring_allreduce_bytes(nbytes, n) == pytest.approx(2 * (n - 1) / n * nbytes)


def _gather_threshold(n: int | None, links: int) -> float:
    """B where 2 B D F / P = (n - 1)/n * 2 D F / (links W), for any D, F: solved by bisection at D = F = 4096."""
    D = F = 4096
    share = 1.0 if n is None else (n - 1) / n
    t_comms = share * 2 * D * F / (links * W)
    lo, hi = 1.0, 1e7
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 2 * mid * D * F / PEAK < t_comms else (lo, mid)
    return lo


def test_the_weight_gather_threshold_is_the_teachers_and_the_pages() -> None:
    one, four = _gather_threshold(None, 1), _gather_threshold(None, K)
    assert K == 4 and round(one) == 4378 and round(four) == 1094  # 1.97e14 / 4.5e10, and a quarter of it
    assert rl.weight_gather_critical_batch(PEAK, W) == pytest.approx(one, rel=1e-9)
    assert rl.weight_gather_critical_batch(PEAK, W, links=K) == pytest.approx(four, rel=1e-9)
    assert rl.weight_gather_critical_batch(PEAK, W, n_chips=16) == pytest.approx(_gather_threshold(16, 1), rel=1e-9)
    shown = dict(glued("network-rooflines"))
    assert shown["wg_one"] == _whole(one) and shown["wg_all"] == _whole(four)
    assert shown["wg_16"] == _whole(_gather_threshold(16, 1))
    assert shown["ici_count"] == str(K) and float(shown["ici_w"]) == W


def test_the_data_parallel_threshold() -> None:
    """6 B D F / P = 2 (n - 1)/n * 2 D F / W: B = (2/3) P / W for a large ring."""
    expected = 2 * 2 / 6 * PEAK / W
    assert rl.data_parallel_critical_batch(PEAK, W) == pytest.approx(expected, rel=1e-12)
    assert rl.data_parallel_critical_batch(PEAK, W, n_chips=4) == pytest.approx(2 * 3 / 4 * 2 / 6 * PEAK / W)
    assert dict(glued("network-rooflines"))["dp_one"] == _whole(expected)


def test_the_link_figure_and_its_ridges() -> None:
    pcie, dcn = V5E["links"]["pcie"]["bandwidth"], V5E["links"]["dcn"]["bandwidth"]
    from rooflinelib.plotting import link_bandwidths

    bws = link_bandwidths("tpu-v5e")
    assert sorted(bws.values(), reverse=True) == [K * W, W, pcie, dcn]
    shown = dict(glued("network-rooflines"))
    assert shown["ridge_pcie"] == _whole(PEAK / pcie) and shown["ridge_dcn"] == _whole(PEAK / dcn)
    assert shown["dcn_below"] == _whole(K * W / dcn)


def test_a_half_is_rounded_up_as_the_course_states() -> None:
    """1.97e14 / 1.6e10 is 12,312.5 exactly: the stated rule makes it 12,313 (Python's own rounding, 12,312)."""
    pcie = V5E["links"]["pcie"]["bandwidth"]
    assert (PEAK, pcie) == (1.97e14, 1.6e10) and PEAK / pcie == 12312.5
    assert dict(glued("network-rooflines"))["ridge_pcie"] == "12,313"


def test_the_allreduce_self_check() -> None:
    shown = dict(glued("network-rooflines"))
    n, mb = int(shown["ar_n"]), float(shown["ar_mb"])
    assert float(shown["ar_sent"]) == pytest.approx(_ring_allreduce_sent(n, mb)[0])
    assert float(shown["ag_sent"]) == pytest.approx(_ring_allgather(n, mb / n)[0])


def test_the_chapter_states_the_link_convention_and_the_contrast() -> None:
    text = " ".join(prose_blocks("network-rooflines")).replace("\u2019", "'")
    assert "a link's figure is one direction of one link" in text
    assert re.search(r"Which tensor crosses the link decides which size sets the threshold", text)
    assert "2 \\cdot \\frac{N - 1}{N}" in (ROOT / "book" / "network-rooflines.md").read_text(encoding="utf-8")


def _dp_step_ms(B: int, D: int, F: int, n: int) -> tuple[float, float]:
    """One data-parallel step on one weight, in ms: forward 2BDF plus backward 4BDF (the gradients of X and of Y,
    each a matmul of the forward's size), against a simulated ring all-reduce of the bf16 gradient over one link."""
    flops = 2 * B * D * F + 2 * (2 * B * D * F)
    return flops / PEAK * 1e3, _ring_allreduce_sent(n, 2 * D * F)[0] / W * 1e3


def _dp_threshold(n: int, flops_per_weight: float = 6, passes: int = 2) -> float:
    """B where the step's FLOPs take as long as the all-reduce, solved by bisection at D = F = 4096."""
    D = F = 4096
    t_comms = passes / 2 * _ring_allreduce_sent(n, 2 * D * F)[0] / W
    lo, hi = 1.0, 1e7
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if flops_per_weight * mid * D * F / PEAK < t_comms else (lo, mid)
    return lo


def test_the_training_step_is_worked_out_right() -> None:
    shown = dict(glued("network-rooflines"))
    n, D, small, large = (int(shown[k]) for k in ("dp_chips", "dp_D", "dp_small", "dp_large"))
    (tm_small, tc), (tm_large, _) = _dp_step_ms(small, D, D, n), _dp_step_ms(large, D, D, n)
    assert (n, D) == (16, 8192) and tm_small < tc < tm_large, "the prose: the small batch waits, the large one hides"
    assert float(shown["dp_tm_small"]) == pytest.approx(tm_small, abs=0.005)
    assert float(shown["dp_tm_large"]) == pytest.approx(tm_large, abs=0.005)
    assert float(shown["dp_tc"]) == pytest.approx(tc, abs=0.005)
    # 2 * 15/16 * 2 * 8192**2 bytes over 4.5e10 bytes/s: 5.59 ms; 6 * 1024 * 8192**2 FLOPs at 1.97e14: 2.09 ms
    assert (shown["dp_tc"], shown["dp_tm_small"]) == ("5.59", "2.09")
    threshold = _dp_threshold(n)
    assert shown["dp_16"] == _whole(threshold) == "2,736"  # (2/3) * (15/16) * 1.97e14 / 4.5e10 = 2736.1
    assert rl.data_parallel_critical_batch(PEAK, W, n_chips=n) == pytest.approx(threshold, rel=1e-9)
    # the self-check's wrong answers: the forward pass alone, and one pass of the ring alone
    assert shown["dp_fwd_only"] == _whole(_dp_threshold(n, flops_per_weight=2))
    assert shown["dp_one_pass"] == _whole(_dp_threshold(n, passes=1))
    assert len({shown[k] for k in ("dp_16", "dp_fwd_only", "dp_one_pass")}) == 3


def test_the_step_times_function_matches_the_simulated_ring() -> None:
    for B, n in ((512, 4), (3000, 16), (65536, 256)):
        t_math, t_comms = rl.data_parallel_step_times(B, 4096, 1024, PEAK, W, n_chips=n)
        flops = 6 * B * 4096 * 1024
        assert t_math == pytest.approx(flops / PEAK, rel=1e-12)
        assert t_comms == pytest.approx(_ring_allreduce_sent(n, 2 * 4096 * 1024)[0] / W, rel=1e-12)
