"""CL205: the opt-in observation that a kernel pointer parameter is only read but not
declared `const __restrict__`, where CL203 has no measured effect to report."""
from __future__ import annotations

from cudalint.analysis.memory.pointer_access import PointerAccess
from cudalint.rule import Rule
from cudalint.rules.memory.cl203_read_only_missing_restrict import (
    _Lazy, _other_declared, candidates, plain_read_only, reported, read_only_finding)


class ReadOnlyNotRestrict(Rule):
    """## What it does
    Off by default. Finds `__global__` kernel pointer parameters whose memory the kernel
    only reads and that are not declared `const T* __restrict__`, where CL203 reports
    nothing: no reload, no kept store, a target of sm_70 or newer. A parameter counts as
    read-only only when every use of it and of every pointer derived from it (arithmetic,
    casts, `&p[i]`, local pointers and references, device functions it is passed to) is
    a load. Loads that are all warp-uniform or at constant indices are not reported.

    Why it is off by default: measured on an H100, `const __restrict__` turns such loads
    into `LDG.E.CONSTANT` (`fixtures/CL205/sass.json`) but changes the run time of a
    streaming kernel, a 1 MB-table gather and a 17-point stencil by 0.0% (ratios
    0.997-1.003, CUDA events, median of 35 runs): since Volta the read-only data path and
    L1 are one cache. On a sweep of twelve projects new to us, this observation was 71% to
    95% of all findings and 2 of 16 sampled helped. Teams that want every read-only
    pointer to say so (documentation, portability to older GPUs) select CL205. Where
    `__restrict__` does change what the kernel executes, CL203 reports it by default.

    ## Why is this bad?
    A pointer that is only read but not declared `const` lets a later edit write through
    it unnoticed, and without `__restrict__` the compiler must assume it may alias every
    other pointer. On sm_3x-sm_6x targets the loads also miss the read-only data cache
    (CL203 reports that there).

    ## Example
    ```cuda
    __global__ void scale(float* in, float* out, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = 2.0f * in[i];      // LDG.E
    }
    ```

    ## Use instead
    ```cuda
    __global__ void scale(const float* __restrict__ in, float* out, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = 2.0f * in[i];      // LDG.E.CONSTANT
    }
    ```

    ## Fix safety
    As CL203: `const` is safe when no other file can declare the kernel, `__restrict__`
    is unsafe (it asserts that no other pointer the kernel uses overlaps the data).

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.4.3 "Read-Only Data Cache",
      https://docs.nvidia.com/cuda/kepler-tuning-guide/
    - Volta Tuning Guide, 1.4.3.1 "Unified Shared Memory/L1/Texture Cache"
    """
    code = "CL205"
    name = "read-only-not-restrict"
    severity = "info"
    default_enabled = False
    fix_safety = "unsafe"

    def check(self, ctx):
        taken = {(k.node.id, a.param.name) for k, a, _, _ in reported(ctx)}
        by_kernel: dict[int, dict] = {}
        facts = ctx.analysis(PointerAccess)
        for kernel, acc in candidates(ctx):
            if (kernel.node.id, acc.param.name) in taken:
                continue
            by_name = by_kernel.setdefault(kernel.node.id, {
                a.param.name: a for a in facts.kernel_params(kernel)})
            if not plain_read_only(ctx, kernel, acc, by_name):
                continue
            yield read_only_finding(ctx, kernel, acc,
                                    _Lazy(lambda k=kernel: _other_declared(ctx, k)),
                                    opt_in=True)
