"""Global-memory races between threads of one launch (CL108): two accesses to one
buffer, at least one a store, whose addresses coincide for two different threads with
nothing ordering them.

``A[idx] = A[idx + 1]``: thread ``idx`` reads the element thread ``idx + 1`` writes in
the same launch, so the value read depends on which runs first. Nothing orders threads
of different blocks within a launch, and threads of one block only through a barrier.

How: the lane engine (kernel_lanes) evaluates the byte address of each subscript of a
named pointer (a parameter, or a local it follows to one; in a device function the
kernel calls, its parameter bound to the call's argument by callee_lanes, the threads
that reach the call its active ones) for the threads of warps 0, 1
and the last of a block, under its samples of the kernel's unknowns, once with
``blockIdx`` = 0 and once with 1 (same samples otherwise, so both blocks see the same
sizes). A pair of accesses races when, in one sample, a store's bytes and another
access's bytes meet for two threads (race_search), only buffers stored to being
evaluated:

- of one block, in a kernel with no block barrier at all (nor a call of a function of
  the unit that has one): a barrier may order the pair, and the block simulation of
  analysis/sync is the place to decide which, so those kernels are left alone;
- of blocks 0 and 1, for accesses outside loops (a sampled loop counter may stand for an
  iteration the loop never runs) whose addresses move with ``blockIdx``, in a kernel
  with no grid-wide synchronisation, ``__threadfence`` or ``volatile``, and not when
  every launch of the unit is a grid of one block.

A sampled parameter that multiplies the thread index in an address is most often a row
pitch (two rows meet at pitch 1 in every tiled kernel), so a pair that reads one is
compared at the largest sample only, and so is one whose address also reads a loop
counter (``od[y * w]`` walking a column: at pitch 1 the rows of the loop meet the next
threads' elements); one that only shifts every thread's address (``a[tid + offset]``) is
compared in every sample, and a value every launch passes as a constant is exact. Which
threads reach an access is decided per column: enclosing ``if`` and loop conditions and earlier
``if (...) return;`` statements, and the operators that evaluate the access on one outcome
(``t < n ? c[i] : 0``, ``t < n && c[i]``), where the engine can evaluate them (bounds on a
sampled parameter included, a ``__shared__`` scalar read after a barrier as one value for
the block); an unknown condition is assumed to hold either way, and an unknown part of
one keeps what the rest says (``t < n && pad[b]``: only threads below ``n``;
kernel_lanes_conditions).

The block: a launch's, or for a 1-D kernel no launch of the unit gives one, 256 threads,
unless its own index says the width it is written for: ``threadIdx.x + blockIdx.x * K``
with K a constant of the unit (``block_size_x``, a tuner's macro) in a kernel that never
reads ``blockDim.x`` is evaluated with blocks of K threads (32 to 1024). Blocks 0 and 1 of
another width would meet at indices the kernel's own tiling never gives two threads.
A kernel every launch of which passes one value both as its block size and as one of
its scalar parameters (``k<<<n, K>>>(u, K)``: blockDim.x is K) is evaluated at blocks of
32, 256 and 1024 threads with that parameter bound to the width, and a store is reported
only when it races at each (faiss's ``uterm[blockIdx.x * K + threadIdx.x] += ...`` is one
element per thread for every K; sheet-newcorpus8 W9). A launch's ``dim3`` variable is the
declaration in scope at the launch (model.kernels ``last_initializer``), not a
same-named one of a sibling ``{ }`` (sheet-newcorpus8 W7).

Not reported: atomics (the address is taken); an access under a condition that reads an
atomic's result (the last thread to arrive finishes the work, ordered by the atomic);
one store site executed by several threads with plain ``=`` (the values may agree, as
CL107 leaves unknown values alone), and two stores of one constant; pairs of addresses
that are the same for every thread on both sides; wrapper code cudalint writes around a
CuPy/PyCUDA snippet. Two pointer parameters are one buffer when a launch of the unit
passes them the same argument (``k<<<g, b>>>(d, d)``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from operator import and_
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from tree_sitter import Node

from cudalint.analysis.memory.callee_lanes import CalleeLanes, bind_arguments, device_calls
from cudalint.analysis.memory.kernel_lanes import KernelLanes
from cudalint.analysis.memory.kernel_lanes_conditions import (condition_mask,
                                                              expression_guards, strip)
from cudalint.analysis.memory.lane_values import COUNTER_SAMPLES, Opaque
from cudalint.analysis.memory.access_direction import direction_of as _direction
from cudalint.analysis.memory.lanes import (MAX_NEST, _no_known_block,
                                            any_1d_block, _one_dimensional, _Parents,
                                            launch_bindings)
from cudalint.analysis.memory.race_search import search
from cudalint.model.consteval import sizeof_type
from cudalint.model.instances import Instances
from cudalint.model.launch_shape import block_shape
from cudalint.model.types import StructType
from cudalint.model.types import struct_types as _struct_types
from cudalint.parse import nesting, text

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function

_BLOCK_BARRIER = re.compile(
    rb"__syncthreads|__barrier_sync|\bbar(?:rier)?\.(?:cta\.)?(?:sync|red|arrive)|"
    rb"\b(?:sync|synchronize)\s*\(|\.\s*sync\s*\(|->\s*sync\s*\(|\barrive_and_wait\b|"
    rb"\bgrid_sync\b")
_INTER_BLOCK = re.compile(rb"__threadfence|\bthis_grid\b|\bgrid_group\b|\bgrid\.sync\b|"
                          rb"\bvolatile\b|\bcuda::atomic|\bcuda::std::atomic")
# a store to an element: x[i] = / op= / ++ / --
_STORE = re.compile(rb"\]\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|\]\s*(?:\+\+|--)|(?:\+\+|--)\s*\w+\s*\[")
_ATOMIC = re.compile(rb"\batomic\w*\s*\(")
# a kernel with more subscripts than this is not searched (fuzzed sums of thousands)
MAX_SITES = 512
MAX_CALLS = 16              # device-function calls of one kernel followed (one level)
_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
# possessive: two \s* around an optional group backtracked quadratically over a long run
# of blanks (a fuzzed body of 51,000 spaces: 5.6 s per kernel; seed 36)
_CALL = re.compile(rb"\b([A-Za-z_]\w*+)\s*+(?:<[^<>;]*+>\s*+)?\(")
# the iteration counts the engine samples for an accumulating loop counter, and the mark
# an evaluation that read one leaves among the parameters it read
_COUNTS = frozenset(tuple(c + k for c in COUNTER_SAMPLES) for k in (0, 1))
_COUNTER = "<loop counter>"


@dataclass
class GlobalRace:
    kernel: "Function"
    store: Node                 # the subscript stored to (reported here)
    other: Node                 # the other access of the pair
    other_is_store: bool
    region: str                 # the parameter (or aliased parameters) both go through
    threads: tuple[int, int]    # thread of the store, thread of the other access
    blocks: tuple[int, int]     # their blockIdx.x
    byte: int                   # a byte offset both touch (from the buffer's start)
    block: tuple[int, int, int]
    via: Node | None = None     # the kernel's call of the device function holding store


class GlobalRaces:
    """ctx.analysis(GlobalRaces).items: one GlobalRace per store site (the first pair)."""

    def __init__(self, ctx: "UnitContext"):
        self.items: list[GlobalRace] = []
        if b"threadIdx" not in ctx.unit.data:
            return
        structs: dict[str, StructType] = {}

        def lazy_structs() -> dict[str, StructType]:
            if not structs:
                structs.update(_struct_types(ctx.model.nodes("struct")))
                structs.setdefault("", StructType("", 0, {}))
            return structs
        barrier_fns = None
        shared: dict[tuple, list[GlobalRace]] = {}
        for fn in ctx.analysis(Instances).kernels():
            if fn.body is None or b"threadIdx" not in fn.body.text and not any(
                    b"threadIdx" in (c.body.text or b"") for _, c in device_calls(ctx, fn)
                    if c.body is not None):
                continue
            up = _Parents(fn.body)
            sites = _sites(ctx, fn, up)
            if sites is None:
                # a store in a device function the kernel calls (nvcc inlines it)
                if not any(p.is_pointer for p in fn.params) or not any(
                        c.body is not None and _STORE.search(c.body.text)
                        for _, c in device_calls(ctx, fn)):
                    continue
                sites = []
            if barrier_fns is None:
                barrier_fns = {f.name for f in ctx.model.functions
                               if f.body is not None and _BLOCK_BARRIER.search(f.body.text)}
            self.items.extend(_kernel_races(ctx, fn, sites, lazy_structs, barrier_fns, up,
                                            shared))


def _aliases(ctx: "UnitContext", fn: "Function") -> dict[str, str]:
    """Pointer parameter -> the name of its buffer: parameters a launch of the unit
    passes the same plain argument are one buffer."""
    names = [p.name for p in fn.params]
    pointer = {p.name for p in fn.params if p.is_pointer}
    # the same for every kernel of one name and parameter list (copies, overloads): a
    # fuzzed file of 244 copies of a kernel and its launch read every launch's
    # arguments for every copy (3 s a lint, seed 37)
    key = (fn.name, tuple(names), frozenset(pointer))
    memo = _ALIASES.get(ctx.model)
    if memo is None:
        memo = _ALIASES[ctx.model] = {}
    if key not in memo:
        memo[key] = _find_aliases(ctx, fn.name, names, pointer)
    return dict(memo[key])


_ALIASES: "WeakKeyDictionary[object, dict[tuple, dict[str, str]]]" = WeakKeyDictionary()


def _find_aliases(ctx: "UnitContext", kernel: str, names: list[str], pointer: set[str]
                  ) -> dict[str, str]:
    rep = {n: n for n in names}
    for launch in ctx.model.launches_of(kernel):
        if launch.node.child_by_field_name("arguments") is None:
            continue
        if len(launch.args) != len(names):
            continue
        args = [text(a) for a in launch.args]
        seen: dict[str, str] = {}
        for name, arg in zip(names, args):
            if name not in pointer or not re.fullmatch(r"[A-Za-z_]\w*", arg):
                continue
            if arg in seen:
                first = rep[seen[arg]]
                for k, v in rep.items():
                    if v == rep[name]:
                        rep[k] = first
            else:
                seen[arg] = name
    return rep


def _sites(ctx: "UnitContext", fn: "Function", up, need_store: bool = True
           ) -> list[tuple[Node, bool, bool]] | None:
    """Subscripts of a named pointer (a parameter, or a local the engine follows to
    one; not under ``&``): (node, store, load), or None when none is a store (with
    ``need_store``) or there is none."""
    if not any(p.is_pointer for p in fn.params) or \
            need_store and not _STORE.search(fn.body.text):
        return None
    nodes = fn.nodes_in("subscript")
    if len(nodes) > MAX_SITES:
        return None
    out = []
    for node in nodes:
        base = node.child_by_field_name("argument")
        if base is None or base.type != "identifier":
            continue
        parent = up(node)
        if parent is not None and parent.type == "subscript_expression":
            continue                        # a row of a 2-D view: not an element
        if parent is not None and parent.type == "pointer_expression" and \
                text(parent.child_by_field_name("operator")) == "&":
            continue                        # an atomic's operand, an address passed on
        if not ctx.unit.is_written(node.start_byte):
            continue                        # wrapper code cudalint wrote for a snippet
        store, load = _direction(node, up)
        out.append((node, store, load))
    return out if any(store for _, store, _ in out) or not need_store and out else None


def _buffer(lanes: KernelLanes, node: Node, alias: dict[str, str]) -> str | None:
    """The buffer a subscript's pointer names (aliased), or None where the engine
    cannot follow the pointer (nor then the subscript's address)."""
    try:
        region = lanes.pointer(node.child_by_field_name("argument")).region
    except (Opaque, RecursionError, OverflowError, ValueError, TypeError, AttributeError):
        return None
    return alias.get(region, region)


def _racing_regions(evaluated: list) -> set[str]:
    """Buffers stored to and accessed at another site or read-modified-written."""
    keep = set()
    for region in {e[1] for e in evaluated}:
        here = [e for e in evaluated if e[1] == region]
        if any(e[2] for e in here) and (len(here) > 1 or any(e[2] and e[3] for e in here)):
            keep.add(region)
    return keep


class _AtBlock(KernelLanes):
    """The lane engine with ``blockIdx.x`` fixed (y, z at 0) and every other unknown
    sampled as usual; ``gridDim`` counts as a sampled parameter, so that an address
    that reads it is compared at its largest sample (a grid of one block has no block
    1)."""
    block_x = 0

    def _builtin(self, node: Node) -> tuple:
        base = text(node.child_by_field_name("argument"))
        if base == "blockIdx":
            comp = text(node.child_by_field_name("field"))
            return self.const(self.block_x if comp == "x" else 0)
        if base == "gridDim":
            self.used_params.add("gridDim")
        return super()._builtin(node)

    def sampled(self, values: tuple[int, ...]) -> tuple:
        if values in _COUNTS:
            self.used_params.add(_COUNTER)
        return super().sampled(values)


def _engine(ctx, fn, shape, structs, values, bx: int) -> _AtBlock:
    lanes = _AtBlock(ctx, fn, shape, structs, values)
    lanes.block_x = bx
    return lanes


def _kernel_races(ctx, fn, sites, structs, barrier_fns, up,
                  shared: dict | None = None) -> list[GlobalRace]:
    shape = block_shape(ctx, fn)
    if shape is None and _one_dimensional(fn) and _no_known_block(ctx, fn):
        shape = any_1d_block(fn)
        param = _block_param(ctx, fn)
        if shape is not None and param is not None:
            return _for_every_width(ctx, fn, sites, structs, barrier_fns, up, shared,
                                    shape, param)
        width = _index_width(fn)
        if shape is not None and width is not None and (
                shape.bound is None or width <= shape.bound):
            shape = replace(shape, dims=(width, 1, 1))
    return _races_at(ctx, fn, sites, structs, barrier_fns, up, shared, shape, {})


# the block widths a kernel whose blockDim.x is one of its parameters is evaluated at
PARAM_WIDTHS = (32, 256, 1024)


def _for_every_width(ctx, fn, sites, structs, barrier_fns, up, shared, shape,
                     param: str) -> list[GlobalRace]:
    """Races of a kernel every launch of which passes one value as its block width and
    as the parameter ``param`` (faiss IcmEncoder ``runNormAddition<<<n, K>>>(u, nm, K)``
    indexes ``blockIdx.x * K + threadIdx.x``: one element per thread for any K). The
    kernel is evaluated with blocks of 32, 256 and 1024 threads, ``param`` bound to the
    width each time, and a store is reported only when it races at every width (the
    message is the 256-thread block's). Taking the any-block 256 with ``param`` unknown
    made threads of blocks 0 and 1 meet at an index no launch gives two threads
    (bench/triage/sheet-newcorpus8.md, class W9)."""
    kept: dict[int, GlobalRace] | None = None
    for w in PARAM_WIDTHS:
        if shape.bound is not None and w > shape.bound:
            continue
        races = _races_at(ctx, fn, sites, structs, barrier_fns, up, shared,
                          replace(shape, dims=(w, 1, 1)), {param: w})
        at = {r.store.id: r for r in races}
        if kept is None:
            kept = at
        else:
            kept = {k: (at[k] if w == 256 else r) for k, r in kept.items() if k in at}
        if not kept:
            return []
    return list(kept.values()) if kept else []


def _block_param(ctx: "UnitContext", fn: "Function") -> str | None:
    """The scalar parameter that is the kernel's blockDim.x: every launch of the unit
    passes the block size it launches with (one name or expression, the same text) as
    that parameter's argument too, and the kernel reads the parameter."""
    launches = ctx.model.launches_of(fn.name)
    if not launches or fn.body is None:
        return None
    names: set[str] | None = None
    for launch in launches:
        if len(launch.config) < 2:
            return None
        block = launch.config[1].text
        here = {fn.params[i].name for i, a in enumerate(launch.args)
                if i < len(fn.params) and a.text == block and not fn.params[i].is_pointer}
        names = here if names is None else names & here
        if not names:
            return None
    if names is None or len(names) != 1:
        return None
    name = names.pop()
    return name if name and re.search(rb"\b" + re.escape(name.encode()) + rb"\b",
                                      fn.body.text) else None


def _races_at(ctx, fn, sites, structs, barrier_fns, up, shared, shape,
              forced: dict[str, int]) -> list[GlobalRace]:
    """The races of the kernel for the block ``shape``, ``forced`` binding parameters
    (the one that is blockDim.x) beside the launches' constants."""
    if shape is None or nesting(fn.body, MAX_NEST) > MAX_NEST:    # lanes.MAX_NEST
        return []
    body = fn.body.text
    called = {m.group(1).decode() for m in _CALL.finditer(body)}
    same_block = not _BLOCK_BARRIER.search(body) and not (called & barrier_fns)
    calls = [(call, c) for call, c in device_calls(ctx, fn) if c.body is not None and
             c.nodes_in("subscript") and any(p.is_pointer for p in c.params)][:MAX_CALLS]
    cross_block = not _INTER_BLOCK.search(body) and not _one_block(ctx, fn) and \
        not any(_INTER_BLOCK.search(c.body.text) for _, c in calls)
    if calls and same_block:
        # a barrier one call further (the callee's own calls)
        same_block = not any({m.group(1).decode() for m in _CALL.finditer(c.body.text)}
                             & barrier_fns for _, c in calls)
    if not (same_block or cross_block):
        return []
    values = {name: v for name, (v, _) in launch_bindings(ctx, fn).items()}
    values.update(forced)
    alias = _aliases(ctx, fn)
    key = None
    if shared is not None and fn.type_bindings:
        key = _share_key(fn, shape, values, alias, [c for _, c in device_calls(ctx, fn)])
    if key is not None and shared.get(key) == []:
        return []               # another element size of the same instantiation: no race
    engines = [_engine(ctx, fn, shape, structs, values, bx) for bx in (0, 1)]
    in_calls = []
    for call, callee in calls:
        for e in _callee_sites(ctx, fn, call, callee, engines, shape, structs, values, up):
            in_calls.append(((e[0], alias.get(e[1], e[1])) + e[2:], call))
    # a site of a buffer nothing stores to (nor reads at a second site) is dropped below
    # (_racing_regions): the buffers its pointer names, before any address is evaluated,
    # are a superset of the buffers kept there, so such sites are not evaluated at all
    named = [_buffer(engines[0], node, alias) for node, _, _ in sites]
    may_race = _racing_regions(
        [(None, r, store, load) for r, (_, store, load) in zip(named, sites)
         if r is not None] + [e for e, _ in in_calls])
    evaluated = []
    for (node, store, load), r in zip(sites, named):
        if r not in may_race:
            continue
        per_block = []
        for lanes in engines:
            got = _evaluate(lanes, fn, node, up)
            if got is None:
                break
            per_block.append(got)
        if len(per_block) == 2:
            region = alias.get(per_block[0][3], per_block[0][3])
            evaluated.append((node, region, store, load, per_block, _in_loop(node, fn, up)))
    vias: dict[int, Node] = {}
    for e, call in in_calls:
        vias[len(evaluated)] = call
        evaluated.append(e)
    keep = _racing_regions(evaluated)
    kept = [i for i, e in enumerate(evaluated) if e[1] in keep]
    vias = {k: vias[i] for k, i in enumerate(kept) if i in vias}
    evaluated = [evaluated[i] for i in kept]
    cols = engines[0].cols
    hits = search(evaluated, cols, same_block, cross_block, up)
    found = []
    seen: set[int] = set()
    for i, (j, t1, t2, blocks, byte) in sorted(hits.items()):
        s_node, region, _, _, _, _ = evaluated[i]
        if s_node.id in seen:
            continue            # one device function's store reached by two calls
        seen.add(s_node.id)
        o_node, o_store = evaluated[j][0], evaluated[j][2]
        found.append(GlobalRace(fn, s_node, o_node, o_store and i != j, region,
                                (t1, t2), blocks, byte, shape.dims, vias.get(i)))
    if key is not None:
        # a race found is not shared: its byte and message (the instantiation a call
        # names) are the instantiation's own, and races are rare
        shared.setdefault(key, found)
    return found


# ``threadIdx.x + blockIdx.x * K`` and its spellings: the global index of a block of K
_K = r"([A-Za-z_]\w*|\d+)"
_BX = r"blockIdx\s*\.\s*x"
_TX = r"threadIdx\s*\.\s*x"
_WIDTH = re.compile(
    rf"(?<![\w*/.])(?:{_TX}\s*\+\s*(?:{_BX}\s*\*\s*{_K}|{_K}\s*\*\s*{_BX})"
    rf"|(?:{_BX}\s*\*\s*{_K}|{_K}\s*\*\s*{_BX})\s*\+\s*{_TX})(?![\w(\[.]|\s*[*/])")


def _index_width(fn: "Function") -> int | None:
    """The block width a kernel of unknown launch says it is written for: its global
    index is ``threadIdx.x + blockIdx.x * K`` (in any order) with K a constant of the
    unit (``block_size_x``, a tuner's macro), the same K wherever it is spelled so, and
    it never reads ``blockDim.x``. Blocks of K threads tile the index without overlap;
    another width is a launch the kernel is not written for, and the assumed 256 would
    make threads of blocks 0 and 1 meet at an index only that width gives two threads
    (sheet-newcorpus5 W3: ``thread 32 of block 0`` against ``thread 0 of block 1`` at
    ``j = 32`` for ``block_size_x`` = 32)."""
    body = fn.body.text if fn.body is not None else b""
    if b"blockDim" in body:
        return None
    widths = set()
    for m in _WIDTH.finditer(body.decode("utf-8", "replace")):
        name = next(g for g in m.groups() if g is not None)
        k = int(name) if name.isdigit() else fn.constants.get(name)
        if k is None:
            return None                 # a parameter or a local: no width said
        widths.add(k)
    if len(widths) != 1:
        return None
    k = widths.pop()
    return k if 32 <= k <= 1024 else None


# what makes an element size reach an address other than by scaling every element of
# a buffer alike: the size itself, a reinterpretation, a cast to a pointer type
_SIZE_SEEN = re.compile(
    rb"\bsizeof\b|\balignof\b|\b_?_?alignof__?\b|\breinterpret_cast\b|\bunion\b|"
    rb"\*\s*(?:const\s*|__restrict__\s*)?\*|"
    rb"_cast\s*<[^<>;]*\*|\(\s*(?:(?:const|volatile|unsigned|signed|struct)\s+)*"
    rb"[A-Za-z_][\w:]*\s*(?:const\s*)?\*+\s*(?:const\s*|__restrict__\s*)?\)")
_VECTOR_NAME = re.compile(r"[234]$")


def _share_key(fn: "Function", shape, values: dict[str, int], alias: dict[str, str],
               callees: list) -> tuple | None:
    """What the race search of an instantiation can see, or None when that is more
    than its non-type arguments, block and launch constants: the scalar types its type
    parameters are bound to matter only by their sizes, and a size only scales every
    byte offset and width into the buffers of that type alike (``x[i]`` of a ``T*`` is
    at ``i * sizeof(T)``, ``sizeof(T)`` wide), which keeps which threads' elements meet,
    unless the text reads a size (``sizeof``), reinterprets memory (casts to pointer
    types, unions), binds a vector or struct type (fields at fixed offsets) or a launch
    passes one buffer to two parameters (of two types, maybe). The engine's values carry
    no type (``T v = ...`` evaluates alike for any T), which is why one instantiation
    per size was all the analyses needed before."""
    for name, t in fn.type_bindings.items():
        t = " ".join(t.replace("const", " ").split())
        if sizeof_type(t) is None or _VECTOR_NAME.search(t):
            return None
    if any(k != v for k, v in alias.items()):
        return None
    for f in [fn, *callees]:
        # the whole definition: parameters (``T**``) and body
        if _SIZE_SEEN.search(f.node.text or b""):
            return None
    return (fn.node.id, tuple(sorted(fn.bindings.items())),
            tuple(sorted(fn.type_bindings)), type(shape).__name__, shape.dims,
            tuple(sorted(values.items())))


class _CalleeAtBlock(_AtBlock, CalleeLanes):
    """A device function's body at one call of the kernel, ``blockIdx.x`` fixed."""


def _callee_sites(ctx, fn, call, callee, engines, shape, structs, values, up) -> list:
    """The subscripts of a device function the kernel calls (one level), evaluated
    with the call's binding in blocks 0 and 1, the threads that reach the call its
    active ones: entries as ``_kernel_races`` builds them (region not yet aliased)."""
    if callee.body is None or nesting(callee.body, MAX_NEST) > MAX_NEST:
        # its lane values would be computed by a recursion as deep as the body (fuzz seed
        # 40: a 1,000-term sum in a device function ran down to the interpreter's limit,
        # where the garbage collector's weakref callback found no stack left)
        return []
    c_up = _Parents(callee.body)
    in_loop = _in_loop(call, fn, up)
    per_engine = []
    for lanes in engines:
        got = bind_arguments(lanes, call, callee)
        if got is None:
            return []
        bound, args = got
        try:
            act = _reached(lanes, fn, call, up)
        except (Opaque, RecursionError, OverflowError, ValueError, TypeError,
                AttributeError):
            return []
        clanes = _CalleeAtBlock(ctx, bound, shape, structs, values, None, args, act)
        clanes.block_x = lanes.block_x
        per_engine.append((bound, clanes))
    bound = per_engine[0][0]
    out = []
    for node, store, load in _sites(ctx, bound, c_up, need_store=False) or ():
        per_block = []
        for b, clanes in per_engine:
            got = _evaluate(clanes, b, node, c_up)
            if got is None:
                break
            per_block.append(got)
        if len(per_block) == 2:
            out.append((node, per_block[0][3], store, load, per_block,
                        in_loop or _in_loop(node, bound, c_up)))
    return out


def _one_block(ctx: "UnitContext", fn: "Function") -> bool:
    """Every launch of the unit gives the kernel a grid of one block."""
    launches = ctx.model.launches_of(fn.name)
    return bool(launches) and all(l.grid == (1, 1, 1) for l in launches)


def _evaluate(lanes: KernelLanes, fn, node: Node, up):
    """(byte offset per column or None where the thread does not run it, width, whether
    it reads a sampled parameter, the buffer, whether it is the same for every thread),
    or None when the engine cannot follow the address."""
    lanes.used_tid = set()
    lanes.used_params = set()
    try:
        p, width = lanes.lvalue(node)
        counted = _COUNTER in lanes.used_params
        params = bool(lanes.used_params - lanes.bound.keys() - {_COUNTER})
        if p.dims or p.space != "global":
            return None
        uniform = not (lanes.used_tid & {"x", "y", "z"})
        act = _reached(lanes, fn, node, up)
    except Opaque:
        return None
    except (RecursionError, OverflowError, ValueError, TypeError, AttributeError):
        return None
    offsets = list(p.offset) if all(act) else \
        [o if a else None for o, a in zip(p.offset, act)]
    if params and not counted and not _scales_threads(p.offset, lanes.cols):
        params = False          # an offset added to every thread: exact in every sample
    return offsets, width, params, p.region, uniform


def _scales_threads(offset, cols) -> bool:
    """The threads' addresses relative to the first thread's change from one sample of
    the unknowns to another: a parameter multiplies the thread index (a row pitch,
    ``i * stride``). Such a pair is compared at the largest sample only; an offset that
    only shifts every thread (``a[tid + offset]``) is compared in every sample."""
    rel: dict[int, list[int]] = {}
    for c, o in enumerate(offset):
        s = cols[c][0]
        rel.setdefault(s, []).append(o)
    shapes = {tuple(o - v[0] for o in v) for v in rel.values()}
    return len(shapes) > 1


def _condition(lanes: KernelLanes, cond: Node | None, want: bool = True
               ) -> tuple | None:
    """The columns where the condition may be ``want`` (the parts of ``A && B`` the
    engine evaluates, kernel_lanes_conditions), or None (nothing known). Memoised per
    engine: every access under one ``if`` asks it again (the answer depends only on the
    engine's bindings and block, and ``_leaf`` leaves no thread axes behind)."""
    if cond is None:
        return None
    memo = lanes.__dict__.setdefault("_race_conditions", {})
    key = (cond.id, want)
    if key not in memo:
        memo[key] = condition_mask(lambda leaf: _leaf(lanes, leaf), cond, want)
    return memo[key]


def _leaf(lanes: KernelLanes, cond: Node) -> tuple | None:
    """One condition's value per column, or None (the engine cannot evaluate it)."""
    inner = strip(cond)
    saved = lanes.used_tid
    lanes.used_tid = set()
    try:
        return lanes.condition_value(inner)
    except (Opaque, RecursionError, OverflowError, ValueError, TypeError, AttributeError):
        return None
    finally:
        lanes.used_tid = saved


def _reached(lanes: KernelLanes, fn, node: Node, up) -> tuple:
    """Columns whose thread reaches ``node``: enclosing if conditions and earlier
    ``if (c) return;`` statements of enclosing blocks, and the operators that evaluate
    it on one outcome (``t < n ? c[i] : 0``, ``t < n && c[i]``), where the engine
    evaluates them, in part (``t < n && pad[b]``) or whole."""
    act = _around(lanes, node, up)
    for cond, want in expression_guards(node, fn.body):
        vec = _condition(lanes, cond, want)
        if vec is not None:
            act = _narrow(act, vec)
    return act


_ORDERED = object()     # _around's memo: under an if that reads an atomic's result


def _narrow(act: tuple, vec: tuple) -> tuple:
    """The columns of ``act`` (bools) where ``vec`` holds too."""
    return tuple(map(and_, act, map(bool, vec)))


def _around(lanes: KernelLanes, node: Node, up) -> tuple:
    """The columns the statements around ``node`` let reach it (``_reached`` without
    the operators inside its own expression). Memoised per node on the way up, per
    engine: the accesses of one statement, and of one branch, share their ancestors,
    and each used to re-apply every condition above it (fuzz seed 36's d1f8d7e713:
    504 kernels, 4 accesses under one ``if`` each)."""
    memo = lanes.__dict__.setdefault("_race_around", {})
    path = []
    cur = node
    while True:
        got = memo.get(cur.id)
        if got is not None:
            break
        parent = up(cur)
        if parent is None:
            got = lanes.active0
            break
        path.append((cur, parent))
        cur = parent
    for cur, parent in reversed(path):
        if got is not _ORDERED:
            got = _narrowed(lanes, got, cur, parent)
        memo[cur.id] = got
    if got is _ORDERED:
        raise Opaque(node)
    return got


def _narrowed(lanes: KernelLanes, act: tuple, cur: Node, parent: Node):
    """``act`` less the columns that ``parent`` keeps from its child ``cur``, or
    _ORDERED."""
    if parent.type == "if_statement":
        if _ATOMIC.search(parent.child_by_field_name("condition").text or b""):
            # "the last one to arrive" (atomicAdd(&count, 1) == n - 1): the atomic
            # orders the access after the others' work
            return _ORDERED
        cons = parent.child_by_field_name("consequence")
        alt = parent.child_by_field_name("alternative")
        in_cons = cons is not None and cons.id == cur.id
        in_alt = alt is not None and alt.id == cur.id
        if in_cons or in_alt:
            vec = _condition(lanes, parent.child_by_field_name("condition"), in_cons)
            if vec is not None:
                act = _narrow(act, vec)
    elif parent.type in ("for_statement", "while_statement") and \
            parent.child_by_field_name("body") is not None and \
            parent.child_by_field_name("body").id == cur.id:
        vec = _condition(lanes, parent.child_by_field_name("condition"))
        if vec is not None:
            act = _narrow(act, vec)
    elif parent.type == "compound_statement":
        for stmt in _exit_ifs(lanes, parent):
            if stmt.start_byte >= cur.start_byte:
                break
            vec = _condition(lanes, stmt.child_by_field_name("condition"), False)
            if vec is not None:
                act = _narrow(act, vec)
    return act


def _exit_ifs(lanes: KernelLanes, block: Node) -> list[Node]:
    """The ``if (c) return;`` statements of a block, in order (once per block: a body
    of thousands of statements is walked once, not once per access)."""
    memo = lanes.__dict__.setdefault("_exit_ifs", {})
    got = memo.get(block.id)
    if got is None:
        got = memo[block.id] = [c for c in block.named_children
                                if c.type == "if_statement" and _exits(c)]
    return got


def _exits(stmt: Node) -> bool:
    """``if (c) return;`` (or ``{ return; }``) with no else."""
    if stmt.child_by_field_name("alternative") is not None:
        return False
    cons = stmt.child_by_field_name("consequence")
    while cons is not None and cons.type == "compound_statement":
        inner = [c for c in cons.named_children if c.type != "comment"]
        if len(inner) != 1:
            return False
        cons = inner[0]
    return cons is not None and cons.type == "return_statement"


def _in_loop(node: Node, fn, up) -> bool:
    cur = up(node)
    while cur is not None:
        if cur.type in _LOOPS:
            return True
        cur = up(cur)
    return False


def describe_threads(race: GlobalRace) -> tuple[str, str]:
    """'thread 3 of block 0', 'thread 2 of block 0' for a message."""
    bx = race.block[0]

    def one(t: int, b: int) -> str:
        if race.block[1] == 1 and race.block[2] == 1:
            return f"thread {t} of block {b} (global index {b * bx + t})"
        return f"thread {t} of block {b}"
    return one(race.threads[0], race.blocks[0]), one(race.threads[1], race.blocks[1])

