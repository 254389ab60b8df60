// issue 25, item 1: __launch_bounds__(INT_MAX) made the lane model build a set over
// 2^31 threads (1.2 GB, 2.2 s, MemoryError in CL201/CL202); CL601 reports it instead
__global__ void __launch_bounds__(2147483647) k(float* a) { a[threadIdx.x] = 1; }
