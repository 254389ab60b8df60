"""CL201 on the shapes the third issue-20 triage found it wrong on
(bench/triage/sheet-newcorpus3.md): each kernel is a reduced copy of the project's shape,
with a look-alike that must keep its finding.

- PyTorch-Encoding nms: `mask[i + 1 + blockIdx.x * n]` over 1-byte elements, lanes
  consecutive: the base alignment alone puts a warp across 2 sectors for an ideal 1.
- bitsandbytes kgemm_4bit_inference_naive's tail: each lane reads its 32-element
  chunk across an unrolled `k` loop guarded by `if (base + k < K)` inside an `i` loop;
  the guard shut every lane out at `k = 1` in every sample of `K`, so the walk was not
  seen and the message said "of the 1024 bytes a warp moves here, the kernel reads 128".
- OpenPCDet roiaware maxpool: `for (k = 1; k <= total_pts; k++) ... idx_row[k]` with a
  count loaded from memory walks the thread's row; "the kernel reads 128 of 1024 bytes"
  was false (the rest of each sector is the next iterations').
- pytorch3d rasterize_meshes: a row of `3 * K` floats walked by one thread was reported
  "for any `K` >= 3" with "rows of 9 floats or fewer cost nothing" and "records of 9"
  beside it; the message now gives the parameter's values on each side of the measured
  line and a row remedy.
"""
from __future__ import annotations

from cudalint.config import Settings
from cudalint.engine import lint_bytes


def _cl201(src: str) -> list:
    result = lint_bytes("k.cu", src.encode(), Settings(select=("CL201",)), "cuda")
    return [d for d in result.diagnostics if d.code == "CL201"]


NMS = """
__global__ void nms(unsigned char* mask, const float* boxes, int num_boxes, float thr) {
  int col = 0;
  while (col < num_boxes - 1) {
    for (int i = threadIdx.x; i < num_boxes - 1; i += blockDim.x)
      if (i >= col)
        mask[i + 1 + blockIdx.x * num_boxes] *= (boxes[i] > thr) ? 0 : 1;
    __syncthreads();
    ++col;
  }
}
void host(unsigned char* m, const float* b, int n) { nms<<<4, 512>>>(m, b, n, 0.5f); }
"""


def test_misaligned_unit_stride_bytes_are_not_uncoalesced():
    assert _cl201(NMS) == []


def test_byte_stride_two_keeps_its_finding():
    found = _cl201(NMS.replace("mask[i + 1 + blockIdx.x * num_boxes]",
                               "mask[2 * i + blockIdx.x * num_boxes]"))
    assert len(found) == 1 and found[0].metrics["stride_bytes"] == 2


TAIL = """
#define NV 32
__global__ void k4(int K, const float* A, float* out) {
  const int lane = threadIdx.x % 32;
  float loc[NV / 4];
  float acc = 0.0f;
  for (int inner = lane * NV; inner < K; inner += 32 * NV) {
    for (int i = 0; i < 4; i++) {
#pragma unroll
      for (int k = 0; k < NV / 4; k++)
        if (inner + (i * NV / 4) + k < K)
          loc[k] = A[inner + k + (i * NV / 4)];
        else
          loc[k] = 0.0f;
#pragma unroll
      for (int k = 0; k < NV / 4; k++) acc += loc[k];
    }
  }
  out[threadIdx.x] = acc;
}
"""


def test_guarded_unrolled_chunk_read_whole_is_silent():
    assert _cl201(TAIL) == []


def test_chunk_read_in_part_keeps_its_finding():
    # the i loop gone and k < 4: each lane reads 4 of its 32 elements, 16 bytes of each
    # 32-byte sector it fetches
    src = TAIL.replace("for (int i = 0; i < 4; i++) {", "{ const int i = 0;").replace(
        "for (int k = 0; k < NV / 4; k++)\n        if", "for (int k = 0; k < NV / 8; k++)\n        if")
    found = _cl201(src)
    assert len(found) == 1
    assert found[0].metrics["wasted"] == "unused_bytes"
    assert found[0].metrics["warp_used_bytes"] * 2 == found[0].metrics["warp_fetched_bytes"]


ROW_PREFIX = """
__global__ void maxpool(int nvox, int maxp, int channels, const float* feat,
                        const int* idx_rows, float* out) {
  int v = blockIdx.x * blockDim.x + threadIdx.x;
  int c = blockIdx.y;
  if (v >= nvox) return;
  idx_rows += v * maxp;
  int total = idx_rows[0];
  float best = -1e30f;
  for (int k = 1; k <= total; k++) {
    float f = feat[idx_rows[k] * channels + c];
    if (f > best) best = f;
  }
  out[v * channels + c] = best;
}
void host(const float* f, const int* r, float* o, int n, int m, int c) {
  maxpool<<<dim3(n / 256, c), 256>>>(n, m, c, f, r, o);
}
"""


