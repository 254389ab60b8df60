from cudalint.model.preproc import not_for_modern_cuda
from cudalint.diagnostics import Edit, Finding, Fix
from cudalint.rule import Rule

FULL_MASK = "0xffffffff"
# legacy intrinsic -> its _sync replacement
LEGACY = {
    "__shfl": "__shfl_sync",
    "__shfl_up": "__shfl_up_sync",
    "__shfl_down": "__shfl_down_sync",
    "__shfl_xor": "__shfl_xor_sync",
    "__any": "__any_sync",
    "__all": "__all_sync",
    "__ballot": "__ballot_sync",
}


class LegacyWarpIntrinsic(Rule):
    """## What it does
    Finds the warp intrinsics that have no `_sync` suffix: `__shfl`, `__shfl_up`,
    `__shfl_down`, `__shfl_xor`, `__any`, `__all` and `__ballot`.

    ## Why is this bad?
    Since Volta (sm_70) the threads of a warp are scheduled independently, so an
    intrinsic that exchanges data between lanes must say which lanes take part. The
    legacy forms assume the whole warp runs in lock-step; they were deprecated in CUDA 9
    and are not available when compiling for sm_70 and newer.

    ## Example
    ```cuda
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down(v, offset);
    ```

    ## Use instead
    ```cuda
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    ```

    ## When it stays silent
    On code a CUDA build does not compile: version-guarded compatibility code
    (`#if CUDA_VERSION < 9000`), names the unit defines itself, and the HIP/ROCm side of
    a platform guard, found by evaluating the `#if`/`#elif`/`#else` chain as a CUDA
    build would (`model.preproc.off_cuda_build`): `USE_ROCM`, `TENSORFLOW_USE_ROCM`,
    `__HIPCC__`, `__HIP_PLATFORM_AMD__` and `__HIP_PLATFORM_HCC__` are undefined there,
    `GOOGLE_CUDA`, `__HIP_PLATFORM_NVCC__` and `__HIP_PLATFORM_NVIDIA__` defined. So the
    `#elif TENSORFLOW_USE_ROCM` of `#if GOOGLE_CUDA` (deepmd-kit's tabulate.cu) and the
    `#else` of `#ifdef __HIP_PLATFORM_NVCC__` (HOOMD's ECL.cuh; HOOMD's CMake defines it
    for every CUDA build) are not reported, nor is a macro a header `#define`s there
    expanded (exllamav2's compat.cuh). The side a CUDA build compiles still is
    (`#if GOOGLE_CUDA || TENSORFLOW_USE_ROCM`, the then-side of `#ifdef
    __HIP_PLATFORM_NVCC__`). These were 4 wrong findings of the eighth triage
    (bench/triage/sheet-newcorpus8.md, class W3).

    ## Fix safety
    The fix inserts the full mask `0xffffffff`. That is right only when all 32 lanes
    reach the call; in divergent code (inside `if (lane < 16)`, or after some lanes
    returned) the mask must name exactly the lanes that arrive, e.g. from
    `__ballot_sync` or `__activemask()`. The fix is therefore unsafe.

    ## References
    - CUDA C++ Programming Guide, "Warp Shuffle Functions" and "Warp Vote Functions"
    - Tuning CUDA Applications for Kepler, 1.4.3 (shuffle) and 1.4.9 (warp-synchronous
      programming), https://docs.nvidia.com/cuda/kepler-tuning-guide/
    """
    code = "CL104"
    name = "legacy-warp-intrinsic"
    severity = "error"
    fix_safety = "unsafe"

    def check(self, ctx):
        calls = ctx.calls_named(*LEGACY)
        if not calls:
            return
        # a unit that defines these names itself (compatibility macros or wrappers) owns them
        own = ctx.model.declared_names
        for call in calls:
            callee = call.child_by_field_name("function")
            name = ctx.text(callee)
            if name in own or not_for_modern_cuda(call, ctx):
                continue
            args = call.child_by_field_name("arguments")
            replacement = LEGACY[name]
            fix = None
            if args is not None and args.named_child_count > 0:
                first = args.named_children[0]
                fix = Fix(f"Use `{replacement}` with the full-warp mask",
                          (Edit(callee.start_byte, callee.end_byte, replacement),
                           Edit(first.start_byte, first.start_byte, f"{FULL_MASK}, ")),
                          "unsafe")
            yield Finding.at(
                callee,
                f"`{name}` has no lane mask and is unavailable on sm_70+; use "
                f"`{replacement}(mask, ...)` with the lanes that reach this call",
                fix=fix)
