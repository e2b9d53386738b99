"""Numbers rounded for display follow the course's stated rule: to the nearest, a half going up.

Python's own formatting rounds a half to the even neighbour (``f"{12312.5:.0f}"`` is ``12312``), and
rounds the binary float, not the number as it is printed (``f"{378.25:.1f}"`` is ``378.2``). The
chapters round through :func:`bookvalues.rounded`; the expected strings here are worked out by hand.
"""

from __future__ import annotations

import re
import sys

import pytest
from book_support import BOOK

sys.path.insert(0, str(BOOK))
from bookvalues import rounded, sci  # book/bookvalues.py


@pytest.mark.parametrize(
    ("value", "digits", "grouping", "expected"),
    [
        (1.97e14 / 1.6e10, 0, True, "12,313"),  # 12,312.5: a TPU v5e's ridge over PCIe
        (7.565e14 / 2e12, 1, False, "378.3"),  # 378.25: an H100 PCIe's bf16 ridge
        (3.341e15 / 2 / 1e12, 0, True, "1,671"),  # 1,670.5: an H100 PCIe's dense fp8 TFLOPs/s
        (0.125, 2, False, "0.13"),
        (2.5, 0, False, "3"),
        (-2.5, 0, False, "-3"),
        (-0.4, 0, False, "0"),  # no "-0"
        (240.24, 1, False, "240.2"),
        (1_000_000.0, 0, True, "1,000,000"),
    ],
)
def test_a_half_rounds_up(value: float, digits: int, grouping: bool, expected: str) -> None:
    assert rounded(value, digits, grouping=grouping) == expected


def test_scientific_notation_rounds_a_half_up_too() -> None:
    assert sci(1.0005e3, 4) == "1.001e3" and f"{1.0005e3:.3e}" == "1.000e+03"  # Python: 1.000e3
    assert sci(9.9995e3, 4) == "1e4" and sci(1.97e14) == "1.97e14" and sci(8.19e11) == "8.19e11"


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_rounded_refuses_what_it_cannot_print(bad: float) -> None:
    with pytest.raises(ValueError, match="only a finite number"):
        rounded(bad)
    with pytest.raises(ValueError, match="digits must be a whole number >= 0, got -1"):
        rounded(1.0, -1)


# Python's fixed-point format inside a glue call: f"{x:.1f}", f"{x:,.0f}"
_FIXED = re.compile(r'glue\(.*f"\{[^"{}]+:,?\.\d+f\}"')
PAGES = [
    "where-does-the-time-go",
    "visualizing-rooflines",
    "matrix-multiplication",
    "network-rooflines",
    "summary",
    "errata",
    "practice",
]


@pytest.mark.parametrize("page", PAGES)
def test_chapters_round_glued_numbers_with_the_stated_rule(page: str) -> None:
    lines = (BOOK / f"{page}.md").read_text(encoding="utf-8").splitlines()
    python_rounding = [line.strip() for line in lines if _FIXED.search(line)]
    assert not python_rounding, f"{page}: glue through bookvalues.rounded, not Python's format: {python_rounding}"
