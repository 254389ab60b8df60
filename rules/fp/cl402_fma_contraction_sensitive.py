from cudalint.project.buildflags import unit_settings
from cudalint.diagnostics import Edit, Finding, Fix
from cudalint.rule import Rule

from cudalint.rules.fp.cl403_double_promotion import unit_fp_facts


class FmaContractionSensitive(Rule):
    """## What it does
    Finds float/double code whose result depends on a multiply and an add being rounded
    separately, in a unit built with FMA contraction on (nvcc's default `-fmad=true`):
    the sign of a difference of products (`a*d - b*c` compared with zero, stored and
    compared, or returned from an orientation/determinant function) and the error term
    of a product split (`e = ah*bh - p` where `p` was computed as a product).

    Not reported: sums and differences of products whose sign is not tested, integer
    arithmetic, code already written with `__fmul_rn`/`__fadd_rn`/`fmaf`, and units built
    with `-fmad=false`.

    ## Why is this bad?
    With contraction nvcc computes `a*d - b*c` as `fma(a, d, -(b*c))`: one product is
    rounded, the other is not. The result is no longer antisymmetric (swapping the
    operands can change the sign), a determinant of parallel vectors can come out
    non-zero, and error-free transforms compute the wrong error term.

    ## Example
    ```cuda
    float det = ax * by - ay * bx;      // FMUL + FFMA
    if (det > 0.f) ...
    ```

    ## Use instead
    ```cuda
    float det = __fmul_rn(ax, by) - __fmul_rn(ay, bx);   // FMUL, FMUL, FADD
    ```
    or `fmaf` where the fused result is what the algorithm needs.

    For an error term `e = ah*bh - p` the fix also rounds the product that computed `p`
    (measured: with only one side rounded, nvcc fuses the other into the subtraction).

    ## Fix safety
    `__fmul_rn` keeps each product separately rounded, as the source reads; it changes the
    generated code and its last bits, so the fix is unsafe.

    ## References
    - Floating Point and IEEE 754 Compliance for NVIDIA GPUs, 3.3 "Controlling Fused
      Multiply-add", https://docs.nvidia.com/cuda/floating-point/
    - Evidence: `fixtures/CL402/sass_truth.json` (FFMA before the fix, none after)

    ## Precision on unseen code
    Precision on unseen code: 0/1 right (2026-11-24, ea1e6f7; docs/precision.md);
    earlier 0/1 (2026-11-24, 1d70d04)

    """
    code = "CL402"
    name = "fma-contraction-sensitive"
    severity = "warning"
    fix_safety = "unsafe"

    def check(self, ctx):
        data = ctx.unit.data
        if b"*" not in data or b"-" not in data:
            return
        facts = ctx.analysis(unit_fp_facts)
        if not facts.contractions:
            return
        settings = unit_settings(ctx.unit)
        if settings is not None and not settings.fmad:
            return
        for c in facts.contractions:
            fn = "__fmul_rn" if c.dtype == "float" else "__dmul_rn"
            if c.kind == "difference-of-products":
                msg = (f"the sign of `{_short(c.text)}` is tested, but FMA contraction "
                       f"(-fmad=true) rounds only one of the two products; use `{fn}` for "
                       "both")
            else:
                msg = (f"`{_short(c.text)}` is an error term of a product: with FMA "
                       f"contraction the product is not rounded before the subtraction; "
                       f"use `{fn}` or an explicit `fma`")
            fix = _fix(ctx, c, fn)
            yield Finding(c.start, c.end, msg, fix=fix,
                          metrics={"kind": c.kind, "dtype": c.dtype, "engine": facts.engine})


def _short(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= 60 else t[:57] + "..."


def _fix(ctx, c, fn):
    """`a*b - c*d` -> `fn(a, b) - fn(c, d)` when the products are plain `x * y` nodes."""
    node = ctx.root.descendant_for_byte_range(c.start, c.end)
    while node is not None and node.type != "binary_expression":
        node = node.parent
    if node is None or node.start_byte != c.start or node.end_byte != c.end:
        return None
    edits = []
    sides = [node.child_by_field_name("left"), node.child_by_field_name("right")]
    if c.kind == "error-free-transform":
        # the subtracted product must be rounded too, or it is the one that gets fused
        other = ctx.root.descendant_for_byte_range(*c.related) if c.related else None
        while other is not None and other.type != "binary_expression":
            other = other.parent
        if other is None or (other.start_byte, other.end_byte) != c.related:
            return None
        sides = sides[:1] + [other]
    for side in sides:
        while side is not None and side.type == "parenthesized_expression":
            side = side.named_children[0] if side.named_children else None
        if side is None or side.type != "binary_expression" or \
                ctx.text(side.child_by_field_name("operator")) != "*":
            return None
        a, b = side.child_by_field_name("left"), side.child_by_field_name("right")
        edits.append(Edit(side.start_byte, side.end_byte,
                          f"{fn}({ctx.text(a)}, {ctx.text(b)})"))
    return Fix(f"Round each product separately with `{fn}`", tuple(edits), "unsafe")
