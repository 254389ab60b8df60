"""Vector loads that a missing ``__restrict__`` splits (CL203 on sm_70+): the fields of one
element of a vector-typed read pointer, loaded around stores through another pointer
that may alias them, and how many load instructions nvcc emits for them with and
without ``const __restrict__``.

nvcc merges field loads of one naturally aligned element (``a[i].x``, ``a[i].y`` of a
``float2``) into one vector load (``LDG.E.64``, ``LDG.E.128``) in its load/store
vectorizer. A load can join the vector only if no store that may write it comes
between the first load of the vector and itself; the rules below are what nvcc 13 does
for sm_90, measured on the PTX and SASS of the kernels in fixtures/CL203/ (counts.json):

* a store to a field of the *same* struct type (``o[j].x`` with ``o`` and ``a`` both
  ``float4*``) blocks only the load of the same field: nvcc keeps struct-path type
  information. A store of another type (a ``float*``, an ``int2`` field, a ``float2``
  field when ``a`` is ``float4``) or through a local pointer blocks every field;
  ``__restrict__`` pointers and ``__shared__`` data block nothing;
* a barrier, an atomic or a call blocks the merge with ``__restrict__`` too: loads
  with one between them are not reported (the fix would change nothing);
* the loads of an element are walked in program order; a load that a store between the
  first load of the current vector and itself may write starts a new vector;
* a second load of a field with no blocking store since the first is the same value
  (nvcc reuses it);
* each vector starts at an offset aligned to its width (at most 16 bytes on sm_70 to
  sm_90); three 4-byte fields from an aligned start are loaded as four.

Only elements whose loads are all unconditional statements of one block, with no
control flow from the first load to the last (the vectorizer works in one basic block),
are counted, and only when the fields loaded are adjacent (no gap), so that the fixed
kernel's single vector load is certain. nvcc sometimes pairs loads that the chain order
above keeps apart (``a.x; o.w = ..; a.z; a.w; a.y`` loads z and w together), so a count
is reported only when it equals a second estimate: every aligned group of fields whose
loads can all be hoisted to the first of them merged. Checked on 1,600 random kernels
(tools/gputruth/vector_split_fuzz.py, fixtures/CL203/vector_fuzz.json): no reported
count or width differs from nvcc's PTX.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.analysis.memory.pointer_access import _BY_VALUE_PREFIX, _MATH
from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.analysis.memory.alias_effects import _Kernel
    from cudalint.analysis.memory.pointer_access import ParamAccess
    from cudalint.context import UnitContext

# CUDA vector types that are aligned to their size (float3/int3 are aligned to 4 and
# never merged; 32-byte types exceed sm_90's widest load)
_VECTORS = {
    "float2": (4, "xy"), "float4": (4, "xyzw"), "int2": (4, "xy"), "int4": (4, "xyzw"),
    "uint2": (4, "xy"), "uint4": (4, "xyzw"), "double2": (8, "xy"),
    "longlong2": (8, "xy"), "ulonglong2": (8, "xy"),
}
_SCALAR_SIZE = {
    "float": 4, "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4,
    "double": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8, "uint64_t": 8,
    "long long int": 8,
}
_ALIGNED_STRUCT = re.compile(
    rb"\bstruct\s+(?:__align__|alignas)\s*\(\s*(\d+)\s*\)\s*(\w+)\s*\{([^{}]*)\}")
_ALIGNED_TYPEDEF = re.compile(
    rb"\btypedef\s+struct\s+(?:__align__|alignas)\s*\(\s*(\d+)\s*\)\s*(?:\w+\s*)?"
    rb"\{([^{}]*)\}\s*(\w+)\s*;")
_FIELDS = re.compile(r"^\s*([A-Za-z_][\w ]*?)\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*$")
_CASTS = re.compile(r"^(?:static|reinterpret|const)_cast$")
_CONTROL = frozenset({"if_statement", "switch_statement", "conditional_expression",
                      "for_statement", "while_statement", "do_statement",
                      "return_statement", "break_statement", "continue_statement",
                      "goto_statement", "lambda_expression", "labeled_statement"})


@dataclass(frozen=True)
class Layout:
    """A naturally aligned element type: its name, size and field offsets."""
    name: str
    size: int
    field_size: int
    offsets: dict[str, int]


@dataclass
class SplitLoad:
    """One element of a vector-typed read pointer loaded with ``count`` loads (of
    ``sizes`` bytes) where ``const __restrict__`` gives ``fixed`` (of ``fixed_sizes``)."""
    param: str
    key: str                    # the element as written, e.g. "a[i]"
    type_name: str
    count: int
    sizes: list[int]
    fixed: int
    fixed_sizes: list[int]
    loads: list[Node]
    aliasers: list[str]         # pointers whose stores split the loads
    in_loop: bool


def layout(ctx: "UnitContext", type_name: str) -> Layout | None:
    name = " ".join(w for w in type_name.replace("*", " ").split()
                    if w not in ("const", "volatile", "struct", "__restrict__"))
    if name in _VECTORS:
        size, fields = _VECTORS[name]
        return Layout(name, size * len(fields), size,
                      {f: k * size for k, f in enumerate(fields)})
    return _aligned_structs(ctx).get(name)


def _aligned_structs(ctx: "UnitContext") -> dict[str, Layout]:
    """Structs of the unit declared ``__align__(N)``/``alignas(N)`` whose fields are all
    of one 4- or 8-byte scalar type and fill exactly N = 8 or 16 bytes."""
    memo = getattr(ctx, "_cl203_vector_structs", None)
    if memo is not None:
        return memo
    out: dict[str, Layout] = {}
    data = ctx.unit.data
    if b"__align__" in data or b"alignas" in data:
        found = [(m.group(1), m.group(2), m.group(3)) for m in _ALIGNED_STRUCT.finditer(data)]
        found += [(m.group(1), m.group(3), m.group(2)) for m in _ALIGNED_TYPEDEF.finditer(data)]
        for align, name, body in found:
            made = _struct_layout(int(align), name.decode(), body.decode(errors="replace"))
            if made is not None:
                out[made.name] = made
    try:
        ctx._cl203_vector_structs = out
    except AttributeError:
        pass
    return out


def _struct_layout(align: int, name: str, body: str) -> Layout | None:
    if align not in (8, 16):
        return None
    offsets: dict[str, int] = {}
    size = None
    for decl in body.split(";"):
        if not decl.strip():
            continue
        m = _FIELDS.match(decl)
        if m is None:
            return None             # arrays, bit fields, nested types: not followed
        this = _SCALAR_SIZE.get(" ".join(m.group(1).split()))
        if this is None or (size is not None and this != size):
            return None
        size = this
        for field_name in m.group(2).split(","):
            offsets[field_name.strip()] = len(offsets) * size
    if size is None or len(offsets) * size != align:
        return None
    return Layout(name, align, size, offsets)


def pieces(offsets: list[int], field_size: int, element: int) -> list[int]:
    """Widths of the vector loads nvcc makes of the fields at ``offsets`` (sorted,
    distinct) when nothing keeps them apart: from the lowest offset, the widest vector
    aligned there that the adjacent fields fill more than half of."""
    out = []
    i = 0
    while i < len(offsets):
        o = offsets[i]
        run = 1
        while i + run < len(offsets) and offsets[i + run] == o + run * field_size:
            run += 1
        width = field_size
        for w in (16, 8):
            if field_size < w <= element and o % w == 0 and run * field_size > w // 2:
                width = w
                break
        out.append(width)
        i += min(run, width // field_size)
    return out


def split_load(k: "_Kernel", acc: "ParamAccess") -> SplitLoad | None:
    """The element of ``acc``'s parameter whose field loads a missing ``__restrict__``
    splits most (None when no element is split)."""
    lay = layout(k.ctx, acc.param.base_type)
    if lay is None:
        return None
    name = acc.param.name
    groups: dict[str, list[tuple[Node, int]]] = {}
    whole: set[str] = set()
    for n in acc.loads:
        if not k.in_body(n):
            continue
        if n.type == "subscript_expression":
            whole.add("".join(text(n).split()))
            continue
        found = _field_load(n, name, lay)
        if found is not None:
            groups.setdefault(found[0], []).append((n, found[1]))
    best: SplitLoad | None = None
    stores = None
    for key, loads in groups.items():
        if key in whole or len({off for _, off in loads}) < 2 or \
                not k.thread_dependent(loads[0][0]):
            continue
        if stores is None:
            stores = _stores(k, name)
        for run in _runs(k, loads):
            found = _count(k, acc, key, lay, run, stores)
            if found is not None and (best is None or
                                      found.count - found.fixed > best.count - best.fixed):
                best = found
    return best


def _field_load(n: Node, name: str, lay: Layout) -> tuple[str, int] | None:
    """(element key, field offset) of ``name[idx].field``."""
    if n.type != "field_expression":
        return None
    arg = n.child_by_field_name("argument")
    op = n.child_by_field_name("operator")
    fld = n.child_by_field_name("field")
    if arg is None or fld is None or op is None or text(op) != "." or \
            arg.type != "subscript_expression":
        return None
    base = arg.child_by_field_name("argument")
    if base is None or base.type != "identifier" or text(base) != name:
        return None
    off = lay.offsets.get(text(fld))
    if off is None:
        return None
    return "".join(text(arg).split()), off


def _stores(k: "_Kernel", exclude: str) -> list[tuple[int, tuple[str, int] | None, str]]:
    """(where the store completes, (type, offset) of a same-layout field store or None
    for one that may write any field, pointer name) for stores through other
    non-restrict pointer parameters."""
    out: list[tuple[int, tuple[str, int] | None, str]] = []
    for other, acc in k.accesses.items():
        if other == exclude or acc.param.restrict:
            continue
        lay = layout(k.ctx, acc.param.base_type)
        for node, _ in acc.writes:
            if not k.in_body(node):
                continue
            spec = None
            if lay is not None and node.type == "assignment_expression":
                found = _field_load(node.child_by_field_name("left"), other, lay)
                if found is not None:
                    spec = (lay.name, found[1])
            out.append((node.end_byte, spec, other))
    out.sort(key=lambda s: s[0])
    return out


def _runs(k: "_Kernel", loads: list[tuple[Node, int]]) -> list[list[tuple[Node, int]]]:
    """The loads split by block (unconditional ones only) and where the index changes."""
    names = k.names_in(loads[0][0].child_by_field_name("argument"))
    by_block: dict[int, list[tuple[Node, int]]] = {}
    for n, off in loads:
        block, unconditional = k.statement_context(n)
        if block is None or not unconditional:
            return []                   # a conditional load: the blocks are not followed
        by_block.setdefault(block.id, []).append((n, off))
    runs = []
    for chain in by_block.values():
        chain.sort(key=lambda x: x[0].start_byte)
        cur = [chain[0]]
        for a, b in zip(chain, chain[1:]):
            if k.modified_between(names, a[0].end_byte, b[0].start_byte):
                runs.append(cur)
                cur = []
            cur.append(b)
        runs.append(cur)
    return [r for r in runs if len({off for _, off in r}) >= 2]


def _straight(k: "_Kernel", first: Node, last: Node) -> bool:
    """No control flow from ``first`` to ``last`` (both in one block)."""
    block, _ = k.statement_context(first)
    for stmt in block.named_children:
        if stmt.end_byte <= first.start_byte or stmt.start_byte >= last.end_byte:
            continue
        stack = [stmt]
        while stack:
            cur = stack.pop()
            if cur.type in _CONTROL:
                return False
            if cur.type == "binary_expression" and \
                    text(cur.child_by_field_name("operator")) in ("&&", "||"):
                return False
            stack.extend(cur.named_children)
    return True


def _hoistable_pieces(real: list[tuple[int, int]], inside, lay: Layout) -> list[int]:
    """Widths of the vector loads if nvcc merged every aligned group of fields whose
    loads can all be hoisted to the first of them (no blocking store in between)."""
    where = dict((off, pos) for pos, off in real)
    offs = sorted(where)
    e = lay.field_size
    out = []
    i = 0
    while i < len(offs):
        o = offs[i]
        run = 1
        while i + run < len(offs) and offs[i + run] == o + run * e:
            run += 1
        width, take = e, 1
        for w in (16, 8):
            if not (e < w <= lay.size and o % w == 0 and run * e > w // 2):
                continue
            members = offs[i:i + min(run, w // e)]
            first = min(where[m] for m in members)
            if not any(first < spos < where[m] and _blocks(spec, lay, m)
                       for m in members for spos, spec, _ in inside):
                width, take = w, len(members)
                break
        out.append(width)
        i += take
    return out


def _hard_point(k: "_Kernel", start: int, end: int) -> bool:
    """A barrier, an atomic or a call other than math between ``start`` and ``end``:
    nvcc merges no load across it even with ``__restrict__`` (measured: two
    ``ld.global.nc.f32`` around ``__syncthreads()``, ``atomicAdd`` or a call), so the
    count could not change; such loads are not reported."""
    for pos, name in k.calls:
        if start < pos < end and not (_MATH.match(name) or _CASTS.match(name) or
                                       _BY_VALUE_PREFIX.match(name.split("::")[-1])):
            return True
    return False


def _blocks(spec: tuple[str, int] | None, lay: Layout, off: int) -> bool:
    return spec is None or spec[0] != lay.name or spec[1] == off


def _count(k: "_Kernel", acc: "ParamAccess", key: str, lay: Layout,
           run: list[tuple[Node, int]], stores) -> SplitLoad | None:
    offsets = sorted({off for _, off in run})
    if offsets != list(range(offsets[0], offsets[0] + lay.field_size * len(offsets),
                             lay.field_size)):
        return None                     # a gap: nvcc may pad it or not
    first, last = run[0][0], run[-1][0]
    if not _straight(k, first, last) or _hard_point(k, first.start_byte, last.start_byte):
        return None
    inside = [s for s in stores if first.start_byte < s[0] < last.start_byte]
    if not inside:
        return None
    events = sorted([(n.start_byte, 1, off, n) for n, off in run] +
                    [(pos, 0, spec, who) for pos, spec, who in inside],
                    key=lambda e: (e[0], e[1]))
    available: set[int] = set()
    real: list[tuple[int, int]] = []
    for pos, is_load, what, _ in events:
        if not is_load:
            available = {o for o in available if not _blocks(what, lay, o)}
        elif what not in available:
            available.add(what)
            real.append((pos, what))
    chains: list[list[tuple[int, int]]] = [[real[0]]]
    why: list[str] = []
    for pos, off in real[1:]:
        start = chains[-1][0][0]
        blocking = [who for spos, spec, who in inside
                    if start < spos < pos and _blocks(spec, lay, off)]
        if blocking or any(o == off for _, o in chains[-1]):
            chains.append([(pos, off)])
            for who in blocking:
                if who not in why:
                    why.append(who)
        else:
            chains[-1].append((pos, off))
    sizes = [w for chain in chains
             for w in pieces(sorted({o for _, o in chain}), lay.field_size, lay.size)]
    fixed_sizes = pieces(offsets, lay.field_size, lay.size)
    if len(sizes) <= len(fixed_sizes):
        return None
    if len({o for _, o in real}) != len(real) or \
            len(_hoistable_pieces(real, inside, lay)) != len(sizes):
        # nvcc sometimes pairs loads that its chain order would keep apart (measured:
        # `a.x; o.w=; a.z; a.w; a.y` merges z+w): report only where the chain order
        # and the pairing of any loads that can be hoisted together give one count
        return None
    return SplitLoad(acc.param.name, key, lay.name, len(sizes), sizes, len(fixed_sizes),
                     fixed_sizes, [n for n, _ in run], why,
                     k.nearest_loop(last) is not None)
