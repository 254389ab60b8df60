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
indices); the syntax is read through a memoised mirror
(:class:`~cudalint.analysis.sync.syntax.Syn`) with each node's operands decoded once;
the shared-memory log keeps accesses as vectors and builds its address map only when
accesses of the other kind share an address with another thread; kernels that can only
tell CL103 about divergent barriers run only if CL103 asks, and only those that can
execute the barrier it asks about (:meth:`RaceAnalysis.reached_by_part`). Kernels a
static barrier-interval check (:class:`~cudalint.analysis.sync.interval.IntervalCheck`)
proves quiet (each shared array only read or only written between barriers, pointers and
inlined device functions followed, no warp intrinsic) are deferred the same way; a call
of a device function that cannot touch shared memory, synchronize or return an integer
is not inlined (:meth:`~cudalint.analysis.sync.unit_memo.UnitMemo.inert`).

This module is what the rules read (:class:`RaceAnalysis`, :class:`Race`,
:class:`MaskMismatch`): which kernels run, on which block shapes and samples, and what
every run agrees on. The run itself is :mod:`~cudalint.analysis.sync.block_run` (with
:mod:`~cudalint.analysis.sync.block_eval`, :mod:`~cudalint.analysis.sync.block_calls`
and :mod:`~cudalint.analysis.sync.block_log`), its values
:mod:`~cudalint.analysis.sync.values`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from tree_sitter import Node

from cudalint.analysis.sync.block_log import ConflictHit, Hit, MaskHit
from cudalint.analysis.sync.block_run import GUESSED_BLOCKS, SAMPLES, BlockRun
from cudalint.analysis.sync.callees import (MASKED, MAX_INLINE_DEPTH, reachable_names,
                                            reachable_texts)
from cudalint.analysis.sync.cfg import BodyQueries
from cudalint.analysis.sync.interval import quiet_kernel
from cudalint.analysis.sync.unit_memo import UnitMemo
from cudalint.analysis.sync.values import SharedVar
from cudalint.model.instances import Instances
from cudalint.model.launch_guards import param_ranges, sample_in_ranges
from cudalint.model.launch_shape import block_shape, launch_bounds_threads
from cudalint.model.types import struct_types
from cudalint.parse import nesting

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function


# budget (issue 25): the block runs of one file do at most FILE_WORK units of work; a
# kernel whose turn comes after that is not run (no race, mask or barrier finding for it:
# what no run showed is never reported). A unit is a statement executed by one simulated
# thread; a thread access logged, folded into the address map or paired, counts
# WORK_WEIGHT units, and an operator evaluated for a block of n threads n/4 x that
# (``BlockRun.work``). Counted, not timed: the same file gets the same findings on any
# machine, so `--fix` settles (fuzz seed 42: a CPU-time budget let each run reach a
# different number of 64 copies of one kernel). Measured on this 2-core machine a unit
# costs 0.03-0.14 us: 0.43 s for the 6.0 million of the 9-project corpus's most costly
# file (mmcv's furthest_point_sample_cuda_kernel.cuh), 6.7 s for the 64.5 million of a
# fuzzed Python file of triangular solves whose log never meets a barrier (seed 37)
FILE_WORK = 30_000_000
WORK_WEIGHT = 8
_SPENT: "WeakKeyDictionary[object, list]" = WeakKeyDictionary()  # SourceFile -> [units]
# bound (issue 25): the interval check and the block run walk a kernel's syntax
# recursively, up to two Python frames a tree level, through at most MAX_INLINE_DEPTH
# inlined device functions. A kernel whose body nests deeper than MAX_NEST levels,
# counting MAX_INLINE_DEPTH times its deepest reachable device function, is not run
# (nothing reported of it). A walk that went down to the interpreter's recursion limit
# (and gave up there) left no stack for a weakref callback that the garbage collector
# ran at that moment: fuzz seed 31, a 3,000-term sum, "Exception ignored in
# WeakKeyDictionary ... RecursionError". The 9-project corpus needs at most 197 (kernel
# bodies at most 38 levels, device functions 31).
MAX_NEST = 300


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
    # the kernel's call statement under which ``second`` ran (a device function inlined
    # there), None when ``second`` is in the kernel body
    site: Node | None = None
    # the barrier interval of the first run in which the pair fell (its index in that
    # run: pairs with one index lie between the same two barriers)
    interval: int = 0

    @property
    def rule(self) -> str:
        return "CL102" if self.cross_warp else "CL101"


