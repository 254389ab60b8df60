"""What one block run records and finds: the accesses of each ``__shared__`` array since
the last block barrier, the racing pairs among them (:class:`Hit`), the warp-mask
mismatches (:class:`MaskHit`) and the block barriers reached by only part of the live
threads, gathered in a :class:`RunResult` (:class:`GiveUp` stops a run; what it found
before stays).

A read of an address another thread wrote (or a write of one another thread read) since
the last block barrier is a race, unless the two threads are lanes of one warp and a
warp-level sync containing both ran in between. Most arrays are only written or only
read between two barriers, so the log (:class:`Accesses`) keeps accesses as vectors and
builds its address map only when accesses of the other kind share an address.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from cudalint.analysis.sync.values import FULL_MASK, WARP, SPtr


class GiveUp(Exception):
    """The run cannot go on exactly: stop (what was found before stays)."""


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
    # the kernel's call (syntax node) under which the later access ran, None when the
    # kernel body itself made it
    site: Node | None = None
    # which barrier interval of the run the pair fell in (block barriers, and calls that
    # may synchronize, passed before it): pairs of one interval are fixed by barriers
    # placed in it
    interval: int = 0


@dataclass
class MaskHit:
    node: Node
    mask: int
    arrive: int                  # lanes that execute the call (in one warp)
    live: int                    # lanes of the warp still running the kernel
    warp: int


@dataclass
class ConflictHit:
    """Two threads storing different values at one address in one store."""
    node: Node
    threads: tuple[int, int]     # linear ids
    values: tuple                # what each of the two stores
    address: int
    array: str


@dataclass
class RunResult:
    races: dict[tuple[int, int], Hit] = field(default_factory=dict)
    masks: dict[int, MaskHit] = field(default_factory=dict)
    divergent: dict[int, Node] = field(default_factory=dict)
    # block barriers some threads skip and then meet another barrier at (CL103):
    # barrier node id -> (barrier, the barrier the skipping threads wait at instead)
    mismatched: dict[int, tuple[Node, Node]] = field(default_factory=dict)
    # stores at which two threads write different values to one address
    conflicts: dict[int, ConflictHit] = field(default_factory=dict)
    complete: bool = True
    reason: str = ""


class Accesses:
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

    __slots__ = ("pending", "index", "ids", "addrs", "owner")

    def __init__(self):
        self.pending: list[tuple] = []
        self.index: dict[int, dict[int, tuple]] = {}
        # address -> ids of the access nodes in index[address]: an access pairs with
        # nothing new there once each of them already races with it across warps
        self.ids: dict[int, set[int]] = {}
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

    def folding(self) -> int:
        """How many thread accesses the next :meth:`fold` adds to the map."""
        return sum(len(p[2]) for p in self.pending)

    def fold(self, warp_of: list[int]) -> dict[int, dict[int, tuple]]:
        index = self.index
        ids = self.ids
        for node, node_id, idx, addrs, unsure, events in self.pending:
            for a in set(addrs):
                held = ids.get(a)
                if held is None:
                    ids[a] = {node_id}
                else:
                    held.add(node_id)
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


class SharedLog:
    """The part of :class:`~cudalint.analysis.sync.block_run.BlockRun` that logs
    ``__shared__`` accesses between block barriers, pairs them into races, records the
    warp syncs that order lanes of one warp, the barriers reached by only part of the
    block, and the warp masks of ``*_sync`` calls (CL105)."""

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
        self.work += len(idx)
        slot = self.log.get(array)
        if slot is None:
            slot = self.log[array] = (Accesses(), Accesses())
        mine, others = slot if is_write else (slot[1], slot[0])
        uncertain = (self.maybe | self.ghost) & act
        unsure = frozenset(self.bits(uncertain)) if uncertain else None
        node_id = node.id
        warp_of = self.warp_of
        if others.addrs and not others.addrs.isdisjoint(addrs) and \
                not others.only_own(addrs, idx):
            self.work += others.folding()
            index = others.fold(warp_of)
            ids = others.ids
            races = self.result.races
            settled: set[int] = set()       # addresses where nothing can change a hit
            for i, a in zip(idx, addrs):
                if unsure and i in unsure:
                    continue        # pairs with an uncertain access are never reported
                at = index.get(a)
                if not at or a in settled:
                    continue
                # a hit across warps is final: with one for every access logged at the
                # address, its threads (all the block's, often) need not be paired again
                if all((h := races.get((o, node_id))) is not None and h.cross_warp
                       for o in ids[a]):
                    settled.add(a)
                    continue
                w = warp_of[i]
                self.work += len(at)
                for j, (other, evc, cert, other_id) in at.items():
                    if j == i or not cert:
                        continue
                    cross = warp_of[j] != w
                    k = (other_id, node_id)
                    hit = races.get(k)
                    if hit is not None and (hit.cross_warp or not cross):
                        continue    # what it would record is there already
                    if not cross and self._synced(j, i, evc):
                        continue
                    site = self.frames[-1].site if self.frames else None
                    races[k] = Hit(other.ts, node.ts, not is_write, cross,
                                   (self.tids[j], self.tids[i]), a, array,
                                   site.ts if site is not None else None,
                                   len(self.barrier_events))
        snap = self._event_counts
        if snap is None:
            snap = self._event_counts = {w: len(ev) for w, ev in self.events.items()}
        mine.add(node, node_id, idx, addrs, unsure, snap)

    def write_conflict(self, p: SPtr, node: Node, value, act: int) -> None:
        """One store (``x[0] = threadIdx.x``) by two threads at one address with
        different known values: which value stays depends on the schedule (between
        warps) or is unspecified (lanes of one warp in one instruction); racecheck
        reports both as errors on an H100. Equal values are benign; unknown values
        and threads on unknown paths are not judged."""
        if p.dims or not isinstance(value, tuple) or node.id in self.result.conflicts:
            return
        offs = p.offset
        idx = self.bits(act & ~(self.maybe | self.ghost))
        if len(idx) < 2:
            return
        first: dict[int, tuple[int, object]] = {}
        for i in idx:
            a = offs[i] if isinstance(offs, tuple) else offs
            v = value[i]
            if a is None or v is None:
                continue
            seen = first.get(a)
            if seen is None:
                first[a] = (i, v)
            elif seen[1] != v:
                self.result.conflicts[node.id] = ConflictHit(
                    node.ts, (self.tids[seen[0]], self.tids[i]), (seen[1], v), a, p.key)
                return

    def _synced(self, j: int, i: int, since: int) -> bool:
        both = (1 << i) | (1 << j)
        for ev in self.events.get(self.warp_of[i], ())[since:]:
            if ev & both == both:
                return True
        return False

    def arrive(self, node: Node, act: int) -> None:
        """A block barrier reached by the threads of ``act``: logged for the barrier
        order (:mod:`~cudalint.analysis.sync.barrier_order`, certain when every live
        thread's path is known); when only some of the threads still running reach it,
        all of them on known paths: divergent (CL103 uses it for loops)."""
        live = self.full & ~self.exited
        certain = not ((self.maybe | self.ghost) & live)
        self.barrier_events.append((node.ts, act, certain))
        self.arrived = True
        if not certain:
            return
        if act != live:
            self.result.divergent.setdefault(node.id, node.ts)

    def block_barrier(self) -> None:
        if not self.arrived:
            # a call that may synchronize (an unknown function, a named or grid
            # barrier): the order of barriers past it is not known
            self.barrier_events.append(None)
        self.arrived = False
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
