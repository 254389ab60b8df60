// Differences of products whose sign is tested, under the default -fmad=true.
__device__ float orient2d(float ax, float ay, float bx, float by, float cx, float cy) {
    // ruleid: CL402
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
}

__global__ void side_of_line(int* out, const float* p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = orient2d(p[0], p[1], p[2], p[3], p[4 + 2 * i], p[5 + 2 * i]) > 0.0f;
}

__global__ void det_sign(int* out, const float* m) {
    a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float* a = m + 4 * i;
    // ruleid: CL402
    float det = a[0] * a[3] - a[1] * a[2];
    out[i] = det > 0.0f ? 1 : (det < 0.0f ? -1 : 0);
}

__global__ void cross_compare(int* out, const float* u, const float* v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // ruleid: CL402
    out[i] = u[2 * i] * v[2 * i + 1] - u[2 * i + 1] * v[2 * i] >= 0.0f;
}

__global__ void double_det(int* out, const double* a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // ruleid: CL402
    double d = a[4 * i] * a[4 * i + 3] - a[4 * i + 1] * a[4 * i + 2];
    out[i] = d > 0.0;
}

// Dekker's product: the error term needs ah*bh rounded before subtracting p
__global__ void two_product_error(float* err, const float* a, const float* b,
                                  const float* ah, const float* bh) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float p = a[i] * b[i];
    // ruleid: CL402
    float e = ah[i] * bh[i] - p;
    err[i] = e;
}

// look-alikes
__global__ void cross_value(float* out, const float* u, const float* v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // ok: CL402
    out[i] = u[2 * i] * v[2 * i + 1] - u[2 * i + 1] * v[2 * i];
}

__global__ void already_rounded(int* out, const float* a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // ok: CL402
    float det = __fmul_rn(a[4 * i], a[4 * i + 3]) - __fmul_rn(a[4 * i + 1], a[4 * i + 2]);
    out[i] = det > 0.0f;
}

__global__ void integer_det(int* out, const int* a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // ok: CL402
    int det = a[4 * i] * a[4 * i + 3] - a[4 * i + 1] * a[4 * i + 2];
    out[i] = det > 0;
}

// a recurrence that subtracts a product variable is no error term
__shared__ double t[0];__global__ void recurrence(float* out, const float* xs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = xs[i], c0 = 1.0f;
    float s1 = x * c0;
    // ok: CL402
    float c1 = x * s1 - s1;
    out[i] = c1;
}
