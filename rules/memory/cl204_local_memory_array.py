from cudalint.analysis.memory.local_index import LocalArrayIndexing
from cudalint.analysis.memory.local_room import MAX_REGISTERS, function_block, \
    registers_for
from cudalint.analysis.memory.local_staging import stages_loaded_data
from cudalint.analysis.ptxas.occupancy import limits_for
from cudalint.analysis.ptxas.ptxas_run import ptxas_facts
from cudalint.model.launch_shape import MAX_THREADS_PER_BLOCK
from cudalint.model.preproc import not_for_modern_cuda
from cudalint.diagnostics import Finding
from cudalint.project.targets import target_archs
from cudalint.rule import Rule

KB = 1024
STATIC_SHARED = 48 * KB          # per block without opt-in, every architecture
# With the block unknown, shared memory is advised only if at least this many threads'
# copies fit one block. Set from the H100 record fixtures/CL204/shared_cutoff.json
# (tools/gputruth/worth_acting.py, tests/test_cl204_shared_cutoff.py): the smallest
# threads-fitting count at and above which every measured array size ran at least 5%
# faster in shared slices than in local memory, for a data-dependent index and for a
# run-time loop counter (local time / shared time). 4 KB per thread (56 fit): 15.7x and
# 2.19x; 8 KB (28): the counter loop 0.75x (shared slower). The 128 used before was
# never measured (2 KB, 113 fit: 34x and 4.2x).
MIN_SHARED_THREADS = 56
# indices that no unrolling makes a constant
_HARD = ("memory", "running")


