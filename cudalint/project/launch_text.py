"""The text of a launch's host function, read without a parse (the project index's).

The index finds launches with regular expressions (its cost must stay a small fraction
of the parse); what a launch needs from the function around it is read here from that
function's text: the initializer of the local that names its block (``dim3 block(32,
8)``, ``int threads = 256``), the kernels a function pointer is assigned, and the call's
arguments as written (their types deduce template arguments: model.dispatch).
"""
from __future__ import annotations

import re


_BRACKETS = re.compile(r"[()\[\]{}]")


def call_args(text: str, offset: int) -> str:
    """The argument list of the launch at ``offset`` as written, without its parentheses
    (``k<<<g, b>>>(a, b)``: ``"a, b"``); split only where a template is deduced
    (model.dispatch.split_call)."""
    end = text.find(">>>", offset, offset + 3000)
    if end < 0:
        return ""
    p = end + 3
    while p < len(text) and text[p] in " \t\r\n":
        p += 1
    if p >= len(text) or text[p] != "(":
        return ""
    depth = 0
    for m in _BRACKETS.finditer(text, p, p + 3000):
        if m.group(0) in "([{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return text[p + 1:m.start()].strip()
    return ""


def split_top(s: str) -> list[str]:
    if "(" not in s and "[" not in s and "{" not in s:
        return [part.strip() for part in s.split(",")]
    parts, depth, cur = [], 0, []
    for c in s:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(c)
    parts.append("".join(cur).strip())
    return parts


_DIM3_DECL = re.compile(r"dim3\s+([^;]*);")
_DECL_WORDS = frozenset({"const", "constexpr", "static", "unsigned", "signed", "int", "long",
                         "size_t", "auto", "uint32_t", "int32_t", "uint64_t", "int64_t",
                         "short"})
_ASSIGNED = re.compile(r"\s*(?:\.\s*[xyz]\s*)?(?:[-+*/%&|^]|<<|>>)?=(?!=)")
_INIT = re.compile(r"\s*=(?!=)\s*([^;]+);")


def _occurrences(text: str, name: str):
    """Offsets of ``name`` as a whole word in ``text`` (str.find: no regex per name)."""
    pos = text.find(name)
    n = len(name)
    while pos >= 0:
        before = text[pos - 1] if pos else " "
        after = text[pos + n] if pos + n < len(text) else " "
        if not (before.isalnum() or before in "_.>") and not (after.isalnum() or after == "_"):
            yield pos
        pos = text.find(name, pos + n)


def local_init(before: str, name: str) -> str | None:
    """The initializer of the last declaration of ``name`` in ``before`` (a function's
    text up to a launch): ``dim3 name(a, b)``, ``dim3 a(..), name(..)``, ``dim3 name =
    ...``, ``int name = ...``; None when there is none or it is assigned after it."""
    best = None
    best_at = -1
    if "dim3" in before:
        for m in _DIM3_DECL.finditer(before):
            if name not in m.group(1):
                continue
            for decl in split_top(m.group(1)):
                d = re.fullmatch(r"(\w+)\s*(?:=\s*(.*)|([({].*[)}]))", decl, re.DOTALL)
                if d and d.group(1) == name:
                    best, best_at = (d.group(2) or d.group(3)).strip(), m.end()
    for pos in _occurrences(before, name):
        m = _INIT.match(before, pos + len(name))
        if m is None or m.end() <= best_at:
            continue
        start = max(before.rfind(";", 0, pos), before.rfind("{", 0, pos),
                    before.rfind("}", 0, pos), before.rfind(")", 0, pos)) + 1
        words = before[start:pos].split()
        if words and all(w in _DECL_WORDS for w in words):
            best, best_at = m.group(1).strip(), m.end()
    if best is None:
        return None
    tail = before[best_at:]
    for pos in _occurrences(tail, name):
        if _ASSIGNED.match(tail, pos + len(name)):
            return None         # changed after its declaration: not known here
    return best


def pointer_targets(window: str, name: str) -> list[str]:
    """Kernels a function pointer ``name`` is assigned in a function's text
    (``name = &k;``, ``name = k;``, ``void (*name)(...) = &k;``)."""
    pat = re.compile(r"(?:\b" + re.escape(name) + r"|\(\s*\*\s*" + re.escape(name)
                     + r"\s*\)\s*\([^()]*\))\s*=\s*&?\s*([A-Za-z_]\w*)\s*;")
    return list(dict.fromkeys(m.group(1) for m in pat.finditer(window)))
