"""Dtypes and their sizes, and :class:`Precision`: the dtypes of one matmul's operands.

A matmul ``X[B, D] @ W[D, F] -> Z[B, F]`` can keep each operand in its own
dtype (int8 weights with bf16 activations, say). Every function that counts a
matmul's bytes takes one ``precision`` argument: a :class:`Precision` or a
single dtype name meaning "this dtype for all three".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["DTYPE_BYTES", "Precision", "PrecisionLike", "dtype_bytes"]

#: Bytes per element of each dtype the course uses (read-only).
DTYPE_BYTES: Mapping[str, float] = MappingProxyType(
    {
        "fp64": 8,
        "fp32": 4,
        "tf32": 4,
        "bf16": 2,
        "fp16": 2,
        "fp8": 1,
        "int8": 1,
        "int4": 0.5,
    }
)


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of ``dtype``.

    Examples
    --------
    >>> dtype_bytes("int8")
    1
    >>> dtype_bytes("bfloat16")
    Traceback (most recent call last):
    ...
    KeyError: "unknown dtype 'bfloat16'; use one of 'fp64', 'fp32', 'tf32', 'bf16', 'fp16', 'fp8', 'int8', 'int4'"
    """
    if isinstance(dtype, str) and dtype in DTYPE_BYTES:
        return DTYPE_BYTES[dtype]
    known = ", ".join(repr(d) for d in DTYPE_BYTES)
    raise KeyError(f"unknown dtype {dtype!r}; use one of {known}")


@dataclass(frozen=True, init=False)
class Precision:
    """The dtypes of a matmul's activations ``x``, weights ``w`` and output ``out``.

    ``w`` and ``out`` default to ``x``. Use :meth:`from_any` to accept either a
    :class:`Precision` or one dtype name for all three.

    Examples
    --------
    >>> Precision("bf16", w="int8")
    Precision(x='bf16', w='int8', out='bf16')
    >>> Precision.from_any("int8").bytes
    (1, 1, 1)
    >>> Precision(w="bfloat16")
    Traceback (most recent call last):
    ...
    KeyError: "unknown dtype 'bfloat16' for w; use one of 'fp64', 'fp32', 'tf32', 'bf16', 'fp16', 'fp8', 'int8', 'int4'"
    """

    x: str
    w: str
    out: str

    def __init__(self, x: str = "bf16", w: str | None = None, out: str | None = None) -> None:
        for name, dtype in (("x", x), ("w", w if w is not None else x), ("out", out if out is not None else x)):
            try:
                dtype_bytes(dtype)
            except KeyError as err:
                raise KeyError(err.args[0].replace("; use", f" for {name}; use")) from None
            object.__setattr__(self, name, dtype)

    @classmethod
    def from_any(cls, precision: PrecisionLike) -> Precision:
        """A :class:`Precision` as is, or one dtype name (``"bf16"``) for all three operands.

        Examples
        --------
        >>> Precision.from_any("fp32")
        Precision(x='fp32', w='fp32', out='fp32')
        >>> Precision.from_any(2)
        Traceback (most recent call last):
        ...
        TypeError: precision must be a dtype name such as 'bf16' or a Precision, got 2
        """
        if isinstance(precision, Precision):
            return precision
        if isinstance(precision, str):
            return cls(precision)
        raise TypeError(f"precision must be a dtype name such as 'bf16' or a Precision, got {precision!r}")

    @property
    def bytes(self) -> tuple[float, float, float]:
        """Bytes per element of ``x``, ``w`` and ``out``."""
        return dtype_bytes(self.x), dtype_bytes(self.w), dtype_bytes(self.out)

    def __str__(self) -> str:
        """One dtype name when all three agree, else ``x=bf16, w=int8, out=bf16``."""
        if self.x == self.w == self.out:
            return self.x
        return f"x={self.x}, w={self.w}, out={self.out}"


#: What a ``precision`` argument accepts: a :class:`Precision` or one dtype name.
PrecisionLike = Precision | str
