"""Wasted traffic of an uncoalesced global access, over its whole kernel (CL201's default).

A warp whose lanes read 12-byte records field by field (``x = p[3*i]; y = p[3*i+1];
z = p[3*i+2];``) touches 12 sectors per request at each of the three loads, yet every
byte those sectors bring is used by one of the loads: the first load's sectors stay in
L1 for the other two, and DRAM moves exactly the useful bytes. Measured on an H100
(fixtures/CL201/traffic.json): such code runs as fast as its structure-of-arrays form.
What costs is

- bytes fetched that no access of the kernel uses: one field of a record, a column walk
  (``fetched_and_used``: the sectors a warp fetches for an access and the bytes of them
  that the access and its kind through the same pointer use, at every value of the
  counter of a short counted loop around them: ``loops.counter_walk``);
- records read whole but again on each iteration of a loop (a farthest-point-sampling
  loop over L2-resident points): every pass pays the scattered sectors again between L2
  and the SM (``rereading_loop``).

Bytes the warp leaves but other warps of the block or other blocks use are no waste
(``filled_by_neighbours``: a column walk, CL201 says so); where they may, through an
index that check cannot weigh, no waste is claimed either (``other_warps_may_fill``).
Both are computed from the lane engine's addresses (accesses through one base pointer at
a constant distance from each other, in every column) and from the kernel's syntax (the
loops around an access and the variables its address is computed from).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.analysis.memory.column_walk import Neighbours, filling_shifts, undecided_axes
from cudalint.analysis.memory.figures import SECTOR, min_sectors_of_points, root_kernel
from cudalint.analysis.memory.kernel_lanes import _declared
from cudalint.analysis.memory.lane_values import N_SAMPLES, WARP
from cudalint.analysis.memory.loops import counted_loop, counter_walk, loop_nodes, loops_around
from cudalint.analysis.memory.siblings import constant_distance
from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.analysis.memory.figures import Access
    from cudalint.model.kernels import Function

_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z_0-9]*")
# stores the compiler cannot move a load across unless the load's pointer is restrict
_MEMORY_WRITE_TARGETS = ("subscript_expression", "pointer_expression", "field_expression")
_ATOMIC = re.compile(rb"\batomic[A-Z][A-Za-z]*\s*\(")


def fetched_and_used(access: "Access", accesses: list["Access"],
                     samples: set[int] | None = None) -> tuple[int, int]:
    """(bytes a warp fetches, bytes of them the kernel uses) for ``access`` together with
    every access through the same base pointer at a constant distance from it (in every
    column: the same records, whoever reads them) in the same direction (loads for a
    load, stores for a store). For the first warp of every sample, at the base
    alignment that fetches least; the pair of the sample that wastes least.
    ``samples``: only these samples of the unknowns (a figure that holds for large
    values of a parameter)."""
    joined = _joined(access, accesses)
    best: tuple[int, int] | None = None
    nw = len(access.groups) // N_SAMPLES
    for g in range(len(access.groups)):
        if samples is not None and g // nw not in samples:
            continue
        if g % nw:
            continue                    # the first warp of each sample is enough
        points: set[int] = set()
        spans = []
        for a in joined:
            for off in a.groups[g]:
                if off is not None:
                    points.add(off)
                    points.add(off + a.width - 1)
                    spans.append((off, off + a.width))
        if not spans:
            continue
        fetched = SECTOR * min_sectors_of_points(points, SECTOR)
        used = _union_size(spans)
        if best is None or fetched - used < best[0] - best[1]:
            best = (fetched, used)
            if fetched - used < SECTOR:
                break                   # not one sector wasted: the answer already
    if best is not None and best[0] > best[1] and (
            _other_rows_fill(access, joined) or _copied_whole(access)):
        return (best[0], best[0])
    return best if best is not None else (0, 0)


def _joined(access: "Access", accesses: list["Access"]) -> list["Access"]:
    """``access`` and the accesses ``fetched_and_used`` counts with it, each at every
    value of the short counted loops around it (``loops.counter_walk``)."""
    walked = counter_walk(access)
    joined = list(walked)
    for other in accesses:
        if other is access or root_kernel(other) is not root_kernel(access) or \
                other.space != access.space or other.region != access.region or \
                other.width > SECTOR:
            continue
        if not ((access.is_load and other.is_load) or (access.is_store and other.is_store)):
            continue
        if constant_distance(access, other) is not None:
            joined.extend(counter_walk(other))
            continue
        # a field read across a short counted loop: at the same counter values the
        # records are the same ones (``p[t * 4 + j]``, j = 1..3, and ``p[t * 4]``)
        copies = counter_walk(other)
        if any(constant_distance(w, c) is not None for w in walked for c in copies):
            joined.extend(copies)
    return joined


# combinations of other warps' and blocks' shifts tried at most
MAX_COMBINED_SHIFTS = 4096
MAX_SHIFTED_SPANS = 1 << 16      # distinct spans x shifts one sample's fill test weighs


def filled_by_neighbours(access: "Access", accesses: list["Access"],
                         samples: set[int] | None = None) -> Neighbours | None:
    """The indices whose other values -- other warps of the block (threadIdx.y/z), other
    blocks (blockIdx.*) -- use every byte of the sectors a warp fetches for ``access``
    that the warp itself does not (with the accesses ``fetched_and_used`` joins: the
    thread's own short loops, the same records through the same pointer), in every
    sample of ``samples``, less than a sector left over; None when they do not. One
    index alone when one suffices, else all of them together (sheet-newcorpus8 W1:
    ``idy * 4 + idw``; W2: ``idy * 3 + d``, d = 0..2 in the thread's loop)."""
    # the index with the smallest step first: it names the next element
    candidates = sorted(filling_shifts(access),
                        key=lambda c: min((abs(d) for d in c[2] if d), default=0))
    if not candidates:
        return None
    joined = _joined(access, accesses)
    tries = [[c] for c in candidates]
    if len(candidates) > 1:
        tries.append(candidates)
    for chosen in tries:
        shifts = {0}
        for _, _, more in chosen:
            shifts = {a + b for a in shifts for b in more}
            if len(shifts) > MAX_COMBINED_SHIFTS:
                break
        if len(shifts) > MAX_COMBINED_SHIFTS:
            continue
        if _shifts_fill(access, joined, shifts, samples):
            (name, axis, _), rest = chosen[0], chosen[1:]
            return Neighbours(name, axis, tuple((n, a) for n, a, _ in rest))
    return None


def _shifts_fill(access: "Access", joined: list["Access"], shifts: set[int],
                 samples: set[int] | None) -> bool:
    """Every sector the first warp of each sample fetches (at the base's own alignment)
    is used by the warp's spans moved by ``shifts``, all but less than a sector."""
    nw = len(access.groups) // N_SAMPLES
    seen = False
    for g in range(0, len(access.groups), max(nw, 1)):
        if samples is not None and g // max(nw, 1) not in samples:
            continue
        spans = {(off, off + a.width) for a in joined for off in a.groups[g]
                 if off is not None}
        if not spans:
            continue
        if len(spans) * len(shifts) > MAX_SHIFTED_SPANS or \
                any(hi - lo > SECTOR * 64 for lo, hi in spans):
            # (fuzz seed 41: 4,704 spans by 4,096 shifts, byte by byte: a hang) no
            # answer at that size, so no column walk the rule could name
            return False
        seen = True
        fetched = {b // SECTOR for lo, hi in spans for b in (lo, hi - 1)}
        want = {s * SECTOR + i for s in fetched for i in range(SECTOR)}
        covered = {b + d for lo, hi in spans for d in shifts for b in range(lo, hi)
                   if (b + d) // SECTOR in fetched}
        if len(want - covered) >= SECTOR:
            return False
    return seen


def other_warps_may_fill(access: "Access", accesses: list["Access"],
                         samples: set[int] | None = None) -> bool:
    """Other warps of the block or other blocks may use bytes of the sectors this warp
    fetches through an index ``filled_by_neighbours`` does not weigh
    (``column_walk.undecided_axes``): "bytes no access uses" is then not known. A block
    axis always may (the lane values are block 0's). A thread axis may where the block has
    more than one warp and either a counted loop around the access moves the address by
    less than the lanes are apart (each thread walks its group of a row: gpu4pyscf
    cart2sph's loop over ``i``, ``i_bas`` from threadIdx.y) or one of the block's other
    warps the lane values hold touches a sector this warp fetches (the transpose of a
    16x16 block). A flat index ``(blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x +
    threadIdx.x`` gives the next warp the next records, none of this warp's bytes:
    decided."""
    axes = undecided_axes(access)
    if any(kind == "blockIdx" for kind, _ in axes):
        return True
    bx, by, bz = access.block.dims
    if not any(by > 1 if a == "y" else bz > 1 for _, a in axes) or bx * by * bz <= WARP:
        return False                    # no rows, or the whole block is one warp
    if _loop_walks_record(access, samples):
        return True
    joined = _joined(access, accesses)
    nw = len(access.groups) // N_SAMPLES
    if nw < 2:
        return True                     # no other warp evaluated: not known
    for g0 in range(0, len(access.groups), nw):
        if samples is not None and g0 // nw not in samples:
            continue
        own = {b // SECTOR for a in joined for off in a.groups[g0] if off is not None
               for b in (off, off + a.width - 1)}
        for g in range(g0 + 1, g0 + nw):
            if any(b // SECTOR in own for a in joined for off in a.groups[g]
                   if off is not None for b in (off, off + a.width - 1)):
                return True
    return False


def _loop_walks_record(access: "Access", samples: set[int] | None) -> bool:
    """A counted loop around the access moves each lane's address by less than the lanes
    are apart (within the lane's record) in the first warp of a sample, in a way
    ``counter_walk`` may not have walked (a trip count it cannot read): the thread's own
    pass covers more of the record."""
    fn = access.kernel
    if fn.body is None or access.reevaluate is None:
        return False
    nw = max(1, len(access.groups) // N_SAMPLES)
    for loop in loops_around(access.node, loop_nodes(fn.body)):
        counted = counted_loop(access.int_values, loop, open_stop=True)
        if counted is None:
            continue
        a0 = access.reevaluate({counted.decl.id: counted.start})
        a1 = access.reevaluate({counted.decl.id: counted.start + 1})
        if a0 is None or a1 is None or len(a0.groups) != len(a1.groups):
            continue
        for g in range(0, len(a0.groups), nw):
            if samples is not None and g // nw not in samples:
                continue
            live = sorted({x for x in a0.groups[g] if x is not None})
            apart = min((b - a for a, b in zip(live, live[1:])), default=0)
            steps = {abs(y - x) for x, y in zip(a0.groups[g], a1.groups[g])
                     if x is not None and y is not None}
            if steps and 0 < max(steps) < apart:
                return True
    return False


_COPY = re.compile(rb"\b(?:memcpy|memset|memmove)\s*\(")


def _copied_whole(access: "Access") -> bool:
    """The kernel hands the pointer to ``memcpy``/``memset``/``memmove`` too: the rest of
    each record may be written or read there (mmcv roipoint_pool3d writes 3 fields of a
    row and ``memcpy``s the others), which the lane engine does not see."""
    body = access.kernel.body
    data = body.text if body is not None else b""
    if not _COPY.search(data):
        return False
    name = re.escape(access.region.encode())
    return any(re.search(rb"\b" + name + rb"\b", data[m.end():data.find(b";", m.end())])
               for m in _COPY.finditer(data))


def _other_rows_fill(access: "Access", joined: list["Access"]) -> bool:
    """The address moves with threadIdx.y, which a warp does not vary (block 128x4: warp
    0 is row 0), and the block's rows together cover each lane's whole record: what the
    first warp leaves of it the other rows read or write (mmcv border_align's
    ``output[index * 4 + threadIdx.y]``, 4 rows, 4 fields). No waste is claimed then;
    rows that leave bytes of the record (``out[index * 16 + threadIdx.y]``) keep it."""
    bx, by, bz = access.block.dims
    sx = access.x_stride_bytes()
    if by < 2 or bz != 1 or bx % WARP or not sx or len(access.groups) < 2:
        return False
    nwarps = -(-bx * by // WARP)
    warps = sorted({0, 1, nwarps - 1})
    k = len(warps) - 1                      # the block's last warp: group k of sample 0
    tid = warps[k] * WARP
    dx, dy = tid % bx, (tid // bx) % by
    if dy == 0:
        return False
    steps = {b - a - dx * sx for a, b in zip(access.groups[0], access.groups[k])
             if a is not None and b is not None}
    if len(steps) != 1:
        return False
    (step,) = steps
    sy = step // dy
    if step % dy or sy == 0:
        return False
    # lane 0's bytes (this access and those joined with it), shifted row by row
    own = [(a.groups[0][0], a.width) for a in joined
           if a.groups and a.groups[0] and a.groups[0][0] is not None]
    if not own:
        return False
    shifted = [(off + row * sy, width) for off, width in own for row in range(by)]
    base = min(off for off, _ in shifted)
    covered = {off - base + b for off, width in shifted for b in range(width)}
    return all(b in covered for b in range(abs(sx)))


def _union_size(spans: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for lo, hi in sorted(spans):
        if end is None or lo >= end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total


def rereading_loop(access: "Access") -> Node | None:
    """A loop around ``access`` whose iterations touch the same records again: the
    address does not move with the loop's iterations, and either a loop nested inside it
    walks the records (the records are read again on the next pass), or the loop body
    stores through memory the load's pointer may alias (the compiler cannot keep the
    loaded value in a register)."""
    fn = access.kernel
    body = fn.body
    if body is None:
        return None
    loops = _enclosing_loops(access.node, body)
    if not loops:
        return None
    deps = _dependencies(fn, access.node)
    moving = [_moves(fn, loop, loops[:k], deps) for k, loop in enumerate(loops)]
    for k, loop in enumerate(loops):
        if moving[k]:
            continue
        if any(moving[:k]):
            return loop                 # an inner loop walks the records, this repeats it
        if access.is_load and not _restrict(fn, access.region) and \
                _stores_memory(fn, loop):
            return loop
    return None


def _enclosing_loops(node: Node, body: Node) -> list[Node]:
    """Loops around ``node`` inside ``body``, innermost first."""
    out = []
    cur = node.parent
    while cur is not None and cur.id != body.id:
        if cur.type in _LOOPS:
            out.append(cur)
        cur = cur.parent
    return out


def _dependencies(fn: "Function", node: Node) -> set[bytes]:
    """The names an address is computed from: the identifiers of the access, and those
    of every initializer or assignment of those names in the kernel, transitively (names
    are not scoped: more names only make the loops move the address)."""
    sources: dict[bytes, set[bytes]] = {}
    for decl in fn.nodes_in("declaration"):
        for d in decl.children_by_field_name("declarator"):
            if d.type != "init_declarator":
                continue
            name = d.child_by_field_name("declarator")
            value = d.child_by_field_name("value")
            while name is not None and name.type != "identifier":
                name = name.child_by_field_name("declarator")
            if name is not None and value is not None:
                sources.setdefault(name.text, set()).update(_IDENT.findall(value.text))
    for kind in ("assigned",):
        for ident in fn.nodes_in(kind):
            w = ident.parent
            right = w.child_by_field_name("right") if w is not None else None
            if right is not None:
                sources.setdefault(ident.text, set()).update(_IDENT.findall(right.text))
    deps: set[bytes] = set()
    todo = list(_IDENT.findall(node.text))
    while todo:
        name = todo.pop()
        if name in deps:
            continue
        deps.add(name)
        todo.extend(sources.get(name, ()))
    return deps


def _moves(fn: "Function", loop: Node, inner: list[Node], deps: set[bytes]) -> bool:
    """Whether an iteration of ``loop`` changes a name the address depends on: a write
    inside the loop that is not inside one of the ``inner`` loops (those around the
    access run whole within one iteration and start again on the next)."""
    lo, hi = loop.start_byte, loop.end_byte
    for kind in ("assigned", "updated", "address_taken"):
        for ident in fn.nodes_in(kind):
            if not lo <= ident.start_byte < hi or ident.text not in deps:
                continue
            if any(m.start_byte <= ident.start_byte < m.end_byte for m in inner):
                continue
            return True
    return False


def _restrict(fn: "Function", region: str) -> bool:
    p = fn.param(region)
    return p is not None and p.restrict


def _stores_memory(fn: "Function", loop: Node) -> bool:
    """The loop writes through a pointer parameter or a local pointer (or calls an
    atomic): memory a load through a pointer parameter may alias. Stores to local or
    ``__shared__`` arrays are to objects of their own."""
    if _ATOMIC.search(loop.text):
        return True
    pointers = {name for decl in fn.nodes_in("declaration")
                for name, _, depth, _ in _declared(decl) if depth == 1}
    stack = [loop]
    while stack:
        cur = stack.pop()
        if cur.type in ("assignment_expression", "update_expression"):
            target = cur.child_by_field_name("left") or cur.child_by_field_name("argument")
            while target is not None and target.type == "parenthesized_expression" and \
                    target.named_child_count == 1:
                target = target.named_children[0]
            if target is not None and target.type in _MEMORY_WRITE_TARGETS and \
                    (target.type != "pointer_expression" or
                     text(target.child_by_field_name("operator")) == "*"):
                base = _base_name(target)
                p = fn.param(base) if base else None
                if base is None or base in pointers or (p is not None and p.is_pointer):
                    return True
        stack.extend(cur.named_children)
    return False


def _base_name(node: Node) -> str | None:
    """The identifier an lvalue is reached through (``p`` in ``p[i].x``, ``*(p + 1)``)."""
    cur: Node | None = node
    while cur is not None and cur.type != "identifier":
        if cur.type in ("subscript_expression", "pointer_expression", "field_expression"):
            cur = cur.child_by_field_name("argument")
        elif cur.type == "parenthesized_expression" and cur.named_child_count == 1:
            cur = cur.named_children[0]
        elif cur.type == "binary_expression":
            cur = cur.child_by_field_name("left")
        else:
            return None
    return text(cur) if cur is not None else None
