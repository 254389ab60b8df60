from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import ClassVar

from cudalint.analysis.fp.fast_math_ops import EMBEDDED, NEEDS, WHY, Located, build_code
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
    Reports `--use_fast_math` (`-use_fast_math`) and `-ftz=true` where a build writes them
    and the code that build compiles holds an operation whose fast version can be far
    from the IEEE result on ordinary inputs; the message names the operation, the file
    and line, and what it becomes. Builds are read from `extra_compile_args={'nvcc':
    [...]}` of a `CUDAExtension` in `setup.py`, `extra_cuda_cflags` of torch
    `load()`/`load_inline()`, CuPy `RawKernel`/`RawModule` and PyCUDA `SourceModule`
    `options`, `CMAKE_CUDA_FLAGS`, `CUDA_NVCC_FLAGS` and
    `target_compile_options($<$<COMPILE_LANGUAGE:CUDA>:...>)` in CMake, cmake arguments in
    `pyproject.toml`, and GNU Makefiles. A flag under a condition the build file decides
    from its defaults (`os.getenv("FAST_MATH", "1")`, a CMake `option()`, a setup.py
    command-line switch) counts when the defaults make it active, with a note ("on unless
    FAST_MATH=0"); an explicit `-ftz=false` or `-prec-div=true` keeps its setting after
    `--use_fast_math`, whatever the order.

    The operations (CUDA C++ Programming Guide, "Mathematical Functions", intrinsic
    functions; SASS of nvcc 13.0 for sm_90 in `fixtures/CL401/fast_math_ops.json`):
    - `sinf`/`cosf`/`tanf`/`sincosf` (and `sin`/`cos`/`tan` of a float) become `__sinf`
      etc.: `FMUL.RZ` by 1/(2 pi) and `MUFU.SIN`, no range reduction; the error bound
      (2^-21.41 absolute) holds only for |x| <= pi, "larger otherwise";
    - `powf` (and `pow` of two floats) becomes `__powf` = exp2(y * log2(x)) (`MUFU.LG2`,
      `MUFU.EX2`): NaN for every negative base, where `powf(-2, 3)` is -8. Not counted
      when the base is made non-negative (`fabsf(x)`, a literal) or the exponent is a
      literal with a fraction (IEEE `powf` is NaN there too), nor `pow(float, int)`,
      which nvcc computes in double whatever the flags;
    - `tanhf` becomes `MUFU.TANH`, relative error about 2^-11 (PTX ISA, `tanh.approx`);
    - `x / c` with a constant `c` in (2^126, 2^128) (`FLT_MAX`): `__fdividef` returns 0
      there, and nvcc folds the quotient to `x * 0`;
    - a float constant below FLT_MIN (`1e-40f`, `FLT_TRUE_MIN`) under `-ftz=true`: the
      epsilon meant to keep a divisor from zero is zero.

    Not reported, by the same tables: `__expf` (2 + floor(|1.173 x|) ulp, at most 106 ulp
    wherever the result is a normal float), `__exp10f`, `__logf`/`__log2f`/`__log10f` (3
    ulp, or 2^-21.41 absolute in [0.5, 2]), `/` as `__fdividef` for other divisors (2
    ulp) or under `-prec-div=false` alone (`div.full`, 2 ulp over the full range),
    `sqrtf` under `-prec-sqrt=false` (1 ulp) and `1/sqrtf` (`rsqrtf`, 2 ulp), and the flush
    of values the code computes (only operands and results below 2^-126 change). So
    `-prec-div=false` and `-prec-sqrt=false` are never reported, and a build of exp, log,
    division and multiplication (RWKV's kernels) is not either.

    Where the code is looked for: the CUDA files (`.cu`, `.cuh`) a build names, each
    looked for in the build file's folder and then in the folders above it up to the
    repository root (torch's `load(sources=["cuda/x.cu"])` is relative to where the
    program runs), with the headers they include, three deep (a quoted path relative to
    the file, or any include found on the build's -I folders or in an `include/` folder of
    the project: system headers are found on none);
    the kernel string of a CuPy/PyCUDA/`load_inline` call; for a build whose sources are
    not written statically (a glob in a helper, CMake directory flags, a Makefile), the
    CUDA files under the build file's folder. Only code inside a function whose head
    says `__global__`/`__device__` (or a `*DEVICE*` macro) counts: host code in a `.cu`
    is built by the host compiler. **When the sources are unknown** -- a named file this
    run cannot find, or a Python call whose kernel string is not read -- nothing shows
    that the flag changes a result that matters, and the flag is not reported (the
    finding of every flag, as before, is `FastMathFlags.report_unaffected = True`). A
    flag written once and used by many calls is one finding, at the flag, naming three
    of them and counting the rest.

    ## Why is this bad?
    A flag written once in a build file silently changes every kernel it compiles. Where
    those kernels take `sinf` of a phase of many periods, `powf` of a signed value,
    `tanhf` in a GELU, or keep a divisor off zero with a subnormal epsilon, the results
    are far from the IEEE ones (a few correct bits, or NaN) and from the CPU reference;
    that is worth knowing at the line that does it.

    ## Example
    ```python
    # csrc/ops.cu: y[i] = x[i] * sinf(t * freq[c]);
    CUDAExtension("ops._C", ["csrc/ops.cu"],
                  extra_compile_args={"nvcc": ["-O3", "--use_fast_math"]})
    ```

    ## Use instead
    ```python
    # keep IEEE math; call __expf etc. where speed matters and the error is known
    CUDAExtension("ops._C", ["csrc/ops.cu"], extra_compile_args={"nvcc": ["-O3"]})
    ```
    or reduce the argument first (`sinpif(t * freq)` on a phase in periods, `powf(fabsf(x),
    y)` with the sign put back), or keep the flag on purpose and suppress the report
    (`# noqa: CL401`).

    ## References
    - CUDA C++ Programming Guide, "Mathematical Functions": intrinsic functions
      (`__sinf`, `__powf`, `__expf`, `__fdividef`) and the functions `-use_fast_math`
      replaces https://docs.nvidia.com/cuda/cuda-c-programming-guide/#intrinsic-functions
    - Floating Point and IEEE 754 Compliance for NVIDIA GPUs, 3.4 "Compiler Flags"
      https://docs.nvidia.com/cuda/floating-point/
    - PTX ISA, `tanh.approx.f32`
    - Evidence: `fixtures/CL401/fast_math_ops.json` (per operation, the SASS with and
      without the flag, `tools/gputruth/fast_math_ops.py`), `fixtures/CL401/sass_truth.json`
      (which flags survive a command line)

    ## Precision on unseen code
    Precision on unseen code: 3/3 right, none wrong (2026-11-25, c7afdf7, the four new-project
    sheets 9-12 re-scored, 52 projects; docs/precision.md).
    Precision on unseen code: 0/2 right (2026-11-24, ea1e6f7; docs/precision.md);
    earlier 2/3 (2026-11-24, 1d70d04); 0/9 right in the fourth triage (2026-11-24, d53ffd0:
    RWKV's deliberate flag over exp/division kernels, now not reported)

    """
    code = "CL401"
    name = "fast-math-flags"
    severity = "warning"
    target = "file"
    file_kinds = frozenset({"python", "cmake", "toml", "make"})
    # the behaviour before issue 20: every fast-math flag, whatever the code it builds
    # (for tests, and for a subclass that wants it)
    report_unaffected: ClassVar[bool] = False

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
        kernels = None
        by_span: dict[tuple[int, int], _Flagged] = {}
        for build in builds:
            settings = build.settings
            code = None
            for opt, effects in reported_options(settings):
                flag = opt.flag
                if flag.start < 0 or flag.path != ctx.file.path:
                    continue
                if code is None:
                    if kernels is None and build.kind in EMBEDDED:
                        kernels = _kernels(ctx)
                    code = build_code(build, kernels or [], text)
                needs = _needs(opt, settings, effects)
                hits = [h for h in code.hits if NEEDS[h.hit.kind] in needs]
                if not hits and not self.report_unaffected:
                    continue
                f = by_span.setdefault((flag.start, flag.end), _Flagged(flag.text))
                if build.units() not in f.units:
                    f.units.append(build.units())
                for e in effects:
                    if e not in f.effects:
                        f.effects.append(e)
                for h in hits:
                    if h not in f.hits:
                        f.hits.append(h)
        base = os.path.dirname(os.path.abspath(ctx.file.path))
        for (start, end), f in sorted(by_span.items()):
            metrics = {"flag": f.flag, "units": f.units,
                       "ftz": "ftz" in f.effects, "approx_div": "prec-div" in f.effects,
                       "approx_sqrt": "prec-sqrt" in f.effects,
                       "fast_intrinsics": "fast-intrinsics" in f.effects}
            if not f.hits:
                what = ", ".join(EFFECTS[e] for e in f.effects)
                yield Finding(start, end, f"`{f.flag}` changes the results of "
                              f"{_units(f.units)}: {what}", metrics=metrics)
                continue
            metrics["operations"] = [{"op": h.hit.name, "kind": h.hit.kind,
                                      "file": _where(h, base), "line": h.line}
                                     for h in f.hits]
            yield Finding(start, end, _message(f, base), metrics=metrics)


@dataclass
class _Flagged:
    flag: str
    units: list[str] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)
    hits: list[Located] = field(default_factory=list)


def _needs(opt, settings, effects: list[str]) -> set[str]:
    """What of NEEDS this option brings about: fast intrinsics, and the flush to zero it
    still decides; __fdividef only where --use_fast_math decides -prec-div (an explicit
    -prec-div=false alone gives div.full, 2 ulp over the full range)."""
    out = {e for e in effects if e in ("fast-intrinsics", "ftz")}
    if opt.name == "use_fast_math" and "prec-div" in effects:
        out.add("approx-div")
    return out


def _kernels(ctx):
    from cudalint.sources.python.extract import extract_python_units
    apis = getattr(ctx.settings, "python_compile_apis", ())
    return extract_python_units(ctx.file.text, ctx.file.path, apis).kernels


def _where(h: Located, base: str) -> str:
    if h.path is None:
        return "this file"
    return os.path.relpath(h.path, base).replace(os.sep, "/")


def _units(units: list[str]) -> str:
    """The builds a flag reaches; a list shared by many calls names three (the metrics
    keep them all)."""
    if len(units) <= 3:
        return " and ".join(units)
    return ", ".join(units[:3]) + f" and {len(units) - 3} more builds"


def _message(f: _Flagged, base: str) -> str:
    shown: list[str] = []
    kinds: set[str] = set()
    for h in f.hits:
        if h.hit.kind in kinds:
            continue
        kinds.add(h.hit.kind)
        loc = f"line {h.line}" if h.path is None else f"{_where(h, base)}:{h.line}"
        what = "the constant" if h.hit.kind == "subnormal" else ""
        why = WHY[h.hit.kind].format(fast=h.hit.fast)
        shown.append(f"{what + ' ' if what else ''}`{h.hit.name}` at {loc} {why}")
    more = len(f.hits) - len(shown)
    tail = f" ({more} more such operation{'s' if more != 1 else ''})" if more > 0 else ""
    return (f"`{f.flag}` changes the results of {_units(f.units)}: "
            + "; ".join(shown) + tail)
