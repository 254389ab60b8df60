"""Block barriers that part of the block skips, and what the skipping threads do next
(CL103 and its strict companion CL106); grid barriers (``this_grid().sync()``) that
part of a block skips, for CL106 only (cooperative groups count a block at its thread
0, so where the skipping threads go is not the question: fixtures/CL106/grid_sync.cu).

A barrier is *skipped* when a condition that depends on the thread decides whether it
runs: an enclosing branch, a loop whose trip count depends on the thread (or that a
thread-dependent ``break``/``return`` leaves), or an early ``return`` before it.
Branches and early returns are decided from the syntax (the programming model forbids
them whatever the sizes); loops only when running the block
(:class:`~cudalint.analysis.sync.races.RaceAnalysis`) showed some threads skipping.

Since Volta a barrier waits only for the threads that have not exited, so what matters
on sm_70 and newer is where the skipping threads go (measured on an H100,
fixtures/CL103/truth.json):

- they reach *another* barrier before they exit: mismatched barriers, synccheck reports
  "divergent thread(s) in block", a block-strided loop followed by a block sum hangs.
  Shown by the block run (:mod:`~cudalint.analysis.sync.barrier_order`) or, for a
  branch, a loop or a ``break``, by following the skipping threads' path from the
  statement they continue at: the other branch, then what follows, up to a barrier
  every one of them executes (:func:`meets_barrier`);
- they exit (or are not shown to meet another barrier): defined since Volta, and
  reported only by the opt-in strict code, or on pre-Volta targets (sm_3x-sm_6x).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.analysis.sync.cfg import (LOOPS, BodyQueries, callee_short_name,
                                        control_context, exits_before, group_handles,
                                        syncs_in)
from cudalint.analysis.sync.divergence import ThreadDependence
from cudalint.analysis.sync.races import RaceAnalysis
from cudalint.model.preproc import not_for_modern_cuda
from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function

_ARCH = re.compile(r"(\d+)")


@dataclass
class SkippedBarrier:
    node: Node               # the barrier
    spelling: str            # as written, for messages
    fn: "Function"
    why: str                 # which threads skip it ("is reached only by threads ...")
    meets: Node | None       # the barrier the skipping threads wait at instead, if shown
    grid: bool = False       # a cooperative-groups grid barrier (`this_grid().sync()`)


def pre_volta(arch: str) -> bool:
    """sm_3x-sm_6x: no independent thread scheduling, every divergent barrier breaks."""
    m = _ARCH.search(arch or "")
    return m is not None and int(m.group(1)) < 70


class SkippedBarriers:
    """Per unit: ``ctx.analysis(SkippedBarriers).items``, every skipped block (or grid)
    barrier of the unit's device functions, in source order."""

    def __init__(self, ctx: "UnitContext"):
        self._ctx = ctx
        self._items: list[SkippedBarrier] | None = None

    @property
    def items(self) -> list[SkippedBarrier]:
        if self._items is None:
            self._items = list(self._find())
        return self._items

    def _find(self):
        ctx = self._ctx
        data = ctx.unit.data if isinstance(ctx.unit.data, bytes) else ctx.unit.data.encode()
        if b"sync" not in data and b"bar." not in data:
            return
        deps = ctx.analysis(ThreadDependence)
        queries = ctx.analysis(BodyQueries)
        functions = {f.name: f for f in ctx.model.functions
                     if f.is_device and not f.is_kernel and f.body is not None}
        for fn in ctx.model.functions:
            if not fn.is_device or fn.body is None:
                continue
            body_text = fn.body.text or b""
            if b"sync" not in body_text and b"bar." not in body_text:
                continue
            caps = queries(fn.body)
            groups = group_handles(fn.body, caps)
            syncs = [s for s in syncs_in(fn.body, groups, caps)
                     if s.kind in ("block", "grid")]
            if not syncs:
                continue
            dep = _Lazy(deps, fn)
            walker = None
            for sync in syncs:
                if not_for_modern_cuda(sync.node, ctx):
                    continue
                try:
                    found = divergence(sync.node, fn.body, dep, lambda n: ctx.analysis(
                        RaceAnalysis).reached_by_part(n), queries, ctx.place)
                except RecursionError:
                    # a condition nested deeper than the analysis can follow (thousands
                    # of terms, machine-made code): undecided, so silent
                    found = None
                if found is None:
                    continue
                why, guard, kind = found
                if sync.kind == "grid":
                    # a grid barrier skipped by part of a block: CL106 says what the
                    # GPU does with it (where the skipping threads go is not followed)
                    yield SkippedBarrier(sync.node, sync.spelling, fn, why, None, True)
                    continue
                meets = ctx.analysis(RaceAnalysis).waits_elsewhere(sync.node)
                if meets is None and kind in ("if", "else", "loop", "break"):
                    if walker is None:
                        walker = _Walk(fn, groups, caps, dep, functions, queries)
                    try:
                        meets = walker.after_skip(sync.node, guard, kind)
                    except RecursionError:
                        meets = None
                yield SkippedBarrier(sync.node, sync.spelling, fn, why, meets)


