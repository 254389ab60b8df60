from cudalint.analysis.sync.cfg import (BodyQueries, control_context, exits_before, group_handles,
                                   syncs_in)
from cudalint.analysis.sync.divergence import ThreadDependence
from cudalint.model.preproc import not_for_modern_cuda
from cudalint.analysis.sync.races import RaceAnalysis
from cudalint.diagnostics import Finding
from cudalint.parse import text
from cudalint.rule import Rule


class DivergentBarrier(Rule):
    """## What it does
    Finds block barriers (`__syncthreads()`, `__syncthreads_count/_and/_or`, PTX
    `bar.sync 0`, `block.sync()`, `cg::sync(block)`) that not every thread of the block
    reaches: under a condition that depends on `threadIdx`, the lane, `thread_rank()` or
    per-thread data; inside a loop whose trip count depends on the thread (or that a
    thread-dependent `break`/`return` leaves); or after a thread-dependent early
    `return`. Conditions on `blockIdx`, `blockDim`, kernel parameters and other
    block-uniform values are fine.

    ## Why is this bad?
    A block barrier must be reached by all threads of the block (or by none); otherwise
    behaviour is undefined. In practice the kernel hangs, or the barrier releases early
    and the shared-memory accesses it was meant to order race. compute-sanitizer
    synccheck reports it when the threads that skip the barrier wait at a different one;
    when they have exited instead, current GPUs let the barrier through and synccheck
    is silent, but the programming model still forbids it.

    ## Example
    ```cuda
    if (threadIdx.x < n) {
        s[threadIdx.x] = in[threadIdx.x];
        __syncthreads();          // threads with threadIdx.x >= n never arrive
        out[threadIdx.x] = s[n - 1 - threadIdx.x];
    }
    ```

    ## Use instead
    ```cuda
    if (threadIdx.x < n) s[threadIdx.x] = in[threadIdx.x];
    __syncthreads();              // every thread arrives
    if (threadIdx.x < n) out[threadIdx.x] = s[n - 1 - threadIdx.x];
    ```

    ## References
    - CUDA C++ Programming Guide, "Synchronization Functions" (`__syncthreads()` in
      conditional code)
    - compute-sanitizer synccheck (measured on the fixtures: `fixtures/CL103/truth.json`)
    """
    code = "CL103"
    name = "divergent-barrier"
    severity = "error"

    def check(self, ctx):
        data = ctx.unit.data if isinstance(ctx.unit.data, bytes) else ctx.unit.data.encode()
        if b"sync" not in data and b"bar." not in data:
            return
        deps = ctx.analysis(ThreadDependence)
        queries = ctx.analysis(BodyQueries)
        for fn in ctx.model.functions:
            if not fn.is_device or fn.body is None:
                continue
            body_text = fn.body.text or b""
            if b"sync" not in body_text and b"bar." not in body_text:
                continue
            caps = queries(fn.body)
            groups = group_handles(fn.body, caps)
            syncs = [s for s in syncs_in(fn.body, groups, caps) if s.kind == "block"]
            if not syncs:
                continue
            dep = _Lazy(deps, fn)
            for sync in syncs:
                if not_for_modern_cuda(sync.node, ctx):
                    continue
                try:
                    why = _divergence(sync.node, fn.body, dep, lambda n: ctx.analysis(
                        RaceAnalysis).reached_by_part(n), queries, ctx.line)
                except RecursionError:
                    # a condition nested deeper than the analysis can follow (thousands
                    # of terms, machine-made code): undecided, so silent
                    why = None
                if why is None:
                    continue
                yield Finding.at(
                    sync.node,
                    f"divergent barrier: `{sync.spelling}` {why}; every thread of the "
                    f"block must reach it (move it out of the thread-dependent code)",
                    metrics={"barrier": sync.spelling,
                             "kernel": fn.name if fn.is_kernel else None,
                             "function": fn.name})


class _Lazy:
    """A function's thread dependence, solved on the first question (a barrier with no
    condition above it and no early exit before it asks none)."""

    def __init__(self, deps, fn):
        self._deps, self._fn, self._dep = deps, fn, None

    def reason(self, node):
        if self._dep is None:
            self._dep = self._deps.of(self._fn)
        return self._dep.reason(node)


def _unit_line(node) -> int:
    return node.start_point[0] + 1


def _divergence(node, body, dep, executed, queries=None, _line=_unit_line) -> str | None:
    """Why ``node`` is not reached by every thread, or None. Branches and early returns
    on thread-dependent conditions are decided statically (the programming model forbids
    them whatever the sizes); a loop's trip count and early `break`s only when running
    the block showed some threads skipping the barrier (a loop such as
    `for (i = tid; i < n; i += blockDim.x)` is uniform when n is a multiple).
    ``_line`` gives the line a message names (the file's: ``ctx.line``)."""
    guards = control_context(node, body)
    if any(g.kind in ("opaque",) for g in guards):
        return None
    for g in guards:
        if g.condition is None:
            continue
        why = dep.reason(g.condition)
        if why is None:
            continue
        cond = " ".join(text(g.condition).strip("() ").split())
        if g.kind == "if":
            return f"is reached only by threads where `{cond}` (line {_line(g.node)})"
        if g.kind == "else":
            return f"is reached only by threads where `!({cond})` (line {_line(g.node)})"
        if g.kind == "loop":
            if not executed(node):
                continue
            return (f"is inside a loop whose trip count depends on the thread "
                    f"(`{cond}`, line {_line(g.node)})")
        if g.kind == "switch":
            return f"is inside a `switch ({cond})` on a thread-dependent value"
        return f"is evaluated only by threads where `{cond}` (line {_line(g.node)})"
    for ex in exits_before(node, body, queries, guards):
        for g in ex.guards:
            if g.condition is None or g.kind == "opaque":
                continue
            if dep.reason(g.condition) is None:
                continue
            cond = " ".join(text(g.condition).strip("() ").split())
            if ex.kind == "return":
                return (f"follows an early `return` taken by threads where `{cond}` "
                        f"(line {_line(ex.node)})")
            if not executed(node):
                continue
            return (f"is inside a loop that threads where `{cond}` leave early "
                    f"(`{ex.kind}`, line {_line(ex.node)})")
    return None
