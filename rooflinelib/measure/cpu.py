"""The CPU's own figures (cores, clock, SIMD width, FMA), read where Linux reports them, and the peak they predict.

What Linux does not report is left ``None`` and named by :meth:`CpuFigures.unread`;
the one figure it never reports, how many vector FMA instructions a core
starts each cycle, is assumed (:data:`ASSUMED_FMA_PER_CYCLE`) and recorded as
assumed. Each figure keeps a short key saying where it came from, so a page can
say so in words.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from rooflinelib.precision import dtype_bytes
from rooflinelib.roofline import in_core_peak

__all__ = ["ASSUMED_FMA_PER_CYCLE", "SIMD_FLAGS", "CpuFigures", "physical_cores", "read_cpu_figures"]

#: Vector FMA instructions a core starts per cycle when nothing says otherwise. Two 256-bit ones on Intel cores
#: since Haswell and AMD's since Zen 2 (Zen 1: one); two 512-bit ones on Xeon Scalable cores since Ice Lake, on
#: Skylake and Cascade Lake Xeon Gold 6000 / Platinum cores, and on desktop and server Zen 5. Zen 4 splits each
#: 512-bit FMA in two, and other Skylake and Cascade Lake Xeons and laptop Zen 5 have one 512-bit unit: there, at
#: 512 bits, one. The ``cpu MHz`` of ``/proc/cpuinfo`` under a hypervisor is
#: the nominal clock, so a product of these figures is no measured ceiling.
ASSUMED_FMA_PER_CYCLE = 2

#: ``/proc/cpuinfo`` flags and the SIMD register width (bits) each one means for floating point, widest first.
SIMD_FLAGS: tuple[tuple[str, int], ...] = (("avx512f", 512), ("avx", 256), ("sse2", 128), ("asimd", 128))


@dataclass(frozen=True)
class CpuFigures:
    """What a CPU says about itself, each figure with where it was read (``None``: not reported).

    ``cores_from``: ``"topology"`` (physical cores among the CPUs this process
    may use, from sysfs) or ``"cpu_count"`` (logical CPUs, assumed one per
    core). ``clock_from``: ``"cpufreq"`` (the highest clock the kernel may set,
    from sysfs) or ``"cpuinfo"`` (the ``cpu MHz`` of ``/proc/cpuinfo``, the
    clock when it was read; under a hypervisor usually the nominal one).
    ``simd_from`` and ``fma_from`` name the flag read. ``fma_per_cycle`` is
    assumed (``fma_per_cycle_from == "assumed"``) unless given.

    Examples
    --------
    >>> cpu = CpuFigures(cores=8, clock_hz=3e9, simd_bits=512, fma=True)
    >>> cpu.lanes("fp32"), cpu.lanes("fp64")
    (16, 8)
    >>> cpu.predicted_peak("fp32") / 1e9, cpu.scalar_peak() / 1e9
    (1536.0, 96.0)
    >>> CpuFigures(cores=8, simd_bits=512, fma=True).unread()
    ['clock']
    """

    model: str | None = None
    cores: int | None = None
    cores_from: str | None = None
    clock_hz: float | None = None
    clock_from: str | None = None
    simd_bits: int | None = None
    simd_from: str | None = None
    fma: bool | None = None
    fma_from: str | None = None
    fma_per_cycle: int = ASSUMED_FMA_PER_CYCLE
    fma_per_cycle_from: str = "assumed"

    def unread(self) -> list[str]:
        """The figures a prediction needs that were not read: any of ``"cores"``, ``"clock"``, ``"SIMD width"``."""
        missing = {"cores": self.cores, "clock": self.clock_hz, "SIMD width": self.simd_bits}
        return [name for name, value in missing.items() if value is None]

    def lanes(self, dtype: str) -> int:
        """Numbers of ``dtype`` one SIMD register holds (``simd_bits`` / bits per number)."""
        if self.simd_bits is None:
            raise ValueError("the SIMD width was not read, so the lanes are unknown")
        return max(self.simd_bits // (8 * int(dtype_bytes(dtype))), 1)

    def _peak(self, lanes: int, fma: bool | None = None) -> float | None:
        if self.cores is None or self.clock_hz is None:
            return None
        use_fma = self.fma if fma is None else fma and self.fma
        flops_per_fma = 2 if use_fma else 1  # without FMA a multiply and an add are two instructions
        return float(in_core_peak(self.cores, self.clock_hz, lanes, self.fma_per_cycle, flops_per_fma))

    def predicted_peak(self, dtype: str = "fp32") -> float | None:
        """cores × clock × SIMD lanes × FMAs per cycle × 2 FLOPs in ``dtype``; ``None`` if a figure is unread."""
        return None if self.simd_bits is None else self._peak(self.lanes(dtype))

    def scalar_peak(self) -> float | None:
        """The same with one lane, in any dtype: code that is not vectorised; ``None`` if a figure is unread."""
        return self._peak(1)

    def ceilings(self, dtype: str = "fp32") -> dict[str, float]:
        """Williams, Waterman and Patterson's in-core ceilings in ``dtype``, highest first; ``{}`` if a figure is unread.

        ``"peak"``: SIMD and FMA (:meth:`predicted_peak`); ``"no FMA"``: every
        lane, but a multiply and an add as two instructions (half); ``"no SIMD"``:
        one lane per FMA, the scalar ceiling (:meth:`scalar_peak`); ``"no SIMD, no
        FMA"``: one lane, one FLOP per instruction. A CPU without FMA has only
        ``"peak"`` and ``"no SIMD"``. Each is cores × clock × lanes × FMAs per
        cycle × FLOPs per instruction.

        Examples
        --------
        >>> cpu = CpuFigures(cores=2, clock_hz=3e9, simd_bits=512, fma=True)
        >>> {name: value / 1e9 for name, value in cpu.ceilings("fp32").items()}
        {'peak': 384.0, 'no FMA': 192.0, 'no SIMD': 24.0, 'no SIMD, no FMA': 12.0}
        >>> list(CpuFigures(cores=2, clock_hz=3e9, simd_bits=128, fma=False).ceilings())
        ['peak', 'no SIMD']
        """
        if self.simd_bits is None or self.cores is None or self.clock_hz is None:
            return {}
        lanes = self.lanes(dtype)
        found = {"peak": self._peak(lanes), "no FMA": self._peak(lanes, False), "no SIMD": self._peak(1),
                 "no SIMD, no FMA": self._peak(1, False)}  # fmt: skip
        if not self.fma:
            found = {"peak": found["peak"], "no SIMD": found["no SIMD"]}
        return {name: value for name, value in found.items() if value is not None}

    def to_dict(self) -> dict[str, Any]:
        """Plain values, ready for JSON."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> CpuFigures:
        """Back from :meth:`to_dict` (``None`` or ``{}``, as a measurement without CPU figures has: all unread).

        Examples
        --------
        >>> CpuFigures.from_dict({"cores": 2, "speed": 3})
        Traceback (most recent call last):
        ...
        ValueError: CPU figures have unknown key(s) speed; known: clock_from, clock_hz, cores, ...
        """
        d = dict(d or {})
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise ValueError(
                f"CPU figures have unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known)[:3])}, ..."
            )
        return cls(**d)


