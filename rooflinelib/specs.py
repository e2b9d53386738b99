"""Accelerator specifications: a frozen dataclass, the loader and a friendly lookup.

The numbers live in ``data/accelerators.toml`` (SI units, dense peaks, one-way
link bandwidths, a source for every figure). This module only reads them.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Mapping

from rooflinelib import roofline
from rooflinelib._checks import as_number

__all__ = ["Accelerator", "Link", "ACCELERATORS", "get_accelerator", "load_accelerators"]


@dataclass(frozen=True)
class Link:
    """A kind of data path off the chip (ICI, NVLink, PCIe, DCN, ...).

    ``bandwidth`` is in bytes/s, one direction; ``scope`` says whether it is
    per physical link or the chip's total over all links of this kind.
    """

    name: str
    bandwidth: float
    scope: str
    source: str
    count: int | None = None


@dataclass(frozen=True)
class Accelerator:
    """One chip variant from the spec table (or a custom one, e.g. a measured machine).

    Examples
    --------
    >>> v5e = get_accelerator("tpu-v5e")
    >>> v5e.peak("bf16")
    197000000000000.0
    >>> round(v5e.critical_intensity("bf16"))   # vendor HBM figure, 819 GB/s
    241
    """

    key: str
    name: str
    vendor: str
    peak_flops: Mapping[str, float]
    hbm_bandwidth: float
    hbm_capacity: float | None
    source: str
    conventions: str
    links: Mapping[str, Link] = field(default_factory=dict)
    notes: str = ""
    vector_flops: float | None = None

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes that have a peak FLOPs/s figure, e.g. ``('bf16', 'int8')``."""
        return tuple(self.peak_flops)

    def peak(self, dtype: str = "bf16") -> float:
        """Dense peak FLOPs/s (OPs/s for integer types) for ``dtype``."""
        try:
            return self.peak_flops[dtype]
        except KeyError:
            raise KeyError(
                f"{self.name} has no peak FLOPs/s for dtype {dtype!r}; "
                f"it has {', '.join(repr(d) for d in self.dtypes)}"
            ) from None

    def bandwidth(self, memory: str = "hbm") -> float:
        """Bandwidth in bytes/s of ``memory``: ``"hbm"`` or a link name such as ``"ici"``."""
        if memory == "hbm":
            return self.hbm_bandwidth
        try:
            return self.links[memory].bandwidth
        except KeyError:
            options = ", ".join(repr(m) for m in ("hbm", *self.links))
            raise KeyError(f"{self.name} has no bandwidth for {memory!r}; it has {options}") from None

    def critical_intensity(self, dtype: str = "bf16", memory: str = "hbm") -> float:
        """FLOPs per byte at which this chip turns compute-bound (its ridge point)."""
        return float(roofline.critical_intensity(self.peak(dtype), self.bandwidth(memory)))

    @classmethod
    def custom(
        cls, name: str, peak_flops: Mapping[str, float], hbm_bandwidth: float, *, source: str = "user-supplied"
    ) -> "Accelerator":
        """Build an accelerator that is not in the table, e.g. from a measurement.

        Examples
        --------
        >>> cpu = Accelerator.custom("my laptop", {"fp32": 1e12}, 5e10)
        >>> cpu.critical_intensity("fp32")
        20.0
        """
        flops = {d: as_number(f"peak_flops[{d!r}]", v, "FLOP/s") for d, v in peak_flops.items()}
        if not flops:
            raise ValueError("peak_flops must name at least one dtype, e.g. {'fp32': 1e12}")
        return cls(
            key=name,
            name=name,
            vendor="",
            peak_flops=MappingProxyType(flops),  # type: ignore[arg-type]
            hbm_bandwidth=float(as_number("hbm_bandwidth", hbm_bandwidth, "bytes/s")),
            hbm_capacity=None,
            source=source,
            conventions="as supplied",
        )


def load_accelerators(path: str | None = None) -> Mapping[str, Accelerator]:
    """Read the spec table (the packaged TOML file unless ``path`` is given)."""
    if path is None:
        raw = resources.files("rooflinelib").joinpath("data/accelerators.toml").read_bytes()
    else:
        with open(path, "rb") as fh:
            raw = fh.read()
    table = tomllib.loads(raw.decode("utf-8"))
    chips = {}
    for key, entry in table.items():
        links = {
            name: Link(
                name=name,
                bandwidth=float(link["bandwidth"]),
                scope=link["scope"],
                source=link["source"],
                count=link.get("count"),
            )
            for name, link in entry.get("links", {}).items()
        }
        chips[key] = Accelerator(
            key=key,
            name=entry["name"],
            vendor=entry["vendor"],
            peak_flops=MappingProxyType({d: float(v) for d, v in entry["peak_flops"].items()}),
            hbm_bandwidth=float(entry["hbm_bandwidth"]),
            hbm_capacity=float(entry["hbm_capacity"]),
            source=entry["source"],
            conventions=entry["conventions"],
            links=MappingProxyType(links),
            notes=entry.get("notes", ""),
            vector_flops=entry.get("vector_flops"),
        )
    return MappingProxyType(chips)


#: Every accelerator in the spec table, by key (``"tpu-v5e"``, ``"h100-sxm"``, ...).
ACCELERATORS: Mapping[str, Accelerator] = load_accelerators()


def get_accelerator(name: "str | Accelerator") -> Accelerator:
    """Look an accelerator up by key; an unknown key lists the closest matches.

    Keys are case-insensitive and accept ``_`` or spaces for ``-``.

    Examples
    --------
    >>> get_accelerator("H100_SXM").name
    'NVIDIA H100 SXM'
    >>> get_accelerator("tpu-v5")
    Traceback (most recent call last):
    ...
    KeyError: "unknown accelerator 'tpu-v5'; did you mean 'tpu-v5e' or 'tpu-v5p'?"
    """
    if isinstance(name, Accelerator):
        return name
    if not isinstance(name, str):
        raise TypeError(f"accelerator must be a name such as 'tpu-v5e', got {name!r}")
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    if key in ACCELERATORS:
        return ACCELERATORS[key]
    close = [k for k, chip in ACCELERATORS.items() if key in k or key in chip.name.lower().replace(" ", "-")]
    close = close or difflib.get_close_matches(key, ACCELERATORS, n=3, cutoff=0.6)
    if close:
        quoted = [repr(k) for k in close[:3]]
        hint = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
        raise KeyError(f"unknown accelerator {name!r}; did you mean {hint}?")
    raise KeyError(f"unknown accelerator {name!r}; known: {', '.join(ACCELERATORS)}")
