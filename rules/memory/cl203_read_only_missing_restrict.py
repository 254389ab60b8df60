"""CL203: a missing `__restrict__` that makes the kernel execute more memory instructions
(every target), and loads off the read-only data path (sm_3x-sm_6x targets only).

The candidate and message helpers here are shared with CL205 (the opt-in "only read,
not restrict" observation), which reports what this rule does not.
"""
from __future__ import annotations

import re

from cudalint.analysis.memory.alias_effects import AliasEffects
from cudalint.analysis.memory.figures import sectors
from cudalint.analysis.memory.lane_values import N_SAMPLES
from cudalint.analysis.memory.lanes import LaneAnalysis
from cudalint.analysis.memory.param_edits import const_edit, restrict_edit
from cudalint.analysis.memory.pointer_access import PointerAccess
from cudalint.model.preproc import not_for_modern_cuda
from cudalint.project.targets import BUILD_WHERE, target_archs
from cudalint.diagnostics import Finding, Fix
from cudalint.rule import Rule



class ReadOnlyMissingRestrict(Rule):
    """## What it does
    Finds kernel pointer parameters whose missing `__restrict__` makes the kernel execute
    memory instructions it would not execute with it, and says how many:

    - **reloads**: an element of a read-only parameter loaded again after a store through
      another pointer parameter (or a barrier) that may alias it.
      `o[2*i] = a[i]*2; o[2*i+1] = a[i]*3;` loads `a[i]` twice; with
      `const float* __restrict__ a` once. Reported at the read parameter.
    - **stores kept in a loop**: a store to an element that does not change in the loop,
      in a loop that also loads through another pointer parameter:
      `for (int j = 0; j < n; j++) o[i] += w[j] * x[j];` stores `o[i]` on every
      iteration; with `float* __restrict__ o` once, after the loop. Reported at the
      written parameter.
    - **split vector loads**: the fields of one element of a vector-typed read-only
      parameter (`float2`, `float4`, `int2`, `int4`, `uint2`, `uint4`, `double2`,
      `longlong2`, or a struct the file declares `__align__(8)`/`__align__(16)` whose
      fields are of one 4- or 8-byte type and fill it) loaded around a store that may
      write one of them: `o[i].x = a[i].y; o[i].y = a[i].x;` reads `a[i]` with 2 loads
      of 4 bytes; with `const float2* __restrict__ a` with one 8-byte load (and `o[i]`
      is then written with one 8-byte store instead of 2). Reported at the read
      parameter, with the loads and their widths as nvcc makes them: a store to a field
      of the same struct type blocks only that field (`o[i].x = a[i].x*2; o[i].y =
      a[i].y*2; ...` in field order is merged without `__restrict__`, and is not
      reported); a store through a `float*` or to a field of another struct type (an
      `int2` read, a `float2` written) blocks every field. Not reported when a
      barrier, an atomic or a call comes between the loads: nvcc merges none across
      those even with `__restrict__`. Loads of adjacent elements of a scalar array
      (`a[2*i]`, `a[2*i+1]` of a `float*`) are never merged, with or without
      `__restrict__`: the pointer is aligned to 4 bytes only.

    On targets older than Volta (an `arch` of sm_3x-sm_6x in the settings or, when the
    setting is not given, every `-arch`/`-gencode` of the build files that
    compile the file) it also reports every read-only parameter that is not
    `const __restrict__`: there the read-only data cache is separate from L1, and only a
    load the compiler can prove read-only (`LDG.E.CONSTANT`, `LDG.E.CI` before Volta) uses
    it.

    Never reported: parameters already `__restrict__`, parameters whose loads are all
    warp-uniform or at constant indices (a CuPy 0-d scalar `a_val[0]`, `p[blockIdx.x]`),
    loads through `__ldg()` and other cache-hint intrinsics, `volatile` data, and kernels
    that a launch in the file calls with the same buffer for both pointers (`in_place<<<g,
    b>>>(d, d, n)`: there `__restrict__` would be wrong).

    (Revised 2026-11-24, issue 20) A reload beside atomics is not a default finding when
    every one of its loads is coalesced (at the largest sample of the kernel's sizes, a
    warp's request touches at most one sector more than the ideal) and an atomic
    completes between its loads: `atomicAdd(gi + k, g[t] * w); atomicAdd(gp + k, g[t]);`
    (Pointcept's aggregation and subtraction backward, llm.c's encoder backward). CL205
    reports the parameter on request. Measured on an H100 (`tools/gputruth/not_worth.py`,
    `fixtures/CL203/not_worth.json`; 2^21 threads, CUDA events, median of 21): with
    `const __restrict__` such reloads saved -4.5% to +5.3% (median 0.2%) over 36 shapes
    (2, 3 or 4 atomics, per thread or in a 16-pass loop, distinct, contended or
    scattered targets, the element invariant or new each pass), while the same kernels
    reloading a gathered row (`g[idx[t] * c + t % c]`) saved 1.7% to 44% (median 18%):
    those stay reported, as do strided reloads (not measured) and reloads after plain
    stores only (`split` above: 1.22x).

    (Revised 2026-11-24, sheet-newcorpus8 N3) A reload whose loads run once per thread,
    outside every loop, is not a default finding when the kernel has a loop of its own
    (the reload is a one-off beside work repeated per iteration: TIGRE's ParticleKernel
    reloads two positions, then walks each proton's path voxel by voxel with histogram
    atomics) or when each of its loads is one address per warp under the launch's block
    (a broadcast: tomocupy's `takexy` reloads `theta[ty]`, ty from threadIdx.y of a 32x32
    block). The eighth triage judged all 6 such findings not worth acting on (their
    counts hold: SASS of analogs 14 -> 10 and 4 -> 3 LDG; one L1-hit request saved per
    thread or warp, an estimate far below 5%). Reloads in a loop stay reported, and so
    do per-thread reloads of a kernel whose work is those loads and stores (the measured
    `split` shape, 1.22x; kaolin's compactify_shadow_rays and HSOpticalFlow's
    JacobiIteration, judged right in sheets newcorpus2 and issue14). CL205 reports the
    parameter on request.

    (Revised 2026-11-25, sheet-newcorpus12 N2) A reload is not a default finding either
    when, after the store that forces it, loads through other pointers that are not
    `__restrict__` (read-only ones, or written ones other than the one stored) still wait
    for that store: `const __restrict__` on the named pointer then removes one L1 hit
    beside loads that stay. CCPi-Regularisation-Toolkit's `updBxBy2D` (`U[index]` again
    after the store to `Bx`, beside `Dy[index]` and `By[index]`) ran 0.98x-0.99x with `U`
    restricted and 0.95x-0.98x with every read pointer restricted on an H100
    (`bench/triage/issue20_worth.json`, group R, `tools/gputruth/issue20_worth.py`), where
    reloads that were the only loads left after the store gained: LEAP's ramp filter
    (`G[ind].x *= H[k]; G[ind].y *= H[k];`) 1.81x-2.02x in its 8x8x8 launch and
    1.13x-1.15x coalesced, optimum-quanto's 2-bit unpack (4 reloads of a byte) 1.05x; its
    4-bit unpack (2 reloads) gained 1.02x and stays reported, a measured exception.

    The plain observation "this parameter is only read but not `const __restrict__`" on
    sm_70 and newer is CL205, off by default: measured on an H100, `const __restrict__`
    turns the loads into `LDG.E.CONSTANT` but changes the run time of a streaming kernel,
    a 1 MB-table gather and a 17-point stencil by 0.0% (ratios 0.997-1.003), because
    since Volta the read-only path and L1 are one cache. A finding that promises a gain
    the hardware does not deliver teaches users to ignore the linter.

    ## Why is this bad?
    Without `__restrict__` the compiler must assume that a store through one pointer may
    change what another points to, so it loads again what it already holds in a register
    and writes back, on every iteration, a value it could keep. Measured with nvcc 13 for
    sm_90 on every fixture in `fixtures/CL203/` (SASS instruction counts before and after
    the fix in `fixtures/CL203/counts.json`): `a[i]` read around two stores 2 `LDG` -> 1,
    around three stores 3 -> 1, around a barrier 2 -> 1; `o[i] += w[j]*x[j]` over 5
    iterations 5 `STG` -> 1, and over a run-time trip count 29 `STG` (unrolled by 4) -> 1.
    Timed on an H100 (2^24 threads, median of 35 launches, CUDA events;
    `tools/gputruth/restrict_timing.py`, output in `fixtures/CL203/timing.json`), the
    fixed kernels ran 1.22x (two stores between loads), 1.81x (three), 1.21x (`int`
    stores), 1.43x (5 kept stores), 1.10x (kept stores, run-time loop) and 1.09x (four
    atomics) faster, with the same output; a reload across a barrier gained 1%. nvcc does
    no type-based alias analysis of scalars: a `float` load is repeated after an `int`
    store too; `__shared__` stores never force a reload. Split vector loads, measured the
    same way on `fixtures/CL203/vector_split.cu` (10 kernels): a `float2` swap 2 `LDG.E`
    -> 1 `LDG.E.64.CONSTANT`, a reversed `float4` 2 `LDG.E.64` -> 1 `LDG.E.128`, a
    rotated one 3 (4, 8 and 4 bytes) -> 1, a `float4` unpacked to a `float*` 4 -> 1,
    and the `STG` of the written vector 2 -> 1 or 3 -> 1; the 13 look-alikes of
    `fixtures/CL203/vector_look_alikes.cu` (field order, loads before the stores, the
    whole element, a struct without `__align__`, adjacent scalars, a barrier, an atomic
    or a call between the loads) execute the same `LDG` and `STG` with every read-only
    pointer `const __restrict__` (but the one a launch passes the output buffer, where
    `__restrict__` would be wrong). Timed on an H100 the same way
    (`tools/gputruth/restrict_timing.py --fixture vector`, output in
    `fixtures/CL203/vector_timing.json`), the 10 fixed kernels ran 1.14x to 1.17x
    faster on 2^24 elements (streamed from DRAM; 2.05x for the `float4` unpacked to a
    `float*`) and 1.02x to 1.29x on 2^18 (resident in L2; 1.59x unpacked), with the
    same output. On 1,600 random kernels of field loads and stores
    (`tools/gputruth/vector_split_fuzz.py`, nvcc's PTX as written and with
    `__restrict__`, `fixtures/CL203/vector_fuzz.json`) all 676 split-load findings
    state the loads and widths nvcc emits in both builds; 124 kernels where
    `__restrict__` removes loads are not reported (fields with a gap between them, and
    load orders for which nvcc's pairing is not predicted with certainty).

    ## Example
    ```cuda
    __global__ void split(const float* in, float* out, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            out[2 * i] = in[i] * 2.0f;         // LDG in[i]
            out[2 * i + 1] = in[i] * 3.0f;     // LDG in[i] again: out may alias it
        }
    }
    ```

    ```cuda
    __global__ void swap(float2* out, const float2* in, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            out[i].x = in[i].y;                // LDG in[i].y
            out[i].y = in[i].x;                // LDG in[i].x: out[i].x may be it
        }
    }
    ```

    ## Use instead
    ```cuda
    __global__ void split(const float* __restrict__ in, float* out, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            out[2 * i] = in[i] * 2.0f;         // one LDG, kept in a register
            out[2 * i + 1] = in[i] * 3.0f;
        }
    }
    ```

    ```cuda
    __global__ void swap(float2* out, const float2* __restrict__ in, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            out[i].x = in[i].y;                // one LDG.E.64 for in[i],
            out[i].y = in[i].x;                // one STG.E.64 for out[i]
        }
    }
    ```
    Loading the whole element first (`float2 v = in[i];`) gives the single vector load
    without `__restrict__`.

    ## Fix safety
    Adding `const` to a read parameter is safe when nothing else declares the kernel (a
    `static` or `extern "C"` kernel, a kernel string from Python): the analysis proved
    that nothing is written through it, and the fix also makes `const` the local
    pointers, references, casts and device-function parameters it flows into. With
    external C++ linkage `const` changes the mangled name: offered as unsafe. Adding
    `__restrict__` is always unsafe: it promises the compiler that, while the kernel
    runs, the memory is not also reached through another pointer. If the caller may pass
    overlapping buffers (`out == in` for an in-place call), the kernel may then compute
    with stale data. The message names the pointers that must not overlap.

    ## References
    - CUDA C++ Programming Guide, "__restrict__" (the reload example)
    - Tuning CUDA Applications for Kepler, 1.4.4.3 "Read-Only Data Cache"
      (`const __restrict__`, `__ldg()`),
      https://docs.nvidia.com/cuda/kepler-tuning-guide/
    - Volta Tuning Guide, 1.4.3.1 "Unified Shared Memory/L1/Texture Cache"
    - CUDA C++ Programming Guide, "Built-in Vector Types" (alignment of `float2`,
      `float4`, ...) and "Device Memory Accesses" (`__align__`, 8- and 16-byte accesses)
    - LLVM LoadStoreVectorizer, the pass that merges field loads into vector loads
      (nvcc's NVVM is built on LLVM),
      https://github.com/llvm/llvm-project/blob/main/llvm/lib/Transforms/Vectorize/LoadStoreVectorizer.cpp

    ## Precision on unseen code
    Precision on unseen code: 9/14 right, none wrong (2026-11-25, c7afdf7, the four new-project
    sheets 9-12 re-scored, 52 projects; docs/precision.md).
    Precision on unseen code: 4/16 right, none wrong (2026-11-24, a95f04b, 13 projects:
    reloads beside atomics measured -2%, a store kept in a loop -19%; docs/precision.md);
    earlier 1/3 (ea1e6f7), 0/1 (1d70d04). Since the coalesced reloads beside atomics are
    withheld (measured -4.5% to +5.3%): 10 findings on those 13 projects, the 6 withheld
    all judged not worth; of the 10, 4 right, 6 judged not worth by analogy before the
    gathered-reload measurement (4 gathered, 2 strided: see docs/precision.md)

    """
    code = "CL203"
    name = "read-only-missing-restrict"
    severity = "warning"
    fix_safety = "unsafe"

    def check(self, ctx):
        for kernel, acc, kind, info in reported(ctx):
            if kind == "reload":
                yield reload_finding(ctx, kernel, acc, info)
            elif kind == "split_load":
                yield split_load_finding(ctx, kernel, acc, info)
            elif kind == "kept_store":
                yield kept_store_finding(ctx, kernel, acc, info)
            else:
                yield read_only_finding(ctx, kernel, acc, _Lazy(
                    lambda k=kernel: _other_declared(ctx, k)), info)


