"""What a missing ``__restrict__`` makes a kernel execute: memory instructions the
compiler must keep because a pointer parameter may alias another (CL203 on sm_70+).

Since Volta the read-only data path and L1 are one cache, so ``const __restrict__`` no
longer speeds up a load by itself (measured on an H100: 0.997-1.003 run-time ratios). What
it still changes is what the compiler may assume about aliasing, and so how many loads
and stores the kernel executes (measured with nvcc 13 for sm_90, SASS instruction counts
in fixtures/CL203/counts.json):

* **reloads**: the same element loaded again after a store through another pointer
  parameter (or a barrier) that may write it: ``o[2*i] = a[i]*2; o[2*i+1] = a[i]*3;``
  loads ``a[i]`` twice; with ``a`` ``const __restrict__`` once. Types do not matter: nvcc
  reloads a ``float`` after an ``int`` store (no type-based alias analysis);
  ``__shared__`` stores never force a reload (another address space).
* **kept stores**: a store to a loop-invariant element inside a loop that also loads
  through another pointer parameter: ``for (j) o[i] += w[j] * x[j];`` stores ``o[i]`` on
  every iteration; with ``o`` ``__restrict__`` (or every loaded pointer
  ``__restrict__``) once, after the loop.
* **split vector loads**: fields of one element of a vector-typed read pointer
  (``float2``/``float4``/``int2``/``int4``/``double2``/..., or a struct the unit declares
  ``__align__(8|16)`` with fields of one 4- or 8-byte type) loaded around stores through
  another pointer that may alias them: ``o[i].x = a[i].y; o[i].y = a[i].x;`` loads
  ``a[i]`` with 2 loads of 4 bytes; with ``a`` ``const __restrict__`` with one 8-byte
  load. The count follows what nvcc's load/store vectorizer does (measured; the rules
  are in ``vector_split``): a store through a pointer to the *same* struct type blocks
  only the field it writes (a ``float2`` store and a ``float4`` load, or an ``int2`` and
  a ``float2``, may alias); loads join the vector started by the first load unless such
  a store comes between; each vector is at most 16 bytes and starts aligned to its size.
  Loads with a barrier, an atomic or a call between them are merged by neither build.

Only shapes the analysis can follow are reported: both loads in statements of one block
with no assignment to what the address names in between (for split vector loads: no
control flow between the first and the last load either, since the vectorizer works
inside one basic block); a store reached on every
iteration whose address nothing in the loop changes, in a loop without calls other than
math. ``thread_dependent`` says whether a load's address can differ between the lanes of
a warp (warp-uniform loads are never reported: issue 20).
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.analysis.memory.pointer_access import (_BY_VALUE_PREFIX, _MATH, ParamAccess,
                                                     PointerAccess)
from cudalint.analysis.memory.vector_split import SplitLoad, split_load
from cudalint.model.consteval import eval_int
from cudalint.parse import captures, text

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function

_LOOPS = frozenset({"for_statement", "while_statement", "do_statement"})
MAX_VISITS = 10_000     # definitions one thread_dependent question visits (issue 25)
_CONDITIONAL = frozenset({"if_statement", "switch_statement", "conditional_expression",
                          "lambda_expression", "case_statement"}) | _LOOPS
_BARRIERS = re.compile(r"^(?:__syncthreads(?:_count|_and|_or)?|__syncwarp|__threadfence"
                       r"(?:_block|_system)?|(?:\w+::)*sync|__barrier_sync)$")
_TARGETS = """
(assignment_expression left: (identifier) @t)
(update_expression argument: (identifier) @t)
(init_declarator declarator: (identifier) @t)
(init_declarator declarator: (pointer_declarator declarator: (identifier) @t))
(init_declarator declarator: (reference_declarator (identifier) @t))
(declaration declarator: (identifier) @t)
(declaration declarator: (pointer_declarator declarator: (identifier) @t))
"""
_DEFS = """
(init_declarator declarator: (identifier) @n value: _ @v)
(init_declarator declarator: (pointer_declarator declarator: (identifier) @n) value: _ @v)
(init_declarator declarator: (reference_declarator (identifier) @n) value: _ @v)
(assignment_expression left: (identifier) @n right: _ @v)
"""
_DECLARED = "(declaration declarator: _ @d)"
_DECLARATORS = frozenset({"init_declarator", "pointer_declarator", "reference_declarator",
                          "array_declarator"})
_THREAD = frozenset({"threadIdx", "__lane_id", "laneid", "__laneid"})
_UNIFORM = frozenset({"blockIdx", "blockDim", "gridDim", "warpSize"})


@dataclass
class Reload:
    """One element of a read pointer loaded ``count`` times where once would do."""
    param: str
    key: str                    # the load as written, e.g. "a[i]"
    count: int
    loads: list[Node]
    aliasers: list[str]         # pointers whose stores (or "a barrier") force the reloads
    in_loop: bool


@dataclass
class KeptStore:
    """A store kept inside a loop because loads through ``readers`` may read it."""
    param: str
    key: str
    store: Node
    loop: Node
    counter: str | None
    trip: int | None            # constant trip count, None when known only at run time
    readers: list[str] = field(default_factory=list)


@dataclass
class KernelEffects:
    reloads: dict[str, Reload] = field(default_factory=dict)       # by read pointer
    kept_stores: dict[str, KeptStore] = field(default_factory=dict)  # by written pointer
    split_loads: dict[str, SplitLoad] = field(default_factory=dict)  # by read pointer


class AliasEffects:
    """``ctx.analysis(AliasEffects).kernel(fn)``: reloads and kept stores of one kernel."""

    def __init__(self, ctx: "UnitContext"):
        self.ctx = ctx
        self._kernels: dict[int, KernelEffects] = {}
        self._facts: dict[int, _Kernel] = {}

    def _kernel(self, fn: "Function") -> "_Kernel":
        k = self._facts.get(fn.node.id)
        if k is None:
            k = self._facts[fn.node.id] = _Kernel(self.ctx, fn)
        return k

    def kernel(self, fn: "Function") -> KernelEffects:
        out = self._kernels.get(fn.node.id)
        if out is None:
            out = self._kernels[fn.node.id] = self._kernel(fn).effects()
        return out

    def uniform_loads(self, fn: "Function", acc: ParamAccess) -> bool:
        """Every load of the parameter in the kernel body has the same address for all
        lanes of a warp (a constant index, ``p[blockIdx.x]``, a CuPy 0-d ``a_val[0]``)."""
        k = self._kernel(fn)
        loads = [n for n in acc.loads if k.in_body(n)]
        if len(loads) != len(acc.loads):
            return False                   # loads in callees: not followed here
        # a load inside another's address reads a subset of its names, so asking the
        # outer one answers for both (p[p[p[...]]] 1,500 deep in a fuzzed buffer: every
        # load walked its whole subtree, 166 s)
        outer: list[Node] = []
        for n in sorted(loads, key=lambda n: (n.start_byte, -n.end_byte)):
            if not outer or n.end_byte > outer[-1].end_byte:
                outer.append(n)
        return bool(loads) and not any(k.thread_dependent(n) for n in outer)


class _Kernel:
    def __init__(self, ctx: "UnitContext", fn: "Function"):
        self.ctx = ctx
        self.fn = fn
        self.facts = ctx.analysis(PointerAccess)
        self.parent = self.facts.body_facts(fn).parent
        self.accesses = {a.param.name: a for a in self.facts.kernel_params(fn)}
        self._contexts: dict[int, tuple[Node | None, bool]] = {}
        self._loops: dict[int, Node | None] = {}
        self._uniform: set[str] = set()         # locals thread_dependent found uniform
        self._names: dict[int, list[str]] = {}  # names_of, by node id
        self._visits = self._cycles = 0

    def in_body(self, n: Node) -> bool:
        body = self.fn.body
        return body is not None and body.start_byte <= n.start_byte < body.end_byte

    # ---- facts shared by both shapes -------------------------------------------------
    @cached_property
    def modifications(self) -> dict[str, list[int]]:
        """Start bytes of assignments, increments and declarations of each local name."""
        out: dict[str, list[int]] = {}
        for t in captures(_TARGETS, self.fn.body).get("t", []):
            out.setdefault(text(t), []).append(t.start_byte)
        for sites in out.values():
            sites.sort()
        return out

    @cached_property
    def definitions(self) -> dict[str, list[Node]]:
        out: dict[str, list[Node]] = {}
        caps = captures(_DEFS, self.fn.body)
        for n, v in zip(caps.get("n", []), caps.get("v", [])):
            out.setdefault(text(n), []).append(v)
        return out

    @cached_property
    def declared(self) -> set[str]:
        """Names of the locals declared in the body."""
        out = set()
        for d in captures(_DECLARED, self.fn.body).get("d", []):
            while d is not None and d.type in _DECLARATORS:
                d = d.child_by_field_name("declarator") or \
                    next((c for c in d.named_children if c.type == "identifier"), None)
            if d is not None and d.type == "identifier":
                out.add(text(d))
        return out

    @cached_property
    def calls(self) -> list[tuple[int, str]]:
        out = []
        for c in captures("(call_expression function: _ @f)", self.fn.body).get("f", []):
            out.append((c.start_byte, text(c).split("<", 1)[0].strip()))
        return out

    @cached_property
    def barriers(self) -> list[int]:
        return [pos for pos, name in self.calls if _BARRIERS.match(name)]

    def modified_between(self, names: set[str], start: int, end: int) -> bool:
        for name in names:
            sites = self.modifications.get(name)
            if sites:
                i = bisect_left(sites, start)
                if i < len(sites) and sites[i] < end:
                    return True
        return False

    def names_in(self, n: Node) -> set[str]:
        """Names of the values ``n`` reads (what an address depends on)."""
        return set(self.names_of(n))

    def names_of(self, n: Node) -> list[str]:
        """The distinct names ``n`` reads, in source order (memoised per node: the
        definitions of a local are asked about once per question that reaches them)."""
        found = self._names.get(n.id)
        if found is None:
            found = self._names[n.id] = list(dict.fromkeys(text(i) for i in _identifiers(n)))
        return found

    def thread_dependent(self, n: Node, seen: frozenset[str] = frozenset()) -> bool:
        """Can the value of ``n`` differ between lanes of a warp? Kernel parameters,
        ``blockIdx``/``blockDim``/``gridDim``, constants and locals computed from them
        are uniform; ``threadIdx`` and what is computed from it are not."""
        if len(seen) > 32:
            return True                         # a chain of locals too long to follow
        # and at most MAX_VISITS definitions visited per question (issue 25): paths through
        # locals with several definitions multiply (a 70 KB fuzzed file: over 240 s)
        if not seen:
            self._visits = 0
        self._visits += 1
        if self._visits > MAX_VISITS:
            return True
        params = {p.name for p in self.fn.params}
        for name in self.names_of(n):
            if name in _THREAD:
                return True
            if name in seen:
                self._cycles += 1
                continue
            if name in _UNIFORM or name in params or name in self._uniform:
                continue
            defs = self.definitions.get(name, ())
            if not defs and name in self.declared:
                return True                 # a local whose value is not followed here
            cycles = self._cycles
            for v in defs:
                if self.thread_dependent(v, seen | {name}):
                    return True
            if self._visits <= MAX_VISITS and self._cycles == cycles:
                # every definition followed to the end, no way back to a name being
                # followed: the same answer from any question
                self._uniform.add(name)
        return False

    def unconditional_statement(self, n: Node, stop: Node) -> Node | None:
        """The statement of the block ``stop`` that holds ``n``, when every evaluation of
        that statement evaluates ``n`` (no if, loop, ``?:`` or ``&&``/``||`` between)."""
        cur = n
        while True:
            up = self.parent(cur)
            if up is None:
                return None
            if up.id == stop.id:
                return cur
            if up.type in _CONDITIONAL:
                return None
            if up.type == "binary_expression" and \
                    text(up.child_by_field_name("operator")) in ("&&", "||") and \
                    up.child_by_field_name("left").id != cur.id:
                return None
            cur = up

    def statement_context(self, n: Node) -> tuple[Node | None, bool]:
        """(the innermost block around ``n``, whether every evaluation of the block's
        statement holding ``n`` evaluates ``n``). Memoised for every node on the way up:
        a load deep in a long sum is walked once, not once per load (quadratic)."""
        memo = self._contexts
        chain: list[tuple[Node, Node]] = []
        cur = n
        while True:
            found = memo.get(cur.id)
            if found is not None:
                break
            up = self.parent(cur)
            if up is None:
                found = memo[cur.id] = (None, False)
                break
            if up.type == "compound_statement":
                found = memo[cur.id] = (up, True)
                break
            chain.append((cur, up))
            cur = up
        block, unconditional = found
        for child, up in reversed(chain):
            if up.type in _CONDITIONAL or (
                    up.type == "binary_expression" and
                    text(up.child_by_field_name("operator")) in ("&&", "||") and
                    up.child_by_field_name("left").id != child.id):
                unconditional = False
            memo[child.id] = (block, unconditional)
        return memo[n.id]

    def nearest_loop(self, n: Node) -> Node | None:
        """The innermost loop around ``n`` in the body (memoised like statement_context)."""
        memo = self._loops
        body = self.fn.body.id
        chain = []
        cur = n
        while True:
            if cur.id in memo:
                found = memo[cur.id]
                break
            up = self.parent(cur)
            if up is None or up.id == body:
                found = None
                break
            if up.type in _LOOPS:
                found = up
                break
            chain.append(cur)
            cur = up
        memo[cur.id] = found
        for x in chain:
            memo[x.id] = found
        return found

    def effects(self) -> KernelEffects:
        out = KernelEffects()
        if self.fn.body is None:
            return out
        for name, acc in self.accesses.items():
            if acc.read_only and not acc.param.restrict:
                r = self.reload(acc)
                if r is not None:
                    out.reloads[name] = r
                else:
                    split = split_load(self, acc)
                    if split is not None:
                        out.split_loads[name] = split
            elif acc.status == "written" and not acc.param.restrict:
                k = self.kept_store(acc)
                if k is not None:
                    out.kept_stores[name] = k
        return out

    # ---- reloads ---------------------------------------------------------------------
    def store_points(self, exclude: str) -> list[tuple[int, str]]:
        """Where stores through other non-restrict pointer parameters complete (the end
        of the assignment: its right side is evaluated first), and barriers."""
        out = []
        for name, acc in self.accesses.items():
            if name == exclude or acc.param.restrict:
                continue
            for node, _ in acc.writes:
                if self.in_body(node):
                    out.append((node.end_byte, name))
        out.extend((pos, "") for pos in self.barriers)
        return sorted(out)

    def reload(self, acc: ParamAccess) -> Reload | None:
        by_key: dict[str, list[Node]] = {}
        for n in acc.loads:
            if self.in_body(n) and n.type in ("subscript_expression", "pointer_expression",
                                              "field_expression"):
                by_key.setdefault("".join(text(n).split()), []).append(n)
        stores = None
        best: Reload | None = None
        for key, loads in by_key.items():
            if len(loads) < 2 or not self.thread_dependent(loads[0]):
                continue
            if stores is None:
                stores = self.store_points(acc.param.name)
                if not stores:
                    return None
                positions = [pos for pos, _ in stores]
            names = {text(i) for i in _identifiers(loads[0])}
            by_block: dict[int, list[Node]] = {}
            for n in loads:
                block, unconditional = self.statement_context(n)
                if block is not None and unconditional:
                    by_block.setdefault(block.id, []).append(n)
            for chain in by_block.values():
                chain.sort(key=lambda x: x.start_byte)
                runs: list[tuple[list[Node], list[str]]] = [([chain[0]], [])]
                for a, b in zip(chain, chain[1:]):
                    if self.modified_between(names, a.end_byte, b.start_byte):
                        runs.append(([b], []))              # a different element now
                        continue
                    lo = bisect_right(positions, a.start_byte)
                    hi = bisect_left(positions, b.start_byte)
                    if lo < hi:                            # a store or barrier between
                        kept, why = runs[-1]
                        kept.append(b)
                        for _, w in stores[lo:hi]:
                            if w not in why:
                                why.append(w)
                for kept, why in runs:
                    if len(kept) >= 2 and (best is None or len(kept) > best.count):
                        best = Reload(acc.param.name, key, len(kept), kept,
                                      [w or "a barrier" for w in why],
                                      self.inside_loop(kept[-1]))
        return best

    def inside_loop(self, n: Node) -> bool:
        return self.nearest_loop(n) is not None

    # ---- stores kept in a loop ---------------------------------------------------------
    def kept_store(self, acc: ParamAccess) -> KeptStore | None:
        for node, _ in acc.writes:
            if node.type != "assignment_expression" or not self.in_body(node):
                continue
            loop = self.nearest_loop(node)
            if loop is None:
                continue
            body = loop.child_by_field_name("body")
            if body is None or self.unconditional_statement(node, loop) is None:
                continue
            left = node.child_by_field_name("left")
            key = "".join(text(left).split())
            names = {text(i) for i in _identifiers(left)}
            if self.modified_between(names, loop.start_byte, loop.end_byte):
                continue
            found = self._kept(acc, loop, key, node)
            if found is not None:
                return found
        return None

    def _kept(self, acc: ParamAccess, loop: Node, key: str, store: Node) -> KeptStore | None:
        lo, hi = loop.start_byte, loop.end_byte
        for pos, name in self.calls:
            if not lo <= pos < hi:
                continue
            if _BARRIERS.match(name) or not (
                    _MATH.match(name) or _BY_VALUE_PREFIX.match(name.split("::")[-1])):
                return None             # a call may read or write anything
        if "asm" in text(loop):
            return None
        for node, _ in acc.writes:
            if lo <= node.start_byte < hi and (node.type != "assignment_expression" or "".join(
                    text(node.child_by_field_name("left")).split()) != key):
                return None
        for node in acc.loads:
            if lo <= node.start_byte < hi and "".join(text(node).split()) != key:
                return None
        readers = []
        for name, other in self.accesses.items():
            if name == acc.param.name or other.param.restrict:
                continue
            if any(lo <= n.start_byte < hi for n in other.loads):
                readers.append(name)
            if any(lo <= n.start_byte < hi for n, _ in other.writes):
                return None
        if not readers:
            return None
        counter, trip = self.trip(loop)
        return KeptStore(acc.param.name, key, store, loop, counter, trip, readers)

    def trip(self, loop: Node) -> tuple[str | None, int | None]:
        """(counter, constant trip count) of ``for (int j = A; j < B; j++)``."""
        if loop.type != "for_statement":
            return None, None
        init = loop.child_by_field_name("initializer")
        cond = loop.child_by_field_name("condition")
        upd = loop.child_by_field_name("update")
        if init is None or init.type != "declaration":
            return None, None
        decl = init.child_by_field_name("declarator")
        if decl is None or decl.type != "init_declarator":
            return None, None
        counter = text(decl.child_by_field_name("declarator"))
        start = eval_int(text(decl.child_by_field_name("value")), self.fn.constants)
        if cond is None or cond.type != "binary_expression" or upd is None or \
                text(cond.child_by_field_name("left")) != counter or \
                text(upd).replace(" ", "") not in (f"{counter}++", f"++{counter}"):
            return counter, None
        bound = eval_int(text(cond.child_by_field_name("right")), self.fn.constants)
        op = text(cond.child_by_field_name("operator"))
        if start is None or bound is None or op not in ("<", "<="):
            return counter, None
        return counter, max(0, bound - start + (op == "<="))


def _identifiers(n: Node) -> list[Node]:
    """Identifiers in ``n`` that name values (not called functions, not field names)."""
    out = []
    stack = [n]
    while stack:
        cur = stack.pop()
        if cur.type == "identifier":
            out.append(cur)
            continue
        if cur.type == "field_expression":
            arg = cur.child_by_field_name("argument")
            if arg is not None:
                stack.append(arg)
            continue
        if cur.type == "call_expression":
            args = cur.child_by_field_name("arguments")
            if args is not None:
                stack.append(args)
            continue
        stack.extend(cur.named_children)
    return out
