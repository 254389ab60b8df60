from cudalint.project.build_cmake import cmake_builds
from cudalint.project.build_make import make_builds
from cudalint.project.build_python import python_builds
from cudalint.project.build_toml import toml_builds
from cudalint.project.buildflags import FAST_MATH_WORDS
from cudalint.project.nvcc_flags import EFFECTS, reported_options
from cudalint.diagnostics import Finding
from cudalint.rule import Rule


class FastMathFlags(Rule):
    """## What it does
    Reports `--use_fast_math` (`-use_fast_math`), `-ftz=true`, `-prec-div=false` and
    `-prec-sqrt=false` where a build writes them: `extra_compile_args={'nvcc': [...]}` of a
    `CUDAExtension` in `setup.py`, `extra_cuda_cflags` of torch `load()`/`load_inline()`,
    CuPy `RawKernel`/`RawModule` and PyCUDA `SourceModule` `options`, `CMAKE_CUDA_FLAGS`,
    `CUDA_NVCC_FLAGS` and `target_compile_options($<$<COMPILE_LANGUAGE:CUDA>:...>)` in
    CMake, cmake arguments in `pyproject.toml`, and GNU Makefiles (nvcc recipe lines and
    the variables they expand, such as `NVCC_FLAGS = ... --use_fast_math`). A flag under a
    condition the build file decides from its defaults (`os.getenv("FAST_MATH", "1")`,
    a CMake `option()`, a setup.py command-line switch) is reported when the defaults make
    it active, with a note ("on unless FAST_MATH=0"), and not reported when they do not.
    The message names the units the flag builds and the changes that survive the rest of
    the command line (an explicit `-ftz=false` keeps denormals even after
    `--use_fast_math`, whatever the order).

    ## Why is this bad?
    `--use_fast_math` implies `-ftz=true -prec-div=false -prec-sqrt=false -fmad=true` and
    replaces `sinf`, `expf`, `powf`, ... with hardware approximations. Single-precision
    denormals become zero, `a / b` and `sqrtf(x)` are no longer correctly rounded, and
    results differ from the CPU reference and from the same code built without the flag.
    A flag written once in a build file silently changes every kernel it compiles; that
    is worth knowing at the line that does it.

    ## Example
    ```python
    CUDAExtension("ops._C", ["csrc/ops.cu"],
                  extra_compile_args={"nvcc": ["-O3", "--use_fast_math"]})
    ```

    ## Use instead
    ```python
    # keep IEEE-rounded division/sqrt and denormals; call __expf etc. where speed matters
    CUDAExtension("ops._C", ["csrc/ops.cu"], extra_compile_args={"nvcc": ["-O3"]})
    ```
    or keep the flag on purpose and suppress the report (`# noqa: CL401`).

    ## References
    - Floating Point and IEEE 754 Compliance for NVIDIA GPUs, 3.4 "Compiler Flags"
      https://docs.nvidia.com/cuda/floating-point/
    - nvcc documentation, `--use_fast_math`, `--ftz`, `--prec-div`, `--prec-sqrt`
    - Evidence: `fixtures/CL401/sass_truth.json` (SASS with and without the flags)

    ## Precision on unseen code
    Precision on unseen code: 0/2 right (2026-11-24, ea1e6f7; docs/precision.md);
    earlier 2/3 (2026-11-24, 1d70d04)

    """
    code = "CL401"
    name = "fast-math-flags"
    severity = "warning"
    target = "file"
    file_kinds = frozenset({"python", "cmake", "toml", "make"})

    def check(self, ctx):
        text = ctx.file.text
        if not any(w in text for w in FAST_MATH_WORDS):
            return
        kind = ctx.file.kind
        if kind == "python":
            builds = python_builds(text, ctx.file.path)
        elif kind == "cmake":
            builds = cmake_builds(text, ctx.file.path)
        elif kind == "make":
            builds = make_builds(text, ctx.file.path)
        else:
            builds = toml_builds(text, ctx.file.path)
        by_span: dict[tuple[int, int], tuple[str, list[str], list[str]]] = {}
        for build in builds:
            settings = build.settings
            for opt, effects in reported_options(settings):
                flag = opt.flag
                if flag.start < 0 or flag.path != ctx.file.path:
                    continue
                key = (flag.start, flag.end)
                _, units, effs = by_span.setdefault(key, (flag.text, [], []))
                if build.units() not in units:
                    units.append(build.units())
                for e in effects:
                    if e not in effs:
                        effs.append(e)
        for (start, end), (flag, units, effects) in sorted(by_span.items()):
            what = ", ".join(EFFECTS[e] for e in effects)
            yield Finding(
                start, end,
                f"`{flag}` changes the results of {' and '.join(units)}: "
                f"{what}",
                metrics={"flag": flag, "units": units,
                         "ftz": "ftz" in effects, "approx_div": "prec-div" in effects,
                         "approx_sqrt": "prec-sqrt" in effects,
                         "fast_intrinsics": "fast-intrinsics" in effects})
