from cudalint.project.buildflags import unit_settings
from cudalint.diagnostics import Finding
from cudalint.rule import Rule

INTRINSICS = {"__expf": "expf", "__logf": "logf", "__sinf": "sinf", "__cosf": "cosf",
              "__powf": "powf", "__fdividef": "a / b", "__tanf": "tanf",
              "__exp10f": "exp10f", "__log2f": "log2f", "__log10f": "log10f"}


class FastIntrinsic(Rule):
    """## What it does
    Points out the fast, approximate math intrinsics (`__expf`, `__logf`, `__sinf`,
    `__cosf`, `__powf`, `__fdividef`, ...) in units that are not otherwise built with
    `--use_fast_math`. Informational; off by default.

    ## Why is this bad?
    The intrinsics map to the SFU approximations: `__sinf` loses accuracy quickly outside
    [-pi, pi], `__expf`/`__powf` have errors of several ulp that grow with the argument,
    and `__fdividef` returns 0 for divisors above 2^126. That can be the right trade, but
    it should be deliberate; a reviewer sees `expf` semantics in mind and `__expf` in code.

    ## Example
    ```cuda
    y[i] = __expf(-x[i] * x[i]);
    ```

    ## Use instead
    ```cuda
    y[i] = expf(-x[i] * x[i]);          // or keep __expf with `// noqa: CL404`
    ```

    ## References
    - CUDA C++ Programming Guide, "Mathematical Functions", intrinsic functions accuracy
      table
    - Floating Point and IEEE 754 Compliance for NVIDIA GPUs, 3.4,
      https://docs.nvidia.com/cuda/floating-point/
    """
    code = "CL404"
    name = "fast-intrinsic"
    severity = "info"
    default_enabled = False

    def check(self, ctx):
        calls = ctx.calls_named(*INTRINSICS)
        if not calls:
            return
        own = ctx.model.declared_names
        settings = unit_settings(ctx.unit)
        if settings is not None and settings.fast_intrinsics:
            return
        for call in calls:
            callee = call.child_by_field_name("function")
            name = ctx.text(callee)
            if name in own:
                continue
            yield Finding.at(callee, f"`{name}` is an approximate intrinsic (the accurate "
                                     f"form is `{INTRINSICS[name]}`) in a unit built without "
                                     "fast math")
