"""The eleventh triage (bench/triage/sheet-newcorpus11.md).

W1 (CL201, optimized_transducer): a row walked by `for (v = 0; v != V; ++v)` was said to
leave fetched bytes unused (the SoA remedy); written with `v < V` it gets the row-walk
message. A loop stepping up by one to a `!=` stop at or above its start is that loop.
Architectures (CL403, LEAP): a commented-out `CUDA_ARCHITECTURES 75 86 87 89` line was
read as the build's targets."""
from __future__ import annotations

from dataclasses import replace

from cudalint.config import Settings
from cudalint.engine import lint_text
from cudalint.project.targets import archs_in_text

ROW = """
__global__ void grad(const float* logits, float* g, int n, int V, float c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float* row = logits + i * V;
  float* out = g + i * V;
  for (int v = 0; COND; ++v) out[v] = expf(row[v] + c);
}
void go(const float* l, float* g, int n, int V) { grad<<<(n + 1023) / 1024, 1024>>>(l, g, n, V, 0.5f); }
"""


def _msgs(text: str) -> list[str]:
    s = replace(Settings(), select=("CL201",))
    return [d.message for d in lint_text("r.cu", text, s, "cuda").diagnostics]


def test_w1_a_not_equal_stop_walks_the_row_as_a_less_than_stop_does():
    less = _msgs(ROW.replace("COND", "v < V"))
    neq = _msgs(ROW.replace("COND", "v != V"))
    assert len(less) == len(neq) == 2
    assert all("each thread" in m and "its own row across the loop" in m for m in neq)
    assert all("the kernel reads" not in m and "SoA" not in m for m in neq)
    assert [m.replace("v != V", "v < V") for m in neq] == less


def test_commented_architecture_lists_are_not_read():
    text = ("# the argument CUDA_ARCHITECTURES all-major\n"
            "#set_property(TARGET t PROPERTY CUDA_ARCHITECTURES 75 86 87 89)\n"
            "set_property(TARGET t PROPERTY CUDA_ARCHITECTURES all-major)\n")
    assert archs_in_text(text) == ()
    assert archs_in_text(text.replace("all-major)", "80 90) # 70")) == (80, 90)
    assert archs_in_text("#[[ set(CMAKE_CUDA_ARCHITECTURES 61) ]]\n") == ()
    # a `#` inside a quoted string is not a comment
    assert archs_in_text('set(X "a#b")\nset(CMAKE_CUDA_ARCHITECTURES 86)\n') == (86,)
    assert archs_in_text("os.environ['TORCH_CUDA_ARCH_LIST'] = '7.5;8.6'  # 9.0\n") == (75, 86)


ENDPOINTS = """
__global__ void integ(const float* solids, int numObjects, float* floatData, int* intData, float* g) {
  const int ip = threadIdx.x + blockIdx.x * blockDim.x;
  float* endPoints = &floatData[ip * 4 * numObjects];
  float* lo = &floatData[ip * 4 * numObjects + 2 * numObjects];
  int* objs = &intData[ip * numObjects];
  int count = numObjects / 2;
  float ret = 0.f;
  for (int i = 0; i < 2 * count - 1; i++) {
    const float mid = (endPoints[i + 1] + endPoints[i]) * 0.5f;
    for (int ind = count - 1; ind >= 0; ind--) {
      const int j = objs[ind];
      if (lo[j] <= mid) {
        ret += solids[j] * (endPoints[i + 1] - endPoints[i]);
        break;
      }
    }
  }
  g[ip] = ret;
}
void go(const float* s, int n, float* fd, int* id, float* g, int nb) { integ<<<nb, 8>>>(s, n, fd, id, g); }
"""


def test_w2_overlapping_windows_moved_by_one_walk_the_row():
    # LEAP analytic_ray_tracing_gpu.cu:679: `endPoints[i + 1] - endPoints[i]` inside an
    # inner loop, the outer loop moving i by one element: the thread walks its row
    (d,) = [m for m in _msgs(ENDPOINTS) if m.startswith("uncoalesced load endPoints[i + 1]")]
    assert "each thread walks its own row across the loop at line 9" in d
    assert "the kernel reads" not in d and "SoA" not in d
