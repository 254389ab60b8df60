from cudalint.diagnostics import Edit, Finding, Fix
from cudalint.rule import Rule

from ._race_common import clause, describe, metrics, races_for, statement_of


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
    The fix inserts `__syncwarp();` before the statement of the later access. It is
    unsafe: `__syncwarp()` with the full mask must be reached by every lane of the warp
    (not under `if (lane < 16)`), and a read and write in the same statement still need
    to be split by hand.

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.9 "Warp-synchronous Programming", in
      `shared/seeds/`
    - CUDA C++ Programming Guide, "Independent Thread Scheduling" and `__syncwarp()`
    - compute-sanitizer racecheck (measured on the fixtures: `fixtures/CL101/truth.json`)
    """
    code = "CL101"
    name = "warp-synchronous-shared-memory"
    severity = "warning"
    fix_safety = "unsafe"

    def check(self, ctx):
        fixed: set[int] = set()
        for node, races in races_for(ctx, self.code):
            race = races[0]
            _, _, example = describe(race)
            fix = None
            stmt = statement_of(race.second)
            first_stmt = statement_of(race.first)
            if stmt is not None and first_stmt is not None and stmt.id != first_stmt.id \
                    and stmt.id not in fixed:
                fixed.add(stmt.id)
                data = ctx.unit.data if isinstance(ctx.unit.data, bytes) else \
                    ctx.unit.data.encode()
                line_start = data.rfind(b"\n", 0, stmt.start_byte) + 1
                indent = data[line_start:stmt.start_byte]
                if indent.strip() == b"":
                    fix = Fix("Insert `__syncwarp();` between the two accesses",
                              (Edit(stmt.start_byte, stmt.start_byte,
                                    "__syncwarp();\n" + indent.decode()),), "unsafe")
            yield Finding.at(
                node,
                f"warp-synchronous shared memory: "
                f"{clause(race, 'another lane of the same warp')} with no `__syncwarp()` "
                f"between ({example}); `volatile` does not order lanes",
                metrics=metrics(race, len(races)), fix=fix)
