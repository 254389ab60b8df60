"""Stores at which two threads write different values to one ``__shared__`` address
(CL107): ``x[0] = threadIdx.x`` by the whole block, ``s[tid / 64] = tid``.

Which value stays depends on the schedule (between warps) or is unspecified (lanes of
one warp storing in one instruction). compute-sanitizer racecheck reports both as
errors on an H100 (fixtures/CL107/truth.json: 262 hazards for a 128-thread block storing
its thread ids to ``x[0]``, 68 for one warp doing it in two blocks), and nothing when
every thread stores the same value (the benign form, silent here too).

The candidates are found statically: a plain ``=`` store to a shared variable (declared
in the kernel: the block run follows its value as a local's and judges the store) or
array element (``((unsigned *)x)[i]`` too: the array through a cast) whose value depends
on the thread (:mod:`~cudalint.analysis.sync.divergence`)
at an address that may coincide for two threads (an index that does not depend on the
thread, or one with ``/``, ``>>`` or ``%``). The block run
(:class:`~cudalint.analysis.sync.races.RaceAnalysis`) decides: it reports a candidate
only when every run sees two threads store different known values at one address.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.analysis.sync.cfg import BodyQueries
from cudalint.analysis.sync.divergence import ThreadDependence
from cudalint.analysis.sync.races import RaceAnalysis, WriteConflict
from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.context import UnitContext

_COLLAPSING = re.compile(r"/|>>|%")


class SharedWriteConflicts:
    """Per unit: ``ctx.analysis(SharedWriteConflicts).items``, the conflicting stores
    (:class:`~cudalint.analysis.sync.races.WriteConflict`) in source order."""

    def __init__(self, ctx: "UnitContext"):
        self._ctx = ctx
        self._items: list[WriteConflict] | None = None

    @property
    def items(self) -> list[WriteConflict]:
        if self._items is None:
            self._items = list(self._find())
        return self._items

    def _find(self):
        ctx = self._ctx
        data = ctx.unit.data if isinstance(ctx.unit.data, bytes) else ctx.unit.data.encode()
        if b"__shared__" not in data:
            return
        queries = ctx.analysis(BodyQueries)
        deps = ctx.analysis(ThreadDependence)
        file_scope = {a.name for a in ctx.model.shared_arrays if a.function is None}
        for fn in ctx.model.functions:
            if not fn.is_device or fn.body is None:
                continue
            caps = queries(fn.body)
            names = set(file_scope) | _shared_names(caps.get("declaration", []))
            if not names:
                continue
            dep = None
            for left, right in zip(caps.get("assign_left", []), caps.get("assign_right", [])):
                target = _target(left, names)
                if target is None:
                    continue
                assign = left.parent
                if assign is None or assign.child_by_field_name("operator") is None or \
                        text(assign.child_by_field_name("operator")) != "=":
                    continue
                if dep is None:
                    dep = deps.of(fn)
                if dep.reason(right) is None:
                    continue
                if target is not left and dep.reason(target) is not None and \
                        not _COLLAPSING.search(text(target)):
                    continue
                hit = ctx.analysis(RaceAnalysis).write_conflict(left)
                if hit is not None:
                    yield hit


def _shared_names(decls: list[Node]) -> set[str]:
    out: set[str] = set()
    for decl in decls:
        if b"__shared__" not in (decl.text or b""):
            continue
        for d in decl.children_by_field_name("declarator"):
            while d is not None and d.type != "identifier":
                d = d.child_by_field_name("declarator")
            if d is not None:
                out.add(text(d))
    return out


def _target(left: Node, names: set[str]) -> Node | None:
    """The index of a store to a shared array element, ``left`` itself for a shared
    variable, else None."""
    if left.type == "identifier":
        return left if text(left) in names else None
    if left.type != "subscript_expression":
        return None
    base = left.child_by_field_name("argument")
    # `((unsigned *)x)[i]`: the array stored through a cast of it
    while base is not None and base.type in ("parenthesized_expression", "cast_expression"):
        base = base.child_by_field_name("value") if base.type == "cast_expression" else \
            next((c for c in base.named_children if c.type != "comment"), None)
    if base is None or base.type != "identifier" or text(base) not in names:
        return None
    idx = left.child_by_field_name("indices")
    inner = [c for c in idx.named_children if c.type != "comment"] if idx is not None else []
    return inner[0] if len(inner) == 1 else None


_BARRIER = re.compile(rb"__syncthreads|__syncwarp|\bsync\s*\(|__barrier_sync|bar\.sync")


def read_back(c: "WriteConflict") -> Node | None:
    """Where the threads that stored ``c``'s different values read the same element back,
    each as its own: the first read of the stored expression (the same text) after the
    store's statement in the kernel, with no barrier and no other store to it in between
    (pytorch-loss's `sdata[0] = blockIdx.x * blockDim.x + threadIdx.x; for (int
    i{sdata[0]}; ...)`, sheet-newcorpus10 W1: a per-thread value kept in one shared
    word). None for any other shape."""
    body = c.kernel.body
    if body is None:
        return None
    key = c.node.text
    stmt = c.node
    while stmt is not None and not stmt.type.endswith("statement") and \
            stmt.type != "declaration":
        stmt = stmt.parent
    if stmt is None or not key:
        return None
    data = body.text or b""
    start = stmt.end_byte
    found = None
    stack = [body]
    while stack:
        n = stack.pop()
        if n.end_byte <= start or n.type == "comment":
            continue
        if n.start_byte >= start and n.text == key and n.type == c.node.type:
            if found is None or n.start_byte < found.start_byte:
                found = n
            continue
        stack.extend(n.children)
    if found is None:
        return None
    between = data[start - body.start_byte:found.start_byte - body.start_byte]
    if _BARRIER.search(between) or re.search(re.escape(key) + rb"\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)",
                                             between):
        return None
    parent = found.parent
    if parent is not None and parent.type == "assignment_expression" and \
            parent.child_by_field_name("left") == found:
        return None             # stored again, not read
    return found
