// issue 25, item 1: a launch with 99999999999 threads per block (a MemoryError in the
// lane model); the launch cannot run: CL601
__global__ void k(float* a) { a[threadIdx.x] = 1; }
void h(float* a) { k<<<1, 99999999999>>>(a); }
