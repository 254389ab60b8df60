#define F0(x) x x
#define F1(x) F0(F0(x))
#define F2(x) F1(F1(x))
#define F3(x) F2(F2(x))
#define F4(x) F3(F3(x))
#define F5(x) F4(F4(x))
__device__ float f(float x) { return pow(x, 2.0); }
__global__ void k(float* y) {
  int v = F5(-1);
  y[threadIdx.x] = f(y[threadIdx.x]) * 0.1 + v;
}