def target_arch(ctx) -> tuple[int, str]:
    """(compute capability number, where it comes from): the lowest of the unit's targets
    (project/targets.py), reading only `-arch`/`-gencode` flags, and build files only
    where one names an sm_3x-sm_6x architecture (none other can make it pre-Volta)."""
    memo = getattr(ctx, "_cl203_arch", None)
    if memo is not None:
        return memo
    targets = target_archs(ctx.unit, ctx.settings, lists=False, mentions=_OLD_ARCH)
    # the read-only data path (non-coherent LDG) exists from sm_32 (PTX ISA ld.global.nc):
    # the lowest target that has it and is older than Volta decides; sm_30 alone has none
    with_path = [n for n in targets.numbers if 32 <= n < 70]
    low = min(with_path) if with_path else max(min(targets.numbers), 70)
    found = (low, f"the build files (sm_{low})" if targets.where == BUILD_WHERE
             else targets.where)
    try:
        ctx._cl203_arch = found
    except AttributeError:
        pass
    return found


_OLD_ARCH = re.compile(rb"(?:sm|compute)_[3-6]\d")


def pre_volta(ctx) -> bool:
    return target_arch(ctx)[0] < 70


def candidates(ctx):
    """(kernel, access) for every pointer parameter that CL203/CL205 may speak about."""
    kernels = [k for k in ctx.model.kernels
               if any(p.pointer_depth == 1 and not p.restrict for p in k.params)]
    if not kernels:
        return
    facts = ctx.analysis(PointerAccess)
    for kernel in kernels:
        if not_for_modern_cuda(kernel.node, ctx):
            continue
        for acc in facts.kernel_params(kernel):
            yield kernel, acc


