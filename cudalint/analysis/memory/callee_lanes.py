"""Accesses in the device functions a kernel calls, evaluated with the caller's lanes.

nvcc inlines a ``__device__`` function into its kernel: ``load(pts, i)`` reads
``pts[3 * i]`` with the kernel's ``i``, and its cost is the caller's. The lane engine
(``kernel_lanes``) evaluates one body; this module evaluates the bodies of the device
functions of the unit that a kernel calls, at each call, with the callee's parameters
bound to what the caller passes there: a pointer argument is the caller's pointer (its
space, region and per-lane offset: ``f(p + base)``, ``f(tile[ty])``), an integer argument
its lane vector, explicit template arguments are bound as ``instances.bind_call`` binds
them (``f<4>(...)``), and a type parameter a pointer argument deduces (``template
<typename T> f(const T *p)`` called with a ``float *``) is that pointee. The lanes that
reach the call are the callee's active lanes. A parameter whose argument the caller
cannot follow, or a reference, is opaque: an access through it is not reported (a device
function's pointer may point to either space).

An access found this way is placed in the device function; ``Reached`` says from which
kernel (and through which calls) at which line, how many loops the calls sit in (CL201
and CL202's hot-region gates add them to the callee's own), and the kernel whose work
``HotPath`` compares against. Budget: calls are followed MAX_CALL_DEPTH levels deep, a
callee body's accesses count against the lane engine's budgets (``lanes``: per body and
per file), each callee body is evaluated once per kernel and distinct binding (the same binding reached again from
another call of the kernel adds where it is reached from to the same accesses: one
finding; findings alike from several kernels are said once by
``figures.merge_reached``), and at most MAX_BINDINGS bindings per unit.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from operator import and_
from typing import TYPE_CHECKING, Callable

from tree_sitter import Node

from cudalint.analysis.memory.kernel_lanes import KernelLanes
from cudalint.analysis.memory.lane_values import WARP, Opaque, Ptr
from cudalint.analysis.memory.loops import bounded_trip, loop_nodes
from cudalint.model.instances import bind, bind_call, template_params
from cudalint.parse import captures, text

if TYPE_CHECKING:
    from cudalint.analysis.memory.figures import Access
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function

MAX_CALL_DEPTH = 3          # a kernel's callee's callee's callee
MAX_BINDINGS = 192         # callee bodies evaluated per unit, all bindings together
SHOWN = 3                   # places a message names before "and N more"
_FAILURES = (Opaque, RecursionError, OverflowError, ValueError, TypeError, AttributeError,
             IndexError)


@dataclass
class Reached:
    """How a device function's access is reached: the kernel, the calls' places
    ("`k` at line 42", " through `f` at line 9" for a callee's callee), the loops
    around the calls (run-time ones, iterations of constant-bound ones)."""
    kernel: "Function"
    int_values: Callable[[Node], tuple | None]      # the kernel's expression values
    call_runtime: int
    call_weight: int
    where: list[str] = field(default_factory=list)
    path: tuple = ()                                 # call node ids, outermost first
    call: Node | None = None                         # the outermost call (the kernel's)

    def describe(self) -> str:
        shown = self.where[:SHOWN]
        more = len(self.where) - len(shown)
        text_ = shown[0] if len(shown) == 1 else \
            f"{', '.join(shown[:-1])} and {shown[-1]}"
        return f"reached from {text_}" + (f" and {more} more" if more else "")


class CalleeLanes(KernelLanes):
    """The evaluator of a device function's body at one call: its parameters are the
    values the caller passed (``args``: name -> (value, thread axes, caller parameters
    it read)); the lanes that reach the call are its active lanes."""

    def __init__(self, ctx, fn, block, structs, bound, counters, args, active):
        super().__init__(ctx, fn, block, structs, bound, counters)
        self.args = args
        self.active0 = tuple(map(and_, self.active0, active))

    def _arg(self, node: Node, want_ptr: bool):
        got = self.args.get(text(node))
        if got is None or isinstance(got[0], Ptr) != want_ptr:
            raise Opaque(node)
        value, axes, params = got
        self.used_tid |= axes
        self.used_params |= params
        return value

    def _identifier(self, node: Node) -> tuple:
        if self.declaration_of(node) is None and self.fn.param(text(node)) is not None:
            return self._arg(node, False)
        return super()._identifier(node)

    def _pointer_identifier(self, node: Node) -> Ptr:
        name = text(node)
        p = self.fn.param(name) if self.declaration_of(node) is None else None
        if p is None:
            return super()._pointer_identifier(node)
        if p.pointer_depth + int(p.is_array) != 1 or p.is_reference:
            raise Opaque(node)
        got = self._arg(node, True)
        pointee = p.base_type
        same = " ".join(got.pointee.replace("const", " ").split()) == \
            " ".join(pointee.replace("const", " ").split())
        ptr = Ptr(got.space, got.region, got.offset, pointee, (),
                  got.array if same else None)
        if name in self.writes and self.fn.body is not None:
            ptr = self._bumped(self.fn.body, self.fn.body.start_byte, node, ptr)
        return ptr


class CalleeMemo:
    """Per unit (``ctx.analysis(CalleeMemo)``): the accesses of each binding evaluated,
    and how many bindings were."""

    def __init__(self, ctx: "UnitContext"):
        self.done: dict[tuple, list["Access"]] = {}
        self.calls: dict[int, list] = {}        # body id -> device_calls
        # the unit's device functions with a body, by name
        self.defined: dict[str, list["Function"]] = {}
        if b"__device__" in ctx.unit.data:
            for f in ctx.model.functions:
                if f.body is not None and not f.is_kernel and "__device__" in f.spaces:
                    self.defined.setdefault(f.name, []).append(f)
        self.spent = 0
        # kernels some of whose calls were not followed (MAX_BINDINGS spent): the bytes
        # their callees access are unknown, so "bytes no access uses" is not a fact
        self.cut: set[int] = set()


def device_calls(ctx: "UnitContext", fn: "Function") -> list[tuple[Node, "Function"]]:
    """The calls in ``fn``'s body of device functions the unit defines (one definition
    with that name and as many parameters as the call has arguments), memoised per
    body."""
    body = fn.body
    if body is None:
        return []
    memo = ctx.analysis(CalleeMemo).calls
    got = memo.get(body.id)
    if got is None:
        got = memo[body.id] = _device_calls(ctx, fn, body)
    return got


def _accessing(fn: "Function") -> bool:
    """The body has a subscript or a dereference to evaluate."""
    return bool(fn.nodes_in("subscript") or fn.nodes_in("deref"))


def _device_calls(ctx: "UnitContext", fn: "Function", body: Node
                  ) -> list[tuple[Node, "Function"]]:
    defined = ctx.analysis(CalleeMemo).defined
    if not defined:
        return []
    calls = [ident.parent for ident in fn.nodes_in("callee")]
    if b"<" in (body.text or b""):
        calls += [c for c in captures(
            "(call_expression function: (template_function)) @c", body).get("c", [])]
    if b"::" in (body.text or b""):
        # `util::second(p, i)`: a function of a namespace, found by its own name (the
        # one definition of that name and arity the unit holds, as for a plain call)
        calls += [c for c in captures(
            "(call_expression function: (qualified_identifier)) @c", body).get("c", [])]
    out = []
    for call in sorted(calls, key=lambda n: n.start_byte):
        fnode = call.child_by_field_name("function")
        while fnode is not None and fnode.type == "qualified_identifier":
            fnode = fnode.child_by_field_name("name")
        if fnode is None:
            continue
        name = text(fnode.child_by_field_name("name") if fnode.type == "template_function"
                    else fnode)
        args = call.child_by_field_name("arguments")
        n = len([a for a in (args.named_children if args else []) if a.type != "comment"])
        defs = [f for f in defined.get(name, ()) if f.node.id != fn.node.id and
                len(f.params) == n]
        if len(defs) == 1:
            out.append((call, defs[0]))
    return out


def bind_arguments(caller: KernelLanes, call: Node, callee: "Function"
                   ) -> tuple["Function", dict] | None:
    """The callee as this call instantiates it, and its parameters bound to the
    caller's values; None when a template argument is left unknown."""
    args = [a for a in call.child_by_field_name("arguments").named_children
            if a.type != "comment"]
    saved = caller.used_tid, caller.used_params
    bound: dict[str, tuple] = {}
    try:
        for p, arg in zip(callee.params, args):
            if p.is_reference:
                continue
            caller.used_tid, caller.used_params = set(), set()
            try:
                value = caller.pointer(arg) if p.is_pointer else caller.int_value(arg)
            except _FAILURES:
                continue
            bound[p.name] = (value, frozenset(caller.used_tid),
                             frozenset(caller.used_params))
        fnode = call.child_by_field_name("function")
        if callee.is_template and callee.instance is None:   # not bound already
            callee = _instantiate(caller, fnode, callee, bound)
            if callee is None:
                return None
    finally:
        caller.used_tid, caller.used_params = saved
    return callee, bound


