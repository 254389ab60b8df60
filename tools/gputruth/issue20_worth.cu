// Issue 20, sheets newcorpus10/11 and the CL202 rule draft: do the remedies of findings the
// triages judged "not worth acting on" by reading change what an H100 executes or computes?
// Each pair runs the same arithmetic on the same data; only what the finding names changes.
// Built and run by issue20_worth.py; one line per measurement, "GROUP key=value ...".
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include "median_ms.cuh"

#define ORIG(T) T*
#define FIXED(T) const T* __restrict__

// ---- R: CL203 reloads once per thread, outside every loop (sheet 10 N2, sheet 11 N6) ----
// optimum-quanto cuda/unpack.cu: one byte in, 2 or 4 out; input[i] reloaded after each store
#define UNPACK2(NAME, P)                                                                    \
  __global__ void NAME(P(unsigned char) input, unsigned char* output, int n) {             \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                                          \
    if (i >= n) return;                                                                     \
    output[i] = (input[i] & 0x03);                                                          \
    output[i + n] = (input[i] & 0x0C) >> 2;                                                 \
    output[i + n * 2] = (input[i] & 0x30) >> 4;                                             \
    output[i + n * 3] = (input[i] & 0xC0) >> 6;                                             \
  }
UNPACK2(unpack2_orig, ORIG)
UNPACK2(unpack2_fixed, FIXED)
#define UNPACK4(NAME, P)                                                                    \
  __global__ void NAME(P(unsigned char) input, unsigned char* output, int n) {             \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                                          \
    if (i >= n) return;                                                                     \
    output[i] = (input[i] & 0x0F);                                                          \
    output[i + n] = (input[i] & 0xF0) >> 4;                                                 \
  }
UNPACK4(unpack4_orig, ORIG)
UNPACK4(unpack4_fixed, FIXED)

// LEAP src/ramp_filter.cu multiplyRampFilterKernel: G[ind].x *= H[k]; G[ind].y *= H[k];
struct cplx { float x, y; };
#define RAMP(NAME, P)                                                                       \
  __global__ void NAME(cplx* G, P(float) H, int3 N) {                                      \
    const int i = threadIdx.x + blockIdx.x * blockDim.x;                                    \
    const int j = threadIdx.y + blockIdx.y * blockDim.y;                                    \
    const int k = threadIdx.z + blockIdx.z * blockDim.z;                                    \
    if (i >= N.x || j >= N.y || k >= N.z) return;                                           \
    unsigned long long ind = (unsigned long long)i * (N.y * N.z) + j * N.z + k;             \
    G[ind].x *= H[k];                                                                       \
    G[ind].y *= H[k];                                                                       \
  }
RAMP(ramp_orig, ORIG)
RAMP(ramp_fixed, FIXED)
// the same with threads on the contiguous index (k from threadIdx.x): the reload's cost
// without the uncoalesced G of the original launch shape
#define RAMPX(NAME, P)                                                                      \
  __global__ void NAME(cplx* G, P(float) H, int3 N) {                                      \
    const int k = threadIdx.x + blockIdx.x * blockDim.x;                                    \
    const int j = threadIdx.y + blockIdx.y * blockDim.y;                                    \
    const int i = threadIdx.z + blockIdx.z * blockDim.z;                                    \
    if (i >= N.x || j >= N.y || k >= N.z) return;                                           \
    unsigned long long ind = (unsigned long long)i * (N.y * N.z) + j * N.z + k;             \
    G[ind].x *= H[k];                                                                       \
    G[ind].y *= H[k];                                                                       \
  }
RAMPX(rampx_orig, ORIG)
RAMPX(rampx_fixed, FIXED)

