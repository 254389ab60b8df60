// CL205 positives (CL203 on sm_3x-sm_6x targets): pointer parameters the kernel only reads. Every kernel here is built
// before and after `cudalint --fix` / `--unsafe-fixes` by tests/test_readonly_sass.py;
// the loads of the flagged parameter must move from LDG.E to LDG.E...CONSTANT
// (recorded in sass.json by tools/gputruth/readonly_sass.py).

// The classic: `in` is read, `out` is written, both float*.
__global__ void scale(
    // ruleid: CL205
    float* in,
    // ok: CL203
    float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}

// The star next to the name: the fix keeps that spacing (`float *__restrict__ in`).
__global__ void axpy(float a,
    // ruleid: CL205
    float *x,
    // ok: CL203
    float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xi = x[i];
        y[i] = a * xi + y[i];
    }
}

// Already const: only `__restrict__` is missing (an unsafe fix).
__global__ void gather(
    // ruleid: CL205
    const float* table,
    // ruleid: CL205
  [-1]  const int* index,
    // ok: CL203
    float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int j = index[i];
        out[i] = table[j];
    }
}

// Template kernel: `const T*`.
template <typename T>
__global__ void add_rows(
    // ruleid: CL205
    T* a,
    // ok: CL203
    T* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        T v = a[i];
        out[i] = v + v;
    }
}
template __global__ void add_rows<float>(float*, float*, int);

// Read through a local pointer derived from the parameter: the fix makes `row` const too.
__global__ void row_sum(
    // ruleid: CL205
    float* m,
    // ok: CL203
    float* sums, int cols)
{
    float* row = m + blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        s += row[c];
    atomicAdd(&sums[blockIdx.x], s);
}

// Vector loads through reinterpret_cast: the fix adds const to the cast's type as well.
__global__ void sum4(
    // ruleid: CL205
    float* in,
    // ok: CL203
    float* out, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = reinterpret_cast<float4*>(in)[i];
        out[i] = v.x + v.y + v.z + v.w;
    }
}

// Read inside a device function that takes a non-const pointer but only reads it:
// the fix makes the device function's parameter const too.
__device__ float neighbour_mean(float* p, int i)
{
    float left = p[i];
    float right = p[i + 2];
    return 0.5f * (left + right);
}

__global__ void smooth(
    // ruleid: CL205
    float* in,
    // ok: CL203
    float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = neighbour_mean(in, i);
}

// A read through a const reference and through a struct member.
struct Particle { float x, y, z, m; };

 // noqa: CL104
__global__ void kinetic(
    // ruleid: CL205
    Particle* ps,
    // ok: CL203
    float* energy, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const Particle& p = ps[i];
        energy[i] = 0.5f * p.m * (p.x * p.x + p.y * p.y + p.z * p.z);
    }
}
