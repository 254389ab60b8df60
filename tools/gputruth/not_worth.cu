// GPU truth for issue 20's "true but not worth acting on" groups of the third triage
// (bench/triage/sheet-newcorpus3.md), measured over the range of each shape, not at one
// point. Analogs written here (not the projects' code); each pair runs the shape as
// written and with the change the finding asks for, same data, same work.
//
// (a) CL203 reloads after atomics (Pointcept aggregation / attention / subtraction / rpe
//     backward): a value `g[..]` used by A atomicAdds through a pointer that may alias
//     it is loaded A times as written, once with `const float *__restrict__ g`.
//     Axes: A = 2, 3, 4 atomics (A-1 reloads); ITER = 1 (per thread) or 16 (a loop, the
//     element invariant or not); TGT = where the atomics go (0 distinct consecutive
//     addresses, 1 contended: 16 threads of different warps share an address, 2
//     scattered through an index array); SRC = the reloaded element (0 g[t] coalesced,
//     1 a gathered row g[idx[t] * c + t % c], 2 a new coalesced element each iteration).
// (b) CL201 row stores of `nsample` indices inside an O(n) scan with an early break
//     (OpenPCDet / Pointcept ball_query shape), row-major idx[j * ns + l] as written vs
//     column-major idx[l * m + j]: MODE 0 fills the whole row at the first hit then
//     stores each hit (OpenPCDet ball_query, voxel_query), MODE 1 stores idx and dist2
//     on each hit and pads the rest after the scan (Pointcept random_ball_query).
//     Axes: hit rate p = 1%, 10%, 50%; nsample 16, 32, 64; n = 1k, 8k, 64k points.
//
// Prints one line per kernel: "name median_ms=X" (CUDA events, median of 21 runs).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

// ---------------------------------------------------------------- (a) reloads after atomics
#define RELOAD(NAME, RO)                                                                     \
template <int A, int TGT, int SRC>                                                           \
__global__ void NAME(int total, int iters, int c, const float *RO g, const int *RO idx,      \
                     float *out, size_t span) {                                              \
    int t = blockIdx.x * blockDim.x + threadIdx.x;                                           \
    if (t >= total) return;                                                                  \
    int gi = SRC == 1 ? idx[t] * c + t % c : t;                                              \
    for (int s = 0; s < iters; s++) {                                                        \
        int e = SRC == 2 ? s * total + t : gi;                                               \
        size_t o;                                                                            \
        if (TGT == 0) o = (size_t)s * total + t;                                             \
        else if (TGT == 1) o = (size_t)s * total + (t / (16 * c)) * c + t % c;               \
        else o = (size_t)idx[(t + s * 7919) % total] * c + t % c;                            \
        atomicAdd(out + o, g[e] * 0.5f);                                                     \
        if (A >= 2) atomicAdd(out + span + o, g[e] * 0.25f);                                 \
        if (A >= 3) atomicAdd(out + 2 * span + o, g[e] * 0.75f);                             \
        if (A >= 4) atomicAdd(out + 3 * span + o, g[e]);                                     \
    }                                                                                        \
}
RELOAD(reload_plain, )
RELOAD(reload_restrict, __restrict__)

// ---------------------------------------------------------------- (b) ball-query row stores
// COL = 0: idx[j * ns + l] (as written), 1: idx[l * m + j] (the remedy).
template <int MODE, int COL>
__global__ void ballq(int m, int n, int ns, float p, const float *__restrict__ xyz,
                      const float *__restrict__ key, int *idx, float *dist2) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m) return;
    float kj = key[j];
    int cnt = 0;
    for (int k = 0; k < n; ++k) {
        float x = xyz[k * 3 + 0], y = xyz[k * 3 + 1], z = xyz[k * 3 + 2];
        float h = x * 7.31f + y * 3.17f + z * 1.13f + kj;
        h -= floorf(h);                              // uniform in [0, 1): a hit with rate p
        if (h < p) {
            if (MODE == 0) {
                if (cnt == 0)
                    for (int l = 0; l < ns; ++l) idx[COL ? (size_t)l * m + j : (size_t)j * ns + l] = k;
                idx[COL ? (size_t)cnt * m + j : (size_t)j * ns + cnt] = k;
            } else {
                idx[COL ? (size_t)cnt * m + j : (size_t)j * ns + cnt] = k;
                dist2[COL ? (size_t)cnt * m + j : (size_t)j * ns + cnt] = h;
            }
            if (++cnt >= ns) break;
        }
    }
    if (MODE == 1) {
        int first = cnt > 0 ? idx[COL ? (size_t)j : (size_t)j * ns] : 0;
        for (int l = cnt; l < ns; ++l) {
            idx[COL ? (size_t)l * m + j : (size_t)j * ns + l] = first;
            dist2[COL ? (size_t)l * m + j : (size_t)j * ns + l] = 1e10f;
        }
    }
}

// ---------------------------------------------------------------- timing
template <typename F> static float time_it(F launch) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<float> ts;
    launch();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    for (int r = 0; r < 21; r++) {
        CK(cudaEventRecord(a));
        launch();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms);
    }
    CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
    std::sort(ts.begin(), ts.end());
    return ts[10];
}

