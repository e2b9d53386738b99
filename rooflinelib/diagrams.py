"""Pictures of the ideas behind the roofline: a chip, an overlapped schedule, a matmul's reuse, tiles, two chips.

Each helper draws on ``ax`` (the current Axes by default) and returns it, like the plots in
:mod:`rooflinelib.plotting`. Every number a picture shows is computed here from its arguments or
from the spec table (:mod:`rooflinelib.specs`), never typed: :func:`chip_labels` is what
:func:`draw_chip` writes, so a page or a test can compare the two. No titles, figure sizes or
``plt.show()``: the page owns those. Symbols are written as mathtext (``$B \\times D$``) so that
only words need a translation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from rooflinelib import matmul, roofline
from rooflinelib._checks import as_number, as_size
from rooflinelib.plotting import OKABE_ITO, _current_axes
from rooflinelib.specs import Accelerator, get_accelerator

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "Interval",
    "chip_labels",
    "draw_chip",
    "draw_matmul_reuse",
    "draw_overlap",
    "draw_tiling",
    "draw_two_chip_split",
    "overlap_schedule",
]

# How the spec table's link keys are written (by their makers).
LINK_NAMES = {"ici": "ICI", "nvlink": "NVLink", "pcie": "PCIe", "dcn": "DCN"}
# What each kind of link connects the chip to.
LINK_ENDS = {"ici": "other chips", "nvlink": "other GPUs", "pcie": "the host", "dcn": "other hosts"}
# The names of the on-chip memory and of the units, by vendor (Google: TPU; otherwise a GPU).
UNITS = {
    "Google": ("on-chip memory (VMEM)", "matrix unit (MXU)", "vector unit (VPU)"),
    "other": ("on-chip memory (shared memory, L2)", "matrix units (Tensor Cores)", "vector units (CUDA cores)"),
}
_BLUE, _ORANGE, _GREEN, _PINK, _SKY = OKABE_ITO[1], OKABE_ITO[2], OKABE_ITO[3], OKABE_ITO[4], OKABE_ITO[6]


def _rate(bytes_per_s: float) -> str:
    """``819 GB/s``, ``3.35 TB/s``, ``3.125 GB/s``: every digit the table holds, in the largest unit below it."""
    if bytes_per_s >= 1e12:
        return f"{bytes_per_s / 1e12:.4g} TB/s"
    return f"{bytes_per_s / 1e9:.4g} GB/s"


def _flops(flops_per_s: float) -> str:
    return f"{flops_per_s / 1e12:.5g} TFLOPs/s"


def _capacity(acc: Accelerator) -> str:
    """The HBM capacity the course computes with: GiB for Google's chips, GB for the others.

    A capacity the device reports is shown to a tenth of a GB, beside the figure the vendor prints.
    """
    if acc.hbm_capacity is None:
        return "capacity not in the table"
    if acc.vendor == "Google":
        return f"{acc.hbm_capacity / 2**30:.0f} GiB"
    if acc.capacity_basis == "reported":
        return f"{acc.hbm_capacity / 1e9:.1f} GB (printed {acc.hbm_capacity_printed})"
    return f"{acc.hbm_capacity / 1e9:.0f} GB"


def chip_labels(chip: str | Accelerator, dtype: str = "bf16") -> dict[str, str]:
    """The texts :func:`draw_chip` writes, each from the spec table.

    Keys: ``name``, ``hbm`` (capacity), ``hbm_bandwidth``, ``peak`` (the matrix unit's ``dtype`` peak),
    ``vector`` (the vector unit's peak: a TPU's ``vector_flops`` when the table has it, a GPU's fp32 peak,
    which its sheet gives for the ordinary cores, not the Tensor Cores) and one ``link:<key>`` per link.

    Examples
    --------
    >>> labels = chip_labels("tpu-v5e")
    >>> labels["hbm"], labels["hbm_bandwidth"], labels["peak"]
    ('16 GiB', '819 GB/s', '197 TFLOPs/s bf16')
    >>> labels["link:ici"], labels["link:dcn"]
    ('ICI: 4 links × 45 GB/s', 'DCN: 3.125 GB/s')
    """
    acc = get_accelerator(chip)
    labels = {
        "name": acc.name,
        "hbm": _capacity(acc),
        "hbm_bandwidth": _rate(acc.hbm_bandwidth),
        "peak": f"{_flops(acc.peak(dtype))} {dtype}",
    }
    if acc.vector_flops is not None:
        labels["vector"] = _flops(acc.vector_flops)
    elif acc.vendor != "Google" and "fp32" in acc.peak_flops:  # a GPU sheet's fp32 figure is its CUDA cores'
        labels["vector"] = f"{_flops(acc.peak('fp32'))} fp32"
    for key, link in acc.links.items():
        name = LINK_NAMES.get(key, key.upper())
        if link.scope == "per link" and link.count:
            labels[f"link:{key}"] = f"{name}: {link.count} links × {_rate(link.bandwidth)}"
        else:
            labels[f"link:{key}"] = f"{name}: {_rate(link.bandwidth)}"
    return labels


def _box(ax: Axes, x: float, y: float, w: float, h: float, colour: str, *, dashed: bool = False) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (x, y),
            w,
            h,
            boxstyle="round,pad=0.02,rounding_size=0.12",
            facecolor="none" if dashed else colour,
            edgecolor="0.25" if dashed else colour,
            alpha=1 if dashed else 0.22,
            ls="--" if dashed else "-",
            lw=1.2,
        )
    )


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], *, both: bool = True) -> None:
    ax.annotate(
        "",
        xy=end,
        xytext=start,
        arrowprops={"arrowstyle": "<|-|>" if both else "-|>", "color": "0.2", "lw": 1.5, "shrinkA": 0, "shrinkB": 0},
    )


def draw_chip(chip: str | Accelerator, *, dtype: str = "bf16", ax: Axes | None = None) -> Axes:
    """One accelerator as boxes: HBM beside the compute die, on-chip memory and the units on it, the links.

    Every figure on it comes from the spec table (:func:`chip_labels`); a part the table has no
    figure for (the on-chip memory, a TPU v5e's vector unit) is drawn with its name only.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> texts = [t.get_text() for t in draw_chip("tpu-v5e", ax=ax).texts]
    >>> "819 GB/s" in texts and "197 TFLOPs/s bf16" in texts
    True
    >>> plt.close(fig)
    """
    acc = get_accelerator(chip)
    labels = chip_labels(acc, dtype)
    memory, matrix, vector = UNITS["Google" if acc.vendor == "Google" else "other"]
    ax = _current_axes(ax)
    small: dict[str, Any] = {"ha": "center", "va": "center", "fontsize": 9}

    _box(ax, 0.2, 0.4, 7.6, 5.0, "0.5", dashed=True)  # the package
    ax.text(0.35, 5.15, labels["name"], ha="left", va="center", fontsize=10)
    _box(ax, 0.5, 1.0, 1.6, 3.8, _BLUE)  # HBM beside the die
    ax.text(1.3, 3.3, "HBM", **{**small, "fontsize": 11})
    ax.text(1.3, 2.6, labels["hbm"], **small)
    ax.text(1.3, 1.5, "off the die,\nin the package", **{**small, "fontsize": 8})
    _box(ax, 3.4, 0.8, 4.2, 4.2, "0.5", dashed=True)  # the compute die
    ax.text(5.5, 4.75, "compute die", **small)
    _box(ax, 3.6, 1.1, 1.65, 3.4, _SKY)
    ax.text(4.425, 2.8, memory.replace(" (", "\n("), **{**small, "fontsize": 7})
    _box(ax, 5.65, 3.0, 1.75, 1.5, _ORANGE)
    ax.text(6.525, 4.0, matrix.replace(" (", "\n("), **{**small, "fontsize": 7.5})
    ax.text(6.525, 3.3, labels["peak"], **{**small, "fontsize": 7.5})
    _box(ax, 5.65, 1.1, 1.75, 1.5, _GREEN)
    ax.text(6.525, 2.1 if "vector" in labels else 1.85, vector.replace(" (", "\n("), **{**small, "fontsize": 7.5})
    if "vector" in labels:
        ax.text(6.525, 1.4, labels["vector"], **{**small, "fontsize": 7.5})
    _arrow(ax, (2.15, 2.8), (3.55, 2.8))  # HBM <-> on-chip memory
    ax.text(2.78, 3.1, labels["hbm_bandwidth"], **{**small, "fontsize": 8})
    _arrow(ax, (5.3, 3.75), (5.6, 3.75))
    _arrow(ax, (5.3, 1.85), (5.6, 1.85))
    links = list(acc.links)
    for i, key in enumerate(links):  # the links leave the package on the right
        y = 4.6 - i * (3.8 / max(1, len(links) - 1)) if len(links) > 1 else 2.8
        _arrow(ax, (7.85, y), (8.5, y))
        ax.text(8.6, y + 0.12, labels[f"link:{key}"], ha="left", va="bottom", fontsize=8)
        ax.text(8.6, y - 0.1, f"to {LINK_ENDS.get(key, 'other devices')}", ha="left", va="top", fontsize=8)
    ax.set_xlim(0, 11.2)
    ax.set_ylim(0.2, 5.6)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


class Interval(NamedTuple):
    """One bar of a schedule: what runs (``"transfer"`` or ``"compute"``), from ``start`` to ``end`` seconds."""

    kind: str
    start: float
    end: float


def overlap_schedule(t_math: float, t_comms: float, chunks: int) -> list[Interval]:
    """The transfers and the arithmetic of a kernel cut into ``chunks`` equal pieces, each piece computed as
    soon as it has arrived and the piece before it is done, while the next one arrives.

    The last interval ends at :func:`rooflinelib.pipelined_time`; with ``chunks=1`` nothing overlaps.

    Examples
    --------
    >>> [(k, round(s * 1e3, 2), round(e * 1e3, 2)) for k, s, e in overlap_schedule(3e-3, 2e-3, 2)]
    [('transfer', 0.0, 1.0), ('compute', 1.0, 2.5), ('transfer', 1.0, 2.0), ('compute', 2.5, 4.0)]
    """
    tm = float(as_number("t_math", t_math, "s", allow_zero=True, scalar=True))
    tc = float(as_number("t_comms", t_comms, "s", allow_zero=True, scalar=True))
    roofline.pipelined_time(tm, tc, chunks)  # checks chunks
    load, work = tc / chunks, tm / chunks
    out: list[Interval] = []
    done = 0.0
    for i in range(chunks):
        arrived = (i + 1) * load
        start = max(arrived, done)
        done = start + work
        out += [Interval("transfer", i * load, arrived), Interval("compute", start, done)]
    return out


def draw_overlap(t_math: float, t_comms: float, *, chunks: int = 4, unit: str = "ms", ax: Axes | None = None) -> Axes:
    """Two timelines of one kernel: transfer then compute (the sum), and the two overlapped in ``chunks`` pieces.

    Dashed lines mark the lower bound ``max(T_math, T_comms)`` and the upper bound, their sum; the
    overlapped timeline ends one piece of the shorter time after the lower bound
    (:func:`rooflinelib.pipelined_time`). Times are shown in ``unit`` (``"ms"`` or ``"µs"``).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> sorted(t.get_text() for t in draw_overlap(3e-3, 2e-3, ax=ax).texts if t.get_text().endswith(" ms"))
    ['3.5 ms', '5 ms']
    >>> plt.close(fig)
    """
    scale = {"ms": 1e3, "µs": 1e6}.get(unit)
    if scale is None:
        raise ValueError(f"unit must be 'ms' or 'µs', got {unit!r}")
    serial = overlap_schedule(t_math, t_comms, 1)
    piped = overlap_schedule(t_math, t_comms, chunks)
    bounds = roofline.runtime_bounds(t_math, t_comms)
    ax = _current_axes(ax)
    lanes = {
        ("serial", "transfer"): 3.0,
        ("serial", "compute"): 2.2,
        ("piped", "transfer"): 1.0,
        ("piped", "compute"): 0.2,
    }
    colours = {"transfer": _BLUE, "compute": _ORANGE}
    for name, schedule in (("serial", serial), ("piped", piped)):
        for kind, start, end in schedule:
            ax.broken_barh(
                [(start * scale, (end - start) * scale)],
                (lanes[(name, kind)], 0.6),
                facecolors=colours[kind],
                edgecolors="white",
                lw=1.5,
            )
        end = max(i.end for i in schedule)
        ax.text(
            end * scale * 1.01, lanes[(name, "compute")] + 0.3, f"{end * scale:.3g} {unit}", va="center", fontsize=9
        )
    ax.text(0, 3.85, "one after the other", fontsize=9, va="center")
    ax.text(0, 1.85, f"overlapped, in {chunks} pieces", fontsize=9, va="center")
    for x, label in (
        (bounds.lower, r"$\max(T_\mathrm{math}, T_\mathrm{comms})$"),
        (bounds.upper, r"$T_\mathrm{math} + T_\mathrm{comms}$"),
    ):
        ax.axvline(float(x) * scale, color="0.3", ls="--", lw=1)
        ax.text(float(x) * scale, -0.35, label, ha="center", va="top", fontsize=8)
    ax.set_yticks([lanes[k] + 0.3 for k in lanes], ["transfer", "compute", "transfer", "compute"])
    ax.set_ylim(-0.9, 4.2)
    ax.set_xlim(0, float(bounds.upper) * scale * 1.18)
    ax.set_xlabel(f"time ({unit})")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    return ax


def draw_matmul_reuse(B: int, D: int, F: int, *, ax: Axes | None = None) -> Axes:
    """``X[B, D] @ W[D, F] → Z[B, F]`` drawn to scale, with one weight and the ``B`` rows that use it.

    Each weight is read from memory once and multiplied by one value of every row of ``X``: ``B``
    uses per byte fetched, which is why the intensity is close to ``B`` when ``B`` is small next to
    ``D`` and ``F`` (the printed intensity is :func:`rooflinelib.matmul_intensity`, bf16).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> any("237.0" in t.get_text() for t in draw_matmul_reuse(256, 4096, 14336, ax=ax).texts)
    True
    >>> plt.close(fig)
    """
    from matplotlib.patches import Rectangle

    B_, D_, F_ = (int(as_size(name, v, scalar=True)) for name, v in (("B", B), ("D", D), ("F", F)))
    ax = _current_axes(ax)
    gap = 0.08 * max(D_, F_)
    zx, wy = D_ + gap, B_ + gap  # Z right of X, W above Z
    ax.add_patch(Rectangle((0, 0), D_, B_, facecolor=_SKY, alpha=0.5, edgecolor="0.3"))
    ax.add_patch(Rectangle((zx, wy), F_, D_, facecolor=_ORANGE, alpha=0.35, edgecolor="0.3"))
    ax.add_patch(Rectangle((zx, 0), F_, B_, facecolor=_GREEN, alpha=0.35, edgecolor="0.3"))
    # one weight W[i, j], the column i of X it multiplies and the column j of Z it feeds
    i, j, band = 0.3 * D_, 0.55 * F_, 0.012 * max(D_, F_)
    ax.add_patch(Rectangle((i, 0), band, B_, facecolor=_BLUE, edgecolor="none"))
    ax.add_patch(Rectangle((zx + j, 0), band, B_, facecolor=_BLUE, edgecolor="none"))
    ax.plot([zx + j + band / 2], [wy + D_ - i], "s", ms=7, color=_PINK, mec="0.1")
    ax.plot([zx + j + band / 2] * 2, [wy + D_ - i, B_], ":", color=_PINK, lw=1.5)
    size: dict[str, Any] = {"fontsize": 9}
    mb = {"X": 2 * B_ * D_ / 1e6, "W": 2 * D_ * F_ / 1e6, "Z": 2 * B_ * F_ / 1e6}  # bf16: 2 bytes a value
    ax.text(D_ / 2, -0.04 * D_, rf"$X$: $B \times D$ = {B_} × {D_}, {mb['X']:.3g} MB", ha="center", va="top", **size)
    ax.text(
        zx + F_ / 2,
        wy + D_ * 1.02,
        rf"$W$: $D \times F$ = {D_} × {F_}, {mb['W']:.4g} MB",
        ha="center",
        va="bottom",
        **size,
    )
    ax.text(
        zx + F_ / 2, -0.04 * D_, rf"$Z$: $B \times F$ = {B_} × {F_}, {mb['Z']:.3g} MB", ha="center", va="top", **size
    )
    ax.text(zx + j + 0.03 * F_, wy + D_ - i, "one weight: read once", va="center", **size)
    ax.text(zx + j + 0.03 * F_, B_ + gap / 2, f"used by all B = {B_} rows", va="center", **size)
    intensity = float(matmul.matmul_intensity(B_, D_, F_))
    ax.text(
        D_ / 2,
        wy + D_ / 2,
        f"bf16 intensity\n{intensity:.1f} FLOPs/byte\n≈ B = {B_}",
        ha="center",
        va="center",
        fontsize=10,
    )
    ax.set_xlim(-0.02 * (zx + F_), (zx + F_) * 1.02)
    ax.set_ylim(-0.14 * D_, wy + D_ * 1.1)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def draw_tiling(m: int, k: int, n: int, bm: int, bk: int, bn: int, *, ax: Axes | None = None) -> Axes:
    """An ``(m, k) @ (k, n)`` matmul cut into tiles, drawn to scale, with the book's ``B, D, F`` beside
    ``m, k, n``: one output tile and the row and column of input tiles it reads.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> texts = [t.get_text() for t in draw_tiling(2048, 2048, 4096, 512, 512, 1024, ax=ax).texts]
    >>> "reads 4 tiles of X" in " ".join(texts)
    True
    >>> plt.close(fig)
    """
    from matplotlib.patches import Rectangle

    sizes = {
        name: int(as_size(name, v, scalar=True))
        for name, v in zip(["m", "k", "n", "bm", "bk", "bn"], (m, k, n, bm, bk, bn))
    }
    for dim, tile in (("m", "bm"), ("k", "bk"), ("n", "bn")):
        if sizes[dim] % sizes[tile]:
            raise ValueError(f"{tile} must divide {dim}: {dim} = {sizes[dim]}, {tile} = {sizes[tile]}")
    m_, k_, n_, bm_, bk_, bn_ = sizes.values()
    tm, tk, tn = m_ // bm_, k_ // bk_, n_ // bn_
    ax = _current_axes(ax)
    gap = 0.2 * max(k_, n_)
    zx, yy = k_ + gap, m_ + gap
    ti, tj = tm // 2, tn // 2  # the output tile shown, counted from the top and from the left

    def grid(
        x0: float, y0: float, rows: int, cols: int, h: float, w: float, colour: str, hot: set[tuple[int, int]]
    ) -> None:
        for r in range(rows):
            for c in range(cols):
                ax.add_patch(
                    Rectangle(
                        (x0 + c * w, y0 + (rows - 1 - r) * h),
                        w,
                        h,
                        facecolor=colour if (r, c) in hot else "white",
                        alpha=0.8 if (r, c) in hot else 1,
                        edgecolor="0.35",
                        lw=0.8,
                    )
                )

    grid(0, 0, tm, tk, bm_, bk_, _SKY, {(ti, c) for c in range(tk)})
    grid(zx, yy, tk, tn, bk_, bn_, _ORANGE, {(r, tj) for r in range(tk)})
    grid(zx, 0, tm, tn, bm_, bn_, _GREEN, {(ti, tj)})
    size: dict[str, Any] = {"fontsize": 9}
    ax.text(k_ / 2, -0.05 * m_, r"$X$: $m \times k$ = $B \times D$" + f"\n{m_} × {k_}", ha="center", va="top", **size)
    ax.text(
        zx + n_ / 2,
        yy + k_ * 1.02,
        rf"$Y$: $k \times n$ = $D \times F$ = {k_} × {n_}",
        ha="center",
        va="bottom",
        **size,
    )
    ax.text(
        zx + n_ / 2, -0.05 * m_, r"$Z$: $m \times n$ = $B \times F$" + f"\n{m_} × {n_}", ha="center", va="top", **size
    )
    ax.text(-0.03 * k_, m_ - (ti + 0.5) * bm_, rf"$b_m$ = {bm_}", ha="right", va="center", **size)
    ax.text(bk_ / 2, m_ * 1.02, rf"$b_k$ = {bk_}", ha="center", va="bottom", **size)
    ax.text(zx + (tj + 0.5) * bn_, yy - 0.02 * m_, rf"$b_n$ = {bn_}", ha="center", va="top", **size)
    ax.text(
        k_ / 2,
        yy + k_ / 2,
        f"one output tile\nreads {tk} tiles of X\nand {tk} of Y",
        ha="center",
        va="center",
        fontsize=9,
    )
    ax.set_xlim(-0.18 * k_, (zx + n_) * 1.02)
    ax.set_ylim(-0.3 * m_, yy + k_ * 1.12)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def draw_two_chip_split(
    B: int, D: int, F: int, *, peak_flops: float, link_bandwidth: float, ax: Axes | None = None
) -> Axes:
    r"""A bf16 ``[B, D] @ [D, F]`` split along ``D`` over two chips: each multiplies its halves, then the two
    swap their ``[B, F]`` partial sums over the link, one in each direction.

    The times shown are :func:`rooflinelib.sharded_matmul_t_math` and
    :func:`rooflinelib.sharded_matmul_t_comms` for the given peak and one-way link bandwidth.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> texts = [t.get_text() for t in draw_two_chip_split(512, 8192, 8192, peak_flops=1.97e14,
    ...                                                    link_bandwidth=4.5e10, ax=ax).texts]
    >>> [line for t in texts for line in t.splitlines() if "µs" in line]
    ['$T_\\mathrm{math}$ = 174.4 µs', '$T_\\mathrm{comms}$ = 186.4 µs']
    >>> plt.close(fig)
    """
    B_, D_, F_ = (int(as_size(name, v, scalar=True)) for name, v in (("B", B), ("D", D), ("F", F)))
    t_math = float(matmul.sharded_matmul_t_math(B_, D_, F_, peak_flops))
    t_comms = float(matmul.sharded_matmul_t_comms(B_, F_, link_bandwidth))
    sent = 2 * B_ * F_  # bf16 partial sum
    ax = _current_axes(ax)
    size: dict[str, Any] = {"fontsize": 9, "ha": "center", "va": "center"}
    for c, x0 in enumerate((0.2, 7.2)):
        _box(ax, x0, 0.4, 3.6, 4.2, "0.5", dashed=True)
        ax.text(x0 + 1.8, 4.3, f"chip {c}", **size)
        half = r"$X[:, :D/2]$" if c == 0 else r"$X[:, D/2:]$"
        rows = r"$Y[:D/2, :]$" if c == 0 else r"$Y[D/2:, :]$"
        _box(ax, x0 + 0.2, 2.6, 1.5, 1.2, _SKY)
        ax.text(x0 + 0.95, 3.2, half, **size)
        _box(ax, x0 + 1.9, 2.6, 1.5, 1.2, _ORANGE)
        ax.text(x0 + 2.65, 3.2, rows, **size)
        _box(ax, x0 + 0.6, 0.7, 2.4, 1.3, _GREEN)
        ax.text(x0 + 1.8, 1.55, "partial sum", **size)
        ax.text(x0 + 1.8, 1.1, rf"$Z_{c}$: $B \times F$", **size)
        _arrow(ax, (x0 + 1.8, 2.55), (x0 + 1.8, 2.05), both=False)
    _arrow(ax, (3.85, 1.6), (7.15, 1.6), both=False)
    _arrow(ax, (7.15, 1.1), (3.85, 1.1), both=False)
    ax.text(5.5, 2.2, f"2BF = {sent / 1e6:.3g} MB each way", **size)
    ax.text(5.5, 0.7, "link", **size)
    ax.text(
        5.5,
        3.6,
        rf"$T_\mathrm{{math}}$ = {t_math * 1e6:.1f} µs" + "\n" + rf"$T_\mathrm{{comms}}$ = {t_comms * 1e6:.1f} µs",
        **size,
    )
    ax.set_xlim(0, 11)
    ax.set_ylim(0.2, 4.8)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax
