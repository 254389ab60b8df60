"""A register-heavy kernel compiled by CuPy (`cudalint --ptxas` reports its occupancy)."""
import cupy as cp

THREADS = 256

_GATHER = r"""
#define ACC 28
extern "C" __global__ void gather4_rt(const float4* __restrict__ a, float* out, int n) {
    float4 v[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) v[i] = a[threadIdx.x + i * n];
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < ACC; ++i)
        s += v[i].x * v[ACC - 1 - i].y + v[i].z * v[(i + 3) % ACC].w;
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""

gather4_rt = cp.RawKernel(_GATHER, "gather4_rt", options=("-std=c++17",))


def gather(a4, n):
    out = cp.empty(n, dtype=cp.float32)
    gather4_rt((n // THREADS,), (THREADS,), (a4, out, cp.int32(n)))
    return out