// CCPi-Regularisation-Toolkit updBxBy2D (sheet-newcorpus12 N2): U[index] is reloaded after
// the store to Bx (CL203 names U); Dy[index] is loaded after it too and stays. FIXED: U
// `const __restrict__` (the finding's fix); ALL: every read-only pointer restricted too
#define UPD(NAME, PU, PD)                                                                   \
  __global__ void NAME(PU(float) U, PD(float) Dx, PD(float) Dy, float* Bx, float* By,      \
                       int N, int M) {                                                      \
    const int i = blockIdx.x * blockDim.x + threadIdx.x;                                    \
    const int j = blockIdx.y * blockDim.y + threadIdx.y;                                    \
    int index = j * N + i;                                                                  \
    if (i < N && j < M) {                                                                   \
      int i1 = i + 1; if (i1 == N) i1 = i - 1;                                              \
      int j1 = j + 1; if (j1 == M) j1 = j - 1;                                              \
      Bx[index] += (U[j * N + i1] - U[index]) - Dx[index];                                  \
      By[index] += (U[j1 * N + i] - U[index]) - Dy[index];                                  \
    }                                                                                       \
  }
UPD(upd_orig, ORIG, ORIG)
UPD(upd_fixed, FIXED, ORIG)
UPD(upd_all, FIXED, FIXED)

// ---- H: CL204 on a per-thread histogram the block only sums (sheet-newcorpus12 W1) ----
// fastmoe cuda/local_exchange.cuh: 256 private bins per thread, then a warp sum and one
// atomicAdd per warp and bin; against one histogram per block in shared memory updated
// with shared atomics (the remedy the finding should give), then one atomicAdd per bin
#define E 256
__global__ void expert_count_local(const long* gate_idx, int* expert_count, const size_t batch,
                                   const size_t n_expert) {
  int res[E] = {0};
  long lo = blockIdx.x * E;
  long hi = lo + E;
  if (hi > n_expert) hi = n_expert;
  for (int i = threadIdx.x; i < batch; i += blockDim.x) {
    long idx = gate_idx[i];
    if (idx < lo || idx >= hi) continue;
    res[idx - lo] += 1;
  }
  for (int i = lo; i < hi; ++i) {
    int x = res[i - lo];
    for (int j = 1; j < 32; j <<= 1) x += __shfl_down_sync(-1u, x, j);
    if (threadIdx.x % 32 == 0) atomicAdd(expert_count + i, x);
  }
}
__global__ void expert_count_shared(const long* gate_idx, int* expert_count, const size_t batch,
                                    const size_t n_expert) {
  __shared__ int res[E];
  for (int i = threadIdx.x; i < E; i += blockDim.x) res[i] = 0;
  __syncthreads();
  long lo = blockIdx.x * E;
  long hi = lo + E;
  if (hi > n_expert) hi = n_expert;
  for (int i = threadIdx.x; i < batch; i += blockDim.x) {
    long idx = gate_idx[i];
    if (idx < lo || idx >= hi) continue;
    atomicAdd(&res[idx - lo], 1);
  }
  __syncthreads();
  for (int i = lo + threadIdx.x; i < hi; i += blockDim.x) atomicAdd(expert_count + i, res[i - lo]);
}

// ---- B: CL202 2-way conflicts beside one global load per shared load ----
// fixtures/CL202/iteration_exits.cu exit_on_data: rad[(i+j+k)*4] (doubles 0 and 16 share a
// bank) in a loop that loads w once per pass. PAD 1: index + index / 16 (conflict-free).
// WPB: w per block (streams from DRAM) or shared by all blocks (as the fixture: L1/L2 hits)
template <int PAD, bool WPB>
__global__ void exit_on_data(double* g, const double* w, int nk) {
  __shared__ double rad[64 + 4];
  for (int n = threadIdx.x; n < 64; n += blockDim.x) rad[PAD ? n + n / 16 : n] = g[n];
  __syncthreads();
  double s = 0.0;
  const double* wb = WPB ? w + (size_t)blockIdx.x * nk * 32 : w;
  for (int it = 0; it < nk; ++it) {
    const int i = threadIdx.x / 16, j = threadIdx.x / 4 % 4, k = threadIdx.x % 4;
    if (wb[it * 32 + threadIdx.x] > 0.0) continue;
    const int x = (i + j + k) * 4;
    s += rad[PAD ? x + x / 16 : x] * it;
  }
  g[64 + blockIdx.x * 32 + threadIdx.x] = s;
}

