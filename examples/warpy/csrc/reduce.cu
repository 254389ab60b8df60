#include "warp.cuh"

#define BLOCK 256

__global__ void block_sum(const float* in, float* out, int n) {
  __shared__ float partial[BLOCK / 32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.f;
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < BLOCK / 32 ? partial[threadIdx.x] : 0.f;
    for (int offset = 4; offset > 0; offset /= 2)
      v += __shfl_down(v, offset);       // legacy: no lane mask
    if (threadIdx.x == 0) atomicAdd(out, v);
  }
}

void launch_block_sum(const float* in, float* out, int n, cudaStream_t stream) {
  block_sum<<<(n + BLOCK - 1) / BLOCK, BLOCK, 0, stream>>>(in, out, n);
}
