#define D(x) x x
__device__ float f(float x) { return pow(x, 2.0); }
__global__ void k(float* y) {
  int v = D(D(D(D(D(D(D(D(D(D(D(D(D(D(D(D(D(D(-1))))))))))))))))));
  y[threadIdx.x] = f(y[threadIdx.x]) * 0.1 + v;
}
