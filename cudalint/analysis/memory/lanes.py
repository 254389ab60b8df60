"""Thread-index analysis: the byte address each lane of a warp touches, per memory access.

For every array access in a kernel (a subscript or ``*`` dereference of a pointer
parameter, of a pointer derived from one, or of a ``__shared__`` array) the engine
evaluates the address expression concretely for the 32 lanes of a warp, following local
variables to their reaching definitions, multi-dimensional arrays, pointer arithmetic,
vector casts and struct fields. Non-affine index arithmetic (``%``, ``/``, ``^``, ``&``)
is therefore exact, not approximated.

Everything the kernel cannot know at compile time and that is the same for every lane
(kernel parameters, ``blockIdx``, ``gridDim``, loop counters, accumulated offsets) is a
*uniform symbol*, given several sample values. Each access is evaluated for every
combination of (sample, warp) in one pass over vectors of columns; a figure that changes
between samples depends on an unknown and the rules must not claim it exactly.

Anything the engine cannot follow (an unknown function, a data-dependent index such as
``a[idx[i]]``, a pointer read from memory, a variable written on several paths) makes the
access *opaque*: it is simply not reported.

    facts = ctx.analysis(LaneAnalysis)
    for access in facts.accesses:
        access.sectors_per_request()   # CL201 figures, per (sample, warp) group
        access.wavefronts()            # CL202 figures
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import repeat
from operator import (add, and_, eq, floordiv, ge, gt, invert, le, lshift, lt, mod, mul,
                      ne, neg, not_, or_, rshift, sub, xor)
from typing import TYPE_CHECKING, Callable, Iterable

from tree_sitter import Node

from cudalint.model.launch_shape import BlockShape, block_shape
from cudalint.model.types import VECTOR_COMPONENT as _VECTOR_COMPONENT, StructType, type_size
from cudalint.model.types import struct_types as _struct_types
from cudalint.parse import captures, text

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import ArrayDecl, Function

WARP = 32
SECTOR = 32
_SECTOR_SHIFT = 5                       # a // SECTOR == a >> _SECTOR_SHIFT
BANKS = 32
BANK_BYTES = 4

# sample values of uniform symbols; sample 0 is "the first block, the first iteration"
PARAM_SAMPLES = (1, 37, 1024)          # sizes, strides, offsets passed to the kernel
BLOCK_IDX_SAMPLES = (0, 1, 5)
GRID_DIM_SAMPLES = (1, 3, 64)
COUNTER_SAMPLES = (0, 1, 3)            # how many times an accumulating update has run
N_SAMPLES = 3
UNKNOWN = "?"           # marks, among the thread axes a value reads, a sampled unknown

_VECTOR_FIELDS = {"x": 0, "y": 1, "z": 2, "w": 3}
_INT_WORDS = ("int", "long", "short", "char", "size_t", "unsigned", "signed", "auto",
              "int8_t", "int16_t", "int32_t", "int64_t", "uint", "index_t", "bool")


class Opaque(Exception):
    """The engine cannot know this value lane by lane."""


@dataclass
class Access:
    """One memory access site and the byte offset each lane touches."""
    node: Node                   # the subscript / dereference expression (report here)
    kernel: "Function"
    space: str                   # "global" | "shared"
    region: str                  # the parameter or shared array it goes through
    elem_type: str
    width: int                   # bytes per lane
    is_load: bool
    is_store: bool
    block: BlockShape
    # one row of WARP byte offsets (None: lane inactive) per (sample, warp) group
    groups: list[list[int | None]]
    array: "ArrayDecl | None" = None
    index_text: str = ""
    struct_field: str | None = None
    struct_type: str | None = None
    expr_text: str = ""          # the whole accessed expression, field included

    def sectors_per_request(self) -> list[int]:
        return [sectors(row, self.width) for row in self.groups]

    def wavefronts(self) -> list[int]:
        return [wavefronts(row, self.width) for row in self.groups]

    @property
    def ideal_sectors(self) -> int:
        return max(1, WARP * self.width // SECTOR)

    @property
    def ideal_wavefronts(self) -> int:
        return max(1, self.width // BANK_BYTES)

    def lane_stride_bytes(self) -> int | None:
        """Byte step between consecutive active lanes, when it is the same everywhere."""
        steps = set()
        for row in self.groups:
            live = [a for a in row if a is not None] if None in row else row
            steps.update(map(sub, live[1:], live))
        return steps.pop() if len(steps) == 1 else None

    def x_stride_bytes(self) -> int | None:
        """Byte step from one threadIdx.x to the next within a row of the block (lanes
        of one threadIdx.y), when it is the same in every sample and warp."""
        bx = self.block.dims[0]
        if bx < 2:
            return None
        steps = set()
        for row in self.groups:
            for start in range(0, WARP, bx):
                run = row[start:start + min(bx, WARP)]
                steps.update(b - a for a, b in zip(run, run[1:])
                             if a is not None and b is not None)
        return steps.pop() if len(steps) == 1 else None


def sectors(row: Iterable[int | None], width: int) -> int:
    """Distinct 32-byte sectors the active lanes' [addr, addr+width) ranges touch."""
    if width <= SECTOR:             # a lane's range spans at most two sectors
        live = [a for a in row if a is not None] if None in row else row
        return _sectors_of_live(live, width)
    touched = set()
    for a in row:
        if a is not None:
            touched.update(range(a // SECTOR, (a + width - 1) // SECTOR + 1))
    return len(touched)


def _sectors_of_live(live, width: int) -> int:
    """sectors() of lanes that are all active, for width <= SECTOR (a // 32 is a >> 5)."""
    touched = set(map(rshift, live, repeat(_SECTOR_SHIFT)))
    if width > 1:
        touched.update(map(rshift, map(add, live, repeat(width - 1)), repeat(_SECTOR_SHIFT)))
    return len(touched)


def _min_sectors_shifted(live: list[int], width: int, shifts: int) -> int:
    """min over k in range(shifts) of sectors([a + k for a in live], width), for
    width <= SECTOR, without evaluating each shift.

    The sectors touched are those of the points S = {a} | {a + width - 1}: with S sorted,
    1 + the number of neighbours x < y that fall in different sectors. Neighbours 32 or
    more bytes apart always do; at a distance d < 32, x + k and y + k do exactly when
    (x + k) % 32 >= 32 - d, i.e. for the d shifts k % 32 in [(32 - d - x) % 32, ... + d).
    """
    points = set(live)
    if width > 1:
        points.update(map(add, live, repeat(width - 1)))
    xs = sorted(points)
    base = 1
    diff = [0] * (SECTOR + 1)       # per k % SECTOR: how many close neighbours it splits
    for x, y in zip(xs, xs[1:]):
        d = y - x
        if d >= SECTOR:
            base += 1
            continue
        start = (SECTOR - d - x) % SECTOR
        end = start + d
        diff[start] += 1
        if end <= SECTOR:
            diff[end] -= 1
        else:                       # wraps around
            diff[SECTOR] -= 1
            diff[0] += 1
            diff[end - SECTOR] -= 1
    split = []
    run = 0
    for k in range(SECTOR):
        run += diff[k]
        split.append(run)
    return base + min(split[k % SECTOR] for k in range(shifts))


def wavefronts(row: list[int | None], width: int) -> int:
    """Shared-memory wavefronts for one warp-wide access.

    The warp is served in phases of 128 bytes (32 lanes for up to 4-byte accesses, half
    warps for 8 bytes, quarter warps for 16 bytes); in each phase, the number of
    wavefronts is the largest number of DISTINCT 4-byte words that fall into one bank
    (lanes reading the same word share it: broadcast).
    """
    lanes_per_phase = WARP // max(1, width // BANK_BYTES)
    total = 0
    for start in range(0, WARP, lanes_per_phase):
        words_by_bank: dict[int, set[int]] = {}
        for a in row[start:start + lanes_per_phase]:
            if a is None:
                continue
            for w in range(a // BANK_BYTES, (a + width - 1) // BANK_BYTES + 1):
                words_by_bank.setdefault(w % BANKS, set()).add(w)
        if words_by_bank:
            total += max(len(ws) for ws in words_by_bank.values())
    return total


# ---------------------------------------------------------------------------------------
# values: vectors over columns (sample, warp, lane)

@dataclass
class Ptr:
    space: str
    region: str
    offset: tuple               # bytes, per column
    pointee: str                # element type
    dims: tuple = ()            # remaining array dims (shared arrays)
    array: "ArrayDecl | None" = None
    field: str | None = None    # a struct field read out of an array of structs


@dataclass
class _Decl:
    node: Node                  # declaration / parameter_declaration
    declarator: Node            # init_declarator or plain declarator
    scope: Node                 # the block / for statement where it lives
    type_text: str
    pointer: int
    value: Node | None


@lru_cache(maxsize=64)
def _columns(dims: tuple[int, int, int]) -> tuple[list, int, tuple, dict[str, tuple]]:
    """Columns (sample, thread) evaluated for a block shape: every sample of the unknowns
    for warps 0, 1 and the last; the lanes that exist; threadIdx per column."""
    bx, by, bz = dims
    nthreads = bx * by * bz
    nwarps = max(1, -(-nthreads // WARP))
    warps = sorted({0, 1, nwarps - 1} & set(range(nwarps)))
    cols = [(s, w * WARP + lane) for s in range(N_SAMPLES) for w in warps
            for lane in range(WARP)]
    active0 = tuple(t < nthreads for _, t in cols)
    tid = {
        "x": tuple(t % bx for _, t in cols),
        "y": tuple((t // bx) % by for _, t in cols),
        "z": tuple(t // (bx * by) for _, t in cols),
    }
    return cols, N_SAMPLES * len(warps), active0, tid


@lru_cache(maxsize=256)
def _sampled_columns(values: tuple[int, ...], dims: tuple[int, int, int]) -> tuple:
    """A uniform unknown's vector: its sample value in each column."""
    return tuple(values[s] for s, _ in _columns(dims)[0])


class KernelLanes:
    """Evaluates the address of every access of one kernel, lane by lane."""

    def __init__(self, ctx: "UnitContext", fn: "Function", block: BlockShape,
                 structs: Callable[[], dict[str, StructType]]):
        self.ctx, self.fn, self.block, self._structs = ctx, fn, block, structs
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
        self._values: dict[tuple[int, str], tuple[object, frozenset[str]]] = {}
        self._conditions: dict[int, tuple[tuple | None, frozenset[str]]] = {}

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
            size = type_size(text(ty), self.structs) if ty is not None else None
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
                return self.sampled(PARAM_SAMPLES)
            if name in self.fn.template_params:
                return self.sampled(PARAM_SAMPLES)
            raise Opaque(node)
        if decl.pointer:
            raise Opaque(node)
        return self._decl_value(decl, node, self.int_value)

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
        key = (decl.declarator.id, evaluate.__name__)
        memo = self._values.get(key)
        if memo is None:
            saved = self.used_tid
            self.used_tid = set()
            try:
                value: object = self._decl_value_uncached(decl, use, evaluate)
            except Opaque as exc:
                value = exc
            memo = (value, frozenset(self.used_tid))
            self._values[key] = memo
            self.used_tid = saved
        value, axes = memo
        self.used_tid |= axes
        if isinstance(value, Opaque):
            raise Opaque(use)
        return value

    def _decl_value_uncached(self, decl: _Decl, use: Node,
                             evaluate: Callable[[Node], object]):
        if decl.node.id in self._visiting:
            raise Opaque(use)
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
                    elif op == "=" and init is None and len(writes) == 1 and \
                            _same_block(w, decl):
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
                raise Opaque(use)          # moving pointers: not followed
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
        if type_size(base, self.structs) is None:
            raise Opaque(node)
        p = self.pointer(value)
        return Ptr(p.space, p.region, p.offset, base, (), p.array)

    def _elem_size(self, p: Ptr, node: Node) -> int:
        size = type_size(p.pointee, self.structs)
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
            return self._decl_value(decl, node, self.pointer)
        p = self.fn.param(name)
        if p is not None:
            if p.pointer_depth + int(p.is_array) != 1:
                raise Opaque(node)
            return Ptr("global", name, self.const(0), p.base_type)
        arr = self._shared_array(name, None)
        if arr is not None:
            return self._array_ptr(arr)
        raise Opaque(node)

    def _shared_array(self, name: str, decl_node: Node | None) -> "ArrayDecl | None":
        for a in self.ctx.model.shared_arrays:
            if a.name != name:
                continue
            if decl_node is not None and a.node.id != decl_node.id:
                continue
            if decl_node is None and a.function is not None and a.function is not self.fn:
                continue
            return a
        return None

    def _array_ptr(self, arr: "ArrayDecl") -> Ptr:
        if type_size(arr.elem_type, self.structs) is None:
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
            fsize = type_size(ftype, self.structs)
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
            mask = self._thread_condition(cond)
            if mask is not None:
                cons = cur.child_by_field_name("consequence")
                taken = cons is not None and cons.start_byte <= lo < cons.end_byte
                act = [a and (bool(m) == taken) for a, m in zip(act, mask)]
        return tuple(act)

    @cached_property
    def _ifs(self) -> tuple[list[Node], list[int]]:
        body = self.fn.body
        found = [] if body is None else captures("(if_statement) @i", body).get("i", [])
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
        inner = cond
        while inner.type in ("condition_clause", "parenthesized_expression") and \
                inner.named_child_count == 1:
            inner = inner.named_children[0]
        saved = self.used_tid
        self.used_tid = set()
        try:
            vec = self.int_value(inner)
        except Opaque:
            touched = frozenset(self.used_tid)
            self.used_tid = saved | touched
            self._conditions[cond.id] = (None, touched)
            return None
        except BaseException:
            self.used_tid = saved | self.used_tid
            raise
        self.used_tid = saved
        # depends on a uniform symbol (a bound such as n): assume it holds
        mask = vec if _sample_invariant(vec) else None
        self._conditions[cond.id] = (mask, frozenset())
        return mask


def _sample_invariant(vec: tuple) -> bool:
    """The same value in every sample of the uniform unknowns (columns are sample-major)."""
    n = len(vec) // N_SAMPLES
    first = vec[:n]
    return all(vec[s * n:(s + 1) * n] == first for s in range(1, N_SAMPLES))


_ELEMENTWISE = {"+": add, "-": sub, "*": mul, "&": and_, "|": or_, "^": xor}
_COMPARE = {"<": lt, ">": gt, "<=": le, ">=": ge, "==": eq, "!=": ne}


def _binop(op: str, a: tuple, b: tuple, node: Node) -> tuple:
    """``a op b`` column by column, with C's integer semantics (division truncates)."""
    try:
        f = _ELEMENTWISE.get(op)
        if f is not None:
            return tuple(map(f, a, b))
        if op == "/" or op == "%":
            if min(a) >= 0 and min(b) > 0:     # truncation is floor division here
                return tuple(map(floordiv if op == "/" else mod, a, b))
            if op == "/":
                return tuple(map(_cdiv, a, b))
            return tuple(x - y * _cdiv(x, y) for x, y in zip(a, b))
        if op == "<<":
            if min(b) < 0 or max(b) >= 64:
                raise Opaque(node)      # undefined in C; a huge Python int (MemoryError)
            return tuple(map(lshift, a, b))
        if op == ">>":
            return tuple(map(rshift, a, b))
        cmp = _COMPARE.get(op)
        if cmp is not None:
            return tuple(map(int, map(cmp, a, b)))
        if op == "&&":
            return tuple(int(bool(x and y)) for x, y in zip(a, b))
        if op == "||":
            return tuple(int(bool(x or y)) for x, y in zip(a, b))
    except (ZeroDivisionError, ValueError):
        raise Opaque(node) from None
    raise Opaque(node)


def _plus_scaled(base: tuple, index: tuple, scale: int) -> tuple:
    """base + index * scale, column by column."""
    if not any(base):               # the start of an array: index * scale
        return index if scale == 1 else tuple(map(mul, index, repeat(scale)))
    if scale == 1:
        return tuple(map(add, base, index))
    return tuple(map(add, base, map(mul, index, repeat(scale))))


def _cdiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


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


def _same_block(write: Node, decl: _Decl) -> bool:
    """A plain assignment that runs unconditionally, right in the declaring block."""
    cur = write.parent
    while cur is not None and cur.type in ("expression_statement",):
        cur = cur.parent
    return cur is not None and cur.id == decl.scope.id


# ---------------------------------------------------------------------------------------
# the analysis

@dataclass
class LaneAnalysis:
    """Every evaluable memory access of every kernel of a unit (ctx.analysis(...))."""
    accesses: list[Access] = field(default_factory=list)
    blocks: dict[str, BlockShape | None] = field(default_factory=dict)

    def __init__(self, ctx: "UnitContext"):
        self.accesses = []
        self.blocks = {}
        # an address that does not mention threadIdx is the same for every lane (the
        # engine reads the thread index from nothing else): no figure to report
        if b"threadIdx" not in ctx.unit.data:
            return
        kernels = [k for k in ctx.model.kernels
                   if k.body is not None and b"threadIdx" in k.body.text]
        structs: dict[str, StructType] = {}

        def lazy_structs() -> dict[str, StructType]:
            if not structs:
                structs.update(_struct_types(ctx.model.nodes("struct")))
                structs.setdefault("", StructType("", 0, {}))   # computed marker
            return structs
        for fn in kernels:
            self.accesses.extend(_kernel_accesses(ctx, fn, lazy_structs, self.blocks))


_IDENT = re.compile(rb"[A-Za-z_][A-Za-z_0-9]*")


def thread_dependent_names(fn: "Function", writes: dict[str, list[Node]],
                           declared: list | None = None) -> set[bytes]:
    """Names whose value may depend on threadIdx: declared or assigned from an expression
    that mentions threadIdx or another such name (a cheap over-approximation of what the
    lane engine can follow; everything it reads comes from these declarations and
    writes)."""
    sources: dict[str, set[bytes]] = {}
    if declared is None:
        declared = [(decl, _declared(decl)) for decl in fn.nodes_in("declaration")]
    for _, names in declared:
        for name, _, _, value in names:
            if value is not None:
                sources.setdefault(name, set()).update(_IDENT.findall(value.text))
    for name, nodes in writes.items():
        for w in nodes:
            if w.type == "assignment_expression":
                sources.setdefault(name, set()).update(
                    _IDENT.findall(w.child_by_field_name("right").text))
    dependent = {b"threadIdx"}
    pending = {name.encode(): idents for name, idents in sources.items()}
    changed = True
    while changed:
        changed = False
        for key, idents in list(pending.items()):
            if not idents.isdisjoint(dependent):
                dependent.add(key)
                del pending[key]
                changed = True
    return dependent


def _kernel_accesses(ctx, fn, structs, blocks) -> list[Access]:
    candidates = sorted(fn.nodes_in("subscript") + fn.nodes_in("deref"),
                        key=lambda n: n.start_byte)
    if not candidates:
        return []
    declared = block_shape(ctx, fn)
    blocks[fn.name] = declared
    if declared is None:
        return []
    lanes = KernelLanes(ctx, fn, declared, structs)
    dependent = thread_dependent_names(fn, lanes.writes, lanes.declared)
    out = []
    up = _Parents(fn.body)
    mentions = _Mentions(fn.body, dependent)
    for node in candidates:
        if _is_inner(node, up):
            continue
        target = node
        parent = up(node)
        while parent is not None and parent.type == "field_expression" and \
                text(parent.child_by_field_name("operator")) == "." and \
                parent.child_by_field_name("argument").id == target.id:
            target = parent
            parent = up(parent)
        if parent is not None and parent.type == "pointer_expression" and \
                text(parent.child_by_field_name("operator")) == "&":
            continue
        if not mentions(target):
            continue                            # the same address for every lane
        if _passed_by_reference(ctx, target, up):
            continue                            # the callee decides the access width
        lanes.used_tid = set()
        try:
            p, width = lanes.lvalue(target)
            if p.dims:
                continue                        # an inner row, not an element
            act = lanes.active(node)
        except Opaque:
            continue
        except (RecursionError, OverflowError, ValueError, TypeError, AttributeError):
            continue
        if declared.source == "launch_bounds" and lanes.used_tid - {"x", UNKNOWN}:
            continue
        is_store, is_load = _direction(target, up)
        offsets = list(p.offset) if all(act) else \
            [o if a else None for o, a in zip(p.offset, act)]
        groups = [offsets[g * WARP:(g + 1) * WARP] for g in range(lanes.groups)]
        idx = node.child_by_field_name("indices")
        out.append(Access(node=node, kernel=fn, space=p.space, region=p.region,
                          elem_type=p.pointee, width=width, is_load=is_load,
                          is_store=is_store, block=declared, groups=groups, array=p.array,
                          index_text=text(idx) if idx is not None else "",
                          struct_field=p.field, expr_text=text(target),
                          struct_type=_struct_of(target) if p.field else None))
    return out


def _passed_by_reference(ctx, node: Node, up=None) -> bool:
    """An lvalue handed to a call that may take it by reference and access it with a
    width of its own (``AssignAs<uint4>(dst, src[i])``, ``load(v, p[i])``): a template
    call with explicit arguments, or a function of the unit whose parameter there is a
    reference. Intrinsics and functions defined elsewhere are taken as by-value."""
    up = up or _node_parent
    cur = node
    parent = up(cur)
    while parent is not None and parent.type == "parenthesized_expression":
        cur, parent = parent, up(parent)
    if parent is None or parent.type != "argument_list":
        return False
    call = up(parent)
    if call is None or call.type != "call_expression":
        return False
    callee = call.child_by_field_name("function")
    if callee is None:
        return False
    if callee.type == "template_function":
        return True
    if callee.type == "field_expression":
        callee = callee.child_by_field_name("field")
    elif callee.type == "qualified_identifier":
        callee = callee.child_by_field_name("name")
    if callee is None or callee.type not in ("identifier", "field_identifier"):
        return False
    position = [c.id for c in parent.named_children if c.type != "comment"].index(cur.id)
    for refs in ctx.analysis(_reference_params).get(text(callee), []):
        if position in refs or (refs and -1 in refs):
            return True
    return False


def _reference_params(ctx) -> dict[str, list[set[int]]]:
    """Per function name defined or declared in the unit, for each signature: the
    positions of reference parameters (-1: variadic)."""
    out: dict[str, list[set[int]]] = {}
    # the functions' declarators, already unwrapped by the model
    declarators = [fn._declarator for fn in ctx.model.functions]
    # declarations whose declarator can be a function's (others declare none)
    for decl in ctx.model.nodes("function_like_declaration"):
        declarators.extend(decl.children_by_field_name("declarator"))
    for d in declarators:
        while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
            d = d.child_by_field_name("declarator")
        if d is None or d.type != "function_declarator":
            continue
        name = text(d.child_by_field_name("declarator")).split("::")[-1].split("<")[0]
        params = d.child_by_field_name("parameters")
        refs: set[int] = set()
        for i, p in enumerate(c for c in (params.named_children if params else [])
                              if c.type != "comment"):
            if p.type == "variadic_parameter" or text(p) == "...":
                refs.add(-1)
            pd = p.child_by_field_name("declarator")
            while pd is not None and pd.type in ("pointer_declarator", "array_declarator"):
                pd = pd.child_by_field_name("declarator")
            if pd is not None and pd.type in ("reference_declarator",
                                              "abstract_reference_declarator"):
                refs.add(i)
        out.setdefault(name.strip(), []).append(refs)
    return out


def _struct_of(node: Node) -> str | None:
    return text(node.child_by_field_name("argument")) if node.type == "field_expression" \
        else None


class _Mentions:
    """Whether a node's text names one of ``names``, from the places of those names in
    the body found once (``_IDENT.findall(node.text)`` for each access was quadratic:
    seconds for 14,000 nested dereferences of a fuzzed expression)."""

    def __init__(self, body: Node, names: set):
        self.names = names
        self.data = body.text or b""
        self.base = body.start_byte
        spans = [(m.start() + self.base, m.end() + self.base)
                 for m in _IDENT.finditer(self.data) if m.group() in names]
        self.spans = spans
        self.starts = [a for a, _ in spans]

    def __call__(self, node: Node) -> bool:
        lo, hi = node.start_byte, node.end_byte
        k = lo - self.base
        if not (0 <= k and hi - self.base <= len(self.data)) or \
                (k > 0 and _IDENT_CHAR.match(self.data, k - 1)):
            # not a token start inside the body: as the text alone reads
            return not self.names.isdisjoint(_IDENT.findall(node.text))
        i = bisect_left(self.starts, lo)
        return i < len(self.spans) and self.spans[i][1] <= hi


_IDENT_CHAR = re.compile(rb"[A-Za-z_0-9]")


def _node_parent(node: Node) -> Node | None:
    return node.parent


class _Parents:
    """Parents of the nodes an access is read through (subscripts, dereferences, member
    accesses, parentheses, argument lists) in one query over a body. ``Node.parent``
    costs the node's depth (tree-sitter walks down from the root): asked for each of
    40,000 nested dereferences of a fuzzed expression it took minutes."""
    _QUERY = ("(_ [(subscript_expression) (pointer_expression) (field_expression) "
              "(parenthesized_expression) (argument_list)] @c) @p")

    def __init__(self, body: Node | None):
        self.map: dict[int, Node] | None = None
        self.body = body

    def __call__(self, node: Node) -> Node | None:
        if self.map is None:
            self.map = {}
            if self.body is not None:
                import tree_sitter
                from cudalint.parse import query
                cursor = tree_sitter.QueryCursor(query(self._QUERY))
                for _, caps in cursor.matches(self.body):
                    for child in caps.get("c", ()):
                        self.map[child.id] = caps["p"][0]
        got = self.map.get(node.id)
        return got if got is not None else node.parent


def _is_inner(node: Node, up=None) -> bool:
    """A subscript that is the base of another subscript (``t[i]`` in ``t[i][j]``)."""
    parent = (up or _node_parent)(node)
    return parent is not None and parent.type == "subscript_expression" and \
        parent.child_by_field_name("argument").id == node.id


def _direction(node: Node, up=None) -> tuple[bool, bool]:
    """(is_store, is_load) for an lvalue expression."""
    up = up or _node_parent
    cur = node
    parent = up(cur)
    while parent is not None and parent.type == "parenthesized_expression":
        cur, parent = parent, up(parent)
    if parent is not None and parent.type == "assignment_expression" and \
            parent.child_by_field_name("left").id == cur.id:
        op = text(parent.child_by_field_name("operator"))
        return True, op != "="
    if parent is not None and parent.type == "update_expression":
        return True, True
    return False, True


# ---------------------------------------------------------------------------------------
# figures for the rules

def _block_metrics(access: Access) -> dict:
    # block_line is added by the rules for the findings they emit (mapping costs)
    return {"block": list(access.block.dims), "block_source": access.block.source}


def block_line_metrics(access: Access) -> dict:
    line = access.block.line
    return {} if line is None else {"block_line": line}


def _live_groups(access: Access, figure: Callable[[list, int], int]) -> list[int]:
    return [figure(row, access.width) for row in access.groups
            if row.count(None) != len(row)]


def lower_bound(access: Access, figure: Callable[[list, int], int], shifts: int) -> int:
    """A figure the access reaches whatever the unknowns are.

    Per warp, the lanes whose offsets relative to the first lane are the same in every
    sample of the unknowns keep that shape for any value; only the base address moves.
    The figure of those lanes alone, at their most favourable base alignment, is a sure
    lower bound for the whole warp (more lanes only touch more sectors or words).
    """
    nw = len(access.groups) // N_SAMPLES
    best: int | None = None
    for w in range(nw):
        rows = [access.groups[s * nw + w] for s in range(N_SAMPLES)]
        lanes = [l for l in range(WARP) if all(r[l] is not None for r in rows)]
        if not lanes:
            continue
        l0 = lanes[0]
        keep = {l for l in lanes if len({r[l] - r[l0] for r in rows}) == 1}
        rel = [rows[0][l] - rows[0][l0] if l in keep else None for l in range(WARP)]
        if figure is sectors and access.width <= SECTOR:
            # positions do not matter for sectors: the kept lanes' offsets, shifted
            live = [r for r in rel if r is not None]
            value = _min_sectors_shifted(live, access.width, shifts)
        else:
            # lane positions matter (shared memory is served in phases of lanes)
            value = min(figure([None if r is None else r + k for r in rel], access.width)
                        for k in range(shifts))
        best = value if best is None else min(best, value)
    return best if best is not None else 0


def surely_below(access: Access, figure: Callable[[list, int], int], limit: float) -> bool:
    """The access's figure (``sectors`` or ``wavefronts``: exact, or lower_bound when it
    depends on unknowns) is surely below ``limit``, read from one warp alone.

    Take a warp whose lanes are active in every sample. If all its rows agree with the
    others, the figure is theirs; otherwise lower_bound is at most this warp's value,
    which is at most the figure of its first row: that row's kept lanes are the
    shape lower_bound evaluates, at an alignment it tries (both figures are unchanged by
    shifts of whole sectors or words), and more lanes only touch more. So a row below
    ``limit`` decides: most accesses are coalesced and skip the other rows.
    """
    groups = access.groups
    nw = len(groups) // N_SAMPLES
    for w in range(nw):
        rows = [groups[s * nw + w] for s in range(N_SAMPLES)]
        if any(None in r for r in rows):
            continue
        return figure(rows[0], access.width) < limit
    return False


def coalescing_figures(access: Access) -> dict | None:
    """CL201 metrics. When the figure depends on unknowns (``exact`` false),
    ``sectors_per_request`` is a sure lower bound (see lower_bound), never a guess."""
    per_group = _live_groups(access, sectors)
    if not per_group:
        return None
    exact = len(set(per_group)) == 1
    value = per_group[0] if exact else lower_bound(access, sectors, SECTOR)
    fig = {"sectors_per_request": value,
           "ideal_sectors_per_request": access.ideal_sectors,
           "exact": exact}
    stride = access.lane_stride_bytes()
    if stride is not None:
        fig["stride_bytes"] = stride
    else:
        x_stride = access.x_stride_bytes()
        if x_stride is not None:
            fig["x_stride_bytes"] = x_stride
    fig.update(_block_metrics(access))
    return fig


def bank_conflict_figures(access: Access) -> dict | None:
    """CL202 metrics; ``wavefronts`` is exact or a sure lower bound (``exact`` false)."""
    per_group = _live_groups(access, wavefronts)
    if not per_group:
        return None
    ideal = access.ideal_wavefronts
    exact = len(set(per_group)) == 1
    value = per_group[0] if exact else lower_bound(access, wavefronts, BANK_BYTES)
    ways = value / ideal
    fig = {"wavefronts": value, "ideal_wavefronts": ideal,
           "bank_ways": int(ways) if ways == int(ways) else ways, "exact": exact}
    fig.update(_block_metrics(access))
    return fig
