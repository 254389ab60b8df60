// CL202 store threshold: what does an n-way bank conflict on a shared-memory STORE cost a
// kernel, against the same conflict on a LOAD? Built and run by
// tools/gputruth/store_conflict.py, which documents the measurement; this file prints one
// line per kernel ("name=... median_ms=...") and, with --once, launches each kernel once
// (for ncu, in the order of the names it prints).
//
// tile_loop<VEC, WST, WLD, F>: a GEMM-style staging loop. Each tile, every thread loads 32
// bytes from global memory (coalesced, L2-resident), stores them to shared memory (8
// STS.32 or 2 STS.128, WST-way), waits at a barrier, loads 128 bytes back (32 LDS.32 or 8
// LDS.128, WLD-way) and does F FMAs per loaded float into 8 accumulators, then a barrier.
// pure_store<VEC, W>: 8 shared stores per iteration, nothing else (asm volatile, so each
// store is issued).
//
// Lane patterns (elements of VEC floats, inside one warp's 256-element region):
//   4 bytes:  (lane / W) + (lane % W) * 32: W lanes per bank, W rows apart: W-way.
//   16 bytes: served per quarter warp (8 lanes x 16 bytes = 128 bytes); quarter q, lane j
//             of it: q*8*W + (j / W) + (j % W) * 8: W lanes of a quarter per 16-byte bank
//             group, W rows apart: W-way (4*W wavefronts instead of 4).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

constexpr int THREADS = 256;          // 8 warps
constexpr int REGION = 256;           // elements per (warp, store slot)
constexpr int SMEM = 64 * 1024;       // every kernel asks for the same: same occupancy

template <int VEC, int W>
__device__ __forceinline__ int pat(int lane, int shift) {
  if (VEC == 1) return (lane / W) + (lane % W) * 32 + shift;
  int q = lane >> 3, j = lane & 7;
  return q * 8 * W + (j / W) + (j % W) * 8 + shift;
}

template <int VEC> struct Vec;
template <> struct Vec<1> { using T = float; };
template <> struct Vec<4> { using T = float4; };

__device__ __forceinline__ void comps(float x, float* c) { c[0] = x; }
__device__ __forceinline__ void comps(float4 x, float* c) {
  c[0] = x.x; c[1] = x.y; c[2] = x.z; c[3] = x.w;
}

template <int VEC, int WST, int WLD, int F>
__global__ void __launch_bounds__(THREADS)
tile_loop(const float* __restrict__ g, float* __restrict__ out, int ntiles, int gmask) {
  using T = typename Vec<VEC>::T;
  extern __shared__ float4 smem4[];
  T* smem = reinterpret_cast<T*>(smem4);
  constexpr int S = 8 / VEC;      // stores per thread per tile: 32 bytes
  constexpr int L = 32 / VEC;     // loads per thread per tile: 128 bytes
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float acc[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) acc[i] = 0.f;
  for (int t = 0; t < ntiles; ++t) {
    const int gbase = ((blockIdx.x * ntiles + t) * THREADS * 8) & gmask;
    const T* src = reinterpret_cast<const T*>(g + gbase);
    T v[S];
#pragma unroll
    for (int s = 0; s < S; ++s) v[s] = src[s * THREADS + threadIdx.x];
#pragma unroll
    for (int s = 0; s < S; ++s) smem[(warp * S + s) * REGION + pat<VEC, WST>(lane, 0)] = v[s];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < L; ++k) {
      T x = smem[(warp * S + k % S) * REGION + pat<VEC, WLD>(lane, k / S)];
      float c[VEC];
      comps(x, c);
#pragma unroll
      for (int e = 0; e < VEC; ++e)
#pragma unroll
        for (int f = 0; f < F; ++f) {
          const int a = (k * VEC + e + f) & 7;
          acc[a] = fmaf(acc[a], 0.999f, c[e]);
        }
    }
    __syncthreads();
  }
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) sum += acc[i];
  out[blockIdx.x * THREADS + threadIdx.x] = sum;
}

