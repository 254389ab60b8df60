// Compiled by kernels.ipynb's cell 6 with --use_fast_math: cosf loses its range
// reduction there (CL401 names it)
__global__ void rotate(float* y, const float* angle, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = cosf(angle[i]);
}
