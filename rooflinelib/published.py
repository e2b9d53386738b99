"""Published measurements of real accelerators, read from ``data/published/*.json``.

Each file is a table of matmul shapes and the FLOPs/s a real chip reached on
them, with where the numbers come from (``provenance``) and the chip of the
spec table to draw them against. ``tools/import_xla_matmul_table.py`` writes
them; this module only reads them.

Examples
--------
>>> t = get_published_matmuls("xla-sm90-bf16-matmul")
>>> t.chip, t.dtype, len(t.points) > 100
('h100-sxm', 'bf16', True)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from rooflinelib import matmul
from rooflinelib._checks import did_you_mean
from rooflinelib.specs import Accelerator, get_accelerator

__all__ = ["PublishedMatmul", "PublishedMatmuls", "get_published_matmuls", "published_matmuls"]

_COLUMNS = ["b", "m", "n", "k", "flops_per_s"]


@dataclass(frozen=True)
class PublishedMatmul:
    """One measured shape: ``b`` independent matmuls ``[m, k] @ [k, n]``, and the FLOPs/s reached.

    In the book's notation the matmul is ``[B, D] @ [D, F]`` with ``B = m``,
    ``D = k``, ``F = n``; bytes are counted as :func:`rooflinelib.matmul_bytes`
    counts them (each input read once, the output written once).

    Examples
    --------
    >>> p = PublishedMatmul(b=1, m=256, n=4096, k=4096, flops_per_s=4e14, dtype="bf16")
    >>> p.flops == 2 * 256 * 4096 * 4096, round(p.intensity, 1)
    (True, 227.6)
    """

    b: int
    m: int
    n: int
    k: int
    flops_per_s: float
    dtype: str = "bf16"

    @property
    def flops(self) -> float:
        """``2 b m n k``."""
        return self.b * float(matmul.matmul_flops(self.m, self.k, self.n))

    @property
    def bytes(self) -> float:
        """Bytes of the ``b`` inputs read and outputs written, in ``dtype``."""
        return self.b * float(matmul.matmul_bytes(self.m, self.k, self.n, precision=self.dtype))

    @property
    def intensity(self) -> float:
        """FLOPs per byte."""
        return self.flops / self.bytes

    @property
    def seconds(self) -> float:
        """The time the rate implies: FLOPs over FLOPs/s."""
        return self.flops / self.flops_per_s


@dataclass(frozen=True)
class PublishedMatmuls:
    """A published table of measured matmul rates on one chip, with its provenance."""

    name: str
    chip: str
    dtype: str
    provenance: Mapping[str, str]
    points: tuple[PublishedMatmul, ...]

    @property
    def accelerator(self) -> Accelerator:
        """The spec-table chip the measurements are drawn against."""
        return get_accelerator(self.chip)

    def best(self) -> PublishedMatmul:
        """The shape that reached the highest FLOPs/s."""
        return max(self.points, key=lambda p: p.flops_per_s)

    def sweep(self, D: int, F: int, b: int = 1) -> tuple[PublishedMatmul, ...]:
        """Every measured ``[B, D] @ [D, F]`` (``b`` of them at once), by growing ``B``.

        Examples
        --------
        >>> t = get_published_matmuls("xla-sm90-bf16-matmul")
        >>> [p.m for p in t.sweep(4096, 4096)]
        [256, 512, 1024, 2048, 4096]
        >>> t.sweep(4096, 3000)
        Traceback (most recent call last):
        ...
        ValueError: no measured [B, 4096] @ [4096, 3000] with b = 1; measured D: 256, 512, 1024, 2048, 4096; F: 256, 512, 1024, 2048, 4096; b: 1, 2, 4
        """
        pts = sorted((p for p in self.points if p.k == D and p.n == F and p.b == b), key=lambda p: p.m)
        if not pts:
            sizes = {
                name: sorted({getattr(p, attr) for p in self.points})
                for name, attr in (("D", "k"), ("F", "n"), ("b", "b"))
            }
            listed = "; ".join(f"{name}: {', '.join(map(str, v))}" for name, v in sizes.items())
            raise ValueError(f"no measured [B, {D}] @ [{D}, {F}] with b = {b}; measured {listed}")
        return tuple(pts)


def _parse(raw: Mapping[str, Any], origin: str) -> PublishedMatmuls:
    """Build a table from a JSON object, failing with the file name and the bad row."""
    for key in ("name", "chip", "dtype", "provenance", "columns", "rows"):
        if key not in raw:
            raise ValueError(f"{origin}: missing {key!r}")
    if list(raw["columns"]) != _COLUMNS:
        raise ValueError(f"{origin}: columns must be {_COLUMNS}, got {raw['columns']}")
    prov = raw["provenance"]
    if not isinstance(prov, Mapping) or not all(isinstance(v, str) for v in prov.values()):
        raise ValueError(f"{origin}: provenance must map names to text, got {prov!r}")
    get_accelerator(raw["chip"])  # an unknown chip fails here, with suggestions
    matmul.dtype_bytes(raw["dtype"])  # and so does an unknown dtype
    points, seen = [], set()
    for i, row in enumerate(raw["rows"]):
        ok = (
            isinstance(row, list)
            and len(row) == 5
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in row[:4])
            and isinstance(row[4], (int, float))
            and not isinstance(row[4], bool)
            and math.isfinite(row[4])
            and row[4] > 0
        )
        if not ok:
            raise ValueError(f"{origin}: row {i} must be [b, m, n, k, flops_per_s], all positive, got {row}")
        b, m, n, k, rate = row
        if (b, m, n, k) in seen:
            raise ValueError(f"{origin}: row {i} repeats the shape b={b}, m={m}, n={n}, k={k}")
        seen.add((b, m, n, k))
        points.append(PublishedMatmul(b, m, n, k, flops_per_s=float(rate), dtype=raw["dtype"]))
    if not points:
        raise ValueError(f"{origin}: no rows")
    return PublishedMatmuls(raw["name"], raw["chip"], raw["dtype"], MappingProxyType(dict(prov)), tuple(points))


@lru_cache(maxsize=1)
def _load_all() -> Mapping[str, PublishedMatmuls]:
    return _load_folder(resources.files("rooflinelib").joinpath("data/published"))


def _load_folder(folder: Any) -> Mapping[str, PublishedMatmuls]:
    """Every ``*.json`` table in ``folder`` (a path or package resource), by name."""
    out = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            try:
                raw = json.loads(entry.read_text(encoding="utf-8"))
            except json.JSONDecodeError as err:
                raise ValueError(f"{entry.name}: not valid JSON ({err})") from None
            if not isinstance(raw, dict):
                raise ValueError(f"{entry.name}: must hold a JSON object, got {type(raw).__name__}")
            table = _parse(raw, entry.name)
            if table.name != entry.name[:-5]:
                raise ValueError(f"{entry.name}: its name is {table.name!r}; a table's name must be its file's stem")
            out[table.name] = table
    return MappingProxyType(out)


def published_matmuls() -> Mapping[str, PublishedMatmuls]:
    """Every published table bundled with the package, by name."""
    return _load_all()


def get_published_matmuls(name: str) -> PublishedMatmuls:
    """One bundled table by name; an unknown name lists the close ones.

    Examples
    --------
    >>> get_published_matmuls("xla-sm90").name
    Traceback (most recent call last):
    ...
    KeyError: "no published table 'xla-sm90'; did you mean 'xla-sm90-bf16-matmul'?"
    """
    tables = _load_all()
    if name in tables:
        return tables[name]
    raise KeyError(f"no published table {name!r}; {did_you_mean(name, tables)}")
