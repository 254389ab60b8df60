"""CL403: float arithmetic promoted to FP64, reported where the unit's targets include a
GPU with reduced FP64 throughput (the table below), or everywhere with
``fp64-promotion = "always"``.
"""
from __future__ import annotations

from cudalint.analysis.fp.facts import FpFacts
from cudalint.analysis.fp.fptypes import fp_facts
from cudalint.diagnostics import Edit, Finding, Fix
from cudalint.project.targets import target_archs
from cudalint.rule import Rule

# FP64 results per clock per SM as a fraction of FP32, from the CUDA C++ Programming Guide,
# "Arithmetic Instructions", table "Throughput of Native Arithmetic Instructions". The
# full-rate parts (sm_60, sm_70, sm_72, sm_80, sm_90, sm_100: 1/2) are not listed; neither
# are architectures the table gives no figure for (they count as not reduced). sm_87
# (Jetson Orin, a GA10x-family part) is taken at its family's rate.
REDUCED_FP64 = {30: 24, 32: 24, 50: 32, 52: 32, 53: 32, 61: 32, 62: 32, 75: 32,
                86: 64, 87: 64, 89: 64, 120: 64}


def unit_fp_facts(ctx) -> FpFacts:
    """libclang facts for the unit, shared by CL402 and CL403 (one parse per unit)."""
    if not any(fn.is_device for fn in ctx.model.functions):
        return FpFacts("none")
    facts = fp_facts(ctx.unit.data, ctx)
    if facts.notice:
        ctx.notices.append((0, facts.notice))
    return facts


