"""CL108: global-memory races between threads of one launch (issue 23, item 1), against
the H100 records of fixtures/CL108/truth.json (two serial schedules of each launch and
two parallel runs, tools/gputruth/global_race.py), and the cooperative-groups barrier
spellings (item 3) read wherever ``__syncthreads()`` is."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from cudalint.config import Settings
from cudalint.engine import lint_bytes

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "CL108" / "global_race.cu"
TRUTH = ROOT / "fixtures" / "CL108" / "truth.json"


def _findings(src: str, codes=("CL108",), name="t.cu"):
    res = lint_bytes(name, src.encode(), replace(Settings(), select=codes), "cuda")
    return res.diagnostics


def _kernel_at(src: str, row: int) -> str:
    """The __global__ function whose body holds 1-based ``row``."""
    found = None
    for k, line in enumerate(src.splitlines(), 1):
        m = re.match(r"__global__ void (\w+)", line)
        if m:
            found = m.group(1)
        if k == row:
            return found
    raise AssertionError(row)


def test_rule_follows_the_gpu_record():
    """CL108 on a fixture kernel exactly where its two serial schedules disagree (the
    result depends on the order of the threads), silent where every schedule and the
    GPU agree."""
    src = FIXTURE.read_text()
    flagged = {_kernel_at(src, d.row) for d in _findings(src)}
    records = json.loads(TRUTH.read_text())["records"]
    assert records, "no record"
    racy = {r["kernel"] for r in records if r["serial_orders_differ"] > 0}
    clean = {r["kernel"] for r in records if r["serial_orders_differ"] == 0
             and r["gpu_vs_ascending"] == 0 and r["gpu_runs_differ"] == 0}
    assert racy and clean
    assert racy | clean == {r["kernel"] for r in records}
    assert flagged == racy, (flagged, racy)


def test_racecheck_does_not_see_global_races():
    """Why the evidence is the result: racecheck reports nothing on these kernels."""
    doc = json.loads(TRUTH.read_text())
    assert any("0 hazards" in line for line in doc["racecheck"])


_ONE = """__global__ void k(float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    %s
}
"""


@pytest.mark.parametrize("body", [
    "a[i] = a[i + 1];",
    "if (i > 0) a[i] = a[i - 1] * 2.f;",
    "a[i] += a[i + 32];",                         # the next warp
    "float x = a[i + blockDim.x]; a[i] = x;",     # the next block
    "a[i / 2] += b[i];",                          # two threads update one element
    "a[i] = a[i + 1]; __syncthreads();",          # a barrier orders no other block
    "a[threadIdx.x] = a[threadIdx.x + 1]; __threadfence();",   # nor does a fence
])
def test_races(body):
    assert len(_findings(_ONE % body)) == 1, body


@pytest.mark.parametrize("body", [
    "a[i] = a[i] + 1.f;",
    "a[i / 2] = 1.f;",                            # one store site: values may agree
    "a[2 * i] = a[2 * i + 1];",
    "b[i] = a[i + 1];",
    "atomicAdd(&a[i + 1], 1.f);",
    "if (i >= n) return; a[i] += a[i + n];",      # the reading half never writes
    "if (i < n) a[i] = b[i]; else b[i] = a[i];",
    # a barrier orders one block (the block run's question); one block per launch here
    "float x = a[threadIdx.x + 1]; __syncthreads(); a[threadIdx.x] = x;",
])
def test_look_alikes(body):
    assert _findings(_ONE % body) == [], body


def test_aliasing_launch_makes_one_buffer():
    src = _ONE % "if (i > 0) a[i] = b[i - 1];"
    assert _findings(src) == []
    assert len(_findings(src + "void h(float* d, int n) { k<<<4, 256>>>(d, d, n); }\n")) == 1
    assert _findings(src + "void h(float* d, float* e, int n) { k<<<4, 256>>>(d, e, n); }\n"
                     ) == []


def test_one_block_launch_has_no_cross_block_race():
    src = """__global__ void k(float* a) {
    unsigned t = threadIdx.x;
    float x = a[t + blockIdx.x * 64];
    a[t + blockIdx.x * 64 + 256] = x;
}
"""
    assert len(_findings(src)) == 1
    assert _findings(src + "void h(float* d) { k<<<1, 256>>>(d); }\n") == []


# -- cooperative-groups barriers (item 3) ----------------------------------------------
_FORMS = ["__syncthreads();", "block.sync();", "g.sync();", "cg::sync(block);",
          "cg::this_thread_block().sync();", "__syncthreads_count(1);",
          "(void)__syncthreads_and(1);", "__syncthreads_or(tid);",
          'asm volatile("bar.sync 0;" ::: "memory");',
          'asm volatile("barrier.sync 0;" ::: "memory");', "__barrier_sync(0);",
          "sync(block);", "synchronize(block);"]
_CG = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
using namespace cooperative_groups;
__global__ void k(float* out, const float* in) {
    __shared__ float s[256];
    cg::thread_block block = cg::this_thread_block();
    auto g = cg::this_thread_block();
    unsigned tid = threadIdx.x;
    s[tid] = in[blockIdx.x * 256 + tid];
    %s
}
void h(float* o, const float* i) { k<<<4, 256>>>(o, i); }
"""