// kaolin's sg (tests/test_cl202_bounds_remedy.py KAOLIN): a 16x16 transpose through
// shm[16][17] (2-way store and load) against the remedy the message prints:
// shm[16][16] with the column XOR-swizzled by the row. Each block its own 64 tiles.
template <bool SWZ>
__global__ void sg(const float* in, float* out) {
  __shared__ float shm[16][SWZ ? 16 : 17];
  const float* ib = in + (size_t)blockIdx.x * 64 * 256;
  float* ob = out + (size_t)blockIdx.x * 64 * 256;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int i = 0; i < 64; i++) {
    if (SWZ) shm[ty][tx ^ (ty % 16)] = ib[i * 256 + ty * 16 + tx];
    else shm[ty][tx] = ib[i * 256 + ty * 16 + tx];
    __syncthreads();
    ob[i * 256 + ty * 16 + tx] = SWZ ? shm[tx][ty ^ (tx % 16)] : shm[tx][ty];
    __syncthreads();
  }
}

// ---- D: CL402 on a discriminant that guards the sqrt it feeds (sheet 11 N4, sheet 8 N10)
// LEAP cone intersection: as written (nvcc contracts b*b - a*c into a DFMA) and with both
// products rounded (__dmul_rn, the finding's fix)
template <bool RN>
__global__ void cone(const float3* p_in, const float3* r_in, float* t_out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float3 p = p_in[i], r = r_in[i];
  double a = r.x * r.x + r.y * r.y - r.z * r.z;
  const double b_half = p.x * r.x + p.y * r.y - p.z * r.z;
  const double c = p.x * p.x + p.y * p.y - p.z * p.z;
  double disc = RN ? __dmul_rn(b_half, b_half) - __dmul_rn(a, c) : b_half * b_half - a * c;
  if (disc > 0.0) {
    disc = sqrt(disc);
    t_out[i] = (float)((-b_half + disc) / a - (-b_half - disc) / a);
  } else {
    t_out[i] = 0.f;
  }
}

template <typename F>
static float median_ms(F launch, int reps = 21) {
  return timed_median_ms(launch, reps, 2);
}

static void pair(const char* group, const char* what, float orig, float fixed) {
  printf("%s %s orig_ms=%.4f fixed_ms=%.4f ratio=%.3f\n", group, what, orig, fixed, orig / fixed);
}

