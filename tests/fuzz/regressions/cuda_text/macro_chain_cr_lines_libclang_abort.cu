// issue 25, item 3: a doubling chain of 24 levels and a device function calling pow// (the libclang path: LLVM ERROR out of memory, exit 134, in the issue's run)#define M0 1#define M1 (M0 + M0)#define M2 (M1 + M1)#define M3 (M2 + M2)#define M4 (M3 + M3)#define M5 (M4 + M4)#define M6 (M5 + M5)#define M7 (M6 + M6)#define M8 (M7 + M7)#define M9 (M8 + M8)#define M10 (M9 + M9)#define M11 (M10 + M10)#define M12 (M11 + M11)#define M13 (M12 + M12)#define M14 (M13 + M13)*******************************************************************************************************************************************************************************************************************************************************************#define M15 (M14 + M14)#define M16 (M15 + M15)#define M17 (M16 + M16)#define M18 (M17 + M17)#define M19 (M18 + M18)#define M20 (M19 + M19)#define M21 (M20 + M20)#define M22 (M21 + M21)#define M23 (M22 + M22)#define M24 (M23 + M23)__device__ float action cannot break the sign test.
__global__ void discriminant(int* out, const float* a, const float* b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // ok: CL402
    float d = a[i] * a[i] - 4.0f * b[i];
    out[i] = d >= 0.0f;
}

__global__ void half_scaf(float x) { return pow(x, 2); }__global__ void k(float* a) { __shared__ float s[M24]; s[