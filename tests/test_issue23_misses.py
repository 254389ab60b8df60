"""Issue 23's misses closed on 2026-11-24, against the H100 records that
tools/gputruth/issue23.py wrote beside each fixture (``<fixture>.truth.json``):

- CL102: a ``continue`` (or ``break``) under a data test in a loop before a shared-memory
  exchange (farthest point sampling as erikwijmans/Pointnet2_PyTorch writes it);
- CL107: a ``__shared__`` scalar the kernel declares, and a shared array stored through a
  cast, written with different values by several threads;
- CL106: a cooperative-groups grid barrier that part of a block skips;
- CL108: a global-memory race whose store is in a device function the kernel calls.
"""
from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

import test_sync_rules as sync_truth
from cudalint.config import Settings
from cudalint.engine import lint_bytes
from fixture_support import FIXTURES, lint_fixture

SHARED_TRUTH = [FIXTURES / "CL102" / "continue_exchange.truth.json",
                FIXTURES / "CL107" / "shared_scalar.truth.json"]
GRID = FIXTURES / "CL106" / "grid_sync.cu"
DEVICE = FIXTURES / "CL108" / "device_function.cu"
RECORDS = [r for p in SHARED_TRUTH if p.is_file() for r in json.loads(p.read_text())["records"]]


def _rows(src: str, codes=("CL101", "CL102", "CL103", "CL107"), **kw) -> list[tuple]:
    res = lint_bytes("t.cu", src.encode(), replace(Settings(), select=codes, **kw), "cuda")
    return sorted((d.row, d.code) for d in res.diagnostics)


def _kernel_at(src: str, row: int) -> str:
    found = None
    for k, line in enumerate(src.splitlines(), 1):
        m = re.match(r"__global__ void (\w+)", line)
        if m:
            found = m.group(1)
        if k == row:
            return found
    raise AssertionError(row)


# ---- GPU records --------------------------------------------------------------------

@pytest.mark.parametrize("rec", RECORDS, ids=[r["kernel"] for r in RECORDS])
def test_shared_memory_fixtures_agree_with_racecheck(rec):
    """The checks every CL101-CL107 record passes (tests/test_sync_rules.py)."""
    sync_truth.test_rules_agree_with_sanitizer(rec)


def test_each_fixture_holds_a_race_and_a_clean_look_alike():
    for path in SHARED_TRUTH:
        recs = json.loads(path.read_text())["records"]
        assert any(r["racecheck_errors"] and r["model"] for r in recs), path.name
        assert any(not r["racecheck_positive"] and not r["model"] for r in recs), path.name


def test_grid_barrier_follows_the_gpu_record():
    """CL106 (strict) on the grid barriers part of a block skips: like its block
    barriers, the GPU runs them (every launch completes, synccheck silent), and the
    look-alikes are silent; CL103 (block barriers) says nothing. What the GPU does not
    show (a block whose thread 0 skips is not counted) the message takes from the
    cooperative-groups source."""
    recs = {r["kernel"]: r for r in json.loads(
        GRID.with_suffix(".truth.json").read_text())["records"]}
    assert len(recs) == 4
    for k, r in recs.items():
        assert r["plain_rc"] == 0 and "completed" in r["plain_output"], k
        assert r["synccheck"]["rc"] == 0 and not r["synccheck"]["errors"], k
    src = GRID.read_text()
    found = lint_fixture(GRID, {"CL103", "CL106"}).diagnostics
    assert {d.code for d in found} == {"CL106"}
    assert {_kernel_at(src, d.row) for d in found} == {
        "grid_sync_even_threads", "grid_sync_skipped_by_thread_zero"}


def test_device_function_race_follows_the_gpu_record():
    """CL108 on a store in a device function exactly where the two serial schedules of
    the launch disagree."""
    src = DEVICE.read_text()
    doc = json.loads(DEVICE.with_suffix(".truth.json").read_text())
    racy = {r["kernel"] for r in doc["records"] if r["serial_orders_differ"] > 0}
    clean = {r["kernel"] for r in doc["records"] if r["serial_orders_differ"] == 0
             and r["gpu_vs_ascending"] == 0 and r["gpu_runs_differ"] == 0}
    assert racy and clean and racy | clean == {r["kernel"] for r in doc["records"]}
    res = lint_bytes(str(DEVICE), src.encode(), replace(Settings(), select=("CL108",)),
                     "cuda")
    assert {d.metrics["kernel"] for d in res.diagnostics} == racy
    # reported at the store, in the device function, naming the kernel's call
    assert [d.row for d in res.diagnostics] == [10]
    assert "`add_neighbour_kernel` calls the device function at line 14" in \
        res.diagnostics[0].message


# ---- CL102: a continue before the exchange ------------------------------------------

_FPS = """__global__ void k(const float* data, int* idxs, int n, int m) {
    __shared__ int best_i[256];
    int tid = threadIdx.x;
    for (int j = 1; j < m; j++) {
        int besti = 0;
        for (int k = tid; k < n; k += 256) {
            if (data[k] <= 0.f) %s;
            besti = k;
        }
        best_i[tid] = besti;
        __syncthreads();
        if (tid == 0) idxs[j] = best_i[255];
        int old = best_i[0];
        idxs[old] = j;%s
    }
}
void h(const float* d, int* i, int n, int m) { k<<<1, 256>>>(d, i, n, m); }
"""


def test_continue_under_a_data_test_does_not_hide_the_exchange():
    assert _rows(_FPS % ("continue", "")) == [(10, "CL102")]
    assert _rows(_FPS % ("break", "")) == [(10, "CL102")]
    # a barrier after the reads: silent
    assert _rows(_FPS % ("continue", "\n        __syncthreads();")) == []