class LocalMemoryArray(Rule):
    """## What it does
    Finds per-thread arrays (declared inside a kernel or device function, not
    `__shared__`) that are indexed by a value not known at compile time, in a way that
    makes ptxas keep the array in local memory. Reports the element count and bytes of
    the array and what makes the index dynamic. The index is followed through local
    variables (however many times they are assigned), casts, masks and arithmetic
    (`int c = labels[k] & 31; counts[c] += 1;`), and through `++`, `+=`, `|=` in loops:
    a local changed under a condition on data or a data-dependent number of times takes
    a data-dependent value (`cubeindex |= 1 << k` under `if (vol[...] < iso)`, then
    `num_verts[cubeindex]`: ptxas gives it a 256-byte frame).

    Where the line lies was measured with `ptxas -v` for sm_90 on arrays from 16 bytes
    to 4 KB indexed by constants, unrolled and run-time loop counters, running counts,
    thread indices, parameters and data (`tools/gputruth/local_array_sweep.py`, 126
    kernels, results in `fixtures/CL204/sweep.json`). ptxas gives the array a stack
    frame for:

    - an index from data, a thread index or a parameter inside a loop with a run-time
      trip count (or `#pragma unroll 1`): from 8 elements (32 bytes; 4 elements stay in
      registers), or from 4 records of 32 bytes;
    - the counter of a loop with a run-time trip count (`float q[150]; for (i = 0; i <
      n; i++) q[i] = ...`), or a local stepped once per iteration of such a loop: from
      32 elements (up to 16, nvcc bounds the loop by the array and unrolls it);
    - a running count that advances by a data-dependent amount (stepped under a
      condition, or in an inner loop of run-time length: `if (v > t) keep[m++] = v;`):
      from 16 elements (8 stay in registers);
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
    0; i < 8; i++) val[tbl[i]] = ...;` folds to constants). (Revised 2026-11-24, issue 20:
    sheet-newcorpus8 W6) A loop with a compile-time bound is unrolled whatever a
    data-dependent `break` in it does, and its counter is the name the condition bounds
    even when the loop steps another local beside it (`for (int n = 0, i = threadIdx.x;
    n < 8; ++n, i += blockDim.x) { if (i >= nf) break; v[n] += ...; }`): ptxas -v (nvcc
    13, sm_90) gives that kernel, and the same loop without `#pragma unroll`, a 0-byte
    frame, and a 256-byte one when the bound is a parameter (fixtures/CL204/
    unrolled_break.cu, stack.json; gpu4pyscf's md_contract_j.cu was said to keep
    `vj_ij` in local memory, where its 432-byte frame is register spills). With `--ptxas` (or
    `--ptxas-log`), each finding in a function ptxas reports on is confirmed by its stack
    frame (named in the message) or dropped when the frame is empty.

    The advice names only remedies that exist for the array:

    - **Constant indices** (a compile-time loop bound under `#pragma unroll`, letting a
      `#pragma unroll 1` loop unroll, a template parameter for a kernel parameter) only
      when every dynamic index is a loop counter or a parameter. An index loaded from
      memory or a running count that advances by a data-dependent amount is said to be
      beyond any unrolling.
    - **Registers**: a thread has at most 255 32-bit registers, so an array of more than
      1020 bytes cannot be held in registers whatever its index; the message says so and
      offers no unrolling. Measured with ptxas -v (sm_90): `float w[512]` filled at a
      run-time counter has a 2048-byte frame, and filled under `#pragma unroll` with a
      compile-time bound, all 512 values live, it has 255 registers and 1548 bytes of
      spills; the same bound on `float q[244]` leaves no frame and no spill. Below the
      limit, the message gives the registers the array would take when they are more
      than 64.
    - **Shared memory**, one slice per thread, only when the array's bytes times the
      threads of the block fit: 48 KB of static shared memory, or the target's opt-in
      maximum with dynamic shared memory (227 KB on sm_90, 99 KB on sm_86/89, 64 KB on
      sm_75; the lowest of the build's targets). The block is the kernel's launch, or for
      a device function the one block of the kernels of the unit that call it. With the
      block unknown, the message gives the most threads per block that fit, and offers
      nothing when fewer than 56 do. (Revised 2026-11-24, issue 20) That cutoff is
      measured (H100, `tools/gputruth/worth_acting.py` -> `fixtures/CL204/shared_cutoff.json`):
      a per-thread array of 256 B to 8 KB in local memory (ptxas -v: a stack frame of its
      size) against one slice per thread in dynamic shared memory, at the block keeping
      the most threads per SM. A data-dependent index (a histogram) ran 4.5x to 96x
      faster in shared memory at every size; a run-time loop counter (fill, four passes)
      4.1x at 256 B, 4.2x at 2 KB (113 threads fit), 2.19x at 4 KB (56 fit) and 0.75x
      (shared slower) at 8 KB (28 fit). The cutoff is the smallest count at and above
      which both shapes gain 5% or more; the 128 used before ("under 4 warps per SM")
      was never measured and withheld the advice from 2 KB and 4 KB arrays that ran
      2.19x to 34x faster with it. A table of constants needs one copy per block: `__constant__` memory or shared memory.
    - (Revised 2026-11-25, issue 20: sheet-newcorpus12 W1) A per-thread histogram whose
      counts the block only adds together (every write counts, `h[k] += 1`, or clears,
      at least one at an index loaded from memory; every other read in a loop of warp
      shuffles or atomics: fastmoe's expert count) needs one copy per block: the message
      names one shared histogram per block updated with shared-memory atomics, where it
      said that one copy per thread does not fit. Measured on an H100
      (`bench/triage/issue20_worth.json`, group H, `tools/gputruth/issue20_worth.py`):
      fastmoe's 256 bins per thread against one shared histogram per block, 64 and 2,048
      experts, 2^16 and 2^20 tokens, ran 1.63x to 2.72x faster with the same counts.
    - Otherwise the message says that the local-memory traffic stays and that holding
      fewer elements per thread is what cuts it. (Revised 2026-11-24, issue 20:
      sheet-newcorpus8 N1) Such a finding is reported by default only where the array
      carries the data the thread loads: inside a loop, an index loaded in the same pass
      (a histogram), or a store whose value reads memory in the same pass (`weight[k] =
      scale * (w_tmp - zero)`, `w_tmp` read from `mat` in the loop;
      `analysis/memory/local_staging.py`).
      There every loaded value costs local accesses, and consuming the data in chunks
      where it is loaded removes them: DeepSpeed's fake quantizer, group max then
      quantize from a float4[128] buffer, ran 13% and 22% faster reading the group again
      (H100, bench/triage/gpu/results-newcorpus2/layers.json, sheet-newcorpus2 #31), and
      AutoGPTQ's act-order `weight[256]` was judged right (sheet-newcorpus8 #93-#96). An
      array of values the thread computes itself (the indices of a scan's hits copied
      out once, octree flags, recurrence coefficients) offers nothing to act on: the
      eighth triage judged all 8 such findings not worth it (SoftGroup bfs_cluster and
      octree_ball_query, gpu4pyscf contract_Et's 5400-byte frames; #97-#104), as the
      earlier sheets did pointnet2-style ball queries and mmcv's convex hull `Stack`
      (sheet-newcorpus3 #66-#67, sheet-issue14 #18). Those stay silent
      (fixtures/CL204/no_remedy.cuh: ptxas -v gives all three kernels a frame, 4000,
      2400 and 1088 bytes, no_remedy.json; only the staging one is reported). The
      rule has no user setting to report them (tests set `report_without_remedy`).

    `metrics` give the remedy offered (`remedy`: `unroll`, `template`, `shuffle`,
    `constant`, `block_histogram`, `shared`, `restructure`, joined by `+`), the registers the array would
    take and the block's threads when known.

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
        __shared__ int bins[32][256];       // one column per thread, 256-thread blocks
        for (int i = 0; i < n; ++i) bins[keys[i] & 31][threadIdx.x]++;
        ...
    }
    ```
    (32 ints x 256 threads = 32 KB of the 48 KB a block has), or make every index a
    constant (compile-time loop bounds and `#pragma unroll`) where the index is a loop
    counter, or exchange the values between lanes with `__shfl_sync` instead of indexing.

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.4.2 (local memory and stack data are
      cached in L1), https://docs.nvidia.com/cuda/kepler-tuning-guide/
    - CUDA C++ Programming Guide, "Device Memory Accesses", local memory; "Technical
      Specifications per Compute Capability" (255 registers per thread, 48 KB of static
      shared memory per block, the opt-in maximum per architecture)

    ## Precision on unseen code
    Precision on unseen code: 14/17 right, none wrong (2026-11-25, c7afdf7, the four new-project
    sheets 9-12 re-scored, 52 projects; docs/precision.md).
    Precision on unseen code: 0/2 right, none wrong (2026-11-24, a95f04b, 13 projects: 4 KB
    staging arrays beside an O(n) scan; docs/precision.md); earlier 3/3 (ea1e6f7), 3/4
    (1d70d04)

    """
    code = "CL204"
    name = "local-memory-array"
    severity = "warning"

    # findings whose only remedy is to hold less, for an array of values the thread
    # computes itself (tests of the analysis; not a user setting)
    report_without_remedy = False

    def check(self, ctx):
        if not ctx.model.local_arrays:
            return
        ptx = ctx.settings.ptxas
        compiled = ctx.analysis(ptxas_facts) if ptx.enabled or ptx.log else None
        indexing = ctx.analysis(LocalArrayIndexing)
        for facts in indexing.arrays:
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
            if reason in ("counter", "running"):
                kinds = ("running",) if reason == "running" else \
                    ("runtime_counter", "induction", "running")
                first = min((a for a in facts.dynamic if a.source in kinds),
                            key=lambda a: a.node.start_byte)
            where = {
                "counter": "(nvcc unrolls such a loop by the array's bound only up to 16 "
                           "elements)" if first.source != "running" else "",
                "running": "",
                "loop": "inside a loop that is not unrolled",
                "type": f"and its `{arr.elem_type}` elements are not 32-bit words, which "
                        "ptxas never selects among registers",
                "table": "and it is a table of constants of 32 elements or more",
                "many": f"{sum(a.repeat or 8 for a in facts.dynamic)} times after unrolling",
                "big": "in an array too big for registers",
            }[reason]
            confirmed = f" (ptxas: {frame}-byte stack frame on {compiled.arch})" \
                if frame else ""
            room = _Room(ctx, facts)
            advice, remedy = _advice(first, facts, room)
            if remedy == "restructure" and not self.report_without_remedy and \
                    not stages_loaded_data(indexing, facts):
                continue                # no home, and no loaded data to consume in chunks
            metrics = {"array": arr.name, "elements": facts.elements,
                       "bytes": facts.bytes, "dynamic_accesses": len(facts.dynamic),
                       "reason": reason, "remedy": remedy}
            if room.registers is not None:
                metrics["registers"] = room.registers
            if room.block is not None:
                metrics["block_threads"] = room.block.threads
            if frame:
                metrics["stack_frame_bytes"] = frame
            yield Finding.at(
                first.node,
                f"per-thread array `{arr.name}` ({arr.elem_type}{dims}: {size}) is indexed "
                f"by {first.why}{' ' + where if where else ''}, so it is placed in local "
                f"memory{confirmed}; {advice}",
                metrics=metrics)


