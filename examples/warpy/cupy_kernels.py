"""Kernels compiled at run time by CuPy."""
import textwrap

import cupy as cp
from cupy import RawModule

BLOCK = 128

_SCAN = textwrap.dedent(r"""
    extern "C" __global__ void warp_scan(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float v = i < n ? x[i] : 0.f;
        for (int d = 1; d < 32; d <<= 1) {
            float t = __shfl_up(v, d);
            if ((threadIdx.x & 31) >= d) v += t;
        }
        if (i < n) y[i] = v;
    }
""")

warp_scan = cp.RawKernel(_SCAN, "warp_scan", options=("-std=c++17", "--use_fast_math"))

_module = RawModule(code="""
extern "C" __global__ void vote(const int* flags, unsigned* out) {
    unsigned any = __any(flags[threadIdx.x]);
    if (threadIdx.x == 0) out[blockIdx.x] = any;
}
""")
vote = _module.get_function("vote")

clipped_square = cp.ElementwiseKernel(
    "float32 x, float32 limit",
    "float32 y",
    "float v = x * x; y = v < limit ? v : limit; unsigned b = __ballot(v > limit)",
    "clipped_square",
)


def scan(x):
    y = cp.empty_like(x)
    n = x.size
    warp_scan(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (x, y, cp.int32(n)))
    return y
