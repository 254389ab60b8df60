// CL202 fixtures: 1-D shared arrays read with a stride, elements of 1 to 16 bytes.
__global__ void stride2_float(const float* in, float* out) {
  __shared__ float s[64];
  int tx = threadIdx.x;
  s[tx] = in[tx]; s[tx + 32] = in[tx + 32];
  __syncthreads();
  // ruleid: CL202
  out[tx] = s[2 * tx];
}

__global__ void stride3_float(const float* in, float* out) {
  __shared__ float s[96];
  int tx = threadIdx.x;
 = 0; r < 3; ++r) s[r * 32 + tx] = in[r * 32 + tx];
  __syncthreads();
  // ok: CL202
  out[tx] = s[3 * tx];
}

__global__ void stride4_float(const float* in, float* out) {
  __shared__ float s[128];
  int tx = threadIdx.x;
  for (int r = 0; r < 4; ++r) s[r * 32 + tx] = in[r * 32 + tx];
  __syncthreads();
  // ruleid: CL202
  out[tx] = s[4 * tx];
}

__global__ void stride16_float(const float* in, float* out) {
  __shared__ float s[512];
  int tx = threadIdx.x;
  for (int r = 0; r < 16; ++r) s[r * 32 + tx] = in[r * 32 + tx];
  __syncthreads();
  // ruleid: CL202
  out[tx] = s[16 * tx];
}

__global__ void stride33_float(const float* in, float* out) {
  __shared__ float s[33 * 32];
  int tx = threadIdx.x;
  for (int r = 0; r < 33; ++r) s[r * 32 + tx] = in[r * 32 + tx];
  __syncthreads();
  // ok: CL202
  out[tx] = s[33 * tx];
}

__global__ void linear_double(const double* in, double* out) {
  __shared__ double d[32];
  int tx = threadIdx.x;
  d[tx] = in[tx];
  __syncthreads();
  // ok: CL202
  out[tx] = d[31 - tx];
}

__global__ void stride2_double(const double* in, double* out) {
  __shared__ double d[64];
  int tx = threadIdx.x;
  d[tx] = in[tx]; d[tx + 32] = in[tx + 32];
  __syncthreads();
  // ruleid: CL202
  out[tx] = d[2 * tx];
}

__global__ void col_double_32x32(const double* in, double* out) {
  __shared__ double t[32][32];
  int tx = threadIdx.x;
  for (int r = 0; r < 32; ++r) t[r][tx] = in[r * 32 + tx];
  __syncthreads();
  double s = 0.0;
#pragma unroll 1
  for (int k = 0; k < 32; ++k)
    // ruleid: CL202
    s += t[tx][k];
  out[tx] = s;
}

__global__ void col_double_32x33(const double* in, double* out) {
  __shared__ double t[32][33];
  int tx = threadIdx.x;
  for (int r = 0; r < 32; ++r) t[r][tx] = in[r * 32 + tx];
  __syncthreads();
  double s = 0.0;
#pragma unroll 1
  for (int k = 0; k < 32; ++k)
    // ok: CL202
    s += t[tx][k];
  out[tx] = s;
}

__global__ void linear_float4(const float* in, float4* out) {
  __shared__ float s[128];
  int tx = threadIdx.x;
  for (int r = 0; r < 4; ++r) s[r * 32 + tx] = in[r * 32 + tx];
  __syncthreads();
  // ok: CL202
  out[tx] = reinterpret_cast<float4*>(s)[tx];
}

__global__ void col_float4_32x32(const float* in, float4* out) {
  __shared__ float tile[32][32];
  int tx = threadIdx.x;
  for (int r = 0; r < 32; ++r) tile[r][tx] = in[r * 32 + tx];
  __syncthreads();
  // ruleid: CL202
  out[tx] = reinterpret_cast<float4*>(tile[tx])[0];
}

