"""How per-thread (local) arrays are indexed, and whether ptxas will have to put them in
local memory.

Registers cannot be indexed at run time, so an array indexed by a value that is not a
compile-time constant after unrolling lives in local memory (the stack frame) unless
nvcc rewrites the few dynamic accesses as selects over the elements. What nvcc 13 does
for sm_90 was measured (``ptxas -v``, fixtures/CL204/stack.json): it keeps the array in
registers for one or two dynamic accesses to arrays of up to ~64 elements and for any
number of accesses to 4-element arrays, and gives up with

* a dynamic index inside a loop whose trip count is not known at compile time (or that
  is kept rolled with ``#pragma unroll 1``), for 8 elements and more;
* 8 or more dynamic accesses after unrolling, for 16 elements and more;
* any dynamic access to an array of 512 bytes or more.

Only those cases are reported as ``certain``; anything in between is left alone. An index
is *dynamic* when it depends on a kernel parameter, a thread/block index, a value loaded
from memory, or a local computed from those; it is *static* when it is built from
constants, template parameters and counters of loops with constant bounds.
"""
from __future__ import annotations

import re

from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable

from tree_sitter import Node

from cudalint.model.consteval import eval_int, sizeof_type
from cudalint.parse import captures, text

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.analysis.memory.names import NameScanner
    from cudalint.model.kernels import ArrayDecl, Function

_BUILTINS = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})
SELECT_MAX_ELEMENTS = 4          # always kept in registers (measured)
LOOP_MIN_ELEMENTS = 8
MANY_ACCESSES = 8
MANY_MIN_ELEMENTS = 16
BIG_BYTES = 512
_MAX_TRIP = 1 << 16
_TARGETS = """
(assignment_expression left: _ @t)
(update_expression argument: _ @t)
"""
_LOOPS = frozenset({"for_statement", "while_statement", "do_statement"})
_UNROLL_ONE = re.compile(r"#\s*pragma\s+unroll\s*\(?\s*1\s*\)?\s*$")


@dataclass
class IndexFact:
    node: Node                    # the subscript expression (outermost for n-D)
    kind: str                     # "static" | "dynamic" | "unknown"
    why: str                      # for dynamic: what makes it so ("parameter `k`")
    source: str                   # "memory" | "thread" | "parameter" | "counter" | ""
    in_runtime_loop: bool         # inside a loop with a run-time trip count / unroll 1
    repeat: int | None            # executions after unrolling constant loops (None: many)
    is_store: bool


@dataclass
class LocalArrayFacts:
    array: "ArrayDecl"
    elements: int
    bytes: int | None
    accesses: list[IndexFact] = field(default_factory=list)
    escapes: bool = False         # address taken / passed on: out of scope here

    @property
    def dynamic(self) -> list[IndexFact]:
        return [a for a in self.accesses if a.kind == "dynamic"]

    @property
    def has_read(self) -> bool:
        return any(not a.is_store for a in self.accesses)

    def local_memory_reason(self) -> str | None:
        """Why ptxas will put it in local memory (None: not certain)."""
        dyn = self.dynamic
        if not dyn or self.escapes or not self.has_read or \
                any(a.kind == "unknown" for a in self.accesses):
            return None
        if self.elements <= SELECT_MAX_ELEMENTS:
            return None
        if self.elements >= LOOP_MIN_ELEMENTS and any(a.in_runtime_loop for a in dyn):
            return "loop"
        total = 0
        for a in dyn:
            total += a.repeat if a.repeat is not None else MANY_ACCESSES
        if self.elements >= MANY_MIN_ELEMENTS and total >= MANY_ACCESSES:
            return "many"
        if self.bytes is not None and self.bytes >= BIG_BYTES:
            return "big"
        return None


