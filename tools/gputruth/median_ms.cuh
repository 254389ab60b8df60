// The timer of the worth-acting measurements (newcorpus8_worth.cu, issue20_worth.cu,
// row_sort.cu): `warmups` launches, then the median of `reps` launches timed with CUDA
// events. Each file passes the counts its committed record was measured with.
#pragma once
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

template <typename F>
static float timed_median_ms(F launch, int reps, int warmups) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int w = 0; w < warmups; w++) launch();
  cudaDeviceSynchronize();
  std::vector<float> t;
  for (int r = 0; r < reps; r++) {
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[reps / 2];
}
