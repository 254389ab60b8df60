"""The device functions of project headers that a CUDA file calls, as nvcc sees them.

``k.cu`` includes ``helpers.cuh`` and its kernel calls ``first_field(xyz, i)``, defined
there as ``return xyz[3 * i];``. nvcc inlines the call: the kernel reads 12-byte records
one float at a time, as if the body were written in ``k.cu``. The lane engine follows a
call only into a body the unit holds (``analysis/memory/callee_lanes``), so the index
hands the unit those bodies: :func:`header_functions` picks, from the project headers the
file includes (``ProjectIndex.closure``: library headers are never read), the
``__device__`` function definitions whose names the file calls, and the ones those call,
and the unit appends their text after its own (``index.unit_view``). Each appended
character maps to the ``#include`` that brought the header in (as a macro body's
characters map to the invocation), and the unit records where each piece is in its
header (``Unit.spliced``), so that:

- a finding located in appended text is not reported by the engine (the header's own
  lint reports what its text says by itself); the rules whose figures depend on the
  caller (CL201, CL202: the kernel's lanes) report at the call in the file instead, and
  say where the access is in the header;
- a line a message computes for appended text is not shown (it is not this file's).

Bounded: MAX_SPLICE_BYTES of appended text per unit, MAX_FUNCTION_BYTES per function,
MAX_ROUNDS of callee's callees. A header's definitions are found once per content.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from cudalint.parse import captures, parse, text

MAX_SPLICE_BYTES = 128 << 10
MAX_FUNCTION_BYTES = 32 << 10
MAX_ROUNDS = 3
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>\s*)?\(")
_INCLUDE = re.compile(r'#[ \t]*include[ \t]*"([^"\n]+)"')


@dataclass(frozen=True)
class Definition:
    name: str
    start: int          # char offset in the header (a template's `template <...>` first)
    text: str
    calls: frozenset[str]


@dataclass(frozen=True)
class Splice:
    header: str         # absolute path
    start: int          # char offset of the text in the header
    text: str
    include_at: int     # char offset in the file of the #include that brings it in


def header_functions(idx, path: str, text_: str) -> list[Splice]:
    """The definitions to append to ``path`` (its text ``text_``), in header order."""
    headers = idx.closure(path)
    if not headers:
        return []
    called = set(_CALLED.findall(text_))
    defs: dict[str, tuple[str, Definition]] = {}
    for header in headers:
        facts = idx.facts(header)
        if facts is None or "__device__" not in facts.text:
            continue
        for d in definitions(header, facts.text):
            defs.setdefault(d.name, (header, d))      # the first include wins
    if not defs:
        return []
    chosen: dict[str, tuple[str, Definition]] = {}
    frontier = called
    for _ in range(MAX_ROUNDS):
        new = {n for n in frontier if n in defs and n not in chosen}
        if not new:
            break
        frontier = set()
        for n in sorted(new):
            chosen[n] = defs[n]
            frontier |= defs[n][1].calls
    if not chosen:
        return []
    where = _include_offsets(idx, path, text_)
    out: list[Splice] = []
    size = 0
    for header, d in sorted(chosen.values(), key=lambda hd: (headers.index(hd[0]),
                                                                hd[1].start)):
        size += len(d.text)
        if size > MAX_SPLICE_BYTES:
            break
        out.append(Splice(header, d.start, d.text, where.get(header, 0)))
    return out


def _include_offsets(idx, path: str, text_: str) -> dict[str, int]:
    """For each header of the closure, the char offset of the file's own ``#include``
    through which it comes in (the first one whose closure holds it)."""
    out: dict[str, int] = {}
    for m in _INCLUDE.finditer(text_):
        direct = idx.resolve(path, m.group(1))
        if direct is None:
            continue
        for h in (direct,) + idx.closure(direct):
            out.setdefault(h, m.start())
    return out


def definitions(header: str, header_text: str) -> tuple[Definition, ...]:
    """The ``__device__`` (not ``__global__``) function definitions of a header."""
    return _definitions(header, header_text)


@lru_cache(maxsize=256)
def _definitions(header: str, header_text: str) -> tuple[Definition, ...]:
    data = header_text.encode("utf-8", "surrogatepass")
    if len(data) != len(header_text):
        return ()               # offsets below are bytes: ASCII headers only
    tree = parse(data)
    out = []
    for node in captures("(function_definition) @f", tree.root_node).get("f", []):
        body = node.child_by_field_name("body")
        if body is None or node.end_byte - node.start_byte > MAX_FUNCTION_BYTES:
            continue
        head = data[node.start_byte:body.start_byte]
        if b"__device__" not in head or b"__global__" in head:
            continue
        if _inside_function(node):
            continue
        name = _name(node)
        if name is None:
            continue
        start = node.start_byte
        parent = node.parent
        if parent is not None and parent.type == "template_declaration":
            start = parent.start_byte
        piece = header_text[start:node.end_byte]
        out.append(Definition(name, start, piece,
                              frozenset(_CALLED.findall(text(body)))))
    return tuple(out)


def _inside_function(node) -> bool:
    p = node.parent
    while p is not None:
        if p.type in ("function_definition", "class_specifier", "struct_specifier",
                      "lambda_expression"):
            return True
        p = p.parent
    return False


def _name(node) -> str | None:
    decl = node.child_by_field_name("declarator")
    while decl is not None and decl.type not in ("function_declarator",):
        decl = decl.child_by_field_name("declarator")
    if decl is None:
        return None
    inner = decl.child_by_field_name("declarator")
    if inner is None or inner.type not in ("identifier", "field_identifier"):
        return None
    return text(inner)
