"""What the FP analysis reports, whichever engine computed it (libclang in ``fptypes``, or the
tree-sitter fallback in ``fptypes_ts``), and the float-literal helpers both engines use."""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field


@dataclass
class Promotion:
    """Float arithmetic that runs in FP64. Offsets are unit bytes."""
    start: int
    end: int
    kind: str                   # "literal" | "cast" | "call"
    text: str                   # the literal / cast / callee as written
    exact: bool | None = None   # literal: exactly representable in float
    ops: int = 0                # FP64 operations in the promoted expression
    expr_start: int = -1
    expr_end: int = -1


@dataclass
class Contraction:
    """A float expression whose result depends on separate rounding of a multiply and an
    add, which FMA contraction removes."""
    start: int
    end: int
    kind: str                   # "difference-of-products" | "error-free-transform"
    dtype: str                  # "float" | "double"
    text: str
    related: tuple[int, int] | None = None   # the product that made the subtracted value


@dataclass
class FpFacts:
    engine: str                 # "libclang" | "tree-sitter" | "none"
    promotions: list[Promotion] = field(default_factory=list)
    contractions: list[Contraction] = field(default_factory=list)
    note: str | None = None
    notice: str | None = None   # why the unit was not analysed, said as a CL000


def exactly_float(value: float) -> bool:
    try:
        return struct.unpack("f", struct.pack("f", value))[0] == value
    except OverflowError:
        return False


def literal_value(text: str) -> float | None:
    t = text.strip()
    if t.lower().endswith(("f", "l")) or not re.fullmatch(
            r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+", t):
        return None
    try:
        return float(t)
    except ValueError:
        return None