def test_row_walked_to_a_data_count_is_not_called_unused_bytes():
    found = [d for d in _cl201(ROW_PREFIX) if "idx_rows[k]" in d.message]
    assert len(found) == 1
    d = found[0]
    assert d.metrics["wasted"] == "row_walk"
    assert "bytes a warp moves here" not in d.message
    assert "walks its own row across the loop at line 10 as far as the loop's count" \
        in d.message


ROW_3K = """
__global__ void back(int npix, int K, const float* grad_bary, float* out) {
  int pix = blockIdx.x * blockDim.x + threadIdx.x;
  if (pix >= npix) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) {
    int i = pix * K + k;
    acc += grad_bary[i * 3 + 0] + grad_bary[i * 3 + 1] + grad_bary[i * 3 + 2];
  }
  out[pix] = acc;
}
void host(const float* g, float* o, int n, int K) { back<<<n / 64, 64>>>(n, K, g, o); }
"""


def test_row_walk_message_says_which_rows_cost():
    found = _cl201(ROW_3K)
    assert len(found) == 1
    msg = found[0].message
    assert found[0].metrics["wasted"] == "row_walk"
    # rows of 12 * K bytes: 32 floats or more from K = 11, 9 floats or fewer up to K = 3
    assert "rows of 32 floats or more (`K` >= 11 here)" in msg
    assert "rows of 9 floats or fewer (`K` <= 3) ran as fast" in msg
    assert "records of 9" not in msg and "cost nothing" not in msg
    assert "store the rows column-major" in msg


# SASS (nvcc 13.0, -O3 -arch=sm_90, cuobjdump, 2026-11-24): `bwd` has 2 LDG (argmax[0]
# once, grad_out[0] once); `bwd2`, with an atomicAdd between the two uses, 4 LDG (both
# reloaded). The roiaware maxpool backward is `bwd`.
DUP = """
__global__ void bwd(int nvox, int channels, const int *argmax, const float *grad_out, float *grad_in) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y;
    if (v >= nvox) return;
    argmax += v * channels + c;
    grad_out += v * channels + c;
    if (argmax[0] == -1) return;
    atomicAdd(grad_in + argmax[0] * channels + c, grad_out[0] * 1);
}
__global__ void bwd2(int nvox, int channels, const int *argmax, const float *grad_out, float *grad_in) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y;
    if (v >= nvox) return;
    argmax += v * channels + c;
    grad_out += v * channels + c;
    atomicAdd(grad_in + v, 1.0f);
    atomicAdd(grad_in + argmax[0] * channels + c, grad_out[0] * 1);
    atomicAdd(grad_in + argmax[0] * channels + c + 1, grad_out[0] * 2);
}
__global__ void bwd3(int nvox, int channels, const int *argmax, float *grad_in, int flag) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y;
    if (v >= nvox) return;
    argmax += v * channels + c;
    int a = 0;
    if (flag) a = argmax[0];
    grad_in[v] = a + argmax[0];
}
void host(const int* a, const float* g, float* gi, int n, int ch) {
    bwd<<<dim3(n / 256, ch), 256>>>(n, ch, a, g, gi);
    bwd2<<<dim3(n / 256, ch), 256>>>(n, ch, a, g, gi);
    bwd3<<<dim3(n / 256, ch), 256>>>(n, ch, a, gi, 1);
}
"""


def _argmax_rows(kernel: str) -> list[int]:
    lines = DUP.splitlines()
    start = next(i for i, ln in enumerate(lines, 1) if f"void {kernel}(" in ln)
    end = next((i for i, ln in enumerate(lines, 1) if i > start and ln.startswith("__global__")),
               len(lines) + 1)
    return [d.row for d in _cl201(DUP) if "argmax[0]" in d.message and start <= d.row < end]


def test_a_load_the_compiler_merges_with_an_earlier_one_is_one_finding():
    assert _argmax_rows("bwd") == [8]           # line 9's argmax[0] is the same register


def test_loads_with_an_atomic_between_keep_their_findings():
    # reported once, with the reload after the atomic named as a second load of the same
    # element (it was "neighbouring elements", like OpenPCDet interpolate_gpu.cu:169)
    found = [d for d in _cl201(DUP) if "argmax[0]" in d.message and d.row == 18]
    assert len(found) == 1
    assert "and 1 more load of the same element (line 19)" in found[0].message


def test_an_earlier_load_under_a_branch_does_not_hide_the_later_one():
    assert _argmax_rows("bwd3") == [27, 28]
