// Microbenchmarks behind the 2026-11-24 triage verdicts (bench/triage/sheet-2026-11-24.md).
// Prints "name value" lines. Third-party kernels come from build/triage_gpu (prepare.py).
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>
#include <random>
#include "knn_orig.cuh"
#include "bitmask_orig.cuh"
#include "bitmask_fixed.cuh"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("CUDA error %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

template <class F>
float timed(F launch, int reps_ = 20) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  const bool profile = getenv("PROFILE") != nullptr;     // under ncu: one launch each
  for (int i = 0; i < (profile ? 0 : 3); i++) launch();
  CK(cudaDeviceSynchronize());
  cudaEventRecord(a);
  const int reps = profile ? 1 : reps_;
  for (int i = 0; i < reps; i++) launch();
  cudaEventRecord(b); CK(cudaEventSynchronize(b));
  float ms; cudaEventElapsedTime(&ms, a, b);
  CK(cudaGetLastError());
  return ms / reps;
}

// --- CL201: each thread writes its whole K-record once (pytorch3d rasterize, knn) --------
__global__ void rec_aos(float *out, int n, int K) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  for (int k = 0; k < K; k++) {
    out[(t * K + k) * 3 + 0] = t + k; out[(t * K + k) * 3 + 1] = t - k;
    out[(t * K + k) * 3 + 2] = k;
  }
}
__global__ void rec_soa(float *out, int n, int K) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  for (int k = 0; k < K; k++) {
    out[(k * 3 + 0) * n + t] = t + k; out[(k * 3 + 1) * n + t] = t - k;
    out[(k * 3 + 2) * n + t] = k;
  }
}

// --- CL204: knn with a compile-time K (the array stays in registers) ---------------------
template <int K>
__global__ void knn_fixed(const float *__restrict__ x, const float *__restrict__ y,
                          const int64_t *__restrict__ ptr_x, const int64_t *__restrict__ ptr_y,
                          int64_t *__restrict__ row, int64_t *__restrict__ col,
                          int64_t n, int64_t m, int64_t dim, int64_t num_examples) {
  const int64_t n_y = blockIdx.x * blockDim.x + threadIdx.x;
  if (n_y >= m) return;
  const int64_t example_idx = get_example_idx(n_y, ptr_y, num_examples);
  float best_dist[K]; int64_t best_idx[K];
#pragma unroll
  for (int e = 0; e < K; e++) { best_dist[e] = 1e10; best_idx[e] = -1; }
  for (int64_t n_x = ptr_x[example_idx]; n_x < ptr_x[example_idx + 1]; n_x++) {
    float tmp = 0;
    for (int64_t d = 0; d < dim; d++)
      tmp += (x[n_x * dim + d] - y[n_y * dim + d]) * (x[n_x * dim + d] - y[n_y * dim + d]);
    // insertion without a data-dependent index: shift every slot past the new one
    bool placed = false;
#pragma unroll
    for (int e = K - 1; e >= 0; e--) {
      bool go = best_dist[e] > tmp;
      if (e > 0) {
        bool prev_go = best_dist[e - 1] > tmp;
        if (go && prev_go) { best_dist[e] = best_dist[e - 1]; best_idx[e] = best_idx[e - 1]; }
        else if (go) { best_dist[e] = tmp; best_idx[e] = n_x; placed = true; }
      } else if (go) { best_dist[e] = tmp; best_idx[e] = n_x; placed = true; }
    }
    (void)placed;
  }
#pragma unroll
  for (int e = 0; e < K; e++) { row[n_y * K + e] = n_y; col[n_y * K + e] = best_idx[e]; }
}

// --- CL403: pytorch3d face_areas_normals term with `/ 2.0` vs `* 0.5f` --------------------
template <bool DOUBLE>
__global__ void term(const float *a, const float *g, float *out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  float az = a[t], bz = a[t + 1], cy = a[t + 2], by = a[t + 3], ay = a[t + 4], cz = a[t + 5];
  float inv_norm = g[t], inv_norm_3 = g[t + 1], cx = g[t + 2];
  float r;
  if (DOUBLE)
    r = ((-az + bz) * cy + (-by + ay) * cz) / 2.0 * inv_norm * g[t + 3] +
        -cx * ((-az + bz) * cy + (-by + ay) * cz) * inv_norm_3 * g[t + 4];
  else
    r = ((-az + bz) * cy + (-by + ay) * cz) * 0.5f * inv_norm * g[t + 3] +
        -cx * ((-az + bz) * cy + (-by + ay) * cz) * inv_norm_3 * g[t + 4];
  out[t] = r;
}

// --- CL402: the edge function's sign for the two orientations of one edge ----------------
__device__ float edge_fma(float px, float py, float ax, float ay, float bx, float by) {
  return (px - ax) * (by - ay) - (py - ay) * (bx - ax);          // contracted by nvcc
}
__device__ float edge_rn(float px, float py, float ax, float ay, float bx, float by) {
  return __fsub_rn(__fmul_rn(px - ax, by - ay), __fmul_rn(py - ay, bx - ax));
}
__global__ void edge_signs(const float *pts, int n, unsigned long long *bad) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const float *q = pts + 6 * t;
  float e1 = edge_fma(q[0], q[1], q[2], q[3], q[4], q[5]);
  float e2 = edge_fma(q[0], q[1], q[4], q[5], q[2], q[3]);    // the neighbour's edge
  if ((e1 > 0 && e2 > 0) || (e1 < 0 && e2 < 0)) atomicAdd(bad, 1ULL);   // both or neither
  float r1 = edge_rn(q[0], q[1], q[2], q[3], q[4], q[5]);
  float r2 = edge_rn(q[0], q[1], q[4], q[5], q[2], q[3]);
  if ((r1 > 0 && r2 > 0) || (r1 < 0 && r2 < 0)) atomicAdd(bad + 1, 1ULL);
}