class DoublePromotion(Rule):
    """## What it does
    Finds float arithmetic in device code that the C++ rules turn into double precision:
    a float meets an unsuffixed literal (`x * 0.1`, `2.0 * x * x`), a double math call
    on float values (`pow(x, 2.0)`, `exp(x * 0.5)`) or an explicit `(double)` conversion,
    and the result goes back into a float or a comparison. Types come from libclang
    (typedefs, `auto`, templates and overloads resolved); without libclang only names
    declared `float` in the same function count.

    Not reported: the cases nvcc narrows back to single precision itself, i.e. one
    `+ - * /` or comparison whose operands are floats and literals exactly representable
    in float, converted straight back (`float y = x * 0.5` is an FMUL); expressions that
    read double variables or call functions returning double (on purpose). Operations
    whose operands are all compile-time constants (literals, macros expanding to them,
    enumerators, constexpr values) are folded by nvcc and count as one constant:
    `K * 3.0 * (b - a)` with `#define K 2.65625f` has no FP64 instruction in the SASS
    (kaolin's bf_cuda.cu), the same line with a run-time `k` has two DMULs and three
    conversions.

    Reported only where it costs: when the unit's target architectures include a GPU with
    reduced FP64 throughput. Targets come from the `arch` setting; when it is not given,
    from the build files that compile the file (`-arch`/`-gencode`,
    `CMAKE_CUDA_ARCHITECTURES`, `TORCH_CUDA_ARCH_LIST` in setup.py) or the compile call's
    options for code in Python strings; with none of these, the data-centre parts sm_80
    and newer. Reduced (FP64 results per clock as a fraction of FP32, CUDA C++
    Programming Guide, "Arithmetic Instructions", throughput table): sm_50/52/53, sm_61,
    sm_62, sm_75 at 1/32; sm_86, sm_87, sm_89, sm_120 at 1/64 (GeForce, workstation and
    Jetson parts). Full rate (1/2): sm_60, sm_70, sm_80, sm_90, sm_100; there the rule
    is silent, as for architectures the table gives no figure for. Measured on an H100 (bench/triage/sheet-2026-11-24.md): a
    promoted float expression compiled to 8 FP64 instructions (DMUL/DADD/F2F) against 0
    with `* 0.5f`, and the kernel took 0.0842 ms against 0.0837 ms, 6 of 6 sampled
    findings true but not worth acting on. `fp64-promotion = "always"` reports every
    target (for numerics: the FP64 result is rounded differently). The message names the
    slowest target ("sm_86 runs FP64 at 1/64 of the FP32 rate").

    ## Why is this bad?
    Consumer, workstation and embedded GPUs run FP64 at 1/32 to 1/64 of the FP32 rate,
    and every promotion adds `F2F` conversions. One unsuffixed literal is enough to turn a
    float kernel into a DMUL/DFMA kernel; the SASS shows it, the source does not.

    ## Example
    ```cuda
    y[i] = x[i] * 0.1 + b[i];           // F2F.F64, DFMA, F2F.F32
    ```

    ## Use instead
    ```cuda
    y[i] = x[i] * 0.1f + b[i];          // FFMA
    ```

    ## Fix safety
    Adding the `f` suffix is safe when the literal is exactly representable in float
    (`0.5`, `2.0`, `0.25`): the operation then runs in float with the same constant.
    Otherwise (`0.1`, `M_PI`-like constants) the constant itself changes and the fix is
    unsafe.

    ## References
    - CUDA C++ Best Practices Guide, "Promotions to Doubles and Truncations to Floats"
    - CUDA C++ Programming Guide, "Arithmetic Instructions" (throughput per compute
      capability: 64-bit floating-point add, multiply, multiply-add)
    - Floating Point and IEEE 754 Compliance for NVIDIA GPUs,
      https://docs.nvidia.com/cuda/floating-point/
    - Evidence: `fixtures/CL403/sass_truth.json` (cuobjdump -sass before and after the fix)

    ## Precision on unseen code
    Precision on unseen code: 3/12 right (2026-11-24, ea1e6f7; docs/precision.md)

    """
    code = "CL403"
    name = "double-promotion"
    severity = "warning"
    fix_safety = "unsafe"

    def check(self, ctx):
        slow = slowest_fp64_target(ctx)
        if slow is None and ctx.settings.fp64_promotion != "always":
            return                      # full-rate FP64 targets: nothing worth acting on
        facts = ctx.analysis(unit_fp_facts)
        for p in facts.promotions:
            fix = None
            metrics = {"fp64_ops": p.ops, "engine": facts.engine}
            if slow is not None:
                metrics["arch"], metrics["fp64_rate"] = f"sm_{slow[0]}", f"1/{slow[1]}"
            if p.kind == "literal":
                safe = bool(p.exact)
                if p.exact is not None:         # a literal as written, not a macro name
                    fix = Fix(f"Write `{p.text}f` (single-precision literal)",
                              (Edit(p.end, p.end, "f"),), "safe" if safe else "unsafe")
                extra = "" if safe else (f"; `{p.text}` is not exactly representable in "
                                         "float, so `f` changes the constant")
                if p.exact is None:
                    extra = f"; `{p.text}` expands to a double literal"
                msg = (f"`{p.text}` is a double: the float expression around it runs in FP64 "
                       f"({p.ops} double operation{'s' if p.ops != 1 else ''} plus "
                       f"conversions){extra}")
                metrics["exact_in_float"] = safe
            elif p.kind == "cast":
                msg = (f"`{p.text}` converts a float to double: the expression runs in FP64 "
                       "and is converted back to float")
            else:
                msg = (f"`{p.text}` resolves to the double overload for a float argument: "
                       f"use `{p.text}f` or float arguments")
            if slow is not None:
                msg += (f"; sm_{slow[0]} runs FP64 at 1/{slow[1]} of the FP32 rate "
                        f"(target from {slow[2]})")
            if facts.note:
                msg += f" ({facts.note})"
            yield Finding(p.start, p.end, msg, metrics=metrics, fix=fix)


def slowest_fp64_target(ctx) -> tuple[int, int, str] | None:
    """(architecture, FP32/FP64 rate ratio, where the targets come from) of the unit's
    target with the lowest FP64 throughput, or None when every target runs FP64 at full
    rate (or at a rate the throughput table does not give)."""
    targets = target_archs(ctx.unit, ctx.settings)
    reduced = [(REDUCED_FP64[n], -n) for n in targets.numbers if n in REDUCED_FP64]
    if not reduced:
        return None
    ratio, neg = max(reduced)
    return -neg, ratio, targets.where