def _cpu_list(text: str) -> frozenset[int]:
    """CPU numbers from a sysfs list such as ``"0-3,8,10-11"``.

    >>> sorted(_cpu_list("0-2,8"))
    [0, 1, 2, 8]
    """
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if part:
            first, _, last = part.partition("-")
            cpus.update(range(int(first), int(last or first) + 1))
    return frozenset(cpus)


def _usable_cpus() -> Iterable[int]:
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return range(os.cpu_count() or 0)  # pragma: no cover - not Linux


def physical_cores(sys_cpu: str | Path = "/sys/devices/system/cpu", cpus: Iterable[int] | None = None) -> int | None:
    """Physical cores among ``cpus`` (default: those this process may run on), from sysfs; ``None`` if unreported.

    Two logical CPUs of one core (simultaneous multithreading) share its vector
    units, so they count once.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for cpu, siblings in [(0, "0,2"), (1, "1,3"), (2, "0,2"), (3, "1,3")]:
    ...     (d / f"cpu{cpu}" / "topology").mkdir(parents=True)
    ...     _ = (d / f"cpu{cpu}" / "topology" / "core_cpus_list").write_text(siblings)
    >>> physical_cores(d, [0, 1, 2, 3]), physical_cores(d, [0, 2]), physical_cores(d / "none", [0])
    (2, 1, None)
    """
    cores = set()
    try:
        for cpu in _usable_cpus() if cpus is None else cpus:
            topology = Path(sys_cpu) / f"cpu{cpu}" / "topology"
            name = "core_cpus_list" if (topology / "core_cpus_list").is_file() else "thread_siblings_list"
            cores.add(_cpu_list((topology / name).read_text()))
    except (OSError, ValueError):
        return None
    return len(cores) or None


