"""Accelerator specifications: a frozen dataclass, the checked loader and a friendly lookup.

The numbers live in ``data/accelerators.toml``: SI base units (FLOP/s, bytes/s,
bytes), dense peaks, one-way link bandwidths, and a source for every figure.
This module reads them and refuses a file with a bad figure or an unknown key.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Any

from rooflinelib import roofline
from rooflinelib._checks import as_number, did_you_mean
from rooflinelib.precision import DTYPE_BYTES

__all__ = [
    "ACCELERATORS",
    "SCALE_UP_LINKS",
    "Accelerator",
    "Link",
    "OnChipMemory",
    "accelerator_key",
    "get_accelerator",
    "load_accelerators",
    "normalize_name",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})

#: The links a group of chips splitting one model talks over, in the order they are looked for.
SCALE_UP_LINKS = ("nvlink", "ici", "infinity-fabric")


@dataclass(frozen=True)
class Link:
    """A kind of data path off the chip (ICI, NVLink, PCIe, DCN, ...).

    ``bandwidth`` is in bytes/s, one direction (TPU PCIe and DCN: the book's
    "per TPU" figure, direction not stated); ``scope`` says whether it is
    per physical link or the chip's total over all links of this kind.
    ``collective_latency`` (seconds), where the table has one, is the measured time of
    a small collective over this link, which the serving estimates take as the least
    time of any all-reduce. ``collective`` names the collective measured (``"all-reduce"``
    or ``"all-gather"``, which an all-reduce takes about twice, as a reduce-scatter and then
    an all-gather), and ``collective_measured_on`` the chip it was measured on where that
    is another one (``"H20"`` for the H100's figure); both are ``""`` without a latency.
    """

    name: str
    bandwidth: float
    scope: str
    source: str
    count: int | None = None
    collective_latency: float | None = None
    collective_latency_source: str = ""
    collective: str = ""
    collective_measured_on: str = ""


@dataclass(frozen=True)
class OnChipMemory:
    """A memory on the chip between HBM and the math units (a GPU's shared memory, a TPU's VMEM).

    ``bandwidth`` is in bytes/s, all of the chip's copies together. Where no
    source prints it, the table gives what it is derived from and the loader
    computes it: ``derivation`` says how (``"132 SMs x 128 bytes/clock x 1.83 GHz"``),
    and is empty for a printed figure.

    Examples
    --------
    >>> smem = get_accelerator("h100-sxm").on_chip["smem"]
    >>> smem.bandwidth == 132 * 128 * 1.83e9, smem.derivation
    (True, '132 SMs x 128 bytes/clock x 1.83 GHz')
    """

    key: str
    name: str
    bandwidth: float
    source: str
    derivation: str = ""


@dataclass(frozen=True)
class Accelerator:
    """One chip variant from the spec table (or a custom one, e.g. a measured machine).

    Figures are in SI base units: ``peak_flops`` in FLOP/s (OP/s for integer
    dtypes), ``hbm_bandwidth`` in bytes/s, ``hbm_capacity`` in bytes.
    ``sources`` holds the source of any figure that has its own (the vendor's
    figure as printed, e.g. ``"80 GB"``); :meth:`source_of` falls back to ``source``.

    HBM capacity comes in up to three figures: ``hbm_capacity_printed``, the vendor's
    text (``"80 GB"``); ``hbm_capacity_reported``, the bytes the device reports where a
    public report exists; and ``hbm_capacity``, the bytes the course computes with: the
    reported figure where there is one, else the printed one (see :attr:`capacity_basis`).

    Examples
    --------
    >>> v5e = get_accelerator("tpu-v5e")
    >>> v5e.peak("bf16")
    197000000000000.0
    >>> round(v5e.critical_intensity("bf16"))   # vendor HBM figure, 819 GB/s
    241
    >>> h100 = get_accelerator("h100-sxm")
    >>> h100.hbm_capacity_printed, h100.hbm_capacity / 2**20, h100.capacity_basis   # nvidia-smi: 81559MiB
    ('80 GB', 81559.0, 'reported')
    """

    key: str
    name: str
    vendor: str
    peak_flops: Mapping[str, float]
    hbm_bandwidth: float
    hbm_capacity: float | None
    source: str
    conventions: str
    links: Mapping[str, Link] = field(default_factory=lambda: _EMPTY)
    notes: str = ""
    vector_flops: float | None = None
    sources: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    hbm_capacity_printed: str = ""
    hbm_capacity_reported: float | None = None
    on_chip: Mapping[str, OnChipMemory] = field(default_factory=lambda: _EMPTY)

    def memory_levels(self) -> dict[str, float]:
        """Bandwidth in bytes/s of each memory level the table has, HBM first, then the on-chip ones.

        Examples
        --------
        >>> {k: f"{v:.3g}" for k, v in get_accelerator("tpu-v5e").memory_levels().items()}
        {'hbm': '8.19e+11', 'vmem': '1.8e+13'}
        """
        return {"hbm": self.hbm_bandwidth, **{k: m.bandwidth for k, m in self.on_chip.items()}}

    @property
    def capacity_basis(self) -> str:
        """Which figure ``hbm_capacity`` is: ``"reported"`` (by the device), ``"printed"``, or ``"none"``.

        Examples
        --------
        >>> get_accelerator("h200").capacity_basis, get_accelerator("tpu-v5e").capacity_basis
        ('reported', 'printed')
        """
        if self.hbm_capacity is None:
            return "none"
        return "reported" if self.hbm_capacity_reported is not None else "printed"

    def scale_up_link(self) -> Link:
        """The link a tensor-parallel group of these chips talks over: NVLink, ICI or Infinity Fabric.

        Examples
        --------
        >>> link = get_accelerator("h100-sxm").scale_up_link()
        >>> link.name, link.bandwidth, link.collective_latency
        ('nvlink', 450000000000.0, 1.25e-05)
        """
        for name in SCALE_UP_LINKS:
            if name in self.links:
                return self.links[name]
        raise KeyError(
            f"{self.name} has no chip-to-chip link ({', '.join(SCALE_UP_LINKS)}) in the spec table; "
            "split the model over chips that have one"
        )

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes that have a peak FLOPs/s figure, e.g. ``('bf16', 'int8')``."""
        return tuple(self.peak_flops)

    def peak(self, dtype: str = "bf16") -> float:
        """Dense peak FLOPs/s (OPs/s for integer types) for ``dtype``."""
        try:
            return self.peak_flops[dtype]
        except (KeyError, TypeError):
            raise KeyError(
                f"{self.name} has no peak FLOPs/s for dtype {dtype!r}; it has {', '.join(repr(d) for d in self.dtypes)}"
            ) from None

    def bandwidth(self, memory: str = "hbm") -> float:
        """Bandwidth in bytes/s of ``memory``: ``"hbm"``, an on-chip memory (``"smem"``) or a link (``"ici"``)."""
        if memory == "hbm":
            return self.hbm_bandwidth
        if isinstance(memory, str) and memory in self.on_chip:
            return self.on_chip[memory].bandwidth
        try:
            return self.links[memory].bandwidth
        except (KeyError, TypeError):
            options = ", ".join(repr(m) for m in ("hbm", *self.on_chip, *self.links))
            raise KeyError(f"{self.name} has no bandwidth for {memory!r}; it has {options}") from None

    def critical_intensity(self, dtype: str = "bf16", memory: str = "hbm") -> float:
        """FLOPs per byte at which this chip turns compute-bound (its ridge point)."""
        return float(roofline.critical_intensity(self.peak(dtype), self.bandwidth(memory)))

    def source_of(self, figure: str) -> str:
        """Where ``figure`` (e.g. ``"hbm_capacity"``) comes from: its own source, else the chip's.

        Examples
        --------
        >>> get_accelerator("tpu-v4").source_of("hbm_capacity")
        'https://cloud.google.com/tpu/docs/v4 (32 GiB)'
        """
        return self.sources.get(figure, self.source)

    @classmethod
    def custom(
        cls, name: str, peak_flops: Mapping[str, float], hbm_bandwidth: float, *, source: str = "user-supplied"
    ) -> Accelerator:
        """Build an accelerator that is not in the table, e.g. from a measurement.

        Examples
        --------
        >>> cpu = Accelerator.custom("my laptop", {"fp32": 1e12}, 5e10)
        >>> cpu.critical_intensity("fp32")
        20.0
        >>> Accelerator.custom("gpu", {"bf16": [1e14, 2e14]}, 1e12)
        Traceback (most recent call last):
        ...
        TypeError: peak_flops['bf16'] must be a single number, got an array of shape (2,)
        """
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"name must be a non-empty string, got {name!r}")
        if not isinstance(peak_flops, Mapping) or not peak_flops:
            raise ValueError(
                f"peak_flops must map at least one dtype to FLOP/s, e.g. {{'fp32': 1e12}}, got {peak_flops!r}"
            )
        flops = {}
        for dtype, value in peak_flops.items():
            if dtype not in DTYPE_BYTES:
                raise KeyError(f"peak_flops: unknown dtype {dtype!r}; {did_you_mean(str(dtype), DTYPE_BYTES)}")
            flops[dtype] = float(as_number(f"peak_flops[{dtype!r}]", value, "FLOP/s", scalar=True))
        return cls(
            key=name,
            name=name,
            vendor="",
            peak_flops=MappingProxyType(flops),
            hbm_bandwidth=float(as_number("hbm_bandwidth", hbm_bandwidth, "bytes/s", scalar=True)),
            hbm_capacity=None,
            source=source,
            conventions="as supplied",
        )