class _Lazy:
    """A function's thread dependence, solved on the first question (a barrier with no
    condition above it and no early exit before it asks none)."""

    def __init__(self, deps, fn):
        self._deps, self._fn, self._dep = deps, fn, None

    def reason(self, node):
        if self._dep is None:
            self._dep = self._deps.of(self._fn)
        return self._dep.reason(node)


def _unit_place(node) -> str:
    return f"line {node.start_point[0] + 1}"


def divergence(node, body, dep, executed, queries=None, _place=_unit_place):
    """(why, deciding statement, kind) when ``node`` is not reached by every thread,
    else None. Branches and early returns on thread-dependent conditions are decided
    statically (the programming model forbids them whatever the sizes); a loop's trip
    count and early `break`s only when running the block showed some threads skipping
    the barrier (a loop such as `for (i = tid; i < n; i += blockDim.x)` is uniform when
    n is a multiple). ``kind``: "if", "else", "loop", "switch", "ternary" (the
    statement is the enclosing one), "return", "break", "continue" (the statement is the
    exit; for break/continue the loop it leaves comes back as the statement).
    ``_place`` says where a place a message names is ("line 12": ``ctx.place``)."""
    guards = control_context(node, body)
    if any(g.kind in ("opaque",) for g in guards):
        return None
    for g in guards:
        if g.condition is None:
            continue
        why = dep.reason(g.condition)
        if why is None:
            continue
        cond = _condition(g.condition)
        if g.kind == "if":
            return (f"is reached only by threads where `{cond}` ({_place(g.node)})",
                    g.node, "if")
        if g.kind == "else":
            return (f"is reached only by threads where `!({cond})` ({_place(g.node)})",
                    g.node, "else")
        if g.kind == "loop":
            if not executed(node):
                continue
            return (f"is inside a loop whose trip count depends on the thread "
                    f"(`{cond}`, {_place(g.node)})", g.node, "loop")
        if g.kind == "switch":
            return (f"is inside a `switch ({cond})` on a thread-dependent value",
                    g.node, "switch")
        return (f"is evaluated only by threads where `{cond}` ({_place(g.node)})",
                g.node, g.kind)
    loops = [g.node for g in guards if g.kind == "loop"]
    for ex in exits_before(node, body, queries, guards):
        for g in ex.guards:
            if g.condition is None or g.kind == "opaque":
                continue
            if dep.reason(g.condition) is None:
                continue
            cond = _condition(g.condition)
            if g.kind == "else":
                cond = f"!({cond})"
            if ex.kind == "return":
                return (f"follows an early `return` taken by threads where `{cond}` "
                        f"({_place(ex.node)})", ex.node, "return")
            if not executed(node):
                continue
            owner = next((lp for lp in loops if lp.start_byte <= ex.node.start_byte
                          and ex.node.end_byte <= lp.end_byte), None)
            return (f"is inside a loop that threads where `{cond}` leave early "
                    f"(`{ex.kind}`, {_place(ex.node)})", owner, ex.kind)
    return None


