from cudalint.diagnostics import Finding
from cudalint.rule import Rule

from cudalint.analysis.sync.races import Race
from cudalint.parse import text
from cudalint.rules.sync._race_common import (RaceGroup, clause, describe, line_ranges,
                                              metrics, race_groups, relocated,
                                              statement_of)


class MissingBlockBarrier(Rule):
    """## What it does
    Finds a `__shared__` write followed by a read of the same element by a thread of
    another warp (or a read followed by another warp's overwrite, including across loop
    iterations) with no `__syncthreads()` on the path between them: a block reduction
    whose loop lacks its barrier, a tiled stencil reading its halo right after loading
    the tile, a scan step that overwrites what a neighbour has not read yet. The block
    is executed symbolically (exact per-thread indices, branches, loops, device
    functions of the file); the message names the write, the read and two threads.

    One race is one finding, however many pairs of accesses make it: the pairs of one
    `__shared__` array between the same two barriers, or of one statement, are reported
    together, with the number of pairs (`pairs`) and their lines (`lines`): at the one
    later access when there is one (as before), else at the write of the pair the
    message names (a read-modify-write such as `t[0] = b[0] - t[0]` run by every thread
    first). Two barriers missing on one array between the same two barriers are one
    finding too (its lines name both places). When the races lie inside a device function
    written for one thread (it names no thread index, lane, barrier or warp intrinsic,
    and every argument is the same for all threads) that every thread calls on
    `__shared__` data, the finding is one, at the call, naming the racing lines inside
    it: the fix is there (let one thread run it, then `__syncthreads()`), not at each
    access (DROID-SLAM's `relSE3` call gave 21 findings, one per access, before).

    A pair whose write stores a value every thread stores alike (`q[0] = a[0] * b[0]`
    by the whole block, read back afterwards) is still a data race under the CUDA
    memory model (two conflicting accesses of different threads that no barrier
    orders), but the value read does not depend on which store it sees: such pairs are
    counted (`same_value_pairs`) and named in the message, never the pair the message
    describes when another is there, and they add no finding of their own beside a race
    of the same barrier interval (alone, they are one finding).

    ## Why is this bad?
    Only a block-wide barrier orders the accesses of different warps. Without it the
    reader may see the old value or a partially updated tile, depending on scheduling:
    a data race that compute-sanitizer racecheck reports as an error. `__syncwarp()`
    does not help: it orders lanes of one warp only.

    ## Example
    ```cuda
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];   // reads what another warp wrote last round
    }
    ```

    ## Use instead
    ```cuda
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    ```

    ## References
    - CUDA C++ Programming Guide, "Shared Memory" and `__syncthreads()`
    - Tuning CUDA Applications for Kepler, 1.4.9 "Warp-synchronous Programming",
      https://docs.nvidia.com/cuda/kepler-tuning-guide/
    - compute-sanitizer racecheck (measured on the fixtures: `fixtures/CL102/truth.json`)

    ## Precision on unseen code
    Precision on unseen code: 1/1 right (2026-11-24, ea1e6f7; docs/precision.md)

    """
    code = "CL102"
    name = "missing-block-barrier"
    severity = "error"

    def check(self, ctx):
        slots = _register_slots(ctx)
        for group in race_groups(ctx):
            if slots and all((r.first.start_byte, r.second.start_byte) in slots or
                             id(r) in group.same_value for r in group.races) and \
                    any((r.first.start_byte, r.second.start_byte) in slots
                        for r in group.races):
                continue        # a per-thread value in one shared word (and words every
                                # thread stores alike): CL107 says it
            site = group.site
            if site is not None:
                yield call_finding(group, ctx)
            elif len(group.units) == 1:
                node, races = group.units[0]
                race = races[0]
                _, _, example = describe(race, ctx)
                found = relocated(ctx, Finding.at(
                    node,
                    f"missing `__syncthreads()`: "
                    f"{clause(race, 'threads of other warps', ctx)} "
                    f"with no block barrier between ({example})",
                    metrics=metrics(race, len(races), ctx)), race)
                if found is not None:
                    yield found
            else:
                found = relocated(ctx, race_finding(group, ctx), _representative(group))
                if found is not None:
                    yield found


