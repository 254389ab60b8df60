from cudalint.analysis.memory.local_index import LocalArrayIndexing
from cudalint.analysis.ptxas.ptxas_run import ptxas_facts
from cudalint.model.preproc import not_for_modern_cuda
from cudalint.diagnostics import Finding
from cudalint.rule import Rule


class LocalMemoryArray(Rule):
    """## What it does
    Finds per-thread arrays (declared inside a kernel or device function, not
    `__shared__`) that are indexed by a value not known at compile time, in a way that
    makes ptxas keep the array in local memory. Reports the element count and bytes of
    the array and what makes the index dynamic. The index is followed through local
    variables (however many times they are assigned), casts, masks and arithmetic
    (`int c = labels[k] & 31; counts[c] += 1;`).

    Where the line lies was measured with `ptxas -v` for sm_90 on arrays from 16 bytes
    to 4 KB indexed by constants, unrolled and run-time loop counters, thread indices,
    parameters and data (`tools/gputruth/local_array_sweep.py`, 117 kernels, results in
    `fixtures/CL204/sweep.json`). ptxas gives the array a stack frame for:

    - an index from data, a thread index or a parameter inside a loop with a run-time
      trip count (or `#pragma unroll 1`): from 8 elements (32 bytes; 4 elements stay in
      registers), or from 4 records of 32 bytes;
    - the counter of a loop with a run-time trip count (`float q[150]; for (i = 0; i <
      n; i++) q[i] = ...`): from 32 elements (up to 16, nvcc bounds the loop by the
      array and unrolls it);
    - the counter of a constant loop of 256 iterations or more without `#pragma unroll`;
    - any dynamic index into an array of 1-, 2- or 8-byte elements (`unsigned char`,
      `short`, `double`) at every size measured: only 32-bit words are selected among
      registers (`const unsigned char t[256] = {...}; t[cubeindex]`);
    - any dynamic index into a table of constants from 32 elements (16 and 24 stay);
    - 8 or more dynamic accesses after unrolling, from 16 elements;
    - one dynamic access to an array of 32-bit words of 512 bytes or more. Below that,
      one or two such accesses compile to selects over registers: the old "under 512
      bytes is small" rule holds for this shape only.

    Never reported: constant indices, counters of fully unrolled loops, and indices read
    from a local table of constants at such counters (`int tbl[8] = {...}; for (int i =
    0; i < 8; i++) val[tbl[i]] = ...;` folds to constants). With `--ptxas` (or
    `--ptxas-log`), each finding in a function ptxas reports on is confirmed by its stack
    frame (named in the message) or dropped when the frame is empty.

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
      cached in L1), https://docs.nvidia.com/cuda/kepler-tuning-guide/
    - CUDA C++ Programming Guide, "Device Memory Accesses", local memory

    ## Precision on unseen code
    Precision on unseen code: 3/4 right (2026-11-24, 1d70d04; docs/precision.md)

    """
    code = "CL204"
    name = "local-memory-array"
    severity = "warning"

    def check(self, ctx):
        if not ctx.model.local_arrays:
            return
        ptx = ctx.settings.ptxas
        compiled = ctx.analysis(ptxas_facts) if ptx.enabled or ptx.log else None
        for facts in ctx.analysis(LocalArrayIndexing).arrays:
            reason = facts.local_memory_reason()
            if reason is None:
                continue
            arr = facts.array
            frame = None
            if compiled is not None and compiled.by_function and arr.function is not None:
                records = compiled.for_function(arr.function)
                if records:
                    # ptxas has the last word: no stack frame, no local memory
                    frame = max(r.stack_frame or 0 for r in records)
                    if frame == 0:
                        continue
            first = min(facts.dynamic, key=lambda a: a.node.start_byte)   # in source order
            if not_for_modern_cuda(first.node, ctx):
                continue
            dims = "".join(f"[{d}]" for d in arr.dims)
            size = f"{facts.elements} elements, {facts.bytes} bytes" if facts.bytes \
                else f"{facts.elements} elements"
            if reason == "counter":
                first = min((a for a in facts.dynamic if a.source == "runtime_counter"),
                            key=lambda a: a.node.start_byte)
            where = {
                "loop": "inside a loop that is not unrolled",
                "counter": "(nvcc unrolls such a loop by the array's bound only up to 16 "
                           "elements)",
                "type": f"and its `{arr.elem_type}` elements are not 32-bit words, which "
                        "ptxas never selects among registers",
                "table": "and it is a table of constants of 32 elements or more",
                "many": f"{sum(a.repeat or 8 for a in facts.dynamic)} times after unrolling",
                "big": "in an array too big for registers",
            }[reason]
            confirmed = f" (ptxas: {frame}-byte stack frame on {compiled.arch})" \
                if frame else ""
            metrics = {"array": arr.name, "elements": facts.elements,
                       "bytes": facts.bytes, "dynamic_accesses": len(facts.dynamic),
                       "reason": reason}
            if frame:
                metrics["stack_frame_bytes"] = frame
            yield Finding.at(
                first.node,
                f"per-thread array `{arr.name}` ({arr.elem_type}{dims}: {size}) is indexed "
                f"by {first.why} {where}, so it is placed in local memory{confirmed}; "
                f"{_remedy(first, facts)}",
                metrics=metrics)


def _remedy(access, facts) -> str:
    if access.source == "runtime_counter":
        return ("give the loop a compile-time bound (e.g. `for (i = 0; i < N; ++i) if "
                "(i < n) ...` under `#pragma unroll`) so every index is a constant, or keep "
                "the array in shared memory")
    if facts.constant_table:
        return ("move the table to `__constant__` memory (a broadcast when lanes read the "
                "same entry) or to shared memory")
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
