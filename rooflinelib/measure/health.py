"""Is a measurement quiet enough to teach from? :func:`measurement_health` names what looks like noise.

Other work on a machine only ever adds time, and it adds it unevenly: one timed
run of an operation takes twice as long as another, or one size of a sweep runs
far below its neighbours. The check looks for exactly that, and for nothing the
roofline explains: a sweep point fed from a cache, or a ``B = 1`` point whose
matrix–vector routine outruns ``B = 2`` (:func:`~rooflinelib.measure.knee_sweep`
leaves both out before the sweep's shape is tested), is no problem.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from rooflinelib.measure.results import MachineMeasurement, Point, knee_sweep
from rooflinelib.roofline import sweep_shape

__all__ = ["MAX_SPREAD", "MEDIAN_SPREAD", "Health", "Problem", "measurement_health"]

#: The most a roof's slowest timed run may take, as a multiple of its fastest (2: twice as long).
MAX_SPREAD = 2.0
#: The most a roof's median timed run may lie above its fastest (0.10: 10% longer). The roofs are drawn at the
#: fastest run, as STREAM does; this keeps that run from being a lone lucky one.
MEDIAN_SPREAD = 0.10


@dataclass(frozen=True)
class Problem:
    """One sign of noise in a measurement.

    ``check``: ``"slowest"`` (a roof's slowest run took more than :data:`MAX_SPREAD`
    times its fastest), ``"median"`` (a roof's median run lies more than
    :data:`MEDIAN_SPREAD` above its fastest), ``"dip"`` or ``"drop"`` (the sweep, less
    the points the roofline explains, does not rise to a plateau:
    :func:`rooflinelib.sweep_shape`). ``what``: the operation, e.g. ``"peak fp32"``,
    ``"copy"``, ``"B = 16"``. ``value``: the ratio found (slowest / fastest, median /
    fastest, or the failing size's share of the rate it is compared with), ``limit``
    the ratio allowed. For ``"dip"`` and ``"drop"``: ``B``, the failing size,
    ``reference_B``, the size compared with, and ``spread``, the failing size's
    median / fastest run.
    """

    check: str
    what: str
    value: float
    limit: float
    B: int | None = None
    reference_B: int | None = None
    spread: float | None = None

    def __str__(self) -> str:
        if self.check == "slowest":
            return f"{self.what}: slowest run took {self.value:.2f} times the fastest (at most {self.limit:g})"
        if self.check == "median":
            return f"{self.what}: median run took {self.value:.2f} times the fastest (at most {self.limit:g})"
        return (
            f"sweep {self.check} at {self.what}: {self.value:.0%} of the rate at B = {self.reference_B} "
            f"(at least {self.limit:.0%}); its median run took {self.spread:.2f} times its fastest"
        )


@dataclass(frozen=True)
class Health:
    """What :func:`measurement_health` found: ``problems``, worst kind first; ``ok`` when there are none."""

    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        """Whether the measurement shows no sign of noise."""
        return not self.problems

    def __str__(self) -> str:
        if self.ok:
            return "no sign of noise"
        return "; ".join(map(str, self.problems))


def _roofs(m: MachineMeasurement) -> list[tuple[str, Point]]:
    """The runs a roof is read from: each dtype's fastest matmul, and each bandwidth."""
    return [(f"peak {dtype}", m.peak_point(dtype)) for dtype in m.peak] + list(m.stream.items())


def measurement_health(
    m: MachineMeasurement, *, max_spread: float = MAX_SPREAD, median_spread: float = MEDIAN_SPREAD
) -> Health:
    """Signs that other work slowed a measurement: spread-out roofs, or a sweep the roofline does not explain.

    Each roof (the fastest matmul of each peak dtype, the copy and the triad) is
    checked: its slowest timed run must take at most ``max_spread`` times its
    fastest, and its median at most ``1 + median_spread`` times. The matmul sweep,
    less its cache-fed points and a matrix–vector ``B = 1``
    (:func:`~rooflinelib.measure.knee_sweep`), must rise to a plateau within
    :func:`rooflinelib.sweep_shape`'s tolerances; a sweep with too few sizes to
    tell is not counted against it.

    Examples
    --------
    >>> def run(kind, fast, slow, median=None, **sizes):
    ...     return Point(kind, "fp32", sizes, 2e9 if kind == "matmul" else 0.0, 8e6, median or fast, fast, slow, 9, 1)
    >>> quiet = MachineMeasurement(machine={}, peak={"fp32": run("matmul", 0.01, 0.012, B=1024)},
    ...                            stream={"copy": run("copy", 1e-3, 1.1e-3, n=10**6)})
    >>> measurement_health(quiet).ok
    True
    >>> busy = MachineMeasurement(machine={}, peak={"fp32": run("matmul", 0.01, 0.05, 0.02, B=1024)},
    ...                           stream={"copy": run("copy", 1e-3, 1.1e-3, n=10**6)})
    >>> print(measurement_health(busy))
    peak fp32: slowest run took 5.00 times the fastest (at most 2); peak fp32: median run took 2.00 times the fastest (at most 1.1)
    >>> measurement_health(quiet, max_spread=0.5)
    Traceback (most recent call last):
    ...
    ValueError: max_spread must be a ratio >= 1 (slowest / fastest run), got 0.5
    """
    if not max_spread >= 1:
        raise ValueError(f"max_spread must be a ratio >= 1 (slowest / fastest run), got {max_spread!r}")
    if not median_spread >= 0:
        raise ValueError(f"median_spread must be >= 0 (median / fastest run - 1), got {median_spread!r}")
    roofs = _roofs(m)
    problems = [Problem("slowest", what, p.max_s / p.min_s, max_spread) for what, p in roofs
                if p.max_s > max_spread * p.min_s]  # fmt: skip
    problems += [Problem("median", what, p.median_s / p.min_s, 1 + median_spread) for what, p in roofs
                 if p.median_s > (1 + median_spread) * p.min_s]  # fmt: skip
    if m.sweep and "copy" in m.stream:
        k = knee_sweep(m, m.sweep[0].dtype)
        shape = k.shape
        if shape.problem in ("dip", "drop"):
            assert shape.B is not None and shape.share is not None and shape.reference_B is not None
            bad = next(p for p in k.points if p.sizes["B"] == shape.B)
            if shape.problem == "dip":  # the tolerances knee_sweep tests with
                limit = 1 - inspect.signature(knee_sweep).parameters["tolerance"].default
            else:
                limit = inspect.signature(sweep_shape).parameters["hold"].default
            problems.append(Problem(shape.problem, f"B = {int(shape.B)}", shape.share, limit, int(shape.B),
                                    int(shape.reference_B), bad.median_s / bad.min_s))  # fmt: skip
    return Health(tuple(problems))
