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

The engine is in four modules: lane_values (vectors over columns and their operators),
kernel_lanes (the evaluator of one kernel), figures (an Access and what it costs) and
this one (which accesses of a unit are evaluated, with which block shape).

    facts = ctx.analysis(LaneAnalysis)
    for access in facts.accesses:
        access.sectors_per_request()   # CL201 figures, per (sample, warp) group
        access.wavefronts()            # CL202 figures
"""
from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from tree_sitter import Node

from cudalint.analysis.memory.access_direction import direction_of as _direction
from cudalint.analysis.memory.callee_lanes import device_calls, reached_accesses
from cudalint.analysis.memory.figures import Access, wavefronts
from cudalint.analysis.memory.kernel_lanes import KernelLanes, _declared
from cudalint.analysis.memory.lane_values import WARP, Opaque
from cudalint.analysis.memory.loops import bounded_trip, counted_loop, loop_nodes
from cudalint.analysis.memory.symbolic import identify
from cudalint.model.branch_values import branch_values
from cudalint.model.consteval import eval_int
from cudalint.model.instances import Instances
from cudalint.model.launch_shape import BlockShape, block_shape, launch_bounds_threads
from cudalint.model.types import StructType
from cudalint.model.types import struct_types as _struct_types
from cudalint.parse import nesting, text

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function


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
        kernels = [k for k in ctx.analysis(Instances).kernels()
                   if k.body is not None and (b"threadIdx" in k.body.text or any(
                       b"threadIdx" in c.body.text for _, c in device_calls(ctx, k)))]
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
                           declared: list | None = None, seed=()) -> set[bytes]:
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
    dependent = {b"threadIdx", *seed}       # seed: parameters a call binds per lane
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


def kernel_accesses(ctx: "UnitContext", name: str, bound: dict[str, int]) -> list[Access]:
    """The accesses of kernel ``name`` with its scalar parameters in ``bound`` fixed to
    those values (the GPU-truth tests: the figure at the values the driver passed)."""
    structs = _struct_types(ctx.model.nodes("struct"))
    return [a for fn in ctx.model.kernels if fn.name == name and fn.body is not None
            for a in _kernel_accesses(ctx, fn, lambda: structs, {},
                                      {k: (v, None) for k, v in bound.items()})]


def launch_bindings(ctx: "UnitContext", fn: "Function") -> dict[str, tuple[int, int | None]]:
    """Scalar parameters that every launch of ``fn`` in the unit passes as the same
    constant (a literal, a macro, a constexpr, a host local initialised from constants,
    a host variable the branch around the launch fixes: ``case 4:`` of ``switch (nv)``):
    name -> (value, line of the first such launch). For an instantiation, the launches
    that made it: ``rows<2, 1><<<...>>>(nr, 2, ...)`` fixes ``nv`` for ``rows<2, 1>``
    whatever the launch of ``rows<4, 2>`` passes."""
    launches = ctx.model.launches_of(fn.name)
    if not launches or b"<<<" not in ctx.unit.data:
        return {}
    made = getattr(fn, "instance_launches", None) if fn.instance else None
    if made is not None:
        if any(m.node is None for m in made):
            return {}                   # launched from elsewhere too: not all seen here
        ids = {m.node.id for m in made}
        launches = [l for l in launches if l.node.id in ids]
        if not launches:
            return {}
    params = fn.params
    wanted = [k for k, p in enumerate(params) if not (p.is_pointer or p.is_reference)]
    if not wanted:
        return {}
    values: dict[int, set] = {k: set() for k in wanted}
    memo = _LAUNCH_ARGS.get(ctx.model)
    if memo is None:
        memo = _LAUNCH_ARGS[ctx.model] = {}
    for launch in launches:
        args = launch.args
        if len(args) != len(params):
            return {}
        seen = memo.get(launch.node.id)
        if seen is None:
            # once per launch of the unit, for all its arguments and every kernel of
            # its name (a file of 244 copies of one kernel and its launch evaluated
            # each launch for each copy: 6 s a lint, fuzz seed 37)
            seen = memo[launch.node.id] = (_launch_env(ctx, launch), {})
        env, got = seen
        for k in wanted:
            if k not in got:
                got[k] = _launch_constant(ctx, launch, args[k], env)
            values[k].add(got[k])
    out: dict[str, tuple[int, int | None]] = {}
    for k in wanted:
        if len(values[k]) == 1 and None not in values[k]:
            (value,) = values[k]
            first = launches[0].node.start_byte
            try:
                line = ctx.unit.file.position(ctx.unit.file_offset(first))[0]
            except Exception:       # a position the source layer cannot map
                line = None
            out[params[k].name] = (value, line)
    return out


# model -> launch node id -> (its constants, argument index -> constant)
_LAUNCH_ARGS: "WeakKeyDictionary[object, dict[int, tuple[dict, dict]]]" = \
    WeakKeyDictionary()


def _launch_env(ctx, launch) -> dict[str, int]:
    """The constants at a launch: its host's, and the host variables the branch around
    the launch fixes (model/branch_values)."""
    host = launch.function
    env = host.constants if host is not None else ctx.model.constants
    if host is not None and host.body is not None:
        fixed = branch_values(launch.node, host.body, lambda e: eval_int(e, env))
        if fixed:
            env = {**env, **fixed}
    return env


def _launch_constant(ctx, launch, arg: Node, env: dict[str, int]) -> int | None:
    if arg.type in ("call_expression", "initializer_list"):
        return None                 # dim3(...) and friends: the model reads those as dims
    dims = ctx.model.resolve_dim3(arg, launch.function, env)
    return dims[0] if dims is not None else None


# budgets (issue 25): a kernel with more subscripts and dereferences than
# MAX_KERNEL_ACCESSES is not evaluated (no lane figure for any of its accesses), nor are
# the kernels of a file once MAX_FILE_ACCESSES of them were (units in file order, kernels
# in unit order). The 9-project corpus has at most 189 in a kernel and 408 in a file;
# fuzzed files that repeat a body thousands of times had 35,000 in one kernel, or 33
# kernel strings of 1,001, and their evaluation (and the loop depths, per access and
# loop) took seconds per lint
MAX_KERNEL_ACCESSES = 1024
MAX_FILE_ACCESSES = 4096
_SPENT: "WeakKeyDictionary[object, int]" = WeakKeyDictionary()    # SourceFile -> accesses
# a kernel or device function whose body nests deeper than this gets no lane figures: the
# lane values are computed by a recursive walk (about a Python frame a tree level, through
# up to MAX_CALL_DEPTH callees), and one that went down to the interpreter's recursion
# limit left no stack for a weakref callback the garbage collector ran there (issue 25,
# fuzz seed 31). The 9-project corpus nests kernel bodies at most 38 levels deep.
MAX_NEST = 100


def _within_budget(ctx, candidates: int) -> bool:
    if candidates > MAX_KERNEL_ACCESSES:
        return False
    file = ctx.unit.file
    spent = _SPENT.get(file, 0) + candidates
    if spent > MAX_FILE_ACCESSES:
        return False
    _SPENT[file] = spent
    return True


def _kernel_accesses(ctx, fn, structs, blocks, bound=None) -> list[Access]:
    candidates = sorted(fn.nodes_in("subscript") + fn.nodes_in("deref"),
                        key=lambda n: n.start_byte)
    calls = device_calls(ctx, fn)
    if not (candidates or calls) or nesting(fn.body, MAX_NEST) > MAX_NEST or \
            not _within_budget(ctx, len(candidates)):
        return []
    declared = block_shape(ctx, fn)
    any_block = declared is None and _one_dimensional(fn) and _no_known_block(ctx, fn)
    if any_block:
        declared = any_1d_block(fn)
        any_block = declared is not None
    blocks[fn.name] = declared
    if declared is None:
        return []
    binding = launch_bindings(ctx, fn) if bound is None else bound
    values = {name: v for name, (v, _) in binding.items()}

    def make(vals, counters=None, block=declared):
        return KernelLanes(ctx, fn, block, structs, vals, counters)
    lanes = make(values)
    out, targets, up = _body_accesses(ctx, fn, lanes, make, candidates, binding)
    if any_block and out:
        out = _same_for_any_block(ctx, fn, structs, values, out, targets, up)
    if out:
        loop_depths(lanes, fn, candidates, out, up)
    if calls:
        out.extend(_called(ctx, fn, lanes, make, binding, out, any_block))
    return out


def _body_accesses(ctx, fn, lanes, make, candidates, binding, seed=()):
    """The evaluable accesses among ``candidates`` of ``fn``'s body (a kernel's, or a
    device function's at one call: ``make`` builds its evaluator again with other
    values), with the nodes they are read through."""
    values = lanes.bound
    dependent = thread_dependent_names(fn, lanes.writes, lanes.declared, seed)
    out = []
    targets = []
    up = _Parents(fn.body)
    mentions = _Mentions(fn.body, dependent)
    dead = _dead_loops(fn)
    for node in candidates:
        if _is_inner(node, up):
            continue
        if dead and any(lp.start_byte <= node.start_byte < lp.end_byte for lp in dead):
            continue                            # in a loop that runs no iteration
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
        access = _evaluate(lanes, node, target, up)
        if access is None:
            continue
        if access.params:
            access.symbolic = identify(access, lambda more: _evaluate(
                make({**values, **more}), node, target, up))
        access.bound = {n: binding[n] for n in lanes.used_params if n in binding}
        access.reevaluate = _reevaluator(make, values, node, target, up)
        access.int_values = _int_values(lanes)
        out.append(access)
        targets.append(target)
    return out, targets, up


def _called(ctx, fn, lanes, make, binding, own, any_block) -> list[Access]:
    """The accesses of the device functions the kernel calls, with the lane values
    of each call (callee_lanes); for any 1-D block, those whose figures a block of 32
    threads gives too."""
    def evaluate(callee, clanes, make_callee, seed):
        candidates = sorted(callee.nodes_in("subscript") + callee.nodes_in("deref"),
                            key=lambda n: n.start_byte)
        if not candidates or nesting(callee.body, MAX_NEST) > MAX_NEST or \
                not _within_budget(ctx, len(candidates)):
            return []
        found, _, up = _body_accesses(ctx, callee, clanes, make_callee, candidates,
                                      binding, seed)
        if found:
            loop_depths(clanes, callee, candidates, found, up)
        return found
    found = reached_accesses(ctx, fn, lanes, make, evaluate, own)
    if not any_block or not found:
        return found
    small = reached_accesses(ctx, fn, make(lanes.bound, block=SMALLEST_1D_BLOCK),
                             lambda vals, counters=None: make(vals, counters,
                                                              SMALLEST_1D_BLOCK),
                             evaluate, own)
    others = {(a.reached.path, a.node.id): a for a in small}
    kept = []
    for access in found:
        other = others.get((access.reached.path, access.node.id))
        if access.space == "global" and \
                max(access.sectors_per_request()) <= access.ideal_sectors or \
                access.space == "shared" and \
                max(access.wavefronts()) <= access.ideal_wavefronts:
            kept.append(access)
        elif other is not None and (
                set(access.sectors_per_request()) == set(other.sectors_per_request())
                if access.space == "global" else
                set(access.wavefronts()) == set(other.wavefronts())) and \
                access.lane_stride_bytes() == other.lane_stride_bytes():
            kept.append(access)
    return kept


def _dead_loops(fn: "Function") -> list[Node]:
    """Counted loops that run no iteration (``for (i = 3; i < stride; ++i)`` in the
    instantiation with ``stride`` = 3): what is in them is never executed. Start and
    bound must be compile-time constants (a run-time bound that every sample happens to
    give one value is not known)."""
    if fn.body is None or b"for" not in fn.body.text:
        return []
    env = fn.constants

    def int_values(node: Node) -> tuple | None:
        v = eval_int(text(node), env)
        return (v,) if v is not None else None
    out = []
    for lp in loop_nodes(fn.body):
        counted = counted_loop(int_values, lp)
        if counted is not None and counted.trip is not None and counted.trip <= 0:
            out.append(lp)
    return out


# -- loops around an access (the rules' hot-loop gate and unrolled copies) -------------

def loop_depths(lanes: KernelLanes, fn: "Function", candidates: list[Node],
                accesses: list[Access], up) -> None:
    """Set each access's ``loop_depth`` and ``hot_depth`` (see ``Access``): depths are
    (loops with a run-time trip count or kept rolled, all loops) around the access.
    ``hot_depth`` is the deepest of the accesses of the kernel to the same space, counting
    also those no lane figure is computed for (an address the same for every lane, a
    data-dependent index through a pointer parameter: a search loop over every point
    reads them at its depth; a `__shared__` array named in an address handed to
    `ldmatrix`); ``global_depth`` is the deepest run-time nesting of global accesses."""
    loops = loop_nodes(fn.body)
    if not loops:
        return
    int_values = _int_values(lanes)
    trips: dict[int, int | None] = {}

    def depth(at: int) -> tuple[int, int]:
        runtime, weight = 0, 1
        for lp in loops:
            if not lp.start_byte <= at < lp.end_byte:
                continue
            if lp.id not in trips:
                trips[lp.id] = bounded_trip(int_values, lp)
            trip = trips[lp.id]
            if trip is None:
                runtime += 1
            else:
                weight *= max(1, trip)
        return runtime, weight
    hot: dict[str, tuple[int, int]] = {}
    seen = {a.node.id: a for a in accesses}

    def cost(space: str, at: int, access: Access | None) -> tuple[int, int]:
        runtime, weight = depth(at)
        if space == "shared":       # wavefronts per pass: what the shared pipe spends
            weight *= _first_wavefronts(access) if access is not None else MENTION_WAVEFRONTS
        return runtime, weight
    for node in candidates:
        if _is_inner(node, up):
            continue
        access = seen.get(node.id)
        space = access.space if access is not None else _space_of(lanes, fn, node)
        if space is not None:
            hot[space] = max(hot.get(space, (0, 1)), cost(space, node.start_byte, access))
    shared = {name.encode() for decl, declared in lanes.declared
              if b"__shared__" in decl.text for name, *_ in declared}
    body, base = fn.body.text or b"", fn.body.start_byte
    # names followed by `[` are candidates already; those inside a dereference are
    # its address (evaluated or not, the candidate counts)
    spans: list[list[int]] = []
    for node in sorted((n for n in candidates if n.type != "subscript_expression"),
                       key=lambda n: n.start_byte):
        if spans and node.start_byte <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], node.end_byte)
        else:
            spans.append([node.start_byte, node.end_byte])
    starts = [a for a, _ in spans]
    for m in _IDENT.finditer(body) if shared else ():
        at = base + m.start()
        k = bisect_left(starts, at + 1) - 1
        if m.group() in shared and not re.match(rb"\s*\[", body[m.end():m.end() + 8]) \
                and not (k >= 0 and spans[k][0] <= at < spans[k][1]):
            hot["shared"] = max(hot.get("shared", (0, 1)),
                                cost("shared", base + m.start(), None))
    for a in accesses:
        a.loop_depth = cost(a.space, a.node.start_byte, a)
        a.hot_depth = max(hot.get(a.space, (0, 1)), a.loop_depth)
        a.global_depth = hot.get("global", (0, 1))[0]


# a `__shared__` array named outside an evaluated access (the address handed to an
# `ldmatrix.x4` or a 16-byte copy): the wavefronts of a 16-byte access
MENTION_WAVEFRONTS = 4


def _first_wavefronts(access: Access) -> int:
    for row in access.groups:
        if row.count(None) != len(row):
            return wavefronts(row, access.width)
    return 1


def _space_of(lanes: KernelLanes, fn: "Function", node: Node) -> str | None:
    """Global or shared for an access the lane figures skip, or None (a local array,
    or not known)."""
    try:
        p, _ = lanes.lvalue(node)
        if p.dims:
            return None
        return p.space
    except Opaque:
        pass
    except (RecursionError, OverflowError, ValueError, TypeError, AttributeError):
        return None
    base = node.child_by_field_name("argument")
    while base is not None and base.type in ("subscript_expression", "field_expression",
                                             "parenthesized_expression"):
        base = base.child_by_field_name("argument") or (
            base.named_children[0] if base.named_child_count else None)
    if base is not None and base.type == "identifier":
        param = fn.param(text(base))
        if param is not None and param.is_pointer:
            return "global"
    return None


def _reevaluator(make, values, node, target, up):
    def again(counters: dict[int, int]) -> Access | None:
        return _evaluate(make(values, counters), node, target, up)
    return again


def _int_values(lanes: KernelLanes):
    def value(expr: Node) -> tuple | None:
        try:
            return lanes.int_value(expr)
        except Opaque:
            return None
        except (RecursionError, OverflowError, ValueError, TypeError, AttributeError):
            return None
    return value


@dataclass(frozen=True)
class AnyBlock1D(BlockShape):
    """No launch gives the block shape of a kernel that reads threadIdx.x alone: its
    first warp is threads 0-31 of the block whatever the shape, from 32 threads on."""

    bound: int | None = field(default=None, compare=False)   # its __launch_bounds__

    def describe(self) -> str:
        sizes = "32 or more threads" if self.bound is None else \
            f"32 to {self.bound} threads (`__launch_bounds__({self.bound})` bounds it)"
        # an instantiation is named as BlockShape.describe names it (the engine keeps
        # one finding per place on that form)
        named = f", instantiation `{self.instance}`" if self.instance else ""
        return (f"any 1-D block of {sizes}: the kernel reads threadIdx.x alone "
                f"and no launch in the project gives its shape{named}")


ANY_1D_BLOCK = AnyBlock1D((256, 1, 1), "any-1d")
SMALLEST_1D_BLOCK = BlockShape((32, 1, 1), "any-1d")
_OTHER_AXES = re.compile(rb"\b(?:threadIdx|blockDim)\s*\.\s*[yz]\b|\bdim3\b|"
                         rb"\bthis_thread_block\b|\bthread_rank\b|\btiled_partition\b")


def any_1d_block(fn: "Function") -> BlockShape | None:
    """The block a 1-D kernel of unknown launch is evaluated with (checked against 32
    threads by the callers), within its ``__launch_bounds__``: a bound below 32 threads
    leaves no block the any-block form speaks of (None), a bound below 256 is the block
    evaluated. The bound is never taken as the block: it is only the largest one."""
    bound = launch_bounds_threads(fn)
    if bound is not None and bound < SMALLEST_1D_BLOCK.threads:
        return None
    shape = ANY_1D_BLOCK if bound is None else replace(ANY_1D_BLOCK, bound=bound)
    if bound is not None and bound < shape.threads:
        shape = replace(shape, dims=(bound, 1, 1))
    return replace(shape, instance=fn.instance) if fn.instance else shape


def _one_dimensional(fn: "Function") -> bool:
    """The kernel reads no thread axis but x (nor the block through cooperative groups):
    a 1-D block is all it can tell apart."""
    body = fn.body
    return body is not None and not _OTHER_AXES.search(body.text)


def _no_known_block(ctx: "UnitContext", fn: "Function") -> bool:
    """No launch of the unit gives or may give the kernel a block that is not 1-D: each
    one passes an unknown scalar block size (not a dim3, not several shapes that
    disagree), and no Python launch call names a block."""
    emb = getattr(ctx.unit, "embedded", None)
    if emb is not None and any(getattr(l, "block", None) for l in
                               getattr(emb, "launches", None) or []):
        return False
    for launch in ctx.model.launches_of(fn.name):
        if launch.block is not None or len(launch.config) < 2:
            return False
        expr = launch.config[1]
        if expr.type in ("call_expression", "initializer_list", "compound_literal_expression"
                         ) or b"dim3" in expr.text:
            return False
        if expr.type == "identifier" and launch.function is not None and \
                launch.function.body is not None and re.search(
                    rb"\bdim3\s+(?:[\w\s,()]*,\s*)?" + re.escape(expr.text) + rb"\b",
                    launch.function.body.text):
            return False                    # a dim3 variable of unknown shape
    return True


def _same_for_any_block(ctx, fn, structs, values, accesses, targets, up) -> list[Access]:
    """The accesses evaluated for a block of 256 threads whose figures and lane stride
    are the same for a block of 32: those hold for any 1-D block of 32 or more. An access
    at the ideal figure for 256 is kept as it is: it is no finding either way."""
    small = KernelLanes(ctx, fn, SMALLEST_1D_BLOCK, structs, values)
    kept = []
    for access, target in zip(accesses, targets):
        if access.space == "global" and \
                max(access.sectors_per_request()) <= access.ideal_sectors or \
                access.space == "shared" and \
                max(access.wavefronts()) <= access.ideal_wavefronts:
            kept.append(access)             # at the ideal: no finding to check
            continue
        other = _evaluate(small, access.node, target, up)
        if other is None:
            continue
        if access.space == "global":
            same = set(access.sectors_per_request()) == set(other.sectors_per_request())
        else:
            same = set(access.wavefronts()) == set(other.wavefronts())
        if same and access.lane_stride_bytes() == other.lane_stride_bytes():
            kept.append(access)
    return kept





def _evaluate(lanes: KernelLanes, node: Node, target: Node, up) -> Access | None:
    """The access ``node`` (read through ``target``, its field included) evaluated lane
    by lane, or None when the engine cannot follow it."""
    declared = lanes.block
    lanes.used_tid = set()
    lanes.used_params = set()
    try:
        p, width = lanes.lvalue(target)
        if p.dims:
            return None                         # an inner row, not an element
        act = lanes.active(node)
    except Opaque:
        return None
    except (RecursionError, OverflowError, ValueError, TypeError, AttributeError):
        return None
    is_store, is_load = _direction(target, up)
    offsets = list(p.offset) if all(act) else \
        [o if a else None for o, a in zip(p.offset, act)]
    groups = [offsets[g * WARP:(g + 1) * WARP] for g in range(lanes.groups)]
    idx = node.child_by_field_name("indices")
    return Access(node=node, kernel=lanes.fn, space=p.space, region=p.region,
                  elem_type=p.pointee, width=width, is_load=is_load,
                  is_store=is_store, block=declared, groups=groups, array=p.array,
                  index_text=text(idx) if idx is not None else "",
                  struct_field=p.field, expr_text=text(target),
                  struct_type=_struct_of(target) if p.field else None,
                  params=frozenset(lanes.used_params - lanes.bound.keys()))


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
        # static_cast<uint32_t>(scratch[off + 7]) converts a value: a plain load
        return not (text(callee.child_by_field_name("name")) in _VALUE_CASTS and
                    "&" not in text(callee.child_by_field_name("arguments")))
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


_VALUE_CASTS = ("static_cast", "reinterpret_cast", "const_cast")


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
    accesses, parentheses, argument lists), from one walk of a body. ``Node.parent``
    costs the node's depth (tree-sitter walks down from the root): asked for each of
    40,000 nested dereferences of a fuzzed expression it took minutes. The walk is a
    tree cursor's, not a query's: the query (a wildcard parent) took ~100 ms to compile,
    paid by every process that lints a kernel."""
    _TYPES = frozenset(("subscript_expression", "pointer_expression", "field_expression",
                        "parenthesized_expression", "argument_list"))

    # the first questions go to Node.parent (its cost is the node's depth, in C): a body
    # asked about a few nodes is not walked whole (a fuzzed 256 KB sum of 128,000 terms:
    # 2 questions, 0.5 s of walk per lint, 8 lints per language-server session)
    LAZY = 64

    def __init__(self, body: Node | None):
        self.map: dict[int, Node] | None = None
        self.body = body
        self.asked = 0

    def __call__(self, node: Node) -> Node | None:
        if self.map is None:
            self.asked += 1
            if self.asked <= self.LAZY:
                return node.parent
            self.map = _child_parents(self.body, self._TYPES) if self.body is not None \
                else {}
        got = self.map.get(node.id)
        return got if got is not None else node.parent


@lru_cache(maxsize=8)
def _child_parents(body: Node, types: frozenset) -> dict[int, Node]:
    """id -> parent for the nodes of ``types`` under ``body`` (a depth-first cursor walk,
    the parents kept on a stack: linear in the body's size at any depth). Memoised: a
    body is walked for its kernel, for each call of it as a device function and for
    CL108 (the key holds its tree, so a node id is not reused while cached)."""
    out: dict[int, Node] = {}
    cursor = body.walk()
    parents = [body]
    if not cursor.goto_first_child():
        return out
    while True:
        node = cursor.node
        if node.type in types:
            out[node.id] = parents[-1]
        if node.child_count and cursor.goto_first_child():
            parents.append(node)
            continue
        while not cursor.goto_next_sibling():
            if len(parents) == 1 or not cursor.goto_parent():
                return out
            parents.pop()


def _is_inner(node: Node, up=None) -> bool:
    """A subscript that is the base of another subscript (``t[i]`` in ``t[i][j]``)."""
    parent = (up or _node_parent)(node)
    return parent is not None and parent.type == "subscript_expression" and \
        parent.child_by_field_name("argument").id == node.id