class LocalArrayIndexing:
    """``ctx.analysis(LocalArrayIndexing).arrays``: facts for every local array."""

    def __init__(self, ctx: "UnitContext"):
        self.ctx = ctx
        self.model = ctx.model
        # shared by the arrays of a unit: a loop's trip count is asked for at every access
        # inside it, a local's single definition at every use in an index
        self.parents: dict[int, Node] = {}
        self._trips: dict[tuple[int, str], int | None] = {}
        self._definitions: dict[tuple[int, str], Node | None] = {}
        self._loops: dict[int, Node | None] = {}
        self._contexts: dict[int, tuple[bool, int | None]] = {}
        self._modified: dict[int, dict[str, list[int]]] = {}
        self._scanners: dict[int, NameScanner] = {}

    def parent(self, node: Node) -> Node | None:
        """The parent, from the paths the identifier scans descended (``Node.parent``
        descends from the root of the tree on every call)."""
        p = self.parents.get(node.id)
        return p if p is not None else node.parent

    def scanner(self, fn: "Function") -> "NameScanner":
        from cudalint.analysis.memory.names import NameScanner
        sc = self._scanners.get(fn.node.id)
        if sc is None:
            assert fn.body is not None
            sc = self._scanners[fn.node.id] = NameScanner(fn.body, self.ctx.unit.data,
                                                          self.parents)
        return sc

    def modified_within(self, fn: "Function", name: str, node: Node) -> bool:
        """Is ``name`` assigned (any operator) or incremented inside ``node``?"""
        sites = self._modification_sites(fn).get(name)
        if not sites:
            return False
        i = bisect_left(sites, node.start_byte)
        return i < len(sites) and sites[i] < node.end_byte

    def _modification_sites(self, fn: "Function") -> dict[str, list[int]]:
        """Start bytes of the targets of assignments and increments in the body, by their
        text: one query per function instead of a walk of every loop body per trip count
        (nested loops made that quadratic)."""
        sites = self._modified.get(fn.node.id)
        if sites is None:
            sites = self._modified[fn.node.id] = {}
            if fn.body is not None:
                for t in captures(_TARGETS, fn.body).get("t", []):
                    sites.setdefault(text(t), []).append(t.start_byte)
        return sites

    @cached_property
    def arrays(self) -> list[LocalArrayFacts]:
        out = []
        for arr in self.model.local_arrays:
            fn = arr.function
            if fn is None or fn.body is None or any(d is None for d in arr.dims) \
                    or not arr.dims:
                continue
            elements = 1
            for d in arr.dims:
                elements *= d
            size = sizeof_type(arr.elem_type)
            facts = LocalArrayFacts(arr, elements, size * elements if size else None)
            _Indexer(self, fn, arr, facts).run()
            out.append(facts)
        return out


