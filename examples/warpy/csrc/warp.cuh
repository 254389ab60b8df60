#pragma once

// Sum over the 32 lanes of a warp.
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor(v, offset);          // legacy: no lane mask
  return v;
}
