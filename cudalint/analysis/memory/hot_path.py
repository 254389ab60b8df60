"""The hot path of a kernel, from its loops and the device functions it calls: which global
accesses run O(1) times per thread while the kernel does O(n) work per thread elsewhere
(CL201's default findings, issue 20).

An access is off the hot path when the loops around it that have a run-time trip count
are fewer than those around a global memory access of the same kernel, or of a device
function of the unit that the kernel calls (at the call's nesting, plus the callee's own
loops). pytorch3d's forward rasterizer writes each pixel's K-record once, after a loop
over every face in which a device function loads the face: the record store runs once
per pixel, the face loads F times. ``lanes.loop_depths`` (the ``hot`` gate of CL201 and
CL202) sees only the kernel's body, where that loop holds no access at all.

A loop counts as run-time unless its trip count is a constant (``loops.bounded_trip``)
or its counter indexes a per-thread array of constant size (``for (k = 0; k < q_size;
++k) ... q[k]`` with ``Pixel q[150]``: at most 150 passes, whatever ``q_size`` is).
Loops with a constant trip count keep the weighting of ``loops.hot``; only the run-time
nesting decides here.

A ``for`` initializer runs once, before its loop (``for (f = first[p]; ...)``).

Measured on an H100 (fixtures/CL201/hot_path.json, tools/gputruth/hot_path.py): a 3- or
8-float record written array-of-structs once per thread after a loop over n = 64 to
4096 items (global loads and about 20 flops each) costs at most 0.5% of the kernel
against structure of arrays, for a run-time and for a constant n. A record walked
inside the loop that does the work is on the hot path, as deep as that work: K = 8
per-pixel records read in a loop that gathers and ends in atomics cost 12.5%.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.analysis.memory.loops import bounded_trip, loop_nodes
from cudalint.model.consteval import eval_int
from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.analysis.memory.figures import Access
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function


# how deep device functions are followed from a kernel (callee of a callee ...)
CALL_DEPTH = 4


@dataclass(frozen=True)
class WorkSite:
    """The deepest global access of a kernel in run-time loops: ``runtime`` loops with a
    run-time trip count around it, ``loop`` the innermost of them (in the kernel, or in
    ``callee`` when the access is in a device function the kernel calls)."""
    runtime: int
    loop: Node | None
    callee: str | None


class HotPath:
    """Per unit (``ctx.analysis(HotPath)``): the work site of each kernel, computed once."""

    def __init__(self, ctx: "UnitContext"):
        self.model = ctx.model
        self._work: dict[int, WorkSite | None] = {}
        self._callees: dict[tuple, tuple[int, Node | None, str | None] | None] = {}
        self._loops: dict[int, set[int]] = {}
        self._loop_list: dict[int, list[Node]] = {}

    def off_path(self, access: "Access") -> WorkSite | None:
        """The work site that runs in more run-time loops than ``access``, or None when
        the access is as deep as any (it is on the hot path)."""
        fn = access.kernel
        if fn.body is None or access.node is None:
            return None
        # an access in a device function: compared with the work of the kernel it is
        # reached from, at the loops around its calls plus its own
        reached = access.reached
        root = reached.kernel if reached is not None else fn
        key = root.body.id
        if key not in self._work:
            self._work[key] = self._kernel_work(
                root, reached.int_values if reached is not None else access.int_values)
        work = self._work[key]
        if work is None:
            return None
        mine = len(self._runtime_loops(fn, access.node.start_byte, access.int_values))
        if reached is not None:
            mine += reached.call_runtime
        return work if mine < work.runtime else None

    # -- the deepest global access of a kernel ----------------------------------------

    def _kernel_work(self, fn: "Function", int_values) -> WorkSite | None:
        best: WorkSite | None = None
        pointers = _global_pointers(fn, {p.name for p in fn.params if p.is_pointer})
        runtime = self._runtime_ids(fn, int_values)
        for _, callee, depth, loop in _sites(fn.body, pointers, runtime):
            name = None
            if callee is not None:
                got = self._callee_work(*callee, 1)
                if got is None:
                    continue
                inner, inner_loop, inner_name = got
                depth += inner
                if inner_loop is not None:
                    loop, name = inner_loop, inner_name
            if best is None or depth > best.runtime:
                best = WorkSite(depth, loop, name)
        return best

    def _callee_work(self, name: str, args: tuple[int, ...], level: int
                     ) -> tuple[int, Node | None, str | None] | None:
        """(run-time loops, innermost of them, function) of the deepest global access of
        device function ``name`` through its parameters at positions ``args``."""
        key = (name, args)
        if key in self._callees:
            return self._callees[key]
        self._callees[key] = None               # recursion: no work through a cycle
        best = None
        for fn in self.model.function_named(name):
            if fn.body is None or fn.is_kernel:
                continue
            params = fn.params
            names = {params[k].name for k in args if k < len(params) and
                     (params[k].is_pointer or params[k].is_reference)}
            if not names:
                continue
            pointers = _global_pointers(fn, names)
            ids = self._runtime_ids(fn, _constant_values(fn))
            for _, callee, runtime, loop in _sites(fn.body, pointers, ids):
                where = name if loop is not None else None
                if callee is not None:
                    if level >= CALL_DEPTH:
                        continue
                    got = self._callee_work(*callee, level + 1)
                    if got is None:
                        continue
                    runtime += got[0]
                    if got[1] is not None:
                        loop, where = got[1], got[2]
                if best is None or runtime > best[0]:
                    best = (runtime, loop, where)
        self._callees[key] = best
        return best

    def _runtime_ids(self, fn: "Function", int_values) -> set[int]:
        """The loops of ``fn`` whose trip count is not bounded by a constant (node ids)."""
        key = fn.body.id
        if key not in self._loops:
            sizes = _local_array_sizes(self.model, fn)
            self._loop_list[key] = loop_nodes(fn.body)
            self._loops[key] = {
                lp.id for lp in self._loop_list[key]
                if bounded_trip(int_values, lp) is None and _array_bound(sizes, lp) is None}
        return self._loops[key]

    def _runtime_loops(self, fn: "Function", at: int, int_values) -> list[Node]:
        """The loops of ``fn`` around byte ``at`` whose trip count is not bounded by a
        constant, innermost first."""
        ids = self._runtime_ids(fn, int_values)
        found = [lp for lp in self._loop_list[fn.body.id] if lp.id in ids and
                 lp.start_byte <= at < lp.end_byte and not _in_init(lp, at)]
        return sorted(found, key=lambda lp: -lp.start_byte)


def _in_init(loop: Node, at: int) -> bool:
    """``at`` is in the initializer of a ``for``: run once, before the loop."""
    init = loop.child_by_field_name("initializer") if loop.type == "for_statement" else None
    return init is not None and init.start_byte <= at < init.end_byte


# -- loops ---------------------------------------------------------------------------

def _array_bound(sizes: dict[str, int], loop: Node) -> int | None:
    """``for (k = 0; k < q_size; ++k) ... q[k]`` with ``q`` a per-thread array of
    constant size N declared in the function: at most N passes (more would index past
    its end)."""
    if not sizes or loop.type != "for_statement":
        return None
    cond = loop.child_by_field_name("condition")
    init = loop.child_by_field_name("initializer")
    if cond is None or init is None or cond.type != "binary_expression" or \
            text(cond.child_by_field_name("operator")) not in ("<", "<=", "!="):
        return None
    counter = text(cond.child_by_field_name("left"))
    if init.type != "declaration" or text(init).replace(" ", "").rstrip(";") \
            .split("=")[-1] != "0" or counter not in text(init):
        return None
    body = loop.child_by_field_name("body")
    if body is None:
        return None
    for node in _walk(body):
        if node.type != "subscript_expression":
            continue
        base = node.child_by_field_name("argument")
        idx = node.child_by_field_name("indices")
        if base is not None and idx is not None and base.type == "identifier" and \
                text(idx).strip("[] ") == counter and text(base) in sizes:
            return sizes[text(base)]
    return None


def _local_array_sizes(model, fn: "Function") -> dict[str, int]:
    out = {}
    for arr in model.local_arrays:
        if arr.function is not None and arr.function.node.id == fn.node.id:
            dims = arr.dims
            if dims and dims[0] is not None and dims[0] > 0:
                out[arr.name] = dims[0]
    return out


def _constant_values(fn: "Function"):
    """``int_values`` for a device function: constants only (its parameters are not
    known at a call site here)."""
    env = fn.constants

    def values(node: Node | None):
        if node is None:
            return None
        got = eval_int(text(node), env)
        return None if got is None else (got,)
    return values


# -- global accesses -----------------------------------------------------------------

def _global_pointers(fn: "Function", names: set[str]) -> set[str]:
    """``names`` and the pointers of ``fn`` declared from them (``const float* v = verts
    + f * 9;``) or assigned from them later."""
    out = set(names)
    declared: set[str] = set()
    pointer_locals: dict[str, list[Node]] = {}
    for d in _walk(fn.body):
        if d.type == "pointer_declarator":
            target = d
            while target is not None and target.type == "pointer_declarator":
                target = target.child_by_field_name("declarator")
            if target is not None and target.type == "identifier":
                declared.add(text(target))
        elif d.type == "init_declarator":
            target = d.child_by_field_name("declarator")
            while target is not None and target.type == "pointer_declarator":
                target = target.child_by_field_name("declarator")
            if target is not None and target.type == "identifier":
                pointer_locals.setdefault(text(target), []).append(
                    d.child_by_field_name("value"))
        elif d.type == "assignment_expression":
            left = d.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                pointer_locals.setdefault(text(left), []).append(
                    d.child_by_field_name("right"))
    pointer_locals = {k: v for k, v in pointer_locals.items() if k in declared}
    changed = True
    while changed:
        changed = False
        for name, values in pointer_locals.items():
            if name not in out and any(_mentions(v, out) for v in values):
                out.add(name)
                changed = True
    return out


def _sites(body: Node, pointers: set[str], runtime: set[int]):
    """Each access of ``body`` through a global pointer (subscript, dereference, atomic)
    as (node, None, depth, loop), and each call that hands one to a function as (node,
    (callee, argument positions), depth, loop): ``depth`` loops of ``runtime`` (node
    ids) around it, ``loop`` the innermost of them. One walk of the body."""
    stack: list[tuple[Node, int, Node | None]] = [(body, 0, None)]
    while stack:
        node, depth, loop = stack.pop()
        site = _site(node, pointers)
        if site is not False:
            yield node, site, depth, loop
        inner = (depth + 1, node) if node.id in runtime else (depth, loop)
        init = node.child_by_field_name("initializer") \
            if node.type == "for_statement" and node.id in runtime else None
        for child in reversed(node.named_children):
            if init is not None and child.id == init.id:
                stack.append((child, depth, loop))      # runs once, before the loop
            else:
                stack.append((child, *inner))


def _site(node: Node, pointers: set[str]):
    """None for an access through a global pointer, (callee, argument positions) for a
    call handing one to a function, False for anything else."""
    if node.type == "subscript_expression":
        base = node.child_by_field_name("argument")
        while base is not None and base.type in ("parenthesized_expression",
                                                 "subscript_expression"):
            base = base.child_by_field_name("argument") or (
                base.named_children[0] if base.named_child_count else None)
        if base is not None and base.type == "identifier" and text(base) in pointers:
            return None
    elif node.type == "pointer_expression" and \
            text(node.child_by_field_name("operator")) == "*":
        if _mentions(node.child_by_field_name("argument"), pointers):
            return None
    elif node.type == "call_expression":
        callee = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if callee is None or args is None:
            return False
        name = text(callee).split("<")[0].split("::")[-1].strip()
        passed = tuple(k for k, a in enumerate(a for a in args.named_children
                                                if a.type != "comment")
                       if _mentions(a, pointers))
        if passed and name.startswith("atomic"):
            return None
        if passed and name.isidentifier():
            return name, passed
    return False


def _mentions(node: Node | None, names: set[str]) -> bool:
    """``node``'s text names one of ``names`` (as a whole identifier)."""
    if node is None or not names:
        return False
    data = node.text or b""
    return any(m.group().decode() in names for m in _IDENT.finditer(data))


_IDENT = re.compile(rb"[A-Za-z_][A-Za-z_0-9]*")


def _walk(node: Node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))
