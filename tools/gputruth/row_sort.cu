// Issue 20, sheet-newcorpus11 N2 (judged not worth by estimate): LEAP's per-thread scratch
// row, filled and then sorted in place (O(n^2) compare-and-swap), launched with 8-thread
// blocks. CL201 says lanes walk their own rows (a stride of 16 * numObjects bytes) and
// asks for the column-major layout: element k of every row side by side. Both layouts, the
// same arithmetic; 8-thread blocks as LEAP launches them, and 128-thread blocks.
// Built and run by row_sort.py; lines "S key=value ...".
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include "median_ms.cuh"

template <bool COLUMN>
__device__ __forceinline__ float& at(float* data, int ip, int k, int n, int threads) {
  return COLUMN ? data[(size_t)k * threads + ip] : data[(size_t)ip * 4 * n + k];
}

template <bool COLUMN>
__global__ void trace(const float* solids, int n, float* data, float* g, int threads) {
  const int ip = threadIdx.x + blockIdx.x * blockDim.x;
  if (ip >= threads) return;
  for (int i = 0; i < n; i++) at<COLUMN>(data, ip, i, n, threads) = solids[(i * 7 + ip) % n] * (ip % 13);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      float a = at<COLUMN>(data, ip, i, n, threads), b = at<COLUMN>(data, ip, j, n, threads);
      if (a > b) {
        at<COLUMN>(data, ip, i, n, threads) = b;
        at<COLUMN>(data, ip, j, n, threads) = a;
      }
    }
  g[ip] = at<COLUMN>(data, ip, 0, n, threads) + at<COLUMN>(data, ip, n - 1, n, threads);
}

template <typename F>
static float median_ms(F launch, int reps = 11) {
  return timed_median_ms(launch, reps, 1);
}

int main() {
  const int threads = 1 << 16;
  for (int n : {8, 32, 64}) {
    float *solids, *data, *g;
    cudaMalloc(&solids, sizeof(float) * n);
    cudaMalloc(&data, sizeof(float) * 4 * (size_t)n * threads);
    cudaMalloc(&g, sizeof(float) * threads);
    std::vector<float> hs(n);
    for (int i = 0; i < n; i++) hs[i] = (float)((i * 37) % n);
    cudaMemcpy(solids, hs.data(), sizeof(float) * n, cudaMemcpyHostToDevice);
    for (int block : {8, 128}) {
      int blocks = threads / block;
      float row = median_ms([&] { trace<false><<<blocks, block>>>(solids, n, data, g, threads); });
      float col = median_ms([&] { trace<true><<<blocks, block>>>(solids, n, data, g, threads); });
      std::vector<float> a(threads), b(threads);
      trace<false><<<blocks, block>>>(solids, n, data, g, threads);
      cudaMemcpy(a.data(), g, sizeof(float) * threads, cudaMemcpyDeviceToHost);
      trace<true><<<blocks, block>>>(solids, n, data, g, threads);
      cudaMemcpy(b.data(), g, sizeof(float) * threads, cudaMemcpyDeviceToHost);
      printf("S n=%d block=%d row_ms=%.4f column_ms=%.4f ratio=%.3f same_output=%d\n", n, block,
             row, col, row / col, (int)(a == b));
    }
    cudaFree(solids); cudaFree(data); cudaFree(g);
  }
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
  return 0;
}
