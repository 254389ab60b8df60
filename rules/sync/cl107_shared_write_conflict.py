from cudalint.analysis.sync.write_conflicts import SharedWriteConflicts, read_back
from cudalint.diagnostics import Finding
from cudalint.model.preproc import not_for_modern_cuda
from cudalint.rule import Rule
from cudalint.rules.sync._race_common import instance_mentions


class SharedWriteConflict(Rule):
    """## What it does
    Finds a store to `__shared__` memory at which two threads write different values
    to the same address: `x[0] = threadIdx.x` executed by the whole block or by one
    warp, `s[tid / 64] = tid`, a `__shared__ int x;` of the kernel set to `threadIdx.x`,
    a shared array stored through a cast (`((unsigned *)bytes)[i] = tid`). The block is
    executed symbolically; a store is reported only when the addresses and the values
    are known and two threads store different values at one address. Stores of the
    same value by every thread (a flag set to 1) and stores whose values the analysis
    cannot know (loaded from memory) are not reported, nor (yet) stores to a
    `__shared__` scalar declared at file scope.

    ## Why is this bad?
    Which value stays depends on the order the warps run in (a write-write race), and
    among the lanes of one warp storing in one instruction it is unspecified. A
    barrier does not help; one thread must write (`if (threadIdx.x == 0)`), or the
    values must be combined (`atomicMax`, a block reduction). When every thread then
    reads the word back as its own value before any barrier (`s[0] = tid; for (int
    i = s[0]; ...)`: a local variable put in shared memory), the message says so and
    asks for a register instead; CL102 does not report that read (a barrier would give
    every thread the last writer's value; sheet-newcorpus10 W1, pytorch-loss). Measured on an H100
    (`fixtures/CL107/truth.json`, `fixtures/CL107/shared_scalar.truth.json`):
    compute-sanitizer racecheck reports these stores as errors, within one warp too,
    and nothing for the same-value form.

    ## Example
    ```cuda
    __shared__ int last[1];
    last[0] = threadIdx.x;       // 128 threads race; the survivor is not defined
    __syncthreads();
    ```

    ## Use instead
    ```cuda
    __shared__ int last[1];
    if (threadIdx.x == blockDim.x - 1) last[0] = threadIdx.x;
    __syncthreads();
    ```

    ## References
    - CUDA C++ Programming Guide, "Shared Memory" (concurrent writes to one address)
    - compute-sanitizer racecheck (measured on the fixtures: `fixtures/CL107/truth.json`)

    ## Precision on unseen code
    Precision on unseen code: 3/3 right, none wrong (2026-11-25, c7afdf7, the four new-project
    sheets 9-12 re-scored, 52 projects: pytorch-loss's per-thread value in one shared word,
    with the register remedy; docs/precision.md).
    """
    code = "CL107"
    name = "shared-write-conflict"
    severity = "error"

    def check(self, ctx):
        for c in ctx.analysis(SharedWriteConflicts).items:
            if not_for_modern_cuda(c.node, ctx):
                continue
            a, b = c.threads
            va, vb = (_value(v) for v in c.values)
            back = read_back(c)
            if back is not None:
                # every thread reads the word back as its own value: neither one writer
                # nor a barrier is the remedy (sheet-newcorpus10 W1)
                row = ctx.unit.own_line(back.start_byte)
                remedy = (f"each thread reads `{ctx.text(back)}` back"
                          f"{f' at line {row}' if row is not None else ''} as its own "
                          f"value: a per-thread value kept in one shared word; keep it in a "
                          f"register (a local variable) instead")
            else:
                remedy = ("which value stays is not defined (let one thread store it, or "
                          "combine the values with an atomic or a reduction)")
            for inst in instance_mentions(ctx, c.kernel):
                yield Finding.at(
                    c.node,
                    f"shared write conflict: threads {a} and {b} store different values "
                    f"({va} and {vb}) to `{c.array.split('@')[0]}` at byte {c.address} in "
                    f"one statement{inst}; {remedy}",
                    metrics={"threads": list(c.threads), "array": c.array.split("@")[0],
                             "block": list(c.block), "block_source": c.block_source,
                             "kernel": c.kernel.name})


def _value(v) -> str:
    return str(v) if isinstance(v, (int, float)) else "?"
