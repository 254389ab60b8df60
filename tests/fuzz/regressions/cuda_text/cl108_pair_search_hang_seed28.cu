// CL404 is off by default; the fixture test selects it explicitly.
__device__ float __expf_like(float x) { return x; }

__global__ void gauss(float* y, const float* x) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // ruleid: CL404
    y[i] = __expf(-x[i] * x[i]);
    // ruleid: CL404
    y[i] += __fdividef(x[i], 3.0f);
    // ok: CL404
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
    y[i] += expf(x[i]) + __expf_like(x[i]);
}
