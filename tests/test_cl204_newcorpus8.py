"""CL204 on the eighth triage's classes (bench/triage/sheet-newcorpus8.md).

W6 (gpu4pyscf md_contract_j.cu:691): a loop with a compile-time bound, a data-dependent
`break` and a comma update (`++n, i += blockDim.x`) is unrolled by nvcc, so its counter
indexes are constants (ptxas -v, sm_90: 0-byte frame; fixtures/CL204/unrolled_break.cu and
its records in fixtures/CL204/stack.json). The look-alike bounded by a parameter keeps its
finding.

N1 (SoftGroup, gpu4pyscf contract_Et.cu, #97-#104): an array with no cheaper home whose
only remedy would be to hold fewer elements per thread is not a default finding when it
holds values the thread computes (fixtures/CL204/no_remedy.cuh, frames in
no_remedy.json); the findings of that kind judged right, arrays buffering loaded data
(AutoGPTQ #93-#96, DeepSpeed sheet-newcorpus2 #31), stay.

N7 (pyg-lib knn, #106-#107) is not silenced: the same kernel in pytorch_cluster was judged
right with an H100 measurement of the printed remedy (fixtures/CL204/insertion_sort.cu)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from cudalint.config import Settings
from cudalint.engine import lint_text
from cudalint.rules.memory.cl204_local_memory_array import LocalMemoryArray

ROOT = Path(__file__).resolve().parents[1]
CL204 = ROOT / "fixtures" / "CL204"


def _kernels_reported(path: Path, settings: Settings | None = None) -> set[str]:
    src = path.read_text()
    s = replace(settings or Settings(), select=("CL204",), arch="sm_90", arch_set=True)
    rows = [d.row for d in lint_text(str(path), src, s, "cuda").diagnostics
            if d.code == "CL204"]
    starts = [(i + 1, m.group(1)) for i, line in enumerate(src.splitlines())
              for m in [re.match(r"__global__ void (\w+)\(", line)] if m]
    return {[k for start, k in starts if start <= row][-1] for row in rows}


def _frames(name: str) -> dict[str, int]:
    records = json.loads((CL204 / "stack.json").read_text())["records"]
    return {r["kernel"]: r["stack_frame_bytes"] for r in records
            if r["file"] == f"fixtures/CL204/{name}"}


def test_w6_a_constant_loop_with_a_break_is_unrolled():
    assert _kernels_reported(CL204 / "unrolled_break.cu") == {"acc_runtime"}
    # the ptxas record the rule follows: the unrolled loops leave no frame
    assert _frames("unrolled_break.cu") == {"acc": 0, "acc_nopragma": 0,
                                            "acc_runtime": 256}


def test_w6_the_sheet_reproducer_is_silent():
    src = """
#define NB 8
#define DMB 4
__global__ void acc(double* vj, const double* rt, const double* dm, int nf, int nk) {
  double v[NB * DMB];
#pragma unroll
  for (int n = 0; n < NB * DMB; ++n) v[n] = 0.;
  for (int k = 0; k < nk; ++k) {
    double d = dm[k];
#pragma unroll
    for (int n = 0, i = threadIdx.x; n < NB; ++n, i += blockDim.x) {
      if (i >= nf) break;
      v[n] += rt[k * nf + i] * d;
    }
  }
#pragma unroll
  for (int n = 0, i = threadIdx.x; n < NB; ++n, i += blockDim.x) {
    if (i >= nf) break;
    for (int m = 0; m < DMB; ++m) atomicAdd(vj + m * nf + i, v[n + NB * m]);
  }
}
void go(double* vj, const double* rt, const double* dm, int nf, int nk) { acc<<<1, 128>>>(vj, rt, dm, nf, nk); }
"""
    s = replace(Settings(), select=("CL204",))
    assert not [d for d in lint_text("w6.cu", src, s, "cuda").diagnostics if d.code == "CL204"]


def _with_withheld(path: Path) -> dict[str, str]:
    old = LocalMemoryArray.report_without_remedy
    LocalMemoryArray.report_without_remedy = True
    try:
        src = path.read_text()
        s = replace(Settings(), select=("CL204",), arch="sm_90", arch_set=True)
        found = [d for d in lint_text(str(path), src, s, "cuda").diagnostics
                 if d.code == "CL204"]
    finally:
        LocalMemoryArray.report_without_remedy = old
    return {d.metrics["array"]: d.metrics["remedy"] for d in found}


def test_n1_no_home_and_computed_values_is_not_a_default_finding():
    path = CL204 / "no_remedy.cuh"
    assert _kernels_reported(path) == {"dequant"}
    # all three are local arrays with no home: the rule knows them, and withholds two
    assert _with_withheld(path) == {"tmp": "restructure", "e": "restructure",
                                    "weight": "restructure"}
    record = json.loads((CL204 / "no_remedy.json").read_text())["records"]
    assert all(r["stack_frame_bytes"] > 0 for r in record)
    assert {r["kernel"] for r in record if r["default_finding"]} == {"dequant"}


def test_n1_the_sheet_reproducer_is_silent_and_a_histogram_stays():
    src = """
