"""Template kernels analysed once per instantiation the project makes (issue 13, items 3
and 4): arguments bound from launches in the unit (through the launching function's
constants and an enclosing host template), from other mentions (``linear_kernel(k<3>,
...)``) and from launches in other files; device functions bound at their call; the
launcher in the kernel file's cache key; a finding alike in several instantiations said
once. The fixtures (fixtures/CL101/templated_reduction.cu, fixtures/CL202/
template_tile.cu, fixtures/CL201/template_dead_loop.cu, fixtures/project/templates) are
checked by test_fixtures and test_project_index."""
from __future__ import annotations

import json
import re

from cudalint.config import ConfigResolver, Settings
from cudalint.context import UnitContext
from cudalint.discovery import discover
from cudalint.engine import lint_text
from cudalint.model.instances import Instances, split_args
from cudalint.sources.base import SourceFile, Unit

import cudalint.project.index as index
from fixture_support import FIXTURES


def _kernels(src: str):
    unit = Unit(file=SourceFile(path="t.cu", text=src, kind="cuda"), text=src)
    ctx = UnitContext(unit, Settings())
    return ctx.analysis(Instances).kernels()


def test_split_args():
    assert split_args("<256, float>") == ["256", "float"]
    assert split_args("<a<b, c>, (d > e)>") == ["a<b, c>", "(d > e)"]


def test_uninstantiated_template_is_analysed_as_written():
    src = "template <int N> __global__ void k(float* a) { a[threadIdx.x * N] = 0; }\n"
    (fn,) = _kernels(src)
    assert fn.instance is None and fn.template_params == {"N": None}


def test_launch_binds_values_and_types_through_local_constants():
    src = ("template <typename T, int N> __global__ void k(T* a) { a[threadIdx.x * N] = 0; }\n"
           "void go(double* a) { constexpr int n = 4; k<double, n><<<1, 64>>>(a); }\n")
    (fn,) = _kernels(src)
    assert fn.instance == "k<double, 4>"
    assert fn.constants["N"] == 4 and fn.params[0].base_type == "double"
    assert [l.block for l in fn.instance_launches] == [(64, 1, 1)]


def test_mention_outside_a_launch_binds():
    src = ("template <unsigned stride> __global__ void k(float* a) { a[threadIdx.x] = stride; }\n"
           "void go(float* a) { linear_kernel(k<3>, 0, nullptr, 10, a); }\n")
    (fn,) = _kernels(src)
    assert fn.instance == "k<3>" and fn.instance_launches == ()


def test_host_template_passes_its_arguments_on():
    src = ("template <int B> __global__ void k(float* a) { a[threadIdx.x] = B; }\n"
           "template <int B> void launch(float* a) { k<B><<<1, B>>>(a); }\n"
           "void go(float* a) { launch<128>(a); launch<64>(a); }\n")
    got = sorted(f.instance for f in _kernels(src))
    assert got == ["k<128>", "k<64>"]
    blocks = {f.instance: f.instance_launches[0].block for f in _kernels(src)}
    assert blocks == {"k<128>": (128, 1, 1), "k<64>": (64, 1, 1)}


def test_deduced_launch_binds_the_declared_type():
    src = ("template <typename T> __global__ void k(T* a) { a[threadIdx.x] = 0; }\n"
           "void go(float* a, double* b) { k<<<1, 32>>>(a); k<double><<<1, 32>>>(b); }\n")
    got = sorted(f.instance for f in _kernels(src))
    assert got == ["k<double>", "k<float>"]


def test_launch_whose_argument_type_is_not_written_keeps_the_kernel_as_written():
    src = ("template <typename T> __global__ void k(T* a) { a[threadIdx.x] = 0; }\n"
           "void go(Thing t, double* b) { k<<<1, 32>>>(t.data()); k<double><<<1, 32>>>(b); }\n")
    got = [f.instance for f in _kernels(src)]
    assert got == [None, "k<double>"]


def test_findings_alike_in_two_instantiations_are_said_once():
    src = ("template <int W> __global__ void k(float* o) {\n"
           "  __shared__ float t[32][32];\n"
           "  t[threadIdx.y][threadIdx.x] = W;\n  __syncthreads();\n"
           "  o[threadIdx.x] = t[threadIdx.x][threadIdx.y];\n}\n"
           "void go(float* o) { k<1><<<1, dim3(32, 32)>>>(o); k<2><<<1, dim3(32, 32)>>>(o); }\n")
    settings = Settings(select=("CL202",))
    found = [d for d in lint_text("t.cu", src, settings, "cuda").diagnostics
             if d.code == "CL202"]
    assert len(found) == 1, [d.message for d in found]
    assert "instantiations `k<1>`, `k<2>`" in found[0].message


