"""Loads that issue no memory request of their own (CL201): a second load of the elements an
earlier load of the kernel already read, on every path to it, with nothing between that may
write memory, is served from the register the compiler keeps: one LDG in SASS for both
(roiaware's ``if (argmax[0] == -1) return; atomicAdd(grad_in + argmax[0] * C + c, ...)``,
nvcc 13 sm_90). A finding for it would count a request the GPU never makes. Read from the
lane engine's addresses (same pointer, same address in every lane, warp and sample) and the
kernel's syntax (branches, loops, writes and calls between the two loads)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.analysis.memory.figures import Access

_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")

# where a node sits in its parent that makes it run only on some paths (a branch, a loop
# body, the right operand of && / || / ?:)
_CONDITIONAL_FIELDS = {
    "if_statement": ("consequence", "alternative"),
    "for_statement": ("body", "update"),
    "while_statement": ("body",),
    "do_statement": ("body",),
    "for_range_loop": ("body",),
    "conditional_expression": ("consequence", "alternative"),
    "case_statement": (),
    "switch_statement": ("body",),
}
_WRITES = ("assignment_expression", "update_expression", "call_expression", "asm_statement",
           "gnu_asm_expression")


def repeated_load(access: "Access", accesses: list["Access"]) -> "Access | None":
    """An earlier load of the same elements that the compiler keeps in a register, so that
    ``access`` issues no memory request of its own: the same pointer and the same address
    in every lane, warp and sample; the earlier load runs on every path to this one
    (not under a branch or in a loop this one is outside of), this one is in no loop the
    earlier one is outside of, and nothing between them may write memory (an assignment
    through a subscript, pointer or field, an increment, a call -- the calls whose
    arguments hold the earlier load included, save those that hold ``access`` too). Roiaware's ``if (argmax[0] == -1)
    return; atomicAdd(grad_in + argmax[0] * C + c, ...)`` loads ``argmax[0]`` once."""
    if not access.is_load or access.is_store:
        return None
    body = access.kernel.body
    if body is None:
        return None
    for other in accesses:
        if other is access or not other.is_load or other.is_store or \
                other.kernel is not access.kernel or other.space != access.space or \
                other.region != access.region or other.width != access.width or \
                other.node.end_byte > access.node.start_byte or \
                other.groups != access.groups:
            continue
        if _runs_before_on_every_path(other.node, access.node, body) and \
                not _may_write_between(other.node, access.node, body):
            return other
    return None


def _ancestors(node: Node, stop: Node) -> list[Node]:
    out = []
    cur = node
    while cur is not None and cur.id != stop.id:
        out.append(cur)
        cur = cur.parent
    return out


def _runs_before_on_every_path(first: Node, later: Node, body: Node,
                               finishes=None) -> bool:
    """``first`` runs whenever ``later`` runs: below their common statement ``first`` is
    under no branch (nor in a loop, unless ``finishes(loop)`` says the loop runs to its
    end before ``later``: a constant-trip ``for``), and ``later`` is in no loop there."""
    up_first = _ancestors(first, body)
    up_later = {n.id for n in _ancestors(later, body)}
    lca = next((n for n in up_first if n.id in up_later), body)
    for child in _ancestors(first, lca):
        parent = child.parent
        if parent is None or parent.id == lca.id:
            break
        if finishes is not None and parent.type in _LOOPS:
            if not finishes(parent):
                return False
        elif _conditional_child(parent, child):
            return False
    # the later one is in no loop below the common statement
    for child in _ancestors(later, lca):
        if child.type in _LOOPS:
            return False
    return True


def _conditional_child(parent: Node, child: Node) -> bool:
    if parent.type in ("case_statement",):
        return True
    fields = _CONDITIONAL_FIELDS.get(parent.type)
    if fields:
        return any(f is not None and f.id == child.id
                   for name in fields for f in parent.children_by_field_name(name))
    if parent.type == "binary_expression" and \
            text(parent.child_by_field_name("operator")) in ("&&", "||"):
        right = parent.child_by_field_name("right")
        return right is not None and right.id == child.id
    return False


def _may_write_between(first: Node, later: Node, body: Node) -> bool:
    lo, hi = first.end_byte, later.start_byte
    around_later = {n.id for n in _ancestors(later, body)}
    # what holds the first load runs after it (``atomicAdd(p + a[i], v)``), unless it
    # holds the later one too
    around_first = {n.id for n in _ancestors(first, body)} - around_later
    stack = [body]
    while stack:
        cur = stack.pop()
        if cur.end_byte <= lo or cur.start_byte >= hi:
            continue                    # wholly before or after: runs elsewhere
        if cur.type in _WRITES and cur.id not in around_later and \
                (lo <= cur.start_byte < hi or cur.id in around_first):
            if cur.type != "assignment_expression" and cur.type != "update_expression":
                return True             # a call, inline asm: may write anything
            target = cur.child_by_field_name("left") or cur.child_by_field_name("argument")
            while target is not None and target.type == "parenthesized_expression" and \
                    target.named_child_count == 1:
                target = target.named_children[0]
            if target is None or target.type != "identifier":
                return True             # through a subscript, pointer or field
        stack.extend(cur.named_children)
    return False


def own_store(access: "Access", accesses: list["Access"]) -> "Access | None":
    """An earlier store through the same pointer that wrote, in every lane, warp and
    sample, every byte this load reads in that lane, and that ran whenever this load
    runs: outside any branch, or in constant-trip loops the load is after (3dgrut's
    ``for (i < 4) { float3& v = vrt[s + i]; v = ...; }`` then ``vrt[s + 1] - vrt[s + 0]``).
    The load reads back what its own thread has just written: no DRAM bytes go unused
    on its account (the store's own pattern is the store's finding), and the remedy is to
    keep the values, not a layout (sheet-newcorpus9, the re-scored new finding)."""
    from cudalint.analysis.memory.loops import counter_walk
    if not access.is_load or access.is_store or access.reached is not None:
        return None
    body = access.kernel.body
    if body is None:
        return None
    for other in accesses:
        if other is access or not other.is_store or other.kernel is not access.kernel or \
                other.reached is not None or other.space != access.space or \
                other.region != access.region or \
                _statement_end(other.node, body) > access.node.start_byte or \
                not _runs_before_on_every_path(other.node, access.node, body,
                                               _finishes(other)):
            continue                # (`a[i] = a[i] * 2`: the load runs before the store)
        if _covers(counter_walk(other), access):
            return other
    return None


def _statement_end(node: Node, body: Node) -> int:
    """Where the statement holding ``node`` ends."""
    cur = node
    while cur is not None and cur.id != body.id:
        if cur.type.endswith("statement") or cur.type == "declaration":
            return cur.end_byte
        cur = cur.parent
    return body.end_byte


def _finishes(store: "Access"):
    """Loops that run all their passes before what follows them: ``for`` loops with a
    constant, non-zero trip count (a loop that may run no pass may not store)."""
    from cudalint.analysis.memory.loops import counted_loop

    def finishes(loop: Node) -> bool:
        if loop.type != "for_statement":
            return False
        counted = counted_loop(store.int_values, loop)
        return counted is not None and bool(counted.trip)
    return finishes


def _covers(stores: list["Access"], load: "Access") -> bool:
    """Every active lane of ``load`` reads bytes that the same lane's stores wrote."""
    for k, row in enumerate(load.groups):
        spans = [s.groups[k] for s in stores if k < len(s.groups)]
        for lane, a in enumerate(row):
            if a is None:
                continue
            need = set(range(a, a + load.width))
            for srow, s in zip(spans, stores):
                b = srow[lane] if lane < len(srow) else None
                if b is not None:
                    need.difference_update(range(b, b + s.width))
            if need:
                return False
    return True