struct R { int total, c; float *g, *out; int *idx; size_t span; };

template <int A, int TGT, int SRC> static void reload_pair(const R &r, int iters) {
    int blocks = (r.total + 255) / 256;
    float plain = time_it([&] {
        reload_plain<A, TGT, SRC><<<blocks, 256>>>(r.total, iters, r.c, r.g, r.idx, r.out, r.span); });
    float fixed = time_it([&] {
        reload_restrict<A, TGT, SRC><<<blocks, 256>>>(r.total, iters, r.c, r.g, r.idx, r.out, r.span); });
    printf("reload A=%d TGT=%d SRC=%d ITER=%d plain median_ms=%.5f\n", A, TGT, SRC, iters, plain);
    printf("reload A=%d TGT=%d SRC=%d ITER=%d restrict median_ms=%.5f\n", A, TGT, SRC, iters, fixed);
}

template <int A, int TGT> static void reload_src(const R &r, int iters) {
    reload_pair<A, TGT, 0>(r, iters);
    reload_pair<A, TGT, 1>(r, iters);
    reload_pair<A, TGT, 2>(r, iters);
}
template <int A> static void reload_tgt(const R &r, int iters) {
    reload_src<A, 0>(r, iters);
    reload_src<A, 1>(r, iters);
    reload_src<A, 2>(r, iters);
}

template <int MODE> static void ballq_pair(int m, int n, int ns, float p, float *xyz,
                                           float *key, int *idx, float *d2) {
    int blocks = (m + 255) / 256;
    float rows = time_it([&] { ballq<MODE, 0><<<blocks, 256>>>(m, n, ns, p, xyz, key, idx, d2); });
    float cols = time_it([&] { ballq<MODE, 1><<<blocks, 256>>>(m, n, ns, p, xyz, key, idx, d2); });
    printf("ballq MODE=%d n=%d ns=%d p=%.2f rows median_ms=%.5f\n", MODE, n, ns, p, rows);
    printf("ballq MODE=%d n=%d ns=%d p=%.2f cols median_ms=%.5f\n", MODE, n, ns, p, cols);
}

template <typename T> static T *dev(const std::vector<T> &h) {
    T *d; CK(cudaMalloc(&d, sizeof(T) * h.size()));
    CK(cudaMemcpy(d, h.data(), sizeof(T) * h.size(), cudaMemcpyHostToDevice)); return d;
}

int main() {
    srand(20);
    // (a): 2^21 threads, c = 64 (Pointcept's channel count); ITER 16 = nsample
    R r;
    r.total = 1 << 21; r.c = 64;
    const int iters_max = 16;
    std::vector<float> g((size_t)r.total * iters_max);
    for (auto &x : g) x = rand() / (float)RAND_MAX;
    std::vector<int> ix(r.total);
    for (auto &x : ix) x = rand() % (r.total / r.c);
    r.g = dev(g); r.idx = dev(ix);
    r.span = (size_t)r.total * iters_max;
    CK(cudaMalloc(&r.out, sizeof(float) * 4 * r.span));
    CK(cudaMemset(r.out, 0, sizeof(float) * 4 * r.span));
    for (int iters : {1, 16}) {
        reload_tgt<2>(r, iters);
        reload_tgt<3>(r, iters);
        reload_tgt<4>(r, iters);
    }
    CK(cudaFree(r.out)); CK(cudaFree(r.g)); CK(cudaFree(r.idx));

    // (b): 32768 queries over n points of one batch
    const int m = 32768, nmax = 65536, nsmax = 64;
    std::vector<float> xyz((size_t)nmax * 3), key(m);
    for (auto &x : xyz) x = rand() / (float)RAND_MAX;
    for (auto &x : key) x = rand() / (float)RAND_MAX;
    float *dxyz = dev(xyz), *dkey = dev(key);
    int *didx; float *dd2;
    CK(cudaMalloc(&didx, sizeof(int) * (size_t)m * nsmax));
    CK(cudaMalloc(&dd2, sizeof(float) * (size_t)m * nsmax));
    for (float p : {0.01f, 0.1f, 0.5f}) {
        // the hit rate the hash gives (host, first 64 queries over 8192 points)
        long hits = 0, tries = 0;
        for (int j = 0; j < 64; j++)
            for (int k = 0; k < 8192; k++, tries++) {
                float h = xyz[k * 3] * 7.31f + xyz[k * 3 + 1] * 3.17f + xyz[k * 3 + 2] * 1.13f + key[j];
                h -= floorf(h);
                hits += h < p;
            }
        printf("hit_rate p=%.2f measured=%.4f\n", p, hits / (double)tries);
        for (int n : {1024, 8192, 65536})
            for (int ns : {16, 32, 64}) {
                ballq_pair<0>(m, n, ns, p, dxyz, dkey, didx, dd2);
                ballq_pair<1>(m, n, ns, p, dxyz, dkey, didx, dd2);
            }
    }
    return 0;
}
