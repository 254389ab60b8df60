"""Shared-memory races and warp-mask mismatches, found by running a kernel's block.

The kernel body is executed for the threads of one block at once (vectors of per-thread
values, bit masks of active threads), following the structured control flow of
:mod:`cfg`: branches split the active mask, loops iterate while any thread continues,
``return``/``break``/``continue`` leave per thread, device functions of the unit are
inlined. Index arithmetic is exact per thread (``%``, ``/``, ``^``, ``&`` included), as
in the lane engine of :mod:`lanes` (whose type sizes and struct layouts it reuses);
everything the kernel cannot know (kernel parameters, ``blockIdx``, ``gridDim``) is a
uniform value given sample figures, and each kernel is run once per sample.

Every ``__shared__`` access is logged per byte address until the next block barrier.
A read of an address another thread wrote (or a write of one another thread read) in
the same barrier interval is a race, unless the two threads are lanes of one warp and
a ``__syncwarp()`` (or a tile sync) containing both ran in between:

    CL102  the other thread is in another warp: only ``__syncthreads()`` orders them
    CL101  the other thread is a lane of the same warp, with no warp-level sync

Precision first: a value the simulation cannot know is *unknown*; an access at an
unknown address is not logged; an access under a condition it cannot evaluate is
*uncertain* and never reported; a call it cannot see into counts as a barrier; a loop
it cannot bound stops the run (races found before are kept). A race is reported only
when every run (every sample, and every candidate block shape when the shape is not
known) finds it.

At each ``*_sync(mask, ...)`` warp intrinsic the run also compares the constant mask
with the lanes that execute the call (CL105).

Cost (bench/rule_speed.py): per-thread values are tuples handled at C speed (list
comprehensions and map() over whole vectors, masks from bit strings, memoised bit
indices); the syntax is read through a memoised mirror (:class:`_Syn`) with each node's
operands decoded once; the shared-memory log keeps accesses as vectors and builds its
address map only when accesses of the other kind share an address with another thread;
kernels that can only tell CL103 about divergent barriers run only if CL103 asks, and
only those that can execute the barrier it asks about (:meth:`RaceAnalysis.reached_by_part`).
Kernels a static barrier-interval check (:class:`_IntervalCheck`) proves quiet (each
shared array only read or only written between barriers, pointers and inlined device
functions followed, no warp intrinsic) are deferred the same way; a call of a device
function that cannot touch shared memory, synchronize or return an integer is not
inlined (:meth:`_UnitMemo.inert`).
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import repeat
from operator import is_
from typing import TYPE_CHECKING, Any

from tree_sitter import Node

from cudalint.model.consteval import eval_int
from cudalint.parse import captures
from cudalint.parse import text as _ts_text
from cudalint.analysis.sync.cfg import BODY_QUERY, BodyQueries, Group, callee_short_name, classify_sync, \
    group_handles
from cudalint.model.launch_shape import block_shape
from cudalint.model.types import struct_types, type_size

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function

WARP = 32
LOOP_CAP = 64                 # iterations of one loop in one run
STEP_BUDGET = 2500             # statement executions per run (at most)
THREAD_STEPS = 100_000         # statement executions x simulated threads per run
MAX_INLINE_DEPTH = 6
# (kernel parameters, blockIdx, gridDim) per run: large sizes so that bounds checks
# such as `i < n` hold for the sampled blocks, two different values so that a figure
# that depends on them is not taken for a fact
SAMPLES = ((1024, 0, 4), (2053, 1, 7))
GUESSED_BLOCKS = ((128, 1, 1), (256, 1, 1))
FULL_MASK = 0xFFFFFFFF

WARP_INTRINSICS = frozenset({
    "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
    "__ballot_sync", "__any_sync", "__all_sync", "__uni_sync", "__match_any_sync",
    "__match_all_sync", "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync",
    "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync", "__syncwarp",
})
_PURE = re.compile(
    r"^(?:std::|::|cuda::std::)?(?:[a-z]*(?:sqrt|rsqrt|cbrt|rcbrt|exp|exp2|exp10|expm1|log|"
    r"log2|log10|log1p|pow|sin|cos|tan|sinh|cosh|tanh|asin|acos|atan|atan2|fabs|abs|fmax|"
    r"fmin|max|min|floor|ceil|round|rint|trunc|fma|fmod|erf|erfc|erfinv|hypot|isnan|isinf|"
    r"isfinite|copysign|lgamma|tgamma|sincos|sincospi|rcp|saturate|lrint|llrint|lround|"
    r"signbit|nearbyint|remainder|ldexp|frexp|fdim|norm\d*d?|rnorm\d*d?|normcdf|sinpi|"
    r"cospi)f?|make_\w+|printf|assert|static_cast|reinterpret_cast|const_cast|"
    r"dynamic_cast|float|double|int|unsigned|half|__half|bfloat16|__nv_bfloat16|"
    r"min|max|abs|swap|clamp|ceil_div|div_up|DIVUP|THCCeilDiv|ceilDiv|sizeof|"
    r"numeric_limits|is_same)$")
_LANE_FUNCS = frozenset({"__lane_id", "lane_id", "laneid", "get_lane_id", "__laneid",
                         "LaneId"})
_VALUE_CALLS = frozenset({"min", "max", "umin", "umax", "imin", "imax", "static_cast",
                          "int", "unsigned", "size_t", "reinterpret_cast"})
_INT_TYPES = ("int", "long", "short", "char", "size_t", "unsigned", "signed", "auto",
              "int32_t", "int64_t", "uint32_t", "uint64_t", "index_t", "bool", "uint",
              "dim_t", "int16_t", "uint16_t", "int8_t", "uint8_t")


class _Syn:
    """A tree-sitter node as the block run reads it, with what it asks for memoised:
    type, byte range, children, fields and text. A run evaluates the same few nodes
    again and again (every loop iteration, every inlined call); asking tree-sitter each
    time (a new Node object per call, the text sliced and decoded anew) cost more than
    the evaluation itself. Only the subset of the Node API the run uses; ``ts`` is the
    node itself (results hold it, never the mirror)."""

    __slots__ = ("ts", "id", "type", "_named", "_children", "_fields", "_str", "aux")

    def __init__(self, ts: Node):
        self.ts = ts
        self.id = ts.id
        self.type = ts.type
        self._named: list[_Syn] | None = None
        self._children: list[_Syn] | None = None
        self._fields: dict[str, Any] | None = None
        self._str: str | None = None
        self.aux: tuple | None = None      # the evaluator's decoded form of the node

    @property
    def start_byte(self) -> int:
        return self.ts.start_byte

    @property
    def end_byte(self) -> int:
        return self.ts.end_byte

    @property
    def named_children(self) -> list["_Syn"]:
        v = self._named
        if v is None:
            v = self._named = [_Syn(c) for c in self.ts.named_children]
        return v

    @property
    def children(self) -> list["_Syn"]:
        v = self._children
        if v is None:
            v = self._children = [_Syn(c) for c in self.ts.children]
        return v

    def child_by_field_name(self, name: str) -> "_Syn | None":
        f = self._fields
        if f is None:
            f = self._fields = {}
        elif name in f:
            return f[name]
        c = self.ts.child_by_field_name(name)
        v = f[name] = _Syn(c) if c is not None else None
        return v

    def children_by_field_name(self, name: str) -> list["_Syn"]:
        f = self._fields
        if f is None:
            f = self._fields = {}
        key = "*" + name
        v = f.get(key)
        if v is None:
            v = f[key] = [_Syn(c) for c in self.ts.children_by_field_name(name)]
        return v

    @property
    def text(self) -> bytes | None:
        return self.ts.text

    @property
    def str(self) -> str:
        v = self._str
        if v is None:
            v = self._str = _ts_text(self.ts)
        return v


def text(node) -> str:
    """Source text of a mirrored or a plain tree-sitter node."""
    if node.__class__ is _Syn:
        s = node._str
        if s is None:
            s = node._str = _ts_text(node.ts)
        return s
    return _ts_text(node)


class _UnitMemo:
    """What every run of every kernel of a unit shares: mirrored bodies, group handles."""

    def __init__(self, queries: BodyQueries | None = None):
        self._queries = queries
        self._syntax: dict[int, _Syn] = {}
        self._groups: dict[int, dict[str, Group]] = {}
        self._assigned: dict[int, list[str]] = {}
        self._inert: dict[int, bool] = {}
        self._fn_re = None
        self._reach: dict[int, set[str]] = {}
        self.shared_names: set[str] = set()

    def syntax(self, body: Node) -> _Syn:
        s = self._syntax.get(body.id)
        if s is None:
            s = self._syntax[body.id] = _Syn(body)
        return s

    def assigned_names(self, node: Node) -> list[str]:
        """Identifiers assigned or incremented anywhere inside ``node``."""
        names = self._assigned.get(node.id)
        if names is None:
            caps = captures("(assignment_expression left: (identifier) @a) "
                            "(update_expression argument: (identifier) @u)", node)
            names = self._assigned[node.id] = [
                _ts_text(i) for i in caps.get("a", []) + caps.get("u", [])]
        return names

    def function_names_re(self, functions):
        """A regex of the unit's device function names (memoised)."""
        r = self._fn_re
        if r is None:
            names = sorted(functions, key=len, reverse=True)
            r = self._fn_re = re.compile(
                rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b"
                if names else rb"(?!)")
        return r

    def reachable(self, fn: "Function", functions) -> set[str]:
        v = self._reach.get(fn.node.id)
        if v is None:
            v = self._reach[fn.node.id] = _reachable_names(fn, functions)
        return v

    def inert(self, fn: "Function", functions) -> bool:
        """Whether a run may skip a call of the device function ``fn`` (arguments
        evaluated, no shared pointer among them): it returns nothing a run could know
        (void, floating point, a struct: not an integer) and its body is inert (see
        :meth:`inert_body`)."""
        ret = fn.node.child_by_field_name("type")
        ret_text = _ts_text(ret) if ret is not None else ""
        if ret_text != "void" and (not ret_text or _is_int_type(ret_text)):
            return False
        return self.inert_body(fn, functions)

    def inert_body(self, fn: "Function", functions) -> bool:
        """``fn``'s body and the device functions it calls (transitively) name no
        ``__shared__`` memory, barrier, warp intrinsic or ``asm``, cannot leave the
        kernel, and call only value-only functions (math, conversions, atomics; no
        unknown function, which a run takes for a barrier; no method)."""
        key = fn.node.id
        v = self._inert.get(key)
        if v is None:
            self._inert[key] = False          # a recursive call: not inert
            v = self._inert[key] = self._is_inert_body(fn, functions)
        return v

    def _is_inert_body(self, fn: "Function", functions) -> bool:
        data = fn.body.text or b""
        if b"__shared__" in data or b"asm" in data or b"sync" in data or \
                b"bar." in data or b"exit" in data or b"trap" in data or \
                any(n.encode() in data for n in self.shared_names) or \
                any(n in data for n in _MASKED):
            return False
        caps = self._queries(fn.body) if self._queries is not None else \
            {"call": captures("(call_expression) @c", fn.body).get("c", [])}
        groups = self.groups(fn.body)
        for node in caps.get("call", []):
            if classify_sync(node, groups) is not None:
                return False
            fnode = node.child_by_field_name("function")
            if fnode is None or fnode.type == "field_expression":
                return False
            name = _ts_text(fnode)
            short = callee_short_name(fnode)
            if short in WARP_INTRINSICS:
                return False
            callee = functions.get(short)
            if callee is not None and callee.body is not None:
                if not self.inert_body(callee, functions):
                    return False
                continue
            if short in _LANE_FUNCS or short in _VALUE_CALLS or short.startswith("__") \
                    or short.startswith("atomic") or _PURE.match(name) or \
                    _PURE.match(short):
                continue
            return False                      # unknown: a run takes it for a barrier
        return True

    def groups(self, body: Node) -> dict[str, Group]:
        g = self._groups.get(body.id)
        if g is None:
            caps = self._queries(body) if self._queries is not None else None
            g = self._groups[body.id] = group_handles(body, caps)
        return g


