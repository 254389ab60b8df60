"""The values a block run computes with, and its arithmetic on them.

A value is an int (the same for every simulated thread), a tuple of per-thread ints
(None where a thread's value is unknown), None (unknown for all), a pointer into shared
memory (:class:`SPtr`: array key and per-thread byte offset) or one into global/local
memory (:data:`GLOBAL`). The operators follow C on the values a run holds (division
truncates toward zero, shifts out of range are unknown) and run over whole vectors at C
speed where that gives the same result as the per-element definition (:func:`scalar_op`).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from itertools import repeat
from typing import Any

WARP = 32
FULL_MASK = 0xFFFFFFFF


@dataclass
class SPtr:
    """A pointer into shared memory: array key, byte offset (int or per thread)."""
    key: str
    offset: Any
    elem: str
    dims: tuple = ()            # remaining inner dimensions (multi-dimensional arrays)
    size: int | None = None     # the whole array's bytes, when known


class GPtr:
    """A pointer into global/local memory: its loads are unknown, its stores ignored."""


GLOBAL = GPtr()


@dataclass
class SharedVar:
    key: str
    name: str
    elem: str
    dims: tuple                  # () for a scalar
    extern: bool


def scalar_op(op: str, x: int, y: int):
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if op == "/":
        if y == 0:
            return None
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    if op == "%":
        if y == 0:
            return None
        q = abs(x) // abs(y)
        q = q if (x >= 0) == (y >= 0) else -q
        return x - y * q
    if op == "<<":
        return x << y if 0 <= y < 64 else None
    if op == ">>":
        return x >> y if 0 <= y < 64 else None
    if op == "&":
        return x & y
    if op == "|":
        return x | y
    if op == "^":
        return x ^ y
    if op == "<":
        return int(x < y)
    if op == ">":
        return int(x > y)
    if op == "<=":
        return int(x <= y)
    if op == ">=":
        return int(x >= y)
    if op == "==":
        return int(x == y)
    if op == "!=":
        return int(x != y)
    if op == "&&":
        return int(bool(x and y))
    if op == "||":
        return int(bool(x or y))
    return None


# per-thread operators that C evaluates over whole vectors exactly as scalar_op does
# (Python int semantics equal C's for these on the values the run holds)
_VEC_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "&": operator.and_,
            "|": operator.or_, "^": operator.xor}
_VEC_CMP = {"<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}


def _vector_scalar(expr: str):
    """``lambda v, s: per element x of v (None stays None): expr``, one list
    comprehension (CPython specialises int arithmetic in it; cheaper than map() plus a
    separate scan for unknown elements)."""
    return eval(f"lambda v, s: tuple([None if x is None else {expr} for x in v])")  # noqa: S307


_ARITH = ("+", "-", "*", "&", "|", "^")
_COMPARE = ("<", ">", "<=", ">=", "==", "!=")
# vector op scalar, and scalar op vector, for the operators scalar_op computes as
# Python does (no division, no shifts: those check their operands per element)
_VS = {op: _vector_scalar(f"x {op} s") for op in _ARITH}
_VS.update({op: _vector_scalar(f"(1 if x {op} s else 0)") for op in _COMPARE})
_SV = {op: _vector_scalar(f"s {op} x") for op in _ARITH}
_SV.update({op: _vector_scalar(f"(1 if s {op} x else 0)") for op in _COMPARE})
# x op s == x for every x (and None stays None): the vector itself
_IDENTITY = {"+": 0, "-": 0, "|": 0, "^": 0, "*": 1, "<<": 0, ">>": 0}


def binop(op: str, a, b):
    if a is None or b is None or isinstance(a, (SPtr, GPtr)) or isinstance(b, (SPtr, GPtr)):
        return None
    a_vec = isinstance(a, tuple)
    b_vec = isinstance(b, tuple)
    if not a_vec and not b_vec:
        return scalar_op(op, a, b)
    if not b_vec:
        if op in _IDENTITY and _IDENTITY[op] == b:
            return a
        f = _VS.get(op)
        if f is not None:
            return f(a, b)
    elif not a_vec:
        if a == 0 and op in ("+", "|", "^") or a == 1 and op == "*":
            return b
        f = _SV.get(op)
        if f is not None:
            return f(b, a)
    if not (a_vec and None in a) and not (b_vec and None in b):
        fast = _vec_op(op, a, b, a_vec, b_vec)
        if fast is not None:
            return fast
    n = len(a) if a_vec else len(b)
    va = a if a_vec else (a,) * n
    vb = b if b_vec else (b,) * n
    return tuple(None if x is None or y is None else scalar_op(op, x, y)
                 for x, y in zip(va, vb))


def _vec_op(op: str, a, b, a_vec: bool, b_vec: bool) -> tuple | None:
    """``op`` over vectors without unknown elements, at C speed; None when this op or
    these operands need the per-element path (division by zero, negative division,
    shifts out of range)."""
    va = a if a_vec else repeat(a)
    vb = b if b_vec else repeat(b)
    f = _VEC_OPS.get(op)
    if f is not None:
        return tuple(map(f, va, vb))
    f = _VEC_CMP.get(op)
    if f is not None:
        return tuple(map(int, map(f, va, vb)))
    if op in ("/", "%"):
        # C truncates toward zero; Python floors: equal when nothing is negative
        if (min(a) if a_vec else a) < 0 or (min(b) if b_vec else b) <= 0:
            return None
        return tuple(map(operator.floordiv if op == "/" else operator.mod, va, vb))
    if op in ("<<", ">>"):
        if (min(b) if b_vec else b) < 0 or (max(b) if b_vec else b) >= 64:
            return None
        return tuple(map(operator.lshift if op == "<<" else operator.rshift, va, vb))
    return None


def unop(op: str, a):
    if a is None or isinstance(a, (SPtr, GPtr)):
        return None
    f = {"-": lambda x: -x, "+": lambda x: x, "~": lambda x: ~x,
         "!": lambda x: int(not x)}.get(op)
    if f is None:
        return None
    if isinstance(a, int):
        return f(a)
    if None not in a:
        if op == "-":
            return tuple(map(operator.neg, a))
        if op == "~":
            return tuple(map(operator.invert, a))
        if op == "!":
            return tuple(map(int, map(operator.not_, a)))
    return tuple(None if x is None else f(x) for x in a)


def minmax(is_min: bool, a, b):
    if a is None or b is None or isinstance(a, (SPtr, GPtr)) or isinstance(b, (SPtr, GPtr)):
        return None
    pick = min if is_min else max
    if isinstance(a, int) and isinstance(b, int):
        return pick(a, b)
    n = len(a) if isinstance(a, tuple) else len(b)
    va = a if isinstance(a, tuple) else (a,) * n
    vb = b if isinstance(b, tuple) else (b,) * n
    if None not in va and None not in vb:
        return tuple(map(pick, va, vb))
    return tuple(None if x is None or y is None else pick(x, y) for x, y in zip(va, vb))