# ----------------------------------------------------------------------------- loading and checking

#: The keys a chip's entry may have; each figure may also have ``<figure>_source``.
_FIGURES = {
    "hbm_bandwidth": "bytes/s",
    "hbm_capacity": "bytes",
    "hbm_capacity_reported": "bytes",
    "vector_flops": "FLOP/s",
}
_TEXT = ("name", "vendor", "source", "conventions")
_ENTRY_KEYS = {
    *_TEXT,
    "notes",
    "peak_flops",
    "links",
    "hbm_capacity_printed",
    "on_chip",
    *_FIGURES,
    *(f"{f}_source" for f in (*_FIGURES, "peak_flops")),
}
_LINK_KEYS = {
    "bandwidth",
    "scope",
    "source",
    "count",
    "collective_latency",
    "collective_latency_source",
    "collective",
    "collective_measured_on",
}
_COLLECTIVES = ("all-reduce", "all-gather")
_SCOPES = ("per link", "per chip")
_ON_CHIP_KEYS = {"name", "source", "bandwidth", "units", "unit_name", "bytes_per_clock", "clock_hz", "times_hbm"}
_PER_CLOCK = ("units", "bytes_per_clock", "clock_hz")


class _Checker:
    """Checks one spec table; every error names the file and ``chip.field``."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, where: str, message: str) -> ValueError:
        return ValueError(f"{self.origin}: {where} {message}")

    def keys(self, where: str, entry: object, allowed: set[str], required: set[str]) -> Mapping[str, Any]:
        if not isinstance(entry, Mapping):
            raise self.fail(where, f"must be a table, got {entry!r}")
        for key in entry:
            if key not in allowed:
                raise self.fail(f"{where}.{key}", f"is not a known key; {did_you_mean(key, sorted(allowed))}")
        for key in sorted(required):
            if key not in entry:
                raise self.fail(where, f"is missing {key!r}")
        return entry

    def figure(self, where: str, value: object, unit: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(where, f"must be a number in {unit}, got {value!r}")
        try:
            return float(as_number(where, value, unit))
        except ValueError as err:
            raise ValueError(f"{self.origin}: {err}") from None

    def text(self, where: str, value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(where, f"must be non-empty text, got {value!r}")
        return value

    def link(self, chip: str, name: str, raw: object) -> Link:
        where = f"{chip}.links.{name}"
        entry = self.keys(where, raw, _LINK_KEYS, {"bandwidth", "scope", "source"})
        scope = self.text(f"{where}.scope", entry["scope"])
        if scope not in _SCOPES:
            raise self.fail(f"{where}.scope", f"must be {' or '.join(map(repr, _SCOPES))}, got {scope!r}")
        count = entry.get("count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            raise self.fail(f"{where}.count", f"must be a whole number >= 1, got {count!r}")
        latency = entry.get("collective_latency")
        if (latency is None) != ("collective_latency_source" not in entry) or (latency is None) != (
            "collective" not in entry
        ):
            raise self.fail(where, "must give collective_latency, collective_latency_source and collective together")
        if latency is None and "collective_measured_on" in entry:
            raise self.fail(where, "gives collective_measured_on without a collective_latency")
        collective = entry.get("collective", "")
        if latency is not None and collective not in _COLLECTIVES:
            raise self.fail(
                f"{where}.collective", f"must be {' or '.join(map(repr, _COLLECTIVES))}, got {collective!r}"
            )
        return Link(
            name=name,
            bandwidth=self.figure(f"{where}.bandwidth", entry["bandwidth"], "bytes/s"),
            scope=scope,
            source=self.text(f"{where}.source", entry["source"]),
            count=count,
            collective_latency=None if latency is None else self.figure(f"{where}.collective_latency", latency, "s"),
            collective_latency_source=self.text(
                f"{where}.collective_latency_source", entry["collective_latency_source"]
            )
            if latency is not None
            else "",
            collective=collective,
            collective_measured_on=self.text(f"{where}.collective_measured_on", entry["collective_measured_on"])
            if "collective_measured_on" in entry
            else "",
        )

    def on_chip(self, chip: str, name: str, raw: object, hbm: float) -> OnChipMemory:
        """One ``[chip.on_chip.name]`` table: a printed ``bandwidth``, or what it is derived from."""
        where = f"{chip}.on_chip.{name}"
        entry = self.keys(where, raw, _ON_CHIP_KEYS, {"name", "source"})
        given = [k for k in ("bandwidth", "times_hbm") if k in entry] + (["units ..."] if "units" in entry else [])
        if len(given) != 1:
            raise self.fail(
                where,
                "must give exactly one of 'bandwidth' (bytes/s), 'times_hbm', or 'units', 'bytes_per_clock' and "
                f"'clock_hz' together, got {', '.join(given) or 'none'}",
            )
        if "bandwidth" in entry:
            bandwidth, derivation = self.figure(f"{where}.bandwidth", entry["bandwidth"], "bytes/s"), ""
        elif "times_hbm" in entry:
            ratio = self.figure(f"{where}.times_hbm", entry["times_hbm"], "(a ratio)")
            bandwidth, derivation = ratio * hbm, f"{ratio:g} x HBM"
        else:
            missing = [k for k in _PER_CLOCK if k not in entry]
            if missing:
                raise self.fail(where, f"is missing {', '.join(map(repr, missing))}: give all of {_PER_CLOCK}")
            units, width, clock = (
                self.figure(f"{where}.{k}", entry[k], u) for k, u in zip(_PER_CLOCK, ("", "bytes", "Hz"))
            )
            what = self.text(f"{where}.unit_name", entry.get("unit_name", "units"))
            bandwidth, derivation = (
                units * width * clock,
                f"{units:g} {what} x {width:g} bytes/clock x {clock / 1e9:g} GHz",
            )
        return OnChipMemory(name, self.text(f"{where}.name", entry["name"]), bandwidth,
                            self.text(f"{where}.source", entry["source"]), derivation)  # fmt: skip

    def chip(self, key: str, raw: object) -> Accelerator:
        entry = self.keys(
            key, raw, _ENTRY_KEYS, {*_TEXT, "peak_flops", "hbm_bandwidth", "hbm_capacity", "hbm_capacity_printed"}
        )
        texts = {name: self.text(f"{key}.{name}", entry[name]) for name in _TEXT}
        peaks = self.keys(f"{key}.peak_flops", entry["peak_flops"], set(DTYPE_BYTES), set())
        if not peaks:
            raise self.fail(f"{key}.peak_flops", "must name at least one dtype")
        figures = {f: self.figure(f"{key}.{f}", entry[f], unit) for f, unit in _FIGURES.items() if f in entry}
        sources = {k[: -len("_source")]: self.text(f"{key}.{k}", v) for k, v in entry.items() if k.endswith("_source")}
        links = self.keys(f"{key}.links", entry.get("links", {}), set(entry.get("links", {})), set())
        on_chip = self.keys(f"{key}.on_chip", entry.get("on_chip", {}), set(entry.get("on_chip", {})), set())
        if "hbm" in on_chip:
            raise self.fail(f"{key}.on_chip.hbm", "is not on the chip: HBM's bandwidth is 'hbm_bandwidth'")
        notes = entry.get("notes", "")
        if not isinstance(notes, str):
            raise self.fail(f"{key}.notes", f"must be text, got {notes!r}")
        printed = self.text(f"{key}.hbm_capacity_printed", entry["hbm_capacity_printed"])
        reported = figures.get("hbm_capacity_reported")
        if reported is not None:
            if "hbm_capacity_reported" not in sources:
                raise self.fail(key, "is missing 'hbm_capacity_reported_source': say where the report is")
            if figures["hbm_capacity"] != reported:
                raise self.fail(
                    f"{key}.hbm_capacity",
                    f"must be the reported figure, {reported:.0f} bytes, where there is one "
                    f"(the course computes with what the device reports), got {figures['hbm_capacity']:.0f}",
                )
        return Accelerator(
            key=key,
            **texts,
            peak_flops=MappingProxyType(
                {d: self.figure(f"{key}.peak_flops.{d}", v, "FLOP/s") for d, v in peaks.items()}
            ),
            hbm_bandwidth=figures["hbm_bandwidth"],
            hbm_capacity=figures["hbm_capacity"],
            links=MappingProxyType({name: self.link(key, name, link) for name, link in links.items()}),
            notes=notes,
            vector_flops=figures.get("vector_flops"),
            sources=MappingProxyType(sources),
            hbm_capacity_printed=printed,
            hbm_capacity_reported=reported,
            on_chip=MappingProxyType(
                {name: self.on_chip(key, name, m, figures["hbm_bandwidth"]) for name, m in on_chip.items()}
            ),
        )


def read_table(path: str | None, packaged: str) -> tuple[str, dict[str, Any]]:
    """A TOML table and the file name to show in errors: ``path``, or the package's ``data/<packaged>``."""
    if path is None:
        origin = packaged
        raw = resources.files("rooflinelib").joinpath(f"data/{packaged}").read_bytes()
    else:
        origin = path.replace("\\", "/").rsplit("/", 1)[-1]
        with open(path, "rb") as fh:
            raw = fh.read()
    try:
        return origin, tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ValueError(f"{origin}: not valid TOML ({err})") from None