def _cpuinfo(path: Path) -> tuple[str | None, set[str], list[float]]:
    """The model name, the flags (x86 ``flags`` or Arm ``Features``) and every ``cpu MHz`` of ``/proc/cpuinfo``."""
    model: str | None = None
    flags: set[str] = set()
    mhz: list[float] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, set(), []
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "model name" and model is None:
            model = value
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
        elif key == "cpu MHz":
            try:
                mhz.append(float(value))
            except ValueError:
                pass
    return model, flags, mhz


def _max_khz(sys_cpu: Path, cpus: Iterable[int]) -> float | None:
    found = []
    for cpu in cpus:
        try:
            found.append(float((sys_cpu / f"cpu{cpu}" / "cpufreq" / "cpuinfo_max_freq").read_text()))
        except (OSError, ValueError):
            continue
    return max(found) if found else None


def read_cpu_figures(
    cpuinfo: str | Path = "/proc/cpuinfo",
    sys_cpu: str | Path = "/sys/devices/system/cpu",
    cpus: Iterable[int] | None = None,
) -> CpuFigures:
    """Cores, clock, SIMD width and FMA of this machine's CPU, each ``None`` where Linux does not report it.

    The clock is the highest ``cpufreq/cpuinfo_max_freq`` of the usable CPUs,
    else the highest ``cpu MHz`` in ``/proc/cpuinfo``. The SIMD width is that of
    the widest flag of :data:`SIMD_FLAGS` (Arm's SVE, which may be wider than
    ``asimd``, is not read). On a system without these files (macOS, Windows)
    only the core count is filled in, from :func:`os.cpu_count`. ``cpus``: the
    logical CPUs to count (default: those this process may run on).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "cpuinfo").write_text("model name\\t: Example CPU\\nflags\\t\\t: fpu sse2 avx avx2 fma\\n"
    ...                                 "cpu MHz\\t\\t: 2400.000\\n")
    >>> cpu = read_cpu_figures(d / "cpuinfo", d / "sys", cpus=[0])
    >>> cpu.model, cpu.simd_bits, cpu.simd_from, cpu.fma, cpu.clock_hz, cpu.clock_from
    ('Example CPU', 256, 'avx', True, 2400000000.0, 'cpuinfo')
    """
    sys_cpu = Path(sys_cpu)
    cpus = list(_usable_cpus() if cpus is None else cpus)
    model, flags, mhz = _cpuinfo(Path(cpuinfo))
    cores = physical_cores(sys_cpu, cpus)
    cores_from = "topology" if cores is not None else None
    if cores is None and cpus:
        cores, cores_from = len(cpus), "cpu_count"
    khz = _max_khz(sys_cpu, cpus)
    if khz is not None:
        clock_hz, clock_from = khz * 1e3, "cpufreq"
    elif mhz:
        clock_hz, clock_from = max(mhz) * 1e6, "cpuinfo"
    else:
        clock_hz, clock_from = None, None
    simd = next(((flag, bits) for flag, bits in SIMD_FLAGS if flag in flags), None)
    fma_flag = next((flag for flag in ("fma", "fma4", "asimd") if flag in flags), None)
    return CpuFigures(
        model=model,
        cores=cores,
        cores_from=cores_from,
        clock_hz=clock_hz,
        clock_from=clock_from,
        simd_bits=None if simd is None else simd[1],
        simd_from=None if simd is None else simd[0],
        fma=(fma_flag is not None) if flags else None,
        fma_from=fma_flag,
    )
