"""CL204's advice says only what is true for the array (docs/precision.md, "Wrong findings":
pytorch3d iou_utils.cuh:723 was told to bound a loop or use shared memory, and neither
exists there). One test per branch of the advice, on fixtures/CL204/remedies.cu (each
kernel built with ptxas -v in fixtures/CL204/stack.json) and the older CL204 fixtures:

* the index: a loop counter or a parameter can become a constant; data and running
  counts that advance by a data-dependent amount cannot;
* registers: more than 255 words (1020 bytes) are never held in registers;
* shared memory: one copy per thread for the launch's block fits 48 KB static or the
  target's opt-in maximum (227 KB on sm_90), or is no way out;
* otherwise: the local-memory traffic stays, hold fewer elements per thread.

Also: with --ptxas, every finding on the fixture is confirmed by the kernel's stack frame.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from cudalint.config import PtxasSettings, Settings
from cudalint.engine import lint_text

ROOT = Path(__file__).resolve().parent.parent
CL204 = ROOT / "fixtures" / "CL204"


def _findings(path: Path, settings: Settings | None = None) -> dict[str, object]:
    s = replace(settings or Settings(), select=("CL204",))
    found = [d for d in lint_text(str(path), path.read_text(), s, "cuda").diagnostics
             if d.code == "CL204"]
    return {(d.metrics["array"], d.row): d for d in found}


def _one(path: Path, array: str, settings: Settings | None = None):
    [d] = [d for (name, _), d in _findings(path, settings).items() if name == array]
    return d


def test_running_count_of_4800_bytes_gets_no_remedy_that_does_not_exist():
    """The pytorch3d shape: `offset` is stepped in an inner loop whose trip count is
    data, the array is 4800 bytes and the kernel runs 256 threads a block. (Not a
    default finding since sheet-newcorpus8 N1: the array holds values the thread
    computes; tests/test_cl204_newcorpus8.py. The message is the one reported with
    the findings whose only remedy is to hold less.)"""
    from cudalint.rules.memory.cl204_local_memory_array import LocalMemoryArray
    old = LocalMemoryArray.report_without_remedy
    LocalMemoryArray.report_without_remedy = True
    try:
        d = _one(CL204 / "remedies.cu", "next")
    finally:
        LocalMemoryArray.report_without_remedy = old
    m = d.message
    assert "`offset`, a running count, stepped a data-dependent number of times" in m
    assert "nvcc unrolls" not in m and "compile-time bound" not in m
    assert "1200 32-bit registers; a thread has at most 255" in m
    assert "cannot be held in registers whatever its index" in m
    assert "4800 bytes x 256 threads = 1200 KB" in m and "227 KB" in m
    assert "keep it in" not in m
    assert "hold fewer elements per thread" in m
    assert d.metrics["remedy"] == "restructure"
    assert d.metrics["block_threads"] == 256 and d.metrics["registers"] == 1200


def test_runtime_counter_that_fits_registers_can_unroll_and_use_dynamic_shared():
    d = _one(CL204 / "remedies.cu", "q")
    m = d.message
    assert "give the loop a compile-time bound" in m
    assert "150 of the 255 registers" in m
    assert "600 bytes x 128 threads = 75 KB" in m
    assert "cudaFuncAttributeMaxDynamicSharedMemorySize" in m and "227 KB" in m
    assert d.metrics["remedy"] == "unroll+shared"


def test_runtime_counter_over_1kb_is_told_registers_cannot_hold_it():
    d = _one(CL204 / "remedies.cu", "w")
    m = d.message
    assert "compile-time bound" not in m
    assert "512 32-bit registers" in m and "cannot be held in registers" in m
    # block unknown: 227 KB / 2048 bytes = 113 threads, a block worth having since the
    # H100 measured it (fixtures/CL204/shared_cutoff.json: 2 KB run-time counter 4.2x
    # faster in shared slices; tests/test_cl204_shared_cutoff.py)
    assert "keep it in dynamic shared memory, one slice per thread, for blocks of at " \
        "most 113 threads (2048 bytes each: 227 KB per block on sm_90" in m
    assert d.metrics["remedy"] == "shared"


def test_data_index_with_a_block_that_fits_static_shared_memory():
    d = _one(CL204 / "remedies.cu", "counts")
    m = d.message
    assert "`c` comes from memory, which no unrolling makes a compile-time constant" in m
    assert "128 bytes x 256 threads = 32 KB of the 48 KB a block has" in m
    assert "`__shared__ int counts[32][BLOCK]`" in m
    assert d.metrics["remedy"] == "shared"


def test_data_index_whose_block_needs_more_shared_memory_than_a_gpu_has():
    d = _one(CL204 / "remedies.cu", "h")
    m = d.message
    assert "compile-time bound" not in m and "keep it in" not in m
    assert "800 bytes x 512 threads = 400 KB" in m
    assert d.metrics["remedy"] == "restructure"


def test_running_count_under_a_condition_block_unknown():
    d = _one(CL204 / "remedies.cu", "keep")
    m = d.message
    assert "`m`, a running count, stepped under a condition that depends on data" in m
    assert "no unrolling makes `m` a compile-time constant" in m
    assert "for blocks of at most 192 threads" in m and "up to 908 threads" in m
    assert d.metrics["remedy"] == "shared" and "block_threads" not in d.metrics


def test_count_stepped_every_iteration_is_an_induction_variable():
    d = _one(CL204 / "remedies.cu", "g")
    m = d.message
    assert "`m`, stepped once per iteration of a loop with a run-time trip count" in m
    assert "give the loop a compile-time bound" in m
    assert d.metrics["remedy"] == "unroll+shared"


def test_constant_table_goes_to_constant_memory():
    d = _one(CL204 / "measured_shapes.cu", "edge_count")
    assert "`__constant__` memory" in d.message
    assert "one 256-byte copy per block" in d.message
    assert d.metrics["remedy"] == "constant"


def test_bits_set_under_a_data_condition_index_by_data():
    """pytorch3d's marching cubes: `cubeindex |= 1 << t[i]` under `if (vol[...] < iso)`
    (ptxas: 256-byte frame); the same under `if (i & 1)` folds (no frame)."""
    found = _findings(CL204 / "accumulated.cu")
    [d] = found.values()
    assert "`cubeindex`, changed (`|=`) under a condition that depends on data" in d.message
    assert "no unrolling makes `cubeindex` a compile-time constant" in d.message
    assert d.metrics["remedy"] == "constant"


def test_parameter_thread_and_rolled_counter_branches():
    found = _findings(CL204 / "local_arrays.cu")
    by_reason = {(d.metrics["array"], d.metrics["reason"]): d for d in found.values()}
    param = by_reason[("t", "many")]
    assert "make the parameter a compile-time constant (a template parameter)" in \
        param.message and param.metrics["remedy"] == "template+shared"
    thread = by_reason[("t", "big")]
    assert "`__shfl_sync`" in thread.message
    assert thread.metrics["remedy"] == "shuffle+shared"
    rolled = next(d for d in found.values() if "unroll 1`" in d.message)
    assert "let the loop unroll" in rolled.message
    assert rolled.metrics["remedy"] == "unroll+shared"


_DEVICE = """
struct FaceVerts { float3 v0, v1, v2, v3; };
__device__ int ClipTri(const FaceVerts& t, float p, FaceVerts* out);
__device__ int BoxIntersections(const FaceVerts* planes, FaceVerts* face_verts_out)
{
    int num_tris = 12;
    for (int p = 0; p < 6; ++p) {
        FaceVerts tri_verts_updated[100];
        int offset = 0;
        for (int t = 0; t < num_tris; ++t) {
            FaceVerts tri_updated[2];
            const int count = ClipTri(face_verts_out[t], planes[p].v0.x, tri_updated);
            for (int v = 0; v < count; ++v) {
                tri_verts_updated[offset] = tri_updated[v];
                offset++;
            }
        }
        num_tris = min(100, offset);
        for (int j = 0; j < num_tris; ++j) face_verts_out[j] = tri_verts_updated[j];
    }
    return num_tris;
}
"""
_KERNEL = """
__global__ void IoUBox3DKernel(const FaceVerts* planes, FaceVerts* work, int* out)
{
    out[threadIdx.x] = BoxIntersections(planes, work + 12 * threadIdx.x);
}
void run(const FaceVerts* planes, FaceVerts* work, int* out)
{
    IoUBox3DKernel<<<512, 256>>>(planes, work, out);
}
"""


def _lint(src: str, settings: Settings | None = None):
    s = replace(settings or Settings(), select=("CL204",))
    return [d for d in lint_text("k.cu", src, s, "cuda").diagnostics if d.code == "CL204"]


def test_a_device_function_takes_the_block_of_the_kernels_that_call_it(monkeypatch):
    # clipped triangles the thread computes, with no home: withheld by default since
    # sheet-newcorpus8 N1 (tests/test_cl204_newcorpus8.py); the message is checked here
    from cudalint.rules.memory.cl204_local_memory_array import LocalMemoryArray
    assert _lint(_DEVICE + _KERNEL) == []
    monkeypatch.setattr(LocalMemoryArray, "report_without_remedy", True)
    [d] = _lint(_DEVICE + _KERNEL)
    assert (d.row, d.column) == (14, 17)
    assert "4800 bytes x 256 threads = 1200 KB" in d.message
    assert "block 256 from the launch" in d.message
    assert d.metrics["remedy"] == "restructure"
    # alone (a header linted by itself): no block, and 48 threads are no block to offer
    [d] = _lint(_DEVICE)
    assert "only for blocks of at most 48 threads" in d.message
    assert "keep it in" not in d.message and "compile-time bound" not in d.message


def test_shared_memory_limit_of_the_target_architecture():
    sm75 = replace(Settings(), arch="sm_75", arch_set=True)
    d = _one(CL204 / "remedies.cu", "q", sm75)
    assert "more than the 64 KB a block can have on sm_75" in d.message
    assert d.metrics["remedy"] == "unroll"


def test_an_index_of_data_and_a_counter_is_named_by_the_data():
    src = """