def _condition(node: Node) -> str:
    """A condition as a message quotes it: one line, without the statement's own
    parentheses (``(k == (int)(tid % 4))`` -> ``k == (int)(tid % 4)``)."""
    t = " ".join(text(node).split())
    if node.type in ("condition_clause", "parenthesized_expression") and \
            t.startswith("(") and t.endswith(")"):
        t = t[1:-1].strip()
    return t


# ---- the skipping threads' path -------------------------------------------------------

BARRIER, PASS, LEAVE, EXIT = "barrier", "pass", "leave", "exit"
_INLINE_DEPTH = 3


class _Walk:
    """Follows the threads that skip a barrier from where they continue, statement by
    statement, to the first block barrier every one of them executes. Anything that
    may take some of them elsewhere ends the walk without an answer: a ``return`` (they
    may exit), a ``break``/``continue`` of a loop around the walk, the end of a loop
    body (the next iteration is another question), the end of the function (a kernel's
    threads exit; a device function's return to a caller), a construct it does not
    model. A branch counts when both its sides reach a barrier, a loop when its
    condition is uniform and its body reaches one, a call when the unit's device
    function it names reaches one from its start."""

    def __init__(self, fn, groups, caps, dep, functions, queries):
        self.fn, self.groups, self.dep = fn, groups, dep
        self.functions, self.queries = functions, queries
        self.syncs = {s.node.id: s for s in syncs_in(fn.body, groups, caps)
                      if s.kind == "block"}
        self._callee: dict[str, Node | None] = {}
        self._depth = 0
        # statement id -> expression()'s answer: the walks from every barrier of a kernel
        # cross the same statements, and each answer walks the statement's whole
        # subtree for calls (a 250 KB kernel of 42 barriers: 25 s, issue 25)
        self._expressions: dict[int, tuple[str, Node | None]] = {}

    def after_skip(self, barrier: Node, stmt: Node | None, kind: str) -> Node | None:
        if stmt is None:
            return None
        if kind in ("if", "else"):
            # the skipping threads run the other side of the branch, then what follows
            other = stmt.child_by_field_name("alternative" if kind == "if"
                                             else "consequence")
            if other is not None:
                if other.type == "else_clause":
                    other = next((c for c in other.named_children
                                  if c.type != "comment"), None)
                if other is not None:
                    res, at = self.stmt(other)
                    if res == BARRIER:
                        return at
                    if res != PASS:
                        return None
        elif kind not in ("loop", "break") or stmt.type not in LOOPS:
            return None
        return self.following(stmt)

    def following(self, stmt: Node) -> Node | None:
        """The barrier reached from the end of ``stmt`` going on in its function."""
        cur = stmt
        while True:
            parent = cur.parent
            if parent is None or parent.id == self.fn.node.id:
                return None
            if parent.type == "compound_statement":
                started = False
                for c in parent.named_children:
                    if c.id == cur.id:
                        started = True
                        continue
                    if not started:
                        continue
                    res, at = self.stmt(c)
                    if res == BARRIER:
                        return at
                    if res != PASS:
                        return None
                if parent.id == self.fn.body.id:
                    return None
                cur = parent
                continue
            if parent.type == "else_clause":
                cur = parent.parent
                if cur is None or cur.type != "if_statement":
                    return None
                continue
            if parent.type == "if_statement":
                cur = parent
                continue
            return None

    def stmt(self, node: Node) -> tuple[str, Node | None]:
        t = node.type
        if t in ("comment", "empty_statement", "preproc_call", "preproc_def",
                 "type_definition", "using_declaration", "alias_declaration",
                 "static_assert_declaration"):
            return PASS, None
        if t == "compound_statement":
            for c in node.named_children:
                res, at = self.stmt(c)
                if res != PASS:
                    return res, at
            return PASS, None
        if t in ("expression_statement", "declaration"):
            return self.expression(node)
        if t == "if_statement":
            cons = node.child_by_field_name("consequence")
            alt = node.child_by_field_name("alternative")
            if alt is not None and alt.type == "else_clause":
                alt = next((c for c in alt.named_children if c.type != "comment"), None)
            cond = node.child_by_field_name("condition")
            r_cond = self.expression(cond) if cond is not None else (PASS, None)
            if r_cond[0] != PASS:
                return r_cond
            r1 = self.stmt(cons) if cons is not None else (PASS, None)
            r2 = self.stmt(alt) if alt is not None else (PASS, None)
            for r in (r1, r2):
                if r[0] in (EXIT, LEAVE):
                    return r
            if r1[0] == BARRIER and r2[0] == BARRIER:
                return r1
            return PASS, None
        if t in LOOPS:
            body = node.child_by_field_name("body")
            if self._escapes(node):
                return EXIT, None
            if body is None:
                return PASS, None
            cond = node.child_by_field_name("condition")
            res, at = self.stmt(body)
            if res == BARRIER and (t == "do_statement" or (
                    cond is not None and self.dep.reason(cond) is None)):
                return BARRIER, at
            return PASS, None
        if t == "return_statement":
            return EXIT, None
        if t in ("break_statement", "continue_statement"):
            return LEAVE, None
        return EXIT, None           # switch, goto, labels, macros read as functions

    def _escapes(self, loop: Node) -> bool:
        """A return, goto or unknown construct inside a loop (its own break/continue
        only end it)."""
        for kind, stmt, _guards, owner in self.queries.exits(self.fn.body):
            if not (loop.start_byte <= stmt.start_byte and stmt.end_byte <= loop.end_byte):
                continue
            if kind == "return":
                return True
            if owner is None or not (loop.start_byte <= owner.start_byte
                                     and owner.end_byte <= loop.end_byte):
                return True
        return b"goto" in (loop.text or b"")

    def expression(self, node: Node) -> tuple[str, Node | None]:
        """A statement without control flow: a barrier it calls outside any ``?:``,
        ``&&`` or ``||``, or a device function that reaches one."""
        got = self._expressions.get(node.id)
        if got is None:
            got = self._expressions[node.id] = self._expression(node)
        return got

    def _expression(self, node: Node) -> tuple[str, Node | None]:
        found: Node | None = None
        for sid, s in self.syncs.items():
            if node.start_byte <= s.node.start_byte and s.node.end_byte <= node.end_byte:
                if not control_context(s.node, node):
                    found = s.node
                    break
        if found is not None:
            return BARRIER, found
        if b"(" not in (node.text or b""):
            return PASS, None
        for call in _calls(node):
            if control_context(call, node):
                continue
            short = callee_short_name(call.child_by_field_name("function"))
            at = self.callee(short)
            if at is not None:
                return BARRIER, at
        return PASS, None

    def callee(self, short: str) -> Node | None:
        """The first barrier every thread executes in device function ``short``."""
        if short in self._callee:
            return self._callee[short]
        self._callee[short] = None
        f = self.functions.get(short)
        if f is None or f.body is None or self._depth >= _INLINE_DEPTH:
            return None
        inner = _Walk.__new__(_Walk)
        inner.fn, inner.dep = f, _NoDependence()
        inner.functions, inner.queries = self.functions, self.queries
        caps = self.queries(f.body)
        inner.groups = group_handles(f.body, caps)
        inner.syncs = {s.node.id: s for s in syncs_in(f.body, inner.groups, caps)
                       if s.kind == "block"}
        inner._callee = self._callee
        inner._depth = self._depth + 1
        inner._expressions = {}
        res, at = inner.stmt(f.body)
        found = at if res == BARRIER else None
        self._callee[short] = found
        return found


class _NoDependence:
    """Inside a callee, no loop condition is taken for uniform."""

    def reason(self, node):
        return "unknown"


def _calls(node: Node):
    stack = [node]
    while stack:
        cur = stack.pop()
        if cur.type == "call_expression":
            yield cur
        if cur.type in ("lambda_expression",):
            continue
        stack.extend(reversed(cur.named_children))
