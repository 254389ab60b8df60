from cudalint.analysis.memory.local_index import LocalArrayIndexing
from cudalint.model.preproc import not_for_modern_cuda
from cudalint.diagnostics import Finding
from cudalint.rule import Rule


class LocalMemoryArray(Rule):
    """## What it does
    Finds per-thread arrays (declared inside a kernel or device function, not
    `__shared__`) that are indexed by a value not known at compile time, in a way that
    makes ptxas keep the array in local memory: a dynamic index inside a loop with a
    run-time trip count (or one kept rolled by `#pragma unroll 1`), many dynamic accesses
    after unrolling, or a dynamic access to an array of 512 bytes or more. Reports the
    element count and bytes of the array and what makes the index dynamic.

    A few dynamic accesses to a small array are left alone: nvcc turns them into selects
    over registers (measured with `ptxas -v` for sm_90, see `fixtures/CL204/`).

    ## Why is this bad?
    Registers cannot be indexed at run time, so such an array lives in the thread's
    stack frame in local memory: off-chip, shared with register spills in L1, and as slow
    as global memory when it misses the cache. Every access becomes a load or store.

    ## Example
    ```cuda
    __global__ void histo(const int* keys, int* out, int n)
    {
        int bins[32] = {0};
        for (int i = 0; i < n; ++i) bins[keys[i] & 31]++;   // index loaded from memory
        ...
    }
    ```

    ## Use instead
    ```cuda
    __global__ void histo(const int* keys, int* out, int n)
    {
        __shared__ int bins[32][256 + 1];                    // one column per thread
        for (int i = 0; i < n; ++i) bins[keys[i] & 31][threadIdx.x]++;
        ...
    }
    ```
    or make every index a constant (compile-time loop bounds and `#pragma unroll`), or
    exchange the values between lanes with `__shfl_sync` instead of indexing.

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.4.2 (local memory and stack data are
      cached in L1), in `shared/seeds/`
    - CUDA C++ Programming Guide, "Device Memory Accesses", local memory
    """
    code = "CL204"
    name = "local-memory-array"
    severity = "warning"

    def check(self, ctx):
        if not ctx.model.local_arrays:
            return
        for facts in ctx.analysis(LocalArrayIndexing).arrays:
            reason = facts.local_memory_reason()
            if reason is None:
                continue
            arr = facts.array
            first = min(facts.dynamic, key=lambda a: a.node.start_byte)   # in source order
            if not_for_modern_cuda(first.node, ctx):
                continue
            dims = "".join(f"[{d}]" for d in arr.dims)
            size = f"{facts.elements} elements, {facts.bytes} bytes" if facts.bytes \
                else f"{facts.elements} elements"
            where = {
                "loop": "inside a loop that is not unrolled",
                "many": f"{sum(a.repeat or 8 for a in facts.dynamic)} times after unrolling",
                "big": "in an array too big for registers",
            }[reason]
            yield Finding.at(
                first.node,
                f"per-thread array `{arr.name}` ({arr.elem_type}{dims}: {size}) is indexed "
                f"by {first.why} {where}, so it is placed in local memory; "
                f"{_remedy(first, facts)}",
                metrics={"array": arr.name, "elements": facts.elements,
                         "bytes": facts.bytes, "dynamic_accesses": len(facts.dynamic),
                         "reason": reason})


def _remedy(access, facts) -> str:
    if access.source == "counter":
        return "let the loop unroll (drop `#pragma unroll 1`) so every index is a constant"
    if access.source == "thread":
        return ("if the values belong to other lanes, exchange them with `__shfl_sync`; "
                "otherwise keep the array in shared memory, one slice per thread")
    return ("keep it in shared memory (one slice per thread, e.g. "
            f"`__shared__ {facts.array.elem_type} {facts.array.name}"
            f"[{facts.elements}][BLOCK + 1]` indexed [i][threadIdx.x]), or restructure so "
            "that every index is a compile-time constant (constant loop bounds, "
            "`#pragma unroll`)")
