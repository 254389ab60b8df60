"""Loops around a memory access: which accesses sit in a kernel's hottest region (the
default findings of CL201 and CL202, issue 20), which accesses ptxas executes as one
vector access (a thread's consecutive elements in a fully unrolled loop: LDS.128), and
which loops walk a lane's record whole.

The lane evaluator (lanes, kernel_lanes) gives each ``Access`` its loop nesting
(``loop_depth``, ``hot_depth``, ``global_depth``) and two callables: the access again
with loop counters held at one iteration (``reevaluate``), and an expression's lane
values (``int_values``). Everything here is read from those and the syntax tree.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from tree_sitter import Node

from cudalint.analysis.memory.figures import SECTOR, Access
from cudalint.analysis.memory.kernel_lanes import _declared
from cudalint.analysis.memory.lane_values import N_SAMPLES, WARP
from cudalint.parse import captures, text


_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")


def loop_nodes(body: Node) -> list[Node]:
    """The loops in ``body`` (itself included), an outer loop before the loops it holds
    and a later loop before an earlier one."""
    return list(_loop_nodes(body))


_LOOP_QUERY = "[(for_statement) (while_statement) (do_statement) (for_range_loop)] @l"
_LOOP_WORD = re.compile(rb"\b(?:for|while|do)\b")


@lru_cache(maxsize=8)
def _loop_nodes(body: Node) -> tuple[Node, ...]:
    # asked several times per kernel (accesses, callees, loop depths, hot paths); a
    # query, as a Python walk of every node took 1.3 s of a profiled corpus run. The
    # key holds its tree, so a node id is not reused while cached.
    if not _LOOP_WORD.search(body.text or b""):
        return ()
    found = captures(_LOOP_QUERY, body).get("l", [])
    return tuple(sorted(found, key=lambda n: (-n.end_byte, n.start_byte)))


def loops_around(node: Node, loops: list[Node]) -> list[Node]:
    """The loops of ``loops`` that hold ``node``, innermost first."""
    around = [lp for lp in loops if lp.start_byte <= node.start_byte < lp.end_byte
              and lp.id != node.id]
    return sorted(around, key=lambda lp: -lp.start_byte)


# an access in a loop this many times less frequent than its space's hottest one, at
# the same run-time nesting, is outside the hot region (torchsparse's tile stores)
HOT_SHARE = 4


def hot(access: Access) -> bool:
    """The access sits in its kernel's hottest region (the rules' default findings):
    inside as many loops with a run-time trip count as the deepest access of its space
    in the kernel, and executed at least 1/HOT_SHARE as often per pass of those loops
    (constant trip counts multiplied; for shared memory, times the wavefronts each
    execution takes, so a 16-way read after a 16-pass fill is as hot as the fill); for
    shared memory, also inside as many run-time
    loops as the deepest global access (not a block's final reduction after its global
    loads). A kernel with no loops keeps all."""
    (runtime, weight), (hot_runtime, hot_weight) = access.loop_depth, access.hot_depth
    if runtime < hot_runtime or weight * HOT_SHARE < hot_weight:
        return False
    return access.space != "shared" or runtime >= access.global_depth


def bounded_trip(int_values, loop: Node) -> int | None:
    """At most how many times a ``for`` loop runs when its bound and step are constants
    (``for (r = ty; r < 32; r += 8)``: 4, from the lowest start, 0 when the start is not
    a constant; ``for (j = -8; j <= 8; ++j)``: 17; a decreasing ``for (r = 7; r >= 0;
    r -= 2)``: 4, its start a constant), or None (a run-time bound, or a loop kept
    rolled by ``#pragma unroll 1``: a loop the hardware runs as a loop)."""
    if loop.type != "for_statement" or int_values is None:
        return None
    cond = loop.child_by_field_name("condition")
    upd = loop.child_by_field_name("update")
    if cond is not None and cond.type == "binary_expression" and \
            text(cond.child_by_field_name("operator")) in (">", ">="):
        down = _down_range(int_values, loop, any_step=True)
        if down is None or len(set(down[1])) != 1 or _unroll_one(loop):
            return None
        lo, stop, step = down
        return max(0, -(-(stop[0] - lo) // step))
    if cond is None or upd is None or cond.type != "binary_expression" or \
            text(cond.child_by_field_name("operator")) not in ("<", "<=", "!="):
        return None
    op = text(cond.child_by_field_name("operator"))
    name = text(cond.child_by_field_name("left"))
    ut = text(upd).replace(" ", "")
    if ut in (f"++{name}", f"{name}++"):
        step = 1
    elif ut.startswith(f"{name}+="):
        got = int_values(upd.child_by_field_name("right"))
        step = got[0] if got is not None and len(set(got)) == 1 else 0
    else:
        return None
    stop = int_values(cond.child_by_field_name("right"))
    if step <= 0 or stop is None or len(set(stop)) != 1:
        return None
    if _unroll_one(loop):
        return None
    span = stop[0] - _lowest_start(int_values, loop, name) + (op == "<=")
    return max(0, -(-span // step))


def _lowest_start(int_values, loop: Node, name: str) -> int:
    """The lowest value an increasing loop's counter ``name`` starts from: its start
    when that is one constant; else at most 0 (a start that differs by lane or by
    sample counts from 0, or lower when some lane starts below it; one not known from
    0)."""
    init = loop.child_by_field_name("initializer")
    value = None
    if init is not None and init.type == "declaration":
        declared = _declared(init)
        if len(declared) == 1 and declared[0][0] == name and not declared[0][2]:
            value = declared[0][3]
    elif init is not None and init.type == "assignment_expression" and \
            text(init.child_by_field_name("operator")) == "=" and \
            text(init.child_by_field_name("left")) == name:
        value = init.child_by_field_name("right")
    got = int_values(value) if value is not None else None
    if not got:
        return 0
    return got[0] if len(set(got)) == 1 else min(0, min(got))


@dataclass(frozen=True)
class CountedLoop:
    """``for (int c = start; c < stop; ++c)``: ``trip`` when ``stop`` is a constant."""
    node: Node
    decl: Node                  # the counter's declaration (KernelLanes.counters key)
    start: int
    stop: tuple                 # lane values of the bound (sampled when run-time)
    trip: int | None
    unrolled: bool              # a constant trip count nvcc unrolls fully


_UNROLL_ONE = re.compile(r"#\s*pragma\s+unroll\s*\(?\s*1\s*\)?\s*$")
_UNROLL = re.compile(r"#\s*pragma\s+unroll\b")
# constant trip counts nvcc unrolls without a pragma (local_index: 128 unrolled)
UNROLLED_TRIP = 128


def counted_loop(int_values, loop: Node, open_stop: bool = False) -> CountedLoop | None:
    """The loop as a counted loop with a counter declared in its header, stepping by
    one, or None (``int_values``: an access's, see ``Access``). A decreasing loop
    (``for (int c = hi; c >= lo; --c)``) runs the same counter values as the increasing
    one from ``lo`` up to ``hi`` (torchsparse's unrolled coordinate loops): it is read as
    that one, ``start`` its lowest value. ``open_stop``: a bound the engine cannot
    evaluate (a count loaded from memory) gives ``stop`` () and ``trip`` None instead
    of None."""
    if loop.type != "for_statement" or int_values is None:
        return None
    down = _down_range(int_values, loop)
    if down is not None:
        first, stop, _ = down
        trip = stop[0] - first if len(set(stop)) == 1 else None
        return CountedLoop(loop, loop.child_by_field_name("initializer"), first, stop, trip,
                           _unrolled(loop, trip))
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    upd = loop.child_by_field_name("update")
    if init is None or init.type != "declaration" or cond is None or upd is None:
        return None
    declared = _declared(init)
    if len(declared) != 1 or declared[0][3] is None or declared[0][2]:
        return None
    name = declared[0][0]
    # `v != V` stepping up by one from below runs as `v < V` (sheet-newcorpus11 W1:
    # optimized_transducer's `for (v = 0; v != vocab_size; ++v)` row walks)
    if cond.type != "binary_expression" or \
            text(cond.child_by_field_name("left")) != name or \
            text(cond.child_by_field_name("operator")) not in ("<", "<=", "!="):
        return None
    ut = text(upd).replace(" ", "")
    if ut not in (f"++{name}", f"{name}++", f"{name}+=1", f"{name}={name}+1"):
        return None
    start = int_values(declared[0][3])
    stop = int_values(cond.child_by_field_name("right"))
    if stop is None and open_stop and start is not None and len(set(start)) == 1:
        return CountedLoop(loop, init, start[0], (), None, False)
    if start is None or stop is None or len(set(start)) != 1:
        return None
    if text(cond.child_by_field_name("operator")) == "!=" and \
            any(v is None or v < start[0] for v in stop):
        return None             # would run past the stop: not a counted loop
    if text(cond.child_by_field_name("operator")) == "<=":
        stop = tuple(v + 1 for v in stop)
    first = start[0]
    trip = stop[0] - first if len(set(stop)) == 1 else None
    return CountedLoop(loop, init, first, stop, trip, _unrolled(loop, trip))


def _pragma(loop: Node) -> str:
    prev = loop.prev_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_sibling
    return text(prev).strip() if prev is not None and prev.type == "preproc_call" else ""


def _unroll_one(loop: Node) -> bool:
    return _UNROLL_ONE.match(_pragma(loop)) is not None


def _unrolled(loop: Node, trip: int | None) -> bool:
    pragma = _pragma(loop)
    return trip is not None and trip > 0 and not _UNROLL_ONE.match(pragma) and (
        _UNROLL.match(pragma) is not None or trip <= UNROLLED_TRIP)


def _down_range(int_values, loop: Node, any_step: bool = False) -> tuple | None:
    """A decreasing loop ``for (int c = hi; c >= lo; --c)`` (``c--``, ``c -= 1``,
    ``c = c - 1``; ``c > lo``) as (lowest value, highest value + 1 per lane, step): the
    counter declared in the header, ``lo`` a constant. ``any_step``: also ``c -= k``
    for a constant k > 0 (the counter is then declared or assigned in the header)."""
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    upd = loop.child_by_field_name("update")
    if init is None or cond is None or upd is None or cond.type != "binary_expression":
        return None
    op = text(cond.child_by_field_name("operator"))
    if op not in (">", ">="):
        return None
    if init.type == "declaration":
        declared = _declared(init)
        if len(declared) != 1 or declared[0][3] is None or declared[0][2]:
            return None
        name, value = declared[0][0], declared[0][3]
    elif any_step and init.type == "assignment_expression" and \
            text(init.child_by_field_name("operator")) == "=":
        name, value = text(init.child_by_field_name("left")), init.child_by_field_name("right")
    else:
        return None
    if text(cond.child_by_field_name("left")) != name:
        return None
    ut = text(upd).replace(" ", "")
    if ut in (f"--{name}", f"{name}--", f"{name}-=1", f"{name}={name}-1"):
        step = 1
    elif any_step and ut.startswith(f"{name}-="):
        got = int_values(upd.child_by_field_name("right"))
        step = got[0] if got is not None and len(set(got)) == 1 else 0
    else:
        return None
    lo = int_values(cond.child_by_field_name("right"))
    hi = int_values(value)
    if step <= 0 or lo is None or hi is None or len(set(lo)) != 1:
        return None
    return lo[0] + (op == ">"), tuple(v + 1 for v in hi), step


def counter_step(access: Access, loop: CountedLoop) -> tuple[Access, int] | None:
    """The access at the loop's first iteration and the byte step of its address from
    one iteration to the next, when it is the same for every active lane of every
    warp and sample; None otherwise."""
    if access.reevaluate is None:
        return None
    a0 = access.reevaluate({loop.decl.id: loop.start})
    a1 = access.reevaluate({loop.decl.id: loop.start + 1})
    if a0 is None or a1 is None or len(a0.groups) != len(a1.groups):
        return None
    steps = set()
    for r0, r1 in zip(a0.groups, a1.groups):
        for x, y in zip(r0, r1):
            if (x is None) != (y is None):
                return None
            if x is not None:
                steps.add(y - x)
    if len(steps) != 1:
        return None
    return a0, steps.pop()


# every spelling of a barrier (cooperative groups' cg::sync(g) and synchronize(g) too)
_BARRIER = re.compile(rb"__syncthreads|__syncwarp|__barrier_sync|\bbar(?:rier)?\.(?:cta\.)?sync|"
                      rb"\.sync\s*\(|\b(?:sync|synchronize)\s*\(")


def vector_access(access: Access) -> Access | None:
    """The access as ptxas executes it when a fully unrolled loop around it makes one
    thread touch consecutive elements: ``for (k = 0; k < 4; ++k) ... s[row + k]`` with
    4-byte elements is one 16-byte access (LDS.128/STS.128) at ``s[row]``, not four
    4-byte ones. The counter of an unrolled loop (every loop between it and the access
    unrolled too, no barrier in it) must move the address by one element for every
    lane, and the lanes' first addresses must be aligned to the vector (8 or 16 bytes,
    in every warp and sample of the unknowns); None otherwise."""
    if access.space != "shared" or access.width not in (1, 2, 4, 8) or \
            access.kernel.body is None:
        return None
    for loop in loops_around(access.node, loop_nodes(access.kernel.body)):
        counted = counted_loop(access.int_values, loop)
        if counted is None or not counted.unrolled or _BARRIER.search(loop.text or b""):
            return None             # copies of an outer iteration are not adjacent
        got = counter_step(access, counted)
        if got is None or got[1] != access.width:
            continue
        first = got[0]
        for vw in (16, 8):
            k = vw // access.width
            if k < 2 or counted.trip % k:
                continue
            if all(x % vw == 0 for row in first.groups for x in row if x is not None):
                return replace(access, groups=first.groups, width=vw)
        return None
    return None


def whole_record_loop(access: Access, span: int | None = None,
                      max_record: int | None = None) -> Node | None:
    """A loop around the access whose counter walks the lane's record piece by piece
    from its start to its end: ``for (k = 0; k < K; ++k) q[pix * K + k]`` (lane stride
    ``K`` elements), or ``b[(pix * K + k) * 3 + 0..2]`` with ``span`` 12 (the bytes the
    access and its siblings cover per iteration): each thread reads its record whole
    across the loop's iterations. None when there is no such loop, or when a record (in
    any sample of the unknowns) is longer than ``max_record`` bytes."""
    span = span or access.width
    if access.kernel.body is None:
        return None
    for loop in loops_around(access.node, loop_nodes(access.kernel.body)):
        counted = counted_loop(access.int_values, loop)
        if counted is None:
            lane = lane_row_loop(access, loop)
            if lane is None or lane.step != span or len(set(lane.length)) != 1:
                continue
            # from the lane's own row start: each lane covers trip * span bytes
            strides = _lane_strides(access.groups)
            record = lane.length[0] * span
            if not strides or strides != {record} or \
                    max_record is not None and record > max_record:
                return None
            return loop
        got = counter_step(access, counted)
        if got is None or not 0 < got[1] <= span:
            continue            # (a step under the span: windows that overlap, `e[i]` and
                                # `e[i + 1]` moved by one, LEAP, sheet-newcorpus11 W2)
        first, ok = got[0], False
        for g, row in enumerate(first.groups):
            live = [x for x in row if x is not None]
            if len(live) < 2:
                continue
            stride = live[1] - live[0]
            if stride <= 0 or (counted.stop[g * WARP] - counted.start) * span != stride or \
                    any(b - a != stride for a, b in zip(live, live[1:])):
                return None
            if max_record is not None and stride > max_record:
                return None
            ok = True
        return loop if ok else None
    return None


def row_walk_loop(access: Access, span: int, samples: set[int] | None = None) -> Node | None:
    """A loop with a run-time trip count around the access whose counter moves each
    lane's address by at most ``span``
    bytes (the bytes the access and its siblings cover), less than the distance between
    neighbouring lanes, the same step for every lane of every warp and sample: each
    thread walks its own row across the loop's iterations, however far its trip count
    (a run-time or data-dependent bound included: roiaware's ``for (k = 1; k <=
    total_pts; k++) ... pts_idx_of_voxels[k]``), so the bytes a request fetches beyond
    this iteration's element are the next iterations' elements, not waste. ``samples``:
    only these samples of the unknowns (a figure that holds for large values of a
    parameter: at a row length of 1 the lanes are neighbours)."""
    if access.kernel.body is None or access.reevaluate is None:
        return None
    for loop in loops_around(access.node, loop_nodes(access.kernel.body)):
        counted = counted_loop(access.int_values, loop, open_stop=True)
        if counted is None:
            lane = lane_row_loop(access, loop)
            if lane is not None and lane.step == span and len(set(lane.length)) > 1:
                # `for (i = r * m; i < r * m + m; ++i) ... d[i]`: the lane's own row,
                # its length a run-time value; the first iteration is the access itself
                strides = _lane_strides(access.groups, samples)
                if strides and min(strides) > span:
                    return loop
            continue
        if counted.trip is not None and (counted.trip <= WALK_TRIP or
                                         counted.trip * span < SECTOR):
            # a short constant trip: counter_walk counts its bytes. A longer one
            # (ss_kernel's `for (i = 1; i < 20; ++i) af[out + i]`, sheet-newcorpus8
            # W5) is walked past counter_walk's reach: its row is the next iterations'
            continue
        got = counter_step(access, counted)
        if got is None or not 0 < got[1] <= span:
            continue            # (a step under the span: windows that overlap, `e[i]` and
                                # `e[i + 1]` moved by one, LEAP, sheet-newcorpus11 W2)
        strides = set()
        nw = max(1, len(got[0].groups) // N_SAMPLES)
        for g, row in enumerate(got[0].groups):
            if samples is not None and g // nw not in samples:
                continue
            live = [x for x in row if x is not None]
            strides.update(b - a for a, b in zip(live, live[1:]))
        if strides and min(strides) > span:
            return loop
    return None


@dataclass(frozen=True)
class LaneRowLoop:
    """``for (int i = r * m; i < r * m + m; ++i)``: a loop whose counter starts at a
    value that differs by lane (the lane's row) and runs the same number of iterations
    in every lane of a warp: ``length`` per (sample, warp) group, ``step`` the bytes the
    counter moves the access's address by from one iteration to the next."""
    node: Node
    length: tuple
    step: int


def lane_row_loop(access: Access, loop: Node) -> LaneRowLoop | None:
    """The loop as a walk over each lane's own row (``LaneRowLoop``), or None: a ``for``
    whose counter is declared or assigned in its header from a start that is not one
    value everywhere (it differs by lane, or it is data: mmcv's padding loop ``for (k =
    cnt; k < sampled_pts_num; k++)``, which ``counted_loop`` leaves out), bounded by
    ``<``/``<=`` a value whose distance from the start is the same for every lane of each
    warp, stepping by one (DirectVoxGO's ``for (i = i_s; i < i_t; ++i)``, ``i_t = i_s +
    n_pts``). The counter is held at two consecutive values for every lane to read the
    address's step."""
    values = access.int_values
    if loop.type != "for_statement" or values is None or access.reevaluate is None:
        return None
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    upd = loop.child_by_field_name("update")
    if init is None or cond is None or upd is None or cond.type != "binary_expression":
        return None
    if init.type == "declaration":
        declared = _declared(init)
        if len(declared) != 1 or declared[0][3] is None or declared[0][2]:
            return None
        name, start_node, decl = declared[0][0], declared[0][3], init
    elif init.type == "assignment_expression" and \
            text(init.child_by_field_name("operator")) == "=":
        name, start_node = text(init.child_by_field_name("left")), \
            init.child_by_field_name("right")
        decl = _declaration_before(access.kernel.body, name, loop)
        if decl is None:
            return None
    else:
        return None
    op = text(cond.child_by_field_name("operator"))
    if text(cond.child_by_field_name("left")) != name or op not in ("<", "<="):
        return None
    if text(upd).replace(" ", "") not in (f"++{name}", f"{name}++", f"{name}+=1",
                                          f"{name}={name}+1"):
        return None
    start, stop = values(start_node), values(cond.child_by_field_name("right"))
    if not start or not stop or len(start) != len(stop) or len(set(start)) == 1:
        return None
    lengths = []
    for g in range(0, len(start), WARP):
        diff = {b - a + (op == "<=") for a, b in zip(start[g:g + WARP], stop[g:g + WARP])}
        if len(diff) != 1:
            return None
        lengths.append(diff.pop())
    a0 = access.reevaluate({decl.id: start[0]})
    a1 = access.reevaluate({decl.id: start[0] + 1})
    if a0 is None or a1 is None or len(a0.groups) != len(a1.groups):
        return None
    steps = {y - x for r0, r1 in zip(a0.groups, a1.groups) for x, y in zip(r0, r1)
             if x is not None and y is not None}
    if len(steps) != 1:
        return None
    return LaneRowLoop(loop, tuple(lengths), steps.pop())


def _declaration_before(body: Node, name: str, loop: Node) -> Node | None:
    """The declaration of ``name`` nearest before ``loop`` in the blocks around it (``int
    i; for (i = i_s; ...)``)."""
    cur = loop
    while cur is not None and cur.id != body.id:
        parent = cur.parent
        if parent is None:
            return None
        if parent.type == "compound_statement":
            for sib in reversed(parent.children):
                if sib.start_byte >= cur.start_byte or sib.type != "declaration":
                    continue
                if any(d[0] == name for d in _declared(sib)):
                    return sib
        cur = parent
    return None


def _lane_strides(groups, samples: set[int] | None = None) -> set[int]:
    """Distances between neighbouring live lanes, over the groups of ``samples``."""
    strides: set[int] = set()
    nw = max(1, len(groups) // N_SAMPLES)
    for g, row in enumerate(groups):
        if samples is not None and g // nw not in samples:
            continue
        live = [x for x in row if x is not None]
        strides.update(b - a for a, b in zip(live, live[1:]))
    return strides


# counted loops walked value by value for the traffic figure, and at most this many
# copies of one access: short unrolled record walks (torchsparse's 4 coordinates)
WALK_TRIP = 16
WALK_COPIES = 64


def counter_walk(access: Access) -> list[Access]:
    """The access at every combination of values of the counters of the counted loops
    around it with a constant trip count of at most WALK_TRIP (increasing or decreasing:
    the same values), or the access alone when there is none or the copies would be more
    than WALK_COPIES: the addresses a thread touches across those loops
    (``for (j = 3; j >= 1; --j) p[t * 4 + j]`` reads 3 fields of the record, not 1).
    Only loops whose counter moves the address within a lane's record: a loop from one
    record to the next is a new request, not more bytes of this one. Computed once per
    access (kept on it): CL201 joins each access with every other of its buffer, which
    walked each one again for each (fuzz seed 41: 53 accesses, 4,809 walks, 42 s)."""
    got = access.__dict__.get("_counter_walk")
    if got is None:
        got = access.__dict__["_counter_walk"] = _counter_walk(access)
    return got


def _counter_walk(access: Access) -> list[Access]:
    if access.reevaluate is None or access.kernel.body is None:
        return [access]
    held: list[dict[int, int]] = [{}]
    for loop in loops_around(access.node, loop_nodes(access.kernel.body)):
        counted = counted_loop(access.int_values, loop)
        if counted is None or counted.trip is None or not 1 < counted.trip <= WALK_TRIP \
                or not _within_record(access, counted):
            continue
        if len(held) * counted.trip > WALK_COPIES:
            return [access]
        held = [{**h, counted.decl.id: v} for h in held
                for v in range(counted.start, counted.start + counted.trip)]
    if held == [{}]:
        return [access]
    out = [access.reevaluate(h) for h in held]
    if any(a is None or len(a.groups) != len(access.groups) for a in out):
        return [access]
    return out


def _within_record(access: Access, loop: CountedLoop) -> bool:
    """The counter moves the address by less than the distance between neighbouring
    lanes, in every warp and sample (``p[t * 4 + j]``: 4 bytes against 16)."""
    got = counter_step(access, loop)
    if got is None or got[1] == 0:
        return False
    strides = set()
    for row in got[0].groups:
        live = [x for x in row if x is not None]
        strides.update(abs(b - a) for a, b in zip(live, live[1:]) if b != a)
    return bool(strides) and abs(got[1]) < min(strides)
