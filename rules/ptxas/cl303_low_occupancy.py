from cudalint.analysis.ptxas.occupancy import limits_for, occupancy, registers_for_next_step
from cudalint.analysis.ptxas.ptxas_run import ptxas_facts
from cudalint.model.consteval import eval_int
from cudalint.model.launch_shape import checked_block, launch_bounds_threads
from cudalint.diagnostics import Finding
from cudalint.rule import Rule


def _pct(x: float) -> str:
    return f"{round(x * 100, 1):g}%"


def _block_sizes(ctx, fn) -> list[tuple[int, int | None, str]]:
    """(threads per block, dynamic smem or None if unknown, where from), best source first:
    resolved launch sites (CUDA or the embedding Python call), __launch_bounds__, the
    configured block-size. Empty when unknown."""
    out: list[tuple[int, int | None, str]] = []
    for launch in ctx.model.launches:
        if launch.kernel != fn.name or launch.block is None:
            continue
        dims = checked_block(launch.block)   # a shape no GPU runs: CL601's, not ours
        if dims is None:
            continue
        smem: int | None = 0
        if len(launch.config) > 2:
            env = launch.function.constants if launch.function is not None \
                else ctx.model.constants
            smem = eval_int(ctx.text(launch.config[2]), env)
        out.append((dims[0] * dims[1] * dims[2], smem, "launch"))
    emb = getattr(ctx.unit, "embedded", None)
    for launch in getattr(emb, "launches", None) or []:
        name = getattr(launch, "kernel", None) or getattr(launch, "name", None)
        block = getattr(launch, "block", None)
        if name not in (None, fn.name) or not block:
            continue
        dims = checked_block(block)
        if dims is None:
            continue
        smem = getattr(launch, "shared_mem", getattr(launch, "smem", 0))
        out.append((dims[0] * dims[1] * dims[2], smem if isinstance(smem, int) else None,
                    "launch"))
    if out:
        return out
    bound = launch_bounds_threads(fn)
    if bound is not None:
        return [(bound, 0, "__launch_bounds__")]
    configured = checked_block(ctx.settings.block_size) if ctx.settings.block_size else None
    if configured is not None:
        return [(configured[0] * configured[1] * configured[2], 0, "block-size setting")]
    return []