def plain_read_only(ctx, kernel, acc, by_name) -> bool:
    """Read only, not restrict, loaded without cache hints, declared in the file, not
    volatile, not passed the same buffer as a written pointer, loads not warp-uniform."""
    p = acc.param
    if p.restrict or not acc.read_only:
        # `T* __restrict__` already gets LDG.E.CONSTANT from nvcc (measured)
        return False
    if acc.plain_loads != len(acc.loads):
        # some loads use __ldg(): measured, nvcc 13 then leaves the plain loads of
        # that pointer on LDG.E even with const __restrict__
        return False
    if "volatile" in ctx.text(p.node):
        return False
    if p.name_node is None or not ctx.unit.is_written(p.name_node.start_byte):
        # a parameter cudalint wrote for a snippet (an ElementwiseKernel `raw T x`)
        return False
    if _launched_in_place(ctx, kernel, acc, by_name):
        return False
    return not ctx.analysis(AliasEffects).uniform_loads(kernel, acc)


def reported(ctx):
    """What CL203 reports: (kernel, access, kind, info) with kind "reload" (info: the
    Reload), "split_load" (the SplitLoad), "kept_store" (the KeptStore) or "read_only"
    (pre-Volta; info: a Reload or None)."""
    effects = ctx.analysis(AliasEffects)
    by_kernel: dict[int, dict] = {}
    for kernel, acc in candidates(ctx):
        by_name = by_kernel.setdefault(kernel.node.id, {
            a.param.name: a for a in ctx.analysis(PointerAccess).kernel_params(kernel)})
        name = acc.param.name
        if acc.param.restrict:
            continue
        found = effects.kernel(kernel)
        if acc.read_only:
            if not plain_read_only(ctx, kernel, acc, by_name):
                continue
            reload = found.reloads.get(name)
            if pre_volta(ctx):
                yield kernel, acc, "read_only", reload
            elif reload is not None:
                if not beside_atomics(ctx, kernel, reload) and \
                        not once_beside_work(ctx, kernel, reload) and \
                        not other_loads_stay(reload, by_name):
                    yield kernel, acc, "reload", reload
            elif name in found.split_loads:
                yield kernel, acc, "split_load", found.split_loads[name]
        elif name in found.kept_stores:
            kept = found.kept_stores[name]
            if "volatile" in ctx.text(acc.param.node) or acc.param.name_node is None or \
                    not ctx.unit.is_written(acc.param.name_node.start_byte):
                continue
            if _same_buffer(ctx, kernel, name, kept.readers):
                continue
            yield kernel, acc, "kept_store", kept


