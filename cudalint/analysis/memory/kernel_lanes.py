"""The lane engine's evaluator: the byte address of a kernel's accesses, lane by lane.

``KernelLanes`` evaluates expressions of one kernel over the columns of lane_values:
integers (literals, thread and block built-ins, parameters, locals followed to their
reaching definitions, accumulated updates), pointers (parameters, ``__shared__`` arrays,
arithmetic, casts, ``&``), lvalues (subscripts, dereferences, struct and vector fields,
with their width), and which lanes reach an access (``if`` conditions on the thread
index). Anything it cannot follow raises ``Opaque``.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property
from operator import add, invert, mul, neg, not_
from typing import TYPE_CHECKING, Callable

from tree_sitter import Node

from cudalint.analysis.memory.lane_values import (BLOCK_IDX_SAMPLES, COUNTER_SAMPLES,
                                                  GRID_DIM_SAMPLES, PARAM_SAMPLES, UNKNOWN,
                                                  WARP, Opaque, Ptr, _binop, _columns,
                                                  _plus_scaled, _sample_invariant,
                                                  _sampled_columns)
from cudalint.model.instances import bound_type, instance_array
from cudalint.model.launch_shape import BlockShape
from cudalint.model.types import VECTOR_COMPONENT as _VECTOR_COMPONENT, StructType, type_size
from cudalint.parse import text
from cudalint.analysis.memory.kernel_lanes_conditions import (condition_mask,
                                                              expression_guards,
                                                              settled_shared, strip)
from cudalint.analysis.memory.names import self_bump
from cudalint.analysis.memory.tail_paths import first_lane_only, one_lane_branch

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import ArrayDecl, Function

_VECTOR_FIELDS = {"x": 0, "y": 1, "z": 2, "w": 3}
_INT_WORDS = ("int", "long", "short", "char", "size_t", "unsigned", "signed", "auto",
              "int8_t", "int16_t", "int32_t", "int64_t", "uint", "index_t", "bool")


@dataclass
class _Decl:
    node: Node                  # declaration / parameter_declaration
    declarator: Node            # init_declarator or plain declarator
    scope: Node                 # the block / for statement where it lives
    type_text: str
    pointer: int
    value: Node | None


class KernelLanes:
    """Evaluates the address of every access of one kernel, lane by lane."""

    def __init__(self, ctx: "UnitContext", fn: "Function", block: BlockShape,
                 structs: Callable[[], dict[str, StructType]],
                 bound: dict[str, int] | None = None,
                 counters: dict[int, int] | None = None):
        self.ctx, self.fn, self.block, self._structs = ctx, fn, block, structs
        # scalar parameters whose value is known (a constant every launch passes)
        self.bound = bound or {}
        # loop counters held at one iteration (declaration node id -> value): the
        # address of one unrolled copy of a loop body (CL202's vector accesses)
        self.counters = counters or {}
        # the scalar parameters an evaluation read (bound or sampled unknowns)
        self.used_params: set[str] = set()
        self.env = fn.constants
        self.cols, self.groups, self.active0, self.tid = _columns(block.dims)
        self.n = len(self.cols)
        self._sampled: dict[tuple[int, ...], tuple] = {}
        self.used_tid: set[str] = set()
        self._writes: dict[str, list[Node]] | None = None
        self._counter_ids: dict[tuple[int, int], int] = {}
        self._visiting: set[int] = set()
        # a declared variable's value does not depend on where it is used: evaluate it
        # once per kernel (value or Opaque, and the thread axes it reads)
        self._values: dict[tuple[int, str, bool],
                           tuple[object, frozenset[str], frozenset[str]]] = {}
        self._conditions: dict[int, tuple[tuple | None, frozenset[str]]] = {}
        # evaluating a branch condition: a settled ``__shared__`` scalar reads as a
        # uniform unknown there (``if (e == best)``), nowhere else
        self.in_condition = False
        # (if statement, branch) -> a tail path's loop values and window (tail_paths)
        self.tail_windows: dict[tuple[int, bool], tuple[tuple, int] | None] = {}

    @property
    def structs(self) -> dict[str, StructType]:
        return self._structs()

    @cached_property
    def _declarations(self) -> dict[str, list[_Decl]]:
        """Local declarations of the kernel by declared name (only those whose parent is
        a scope: a block or a for statement)."""
        table: dict[str, list[_Decl]] = {}
        for decl, declared in self.declared:
            if not declared:
                continue
            scope = decl.parent
            if scope is None or scope.type not in _SCOPES:
                continue
            for name, declarator, depth, value in declared:
                table.setdefault(name, []).append(_Decl(
                    decl, declarator, scope, text(decl.child_by_field_name("type")), depth,
                    value))
        return table

    @cached_property
    def declared(self) -> list[tuple[Node, list[tuple[str, Node, int, Node | None]]]]:
        """Every declaration of the kernel with what it declares (``_declared``)."""
        return [(decl, _declared(decl)) for decl in self.fn.nodes_in("declaration")]

    # -- helpers --------------------------------------------------------------------
    def type_size(self, name: str) -> int | None:
        """sizeof a type: a built-in, a struct of the unit, or a name that a typedef, a
        ``using`` alias or an object-like macro of the unit gives one of those."""
        if self.fn.type_bindings:
            name = bound_type(self.fn, name)
        size = type_size(name, self.structs)
        if size is None:
            size = self.ctx.model.type_aliases.size(
                " ".join(name.replace("const", " ").split()), self.structs)
        return size

    def const(self, v: int) -> tuple:
        return (v,) * self.n

    def sampled(self, values: tuple[int, ...]) -> tuple:
        self.used_tid.add(UNKNOWN)          # the value depends on a sampled unknown
        vec = self._sampled.get(values)
        if vec is None:
            vec = self._sampled[values] = _sampled_columns(values, self.block.dims)
        return vec

    @property
    def writes(self) -> dict[str, list[Node]]:
        """Every write to a plain identifier in the kernel: assignments and ++/--."""
        if self._writes is None:
            w: dict[str, list[Node]] = {}
            # the model's index: `x = / x op= ` left sides, `x++` arguments, `&x` operands
            for kind in ("assigned", "updated", "address_taken"):
                for ident in self.fn.nodes_in(kind):
                    w.setdefault(text(ident), []).append(ident.parent)
            self._writes = w
        return self._writes

    # -- integers -------------------------------------------------------------------
    def int_value(self, node: Node) -> tuple:
        t = node.type
        if t == "number_literal":
            s = text(node).lower().rstrip("ul")
            try:
                return self.const(int(s, 0))
            except ValueError:
                raise Opaque(node) from None
        if t == "parenthesized_expression":
            inner = [c for c in node.named_children if c.type != "comment"]
            if len(inner) != 1:
                raise Opaque(node)
            return self.int_value(inner[0])
        if t == "field_expression":
            return self._builtin(node)
        if t == "identifier" or t == "qualified_identifier":
            return self._identifier(node)
        if t == "binary_expression":
            op = text(node.child_by_field_name("operator"))
            a = self.int_value(node.child_by_field_name("left"))
            b = self.int_value(node.child_by_field_name("right"))
            return _binop(op, a, b, node)
        if t == "unary_expression":
            op = text(node.child_by_field_name("operator"))
            a = self.int_value(node.child_by_field_name("argument"))
            if op == "-":
                return tuple(map(neg, a))
            if op == "+":
                return a
            if op == "~":
                return tuple(map(invert, a))
            if op == "!":
                return tuple(map(int, map(not_, a)))
            raise Opaque(node)
        if t == "conditional_expression":
            saved = self.used_tid
            self.used_tid = set()
            try:
                c = self.int_value(node.child_by_field_name("condition"))
                if UNKNOWN in self.used_tid:
                    # decided by a value the kernel receives (a flag, a template
                    # argument, n > 0): the samples would pick one side everywhere
                    raise Opaque(node)
            finally:
                self.used_tid |= saved
            a = self.int_value(node.child_by_field_name("consequence"))
            b = self.int_value(node.child_by_field_name("alternative"))
            return tuple(x if k else y for k, x, y in zip(c, a, b))
        if t == "cast_expression":
            ty = text(node.child_by_field_name("type"))
            if not any(w in ty for w in _INT_WORDS) or "*" in ty:
                raise Opaque(node)
            return self.int_value(node.child_by_field_name("value"))
        if t == "call_expression":
            return self._call(node)
        if t == "sizeof_expression":
            ty = node.child_by_field_name("type")
            size = self.type_size(text(ty)) if ty is not None else None
            if size is None:
                raise Opaque(node)
            return self.const(size)
        if t in ("true", "false"):
            return self.const(int(t == "true"))
        raise Opaque(node)

    def _builtin(self, node: Node) -> tuple:
        base = text(node.child_by_field_name("argument"))
        comp = text(node.child_by_field_name("field"))
        if comp not in ("x", "y", "z"):
            raise Opaque(node)
        axis = "xyz".index(comp)
        if base == "threadIdx":
            self.used_tid.add(comp)
            return self.tid[comp]
        if base == "blockDim":
            return self.const(self.block.dims[axis])
        if base == "blockIdx":
            return self.sampled(BLOCK_IDX_SAMPLES)
        if base == "gridDim":
            return self.sampled(GRID_DIM_SAMPLES)
        raise Opaque(node)

    def _call(self, node: Node) -> tuple:
        name = text(node.child_by_field_name("function"))
        args = [a for a in node.child_by_field_name("arguments").named_children
                if a.type != "comment"]
        vals = [self.int_value(a) for a in args]
        if name in ("min", "umin", "std::min", "::min") and len(vals) == 2:
            return tuple(map(min, *vals))
        if name in ("max", "umax", "std::max", "::max") and len(vals) == 2:
            return tuple(map(max, *vals))
        if name in ("__mul24", "__umul24") and len(vals) == 2:
            return tuple(a * b for a, b in zip(*vals))
        if name in ("static_cast", "int", "unsigned", "size_t") and len(vals) == 1:
            return vals[0]
        fnode = node.child_by_field_name("function")
        if fnode.type == "template_function" and text(
                fnode.child_by_field_name("name")) == "static_cast" and len(vals) == 1:
            targs = text(fnode.child_by_field_name("arguments"))
            if any(w in targs for w in _INT_WORDS) and "*" not in targs:
                return vals[0]
        raise Opaque(node)

    def _identifier(self, node: Node) -> tuple:
        name = text(node)
        decl = self.declaration_of(node)
        if decl is None:
            if name in self.env:
                return self.const(self.env[name])
            p = self.fn.param(name)
            if p is not None and not p.is_pointer and not p.is_reference:
                self.used_params.add(name)
                if name in self.bound:
                    return self.const(self.bound[name])
                return self.sampled(PARAM_SAMPLES)
            if name in self.fn.template_params:
                self.used_params.add(name)
                return self.sampled(PARAM_SAMPLES)
            raise Opaque(node)
        if decl.pointer:
            raise Opaque(node)
        if self.in_condition and settled_shared(self, decl.node, decl.scope, node):
            return self.sampled(PARAM_SAMPLES)
        return self._decl_value(decl, node, self.int_value)

    def condition_value(self, node: Node) -> tuple:
        """``node``'s value per column as a branch condition (``int_value``, with a
        settled ``__shared__`` scalar a uniform unknown)."""
        saved = self.in_condition
        self.in_condition = True
        try:
            return self.int_value(node)
        finally:
            self.in_condition = saved

    # -- declarations and reaching values ---------------------------------------------
    def declaration_of(self, ident: Node) -> _Decl | None:
        """The local declaration an identifier use refers to: in the innermost enclosing
        scope that declares it before the use, the last such declaration."""
        candidates = self._declarations.get(text(ident))
        if not candidates:
            return None
        at = ident.start_byte
        best: _Decl | None = None
        for d in candidates:
            scope = d.scope
            if not scope.start_byte <= at < scope.end_byte:
                continue
            if d.node.end_byte > at:
                # the declaration holding the use: only an earlier declarator counts
                if not (d.node.start_byte <= at and d.declarator.end_byte <= at):
                    continue
            if best is None or scope.start_byte > best.scope.start_byte or (
                    scope.start_byte == best.scope.start_byte and scope.id == best.scope.id
                    and d.node.start_byte >= best.node.start_byte):
                best = d
        return best

    def _decl_value(self, decl: _Decl, use: Node, evaluate: Callable[[Node], object]):
        """The value a declared variable holds at a use: its initializer, plus uniform
        accumulated updates; anything else (reassignment, address taken) is opaque."""
        key = (decl.declarator.id, evaluate.__name__, self.in_condition)
        memo = self._values.get(key)
        if memo is None:
            saved, saved_params = self.used_tid, self.used_params
            self.used_tid, self.used_params = set(), set()
            try:
                value: object = self._decl_value_uncached(decl, use, evaluate)
            except Opaque as exc:
                value = exc
            memo = (value, frozenset(self.used_tid), frozenset(self.used_params))
            self._values[key] = memo
            self.used_tid, self.used_params = saved, saved_params
        value, axes, params = memo
        self.used_tid |= axes
        self.used_params |= params
        if isinstance(value, Opaque):
            raise Opaque(use)
        return value

    def _decl_value_uncached(self, decl: _Decl, use: Node,
                             evaluate: Callable[[Node], object]):
        if decl.node.id in self._visiting:
            raise Opaque(use)
        # held by its declarator (one name of ``int t = blockIdx.x, e = threadIdx.x;``)
        # or by its declaration (a loop counter's)
        for held in (decl.declarator.id, decl.node.id):
            if held in self.counters:
                return self.const(self.counters[held])
        quals = {text(c) for c in decl.node.children if c.type in (
            "type_qualifier", "storage_class_specifier")}
        if "__shared__" in quals or "static" in quals or "extern" in quals:
            raise Opaque(use)
        name = text(use)
        writes = [w for w in self.writes.get(name, [])
                  if decl.scope.start_byte <= w.start_byte < decl.scope.end_byte
                  and w.start_byte >= decl.node.end_byte]
        self._visiting.add(decl.node.id)
        try:
            init = decl.value
            increments: list[tuple[Node, int]] = []
            for w in writes:
                if w.type == "update_expression":
                    op = text(w.child_by_field_name("operator"))
                    increments.append((w, 1 if op == "++" else -1))
                elif w.type == "assignment_expression":
                    op = text(w.child_by_field_name("operator"))
                    if op in ("+=", "-="):
                        increments.append((w, 0))
                    elif op == "=" and self_bump(w, name) is not None:
                        increments.append((w, 2))    # p = p + e: pointers only (below)
                    elif op == "=" and init is None and len(writes) == 1 and \
                            _same_block(w, decl):
                        init = w.child_by_field_name("right")
                    elif op == "=" and init is None and _loop_start(w, decl, writes):
                        # `int j; for (j = 0; j < n; ++j)`: the loop's counter
                        init = w.child_by_field_name("right")
                    else:
                        raise Opaque(use)
                else:
                    raise Opaque(use)        # address taken
            if init is None:
                raise Opaque(use)
            if init.type in ("initializer_list", "argument_list"):
                if init.named_child_count != 1:
                    raise Opaque(use)
                init = init.named_children[0]
            value = evaluate(init)
            if not increments:
                return value
            if isinstance(value, Ptr):
                return value        # bumps in place: applied per use (_bumped)
            if any(sign == 2 for _, sign in increments):
                raise Opaque(use)   # an integer reassigned from itself: not followed
            total = list(value)
            for k, (w, sign) in enumerate(increments):
                if sign:
                    step = self.const(sign)
                else:
                    step = self.int_value(w.child_by_field_name("right"))
                    if text(w.child_by_field_name("operator")) == "-=":
                        step = tuple(map(neg, step))
                if not self._uniform(step):
                    raise Opaque(use)
                count = self.sampled(tuple(
                    c + (k % 2) for c in COUNTER_SAMPLES))
                total = list(map(add, total, map(mul, count, step)))
            return tuple(total)
        finally:
            self._visiting.discard(decl.node.id)

    def _uniform(self, vec: tuple) -> bool:
        for g in range(self.groups):
            chunk = vec[g * WARP:(g + 1) * WARP]
            if len(set(chunk)) > 1:
                return False
        return True

    # -- pointers -------------------------------------------------------------------
    def pointer(self, node: Node) -> Ptr:
        t = node.type
        if t == "parenthesized_expression":
            inner = [c for c in node.named_children if c.type != "comment"]
            if len(inner) != 1:
                raise Opaque(node)
            return self.pointer(inner[0])
        if t == "identifier":
            return self._pointer_identifier(node)
        if t == "binary_expression":
            op = text(node.child_by_field_name("operator"))
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if op not in ("+", "-"):
                raise Opaque(node)
            try:
                p = self.pointer(left)
                off = self.int_value(right)
            except Opaque:
                if op == "-":
                    raise
                p = self.pointer(right)
                off = self.int_value(left)
            size = self._elem_size(p, node)
            step = -size if op == "-" else size
            return Ptr(p.space, p.region, _plus_scaled(p.offset, off, step),
                       p.pointee, p.dims[1:] if p.dims else (), p.array)
        if t == "cast_expression":
            ty = node.child_by_field_name("type")
            return self._cast(node, ty, node.child_by_field_name("value"))
        if t == "call_expression":
            fnode = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            if fnode is not None and fnode.type == "template_function" and text(
                    fnode.child_by_field_name("name")) in ("reinterpret_cast", "static_cast") \
                    and args is not None and args.named_child_count == 1:
                targs = fnode.child_by_field_name("arguments")
                ty = targs.named_children[0] if targs and targs.named_children else None
                return self._cast(node, ty, args.named_children[0])
            raise Opaque(node)
        if t == "pointer_expression" and text(node.child_by_field_name("operator")) == "&":
            arg = node.child_by_field_name("argument")
            p, width = self.lvalue(arg)
            return p
        if t == "subscript_expression":
            p, _ = self.lvalue(node)
            if not p.dims:
                raise Opaque(node)      # an element read from memory used as a pointer
            return p
        raise Opaque(node)

    def _cast(self, node: Node, ty: Node | None, value: Node) -> Ptr:
        tt = text(ty) if ty is not None else ""
        if tt.count("*") != 1:
            raise Opaque(node)
        base = tt.replace("*", " ").replace("const", " ").replace("volatile", " ")
        base = " ".join(base.replace("__restrict__", " ").split())
        if self.type_size(base) is None:
            raise Opaque(node)
        p = self.pointer(value)
        return Ptr(p.space, p.region, p.offset, base, (), p.array)

    def _elem_size(self, p: Ptr, node: Node) -> int:
        size = self.type_size(p.pointee)
        if size is None:
            raise Opaque(node)
        for d in p.dims[1:]:
            if d is None:
                raise Opaque(node)
            size *= d
        return size

    def _pointer_identifier(self, node: Node) -> Ptr:
        name = text(node)
        decl = self.declaration_of(node)
        if decl is not None:
            arr = self._shared_array(name, decl.node)
            if arr is not None:
                return self._array_ptr(arr)
            if decl.pointer != 1:
                raise Opaque(node)
            return self._bumped(decl.scope, decl.node.end_byte, node,
                                self._decl_value(decl, node, self.pointer),
                                assigned_once=decl.value is None)
        p = self.fn.param(name)
        if p is not None:
            if p.pointer_depth + int(p.is_array) != 1:
                raise Opaque(node)
            ptr = Ptr("global", name, self.const(0), p.base_type)
            if name in self.writes and self.fn.body is not None:
                ptr = self._bumped(self.fn.body, self.fn.body.start_byte, node, ptr)
            return ptr
        arr = self._shared_array(name, None)
        if arr is not None:
            return self._array_ptr(arr)
        raise Opaque(node)

    def _bumped(self, scope: Node, after: int, use: Node, ptr: Ptr,
                assigned_once: bool = False) -> Ptr:
        """``ptr`` moved by the in-place bumps of the pointer named at ``use`` that run
        before it (``p += i * 3; x = p[0];``): statements ``p += e``, ``p -= e``, ``++p``
        of a block that holds the use, before it, in no loop of the kernel. Any other
        write of the pointer (in a loop, a branch, ``p = q``) makes it opaque, but the
        one assignment that gave a local declared without a value its value
        (``assigned_once``: _decl_value_uncached allows only that one)."""
        name = text(use)
        writes = [w for w in self.writes.get(name, [])
                  if scope.start_byte <= w.start_byte < scope.end_byte
                  and w.start_byte >= after]
        if not writes:
            return ptr
        body = self.fn.body
        offset = ptr.offset
        size = None
        for w in writes:
            if w.type == "update_expression":
                step: tuple | None = self.const(
                    1 if text(w.child_by_field_name("operator")) == "++" else -1)
            elif w.type == "assignment_expression" and \
                    text(w.child_by_field_name("operator")) in ("+=", "-="):
                step = None
            elif w.type == "assignment_expression" and self_bump(w, name) is not None:
                step = None                     # p = p + e, p = e + p, p = p - e
            elif assigned_once and w.type == "assignment_expression" and \
                    text(w.child_by_field_name("operator")) == "=":
                continue                        # the value ptr already is
            else:
                raise Opaque(use)
            stmt = w.parent
            block = stmt.parent if stmt is not None and \
                stmt.type == "expression_statement" else None
            if block is None or block.type != "compound_statement" or \
                    _in_loop(stmt, body):
                raise Opaque(use)
            if w.start_byte >= use.start_byte:
                if _loop_around(use, body, w):
                    raise Opaque(use)           # the next pass sees it
                continue                        # after the use
            if not block.start_byte <= use.start_byte < block.end_byte:
                raise Opaque(use)               # on another path
            if step is None:
                bump = self_bump(w, name)
                if bump is not None:
                    step = self.int_value(bump[0])
                    if bump[1] < 0:
                        step = tuple(map(neg, step))
                else:
                    step = self.int_value(w.child_by_field_name("right"))
                    if text(w.child_by_field_name("operator")) == "-=":
                        step = tuple(map(neg, step))
            if size is None:
                size = self._elem_size(ptr, use)
            offset = _plus_scaled(offset, step, size)
        return Ptr(ptr.space, ptr.region, offset, ptr.pointee, ptr.dims, ptr.array,
                   ptr.field)

    def _shared_array(self, name: str, decl_node: Node | None) -> "ArrayDecl | None":
        for a in self.ctx.model.shared_arrays:
            if a.name != name:
                continue
            if decl_node is not None and a.node.id != decl_node.id:
                continue
            if decl_node is None and a.function is not None and \
                    a.function.node is not self.fn.node:
                continue
            return instance_array(self.fn, a)
        return None

    def _array_ptr(self, arr: "ArrayDecl") -> Ptr:
        if self.type_size(arr.elem_type) is None:
            raise Opaque(arr.node)
        return Ptr("shared", arr.name, self.const(0), arr.elem_type, tuple(arr.dims), arr)

    def lvalue(self, node: Node) -> tuple[Ptr, int]:
        """Where an lvalue expression lives, and how many bytes it is."""
        t = node.type
        if t == "parenthesized_expression":
            inner = [c for c in node.named_children if c.type != "comment"]
            if len(inner) != 1:
                raise Opaque(node)
            return self.lvalue(inner[0])
        if t == "subscript_expression":
            p = self.pointer(node.child_by_field_name("argument"))
            idx_list = node.child_by_field_name("indices")
            idx_nodes = [c for c in idx_list.named_children if c.type != "comment"] \
                if idx_list is not None else []
            if len(idx_nodes) != 1:
                raise Opaque(node)
            idx = self.int_value(idx_nodes[0])
            size = self._elem_size(p, node)
            off = _plus_scaled(p.offset, idx, size)
            q = Ptr(p.space, p.region, off, p.pointee, p.dims[1:] if p.dims else (), p.array)
            return q, size
        if t == "pointer_expression" and text(node.child_by_field_name("operator")) == "*":
            p = self.pointer(node.child_by_field_name("argument"))
            size = self._elem_size(p, node)
            return Ptr(p.space, p.region, p.offset, p.pointee, p.dims[1:] if p.dims else (),
                       p.array), size
        if t == "field_expression" and text(node.child_by_field_name("operator")) == ".":
            p, _ = self.lvalue(node.child_by_field_name("argument"))
            if p.dims:
                raise Opaque(node)
            fname = text(node.child_by_field_name("field"))
            pointee = " ".join(p.pointee.replace("const", " ").split())
            st = self.structs.get(pointee)
            if st is not None and fname in st.fields:
                off, ftype = st.fields[fname]
            elif pointee in _VECTOR_COMPONENT and fname in _VECTOR_FIELDS:
                ftype = _VECTOR_COMPONENT[pointee]
                off = _VECTOR_FIELDS[fname] * type_size(ftype)  # type: ignore[operator]
            else:
                raise Opaque(node)
            fsize = self.type_size(ftype)
            if fsize is None:
                raise Opaque(node)
            return Ptr(p.space, p.region, tuple(map(off.__add__, p.offset)), ftype, (),
                       p.array, fname if st is not None else None), fsize
        raise Opaque(node)

    # -- which lanes run an access ---------------------------------------------------------
    def active(self, node: Node) -> tuple:
        """Lanes that reach ``node``: conditions on the thread index alone are applied;
        conditions on anything else (bounds checks, data) are assumed to hold."""
        act = list(self.active0)
        ifs, starts = self._ifs
        lo, hi = node.start_byte, node.end_byte
        # the if statements enclosing the node: those of the body whose range holds it
        # (Node.parent costs the node's depth: walking up from each of 15,000 accesses
        # nested in one fuzzed sum took minutes)
        for cur in ifs[:bisect_right(starts, lo)]:
            if cur.end_byte < hi or cur.id == node.id:
                continue
            cond = cur.child_by_field_name("condition")
            cons = cur.child_by_field_name("consequence")
            alt = cur.child_by_field_name("alternative")
            taken = cons is not None and cons.start_byte <= lo < cons.end_byte
            if not taken and (alt is None or not alt.start_byte <= lo < alt.end_byte):
                continue                # in the condition: run before either branch
            # the parts of ``A && B`` that can be evaluated still separate the lanes
            mask = condition_mask(self._thread_condition, cond, taken)
            if mask is not None:
                act = [a and bool(m) for a, m in zip(act, mask)]
            if one_lane_branch(self, cur, taken, act):
                # a tail path of the loop around it (the group straddling the end):
                # one lane runs it, whatever the bound, not the warp (the samples of
                # the bound alone can put every lane there, or none)
                act = first_lane_only(act, self.groups)
        for cond, want in expression_guards(node, self.fn.body):
            # ``t < len ? c[idx] : 0``, ``t < len && c[idx]``: read where it holds
            mask = condition_mask(self._thread_condition, cond, want)
            if mask is not None:
                act = [a and bool(m) for a, m in zip(act, mask)]
        return tuple(act)

    @cached_property
    def _ifs(self) -> tuple[list[Node], list[int]]:
        body = self.fn.body
        found = [] if body is None else self.fn.nodes_in("if_statement")
        found = [n for n in found if body is None or n.id != body.id]
        return found, [n.start_byte for n in found]

    def _thread_condition(self, cond: Node | None) -> tuple | None:
        """The lanes an if condition holds for, or None (opaque, or decided by a uniform
        unknown). Memoised per condition: the accesses of one branch share it. An
        opaque condition leaves the thread axes it read before failing in used_tid."""
        if cond is None:
            return None
        memo = self._conditions.get(cond.id)
        if memo is not None:
            mask, touched = memo
            if touched:
                self.used_tid |= touched
            return mask
        inner = strip(cond)
        saved = self.used_tid
        self.used_tid = set()
        try:
            vec = self.condition_value(inner)
        except Opaque:
            touched = frozenset(self.used_tid)
            self.used_tid = saved | touched
            self._conditions[cond.id] = (None, touched)
            return None
        except BaseException:
            self.used_tid = saved | self.used_tid
            raise
        sampled = UNKNOWN in self.used_tid
        self.used_tid = saved
        # depends on a uniform symbol (a bound such as n): assume it holds. With a loop
        # counter held at a later value (counter walks), a bound that shuts out every
        # lane in every sample (``base + k < K``, the samples of K all below the lanes'
        # base) is the samples' size, not a condition on the thread: assume it holds too
        shut = sampled and bool(self.counters) and not any(vec)
        mask = vec if _sample_invariant(vec) and not shut else None
        if mask is None and sampled and inner.type == "binary_expression" and \
                text(inner.child_by_field_name("operator")) == "==" and all(
                    sum(1 for v in vec[g * WARP:(g + 1) * WARP] if v) <= 1
                    for g in range(self.groups)):
            # the thread index equal to a uniform value (``else if (idx == n)``, a tail
            # one thread runs: cucim's jitter kernels): at most one lane of a warp in
            # every sample, as each sample's column says; assumed to hold, it would put
            # every lane there and make a stride of that one thread's loop
            mask = vec
        self._conditions[cond.id] = (mask, frozenset())
        return mask


_SCOPES = ("compound_statement", "for_statement", "for_range_loop", "translation_unit")


def _declared(decl: Node) -> list[tuple[str, Node, int, Node | None]]:
    """(name, declarator, pointer depth, initializer) for each name ``decl`` declares."""
    out = []
    for d in decl.children_by_field_name("declarator"):
        value = None
        if d.type == "init_declarator":
            value = d.child_by_field_name("value")
            inner = d.child_by_field_name("declarator")
        else:
            inner = d
        depth = 0
        cur = inner
        while cur is not None and cur.type in ("pointer_declarator", "reference_declarator",
                                               "array_declarator"):
            if cur.type == "pointer_declarator":
                depth += 1
            elif cur.type == "reference_declarator":
                depth += 100                    # references: not followed
            else:
                depth += 200                    # arrays: not followed
            cur = cur.child_by_field_name("declarator") or next(
                (c for c in cur.named_children if c.type in (
                    "identifier", "pointer_declarator", "array_declarator")), None)
        if cur is not None and cur.type == "identifier":
            out.append((text(cur), d, depth, value))
    return out


_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")


def _in_loop(node: Node, top: Node | None) -> bool:
    cur = node.parent
    while cur is not None and (top is None or cur.id != top.id):
        if cur.type in _LOOPS:
            return True
        cur = cur.parent
    return False


def _loop_around(use: Node, top: Node | None, other: Node) -> bool:
    """A loop holds both ``use`` and ``other``."""
    cur = use.parent
    while cur is not None and (top is None or cur.id != top.id):
        if cur.type in _LOOPS and cur.start_byte <= other.start_byte < cur.end_byte:
            return True
        cur = cur.parent
    return False


def _loop_start(write: Node, decl: _Decl, writes: list[Node]) -> bool:
    """``write`` is the initializer of a ``for`` statement of the declaring block
    (``int j; for (j = 0; ...; ++j)``) and every other write of the variable is an
    increment inside that loop."""
    loop = write.parent
    if loop is None or loop.type != "for_statement" or loop.parent is None or \
            loop.parent.id != decl.scope.id:
        return False
    first = loop.child_by_field_name("initializer")
    if first is None or first.id != write.id:
        return False
    for w in writes:
        if w.id == write.id:
            continue
        if not loop.start_byte <= w.start_byte < loop.end_byte:
            return False
        if w.type == "assignment_expression" and \
                text(w.child_by_field_name("operator")) not in ("+=", "-="):
            return False
    return True


def _same_block(write: Node, decl: _Decl) -> bool:
    """A plain assignment that runs unconditionally, right in the declaring block."""
    cur = write.parent
    while cur is not None and cur.type in ("expression_statement",):
        cur = cur.parent
    return cur is not None and cur.id == decl.scope.id
