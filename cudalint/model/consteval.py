"""Integer constant evaluation for C expressions (``#define`` bodies, array sizes, dims).

Works on text so that ``#define`` arguments, which tree-sitter leaves as raw text, and
expressions from the syntax tree go through one evaluator. Unknown names make the result
``None``: the caller must stay silent rather than guess.
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
    "__nv_bfloat16": 2, "int": 4, "unsigned": 4, "unsigned int": 4, "float": 4,
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


def _apply(op, a, b):
    if op == "/":
        if b == 0:
            raise ZeroDivisionError
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    if op == "%":
        if b == 0:
            raise ZeroDivisionError
        return a - b * _apply("/", a, b)
    if op in ("<<", ">>") and not 0 <= b < 64:
        raise _Unknown
    return {
        "+": a + b, "-": a - b, "*": a * b, "<<": a << b, ">>": a >> b, "&": a & b,
        "|": a | b, "^": a ^ b, "==": int(a == b), "!=": int(a != b), "<": int(a < b),
        ">": int(a > b), "<=": int(a <= b), ">=": int(a >= b), "&&": int(bool(a and b)),
        "||": int(bool(a or b)),
    }[op]


def _unary(tokens, i, env):
    kind, tok = tokens[i]
    if kind == "num":
        return int(tok, 0) if not (len(tok) > 1 and tok[0] == "0" and tok[1].isdigit()) \
            else int(tok, 8), i + 1
    if kind == "name":
        if tok in env:
            return env[tok], i + 1
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
        return {"-": -value, "+": value, "~": ~value, "!": int(not value)}[tok], i
    raise _Unknown
