"""CL201 on a row each thread walks whole across a loop (`a[t * K + k]`, k < K): silent
while the row is short, reported when long or unknown, where the GPU says the line lies
(fixtures/CL201/record_loop.json, written by tools/gputruth/record_loop.py on an H100)."""
from __future__ import annotations

import json
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_bytes
from cudalint.rules.memory.cl201_uncoalesced_global_access import SHORT_RECORD_BYTES

ROOT = Path(__file__).resolve().parents[1]
RECORD = json.loads((ROOT / "fixtures/CL201/record_loop.json").read_text())["runs"]


def _slowdown(k: int) -> float:
    return RECORD[f"rows_K{k}"]["median_ms"] / RECORD[f"cols_K{k}"]["median_ms"]


def test_threshold_lies_between_what_the_gpu_measured_free_and_slow():
    ks = sorted({r["K"] for r in RECORD.values()})
    free = [k for k in ks if _slowdown(k) < 1.1]
    slow = [k for k in ks if _slowdown(k) > 1.5]
    assert free and slow
    assert max(free) * 4 <= SHORT_RECORD_BYTES < min(slow) * 4
    # the cost is not DRAM traffic: the rows kernels read what they use
    for k in ks:
        run = RECORD[f"rows_K{k}"]
        assert run["dram_bytes_read"] <= 1.2 * run["useful_bytes"]


KERNEL = """
__global__ void walk(const float* a, float* y, int n, int len) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) {
    float acc = 0.f;
    for (int k = 0; k < LEN; ++k)
      acc += a[t * LEN + k];
    y[t] = acc;
  }
}
void host(const float* a, float* y, int n) { walk<<<n / 256, 256>>>(a, y, n, 0); }
"""


def _cl201_lines(length: str) -> list[int]:
    src = KERNEL.replace("LEN", length).encode()
    result = lint_bytes("walk.cu", src, Settings(select=("CL201",)), "cuda")
    return [d.row for d in result.diagnostics if d.code == "CL201"]


def test_each_measured_row_length_gets_the_verdict_the_gpu_gave():
    for k in sorted({r["K"] for r in RECORD.values()}):
        if k < 3:
            continue
        reported = bool(_cl201_lines(str(k)))
        assert reported == (_slowdown(k) > 1.5), (k, _slowdown(k))


def test_unknown_row_length_is_reported():
    assert _cl201_lines("len") == [7]
