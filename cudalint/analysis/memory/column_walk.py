"""Column walks whose sectors other threads of the launch use (CL201's message, issue 20,
sheet-newcorpus5 W5 and sheet-newcorpus4 #29-#32).

A warp whose lanes walk down a column of a row-major array (``a[i * n + j]``, ``i`` from
threadIdx.x) touches a sector per lane and uses 4 bytes of each; but when the index that
moves the address by one element is the warp's or the block's (``j`` from threadIdx.y,
``c = blockIdx.y``), the rest of each sector is read by the neighbouring warps of the block
or by the neighbouring blocks. "Bytes no access of the kernel uses" is then false; what is
true depends on who the neighbours are. Measured on an H100 (fixtures/CL201/column_walk.json,
tools/gputruth/column_walk.py, 256 MB of floats):

- the other warps of the block (ptypy's frame sum, block 32x32): DRAM and L2 move the
  useful bytes (the block's warps run on one SM and meet in L1), but each request costs 32
  L1 sectors instead of 4: 2.2-2.8x the time of the layout with the lanes on ``j``;
- other blocks (roiaware's backward, the channel in blockIdx.y): the blocks that read the
  neighbours run far apart, and DRAM moved 8-16x the useful bytes: 3.4-8.7x the time.

``neighbour_index`` finds that index: a variable declared in the kernel whose value is the
same in every lane of a warp, reads threadIdx.y/z or blockIdx.*, steps by one from one
warp (or block) to the next, and moves the access's address by exactly one element when
held at two consecutive values (``Access.reevaluate``). ``filling_shifts`` gives, for the
wider case where several such indices fill each sector together with steps of any size
(the block's rows on 16 bytes, the next block row on the next 16: sheet-newcorpus8 W1), the
byte shifts their values make; ``traffic.filled_by_neighbours`` checks the fill.
``undecided_axes`` names the thread and block axes an address reads some other way (a
device function's argument, ``idz / 3``), where neither check can say whether the bytes
are used.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cudalint.analysis.memory.figures import SECTOR
from cudalint.analysis.memory.kernel_lanes import _declared
from cudalint.analysis.memory.lane_values import N_SAMPLES, WARP

if TYPE_CHECKING:
    from tree_sitter import Node

    from cudalint.analysis.memory.figures import Access

_IDENT = re.compile(rb"[A-Za-z_][A-Za-z_0-9]*")
_AXIS = re.compile(r"\b(threadIdx|blockIdx)\s*\.\s*([xyz])\b")
# declarations tried per access, nearest to the address first
MAX_CANDIDATES = 12


@dataclass(frozen=True)
class Neighbours:
    """The index whose next value reads the next element: ``name`` and the thread or block
    axis it comes from (``threadIdx.y``, ``blockIdx.y``); ``more``: further (name, axis)
    pairs whose values fill the sectors together with it (``filling_shifts``)."""
    name: str
    axis: str
    more: tuple = ()

    @property
    def in_block(self) -> bool:
        return all(a.startswith("threadIdx") for a in self.axes)

    @property
    def axes(self) -> list[str]:
        return [self.axis, *(a for _, a in self.more)]


def neighbour_index(access: "Access", samples: set[int] | None = None) -> Neighbours | None:
    """The warp- or block-uniform index that moves ``access`` to the next element, or
    None (see the module docstring). ``samples``: the samples of the unknowns the figure
    holds for (lanes must be more than one element apart there)."""
    fn = access.kernel
    if fn.body is None or access.reevaluate is None or access.int_values is None:
        return None
    if not _lanes_apart(access, samples):
        return None
    decls = _declarations(fn)
    for name in _names_nearest_first(access.node, decls, _bumps(fn)):
        decl, value = decls[name]
        axis = _axis(value, decls)
        if axis is None:
            continue
        got = access.int_values(value)
        if not got or any(len(set(got[g:g + WARP])) != 1 for g in range(0, len(got), WARP)):
            continue                    # differs within a warp: the lanes' own index
        if axis.startswith("threadIdx") and not (
                _next_warp_next_value(access, got) and _block_fills_sector(access, axis)):
            continue
        if axis.startswith("blockIdx") and not _plain(value, decls):
            continue
        if _moves_one_element(access, decl, got[0]):
            return Neighbours(name, axis)
    return None


def _lanes_apart(access: "Access", samples: set[int] | None) -> bool:
    nw = max(1, len(access.groups) // N_SAMPLES)
    strides = set()
    for g, row in enumerate(access.groups):
        if samples is not None and g // nw not in samples:
            continue
        live = [x for x in row if x is not None]
        strides.update(abs(b - a) for a, b in zip(live, live[1:]))
    return bool(strides) and min(strides) > access.width


def _declarations(fn) -> dict[str, tuple["Node", "Node"]]:
    """Name -> (declarator, initializer) for the kernel's scalar declarations with an
    initializer; a name declared twice is left out (which one a use sees is scoping).
    KernelLanes holds a value by its declarator, so one name of ``int t = blockIdx.x, e
    = threadIdx.x;`` moves alone."""
    out: dict[str, tuple] = {}
    seen: set[str] = set()
    for decl in fn.nodes_in("declaration"):
        for name, declarator, depth, value in _declared(decl):
            if name in seen:
                out.pop(name, None)
            elif depth == 0 and value is not None:
                out[name] = (declarator, value)
            seen.add(name)
    return out


def _names_nearest_first(node: "Node", decls: dict, bumps: dict) -> list[str]:
    """The declared names the address reads, directly first, then through initializers
    and the compound assignments of the names it reads."""
    order: list[str] = []
    todo = [m.decode() for m in _IDENT.findall(node.text or b"")]
    seen: set[str] = set()
    while todo and len(order) < MAX_CANDIDATES:
        nxt = []
        for name in todo:
            if name in seen:
                continue
            seen.add(name)
            if name in decls:
                order.append(name)
                nxt.extend(m.decode() for m in _IDENT.findall(decls[name][1].text or b""))
            # a pointer moved in place (``data += ty;``): the names it is moved by
            nxt.extend(m.decode() for right in bumps.get(name, ())
                       for m in _IDENT.findall(right.text or b""))
        todo = nxt
    return order[:MAX_CANDIDATES]


def _bumps(fn) -> dict[str, list["Node"]]:
    """Name -> the right sides of its compound assignments (``data += ty``)."""
    out: dict[str, list] = {}
    for ident in fn.nodes_in("assigned"):
        w = ident.parent
        if w is None or w.type != "assignment_expression":
            continue
        op = w.child_by_field_name("operator")
        right = w.child_by_field_name("right")
        if op is not None and op.type in ("+=", "-=") and right is not None:
            out.setdefault((ident.text or b"").decode(), []).append(right)
    return out


def _axis(value: "Node", decls: dict) -> str | None:
    """The thread or block axis an initializer reads (through other declarations),
    a thread axis before a block axis; None when it reads threadIdx.x, or none."""
    found: list[str] = []
    todo, seen = [value], set()
    while todo and len(seen) < 16:
        cur = todo.pop()
        src = (cur.text or b"").decode("utf-8", "replace")
        found.extend(f"{m[1]}.{m[2]}" for m in _AXIS.finditer(src))
        for m in _IDENT.findall(cur.text or b""):
            name = m.decode()
            if name in decls and name not in seen:
                seen.add(name)
                todo.append(decls[name][1])
    if not found or "threadIdx.x" in found:
        return None
    threads = [a for a in found if a.startswith("threadIdx")]
    return (threads or found)[0]


def _plain(value: "Node", decls: dict) -> bool:
    """The initializer is a block index itself, or a name whose initializer is
    (``int c = blockIdx.y;``): consecutive blocks, consecutive values."""
    for _ in range(4):
        src = (value.text or b"").decode("utf-8", "replace").strip()
        if _AXIS.fullmatch(src):
            return True
        if src in decls:
            value = decls[src][1]
            continue
        return False
    return False


def _next_warp_next_value(access: "Access", got: tuple) -> bool:
    """The next warp of the block (group 1 of each sample) holds the next value."""
    nw = max(1, len(access.groups) // N_SAMPLES)
    if nw < 2 or len(got) < nw * WARP:
        return False
    return any(got[(s * nw + 1) * WARP] - got[s * nw * WARP] == 1
               for s in range(len(got) // (nw * WARP)))


def _block_fills_sector(access: "Access", axis: str) -> bool:
    """The block has enough threads along ``axis`` to read a whole sector's elements
    side by side (8 rows of 4-byte elements): with ``int c = threadIdx.y`` in a block
    128x4, 16 of each 32 bytes are nobody's."""
    dim = access.block.dims["xyz".index(axis[-1])]
    return dim * access.width >= SECTOR


