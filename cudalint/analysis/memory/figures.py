"""What one memory access costs: the sectors a warp's request touches in global memory
(CL201) and the bank wavefronts it takes in shared memory (CL202).

An ``Access`` holds, per (sample, warp) group, the byte offset each lane touches. A figure
that is the same in every group is exact; one that changes between samples of the
unknowns is replaced by a sure lower bound (``lower_bound``), never a guess.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import repeat
from operator import add, rshift, sub
from typing import TYPE_CHECKING, Callable, Iterable

from tree_sitter import Node

from cudalint.analysis.memory.lane_values import N_SAMPLES, WARP
from cudalint.model.launch_shape import BlockShape

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import ArrayDecl, Function

SECTOR = 32
_SECTOR_SHIFT = 5                       # a // SECTOR == a >> _SECTOR_SHIFT
BANKS = 32
BANK_BYTES = 4


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
    # the scalar parameters (and template parameters) the address read as unknowns
    params: frozenset = frozenset()
    # parameters the address read that every launch of the unit passes as one constant:
    # name -> (value, line of the launch)
    bound: dict = field(default_factory=dict)
    # the address as a function of one unknown parameter (symbolic.LinearLanes), if so
    symbolic: "object | None" = None
    # loops around the access in the kernel body (run-time or rolled ones, iterations of
    # the constant-bound ones), the deepest such nesting of any access of this space in
    # the kernel, and the deepest run-time nesting of its global accesses
    # (lanes.loop_depths; lanes.hot)
    loop_depth: tuple = (0, 1)
    hot_depth: tuple = (0, 1)
    global_depth: int = 0
    # the access evaluated again with loop counters held (declaration id -> value), and
    # an expression's lane values (None: not evaluable); set by lanes for loops_of
    reevaluate: "Callable[[dict], Access | None] | None" = None
    int_values: "Callable[[Node], tuple | None] | None" = None
    # an access in a device function: the kernel and calls it is reached from
    # (callee_lanes.Reached); None in the kernel's own body
    reached: "object | None" = None

    def sectors_per_request(self) -> list[int]:
        return [sectors(row, self.width) for row in self.groups]

    def wavefronts(self) -> list[int]:
        return [wavefronts(row, self.width) for row in self.groups]

    @property
    def ideal_sectors(self) -> int:
        return max(1, WARP * self.width // SECTOR)

    @property
    def least_sectors(self) -> tuple[int, int]:
        """The fewest 32-byte sectors that hold the distinct bytes a warp asks for, in
        the row that needs fewest and in the one that needs most: lanes that read one
        address share it (in a 16x9 block whose lanes 16-31 read what lanes 0-15 read in
        some warps, 2 in those, 4 in the others). At most :attr:`ideal_sectors`, which
        the rule's threshold compares with (the measured records are for 32 distinct
        lanes); this is the figure a message names as what the request could cost."""
        # per warp, the most over the samples of the unknowns (a sample that makes lanes
        # share addresses, `ld` = 0, is not the one a figure is claimed for); warps with
        # no live lane left out
        nw = max(1, len(self.groups) // N_SAMPLES)
        need = []
        for w in range(nw):
            most = 0
            for row in self.groups[w::nw]:
                most = max(most, len({a for a in row if a is not None}))
            if most:
                need.append(-(-most * self.width // SECTOR))
        need = need or [self.ideal_sectors]
        cap = self.ideal_sectors
        return max(1, min(min(need), cap)), max(1, min(max(need), cap))

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
    return min_sectors_of_points(points, shifts)


def min_sectors_of_points(points: set[int], shifts: int) -> int:
    """min over k in range(shifts) of the sectors holding the points shifted by k: the
    sectors byte ranges of at most 32 bytes touch are those of their first and last
    bytes (see _min_sectors_shifted)."""
    xs = sorted(points)
    if not xs:
        return 0
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
# figures for the rules

def _block_metrics(access: Access) -> dict:
    # block_line is added by the rules for the findings they emit (mapping costs);
    # no block for a figure that holds for any 1-D block of 32 threads or more
    dims = None if access.block.source == "any-1d" else list(access.block.dims)
    return {"block": dims, "block_source": access.block.source}


def block_line_metrics(access: Access) -> dict:
    line = access.block.line
    return {} if line is None else {"block_line": line}


def reached_text(access: Access) -> str:
    """``; reached from `k` at line 42`` for an access in a device function."""
    return f"; {access.reached.describe()}" if access.reached is not None else ""


def reached_metrics(access: Access) -> dict:
    return {"reached_from": list(access.reached.where)} if access.reached is not None \
        else {}


def root_kernel(access: Access) -> "Function":
    """The kernel an access runs in: its own, or the one its device function is reached
    from (what the traffic of a record is summed over)."""
    return access.reached.kernel if access.reached is not None else access.kernel


def at_the_call(ctx: "UnitContext", pairs: list) -> list:
    """``pairs`` ((access, finding)) with each finding on an access of a header's device
    function (appended to the unit: project/header_functions.py) moved to the kernel's
    call of it, saying where the access is in the header (metrics ``in_header``); one
    whose call is not in the file's own text is dropped. The engine reports nothing in
    appended text: these figures depend on the caller's lanes, so the call is where the
    file shows them."""
    unit = ctx.unit
    if not unit.spliced:
        return pairs
    out = []
    for access, finding in pairs:
        if finding.in_file or unit.spliced_piece(finding.start) is None:
            out.append((access, finding))
            continue
        call = access.reached.call if access.reached is not None else None
        place = unit.header_place(finding.start)
        if call is None or place is None or unit.spliced_piece(call.start_byte) is not None:
            continue
        shown, row, col = place
        finding.start, finding.end = call.start_byte, call.end_byte
        finding.message += f" (in `{shown}` at line {row}, column {col}, called here)"
        finding.metrics["in_header"] = {"file": shown, "line": row, "column": col}
        finding.fix = None
        out.append((access, finding))
    return out


def merge_reached(pairs: list) -> list:
    """The findings of ``pairs`` ((access, finding)), those made alike in a device
    function from several kernels said once: the same place and message but for the
    block's and the calls' description; the first one's message names every place it
    is reached from."""
    out: list = []
    seen: dict[tuple, list] = {}
    for access, finding in pairs:
        if access.reached is None:
            out.append(finding)
            continue
        said = reached_text(access)
        key = (finding.start, finding.end, finding.message.replace(said, "\0").replace(
            access.block.describe(), "\0"))
        first = seen.get(key)
        if first is None:
            seen[key] = [finding, said, list(access.reached.where)]
            out.append(finding)
            continue
        where = first[2]
        where.extend(w for w in access.reached.where if w not in where)
        merged = "; " + replace(access.reached, where=where).describe()
        first[0].message = first[0].message.replace(first[1], merged)
        first[0].metrics["reached_from"] = list(where)
        first[1] = merged
    return out


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


def least_metrics(access: Access) -> dict:
    """``least_sectors_per_request`` (and ``least_sectors_per_request_max`` when warps
    differ): what the distinct bytes of a request need, for messages."""
    lo, hi = access.least_sectors
    return {"least_sectors_per_request": lo,
            **({"least_sectors_per_request_max": hi} if hi != lo else {})}


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
    fig.update(least_metrics(access))
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
