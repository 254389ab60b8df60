from cudalint.analysis.lanes import LaneAnalysis, coalescing_figures
from cudalint.analysis.preproc import not_for_modern_cuda
from cudalint.diagnostics import Finding
from cudalint.rule import Rule


class UncoalescedGlobalAccess(Rule):
    """## What it does
    Finds global-memory loads and stores whose addresses, across the 32 lanes of a warp,
    touch more 32-byte sectors than the access size needs, and reports the predicted
    sectors per request next to the ideal (4 for 4-byte lanes, 8 for 8-byte, 16 for
    16-byte). The addresses are evaluated lane by lane from the thread index and the
    kernel's block shape (launch site, `__launch_bounds__` or the `block-size` setting);
    strides that depend on values unknown at compile time are not reported.

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
            stride_txt = f"a stride of {stride} bytes between lanes" if stride is not None \
                else "scattered lane addresses"
            yield Finding.at(
                access.node,
                f"uncoalesced {'store' if access.is_store and not access.is_load else 'load'}"
                f" {access.expr_text or ctx.text(access.node)}: {stride_txt} makes a warp touch "
                f"{fig['sectors_per_request']:g} 32-byte sectors per request instead of "
                f"{fig['ideal_sectors_per_request']}; {_remedy(access, stride)}",
                metrics=fig)


def _remedy(access, stride) -> str:
    if access.struct_field:
        return (f"store `{access.struct_field}` in an array of its own (SoA instead of "
                f"an array of structs)")
    if stride is not None and stride >= 128:
        return ("let consecutive lanes read consecutive addresses, e.g. transpose "
                "through a shared-memory tile for column walks")
    return ("let consecutive lanes read consecutive elements, or have each lane read "
            "its elements with one vector load (float2/float4)")