def beside_atomics(ctx, kernel, reload) -> bool:
    """A reload that is no default finding: an atomic comes between its loads, no barrier
    does, and every one of its loads is coalesced (consecutive lanes read side by side).
    Measured on an H100 (fixtures/CL203/not_worth.json, tools/gputruth/not_worth.py):
    such reloads saved -4.5% to +5.3% with `const __restrict__` (median 0.2%, 36
    shapes: 2-4 atomics, per thread or in a loop, distinct, contended or scattered
    targets); a gathered reload (`g[idx[t] * c + t % c]`) saved 1.7% to 44% (median 18%)
    and stays reported, as do strided reloads (not measured) and reloads after plain
    stores only (`split`: 1.22x, fixtures/CL203/timing.json). CL205 reports the
    parameter on request."""
    first, last = reload.loads[0], reload.loads[-1]
    if "a barrier" in reload.aliasers or not any(
            first.end_byte <= end <= last.start_byte for end in _atomic_ends(kernel.node)):
        return False
    spans = {(a.node.start_byte, a.node.end_byte): a
             for a in ctx.analysis(LaneAnalysis).accesses if a.space == "global"}
    return all(_coalesced(spans.get((n.start_byte, n.end_byte))) for n in reload.loads)


def other_loads_stay(reload, by_name) -> bool:
    """A reload that is no default finding (sheet-newcorpus12 N2, CCPi-Regularisation-
    Toolkit's ``updBxBy2D``): after the first store that forces it, loads through other
    pointers that are not `__restrict__` (read-only ones, or written ones other than the
    forcing store's) still wait for that store, so `const __restrict__` on this pointer
    removes one L1 hit beside loads that stay. Measured on an H100
    (bench/triage/issue20_worth.json, group R, `upd_ccpi`): 0.98x-0.99x with the named
    pointer restricted, 0.95x-0.98x with every read pointer restricted; where the reload
    was the only load left after the store the fix ran 1.05x (`unpack2`), 1.13x-2.0x
    (LEAP's ramp filter) and 1.22x (`split`, fixtures/CL203/timing.json)."""
    first, last = reload.loads[0], reload.loads[-1]
    # the stores that force the reload: of an aliasing pointer, in a statement that ends
    # after the first load and starts before the last (`Bx[i] += U[i] ...;` then `U[i]`)
    forcing = [_statement(n) for name in reload.aliasers if name in by_name
               for n, _ in by_name[name].writes]
    forcing = [st for st in forcing
               if st.end_byte >= first.end_byte and st.start_byte < last.start_byte and
               not st.start_byte <= last.start_byte < st.end_byte]
    if not forcing:
        return False
    after = min(st.end_byte for st in forcing)
    end = _statement(last).end_byte
    first_store = min(forcing, key=lambda st: st.end_byte)
    stored = {name for name in reload.aliasers if name in by_name and any(
        first_store.start_byte <= n.start_byte < first_store.end_byte
        for n, _ in by_name[name].writes)}
    for name, acc in by_name.items():
        if name == reload.param or name in stored or acc.param.restrict:
            continue
        if any(after <= n.start_byte < end for n in acc.loads):
            return True
    return False