def _instantiate(caller: KernelLanes, fnode: Node, callee: "Function", bound: dict
                 ) -> "Function | None":
    if fnode.type == "template_function":
        targs = fnode.child_by_field_name("arguments")
        args = [c for c in (targs.named_children if targs is not None else [])
                if c.type != "comment"]
        values: list[int | None] = []
        for a in args:
            try:
                vec = caller.int_value(a) if a.type != "type_descriptor" else None
            except _FAILURES:
                vec = None
            values.append(vec[0] if vec and len(set(vec)) == 1 else None)
        return bind_call(callee, args, values, caller.fn.type_bindings)
    # deduced: a type parameter that a pointer parameter's pointee names
    tys: dict[str, str] = {}
    for tp in template_params(callee) or []:
        if tp.kind != "type":
            return None
        for p in callee.params:
            got = bound.get(p.name)
            if p.base_type == tp.name and p.pointer_depth == 1 and got is not None \
                    and isinstance(got[0], Ptr):
                tys[tp.name] = " ".join(got[0].pointee.replace("const", " ").split())
        if tp.name not in tys:
            return None
    return bind(callee, {}, tys)


def _varies(value) -> bool:
    vec = value.offset if isinstance(value, Ptr) else value
    return any(len(set(vec[g:g + WARP])) > 1 for g in range(0, len(vec), WARP))


