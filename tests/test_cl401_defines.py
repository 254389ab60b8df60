"""CL401 and the macros a build defines (sheet-newcorpus9 W2, torchani): operations in a
branch compiled only where a macro the build's own flags define is not defined are not
named; a macro the build does not define decides nothing (a header may define it)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_text
from cudalint.model.preproc import needs_undefined

AEV = """__device__ __forceinline__ float mycos(float x) {
#ifdef FAST_OPT
  return __cosf(x);
#else
  return cosf(x);
#endif
}
__global__ void cutoff(const float* r, float* out, float rc, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.5f * mycos(3.14159265f * r[i] / rc) + 0.5f;
}
"""
CMAKE = """cmake_minimum_required(VERSION 3.22)
project(ext LANGUAGES CXX CUDA)
DEFS
add_library(ext SHARED aev.cu)
target_compile_options(ext PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-use_fast_math>)
"""


def _cl401(tmp_path: Path, defs: str, source: str = AEV) -> list:
    (tmp_path / "aev.cu").write_text(source)
    cm = tmp_path / "CMakeLists.txt"
    cm.write_text(CMAKE.replace("DEFS", defs))
    s = replace(Settings(), select=("CL401",))
    return lint_text(str(cm), cm.read_text(), s, "cmake").diagnostics


def test_the_targets_own_definition_drops_the_else_branch(tmp_path):
    defs = "target_compile_definitions(ext PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:FAST_OPT>)"
    assert _cl401(tmp_path, defs) == []
    assert _cl401(tmp_path, "add_definitions(-DFAST_OPT)") == []
    assert _cl401(tmp_path, "add_compile_definitions(FAST_OPT=1)") == []


def test_other_macros_or_none_keep_the_finding(tmp_path):
    for defs in ("", "add_definitions(-DOTHER)",
                 "target_compile_definitions(ext PRIVATE OTHER)"):
        (d,) = _cl401(tmp_path, defs)
        assert "`cosf` at aev.cu:5" in d.message
    # a definition for C++ only does not reach the CUDA compile
    (d,) = _cl401(tmp_path, "target_compile_definitions(ext PRIVATE "
                            "$<$<COMPILE_LANGUAGE:CXX>:FAST_OPT>)")
    assert "`cosf`" in d.message
    # #ifndef: the first branch is the one the definition drops
    swapped = AEV.replace("#ifdef FAST_OPT", "#ifndef FAST_OPT").replace(
        "return __cosf(x);\n#else\n  return cosf(x);", "return cosf(x);\n#else\n  return __cosf(x);")
    defs = "target_compile_definitions(ext PRIVATE FAST_OPT)"
    assert _cl401(tmp_path, defs, swapped) == []
    assert len(_cl401(tmp_path, "", swapped)) == 1


def test_needs_undefined_regions():
    text = ("#ifdef A\na\n#elif B\nb\n#else\nc\n#endif\n"
            "#ifndef C\nd\n#else\ne\n#endif\n"
            "#if !defined(D)\nf\n#endif\n#if defined E\ng\n#else\nh\n#endif\n#if X > 1\ni\n#endif\n")
    got = {(text[a:b].strip().splitlines()[0] if text[a:b].strip() else "", n)
           for a, b, n in needs_undefined(text)}
    assert got == {("b", "A"), ("c", "A"), ("d", "C"), ("f", "D"), ("h", "E")}
