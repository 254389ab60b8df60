from cudalint.rule import Rule


class UnusedSuppression(Rule):
    """## What it does
    Reports a `noqa` comment naming a cudalint code that suppresses nothing on its line.

    ## Why is this bad?
    Stale suppressions hide future findings on that line and mislead readers about what
    the code does.

    ## Example
    ```cuda
    out[i] = in[i];  // noqa: CL202
    ```

    ## Use instead
    ```cuda
    out[i] = in[i];
    ```

    ## Fix safety
    The fix removes the unused code, or the whole comment when it names nothing else; it
    is safe.

    ## References
    - ruff's RUF100, whose behaviour this follows
    """
    code = "CL001"
    name = "unused-suppression"
    severity = "warning"
    default_enabled = False
    fix_safety = "safe"
    target = "engine"
