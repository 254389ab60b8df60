from cudalint.model.preproc import not_for_modern_cuda
from cudalint.analysis.sync.races import RaceAnalysis
from cudalint.diagnostics import Finding
from cudalint.parse import text
from cudalint.model.instances import mention
from cudalint.rule import Rule


class WarpMaskMismatch(Rule):
    """## What it does
    Finds `*_sync(mask, ...)` warp intrinsics (`__shfl*_sync`, `__ballot_sync`,
    `__any_sync`, `__all_sync`, `__match_*_sync`, `__reduce_*_sync`, `__syncwarp`)
    whose constant mask differs from the lanes that actually execute the call: a full
    mask `0xffffffff` under a lane-dependent condition such as `if (lane < 16)` (lanes
    named in the mask never arrive), or a partial mask such as `0xffff` in code every
    lane runs (lanes outside the mask call it). The lanes that arrive are computed by
    executing the block (branches, loops, early exits); lanes that have returned from
    the kernel do not count, as the programming model allows.

    ## Why is this bad?
    Each calling lane must be in the mask, and every non-exited lane named in the mask
    must execute the same intrinsic with the same mask; anything else is undefined
    behaviour. It may work today because ptxas drops the mask or the warp happens to
    be converged, and break with the next compiler or GPU.

    ## Example
    ```cuda
    if (lane < 16)
        v += __shfl_down_sync(0xffffffff, v, 8);   // lanes 16-31 never arrive
    ```

    ## Use instead
    ```cuda
    if (lane < 16)
        v += __shfl_down_sync(0x0000ffff, v, 8);   // exactly the lanes that arrive
    ```
    or compute the mask with `__ballot_sync(0xffffffff, lane < 16)` before branching.

    ## References
    - CUDA C++ Programming Guide, "Warp Shuffle Functions", "Warp Vote Functions" and
      `__syncwarp()` (mask semantics)
    - compute-sanitizer synccheck (measured on the fixtures: `fixtures/CL105/truth.json`)
    """
    code = "CL105"
    name = "warp-mask-mismatch"
    severity = "error"

    def check(self, ctx):
        facts = ctx.analysis(RaceAnalysis)
        for m in facts.masks:
            if not_for_modern_cuda(m.node, ctx):
                continue
            fn = m.node.child_by_field_name("function")
            name = text(fn) if fn is not None else "the intrinsic"
            named = m.mask & m.live
            missing = named & ~m.arrive
            extra = m.arrive & ~m.mask
            if missing:
                what = (f"lanes {_lanes(missing)} named in the mask never arrive "
                        f"(only lanes {_lanes(m.arrive)} of warp {m.warp} execute it)")
            else:
                what = (f"lanes {_lanes(extra)} execute it but are not in the mask "
                        f"(lanes {_lanes(m.arrive)} of warp {m.warp} arrive)")
            # a template kernel as a launch instantiates it
            inst = f", in {mention(m.kernel.instance)}" if m.kernel.instance else ""
            yield Finding.at(
                m.node,
                f"warp mask mismatch: `{name}` with mask {m.mask:#010x}: {what}{inst}; use a "
                f"mask of exactly the lanes that arrive ({m.arrive:#010x}) or "
                f"`__ballot_sync` before the branch",
                metrics={"mask": m.mask, "arriving_lanes": m.arrive,
                         "block": list(m.block)})


def _lanes(bits: int) -> str:
    lanes = [i for i in range(32) if bits >> i & 1]
    if not lanes:
        return "none"
    runs = []
    start = prev = lanes[0]
    for x in lanes[1:]:
        if x == prev + 1:
            prev = x
            continue
        runs.append((start, prev))
        start = prev = x
    runs.append((start, prev))
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)