def _register_slots(ctx) -> set[tuple[int, int]]:
    """(store, read) places of the shared words every thread stores its own value in and
    reads back as its own (write_conflicts.read_back): a barrier between them would give
    every thread the last writer's value, so CL102's remedy is wrong there; CL107 says
    to keep the value in a register (sheet-newcorpus10 W1, pytorch-loss)."""
    data = ctx.unit.data if isinstance(ctx.unit.data, bytes) else ctx.unit.data.encode()
    if b"__shared__" not in data:
        return set()
    from cudalint.analysis.sync.write_conflicts import SharedWriteConflicts, read_back
    out = set()
    for c in ctx.analysis(SharedWriteConflicts).items:
        back = read_back(c)
        if back is not None:
            out.add((c.node.start_byte, back.start_byte))
    return out


def _representative(group: RaceGroup) -> Race:
    """The pair a finding names: one whose write does not store a value every thread
    stores alike, an overwrite of what other threads read first (a read-modify-write of
    shared data by every thread breaks the result), then the earliest place."""
    return min(group.races, key=lambda r: (id(r) in group.same_value, r.first_write,
                                           r.second.start_byte, r.first.start_byte))


def _at_lines(lines: list[int]) -> str:
    """" at lines 12-14" (nothing when every place is in a header's appended text)."""
    return f" at lines {line_ranges(lines)}" if lines else ""


def _same_value_note(group: RaceGroup) -> str:
    k = sum(1 for r in group.races if id(r) in group.same_value)
    if not k:
        return ""
    which = "all of which" if k == len(group.races) else f"{k} of which"
    return (f", {which} read back a value every thread stores alike (a data race by the "
            f"CUDA memory model all the same; the value read does not depend on which "
            f"store it sees)")


def call_finding(group: RaceGroup, ctx) -> Finding:
    """One finding at the kernel's call whose inlined body races across warps."""
    races = group.races
    site = group.site
    race = _representative(group)
    _, _, example = describe(race, ctx)
    kernel = race.kernel.node
    inside = kernel.start_byte <= race.first.start_byte < kernel.end_byte
    fn = site.child_by_field_name("function")
    name = text(fn) if fn is not None else text(site)
    arrays = sorted({r.array.split("@")[0] for r in races})
    lines = sorted({ln for r in races for n in (r.first, r.second)
                    if not kernel.start_byte <= n.start_byte < kernel.end_byte
                    and (ln := ctx.own_line(n)) is not None})
    where = (f"every thread runs `{name}` (written for one thread) on `__shared__` "
             f"{', '.join(f'`{a}`' for a in arrays)}, and threads of different warps race "
             f"inside the call")
    if inside:
        where = (f"the call of `{name}` accesses `__shared__` "
                 f"{', '.join(f'`{a}`' for a in arrays)} that threads of other warps "
                 f"accessed before it")
        fix = "put a `__syncthreads()` before the call"
    else:
        fix = ("let one thread run it, then `__syncthreads()`, or give each thread its "
               "own copy")
    m = metrics(race, len(races), ctx)
    m["call_line"] = ctx.line(site)
    m["lines"] = lines
    m["same_value_pairs"] = sum(1 for r in races if id(r) in group.same_value)
    return Finding.at(
        site,
        f"missing `__syncthreads()`: {where}: {clause(race, 'threads of other warps', ctx)} "
        f"({example}); {len(races)} racing pair{'s' if len(races) != 1 else ''}"
        f"{_at_lines(lines)}{_same_value_note(group)} ({fix})",
        metrics=m)


def race_finding(group: RaceGroup, ctx) -> Finding:
    """One finding for the pairs of one race that several later accesses make (one
    array between two barriers, one statement, same-value stores beside a race): at the
    write of the pair it names (the read-modify-write when there is one), with every
    pair's lines."""
    races = group.races
    race = _representative(group)
    _, _, example = describe(race, ctx)
    write = race.first if race.first_write else race.second
    arrays = sorted({r.array.split("@")[0] for r in races})
    lines = sorted({ln for r in races for n in (r.first, r.second)
                    if (ln := ctx.own_line(n)) is not None})
    m = metrics(race, len(races), ctx)
    m["lines"] = lines
    m["arrays"] = arrays
    m["same_value_pairs"] = sum(1 for r in races if id(r) in group.same_value)
    return Finding.at(
        statement_of(write) if _rmw(race) else write,
        f"missing `__syncthreads()`: {clause(race, 'threads of other warps', ctx)} "
        f"with no block barrier between ({example}); {len(races)} racing pairs on "
        f"{', '.join(f'`{a}`' for a in arrays)}{_at_lines(lines)}"
        f"{_same_value_note(group)}",
        metrics=m)


def _rmw(race: Race) -> bool:
    """Both accesses of the pair lie in one statement (``t[0] = b[0] - t[0]``)."""
    a, b = statement_of(race.first), statement_of(race.second)
    return a is not None and b is not None and a.id == b.id
