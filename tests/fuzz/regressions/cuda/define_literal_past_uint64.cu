// issue 25, item 2: a 20-digit literal past UINT64_MAX: OverflowError (too many digits)
#define N (1 + 99999999999999999999)
__global__ void k(float* a) { __shared__ float s[N]; s[threadIdx.x] = a[threadIdx.x]; a[threadIdx.x] = s[threadIdx.x+1]; }