__global__ void k(const float* a, const int* idx, float* out, int n)
{
    float t[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) t[i] = a[i];
    float s = 0.0f;
    for (int j = 0; j < n; ++j) s += t[(j + idx[j]) & 31];
    out[threadIdx.x] = s;
}
"""
    [d] = _lint(src)
    assert "loaded from memory (`idx[j]`)" in d.message
    assert "compile-time bound" not in d.message


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found")
def test_with_ptxas_every_finding_is_confirmed_by_its_stack_frame():
    recorded = {r["kernel"]: r["stack_frame_bytes"]
                for r in json.loads((CL204 / "stack.json").read_text())["records"]
                if r["file"] == "fixtures/CL204/remedies.cu"}
    plain = _findings(CL204 / "remedies.cu")
    compiled = _findings(CL204 / "remedies.cu",
                         replace(Settings(), ptxas=replace(PtxasSettings(), enabled=True)))
    assert set(compiled) == set(plain)
    for d in compiled.values():
        assert "-byte stack frame on sm_90)" in d.message
        assert d.metrics["stack_frame_bytes"] in recorded.values()
    assert recorded["gather_const"] == 0


def test_overloads_take_the_blocks_of_their_own_callers(tmp_path):
    """Issue 14's triage, W1 (mmcv convex_iou's two `polygon_cut`): a device function's
    block is that of the kernels calling *that* definition, told apart from an overload
    by the call's argument count; before, the overloads pooled their callers (the
    second overload cited the other kernel's launch, or got no block at all)."""
    keep = ("__device__ inline int keep(float* p, int n{extra}) {{\n"
            "  float kept[64];\n  int m = 0;\n"
            "  for (int i = 0; i < n; i++) if (p[i] > 0) {{ kept[m] = p[i];{grad} m++; }}\n"
            "  for (int i = 0; i < m; i++) p[i] = kept[i];\n  return m;\n}}\n")
    (tmp_path / "kern.cuh").write_text(
        keep.format(extra=", float* g", grad=" g[i] = 1;") + keep.format(extra="", grad="")
        + "__global__ void with_grad(float* p, float* g, int n) { int t = blockIdx.x * "
          "blockDim.x + threadIdx.x; keep(p + t * n, n, g + t * n); }\n"
          "__global__ void plain(float* p, int n) { int t = blockIdx.x * blockDim.x + "
          "threadIdx.x; keep(p + t * n, n); }\n")
    (tmp_path / "launch.cu").write_text(
        '#include "kern.cuh"\n'
        "void run_plain(float* p, int n, int b) { plain<<<b, 64>>>(p, n); }\n"
        "void run_grad(float* p, float* g, int n, int b) { with_grad<<<b, 256>>>(p, g, n); }\n")
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "cudalint", "check", str(tmp_path),
                          "--no-cache", "--select", "CL204", "--output-format", "json"],
                         capture_output=True, text=True, timeout=120)
    found = {d["location"]["row"]: d for d in json.loads(out.stdout)}
    assert sorted(found) == [4, 11], out.stdout
    assert found[4]["metrics"]["block_threads"] == 256
    assert "launch.cu at line 3" in found[4]["message"]
    assert found[11]["metrics"]["block_threads"] == 64
    assert "launch.cu at line 2" in found[11]["message"]
