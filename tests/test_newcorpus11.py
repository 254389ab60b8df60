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
