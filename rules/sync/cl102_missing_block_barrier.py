from cudalint.diagnostics import Finding
from cudalint.rule import Rule

from cudalint.parse import text
from cudalint.rules.sync._race_common import (clause, describe, line_ranges, metrics,
                                              races_for)


class MissingBlockBarrier(Rule):
    """## What it does
    Finds a `__shared__` write followed by a read of the same element by a thread of
    another warp (or a read followed by another warp's overwrite, including across loop
    iterations) with no `__syncthreads()` on the path between them: a block reduction
    whose loop lacks its barrier, a tiled stencil reading its halo right after loading
    the tile, a scan step that overwrites what a neighbour has not read yet. The block
    is executed symbolically (exact per-thread indices, branches, loops, device
    functions of the file); the message names the write, the read and two threads.

    When the races lie inside a device function written for one thread (it names no
    thread index, lane, barrier or warp intrinsic, and every argument is the same for
    all threads) that every thread calls on `__shared__` data, the finding is one, at
    the call, naming the racing lines inside it: the fix is there (let one thread run
    it, then `__syncthreads()`), not at each access (DROID-SLAM's `relSE3` call gave 21
    findings, one per access, before).

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
        calls: dict[tuple, list] = {}
        for node, races in races_for(ctx, self.code):
            sites = {r.site.id if r.site is not None else None for r in races}
            if None not in sites and len(sites) == 1:
                # reached inside a call of a one-thread device function that every
                # thread runs: one finding at the call, where the fix goes
                key = (races[0].site.id, races[0].kernel.instance)
                calls.setdefault(key, []).extend(races)
                continue
            race = races[0]
            _, _, example = describe(race, ctx)
            yield Finding.at(
                node,
                f"missing `__syncthreads()`: {clause(race, 'threads of other warps', ctx)} "
                f"with no block barrier between ({example})",
                metrics=metrics(race, len(races), ctx))
        for races in calls.values():
            yield call_finding(races, ctx)


def call_finding(races, ctx) -> Finding:
    """One finding at the kernel's call whose inlined body races across warps."""
    site = races[0].site
    # an overwrite of what other threads read first (a read-modify-write of shared data
    # by every thread breaks the result; a store of equal values does not), then the
    # earliest place
    race = min(races, key=lambda r: (r.first_write, r.second.start_byte,
                                     r.first.start_byte))
    _, _, example = describe(race, ctx)
    kernel = race.kernel.node
    inside = kernel.start_byte <= race.first.start_byte < kernel.end_byte
    fn = site.child_by_field_name("function")
    name = text(fn) if fn is not None else text(site)
    arrays = sorted({r.array.split("@")[0] for r in races})
    lines = sorted({ctx.line(n) for r in races for n in (r.first, r.second)
                    if not kernel.start_byte <= n.start_byte < kernel.end_byte})
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
    return Finding.at(
        site,
        f"missing `__syncthreads()`: {where}: {clause(race, 'threads of other warps', ctx)} "
        f"({example}); {len(races)} racing pair{'s' if len(races) != 1 else ''} at lines "
        f"{line_ranges(lines)} ({fix})",
        metrics=m)
