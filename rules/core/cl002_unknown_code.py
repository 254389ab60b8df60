from cudalint.rule import Rule


class UnknownCode(Rule):
    """## What it does
    Reports a `noqa` comment that names a `CL` code cudalint does not have.

    ## Why is this bad?
    A typo in a suppression suppresses nothing, and the reader believes otherwise.

    ## Example
    ```cuda
    s[tid] += s[tid + 16];  // noqa: CL1O1
    ```

    ## Use instead
    ```cuda
    s[tid] += s[tid + 16];  // noqa: CL101
    ```

    ## References
    - `cudalint rule --all` lists every code
    """
    code = "CL002"
    name = "unknown-code"
    severity = "warning"
    target = "engine"
