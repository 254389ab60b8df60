"""CL201 reads a decreasing counted loop (``for (int i = N - 1; i >= 0; i--)``, ``--i``,
``i -= 1``, ``i > lo``) as the increasing one over the same counter values: a record
written whole across it is silent either way (torchsparse downsample_cuda.cu), and the
traffic figure counts every field the counter walks (fixtures/CL201/decreasing_loops.cu)."""
from __future__ import annotations

from cudalint.config import Settings
from cudalint.engine import lint_bytes

WRITE = """
__global__ void k(const int* in, int* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) {
    int cur = in[t];
#pragma unroll
    for (HEAD) {
      out[t * 4 + i] = cur % 7;
      cur /= 7;
    }
  }
}
void host(const int* in, int* out, int n) { k<<<(n + 255) / 256, 256>>>(in, out, n); }
"""

# fields 1..3 across the loop, field 0 after it: the thread reads its record whole
READ = """
__global__ void k(const int* in, int* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) {
    int acc = 0;
    for (HEAD)
      acc += in[t * 4 + i];
    out[t] = acc + in[t * 4];
  }
}
void host(const int* in, int* out, int n) { k<<<(n + 255) / 256, 256>>>(in, out, n); }
"""


def _cl201(src: str, head: str):
    result = lint_bytes("k.cu", src.replace("HEAD", head).encode(),
                        Settings(select=("CL201",)), "cuda")
    return [d for d in result.diagnostics if d.code == "CL201"]


def test_a_record_written_whole_is_silent_whichever_way_the_loop_counts():
    for head in ("int i = 0; i < 4; i++", "int i = 4 - 1; i >= 0; i--",
                 "int i = 3; i >= 0; --i", "int i = 3; i > -1; i -= 1"):
        assert _cl201(WRITE, head) == [], head


def test_a_decreasing_loop_over_part_of_the_record_stays_reported():
    for head in ("int i = 3; i >= 2; --i", "int i = 2; i < 4; ++i"):
        found = _cl201(WRITE, head)
        assert [d.row for d in found] == [8], head
        assert "the kernel writes 256" in found[0].message, head


def test_the_traffic_figure_counts_the_fields_the_counter_walks():
    for head in ("int i = 1; i < 4; ++i", "int i = 3; i >= 1; --i"):
        assert _cl201(READ, head) == [], head
