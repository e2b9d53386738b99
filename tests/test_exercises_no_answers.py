"""No visible part of a student notebook gives an answer away.

The answers are computed here from first principles with the problem constants
(the chip figures each problem states), at every shape a visible check uses, and
searched for in every number the student can read: markdown, code, outputs, as
a decimal, in scientific notation, rounded to a few significant figures, or as a
small product or quotient such as ``120 / 47``.
"""

from __future__ import annotations

from pathlib import Path

import answer_key
import pytest
from answer_key import NOTEBOOKS, Q1, Q2, Q3, Q4, Q5, Q6, Q7, Q8, leaks


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_visible_answer(name: str) -> None:
    assert leaks(name) == []


def test_the_search_finds_planted_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search itself works: each common rendering of an answer is caught, ordinary text is not."""
    planted = {
        "assert isclose(critical_batch(P, BW), 243.2)": Q1,
        "B > 243": Q1,
        "about 2.432e2": Q1,
        "t_math = 8.72e-05 s": Q1,
        "0.0000872 s": Q1,
        "isclose(got, 120 / 47)": Q1,
        "isclose(got, 27)": Q1,
        "isclose(got, 120.0)": Q1,
        "120.1": Q2,
        "1.2e2 < B": Q2,
        "9.88e13 FLOPs/s": Q3,
        "136.09": Q3,
        "2.26e+02": Q3,
        "assert intensity_limit(1) == 2": Q4,
        "3.35e12 bytes/s": Q5,
        "989.5 TFLOPS": Q5,
        "between 294.5 and 299": Q5,
        "9.895e14": Q5,
        "3,350,000,000,000": Q5,
        "param_count(MODEL_A) is about 1.15e10": Q6,
        "decode_critical_batch(MODEL_A, CHIP_X, 1) ~ 141": Q6,
        "assert chips_to_fit(MODEL_A, CHIP_X, 2) == 2": Q6,
        "the split is compute-bound from D = 8755.6 on": Q7,
        "B > 1094 tokens per chip": Q7,
        "63,040 tokens per chip over DCN": Q7,
        "7.68e11 FLOPs/s": Q8,
        "knee at B = 33.03": Q8,
    }
    for snippet, name in planted.items():
        monkeypatch.setattr(answer_key, "visible_text", lambda _n, s=snippet: s, raising=True)
        assert leaks(name), snippet
    innocent = {
        "A bf16 value takes 2 bytes; the int8 peak is 3.94e14 and HBM moves 8.1e11 bytes/s.": Q1,
        "bytes_loaded(4, 3, 5) must be a whole number of bytes": Q1,
        "The sheet lists 1,979 teraFLOPS* and 3.35TB/s.": Q5,
        "Each of D and F is 2 or more.": Q4,
        'MODEL_A = {"hidden": 5120, "mlp": 13824, "layers": 40}; 0.5 for int4': Q6,
    }
    for snippet, name in innocent.items():
        monkeypatch.setattr(answer_key, "visible_text", lambda _n, s=snippet: s, raising=True)
        assert leaks(name) == [], snippet