def _statement(node):
    """The statement around ``node``."""
    while node.parent is not None and not node.type.endswith("statement"):
        node = node.parent
    return node


def once_beside_work(ctx, kernel, reload) -> bool:
    """A reload that is no default finding (sheet-newcorpus8 N3): its loads run once per
    thread, outside every loop, and either the kernel has a loop of its own (the reload
    is a one-off beside work done per iteration: TIGRE's ParticleKernel reloads two
    positions, then walks each proton's path voxel by voxel with histogram atomics) or
    every one of its loads is a single address per warp under the launch's block (a
    broadcast L1 hit: tomocupy's `takexy` reads `theta[ty]`, ty from threadIdx.y of a
    32x32 block, around the store to `x`). One L1-hit request saved per thread or
    warp: the eighth triage judged all 6 such findings not worth acting on (SASS of
    analogs: 14 -> 10 and 4 -> 3 LDG; gains estimated far below 5%). Kept: reloads in a
    loop, and per-thread reloads of kernels whose whole work is those loads and stores
    (the measured `split` shape, 1.22x on an H100, fixtures/CL203/timing.json; kaolin's
    compactify_shadow_rays and HSOpticalFlow's JacobiIteration, judged right)."""
    if reload.in_loop or kernel.body is None:
        return False
    if any(_LOOP_TYPES & {n.type} for n in _walk(kernel.body)):
        return True
    spans = {(a.node.start_byte, a.node.end_byte): a
             for a in ctx.analysis(LaneAnalysis).accesses if a.space == "global"}
    return all(_one_address_per_warp(spans.get((n.start_byte, n.end_byte)))
               for n in reload.loads)


_LOOP_TYPES = {"for_statement", "for_range_loop", "while_statement", "do_statement"}


def _walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def _one_address_per_warp(access) -> bool:
    """Every warp of every sample reads one address (its active lanes agree). No lane
    figure (an unknown block shape): not shown."""
    if access is None or not access.groups:
        return False
    rows = [r for r in access.groups if r.count(None) != len(r)]
    return bool(rows) and all(len({v for v in r if v is not None}) == 1 for r in rows)


