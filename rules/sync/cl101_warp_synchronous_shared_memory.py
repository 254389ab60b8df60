from cudalint.diagnostics import Edit, Finding, Fix
from cudalint.rule import Rule

from cudalint.rules.sync._race_common import (clause, describe, exchange_fix, line_ranges,
                                              metrics, relocated, warp_exchanges)


class WarpSynchronousSharedMemory(Rule):
    """## What it does
    Finds a `__shared__` element that one lane of a warp writes and another lane of the
    same warp then reads (or reads and then another lane overwrites) with no
    `__syncwarp()`, `__syncthreads()` or cooperative-groups tile `sync()` between them:
    the classic "warp-synchronous" final steps of a reduction or scan,
    `if (tid < 32) { s[tid] += s[tid + 16]; s[tid] += s[tid + 8]; ... }`. The kernel's
    block is executed symbolically (exact per-thread indices, branches, loops) and the
    message names the write, the read and one pair of lanes that race.

    ## Why is this bad?
    Lanes of a warp are not guaranteed to run in lock-step: since Volta they are
    scheduled independently, and the compiler is free to keep shared values in
    registers or reorder accesses when nothing orders them. `volatile` only stops the
    compiler from caching the value; it does not make one lane's store visible to
    another before its load. Without a barrier this is a data race; compute-sanitizer
    racecheck reports it as a hazard.

    ## Example
    ```cuda
    if (tid < 32) {
        volatile float* v = s;
        v[tid] += v[tid + 16];
        v[tid] += v[tid + 8];     // reads what lane tid+8 wrote on the previous line
    }
    ```

    ## Use instead
    ```cuda
    if (tid < 32) {
        float v = s[tid];
        for (int offset = 16; offset > 0; offset /= 2)
            v += __shfl_down_sync(0xffffffff, v, offset);
    }
    ```
    or keep shared memory and separate every read from the next write with
    `__syncwarp()` (`v = s[tid] + s[tid + 16]; __syncwarp(); s[tid] = v; __syncwarp();`).

    ## Fix safety
    One finding per exchange: the races of one kernel on one array within one stretch of
    code without a barrier (the five steps of an unrolled reduction are one finding,
    located at the first racing step; its message and `steps`/`lines` metrics count
    them). The fix rewrites every step that reads another lane's element and writes its
    own in the same statement (`s[tid] += s[tid + 16];`, also under an `if` whose
    condition has no side effects) into read, `__syncwarp()`, store
    (`auto s_step1 = s[tid] + s[tid + 16]; __syncwarp(); s[tid] = s_step1;`) and inserts
    `__syncwarp();` before every step that reads what an earlier step wrote. It is
    unsafe: `__syncwarp()` with the full mask must be reached by every lane of the warp
    that has not exited. No fix is offered when a step has another form, or when a
    `__syncwarp()` would land where part of a warp may not arrive: under a condition that
    splits warps (`if (threadIdx.x > i)`, `if (lane < 16)`; `if (tid < 32)` keeps whole
    warps), or after a `break`/`continue` some lanes take; the finding stays.

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.9 "Warp-synchronous Programming",
      https://docs.nvidia.com/cuda/kepler-tuning-guide/
    - CUDA C++ Programming Guide, "Independent Thread Scheduling" and `__syncwarp()`
    - compute-sanitizer racecheck (measured on the fixtures: `fixtures/CL101/truth.json`)
    """
    code = "CL101"
    name = "warp-synchronous-shared-memory"
    severity = "warning"
    fix_safety = "unsafe"

    def check(self, ctx):
        taken: dict[int, set[str]] = {}
        for ex in warp_exchanges(ctx):
            race = ex.race
            _, _, example = describe(race, ctx)
            fix = None
            names = taken.setdefault(race.kernel.node.id, set())
            found = exchange_fix(ctx, ex, names)
            if found is not None:
                what, edits = found
                fix = Fix(what, tuple(Edit(a, b, c) for a, b, c in edits), "unsafe")
            arr = race.array.split("@")[0]
            lines = ex.lines(ctx)
            if len(ex.steps) > 1:
                at = f" (lines {line_ranges(lines)})" if lines else ""
                lead = (f"{len(ex.steps)} steps{at} exchange "
                        f"`{arr}` between lanes of a warp with no `__syncwarp()`: "
                        f"{clause(race, 'another lane of the same warp', ctx)} ({example})")
            else:
                lead = (f"{clause(race, 'another lane of the same warp', ctx)} with no "
                        f"`__syncwarp()` between ({example})")
            m = metrics(race, len(ex.races), ctx)
            m["steps"] = len(ex.steps)
            m["lines"] = lines
            found = relocated(ctx, Finding.at(
                race.second,
                f"warp-synchronous shared memory: {lead}; `volatile` does not order lanes",
                metrics=m, fix=fix), race)
            if found is not None:
                yield found