__global__ void col_float4_32x36(const float* in, float4* out) {
  __shared__ float tile[32][36];
  int tx = threadIdx.x;
  for (int r = 0; r < 32; ++r) tile[r][tx] = in[r * 32 + tx];
  __syncthreads();
  // ok: CL202
  out[tx] = reinterpret_cast<float4*>(tile[tx])[0];
}

__global__ void stride2_float4(const float* in, float4* out) {
  __shared__ float s[256];
  int tx = threadIdx.x;
  for (int r = 0; r < 8; ++r) s[r * 32 + tx] = in[r * 32 + tx];
  __syncthreads();
  // ruleid: CL202
  out[tx] = ((float4*)s)[2 * tx];
}

__global__ void linear_char(const char* in, int* out) {
  __shared__ char c[32];
  int tx = threadIdx.x;
  c[tx] = in[tx];
  __syncthreads();
  // ok: CL202
  out[tx] = c[31 - tx];
}

__global__ void stride4_char(const char* in, int* out) {
  __shared__ char c[128];
  int tx = threadIdx.x;
  for (int r = 0; r < 4; ++r) c[r * 32 + tx] = in[r * 32 + tx];
  __syncthreads();
  // ok: CL202
  out[tx] = c[4 * tx];
}

__global__ void stride128_char(const char* in, int* out) {
  __shared__ char c[4096];
  int tx = threadIdx.x;
  for (int r = 0; r < 128; ++r) c[r * 32 + tx] = in[r * 32 + tx];
  __syncthreads();
  // ruleid: CL202
  out[tx] = c[128 * tx];
}

__global__ void stride2_short(const short* in, int* out) {
  __shared__ short h[64];
  int tx = threadIdx.x;
  h[tx] = in[tx]; h[tx + 32] = in[tx + 32];
  __syncthreads();
  // ok: CL202
  out[tx] = h[2 * tx];
}

__global__ void col_short_32x64(const short* in, int* out) {
  __shared__ short h[32][64];
  int tx = threadIdx.x;
  for (int r = 0; r < 64; ++r) h[r / 2][(r % 2) * 32 + tx] = in[r * 32 + tx];
  __syncthreads();
  // ruleid: CL202
  out[tx] = h[tx][5];
}

__global__ void dynamic_stride32(const float* in, float* out) {
  extern __shared__ float dyn[];
  int tx = threadIdx.x;
  for (int r = 0; r < 32; ++r) dyn[r * 32 + tx] = in[r * 32 + tx];
  __syncthreads();
  // ruleid: CL202
  out[tx] = dyn[tx * 32];
}

__global__ void __launch_bounds__(32) bounds_stride2(const float* in, float* out) {
  __shared__ float s[64];
  int tx = threadIdx.x;
  s[tx] = in[tx]; s[tx + 32] = in[tx + 32];
  __syncthreads();
  // ruleid: CL202
  out[tx] = s[tx * 2];
}

void launch_strides(const float* f, float* g, const double* d, double* e, const char* c,
                    int* o, const short* h, float4* v) {
  stride2_float<<<1, 32>>>(f, g);
  stride3_float<<<1, 32>>>(f, g);
  stride4_float<<<1, 32>>>(f, g);
  stride16_float<<<1, 32>>>(f, g);
  stride33_float<<<1, 32>>>(f, g);
  linear_double<<<1, 32>>>(d, e);
  stride2_double<<<1, 32>>>(d, e);
  col_double_32x32<<<1, 32>>>(d, e);
  col_double_32x33<<<1, 32>>>(d, e);
  linear_float4<<<1, 32>>>(f, v);
  col_float4_32x32<<<1, 32>>>(f, v);
  col_float4_32x36<<<1, 32>>>(f, v);
  stride2_float4<<<1, 32>>>(f, v);
  linear_char<<<1, 32>>>(c, o);
  stride4_char<<<1, 32>>>(c, o);
  stride128_char<<<1, 3/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a<a</*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*