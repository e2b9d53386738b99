"""Matmul FLOPs, bytes, intensities and critical sizes from first principles."""

import math

import numpy as np
import pytest

import rooflinelib as rl
from rooflinelib import Precision

INT8_WEIGHTS = Precision("bf16", w="int8")


def test_flops_count_each_multiply_and_add():
    # [2,3] @ [3,4]: 8 outputs, each 3 multiplies and 2 adds
    assert rl.matmul_flops(2, 3, 4, exact=True) == 8 * (3 + 2)
    assert rl.matmul_flops(2, 3, 4) == 2 * 2 * 3 * 4


def test_bf16_bytes():
    B, D, F = 16, 512, 2048
    assert rl.matmul_bytes(B, D, F) == 2 * B * D + 2 * D * F + 2 * B * F
    assert rl.matmul_bytes_loaded(B, D, F) + rl.matmul_bytes_written(B, D, F) == rl.matmul_bytes(B, D, F)


def test_int8_everywhere_is_one_byte_per_value():
    B, D, F = 7, 300, 50
    assert rl.matmul_bytes_loaded(B, D, F, precision="int8") == B * D + D * F
    assert rl.matmul_bytes_written(B, D, F, precision="int8") == B * F
    assert rl.matmul_bytes_written(B, D, F, precision=Precision("bf16", out="fp32")) == 4 * B * F


def test_int8_weights_halve_only_the_weight_bytes():
    B, D, F = 32, 1024, 4096
    bf16 = rl.matmul_bytes(B, D, F)
    mixed = rl.matmul_bytes(B, D, F, precision=INT8_WEIGHTS)
    assert bf16 - mixed == D * F
    assert mixed == 2 * B * D + D * F + 2 * B * F


def test_matmul_intensity_tends_to_B_for_small_B():
    for B in [1, 8, 64]:
        assert rl.matmul_intensity(B, 2**20, 2**20) == pytest.approx(B, rel=1e-3)
    # and is the exact formula otherwise
    B, D, F = 512, 1024, 768
    assert rl.matmul_intensity(B, D, F) == pytest.approx(B * D * F / (B * D + D * F + B * F))


def test_matmul_functions_are_vectorised():
    B = np.array([1, 2, 4])
    np.testing.assert_allclose(rl.matmul_flops(B, 10, 10), [200, 400, 800])
    assert rl.matmul_intensity(B, 10, 10).shape == (3,)


def test_critical_batch_approximations():
    assert rl.critical_batch_size(1.97e14, 8.2e11) == pytest.approx(240.24, abs=0.01)
    assert rl.critical_batch_size(1.97e14, 8.2e11, precision=INT8_WEIGHTS) == pytest.approx(120.12, abs=0.01)
    assert rl.critical_batch_size(3.94e14, 8.1e11, precision="int8") == pytest.approx(243.21, abs=0.01)


def _exact_crossover_by_bisection(P, W, D, F, bx, bw, bo):
    def excess(B):
        return 2 * B * D * F / P - (bx * B * D + bw * D * F + bo * B * F) / W

    lo, hi = 1e-9, 1e9
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if excess(mid) > 0 else (mid, hi)
    return (lo + hi) / 2


@pytest.mark.parametrize("D, F, expected", [(4096, 4096, 136.1), (1024, 1024, 226.3)])
def test_exact_critical_batch_question3(D, F, expected):
    got = rl.critical_batch_size(1.97e14, 8.2e11, D, F, precision=INT8_WEIGHTS)
    assert got == pytest.approx(expected, abs=0.1)
    assert got == pytest.approx(_exact_crossover_by_bisection(1.97e14, 8.2e11, D, F, 2, 1, 2), rel=1e-9)


def test_exact_critical_batch_tends_to_approximation():
    exact = rl.critical_batch_size(1.97e14, 8.2e11, 2**24, 2**24)
    assert exact == pytest.approx(1.97e14 / 8.2e11, rel=1e-3)


def test_exact_critical_batch_is_inf_when_never_compute_bound():
    # tiny D, F: output and input bytes per token outweigh the FLOPs per token
    assert rl.critical_batch_size(1.97e14, 8.2e11, 64, 64) == math.inf


def test_per_example_weights_intensity_tends_to_two():
    for B in [1, 64, 4096]:
        got = rl.per_example_matmul_intensity(B, 8192, 8192)
        assert got == pytest.approx(2 * 8192 * 8192 / (8192 + 8192 * 8192 + 8192))
        assert 1.99 < got < 2


def test_tiled_matmul():
    m, k, n, bm, bk, bn = 1024, 2048, 512, 128, 256, 64
    tm, tk, tn = m // bm, k // bk, n // bn
    assert rl.tiled_matmul_flops(m, k, n, bm, bk, bn) == 2 * m * k * n
    expected_bytes = 2 * tm * tn * (tk * (bm * bk + bk * bn) + bm * bn)
    assert rl.tiled_matmul_bytes(m, k, n, bm, bk, bn) == expected_bytes
    # ignoring the output term the intensity is bm*bn/(bm+bn)
    big_k = rl.tiled_matmul_intensity(256, 2**24, 256, 128, 128, 256)
    assert big_k == pytest.approx(128 * 256 / (128 + 256), rel=1e-4)