__global__ void ballquery(int n, float r2, const float* xyz, const int* off, int* idx, int* start_len, int* cumsum) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  int tmp[1000];
  int cnt = 0;
  for (int k = off[0]; k < off[1]; k++) {
    float dx = xyz[3 * k] - xyz[3 * p], dy = xyz[3 * k + 1] - xyz[3 * p + 1], dz = xyz[3 * k + 2] - xyz[3 * p + 2];
    if (dx * dx + dy * dy + dz * dz < r2) {
      if (cnt < 1000) tmp[cnt] = k; else break;
      ++cnt;
    }
  }
  start_len[2 * p] = atomicAdd(cumsum, cnt);
  idx += start_len[2 * p];
  for (int k = 0; k < cnt; k++) idx[k] = tmp[k];
}
void go(int n, float r2, const float* x, const int* o, int* i, int* s, int* c) { ballquery<<<(n + 1023) / 1024, 1024>>>(n, r2, x, o, i, s, c); }
"""
    s = replace(Settings(), select=("CL204",))
    assert not lint_text("n1.cu", src, s, "cuda").diagnostics
    # the data pick the element of a home-less histogram: every load costs a local
    # access, and the finding stays (fixtures/CL204/remedies.cu wide_hist_512)
    assert "wide_hist_512" in _kernels_reported(CL204 / "remedies.cu")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found")
def test_n1_the_withheld_arrays_are_in_local_memory_as_recorded(tmp_path):
    src = tmp_path / "no_remedy.cu"
    src.write_text((CL204 / "no_remedy.cuh").read_text())
    out = subprocess.run(["nvcc", "-arch=sm_90", "-Xptxas", "-v", "-c", str(src), "-o",
                          str(tmp_path / "k.o")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    frames, kernel = {}, None
    for line in out.stderr.splitlines():
        m = re.search(r"Compiling entry function '_Z(\d+)(\w+)", line)
        if m:
            kernel = m.group(2)[:int(m.group(1))]       # the mangled name's length
        m = re.search(r"(\d+) bytes stack frame", line)
        if m and kernel is not None:
            frames[kernel] = int(m.group(1))
            kernel = None
    recorded = {r["kernel"]: r["stack_frame_bytes"] for r in
                json.loads((CL204 / "no_remedy.json").read_text())["records"]}
    assert frames == recorded


def test_n7_the_insertion_sort_keeps_its_measured_remedy():
    path = CL204 / "insertion_sort.cu"
    src = path.read_text()
    s = replace(Settings(), select=("CL204",), arch="sm_90", arch_set=True)
    found = [d for d in lint_text(str(path), src, s, "cuda").diagnostics if d.code == "CL204"]
    assert {d.metrics["array"] for d in found} == {"best", "bi"}
    # the remedy measured on pytorch_cluster's copy: a compile-time bound, unrolled
    assert all("give the loop a compile-time bound" in d.message for d in found)
    assert all(d.metrics["remedy"].startswith("unroll") for d in found)
    assert _frames("insertion_sort.cu") == {"knn": 800}
    timings = (ROOT / "bench/triage/gpu/results-2026-11-24/timings.txt").read_text()
    runtime = float(re.search(r"cl204_knn_runtime_k_ms ([\d.]+)", timings).group(1))
    fixed = float(re.search(r"cl204_knn_template_k_ms ([\d.]+)", timings).group(1))
    assert fixed / runtime < 0.95
