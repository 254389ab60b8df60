from cudalint.analysis.ptxas.ptxas_run import ptxas_facts, register_cap
from cudalint.diagnostics import Finding
from cudalint.rule import Rule


class RegisterSpill(Rule):
    """## What it does
    Reports a kernel or device function for which ptxas spills registers to local
    memory (`N bytes spill stores`, `N bytes spill loads` in `ptxas -v` output) on the
    target architecture. The finding sits at the function's definition and names the
    template instantiation, the spill bytes, the registers used and the cap that forced
    the spill: `__launch_bounds__(max_threads, min_blocks)` or `-maxrregcount`.

    The ptxas facts come from a log (`--ptxas-log build.log`, `[tool.cudalint.ptxas]
    log = [...]`) or from cudalint compiling the unit (`--ptxas`, `enabled = true`).
    Without them the rule says nothing.

    ## Why is this bad?
    A spilled value lives in local memory: every use becomes a store and a load through
    L1 and, when L1 cannot hold the spills of all resident warps, through L2 and DRAM.
    Spills often come from a register cap chosen for occupancy; the memory traffic they
    add can cost more than the extra warps gain. The balance has to be measured.

    ## Example
    ```cuda
    template <int N>
    __global__ void __launch_bounds__(1024, 2) gemm_tile(const float* a, float* out)
    {
        float acc[N];   // N = 128 values per thread, 32 registers allowed
        ...
    }
    ```

    ## Use instead
    ```cuda
    template <int N>
    __global__ void __launch_bounds__(256) gemm_tile(const float* a, float* out)
    {
        float acc[N];   // or a smaller N per thread and more threads
        ...
    }
    ```

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.1 (Device Utilization and Occupancy) and
      1.4.4.1 (Increased Addressable Registers Per Thread: spilling vs occupancy),
      https://docs.nvidia.com/cuda/kepler-tuning-guide/
    - CUDA C++ Programming Guide, "Launch Bounds"; nvcc documentation, `--maxrregcount`
      and `-Xptxas -v`, `-warn-spills`
    """
    code = "CL301"
    name = "register-spill"
    severity = "warning"

    def check(self, ctx):
        facts = ctx.analysis(ptxas_facts)
        if not facts.by_function:
            return
        for fn in ctx.model.device_functions:
            for rec in facts.for_function(fn):
                stores, loads = rec.spill_stores or 0, rec.spill_loads or 0
                if stores <= 0 and loads <= 0:
                    continue
                regs = rec.registers
                at = f" at {regs} registers" if regs is not None else ""
                msg = (f"`{rec.display_name}` spills {stores} bytes (stores) / {loads} bytes "
                       f"(loads) on {facts.arch}{at}")
                cap = register_cap(fn, facts.arch, ctx.settings, ctx.unit)
                if cap is not None and (regs is None or regs >= cap[0] - 8):
                    msg += f"; {cap[1]} caps it at {cap[0]} registers"
                elif regs is not None and regs >= 255:
                    msg += "; that is the per-thread register limit"
                msg += ("; spilled values go through local memory: raise the cap, or keep "
                        "fewer values live per thread")
                yield Finding.at(fn.name_node, msg, metrics={
                    "registers": regs, "spill_store_bytes": stores,
                    "spill_load_bytes": loads, "stack_frame_bytes": rec.stack_frame,
                    "arch": facts.arch, "instantiation": rec.display_name,
                    "register_cap": cap[0] if cap else None})