class LowOccupancy(Rule):
    """## What it does
    Computes a kernel's theoretical occupancy (active warps per SM over the maximum) on
    the target architecture from what ptxas reports (registers per thread, static shared
    memory, barriers) and the block size it is launched with, and reports kernels below
    `occupancy-threshold` (default 50%) because of registers or shared memory. The
    message names the limiting resource and what would lift occupancy one step, e.g.
    "occupancy 37.5% (24 of 64 warps/SM), limited by registers: 72 per thread at 256
    threads/block; 64 registers would give 50%".

    The block size comes from the kernel's launch sites (`<<<grid, block>>>` resolved to
    a constant, or the `block=` of the Python call that launches an embedded kernel),
    then `__launch_bounds__`, then the `block-size` setting. Unknown block size, unknown
    dynamic shared memory or no ptxas facts: nothing is said. The calculation follows
    NVIDIA's occupancy calculator (`cuda_occupancy.h`); `cudalint occupancy --arch sm_90
    --regs 72 --block 256` prints it for any configuration.

    ## Why is this bad?
    GPUs hide memory and instruction latency by switching between resident warps. With
    few warps per SM, a memory-bound kernel stalls with nothing else to run. More
    registers per thread can pay off through instruction-level parallelism, so the rule
    states the trade-off; it does not claim the kernel is slow.

    ## Example
    ```cuda
    __global__ void heavy(const float4* a, float* out, int n);   // 72 registers
    heavy<<<n / 256, 256>>>(a, out, n);        // 3 blocks = 24 of 64 warps on sm_90
    ```

    ## Use instead
    ```cuda
    __global__ void __launch_bounds__(256, 4) heavy(const float4* a, float* out, int n);
    // ptxas keeps it to 64 registers: 4 blocks = 32 warps (check for spills: CL301)
    ```

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.1 (Device Utilization and Occupancy:
      registers per thread vs warps per SM) and 1.4.4.1 (spilling vs occupancy),
      https://docs.nvidia.com/cuda/kepler-tuning-guide/
    - CUDA C++ Programming Guide, "Technical Specifications per Compute Capability";
      CUDA toolkit `cuda_occupancy.h` (the occupancy calculator's rules)
    """
    code = "CL303"
    name = "low-occupancy"
    severity = "info"

    def check(self, ctx):
        facts = ctx.analysis(ptxas_facts)
        if not facts.by_function or facts.arch is None or limits_for(facts.arch) is None:
            return
        threshold = ctx.settings.occupancy_threshold
        has_dynamic = any(a.extern for a in ctx.model.shared_arrays)
        for fn in ctx.model.kernels:
            recs = [r for r in facts.for_function(fn) if r.registers is not None]
            if not recs:
                continue
            blocks = _block_sizes(ctx, fn)
            if not blocks:
                continue
            for rec in recs:
                worst = None
                for threads, dyn, source in blocks:
                    if dyn is None or (dyn == 0 and has_dynamic and source != "launch"):
                        continue
                    if threads <= 0 or threads > 1024:
                        continue
                    occ = occupancy(facts.arch, rec.registers, threads, rec.smem or 0, dyn,
                                    rec.barriers or 0)
                    if occ.active_blocks == 0:
                        continue   # does not launch at all: not an occupancy question
                    if worst is None or occ.occupancy < worst[0].occupancy:
                        worst = (occ, dyn, source)
                if worst is None:
                    continue
                occ, dyn, source = worst
                if occ.occupancy >= threshold or occ.limiter not in ("registers",
                                                                     "shared memory"):
                    continue
                yield Finding.at(fn.name_node, self._message(rec, occ, dyn, facts.arch),
                                 metrics={"registers": rec.registers, "arch": facts.arch,
                                          "occupancy": round(occ.occupancy, 4),
                                          "active_warps": occ.active_warps,
                                          "max_warps": occ.max_warps,
                                          "active_blocks": occ.active_blocks,
                                          "limiter": occ.limiter, "block": occ.block,
                                          "smem_bytes": occ.smem_per_block,
                                          "block_source": source,
                                          "instantiation": rec.display_name})

    @staticmethod
    def _message(rec, occ, dyn, arch) -> str:
        head = (f"`{rec.display_name}`: occupancy {_pct(occ.occupancy)} "
                f"({occ.active_warps} of {occ.max_warps} warps/SM) on {arch}, limited by ")
        if occ.limiter == "registers":
            msg = head + (f"registers: {rec.registers} per thread at {occ.block} "
                          "threads/block")
            step = registers_for_next_step(arch, rec.registers, occ.block, rec.smem or 0,
                                           dyn or 0, rec.barriers or 0)
            if step is not None:
                msg += f"; {step[0]} registers would give {_pct(step[1].occupancy)}"
            return msg
        lim = limits_for(arch)
        smem = occ.smem_per_block
        msg = head + (f"shared memory: {smem} bytes per block (+{lim.smem_reserved_per_block}"
                      f" reserved) at {occ.block} threads/block, {occ.active_blocks} blocks "
                      f"per SM")
        target_blocks = occ.active_blocks + 1
        fit = lim.smem_per_sm // target_blocks
        fit -= fit % lim.smem_alloc_unit
        fit -= lim.smem_reserved_per_block
        if fit > 0:
            better = occupancy(arch, rec.registers, occ.block, fit, 0, rec.barriers or 0)
            if better.active_warps > occ.active_warps:
                msg += f"; {fit} bytes would give {_pct(better.occupancy)}"
        return msg
