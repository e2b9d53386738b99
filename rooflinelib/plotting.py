"""Roofline plots. Each helper draws on ``ax`` (the current Axes by default) and returns it.

No titles, figure sizes or ``plt.show()`` here: the page that calls a helper
owns those. Colours are the Okabe-Ito palette, which stays distinct for the
common kinds of colour blindness.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from rooflinelib import matmul, roofline
from rooflinelib._checks import as_number, as_size
from rooflinelib.precision import Precision, PrecisionLike
from rooflinelib.precision import dtype_bytes as _dtype_bytes
from rooflinelib.specs import Accelerator, get_accelerator

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from rooflinelib.measure import MachineMeasurement
    from rooflinelib.models import Model
    from rooflinelib.published import PublishedMatmuls

__all__ = [
    "OKABE_ITO",
    "REGION_COLOURS",
    "link_bandwidths",
    "plot_bandwidth_staircase",
    "plot_compute_roofs",
    "plot_data_parallel_step",
    "plot_decode_context",
    "plot_decode_throughput",
    "plot_decode_time",
    "plot_hierarchical_roofline",
    "plot_layer_matmuls",
    "plot_level_roofline",
    "plot_link_rooflines",
    "plot_matmul_batch",
    "plot_measured_knee",
    "plot_measurement",
    "plot_overhead_floor",
    "plot_published_roofline",
    "plot_published_sweeps",
    "plot_roofline",
]

#: Okabe & Ito (2008) colour-blind-safe palette, black first.
OKABE_ITO = ("#000000", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442")

#: Fill colours for the three regions of a roofline plot.
REGION_COLOURS: Mapping[str, str] = MappingProxyType(
    {
        "bandwidth-bound everywhere": "#D55E00",
        "bandwidth-bound on some rooflines only": "#F0E442",
        "compute-bound": "#009E73",
    }
)


def _current_axes(ax: Axes | None) -> Axes:
    """``ax``, or pyplot's current Axes (pyplot is imported only when needed)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.gca()


def _intensities(name: str, values: Mapping[str, float] | None, unit: str) -> dict[str, float]:
    """Check a ``{label: number}`` mapping (``None`` gives ``{}``)."""
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise TypeError(f"{name} must map labels to numbers, e.g. {{'label': 100}}, got {values!r}")
    return {str(k): float(as_number(f"{name}[{k!r}]", v, unit, scalar=True)) for k, v in values.items()}


def _as_chips(chips: str | Accelerator | Sequence[str | Accelerator]) -> list[Accelerator]:
    if isinstance(chips, (str, Accelerator)):
        return [get_accelerator(chips)]
    if not isinstance(chips, Sequence):
        raise TypeError(f"chips must be a chip key, an Accelerator or a list of them, got {chips!r}")
    out = [get_accelerator(c) for c in chips]
    if not out:
        raise ValueError("chips must name at least one accelerator, e.g. 'tpu-v5e'")
    return out


def plot_roofline(
    chips: str | Accelerator | Sequence[str | Accelerator],
    *,
    dtype: str = "bf16",
    bandwidths: Mapping[str, float] | None = None,
    algorithms: Mapping[str, float] | None = None,
    intensity_range: tuple[float, float] | None = None,
    shade: bool = True,
    legend: bool = True,
    memory: str = "HBM",
    ax: Axes | None = None,
    **line_kw: Any,
) -> Axes:
    """Log-log roofline: attainable FLOPs/s against arithmetic intensity.

    Parameters
    ----------
    chips : one accelerator (key or :class:`Accelerator`) or several.
    dtype : which peak FLOPs/s to use as the roof.
    bandwidths : ``{label: bytes/s}`` to draw instead of each chip's HBM
        bandwidth (e.g. two bandwidths for one chip, as in the book's figure).
    algorithms : ``{label: intensity}``; each is marked where it meets the
        lowest roofline drawn, with a dotted line up to the others.
    intensity_range : x-axis limits in FLOPs/byte (chosen from the ridges if omitted).
    shade : fill the regions that are bandwidth-bound at every bandwidth,
        only at some (between the lowest and the highest ridge: bandwidth-bound for the
        rooflines whose ridge lies further right, compute-bound for the others), and
        compute-bound at all of them.
    legend : add a legend (its style follows your matplotlib settings).
    memory : the memory the bandwidth is for, named in a single chip's label
        (``"HBM"``; a CPU's is ``"DRAM"``).
    ax : the Axes to draw on (default: the current one).
    **line_kw : passed to :meth:`~matplotlib.axes.Axes.plot` for the rooflines
        (e.g. ``lw=1``, ``ls="--"``).

    Every argument is checked before anything is drawn.

    Returns
    -------
    The matplotlib Axes drawn on.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = plot_roofline("tpu-v5e", bandwidths={"BW1": 8.2e11, "BW2": 2e12},
    ...                    algorithms={"Algo 1": 60, "Algo 2": 600})
    >>> ax.get_xscale(), ax.get_yscale()
    ('log', 'log')
    >>> plot_roofline("tpu-v5e", algorithms={"a": -1})
    Traceback (most recent call last):
    ...
    ValueError: algorithms['a'] must be > 0 FLOPs/byte, got -1
    """
    accs = _as_chips(chips)
    if bandwidths is not None and len(accs) > 1:
        raise ValueError("bandwidths= overrides one chip's HBM bandwidth; pass a single chip with it")
    bws = _intensities("bandwidths", bandwidths, "bytes/s")
    if bandwidths is not None and not bws:
        raise ValueError("bandwidths must name at least one bandwidth, e.g. {'HBM': 8.2e11}")
    algos = _intensities("algorithms", algorithms, "FLOPs/byte")
    lines: list[tuple[str, float, float]] = []  # (label, peak, bandwidth)
    for acc in accs:
        peak = acc.peak(dtype)
        if bandwidths is None:
            label = acc.name if len(accs) > 1 else f"{acc.name} ({dtype}, {memory})"
            lines.append((label, peak, acc.hbm_bandwidth))
        else:
            lines.extend((bw_label, peak, bw) for bw_label, bw in bws.items())

    ridges = [p / b for _, p, b in lines]
    if intensity_range is None:
        lo, hi = min(ridges) / 100, max(ridges) * 20
        if algos:
            lo, hi = min(lo, min(algos.values()) / 3), max(hi, max(algos.values()) * 3)
    else:
        if not isinstance(intensity_range, Sequence) or len(intensity_range) != 2:
            raise ValueError(f"intensity_range must be (low, high) in FLOPs/byte, got {intensity_range!r}")
        lo, hi = (float(as_number("intensity_range", v, "FLOPs/byte", scalar=True)) for v in intensity_range)
        if lo >= hi:
            raise ValueError(f"intensity_range must be (low, high) with low < high, got {intensity_range}")
    x = np.geomspace(lo, hi, 400)

    ax = _current_axes(ax)
    if shade:
        r_lo, r_hi = min(ridges), max(ridges)
        several = len(lines) > 1
        bound_all, bound_some, compute = REGION_COLOURS.values()
        ax.axvspan(
            lo,
            r_lo,
            color=bound_all,
            alpha=0.18,
            lw=0,
            label="bandwidth-bound on every roofline" if several else "bandwidth-bound",
        )
        if r_hi > r_lo:
            ax.axvspan(r_lo, r_hi, color=bound_some, alpha=0.25, lw=0, label="bandwidth-bound on some rooflines only")
        ax.axvspan(
            r_hi,
            hi,
            color=compute,
            alpha=0.15,
            lw=0,
            label="compute-bound on every roofline" if several else "compute-bound",
        )

    colours = OKABE_ITO[1:]
    for i, (label, peak, bw) in enumerate(lines):
        kw = {"color": colours[i % len(colours)], "lw": 2, "label": label, **line_kw}
        (line,) = ax.plot(x, roofline.attainable_flops(x, peak, bw), **kw)
        ax.plot([peak / bw], [peak], marker="o", ms=4, color=line.get_color())

    for j, (name, ai) in enumerate(algos.items()):
        heights = sorted(float(roofline.attainable_flops(ai, p, b)) for _, p, b in lines)
        ax.vlines(ai, heights[0], heights[-1], colors="0.3", linestyles=":", lw=1)
        ax.plot(
            [ai] * len(heights),
            heights,
            ls="none",
            marker="D",
            ms=6,
            color="0.15",
            markerfacecolor=OKABE_ITO[(j + 4) % len(OKABE_ITO)],
        )
        ax.annotate(name, (ai, heights[0]), textcoords="offset points", xytext=(6, -12))

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOPs/byte)")
    ax.set_ylabel(f"attainable {dtype} FLOPs/s")
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend(loc="lower right")
    return ax