def _moves_one_element(access: "Access", decl: "Node", value: int) -> bool:
    a0 = access.reevaluate({decl.id: value})
    a1 = access.reevaluate({decl.id: value + 1})
    if a0 is None or a1 is None or len(a0.groups) != len(a1.groups):
        return False
    steps = {y - x for r0, r1 in zip(a0.groups, a1.groups) for x, y in zip(r0, r1)
             if x is not None and y is not None}
    return steps == {access.width}


# values held per index when reading which bytes other warps or blocks use
MAX_SHIFTS = 64


def filling_shifts(access: "Access") -> list[tuple[str, str, list[int]]]:
    """The indices other warps or blocks hold other values of, with the byte shifts of
    the access those values make: (name, axis, shifts), shift 0 this warp's own. An index
    qualifies when it is threadIdx.y/z or blockIdx.* itself (or a name for one), the same
    in every lane of each warp, and each value it takes moves every active lane of the
    access by one constant step per unit, the same lanes staying active (a guard on the
    index would leave the other values' bytes unread). A thread axis takes the values the
    block has along it; a block axis the neighbouring blocks' on both sides (the warp
    stands for every block row; how many rows the grid has is not known: a grid of one
    row along it would have none). Unlike ``neighbour_index``, the step need
    not be one element, nor the next warp hold the next value: deepmd's
    ``grad_net[idx * nnei * 4 + idy * 4 + idw]`` (``idw`` = threadIdx.y of a 128x4 block,
    ``idy`` = blockIdx.y) has the block's four rows on 16 bytes and the next block row on
    the next 16 (sheet-newcorpus8 W1)."""
    fn = access.kernel
    if fn.body is None or access.reevaluate is None or access.int_values is None:
        return []
    decls = _declarations(fn)
    out = []
    for name in _names_nearest_first(access.node, decls, _bumps(fn)):
        decl, value = decls[name]
        axis = _axis(value, decls)
        if axis is None or not _plain(value, decls):
            continue
        got = access.int_values(value)
        if not got or any(len(set(got[g:g + WARP])) != 1 for g in range(0, len(got), WARP)):
            continue
        v0 = got[0]
        base = access.reevaluate({decl.id: v0})
        nxt = access.reevaluate({decl.id: v0 + 1})
        if base is None or nxt is None or len(base.groups) != len(nxt.groups):
            continue
        steps = {y - x for r0, r1 in zip(base.groups, nxt.groups) for x, y in zip(r0, r1)
                 if x is not None and y is not None}
        if len(steps) != 1 or not next(iter(steps)):
            continue
        (step,) = steps
        if axis.startswith("threadIdx"):
            values = list(range(access.block.dims["xyz".index(axis[-1])]))
        else:
            # the warp stands for any block row: those before it too (a record that
            # starts mid-sector has its sector's first bytes read by the rows before)
            k = min(MAX_SHIFTS // 2 - 1, 2 * SECTOR // abs(step) + 1)
            values = [v0 + i for i in range(-k, k + 1)]
        if len(values) > MAX_SHIFTS or not _linear_in(access, decl, base, v0, step, values):
            continue
        out.append((name, axis, [(v - v0) * step for v in values]))
    return out


def _linear_in(access: "Access", decl: "Node", base: "Access", v0: int, step: int,
               values: list[int]) -> bool:
    """Held at each of ``values``, the access moves every lane by (v - v0) * step and
    keeps the same lanes active."""
    for v in values:
        if v == v0:
            continue
        a = access.reevaluate({decl.id: v})
        if a is None or len(a.groups) != len(base.groups):
            return False
        d = (v - v0) * step
        for r0, r1 in zip(base.groups, a.groups):
            for x, y in zip(r0, r1):
                if (x is None) != (y is None) or (x is not None and y - x != d):
                    return False
    return True


_OTHER_AXIS = re.compile(rb"\b(threadIdx|blockIdx)\s*\.\s*([yz])\b")
# a block's global row along y or z: blockIdx.y * blockDim.y + threadIdx.y, either order
_GLOBAL_ROW = [re.compile(
    rb"(?:%(p)s\s*\+\s*%(t)s|%(t)s\s*\+\s*%(p)s)(?!\s*[*/%%\[(.])" % {
        b"p": rb"(?:blockIdx\s*\.\s*%(a)s\s*\*\s*blockDim\s*\.\s*%(a)s|"
              rb"blockDim\s*\.\s*%(a)s\s*\*\s*blockIdx\s*\.\s*%(a)s)" % {b"a": ax},
        b"t": rb"threadIdx\s*\.\s*" + ax}) for ax in (b"y", b"z")]


def _rows_as_threads(data: bytes) -> bytes:
    """``blockIdx.y * blockDim.y + threadIdx.y`` read as ``threadIdx.y`` where nothing
    multiplies, divides or indexes it from the left."""
    for ax, pattern in zip((b"y", b"z"), _GLOBAL_ROW):
        def keep(m, ax=ax):
            before = data[:m.start()].rstrip()[-1:]
            return m.group() if before in (b"*", b"/", b"%") else b"threadIdx." + ax
        data = pattern.sub(keep, data)
    return data


def undecided_axes(access: "Access") -> set[tuple[str, str]]:
    """The (threadIdx|blockIdx, y|z) the address reads in a way ``filling_shifts`` does
    not weigh: not through a name it moves one value at a time (``i = blockIdx.y *
    blockDim.y + threadIdx.y``, ``idz / 3``, ``ty & 1``), or, for an access in a device
    function, through the arguments of the kernel's call (an unknown call: blockIdx.y).
    Other warps or blocks may then use the bytes this warp leaves (sheet-newcorpus8 #6,
    #11, #24-#26, #64; ``traffic.other_warps_may_fill`` decides). Followed through every
    declaration and assignment of the names read, whatever their scope. A block's global
    row, ``blockIdx.y * blockDim.y + threadIdx.y``, counts as the thread axis: the rows of
    the next blocks lie beyond those of the block's own warps (a pixel's unwritten alpha
    byte, cuda-samples Mandelbrot)."""
    axes: set[tuple[str, str]] = set()
    if access.reached is not None:
        call, root = access.reached.call, access.reached.kernel
        if call is None or root is None:
            return {("blockIdx", "y")}
        axes |= _reads_axes(root, call.text or b"", set())
    decided = {name for name, _, _ in filling_shifts(access)}
    return axes | _reads_axes(access.kernel, access.node.text or b"", decided)


def _reads_axes(fn, data: bytes, decided: set[str]) -> set[tuple[str, str]]:
    """The (threadIdx|blockIdx, y|z) ``data`` reads, through ``fn``'s declarations and
    assignments, not through the names of ``decided``."""
    values: dict[str, list[bytes]] = {}
    if fn.body is not None:
        for decl in fn.nodes_in("declaration"):
            for name, _, _, value in _declared(decl):
                if value is not None:
                    values.setdefault(name, []).append(value.text or b"")
        for ident in fn.nodes_in("assigned"):
            w = ident.parent
            right = w.child_by_field_name("right") if w is not None and \
                w.type == "assignment_expression" else None
            if right is not None:
                values.setdefault((ident.text or b"").decode(), []).append(right.text or b"")
    found: set[tuple[str, str]] = set()
    todo, seen = [data], set(decided)
    while todo:
        cur = _rows_as_threads(todo.pop())
        found.update((m[1].decode(), m[2].decode()) for m in _OTHER_AXIS.finditer(cur))
        for m in _IDENT.findall(cur):
            name = m.decode()
            if name not in seen:
                seen.add(name)
                todo.extend(values.get(name, ()))
    return found
