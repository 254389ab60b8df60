from cudalint.analysis.sync.skipped_barriers import SkippedBarriers, pre_volta
from cudalint.diagnostics import Finding
from cudalint.rule import Rule
from cudalint.rules.sync._race_common import instance_mentions


class DivergentBarrier(Rule):
    """## What it does
    Finds mismatched block barriers: a barrier (`__syncthreads()`,
    `__syncthreads_count/_and/_or`, PTX `bar.sync 0`, `block.sync()`, `cg::sync(block)`)
    that some threads of the block skip and the skipping threads then wait at
    *another* barrier before they exit. The skip comes from a condition that depends on
    `threadIdx`, the lane, `thread_rank()` or per-thread data: an enclosing branch (the
    other side of the branch, or the code after it, has a barrier), a loop whose trip
    count depends on the thread or that a thread-dependent `break`/`continue` leaves
    (the leavers meet a later barrier, or the same one in another iteration). The
    skipping threads' path is followed statement by statement, and by running the
    block. Conditions on `blockIdx`, `blockDim`, kernel parameters and other
    block-uniform values are fine.

    On pre-Volta targets (the `arch` setting sm_30 to sm_62) every barrier that part of
    the block skips is reported, including `if (i >= n) return;` before a barrier.

    Threads that skip a barrier and then exit (`if (i >= n) return;` before a tile
    barrier, a barrier under `if (tid < 64)` whose other threads finish) are not
    reported here: since Volta a barrier waits only for threads that have not exited,
    and the GPU runs such kernels correctly (`if (i >= n) return;` before a tile
    barrier: 0 wrong elements of 20,000 on an H100). The opt-in CL106 reports those.

    ## Why is this bad?
    Threads waiting at two different barriers release each other (the hardware counts
    arrivals at barrier 0), so neither barrier orders what it was meant to, or the
    block deadlocks. Measured on an H100 (`fixtures/CL103/truth.json`): barriers in
    both sides of a thread-dependent branch give synccheck "divergent thread(s) in
    block"; a block-strided loop with a barrier inside, followed by a block sum with
    barriers, hangs: threads that left the loop wait at the sum's barriers while the
    others wait at the loop's. The skip-then-exit kernels (`fixtures/CL106`, and the
    look-alikes in `fixtures/CL103`) run to completion with synccheck and racecheck
    silent.

    ## Example
    ```cuda
    for (int i = threadIdx.x; i < n; i += blockDim.x) {   // n not a multiple
        tile[threadIdx.x] = in[i];
        __syncthreads();        // leavers wait below, at the sum's barriers
        acc += tile[(threadIdx.x + 1) % blockDim.x];
        __syncthreads();
    }
    sum = block_sum(acc);       // __syncthreads() inside
    ```

    ## Use instead
    ```cuda
    for (int base = 0; base < n; base += blockDim.x) {    // same trip count for all
        int i = base + threadIdx.x;
        tile[threadIdx.x] = i < n ? in[i] : 0.f;
        __syncthreads();
        if (i < n) acc += tile[(threadIdx.x + 1) % blockDim.x];
        __syncthreads();
    }
    sum = block_sum(acc);
    ```

    ## References
    - CUDA C++ Programming Guide, "Synchronization Functions" (`__syncthreads()` in
      conditional code) and "Independent Thread Scheduling" (a barrier "will not
      succeed until reached by all non-exited threads")
    - compute-sanitizer synccheck and racecheck, and the hang under a time limit
      (measured on the fixtures: `fixtures/CL103/truth.json`, `fixtures/CL106/truth.json`)
    """
    code = "CL103"
    name = "divergent-barrier"
    severity = "error"

    def check(self, ctx):
        old_gpu = pre_volta(ctx.settings.arch)
        for b in ctx.analysis(SkippedBarriers).items:
            if b.grid:
                continue        # grid barriers: CL106
            if b.meets is not None and b.meets.id == b.node.id:
                then = ("; the threads that skip it reach it in another iteration, "
                        "while the others wait at it in this one")
            elif b.meets is not None:
                then = (f"; the threads that skip it wait at `{_spelling(b.meets)}` "
                        f"({ctx.place(b.meets)}) instead")
            elif old_gpu:
                then = f" (on {ctx.settings.arch}, before Volta's independent scheduling)"
            else:
                continue
            for inst in instance_mentions(ctx, b.fn):
                yield Finding.at(
                    b.node,
                    f"divergent barrier: `{b.spelling}` {b.why}{inst}{then}; every thread "
                    f"of the block must reach the same barriers (move it out of the "
                    f"thread-dependent code)",
                    metrics={"barrier": b.spelling,
                             "kernel": b.fn.name if b.fn.is_kernel else None,
                             "function": b.fn.name,
                             "meets_line": ctx.own_line(b.meets) if b.meets is not None
                             else None})


def _spelling(node) -> str:
    t = (node.text or b"").decode(errors="replace")
    t = " ".join(t.split())
    return t if len(t) <= 40 else t[:37] + "..."
