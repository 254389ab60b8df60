from cudalint.diagnostics import Finding
from cudalint.rule import Rule

from cudalint.rules.sync._race_common import clause, describe, metrics, races_for


class MissingBlockBarrier(Rule):
    """## What it does
    Finds a `__shared__` write followed by a read of the same element by a thread of
    another warp (or a read followed by another warp's overwrite, including across loop
    iterations) with no `__syncthreads()` on the path between them: a block reduction
    whose loop lacks its barrier, a tiled stencil reading its halo right after loading
    the tile, a scan step that overwrites what a neighbour has not read yet. The block
    is executed symbolically (exact per-thread indices, branches, loops, device
    functions of the file); the message names the write, the read and two threads.

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
        for node, races in races_for(ctx, self.code):
            race = races[0]
            _, _, example = describe(race, ctx)
            yield Finding.at(
                node,
                f"missing `__syncthreads()`: {clause(race, 'threads of other warps', ctx)} "
                f"with no block barrier between ({example})",
                metrics=metrics(race, len(races), ctx))
