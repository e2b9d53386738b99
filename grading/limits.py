"""What one notebook may use (:class:`Limits`), and the one-line messages that say which limit it went over.

Every message that names a limit is made here, so the grading command, its list of problems
and the report say each the same way: the limit's name, its value as the option writes it,
and the option (``went over the memory limit (2G, --memory)``).

Example
-------
>>> limits = Limits.parse(memory="1G", cpu="30")
>>> limits.memory, limits.cpu, limits.procs
(1073741824, 30, 256)
>>> sizes("64M"), sizes("2.5k")
(67108864, 2560)
>>> went_over("memory", limits)
'went over the memory limit (1G, --memory)'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

__all__ = [
    "Limits",
    "describe",
    "no_answer",
    "not_graded",
    "ran_too_long",
    "sent_too_much",
    "shown",
    "sizes",
    "went_over",
]

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZES = {"memory", "file_size", "output", "data"}
_NAMES = {"memory": "memory", "cpu": "CPU time", "procs": "processes", "file_size": "file size"}


def sizes(text: str) -> int:
    """Bytes in a size such as ``512M``, ``2G`` or ``1048576`` (binary units, case ignored)."""
    value = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = value[-1:] if value[-1:] in _UNITS and value[-1:] else ""
    try:
        number = float(value[: len(value) - len(unit)])
    except ValueError:
        raise ValueError(f"not a size: {text!r} (write it like 512M or 2G)") from None
    if number <= 0:
        raise ValueError(f"a size must be more than 0, got {text!r}")
    return int(number * _UNITS[unit])


def shown(size: int) -> str:
    """A byte count the way the options take it.

    >>> shown(2 << 30), shown(1536 << 20), shown(1000)
    ('2G', '1536M', '1000')
    """
    for unit in "TGMK":
        if size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]}{unit}"
    return str(size)


@dataclass(frozen=True)
class Limits:
    """What one notebook may use. Sizes in bytes, times in seconds."""

    memory: int = 2 << 30
    cpu: int = 120
    procs: int = 256
    file_size: int = 64 << 20  # any one file written, and the kernel's /tmp and working folder, each in all
    output: int = 16 << 20
    data: int = 64 << 20  # what the kernel sends the judge (its replies), all of a notebook's checks together
    wall: int = 600

    @classmethod
    def parse(cls, **given: str | int | None) -> Limits:
        """Limits from option values (``"2G"``, ``"120"``...); ``None`` keeps the default."""
        values = {}
        for f in fields(cls):
            text = given.get(f.name)
            if text is None:
                continue
            value = sizes(str(text)) if f.name in _SIZES else int(str(text))
            if value < 1:
                raise ValueError(f"--{f.name.replace('_', '-')} must be at least 1, got {text}")
            values[f.name] = value
        return cls(**values)


def describe(limits: Limits) -> dict[str, str]:
    """The limits as the options write them, for messages.

    >>> describe(Limits())["memory"]
    '2G'
    """
    return {k: (shown(v) if k in _SIZES else str(v)) for k, v in asdict(limits).items()}


def _option(name: str) -> str:
    return f"--{name.replace('_', '-')}"


def went_over(name: str, limits: Limits) -> str:
    """The one-line reason for going over a limit the notebook's room holds (memory, CPU, processes, file size).

    >>> went_over("file_size", Limits(file_size=16 << 20))
    'went over the file size limit (16M, --file-size)'
    """
    return f"went over the {_NAMES[name]} limit ({describe(limits)[name]}, {_option(name)})"


def sent_too_much(name: str, limits: Limits) -> str:
    """The one-line reason for a kernel that sent more than ``--output`` or ``--data``.

    >>> sent_too_much("data", Limits())
    'sent more than 64M of data for its checks (--data)'
    """
    what = "of output" if name == "output" else "of data for its checks"
    return f"sent more than {describe(limits)[name]} {what} ({_option(name)})"


def ran_too_long(limits: Limits) -> str:
    """The one-line reason for a notebook that ran past ``--wall``.

    >>> ran_too_long(Limits(wall=60))
    'ran for more than 60 s (--wall)'
    """
    return f"ran for more than {limits.wall} s (--wall)"


def no_answer(seconds: float) -> str:
    """Why a check failed when the kernel did not answer its requests within the cell's time-out.

    >>> no_answer(30)
    'the kernel did not answer within 30 s (--timeout)'
    """
    return f"the kernel did not answer within {seconds} s (--timeout)"


def not_graded(reason: str) -> str:
    """A notebook's problem, from the reason its run was stopped (one of the messages above).

    >>> not_graded(ran_too_long(Limits(wall=5)))
    'the notebook ran for more than 5 s (--wall)'
    """
    return f"the notebook {reason}"
