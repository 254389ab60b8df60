﻿#define M0 (1.0)
#define M1 M0 M0
#define M2 M1 M1
#define M3 M2 M2
#define M4 M3 M3
#define M5 M4 M4
#define M6 M5 M5
#define M7 M6 M6
#define M8 M7 M7
#define M9 M8 M8
#define M10 M9 M9
#define M11 M10 M10
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M11
#define M12 M11 M16 M15 M15

__device__ float f(float x) { return pow(x, 2.0); }
__global__ void k(float* y) {
  constexpr int K = M16;
  for (int i = 0; i < M16; ++i) y[threadIdx.x] += f(y[i]) * 0.1;
}
1
#define M12 M11 M11
#define M12 M11 M11
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define 1/0M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M13 M12 M12
#define M14 M13 M13
#define M15 M14 M14
#define M16 M15 M15

__device__ float f(float x) { return pow(x, 2.0); }
__global__ void k(float* y) {
  __shared__ float s[M16];
  for (int i = 0; i < M16; ++i) y[threadIdx.x] += f(y[i]) * 0.1;
}
void host(flokIdx.x * blockDim.x + tid] = s[tid];
}

// cooperative-groups tile sync between the steps
__global__ void tile_sync_reduction(float* out, const float