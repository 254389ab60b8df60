from cudalint.analysis.memory.figures import (bank_conflict_figures, block_line_metrics,
                                              surely_below, wavefronts)
from cudalint.analysis.memory.lanes import LaneAnalysis
from cudalint.model.preproc import not_for_modern_cuda
from cudalint.diagnostics import Finding
from cudalint.rule import Rule


class SharedBankConflict(Rule):
    """## What it does
    Finds `__shared__` memory accesses where lanes of one warp hit the same 4-byte bank
    at different addresses, and reports the n-way degree: the number of shared-memory
    wavefronts the access takes divided by the minimum for its width (1 for up to 4
    bytes per lane, 2 for 8 bytes, 4 for 16 bytes). The lane addresses are computed from
    the kernel's block shape (launch site, Python launch call, `__launch_bounds__` or the
    `block-size` setting; the message says which), so padded tiles, XOR swizzles and
    broadcasts get exact answers. (Revised 2026-11-24) A kernel that reads no thread
    axis but `threadIdx.x` and whose block no launch gives is evaluated for any 1-D
    block of 32 or more threads (its first warp is the same; `block_source` `any-1d`);
    element types named through a `typedef`, a `using` alias or an object-like macro,
    loop counters declared before their loop (`int j; for (j = 0; j < 32; ++j)
    s[threadIdx.x][j] = ...`) and `dim3 threads(TILE, ROWS);` are followed. A row pitch
    that is an unknown parameter is not reported: with a pitch of p words, every odd p
    is conflict-free, so no degree holds for all but a few values. 8- and 16-byte
    accesses are served in half- and quarter-warp phases, as measured on an H100.

    When the degree depends on values the kernel receives it is reported only as a sure
    lower bound ("at least N-way", `exact: false`): the lanes whose distances do not
    depend on them, at their best alignment. JSON metrics: `wavefronts`,
    `ideal_wavefronts`, `bank_ways`, `exact`, `block`, `block_source`, `block_line`.

    ## Why is this bad?
    Shared memory has 32 banks of 4 bytes. Lanes that read different words of the same
    bank are served one after another: a column walk over a `float tile[32][32]` takes
    32 wavefronts instead of 1, so the access runs 32 times slower.

    ## Example
    ```cuda
    __shared__ float tile[32][32];
    sum += tile[threadIdx.x][k];      // 32-way bank conflict
    ```

    ## Use instead
    ```cuda
    __shared__ float tile[32][33];    // one word of padding per row
    sum += tile[threadIdx.x][k];      // conflict-free
    ```

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.3 "Shared Memory and Warp Shuffle"
      (bank width and conflicts), https://docs.nvidia.com/cuda/kepler-tuning-guide/
    - CUDA C++ Best Practices Guide, "Shared Memory and Memory Banks"
    """
    code = "CL202"
    name = "shared-bank-conflict"
    severity = "warning"

    def check(self, ctx):
        facts = ctx.analysis(LaneAnalysis)
        for access in facts.accesses:
            if access.space != "shared":
                continue
            if surely_below(access, wavefronts, 2 * access.ideal_wavefronts):
                continue                        # conflict-free: no need for every figure
            fig = bank_conflict_figures(access)
            if fig is None or fig["bank_ways"] < 2 or not_for_modern_cuda(access.node, ctx):
                continue
            ways = fig["bank_ways"]
            ways_txt = f"{ways:g}" if fig["exact"] else f"at least {ways:g}"
            # scalar parameters every launch passes as one constant: say where from
            bound = "".join(f"; `{n}` = {v} from the launch"
                            f"{f' at line {row}' if row is not None else ''}"
                            for n, (v, row) in sorted(access.bound.items()))
            yield Finding.at(
                access.node,
                f"{ways_txt}-way bank conflict on {access.expr_text or ctx.text(access.node)} "
                f"({_describe(access)}; {access.block.describe()}{bound}): "
                f"{fig['wavefronts']:g} wavefronts instead of {fig['ideal_wavefronts']}; "
                f"{_remedy(access)}",
                metrics={**fig, **block_line_metrics(access),
                         **({"bound": {n: {"value": v, "line": row} for n, (v, row)
                                       in sorted(access.bound.items())}}
                            if access.bound else {})})


def _describe(access) -> str:
    arr = access.array
    if arr is None:
        return f"{access.width}-byte lanes"
    dims = "".join(f"[{d}]" if d is not None else "[]" for d in arr.dims)
    return f"{arr.name} is {arr.elem_type}{dims}"


def _remedy(access) -> str:
    arr = access.array
    if arr is not None and len(arr.dims) >= 2 and all(d is not None for d in arr.dims):
        dims = list(arr.dims)
        elem = max(1, arr.elem_size or access.width or 4)   # a typedef'd type: the lane's
        # one bank's worth of padding, or one whole vector for 8/16-byte lanes
        dims[-1] += max(1, max(access.width, 4) // elem)
        padded = "".join(f"[{d}]" for d in dims)
        return (f"pad the rows: `__shared__ {arr.elem_type} {arr.name}{padded};` "
                f"or XOR-swizzle the column index with the row")
    return "use an odd stride in 4-byte words, or XOR-swizzle the index with the lane"