def _key(value) -> tuple:
    if isinstance(value, Ptr):
        return ("p", value.space, value.region, value.offset, value.pointee,
                id(value.array))
    return ("i", value)


def _line(ctx: "UnitContext", node: Node) -> int | None:
    return ctx.unit.own_line(node.start_byte)


def _call_depth(lanes: KernelLanes, call: Node) -> tuple[int, int]:
    """(run-time loops, iterations of constant-bound loops) around ``call`` in its
    caller's body."""
    body = lanes.fn.body
    runtime, weight = 0, 1

    def values(expr: Node) -> tuple | None:
        try:
            return lanes.int_value(expr)
        except _FAILURES:
            return None
    for lp in loop_nodes(body) if body is not None else []:
        if lp.start_byte <= call.start_byte < lp.end_byte:
            trip = bounded_trip(values, lp)
            if trip is None:
                runtime += 1
            else:
                weight *= max(1, trip)
    return runtime, weight


def reached_accesses(ctx: "UnitContext", kernel: "Function", lanes: KernelLanes,
                     make: Callable, evaluate: Callable, own: list["Access"],
                     level: int = 1, outer: Reached | None = None) -> list["Access"]:
    """The accesses of the device functions ``lanes.fn`` calls (and they call, to
    MAX_CALL_DEPTH), each evaluated with the binding of its call. ``make(values,
    counters)`` builds the caller's evaluator again (the figures by value and the
    unrolled copies of a loop re-evaluate the caller's arguments); ``evaluate(fn,
    lanes, make, seed)`` evaluates a body's accesses, their loop depths in that body
    set; ``own`` are the kernel's accesses (the hottest depth per space)."""
    memo = ctx.analysis(CalleeMemo)
    label = kernel.instance or kernel.name
    hot: dict[str, tuple[int, int]] = {}
    global_depth = 0
    for a in own:
        hot[a.space] = max(hot.get(a.space, (0, 1)), a.hot_depth)
        global_depth = max(global_depth, a.global_depth)
    out: list["Access"] = []
    for call, callee in device_calls(ctx, lanes.fn):
        if memo.spent >= MAX_BINDINGS:
            memo.cut.add(kernel.node.id)    # what its callees access is not all known
            break
        deeper = level < MAX_CALL_DEPTH and device_calls(ctx, callee)
        if not deeper and not _accessing(callee):
            continue                        # nothing to evaluate in it
        got = bind_arguments(lanes, call, callee)
        if got is None:
            continue
        callee, args = got
        try:
            active = lanes.active(call)
        except _FAILURES:
            continue
        line = _line(ctx, call)
        at = f" at line {line}" if line is not None else ""
        where = f"`{label}`{at}" if outer is None else \
            f"{outer.where[0]} through `{lanes.fn.instance or lanes.fn.name}`{at}"
        runtime, weight = _call_depth(lanes, call)
        if outer is not None:
            runtime, weight = runtime + outer.call_runtime, weight * outer.call_weight
        # per kernel: what the rules weigh a finding against (the kernel's other
        # accesses, its work) is the kernel's; merge_reached says alike findings once
        key = (kernel.node.id, kernel.instance, callee.node.id, callee.instance,
               lanes.block.dims, lanes.block.source,
               active, runtime, weight,
               tuple(sorted((n, _key(v)) for n, (v, _, _) in args.items())))
        if key in memo.done:
            for a in memo.done[key]:
                if where not in a.reached.where:
                    a.reached.where.append(where)
            continue
        memo.spent += 1
        callee = copy.copy(callee)          # one Function per binding: siblings, traffic

        def make_callee(values, counters=None, call=call, callee=callee, make=make):
            caller = make(values)
            bound = bind_arguments(caller, call, callee)
            return CalleeLanes(ctx, callee, caller.block, caller._structs, values,
                               counters, bound[1] if bound else {}, caller.active(call))
        clanes = CalleeLanes(ctx, callee, lanes.block, lanes._structs, lanes.bound, None,
                             args, active)
        seed = {name.encode() for name, (v, _, _) in args.items() if _varies(v)}
        try:
            found = evaluate(callee, clanes, make_callee, seed)
        except _FAILURES:
            found = []
        values = outer.int_values if outer is not None else \
            own[0].int_values if own else _values_of(lanes)
        reached = Reached(kernel, values,
                          runtime, weight, [where],
                          (outer.path if outer else ()) + (call.id,),
                          outer.call if outer is not None else call)
        for a in found:
            a.reached = reached
            r, w = a.loop_depth
            a.loop_depth = (r + runtime, w * weight)
            hr, hw = a.hot_depth
            a.hot_depth = max(hot.get(a.space, (0, 1)), (hr + runtime, hw * weight),
                              a.loop_depth)
            a.global_depth = max(global_depth, a.global_depth + runtime)
        memo.done[key] = found
        out.extend(found)
        if deeper:
            out.extend(reached_accesses(ctx, kernel, clanes, make_callee, evaluate, own,
                                        level + 1, reached))
    return out


def _values_of(lanes: KernelLanes) -> Callable[[Node], tuple | None]:
    def value(expr: Node) -> tuple | None:
        try:
            return lanes.int_value(expr)
        except _FAILURES:
            return None
    return value