class _Room:
    """The numbers the advice rests on: registers the array would take, the block it
    runs with, and the shared memory a block may have on the unit's targets."""

    def __init__(self, ctx, facts):
        self.facts = facts
        self.registers = registers_for(facts.bytes)
        fn = facts.array.function
        self.block = function_block(ctx, fn) if fn is not None else None
        numbers = target_archs(ctx.unit, ctx.settings).numbers
        limits = [lim for lim in (limits_for(f"sm_{n}") for n in numbers) if lim]
        tight = min(limits, key=lambda lim: lim.smem_per_block_optin) if limits else \
            limits_for("sm_90")
        self.arch = tight.arch
        self.dynamic_shared = max(tight.smem_per_block_optin, STATIC_SHARED)

    @property
    def fits_registers(self) -> bool | None:
        return None if self.registers is None else self.registers <= MAX_REGISTERS

    def threads_fitting(self, limit: int) -> int | None:
        """Threads per block whose per-thread copies fit ``limit`` bytes."""
        b = self.facts.bytes
        return None if not b else limit // b


def _kb(n: int) -> str:
    return f"{n // KB} KB" if n % KB == 0 else f"{n / KB:.1f} KB"


def _advice(first, facts, room: _Room) -> tuple[str, str]:
    """The advice that holds for this array, and its kind for the metrics: "unroll",
    "template", "shuffle", "constant", "shared", "restructure" (joined by "+")."""
    arr = facts.array
    kinds = {a.source for a in facts.dynamic}
    hard = next((a for a in sorted(facts.dynamic, key=lambda a: a.node.start_byte)
                 if a.source in _HARD), None)
    parts: list[str] = []
    remedies: list[str] = []

    # 1. can every index become a compile-time constant, and would the array then fit
    # the registers?
    if room.fits_registers is False:
        parts.append(f"at {facts.bytes} bytes ({room.registers} 32-bit registers; a "
                     f"thread has at most {MAX_REGISTERS}) the array cannot be held in "
                     "registers whatever its index (constant indices turn its local "
                     "loads into spills)")
    elif hard is not None:
        name = hard.why.split("`")[1] if hard.why.startswith("`") else None
        if hard.source == "running":
            parts.append(f"no unrolling makes `{name}` a compile-time constant")
        else:
            parts.append(f"{'`' + name + '`' if name else 'the index'} comes from memory, "
                         "which no unrolling makes a compile-time constant")
    else:
        cost = f" (the array would take {room.registers} of the {MAX_REGISTERS} "                "registers a thread has)" if room.registers and room.registers > 64 else ""
        if kinds <= {"runtime_counter", "induction", "counter", "parameter"}:
            steps = []
            if kinds & {"runtime_counter", "induction"}:
                steps.append("give the loop a compile-time bound (e.g. `for (i = 0; i < N; "
                             "++i) if (i < n) ...` under `#pragma unroll`)")
                remedies.append("unroll")
            if "counter" in kinds:
                steps.append("let the loop unroll (`#pragma unroll`, not `#pragma unroll "
                             "1`)")
                remedies.append("unroll")
            if "parameter" in kinds:
                steps.append("make the parameter a compile-time constant (a template "
                             "parameter)")
                remedies.append("template")
            parts.append(" and ".join(steps) + " so every index is a constant" + cost)
        elif "thread" in kinds and not facts.constant_table:
            parts.append("if the values belong to other lanes, exchange them with "
                         "`__shfl_sync` instead of indexing")
            remedies.append("shuffle")

    # 2. a table of constants: one copy for everybody; counts the block only adds
    # together: one histogram per block; other arrays: one copy per thread
    hist = _block_histogram(facts)
    if hist is not None:
        parts.append(hist)
        remedies.append("block_histogram")
    elif facts.constant_table:
        parts.append("move the table to `__constant__` memory (one copy for the grid; a "
                     "broadcast when the lanes of a warp read the same entry)" +
                     (f" or to shared memory (one {facts.bytes}-byte copy per block)"
                      if facts.bytes and facts.bytes <= STATIC_SHARED else ""))
        remedies.append("constant")
    else:
        shared = _shared(facts, room)
        if shared:
            parts.append(("or " if remedies else "") + shared)
            remedies.append("shared")
        elif facts.bytes:
            parts.append(_no_shared(facts, room))

    # 3. nothing left but to hold less
    if not remedies:
        parts.append("the local-memory traffic stays what it is (the stack frame is cached "
                     "in L1); to cut it, hold fewer elements per thread (split a thread's "
                     "work across threads, or process the array in chunks)")
        remedies.append("restructure")
    return "; ".join(parts), "+".join(dict.fromkeys(remedies))