@pytest.mark.parametrize("form", _FORMS)
def test_every_barrier_spelling_orders_a_block_reduction(form):
    body = ("%s\nfor (unsigned k = 128; k > 0; k >>= 1) {\n"
            "    if (tid < k) s[tid] += s[tid + k];\n    %s\n}\n"
            "if (tid == 0) out[blockIdx.x] = s[0];") % (form, form)
    assert _findings(_CG % body, ("CL101", "CL102")) == [], form
    bare = body.replace(form, "")
    assert [d.code for d in _findings(_CG % bare, ("CL101", "CL102"))] == ["CL102"]


@pytest.mark.parametrize("form", _FORMS)
def test_every_barrier_spelling_in_a_branch_is_a_mismatched_barrier(form):
    body = ("if (tid < 64) {\n    %s\n    s[tid] += 1.f;\n}\n%s\n"
            "if (tid == 0) out[blockIdx.x] = s[0];") % (form, form)
    assert [d.code for d in _findings(_CG % body, ("CL103",))] == ["CL103"], form


def test_gpuverify_shapes():
    """Kernels of GPUVerify's CUDA suite (bench/gpuverify.py): a rotation through a
    local pointer into the same buffer (warpsync/broken_shuffle; without lock-step
    warps a race), and a per-thread store over elements every thread stores a constant
    to (warpsync/equality_abstraction_issue)."""
    shuffle = """__global__ void shuffle(int* A) {
    int tid = threadIdx.x;
    int* B = A + (tid / 32) * 32;
    A[tid] = B[(tid + 1) % 32];
}
void h(int* d) { shuffle<<<1, 1024>>>(d); }
"""
    assert len(_findings(shuffle)) == 1
    constants = """__global__ void foo(int* A) {
    A[0] = 1;
    A[threadIdx.x] = 0;
}
void h(int* d) { foo<<<1, 32>>>(d); }
"""
    assert [d.row for d in _findings(constants)] == [2, 3]    # each store races the other


def test_in_place_block_reduction_is_a_cross_block_race():
    """Block b stores its sum to inout[b] while block 0 may still be reading inout[1..]
    (tiny-cuda-nn reduce_sum.cu block_reduce1, found by the corpus sweep)."""
    src = """__global__ void block_reduce(const unsigned n, float* inout) {
    const unsigned i = threadIdx.x + blockIdx.x * blockDim.x;
    __shared__ float s[256];
    s[threadIdx.x] = i < n ? inout[i] : 0;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) inout[blockIdx.x] = s[0];
}
void h(float* d, unsigned n) { block_reduce<<<(n + 255) / 256, 256>>>(n, d); }
"""
    assert [d.row for d in _findings(src)] == [10]


def test_last_block_protocol_is_silent():
    """The last thread to arrive (an atomic's result in the condition) finishes the work
    after every other has read: the atomic orders it (cuda-samples cdpAdvancedQuicksort)."""
    src = """__global__ void k(unsigned* a, unsigned* count, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = a[i + 1];
    if (atomicAdd(count, 1) == n - 1) a[0] = v;
}
"""
    assert _findings(src) == []


def test_unknown_offset_is_compared_in_every_sample_a_pitch_at_a_large_one():
    """a[tid + offset] races for any offset from 1 to the block size (GPUVerify's
    misc/fail/miscfail3 in a kernel body); rows of a pitch or size parameter meet only
    when it is smaller than the row (pytorch3d rasterize_coarse's bboxes[k * F + f] in
    a loop bounded by F; cuda-samples dct8x8's (by * 8 + ty) * Stride + ...)."""
    offset = """__global__ void k(int* A, int offset) {
    A[threadIdx.x] += A[threadIdx.x + offset];
}
"""
    assert len(_findings(offset)) == 1
    rows = """__global__ void k(float* bboxes, const float* v, int F) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    for (int f = tid; f < F; f += blockDim.x * gridDim.x) {
        bboxes[0 * F + f] = v[f];
        bboxes[1 * F + f] = v[f] + 1.f;
    }
}
"""
    assert _findings(rows) == []
    pitch = """__global__ void k(float* a, int Stride) {
    int x = blockIdx.x * 8 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y;
    float c = a[y * Stride + x];
    a[y * Stride + x] = c * 2.f;
}
void h(float* d, int s) { k<<<dim3(4, 4), dim3(8, 8)>>>(d, s); }
"""
    assert _findings(pitch) == []
