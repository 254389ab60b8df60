// issue 25, item 2: the evaluator computed a << b whatever the operator: 1 + 34359738368
// shifted 1 by 34 billion bits (MemoryError in five rules)
#define N (1 + 34359738368)
__global__ void k(float* a) { __shared__ float s[N]; s[threadIdx.x] = a[threadIdx.x]; a[threadIdx.x] = s[threadIdx.x + 1]; }
