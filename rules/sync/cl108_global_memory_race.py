from cudalint.analysis.memory.global_races import GlobalRaces, describe_threads
from cudalint.diagnostics import Finding
from cudalint.parse import text
from cudalint.rule import Rule


class GlobalMemoryRace(Rule):
    """## What it does
    Finds a store to global memory whose element another thread of the same launch
    reads or writes with nothing ordering the two: an in-place update that reads a
    neighbour (`A[idx] = A[idx + 1]`, `A[tid] += A[tid + offset]`), a block that reads
    the next block's range while that block overwrites it (an in-place block reduction
    storing each block's sum at `inout[blockIdx.x]`), two pointer parameters a launch
    passes the same buffer (`k<<<g, b>>>(d, d)`). The addresses are evaluated thread by
    thread (the lane engine, blocks 0 and 1). A pair of threads of one block is reported
    only in a kernel with no block barrier (with one, the block simulation decides); a
    pair of different blocks only for accesses outside loops, in a kernel with no
    grid-wide synchronisation, `__threadfence` or `volatile`, and not when every launch
    is a grid of one block. Not reported: atomics, an access under a condition that
    reads an atomic's result (the last thread to arrive), per-thread ranges that do not
    overlap, an element read and written by one thread, one store site run by several
    threads with plain `=` and stores of one constant (the values may agree). The
    threads that reach an access are those its guards let through: enclosing `if`
    and loop conditions, earlier `if (c) return;`, the condition of a conditional
    expression around it (`t < n ? c[i] : 0`) and the left side of `&&`/`||`; a
    condition whose one part reads memory still keeps its other parts (`t < n &&
    pad[b]` lets only threads below `n` through). With no launch in the project, a
    1-D kernel is taken at 256 threads, or at the width K its index is written for
    (`threadIdx.x + blockIdx.x * K`, K a constant, `blockDim.x` never read); (revised
    2026-11-24, sheet-newcorpus8 W9) when every launch passes its block size as a
    parameter too (`k<<<n, K>>>(u, K)`), at 32, 256 and 1024 threads with the parameter
    bound to each, a store reported only if it races at all three (faiss's
    `uterm[blockIdx.x * K + threadIdx.x]` does at none). A launch's `dim3` variable is
    the one declared in scope at the launch, not a same-named one of a sibling `{ }`
    block (W7: gpu4pyscf pcm.cu's 1-D block of 1024 was read as the sibling 32x32). An
    unknown parameter that multiplies the thread index (a row pitch) is taken at a
    large value (1024); one that shifts every address (`a[tid + offset]`) at 1, 37
    and 1024. Accesses in the device functions the kernel calls directly are evaluated
    at each call with the call's arguments (nvcc inlines them); deeper calls are not
    followed yet.

    ## Why is this bad?
    Threads of different blocks are not ordered within a launch, and threads of one
    block only by a barrier: the reader gets the old or the new value depending on
    scheduling, so the result changes from run to run or between GPUs.
    compute-sanitizer racecheck checks shared memory only and says nothing here; the
    fixtures' kernels, run twice on an H100 with opposite block orders and compared
    with a serial reference, give wrong elements (`fixtures/CL108/truth.json`).

    ## Example
    ```cuda
    __global__ void shift_left(float* a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n - 1) a[i] = a[i + 1];     // a[i + 1] may already be overwritten
    }
    ```

    ## Use instead
    ```cuda
    __global__ void shift_left(float* out, const float* in, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n - 1) out[i] = in[i + 1];  // out-of-place: read and write buffers differ
    }
    ```

    ## References
    - CUDA C++ Programming Guide, "Memory Consistency" and "Thread Hierarchy"
      (blocks execute independently, in any order)
    - GPUVerify test suite, `testsuite/CUDA/cooperative_groups/fail/race`,
      `misc/fail/miscfail3` (https://github.com/mc-imperial/gpuverify)
    """
    code = "CL108"
    name = "global-memory-race"
    severity = "error"

    def check(self, ctx):
        for race in ctx.analysis(GlobalRaces).items:
            first, second = describe_threads(race)
            what = "writes" if race.other_is_store else "reads"
            order = ("nothing orders threads of different blocks within a launch"
                     if race.blocks[0] != race.blocks[1] else
                     "no barrier orders them")
            if race.via is not None:
                # the store is in a device function: say which kernel's launch
                order += (f"; `{race.kernel.instance or race.kernel.name}` calls the "
                          f"device function at {ctx.place(race.via)}")
            yield Finding.at(
                race.store,
                f"global memory race: {first} stores `{text(race.store)}` and {second} "
                f"{what} the same element through `{text(race.other)}` "
                f"({ctx.place(race.other)}) in the same launch; {order} (write to a "
                f"separate output buffer, or split the update into two launches)",
                metrics={"kernel": race.kernel.name, "buffer": race.region,
                         "threads": list(race.threads), "blocks": list(race.blocks),
                         "byte": race.byte, "block": list(race.block)})
