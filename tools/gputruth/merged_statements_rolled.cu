// Why CL202 keeps the scalar figure for consecutive stores whose address moves with a
// loop nvcc keeps as a loop (cudalint/analysis/memory/bank_vectors.py): the same four
// stores of a 16-byte record, buf[l * 4 + f], become one STS.128 in one kernel and two
// STS.64 in another (nvcc 13, sm_90; tools/gputruth/merged_statements.py records the
// SASS in fixtures/CL202/merged_statements.json under "rolled").

// the strided loop alone: STS.128
__global__ void rolled_outer(int m, const float* __restrict__ x, float* out) {
  __shared__ float buf[1024 * 4];
  for (int l = threadIdx.x; l < m; l += blockDim.x) {
    buf[l * 4 + 0] = x[l];
    buf[l * 4 + 1] = x[l + 1];
    buf[l * 4 + 2] = x[l + 2];
    buf[l * 4 + 3] = x[l + 3];
  }
  __syncthreads();
  out[threadIdx.x] = buf[threadIdx.x * 3];
}

// pcn's tf_approxmatch (fixtures/CL201/staging.cu): two STS.64
__global__ void rolled_nested(int n, int m, const float* __restrict__ xyz1,
    const float* __restrict__ xyz2, const float* __restrict__ wt, float* __restrict__ out) {
  __shared__ float buf[1024 * 4];
  for (int k0 = 0; k0 < n; k0 += blockDim.x) {
    int k = k0 + threadIdx.x;
    float x1 = xyz1[k], y1 = xyz1[n + k], z1 = xyz1[2 * n + k];
    float suml = 1e-9f;
    for (int l0 = 0; l0 < m; l0 += 1024) {
      int lend = min(m, l0 + 1024) - l0;
      for (int l = threadIdx.x; l < lend; l += blockDim.x) {
        float x2 = xyz2[(l0 + l) * 3 + 0];
        float y2 = xyz2[(l0 + l) * 3 + 1];
        float z2 = xyz2[(l0 + l) * 3 + 2];
        buf[l * 4 + 0] = x2;
        buf[l * 4 + 1] = y2;
        buf[l * 4 + 2] = z2;
        buf[l * 4 + 3] = wt[l0 + l];
      }
      __syncthreads();
      for (int l = 0; l < lend; l++) {
        float d = (buf[l * 4 + 0] - x1) * (buf[l * 4 + 0] - x1) +
                  (buf[l * 4 + 1] - y1) * (buf[l * 4 + 1] - y1) +
                  (buf[l * 4 + 2] - z1) * (buf[l * 4 + 2] - z1);
        suml += __expf(-d) * buf[l * 4 + 3];
      }
      __syncthreads();
    }
    if (k < n) out[k] = suml;
  }
}

void launch(int b, int n, int m, const float* x1, const float* x2, const float* w, float* o) {
  rolled_outer<<<b, 32>>>(m, x2, o);
  rolled_nested<<<b, 32>>>(n, m, x1, x2, w, o);
}
