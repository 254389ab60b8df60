import re

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

    (Revised 2026-11-25, issue 20) Not reported either: a quadratic's discriminant, a
    difference stored in a variable that the same function passes to a square root (`D =
    B*B - A*C; if (D < 0) return; ... sqrtf(D)`). The test only keeps the root's argument
    in its domain: near zero both outcomes give nearly the same root, and the contracted
    form is the more accurate difference. The eighth and eleventh triages judged all 4
    such findings not worth acting on (astra-toolbox's cylinder back-projector, LEAP's cone
    intersections). Measured on an H100 with LEAP's cone intersection, contracted and
    with both products rounded (`__dmul_rn`, the fix this rule would give): not one of 4
    million outputs differed, on random rays or on exactly tangent ones where `b*b ==
    a*c` (`bench/triage/issue20_worth.json`, group D).

    Not reported either (same revision): a difference compared only with non-zero
    constants (`if (d < 1e-6f && d > -1e-6f)`, pyronn-torch's line intersection,
    sheet-newcorpus12 N4). That is a tolerance test: the author already allows for
    rounding, and contraction moves its outcome only for values within an ulp of the
    tolerance. A difference also compared with zero, or with a variable, is reported.

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
            if c.kind == "difference-of-products":
                tested = _tested_value(ctx, c)
                if _radicand(tested) or _against_tolerance(ctx, tested):
                    continue        # a discriminant guarding its root; a tolerance test
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


_SQRT = r"(?:std::)?(?:sqrtf?|__[fd]sqrt_r[nzud])\s*\(\s*"
_CMP = r"(?:<=|>=|<|>|==|!=)"
_NUMBER = re.compile(r"\(?\s*[-+]?\s*(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fFlL]?\s*\)?")


def _tested_value(ctx, c):
    """The difference's node (outside its parentheses), the variable it is stored in
    (None when it is tested where it is computed) and the text of its function: read once
    for both tests below."""
    node = ctx.root.descendant_for_byte_range(c.start, c.end)
    while node is not None and node.parent is not None and \
            node.parent.type == "parenthesized_expression":
        node = node.parent
    if node is None:
        return None, None, ""
    parent = node.parent
    name = None
    if parent is not None and parent.type == "init_declarator":
        d = parent.child_by_field_name("declarator")
        name = ctx.text(d) if d is not None and d.type == "identifier" else None
    elif parent is not None and parent.type == "assignment_expression" and \
            ctx.text(parent.child_by_field_name("operator")) == "=":
        left = parent.child_by_field_name("left")
        name = ctx.text(left) if left is not None and left.type == "identifier" else None
    fn = parent
    while fn is not None and fn.type != "function_definition":
        fn = fn.parent
    return node, name, ctx.text(fn) if fn is not None else ""


def _radicand(tested) -> bool:
    """Is the tested difference a quadratic's discriminant: stored in a variable that the
    same function passes to a square root (`D = B*B - A*C; if (D < 0) return; ...
    sqrtf(D)`)? Near zero both outcomes of the test give nearly the same root, and the
    contracted form is the more accurate one (sheet-newcorpus8 N10, sheet-newcorpus11 N4;
    measured: bench/triage/issue20_worth.json, group D)."""
    _, name, body = tested
    return bool(name) and re.search(_SQRT + re.escape(name) + r"\s*\)", body) is not None


def _against_tolerance(ctx, tested) -> bool:
    """Is the difference only ever compared with non-zero constants (`d < 1e-6f && d >
    -1e-6f`)? A tolerance test: the author already allows for rounding, and an ulp of
    contraction moves the outcome only for values within an ulp of the tolerance
    (sheet-newcorpus12 N4, pyronn-torch's line intersection)."""
    node, name, body = tested
    if node is None:
        return False
    if name is None:
        p = node.parent
        if p is None or p.type != "binary_expression" or \
                not re.fullmatch(_CMP, ctx.text(p.child_by_field_name("operator")) or ""):
            return False
        other = p.child_by_field_name("right" if p.child_by_field_name("left").id == node.id
                                      else "left")
        return other is not None and _nonzero_number(ctx.text(other))
    operands = []
    for m in re.finditer(rf"(?<![\w.]){re.escape(name)}(?!\w)", body):
        # what is compared with the name: the operand after `name <op` or before `op
        # name` (read from bounded slices: a linear scan on any text)
        after = _CMP_AFTER.match(body, m.end(), min(len(body), m.end() + 80))
        if after:
            operands.append(after.group(1))
        before = _CMP_BEFORE.search(body[max(0, m.start() - 80):m.start()])
        if before:
            operands.append(before.group(1))
    return bool(operands) and all(_nonzero_number(o) for o in operands)


_CMP_AFTER = re.compile(r"\s*(?:<=|>=|<|>|==|!=)(?!=)\s*([^;&|?:),]+)")
_CMP_BEFORE = re.compile(r"([-+]?[\w.]{1,40})\s*(?:<=|>=|<|>|==|!=)\s*$")


def _nonzero_number(text: str) -> bool:
    t = text.strip()
    if not _NUMBER.fullmatch(t):
        return False
    try:
        return float(re.sub(r"[()\s]|[fFlL]$", "", t)) != 0.0
    except ValueError:
        return False


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