def link_bandwidths(chip: str | Accelerator) -> dict[str, float]:
    """A chip's off-chip links from the spec table, as ``{label: bytes/s}``, fastest first.

    A link kind the table gives per physical link, with a count, appears twice:
    one link, and all of them together. Bandwidths are one way (TPU PCIe and DCN:
    the book's per-TPU figures, direction not stated).

    Examples
    --------
    >>> link_bandwidths("tpu-v5e")
    {'ICI, all 4 links, 180 GB/s': 180000000000.0, 'ICI, one link, 45 GB/s': 45000000000.0, \
'PCIe, 16 GB/s': 16000000000.0, 'DCN, 3.125 GB/s': 3125000000.0}
    """
    acc = get_accelerator(chip)
    names = {"ici": "ICI", "nvlink": "NVLink", "pcie": "PCIe", "dcn": "DCN", "infinity-fabric": "Infinity Fabric"}
    found: dict[str, float] = {}
    for key, link in acc.links.items():
        name = names.get(key, key)
        if link.scope == "per link" and link.count:
            found[f"{name}, all {link.count} links, {link.count * link.bandwidth / 1e9:g} GB/s"] = (
                link.count * link.bandwidth
            )
            found[f"{name}, one link, {link.bandwidth / 1e9:g} GB/s"] = link.bandwidth
        else:
            found[f"{name}, {link.bandwidth / 1e9:g} GB/s"] = link.bandwidth
    return dict(sorted(found.items(), key=lambda item: -item[1]))


def plot_link_rooflines(chip: str | Accelerator, *, dtype: str = "bf16", ax: Axes | None = None) -> Axes:
    """One chip's network rooflines: its peak over each off-chip link of the spec table (:func:`link_bandwidths`).

    The x-axis is the intensity with respect to the link: FLOPs per byte that
    crosses it. Each line bends at its ridge, peak / link bandwidth. Returns the
    matplotlib Axes drawn on.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plot_link_rooflines("tpu-v5e", ax=ax)
    >>> ax.get_xlabel()
    'FLOPs per byte sent over the link'
    >>> plt.close(fig)
    """
    bws = link_bandwidths(chip)
    if not bws:
        raise ValueError(f"{get_accelerator(chip).name} has no off-chip links in the spec table")
    ax = plot_roofline(chip, dtype=dtype, bandwidths=bws, ax=ax)
    ax.set_xlabel("FLOPs per byte sent over the link")
    return ax


def plot_compute_roofs(
    chip: str | Accelerator,
    roofs: Mapping[str, float] | None = None,
    *,
    intensity_range: tuple[float, float] | None = None,
    legend: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """One chip's HBM bandwidth line under several compute roofs: one per unit and number format.

    ``roofs`` maps a label to a peak in FLOPs/s; by default every peak of the spec table
    (``"bf16"``, ``"fp32"``, ...) and the vector unit's, where the table has it. Each roof is drawn
    from its own ridge point (marked) to the right, so a lower roof meets the bandwidth line at a lower
    intensity. Returns the matplotlib Axes drawn on.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plot_compute_roofs("h100-sxm", {"bf16": 9.895e14, "fp32": 6.7e13}, ax=ax)
    >>> [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    ['HBM, 3.35 TB/s', 'bf16: 989.5 TFLOPs/s, ridge 295.4', 'fp32: 67 TFLOPs/s, ridge 20']
    >>> plt.close(fig)
    """
    acc = get_accelerator(chip)
    if roofs is None:
        found = dict(acc.peak_flops)
        if acc.vector_flops is not None:
            found["vector unit"] = acc.vector_flops
        roofs = found
    peaks = _intensities("roofs", roofs, "FLOPs/s")
    if not peaks:
        raise ValueError("roofs must name at least one peak, e.g. {'bf16': 9.895e14}")
    bw = acc.hbm_bandwidth
    ridges = {label: peak / bw for label, peak in peaks.items()}
    if intensity_range is None:
        lo, hi = min(ridges.values()) / 30, max(ridges.values()) * 20
    else:
        lo, hi = (float(as_number("intensity_range", v, "FLOPs/byte", scalar=True)) for v in intensity_range)
        if lo >= hi:
            raise ValueError(f"intensity_range must be (low, high) with low < high, got {intensity_range}")
    ax = _current_axes(ax)
    top = max(peaks.values())
    x = np.geomspace(lo, top / bw, 200)
    rate = f"{bw / 1e12:.4g} TB/s" if bw >= 1e12 else f"{bw / 1e9:.4g} GB/s"
    ax.plot(x, x * bw, color="0.2", lw=2, label=f"HBM, {rate}")
    for i, (label, peak) in enumerate(sorted(peaks.items(), key=lambda item: -item[1])):
        colour = OKABE_ITO[1 + i % (len(OKABE_ITO) - 1)]
        ridge = ridges[label]
        ax.plot(
            [ridge, hi],
            [peak, peak],
            color=colour,
            lw=2,
            label=f"{label}: {peak / 1e12:.5g} TFLOPs/s, ridge {ridge:.4g}",
        )
        ax.plot([ridge], [peak], "o", ms=5, color=colour)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOPs/byte)")
    ax.set_ylabel("attainable FLOPs/s")
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend(loc="lower right", fontsize="small")
    return ax