def test_tiled_matmul_rejects_tiles_that_do_not_divide():
    with pytest.raises(ValueError, match="bn=100 must divide n=512"):
        rl.tiled_matmul_bytes(512, 512, 512, 128, 128, 100)


def test_two_chip_sharded_matmul():
    B, D, F = 128, 16384, 8192
    assert rl.sharded_matmul_t_math(B, D, F, 1.97e14) == pytest.approx(B * D * F / 1.97e14)
    assert rl.sharded_matmul_t_comms(B, F, 4.5e10) == pytest.approx(2 * B * F / 4.5e10)
    d_star = rl.sharded_matmul_critical_d(1.97e14, 4.5e10)
    assert d_star == pytest.approx(8755.56, abs=0.01)
    # the threshold does not depend on B: check both sides of it at two batch sizes
    for B in [1, 4096]:
        below = rl.sharded_matmul_t_math(B, 8700, F, 1.97e14) < rl.sharded_matmul_t_comms(B, F, 4.5e10)
        above = rl.sharded_matmul_t_math(B, 8800, F, 1.97e14) > rl.sharded_matmul_t_comms(B, F, 4.5e10)
        assert below and above


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (lambda: rl.matmul_flops(0, 10, 10), ValueError, "B must be a whole number"),
        (lambda: rl.matmul_bytes(4, -1, 10), ValueError, "D must be a whole number .* got -1"),
        (lambda: rl.matmul_bytes(4, 10, 2.5), ValueError, "F must be .* got 2.5"),
        (lambda: rl.matmul_bytes(4, 10, 10, precision="bfloat16"), KeyError, "unknown dtype 'bfloat16'"),
        (lambda: rl.matmul_bytes(4, 10, 10, precision=Precision(w="int3")), KeyError, "'int3' for w"),
        (lambda: rl.matmul_bytes(4, 10, 10, precision=2), TypeError, "precision must be a dtype name"),
        (lambda: rl.matmul_flops([], 1, 1), ValueError, "B must not be empty"),
        (lambda: rl.matmul_flops(["8"], 1, 1), TypeError, "B must be a number"),
        (lambda: rl.matmul_flops(10**400, 1, 1), ValueError, "B is too large: a 401-digit number"),
        (lambda: rl.tiled_matmul_bytes(256, 256, 256, 128, 128, 128, precision="int3"), KeyError, "unknown dtype"),
        (lambda: rl.tiled_matmul_bytes(256, 256, 256, -128, 128, 128), ValueError, "bm must be a whole number .* -128"),
        (lambda: rl.tiled_matmul_bytes(256, math.nan, 256, 128, 128, 128), ValueError, "k must be a finite number"),
        (lambda: rl.sharded_matmul_t_comms(1, 8, 4.5e10, precision="fp4"), KeyError, "unknown dtype 'fp4'"),
        # byte counts come from dtype names, so a negative or nan byte size cannot be passed any more
        (lambda: rl.tiled_matmul_bytes(256, 256, 256, 128, 128, 128, precision=-2), TypeError, "precision must be"),
        (lambda: rl.tiled_matmul_bytes(256, 256, 256, 128, 128, 128, precision=math.nan), TypeError, "precision"),
        (lambda: rl.critical_batch_size(1e14, 1e12, D=4096), ValueError, "give both D and F"),
        (lambda: rl.matmul_flops(np.array([4, np.nan]), 10, 10), ValueError, "B must be a finite number"),
    ],
)
def test_bad_sizes_and_dtypes(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_precision_defaults_and_single_name():
    assert Precision() == Precision("bf16", "bf16", "bf16") == Precision.from_any("bf16")
    assert Precision("fp32", w="int8") == Precision(x="fp32", w="int8", out="fp32")
    assert Precision.from_any(INT8_WEIGHTS) is INT8_WEIGHTS
    assert Precision("fp32", w="int8", out="bf16").bytes == (4, 1, 2)
    assert str(Precision("int8")) == "int8" and str(INT8_WEIGHTS) == "x=bf16, w=int8, out=bf16"


def test_precision_is_frozen():
    with pytest.raises(AttributeError):
        INT8_WEIGHTS.w = "bf16"  # type: ignore[misc]


def test_tiled_matmul_bytes_count_each_operand_in_its_dtype():
    m = k = n = 256
    bm = bk = bn = 128  # 2 x 2 output tiles, 2 k-steps each: 8 loads of each input tile
    expected = 8 * (1 * bm * bk + 1 * bk * bn) + 4 * 4 * bm * bn  # int8 inputs, fp32 output
    got = rl.tiled_matmul_bytes(m, k, n, bm, bk, bn, precision=Precision("int8", out="fp32"))
    assert got == expected


def test_dtype_table_is_read_only():
    with pytest.raises(TypeError):
        rl.DTYPE_BYTES["bf16"] = 3  # type: ignore[index]
    assert rl.dtype_bytes("bf16") == 2
