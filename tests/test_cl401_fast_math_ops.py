"""CL401 speaks only where the code a build compiles holds an operation that fast math
moves far from the IEEE result (issue 20): the scanner's claims against the SASS nvcc
emits (fixtures/CL401/fast_math_ops.json, written by tools/gputruth/fast_math_ops.py),
and the rule on whole projects: RWKV's shape silent, sources found above the build file,
unknown sources silent, one finding per flag written, host code and comments left out."""
from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from cudalint.analysis.fp.fast_math_ops import scan
from cudalint.config import Settings
from cudalint.engine import lint_bytes
from cudalint.sources.base import file_kind

ROOT = Path(__file__).resolve().parent.parent
TRUTH = json.loads((ROOT / "fixtures" / "CL401" / "fast_math_ops.json").read_text())

# the mechanism in the SASS of the fast build that makes each kind far
MECHANISM = {"trig": "no-range-reduction", "pow": "lg2-ex2", "tanh": "mufu-tanh",
             "huge-divisor": "folded-to-zero", "subnormal": "ftz-constant"}


def _claim(expr: str) -> str | None:
    hits = scan(f"__global__ void k(float x, float z) {{ {expr}; }}", device_only=False)
    return hits[0].kind if hits else None


def test_every_claim_is_what_the_recorded_sass_shows():
    probes = TRUTH["probes"]
    assert len(probes) >= 20
    kinds = set()
    for p in probes:
        claim = _claim(p["expr"])
        assert claim == p["far"], f"{p['name']}: scanner says {claim}, recorded {p['far']}"
        if claim is not None:
            kinds.add(claim)
            assert p["mechanism"] == MECHANISM[claim], p
        else:
            # not counted: the flag leaves the code, only flushes subnormals, or the
            # documented bound is a few ulp; a far mechanism only with its reason written
            assert p["mechanism"] in ("unchanged", "ftz-only", "bounded") or \
                p["documented"], p
            if p["mechanism"] == "bounded":
                assert p["documented"], p
    assert kinds == set(MECHANISM)
    # the RWKV operations are among the bounded ones
    by = {p["name"]: p for p in probes}
    for name in ("expf", "exp_float", "div", "logf"):
        assert by[name]["far"] is None and by[name]["mechanism"] == "bounded"


def _truth_module():
    spec = importlib.util.spec_from_file_location(
        "fast_math_ops_truth", ROOT / "tools" / "gputruth" / "fast_math_ops.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fast_math_ops_truth"] = mod
    spec.loader.exec_module(mod)
    return mod


def _tools_problem() -> str | None:
    sys.path.insert(0, str(ROOT / "tools" / "gputruth"))
    import fp_sass
    nvcc, cuobjdump, _ = fp_sass.tools()
    if nvcc is None or cuobjdump is None:
        return "nvcc and cuobjdump are needed to compile the probes"
    return None


@pytest.mark.skipif(_tools_problem() is not None, reason=f"SASS check skipped: {_tools_problem()}")
def test_recorded_sass_is_what_nvcc_emits():
    mod = _truth_module()
    got = mod.measure()
    if got["nvcc"] != TRUTH["nvcc"]:
        pytest.skip(f"recorded with {TRUTH['nvcc']}, this is {got['nvcc']}")
    assert got == TRUTH


# -- the rule on projects ----------------------------------------------------------------------

EXP_ONLY = """typedef float F;
__global__ void wkv(const F* __restrict__ k, F* __restrict__ y, int T) {
    F o = -1e38, p = 0, q = 0;
    for (int i = 0; i < T; i++) {
        F no = max(o, k[i]);
        F A = exp(o - no), B = exp(k[i] - no);
        y[i] = (A * p + B) / (A * q + B);   // sinf(x) in a comment
        p = A * p + B; q = A * q + B; o = no;
    }
}
void host(float* x) { x[0] = sinf(x[1]) + powf(x[2], 2.0f); }
"""
WITH_SIN = EXP_ONLY.replace("y[i] = (A * p + B)", "y[i] = sinf(k[i] * 100.0f) + (A * p + B)")


