from cudalint.analysis.sync.skipped_barriers import SkippedBarriers, pre_volta
from cudalint.diagnostics import Finding
from cudalint.rule import Rule
from cudalint.rules.sync._race_common import instance_mentions


class BarrierSkippedByExitingThreads(Rule):
    """## What it does
    Off by default (strict). Finds block barriers (`__syncthreads()` and its variants,
    `bar.sync 0`, `block.sync()`, `cg::sync(block)`) that some threads of the block skip
    under a thread-dependent condition and that CL103 does not report because the
    skipping threads are not shown to wait at another barrier: `if (i >= n) return;`
    before a tile barrier, a barrier under `if (tid < 64)` whose other threads finish
    the kernel, a block-strided loop with a barrier whose leavers then exit. Select it
    for code that must follow the letter of the Programming Guide (every thread of the
    block reaches every `__syncthreads()`), or that may run on pre-Volta GPUs (there,
    with the `arch` setting sm_30 to sm_62, CL103 reports these itself). Also grid
    barriers (`this_grid().sync()`, `sync(grid)`) that part of a block skips.

    ## Why is this bad?
    Since Volta it is not: a barrier "will not succeed until reached by all non-exited
    threads", so threads that exit release it. Measured on an H100
    (`fixtures/CL106/truth.json`): the skip-then-exit kernels run to completion with
    compute-sanitizer synccheck and racecheck silent, and `if (i >= n) return;` before a
    tile barrier gave 0 wrong elements of 20,000. The Programming Guide still
    writes that `__syncthreads()` in conditional code must be reached by all threads,
    and before Volta a barrier counted exited threads as missing. The code is also one
    edit away from CL103: a barrier added after the branch makes the skipping threads
    wait there, and the kernel breaks or hangs.

    A grid barrier skipped by part of a block is worse than it looks on the GPU.
    Measured on an H100 (`fixtures/CL106/grid_sync.truth.json`, cooperative launches of
    4 blocks): one whose odd threads skip `g.sync()` and one whose thread 0 of every
    block skips it both complete, synccheck silent. But in cooperative groups
    (`cooperative_groups/details/sync.h`) thread 0 of each block is the one that adds
    the block to the grid's counter in global memory and waits for the others: a block
    whose thread 0 skips the barrier is never counted. When every block's thread 0
    skips it, no block waits and the barrier orders nothing across blocks (the second
    launch above: it completes, unsynchronized); when only some do, the blocks that
    arrive wait for the others forever.

    ## Example
    ```cuda
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;               // the last block's tail exits
    tile[threadIdx.x] = in[i];
    __syncthreads();
    out[i] = tile[threadIdx.x ^ 1];
    ```

    ## Use instead
    ```cuda
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[i] : 0.f;
    __syncthreads();                  // every thread arrives
    if (i < n) out[i] = tile[threadIdx.x ^ 1];
    ```

    ## References
    - CUDA C++ Programming Guide, "Synchronization Functions" and "Independent Thread
      Scheduling"
    - compute-sanitizer synccheck and racecheck (measured on the fixtures:
      `fixtures/CL106/truth.json`)
    """
    code = "CL106"
    name = "barrier-skipped-by-exiting-threads"
    severity = "warning"
    default_enabled = False

    def check(self, ctx):
        old_gpu = pre_volta(ctx.settings.arch)
        for b in ctx.analysis(SkippedBarriers).items:
            if b.grid:
                for inst in instance_mentions(ctx, b.fn):
                    yield Finding.at(
                        b.node,
                        f"grid barrier skipped by part of a block: `{b.spelling}` "
                        f"{b.why}{inst}; every thread of the grid must reach a grid "
                        f"barrier: cooperative groups count a block when its thread 0 "
                        f"arrives, so a block whose thread 0 skips it is not counted (the "
                        f"barrier then orders nothing across blocks, or the other blocks "
                        f"wait for that one forever) (move the barrier out of the "
                        f"thread-dependent code)",
                        metrics={"barrier": b.spelling,
                                 "kernel": b.fn.name if b.fn.is_kernel else None,
                                 "function": b.fn.name})
                continue
            if old_gpu or b.meets is not None:
                continue    # before Volta CL103 reports every skipped block barrier
            for inst in instance_mentions(ctx, b.fn):
                yield Finding.at(
                    b.node,
                    f"barrier skipped by exiting threads: `{b.spelling}` {b.why}{inst}; no "
                    f"other barrier is seen on the skipping threads' path (defined since "
                    f"Volta, whose barriers wait only for threads that have not exited; the "
                    f"Programming Guide asks every thread of the block to reach it)",
                    metrics={"barrier": b.spelling,
                             "kernel": b.fn.name if b.fn.is_kernel else None,
                             "function": b.fn.name})