int main() {
  // R: byte unpack at 2^24 and 2^26 input bytes
  for (int n : {1 << 24, 1 << 26}) {
    unsigned char *in, *out;
    cudaMalloc(&in, n);
    cudaMalloc(&out, 4 * (size_t)n);
    cudaMemset(in, 0x5a, n);
    int b = 256, g = (n + b - 1) / b;
    char what[64];
    snprintf(what, sizeof what, "unpack2 n=%d", n);
    pair("R", what, median_ms([&] { unpack2_orig<<<g, b>>>(in, out, n); }),
         median_ms([&] { unpack2_fixed<<<g, b>>>(in, out, n); }));
    snprintf(what, sizeof what, "unpack4 n=%d", n);
    pair("R", what, median_ms([&] { unpack4_orig<<<g, b>>>(in, out, n); }),
         median_ms([&] { unpack4_fixed<<<g, b>>>(in, out, n); }));
    cudaFree(in);
    cudaFree(out);
  }
  // R: ramp filter, N = (views, rows, padded columns)
  for (int3 N : {make_int3(64, 64, 2048), make_int3(256, 64, 2048)}) {
    size_t m = (size_t)N.x * N.y * N.z;
    cplx* G;
    float* H;
    cudaMalloc(&G, sizeof(cplx) * m);
    cudaMalloc(&H, sizeof(float) * N.z);
    cudaMemset(G, 0, sizeof(cplx) * m);
    cudaMemset(H, 0, sizeof(float) * N.z);
    dim3 b(8, 8, 8), gr((N.x + 7) / 8, (N.y + 7) / 8, (N.z + 7) / 8);
    char what[80];
    snprintf(what, sizeof what, "ramp_leap_block N=%dx%dx%d", N.x, N.y, N.z);
    pair("R", what, median_ms([&] { ramp_orig<<<gr, b>>>(G, H, N); }),
         median_ms([&] { ramp_fixed<<<gr, b>>>(G, H, N); }));
    dim3 bx(256, 1, 1), gx((N.z + 255) / 256, N.y, N.x);
    snprintf(what, sizeof what, "ramp_coalesced N=%dx%dx%d", N.x, N.y, N.z);
    pair("R", what, median_ms([&] { rampx_orig<<<gx, bx>>>(G, H, N); }),
         median_ms([&] { rampx_fixed<<<gx, bx>>>(G, H, N); }));
    cudaFree(G);
    cudaFree(H);
  }
  // R: CCPi updBxBy2D, 16x16 blocks
  for (int side : {2048, 8192}) {
    size_t m = (size_t)side * side;
    float *U, *Dx, *Dy, *Bx, *By;
    for (float** p : {&U, &Dx, &Dy, &Bx, &By}) {
      cudaMalloc(p, sizeof(float) * m);
      cudaMemset(*p, 0, sizeof(float) * m);
    }
    dim3 b(16, 16), g((side + 15) / 16, (side + 15) / 16);
    float o = median_ms([&] { upd_orig<<<g, b>>>(U, Dx, Dy, Bx, By, side, side); });
    float f = median_ms([&] { upd_fixed<<<g, b>>>(U, Dx, Dy, Bx, By, side, side); });
    float a = median_ms([&] { upd_all<<<g, b>>>(U, Dx, Dy, Bx, By, side, side); });
    printf("R upd_ccpi side=%d orig_ms=%.4f fixed_ms=%.4f all_ms=%.4f ratio=%.3f ratio_all=%.3f\n",
           side, o, f, a, o / f, o / a);
    for (float* p : {U, Dx, Dy, Bx, By}) cudaFree(p);
  }
  // H: fastmoe expert counts, batch tokens over n_expert experts, 256 threads per block
  for (int n_expert : {64, 2048}) {
    for (int batch : {1 << 16, 1 << 20}) {
      long* g;
      int* c;
      std::vector<long> h(batch);
      srand(5);
      for (auto& v : h) v = rand() % n_expert;
      cudaMalloc(&g, sizeof(long) * batch);
      cudaMalloc(&c, sizeof(int) * n_expert);
      cudaMemcpy(g, h.data(), sizeof(long) * batch, cudaMemcpyHostToDevice);
      int blocks = (n_expert + E - 1) / E;
      float lt = median_ms([&] { expert_count_local<<<blocks, 256>>>(g, c, batch, n_expert); });
      float st = median_ms([&] { expert_count_shared<<<blocks, 256>>>(g, c, batch, n_expert); });
      std::vector<int> a(n_expert), b(n_expert);
      cudaMemset(c, 0, sizeof(int) * n_expert);
      expert_count_local<<<blocks, 256>>>(g, c, batch, n_expert);
      cudaMemcpy(a.data(), c, sizeof(int) * n_expert, cudaMemcpyDeviceToHost);
      cudaMemset(c, 0, sizeof(int) * n_expert);
      expert_count_shared<<<blocks, 256>>>(g, c, batch, n_expert);
      cudaMemcpy(b.data(), c, sizeof(int) * n_expert, cudaMemcpyDeviceToHost);
      printf("H expert_count n_expert=%d batch=%d orig_ms=%.4f fixed_ms=%.4f ratio=%.3f same_output=%d\n",
             n_expert, batch, lt, st, lt / st, (int)(a == b));
      cudaFree(g);
      cudaFree(c);
    }
  }
  // B: exit_on_data, 2112 blocks of 32 threads, 4096 passes
  {
    int blocks = 132 * 16, nk = 4096;
    double *g, *w;
    cudaMalloc(&g, sizeof(double) * (64 + (size_t)blocks * 32));
    cudaMalloc(&w, sizeof(double) * (size_t)blocks * nk * 32);
    cudaMemset(g, 0, sizeof(double) * (64 + (size_t)blocks * 32));
    cudaMemset(w, 0, sizeof(double) * (size_t)blocks * nk * 32);
    pair("B", "exit_on_data w_shared", median_ms([&] { exit_on_data<0, false><<<blocks, 32>>>(g, w, nk); }),
         median_ms([&] { exit_on_data<1, false><<<blocks, 32>>>(g, w, nk); }));
    pair("B", "exit_on_data w_per_block", median_ms([&] { exit_on_data<0, true><<<blocks, 32>>>(g, w, nk); }),
         median_ms([&] { exit_on_data<1, true><<<blocks, 32>>>(g, w, nk); }));
    cudaFree(g);
    cudaFree(w);
  }
  // B: kaolin sg transpose, 4096 blocks of 16x16, 64 tiles each
  {
    int blocks = 4096;
    size_t m = (size_t)blocks * 64 * 256;
    float *in, *out;
    cudaMalloc(&in, sizeof(float) * m);
    cudaMalloc(&out, sizeof(float) * m);
    cudaMemset(in, 0, sizeof(float) * m);
    dim3 b(16, 16);
    pair("B", "sg_transpose16", median_ms([&] { sg<false><<<blocks, b>>>(in, out); }),
         median_ms([&] { sg<true><<<blocks, b>>>(in, out); }));
    // check: both transpose the same way
    std::vector<float> h(64 * 256 * 2), o1(64 * 256), o2(64 * 256);
    for (size_t i = 0; i < h.size(); i++) h[i] = (float)i;
    cudaMemcpy(in, h.data(), sizeof(float) * h.size(), cudaMemcpyHostToDevice);
    sg<false><<<1, b>>>(in, out);
    cudaMemcpy(o1.data(), out, sizeof(float) * o1.size(), cudaMemcpyDeviceToHost);
    sg<true><<<1, b>>>(in, out);
    cudaMemcpy(o2.data(), out, sizeof(float) * o2.size(), cudaMemcpyDeviceToHost);
    printf("B sg_same_output=%d\n", (int)(o1 == o2));
    cudaFree(in);
    cudaFree(out);
  }
  // D: cone, random rays and near-tangent ones (r = p scaled: b*b == a*c exactly)
  {
    int n = 1 << 22;
    std::vector<float3> hp(n), hr(n);
    srand(11);
    auto u = [] { return (float)rand() / RAND_MAX * 2.f - 1.f; };
    for (int kind = 0; kind < 2; kind++) {
      for (int i = 0; i < n; i++) {
        hp[i] = make_float3(u(), u(), u());
        float s = 0.5f + (float)rand() / RAND_MAX;
        hr[i] = kind ? make_float3(hp[i].x * s, hp[i].y * s, hp[i].z * s) : make_float3(u(), u(), u());
      }
      float3 *p, *r;
      float *t0, *t1;
      cudaMalloc(&p, sizeof(float3) * n);
      cudaMalloc(&r, sizeof(float3) * n);
      cudaMalloc(&t0, sizeof(float) * n);
      cudaMalloc(&t1, sizeof(float) * n);
      cudaMemcpy(p, hp.data(), sizeof(float3) * n, cudaMemcpyHostToDevice);
      cudaMemcpy(r, hr.data(), sizeof(float3) * n, cudaMemcpyHostToDevice);
      cone<false><<<n / 256, 256>>>(p, r, t0, n);
      cone<true><<<n / 256, 256>>>(p, r, t1, n);
      std::vector<float> a(n), b(n);
      cudaMemcpy(a.data(), t0, sizeof(float) * n, cudaMemcpyDeviceToHost);
      cudaMemcpy(b.data(), t1, sizeof(float) * n, cudaMemcpyDeviceToHost);
      int differ = 0, branch = 0;
      double maxabs = 0, scale = 0;
      for (int i = 0; i < n; i++) {
        if (std::isfinite(a[i])) scale = std::max(scale, (double)std::fabs(a[i]));
        if (a[i] != b[i]) {
          differ++;
          if ((a[i] == 0.f) != (b[i] == 0.f)) branch++;
          double d = std::fabs((double)a[i] - (double)b[i]);
          if (std::isfinite(d)) maxabs = std::max(maxabs, d);
        }
      }
      float ta = median_ms([&] { cone<false><<<n / 256, 256>>>(p, r, t0, n); });
      float tb = median_ms([&] { cone<true><<<n / 256, 256>>>(p, r, t1, n); });
      printf("D cone %s n=%d differ=%d branch_flips=%d max_abs_diff=%.3e max_abs_out=%.3e orig_ms=%.4f fixed_ms=%.4f\n",
             kind ? "tangent" : "random", n, differ, branch, maxabs, scale, ta, tb);
      cudaFree(p); cudaFree(r); cudaFree(t0); cudaFree(t1);
    }
  }
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
  return 0;
}