def load_accelerators(path: str | None = None) -> Mapping[str, Accelerator]:
    """Read and check the spec table (the packaged TOML file unless ``path`` is given).

    Every figure must be a finite number > 0 in SI base units; an entry with an
    unknown key, a missing figure or a bad value fails with ``ValueError``
    naming the file and ``chip.field``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> bad = pathlib.Path(tempfile.mkdtemp()) / "chips.toml"
    >>> _ = bad.write_text('''[x]
    ... name = "X"
    ... vendor = "V"
    ... source = "https://example.com"
    ... conventions = "dense"
    ... peak_flops = { bf16 = 1e15 }
    ... hbm_bandwidth = "lots"
    ... hbm_capacity = 8e10
    ... hbm_capacity_printed = "80 GB"
    ... ''')
    >>> load_accelerators(str(bad))
    Traceback (most recent call last):
    ...
    ValueError: chips.toml: x.hbm_bandwidth must be a number in bytes/s, got 'lots'
    """
    origin, table = read_table(path, "accelerators.toml")
    check = _Checker(origin)
    return MappingProxyType({key: check.chip(key, entry) for key, entry in table.items()})


#: Every accelerator in the spec table, by key (``"tpu-v5e"``, ``"h100-sxm"``, ...). Read-only.
ACCELERATORS: Mapping[str, Accelerator] = load_accelerators()


def normalize_name(name: str) -> str:
    """The form keys are compared in: lower case, ``-`` for ``_`` and spaces.

    Examples
    --------
    >>> normalize_name(" H100_SXM ")
    'h100-sxm'
    """
    if not isinstance(name, str):
        raise TypeError(f"accelerator must be a name such as 'tpu-v5e', got {name!r}")
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def accelerator_key(name: str | Accelerator) -> str:
    """The spec table's key for ``name`` (any case, ``_`` or spaces for ``-``); an unknown name lists close ones.

    Examples
    --------
    >>> accelerator_key("TPU_V5E")
    'tpu-v5e'
    """
    return get_accelerator(name).key


def get_accelerator(name: str | Accelerator) -> Accelerator:
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
    key = normalize_name(name)
    if key in ACCELERATORS:
        return ACCELERATORS[key]
    names = {normalize_name(chip.name): k for k, chip in ACCELERATORS.items()}
    raise KeyError(f"unknown accelerator {name!r}; {did_you_mean(key, ACCELERATORS, aliases=names)}")