def test_launcher_template_argument_is_in_the_kernel_files_cache_key(tmp_path):
    from cudalint.project.includes import include_deps
    kernel = tmp_path / "k.cuh"
    kernel.write_text("template <int N> __global__ void k(float* a) "
                      "{ a[threadIdx.x * N] = 0; }\n")
    launcher = tmp_path / "main.cu"
    launcher.write_text('#include "k.cuh"\nvoid go(float* a) { k<1><<<1, 64>>>(a); }\n')
    targets = list(discover([str(tmp_path)], ConfigResolver()))
    try:
        index.prepare(targets)
        digest, deps = include_deps(kernel, kernel.read_text())
        assert str(launcher) in {p for p, _ in deps}
        (site,) = index.current().launches_of(str(kernel))
        assert site.template_values == ("1",)
        launcher.write_text('#include "k.cuh"\nvoid go(float* a) { k<3><<<1, 64>>>(a); }\n')
        index.prepare(targets)
        assert include_deps(kernel, kernel.read_text())[0] != digest
        (site,) = index.current().launches_of(str(kernel))
        assert site.template_values == ("3",)
    finally:
        index._CURRENT = None


# ---- the fixtures against the GPU (tools/gputruth/templates.py, H100) ---------------------
def _truth(code: str) -> list[dict]:
    return json.loads((FIXTURES / code / "templates.truth.json").read_text())["records"]


def _findings(rel: str, code: str):
    path = FIXTURES.parent / rel
    result = lint_text(str(path), path.read_text(), Settings(select=(code,)), "cuda")
    return [d for d in result.diagnostics if d.code == code]


def _names(message: str, kernel: str) -> bool:
    return f"`{kernel}`" in message


def test_cl101_follows_racecheck_per_instantiation():
    records = _truth("CL101")
    assert {r["kernel"] for r in records} == {"reduce6<256>", "reduce6<128>",
                                              "reduce6_synced<256>"}
    found = _findings(records[0]["file"], "CL101")
    for r in records:
        predicted = any(_names(d.message, r["kernel"]) for d in found)
        measured = bool(r["errors"] or r["warnings"])
        assert predicted == measured, (r["kernel"], r["summary"])
        if measured:     # reported at the racing steps racecheck names
            rows = {d.row for d in found if _names(d.message, r["kernel"])}
            assert rows <= set(r["lines"]), (rows, r["lines"])


def test_cl202_wavefronts_equal_ncu_per_instantiation():
    records = _truth("CL202")
    found = _findings(records[0]["file"], "CL202")
    for r in records:
        mine = [d for d in found if _names(d.message, r["kernel"])]
        if r["ld_wavefronts"] <= (2 if "double" in r["kernel"] else 1):
            assert not mine, r["kernel"]            # conflict-free, measured
            continue
        (d,) = mine
        got = int(re.search(r"(\d+) wavefronts instead of", d.message).group(1))
        assert got == r["ld_wavefronts"], (r["kernel"], d.message)


def test_cl201_dead_loop_never_stores():
    (r,) = _truth("CL201")
    warps = r["grid"][0] * r["block"][0] // 32
    # three store requests per warp: the padding loop's store never executes
    assert r["metrics"]["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"] == 3 * warps
    assert not _findings(r["file"], "CL201")


def test_sync_rules_name_the_instantiation():
    """CL103, CL105, CL106 and CL107 name the instantiation as CL101/CL102 do; a finding
    alike in several instantiations is said once, naming them all."""
    src = ("template <int N>\n__global__ void exits(float *a) {\n"
           "    __shared__ float s[256];\n    if (threadIdx.x >= N) return;\n"
           "    s[threadIdx.x] = a[threadIdx.x];\n    __syncthreads();\n"
           "    a[threadIdx.x] = s[(threadIdx.x + 1) % N];\n}\n"
           "template <int N>\n__global__ void two(float *a) {\n"
           "    __shared__ float s[256];\n"
           "    if (threadIdx.x < N) { s[threadIdx.x] = 1.f; __syncthreads(); }\n"
           "    else { s[threadIdx.x] = 2.f; __syncthreads(); }\n"
           "    a[threadIdx.x] = s[(threadIdx.x + 1) % 256];\n}\n"
           "template <int N>\n__global__ void mask(float *a) {\n"
           "    float v = a[threadIdx.x];\n"
           "    if (threadIdx.x < 16) v += __shfl_down_sync(0xffffffff, v, N);\n"
           "    a[threadIdx.x] = v;\n}\n"
           "template <int N>\n__global__ void conflict(float *a) {\n"
           "    __shared__ int s[4];\n    s[0] = threadIdx.x + N;\n    __syncthreads();\n"
           "    a[threadIdx.x] = s[0];\n}\n"
           "void h(float *a) {\n    exits<64><<<1, 256>>>(a);\n    exits<128><<<1, 256>>>(a);\n"
           "    two<64><<<1, 256>>>(a);\n    mask<1><<<1, 32>>>(a);\n"
           "    conflict<2><<<1, 256>>>(a);\n}\n")
    settings = Settings(select=("CL103", "CL105", "CL106", "CL107"))
    found = {(d.code, d.row): d.message for d in lint_text("t.cu", src, settings,
                                                           "cuda").diagnostics}
    assert "in instantiations `exits<64>`, `exits<128>`" in found[("CL106", 6)]
    assert "in instantiation `two<64>`" in found[("CL103", 12)]
    assert "in instantiation `mask<1>`" in found[("CL105", 19)]
    assert "in instantiation `conflict<2>`" in found[("CL107", 25)]
