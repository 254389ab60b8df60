"""CL202 on the eighth triage's classes (bench/triage/sheet-newcorpus8.md).

W4 (gpu4pyscf ecp_type1.cu, #78-#79): lanes that leave the iteration through a
lane-dependent `if (c) continue;` or `break;` before a shared access are not among the
lanes that run it (fixtures/CL202/iteration_exits.cu): the reproducer's two loads are
conflict-free. Look-alikes keep their 2-way finding: an exit decided by data, an exit
after the access, a `break` that leaves a `switch`."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_text

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures/CL202/iteration_exits.cu"


def _findings(src: str, name: str = "k.cu") -> list:
    s = replace(Settings(), select=("CL202",))
    return [d for d in lint_text(name, src, s, "cuda").diagnostics if d.code == "CL202"]


def _kernel_of(src: str, row: int) -> str:
    import re
    starts = [(i + 1, m.group(1)) for i, line in enumerate(src.splitlines())
              for m in [re.match(r"(?:__global__|__device__) void (\w+)\(", line)] if m]
    return [k for start, k in starts if start <= row][-1]


def test_w4_lanes_that_continue_do_not_run_the_access():
    src = FIXTURE.read_text()
    found = _findings(src, str(FIXTURE))
    assert {_kernel_of(src, d.row) for d in found} == {"exit_on_data", "exit_after",
                                                       "switch_break"}
    # the look-alikes keep the figure of all 32 lanes: rad[0] and rad[16] in one bank
    assert all(d.metrics["bank_ways"] == 2 and d.metrics["wavefronts"] == 4 for d in found)


def test_w4_the_sheet_reproducer_is_silent():
    src = """
template <int LIJ>
__device__ void rad_ang(double* out, double* rad_all, const double fac) {
  for (int n = threadIdx.x; n < (LIJ + 1) * (LIJ + 1) * (LIJ + 1); n += blockDim.x) {
    const int i = n / (LIJ + 1) / (LIJ + 1), j = n / (LIJ + 1) % (LIJ + 1), k = n % (LIJ + 1);
    if (i + j + k > LIJ || (i + j + k) % 2 == 1) continue;
    double s = 0.0;
    double* prad = rad_all + (i + j + k) * (LIJ + 1);
    if constexpr (LIJ >= 0) s += prad[0] * i;
    if constexpr (LIJ >= 2) s += prad[2] * j;
    out[i * (LIJ + 1) * (LIJ + 1) + j * (LIJ + 1) + k] += fac * s;
  }
}
template <int LI, int LJ>
__global__ void type1(double* g, int nk) {
  constexpr int LIJ1 = LI + LJ + 1;
  __shared__ double ra[LIJ1 * LIJ1 * LIJ1];
  for (int k = 0; k < nk; ++k) {
    __shared__ double rad_all[LIJ1 * LIJ1];
    for (int n = threadIdx.x; n < LIJ1 * LIJ1; n += blockDim.x) rad_all[n] = g[k * 16 + n];
    __syncthreads();
    rad_ang<LI + LJ>(ra, rad_all, 0.5);
    __syncthreads();
  }
  if (threadIdx.x == 0) g[0] = ra[0];
}
void go(double* g, int nk) { type1<0, 3><<<1, 128>>>(g, nk); }
"""
    assert _findings(src) == []
    # without the exit, the lanes with i + j + k up to 7 do read prad[0]: 2-way
    plain = src.replace("    if (i + j + k > LIJ || (i + j + k) % 2 == 1) continue;\n", "")
    assert [d.metrics["bank_ways"] for d in _findings(plain)] == [2, 2]