def _project(tmp_path: Path, kernel: str, call: str) -> Path:
    """RWKV's layout: src/model.py loads "cuda/wkv.cu", a path relative to the folder
    the program runs in, the project root."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "cuda").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "cuda" / "wkv.cu").write_text(kernel)
    model = tmp_path / "src" / "model.py"
    model.write_text("from torch.utils.cpp_extension import load\n" + call)
    return model


def _lint(path: Path):
    settings = replace(Settings(), select=("CL401",))
    result = lint_bytes(str(path), path.read_bytes(), settings, file_kind(path))
    return [d for d in result.diagnostics if d.code == "CL401"]


CALL = ('wkv = load(name="wkv", sources=["cuda/wkv_op.cpp", "cuda/wkv.cu"], '
        'extra_cuda_cflags=["-res-usage", "--use_fast_math", "-O3"])\n')


def test_rwkv_shape_exp_division_multiply_is_silent(tmp_path):
    assert _lint(_project(tmp_path, EXP_ONLY, CALL)) == []


def test_a_sinf_in_device_code_is_named_with_its_line(tmp_path):
    (d,) = _lint(_project(tmp_path, WITH_SIN, CALL))
    assert d.row == 2 and "`sinf` at ../cuda/wkv.cu:7 becomes `__sinf`" in d.message
    assert "|x| <= pi" in d.message
    assert d.metrics["operations"] == [{"op": "sinf", "kind": "trig",
                                        "file": "../cuda/wkv.cu", "line": 7}]


def test_unknown_sources_are_silent_unless_asked_for(tmp_path):
    model = _project(tmp_path, WITH_SIN, CALL.replace("cuda/wkv.cu", "cuda/absent.cu"))
    assert _lint(model) == []
    from cudalint.rules.fp.cl401_fast_math_flags import FastMathFlags
    old = FastMathFlags.report_unaffected
    FastMathFlags.report_unaffected = True
    try:
        (d,) = _lint(model)
    finally:
        FastMathFlags.report_unaffected = old
    assert "fast intrinsics for sinf/cosf/expf/logf/powf" in d.message


def test_one_finding_per_flag_written_not_per_call(tmp_path):
    shared = "flags = ['-O3', '--use_fast_math']\n" + "".join(
        f'm{i} = load(name="m{i}", sources=["cuda/wkv.cu"], extra_cuda_cflags=flags)\n'
        for i in range(30))
    found = _lint(_project(tmp_path, WITH_SIN, shared))
    assert [d.row for d in found] == [2]
    assert len(found[0].metrics["units"]) == 30


def test_one_finding_per_call_when_each_call_writes_the_flag(tmp_path):
    calls = "".join(f'm{i} = load(name="m{i}", sources=["cuda/wkv.cu"], '
                    f'extra_cuda_cflags=["--use_fast_math"])\n' for i in range(30))
    found = _lint(_project(tmp_path, WITH_SIN, calls))
    assert [d.row for d in found] == list(range(2, 32))


@pytest.mark.parametrize("flags, reported", [
    (["-prec-div=false", "-prec-sqrt=false"], False),     # div.full / MUFU.SQRT: 2, 1 ulp
    (["-ftz=true"], False),                                # no constant below FLT_MIN
    (["--use_fast_math", "-prec-div=true"], True),         # __sinf still
])
def test_flags_without_fast_intrinsics_leave_sinf(tmp_path, flags, reported):
    call = ('m = load(name="m", sources=["cuda/wkv.cu"], extra_cuda_cflags='
            + json.dumps(flags) + ")\n")
    assert bool(_lint(_project(tmp_path, WITH_SIN, call))) is reported


def test_subnormal_epsilon_needs_ftz_and_huge_divisor_needs_approximate_division(tmp_path):
    kernel = ("__global__ void k(float* y, const float* x) {\n"
              "  y[0] = x[0] / fmaxf(x[1], 1e-40f);\n"
              "  y[1] = x[2] / FLT_MAX;\n}\n")
    def run(flags, sub):
        sub.mkdir()
        call = ('m = load(name="m", sources=["cuda/wkv.cu"], extra_cuda_cflags='
                + json.dumps(flags) + ")\n")
        return [op["kind"] for d in _lint(_project(sub, kernel, call))
                for op in d.metrics["operations"]]
    assert run(["--use_fast_math"], tmp_path / "a") == ["subnormal", "huge-divisor"]
    assert run(["--use_fast_math", "-ftz=false"], tmp_path / "b") == ["huge-divisor"]
    assert run(["--use_fast_math", "-prec-div=true", "-ftz=false"], tmp_path / "c") == []
    assert run(["-ftz=true"], tmp_path / "d") == ["subnormal"]


@pytest.mark.parametrize("expr, kind", [
    ("powf(x, 2.0f)", "pow"), ("pow(x, z)", "pow"), ("powf(fabsf(x), z)", None),
    ("powf(x, 0.5f)", None), ("pow(x, 2)", None), ("powf(2.0f, x)", None),
    ("sin((double)x)", None), ("sin(x * 0.5)", None), ("glm::sin(x)", "trig"),
    ("sincosf(x, &s, &c)", "trig"), ("tanh(x)", "tanh"), ("__sinf(x)", None),
    ("x / 3.0e38f", "huge-divisor"), ("x / 1e30f", None), ("1.17549435e-38f + x", None),
    ("x + 1e-45f", "subnormal"), ("expf(x) / logf(z)", None), ("p->sin(x)", None),
])
def test_operation_kinds(expr, kind):
    assert _claim(expr) == kind


def test_device_regions_leave_host_functions_and_take_device_lambdas_and_functors():
    text = """