def _atomic_ends(node) -> list[int]:
    """Where the atomic calls of a kernel complete (the end of `atomicAdd(...)`, whose
    operands are loaded before it)."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.type == "call_expression":
            fn = n.child_by_field_name("function")
            name = fn.text.decode("utf-8", "replace") if fn is not None else ""
            if name.rsplit("::", 1)[-1].startswith(("atomic", "__nv_atomic")):
                out.append(n.end_byte)
        stack.extend(n.children)
    return out


def _coalesced(access) -> bool:
    """Every warp's request touches at most one sector more than the ideal, at the
    largest sample of the kernel's unknowns (sizes such as a channel count: at the
    sample 1 an index `n * c + k` walks rows). No lane figure (an index read from
    memory, an unknown block shape): not shown coalesced."""
    if access is None:
        return False
    nw = len(access.groups) // N_SAMPLES
    rows = [r for r in access.groups[(N_SAMPLES - 1) * nw:] if r.count(None) != len(r)]
    return bool(rows) and all(sectors(r, access.width) <= access.ideal_sectors + 1
                              for r in rows)


def _other_declared(ctx, kernel) -> bool:
    return ctx.analysis(PointerAccess).has_other_declarations(kernel) or \
        _explicitly_instantiated(ctx.unit.data, kernel.name,
                                 _Lazy(lambda: _template_statements(ctx.unit.data)))


def _overlap(acc, by_name) -> list[str]:
    base = _bare_type(acc.param.base_type)
    return [a.param.name for a in by_name.values() if a is not acc and
            a.status in ("written", "unknown") and _bare_type(a.param.base_type) == base]


def reload_finding(ctx, kernel, acc, reload):
    p = acc.param
    per = "per loop iteration" if reload.in_loop else "per thread"
    stores = [n for n in reload.aliasers if n != "a barrier"]
    because = " and ".join(f"`{n}`" for n in stores) + \
        (" may alias it" if stores else "")
    if "a barrier" in reload.aliasers:
        because += (" and " if stores else "") + "a barrier comes between the loads"
    msg = (f"`{reload.key}` is loaded {reload.count} times {per} instead of 1 because "
           f"{because}: declare `{p.name}` `{_want(p)}` so the compiler keeps it in a "
           "register")
    msg += _overlap_note(p.name, stores or _overlap(acc, _by_name(ctx, kernel)))
    fix = _param_fix(ctx, kernel, acc)
    restrict = restrict_edit(p, ctx.unit.data)
    if restrict is not None:
        # const alone changes no load (measured): the fix is const and __restrict__
        edits = (fix.edits if fix is not None and "const" in fix.message else ()) + \
            (restrict,)
        what = "`const __restrict__`" if len(edits) > 1 else "`__restrict__`"
        fix = Fix(f"Add {what} to `{p.name}` (asserts that no other pointer the kernel "
                  "uses overlaps it)", tuple(sorted(edits, key=lambda e: e.start)), "unsafe")
    return Finding.at(p.node, msg, fix=fix, metrics={
        "kind": "reload", "element": reload.key, "loads": reload.count, "loads_fixed": 1,
        "aliased_by": stores, "arch": f"sm_{target_arch(ctx)[0]}"})


def split_load_finding(ctx, kernel, acc, split):
    p = acc.param
    per = "per loop iteration" if split.in_loop else "per thread"
    stores = split.aliasers
    because = "stores through " + " and ".join(f"`{n}`" for n in stores) + " may alias it"
    if split.fixed == 1:
        fixed = f"one {split.fixed_sizes[0]}-byte load"
    else:
        fixed = f"{split.fixed} loads ({_bytes(split.fixed_sizes)})"
    msg = (f"`{split.key}` is read with {split.count} loads ({_bytes(split.sizes)}) {per} "
           f"instead of {fixed} because {because}: declare `{p.name}` `{_want(p)}` so the "
           "compiler can merge them")
    msg += _overlap_note(p.name, stores or _overlap(acc, _by_name(ctx, kernel)))
    fix = _param_fix(ctx, kernel, acc)
    restrict = restrict_edit(p, ctx.unit.data)
    if restrict is not None:
        edits = (fix.edits if fix is not None and "const" in fix.message else ()) + \
            (restrict,)
        what = "`const __restrict__`" if len(edits) > 1 else "`__restrict__`"
        fix = Fix(f"Add {what} to `{p.name}` (asserts that no other pointer the kernel "
                  "uses overlaps it)", tuple(sorted(edits, key=lambda e: e.start)), "unsafe")
    return Finding.at(p.node, msg, fix=fix, metrics={
        "kind": "split_load", "element": split.key, "type": split.type_name,
        "loads": split.count, "load_bytes": split.sizes, "loads_fixed": split.fixed,
        "load_bytes_fixed": split.fixed_sizes, "aliased_by": stores,
        "arch": f"sm_{target_arch(ctx)[0]}"})


def _bytes(sizes: list[int]) -> str:
    """'4 bytes each' or '8, 4 and 4 bytes'."""
    if len(set(sizes)) == 1:
        return f"{sizes[0]} bytes each" if len(sizes) > 1 else f"{sizes[0]} bytes"
    return ", ".join(str(s) for s in sizes[:-1]) + f" and {sizes[-1]} bytes"


def kept_store_finding(ctx, kernel, acc, kept):
    p = acc.param
    readers = ", ".join(f"`{n}`" for n in kept.readers)
    loop = f"the loop over `{kept.counter}`" if kept.counter else "the loop"
    times = f"{kept.trip} times per thread" if kept.trip else "once per iteration"
    every = readers if len(kept.readers) == 1 else f"every one of {readers}"
    verb = "overlaps" if len(kept.readers) == 1 else "overlap"
    msg = (f"`{kept.key}` is stored {times} in {loop} instead of once after it, because "
           f"loads through {readers} may read it: declare `{p.name}` `__restrict__` "
           f"(or {every} `const __restrict__`) so the compiler keeps it in a register "
           f"(`__restrict__` promises that {readers} never {verb} `{p.name}`)")
    edit = restrict_edit(p, ctx.unit.data)
    fix = Fix(f"Add `__restrict__` to `{p.name}` (asserts that no other pointer the kernel "
              "uses overlaps it)", (edit,), "unsafe") if edit is not None else None
    return Finding.at(p.node, msg, fix=fix, metrics={
        "kind": "kept_store", "element": kept.key, "stores": kept.trip,
        "stores_fixed": 1, "readers": kept.readers, "arch": f"sm_{target_arch(ctx)[0]}"})


def read_only_finding(ctx, kernel, acc, other_declared, reload=None, opt_in=False):
    """The read-only-path finding (CL203 on pre-Volta targets, CL205 on request)."""
    p = acc.param
    declared = " ".join(ctx.text(p.node).split())
    loads = len({(n.start_byte, n.end_byte) for n in acc.loads})
    want = _want(p)
    if opt_in:
        msg = (f"`{p.name}` is only read by kernel `{kernel.name}` but is declared "
               f"`{declared}`: `{want}` would state it (its {loads} "
               f"load{'s' if loads != 1 else ''} would become `LDG.E.CONSTANT`; on sm_70 "
               "and newer that changes no run time measured)")
    else:
        msg = (f"`{p.name}` is only read by kernel `{kernel.name}` but is declared "
               f"`{declared}`: add `{want}` so its {loads} load{'s' if loads != 1 else ''} "
               f"can use the read-only data cache of {_arch_text(ctx)}")
        if reload is not None:
            msg += (f"; `{reload.key}` is also loaded {reload.count} times instead of 1 "
                    "because of possible aliasing")
    msg += _overlap_note(p.name, _overlap(acc, _by_name(ctx, kernel)))
    fix = _param_fix(ctx, kernel, acc, other_declared)
    if fix is None and acc.const_blocker and not p.pointee_const:
        msg += f" (adding `const` needs more: {acc.const_blocker})"
    return Finding.at(
        p.node, msg, fix=fix,
        metrics={"loads": loads, "const": p.pointee_const, "restrict": p.restrict,
                 "must_not_overlap": _overlap(acc, _by_name(ctx, kernel))})


def _arch_text(ctx) -> str:
    number, where = target_arch(ctx)
    return f"sm_{number} (target from {where})"


def _by_name(ctx, kernel) -> dict:
    return {a.param.name: a for a in ctx.analysis(PointerAccess).kernel_params(kernel)}


def _want(p) -> str:
    want = "const" if not p.pointee_const else ""
    return want + (" " if want else "") + "__restrict__"


def _overlap_note(name: str, others: list[str]) -> str:
    if others:
        names = ", ".join(f"`{n}`" for n in others)
        return (f" (`__restrict__` promises that `{name}` never overlaps {names}; if it "
                "may, leave it out)")
    return " (`__restrict__` promises no other pointer reaches its data)"


def _param_fix(ctx, kernel, acc, other_declared=None):
    """`const` (+ the derived edits) when possible, else `__restrict__` alone; both are
    applied with --unsafe-fixes (const first, then restrict on a second pass)."""
    p = acc.param
    if other_declared is None:
        other_declared = _Lazy(lambda: _other_declared(ctx, kernel))
    blocker = acc.const_blocker
    if blocker is None and not p.pointee_const and other_declared():
        blocker = f"`{kernel.name}` is declared or instantiated elsewhere too"
    if blocker is None and not p.pointee_const and \
            ctx.analysis(PointerAccess).address_taken(kernel):
        blocker = f"the address of `{kernel.name}` is taken with its current type"
    if not p.pointee_const and blocker is None:
        edit = const_edit(p)
        if edit is not None:
            derived = f" (and to {', '.join(f'`{d}`' for d in acc.derived)})" \
                if acc.const_edits and acc.derived else ""
            private = _signature_is_private(ctx, kernel)
            return Fix(f"Add `const` to `{p.name}`{derived}" + (
                "" if private else " (changes the C++ signature of "
                f"`{kernel.name}`: update any declaration of it in other files)"),
                (edit, *sorted(set(acc.const_edits), key=lambda e: e.start)),
                "safe" if private else "unsafe")
    if not p.restrict:
        edit = restrict_edit(p, ctx.unit.data)
        if edit is not None:
            return Fix(f"Add `__restrict__` to `{p.name}` (asserts that no other pointer "
                       "the kernel uses overlaps it)", (edit,), "unsafe")
    return None


def _signature_is_private(ctx, kernel) -> bool:
    """Can no other file hold a declaration that the `const` fix would stop matching?

    True for kernels compiled from a Python string (one module per string), with C
    linkage (`extern "C"`: the name does not encode the parameter types), or with
    internal linkage (`static`, an unnamed namespace). A kernel with external C++ linkage
    may be declared in a header or another .cu file: adding `const` changes its mangled
    name, and such a declaration would then fail to link.
    """
    if getattr(ctx.unit, "embedded", None) is not None:
        return True
    node = kernel.node
    for child in node.children:
        if child.type == "storage_class_specifier" and ctx.text(child) == "static":
            return True
    parent = node.parent
    while parent is not None:
        if parent.type == "linkage_specification":
            return True
        if parent.type == "namespace_definition" and \
                parent.child_by_field_name("name") is None:
            return True
        parent = parent.parent
    return False


def _bare_type(t: str) -> str:
    return " ".join(w for w in t.replace("*", " ").split()
                    if w not in ("const", "volatile", "__restrict__", "struct"))


class _Lazy:
    """A value computed on first call (most kernels never need it)."""

    def __init__(self, compute):
        self._compute = compute
        self._done = False
        self._value = None

    def __call__(self):
        if not self._done:
            self._value, self._done = self._compute(), True
        return self._value


_TEMPLATE = re.compile(rb"\btemplate\s")


def _template_statements(data: bytes) -> list[bytes]:
    """The text after each ``template`` keyword up to the first ``;``, ``{`` or ``}``,
    where that is a ``;`` (explicit instantiations and declarations)."""
    if b"template" not in data:
        return []
    out = []
    stop = re.compile(rb"[;{}]")
    end = -1                        # the first ;{} after the previous keyword (reused)
    for m in _TEMPLATE.finditer(data):
        if end < m.end():
            found = stop.search(data, m.end())
            end = found.start() if found is not None else len(data)
        if end < len(data) and data[end] == ord(";"):
            out.append(data[m.end():end])
    return out


def _explicitly_instantiated(data: bytes, name: str, templates) -> bool:
    r"""``template ... name<...>...;`` (the same as searching
    ``\btemplate\s+[^;{}]*\bname\s*<[^;{}]*;`` in the unit, without its backtracking)."""
    statements = templates()
    if not statements:
        return False
    pat = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*<")
    return any(pat.search(st) for st in statements)


def _launched_in_place(ctx, kernel, acc, by_name) -> bool:
    """Does a launch in this unit pass the same buffer for this pointer and for one the
    kernel writes (`merge<<<g, b>>>(dst, dst, n)`)? Then neither `__restrict__` nor
    `__ldg()` is valid for that launch: the data changes while the kernel runs."""
    written = [name for name, a in by_name.items() if a.status == "written"]
    return _same_buffer(ctx, kernel, acc.param.name, written)


def _same_buffer(ctx, kernel, name: str, others: list[str]) -> bool:
    """Does a launch in this unit pass the same argument text for parameter `name` and
    for one of `others`?"""
    index = {p.name: i for i, p in enumerate(kernel.params)}
    if name not in index or not any(o in index for o in others):
        return False
    mine = index[name]
    theirs = [index[o] for o in others if o in index]
    for texts in ctx.analysis(_LaunchArgs).of(kernel.name, len(kernel.params)):
        if any(texts[i] == texts[mine] for i in theirs):
            return True
    return False


class _LaunchArgs:
    """The argument texts (blanks removed) of the unit's launches, by kernel name and
    argument count, each list once: asked for each pointer of each kernel, and a unit
    of n clones of one kernel and its launch read n x n launches (fuzz seed 29)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._by: dict[tuple[str, int], list[tuple[str, ...]]] | None = None

    def of(self, kernel: str, count: int) -> list[tuple[str, ...]]:
        if self._by is None:
            self._by = {}
            seen: set[tuple] = set()
            for launch in self.ctx.model.launches:
                args = launch.node.child_by_field_name("arguments")
                if args is None:
                    continue
                texts = tuple("".join(self.ctx.text(a).split())
                              for a in args.named_children if a.type != "comment")
                key = (launch.kernel, len(texts))
                if (key, texts) not in seen:
                    seen.add((key, texts))
                    self._by.setdefault(key, []).append(texts)
        return self._by.get((kernel, count), [])