class GiveUp(Exception):
    """The run cannot go on exactly: stop (what was found before stays)."""


@dataclass
class SPtr:
    """A pointer into shared memory: array key, byte offset (int or per thread)."""
    key: str
    offset: Any
    elem: str
    dims: tuple = ()            # remaining inner dimensions (multi-dimensional arrays)
    size: int | None = None     # the whole array's bytes, when known


class GPtr:
    """A pointer into global/local memory: its loads are unknown, its stores ignored."""


GLOBAL = GPtr()


@dataclass
class SharedVar:
    key: str
    name: str
    elem: str
    dims: tuple                  # () for a scalar
    extern: bool


@dataclass
class Hit:
    """One racing pair, as found in one run."""
    first: Node                  # the earlier access
    second: Node                 # the later access
    first_write: bool
    cross_warp: bool
    threads: tuple[int, int]     # (earlier thread, later thread), linear ids
    address: int
    array: str


@dataclass
class MaskHit:
    node: Node
    mask: int
    arrive: int                  # lanes that execute the call (in one warp)
    live: int                    # lanes of the warp still running the kernel
    warp: int


@dataclass
class RunResult:
    races: dict[tuple[int, int], Hit] = field(default_factory=dict)
    masks: dict[int, MaskHit] = field(default_factory=dict)
    divergent: dict[int, Node] = field(default_factory=dict)
    complete: bool = True
    reason: str = ""


class _Accesses:
    """The accesses of one kind (writes or reads) to one ``__shared__`` array since the
    last block barrier. Logically a map byte address -> {thread: (node, warp events
    seen, certain, node id)} holding each thread's latest access there (a thread keeps
    its first place when it accesses again). Only the accesses of the other kind look
    it up, and most arrays are only written or only read between two barriers: so the
    accesses are kept as vectors (with the set of their addresses) and folded into the
    map, in order, only when an access of the other kind shares an address with them.
    While every address was accessed by one thread only (``owner``: address -> that
    thread), an access whose threads own the addresses they touch (``s[tid] +=`` in a
    loop) pairs with nothing, which is decided without the map."""

    __slots__ = ("pending", "index", "addrs", "owner")

    def __init__(self):
        self.pending: list[tuple] = []
        self.index: dict[int, dict[int, tuple]] = {}
        self.addrs: set[int] = set()
        self.owner: dict[int, int] | None = {}

    def add(self, node: Node, node_id: int, idx: list[int], addrs: list[int],
            unsure: frozenset | None, events: dict[int, int]) -> None:
        self.pending.append((node, node_id, idx, addrs, unsure, events))
        self.addrs.update(addrs)
        owner = self.owner
        if owner is not None:
            mine = dict(zip(addrs, idx))
            if len(mine) == len(addrs) and self.only_own(addrs, idx):
                owner.update(mine)
            else:
                self.owner = None

    def only_own(self, addrs: list[int], idx: list[int]) -> bool:
        """No address of ``addrs`` was accessed here by a thread other than the one of
        ``idx`` that accesses it now (False when that is not known)."""
        owner = self.owner
        return owner is not None and list(map(owner.get, addrs, idx)) == idx

    def fold(self, warp_of: list[int]) -> dict[int, dict[int, tuple]]:
        index = self.index
        for node, node_id, idx, addrs, unsure, events in self.pending:
            entries: dict[tuple[int, bool], tuple] = {}
            for i, a in zip(idx, addrs):
                w = warp_of[i]
                certain = not (unsure and i in unsure)
                e = entries.get((w, certain))
                if e is None:
                    e = entries[(w, certain)] = (node, events.get(w, 0), certain, node_id)
                at = index.get(a)
                if at is None:
                    index[a] = {i: e}
                else:
                    at[i] = e
        self.pending.clear()
        return index


class _Frame:
    def __init__(self):
        self.ret = 0
        self.value: list | None = None
        self.loops: list[list[int]] = []      # [break mask, continue mask]


