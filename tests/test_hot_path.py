"""CL201's hot-path condition (issue 20) against the GPU record it rests on.

fixtures/CL201/hot_path.json (tools/gputruth/hot_path.py, H100) times each kernel of
fixtures/CL201/hot_path.cu: a record written array-of-structs once per thread after a loop
over n items, against structure of arrays. Where the store costs 5% of the kernel or more
CL201 must speak; its silence on a store after a run-time loop rests on the store costing
less than that at every measured n. The per-access figure stays (metrics, opt-in path).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cudalint.config import Settings
from cudalint.engine import lint_text
from cudalint.rules.memory.cl201_uncoalesced_global_access import UncoalescedGlobalAccess

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "fixtures" / "CL201" / "hot_path.cu"
RECORD = json.loads((ROOT / "fixtures" / "CL201" / "hot_path.json").read_text())
WORTH = 0.05            # a saving below 5% of the kernel's time is not worth acting on


def _findings(src: str, every: bool = False, path: str = "hot_path.cu"):
    saved = UncoalescedGlobalAccess.report_whole_records
    UncoalescedGlobalAccess.report_whole_records = every
    try:
        return [d for d in lint_text(path, src, Settings(), "cuda").diagnostics
                if d.code == "CL201"]
    finally:
        UncoalescedGlobalAccess.report_whole_records = saved


def _kernel_rows() -> dict[str, range]:
    lines = SOURCE.read_text().splitlines()
    starts = [(k + 1, m[1]) for k, line in enumerate(lines)
              if (m := re.match(r"__global__ void (\w+)\(", line))]
    ends = [s for s, _ in starts[1:]] + [len(lines) + 1]
    return {name: range(row, end) for (row, name), end in zip(starts, ends)}


@pytest.fixture(scope="module")
def linted():
    src = SOURCE.read_text()
    return _findings(src), _findings(src, every=True)


def test_the_rule_speaks_wherever_the_store_costs_five_percent(linted):
    default, _ = linted
    rows = _kernel_rows()
    measured = [r for r in RECORD["runs"].values() if "tail_share" in r]
    assert len(measured) >= 15
    for run in measured:
        spoke = [d for d in default if d.row in rows[run["kernel"]]]
        if run["tail_share"] >= WORTH:
            assert spoke, f"{run['kernel']}: {run['tail_share']:.1%} of the kernel, silent"


def test_silence_after_a_run_time_loop_rests_on_every_measured_n(linted):
    default, every = linted
    rows = _kernel_rows()
    runtime = [r for r in RECORD["runs"].values()
               if r["kernel"].startswith("tail_rt_aos")]
    assert sorted({r["n"] for r in runtime}) == [64, 256, 1024, 4096]
    assert max(r["tail_share"] for r in runtime) < WORTH
    for name in ("tail_rt_aos3", "tail_rt_aos8"):
        assert not [d for d in default if d.row in rows[name]], name
    # the figure stays, with where the work is: the run-time loop calling seg_dist2
    off = [d for d in every if d.row in rows["tail_rt_aos8"]]
    assert off and off[0].metrics["off_hot_path"]["work_runtime_loops"] == 1
    loop_row = off[0].metrics["off_hot_path"]["work_loop_line"]
    assert "for (int j = 0; j < n; ++j)" in SOURCE.read_text().splitlines()[loop_row - 1]


def test_ncu_sectors_per_request_equal_the_figures(linted):
    _, every = linted
    rows = _kernel_rows()
    for run in RECORD["runs"].values():
        req = run.get("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")
        if not req or not run["kernel"].startswith("tail_") or "_aos" not in run["kernel"]:
            continue
        measured = run["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] / req
        figures = {d.metrics["sectors_per_request"] for d in every
                   if d.row in rows[run["kernel"]]}
        assert figures == {measured}, run["kernel"]


def test_a_record_walked_in_the_loop_that_gathers_stays_reported(linted):
    default, _ = linted
    walk = RECORD["runs"]["walk_rows K=8"]
    assert walk["tail_share"] >= WORTH          # 12.5% against k-major columns
    rows = _kernel_rows()["walk_rows"]
    assert [d for d in default if d.row in rows]


_PYTORCH3D = """
struct Hit { int idx; float z; };
__device__ float face_dist(const float* verts, int f, float px) {
  return verts[f * 9] - px + verts[f * 9 + 4];
}
__device__ void check_face(const float* verts, int f, float px, Hit* q, int& n) {
  float d = face_dist(verts, f, px);
  if (n < 16 && d < 0.1f) { q[n].idx = f; q[n].z = d; ++n; }
}
__global__ void raster(const float* verts, const int* first, int F, int K, int P,
                       int* idxs, float* zbuf) {
  for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < P; p += gridDim.x * blockDim.x) {
    Hit q[16];
    int n = first[p] > 0;
    for (int f = first[p]; f < F; ++f)
      check_face(verts, f, p * 0.001f, q, n);
    for (int k = 0; k < n; ++k) {
      idxs[p * K + k] = q[k].idx;
      zbuf[p * K + k] = q[k].z;
    }
  }
}
void launch(const float* v, const int* first, int F, int K, int P, int* i, float* z) {
  raster<<<64, 256>>>(v, first, F, K, P, i, z);
}
"""


def test_a_k_record_written_after_the_face_loop_is_off_the_hot_path():
    # the k loop is bounded by q[16] (its counter indexes it); the face loop runs a
    # run-time count and loads in a device function two calls down
    assert not _findings(_PYTORCH3D)
    every = _findings(_PYTORCH3D, every=True)
    assert len(every) == 2
    for d in every:
        assert d.metrics["off_hot_path"]["work_runtime_loops"] == 2


def test_look_alikes_stay_reported():
    # the k loop indexes no per-thread array: a run-time loop as deep as the face loop
    unbounded = _PYTORCH3D.replace("q[k].idx", "k").replace("q[k].z", "0.f")
    assert len(_findings(unbounded)) == 2
    # the face loop's device function reads a per-thread array, not global memory
    local = _PYTORCH3D.replace("      check_face(verts, f, p * 0.001f, q, n);",
                               "      { float w[9] = {0.f}; check_face(w, f, p * 0.001f, q, n); }")
    assert len(_findings(local)) == 2
    # the face loop has a constant trip count
    const = _PYTORCH3D.replace("f < F; ++f", "f < 8; ++f").replace(
        "int f = first[p]", "int f = 0")
    assert len(_findings(const)) == 2
