"""Thread dependence: which values and conditions of a kernel vary across its threads.

A value *varies* when it may differ between two threads of one block: ``threadIdx``,
the lane id (``%laneid``, ``threadIdx.x & 31``), ``cg::this_thread_block().thread_rank()``,
``tile.thread_rank()``, results of atomics and warp exchanges, loads through a varying
address, and every local variable that is assigned a varying value or assigned under a
varying condition (control dependence). ``blockIdx``, ``blockDim``, ``gridDim``, kernel
parameters, constants, loads from uniform addresses and ``__syncthreads_or/and/count``
results are uniform.

The analysis is flow-insensitive over the locals of one function (a fixed point over
all their assignments) and *one-sided*: ``varies(expr)`` is True only when the
expression is known to depend on the thread; anything opaque counts as not varying,
so rules built on it stay silent when they cannot tell.

    dep = ctx.analysis(ThreadDependence).of(fn)
    dep.varies(condition)        # True / False
    dep.reason(condition)        # "threadIdx.x", "lane", ... (what makes it vary)
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.parse import text
from cudalint.analysis.sync.cfg import FUNCTION_LIKE, LOOPS, BodyQueries, ancestors, callee_short_name

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function

# calls whose result differs between threads whatever their arguments
VARYING_CALLS = frozenset({
    "thread_rank", "thread_index", "__lane_id", "lane_id", "laneid", "get_lane_id",
    "__laneid", "lane", "threadIdx_x", "atomicAdd", "atomicSub", "atomicInc", "atomicDec",
    "atomicExch", "atomicCAS", "atomicMin", "atomicMax", "atomicAnd", "atomicOr",
    "atomicXor", "atomicAdd_block", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
    "__shfl_xor_sync", "__shfl", "__shfl_up", "__shfl_down", "__shfl_xor", "shfl",
    "shfl_down", "shfl_up", "shfl_xor", "__ballot_sync", "__ballot", "ballot",
    "__match_any_sync", "__activemask", "meta_group_rank", "clock", "clock64",
    "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync",
})
# calls whose result is the same in every thread of the block
UNIFORM_CALLS = frozenset({"__syncthreads_count", "__syncthreads_and", "__syncthreads_or",
                           "size", "num_threads", "group_dim", "dim_threads",
                           "meta_group_size", "sizeof"})
# bound (issue 25): one question walks at most this many nodes of an expression. The
# 9-project corpus asks about expressions of at most 236 nodes; a fuzzed `blockIdx+x+x+...` of 100,000
# terms took 0.6 s a question, asked 36 times a lint. Past it the answer is "not known to
# vary", the side every rule built on this analysis stays silent on.
MAX_WALK = 2048
_WORD = re.compile(r"[A-Za-z_]\w*")
_LANE_ASM = ("%laneid", "%tid", "%warpid", "%lanemask")


class FunctionDependence:
    def __init__(self, fn: "Function", unit_functions: dict[str, "Function"] | None = None,
                 queries: BodyQueries | None = None, calls: dict | None = None):
        self.fn = fn
        self.body = fn.body
        self.varying: dict[str, str] = {}      # local name -> why it varies
        self._too_big: set[int] = set()         # expressions past MAX_WALK
        self._functions = unit_functions or {}
        self._stack: set[str] = set()
        self._decls: dict = {}
        self._pointers: set[str] = set()
        # BODY_QUERY captures per body, and what a callee's returns make vary, keyed by
        # (callee, callees being solved): shared by every function of the unit
        self._queries = queries if queries is not None else BodyQueries()
        self._calls = calls if calls is not None else {}
        if self.body is not None:
            self._solve()

    # -- expressions ----------------------------------------------------------------
    def varies(self, node: Node | None) -> bool:
        return self.reason(node) is not None

    def reason(self, node: Node | None) -> str | None:
        """What makes ``node`` differ between threads (None: nothing known).

        The first reason met going through the expression depth-first, left to right.
        Walked with a stack of its own, not by recursion: a sum of thousands of terms
        nests as deep as it is long, deeper than Python's recursion limit."""
        # (node, or a reason already known, and how many "a load at a thread-dependent
        # index (...)" wrap its reason)
        if node is None or node.id in self._too_big:
            return None
        todo: list[tuple[Node | str, int]] = [(node, 0)]
        budget = MAX_WALK
        while todo:
            budget -= 1
            if budget < 0:
                # machine-made: undecided, so taken for uniform (and not walked again)
                self._too_big.add(node.id)
                return None
            cur, wraps = todo.pop()
            found = cur if isinstance(cur, str) else self._step(cur, wraps, todo)
            if found is not None:
                for _ in range(wraps):
                    found = f"a load at a thread-dependent index ({found})"
                return found
        return None

    def _step(self, node: Node, wraps: int, todo: list[tuple[Node | str, int]]) -> str | None:
        """The reason ``node`` gives by itself, or None after pushing onto ``todo`` the
        parts whose reasons stand for it (pushed last-first, so the first pops first)."""
        t = node.type
        if t == "field_expression":
            arg = node.child_by_field_name("argument")
            if arg is not None and text(arg) == "threadIdx":
                return text(node)
            if arg is not None and arg.type == "identifier" and text(arg) in (
                    "blockIdx", "blockDim", "gridDim"):
                return None
            if arg is not None:
                todo.append((arg, wraps))
            return None
        if t == "identifier":
            name = text(node)
            if name == "threadIdx":
                return "threadIdx"
            if not self.varying:
                return None
            key, _, _ = self._key(node)
            return self.varying.get(key)
        if t == "call_expression":
            return self._call_reason(node, wraps, todo)
        if t == "subscript_expression":
            # a load varies when its address does (or the array is thread-private)
            arg = node.child_by_field_name("argument")
            idx = node.child_by_field_name("indices")
            if arg is not None:
                if arg.type == "identifier":
                    key, shared, _ = self._key(arg)
                    why = None if shared else self.varying.get(key)
                    if why is not None:
                        todo.append((why, wraps))       # the array's own verdict, as is
                else:
                    todo.append((arg, wraps))
            if idx is not None:
                todo.append((idx, wraps + 1))
            return None
        if t in ("number_literal", "string_literal", "true", "false", "char_literal",
                 "sizeof_expression", "null", "nullptr"):
            return None
        if t in FUNCTION_LIKE:
            return None
        for c in reversed(node.named_children):
            if c.type == "comment":
                continue
            if t == "cast_expression" and c.type == "type_descriptor":
                continue
            todo.append((c, wraps))
        return None

    def _call_reason(self, node: Node, wraps: int,
                     todo: list[tuple[Node | str, int]]) -> str | None:
        fnode = node.child_by_field_name("function")
        short = callee_short_name(fnode)
        if fnode is not None and fnode.type == "field_expression":
            short = text(fnode.child_by_field_name("field"))
        if short in UNIFORM_CALLS:
            return None
        if short in VARYING_CALLS:
            return f"{short}()"
        args = node.child_by_field_name("arguments")
        defs = self._functions.get(short)
        if defs is not None and defs.body is not None and short not in self._stack:
            # the callee's verdict depends only on it and on the callees being solved
            key = (short, frozenset(self._stack))
            if key in self._calls:
                found = self._calls[key]
            else:
                found = self._calls[key] = self._callee_reason(short, defs)
            if found is not None:
                return found
        if args is not None:
            for a in reversed(args.named_children):
                todo.append((a, wraps))
        return None

    def _callee_reason(self, short: str, defs: "Function") -> str | None:
        self._stack.add(short)
        try:
            returns = self._queries(defs.body).get("return", [])
            inner = FunctionDependence.__new__(FunctionDependence)
            inner.fn, inner.body, inner._functions = defs, defs.body, self._functions
            inner.varying = {}
            inner._too_big = set()
            inner._stack = self._stack
            inner._decls = {}
            inner._pointers = set()
            inner._queries = self._queries
            inner._calls = self._calls
            inner._solve()
            for r in returns:
                expr = r.named_children[0] if r.named_children else None
                why = inner.reason(expr)
                if why is not None:
                    return f"{short}() ({why})"
        finally:
            self._stack.discard(short)
        return None

    # -- locals -----------------------------------------------------------------------
    def varying_names(self) -> set[str]:
        return {k.split("@")[0] for k in self.varying}

    def _declarations(self) -> None:
        """Local declarations by name: (scope start, scope end, declared at, key, shared).
        A use refers to the innermost declaration whose scope holds it."""
        self._decls: dict[str, list[tuple[int, int, int, str, bool, Node]]] = {}
        for decl in self._queries(self.body).get("declaration", []):
            scope = decl.parent
            if scope is None:
                continue
            quals = {text(c) for c in decl.children if c.type in (
                "type_qualifier", "storage_class_specifier")}
            shared = "__shared__" in quals
            for d in decl.children_by_field_name("declarator"):
                name = _base_name(d)
                if not name:
                    continue
                inner = d.child_by_field_name("declarator") if d.type == "init_declarator" \
                    else d
                if inner is not None and inner.type == "pointer_declarator":
                    self._pointers.add(f"{name}@{d.start_byte}")
                key = f"{name}@{d.start_byte}"
                self._decls.setdefault(name, []).append(
                    (scope.start_byte, scope.end_byte, d.start_byte, key, shared, scope))

    def _key(self, ident: Node) -> tuple[str, bool, Node | None]:
        """(variable key, is __shared__, declaring scope) of an identifier use."""
        memo = self.__dict__.setdefault("_key_memo", {})
        found = memo.get(ident.id)
        if found is None:
            found = memo[ident.id] = self._find_key(ident)
        return found

    def _find_key(self, ident: Node) -> tuple[str, bool, Node | None]:
        name = text(ident)
        best = None
        for entry in self._decls.get(name, ()):
            lo, hi, at, _key, _shared, _scope = entry
            if lo <= ident.start_byte < hi and at <= ident.start_byte:
                if best is None or lo >= best[0]:
                    best = entry
        if best is None:
            return name, False, None
        return best[3], best[4], best[5]

    def _solve(self) -> None:
        body = self.body
        self._declarations()
        caps = self._queries(body)
        writes: list[tuple[str, Node | None, Node, Node | None]] = []

        def add(target: Node, value: Node | None) -> None:
            ident = _base_ident(target)
            if ident is None:
                return
            key, shared, scope = self._key(ident)
            if shared:
                return          # one thread's write to __shared__ is every thread's value
            if target.type in ("subscript_expression", "pointer_expression") and (
                    key in self._pointers or key == text(ident)):
                return          # a store through a pointer changes memory, not the pointer
            writes.append((key, value, target, scope))

        for n, v in zip(caps.get("init_name", []), caps.get("init_value", [])):
            add(n, v)
        for l, r in zip(caps.get("assign_left", []), caps.get("assign_right", [])):
            add(l, r)
        for u in caps.get("update", []):
            add(u, None)
        for a in caps.get("asm_out", []):
            asm = a.parent.parent if a.parent is not None else None
            if any(k in text(asm) for k in _LANE_ASM):
                ident = _base_ident(a)
                if ident is not None:
                    key, _, _ = self._key(ident)
                    self.varying[key] = f"{text(ident)} (from %laneid/%tid)"
        # A write found uniform in one round can only change its verdict once a name it
        # mentions (in its value or in a condition above it) became varying: later rounds
        # look again only at those (a fuzzed 240 KB buffer spent 1.2 s a lint re-walking
        # every value eight times, issue 25). ``added``: base names in the order they
        # became varying; ``seen[i]``: how many of them write i was last looked at with.
        added = [k.split("@")[0] for k in self.varying]
        seen: list[int | None] = [None] * len(writes)
        mentions: list[frozenset[str] | None] = [None] * len(writes)
        changed = True
        rounds = 0
        while changed and rounds < 8:
            changed = False
            rounds += 1
            for i, (key, value, site, scope) in enumerate(writes):
                if key in self.varying:
                    continue
                last = seen[i]
                if last is not None:
                    if last == len(added):
                        continue
                    names = mentions[i]
                    if names is None:
                        names = mentions[i] = self._mentions(value, site, scope)
                    if names.isdisjoint(added[last:]):
                        seen[i] = len(added)
                        continue
                seen[i] = len(added)
                why = self.reason(value) if value is not None else None
                if why is None:
                    cond = self._varying_control(site, scope)
                    if cond is not None:
                        why = f"assigned under `{cond}`"
                if why is not None:
                    self.varying[key] = why
                    added.append(key.split("@")[0])
                    changed = True

    def _mentions(self, value: Node | None, site: Node, scope: Node | None) -> frozenset[str]:
        """Every word of a write's value and of the conditions of the constructs above it
        (what :meth:`reason` and :meth:`_varying_control` may find varying)."""
        parts = [text(value)] if value is not None else []
        top = scope if scope is not None and scope.start_byte <= site.start_byte \
            and site.end_byte <= scope.end_byte else self.body
        for cur in ancestors(site, top):
            if cur.id == self.body.id:
                break
            cond = cur.child_by_field_name("condition")
            if cond is not None:
                parts.append(text(cond))
        return frozenset(_WORD.findall(" ".join(parts)))

    def _varying_control(self, node: Node, scope: Node | None) -> str | None:
        """A thread-dependent condition deciding whether ``node`` runs, among the
        constructs between it and its variable's declaration (a variable declared inside
        the branch or loop starts afresh there)."""
        # going down from the scope (or the body), not up through Node.parent, which
        # costs the node's depth each step (cfg.ancestors)
        top = scope if scope is not None and scope.start_byte <= node.start_byte \
            and node.end_byte <= scope.end_byte else self.body
        for cur in ancestors(node, top):
            if cur.id == self.body.id:
                break
            if cur.type in ("if_statement", "while_statement", "do_statement",
                            "for_statement", "switch_statement"):
                cond = cur.child_by_field_name("condition")
                if cond is not None and not (cond.start_byte <= node.start_byte < cond.end_byte) \
                        and self.varies(cond):
                    return text(cond).strip("() ")
        return None


