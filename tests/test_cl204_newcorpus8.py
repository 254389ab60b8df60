"""CL204 on the eighth triage's classes (bench/triage/sheet-newcorpus8.md).

W6 (gpu4pyscf md_contract_j.cu:691): a loop with a compile-time bound, a data-dependent
`break` and a comma update (`++n, i += blockDim.x`) is unrolled by nvcc, so its counter
indexes are constants (ptxas -v, sm_90: 0-byte frame; fixtures/CL204/unrolled_break.cu and
its records in fixtures/CL204/stack.json). The look-alike bounded by a parameter keeps its
finding."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_text

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
