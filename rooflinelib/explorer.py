"""An interactive roofline explorer: pick a chip, a dtype and ``B, D, F``; see where the matmul lands.

The logic is the pure function :func:`explore`; :func:`plot_explore` draws its
result; :class:`Explorer` wires both to ipywidgets (imported only when built),
so everything but the widgets can be used, and tested, without a browser.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

from rooflinelib._checks import as_size
from rooflinelib.estimate import estimate_matmul
from rooflinelib.specs import ACCELERATORS, get_accelerator

__all__ = ["Explorer", "explore", "plot_explore"]


def explore(chip: str, dtype: str, B: int, D: int, F: int) -> dict[str, Any]:
    """Everything the explorer shows for ``[B, D] @ [D, F]`` on ``chip`` in ``dtype``, as a dict.

    Examples
    --------
    >>> s = explore("h100-sxm", "bf16", 256, 8192, 8192)
    >>> s["bound"], round(s["intensity"], 1), round(s["critical_intensity"], 1)
    ('communication-bound', 240.9, 295.4)
    >>> s["side"]
    'left of the ridge (bandwidth-bound)'
    """
    est = estimate_matmul(chip, B, D, F, precision=dtype)
    compute = est.bound == "compute-bound"
    return {
        **est.as_dict(),
        "dtype": dtype,
        "attainable_flops": est.flops / est.t_lower,
        "peak_flops": get_accelerator(chip).peak(dtype),
        "side": "right of the ridge (compute-bound)" if compute else "left of the ridge (bandwidth-bound)",
    }


def plot_explore(state: dict[str, Any], *, ax: Any = None) -> Any:
    """The chip's roofline with the matmul of ``state`` (from :func:`explore`) marked on it. Returns the Axes.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> plot_explore(explore("tpu-v5e", "bf16", 64, 4096, 4096), ax=ax).get_lines()[-1].get_label()
    'this matmul'
    >>> plt.close(fig)
    """
    from rooflinelib.plotting import OKABE_ITO, plot_roofline

    ridge = state["critical_intensity"]
    lo, hi = min(ridge / 100, state["intensity"] / 3), max(ridge * 20, state["intensity"] * 3)
    ax = plot_roofline(state["chip"], dtype=state["dtype"], intensity_range=(lo, hi), ax=ax)
    ax.plot(
        [state["intensity"]],
        [state["attainable_flops"]],
        "o",
        ms=10,
        color=OKABE_ITO[2],
        markeredgecolor="black",
        label="this matmul",
    )
    ax.legend(loc="lower right")
    return ax


def _summary_html(s: dict[str, Any]) -> str:
    def t(x: float) -> str:
        return f"{x * 1e6:,.1f} µs"

    return (
        f"<b>[{s['B']:.0f}, {s['D']:.0f}] @ [{s['D']:.0f}, {s['F']:.0f}]</b> in {s['dtype']} on {s['chip']}<br>"
        f"T_math = {t(s['t_math'])}, T_comms = {t(s['t_comms'])}<br>"
        f"runtime between {t(s['t_lower'])} and {t(s['t_upper'])}<br>"
        f"intensity {s['intensity']:.1f} vs ridge {s['critical_intensity']:.1f} FLOPs/byte: "
        f"<b>{s['bound']}</b>, {s['side']}"
    )


def _png_output(state: dict[str, Any]) -> dict[str, Any]:
    """The plot of ``state`` as one notebook output (a PNG), drawn off-screen without pyplot."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4))
    plot_explore(state, ax=fig.subplots())
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    png = base64.b64encode(buf.getvalue()).decode("ascii")
    text = f"<roofline of {state['chip']} with [{state['B']:.0f}, {state['D']:.0f}] @ [{state['D']:.0f}, {state['F']:.0f}]>"
    return {"output_type": "display_data", "data": {"image/png": png, "text/plain": text}, "metadata": {}}


class Explorer:
    """Chip, dtype, B, D, F controls; a summary and the roofline plot, redrawn on every change.

    ``update()`` is the single callback: it reads the widgets, calls
    :func:`explore`, and refreshes ``summary`` (HTML) and the plot, a PNG that
    is the only output of ``output``. The last result is kept in ``state``; an
    invalid combination puts its error message in ``summary`` and leaves
    ``state`` and the plot as they were. The starting values are checked when
    the explorer is built.

    Examples
    --------
    >>> ex = Explorer(draw=False)
    >>> ex.B.value = 1024
    >>> ex.state["B"], ex.state["bound"]
    (1024.0, 'compute-bound')
    >>> Explorer(chip="H100_SXM", draw=False).chip.value
    'h100-sxm'
    >>> Explorer(dtype="int4", draw=False)
    Traceback (most recent call last):
    ...
    ValueError: dtype must be one of 'fp32', 'tf32', 'bf16', 'fp8', 'int8' for NVIDIA H200 SXM, got 'int4'
    """

    def __init__(
        self,
        chip: str = "h200",
        dtype: str = "bf16",
        B: int = 128,
        D: int = 8192,
        F: int = 8192,
        *,
        draw: bool = True,
    ) -> None:
        acc = get_accelerator(chip)
        if acc.key not in ACCELERATORS:
            raise ValueError(f"chip must be one of the spec table's chips ({', '.join(ACCELERATORS)}), got {acc.key!r}")
        if dtype not in acc.dtypes:
            raise ValueError(f"dtype must be one of {', '.join(map(repr, acc.dtypes))} for {acc.name}, got {dtype!r}")
        sizes = {name: int(as_size(name, value)) for name, value in (("B", B), ("D", D), ("F", F))}

        import ipywidgets as w

        self.draw = bool(draw)
        self.chip = w.Dropdown(options=list(ACCELERATORS), value=acc.key, description="chip")
        self.dtype = w.Dropdown(options=list(acc.dtypes), value=dtype, description="dtype")
        self.B = w.IntText(value=sizes["B"], description="B")
        self.D = w.IntText(value=sizes["D"], description="D")
        self.F = w.IntText(value=sizes["F"], description="F")
        self.summary = w.HTML()
        self.output = w.Output()
        self.state: dict[str, Any] = {}
        self.chip.observe(self._chip_changed, names="value")
        for control in (self.dtype, self.B, self.D, self.F):
            control.observe(lambda _change: self.update(), names="value")
        self.widget = w.VBox(
            [w.HBox([self.chip, self.dtype]), w.HBox([self.B, self.D, self.F]), self.summary, self.output]
        )
        self.update()

    def _chip_changed(self, _change: Any) -> None:
        dtypes = list(get_accelerator(self.chip.value).dtypes)
        keep = self.dtype.value if self.dtype.value in dtypes else dtypes[0]
        with self.dtype.hold_trait_notifications():
            self.dtype.options = dtypes
            self.dtype.value = keep
        self.update()

    def update(self) -> dict[str, Any]:
        """Recompute from the widgets and redraw; returns the new state."""
        try:
            state = explore(self.chip.value, self.dtype.value, self.B.value, self.D.value, self.F.value)
        except (ValueError, KeyError, TypeError) as err:
            msg = err.args[0] if err.args else str(err)
            self.summary.value = f"<span style='color:#D55E00'>{html.escape(str(msg))}</span>"
            return self.state
        self.state = state
        self.summary.value = _summary_html(state)
        if self.draw:
            self.output.outputs = (_png_output(state),)
        return state

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:  # pragma: no cover - needs a notebook front end
        return self.widget._repr_mimebundle_(**kwargs)