def _base_ident(node: Node) -> Node | None:
    cur = node
    while cur is not None and cur.type in ("subscript_expression", "field_expression",
                                           "pointer_declarator", "array_declarator",
                                           "reference_declarator", "parenthesized_expression",
                                           "pointer_expression", "init_declarator"):
        nxt = cur.child_by_field_name("argument") or cur.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in cur.named_children), None)
        cur = nxt
    return cur if cur is not None and cur.type == "identifier" else None


def _base_name(node: Node) -> str:
    cur = node
    while cur is not None and cur.type in ("subscript_expression", "field_expression",
                                           "pointer_declarator", "array_declarator",
                                           "reference_declarator", "parenthesized_expression",
                                           "pointer_expression", "init_declarator"):
        nxt = cur.child_by_field_name("argument") or cur.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in cur.named_children), None)
        cur = nxt
    return text(cur) if cur is not None and cur.type == "identifier" else ""


class ThreadDependence:
    """Per-unit cache: ``ctx.analysis(ThreadDependence).of(fn)``."""

    def __init__(self, ctx: "UnitContext"):
        self.ctx = ctx
        self._by_fn: dict[int, FunctionDependence] = {}
        self._functions = {f.name: f for f in ctx.model.device_functions}
        self._queries = ctx.analysis(BodyQueries)
        self._calls: dict = {}

    def of(self, fn: "Function") -> FunctionDependence:
        dep = self._by_fn.get(fn.node.id)
        if dep is None:
            dep = FunctionDependence(fn, self._functions, self._queries, self._calls)
            self._by_fn[fn.node.id] = dep
        return dep


def is_loop(node: Node) -> bool:
    return node.type in LOOPS
