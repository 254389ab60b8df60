"""Shapes CL101/CL102 used to miss (issue 20, "Misses"): a warp argmin step with a
guarded write, and a block race in a loop whose trip count is read from memory. The
fixtures (fixtures/CL101/warp_argmin.cu, fixtures/CL102/trip_count_from_memory.cu) are
measured on an H100; these are the edges of the two shapes."""
from __future__ import annotations

from cudalint.analysis.sync.races import RaceAnalysis
from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.sources.base import SourceFile, Unit


def _races(src: str) -> list[tuple[str, int]]:
    ctx = UnitContext(Unit(SourceFile("t.cu", src, "cuda"), src), Settings())
    return sorted({(r.rule, r.second.start_point[0] + 1)
                   for r in ctx.analysis(RaceAnalysis).races})


_ARGMIN = """__global__ void k(float* out, const float* in) {
    __shared__ float d[64];
    __shared__ int idx[64];
    unsigned t = threadIdx.x;
    d[t] = in[t]; d[t + 32] = in[t + 32]; idx[t] = t; idx[t + 32] = t + 32;
    __syncwarp();
    if (%s) { %s }
    __syncwarp();
    out[0] = idx[0];
}
void h(float* o, const float* in) { k<<<1, 32>>>(o, in); }
"""


def test_guarded_select_races_when_a_lane_writes_what_another_reads():
    step = "d[t] = d[t + 16]; idx[t] = idx[t + 16];"
    assert _races(_ARGMIN % ("d[t] > d[t + 16]", step)) == [("CL101", 7)]
    # argmax, and a plain value select
    assert _races(_ARGMIN % ("d[t] < d[t + 16]", step)) == [("CL101", 7)]
    assert _races(_ARGMIN % ("d[t + 16] < d[t]", "d[t] = d[t + 16];")) == [("CL101", 7)]


def test_guarded_select_look_alikes_stay_silent():
    step = "d[t] = d[t + 16]; idx[t] = idx[t + 16];"
    # only the lower lanes write: nobody writes what another lane reads
    assert _races(_ARGMIN % ("t < 16 && d[t] > d[t + 16]", step)) == []
    # the condition reads global memory: a data-dependent branch stays undecided
    assert _races(_ARGMIN % ("in[t] > in[t + 16]", step)) == []
    # a call in the branch: not the select shape
    assert _races(_ARGMIN % ("d[t] > d[t + 16]", "d[t] = fminf(1.f, d[t + 16]);")) == []


_COUNT = """__global__ void k(float* out, const float* in, const int* cnt) {
    __shared__ float s[128];
    unsigned tid = threadIdx.x;
    int m = %s;
    float acc = 0.f;
    for (int j = 1; j < m; j++) {
        s[tid] = in[tid] * j;
        __syncthreads();
        acc += s[(tid + j) %% 128];
    }
    out[tid] = acc;
}
void h(float* o, const float* in, const int* c) { k<<<1, 128>>>(o, in, c); }
"""


def test_trip_count_read_once_per_block():
    assert _races(_COUNT % "cnt[blockIdx.x]") == [("CL102", 7)]
    assert _races(_COUNT % "cnt[0]") == [("CL102", 7)]
    # a count per thread: not a figure the whole block shares, the loop stays opaque
    assert _races(_COUNT % "cnt[threadIdx.x]") == []
    # an index with a side effect is not evaluated twice
    assert _races(_COUNT % "cnt[m++]".replace("m++", "blockIdx.x++")) == []