def _shared(facts, room: _Room) -> str | None:
    """One copy per thread in shared memory, when it fits the block (None: it does not,
    or the block or the size is unknown and no block worth having fits)."""
    arr = facts.array
    b = facts.bytes
    if not b:
        return ("keep it in shared memory, one slice per thread, if its bytes times "
                f"the threads of a block fit in {_kb(STATIC_SHARED)}")
    decl = f"`__shared__ {arr.elem_type} {arr.name}[{facts.elements}][BLOCK]` indexed "            "[i][threadIdx.x]"
    if room.block is not None:
        need = b * room.block.threads
        if need <= STATIC_SHARED:
            return (f"keep it in shared memory, one slice per thread ({decl}: {b} bytes "
                    f"x {room.block.threads} threads = {_kb(need)} of the "
                    f"{_kb(STATIC_SHARED)} a block has, {room.block.describe()})")
        if need <= room.dynamic_shared:
            return (f"keep it in dynamic shared memory, one slice per thread ({b} bytes "
                    f"x {room.block.threads} threads = {_kb(need)}, {room.block.describe()}: "
                    f"above the {_kb(STATIC_SHARED)} of static shared memory, so opt in "
                    "with cudaFuncSetAttribute(..., "
                    "cudaFuncAttributeMaxDynamicSharedMemorySize, ...); at most "
                    f"{_kb(room.dynamic_shared)} per block on {room.arch})")
        return None
    static_n = room.threads_fitting(STATIC_SHARED)
    dynamic_n = room.threads_fitting(room.dynamic_shared)
    if dynamic_n is None or dynamic_n < MIN_SHARED_THREADS:
        return None
    if static_n >= MAX_THREADS_PER_BLOCK:
        return (f"keep it in shared memory, one slice per thread ({decl}: {b} bytes x "
                f"{MAX_THREADS_PER_BLOCK} threads at most = "
                f"{_kb(b * MAX_THREADS_PER_BLOCK)}, within the {_kb(STATIC_SHARED)} of "
                "static shared memory for any block)")
    if static_n >= MIN_SHARED_THREADS:
        more = f"up to {dynamic_n} threads" if dynamic_n < MAX_THREADS_PER_BLOCK else \
            "any block"
        return (f"keep it in shared memory, one slice per thread ({decl}), for blocks "
                f"of at most {static_n} threads ({b} bytes each in the "
                f"{_kb(STATIC_SHARED)} of static shared memory; {more} with dynamic "
                f"shared memory on {room.arch})")
    fits = f"for blocks of at most {dynamic_n} threads" if dynamic_n < \
        MAX_THREADS_PER_BLOCK else "for any block"
    return (f"keep it in dynamic shared memory, one slice per thread, {fits} ({b} bytes "
            f"each: {_kb(room.dynamic_shared)} per block on {room.arch}, opted in with "
            "cudaFuncSetAttribute)")