float host_only(float x) { return sinf(x); }
struct Op { __device__ float operator()(float x) const { return cosf(x); } };
void launch() { auto f = [=] __device__ (float x) { return tanf(x); }; }
template <typename T> __host__ __device__ T both(T x) { for (int i = 0; i < 2; ++i) {} return sin(x); }
#define HD __host__ __device__
C10_HOST_DEVICE inline float m(float x) { return tanhf(x); }
"""
    assert [h.name for h in scan(text, device_only=True)] == ["cosf", "tanf", "sin", "tanhf"]


def test_cache_deps_of_a_build_file_are_the_kernels_it_compiles(tmp_path):
    from cudalint.analysis.fp.fast_math_ops import build_file_deps
    (tmp_path / ".git").mkdir()
    (tmp_path / "cuda").mkdir()
    kernel = tmp_path / "cuda" / "k.cu"
    kernel.write_text('#include "h.cuh"\n__global__ void k(float* y) { y[0] = expf(y[0]); }\n')
    (tmp_path / "cuda" / "h.cuh").write_text("#pragma once\n")
    cmake = tmp_path / "CMakeLists.txt"
    text = 'set(CMAKE_CUDA_FLAGS "--use_fast_math")\nadd_library(k cuda/k.cu)\n'
    cmake.write_text(text)
    digest, deps = build_file_deps(str(cmake), text, "cmake")
    assert sorted(Path(p).name for p, _ in deps) == ["h.cuh", "k.cu"]
    kernel.write_text('#include "h.cuh"\n__global__ void k(float* y) { y[0] = sinf(y[0]); }\n')
    assert build_file_deps(str(cmake), text, "cmake")[0] != digest
    assert build_file_deps(str(cmake), "add_library(k cuda/k.cu)\n", "cmake") == ("", ())


def test_headers_on_the_include_path_are_read(tmp_path):
    """tiny-cuda-nn's shape: src/x.cu includes <lib/act.h> from the project's include/
    folder, built by a setup.py two folders down; the tanhf there is what changes."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "include" / "lib").mkdir(parents=True)
    (tmp_path / "include" / "lib" / "act.h").write_text(
        "#pragma once\n#include <cuda_fp16.h>\n"
        "__device__ inline float act(float x) { return tanhf(x); }\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "x.cu").write_text(
        "#include <lib/act.h>\n__global__ void k(float* y) { y[0] = act(y[0]); }\n")
    setup = tmp_path / "bindings" / "torch" / "setup.py"
    setup.parent.mkdir(parents=True)
    setup.write_text('from torch.utils.cpp_extension import CUDAExtension\n'
                     'CUDAExtension("m", ["../../src/x.cu"], '
                     'extra_compile_args={"nvcc": ["--use_fast_math"]})\n')
    (d,) = _lint(setup)
    assert "`tanhf` at ../../include/lib/act.h:3" in d.message


def test_a_shared_list_names_three_builds_and_counts_the_rest(tmp_path):
    shared = "flags = ['-O3', '--use_fast_math']\n" + "".join(
        f'm{i} = load(name="m{i}", sources=["cuda/wkv.cu"], extra_cuda_cflags=flags)\n'
        for i in range(5))
    (d,) = _lint(_project(tmp_path, WITH_SIN, shared))
    assert "`load` module `m2` (cuda/wkv.cu) and 2 more builds: `sinf`" in d.message
    assert "`m3`" not in d.message and len(d.metrics["units"]) == 5
