// Classic kernels as they are still found in many repositories; cudalint explains what
// each costs on the hardware (figures measured with Nsight Compute on an H100).
#define TILE 32
#define THREADS 128
#define N 4096        // matrix side

// Warp-synchronous final reduction: `volatile` does not order the threads of a warp on
// sm_70+ (independent thread scheduling), so each step races with the next (CL101).
__global__ void sum_rows(float* out, const float* in) {
    __shared__ float s[THREADS];
    unsigned tid = threadIdx.x;
    s[tid] = in[blockIdx.x * THREADS + tid];
    __syncthreads();
    if (tid < 64) s[tid] += s[tid + 64];
    __syncthreads();
    if (tid < 32) {
        volatile float* v = s;
        v[tid] += v[tid + 32];
        v[tid] += v[tid + 16];
        v[tid] += v[tid + 8];
        v[tid] += v[tid + 4];
        v[tid] += v[tid + 2];
        v[tid] += v[tid + 1];
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}

// Naive tiled transpose: the column read of a [32][32] tile hits one bank 32 times
// (CL202), and the global write walks down a column of `out` (CL201).
__global__ void transpose(float* out, const float* in) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * N + x];
    __syncthreads();
    out[x * N + y] = tile[threadIdx.x][threadIdx.y];
}

void launch(float* out, const float* in, int n) {
    sum_rows<<<n / THREADS, THREADS>>>(out, in);
    transpose<<<dim3(N / TILE, N / TILE), dim3(TILE, TILE)>>>(out, in);
}