int main() {
  std::mt19937 rng(11);
  // CL201
  {
    int n = 1 << 22, K = 8;
    float *out; CK(cudaMalloc(&out, (size_t)n * K * 3 * 4));
    float aos = timed([&] { rec_aos<<<n / 64, 64>>>(out, n, K); });
    float soa = timed([&] { rec_soa<<<n / 64, 64>>>(out, n, K); });
    double gb = (double)n * K * 3 * 4 / 1e9;
    printf("cl201_record_store_aos_GBps %.0f\ncl201_record_store_soa_GBps %.0f\n",
           gb / (aos / 1e3), gb / (soa / 1e3));
    CK(cudaFree(out));
  }
  // CL204 knn
  {
    const int64_t n = 16384, m = 16384, dim = 3, k = 16;
    std::vector<float> hx(n * dim);
    for (auto &v : hx) v = (rng() % 100000) / 1000.f;
    float *x, *y; int64_t *px, *py, *row, *col;
    CK(cudaMalloc(&x, n * dim * 4)); CK(cudaMalloc(&y, m * dim * 4));
    CK(cudaMemcpy(x, hx.data(), n * dim * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(y, hx.data(), m * dim * 4, cudaMemcpyHostToDevice));
    int64_t hp[2] = {0, n};
    CK(cudaMalloc(&px, 16)); CK(cudaMalloc(&py, 16));
    CK(cudaMemcpy(px, hp, 16, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(py, hp, 16, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&row, m * k * 8)); CK(cudaMalloc(&col, m * k * 8));
    int blocks = (m + 255) / 256;
    float t0 = timed([&] { knn_kernel<float><<<blocks, 256>>>(x, y, px, py, row, col, k, n, m,
                                                              dim, 1, false); }, 3);
    std::vector<int64_t> c0(m * k), c1(m * k);
    CK(cudaMemcpy(c0.data(), col, m * k * 8, cudaMemcpyDeviceToHost));
    float t1 = timed([&] { knn_fixed<16><<<blocks, 256>>>(x, y, px, py, row, col, n, m, dim,
                                                            1); }, 3);
    CK(cudaMemcpy(c1.data(), col, m * k * 8, cudaMemcpyDeviceToHost));
    long same = 0;
    for (size_t i = 0; i < c0.size(); i++) same += c0[i] == c1[i];
    printf("cl204_knn_runtime_k_ms %.3f\ncl204_knn_template_k_ms %.3f\n"
           "cl204_knn_same_result_fraction %.4f\n", t0, t1, (double)same / c0.size());
  }
  // CL202 torchsparse reduce_bitmask: original vs lane-stride 1 final reduction
  {
    int out_nodes = 1 << 20, reduce_tile = 128, rows = out_nodes / reduce_tile * 4;
    int *bm, *red; CK(cudaMalloc(&bm, out_nodes * 4 * 4)); CK(cudaMalloc(&red, rows * 4 * 4));
    CK(cudaMemset(bm, 0, out_nodes * 4 * 4));
    int thread_size = reduce_tile / 4;
    dim3 grid((out_nodes + 128 * thread_size - 1) / (128 * thread_size), 4);
    float a = timed([&] { reduce_mask_orig<<<grid, 128>>>(bm, out_nodes, rows,
                                                                         reduce_tile, red); });
    float b = timed([&] { reduce_mask_fixed<<<grid, 128>>>(bm, out_nodes, rows,
                                                                          reduce_tile, red); });
    printf("cl202_bitmask_orig_ms %.4f\ncl202_bitmask_fixed_ms %.4f\n", a, b);
  }
  // CL403
  {
    int n = 1 << 24;
    float *a, *g, *o; CK(cudaMalloc(&a, (n + 8) * 4)); CK(cudaMalloc(&g, (n + 8) * 4));
    CK(cudaMalloc(&o, n * 4)); CK(cudaMemset(a, 0, (n + 8) * 4)); CK(cudaMemset(g, 0, (n + 8) * 4));
    float d = timed([&] { term<true><<<n / 256, 256>>>(a, g, o, n); });
    float f = timed([&] { term<false><<<n / 256, 256>>>(a, g, o, n); });
    printf("cl403_term_double_ms %.4f\ncl403_term_float_ms %.4f\n", d, f);
  }
  // CL402: points on a segment between two float grid vertices
  {
    int n = 1 << 20;
    std::vector<float> h(6 * n);
    for (int i = 0; i < n; i++) {
      float ax = (rng() % 2000) / 16.f, ay = (rng() % 2000) / 16.f;
      float bx = ax + (rng() % 64 + 1) / 8.f, by = ay + (rng() % 64 + 1) / 8.f;
      float s = (rng() % 1024) / 1024.f;
      h[6 * i + 0] = ax + s * (bx - ax); h[6 * i + 1] = ay + s * (by - ay);   // near the edge
      h[6 * i + 2] = ax; h[6 * i + 3] = ay; h[6 * i + 4] = bx; h[6 * i + 5] = by;
    }
    float *p; unsigned long long *bad, hb[2];
    CK(cudaMalloc(&p, h.size() * 4)); CK(cudaMalloc(&bad, 16)); CK(cudaMemset(bad, 0, 16));
    CK(cudaMemcpy(p, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    edge_signs<<<n / 256, 256>>>(p, n, bad);
    CK(cudaMemcpy(hb, bad, 16, cudaMemcpyDeviceToHost));
    printf("cl402_points %d\ncl402_same_sign_both_orientations_contracted %llu\n"
           "cl402_same_sign_both_orientations_fmul_rn %llu\n", n, hb[0], hb[1]);
  }
  return 0;
}
