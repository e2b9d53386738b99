"""The roofline formulas, checked against hand arithmetic and the chapter's numbers."""

import math

import numpy as np
import pytest

import rooflinelib as rl


def test_t_math_h100_example():
    # 1e12 FLOPs at 9.89e14 FLOPs/s: 1.0111... ms (the chapter's "about 1.01 ms")
    assert rl.t_math(1e12, 9.89e14) == pytest.approx(1.0111223e-3, rel=1e-6)


def test_t_comms_is_bytes_over_bandwidth():
    assert rl.t_comms(3e9, 1.5e9) == pytest.approx(2.0)


def test_bounds_are_max_and_sum():
    bounds = rl.runtime_bounds(2.0, 5.0)
    assert bounds.lower == 5.0
    assert bounds.upper == 7.0


@pytest.mark.parametrize("tm, tc", [(1.0, 1.0), (1.0, 0.0), (3.0, 1e-9), (1e-3, 7e-3)])
def test_upper_at_most_twice_lower(tm, tc):
    lower, upper = rl.runtime_bounds(tm, tc)
    assert lower <= upper <= 2 * lower


def test_bounds_vectorised():
    tm = np.array([1.0, 4.0])
    tc = np.array([2.0, 1.0])
    lower, upper = rl.runtime_bounds(tm, tc)
    np.testing.assert_allclose(lower, [2.0, 4.0])
    np.testing.assert_allclose(upper, [3.0, 5.0])
    assert np.all(upper <= 2 * lower)


def test_dot_product_intensity_tends_to_half():
    # bf16 dot product: N mults + N-1 adds; 2N + 2N bytes in, 2 bytes out
    for N, expected in [(1, 1 / 6), (10, 19 / 42), (1000, 1999 / 4002)]:
        assert rl.arithmetic_intensity(2 * N - 1, 4 * N + 2) == pytest.approx(expected)
    assert rl.arithmetic_intensity(2 * 10**9 - 1, 4 * 10**9 + 2) == pytest.approx(0.5, rel=1e-8)


def test_critical_intensity_book_numbers():
    assert rl.critical_intensity(1.97e14, 8.2e11) == pytest.approx(240.24, abs=0.01)
    assert rl.critical_intensity(3.94e14, 8.1e11) == pytest.approx(486.42, abs=0.01)
    # Question 1's rule: B > int8 intensity / 2 = 243
    assert rl.critical_intensity(3.94e14, 8.1e11) / 2 == pytest.approx(243.2, abs=0.05)


def test_attainable_flops_is_the_min_of_two_roofs():
    x = np.array([1.0, 240.0, 1e4])
    np.testing.assert_allclose(rl.attainable_flops(x, 2e14, 1e12), [1e12, 2e14, 2e14])
    assert rl.attainable_flops(10.0, 2e14, 1e12) == 1e13


def test_compute_bound_classification():
    assert rl.is_compute_bound(2.0, 1.0) is True
    assert rl.is_compute_bound(1.0, 2.0) is False
    assert rl.bottleneck(1.0, 2.0) == "communication-bound"
    assert list(rl.bottleneck(np.array([3.0, 1.0]), np.array([1.0, 3.0]))) == ["compute-bound", "communication-bound"]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: rl.t_comms(1e9, 0), "bandwidth must be > 0 bytes/s, got 0"),
        (lambda: rl.t_math(1e9, -5), "peak_flops must be > 0 FLOP/s, got -5"),
        (lambda: rl.t_math(math.nan, 1e14), "flops must be a finite number"),
        (lambda: rl.critical_intensity(1e14, np.array([1e9, 0.0])), "bandwidth must be > 0"),
        (lambda: rl.arithmetic_intensity(-1, 10), "flops must be >= 0"),
        (lambda: rl.attainable_flops(10, 1e14, math.inf), "bandwidth must be a finite number"),
    ],
)
def test_bad_input_names_argument_and_value(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        call()


def test_strings_are_rejected_with_a_type_error():
    with pytest.raises(TypeError, match="bandwidth must be a number"):
        rl.t_comms(1e9, "8.2e11")


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (
            lambda: rl.t_comms(["1e9"], 1e9),
            TypeError,
            r"num_bytes must be a number or an array of numbers, got \['1e9'\]",
        ),
        (lambda: rl.t_math(True, 1e14), TypeError, "flops must be a number"),
        (lambda: rl.t_math(1e9, [1e14, None]), TypeError, "peak_flops must be a number"),
        (lambda: rl.t_math(1e9, 1 + 2j), TypeError, "peak_flops must be a number"),
        (lambda: rl.t_math([], 1e14), ValueError, "flops must not be empty"),
        (lambda: rl.t_math(10**400, 1e14), ValueError, "flops is too large"),
        (lambda: rl.knee_batch_size([1, 1, 1], [1, 2, 3]), ValueError, "B must not repeat a batch size, got 1 3 times"),
    ],
)
def test_inputs_that_used_to_give_a_number_or_a_traceback(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
