"""Accesses in device functions evaluated with the lane values of each call (issue 13,
item 4 for the memory rules: analysis/memory/callee_lanes.py): the finding is at the
access in the device function and says which kernel and call reach it; alike findings
from several kernels are said once, different bindings each; depth and recursion are
bounded; what a call does not bind stays silent. The fixtures
(fixtures/CL201/device_function.cu, fixtures/CL202/device_function.cu,
fixtures/project/device_functions) are checked by test_fixtures and test_project_index,
their figures against ncu (fixtures/CL20{1,2}/truth.json, tools/gputruth/memory.py
--only ...) by test_memory_rules."""
from __future__ import annotations

import json

from cudalint.analysis.memory.figures import coalescing_figures, root_kernel
from cudalint.analysis.memory.lanes import LaneAnalysis
from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.engine import lint_text
from cudalint.sources.base import SourceFile, Unit
from fixture_support import FIXTURES

LOAD = "__device__ float at(const float *p, int i) {\n    return p[i];\n}\n"


def _findings(src: str, code: str = "CL201"):
    result = lint_text("t.cu", src, Settings(select=(code,)), "cuda")
    return [d for d in result.diagnostics if d.code == code]


def _accesses(src: str):
    unit = Unit(SourceFile("t.cu", src, "cuda"), src)
    return UnitContext(unit, Settings()).analysis(LaneAnalysis).accesses


def _kernel(name: str, call: str) -> str:
    return (f"__global__ void {name}(const float *a, float *o) {{\n"
            f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"    o[i] = {call};\n}}\n")


def _launch(*names: str) -> str:
    body = "".join(f"    {n}<<<1, 32>>>(a, o);\n" for n in names)
    return f"void h(const float *a, float *o) {{\n{body}}}\n"


def test_the_finding_names_the_kernel_and_call_it_is_reached_from():
    (d,) = _findings(LOAD + _kernel("k", "at(a, 3 * i)") + _launch("k"))
    assert d.row == 2
    assert "reached from `k` at line 6" in d.message
    assert d.metrics["sectors_per_request"] == 12
    assert d.metrics["reached_from"] == ["`k` at line 6"]


def test_a_coalesced_binding_is_silent_and_not_named():
    src = LOAD + _kernel("strided", "at(a, 3 * i)") + _kernel("plain", "at(a, i)") + \
        _launch("strided", "plain")
    (d,) = _findings(src)
    assert "`strided`" in d.message and "`plain`" not in d.message
    assert not _findings(LOAD + _kernel("plain", "at(a, i)") + _launch("plain"))


def test_alike_findings_from_several_kernels_are_said_once():
    src = LOAD + _kernel("k1", "at(a, 3 * i)") + _kernel("k2", "at(a, 3 * i)") + \
        _launch("k1", "k2")
    (d,) = _findings(src)
    assert "reached from `k1` at line 6 and `k2` at line 10" in d.message
    assert d.metrics["reached_from"] == ["`k1` at line 6", "`k2` at line 10"]


def test_different_bindings_are_reported_each():
    src = LOAD + _kernel("k3", "at(a, 3 * i)") + _kernel("k4", "at(a, 4 * i)") + \
        _launch("k3", "k4")
    found = _findings(src)
    # one finding per place (engine._one_per_place, 006f6a7): the worst binding's figure,
    # the other binding named beside it
    assert [(d.row, d.metrics["sectors_per_request"]) for d in found] == [(2, 16)]
    assert "`k4`" in found[0].message
    assert found[0].metrics["also_for"] == ["reached from `k3` at line 6"]


def test_calls_are_followed_three_levels_deep():
    chain = ("__device__ float d1(const float *p, int i) { return p[i]; }\n"
             "__device__ float d2(const float *p, int i) { return d1(p, i); }\n"
             "__device__ float d3(const float *p, int i) { return d2(p, i); }\n"
             "__device__ float d4(const float *p, int i) { return d3(p, i); }\n")
    assert [a.node.text for a in _accesses(chain + _kernel("k", "d3(a, 3 * i)") +
                                           _launch("k")) if a.reached] == [b"p[i]"]
    assert not [a for a in _accesses(chain + _kernel("k", "d4(a, 3 * i)") + _launch("k"))
                if a.reached]


def test_recursion_ends():
    src = ("__device__ float r(const float *p, int i, int n) {\n"
           "    return n ? r(p, i, n - 1) + p[i] : 0.f;\n}\n" +
           _kernel("k", "r(a, 3 * i, 4)") + _launch("k"))
    got = [a for a in _accesses(src) if a.reached]
    assert got and len(got) <= 3
    assert {coalescing_figures(a)["sectors_per_request"] for a in got} == {12}


def test_what_the_call_does_not_bind_stays_silent():
    # a pointer read from memory, a reference parameter, an index from data
    src = ("__device__ float via(const float *p, int &i) { return p[i]; }\n"
           "__device__ float g(const float *const *q, int i) { return q[0][3 * i]; }\n"
           "__global__ void k(const float *a, const float *const *q, const int *ix,"
           " float *o) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    int j = 3 * i;\n"
           "    o[i] = via(a, j) + g(q, i) + " + "at(a, ix[i] * 3);\n}\n"
           "void h(const float *a, const float *const *q, const int *ix, float *o) {\n"
           "    k<<<1, 32>>>(a, q, ix, o);\n}\n")
    assert not [a for a in _accesses(LOAD + src) if a.reached]


def test_a_cast_value_is_a_load_of_the_record():
    # the eighth float read through static_cast: the record is read whole, no finding
    src = ("__device__ void load8(const float *s, long off, float *v) {\n" +
           "".join(f"    v[{k}] = s[off + {k}];\n" for k in range(7)) +
           "    v[7] = (float)static_cast<unsigned>(s[off + 7]);\n}\n"
           "__global__ void k(const float *a, float *o) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    float v[8];\n    load8(a, i * 8, v);\n    o[i] = v[0] + v[7];\n}\n" +
           _launch("k"))
    assert not _findings(src)
    reached = [a for a in _accesses(src) if a.reached]
    assert len(reached) == 8


def test_figures_equal_ncu_for_each_kernel_of_the_fixture():
    records = json.loads((FIXTURES / "CL201" / "truth.json").read_text())["records"]
    path = FIXTURES / "CL201" / "device_function.cu"
    accesses = _accesses(path.read_text())
    measured = {r["kernel"]: r["ld_sectors_per_request"] for r in records
                if r["file"] == "fixtures/CL201/device_function.cu"}
    assert measured == {"strided": 12, "contiguous": 4, "moved": 12, "templated": 32,
                        "deduced": 16, "nested": 16}
    for kernel, figure in measured.items():
        loads = [a for a in accesses if root_kernel(a).name == kernel and a.is_load]
        assert loads and all(a.reached is not None for a in loads), kernel
        assert {coalescing_figures(a)["sectors_per_request"] for a in loads} == {figure}
