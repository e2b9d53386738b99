"""The network chapter's weight-gather and all-reduce numbers, computed again from first principles.

The chip figures are read from the spec table's TOML directly (not through ``rooflinelib``'s loader),
the ring collectives are simulated piece by piece, and the thresholds are solved from
``T_math = T_comms`` written out here; the built page must show the same numbers.
"""

from __future__ import annotations

import re
import tomllib

import pytest
from book_support import ROOT, glued, prose_blocks

import rooflinelib as rl

SPEC = tomllib.loads((ROOT / "rooflinelib" / "data" / "accelerators.toml").read_text(encoding="utf-8"))
V5E = SPEC["tpu-v5e"]
PEAK = V5E["peak_flops"]["bf16"]  # FLOP/s
ICI = V5E["links"]["ici"]  # one way, per link
W, K = ICI["bandwidth"], ICI["count"]


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
    assert shown["wg_one"] == f"{one:,.0f}" and shown["wg_all"] == f"{four:,.0f}"
    assert shown["wg_16"] == f"{_gather_threshold(16, 1):,.0f}"
    assert shown["ici_count"] == str(K) and float(shown["ici_w"]) == W


def test_the_data_parallel_threshold() -> None:
    """6 B D F / P = 2 (n - 1)/n * 2 D F / W: B = (2/3) P / W for a large ring."""
    expected = 2 * 2 / 6 * PEAK / W
    assert rl.data_parallel_critical_batch(PEAK, W) == pytest.approx(expected, rel=1e-12)
    assert rl.data_parallel_critical_batch(PEAK, W, n_chips=4) == pytest.approx(2 * 3 / 4 * 2 / 6 * PEAK / W)
    assert dict(glued("network-rooflines"))["dp_one"] == f"{expected:,.0f}"


def test_the_link_figure_and_its_ridges() -> None:
    pcie, dcn = V5E["links"]["pcie"]["bandwidth"], V5E["links"]["dcn"]["bandwidth"]
    from rooflinelib.plotting import link_bandwidths

    bws = link_bandwidths("tpu-v5e")
    assert sorted(bws.values(), reverse=True) == [K * W, W, pcie, dcn]
    shown = dict(glued("network-rooflines"))
    assert shown["ridge_pcie"] == f"{PEAK / pcie:,.0f}" and shown["ridge_dcn"] == f"{PEAK / dcn:,.0f}"
    assert shown["dcn_below"] == f"{K * W / dcn:.0f}"


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
