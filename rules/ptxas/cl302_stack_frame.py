from cudalint.analysis.ptxas.ptxas_run import ptxas_facts
from cudalint.diagnostics import Finding
from cudalint.rule import Rule


class StackFrame(Rule):
    """## What it does
    Reports a kernel or device function that ptxas gives a stack frame (`N bytes stack
    frame` in `ptxas -v` output) without any register spills: per-thread arrays indexed
    at run time, structures whose address is taken, recursion, or calls that were not
    inlined. The finding sits at the function's definition and names the instantiation
    and the frame size, and the function's local arrays when it has some.

    Frames that come from spilling are CL301's. The ptxas facts come from a log
    (`--ptxas-log`) or from cudalint compiling the unit (`--ptxas`); without them the
    rule says nothing.

    ## Why is this bad?
    The stack frame is in local memory: off-chip, cached in L1/L2, and as slow as global
    memory when it misses. An array that is only ever indexed with constants (fully
    unrolled loops) stays in registers instead.

    ## Example
    ```cuda
    __global__ void local_table(const float* a, float* out, int k)
    {
        float t[32];
        for (int i = 0; i < 32; ++i) t[(i * k) & 31] += a[i];   // index known at run time
        out[threadIdx.x] = t[threadIdx.x & 31];
    }
    ```

    ## Use instead
    ```cuda
    __global__ void unrolled_table(const float* a, float* out)
    {
        float t[8];
    #pragma unroll
        for (int i = 0; i < 8; ++i) t[i] = a[i * blockDim.x + threadIdx.x];   // constant indices
        ...
    }
    ```
    or keep the table in shared memory, one slice per thread.

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.4.2 (L1 cache serves local memory: spills
      and stack data), https://docs.nvidia.com/cuda/kepler-tuning-guide/
    - CUDA C++ Programming Guide, "Device Memory Accesses", local memory
    """
    code = "CL302"
    name = "stack-frame"
    severity = "warning"

    def check(self, ctx):
        facts = ctx.analysis(ptxas_facts)
        if not facts.by_function:
            return
        arrays_of: dict[int, list] = {}
        for arr in ctx.model.local_arrays:
            if arr.function is not None:
                arrays_of.setdefault(arr.function.node.id, []).append(arr)
        for fn in ctx.model.device_functions:
            for rec in facts.for_function(fn):
                frame = rec.stack_frame or 0
                if frame <= 0 or (rec.spill_stores or 0) > 0 or (rec.spill_loads or 0) > 0:
                    continue
                arrays = arrays_of.get(fn.node.id, [])
                what = ""
                if arrays:
                    names = ", ".join(f"`{a.name}`" for a in arrays[:3])
                    what = (f"; its local array{'s' if len(arrays) > 1 else ''} {names} "
                            "cannot stay in registers when indexed at run time")
                yield Finding.at(
                    fn.name_node,
                    f"`{rec.display_name}` has a {frame}-byte stack frame in local memory "
                    f"on {facts.arch} without spilling{what} (or it calls non-inlined "
                    "functions, recurses, or takes a local's address)",
                    metrics={"stack_frame_bytes": frame, "registers": rec.registers,
                             "spill_store_bytes": rec.spill_stores or 0,
                             "spill_load_bytes": rec.spill_loads or 0,
                             "arch": facts.arch, "instantiation": rec.display_name})
