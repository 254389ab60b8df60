"""Shared accesses ptxas merges across statements: the halves (or quarters) of one
vector that a thread stores or loads in separate statements, executed as one
STS.64/STS.128 (LDS.64/LDS.128).

quip-sharp stores a 16-byte codebook entry as two 8-byte halves::

    cache[(threadIdx.x * 2 + r) * 2]     = cb[y * 2];
    cache[(threadIdx.x * 2 + r) * 2 + 1] = cb[y * 2 + 1];

nvcc 13 emits one ``STS.128`` for the pair (bench/triage/sheet-newcorpus5.md W7): the
bank figure is that of the 16-byte access (8 wavefronts, 2-way), not of two 8-byte ones
(each "4-way"). ``merged_statements`` finds such groups the way ptxas forms them
(compile-only SASS, sm_90: fixtures/CL202/merged_statements.cu and .json, written by
tools/gputruth/merged_statements.py):

- accesses of one thread to consecutive elements of the same ``__shared__`` array, all
  loads or all stores (not updates), of one width, at distances that do not depend on
  the thread or the unknowns (``siblings.constant_distance``), in any statement order;
- in one basic block (``siblings._Blocks.same_block``: straight-line statements of one
  ``{}`` block, no branch, loop or barrier between them);
- with nothing between the first and the last that may touch the array: another access
  to it, a store or load through a pointer the kernel did not receive as a parameter
  (it may point into shared memory), an atomic, ``asm``, or a call of a function of
  the unit (SASS: a load of the array, or a store through a pointer that may be shared,
  between the halves leaves two STS);
- the combined access at most 16 bytes and naturally aligned: every lane's first byte a
  multiple of the vector width in every warp and sample, and that proven, either
  because the address does not depend on any unknown of the kernel or from the index
  expression (``(e) * 2`` in elements of 8 bytes is 16-byte aligned; ``n + 4 * t`` is
  not, whatever the samples of ``n`` say). Unproven alignment: ptxas does not merge
  (``s[n + 4*t]``, ``s[n + 4*t + 1]`` stay two STS) and the scalar figures stand.

A run longer than one vector is cut as ptxas cuts it: from its lowest element, the
widest aligned vector that fits, then the next (four aligned 8-byte stores: two
STS.128). CL202 (rules/memory/cl202_shared_bank_conflict.py) reads the result.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from math import gcd
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.analysis.memory.lane_values import N_SAMPLES
from cudalint.analysis.memory.loops import counted_loop, loop_nodes, loops_around
from cudalint.analysis.memory.siblings import _Blocks, constant_distance, direction

if TYPE_CHECKING:
    from cudalint.analysis.memory.figures import Access
    from cudalint.context import UnitContext

VECTOR_WIDTHS = (16, 8)          # the widest first: STS.128 / LDS.128, then .64


@dataclass
class Merged:
    """One vector access ptxas forms from several statements."""
    executed: "Access"           # the vector access (the lowest element's lanes)
    members: list["Access"]      # in source order; members[0] is reported
    width: int                   # bytes of the vector

    @property
    def first(self) -> "Access":
        return self.members[0]

    def rows(self, ctx: "UnitContext") -> list[int]:
        from cudalint.analysis.memory.siblings import access_row
        return sorted({r for r in (access_row(ctx, a) for a in self.members)
                       if r is not None})


def merged_statements(ctx: "UnitContext", accesses: list["Access"]) -> dict[int, Merged]:
    """``id(access)`` -> the merged vector it belongs to, for every member."""
    blocks = _Blocks(ctx)
    buckets: dict[tuple, list] = {}
    for a in accesses:
        if a.space != "shared" or a.array is None or a.width not in (1, 2, 4, 8) or \
                a.struct_field is not None or direction(a) == "update":
            continue
        key = (id(a.kernel), id(a.reached), id(a.array), a.region, direction(a), a.width,
               a.block.dims, len(a.groups), tuple(sorted(a.bound.items())))
        buckets.setdefault(key, []).append(a)
    out: dict[int, Merged] = {}
    for bucket in buckets.values():
        if len(bucket) < 2:
            continue
        bucket.sort(key=lambda a: a.node.start_byte)
        for i, anchor in enumerate(bucket):
            if id(anchor) in out:
                continue
            run = _consecutive(anchor, bucket[i + 1:], blocks, out)
            for members, offsets in _chunks(run):
                if len(members) < 2:
                    continue
                lowest = members[offsets.index(min(offsets))]
                width = anchor.width * len(members)
                if not _nothing_between(ctx, blocks, members, anchor):
                    continue
                merged = Merged(replace(lowest, width=width),
                                sorted(members, key=lambda a: a.node.start_byte), width)
                for m in members:
                    out[id(m)] = merged
    return out


def _consecutive(anchor, later, blocks, taken) -> list[tuple["Access", int]]:
    """The anchor and the later accesses of its bucket, in its block, at constant
    distances within one 16-byte span of it: (access, byte distance from the anchor)."""
    w = anchor.width
    found = [(anchor, 0)]
    for b in later:
        if id(b) in taken:
            continue
        d = constant_distance(anchor, b)
        if d is None or d % w or abs(d) >= max(VECTOR_WIDTHS):
            continue
        if not blocks.same_block(anchor.node, b.node):
            continue
        found.append((b, d))
    return found


def _chunks(run: list[tuple["Access", int]]) -> list[tuple[list, list[int]]]:
    """The aligned vectors ptxas cuts from the run's consecutive elements, lowest first.
    Two accesses of one element: none (a store twice, or a load around a store)."""
    if len(run) < 2:
        return []
    offsets = [d for _, d in run]
    if len(set(offsets)) != len(offsets):
        return []
    by_off = dict((d, a) for a, d in run)
    w = run[0][0].width
    out = []
    start = min(offsets)
    hi = max(offsets)
    while start <= hi:
        if start not in by_off:
            start += w
            continue
        base = by_off[start]
        took = None
        for vw in VECTOR_WIDTHS:
            k = vw // w
            if k < 2 or any(start + j * w not in by_off for j in range(k)):
                continue
            if _aligned(base, vw):
                took = vw
                break
        if took is None:
            start += w
            continue
        k = took // w
        members = [by_off[start + j * w] for j in range(k)]
        out.append((members, [start + j * w for j in range(k)]))
        start += took
    return out


def _aligned(access: "Access", vw: int) -> bool:
    """Every lane's first byte a multiple of ``vw`` in every column, and provably so."""
    if any(x % vw for row in access.groups for x in row if x is not None):
        return False
    if _moves_with_rolled_loop(access):
        return False
    nw = max(1, len(access.groups) // N_SAMPLES)
    if _reads_no_unknown(access) and \
            all(access.groups[s * nw + w] == access.groups[w]
                for w in range(nw) for s in range(1, N_SAMPLES)):
        return True                     # no unknown moves it: the lanes are the figure
    return _index_divisible(access, vw)


def _reads_no_unknown(access: "Access") -> bool:
    """The address reads no kernel parameter (nor ``blockIdx``/``gridDim`` by name): the
    samples of the unknowns are joint (every parameter 1, then 37, then 1024), so
    ``n - m`` is 0 in all of them and proves nothing (SASS: two STS)."""
    t = access.node.text or b""
    return not access.params and b"blockIdx" not in t and b"gridDim" not in t


def _moves_with_rolled_loop(access: "Access") -> bool:
    """The address changes from one iteration to the next of a loop around it that
    nvcc keeps as a loop (not a fully unrolled counted loop): it names a variable the
    loop assigns, or one declared in it from such a variable. ptxas then sees an
    induction variable whose alignment it does not always carry: pcn's staging stores
    ``buf[l * 4 + f]`` in ``for (l = threadIdx.x; l < lend; l += blockDim.x)`` are two
    STS.64 in fixtures/CL201/staging.cu and one STS.128 in a look-alike without the
    outer loops; the main body of a loop unrolled by 4 STS.128 and its remainder two
    STS.64 (nvcc 13, sm_90). No single width holds there: the scalar figure stays."""
    body = access.kernel.body
    if body is None:
        return False
    around = loops_around(access.node, loop_nodes(body))
    if not around:
        return False
    copies = set()                      # counters of fully unrolled loops: copies
    rolled = []
    for lp in around:
        counted = counted_loop(access.int_values, lp)
        if counted is not None and counted.unrolled:
            copies.update(_declared_names(counted.decl))
        else:
            rolled.append(lp)
    if not rolled:
        return False
    used = {n.text.decode() for n in _walk(access.node) if n.type == "identifier"}
    for lp in rolled:
        if used & _assigned_in(lp, copies):
            return True
    return False


def _walk(node: Node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.named_children)


def _declared_names(decl: Node | None) -> set[str]:
    out = set()
    if decl is None:
        return out
    for d in decl.children_by_field_name("declarator"):
        while d is not None and d.type not in ("identifier", "field_identifier"):
            d = d.child_by_field_name("declarator")
        if d is not None:
            out.add(d.text.decode())
    return out


def _assigned_in(loop: Node, copies: set[str]) -> set[str]:
    """Names a loop assigns (its header's counter, ``x = ...``, ``x += ...``, ``++x``)
    and names declared in it from those, to a fixed point; ``copies`` (counters of
    unrolled loops inside it) left out."""
    moved: set[str] = set()
    decls: list[tuple[str, set[str]]] = []
    for n in _walk(loop):
        if n.type == "assignment_expression":
            left = _strip(n.child_by_field_name("left"))
            if left is not None and left.type == "identifier":
                moved.add(left.text.decode())
        elif n.type == "update_expression":
            arg = _strip(n.child_by_field_name("argument"))
            if arg is not None and arg.type == "identifier":
                moved.add(arg.text.decode())
        elif n.type == "init_declarator":
            d, v = n.child_by_field_name("declarator"), n.child_by_field_name("value")
            while d is not None and d.type not in ("identifier", "field_identifier"):
                d = d.child_by_field_name("declarator")
            if d is not None:
                reads = {x.text.decode() for x in _walk(v) if x.type == "identifier"} \
                    if v is not None else set()
                decls.append((d.text.decode(), reads))
    init = loop.child_by_field_name("initializer") if loop.type == "for_statement" else None
    if init is not None and init.type == "declaration":
        moved |= _declared_names(init)
    moved -= copies
    grew = True
    while grew:
        grew = False
        for name, reads in decls:
            if name not in moved and reads & moved:
                moved.add(name)
                grew = True
    return moved


def _global_pointers(body: Node, params: set[str], shared: set[str]) -> set[str]:
    """The kernel's pointer parameters and the locals every value of which is computed
    from them (``const float* row = in + t * n;``), never from a shared array or a
    call: global memory, as nvcc infers (SASS: a load through ``row``, or a store
    through ``o = out + t * n``, between the halves leaves one STS.64)."""
    values: dict[str, list[Node]] = {}
    for n in _walk(body):
        if n.type == "init_declarator":
            d, v = n.child_by_field_name("declarator"), n.child_by_field_name("value")
            while d is not None and d.type not in ("identifier", "field_identifier"):
                d = d.child_by_field_name("declarator")
            if d is not None and v is not None:
                values.setdefault(d.text.decode(), []).append(v)
        elif n.type == "assignment_expression":
            left = _strip(n.child_by_field_name("left"))
            op = n.child_by_field_name("operator")
            right = n.child_by_field_name("right")
            if left is not None and left.type == "identifier" and right is not None and \
                    op is not None and op.type == "=":
                values.setdefault(left.text.decode(), []).append(right)
    reads = {name: [({x.text.decode() for x in _walk(v) if x.type == "identifier"},
                     any(x.type == "call_expression" for x in _walk(v))) for v in vs]
             for name, vs in values.items() if name not in params}
    found = set(params)
    grew = True
    while grew:
        grew = False
        for name, rs in reads.items():
            if name not in found and all(ids & found and not ids & shared and not call
                                         for ids, call in rs):
                found.add(name)
                grew = True
    return found


def _strip(node: Node | None) -> Node | None:
    while node is not None and node.type in ("parenthesized_expression", "cast_expression"):
        node = node.child_by_field_name("value") if node.type == "cast_expression" \
            else node.named_child(0)
    return node


def _index_divisible(access: "Access", vw: int) -> bool:
    """The element index the access's subscripts compute is a multiple of ``vw`` bytes
    whatever the unknowns are: read from the expression, not from the samples."""
    node = access.node
    indices: list[Node] = []
    cast = False
    while node is not None and node.type == "subscript_expression":
        idx = node.child_by_field_name("indices")
        if idx is None or idx.named_child_count != 1:
            return False
        indices.append(idx.named_child(0))
        arg = node.child_by_field_name("argument")
        cast = cast or (arg is not None and _strip(arg) is not arg)
        node = _strip(arg)
    if node is None or node.type != "identifier" or node.text.decode() != access.array.name:
        return False                    # through a pointer: its offset is not read here
    indices.reverse()                   # outermost first
    dims = access.array.dims
    if cast:
        if len(indices) != 1:
            return False
        strides = [1]
    else:
        if len(indices) != len(dims) or (access.array.elem_size or 0) != access.width or \
                any(d is None for d in dims[1:]):
            return False
        strides = [1] * len(dims)
        for i in range(len(dims) - 2, -1, -1):
            strides[i] = strides[i + 1] * dims[i + 1]
    k = vw // access.width
    return all(_divisible(access, ix, k // gcd(st, k)) for ix, st in zip(indices, strides))


def _literal(node: Node) -> int | None:
    if node.type != "number_literal":
        return None
    t = node.text.decode().lower().rstrip("ul")
    try:
        return int(t, 0)
    except ValueError:
        return None


def _divisible(access: "Access", node: Node | None, k: int) -> bool:
    """``node``'s value is a multiple of ``k`` (a power of two) for every value of the
    unknowns it reads."""
    if k <= 1:
        return True
    if node is None:
        return False
    if node.type in ("parenthesized_expression", "cast_expression"):
        return _divisible(access, _strip(node), k)
    lit = _literal(node)
    if lit is not None:
        return lit % k == 0
    if node.type == "binary_expression":
        op = node.child_by_field_name("operator").type
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op in ("+", "-"):
            return _divisible(access, left, k) and _divisible(access, right, k)
        if op == "*":
            for a, b in ((left, right), (right, left)):
                c = _literal(_strip(a)) if a is not None else None
                if c is not None:
                    return _divisible(access, b, k // gcd(c, k))
            return _divisible(access, left, k) or _divisible(access, right, k)
        if op == "<<":
            c = _literal(_strip(right)) if right is not None else None
            if c is not None and c >= 0:
                return _divisible(access, left, max(1, k >> c))
            return False
        if op == "&":
            return _divisible(access, left, k) or _divisible(access, right, k)
    # a name or anything else: its values, when no unknown moves them
    if not _reads_no_unknown(access):
        return False
    vals = access.int_values(node) if access.int_values is not None else None
    if not vals:
        return False
    n = len(vals) // N_SAMPLES
    if any(vals[s * n:(s + 1) * n] != vals[:n] for s in range(1, N_SAMPLES)):
        return False
    return all(isinstance(v, int) and v % k == 0 for v in vals)


_MEMORY = frozenset({"subscript_expression", "pointer_expression", "field_expression",
                     "call_expression", "gnu_asm_expression", "asm_statement"})


def _nothing_between(ctx: "UnitContext", blocks: _Blocks, members: list["Access"],
                     anchor: "Access") -> bool:
    """No statement from the first member's to the last one's may touch the array
    besides the members: see the module docstring."""
    first = min(members, key=lambda a: a.node.start_byte)
    last = max(members, key=lambda a: a.node.start_byte)
    sa, sb = blocks.statement(first.node), blocks.statement(last.node)
    if sa is None or sb is None or sa.parent is None:
        return False
    stmts, inside = [], False
    for s in sa.parent.named_children:
        if s.id == sa.id:
            inside = True
        if inside:
            stmts.append(s)
        if s.id == sb.id:
            break
    fn = anchor.kernel
    params = {p.name for p in fn.params if p.is_pointer} \
        if anchor.reached is None and "__global__" in fn.spaces else set()
    arrays = {a.name: a for a in ctx.model.arrays
              if a.function is None or a.function is fn}
    if params and fn.body is not None:
        params = _global_pointers(fn.body, params,
                                  {n for n, a in arrays.items() if a.shared})
    own = anchor.array.name
    unit_fns = {f.name.split("::")[-1] for f in ctx.model.functions if f.name}
    skip = set()
    for m in members:                   # a member's own subscript chain
        n = m.node
        while n is not None and n.type == "subscript_expression":
            skip.add(n.id)
            n = _strip(n.child_by_field_name("argument"))

    def safe_root(node: Node | None) -> bool:
        node = _strip(node)
        while node is not None and node.type == "subscript_expression":
            node = _strip(node.child_by_field_name("argument"))
        if node is None or node.type != "identifier":
            return False
        name = node.text.decode()
        if name == own:
            return False
        if name in params:
            return True                 # a kernel's pointer parameter: global memory
        return name in arrays           # another array: ptxas tells arrays apart

    for s in stmts:
        if b"asm" in (s.text or b""):
            return False
        stack = [s]
        while stack:
            n = stack.pop()
            stack.extend(n.named_children)
            if n.type not in _MEMORY or n.id in skip:
                continue
            if n.type in ("gnu_asm_expression", "asm_statement"):
                return False
            if n.type == "subscript_expression":
                if not safe_root(n.child_by_field_name("argument")):
                    return False
            elif n.type == "pointer_expression":
                op = n.child_by_field_name("operator")
                if op is not None and op.type == "*" and \
                        not safe_root(n.child_by_field_name("argument")):
                    return False
            elif n.type == "field_expression":
                op = n.child_by_field_name("operator")
                if op is not None and op.type == "->" and \
                        not safe_root(n.child_by_field_name("argument")):
                    return False
            elif n.type == "call_expression":
                f = n.child_by_field_name("function")
                name = (f.text or b"").decode().split("::")[-1].split("<")[0].strip() \
                    if f is not None else ""
                if name.startswith(("atomic", "__st")) or name in unit_fns:
                    return False
    return True
