from cudalint.analysis.fp.facts import FpFacts
from cudalint.analysis.fp.fptypes import fp_facts
from cudalint.diagnostics import Edit, Finding, Fix
from cudalint.rule import Rule


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
    read double variables or call functions returning double (on purpose).

    ## Why is this bad?
    Consumer and many data-centre GPUs run FP64 at 1/32 to 1/64 of the FP32 rate, and
    every promotion adds `F2F` conversions. One unsuffixed literal is enough to turn a
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
    - Floating Point and IEEE 754 Compliance for NVIDIA GPUs,
      https://docs.nvidia.com/cuda/floating-point/
    - Evidence: `fixtures/CL403/sass_truth.json` (cuobjdump -sass before and after the fix)
    """
    code = "CL403"
    name = "double-promotion"
    severity = "warning"
    fix_safety = "unsafe"

    def check(self, ctx):
        facts = ctx.analysis(unit_fp_facts)
        for p in facts.promotions:
            fix = None
            metrics = {"fp64_ops": p.ops, "engine": facts.engine}
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
            if facts.note:
                msg += f" ({facts.note})"
            yield Finding(p.start, p.end, msg, metrics=metrics, fix=fix)