@dataclass
class WriteConflict:
    """One store at which two threads write different values to one ``__shared__``
    address (every run found it)."""
    node: Node
    threads: tuple[int, int]
    values: tuple
    address: int
    array: str
    block: tuple[int, int, int]
    block_source: str
    kernel: "Function"


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


def _can_report(ctx: "UnitContext", fn: "Function", functions) -> bool:
    """Whether a run of ``fn`` can find a race or a warp-mask mismatch at all: a race
    needs a ``__shared__`` address (a shared declaration, or a file-scope shared array
    named, in code the run may execute), a mismatch a ``*_sync(mask, ...)`` intrinsic or
    ``__syncwarp``. When neither is there, the run can only tell CL103 which barriers
    it saw reached by part of the block, and runs only if CL103 asks."""
    names = [a.name.encode() for a in ctx.model.shared_arrays if a.function is None]
    for data in reachable_texts(fn, functions):
        if b"__shared__" in data or any(n in data for n in names):
            return True
        if b"_sync" in data and any(n in data for n in MASKED):
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
        # block barriers every run saw skipped by threads that then wait at another
        # barrier: id -> (barrier, that other barrier)
        self._mismatched: dict[int, tuple[Node, Node]] = {}
        # stores of different values by two threads to one address, every run agreeing
        self._conflicts: dict[int, WriteConflict] = {}
        self._deferred: list = []
        self.incomplete: dict[str, str] = {}
        kernels = [k for k in ctx.analysis(Instances).kernels() if k.body is not None]
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
        depth: dict[str, int] = {}
        todo = [fn for fn in todo if not self._too_deep(fn, functions, depth)]
        if not todo:
            return
        structs = _unit_structs(ctx)
        self._memo = UnitMemo(ctx.analysis(BodyQueries))
        self._memo.shared_names = {a.name for a in ctx.model.shared_arrays
                                   if a.function is None}
        shared_globals = {}
        for a in ctx.model.shared_arrays:
            if a.function is None:
                shared_globals[a.name] = SharedVar(f"{a.name}@{a.node.start_byte}", a.name,
                                                   a.elem_type, tuple(a.dims), a.extern)
        for fn in todo:
            if _can_report(ctx, fn, functions) and \
                    not quiet_kernel(ctx, fn, functions, self._memo):
                self._kernel(ctx, fn, structs, functions, shared_globals)
            else:
                self._deferred.append((ctx, fn, structs, functions, shared_globals))
        if not self._deferred:
            self._memo = None

    def _too_deep(self, fn: "Function", functions, depth: dict[str, int]) -> bool:
        callee = 0
        for name in reachable_names(fn, functions) - {fn.name}:
            if name not in depth:
                depth[name] = nesting(functions[name].body, MAX_NEST)
            callee = max(callee, depth[name])
        if nesting(fn.body, MAX_NEST) + MAX_INLINE_DEPTH * callee > MAX_NEST:
            self.incomplete[fn.name] = f"nested more than {MAX_NEST} levels deep"
            return True
        return False

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
        self._run_deferred_for(node)
        return node.id in self._divergent

    def waits_elsewhere(self, node: Node) -> Node | None:
        """The barrier that threads skipping the block barrier ``node`` wait at instead,
        when every run of a kernel that executes it saw that
        (:mod:`~cudalint.analysis.sync.barrier_order`); None when no run showed it."""
        self._run_deferred_for(node)
        hit = self._mismatched.get(node.id)
        return hit[1] if hit is not None else None

    def write_conflict(self, node: Node) -> "WriteConflict | None":
        """The conflict every run saw at the shared-memory store ``node`` (two threads
        writing different values to one address), running the deferred kernels that can
        execute it; None when a run did not."""
        self._run_deferred_for(node)
        return self._conflicts.get(node.id)

    def _run_deferred_for(self, node: Node) -> None:
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
                    if owner is None or owner.name in reachable_names(fn, functions):
                        run.append(args)
                    else:
                        keep.append(args)
            self._deferred = keep
            for args in run:
                self._kernel(*args)
            if not self._deferred:
                self._memo = None

    def _kernel(self, ctx, fn, structs, functions, shared_globals) -> None:
        shape = block_shape(ctx, fn)
        if shape is not None:
            blocks = [(shape.dims, shape.source)]
        else:
            data = fn.body.text or b""
            if re.search(rb"threadIdx\s*\.\s*[yz]|blockDim\s*\.\s*[yz]", data):
                return
            # __launch_bounds__ only bounds the guesses: no launch has more threads
            bound = launch_bounds_threads(fn) or GUESSED_BLOCKS[-1][0]
            blocks = [(b, "assumed") for b in GUESSED_BLOCKS if b[0] <= bound] or \
                [((bound, 1, 1), "assumed")]
        agreed: dict[tuple[int, int], Hit] | None = None
        cross: dict[tuple[int, int], bool] = {}
        masks: dict[int, MaskHit] | None = None
        divergent: dict[int, Node] | None = None
        mismatched: dict[int, tuple[Node, Node]] | None = None
        conflicts: dict[int, ConflictHit] | None = None
        bounded = None          # parameter ranges the launches guarantee, on first run
        for dims, source in blocks:
            if dims[0] * dims[1] * dims[2] > 1024:
                return
            for sample in SAMPLES:
                spent = _SPENT.get(ctx.unit.file)
                if spent is None:
                    spent = _SPENT[ctx.unit.file] = [0, False]
                if spent[0] > FILE_WORK:
                    self.incomplete[fn.name] = "the file's budget of block runs"
                    if not spent[1]:        # said once a file, at the first kernel left
                        spent[1] = True
                        ctx.notices.append((fn.node.start_byte, (
                            f"the race and barrier simulation (CL101-CL105) stops at "
                            f"kernel `{fn.name}`: the file's budget of {FILE_WORK:,} units "
                            f"of work is spent; the file's later kernels are not run")))
                    return
                run = BlockRun(ctx, fn, dims, sample, structs, functions, shared_globals,
                               self._memo)
                if bounded is None:
                    bounded = param_ranges(ctx, fn)
                run.param_values = sample_in_ranges(sample[0], SAMPLES.index(sample),
                                                    bounded)
                res = run.run()
                spent[0] += run.steps * run.n + WORK_WEIGHT * run.work
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
                mismatched = dict(res.mismatched) if mismatched is None else \
                    {k: m for k, m in mismatched.items() if k in res.mismatched}
                conflicts = dict(res.conflicts) if conflicts is None else \
                    {k: c for k, c in conflicts.items() if k in res.conflicts}
                if not agreed and not masks and not divergent and not mismatched and \
                        not conflicts:
                    return
        for k, hit in (agreed or {}).items():
            self.races.append(Race(hit.first, hit.second, hit.first_write, cross[k],
                                   hit.threads, hit.address, hit.array, blocks[0][0],
                                   blocks[0][1], fn, hit.site, hit.interval))
        self._divergent.update(divergent or {})
        for k, m in (mismatched or {}).items():
            self._mismatched.setdefault(k, m)
        for k, c in (conflicts or {}).items():
            self._conflicts.setdefault(k, WriteConflict(
                c.node, c.threads, c.values, c.address, c.array, blocks[0][0],
                blocks[0][1], fn))
        for m in (masks or {}).values():
            self.masks.append(MaskMismatch(m.node, m.mask, m.arrive, m.live, m.warp,
                                           blocks[0][0], fn))
        self.races.sort(key=lambda r: (r.second.start_byte, r.first.start_byte))
        self.masks.sort(key=lambda m: m.node.start_byte)
