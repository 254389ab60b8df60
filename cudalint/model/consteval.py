"""Integer constant evaluation for C expressions (``#define`` bodies, array sizes, dims).

Works on text so that ``#define`` arguments, which tree-sitter leaves as raw text, and
expressions from the syntax tree go through one evaluator. Unknown names make the result
``None``: the caller must stay silent rather than guess.

Bounded on any input, as C is on 64-bit values: every literal and every intermediate value
must fit in 64 bits (``-2**63 <= v < 2**64``, the signed and unsigned ranges together), a
shift counts 0 to 63, and anything else (``1 + 99999999999999999999``, ``1 << 64``, a
product past 64 bits) makes the value unknown instead of a Python integer of any size.
Only the operator in front of the evaluator is computed: a table of every result, built
before looking one up, once computed ``a << b`` for a ``+`` (``1 + 34359738368`` shifted
1 by 34 billion bits: a MemoryError in five rules).

Macros are never expanded as text: a ``#define`` is evaluated once, in source order, and
later bodies read its value from ``env`` (:attr:`cudalint.model.kernels.Model.constants`),
so a doubling chain ``#define M40 (M39 + M39)`` costs 40 small evaluations, not 2**40
tokens. What the expression text may cost is bounded by :data:`MAX_TEXT`.
"""
from __future__ import annotations

import re

_TOKEN = re.compile(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)(?P<suffix>[uUlL]*)"
    r"|(?P<name>[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)"
    r"|(?P<op><<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^~!<>?:(),]))"
)
_SIZEOF = {
    "char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "half": 2, "__half": 2,
    "__nv_bfloat16": 2, "at::Half": 2, "c10::Half": 2, "at::BFloat16": 2,
    "c10::BFloat16": 2, "int": 4, "unsigned": 4, "unsigned int": 4, "float": 4,
    "int32_t": 4, "uint32_t": 4, "__half2": 4, "half2": 4, "__nv_bfloat162": 4,
    "double": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8, "uint64_t": 8,
    "size_t": 8, "long": 8, "float2": 8, "int2": 8, "uint2": 8,
    "float4": 16, "int4": 16, "uint4": 16, "double2": 16, "float3": 12, "int3": 12,
}
_BINARY = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7,
    ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}
MAX_TEXT = 2000
# C's 64-bit range: values from -2**63 (INT64_MIN) to 2**64 - 1 (UINT64_MAX) are kept
MIN_VALUE = -(1 << 63)
MAX_VALUE = (1 << 64) - 1
_MAX_LITERAL = 66          # characters of the longest 64-bit literal, 0b and 64 digits


def sizeof_type(name: str) -> int | None:
    name = " ".join(name.replace("const", " ").replace("volatile", " ").split())
    return _SIZEOF.get(name)


class _Unknown(Exception):
    pass


def eval_int(expr: str, env: dict[str, int] | None = None) -> int | None:
    """Value of a C integer constant expression, or None if it is not one we can know."""
    if not expr or len(expr) > MAX_TEXT:
        return None
    expr = re.sub(r"\bsizeof\s*\(\s*([A-Za-z_][\w\s]*?)\s*\)",
                  lambda m: str(sizeof_type(m.group(1)) or "__unknown_sizeof__"), expr)
    # casts such as (int), (unsigned) or static_cast<int>(...) do not change small values
    expr = re.sub(r"\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:int|long long|long|short|"
                  r"char|size_t|u?int(?:8|16|32|64)_t)\s*\)", " ", expr)
    expr = re.sub(r"static_cast\s*<[^<>]*>", "", expr)
    tokens: list[tuple[str, str]] = []
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            return None
        pos = m.end()
        if m.group("num") is not None:
            tokens.append(("num", m.group("num")))
        elif m.group("name") is not None:
            tokens.append(("name", m.group("name")))
        elif m.group("op") is not None:
            tokens.append(("op", m.group("op")))
    env = env or {}
    try:
        value, rest = _parse(tokens, 0, env, 0)
    except (_Unknown, IndexError, ZeroDivisionError, ValueError, RecursionError):
        return None
    return value if rest == len(tokens) else None


def fits(value: int) -> bool:
    """Is ``value`` a 64-bit C integer (signed or unsigned)?"""
    return MIN_VALUE <= value <= MAX_VALUE


def _checked(value: int) -> int:
    if not MIN_VALUE <= value <= MAX_VALUE:
        raise _Unknown          # overflow past 64 bits: C gives another value, or none
    return value


def _parse(tokens, i, env, min_prec):
    left, i = _unary(tokens, i, env)
    while i < len(tokens):
        kind, tok = tokens[i]
        if kind != "op":
            break
        if tok == "?" and min_prec == 0:
            then, i = _parse(tokens, i + 1, env, 0)
            if tokens[i] != ("op", ":"):
                raise _Unknown
            other, i = _parse(tokens, i + 1, env, 0)
            left = then if left else other
            continue
        prec = _BINARY.get(tok)
        if prec is None or prec < min_prec:
            break
        right, i = _parse(tokens, i + 1, env, prec + 1)
        left = _apply(tok, left, right)
    return left, i


def _divide(a: int, b: int) -> int:
    """C's ``/``: truncates toward zero."""
    if b == 0:
        raise ZeroDivisionError
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _shift(a: int, b: int, left: bool) -> int:
    if not 0 <= b < 64:
        raise _Unknown          # undefined in C
    if not left:
        return a >> b
    if a.bit_length() + b > 64:
        raise _Unknown          # past 64 bits (checked before Python builds the number)
    return a << b


# One function per operator, called for the operator in front of the evaluator only
# (operands are already within 64 bits: every result is small before it is checked).
_OPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": _divide, "%": lambda a, b: a - b * _divide(a, b),
    "<<": lambda a, b: _shift(a, b, True), ">>": lambda a, b: _shift(a, b, False),
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b), ">=": lambda a, b: int(a >= b),
    "&&": lambda a, b: int(bool(a and b)), "||": lambda a, b: int(bool(a or b)),
}


def _apply(op: str, a: int, b: int) -> int:
    return _checked(_OPS[op](a, b))


def literal(tok: str) -> int | None:
    """The value of an integer literal's digits (no suffix), or None past 64 bits."""
    if len(tok) > _MAX_LITERAL:
        return None             # 64 binary digits and a prefix at most (leading zeros aside)
    if len(tok) > 1 and tok[0] == "0" and tok[1].isdigit():
        value = int(tok, 8)
    else:
        value = int(tok, 0)
    return value if value <= MAX_VALUE else None


def _unary(tokens, i, env):
    kind, tok = tokens[i]
    if kind == "num":
        value = literal(tok)
        if value is None:
            raise _Unknown
        return value, i + 1
    if kind == "name":
        if tok in env:
            value = env[tok]
            if not MIN_VALUE <= value <= MAX_VALUE:
                raise _Unknown      # a value handed in from elsewhere (a -D setting)
            return value, i + 1
        if tok in ("true", "false"):
            return int(tok == "true"), i + 1
        raise _Unknown
    if tok == "(":
        value, i = _parse(tokens, i + 1, env, 0)
        if tokens[i] != ("op", ")"):
            raise _Unknown
        return value, i + 1
    if tok in ("-", "+", "~", "!"):
        value, i = _unary(tokens, i + 1, env)
        if tok == "-":
            return _checked(-value), i
        if tok == "~":
            return _checked(~value), i
        return (value if tok == "+" else int(not value)), i
    raise _Unknown