def plot_matmul_batch(
    chip: str | Accelerator,
    shapes: Sequence[tuple[int, int]],
    *,
    batch_sizes: Sequence[int] | np.ndarray | None = None,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
    bandwidth: float | None = None,
    mark_critical: bool = True,
    legend: bool = True,
    ax: Axes | None = None,
    **line_kw: Any,
) -> Axes:
    """Attainable FLOPs/s of ``[B, D] @ [D, F]`` against batch size ``B``, one curve per ``(D, F)``.

    Uses the exact bytes (no ``B << D`` approximation); with ``mark_critical``
    each curve's exact critical batch size is marked with a dashed line.
    ``precision`` gives the operands' dtypes, ``compute_dtype`` the peak used
    (default: the activations' dtype); ``**line_kw`` goes to
    :meth:`~matplotlib.axes.Axes.plot` for the curves. Every argument is
    checked before anything is drawn.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from rooflinelib.precision import Precision
    >>> ax = plot_matmul_batch("tpu-v5e", [(4096, 4096), (1024, 1024)], precision=Precision("bf16", w="int8"),
    ...                        bandwidth=8.2e11)
    >>> [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    ['D = F = 4096', 'D = F = 1024']
    """
    acc = get_accelerator(chip)
    prec = Precision.from_any(precision)
    peak_dtype = compute_dtype or prec.x
    peak = acc.peak(peak_dtype)
    bw = acc.hbm_bandwidth if bandwidth is None else float(as_number("bandwidth", bandwidth, "bytes/s", scalar=True))
    B = np.arange(1.0, 513.0) if batch_sizes is None else np.atleast_1d(as_size("batch_sizes", batch_sizes))
    if isinstance(shapes, (str, bytes)) or not isinstance(shapes, Sequence) or not shapes:
        raise ValueError(f"shapes must list at least one (D, F) pair, e.g. [(4096, 4096)], got {shapes!r}")
    checked = []
    for shape in shapes:
        if not isinstance(shape, Sequence) or len(shape) != 2:
            raise ValueError(f"each shape must be a (D, F) pair, got {shape!r}")
        checked.append((int(as_size("D", shape[0], scalar=True)), int(as_size("F", shape[1], scalar=True))))

    ax = _current_axes(ax)
    for i, (D, F) in enumerate(checked):
        flops = matmul.matmul_flops(B, D, F)
        num_bytes = matmul.matmul_bytes(B, D, F, precision=prec)
        t = np.maximum(flops / peak, num_bytes / bw)
        label = f"D = F = {D}" if D == F else f"D = {D}, F = {F}"
        kw = {"color": OKABE_ITO[1 + i % (len(OKABE_ITO) - 1)], "lw": 2, "label": label, **line_kw}
        (line,) = ax.plot(B, flops / t, **kw)
        if mark_critical:
            b_star = float(matmul.critical_batch_size(peak, bw, D, F, precision=prec))
            if b_star <= B.max():
                ax.axvline(b_star, color=line.get_color(), ls="--", lw=1, label=f"_critical B ≈ {b_star:.0f}")
    ax.axhline(peak, color="0.3", ls=":", lw=1, label=f"_peak {peak:.3g}")
    ax.set_xlabel("batch size B (tokens)")
    ax.set_ylabel(f"attainable {peak_dtype} FLOPs/s")
    ax.grid(True, alpha=0.3)
    if legend:
        ax.legend()
    return ax


def plot_measurement(
    m: MachineMeasurement, *, dtype: str | None = None, legend: bool = True, ax: Axes | None = None, **line_kw: Any
) -> Axes:
    """The measured roofline (measured peak and copy bandwidth) with the sweep and dot products on it.

    ``**line_kw`` goes to the roofline (see :func:`plot_roofline`). Returns the matplotlib Axes drawn on.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from rooflinelib.measure import measure_machine
    >>> m = measure_machine(budget_s=2, progress=False, peak_n=64, stream_mib=1, D=64,
    ...                     batch_sizes=[1, 8], dot_lengths=[1000], staircase_max_mib=1)
    >>> fig, ax = plt.subplots()
    >>> plot_measurement(m, ax=ax).get_xscale()
    'log'
    >>> plt.close(fig)
    """
    dtype = dtype or (m.sweep[0].dtype if m.sweep else next(iter(m.peak)))
    name = m.provenance.get("label") or "this machine"
    chip = Accelerator.custom(f"{name}, measured", {dtype: m.peak_flops(dtype)}, m.bandwidth("copy"), source="measured")
    pts = [p for p in m.sweep if p.dtype == dtype]
    xs = [p.intensity for p in [*pts, *m.dot]]
    ridge = chip.critical_intensity(dtype)
    lo, hi = min([ridge / 100, *xs]) / 2, max([ridge * 20, *xs]) * 2
    memory = "DRAM" if m.machine.get("backend", "numpy") == "numpy" else "HBM"  # numpy runs on the CPU
    ax = plot_roofline(chip, dtype=dtype, intensity_range=(lo, hi), legend=False, memory=memory, ax=ax, **line_kw)
    if pts:
        ax.plot(
            [p.intensity for p in pts],
            [p.flops_per_s for p in pts],
            "o-",
            color=OKABE_ITO[2],
            ms=5,
            label=f"matmul [B, {m.sweep_D}] @ [{m.sweep_D}, {m.sweep_D}], B = "
            f"{pts[0].sizes['B']}..{pts[-1].sizes['B']}",
        )
    if m.dot:
        ax.plot(
            [p.intensity for p in m.dot],
            [p.flops_per_s for p in m.dot],
            "s",
            color=OKABE_ITO[4],
            ms=6,
            label="dot product",
        )
    if legend:
        ax.legend(loc="lower right")
    return ax


def plot_measured_knee(m: MachineMeasurement, *, dtype: str | None = None, ax: Axes | None = None) -> Axes:
    """A measured matmul sweep against batch size, with the roofline of the measured peak and bandwidth.

    The roofline is drawn over a fine grid of batch sizes that includes the predicted
    critical batch size ``B*`` itself, so its bend sits at ``B*`` rather than at the
    nearest size measured. Dashed: ``B*``; dotted: the measured knee
    (:func:`rooflinelib.measured_knee`) of the points :func:`rooflinelib.knee_sweep`
    keeps, drawn only when they rise to a plateau (:func:`rooflinelib.sweep_shape`):
    a sweep that does not has no knee to mark. Points the knee test leaves out
    (cache-fed, or a matrix–vector ``B = 1``) are drawn hollow. Returns the
    matplotlib Axes drawn on.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from rooflinelib.measure import measure_machine
    >>> m = measure_machine(budget_s=2, progress=False, peak_n=64, stream_mib=1, D=64,
    ...                     batch_sizes=[1, 8, 64], dot_lengths=[1000], staircase_max_mib=1)
    >>> fig, ax = plt.subplots()
    >>> plot_measured_knee(m, ax=ax).get_xscale()
    'log'
    >>> plt.close(fig)
    """
    from rooflinelib.measure import knee_sweep, measured_knee

    dtype = dtype or (m.sweep[0].dtype if m.sweep else "fp32")
    pts = sorted((p for p in m.sweep if p.dtype == dtype), key=lambda p: p.sizes["B"])
    if not pts:
        raise ValueError(f"the measurement has no {dtype} matmul sweep to draw")
    peak, bw, D = m.peak_flops(dtype), m.bandwidth("copy"), m.sweep_D
    b_star = float(matmul.critical_batch_size(peak, bw, D, D, precision=dtype))
    sizes = [float(p.sizes["B"]) for p in pts]
    grid = np.geomspace(sizes[0], sizes[-1], 400)
    if sizes[0] < b_star < sizes[-1]:
        grid = np.sort(np.append(grid, b_star))
    # the matmul's intensity between the measured sizes (matmul_intensity takes whole batches only)
    intensity = 2 * grid * D * D / (_dtype_bytes(dtype) * (grid * D + D * D + grid * D))
    model = roofline.attainable_flops(intensity, peak, bw)
    ax = _current_axes(ax)
    ax.plot(sizes, [p.flops_per_s for p in pts], "o-", color=OKABE_ITO[2], label="measured")
    kept = knee_sweep(m, dtype)
    left_out = [p for p in pts if p not in kept.points]
    if left_out:
        ax.plot([p.sizes["B"] for p in left_out], [p.flops_per_s for p in left_out], "o", mfc="white",
                color=OKABE_ITO[2], label="left out of the knee test")  # fmt: skip
    ax.plot(grid, model, color=OKABE_ITO[1], lw=2, label="roofline from measured P, W")
    ax.axvline(b_star, color=OKABE_ITO[1], ls="--", lw=1, label=f"predicted B* ≈ {b_star:.1f}")
    knee = measured_knee(kept.points)
    if not np.isnan(knee) and kept.shape.steady:
        ax.axvline(knee, color=OKABE_ITO[2], ls=":", lw=1.5, label=f"measured knee ≈ {knee:.1f}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch size B (tokens)")
    ax.set_ylabel(f"{dtype} FLOPs/s")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax


