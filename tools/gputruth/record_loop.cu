// Row-per-thread reads across a loop (CL201 "record read whole once" vs run-time row
// strides): each thread t sums its own row a[t*K + k], k < K (row-major, lane stride K
// floats), against the same sum over a column-major copy a[k*N + t] (unit lane stride).
// Built and run by tools/gputruth/record_loop.py; prints one line per kernel and K.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

__global__ void rows(const float* a, float* y, int n, int K) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) {
    float acc = 0.f;
    for (int k = 0; k < K; k++) acc += a[(size_t)t * K + k];
    y[t] = acc;
  }
}

__global__ void cols(const float* a, float* y, int n, int K) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) {
    float acc = 0.f;
    for (int k = 0; k < K; k++) acc += a[(size_t)k * n + t];
    y[t] = acc;
  }
}

int main() {
  const size_t total = 64u << 20;      // floats: 256 MB, well past L2
  float *a, *y;
  cudaMalloc(&a, total * sizeof(float));
  cudaMalloc(&y, total * sizeof(float));
  cudaMemset(a, 0, total * sizeof(float));
  int Ks[] = {3, 8, 9, 32, 256, 2048};
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int K : Ks) {
    int n = (int)(total / K);
    for (int which = 0; which < 2; which++) {
      std::vector<float> ms;
      for (int r = 0; r < 21; r++) {
        cudaEventRecord(e0);
        if (which == 0) rows<<<(n + 255) / 256, 256>>>(a, y, n, K);
        else cols<<<(n + 255) / 256, 256>>>(a, y, n, K);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float t; cudaEventElapsedTime(&t, e0, e1); ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      double med = ms[ms.size() / 2];
      printf("%s K=%d n=%d median_ms=%.4f useful_GBps=%.1f\n", which ? "cols" : "rows", K, n,
             med, (double)n * K * 4 / (med * 1e6));
    }
  }
  printf("err=%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