template <int VEC, int W>
__global__ void __launch_bounds__(THREADS) pure_store(int iters) {
  extern __shared__ float4 smem4[];
  const unsigned base = (unsigned)__cvta_generic_to_shared(smem4);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int it = 0; it < iters; ++it) {
    const float x = (float)it;
#pragma unroll
    for (int s = 0; s < 8; ++s) {
      const unsigned addr = base +
          ((warp * 2 + (s & 1)) * REGION + pat<VEC, W>(lane, 0)) * (4 * VEC);
      if (VEC == 1)
        asm volatile("st.shared.f32 [%0], %1;" ::"r"(addr), "f"(x) : "memory");
      else
        asm volatile("st.shared.v4.f32 [%0], {%1, %1, %1, %1};" ::"r"(addr), "f"(x)
                     : "memory");
    }
  }
}

struct Run {
  const char* name;
  void (*launch)(const float*, float*, int, int);
  const void* fn;
};

#define TILE(V, WS, WL, FF)                                                               \
  Run{"tile_st" #WS "_ld" #WL "_b" #V "_f" #FF,                                         \
      [](const float* g, float* o, int blocks, int n) {                                   \
        tile_loop<V, WS, WL, FF><<<blocks, THREADS, SMEM>>>(g, o, n, (1 << 20) - 1);      \
      },                                                                                  \
      (const void*)tile_loop<V, WS, WL, FF>}
#define PURE(V, WS)                                                                       \
  Run{"pure_st" #WS "_b" #V,                                                              \
      [](const float*, float*, int blocks, int n) {                                       \
        pure_store<V, WS><<<blocks, THREADS, SMEM>>>(n * 8);                              \
      },                                                                                  \
      (const void*)pure_store<V, WS>}

#define TILES(V, FF)                                                                      \
  TILE(V, 1, 1, FF), TILE(V, 2, 1, FF), TILE(V, 4, 1, FF), TILE(V, 8, 1, FF),             \
      TILE(V, 1, 2, FF), TILE(V, 1, 4, FF), TILE(V, 1, 8, FF)

int main(int argc, char** argv) {
  const bool once = argc > 1 && !strcmp(argv[1], "--once");
  // V is the element width in floats: 1 (4-byte accesses) or 4 (16-byte accesses)
  std::vector<Run> runs = {TILES(1, 2), TILES(1, 4), TILES(1, 8),
                           TILES(4, 2), TILES(4, 4), TILES(4, 8),
                           PURE(1, 1), PURE(1, 2), PURE(1, 4), PURE(1, 8),
                           PURE(4, 1), PURE(4, 2), PURE(4, 4), PURE(4, 8)};
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int blocks = sms * 3;          // 3 blocks of 64 KB per SM: one wave
  const int ntiles = once ? 64 : 512;
  float *g, *out;
  cudaMalloc(&g, (1 << 20) * sizeof(float) + 64 * 1024);
  cudaMalloc(&out, blocks * THREADS * sizeof(float));
  cudaMemset(g, 0, (1 << 20) * sizeof(float) + 64 * 1024);
  for (auto& r : runs)
    cudaFuncSetAttribute(r.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
  if (once) {
    for (auto& r : runs) {
      r.launch(g, out, blocks, ntiles);
      cudaDeviceSynchronize();
      printf("launched name=%s\n", r.name);
    }
    printf("err=%s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
  }
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<std::vector<float>> ms(runs.size());
  for (auto& r : runs) r.launch(g, out, blocks, ntiles);     // warm-up
  cudaDeviceSynchronize();
  // 3 rounds of 7 launches per kernel, kernels alternating: clock drift spreads evenly
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < runs.size(); ++i)
      for (int rep = 0; rep < 7; ++rep) {
        cudaEventRecord(e0);
        runs[i].launch(g, out, blocks, ntiles);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float t;
        cudaEventElapsedTime(&t, e0, e1);
        ms[i].push_back(t);
      }
  for (size_t i = 0; i < runs.size(); ++i) {
    std::sort(ms[i].begin(), ms[i].end());
    printf("name=%s blocks=%d ntiles=%d median_ms=%.5f min_ms=%.5f max_ms=%.5f\n",
           runs[i].name, blocks, ntiles, ms[i][ms[i].size() / 2], ms[i].front(),
           ms[i].back());
  }
  printf("err=%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