class _Indexer:
    def __init__(self, owner: LocalArrayIndexing, fn: "Function", arr: "ArrayDecl",
                 facts: LocalArrayFacts):
        self.owner = owner
        self.fn = fn
        self.arr = arr
        self.facts = facts
        self.env = fn.constants
        self.params = {p.name for p in fn.params}

    @cached_property
    def uses(self) -> list[Node] | None:
        """Identifiers named like the array after its declaration, in the body, last
        first (the order of the depth-first walk this replaced: the finding names the
        first dynamic access in this order). None: more than MAX_USES, not followed."""
        from cudalint.analysis.memory.names import _is_declared_name
        from cudalint.analysis.memory.pointer_access import MAX_USES
        parent = self.owner.parent
        start = self.arr.name_node.end_byte
        scanner = self.owner.scanner(self.fn)
        spans = scanner.spans(self.arr.name)
        if len(spans) > MAX_USES:
            return None
        out = [ident for ident, _, _ in scanner.identifiers(self.arr.name, spans)
               if ident.start_byte >= start and not _is_declared_name(ident, parent)]
        out.reverse()
        return out

    def run(self) -> None:
        parent = self.owner.parent
        if self.uses is None:
            self.facts.escapes = True          # undecided: silent
            return
        for ident in self.uses:
            node = ident
            indices: list[Node] = []
            while True:
                up = parent(node)
                if up is None or up.type != "subscript_expression":
                    break
                arg = up.child_by_field_name("argument")
                if arg is None or arg.id != node.id:
                    break
                idx = up.child_by_field_name("indices")
                if idx is not None:
                    indices.extend(idx.named_children)
                node = up
            if len(indices) != len(self.arr.dims):
                self.facts.escapes = True      # decays to a pointer or partial row
                continue
            # one dimension indexed at run time is enough, whatever the others are
            kind, why, source = "static", "", ""
            for idx in indices:
                k, w, s = self.classify(idx, 0)
                if k == "dynamic":
                    kind, why, source = k, w, s
                    break
                if k == "unknown":
                    kind, why, source = k, w, s
            runtime, repeat = self.loop_context(node)
            self.facts.accesses.append(IndexFact(node, kind, why, source, runtime, repeat,
                                                 _is_store(node, parent)))

    # ---- index classification --------------------------------------------------------
    def classify(self, n: Node, depth: int) -> tuple[str, str, str]:
        if depth > 12:
            return "unknown", "", ""
        t = n.type
        if t in ("number_literal", "char_literal", "true", "false", "sizeof_expression"):
            return "static", "", ""
        if t == "identifier":
            return self.identifier(n, depth)
        if t == "field_expression":
            arg = n.child_by_field_name("argument")
            if arg is not None and text(arg) in _BUILTINS:
                return "dynamic", f"`{text(n)}`", "thread"
            return "unknown", "", ""
        if t == "subscript_expression":
            return "dynamic", f"a value loaded from memory (`{text(n)}`)", "memory"
        if t == "pointer_expression":
            return "dynamic", f"a value loaded from memory (`{text(n)}`)", "memory"
        if t in ("binary_expression", "unary_expression", "parenthesized_expression",
                 "conditional_expression", "cast_expression"):
            parts = [c for c in n.named_children if c.type != "type_descriptor"]
            return self.combine([self.classify(c, depth + 1) for c in parts])
        if t == "call_expression":
            name = text(n.child_by_field_name("function"))
            if name.startswith("__shfl") or name in ("__ldg", "__popc", "__ffs", "__clz",
                                                     "__brev", "__lane_id", "__activemask",
                                                     "atomicAdd", "atomicInc"):
                return "dynamic", f"`{text(n)}`", "thread"
            return "unknown", "", ""
        return "unknown", "", ""

    @staticmethod
    def combine(parts: list[tuple[str, str, str]]) -> tuple[str, str, str]:
        for p in parts:
            if p[0] == "unknown":
                return p
        for p in parts:
            if p[0] == "dynamic":
                return p
        return "static", "", ""

    def identifier(self, n: Node, depth: int) -> tuple[str, str, str]:
        name = text(n)
        if name in self.env or name in self.fn.template_params:
            return "static", "", ""
        if name in self.params:
            if self.fn.is_kernel:
                return "dynamic", f"the parameter `{name}`", "parameter"
            return "unknown", "", ""          # may be a constant after inlining
        loop = self.loop_of_counter(n, name)
        if loop is not None:
            trip = self.trip_count(loop, name)
            if trip is None or _unroll_one(loop):
                if _unroll_one(loop):
                    return "dynamic", f"the counter `{name}` of a loop kept rolled by " \
                                      "`#pragma unroll 1`", "counter"
                return "unknown", "", ""        # nvcc may bound it by the array size
            return "static", "", ""
        init = self.single_definition(name, n)
        if init is None:
            return "unknown", "", ""
        kind, why, source = self.classify(init, depth + 1)
        if kind == "dynamic":
            return kind, f"`{name}` (from {why})", source
        return kind, why, source

    def single_definition(self, name: str, use: Node) -> Node | None:
        """The initializer of a local that is declared once and never assigned again."""
        key = (self.fn.node.id, name)
        memo = self.owner._definitions
        if key not in memo:
            memo[key] = self._single_definition(name)
        return memo[key]

    def _single_definition(self, name: str) -> Node | None:
        init = None
        count = 0
        stack = [self.fn.body]
        while stack:
            node = stack.pop()
            if node.type == "init_declarator":
                d = node.child_by_field_name("declarator")
                if d is not None and d.type == "identifier" and text(d) == name:
                    count += 1
                    init = node.child_by_field_name("value")
            elif node.type == "assignment_expression":
                left = node.child_by_field_name("left")
                if left is not None and left.type == "identifier" and text(left) == name:
                    return None
            elif node.type == "update_expression":
                arg = node.child_by_field_name("argument")
                if arg is not None and text(arg) == name:
                    return None
            elif node.type == "declaration":
                for d in node.children_by_field_name("declarator"):
                    if d.type == "identifier" and text(d) == name:
                        count += 2          # declared without a value
            stack.extend(node.named_children)
        if count != 1 or init is None or init.type in ("argument_list", "initializer_list"):
            return None
        return init

    # ---- loops -----------------------------------------------------------------------
    def nearest_loop(self, node: Node) -> Node | None:
        """The innermost for/while/do statement around ``node`` in the body (memoised
        for every node on the way up: an expression nested thousands deep is walked
        once, not once per access in it)."""
        memo = self.owner._loops
        parent = self.owner.parent
        body_id = self.fn.body.id
        chain = []
        cur = node
        while True:
            if cur.id in memo:
                found = memo[cur.id]
                break
            p = parent(cur)
            if p is None or p.id == body_id:
                found = None
                break
            if p.type in _LOOPS:
                found = p
                break
            chain.append(cur)
            cur = p
        memo[cur.id] = found
        for x in chain:
            memo[x.id] = found
        return found

    def loop_of_counter(self, n: Node, name: str) -> Node | None:
        cur = self.nearest_loop(n)
        while cur is not None:
            if cur.type == "for_statement":
                init = cur.child_by_field_name("initializer")
                if init is not None and _declares(init, name):
                    return cur
            cur = self.nearest_loop(cur)
        return None

    def trip_count(self, loop: Node, name: str) -> int | None:
        key = (loop.id, name)
        memo = self.owner._trips
        if key not in memo:
            memo[key] = self._trip_count(loop, name)
        return memo[key]

    def _trip_count(self, loop: Node, name: str) -> int | None:
        init = loop.child_by_field_name("initializer")
        cond = loop.child_by_field_name("condition")
        upd = loop.child_by_field_name("update")
        if init is None or cond is None or upd is None:
            return None
        start = None
        for d in init.children_by_field_name("declarator"):
            if d.type == "init_declarator" and text(d.child_by_field_name("declarator")) \
                    == name:
                start = eval_int(text(d.child_by_field_name("value")), self.env)
        if start is None or cond.type != "binary_expression":
            return None
        op = text(cond.child_by_field_name("operator"))
        if text(cond.child_by_field_name("left")) != name:
            return None
        bound = eval_int(text(cond.child_by_field_name("right")), self.env)
        if bound is None:
            return None
        step = _step(upd, name, self.env)
        if step is None or step == 0:
            return None
        body = loop.child_by_field_name("body")
        if body is not None and self.owner.modified_within(self.fn, name, body):
            return None
        if op in ("<", "<=") and step > 0:
            last = bound - (op == "<")
            trip = max(0, (last - start) // step + 1)
        elif op in (">", ">=") and step < 0:
            last = bound + (op == ">")
            trip = max(0, (start - last) // (-step) + 1)
        elif op == "!=":
            if (bound - start) % step:
                return None
            trip = (bound - start) // step
        else:
            return None
        return trip if trip <= _MAX_TRIP else None

    def loop_context(self, node: Node) -> tuple[bool, int | None]:
        """(inside a loop with a run-time trip count or kept rolled, executions after
        unrolling the constant loops around it)."""
        loop = self.nearest_loop(node)
        if loop is None:
            return False, 1
        memo = self.owner._contexts        # loop id -> the context inside that loop
        chain = []
        cur: Node | None = loop
        while cur is not None and cur.id not in memo:
            chain.append(cur)
            cur = self.nearest_loop(cur)
        runtime, repeat = memo[cur.id] if cur is not None else (False, 1)
        for lp in reversed(chain):
            if lp.type == "for_statement":
                counter = _counter_name(lp)
                trip = self.trip_count(lp, counter) if counter else None
                if trip is None or _unroll_one(lp):
                    runtime, repeat = True, None
                elif repeat is not None:
                    repeat *= trip
            else:                                   # while, do
                runtime, repeat = True, None
            memo[lp.id] = (runtime, repeat)
        return memo[loop.id]


def _is_store(node: Node, parent: "Callable[[Node], Node | None]") -> bool:
    p = parent(node)
    while p is not None and p.type == "parenthesized_expression":
        node, p = p, parent(p)
    if p is None:
        return False
    if p.type == "assignment_expression":
        left = p.child_by_field_name("left")
        return left is not None and left.id == node.id and \
            text(p.child_by_field_name("operator")) == "="
    return False


def _declares(init: Node, name: str) -> bool:
    if init.type != "declaration":
        return False
    for d in init.children_by_field_name("declarator"):
        if d.type == "init_declarator" and text(d.child_by_field_name("declarator")) == name:
            return True
    return False


def _counter_name(loop: Node) -> str | None:
    init = loop.child_by_field_name("initializer")
    if init is None or init.type != "declaration":
        return None
    ds = [d for d in init.children_by_field_name("declarator") if d.type == "init_declarator"]
    if len(ds) != 1:
        return None
    return text(ds[0].child_by_field_name("declarator"))


def _step(upd: Node, name: str, env: dict[str, int]) -> int | None:
    if upd.type == "update_expression" and text(upd.child_by_field_name("argument")) == name:
        return 1 if "++" in text(upd) else -1
    if upd.type == "assignment_expression" and \
            text(upd.child_by_field_name("left")) == name:
        op = text(upd.child_by_field_name("operator"))
        v = eval_int(text(upd.child_by_field_name("right")), env)
        if v is None:
            return None
        return v if op == "+=" else -v if op == "-=" else None
    return None


def _unroll_one(loop: Node) -> bool:
    prev = loop.prev_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_sibling
    return prev is not None and prev.type == "preproc_call" and \
        _UNROLL_ONE.match(text(prev).strip()) is not None