class BlockRun:
    """One execution of a kernel for one block shape and one sample."""

    def __init__(self, ctx: "UnitContext", fn: "Function", block: tuple[int, int, int],
                 sample: tuple[int, int, int], structs, functions, shared_globals,
                 memo: "_UnitMemo | None" = None):
        self.ctx, self.fn = ctx, fn
        self.memo = memo if memo is not None else _UnitMemo()
        self.block = block
        self.param_value, self.block_idx, self.grid_dim = sample
        self.structs = structs
        self.functions = functions
        bx, by, bz = block
        total = bx * by * bz
        self.total = total
        nwarps = -(-total // WARP)
        self.tids = [t for w in _chosen_warps(nwarps) for t in range(w * WARP, min(
            total, (w + 1) * WARP))]
        n = len(self.tids)
        self.n = n
        self.full = (1 << n) - 1
        self.warp_of = [t // WARP for t in self.tids]
        self.lane_of = [t % WARP for t in self.tids]
        self.tx = tuple(t % bx for t in self.tids)
        self.ty = tuple((t // bx) % by for t in self.tids)
        self.tz = tuple(t // (bx * by) for t in self.tids)
        self.linear = tuple(self.tids)
        self.warp_bits: dict[int, int] = {}
        for i, w in enumerate(self.warp_of):
            self.warp_bits[w] = self.warp_bits.get(w, 0) | (1 << i)
        self.scopes: list[dict[str, Any]] = []
        self.shared: dict[str, SharedVar] = dict(shared_globals)
        self.maybe = 0           # threads whose path here is not known (scoped)
        self.ghost = 0           # threads that may have left (persistent)
        self.exited = 0          # threads that returned from the kernel
        self.frames: list[_Frame] = []
        self.steps = 0
        self.budget = min(STEP_BUDGET, max(300, THREAD_STEPS // max(1, n)))
        # array key -> (writes, reads) since the last block barrier (see _Accesses)
        self.log: dict[str, tuple[_Accesses, _Accesses]] = {}
        self.events: dict[int, list[int]] = {}
        self._event_counts: dict[int, int] | None = None     # len of each events list
        self.result = RunResult()
        self.groups: dict[str, Group] = {}
        self.depth = 0
        self._bits: dict[int, list[int]] = {}
        self._sizes: dict[str, int | None] = {}

    # ---- driver --------------------------------------------------------------------
    def run(self) -> RunResult:
        self.groups = self.memo.groups(self.fn.body)
        self.frames.append(_Frame())
        self.scopes.append(self._bind_params(self.fn, None))
        try:
            self.exec_block(self.memo.syntax(self.fn.body), self.full)
        except GiveUp as e:
            self.result.complete = False
            self.result.reason = str(e)
        except (RecursionError, ValueError, TypeError, AttributeError, IndexError,
                OverflowError, ZeroDivisionError, MemoryError) as e:
            self.result.complete = False
            self.result.reason = f"internal: {type(e).__name__}"
        return self.result

    def _bind_params(self, fn: "Function", args: list | None) -> dict[str, Any]:
        scope: dict[str, Any] = {}
        for k, p in enumerate(fn.params):
            if not p.name:
                continue
            if args is not None:
                scope[p.name] = args[k] if k < len(args) else None
            elif p.is_pointer:
                scope[p.name] = GLOBAL
            elif p.is_reference or not _is_int_type(p.base_type):
                scope[p.name] = None
            else:
                scope[p.name] = self.param_value
        return scope

    def _size(self, elem: str) -> int | None:
        """type_size of an element type under the unit's structs (memoised per run)."""
        sizes = self._sizes
        if elem in sizes:
            return sizes[elem]
        v = sizes[elem] = type_size(elem, self.structs)
        return v

    def _step(self):
        self.steps += 1
        if self.steps > self.budget:
            raise GiveUp("step budget")

    # ---- masks & vectors ---------------------------------------------------------------
    def bits(self, mask: int) -> list[int]:
        """Indices of the set bits of ``mask``, ascending (memoised per run: the same
        few masks come back at every statement)."""
        idx = self._bits.get(mask)
        if idx is None:
            if len(self._bits) > 4096:
                self._bits.clear()
            s = bin(mask)[:1:-1]
            idx = []
            i = s.find("1")
            while i >= 0:
                idx.append(i)
                i = s.find("1", i + 1)
            self._bits[mask] = idx
        return idx

    def vec(self, v) -> tuple:
        if isinstance(v, tuple):
            return v
        return (v,) * self.n

    def split(self, v, act: int) -> tuple[int, int, int]:
        """(true, false, unknown) masks of a condition over the active threads."""
        if v is None or isinstance(v, (GPtr, SPtr)):
            return 0, 0, act
        if isinstance(v, int):
            return (act, 0, 0) if v else (0, act, 0)
        # per-thread truth and unknown-ness as bit masks, built at C speed
        true = int(bytes(map(bool, reversed(v))).translate(_BIN), 2)
        if None in v:
            unknown = int(bytes(map(is_, reversed(v), repeat(None))).translate(_BIN), 2) & act
        else:
            unknown = 0
        true &= act
        return true, act & ~true & ~unknown, unknown

    def merge(self, old, new, act: int):
        """Per thread: ``new`` where active, ``old`` elsewhere (unknown where unsure)."""
        unsure = act & self.maybe
        if act == self.full and not unsure:
            return new
        if isinstance(new, SPtr) or isinstance(old, SPtr):
            if isinstance(new, SPtr) and isinstance(old, SPtr) and new.key == old.key and \
                    new.dims == old.dims and not unsure:
                return SPtr(new.key, self.merge(old.offset, new.offset, act), new.elem,
                            new.dims, new.size)
            return None
        if isinstance(new, GPtr) or isinstance(old, GPtr):
            return GLOBAL if new is old else None
        if old == new and not unsure and (isinstance(new, int) or new is None):
            return new
        o, w = self.vec(old), self.vec(new)
        out = list(o)
        for i in self.bits(act & ~unsure if unsure else act):
            out[i] = w[i]
        if unsure:
            for i in self.bits(unsure):
                out[i] = None
        return tuple(out)

    # ---- statements --------------------------------------------------------------------
    def exec_block(self, node: Node, act: int) -> int:
        self.scopes.append({})
        try:
            for child in node.named_children:
                if not act:
                    break
                act = self.exec(child, act)
        finally:
            self.scopes.pop()
        return act

    def exec(self, node: Node, act: int) -> int:
        t = node.type
        if t == "expression_statement":
            self._step()
            for c in node.named_children:
                if c.type != "comment":
                    self.eval(c, act)
            return act
        if t == "declaration":
            self._step()
            self.declare(node, act)
            return act
        if t in ("comment", "preproc_call", "preproc_def", "preproc_function_def",
                 "type_definition", "using_declaration", "alias_declaration",
                 "static_assert_declaration", "empty_statement", "preproc_include",
                 "struct_specifier", "class_specifier", "enum_specifier",
                 "namespace_alias_definition"):
            return act
        self._step()
        if t == "compound_statement":
            return self.exec_block(node, act)
        if t == "expression_statement":
            for c in node.named_children:
                if c.type != "comment":
                    self.eval(c, act)
            return act
        if t == "declaration":
            self.declare(node, act)
            return act
        if t == "if_statement":
            return self.exec_if(node, act)
        if t in ("for_statement", "while_statement", "do_statement"):
            return self.exec_loop(node, act)
        if t == "return_statement":
            frame = self.frames[-1]
            expr = next((c for c in node.named_children if c.type != "comment"), None)
            if expr is not None:
                v = self.eval(expr, act)
                if len(self.frames) > 1:
                    if frame.value is None:
                        frame.value = [None] * self.n
                    vv = self.vec(v) if not isinstance(v, (SPtr, GPtr)) else (None,) * self.n
                    for i in self.bits(act):
                        frame.value[i] = vv[i]
            frame.ret |= act
            if len(self.frames) == 1:
                self.exited |= act & ~self.maybe
                self.ghost |= act & self.maybe
            return 0
        if t == "break_statement":
            if not self.frames[-1].loops:
                raise GiveUp("break outside a loop")
            self.frames[-1].loops[-1][0] |= act
            return 0
        if t == "continue_statement":
            if not self.frames[-1].loops:
                raise GiveUp("continue outside a loop")
            self.frames[-1].loops[-1][1] |= act
            return 0
        if t in ("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif"):
            raise GiveUp("preprocessor conditional")
        raise GiveUp(f"statement {t}")

    def exec_if(self, node: Node, act: int) -> int:
        aux = node.aux
        if aux is None:
            alt = node.child_by_field_name("alternative")
            if alt is not None and alt.type == "else_clause":
                alt = next((c for c in alt.named_children if c.type != "comment"), None)
            aux = node.aux = (_unwrap(node.child_by_field_name("condition")),
                              node.child_by_field_name("consequence"), alt)
        cond, cons, alt = aux
        v = self.eval(cond, act)
        tm, fm, um = self.split(v, act)
        saved = self.maybe
        self.maybe |= um
        try:
            out_t = self.exec(cons, tm | um) if cons is not None and (tm | um) else 0
            out_f = self.exec(alt, fm | um) if alt is not None and (fm | um) else fm | um
        finally:
            self.maybe = saved
        out = out_t | out_f
        lost = um & ~(out_t & out_f)
        if lost:
            # unknown threads that may have left (return/break/continue in one branch)
            self.ghost |= lost
            out |= lost & act
        return out

    def exec_loop(self, node: Node, act: int) -> int:
        t = node.type
        self.scopes.append({})
        frame = self.frames[-1]
        try:
            aux = node.aux
            if aux is None:
                aux = node.aux = (
                    node.child_by_field_name("initializer") if t == "for_statement" else None,
                    node.child_by_field_name("condition"),
                    node.child_by_field_name("update"), node.child_by_field_name("body"))
            init, cond, update, body = aux
            if init is not None:
                if init.type == "declaration":
                    self.declare(init, act)
                else:
                    self.eval(init, act)
            running = act
            done = 0
            first = True
            for _ in range(LOOP_CAP + 1):
                if not running:
                    break
                if not (t == "do_statement" and first) and cond is not None:
                    v = self.eval(_unwrap(cond), running)
                    tm, fm, um = self.split(v, running)
                    if um:
                        return done | self._opaque_loop(node, body, update, running)
                    done |= fm
                    running = tm
                    if not running:
                        break
                first = False
                frame.loops.append([0, 0])
                try:
                    out = self.exec(body, running) if body is not None else running
                finally:
                    brk, cont = frame.loops.pop()
                done |= brk
                running = out | cont
                if update is not None and running:
                    self.eval(update, running)
                self._step()
            else:
                raise GiveUp("loop bound")
            return done
        finally:
            self.scopes.pop()

    def _opaque_loop(self, node: Node, body: Node | None, update: Node | None,
                     running: int) -> int:
        """A loop whose condition the run cannot evaluate: its body runs once for the
        threads still in it, on unknown paths (its accesses are uncertain, so never
        reported), then every variable it assigns is unknown."""
        frame = self.frames[-1]
        saved = self.maybe
        self.maybe |= running
        frame.loops.append([0, 0])
        try:
            if body is not None:
                self.exec(body, running)
            if update is not None:
                self.eval(update, running)
        finally:
            frame.loops.pop()
            self.maybe = saved
        for name in self.memo.assigned_names(node.ts):
            for scope in reversed(self.scopes):
                if name in scope:
                    scope[name] = None
                    break
        if frame.ret & running:
            self.ghost |= running
        return running

    def _declaration_form(self, node: Node) -> tuple:
        """(kernel, qualifiers, type text, [(name, dims, pointer, reference, value)]) of a
        declaration, decoded once per kernel (array sizes use its constants)."""
        aux = node.aux
        if aux is None or aux[0] is not self.fn:
            quals = {text(c) for c in node.children if c.type in (
                "type_qualifier", "storage_class_specifier")}
            type_text = text(node.child_by_field_name("type"))
            items = []
            for d in node.children_by_field_name("declarator"):
                value = None
                if d.type == "init_declarator":
                    value = d.child_by_field_name("value")
                    d = d.child_by_field_name("declarator")
                name, dims, ptr, ref = _declarator(d, self.env_int)
                items.append((name, dims, ptr, ref, value))
            aux = node.aux = (self.fn, quals, type_text, items)
        return aux

    def declare(self, node: Node, act: int) -> None:
        _, quals, type_text, items = self._declaration_form(node)
        scope = self.scopes[-1]
        for name, dims, ptr, ref, value in items:
            if not name:
                continue
            if "__shared__" in quals:
                key = f"{name}@{node.start_byte}"
                self.shared[name] = SharedVar(key, name, type_text, tuple(dims),
                                              "extern" in quals)
                scope[name] = self._shared_value(self.shared[name])
                continue
            if dims:
                scope[name] = None           # a thread's own array: not tracked
                continue
            if value is None:
                scope[name] = None
                continue
            if value.type in ("initializer_list", "argument_list"):
                inner = [c for c in value.named_children if c.type != "comment"]
                if len(inner) == 1 and not ref:
                    v = self.eval(inner[0], act)
                else:
                    for c in inner:
                        self.eval(c, act)
                    v = None
            else:
                v = self.eval(value, act)
            if ref:
                v = None
            elif not ptr and isinstance(v, (SPtr, GPtr)) and "auto" not in type_text:
                v = None
            elif not ptr and not _is_int_type(type_text) and "auto" not in type_text \
                    and not isinstance(v, (SPtr, GPtr)):
                v = None if not _group_type(type_text) else v
            elif ptr and isinstance(v, SPtr):
                v = self.decay(v, _clean(type_text))
            scope[name] = v        # a new variable: only the active threads see it

    def decay(self, v: SPtr, elem: str) -> SPtr | None:
        """A shared array or pointer converted to ``elem*`` (arrays decay to their
        first element; a pointer of another element type reinterprets the bytes)."""
        if len(v.dims) > 1:
            return None
        if elem == _clean(v.elem) and len(v.dims) <= 1:
            return SPtr(v.key, v.offset, v.elem, (), v.size)
        if type_size(elem, self.structs) is None:
            return None
        return SPtr(v.key, v.offset, elem, (), v.size)

    def _shared_value(self, var: SharedVar):
        esize = type_size(var.elem, self.structs)
        if esize is None:
            return None
        size = None
        if var.dims and all(d is not None for d in var.dims):
            size = esize
            for d in var.dims:
                size *= d
        elif not var.dims:
            size = esize
        return SPtr(var.key, 0, var.elem, tuple(var.dims), size)

    def env_int(self, node_text: str) -> int | None:
        return eval_int(node_text, self.fn.constants)

    # ---- variables -----------------------------------------------------------------
    def lookup(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope:
                return True, scope[name]
        return False, None

    def assign(self, name: str, value, act: int) -> None:
        for scope in reversed(self.scopes):
            if name in scope:
                scope[name] = self.merge(scope[name], value, act)
                return
        # a global or unknown variable: nothing to track

    # ---- expressions -------------------------------------------------------------------
    def eval(self, node: Node | None, act: int):
        if node is None or not act:
            return None
        t = node.type
        if t == "identifier":                     # the most frequent: inline lookup
            name = text(node)
            for scope in reversed(self.scopes):
                if name in scope:
                    return scope[name]
            return self._ident_outside(name)
        if t == "binary_expression":
            return self.binary(node, act)
        if t == "number_literal":
            return _int_literal(text(node))
        if t in ("true", "false"):
            return int(t == "true")
        if t in ("parenthesized_expression", "condition_clause"):
            inner = [c for c in node.named_children if c.type != "comment"]
            if len(inner) != 1:
                for c in inner:
                    v = self.eval(c, act)
                return None
            return self.eval(inner[0], act)
        if t == "identifier":
            return self.ident(node)
        if t == "qualified_identifier":
            v = eval_int(text(node), self.fn.constants)
            return v
        if t == "field_expression":
            return self.field(node, act)
        if t == "binary_expression":
            return self.binary(node, act)
        if t == "unary_expression":
            aux = node.aux
            if aux is None:
                aux = node.aux = (text(node.child_by_field_name("operator")),
                                  node.child_by_field_name("argument"))
            return _unop(aux[0], self.eval(aux[1], act))
        if t == "update_expression":
            return self.update(node, act)
        if t == "assignment_expression":
            return self.assignment(node, act)
        if t == "conditional_expression":
            c = self.eval(node.child_by_field_name("condition"), act)
            tm, fm, um = self.split(c, act)
            if um:
                saved = self.maybe
                self.maybe |= um
                try:
                    a = self.eval(node.child_by_field_name("consequence"), tm | um)
                    b = self.eval(node.child_by_field_name("alternative"), fm | um)
                finally:
                    self.maybe = saved
                return None
            a = self.eval(node.child_by_field_name("consequence"), tm) if tm else None
            b = self.eval(node.child_by_field_name("alternative"), fm) if fm else None
            if not fm:
                return a
            if not tm:
                return b
            if isinstance(a, (SPtr, GPtr)) or isinstance(b, (SPtr, GPtr)):
                return None
            va, vb = self.vec(a), self.vec(b)
            return tuple(va[i] if tm >> i & 1 else vb[i] for i in range(self.n))
        if t == "cast_expression":
            aux = node.aux
            if aux is None:
                aux = node.aux = (text(node.child_by_field_name("type")),
                                  node.child_by_field_name("value"))
            return self.cast(aux[0], self.eval(aux[1], act))
        if t == "call_expression":
            return self.call(node, act)
        if t in ("subscript_expression", "pointer_expression"):
            if t == "pointer_expression" and text(node.child_by_field_name("operator")) == "&":
                return self.address_of(node.child_by_field_name("argument"), act)
            return self.load(node, act)
        if t == "sizeof_expression":
            ty = node.child_by_field_name("type")
            return type_size(text(ty), self.structs) if ty is not None else None
        if t == "comma_expression":
            self.eval(node.child_by_field_name("left"), act)
            return self.eval(node.child_by_field_name("right"), act)
        if t == "gnu_asm_expression":
            return self.asm(node, act)
        if t in ("string_literal", "char_literal", "concatenated_string", "lambda_expression",
                 "initializer_list", "null", "nullptr", "this", "type_descriptor",
                 "template_function", "raw_string_literal"):
            return None
        # anything else: evaluate children for their side effects (shared accesses)
        for c in node.named_children:
            if c.type not in ("comment", "type_descriptor", "argument_list",
                              "template_argument_list"):
                self.eval(c, act)
            elif c.type == "argument_list":
                for a in c.named_children:
                    self.eval(a, act)
        return None

    def ident(self, node: Node):
        name = text(node)
        found, v = self.lookup(name)
        if found:
            return v
        return self._ident_outside(name)

    def _ident_outside(self, name: str):
        """A name no scope of the run holds: shared, warpSize, or a constant."""
        var = self.shared.get(name)
        if var is not None:
            return self._shared_value(var)
        if name == "warpSize":
            return WARP
        if name in self.fn.constants:
            return self.fn.constants[name]
        return None

    def field(self, node: Node, act: int):
        aux = node.aux
        if aux is None:
            arg = node.child_by_field_name("argument")
            aux = node.aux = (arg, text(node.child_by_field_name("field")),
                              text(node.child_by_field_name("operator")), text(arg))
        arg, comp, op, base = aux
        if op == "." and base in ("threadIdx", "blockDim", "blockIdx", "gridDim"):
            axis = "xyz".find(comp)
            if axis < 0:
                return None
            if base == "threadIdx":
                return (self.tx, self.ty, self.tz)[axis]
            if base == "blockDim":
                return self.block[axis]
            if base == "blockIdx":
                return self.block_idx if axis == 0 else 0
            return self.grid_dim if axis == 0 else 1
        # a field of a shared struct/vector element: a load
        return self.load(node, act)

    def binary(self, node: Node, act: int):
        aux = node.aux
        if aux is None:
            aux = node.aux = (text(node.child_by_field_name("operator")),
                              node.child_by_field_name("left"),
                              node.child_by_field_name("right"))
        op, left, right = aux
        a = self.eval(left, act)
        if op in ("&&", "||"):
            tm, fm, um = self.split(a, act)
            go = (tm if op == "&&" else fm)
            saved = self.maybe
            self.maybe |= um
            try:
                b = self.eval(right, go | um) if go | um else None
            finally:
                self.maybe = saved
            bt, bf, bu = self.split(b, go | um) if go | um else (0, 0, 0)
            if op == "&&":
                res_t, res_f = tm & bt & ~um, fm | (tm & bf & ~um)
            else:
                res_t, res_f = tm | (fm & bt & ~um), fm & bf & ~um
            unknown = act & ~(res_t | res_f)
            if unknown == act:
                return None
            if res_t == act:
                return 1
            if res_f == act:
                return 0
            return tuple(None if unknown >> i & 1 else (1 if res_t >> i & 1 else 0)
                         for i in range(self.n))
        b = self.eval(right, act)
        if isinstance(a, SPtr) and op in ("+", "-"):
            return self.ptr_add(a, b, op == "-")
        if isinstance(b, SPtr) and op == "+":
            return self.ptr_add(b, a, False)
        if isinstance(a, (SPtr, GPtr)) or isinstance(b, (SPtr, GPtr)):
            return GLOBAL if op in ("+", "-") and (isinstance(a, GPtr) or isinstance(b, GPtr)) \
                else None
        return _binop(op, a, b)

    def ptr_add(self, p: SPtr, off, negative: bool):
        size = self._elem_bytes(p)
        if size is None or off is None:
            return None
        step = _binop("*", off, size)
        if negative:
            step = _unop("-", step)
        return SPtr(p.key, _binop("+", p.offset, step), p.elem, p.dims[1:] if p.dims else (),
                    p.size)

    def _elem_bytes(self, p: SPtr) -> int | None:
        size = self._size(p.elem)
        if size is None:
            return None
        for d in p.dims[1:]:
            if d is None:
                return None
            size *= d
        return size

    def cast(self, ty: str, v):
        if "*" in ty:
            if isinstance(v, SPtr):
                if ty.count("*") != 1:
                    return None
                return self.decay(v, _clean(ty.replace("*", " ")))
            return GLOBAL if isinstance(v, GPtr) else None
        if _is_int_type(ty) and not isinstance(v, (SPtr, GPtr)):
            return v
        return None

    def update(self, node: Node, act: int):
        aux = node.aux
        if aux is None:
            aux = node.aux = (node.child_by_field_name("argument"),
                              text(node.child_by_field_name("operator")),
                              bool(node.children and node.children[0].type in ("++", "--")))
        arg, op, prefix = aux
        old = self.eval(arg, act) if arg.type != "identifier" else self.ident(arg)
        new = _binop("+" if op == "++" else "-", old, 1) if not isinstance(old, SPtr) \
            else self.ptr_add(old, 1, op == "--")
        self.store(arg, new, act, compound=True)
        return new if prefix else old

    def assignment(self, node: Node, act: int):
        aux = node.aux
        if aux is None:
            aux = node.aux = (node.child_by_field_name("left"),
                              node.child_by_field_name("right"),
                              text(node.child_by_field_name("operator")))
        left, right, op = aux
        value = self.eval(right, act)
        if op != "=":
            old = self.eval(left, act) if left.type != "identifier" else self.ident(left)
            if isinstance(old, SPtr) and op in ("+=", "-="):
                value = self.ptr_add(old, value, op == "-=")
            else:
                value = _binop(op[:-1], old, value)
        self.store(left, value, act, compound=op != "=")
        return value

    def store(self, left: Node, value, act: int, compound: bool) -> None:
        left = _unwrap(left)
        if left.type == "identifier":
            name = text(left)
            found, _ = self.lookup(name)
            if found:
                self.assign(name, value, act)
                return
            var = self.shared.get(name)
            if var is not None and not var.dims:
                p = self._shared_value(var)
                if p is not None:
                    self.record(p, left, True, act)
            return
        p = self.lvalue(left, act)
        if isinstance(p, SPtr):
            self.record(p, left, True, act)

    def load(self, node: Node, act: int):
        p = self.lvalue(node, act)
        if isinstance(p, SPtr):
            if p.dims:
                return p          # an inner row of a multi-dimensional array: a pointer
            self.record(p, node, False, act)
        return None

    def address_of(self, node: Node, act: int):
        node = _unwrap(node)
        if node.type == "identifier":
            var = self.shared.get(text(node))
            found, _ = self.lookup(text(node))
            if var is not None and not found:
                return self._shared_value(var)
            return None
        p = self.lvalue(node, act)
        return p if isinstance(p, SPtr) else None

    def lvalue(self, node: Node, act: int):
        """Where an lvalue expression lives (SPtr with per-thread byte offset), else
        GLOBAL or None."""
        node = _unwrap(node)
        t = node.type
        if t == "subscript_expression":
            aux = node.aux
            if aux is None:
                idx_list = node.child_by_field_name("indices")
                idx_nodes = [c for c in idx_list.named_children if c.type != "comment"] \
                    if idx_list is not None else []
                aux = node.aux = (node.child_by_field_name("argument"),
                                  idx_nodes[0] if len(idx_nodes) == 1 else None)
            base = self.eval(aux[0], act)
            idx = self.eval(aux[1], act) if aux[1] is not None else None
            if isinstance(base, SPtr):
                return self.ptr_add(base, idx, False)
            return GLOBAL if isinstance(base, GPtr) else None
        if t == "pointer_expression":
            base = self.eval(node.child_by_field_name("argument"), act)
            if isinstance(base, SPtr):
                return SPtr(base.key, base.offset, base.elem, base.dims[1:] if base.dims
                            else (), base.size)
            return GLOBAL if isinstance(base, GPtr) else None
        if t == "field_expression":
            op = text(node.child_by_field_name("operator"))
            arg = node.child_by_field_name("argument")
            fname = text(node.child_by_field_name("field"))
            if op == "->":
                base = self.eval(arg, act)
            else:
                if _unwrap(arg).type == "identifier":
                    found, _ = self.lookup(text(_unwrap(arg)))
                    var = self.shared.get(text(_unwrap(arg)))
                    base = self._shared_value(var) if var is not None and not found and \
                        not var.dims else None
                else:
                    base = self.lvalue(arg, act)
            if not isinstance(base, SPtr) or base.dims:
                return GLOBAL if isinstance(base, GPtr) else None
            elem = _clean(base.elem)
            st = self.structs.get(elem)
            if st is not None and fname in st.fields:
                off, ftype = st.fields[fname]
            elif fname in "xyzw" and len(fname) == 1 and _VECTOR.get(elem):
                ftype = _VECTOR[elem]
                off = "xyzw".index(fname) * (type_size(ftype) or 4)
            else:
                return None
            return SPtr(base.key, _binop("+", base.offset, off), ftype, (), base.size)
        if t == "identifier":
            v = self.ident(node)
            return v if isinstance(v, SPtr) and not v.dims else None
        return None

    # ---- the race log --------------------------------------------------------------------
    def record(self, p: SPtr, node: Node, is_write: bool, act: int) -> None:
        if p.dims:
            return
        width = self._size(p.elem) or 1
        offs = p.offset
        size = p.size
        array = p.key
        idx = self.bits(act)
        # the threads whose access is logged and their byte addresses
        if isinstance(offs, tuple):
            addrs = [offs[i] for i in idx]
            if None in addrs or min(addrs) < 0 or (size is not None and
                                                   max(addrs) + width > size):
                keep = [(i, a) for i, a in zip(idx, addrs) if a is not None and a >= 0
                        and (size is None or a + width <= size)]
                idx = [i for i, _ in keep]
                addrs = [a for _, a in keep]
        else:
            if offs is None or offs < 0 or (size is not None and offs + width > size):
                return
            addrs = [offs] * len(idx)
        if not idx:
            return
        slot = self.log.get(array)
        if slot is None:
            slot = self.log[array] = (_Accesses(), _Accesses())
        mine, others = slot if is_write else (slot[1], slot[0])
        uncertain = (self.maybe | self.ghost) & act
        unsure = frozenset(self.bits(uncertain)) if uncertain else None
        node_id = node.id
        warp_of = self.warp_of
        if others.addrs and not others.addrs.isdisjoint(addrs) and \
                not others.only_own(addrs, idx):
            index = others.fold(warp_of)
            races = self.result.races
            for i, a in zip(idx, addrs):
                if unsure and i in unsure:
                    continue        # pairs with an uncertain access are never reported
                at = index.get(a)
                if not at:
                    continue
                w = warp_of[i]
                for j, (other, evc, cert, other_id) in at.items():
                    if j == i or not cert:
                        continue
                    cross = warp_of[j] != w
                    if not cross and self._synced(j, i, evc):
                        continue
                    k = (other_id, node_id)
                    hit = races.get(k)
                    if hit is None or (cross and not hit.cross_warp):
                        races[k] = Hit(other.ts, node.ts, not is_write, cross,
                                       (self.tids[j], self.tids[i]), a, array)
        snap = self._event_counts
        if snap is None:
            snap = self._event_counts = {w: len(ev) for w, ev in self.events.items()}
        mine.add(node, node_id, idx, addrs, unsure, snap)

    def _synced(self, j: int, i: int, since: int) -> bool:
        both = (1 << i) | (1 << j)
        for ev in self.events.get(self.warp_of[i], ())[since:]:
            if ev & both == both:
                return True
        return False

    def arrive(self, node: Node, act: int) -> None:
        """A block barrier reached by only some of the threads still running, all of
        them on known paths: divergent (CL103 uses it for loops)."""
        live = self.full & ~self.exited
        if (self.maybe | self.ghost) & live:
            return
        if act != live:
            self.result.divergent.setdefault(node.id, node.ts)

    def block_barrier(self) -> None:
        self.log.clear()
        self.events.clear()
        self._event_counts = None

    def warp_sync(self, act: int, mask: int | None, size: int | None) -> None:
        for w, wbits in self.warp_bits.items():
            lanes = act & wbits
            if not lanes:
                continue
            groups = [lanes]
            if size is not None and size < WARP:
                groups = []
                for start in range(0, WARP, size):
                    g = 0
                    for i in self.bits(lanes):
                        if start <= self.lane_of[i] < start + size:
                            g |= 1 << i
                    if g:
                        groups.append(g)
            if mask is not None:
                groups = [self._lanes_in(g, mask) for g in groups]
            self.events.setdefault(w, []).extend(g for g in groups if g)
            self._event_counts = None

    def _lanes_in(self, bits_: int, mask: int) -> int:
        out = 0
        for i in self.bits(bits_):
            if mask >> self.lane_of[i] & 1:
                out |= 1 << i
        return out

    # ---- calls ---------------------------------------------------------------------------
    def call(self, node: Node, act: int):
        aux = node.aux
        if aux is None or aux[0] is not self.groups:
            # decoded once per group handles in scope (the barrier kind depends on them)
            fnode = node.child_by_field_name("function")
            args_node = node.child_by_field_name("arguments")
            arg_nodes = [c for c in args_node.named_children if c.type != "comment"] \
                if args_node is not None else []
            aux = node.aux = (self.groups, fnode, arg_nodes, classify_sync(node, self.groups))
        _, fnode, arg_nodes, sync = aux
        if sync is not None:
            vals = [self.eval(a, act) for a in arg_nodes]
            if sync.kind in ("block", "grid", "named"):
                if sync.kind == "block":
                    self.arrive(node, act)
                self.block_barrier()
                return None
            mask = None
            if fnode is not None and text(fnode) == "__syncwarp":
                mask = (vals[0] if isinstance(vals[0], int) else None) if vals else FULL_MASK
                self.check_mask(node, mask, act)
            self.warp_sync(act, mask, sync.size)
            return None
        name = text(fnode) if fnode is not None else ""
        short = callee_short_name(fnode)
        if fnode is not None and fnode.type == "field_expression":
            return self.method(node, fnode, arg_nodes, act)
        if short in WARP_INTRINSICS:
            vals = [self.eval(a, act) for a in arg_nodes]
            if vals and isinstance(vals[0], int):
                self.check_mask(node, vals[0], act)
            return None
        if short in _LANE_FUNCS:
            return tuple(self.lane_of)
        if short in ("this_thread_block", "tiled_partition", "this_grid",
                     "coalesced_threads"):
            return None
        callee = self.functions.get(short)
        if callee is not None and callee.body is not None:
            return self.inline(callee, arg_nodes, act)
        vals = [self.eval(a, act) for a in arg_nodes]
        if short in ("min", "max", "umin", "umax", "imin", "imax") and len(vals) == 2:
            return _minmax(short.endswith("min"), vals[0], vals[1])
        if short in ("static_cast", "int", "unsigned", "size_t") and len(vals) == 1:
            return vals[0] if not isinstance(vals[0], (SPtr, GPtr)) else None
        if short == "reinterpret_cast" and len(vals) == 1 and fnode.type == "template_function":
            targs = fnode.child_by_field_name("arguments")
            return self.cast(text(targs).strip("<>"), vals[0])
        if short.startswith("__") or _PURE.match(name) or _PURE.match(short):
            return None
        if short.startswith("atomic"):
            return None
        # a function the unit does not define: it may contain a barrier
        self.block_barrier()
        return None

    def method(self, node: Node, fnode: Node, arg_nodes: list[Node], act: int):
        recv = fnode.child_by_field_name("argument")
        meth = text(fnode.child_by_field_name("field"))
        group = self.groups.get(text(recv)) if recv is not None and recv.type == "identifier" \
            else (Group("block") if "this_thread_block" in text(recv) else None)
        for a in arg_nodes:
            self.eval(a, act)
        if group is not None:
            if meth == "thread_rank":
                if group.kind == "block":
                    return self.linear
                if group.kind == "tile" and group.size:
                    return tuple(t % group.size for t in self.linear)
                return None
            if meth in ("size", "num_threads"):
                if group.kind == "block":
                    return self.total
                if group.kind == "tile" and group.size:
                    return group.size
                return None
            if meth == "meta_group_rank" and group.kind == "tile" and group.size:
                return tuple(t // group.size for t in self.linear)
            return None
        if meth in ("shfl", "shfl_down", "shfl_up", "shfl_xor", "any", "all", "ballot",
                    "match_any", "match_all", "thread_rank", "size", "num_threads", "x",
                    "y", "z", "load", "get"):
            return None
        self.block_barrier()       # an unknown method (CUB, cuda::barrier): may sync
        return None

    def inline(self, callee: "Function", arg_nodes: list[Node], act: int):
        if self.depth >= MAX_INLINE_DEPTH:
            raise GiveUp("inline depth")
        vals = []
        for k, a in enumerate(arg_nodes):
            v = self.eval(a, act)
            p = callee.params[k] if k < len(callee.params) else None
            if p is not None and p.is_reference:
                v = None
            vals.append(v)
        if self.memo.inert(callee, self.functions) and \
                not any(isinstance(v, SPtr) for v in vals):
            # nothing in it can touch shared memory, synchronize, check a mask or
            # leave the kernel, and no integer it returns is used: only its reference
            # arguments change (to unknown, as after a run of its body)
            for k, a in enumerate(arg_nodes):
                p = callee.params[k] if k < len(callee.params) else None
                if p is not None and p.is_reference and _unwrap(a).type == "identifier":
                    self.assign(text(_unwrap(a)), None, act)
            return None
        saved_scopes = self.scopes
        saved_groups = self.groups
        self.scopes = [self._bind_params(callee, vals)]
        self.groups = self.memo.groups(callee.body)
        frame = _Frame()
        self.frames.append(frame)
        self.depth += 1
        try:
            self.exec_block(self.memo.syntax(callee.body), act)
        finally:
            self.depth -= 1
            self.frames.pop()
            self.scopes = saved_scopes
            self.groups = saved_groups
        # reference arguments: the callee may have changed them
        for k, a in enumerate(arg_nodes):
            p = callee.params[k] if k < len(callee.params) else None
            if p is not None and p.is_reference and _unwrap(a).type == "identifier":
                self.assign(text(_unwrap(a)), None, act)
        return tuple(frame.value) if frame.value is not None else None

    def asm(self, node: Node, act: int):
        sync = classify_sync(node, self.groups)
        if sync is not None:
            if sync.kind == "warp":
                self.warp_sync(act, None, None)
            else:
                if sync.kind == "block":
                    self.arrive(node, act)
                self.block_barrier()
            return None
        asm_text = text(node)
        for out in captures("(gnu_asm_output_operand value: (_) @v)", node.ts).get("v", []):
            name = text(_unwrap(out))
            if "%laneid" in asm_text and _unwrap(out).type == "identifier":
                self.assign(name, tuple(self.lane_of), act)
            elif _unwrap(out).type == "identifier":
                self.assign(name, None, act)
        return None

    # ---- warp masks (CL105) ----------------------------------------------------------------
    def check_mask(self, node: Node, mask: int | None, act: int) -> None:
        if mask is None or mask < 0 or mask > FULL_MASK:
            return
        uncertain = self.maybe | self.ghost
        for w, wbits in self.warp_bits.items():
            if wbits & uncertain or wbits.bit_count() != WARP:
                continue
            arrive = self._lane_set(act & wbits)
            if not arrive:
                continue
            live = self._lane_set(wbits & ~self.exited)
            named = mask & live
            if arrive != named and node.id not in self.result.masks:
                self.result.masks[node.id] = MaskHit(node.ts, mask, arrive, live, w)

    def _lane_set(self, bits_: int) -> int:
        out = 0
        for i in self.bits(bits_):
            out |= 1 << self.lane_of[i]
        return out


# ---------------------------------------------------------------------------------------
# helpers

_BIN = bytes.maketrans(b"\x00\x01", b"01")


_VECTOR = {"float2": "float", "float3": "float", "float4": "float", "int2": "int",
           "int3": "int", "int4": "int", "uint2": "unsigned", "uint4": "unsigned",
           "double2": "double", "half2": "__half", "__half2": "__half"}


def _chosen_warps(nwarps: int) -> list[int]:
    """All warps of small blocks; for large ones the first four, both warps around each
    power-of-two distance, and the last (the races of reductions and stencils pair
    threads at such distances)."""
    if nwarps <= 8:
        return list(range(nwarps))
    chosen = {0, 1, 2, 3, nwarps - 1, nwarps - 2}
    p = 1
    while p < nwarps:
        chosen.update({p - 1, p, p + 1})
        p *= 2
    return sorted(w for w in chosen if 0 <= w < nwarps)


def _unwrap(node: Node | None) -> Node | None:
    while node is not None and node.type in ("parenthesized_expression", "condition_clause") \
            and len([c for c in node.named_children if c.type != "comment"]) == 1:
        node = next(c for c in node.named_children if c.type != "comment")
    return node


@lru_cache(maxsize=4096)
def _clean(type_text: str) -> str:
    return " ".join(type_text.replace("const", " ").replace("volatile", " ")
                    .replace("__restrict__", " ").replace("struct ", " ").split())


@lru_cache(maxsize=4096)
def _is_int_type(type_text: str) -> bool:
    words = set(re.findall(r"\w+", type_text))
    return bool(words & set(_INT_TYPES)) and not words & {"float", "double", "half",
                                                          "__half", "bfloat16"}


@lru_cache(maxsize=4096)
def _group_type(type_text: str) -> bool:
    return "thread_block" in type_text or "thread_group" in type_text


def _declarator(d: Node | None, env_int) -> tuple[str, list, bool, bool]:
    """(name, array dims, is pointer, is reference) of a declarator."""
    dims: list = []
    ptr = ref = False
    cur = d
    while cur is not None and cur.type in ("pointer_declarator", "reference_declarator",
                                           "array_declarator", "parenthesized_declarator"):
        if cur.type == "pointer_declarator":
            ptr = True
        elif cur.type == "reference_declarator":
            ref = True
        elif cur.type == "array_declarator":
            size = cur.child_by_field_name("size")
            dims.append(env_int(text(size)) if size is not None else None)
        nxt = cur.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in cur.named_children if c.type in (
                "identifier", "pointer_declarator", "array_declarator",
                "reference_declarator")), None)
        cur = nxt
    if cur is None or cur.type != "identifier":
        return "", dims, ptr, ref
    return text(cur), list(reversed(dims)), ptr, ref


@lru_cache(maxsize=4096)
def _int_literal(s: str) -> int | None:
    s = s.lower().replace("'", "")
    if any(c in s for c in ".p") or (("e" in s or s.endswith("f")) and not s.startswith("0x")):
        return None
    s = s.rstrip("ul")
    try:
        return int(s, 0)
    except ValueError:
        try:
            return int(s, 8) if s.startswith("0") else None
        except ValueError:
            return None


def _scalar_op(op: str, x: int, y: int):
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if op == "/":
        if y == 0:
            return None
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    if op == "%":
        if y == 0:
            return None
        q = abs(x) // abs(y)
        q = q if (x >= 0) == (y >= 0) else -q
        return x - y * q
    if op == "<<":
        return x << y if 0 <= y < 64 else None
    if op == ">>":
        return x >> y if 0 <= y < 64 else None
    if op == "&":
        return x & y
    if op == "|":
        return x | y
    if op == "^":
        return x ^ y
    if op == "<":
        return int(x < y)
    if op == ">":
        return int(x > y)
    if op == "<=":
        return int(x <= y)
    if op == ">=":
        return int(x >= y)
    if op == "==":
        return int(x == y)
    if op == "!=":
        return int(x != y)
    if op == "&&":
        return int(bool(x and y))
    if op == "||":
        return int(bool(x or y))
    return None


# per-thread operators that C evaluates over whole vectors exactly as _scalar_op does
# (Python int semantics equal C's for these on the values the run holds)
_VEC_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "&": operator.and_,
            "|": operator.or_, "^": operator.xor}
_VEC_CMP = {"<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}


def _vector_scalar(expr: str):
    """``lambda v, s: per element x of v (None stays None): expr``, one list
    comprehension (CPython specialises int arithmetic in it; cheaper than map() plus a
    separate scan for unknown elements)."""
    return eval(f"lambda v, s: tuple([None if x is None else {expr} for x in v])")  # noqa: S307


_ARITH = ("+", "-", "*", "&", "|", "^")
_COMPARE = ("<", ">", "<=", ">=", "==", "!=")
# vector op scalar, and scalar op vector, for the operators _scalar_op computes as
# Python does (no division, no shifts: those check their operands per element)
_VS = {op: _vector_scalar(f"x {op} s") for op in _ARITH}
_VS.update({op: _vector_scalar(f"(1 if x {op} s else 0)") for op in _COMPARE})
_SV = {op: _vector_scalar(f"s {op} x") for op in _ARITH}
_SV.update({op: _vector_scalar(f"(1 if s {op} x else 0)") for op in _COMPARE})
# x op s == x for every x (and None stays None): the vector itself
_IDENTITY = {"+": 0, "-": 0, "|": 0, "^": 0, "*": 1, "<<": 0, ">>": 0}


def _binop(op: str, a, b):
    if a is None or b is None or isinstance(a, (SPtr, GPtr)) or isinstance(b, (SPtr, GPtr)):
        return None
    a_vec = isinstance(a, tuple)
    b_vec = isinstance(b, tuple)
    if not a_vec and not b_vec:
        return _scalar_op(op, a, b)
    if not b_vec:
        if op in _IDENTITY and _IDENTITY[op] == b:
            return a
        f = _VS.get(op)
        if f is not None:
            return f(a, b)
    elif not a_vec:
        if a == 0 and op in ("+", "|", "^") or a == 1 and op == "*":
            return b
        f = _SV.get(op)
        if f is not None:
            return f(b, a)
    if not (a_vec and None in a) and not (b_vec and None in b):
        fast = _vec_op(op, a, b, a_vec, b_vec)
        if fast is not None:
            return fast
    n = len(a) if a_vec else len(b)
    va = a if a_vec else (a,) * n
    vb = b if b_vec else (b,) * n
    return tuple(None if x is None or y is None else _scalar_op(op, x, y)
                 for x, y in zip(va, vb))


def _vec_op(op: str, a, b, a_vec: bool, b_vec: bool) -> tuple | None:
    """``op`` over vectors without unknown elements, at C speed; None when this op or
    these operands need the per-element path (division by zero, negative division,
    shifts out of range)."""
    va = a if a_vec else repeat(a)
    vb = b if b_vec else repeat(b)
    f = _VEC_OPS.get(op)
    if f is not None:
        return tuple(map(f, va, vb))
    f = _VEC_CMP.get(op)
    if f is not None:
        return tuple(map(int, map(f, va, vb)))
    if op in ("/", "%"):
        # C truncates toward zero; Python floors: equal when nothing is negative
        if (min(a) if a_vec else a) < 0 or (min(b) if b_vec else b) <= 0:
            return None
        return tuple(map(operator.floordiv if op == "/" else operator.mod, va, vb))
    if op in ("<<", ">>"):
        if (min(b) if b_vec else b) < 0 or (max(b) if b_vec else b) >= 64:
            return None
        return tuple(map(operator.lshift if op == "<<" else operator.rshift, va, vb))
    return None


def _unop(op: str, a):
    if a is None or isinstance(a, (SPtr, GPtr)):
        return None
    f = {"-": lambda x: -x, "+": lambda x: x, "~": lambda x: ~x,
         "!": lambda x: int(not x)}.get(op)
    if f is None:
        return None
    if isinstance(a, int):
        return f(a)
    if None not in a:
        if op == "-":
            return tuple(map(operator.neg, a))
        if op == "~":
            return tuple(map(operator.invert, a))
        if op == "!":
            return tuple(map(int, map(operator.not_, a)))
    return tuple(None if x is None else f(x) for x in a)


def _minmax(is_min: bool, a, b):
    if a is None or b is None or isinstance(a, (SPtr, GPtr)) or isinstance(b, (SPtr, GPtr)):
        return None
    pick = min if is_min else max
    if isinstance(a, int) and isinstance(b, int):
        return pick(a, b)
    n = len(a) if isinstance(a, tuple) else len(b)
    va = a if isinstance(a, tuple) else (a,) * n
    vb = b if isinstance(b, tuple) else (b,) * n
    if None not in va and None not in vb:
        return tuple(map(pick, va, vb))
    return tuple(None if x is None or y is None else pick(x, y) for x, y in zip(va, vb))


# ---------------------------------------------------------------------------------------
# kernels a run cannot find anything in

class _Unproven(Exception):
    """The barrier-interval check cannot decide: the kernel is run."""


_R, _W = 1, 2
# what makes a statement matter to the barrier-interval check besides names
# (a break or continue moves the state to the loop's exit or head: never skipped)
_HOT = re.compile(rb"sync|bar\.|asm|__shfl|__ballot|__any|__all|__match|__reduce|__uni|"
                  rb"__activemask|\bbreak\b|\bcontinue\b|goto|switch|#")
# return types that cannot hold a pointer
_VALUE_TYPE = re.compile(
    r"^(?:(?:static|inline|__forceinline__|__inline__|__device__|__host__|const|"
    r"constexpr|unsigned|signed|long|short)\s+)*(?:void|bool|char|int|long|short|float|"
    r"double|size_t|u?int(?:8|16|32|64)_t|unsigned|__half2?|half2?|__nv_bfloat162?|"
    r"(?:u?char|u?short|u?int|u?long|u?longlong|float|double)[1-4])$")
_IGNORED_STATEMENTS = frozenset({
    "comment", "preproc_call", "preproc_def", "preproc_function_def", "type_definition",
    "using_declaration", "alias_declaration", "static_assert_declaration",
    "empty_statement", "preproc_include", "struct_specifier", "class_specifier",
    "enum_specifier", "namespace_alias_definition"})
_LOOP_NODES = ("for_statement", "while_statement", "do_statement")


class _IntervalCheck:
    """A sound, cheap check that a run of a kernel can report nothing but divergent
    barriers: between two block barriers (on every path, loops and inlined device
    functions included) each ``__shared__`` array is only read or only written, so no
    read can pair with a write (what a race needs, whatever the threads); and nothing
    a run checks for CL105 (a warp intrinsic or ``__syncwarp``) is reachable. Abstract
    states map an array to the kinds of access (read, write) since the last barrier;
    None is a path no thread takes. Pointers into shared memory (``float* p = smem +
    n``, a device function's parameter) stand for every array they may point into.
    What it does not model (``switch``, ``goto``, preprocessor conditionals, lambdas,
    references to shared elements, barriers inside expressions) leaves it undecided,
    and the kernel is run as before."""

    def __init__(self, fn: "Function", functions, memo: "_UnitMemo", shared: set[str],
                 arrays: set[str], alias: dict[str, frozenset] | None = None,
                 depth: int = 0, dims: dict[str, int] | None = None):
        self.fn, self.functions, self.memo = fn, functions, memo
        self.groups = memo.groups(fn.body)
        self.shared = shared          # names of __shared__ variables (arrays and scalars)
        self.arrays = arrays          # those that are arrays (a bare use is a pointer)
        self.depth = depth
        self.dims: dict[str, int] = dims or {}   # dimensions of the arrays declared here
        # name -> arrays it may point into (shared arrays themselves, pointers)
        self.alias: dict[str, frozenset] = {a: frozenset((a,)) for a in arrays}
        if alias:
            self.alias.update(alias)
        self.loops: list[tuple[list, list]] = []
        self.returns: list | None = None if depth == 0 else []
        self._names_re = self._hot_re = None
        self._aliases(fn.body)

    def quiet(self) -> bool:
        try:
            self.stmt(self.fn.body, {})
        except (_Unproven, RecursionError):
            return False
        return True

    def _aliases(self, body: Node) -> None:
        """Pointers into shared memory declared or assigned in ``body`` (a fixpoint)."""
        caps = self.memo._queries(body) if self.memo._queries is not None else \
            captures(BODY_QUERY, body)
        pairs: list[tuple[str, Node, bool | None]] = []
        escapes: list[Node] = []
        for n in caps.get("declaration", []):
            type_node = n.child_by_field_name("type")
            type_text = _ts_text(type_node) if type_node is not None else ""
            for d in n.children_by_field_name("declarator"):
                if d.type != "init_declarator":
                    continue
                v = d.child_by_field_name("value")
                d = d.child_by_field_name("declarator")
                pointer = "auto" in type_text
                while d is not None and d.type != "identifier":
                    if d.type in ("pointer_declarator", "array_declarator"):
                        pointer = True
                    elif d.type == "reference_declarator":
                        pointer = True
                        if v is not None and self._mentions(v):
                            raise _Unproven("a reference into shared memory")
                    d = d.child_by_field_name("declarator") or next(
                        (c for c in d.named_children if c.type != "comment"), None)
                if v is None:
                    continue
                if v.type in ("initializer_list", "argument_list"):
                    escapes.extend(v.named_children)   # `P q{s};`, `P q(s);`
                    continue
                if d is not None:
                    pairs.append((_ts_text(d), v, pointer))
        for left in caps.get("assign_left", []):
            assign = left.parent
            right = assign.child_by_field_name("right") if assign is not None else None
            left = _unwrap(left)
            if right is None or left is None:
                continue
            if left.type == "identifier":
                pairs.append((_ts_text(left), right, None))
            else:
                escapes.append(right)
        for lst in caps.get("init_list", []):
            escapes.extend(lst.named_children)
        pointers = {name for name, _, pointer in pairs if pointer}
        changed = True
        while changed:
            changed = False
            for name, v, pointer in pairs:
                if not self._mentions(v):
                    continue
                arrs = self.arrays_of(v)
                if not arrs and (pointer or pointer is None and name in pointers) and \
                        _unwrap(v).type not in ("subscript_expression", "identifier"):
                    raise _Unproven("a pointer into shared memory the check cannot follow")
                if arrs and not arrs <= self.alias.get(name, frozenset()):
                    self.alias[name] = self.alias.get(name, frozenset()) | arrs
                    self._names_re = self._hot_re = None
                    changed = True
        # a pointer into shared memory stored anywhere but in a local variable (a
        # struct field, an array of pointers) is not followed
        for v in escapes:
            if self._mentions(v) and self.arrays_of(v):
                raise _Unproven("a pointer into shared memory stored in memory")

    def _names(self):
        r = self._names_re
        if r is None:
            names = sorted(self.shared | set(self.alias), key=len, reverse=True)
            r = self._names_re = re.compile(
                rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b"
                if names else rb"(?!)")
        return r

    def _mentions(self, node: Node) -> bool:
        """Whether ``node`` names shared memory or a pointer into it."""
        return self._names().search(node.text or b"") is not None

    def _hot(self, node: Node) -> bool:
        """Whether ``node`` may matter at all: it names shared memory, a pointer into
        it or a device function of the unit, or may synchronize."""
        r = self._hot_re
        if r is None:
            names = sorted(self.shared | set(self.alias) | set(self.functions), key=len,
                           reverse=True)
            alts = [rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b"] \
                if names else []
            r = self._hot_re = re.compile(b"|".join(alts + [_HOT.pattern]))
        return r.search(node.text or b"") is not None

    def arrays_of(self, node: Node | None) -> frozenset:
        """The shared arrays a pointer-valued expression may point into."""
        node = _unwrap(node)
        if node is None:
            return frozenset()
        t = node.type
        if t == "identifier":
            return self.alias.get(_ts_text(node), frozenset())
        if t == "cast_expression":
            return self.arrays_of(node.child_by_field_name("value"))
        if t == "binary_expression":
            op = _ts_text(node.child_by_field_name("operator"))
            if op in ("+", "-"):
                return self.arrays_of(node.child_by_field_name("left")) | \
                    self.arrays_of(node.child_by_field_name("right"))
            return frozenset()
        if t == "conditional_expression":
            return self.arrays_of(node.child_by_field_name("consequence")) | \
                self.arrays_of(node.child_by_field_name("alternative"))
        if t in ("assignment_expression", "comma_expression"):
            return self.arrays_of(node.child_by_field_name("right"))
        if t == "subscript_expression":        # a row of a multi-dimensional array
            base = _unwrap(node.child_by_field_name("argument"))
            if base is not None and base.type == "identifier":
                name = _ts_text(base)
                if name in self.arrays and self.dims.get(name, 2) >= 2:
                    return self.alias.get(name, frozenset((name,)))
                return frozenset()        # an element of a vector or of what p points to
            return self.arrays_of(base)
        if t == "pointer_expression":
            op = _ts_text(node.child_by_field_name("operator"))
            arg = _unwrap(node.child_by_field_name("argument"))
            if op == "&" and arg is not None and arg.type == "identifier" and \
                    _ts_text(arg) in self.shared:
                return frozenset((_ts_text(arg),))    # a shared scalar's address
            return self.arrays_of(arg) if op == "&" else frozenset()
        if t == "call_expression":
            fnode = node.child_by_field_name("function")
            short = callee_short_name(fnode)
            callee = self.functions.get(short)
            if callee is not None and callee.body is not None:
                # what a device function returns: maybe a pointer into shared memory
                # when it returns a pointer and was given one or names shared memory
                ret = callee.node.child_by_field_name("type")
                ret_text = _ts_text(ret) if ret is not None else ""
                declarator = callee.node.child_by_field_name("declarator")
                pointer = declarator is not None and declarator.type in (
                    "pointer_declarator", "reference_declarator")
                if not pointer and _VALUE_TYPE.match(ret_text):
                    return frozenset()
                args = node.child_by_field_name("arguments")
                if args is not None and any(self.arrays_of(a) for a in args.named_children):
                    raise _Unproven("a device function given shared memory returns")
                for f in self.memo.reachable(callee, self.functions):
                    data = self.functions[f].body.text or b""
                    if b"__shared__" in data or any(n.encode() in data
                                                     for n in self.shared):
                        raise _Unproven("a device function returning shared memory")
                return frozenset()
            args = node.child_by_field_name("arguments")
            name = _ts_text(fnode) if fnode is not None else ""
            if fnode is not None and fnode.type == "template_function":
                n = fnode.child_by_field_name("name")
                name = _ts_text(n) if n is not None else name
            inner = [c for c in args.named_children if c.type != "comment"] \
                if args is not None else []
            if name.split("::")[-1] in ("reinterpret_cast", "static_cast", "const_cast") \
                    and len(inner) == 1:
                return self.arrays_of(inner[0])
        return frozenset()

    # ---- states --------------------------------------------------------------------
    @staticmethod
    def join(a, b):
        if a is None:
            return b
        if b is None:
            return a
        out = dict(a)
        for k, v in b.items():
            out[k] = out.get(k, 0) | v
        return out

    @staticmethod
    def apply(state, kinds: dict[str, int]):
        if state is None or not kinds:
            return state
        out = dict(state)
        for arr, k in kinds.items():
            before = out.get(arr, 0)
            if k == _R | _W or (k & _W and before & _R) or (k & _R and before & _W):
                raise _Unproven("read and write in one interval")
            out[arr] = before | k
        return out

    # ---- statements ----------------------------------------------------------------
    def expr_stmt(self, node: Node | None, state):
        """The accesses of an expression, with the device functions it calls run in
        between (before and after them, in any order)."""
        if node is None or state is None or not self._hot(node):
            return state
        kinds: dict[str, int] = {}
        calls: list = []
        self.walk(node, kinds, calls)
        state = self.apply(state, kinds)
        if calls:
            for callee, alias in calls:
                state = self.inline(callee, alias, state)
            state = self.apply(state, kinds)
        return state

    def inline(self, callee: "Function", alias: dict[str, frozenset], state):
        if self.depth >= MAX_INLINE_DEPTH or state is None:
            raise _Unproven("inline depth")
        data = callee.body.text or b""
        if b"_sync" in data and any(n in data for n in _MASKED):
            raise _Unproven("a warp intrinsic (CL105 checks its mask)")
        found = _shared_declared(callee.body, self.memo)
        if found is None:
            raise _Unproven("a shared declaration")
        names, arrays, dims = found
        # a parameter pointing into shared memory: as many dimensions as its arrays
        dims = {**self.dims, **{p: max(self.dims.get(a, 2) for a in arrs)
                                for p, arrs in alias.items()}, **dims}
        sub = _IntervalCheck(callee, self.functions, self.memo,
                             self.shared | names | set(alias),
                             self.arrays | arrays | set(alias), alias, self.depth + 1,
                             dims)
        end = sub.stmt(callee.body, state)
        for r in sub.returns or ():
            end = sub.join(end, r)
        return end

    def stmt(self, node: Node, state):
        if state is None:
            return None
        if not self._hot(node):
            # no access, barrier or call that matters: the state stays (an early exit
            # in it could only make it smaller)
            return state
        t = node.type
        if t == "compound_statement":
            for c in node.named_children:
                state = self.stmt(c, state)
                if state is None:
                    return None
            return state
        if t in _IGNORED_STATEMENTS:
            return state
        if t == "expression_statement":
            kids = [c for c in node.named_children if c.type != "comment"]
            if len(kids) == 1 and self.barrier(kids[0]):
                args = _unwrap(kids[0]).child_by_field_name("arguments")
                state = self.expr_stmt(args, state)
                return {} if state is not None else None
            for c in kids:
                state = self.expr_stmt(c, state)
            return state
        if t == "declaration":
            quals = {_ts_text(c) for c in node.children if c.type in (
                "storage_class_specifier", "type_qualifier")}
            if "__shared__" in quals:
                return state          # registered up front; no initializer runs
            for d in node.children_by_field_name("declarator"):
                if d.type == "init_declarator":
                    v = d.child_by_field_name("value")
                    if v is not None:
                        if self.barrier(v):
                            raise _Unproven("barrier in a declaration")
                        state = self.expr_stmt(v, state)
                elif d.type != "identifier":
                    state = self.expr_stmt(d, state)
            return state
        if t == "if_statement":
            state = self.expr_stmt(node.child_by_field_name("condition"), state)
            cons = node.child_by_field_name("consequence")
            alt = node.child_by_field_name("alternative")
            out_t = self.stmt(cons, state) if cons is not None else state
            out_f = state
            if alt is not None:
                inner = [c for c in alt.named_children if c.type != "comment"]
                out_f = self.stmt(inner[0], state) if inner else state
            return self.join(out_t, out_f)
        if t in _LOOP_NODES:
            return self.loop(node, state)
        if t == "return_statement":
            for c in node.named_children:
                if c.type != "comment":
                    state = self.expr_stmt(c, state)
            if self.returns is not None:
                self.returns.append(state)
            return None
        if t in ("break_statement", "continue_statement"):
            if not self.loops:
                raise _Unproven("break outside a loop")
            self.loops[-1][0 if t == "break_statement" else 1].append(state)
            return None
        raise _Unproven(f"statement {t}")

    def loop(self, node: Node, state):
        t = node.type
        init = node.child_by_field_name("initializer") if t == "for_statement" else None
        cond = node.child_by_field_name("condition")
        update = node.child_by_field_name("update") if t == "for_statement" else None
        body = node.child_by_field_name("body")
        if init is not None:
            state = self.stmt(init, state) if init.type == "declaration" else \
                self.expr_stmt(init, state)
        entry = head = state
        for _ in range(64):
            top = head if t == "do_statement" else self.expr_stmt(cond, head)
            breaks: list = []
            conts: list = []
            self.loops.append((breaks, conts))
            try:
                out = self.stmt(body, top) if body is not None else top
            finally:
                self.loops.pop()
            for c in conts:
                out = self.join(out, c)
            out = self.expr_stmt(update, out)
            if t == "do_statement":
                out = self.expr_stmt(cond, out)
            new_head = self.join(entry, out)
            if new_head == head:
                exit_state = out if t == "do_statement" else top
                for b in breaks:
                    exit_state = self.join(exit_state, b)
                return exit_state
            head = new_head
        raise _Unproven("loop states do not settle")

    # ---- expressions ---------------------------------------------------------------
    def barrier(self, node: Node) -> bool:
        """A block barrier as the whole statement (a run clears its log there)."""
        node = _unwrap(node)
        if node is None or node.type not in ("call_expression", "gnu_asm_expression"):
            return False
        s = classify_sync(node, self.groups)
        return s is not None and s.kind in ("block", "grid", "named")

    def access(self, arrs: frozenset, kind: int, out: dict[str, int]) -> None:
        for a in arrs:
            out[a] = out.get(a, 0) | kind

    def target(self, left: Node, kind: int, out: dict[str, int], calls: list) -> None:
        cur = _unwrap(left)
        while cur is not None and cur.type == "field_expression":
            op = cur.child_by_field_name("operator")
            if op is None or _ts_text(op) != ".":
                break
            cur = _unwrap(cur.child_by_field_name("argument"))
        if cur is None:
            return
        t = cur.type
        if t == "identifier":
            name = _ts_text(cur)
            if name in self.shared and name not in self.arrays:
                out[name] = out.get(name, 0) | kind
            return                    # a local (a pointer's new value: see _aliases)
        base = None
        if t == "subscript_expression" or t == "pointer_expression" and \
                _ts_text(cur.child_by_field_name("operator")) == "*" or \
                t == "field_expression":      # p->f (`.` was unwrapped above)
            base = cur.child_by_field_name("argument")
            arrs = self.arrays_of(base)
            if arrs:
                self.access(arrs, kind, out)
                self.pointer_walk(base, out, calls)
                if t == "subscript_expression":
                    i = cur.child_by_field_name("indices")
                    if i is not None:
                        self.walk(i, out, calls)
                return
        # a store through memory the check does not see as shared: its base must not
        # involve shared memory (its indices may read it)
        if self._mentions(base if base is not None else left):
            raise _Unproven("a store the check cannot follow")
        self.walk(left, out, calls)

    def pointer_walk(self, node: Node | None, out: dict[str, int], calls: list) -> None:
        """A pointer-valued expression: no access of its own (rows of ``s[i][j]``),
        only those of its offsets."""
        node = _unwrap(node)
        if node is None:
            return
        if node.type == "subscript_expression":
            self.pointer_walk(node.child_by_field_name("argument"), out, calls)
            i = node.child_by_field_name("indices")
            if i is not None:
                self.walk(i, out, calls)
            return
        self.walk(node, out, calls)

    def walk(self, node: Node, out: dict[str, int], calls: list) -> None:
        t = node.type
        if t == "identifier":
            name = _ts_text(node)
            if name in self.shared and name not in self.arrays:
                out[name] = out.get(name, 0) | _R
            return
        if t == "subscript_expression":
            arg = node.child_by_field_name("argument")
            arrs = self.arrays_of(arg)
            if arrs:
                self.access(arrs, _R, out)
                self.pointer_walk(arg, out, calls)
                i = node.child_by_field_name("indices")
                if i is not None:
                    self.walk(i, out, calls)
                return
        elif t == "assignment_expression":
            op = node.child_by_field_name("operator")
            right = node.child_by_field_name("right")
            if right is not None:
                self.walk(right, out, calls)
            left = node.child_by_field_name("left")
            if left is not None:
                self.target(left, _W if op is not None and _ts_text(op) == "=" else
                            _R | _W, out, calls)
            return
        elif t == "update_expression":
            arg = node.child_by_field_name("argument")
            if arg is not None:
                self.target(arg, _R | _W, out, calls)
            return
        elif t in ("pointer_expression", "field_expression"):
            op = node.child_by_field_name("operator")
            arg = node.child_by_field_name("argument")
            o = _ts_text(op) if op is not None else ""
            if o in ("*", "->") and arg is not None:
                arrs = self.arrays_of(arg)
                if arrs:
                    self.access(arrs, _R, out)
                    self.pointer_walk(arg, out, calls)
                    return
            elif o == "&" and arg is not None:
                # an address: no access (a pointer made of it is an alias)
                self.pointer_walk(arg, out, calls)
                return
        elif t == "call_expression":
            if self.call(node, out, calls):
                return
        elif t in ("lambda_expression", "gnu_asm_expression", "compound_statement"):
            raise _Unproven(t)
        for c in node.named_children:
            self.walk(c, out, calls)

    def call(self, node: Node, out: dict[str, int], calls: list) -> bool:
        """Handles a call; True when its arguments were walked."""
        sync = classify_sync(node, self.groups)
        if sync is not None:
            if sync.kind in ("block", "grid", "named"):
                raise _Unproven("a barrier inside an expression")
            return False
        fnode = node.child_by_field_name("function")
        if fnode is None:
            raise _Unproven("call")
        short = callee_short_name(fnode)
        if short in WARP_INTRINSICS:
            raise _Unproven("a warp intrinsic (CL105 checks its mask)")
        callee = self.functions.get(short)
        if callee is None or callee.body is None or fnode.type == "field_expression":
            return False
        args = node.child_by_field_name("arguments")
        arg_nodes = [c for c in args.named_children if c.type != "comment"] \
            if args is not None else []
        alias: dict[str, frozenset] = {}
        for k, a in enumerate(arg_nodes):
            arrs = self.arrays_of(a)
            p = callee.params[k] if k < len(callee.params) else None
            if arrs:
                if p is None or not p.name or p.is_reference:
                    raise _Unproven("shared memory passed by reference")
                alias[p.name] = arrs
                self.pointer_walk(a, out, calls)
            else:
                if p is not None and p.is_reference and self._mentions(a):
                    raise _Unproven("a shared element passed by reference")
                self.walk(a, out, calls)
        calls.append((callee, alias))
        return True


def _shared_declared(body: Node, memo: "_UnitMemo"
                     ) -> tuple[set[str], set[str], dict[str, int]] | None:
    """(names, array names, their dimensions) of the ``__shared__`` variables declared in
    ``body``, None when a declarator is not understood."""
    names: set[str] = set()
    arrays: set[str] = set()
    dims: dict[str, int] = {}
    if b"__shared__" not in (body.text or b""):
        return names, arrays, dims
    caps = memo._queries(body) if memo._queries is not None else None
    decls = caps.get("declaration", []) if caps is not None else \
        captures("(declaration) @d", body).get("d", [])
    for decl in decls:
        if not any(c.type in ("storage_class_specifier", "type_qualifier") and
                   c.text == b"__shared__" for c in decl.children):
            continue
        for d in decl.children_by_field_name("declarator"):
            if d.type == "init_declarator":
                d = d.child_by_field_name("declarator")
            depth = 0
            while d is not None and d.type != "identifier":
                if d.type in ("array_declarator", "pointer_declarator"):
                    depth += 1
                d = d.child_by_field_name("declarator") or next(
                    (c for c in d.named_children if c.type != "comment"), None)
            if d is None:
                return None
            name = _ts_text(d)
            names.add(name)
            if depth:
                arrays.add(name)
                dims[name] = max(depth, dims.get(name, 0))
    return names, arrays, dims


def _quiet_kernel(ctx: "UnitContext", fn: "Function", functions, memo: "_UnitMemo"
                  ) -> bool:
    """Whether :class:`_IntervalCheck` proves a run of ``fn`` finds no race and no mask
    mismatch (it may still show CL103 a divergent barrier: such kernels are deferred)."""
    if fn.body is None:
        return False
    for name in memo.reachable(fn, functions):
        f = functions.get(name, fn)
        data = f.body.text or b""
        if b"_sync" in data and any(n in data for n in _MASKED):
            return False                # CL105 checks the mask of a warp intrinsic
    found = _shared_declared(fn.body, memo)
    if found is None:
        return False
    shared, arrays, dims = found
    for a in ctx.model.shared_arrays:
        if a.function is None:          # file scope: any bare use is left undecided
            shared.add(a.name)
            arrays.add(a.name)
    try:
        check = _IntervalCheck(fn, functions, memo, shared, arrays, dims=dims)
    except (_Unproven, RecursionError):
        return False
    return check.quiet()


# ---------------------------------------------------------------------------------------
# the analysis

@dataclass
class Race:
    """A race every run found: report it at ``second``."""
    first: Node
    second: Node
    first_write: bool
    cross_warp: bool
    threads: tuple[int, int]
    address: int
    array: str
    block: tuple[int, int, int]
    block_source: str
    kernel: "Function"

    @property
    def rule(self) -> str:
        return "CL102" if self.cross_warp else "CL101"


@dataclass
class MaskMismatch:
    node: Node
    mask: int
    arrive: int
    live: int
    warp: int
    block: tuple[int, int, int]
    kernel: "Function"


def _unit_structs(ctx: "UnitContext"):
    """Struct layouts of the unit, through the lane engine (whichever input it takes)."""
    nodes = getattr(ctx.model, "nodes", None)
    if nodes is not None:
        return struct_types(nodes("struct"))
    return struct_types(ctx.root)    # type: ignore[arg-type]


def _mentions_shared(ctx: "UnitContext", fn: "Function", functions) -> bool:
    """Cheap prefilter: the kernel (or a device function of the unit) names __shared__
    memory or a file-scope shared array, and writes something."""
    body = fn.body
    if body is None:
        return False
    data = body.text or b""
    if b"__shared__" in data:
        return True
    names = {a.name.encode() for a in ctx.model.shared_arrays if a.function is None}
    if any(n in data for n in names):
        return True
    for f in functions.values():
        if f is fn or f.body is None or f.is_kernel:
            continue
        if f.name.encode() in data and b"__shared__" in (f.body.text or b""):
            return True
    return False


def _reachable_texts(fn: "Function", functions) -> list[bytes]:
    """The body texts a run of ``fn`` can execute: its own and those of the unit's
    device functions it (transitively) names, the ones a run may inline."""
    texts = [fn.body.text or b""]
    seen = {fn.name}
    todo = [texts[0]]
    while todo:
        data = todo.pop()
        for name, f in functions.items():
            if name in seen or name.encode() not in data:
                continue
            seen.add(name)
            t = f.body.text or b""
            texts.append(t)
            todo.append(t)
    return texts


def _reachable_names(fn: "Function", functions) -> set[str]:
    """The unit's device functions a run of ``fn`` may inline (those it names,
    transitively), as :func:`_reachable_texts` finds them."""
    seen = {fn.name}
    todo = [fn.body.text or b""]
    while todo:
        data = todo.pop()
        for name, f in functions.items():
            if name in seen or name.encode() not in data:
                continue
            seen.add(name)
            todo.append(f.body.text or b"")
    return seen


_MASKED = tuple(n.encode() for n in sorted(WARP_INTRINSICS))


def _can_report(ctx: "UnitContext", fn: "Function", functions) -> bool:
    """Whether a run of ``fn`` can find a race or a warp-mask mismatch at all: a race
    needs a ``__shared__`` address (a shared declaration, or a file-scope shared array
    named, in code the run may execute), a mismatch a ``*_sync(mask, ...)`` intrinsic or
    ``__syncwarp``. When neither is there, the run can only tell CL103 which barriers
    it saw reached by part of the block, and runs only if CL103 asks."""
    names = [a.name.encode() for a in ctx.model.shared_arrays if a.function is None]
    for data in _reachable_texts(fn, functions):
        if b"__shared__" in data or any(n in data for n in names):
            return True
        if b"_sync" in data and any(n in data for n in _MASKED):
            return True
    return False


def _mentions_warp_sync(fn: "Function") -> bool:
    data = fn.body.text if fn.body is not None else b""
    return b"_sync" in (data or b"")


class RaceAnalysis:
    """Per unit: ``ctx.analysis(RaceAnalysis)``: races (CL101/CL102) and warp-mask
    mismatches (CL105) that every run of every kernel agrees on."""

    def __init__(self, ctx: "UnitContext"):
        self.races: list[Race] = []
        self.masks: list[MaskMismatch] = []
        # block barriers that every run saw reached by only part of the live threads
        self._divergent: dict[int, Node] = {}
        self._deferred: list = []
        self.incomplete: dict[str, str] = {}
        kernels = [k for k in ctx.model.kernels if k.body is not None]
        self._kernel_fns = kernels
        if not kernels:
            return
        functions = {f.name: f for f in ctx.model.functions
                     if f.is_device and not f.is_kernel and f.body is not None}
        todo = []
        for fn in kernels:
            shared = _mentions_shared(ctx, fn, functions)
            warp = _mentions_warp_sync(fn)
            if shared or warp:
                todo.append(fn)
        if not todo:
            return
        structs = _unit_structs(ctx)
        self._memo = _UnitMemo(ctx.analysis(BodyQueries))
        self._memo.shared_names = {a.name for a in ctx.model.shared_arrays
                                   if a.function is None}
        shared_globals = {}
        for a in ctx.model.shared_arrays:
            if a.function is None:
                shared_globals[a.name] = SharedVar(f"{a.name}@{a.node.start_byte}", a.name,
                                                   a.elem_type, tuple(a.dims), a.extern)
        for fn in todo:
            if _can_report(ctx, fn, functions) and \
                    not _quiet_kernel(ctx, fn, functions, self._memo):
                self._kernel(ctx, fn, structs, functions, shared_globals)
            else:
                self._deferred.append((ctx, fn, structs, functions, shared_globals))
        if not self._deferred:
            self._memo = None

    @property
    def divergent(self) -> dict[int, Node]:
        """Block barriers every run saw reached by only part of the live threads (the
        kernels that can only tell this run on the first call: CL103 alone asks)."""
        if self._deferred:
            deferred, self._deferred = self._deferred, []
            for args in deferred:
                self._kernel(*args)
            self._memo = None
        return self._divergent

    def reached_by_part(self, node: Node) -> bool:
        """Whether every run saw the block barrier ``node`` reached by only part of the
        live threads. Runs only the deferred kernels that can execute ``node``: the
        kernel holding it, or those that (transitively) name the device function
        holding it (the same answer as :attr:`divergent`, without running the others)."""
        if self._deferred:
            start, end = node.start_byte, node.end_byte
            holder = next((k for k in self._kernel_fns if k.node.start_byte <= start
                           and end <= k.node.end_byte), None)
            keep, run = [], []
            if holder is not None:
                for args in self._deferred:
                    (run if args[1] is holder else keep).append(args)
            else:
                functions = self._deferred[0][3]
                owner = next((f for f in functions.values() if f.node.start_byte <= start
                              and end <= f.node.end_byte), None)
                for args in self._deferred:
                    fn = args[1]
                    if owner is None or owner.name in _reachable_names(fn, functions):
                        run.append(args)
                    else:
                        keep.append(args)
            self._deferred = keep
            for args in run:
                self._kernel(*args)
            if not self._deferred:
                self._memo = None
        return node.id in self._divergent

    def _kernel(self, ctx, fn, structs, functions, shared_globals) -> None:
        shape = block_shape(ctx, fn)
        if shape is not None:
            blocks = [(shape.dims, shape.source)]
        else:
            data = fn.body.text or b""
            if re.search(rb"threadIdx\s*\.\s*[yz]|blockDim\s*\.\s*[yz]", data):
                return
            blocks = [(b, "assumed") for b in GUESSED_BLOCKS]
        agreed: dict[tuple[int, int], Hit] | None = None
        cross: dict[tuple[int, int], bool] = {}
        masks: dict[int, MaskHit] | None = None
        divergent: dict[int, Node] | None = None
        for dims, source in blocks:
            if dims[0] * dims[1] * dims[2] > 1024:
                return
            for sample in SAMPLES:
                run = BlockRun(ctx, fn, dims, sample, structs, functions, shared_globals,
                               self._memo)
                res = run.run()
                if not res.complete:
                    self.incomplete[fn.name] = res.reason
                if agreed is None:
                    agreed = dict(res.races)
                    cross = {k: h.cross_warp for k, h in res.races.items()}
                else:
                    agreed = {k: h for k, h in agreed.items() if k in res.races}
                    cross = {k: cross[k] and res.races[k].cross_warp for k in agreed}
                masks = dict(res.masks) if masks is None else \
                    {k: m for k, m in masks.items() if k in res.masks}
                divergent = dict(res.divergent) if divergent is None else \
                    {k: m for k, m in divergent.items() if k in res.divergent}
                if not agreed and not masks and not divergent:
                    return
        for k, hit in (agreed or {}).items():
            self.races.append(Race(hit.first, hit.second, hit.first_write, cross[k],
                                   hit.threads, hit.address, hit.array, blocks[0][0],
                                   blocks[0][1], fn))
        self._divergent.update(divergent or {})
        for m in (masks or {}).values():
            self.masks.append(MaskMismatch(m.node, m.mask, m.arrive, m.live, m.warp,
                                           blocks[0][0], fn))
        self.races.sort(key=lambda r: (r.second.start_byte, r.first.start_byte))
        self.masks.sort(key=lambda m: m.node.start_byte)
