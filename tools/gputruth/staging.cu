// CL201/CL202 on staging code: what do uncoalesced staging loads and bank-conflicted staging
// stores cost when every thread of the block then reads every staged element in a loop?
// Built and run by tools/gputruth/staging.py, which documents the measurement.
//
// The shape is pcn's tf_approxmatch (sheet-newcorpus4 #34-36, #51-53): per tile of TILE
// points, the block stages 12-byte xyz records and a weight into buf[l*4+f] (lanes 16 bytes
// apart: 4-way conflicted stores; the record loads 12 sectors per request), barrier, then
// every thread walks the whole tile (broadcast reads) for its own query point.
//   mode 0, as written: AoS loads xyz[3*p+f], scalar stores buf[l*4+f]     (CL201 + CL202)
//   mode 1, CL202 remedy: the same loads, one float4 store per record     (conflict-free)
//   mode 2, both remedies: SoA loads x[p], y[p], z[p], one float4 store   (coalesced too)
// consumer EXPF: w = __expf(level * d2) * buf[l*4+3] (pcn), else w = d2 * buf[l*4+3] (the
// cheapest consumer: 4 broadcast LDS and ~10 flops per staged element per thread).
#include <algorithm>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

constexpr int TILE = 1024;

template <int BLOCK, int MODE, bool EXPF>
__global__ void __launch_bounds__(BLOCK)
staged(int n, int m, const float* __restrict__ q, const float* __restrict__ xyz,
       const float* __restrict__ xs, const float* __restrict__ ys,
       const float* __restrict__ zs, const float* __restrict__ wt, float* __restrict__ out) {
  __shared__ __align__(16) float buf[TILE * 4];
  const int k = blockIdx.x * BLOCK + threadIdx.x;
  const float x1 = q[k], y1 = q[n + k], z1 = q[2 * n + k];
  const float level = -0.5f;
  float sum = 1e-9f;
  for (int l0 = 0; l0 < m; l0 += TILE) {
    const int lend = min(m, l0 + TILE) - l0;
    for (int l = threadIdx.x; l < lend; l += BLOCK) {
      float x2, y2, z2;
      if (MODE == 2) {
        x2 = xs[l0 + l]; y2 = ys[l0 + l]; z2 = zs[l0 + l];
      } else {
        x2 = xyz[(l0 + l) * 3 + 0]; y2 = xyz[(l0 + l) * 3 + 1]; z2 = xyz[(l0 + l) * 3 + 2];
      }
      const float w = wt[l0 + l];
      if (MODE == 0) {
        // volatile: four scalar STS as the source says (nvcc merges some of pcn's into
        // STS.64/STS.128, which would hide the conflict being priced)
        volatile float* vb = buf;
        vb[l * 4 + 0] = x2; vb[l * 4 + 1] = y2; vb[l * 4 + 2] = z2; vb[l * 4 + 3] = w;
      } else {
        reinterpret_cast<float4*>(buf)[l] = make_float4(x2, y2, z2, w);
      }
    }
    __syncthreads();
    for (int l = 0; l < lend; l++) {
      const float x2 = buf[l * 4 + 0], y2 = buf[l * 4 + 1], z2 = buf[l * 4 + 2];
      const float d = (x2 - x1) * (x2 - x1) + (y2 - y1) * (y2 - y1) + (z2 - z1) * (z2 - z1);
      sum += EXPF ? __expf(level * d) * buf[l * 4 + 3] : d * buf[l * 4 + 3];
    }
    __syncthreads();
  }
  out[k] = sum;
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <int BLOCK, int MODE, bool EXPF>
static void run(int n, int m, const float* q, const float* xyz, const float* xs,
                const float* ys, const float* zs, const float* wt, float* out, int reps,
                bool once) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> ms;
  for (int r = 0; r < (once ? 1 : reps + 2); ++r) {
    cudaEventRecord(a);
    staged<BLOCK, MODE, EXPF><<<n / BLOCK, BLOCK>>>(n, m, q, xyz, xs, ys, zs, wt, out);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float t;
    cudaEventElapsedTime(&t, a, b);
    if (r >= 2) ms.push_back(t);
  }
  std::vector<float> h(n);
  cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
  double sum = 0;
  for (float v : h) sum += v;
  printf("block=%d mode=%d expf=%d n=%d m=%d median_ms=%.5f checksum=%.6e err=%s\n", BLOCK,
         MODE, EXPF ? 1 : 0, n, m, once ? 0.f : median(ms), sum,
         cudaGetErrorString(cudaGetLastError()));
}

template <int BLOCK, bool EXPF>
static void modes(int n, int m, const float* q, const float* xyz, const float* xs,
                  const float* ys, const float* zs, const float* wt, float* out, int reps,
                  bool once) {
  run<BLOCK, 0, EXPF>(n, m, q, xyz, xs, ys, zs, wt, out, reps, once);
  run<BLOCK, 1, EXPF>(n, m, q, xyz, xs, ys, zs, wt, out, reps, once);
  run<BLOCK, 2, EXPF>(n, m, q, xyz, xs, ys, zs, wt, out, reps, once);
}

int main(int argc, char** argv) {
  const bool once = argc > 1;
  const int n = 32768, m = 16384, reps = 15;
  std::vector<float> hq(3 * n), hxyz(3 * m), hx(m), hy(m), hz(m), hw(m);
  unsigned s = 12345;
  auto rnd = [&]() { s = s * 1664525u + 1013904223u; return (s >> 8) / 16777216.0f; };
  for (auto& v : hq) v = rnd();
  for (int p = 0; p < m; ++p) {
    hx[p] = rnd(); hy[p] = rnd(); hz[p] = rnd(); hw[p] = rnd();
    hxyz[3 * p] = hx[p]; hxyz[3 * p + 1] = hy[p]; hxyz[3 * p + 2] = hz[p];
  }
  float *q, *xyz, *xs, *ys, *zs, *wt, *out;
  cudaMalloc(&q, 3 * n * 4); cudaMalloc(&xyz, 3 * m * 4); cudaMalloc(&xs, m * 4);
  cudaMalloc(&ys, m * 4); cudaMalloc(&zs, m * 4); cudaMalloc(&wt, m * 4);
  cudaMalloc(&out, n * 4);
  cudaMemcpy(q, hq.data(), 3 * n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(xyz, hxyz.data(), 3 * m * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(xs, hx.data(), m * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(ys, hy.data(), m * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(zs, hz.data(), m * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(wt, hw.data(), m * 4, cudaMemcpyHostToDevice);
  modes<32, true>(n, m, q, xyz, xs, ys, zs, wt, out, reps, once);
  modes<128, true>(n, m, q, xyz, xs, ys, zs, wt, out, reps, once);
  modes<512, true>(n, m, q, xyz, xs, ys, zs, wt, out, reps, once);
  modes<32, false>(n, m, q, xyz, xs, ys, zs, wt, out, reps, once);
  modes<128, false>(n, m, q, xyz, xs, ys, zs, wt, out, reps, once);
  modes<512, false>(n, m, q, xyz, xs, ys, zs, wt, out, reps, once);
  return 0;
}
