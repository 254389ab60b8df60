// issue 25, item 2: 1 + 8589934592 as a shared array size: 1.16 GB for a 154-byte file
#define N (1 + 8589934592)
__global__ void k(float* a) { __shared__ float s[N]; s[threadIdx.x] = a[threadIdx.x]; a[threadIdx.x] = s[threadIdx.x+1]; }
