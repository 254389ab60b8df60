// Times torchsparse's implicit-GEMM forward kernels (extracted by prepare.py; one header
// per variant, given with -include) on random sparse-conv data: M output points, a
// 27-entry kernel map with 20% misses. Prints one line per kernel: name, ms per launch.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <random>
#include <cuda_fp16.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("CUDA error %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

static const int M = 1 << 17, KV = 27;

template <class F>
float timed(F launch) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  const bool profile = getenv("PROFILE") != nullptr;     // under ncu: one launch each
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
  std::mt19937 rng(7);
  std::vector<int> map(M * KV);
  for (auto &v : map) v = (rng() % 5 == 0) ? -1 : int(rng() % M);
  int *d_map; CK(cudaMalloc(&d_map, map.size() * 4));
  CK(cudaMemcpy(d_map, map.data(), map.size() * 4, cudaMemcpyHostToDevice));
  const int C = 64;
  half *hA, *hB, *hC; float *fA, *fB, *fC;
  CK(cudaMalloc(&hA, (size_t)M * C * 2)); CK(cudaMalloc(&hB, (size_t)KV * C * C * 2));
  CK(cudaMalloc(&hC, (size_t)M * C * 2));
  CK(cudaMalloc(&fA, (size_t)M * C * 4)); CK(cudaMalloc(&fB, (size_t)KV * C * C * 4));
  CK(cudaMalloc(&fC, (size_t)M * C * 4));
  CK(cudaMemset(hA, 0, (size_t)M * C * 2)); CK(cudaMemset(hB, 0, (size_t)KV * C * C * 2));
  CK(cudaMemset(fA, 0, (size_t)M * C * 4)); CK(cudaMemset(fB, 0, (size_t)KV * C * C * 4));
  int mb = (M + 127) / 128;
  // f16: setting1 (C 16 -> 16), setting2 (64 -> 32), setting3 (64 -> 64)
  printf("f16_s1 %.4f\n", timed([&] { conv_forward_cuda_setting1_mode0_f16f16f32<16, 16, false, false>
      <<<mb * 1, dim3(32, 2)>>>(M, 16, 16, KV, hA, hB, d_map, hC); }));
  printf("f16_s2 %.4f\n", timed([&] { conv_forward_cuda_setting2_mode0_f16f16f32
      <<<mb * 2, dim3(32, 2)>>>(M, 64, 32, KV, hA, hB, d_map, hC); }));
  printf("f16_s3 %.4f\n", timed([&] { conv_forward_cuda_setting3_mode0_f16f16f32
      <<<mb * 1, dim3(32, 4)>>>(M, 64, 64, KV, hA, hB, d_map, hC); }));
  printf("tf32_s2 %.4f\n", timed([&] { conv_forward_cuda_setting2_mode0_tf32tf32f32
      <<<mb * 2, dim3(32, 2)>>>(M, 64, 32, KV, fA, fB, d_map, fC); }));
  printf("tf32_s3 %.4f\n", timed([&] { conv_forward_cuda_setting3_mode0_tf32tf32f32
      <<<mb * 1, dim3(32, 4)>>>(M, 64, 64, KV, fA, fB, d_map, fC); }));
  printf("f32_s1 %.4f\n", timed([&] { conv_forward_cuda_setting1_mode0_f32f32f32<16, 16, false, false>
      <<<mb * 1, 64>>>(M, 16, 16, KV, fA, fB, d_map, fC); }));
  printf("f32_s2 %.4f\n", timed([&] { conv_forward_cuda_setting2_mode0_f32f32f32
      <<<mb * 2, 64>>>(M, 64, 32, KV, fA, fB, d_map, fC); }));
  printf("f32_s3 %.4f\n", timed([&] { conv_forward_cuda_setting3_mode0_f32f32f32
      <<<mb * 1, 128>>>(M, 64, 64, KV, fA, fB, d_map, fC); }));
  return 0;
}
