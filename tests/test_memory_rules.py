"""CL201/CL202 predictions against the GPU measurements in fixtures/CL20{1,2}/truth.json
(written by tools/gputruth/memory.py on an H100), plus unit tests of the lane engine."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cudalint.analysis.lanes import (LaneAnalysis, bank_conflict_figures,
                                     coalescing_figures)
from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.sources.base import SourceFile, Unit
from fixture_support import FIXTURES

THRESHOLD = Settings().coalescing_threshold


def _accesses(src: str, settings: Settings | None = None):
    unit = Unit(SourceFile("t.cu", src, "cuda"), src)
    return UnitContext(unit, settings or Settings()).analysis(LaneAnalysis).accesses


def _records(code):
    data = json.loads((FIXTURES / code / "truth.json").read_text())
    return [(code, r) for r in data["records"]]


RECORDS = _records("CL201") + _records("CL202")
_CACHE: dict[str, list] = {}


def _file_accesses(path: str):
    if path not in _CACHE:
        _CACHE[path] = _accesses((FIXTURES.parent / path).read_text())
    return _CACHE[path]


@pytest.mark.parametrize("code,rec", RECORDS,
                         ids=[f"{c}-{r['kernel']}" for c, r in RECORDS])
def test_prediction_equals_measurement(code, rec):
    space = "global" if code == "CL201" else "shared"
    figure = coalescing_figures if code == "CL201" else bank_conflict_figures
    key = "sectors_per_request" if code == "CL201" else "wavefronts"
    sites = [a for a in _file_accesses(rec["file"])
             if a.kernel.name == rec["kernel"] and a.space == space]
    compared = 0
    for direction in ("ld", "st"):
        measured = rec[f"{direction}_{'sectors_per_request' if code == 'CL201' else 'wavefronts'}"]
        these = [a for a in sites if (a.is_load if direction == "ld" else a.is_store)]
        if measured is None or not these:
            continue
        figs = [figure(a) for a in these]
        assert all(f is not None and f["exact"] for f in figs), (direction, figs)
        predicted = {f[key] for f in figs}
        # several sites of one direction: the kernel-wide ratio is their common figure
        assert len(predicted) == 1, (direction, predicted)
        assert predicted.pop() == round(measured), (direction, figs, measured)
        if code == "CL201":
            flag_measured = measured >= THRESHOLD * figs[0]["ideal_sectors_per_request"]
            flag_predicted = figs[0]["sectors_per_request"] >= \
                THRESHOLD * figs[0]["ideal_sectors_per_request"]
        else:
            flag_measured = measured / figs[0]["ideal_wavefronts"] >= 2
            flag_predicted = figs[0]["bank_ways"] >= 2
        assert flag_measured == flag_predicted
        compared += 1
    assert compared, "no access of this kernel was predicted"


BLOCK = "void h(float* a, int* ix, int n) { k<<<1, 32>>>(a, ix, n); }\n"


def _one(body: str, params="float* a, int* ix, int n", tail=BLOCK):
    src = f"__global__ void k({params}) {{\n{body}\n}}\n{tail}"
    return _accesses(src)


def test_opaque_stride_is_not_exact_and_not_flagged():
    (acc,) = [a for a in _one("float v = a[threadIdx.x * n]; a[0] = v;") if a.is_load]
    fig = coalescing_figures(acc)
    assert not fig["exact"] and fig["sectors_per_request"] < 2 * 4


def test_data_dependent_index_is_opaque():
    accs = _one("a[n] = a[ix[threadIdx.x]];")
    # a[n] is the same address for every lane (never a finding): not evaluated at all
    assert [a.node.text for a in accs] == [b"ix[threadIdx.x]"]


def test_thread_dependence_follows_locals_and_pointers():
    accs = _one("int t = threadIdx.x; int u = t * 2; float* p = a + u; int v = n;\n"
                "p[1] = a[v]; a[u] = 0.f;")
    assert [a.node.text for a in accs] == [b"p[1]", b"a[u]"]
    assert [coalescing_figures(a)["stride_bytes"] for a in accs] == [8, 8]


def test_xor_swizzle_is_exact():
    src = ("__global__ void k(float* o) { __shared__ float t[32][32]; float s = 0;\n"
           "for (int j = 0; j < 32; ++j) s += t[threadIdx.x][j ^ threadIdx.x]; o[0] = s; }\n"
           "void h(float* o) { k<<<1, 32>>>(o); }\n")
    (acc,) = [a for a in _accesses(src) if a.space == "shared"]
    assert bank_conflict_figures(acc)["wavefronts"] == 1


def test_conditionally_reassigned_index_is_opaque():
    accs = _one("int i = threadIdx.x; if (n > 3) i = threadIdx.x * 32; a[i] = 1.f;")
    assert not accs


def test_unknown_block_shape_is_silent():
    src = "__global__ void k(float* a) { a[threadIdx.x * 32] = 0.f; }\n"
    assert not _accesses(src)
    found = _accesses(src, replace(Settings(), block_size=(64, 1, 1)))
    assert coalescing_figures(found[0])["block_source"] == "config"


def test_launch_bounds_only_for_threadidx_x():
    src = ("__global__ void __launch_bounds__(256) k(float* a) {\n"
           "a[threadIdx.x * 32] = 0.f; a[threadIdx.y * 32] = 0.f; }\n")
    accs = _accesses(src)
    assert len(accs) == 1 and coalescing_figures(accs[0])["block"] == [256, 1, 1]


def test_disagreeing_launches_are_unknown():
    src = ("__global__ void k(float* a) { a[threadIdx.x * 2] = 0.f; }\n"
           "void h(float* a) { k<<<1, 32>>>(a); k<<<1, dim3(8, 4)>>>(a); }\n")
    assert not _accesses(src)


def test_grid_stride_loop_unit_stride():
    accs = _one("for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; "
                "i += blockDim.x * gridDim.x) a[i] = 0.f;")
    fig = coalescing_figures(accs[0])
    assert fig["sectors_per_request"] == 4


def test_thread_dependent_increment_is_opaque():
    accs = _one("int i = 0; for (int k2 = 0; k2 < 4; ++k2) { i += threadIdx.x; } a[i] = 0;")
    assert not accs


def test_flag_dependent_conditional_is_opaque():
    # `wide ? 3 : n` is decided by a kernel argument: no sample may pick a side
    assert not _one("int s = n > 0 ? 3 : 1; a[threadIdx.x * s] = 0.f;")
    # a condition on the thread index alone is evaluated lane by lane
    (acc,) = _one("int s = threadIdx.x < 16 ? 1 : 2; a[threadIdx.x * s] = 0.f;")
    assert coalescing_figures(acc)["exact"]


def test_lvalue_handed_to_a_reinterpreting_call_is_skipped():
    src = ("template <class V, class T> __device__ void AssignAs(T& d, const T& s);\n"
           "__device__ void by_value(float v);\n__device__ void by_ref(float& v);\n"
           "__global__ void k(float* a, float* o) {\n"
           "  float v; AssignAs<float4>(v, a[threadIdx.x * 4]);\n"
           "  by_ref(a[threadIdx.x * 8 + 1]);\n"
           "  by_value(a[threadIdx.x * 8 + 2]); }\n"
           "void h(float* a, float* o) { k<<<1, 32>>>(a, o); }\n")
    assert [a.node.text for a in _accesses(src)] == [b"a[threadIdx.x * 8 + 2]"]


def test_unknown_offset_gives_a_sure_lower_bound():
    # the base moves with n (alignment unknown), the 12-byte lane stride does not
    (acc,) = _one("a[n + threadIdx.x * 3] = 0.f;")
    fig = coalescing_figures(acc)
    assert not fig["exact"] and fig["stride_bytes"] == 12
    assert fig["sectors_per_request"] == 12          # 384 bytes: 12 sectors at best
    assert min(acc.sectors_per_request()) >= 12
    # an unknown stride leaves only one lane whose place is sure: no claim
    (acc,) = _one("a[threadIdx.x * n] = 0.f;")
    assert coalescing_figures(acc)["sectors_per_request"] == 1


def test_message_names_block_source_and_remedy():
    from cudalint.engine import lint_text
    src = ("__global__ void k(float* a) { a[threadIdx.x * 2] = 0.f; }\n"
           "void h(float* a) { k<<<1, 64>>>(a); }\n")
    (d,) = [d for d in lint_text("t.cu", src, Settings(), "cuda").diagnostics
            if d.code == "CL201"]
    assert "(block 64 from the launch at line 2)" in d.message
    assert "8-byte record" in d.message and "vector access" in d.message
    assert d.metrics["block_line"] == 2 and d.metrics["stride_bytes"] == 8
    loose = replace(Settings(), coalescing_threshold=2.5)
    assert not [d for d in lint_text("t.cu", src, loose, "cuda").diagnostics
                if d.code == "CL201"]
