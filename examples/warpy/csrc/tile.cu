// Register pressure the compiler reports (run `cudalint --ptxas examples/`, needs nvcc).
#define BLOCK 256
#define ACC 28

// 128 accumulators per thread, but __launch_bounds__(1024, 2) leaves 32 registers:
// ptxas spills to local memory (CL301).
template <int N>
__global__ void __launch_bounds__(1024, 2) tile_accumulate(const float* a, float* out, int n)
{
    float acc[N];
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = a[threadIdx.x + i * n];
#pragma unroll
    for (int k = 0; k < 8; ++k)
#pragma unroll
        for (int i = 0; i < N; ++i) acc[i] = acc[i] * acc[(i + k) % N] + a[k];
    float s = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) s += acc[i] * acc[N - 1 - i];
    out[threadIdx.x] = s;
}
template __global__ void tile_accumulate<128>(const float*, float*, int);

// 28 float4 values live at once: about 72 registers per thread, so 256-thread blocks
// fit three times per SM on sm_90 (CL303, 37.5% occupancy).
__global__ void gather4(const float4* __restrict__ a, float* out, int n)
{
    float4 v[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) v[i] = a[threadIdx.x + i * n];
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < ACC; ++i)
        s += v[i].x * v[ACC - 1 - i].y + v[i].z * v[(i + 3) % ACC].w;
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

void launch_gather4(const float4* a, float* out, int n)
{
    gather4<<<n / BLOCK, BLOCK>>>(a, out, n);
}
