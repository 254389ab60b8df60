from cudalint.analysis.lanes import LaneAnalysis, block_line_metrics, coalescing_figures
from cudalint.analysis.preproc import not_for_modern_cuda
from cudalint.diagnostics import Finding
from cudalint.rule import Rule


class UncoalescedGlobalAccess(Rule):
    """## What it does
    Finds global-memory loads and stores whose addresses, across the 32 lanes of a warp,
    touch more 32-byte sectors than the access size needs, and reports the predicted
    sectors per request next to the ideal (4 for 4-byte lanes, 8 for 8-byte, 16 for
    16-byte). The addresses are evaluated lane by lane from the thread index and the
    kernel's block shape, taken from the launch site in the file, the Python launch call
    (`block=`), `__launch_bounds__` (only for indices using `threadIdx.x` alone) or the
    `block-size` setting, in that order; the message says which one and where. Unknown
    block shape: silent.

    The figure is exact, or, when it depends on values the kernel receives (an offset,
    a pitch), a sure lower bound: the lanes whose distances to each other do not depend
    on those values, at their best alignment. Such findings say "at least N" and carry
    `exact: false`. A stride that is itself unknown gives no bound and no finding, and so
    does an element handed to a template call or a reference parameter (the callee may
    access it with another width, e.g. `AssignAs<uint4>(dst, src[i])`).

    Flagged at `coalescing-threshold` (default 2.0) times the ideal or more: a misaligned
    unit-stride access (5 sectors instead of 4) is not worth a warning. JSON metrics:
    `sectors_per_request`, `ideal_sectors_per_request`, `exact`, `stride_bytes` (or
    `x_stride_bytes` for 2D blocks), `block`, `block_source`, `block_line`.

    ## Why is this bad?
    A warp's load is served in 32-byte sectors. When consecutive lanes read addresses
    far apart (a column walk of a row-major matrix, one field of an array of structs,
    `a[threadIdx.x * 32]`), each lane pulls in a sector of its own and most of the bytes
    moved are thrown away: the kernel needs up to 8x the memory bandwidth.

    ## Example
    ```cuda
    out[row] = in[threadIdx.x * width + col];   // 32 sectors per request
    ```

    ## Use instead
    ```cuda
    // let consecutive lanes read consecutive addresses; transpose through shared
    // memory when the algorithm needs the column
    tile[threadIdx.y][threadIdx.x] = in[row * width + threadIdx.x];
    ```

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.4 "Global Memory" (coalescing and the
      read-only data cache), in `shared/seeds/`
    - CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"
    """
    code = "CL201"
    name = "uncoalesced-global-access"
    severity = "warning"

    def check(self, ctx):
        facts = ctx.analysis(LaneAnalysis)
        threshold = ctx.settings.coalescing_threshold
        for access in facts.accesses:
            if access.space != "global":
                continue
            fig = coalescing_figures(access)
            if fig is None or fig["sectors_per_request"] < threshold * \
                    fig["ideal_sectors_per_request"] or not_for_modern_cuda(access.node):
                continue
            stride = fig.get("stride_bytes")
            if stride is not None:
                stride_txt = f"a stride of {stride} bytes between lanes"
            elif "x_stride_bytes" in fig:
                stride_txt = (f"a stride of {fig['x_stride_bytes']} bytes from one threadIdx.x "
                              f"to the next, and rows of the block apart,")
            else:
                stride_txt = "scattered lane addresses"
            count = f"{fig['sectors_per_request']:g}" if fig["exact"] else \
                f"at least {fig['sectors_per_request']:g}"
            yield Finding.at(
                access.node,
                f"uncoalesced {'store' if access.is_store and not access.is_load else 'load'}"
                f" {access.expr_text or ctx.text(access.node)}: {stride_txt} makes a warp touch "
                f"{count} 32-byte sectors per request instead of "
                f"{fig['ideal_sectors_per_request']} ({access.block.describe()}); "
                f"{_remedy(access, stride if stride is not None else fig.get('x_stride_bytes'))}",
                metrics={**fig, **block_line_metrics(access)})


_VECTORS = {4: "char4/__half2", 8: "float2/int2/uint2", 16: "float4/int4/uint4"}


def _remedy(access, stride) -> str:
    verb = "write" if access.is_store and not access.is_load else "read"
    if access.struct_field:
        return (f"store `{access.struct_field}` in an array of its own (SoA instead of "
                f"an array of structs)")
    if stride is not None and stride >= 128:
        return (f"let consecutive lanes {verb} consecutive addresses, e.g. transpose "
                f"through a shared-memory tile for column walks")
    if stride is not None and stride > access.width and stride % access.width == 0:
        k = stride // access.width
        if stride in _VECTORS:
            return (f"if each lane {verb}s the {k} elements of its {stride}-byte record, "
                    f"{verb} them with one vector access ({_VECTORS[stride]} through "
                    f"reinterpret_cast) instead of {k} scalar ones; otherwise let "
                    f"consecutive lanes {verb} consecutive elements")
        return (f"lanes {verb} every {k}th element (records of {k}): keep each component "
                f"in an array of its own (SoA), or stage the records through shared memory")
    return (f"let consecutive lanes {verb} consecutive elements, or have each lane {verb} "
            f"its elements with one vector access (float2/float4)")