#: A colour per cache level, innermost first, then main memory's (Okabe-Ito: sky blue, blue, green, purple).
LEVEL_COLOURS = (OKABE_ITO[6], OKABE_ITO[1], OKABE_ITO[3], OKABE_ITO[4])
MEMORY_COLOUR = OKABE_ITO[2]


def _level_colour(index: int, name: str) -> str:
    from rooflinelib.measure.hierarchy import MEMORY

    return MEMORY_COLOUR if name == MEMORY else LEVEL_COLOURS[index % len(LEVEL_COLOURS)]


def format_bytes(nbytes: float) -> str:
    """A size as the page writes it: ``"48 KiB"``, ``"1 MiB"``, ``"1.5 GiB"``.

    Examples
    --------
    >>> format_bytes(49152), format_bytes(2**20), format_bytes(3 * 2**29), format_bytes(100)
    ('48 KiB', '1 MiB', '1.5 GiB', '100 B')
    """
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{nbytes:.0f} B"


def plot_bandwidth_staircase(m: MachineMeasurement, *, legend: bool = True, ax: Axes | None = None) -> Axes:
    """The cache staircase: bandwidth on one core against working set, with each cache's size and level's bandwidth.

    The line is the fastest run of each size (the rate every result reports), the band reaches down to
    the slowest;
    a dotted vertical line marks each cache's size (from sysfs), and a thick
    horizontal segment each level's bandwidth over the working sets it is taken
    from (:func:`rooflinelib.measure.memory_levels`). Returns the matplotlib Axes drawn on.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from rooflinelib.measure import Point, MachineMeasurement
    >>> stair = [Point("reread", "fp32", {"n": 2**k, "repeats": 2}, 0, 1e9, 1e-2, 1e-2, 1e-2, 3, 1)
    ...          for k in range(10, 24)]
    >>> m = MachineMeasurement(machine={"caches": [{"level": 1, "bytes": 2**15}, {"level": 2, "bytes": 2**21}]},
    ...                        staircase=stair)
    >>> fig, ax = plt.subplots()
    >>> plot_bandwidth_staircase(m, ax=ax).get_xscale()
    'log'
    >>> plt.close(fig)
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

    from rooflinelib.measure.hierarchy import memory_levels, working_set

    if not m.staircase:
        raise ValueError(
            "the measurement has no cache staircase (it was made with the torch or jax backend, or before "
            "rooflinelib measured one); measure again with the numpy backend"
        )
    pts = sorted(m.staircase, key=working_set)
    x = np.array([working_set(p) for p in pts])
    ax = _current_axes(ax)
    ax.fill_between(
        x, [p.bytes / p.max_s / 1e9 for p in pts], [p.bytes / p.min_s / 1e9 for p in pts],
        color="0.6", alpha=0.3, lw=0, label="fastest to slowest run",
    )  # fmt: skip
    ax.plot(x, [p.bytes_per_s / 1e9 for p in pts], "o-", color="0.2", ms=4, label="acc += x, fastest run")
    for i, level in enumerate(memory_levels(m)):  # labels name the level only: its size is on the x axis
        colour = _level_colour(i, level.name)
        if level.bytes is not None:
            ax.axvline(level.bytes, color=colour, ls=":", lw=1.5)
        if level.bandwidth is not None:
            left = level.low if level.low > 0 else x[0]
            right = level.high if level.high is not None else x[-1]
            ax.hlines(level.bandwidth / 1e9, left, right, colors=colour, lw=4, alpha=0.8,
                      label=f"{level.name}: {level.bandwidth / 1e9:.0f} GB/s")  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    lo, hi = int(np.floor(np.log2(x[0]))), int(np.ceil(np.log2(x[-1])))
    ax.xaxis.set_major_locator(FixedLocator([2.0**k for k in range(lo + lo % 2, hi + 1, 2)]))
    ax.xaxis.set_minor_locator(NullLocator())
    # KiB below a MiB, MiB above (1024 MiB, not 1 GiB): every build labels its axis with the same two units
    ax.xaxis.set_major_formatter(
        FuncFormatter(lambda v, _: f"{v / 2**10:g} KiB" if v < 2**20 else f"{v / 2**20:g} MiB")
    )
    ax.set_xlim(x[0] / 1.3, x[-1] * 1.3)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("working set (bytes, two arrays)")
    ax.set_ylabel("bandwidth on one core (GB/s)")
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend(fontsize=8, loc="lower left")
    return ax


def plot_hierarchical_roofline(
    m: MachineMeasurement,
    *,
    dtype: str | None = None,
    in_core: bool = True,
    legend: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """The roofline of every memory level, the in-core ceilings, and each measured point coloured by its level.

    A sloped ceiling per level with a measured bandwidth (the staircase's, one
    core; the copy's bandwidth alone for a measurement without caches or a
    staircase), each capped by the measured peak, as
    :func:`~rooflinelib.measure.place_points` caps it; flat ceilings at the
    measured peak and, for a CPU measurement whose figures were read
    (``in_core=True``), Williams' in-core ceilings from the CPU's figures
    (:meth:`~rooflinelib.measure.CpuFigures.ceilings`: the predicted peak, cores ×
    clock × SIMD lanes × FMAs per cycle × 2, then without FMA, without SIMD, the
    scalar ceiling, and without either). Each point
    of the matmul sweep (circles) and the dot products (squares) is filled with
    the colour of the level its working set fits in
    (:func:`rooflinelib.measure.place_points`). Returns the matplotlib Axes drawn on.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from rooflinelib.measure import Point, MachineMeasurement
    >>> stair = [Point("reread", "fp32", {"n": 2**k, "repeats": 2}, 0, 2e9 if k < 12 else 2e8, 1e-2, 1e-2, 1e-2,
    ...                3, 1) for k in range(10, 24)]     # 200 GB/s in the 32 KiB L1, 20 GB/s past it
    >>> peak = Point("matmul", "fp32", {"B": 64, "D": 64, "F": 64}, 1e12, 1.0, 10.0, 10.0, 10.0, 3, 1)
    >>> cpu = {"cores": 2, "clock_hz": 3e9, "simd_bits": 256, "fma": True}
    >>> m = MachineMeasurement(machine={"caches": [{"level": 1, "bytes": 2**15}], "cpu": cpu},
    ...                        staircase=stair, peak={"fp32": peak})
    >>> fig, ax = plt.subplots()
    >>> [t.get_text() for t in plot_hierarchical_roofline(m, ax=ax).get_legend().get_texts()][:7]  # doctest: +NORMALIZE_WHITESPACE
    ['L1: 200 GB/s', 'DRAM: 20 GB/s', 'measured peak: 100 GFLOP/s', 'predicted in-core peak: 192 GFLOP/s',
     'no FMA: 96 GFLOP/s', 'no SIMD (scalar ceiling): 24 GFLOP/s', 'no SIMD, no FMA: 12 GFLOP/s']
    >>> plt.close(fig)
    """
    from rooflinelib.measure.cpu import CpuFigures
    from rooflinelib.measure.hierarchy import MEMORY, Level, memory_levels, place_points

    dtype = dtype or (m.sweep[0].dtype if m.sweep else next(iter(m.peak), "fp32"))
    levels = memory_levels(m)
    measured = [(i, lv) for i, lv in enumerate(levels) if lv.bandwidth is not None]
    if not measured and "copy" in m.stream:  # no caches reported, or no staircase: main memory from the copy
        levels = [Level(MEMORY, None, 0.0, None, m.bandwidth("copy"), 1)]
        measured = [(0, levels[0])]
    if not measured:
        raise ValueError(
            "no memory level has a measured bandwidth: the hierarchical roofline needs a cache staircase or a "
            "copy bandwidth; measure again with rooflinelib.measure_machine"
        )
    peak = m.peak_flops(dtype)
    flat: list[tuple[str, float, Any]] = [("measured peak", peak, "-")]  # name, FLOPs/s, line style
    if in_core and m.machine.get("backend", "numpy") == "numpy":
        names = {"peak": "predicted in-core peak", "no FMA": "no FMA", "no SIMD": "no SIMD (scalar ceiling)",
                 "no SIMD, no FMA": "no SIMD, no FMA"}  # fmt: skip
        styles = {"peak": "--", "no FMA": "-.", "no SIMD": ":", "no SIMD, no FMA": (0, (1, 4))}
        ceilings = CpuFigures.from_dict(m.machine.get("cpu")).ceilings(dtype)
        flat += [(names[name], value, styles[name]) for name, value in ceilings.items()]
    pts = [p for p in m.sweep if p.dtype == dtype] + [p for p in m.dot if p.dtype == dtype]
    placed = place_points(m, pts, dtype=dtype, levels=levels)
    bws = [lv.bandwidth for _, lv in measured if lv.bandwidth is not None]
    xs = [p.intensity for p in pts]
    lo = min([peak / max(bws) / 100, *xs]) / 2
    top = max(value for _, value, _ in flat)
    hi = max([top / min(bws) * 10, *xs]) * 2
    x = np.geomspace(lo, hi, 400)
    ax = _current_axes(ax)
    for i, level in measured:
        assert level.bandwidth is not None
        ax.plot(x, np.minimum(peak, x * level.bandwidth), color=_level_colour(i, level.name), lw=2,
                label=f"{level.name}: {level.bandwidth / 1e9:.0f} GB/s")  # fmt: skip
    for name, value, style in flat:
        ax.axhline(value, color="0.1", ls=style, lw=1.5, label=f"{name}: {value / 1e9:.0f} GFLOP/s")
    colour = {lv.name: _level_colour(i, lv.name) for i, lv in enumerate(levels)}
    for placement in placed:
        p = placement.point
        marker = "o" if p.kind == "matmul" else "s"
        ax.plot([p.intensity], [p.flops_per_s], marker, ms=7, mec="0.1", mfc=colour[placement.level], ls="none")
    ax.plot([], [], "o", mec="0.1", mfc="white", label="matmul sweep (fill: the level it fits in)")
    ax.plot([], [], "s", mec="0.1", mfc="white", label="dot products (fill: the level they fit in)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOPs/byte)")
    ax.set_ylabel(f"attainable {dtype} FLOPs/s")
    ax.grid(True, which="major", alpha=0.3)
    if legend:  # below the axes: the ceilings fill the plot's corners
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    return ax


#: Markers for the kernels of :func:`plot_level_roofline`, one per kernel in order.
KERNEL_MARKERS = ("o", "s", "^", "D", "v", "P")


def _level_label(chip: Accelerator, level: str) -> str:
    return "HBM" if level == "hbm" else chip.on_chip[level].name


def plot_level_roofline(
    chip: str | Accelerator,
    kernels: Mapping[str, Mapping[str, float]],
    *,
    dtype: str = "bf16",
    achieved: Mapping[str, float] | None = None,
    legend: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """A chip's hierarchical roofline: a sloped roof per memory level, the flat peak, and kernels at each level.

    Parameters
    ----------
    chip : an accelerator with on-chip bandwidths in the spec table (``"h100-sxm"``, ``"tpu-v5e"``).
    kernels : ``{label: {level: intensity}}``, a kernel's FLOPs per byte at each memory level
        (``"hbm"`` or one of ``chip.on_chip``), e.g. from
        :func:`rooflinelib.level_intensities`. Each gets its own marker, filled with
        its level's colour.
    dtype : which peak FLOPs/s is the flat roof.
    achieved : ``{label: FLOPs/s}``, a kernel's measured rate (a profiler's reading): its
        points are drawn at that height, one per level, as Nsight Compute's hierarchical
        chart does. Without it, each point sits on its own level's roof.
    legend : add a legend below the axes.
    ax : the Axes to draw on (default: the current one).

    Every argument is checked before anything is drawn. Returns the matplotlib Axes drawn on.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plot_level_roofline("h100-sxm", {"matmul": {"hbm": 85.3, "smem": 51.2}}, ax=ax)
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['HBM: 3.35 TB/s', 'shared memory (L1): 30.9 TB/s', 'bf16 peak: 989.5 TFLOPs/s', 'matmul']
    >>> plot_level_roofline("h100-sxm", {"matmul": {"l2": 10.0}}, ax=ax)
    Traceback (most recent call last):
    ...
    KeyError: "kernels['matmul']: NVIDIA H100 SXM has no bandwidth for memory level 'l2'; it has 'hbm', 'smem'"
    >>> plt.close(fig)
    """
    acc = get_accelerator(chip)
    peak = acc.peak(dtype)
    bandwidths = acc.memory_levels()
    if not isinstance(kernels, Mapping) or not kernels:
        raise ValueError(
            f"kernels must map a label to {{level: intensity}}, e.g. {{'matmul': {{'hbm': 85}}}}, got {kernels!r}"
        )
    points: dict[str, dict[str, float]] = {}
    for label, levels in kernels.items():
        if not isinstance(levels, Mapping) or not levels:
            raise ValueError(
                f"kernels[{label!r}] must map memory levels to intensities, e.g. {{'hbm': 85}}, got {levels!r}"
            )
        for level in levels:
            if level not in bandwidths:
                raise KeyError(
                    f"kernels[{label!r}]: {acc.name} has no bandwidth for memory level {level!r}; "
                    f"it has {', '.join(map(repr, bandwidths))}"
                )
        points[str(label)] = _intensities(f"kernels[{label!r}]", levels, "FLOPs/byte")
    rates = _intensities("achieved", achieved, "FLOPs/s")
    unknown = [k for k in rates if k not in points]
    if unknown:
        raise KeyError(
            f"achieved names {unknown[0]!r}, which is not a kernel; the kernels are {', '.join(map(repr, points))}"
        )
    xs = [x for levels in points.values() for x in levels.values()]
    lo = min([peak / max(bandwidths.values()) / 30, *xs]) / 2
    hi = max([peak / min(bandwidths.values()) * 10, *xs]) * 2
    x = np.geomspace(lo, hi, 400)
    ax = _current_axes(ax)
    colours = {level: MEMORY_COLOUR if level == "hbm" else LEVEL_COLOURS[i] for i, level in enumerate(bandwidths)}
    for level, bw in bandwidths.items():
        ax.plot(x, np.minimum(peak, x * bw), color=colours[level], lw=2,
                label=f"{_level_label(acc, level)}: {bw / 1e12:.3g} TB/s")  # fmt: skip
    ax.axhline(peak, color="0.1", lw=1.5, ls="--", label=f"{dtype} peak: {peak / 1e12:.1f} TFLOPs/s")
    for (label, levels), marker in zip(points.items(), KERNEL_MARKERS * len(points)):
        for level, intensity in levels.items():
            y = rates.get(label, float(roofline.attainable_flops(intensity, peak, bandwidths[level])))
            ax.plot([intensity], [y], marker, ms=9, mec="0.1", mfc=colours[level], ls="none")
        if label in rates:
            ax.plot(sorted(levels.values()), [rates[label]] * len(levels), color="0.4", lw=1, ls=":")
        ax.plot([], [], marker, ms=8, mec="0.1", mfc="white", ls="none", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo * min(bandwidths.values()), peak * 2)
    ax.set_xlabel("arithmetic intensity (FLOPs/byte)")
    ax.set_ylabel(f"attainable {dtype} FLOPs/s")
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    return ax


def plot_published_roofline(
    table: PublishedMatmuls,
    *,
    sweeps: Sequence[tuple[int, int]] = ((4096, 4096),),
    legend: bool = True,
    ax: Axes | None = None,
    **line_kw: Any,
) -> Axes:
    """A published table's measured matmuls on its chip's spec roofline.

    Every measured shape is a grey dot; each ``(D, F)`` in ``sweeps`` is joined
    up as ``[B, D] @ [D, F]`` for growing ``B``; a dotted line marks the best
    rate measured. ``**line_kw`` goes to the roofline (see :func:`plot_roofline`).
    Returns the matplotlib Axes drawn on.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from rooflinelib.published import get_published_matmuls
    >>> fig, ax = plt.subplots()
    >>> ax = plot_published_roofline(get_published_matmuls("xla-sm90-bf16-matmul"), ax=ax)
    >>> ax.get_xscale(), ax.get_ylabel()
    ('log', 'attainable bf16 FLOPs/s')
    >>> plt.close(fig)
    """
    acc = table.accelerator
    xs = [p.intensity for p in table.points]
    ridge = acc.critical_intensity(table.dtype)
    swept = [((D, F), table.sweep(D, F)) for D, F in sweeps]  # an unmeasured shape fails before drawing
    ax = plot_roofline(
        acc,
        dtype=table.dtype,
        intensity_range=(min(xs) / 2, max(ridge * 10, max(xs) * 2)),
        legend=False,
        ax=ax,
        **line_kw,
    )
    ax.plot(
        xs,
        [p.flops_per_s for p in table.points],
        "o",
        ms=3,
        color="0.45",
        alpha=0.6,
        label=f"{len(table.points)} measured shapes",
    )
    for i, ((D, F), pts) in enumerate(swept):
        ax.plot(
            [p.intensity for p in pts],
            [p.flops_per_s for p in pts],
            "o-",
            ms=6,
            lw=1.5,
            color=OKABE_ITO[(2 + i) % len(OKABE_ITO)],
            label=f"[B, {D}] @ [{D}, {F}], B = {pts[0].m}..{pts[-1].m}",
        )
    best = table.best()
    ax.axhline(
        best.flops_per_s,
        color="0.2",
        ls=":",
        lw=1,
        label=f"best measured, {best.flops_per_s / acc.peak(table.dtype):.0%} of the spec peak",
    )
    if legend:
        ax.legend(loc="lower right")
    return ax


def plot_published_sweeps(
    table: PublishedMatmuls,
    shapes: Sequence[tuple[int, int]],
    *,
    legend: bool = True,
    ax: Axes | None = None,
    **line_kw: Any,
) -> Axes:
    """Measured FLOPs/s against batch size ``B`` (markers) over the spec roofline's prediction (lines).

    One colour per ``(D, F)``; the dashed lines are the model's exact critical
    batch sizes. ``**line_kw`` goes to the prediction lines (see
    :func:`plot_matmul_batch`). Returns the matplotlib Axes drawn on.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from rooflinelib.published import get_published_matmuls
    >>> fig, ax = plt.subplots()
    >>> ax = plot_published_sweeps(get_published_matmuls("xla-sm90-bf16-matmul"), [(4096, 4096)], ax=ax)
    >>> ax.get_xscale()
    'log'
    >>> plt.close(fig)
    """
    if not shapes:
        raise ValueError("shapes must list at least one (D, F) pair, e.g. [(4096, 4096)]")
    sweeps = [table.sweep(D, F) for D, F in shapes]
    lo, hi = min(p.m for s in sweeps for p in s), max(p.m for s in sweeps for p in s)
    B = np.unique(np.round(np.geomspace(lo, hi, 200)))
    ax = plot_matmul_batch(
        table.accelerator, shapes, batch_sizes=B, precision=table.dtype, legend=False, ax=ax, **line_kw
    )
    for i, pts in enumerate(sweeps):
        ax.plot(
            [p.m for p in pts],
            [p.flops_per_s for p in pts],
            "o",
            ms=7,
            mfc="white",
            mew=2,
            color=OKABE_ITO[1 + i % (len(OKABE_ITO) - 1)],
            label="_measured",
        )
    ax.plot([], [], "o", ms=7, mfc="white", mew=2, color="0.3", label="measured (circles)")
    ax.set_xscale("log", base=2)
    if legend:
        ax.legend()
    return ax


def plot_overhead_floor(
    table: PublishedMatmuls,
    *,
    overhead: float | None = None,
    legend: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """Measured time of the table's square matmuls ``[n, n] @ [n, n]`` against ``n``, with three bounds.

    Drawn: the roofline's time ``max(T_math, T_comms)`` from the spec sheet of the table's chip, a flat
    fixed cost per call (``overhead`` seconds; by default the smallest time measured), the larger of the
    two, and a dotted line at the smallest ``n`` whose roofline time reaches the fixed cost
    (:func:`rooflinelib.square_matmul_size_for_time`). Times are in microseconds, on log-log axes.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from rooflinelib.published import get_published_matmuls
    >>> fig, ax = plt.subplots()
    >>> ax = plot_overhead_floor(get_published_matmuls("xla-sm90-bf16-matmul"), ax=ax)
    >>> [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")][-2:]
    ['fixed cost per call, 4.99 µs', 'n = 1352']
    >>> plt.close(fig)
    """
    acc = table.accelerator
    peak, bw = acc.peak(table.dtype), acc.hbm_bandwidth
    square = sorted((p for p in table.points if p.b == 1 and p.m == p.n == p.k), key=lambda p: p.m)
    if not square:
        raise ValueError(f"the table {table.name!r} has no square matmul [n, n] @ [n, n] to draw")
    t0 = (
        min(p.seconds for p in square) if overhead is None else float(as_number("overhead", overhead, "s", scalar=True))
    )
    n_star = matmul.square_matmul_size_for_time(t0, peak, bw, precision=table.dtype)
    n = np.unique(np.round(np.geomspace(min(square[0].m, n_star) / 1.5, square[-1].m * 1.5, 300)))
    model = np.maximum(matmul.matmul_flops(n, n, n) / peak, matmul.matmul_bytes(n, n, n, precision=table.dtype) / bw)
    ax = _current_axes(ax)
    ax.plot(n, model * 1e6, color=OKABE_ITO[1], lw=2, label="roofline: max(T_math, T_comms)")
    ax.plot(n, np.maximum(model, t0) * 1e6, color="0.2", ls="--", lw=1.5, label="the larger of the two")
    ax.plot([p.m for p in square], [p.seconds * 1e6 for p in square], "o", ms=7, color=OKABE_ITO[2], label="measured")
    ax.axhline(t0 * 1e6, color=OKABE_ITO[5], ls=":", lw=2, label=f"fixed cost per call, {t0 * 1e6:.3g} µs")
    ax.axvline(n_star, color="0.4", ls=":", lw=1, label=f"n = {n_star}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n, for a matmul [n, n] @ [n, n]")
    ax.set_ylabel("time per matmul (µs)")
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend(loc="upper left", fontsize="small")
    return ax


def _log_log_times(ax: Axes, xlabel: str, ylabel: str, legend: bool) -> Axes:
    """Finish a plot of times against a size: both axes logarithmic, labelled, a major grid, the legend top left."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend(loc="upper left")
    return ax


def plot_data_parallel_step(
    chip: str | Accelerator,
    D: int,
    F: int,
    *,
    n_chips: int,
    links: int = 1,
    link: str = "ici",
    batch_sizes: Sequence[int] | np.ndarray | None = None,
    precision: PrecisionLike = "bf16",
    legend: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """``T_math`` and ``T_comms`` of one data-parallel training step of ``[B, D] @ [D, F]``, against ``B`` (log-log).

    ``T_math`` rises with the tokens per chip ``B``; the gradient's ring all-reduce over ``n_chips``
    chips and ``links`` of the chip's ``link`` links does not depend on ``B``. A dashed line marks
    where they cross, :func:`~rooflinelib.matmul.data_parallel_critical_batch`. Times are in ms.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plot_data_parallel_step("tpu-v5e", 8192, 8192, n_chips=16, ax=ax)
    >>> [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    ['forward + backward (T_math)', 'gradient all-reduce (T_comms)', 'compute hides the all-reduce']
    >>> plt.close(fig)
    """
    acc = get_accelerator(chip)
    if link not in acc.links:
        raise KeyError(f"{acc.name} has no {link!r} link in the spec table; it has {sorted(acc.links)}")
    prec = Precision.from_any(precision)
    peak, bw = acc.peak(prec.x), acc.links[link].bandwidth
    B = (
        np.unique(np.round(np.geomspace(64, 65536, 200)))
        if batch_sizes is None
        else np.atleast_1d(as_size("batch_sizes", batch_sizes))
    )
    t_math, t_comms = matmul.data_parallel_step_times(B, D, F, peak, bw, n_chips=n_chips, links=links, precision=prec)
    b_star = float(matmul.data_parallel_critical_batch(peak, bw, n_chips=n_chips, links=links, precision=prec))
    ax = _current_axes(ax)
    ax.plot(B, np.asarray(t_math) * 1e3, color=OKABE_ITO[1], lw=2, label="forward + backward (T_math)")
    ax.plot(B, np.full_like(B, float(t_comms)) * 1e3, color=OKABE_ITO[2], lw=2, label="gradient all-reduce (T_comms)")
    ax.axvline(b_star, color="0.3", ls="--", lw=1, label="compute hides the all-reduce")
    return _log_log_times(ax, "tokens per chip B", "time per training step, one weight (ms)", legend)


def plot_decode_time(
    model: str | Model,
    chips: str | Accelerator | Sequence[str | Accelerator],
    *,
    batch_sizes: Sequence[int] | np.ndarray | None = None,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
    mark_critical: bool = True,
    legend: bool = True,
    ax: Axes | None = None,
    **line_kw: Any,
) -> Axes:
    """Roofline time of one decode step of ``model`` against the batch size, one line per chip (log-log).

    Each line is flat while the step waits on the weights, and rises once ``T_math`` takes
    over; with ``mark_critical`` a dot marks each chip's critical batch. Times are in
    milliseconds. ``**line_kw`` goes to :meth:`~matplotlib.axes.Axes.plot` for the lines.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plot_decode_time("llama-3-8b", ["tpu-v5e", "h100-sxm"], ax=ax)
    >>> ax.get_xscale(), [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    ('log', ['TPU v5e', 'NVIDIA H100 SXM', 'critical batch'])
    >>> plt.close(fig)
    """
    from rooflinelib import models, serving

    accs = _as_chips(chips)
    m = models.get_model(model)
    B = (
        np.unique(np.round(np.geomspace(1, 4096, 200)))
        if batch_sizes is None
        else np.atleast_1d(as_size("batch_sizes", batch_sizes))
    )
    prec = Precision.from_any(precision)
    times = [serving.decode_step_time(m, acc, B, precision=prec, compute_dtype=compute_dtype) for acc in accs]
    ax = _current_axes(ax)
    for i, (acc, t) in enumerate(zip(accs, times)):
        kw = {"color": OKABE_ITO[1 + i % (len(OKABE_ITO) - 1)], "lw": 2, "label": acc.name, **line_kw}
        (line,) = ax.plot(B, np.asarray(t) * 1e3, **kw)
        if mark_critical:
            b_star = serving.decode_critical_batch(m, acc, precision=prec, compute_dtype=compute_dtype)
            # at B* the step takes T_comms, which does not depend on the batch
            t_star = models.estimate_forward(m, acc, 1, precision=prec, compute_dtype=compute_dtype).t_comms
            ax.plot([b_star], [t_star * 1e3], "o", ms=6, color=line.get_color(), label="_critical batch")
    ax.plot([], [], "o", ms=6, color="0.3", label="critical batch")
    return _log_log_times(ax, "batch size B (sequences, one token each)", "time per decode step (ms)", legend)


def _context_curves(
    model: str | Model,
    chip: str | Accelerator,
    contexts: Sequence[int],
    precision: PrecisionLike,
    kv_dtype: str | None,
    max_batch: int,
) -> list[tuple[int, np.ndarray, np.ndarray, bool]]:
    """For each context: (context, batch sizes up to the largest HBM holds, step times in s, capped?)."""
    from rooflinelib import serving

    if isinstance(contexts, (str, bytes)) or not isinstance(contexts, (Sequence, np.ndarray)) or len(contexts) == 0:
        raise ValueError(
            f"contexts must list at least one context length in tokens, e.g. [1024, 8192], got {contexts!r}"
        )
    cap = int(as_size("max_batch", max_batch, scalar=True))
    curves = []
    for c in contexts:
        ctx = int(as_size("contexts", c, scalar=True))
        fits = serving.max_decode_batch(model, chip, ctx, kv_dtype=kv_dtype, precision=precision)
        if fits == 0:
            continue
        top = min(fits, cap)
        B = np.unique(np.round(np.geomspace(1, top, 120)))
        t = serving.decode_step_time(model, chip, B, context=ctx, kv_dtype=kv_dtype, precision=precision)
        curves.append((ctx, B, np.asarray(t), fits > cap))
    return curves


def _draw_context_lines(
    ax: Axes,
    curves: list[tuple[int, np.ndarray, np.ndarray, bool]],
    xy: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    line_kw: dict[str, Any],
) -> None:
    """One line per context on log-log axes, at ``xy(B, t)``; a square where HBM stops the batch, and its legend entry."""
    for i, (ctx, B, t, capped) in enumerate(curves):
        kw = {
            "color": OKABE_ITO[1 + i % (len(OKABE_ITO) - 1)],
            "lw": 2,
            "label": f"{ctx:,} tokens of context",
            **line_kw,
        }
        x, y = xy(B, t)
        (line,) = ax.plot(x, y, **kw)
        if not capped:
            ax.plot([x[-1]], [y[-1]], "s", ms=7, color=line.get_color(), label="_largest batch")
    ax.plot([], [], "s", ms=7, color="0.3", label="largest batch HBM holds")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.grid(True, which="major", alpha=0.3)


def plot_decode_context(
    model: str | Model,
    chip: str | Accelerator,
    contexts: Sequence[int],
    *,
    precision: PrecisionLike = "bf16",
    kv_dtype: str | None = None,
    max_batch: int = 8192,
    legend: bool = True,
    ax: Axes | None = None,
    **line_kw: Any,
) -> Axes:
    """Time of one decode step against the batch size, one line per context length, with the KV cache read (log-log).

    Each line stops at the largest batch whose cache fits in HBM beside the weights
    (:func:`~rooflinelib.serving.max_decode_batch`), marked with a square, or at ``max_batch``.
    A dashed line gives the weights alone (no cache). Times are in milliseconds.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plot_decode_context("llama-3-8b", "h100-sxm", [1024, 8192], ax=ax)
    >>> [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    ['weights only', '1,024 tokens of context', '8,192 tokens of context', 'largest batch HBM holds']
    >>> plt.close(fig)
    """
    from rooflinelib import serving

    curves = _context_curves(model, chip, contexts, precision, kv_dtype, max_batch)
    ax = _current_axes(ax)
    B0 = np.unique(np.round(np.geomspace(1, max(max_batch, 1), 120)))
    t0 = serving.decode_step_time(model, chip, B0, precision=precision)
    ax.plot(B0, np.asarray(t0) * 1e3, "--", color="0.45", lw=1.5, label="weights only")
    _draw_context_lines(ax, curves, lambda B, t: (B, t * 1e3), line_kw)
    ax.set_xlabel("batch size B (sequences, one token each)")
    ax.set_ylabel("time per decode step (ms)")
    if legend:
        ax.legend(loc="upper left")
    return ax


def plot_decode_throughput(
    model: str | Model,
    chip: str | Accelerator,
    contexts: Sequence[int],
    *,
    precision: PrecisionLike = "bf16",
    kv_dtype: str | None = None,
    max_batch: int = 8192,
    legend: bool = True,
    ax: Axes | None = None,
    **line_kw: Any,
) -> Axes:
    """Tokens per second each sequence gets against tokens per second in all, one line per context (log-log).

    Along a line the batch grows from 1 (top left: fastest for each sequence, least in all) to
    the largest batch HBM holds (a square): latency against throughput.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plot_decode_throughput("llama-3-8b", "h100-sxm", [1024], ax=ax)
    >>> line = ax.get_lines()[0]
    >>> round(float(line.get_ydata()[0])), ax.get_xlabel()     # alone: 1 / 4.5 ms
    (221, 'tokens/s in all (batch / step time)')
    >>> plt.close(fig)
    """
    curves = _context_curves(model, chip, contexts, precision, kv_dtype, max_batch)
    ax = _current_axes(ax)
    _draw_context_lines(ax, curves, lambda B, t: (B / t, 1 / t), line_kw)
    ax.set_xlabel("tokens/s in all (batch / step time)")
    ax.set_ylabel("tokens/s per sequence")
    if legend:
        ax.legend(loc="lower left")
    return ax


def plot_layer_matmuls(
    model: str | Model,
    chip: str | Accelerator,
    tokens: Sequence[int],
    *,
    precision: PrecisionLike = "bf16",
    compute_dtype: str | None = None,
    attention: bool = False,
    kv_dtype: str | None = None,
    legend: bool = True,
    ax: Axes | None = None,
    **line_kw: Any,
) -> Axes:
    """The matmuls of one layer of ``model`` on ``chip``'s roofline, at each token count in ``tokens``.

    One marker shape per weight shape, one colour per token count; each point sits at the
    matmul's exact intensity (activations, weights and output all counted). A ``[D, F]`` and an
    ``[F, D]`` matrix have the same intensity when activations and output share a format, and
    then share a marker. With ``attention``, a star marks decode attention: each sequence's
    FLOPs over its own KV cache (in ``kv_dtype``, default ``precision.out``), the same
    intensity at any batch and context. ``**line_kw`` goes to the roofline (see :func:`plot_roofline`).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plot_layer_matmuls("llama-3-8b", "h100-sxm", [8, 4096], ax=ax)
    >>> ax.get_xscale(), ax.get_yscale()
    ('log', 'log')
    >>> plt.close(fig)
    """
    from rooflinelib import models, serving

    m = models.get_model(model)
    acc = get_accelerator(chip)
    prec = Precision.from_any(precision)
    peak_dtype = compute_dtype or prec.x
    peak, bw = acc.peak(peak_dtype), acc.hbm_bandwidth
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence) or not tokens:
        raise ValueError(f"tokens must list at least one token count, e.g. [8, 4096], got {tokens!r}")
    counts = [int(as_size("tokens", t, scalar=True)) for t in tokens]
    shapes: dict[tuple[int, int], list[str]] = {}
    for mm in models.layer_matmuls(m):
        # [D, F] and [F, D] sit at the same intensity when x and out have the same size: one marker
        same = (mm.F, mm.D) if prec.x == prec.out and (mm.F, mm.D) in shapes else (mm.D, mm.F)
        shapes.setdefault(same, []).append(mm.name)
    points = {
        (shape, T): float(matmul.matmul_intensity(T, shape[0], shape[1], precision=prec))
        for shape in shapes
        for T in counts
    }
    # one new token's attention over one cached position, against that position's key and value bytes
    kv = models.kv_cache_bytes_per_token(m, kv_dtype or prec.out)
    attention_x = float(serving.attention_flops(m, 1)) / kv
    xs = list(points.values()) + ([attention_x] if attention else [])
    ridge = peak / bw
    ax = plot_roofline(
        acc,
        dtype=peak_dtype,
        intensity_range=(min(xs) / 3, max(ridge * 10, max(xs) * 3)),
        legend=False,
        ax=ax,
        **line_kw,
    )
    markers = ("o", "s", "^", "D", "v", "P")
    for j, T in enumerate(counts):
        colour = OKABE_ITO[(2 + j) % len(OKABE_ITO)]
        for i, shape in enumerate(shapes):
            x = points[(shape, T)]
            ax.plot(
                [x],
                [float(roofline.attainable_flops(x, peak, bw))],
                markers[i % len(markers)],
                ms=8,
                color=colour,
                mec="0.15",
                alpha=0.9,
                label="_point",
            )
    if attention:
        y = float(roofline.attainable_flops(attention_x, peak, bw))
        ax.plot([attention_x], [y], "*", ms=14, color=OKABE_ITO[0], label="_point")
    for i, (shape, names) in enumerate(shapes.items()):
        ax.plot([], [], markers[i % len(markers)], ms=8, color="white", mec="0.15", label=", ".join(names))
    if attention:
        ax.plot([], [], "*", ms=14, color=OKABE_ITO[0], label="attention (any batch)")
    for j, T in enumerate(counts):
        ax.plot([], [], "s", ms=8, color=OKABE_ITO[(2 + j) % len(OKABE_ITO)], label=f"{T} tokens")
    if legend:
        ax.legend(loc="lower right", fontsize="small")
    return ax