def test_loop_variables_are_unknown_for_threads_that_may_have_left():
    """A thread that may have taken the `continue` may not have run `j = t + 1`: after
    the loop its j is unknown, so no access through it is judged (without the
    `continue`, thread 32 reads the s[32] thread 31 stores: CL102)."""
    src = """__global__ void k(const float* in, float* out) {
    __shared__ float s[129];
    int t = threadIdx.x;
    int j = t;
    for (int k = 0; k < 2; k++) {
        if (in[k] > 0.f) continue;
        j = t + 1;
    }
    s[j] = 1.f;
    out[t] = s[t];
}
void h(const float* in, float* o) { k<<<1, 128>>>(in, o); }
"""
    assert _rows(src) == []
    assert _rows(src.replace("continue", "{}")) == [(10, "CL102")]


# ---- CL107: shared scalars and casts -----------------------------------------------

_SCALAR = """__global__ void k(int* out) {
    __shared__ int a;
    __shared__ unsigned char x[32];
    %s
    __syncthreads();
    out[threadIdx.x] = a + x[threadIdx.x %% 32];
}
void h(int* o) { k<<<1, 64>>>(o); }
"""


def test_shared_scalar_declared_in_the_kernel():
    assert _rows(_SCALAR % "a = threadIdx.x;") == [(4, "CL107")]
    assert _rows(_SCALAR % "a = threadIdx.x / 32;") == [(4, "CL107")]
    assert _rows(_SCALAR % "a = blockDim.x;") == []
    assert _rows(_SCALAR % "if (threadIdx.x == 0) a = 3;") == []
    assert _rows(_SCALAR % "a += threadIdx.x;", ("CL107",)) == []     # read-modify-write
    # a local of the same name in an inner scope is not the shared scalar
    assert _rows(_SCALAR % "{ int a = 0; a = threadIdx.x; out[a] = a; }") == []


def test_shared_array_stored_through_a_cast():
    assert _rows(_SCALAR % "((unsigned int*)x)[1] = threadIdx.x;") == [(4, "CL107")]
    assert _rows(_SCALAR % "if (threadIdx.x < 8) ((unsigned int*)x)[threadIdx.x] = "
                 "threadIdx.x;") == []


# ---- CL106: grid barriers ------------------------------------------------------------

_GRIDK = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(int* a, int n) {
    %s
}
"""


def test_grid_barrier_under_a_thread_condition():
    flag = _rows(_GRIDK % "if (threadIdx.x < 32) cg::this_grid().sync();",
                 ("CL103", "CL106"))
    assert flag == [(4, "CL106")]
    assert _rows(_GRIDK % "cg::grid_group g = cg::this_grid(); if (threadIdx.x > 0) "
                 "cg::sync(g);", ("CL106",)) == [(4, "CL106")]
    assert _rows(_GRIDK % "if (n > 0) cg::this_grid().sync();", ("CL106",)) == []
    assert _rows(_GRIDK % "a[0] = 1; cg::this_grid().sync();", ("CL106",)) == []
    # pre-Volta: CL103 takes the block barriers, grid barriers stay CL106's
    assert _rows(_GRIDK % "if (threadIdx.x < 32) cg::this_grid().sync();",
                 ("CL103", "CL106"), arch="sm_60") == [(4, "CL106")]


# ---- CL108: device functions ----------------------------------------------------------

_DEV = """__device__ void upd(int* a, int offset) {
    int t = a[threadIdx.x + offset];
    a[threadIdx.x] %s t;
}
__global__ void k(int* a, int offset) {
    upd(a, offset);
}
void h(int* d) { k<<<1, 256>>>(d, 1); }
"""


def test_store_in_a_device_function():
    assert _rows(_DEV % "+=", ("CL108",)) == [(3, "CL108")]
    out_of_place = _DEV.replace("int t = a[", "int t = b[").replace(
        "(int* a, int offset) {\n    int", "(int* a, const int* b, int offset) {\n    int"
    ).replace("upd(a, offset)", "upd(a, a + 1024, offset)")
    assert _rows(out_of_place % "+=", ("CL108",)) == []
    own = _DEV.replace("threadIdx.x + offset", "threadIdx.x")
    assert _rows(own % "+=", ("CL108",)) == []


_COLUMN = """__device__ void column(float* id, float* od, int w, int h) {
    float t = id[0];
    od[0] = t;
    for (int y = 1; y < h; y++) {
        t += id[y * w];
        od[y * w] = t;
    }
}
__global__ void k(float* id, float* od, int w, int h) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    column(&id[x], &od[x], w, h);
}
void hh(float* a, float* b, int w, int h) { k<<<w / 64, 64>>>(a, b, w, h); }
"""


def test_column_walk_with_a_pitch_parameter_is_silent():
    """cuda-samples boxFilter's d_boxfilter_y: thread x walks its column, od[x + y * w].
    At the sample w = 1 the rows of the loop meet the next threads' od[0]; a pitch
    times a loop counter is compared at the largest sample only, as a pitch times the
    thread index is (in the kernel's body and in a device function alike)."""
    assert _rows(_COLUMN, ("CL108",)) == []
    inlined = """__global__ void k(float* id, float* od0, int w, int h) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    float* od = &od0[x];
    od[0] = id[x];
    for (int y = 1; y < h; y++) od[y * w] = id[x];
}
void hh(float* a, float* b, int w, int h) { k<<<w / 64, 64>>>(a, b, w, h); }
"""
    assert _rows(inlined, ("CL108",)) == []
    # the same walk one element per row (w = 1 at every launch): thread 0's rows are
    # the next threads' od[0]
    assert _rows(_COLUMN.replace("k<<<w / 64, 64>>>(a, b, w, h)", "k<<<4, 64>>>(a, b, 1, h)"),
                 ("CL108",)) != []
