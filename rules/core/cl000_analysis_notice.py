from cudalint.rule import Rule


class AnalysisNotice(Rule):
    """## What it does
    Tells you that cudalint could not analyse a file, an embedded kernel or a region of
    one: a binary or non-UTF-8 file, a Python file that does not parse, a kernel string
    built at run time, a region of a kernel the parser could not read (usually a macro),
    or an internal error in a rule; a file whose analysis crashed its worker process or
    passed `memory-limit-mb` or `time-limit-s`; a unit whose floating-point types libclang
    could not give (it aborted, or a macro expands to more than a million tokens).

    ## Why is this bad?
    Code that is not analysed is code no other rule can speak for. cudalint stays silent
    rather than guess, and this notice says where it had to.

    ## Example
    ```cuda
    __global__ void k(float* x) {
      FOR_EACH_ELEMENT(i) { x[i] = 0; }   // unknown macro: parts of k are skipped
    }
    ```

    ## Use instead
    Nothing is wrong with the code itself. Pass macro values with `defines` in
    `[tool.cudalint]`, ignore the code (`--ignore CL000`), or add `// noqa: CL000`.

    ## References
    - cudalint documentation: how units and positions are built (README, "How it works")
    """
    code = "CL000"
    name = "analysis-notice"
    severity = "info"
    target = "engine"