def _no_shared(facts, room: _Room) -> str:
    """Why shared memory is no way out for this array."""
    b = facts.bytes
    if room.block is not None:
        need = b * room.block.threads
        return (f"shared memory is no way out: one copy per thread takes {b} bytes x "
                f"{room.block.threads} threads = {_kb(need)} ({room.block.describe()}), "
                f"more than the {_kb(room.dynamic_shared)} a block can have on {room.arch}")
    n = room.threads_fitting(room.dynamic_shared) or 0
    return (f"shared memory is no way out: one {b}-byte copy per thread fits the "
            f"{_kb(room.dynamic_shared)} a block can have on {room.arch} only for blocks "
            f"of at most {n} threads")


_UPDATES = ("+=", "-=")
_COMBINE = ("atomicAdd", "__shfl")


def _block_histogram(facts) -> str | None:
    """The advice for a per-thread histogram that the block only adds together (fastmoe's
    expert count, sheet-newcorpus12 W1): every write counts (`h[k] += 1`, `++h[k]`) or
    clears (`= 0`), at least one at an index loaded from memory, and every other read
    sits in a loop that combines threads (`__shfl*_sync`, `atomicAdd`). One histogram per
    block in shared memory, updated with shared-memory atomics, replaces the copies:
    measured on an H100, bench/triage/issue20_worth.json group H. None: not that shape,
    or the histogram does not fit a block's static shared memory."""
    arr = facts.array
    if not facts.bytes or facts.bytes > STATIC_SHARED or facts.escapes:
        return None
    counted_from_memory = False
    for a in facts.accesses:
        node, up = a.node, a.node.parent
        while up is not None and up.type == "parenthesized_expression":
            node, up = up, up.parent
        if up is None:
            return None
        if up.type == "update_expression" or (
                up.type == "assignment_expression" and
                up.child_by_field_name("left") is not None and
                up.child_by_field_name("left").id == node.id):
            op = up.child_by_field_name("operator")
            op = op.text.decode() if op is not None else ""
            if up.type == "update_expression" or op in _UPDATES:
                counted_from_memory |= a.kind == "dynamic" and a.source == "memory"
                continue
            right = up.child_by_field_name("right")
            if op == "=" and right is not None and right.text.strip() in (b"0", b"0.f",
                                                                          b"0.0f", b"0.0"):
                continue
            return None
        if a.is_store:
            return None
        loop = up
        while loop is not None and loop.type not in ("for_statement", "while_statement",
                                                     "do_statement", "function_definition"):
            loop = loop.parent
        if loop is None or loop.type == "function_definition" or \
                not any(w.encode() in loop.text for w in _COMBINE):
            return None
    if not counted_from_memory:
        return None
    dims = "".join(f"[{d}]" for d in arr.dims)
    return (f"its counts are only added together across the block: keep one histogram "
            f"per block in shared memory (`__shared__ {arr.elem_type} {arr.name}{dims};`, "
            f"{facts.bytes} bytes, cleared once), count with shared-memory atomics "
            f"(`atomicAdd(&{arr.name}[...], 1)`) and add it to global memory once per "
            f"block after a `__syncthreads()`")
