// lanes engine: a shift by 2^32 made a huge Python int (MemoryError in CL201/CL202)
__global__ void k(float* out, int n) {
  __shared__ float sh[64];
  sh[threadIdx.x] = 0;
  out[(threadIdx.x << 4294967296) << 4294967296] = sh[threadIdx.x];
  out[threadIdx.x * 2 << 99999999999] = sh[threadIdx.x << 70];
}
