// Column walks whose sectors other threads of the launch use (CL201, issue 20,
// sheet-newcorpus5 W4/W5): is a warp touching 32 sectors per request slower when every byte
// of those sectors is read by some other warp of the block, or by some other block?
//
// - colwalk_y / rowwalk_x: ptypy's frame sum (W5). Block 32x32 per frame of m x n floats;
//   colwalk_y puts the lanes on the row i (stride n floats) and the block's 32 warps on
//   the neighbouring columns j = threadIdx.y + 32k; rowwalk_x swaps the roles of x and y.
// - colwalk_blk / coalesced_blk: roiaware's backward (bevfusion #29-#32) and lightseq's
//   router store: a lane per voxel, the channel in blockIdx.y: g[v * C + c] (stride C
//   floats; the neighbouring channels are other blocks'); against the same copy with the
//   lanes on consecutive elements.
// - rowwalk_lane / colmajor_lane: DirectVoxGO's cumulative distance (W4): each thread walks
//   its own row `for (i = r * m; i < r * m + m; ++i)`, against a column-major copy.
// Built and run by tools/gputruth/column_walk.py: one line per kernel and shape;
// `--once` launches each kernel once (for ncu).
#include <cstdio>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

__global__ void colwalk_y(const float* a, float* out, int m, int n) {
  float v = 0.f;
  const float* f = a + (size_t)blockIdx.x * m * n;
  for (int i = threadIdx.x; i < m; i += 32)
    for (int j = threadIdx.y; j < n; j += 32) v += f[(size_t)i * n + j];
  out[(size_t)blockIdx.x * 1024 + threadIdx.y * 32 + threadIdx.x] = v;
}

__global__ void rowwalk_x(const float* a, float* out, int m, int n) {
  float v = 0.f;
  const float* f = a + (size_t)blockIdx.x * m * n;
  for (int i = threadIdx.y; i < m; i += 32)
    for (int j = threadIdx.x; j < n; j += 32) v += f[(size_t)i * n + j];
  out[(size_t)blockIdx.x * 1024 + threadIdx.y * 32 + threadIdx.x] = v;
}

__global__ void colwalk_blk(const float* g, float* out, int V, int C) {
  int c = blockIdx.y;
  int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v < V) out[(size_t)c * V + v] = 2.f * g[(size_t)v * C + c];
}

__global__ void coalesced_blk(const float* g, float* out, int V, int C) {
  int c = blockIdx.y;
  int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v < V) out[(size_t)c * V + v] = 2.f * g[(size_t)c * V + v];
}

__global__ void rowwalk_lane(const float* d, float* out, int n, int m) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) {
    float c = 0.f;
    for (int i = r * m; i < r * m + m; ++i) c += d[i];
    out[r] = c;
  }
}

__global__ void colmajor_lane(const float* d, float* out, int n, int m) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) {
    float c = 0.f;
    for (int k = 0; k < m; ++k) c += d[(size_t)k * n + r];
    out[r] = c;
  }
}

static cudaEvent_t e0, e1;

template <typename F>
static void timed(const char* name, const char* shape, size_t useful, int reps, F launch) {
  std::vector<float> ms;
  for (int r = 0; r < reps; r++) {
    cudaEventRecord(e0);
    launch();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float t; cudaEventElapsedTime(&t, e0, e1); ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  double med = ms[ms.size() / 2];
  printf("%s %s median_ms=%.4f useful_GBps=%.1f err=%s\n", name, shape, med,
         useful / med / 1e6, cudaGetErrorString(cudaGetLastError()));
}

int main(int argc, char** argv) {
  int reps = (argc > 1 && !strcmp(argv[1], "--once")) ? 1 : 21;
  const size_t total = 64u << 20;      // floats: 256 MB, well past L2
  float *a, *out;
  cudaMalloc(&a, total * sizeof(float));
  cudaMalloc(&out, total * sizeof(float));
  cudaMemset(a, 0, total * sizeof(float));
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  char shape[64];
  // W5: frames of m x n floats, one 32x32 block per frame
  int ns[] = {512, 64};
  for (int n : ns) {
    int m = 512 * 512 / n, b = (int)(total / ((size_t)m * n));
    snprintf(shape, sizeof shape, "m=%d n=%d b=%d", m, n, b);
    timed("colwalk_y", shape, total * 4, reps,
          [&] { colwalk_y<<<b, dim3(32, 32)>>>(a, out, m, n); });
    timed("rowwalk_x", shape, total * 4, reps,
          [&] { rowwalk_x<<<b, dim3(32, 32)>>>(a, out, m, n); });
  }
  // roiaware: V voxels x C channels, the channel in blockIdx.y
  int Cs[] = {64, 8};
  for (int C : Cs) {
    int V = (int)(total / C);
    snprintf(shape, sizeof shape, "V=%d C=%d", V, C);
    dim3 grid((V + 255) / 256, C);
    timed("colwalk_blk", shape, total * 8, reps,
          [&] { colwalk_blk<<<grid, 256>>>(a, out, V, C); });
    timed("coalesced_blk", shape, total * 8, reps,
          [&] { coalesced_blk<<<grid, 256>>>(a, out, V, C); });
  }
  // W4: rows of m floats, each walked by one thread from r * m
  int ms_[] = {8, 64};
  for (int m : ms_) {
    int n = (int)(total / m);
    snprintf(shape, sizeof shape, "n=%d m=%d", n, m);
    timed("rowwalk_lane", shape, total * 4, reps,
          [&] { rowwalk_lane<<<(n + 255) / 256, 256>>>(a, out, n, m); });
    timed("colmajor_lane", shape, total * 4, reps,
          [&] { colmajor_lane<<<(n + 255) / 256, 256>>>(a, out, n, m); });
  }
  return 0;
}
