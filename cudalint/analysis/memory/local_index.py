"""How per-thread (local) arrays are indexed, and whether ptxas will have to put them in
local memory.

Registers cannot be indexed at run time, so an array indexed by a value that is not a
compile-time constant after unrolling lives in local memory (the stack frame) unless
nvcc rewrites the few dynamic accesses as selects over the elements. What nvcc 13 does
for sm_90 was measured with ``ptxas -v`` on arrays from 16 bytes to 4 KB indexed every
way (tools/gputruth/local_array_sweep.py, fixtures/CL204/sweep.json, and the fixtures in
fixtures/CL204/stack.json). It gives the array a stack frame for

* an index loaded from memory or computed from a thread index or parameter, inside a
  loop whose trip count is not known at compile time (or kept rolled with
  ``#pragma unroll 1``): 8 elements and more (4 stay in registers), or 4 records of
  32 bytes (2 stay);
* the counter of a loop with a run-time trip count, or a local stepped once per
  iteration of such a loop: 32 elements and more (up to 16 nvcc bounds the loop by the
  array and unrolls it);
* a running count that takes a data-dependent value (changed under a condition on data,
  or a data-dependent number of times): 16 elements and more (8 stay in registers);
* the counter of a loop with a constant trip count of 256 or more and no
  ``#pragma unroll`` (128 is unrolled fully);
* any dynamic index into an array of 1-, 2- or 8-byte elements (``unsigned char``,
  ``short``, ``double``), whatever its size: only 32-bit words are selected among
  registers;
* any dynamic index into a table initialised with constants, from 32 elements (16 and
  24 stay in registers);
* 8 or more dynamic accesses after unrolling, for 16 elements and more;
* any dynamic access to an array of 512 bytes or more (below that, one or two accesses
  of 32-bit words are selects).

Only those cases are reported as ``certain``; anything in between is left alone. An index
is *dynamic* when it depends on a kernel parameter, a thread/block index, a value loaded
from memory, or a local computed from those (through casts, masks and arithmetic, and
through ``++``/``+=``/``|=`` in a loop of run-time length); it is
*static* when it is built from constants, template parameters, counters of fully unrolled
loops, and elements of local tables with constant contents at static indices
(``int tbl[8] = {...}; val[tbl[i]]`` folds to constants).
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable

from tree_sitter import Node

from cudalint.model.consteval import sizeof_type
from cudalint.model.types import type_size
from cudalint.analysis.memory.local_loops import (
    _counter_name, _declared_name, _declares, _is_store, _mentions, _step, _unroll_one,
    _unroll_pragma, first_value, trip_with)
from cudalint.parse import captures, text

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.analysis.memory.names import NameScanner
    from cudalint.model.kernels import ArrayDecl, Function

_BUILTINS = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})
SELECT_MAX_ELEMENTS = 4          # always kept in registers (measured)
LOOP_MIN_ELEMENTS = 8
LOOP_MIN_RECORD_BYTES = 128      # 4 records of 32 bytes in a run-time loop (2 stay)
COUNTER_MIN_ELEMENTS = 32        # run-time loop counters (16 elements: unrolled by bound)
TABLE_MIN_ELEMENTS = 32          # tables of constants (16 and 24: registers)
ROLLED_TRIP = 256                # constant trip counts nvcc leaves rolled (128: unrolled)
UNROLLED_TRIP = 128
MANY_ACCESSES = 8
MANY_MIN_ELEMENTS = 16
BIG_BYTES = 512
RUNNING_MIN_ELEMENTS = 16        # a count advanced by data (8 stay in registers)
# which dynamic source names an index built of several: what no unrolling folds first
_HARDNESS = {"memory": 0, "running": 1, "thread": 2, "parameter": 3, "induction": 4,
             "runtime_counter": 5, "counter": 6}
_WORD_TYPES = frozenset({"float", "int", "unsigned", "unsigned int", "uint32_t", "int32_t",
                         "float2", "float3", "float4", "int2", "int3", "int4", "uint2",
                         "uint3", "uint4", "signed", "signed int", "uint"})
_NARROW_OR_WIDE = frozenset({"char", "unsigned char", "signed char", "uint8_t", "int8_t",
                             "bool", "short", "unsigned short", "int16_t", "uint16_t",
                             "double", "long long", "unsigned long long", "int64_t",
                             "uint64_t", "size_t", "long", "unsigned long", "__half",
                             "half", "__nv_bfloat16", "double2"})
_TARGETS = """
(assignment_expression left: _ @t)
(update_expression argument: _ @t)
"""
_LOOPS = frozenset({"for_statement", "while_statement", "do_statement"})


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
    constant_table: bool = False  # initialised with constants, never written

    @property
    def dynamic(self) -> list[IndexFact]:
        return [a for a in self.accesses if a.kind == "dynamic"]

    @property
    def has_read(self) -> bool:
        return any(not a.is_store for a in self.accesses)

    @property
    def word_elements(self) -> bool | None:
        """Elements made of 32-bit words (ptxas selects among those); None: unknown."""
        t = _bare(self.array.elem_type)
        if t in _WORD_TYPES:
            return True
        if t in _NARROW_OR_WIDE:
            return False
        return None

    def local_memory_reason(self) -> str | None:
        """Why ptxas will put it in local memory (None: not certain)."""
        dyn = self.dynamic
        if not dyn or self.escapes or not self.has_read or \
                any(a.kind == "unknown" for a in self.accesses):
            return None
        counters = [a for a in dyn if a.source in ("runtime_counter", "induction")]
        running = [a for a in dyn if a.source == "running"]
        others = [a for a in dyn if a.source not in ("runtime_counter", "induction",
                                                     "running")]
        if running and self.elements >= RUNNING_MIN_ELEMENTS:
            return "running"
        if counters and self.elements >= COUNTER_MIN_ELEMENTS:
            return "counter"
        counters += running
        if counters and not others and self.elements > 16:
            return None                             # between the measured sizes
        if not others:
            return None
        if self.word_elements is False and any(a.source != "counter" for a in others):
            return "type"
        if self.constant_table and self.elements >= TABLE_MIN_ELEMENTS:
            return "table"
        if self.elements <= SELECT_MAX_ELEMENTS and (
                self.bytes is None or self.bytes < LOOP_MIN_RECORD_BYTES):
            return None
        if any(a.in_runtime_loop for a in others) and (
                self.elements >= LOOP_MIN_ELEMENTS or
                (self.bytes is not None and self.bytes >= LOOP_MIN_RECORD_BYTES)):
            return "loop"
        total = 0
        for a in others:
            total += a.repeat if a.repeat is not None else MANY_ACCESSES
        if self.elements >= MANY_MIN_ELEMENTS and total >= MANY_ACCESSES:
            return "many"
        if self.bytes is not None and self.bytes >= BIG_BYTES:
            return "big"
        return None


def _bare(t: str) -> str:
    return " ".join(w for w in t.split() if w not in ("const", "volatile", "static",
                                                      "__restrict__", "register"))


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
        self._tables: dict[int, bool] = {}

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
            size = type_size(arr.elem_type, self.structs) or sizeof_type(arr.elem_type)
            facts = LocalArrayFacts(arr, elements, size * elements if size else None)
            facts.constant_table = self.constant_table(arr)
            _Indexer(self, fn, arr, facts).run()
            out.append(facts)
        return out

    @cached_property
    def structs(self):
        from cudalint.model.types import struct_types
        return struct_types(self.model.nodes("struct"))

    def constant_table(self, arr: "ArrayDecl") -> bool:
        """Initialised with a list of constants and never assigned an element again."""
        key = arr.name_node.id
        memo = self._tables
        if key not in memo:
            memo[key] = self._constant_table(arr)
        return memo[key]

    def _constant_table(self, arr: "ArrayDecl") -> bool:
        init = None
        for d in arr.node.children_by_field_name("declarator"):
            if d.type == "init_declarator" and \
                    _declared_name(d.child_by_field_name("declarator")) == arr.name:
                init = d.child_by_field_name("value")
        if init is None or init.type != "initializer_list" or not init.named_children:
            return False
        for v in init.named_children:
            if v.type == "comment":
                continue
            if v.type not in ("number_literal", "char_literal", "true", "false") and not (
                    v.type == "unary_expression" and v.named_children and
                    v.named_children[0].type == "number_literal"):
                return False
        fn = arr.function
        if fn is None:
            return False
        sites = self._modification_sites(fn)
        prefix = arr.name + "["
        return not any(k.replace(" ", "").startswith(prefix) for k in sites)


class _Indexer:
    def __init__(self, owner: LocalArrayIndexing, fn: "Function", arr: "ArrayDecl",
                 facts: LocalArrayFacts):
        self.owner = owner
        self.fn = fn
        self.arr = arr
        self.facts = facts
        self.env = fn.constants
        self.params = {p.name for p in fn.params}
        self.visiting: set[str] = set()

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
            if self.table_element(n, depth):
                return "static", "", ""
            element = self.local_element(n, depth)
            if element is not None:
                return element
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

    def table_element(self, n: Node, depth: int) -> bool:
        """``tbl[i]`` where ``tbl`` is a local table of constants of this function and
        every index is static: a constant once the loops around it unroll."""
        arg = n.child_by_field_name("argument")
        idx = n.child_by_field_name("indices")
        if arg is None or arg.type != "identifier" or idx is None:
            return False
        name = text(arg)
        tables = [a for a in self.owner.model.local_arrays
                  if a.name == name and a.function is self.fn]
        if len(tables) != 1 or not self.owner.constant_table(tables[0]):
            return False
        return all(self.classify(c, depth + 1)[0] == "static" for c in idx.named_children)

    @staticmethod
    def combine(parts: list[tuple[str, str, str]]) -> tuple[str, str, str]:
        """Unknown wins; among dynamic parts the one no unrolling can fold (data, a
        running count) before a thread index, a parameter or a loop counter: the message
        names what the index really depends on (`t[4 * i + idx[j]]` is data)."""
        for p in parts:
            if p[0] == "unknown":
                return p
        dynamic = [p for p in parts if p[0] == "dynamic"]
        if dynamic:
            return min(dynamic, key=lambda p: _HARDNESS.get(p[2], len(_HARDNESS)))
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
            return self.counter(loop, name)
        if name in self.visiting:
            return "static", "", ""             # `c = c + 1`: the other parts decide
        defs = self.definitions(name)
        if defs is None:
            return "unknown", "", ""
        self.visiting.add(name)
        try:
            parts = []
            for kind, node in defs:
                if kind == "value":
                    parts.append(self.classify(node, depth + 1))
                    continue
                # `++`, `+=` or `c = c + ...`: a running count once a loop of run-time
                # length steps it, whatever it is stepped by
                runtime, _ = self.loop_context(node)
                if runtime:
                    parts.append(self.running(name, node, [
                        v for k, v in defs if k == "value"], depth))
                if kind == "step":
                    right = node.child_by_field_name("right")
                    if right is not None:
                        parts.append(self.classify(right, depth + 1))
                elif not runtime:
                    parts.append(("static", "", ""))
        finally:
            self.visiting.discard(name)
        kind, why, source = self.combine(parts)
        if kind == "dynamic" and not why.startswith(f"`{name}`"):
            return kind, f"`{name}` (from {why})", source
        return kind, why, source

    def counter(self, loop: Node, name: str) -> tuple[str, str, str]:
        """The counter ``name`` (an identifier, or an element of a local array:
        ``for (o[0] = 0; o[0] < 2; ++o[0])``) of ``loop``."""
        trip = self.trip_count(loop, name)
        if _unroll_one(loop):
            return "dynamic", f"the counter `{name}` of a loop kept rolled by " \
                              "`#pragma unroll 1`", "counter"
        if trip is None:
            if self.modified_in_loop(loop, name):
                return "unknown", "", ""
            # up to 16 elements nvcc bounds the loop by the array and unrolls it
            return "dynamic", f"the counter `{name}` of a loop with a run-time trip " \
                              "count", "runtime_counter"
        if trip >= ROLLED_TRIP and not _unroll_pragma(loop):
            return "dynamic", f"the counter `{name}` of a {trip}-iteration loop that " \
                              "nvcc does not unroll fully", "counter"
        if trip > UNROLLED_TRIP and not _unroll_pragma(loop):
            return "unknown", "", ""        # between the measured trip counts
        return "static", "", ""

    def local_element(self, n: Node, depth: int) -> tuple[str, str, str] | None:
        """``o[0]`` or ``pi[0]``, an element at static indices of a local array of this
        function that is not a constant table: the counter of a loop around it (then as
        a counter), or an element every store gives a static value at static indices,
        outside loops of run-time length and conditions on data (``pi[q] = (e + q) % 3``
        in constant loops: a constant after unrolling, kept in registers by ptxas).
        None: neither; the caller reads it as loaded from memory."""
        arg = n.child_by_field_name("argument")
        idx = n.child_by_field_name("indices")
        if arg is None or arg.type != "identifier" or idx is None:
            return None
        name = text(arg)
        arrays = [a for a in self.owner.model.local_arrays
                  if a.name == name and a.function is self.fn]
        if len(arrays) != 1 or name in self.visiting or \
                len(idx.named_children) != len(arrays[0].dims):
            return None
        if any(self.classify(c, depth + 1)[0] != "static" for c in idx.named_children):
            return None
        loop = self.loop_of_counter(n, text(n))
        if loop is not None:
            return self.counter(loop, text(n))
        self.visiting.add(name)
        try:
            return ("static", "", "") if self.stored_constants(arrays[0], depth) else None
        finally:
            self.visiting.discard(name)

    def stored_constants(self, arr: "ArrayDecl", depth: int) -> bool:
        """Every use of ``arr`` after its declaration is an element at static indices,
        and every write to one is a plain ``=`` of a static value, not under a condition
        that is not static nor in a loop of run-time length (no initializer: the
        declaration must not give values either)."""
        for d in arr.node.children_by_field_name("declarator"):
            if d.type == "init_declarator" and \
                    _declared_name(d.child_by_field_name("declarator")) == arr.name:
                return False
        other = _Indexer(self.owner, self.fn, arr, LocalArrayFacts(arr, 0, None))
        uses = other.uses
        if uses is None or not uses:
            return False
        parent = self.owner.parent
        body_id = self.fn.body.id
        for ident in uses:
            node, count = ident, 0
            while True:
                up = parent(node)
                if up is None or up.type != "subscript_expression" or \
                        up.child_by_field_name("argument") is None or \
                        up.child_by_field_name("argument").id != node.id:
                    break
                idx = up.child_by_field_name("indices")
                for c in idx.named_children if idx is not None else ():
                    count += 1
                    if self.classify(c, depth + 1)[0] != "static":
                        return False
                node = up
            if count != len(arr.dims):
                return False
            up = parent(node)
            while up is not None and up.type == "parenthesized_expression":
                node, up = up, parent(up)
            if up is None:
                return False
            if up.type == "update_expression" or (
                    up.type == "pointer_expression" and
                    text(up.child_by_field_name("operator")) == "&"):
                return False
            if up.type != "assignment_expression" or \
                    up.child_by_field_name("left") is None or \
                    up.child_by_field_name("left").id != node.id:
                continue                           # a read
            right = up.child_by_field_name("right")
            if text(up.child_by_field_name("operator")) != "=" or right is None or \
                    self.classify(right, depth + 1)[0] != "static" or \
                    self.loop_context(up)[0]:
                return False
            cur = parent(up)
            while cur is not None and cur.id != body_id:
                cond = cur.child_by_field_name("condition") if cur.type in (
                    "if_statement", "conditional_expression", "while_statement",
                    "switch_statement") else None
                if cond is not None and cond.type == "condition_clause":
                    cond = cond.child_by_field_name("value") or (
                        cond.named_children[-1] if cond.named_children else None)
                if cur.type == "case_statement" or (
                        cond is not None and self.classify(cond, depth + 1)[0] != "static"):
                    return False
                cur = parent(cur)
        return True

    def definitions(self, name: str) -> list[tuple[str, Node]] | None:
        """Every value a local takes: ("value", initializer or right side of an
        assignment), ("step", an assignment that adds to it: ``+=``, ``c = c + k``) and
        ("update", ``++``/``--``); None when it is declared more than once or never given
        a value, or initialised from a list or a constructor."""
        key = (self.fn.node.id, name)
        memo = self.owner._definitions
        if key not in memo:
            memo[key] = self._all_definitions(name)
        return memo[key]

    def _all_definitions(self, name: str) -> list[tuple[str, Node]] | None:
        out: list[tuple[str, Node]] = []
        declared = 0
        stack = [self.fn.body]
        while stack:
            node = stack.pop()
            t = node.type
            if t == "init_declarator":
                d = node.child_by_field_name("declarator")
                if d is not None and d.type == "identifier" and text(d) == name:
                    declared += 1
                    value = node.child_by_field_name("value")
                    if value is None or value.type in ("argument_list", "initializer_list"):
                        return None
                    out.append(("value", value))
            elif t == "declaration":
                for d in node.children_by_field_name("declarator"):
                    if d.type == "identifier" and text(d) == name:
                        declared += 1
            elif t == "assignment_expression":
                left = node.child_by_field_name("left")
                if left is not None and left.type == "identifier" and text(left) == name:
                    right = node.child_by_field_name("right")
                    if right is None:
                        return None
                    # `c += k` and `c = c + k` step c: ("step", the assignment)
                    step = text(node.child_by_field_name("operator")) != "=" or \
                        _mentions(right, name)
                    out.append(("step", node) if step else ("value", right))
            elif t == "update_expression":
                arg = node.child_by_field_name("argument")
                if arg is not None and text(arg) == name:
                    out.append(("update", node))
            elif t in ("pointer_expression", "reference_declarator"):
                # `&c` passed somewhere may change it
                if t == "pointer_expression" and text(node.child_by_field_name("operator")) \
                        == "&" and text(node.child_by_field_name("argument")) == name:
                    return None
            stack.extend(node.named_children)
        if declared != 1 or not out:
            return None
        return out

    def running(self, name: str, step: Node, resets: list[Node],
                depth: int) -> tuple[str, str, str]:
        """A local changed by ``step`` (``++``, ``+=``, ``|=``, ``c = c + k``) in a loop
        of run-time length (``resets``: where it is given a value). Stepped once per
        iteration of the loops since its last reset, it moves with their counters (an
        induction variable: ``g[m] = ...; m += 1``) and nvcc treats it like one. Changed
        under a condition that depends on data (``if (v > t) keep[m++] = v;``, the bits of
        ``cubeindex |= ...``), or inside an inner loop of run-time length (``for (t <
        num) for (v < count) out[offset++] = ...``), it takes a data-dependent value: no
        unrolling makes it a constant, and ptxas keeps the array in registers only up to
        8 elements (measured: 16 and more local)."""
        parent = self.owner.parent
        loops = []
        cur = self.nearest_loop(step)
        while cur is not None and not any(cur.start_byte <= r.start_byte < cur.end_byte
                                          for r in resets):
            loops.append(cur)
            cur = self.nearest_loop(cur)
        if not loops:
            return "static", "", ""          # reset in the loop that steps it
        how = "a data-dependent number of times" if any(
            self.runtime_loop(lp) for lp in loops[:-1]) else ""
        node = parent(step)
        outer = loops[-1].id
        while not how and node is not None and node.id != outer:
            cond = node.child_by_field_name("condition") if node.type in (
                "if_statement", "conditional_expression") else None
            if cond is not None and cond.type == "condition_clause":   # C++: if (x)
                cond = cond.child_by_field_name("value") or (
                    cond.named_children[-1] if cond.named_children else None)
            if node.type == "case_statement" or (
                    cond is not None and self.classify(cond, depth + 1)[0] != "static"):
                how = "under a condition that depends on data"
            node = parent(node)
        op = text(step.child_by_field_name("operator")) \
            if step.type == "assignment_expression" else "++"
        count = op in ("++", "--", "+=", "-=")
        if how:
            what = "a running count, stepped" if count else f"changed (`{op}`)"
            return "dynamic", f"`{name}`, {what} {how}", "running"
        if not self.runtime_loop(loops[-1]):
            return "static", "", ""          # reset around constant loops: unrolled
        return ("dynamic", f"`{name}`, stepped once per iteration of a loop with a "
                           "run-time trip count", "induction")

    def runtime_loop(self, loop: Node) -> bool:
        """A loop whose trip count is not a compile-time constant, or kept rolled."""
        if loop.type != "for_statement":
            return True
        counter = _counter_name(loop)
        trip = self.trip_count(loop, counter) if counter else None
        return trip is None or _unroll_one(loop) or (
            trip >= ROLLED_TRIP and not _unroll_pragma(loop))

    def modified_in_loop(self, loop: Node, name: str) -> bool:
        body = loop.child_by_field_name("body")
        return body is not None and self.owner.modified_within(self.fn, name, body)

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
        trip = trip_with(loop, name, self.env, self._modified_body(name))
        if trip is not None:
            return trip
        # a bound or start made of the counters of constant loops around it (`for (a <
        # 12) for (b <= a)`): constant once they unroll (ptxas: 0-byte frame), at most
        # the largest trip count over their first and last values
        outer: list[tuple[str, int, int]] = []
        cur = self.nearest_loop(loop)
        while cur is not None and len(outer) < 3:
            counter = _counter_name(cur) if cur.type == "for_statement" else None
            if counter is not None and not self.runtime_loop(cur):
                first = first_value(cur, counter, self.env)
                step = _step(cur.child_by_field_name("update"), counter, self.env) \
                    if cur.child_by_field_name("update") is not None else None
                trip = self.trip_count(cur, counter)
                if first is not None and step and trip:
                    outer.append((counter, first, first + (trip - 1) * step))
            cur = self.nearest_loop(cur)
        if not outer:
            return None
        best = None
        envs = [dict(self.env)]
        for counter, first, last in outer:
            envs = [dict(e, **{counter: v}) for e in envs for v in (first, last)]
        for env in envs:
            trip = trip_with(loop, name, env, self._modified_body(name))
            if trip is None:
                return None
            best = trip if best is None else max(best, trip)
        return best

    def _modified_body(self, name: str) -> "Callable[[Node], bool]":
        return lambda body: self.owner.modified_within(self.fn, name, body)

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
                if trip is None or _unroll_one(lp) or (
                        trip >= ROLLED_TRIP and not _unroll_pragma(lp)):
                    runtime, repeat = True, None
                elif repeat is not None:
                    repeat *= trip
            else:                                   # while, do
                runtime, repeat = True, None
            memo[lp.id] = (runtime, repeat)
        return memo[loop.id]
