// Times torchsparse's fp16 weight-gradient kernels (extracted by prepare.py, one header per
// variant given with -include): M_fwd output points, 27-entry map, split-K 4.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <random>
#include <cuda_fp16.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("CUDA error %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

template <class F>
float timed(F launch) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  const bool profile = getenv("PROFILE") != nullptr;
  for (int i = 0; i < (profile ? 0 : 3); i++) launch();
  CK(cudaDeviceSynchronize());
  cudaEventRecord(a);
  const int reps = profile ? 1 : 20;
  for (int i = 0; i < reps; i++) launch();
  cudaEventRecord(b); CK(cudaEventSynchronize(b));
  float ms; cudaEventElapsedTime(&ms, a, b);
  CK(cudaGetLastError());
  return ms / reps;
}

int main() {
  const int M = 1 << 17, KV = 27, SK = 4, C = 64;
  std::mt19937 rng(5);
  std::vector<int> map(M * KV);
  for (auto &v : map) v = (rng() % 5 == 0) ? -1 : int(rng() % M);
  int *d_map; CK(cudaMalloc(&d_map, map.size() * 4));
  CK(cudaMemcpy(d_map, map.data(), map.size() * 4, cudaMemcpyHostToDevice));
  half *A, *B, *Cout;
  CK(cudaMalloc(&A, (size_t)M * C * 2)); CK(cudaMalloc(&B, (size_t)M * C * 2));
  CK(cudaMalloc(&Cout, (size_t)SK * C * KV * C * 2));
  CK(cudaMemset(A, 0, (size_t)M * C * 2)); CK(cudaMemset(B, 0, (size_t)M * C * 2));
  printf("wg_f16_s1 %.4f\n", timed([&] { conv_backward_cuda_setting1_mode0_f16f16f32<16, 16, false, false>
      <<<1 * KV * 1 * SK, dim3(32, 1)>>>(M, 16, 16, KV, SK, A, B, d_map, Cout); }));
  printf("wg_f16_s2 %.4f\n", timed([&] { conv_backward_cuda_setting2_mode0_f16f16f32
      <<<32 * KV / 32 * 1 * SK, dim3(32, 2)>>>(M, 32, 64, KV, SK, A, B, d_map, Cout); }));
  return 0;
}
