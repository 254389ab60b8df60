"""Values of the lane engine: vectors with one entry per column, and C's integer operators
over them.

A column is one thread of a sampled warp (warps 0, 1 and the last of the block) under one
sample of the uniform unknowns (kernel parameters, ``blockIdx``, ``gridDim``, loop
counters), sample-major. Evaluating an expression once over these vectors gives its value
for every lane of every (sample, warp) group at once; an integer is a tuple of column
values, a pointer a ``Ptr`` (a region plus a byte offset per column). What cannot be known
column by column raises ``Opaque``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat
from operator import (add, and_, eq, floordiv, ge, gt, le, lshift, lt, mod, mul, ne, or_,
                      rshift, sub, xor)
from typing import TYPE_CHECKING

from tree_sitter import Node

if TYPE_CHECKING:
    from cudalint.model.kernels import ArrayDecl

WARP = 32

# sample values of uniform symbols; sample 0 is "the first block, the first iteration"
PARAM_SAMPLES = (1, 37, 1024)          # sizes, strides, offsets passed to the kernel
BLOCK_IDX_SAMPLES = (0, 1, 5)
GRID_DIM_SAMPLES = (1, 3, 64)
COUNTER_SAMPLES = (0, 1, 3)            # how many times an accumulating update has run
N_SAMPLES = 3
UNKNOWN = "?"           # marks, among the thread axes a value reads, a sampled unknown


class Opaque(Exception):
    """The engine cannot know this value lane by lane."""


@dataclass
class Ptr:
    space: str
    region: str
    offset: tuple               # bytes, per column
    pointee: str                # element type
    dims: tuple = ()            # remaining array dims (shared arrays)
    array: "ArrayDecl | None" = None
    field: str | None = None    # a struct field read out of an array of structs


@lru_cache(maxsize=64)
def _columns(dims: tuple[int, int, int]) -> tuple[list, int, tuple, dict[str, tuple]]:
    """Columns (sample, thread) evaluated for a block shape: every sample of the unknowns
    for warps 0, 1 and the last; the lanes that exist; threadIdx per column."""
    bx, by, bz = dims
    nthreads = bx * by * bz
    nwarps = max(1, -(-nthreads // WARP))
    warps = sorted({0, 1, nwarps - 1} & set(range(nwarps)))
    cols = [(s, w * WARP + lane) for s in range(N_SAMPLES) for w in warps
            for lane in range(WARP)]
    active0 = tuple(t < nthreads for _, t in cols)
    tid = {
        "x": tuple(t % bx for _, t in cols),
        "y": tuple((t // bx) % by for _, t in cols),
        "z": tuple(t // (bx * by) for _, t in cols),
    }
    return cols, N_SAMPLES * len(warps), active0, tid


@lru_cache(maxsize=256)
def _sampled_columns(values: tuple[int, ...], dims: tuple[int, int, int]) -> tuple:
    """A uniform unknown's vector: its sample value in each column."""
    return tuple(values[s] for s, _ in _columns(dims)[0])


def _sample_invariant(vec: tuple) -> bool:
    """The same value in every sample of the uniform unknowns (columns are sample-major)."""
    n = len(vec) // N_SAMPLES
    first = vec[:n]
    return all(vec[s * n:(s + 1) * n] == first for s in range(1, N_SAMPLES))


_ELEMENTWISE = {"+": add, "-": sub, "*": mul, "&": and_, "|": or_, "^": xor}
_COMPARE = {"<": lt, ">": gt, "<=": le, ">=": ge, "==": eq, "!=": ne}


def _binop(op: str, a: tuple, b: tuple, node: Node) -> tuple:
    """``a op b`` column by column, with C's integer semantics (division truncates)."""
    try:
        f = _ELEMENTWISE.get(op)
        if f is not None:
            return tuple(map(f, a, b))
        if op == "/" or op == "%":
            if min(a) >= 0 and min(b) > 0:     # truncation is floor division here
                return tuple(map(floordiv if op == "/" else mod, a, b))
            if op == "/":
                return tuple(map(_cdiv, a, b))
            return tuple(x - y * _cdiv(x, y) for x, y in zip(a, b))
        if op == "<<":
            if min(b) < 0 or max(b) >= 64:
                raise Opaque(node)      # undefined in C; a huge Python int (MemoryError)
            return tuple(map(lshift, a, b))
        if op == ">>":
            return tuple(map(rshift, a, b))
        cmp = _COMPARE.get(op)
        if cmp is not None:
            return tuple(map(int, map(cmp, a, b)))
        if op == "&&":
            return tuple(int(bool(x and y)) for x, y in zip(a, b))
        if op == "||":
            return tuple(int(bool(x or y)) for x, y in zip(a, b))
    except (ZeroDivisionError, ValueError):
        raise Opaque(node) from None
    raise Opaque(node)


def _plus_scaled(base: tuple, index: tuple, scale: int) -> tuple:
    """base + index * scale, column by column."""
    if not any(base):               # the start of an array: index * scale
        return index if scale == 1 else tuple(map(mul, index, repeat(scale)))
    if scale == 1:
        return tuple(map(add, base, index))
    return tuple(map(add, base, map(mul, index, repeat(scale))))


def _cdiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q
