// GPU truth for the fourth issue-20/14 triage (bench/triage/sheet-newcorpus4.md): analogs,
// written here (not the projects' code), of the kernel shapes behind findings whose worth
// reading alone cannot settle. Each pair runs the shape as the project writes it and with
// the change the finding asks for; same data, same work, same result checked.
// Prints one line per kernel: "name median_ms=X" (CUDA events, median of 21 runs), and
// "name checksum=X" so that a pair that computes different results shows.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

// K1: k-nearest insertion sort with per-thread arrays indexed at run time (Stratified
// knnquery / MTR knn_batch: CL204 on best/besti) vs one slice per thread in dynamic shared
// memory, [i][threadIdx.x] (the remedy the message prints).
__global__ void knn_local(int n, int m, int ns, const float *xyz, const float *q, int *idx) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= m) return;
    float qx = q[t * 3], qy = q[t * 3 + 1], qz = q[t * 3 + 2];
    float best[100]; int besti[100];
    for (int i = 0; i < ns; i++) { best[i] = 1e20f; besti[i] = -1; }
    for (int k = 0; k < n; k++) {
        float dx = xyz[k * 3] - qx, dy = xyz[k * 3 + 1] - qy, dz = xyz[k * 3 + 2] - qz;
        float d2 = dx * dx + dy * dy + dz * dz;
        for (int p = 0; p < ns; p++) {
            if (d2 < best[p]) {
                for (int r = ns - 1; r > p; r--) { best[r] = best[r - 1]; besti[r] = besti[r - 1]; }
                best[p] = d2; besti[p] = k; break;
            }
        }
    }
    for (int i = 0; i < ns; i++) idx[t * ns + i] = besti[i];
}
__global__ void knn_shared(int n, int m, int ns, const float *xyz, const float *q, int *idx) {
    extern __shared__ float sm[];
    float *best = sm;
    int *besti = (int *)(sm + ns * blockDim.x);
    const int B = blockDim.x, x = threadIdx.x;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= m) return;
    float qx = q[t * 3], qy = q[t * 3 + 1], qz = q[t * 3 + 2];
    for (int i = 0; i < ns; i++) { best[i * B + x] = 1e20f; besti[i * B + x] = -1; }
    for (int k = 0; k < n; k++) {
        float dx = xyz[k * 3] - qx, dy = xyz[k * 3 + 1] - qy, dz = xyz[k * 3 + 2] - qz;
        float d2 = dx * dx + dy * dy + dz * dz;
        for (int p = 0; p < ns; p++) {
            if (d2 < best[p * B + x]) {
                for (int r = ns - 1; r > p; r--) {
                    best[r * B + x] = best[(r - 1) * B + x]; besti[r * B + x] = besti[(r - 1) * B + x];
                }
                best[p * B + x] = d2; besti[p * B + x] = k; break;
            }
        }
    }
    for (int i = 0; i < ns; i++) idx[t * ns + i] = besti[i * B + x];
}

// K2: embedding distance over a run-time ae_dim with a per-thread float[32] (lietorch
// se3_inplace_builder: CL204 on ae1) vs the printed remedy, a compile-time bound under
// #pragma unroll with `if (k < ae_dim)`.
#define AE 32
__global__ void ae_local(int dim, int ae_dim, const float *emb, float *out) {
    int ix = blockIdx.x * 64 + threadIdx.x;
    float ae1[AE];
    for (int k = 0; k < ae_dim; k++) ae1[k] = emb[k * dim + ix];
    __shared__ float ae2[AE][64];
    float acc = 0;
    for (int i = 0; i < dim; i += 64) {
        for (int k = 0; k < ae_dim; k++) ae2[k][threadIdx.x] = emb[k * dim + i + threadIdx.x];
        __syncthreads();
        for (int j = 0; j < 64; j++) {
            float s = 0;
            for (int k = 0; k < ae_dim; k++) s += (ae1[k] - ae2[k][j]) * (ae1[k] - ae2[k][j]);
            acc += 1.f / (1.f + s);
        }
        __syncthreads();
    }
    out[ix] = acc;
}
__global__ void ae_unrolled(int dim, int ae_dim, const float *emb, float *out) {
    int ix = blockIdx.x * 64 + threadIdx.x;
    float ae1[AE];
#pragma unroll
    for (int k = 0; k < AE; k++) if (k < ae_dim) ae1[k] = emb[k * dim + ix];
    __shared__ float ae2[AE][64];
    float acc = 0;
    for (int i = 0; i < dim; i += 64) {
        for (int k = 0; k < ae_dim; k++) ae2[k][threadIdx.x] = emb[k * dim + i + threadIdx.x];
        __syncthreads();
        for (int j = 0; j < 64; j++) {
            float s = 0;
#pragma unroll
            for (int k = 0; k < AE; k++) if (k < ae_dim) s += (ae1[k] - ae2[k][j]) * (ae1[k] - ae2[k][j]);
            acc += 1.f / (1.f + s);
        }
        __syncthreads();
    }
    out[ix] = acc;
}

// K3: 16x16 tile product, keys staged transposed at shared_keys[y + 16 * x] (fast-
// transformers clustered_sparse_dot_product: CL202 8-way store conflict) vs a row stride
// of 17 (odd stride, the printed remedy).
template <int KS>
__global__ void tile_dot(int E, int L, const float *Q, const float *K, float *P) {
    __shared__ float sq[16 * 16];
    __shared__ float sk[16 * KS];
    const int x = threadIdx.x, y = threadIdx.y;
    const int qrow = blockIdx.x * 16 + x, krow = blockIdx.y * 16 + y;
    float res = 0;
    for (int m = 0; m < E / 16; m++) {
        sq[x + 16 * y] = Q[(size_t)qrow * E + m * 16 + y];
        sk[y + KS * x] = K[(size_t)(blockIdx.y * 16 + y) * E + m * 16 + x];
        __syncthreads();
        for (int e = 0; e < 16; e++) res += sq[x + 16 * e] * sk[y + KS * e];
        __syncthreads();
    }
    P[(size_t)qrow * L + krow] = res;
}

// K4: feature creation, C = 3 channels unrolled: load, store through a pointer that may
// alias, reload, store (MONAI bilateral FeatureCreation: CL203) vs `const __restrict__`.
__global__ void features_alias(int S, const float *in, float *outData, float *outFeat) {
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= S) return;
#pragma unroll
    for (int i = 0; i < 3; i++) {
        outData[e * 3 + i] = in[e + i * S];
        outFeat[e * 5 + i] = in[e + i * S] * 0.5f;
    }
    outFeat[e * 5 + 3] = (e / 1024) * 0.25f;
    outFeat[e * 5 + 4] = (e % 1024) * 0.25f;
}
__global__ void features_restrict(int S, const float *__restrict__ in, float *__restrict__ outData,
                               float *__restrict__ outFeat) {
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= S) return;
#pragma unroll
    for (int i = 0; i < 3; i++) {
        outData[e * 3 + i] = in[e + i * S];
        outFeat[e * 5 + i] = in[e + i * S] * 0.5f;
    }
    outFeat[e * 5 + 3] = (e / 1024) * 0.25f;
    outFeat[e * 5 + 4] = (e % 1024) * 0.25f;
}

// K5: minimum-density sampling (MSN MDS: CL201 on dataset[k * 3 + f] re-read on each of
// m passes, with an exp per point) vs the records as three arrays (SoA).
template <bool SOA>
__global__ void mds(int n, int m, const float *data, float *temp, int *idxs) {
    const int B = 512;
    __shared__ float cnt[B];
    __shared__ int cnt_i[B];
    data += blockIdx.x * n * 3; temp += blockIdx.x * n; idxs += blockIdx.x * m;
    const int tid = threadIdx.x;
    int old = 0;
    const float t = 0.05f;
    for (int j = 1; j < m; j++) {
        float x1 = SOA ? data[old] : data[old * 3], y1 = SOA ? data[n + old] : data[old * 3 + 1],
              z1 = SOA ? data[2 * n + old] : data[old * 3 + 2];
        int besti = 0; float best = 1e9f;
        for (int k = tid; k < n; k += B) {
            float x2 = SOA ? data[k] : data[k * 3], y2 = SOA ? data[n + k] : data[k * 3 + 1],
                  z2 = SOA ? data[2 * n + k] : data[k * 3 + 2];
            float d = (x2 - x1) * (x2 - x1) + (y2 - y1) * (y2 - y1) + (z2 - z1) * (z2 - z1);
            temp[k] += k < 8192 ? exp(-d / t) : exp(-d / t) * 2.0;
            besti = temp[k] < best ? k : besti;
            best = temp[k] < best ? temp[k] : best;
        }
        cnt[tid] = best; cnt_i[tid] = besti;
        __syncthreads();
        for (int s = B / 2; s > 0; s >>= 1) {
            if (tid < s && cnt[tid + s] < cnt[tid]) { cnt[tid] = cnt[tid + s]; cnt_i[tid] = cnt_i[tid + s]; }
            __syncthreads();
        }
        old = cnt_i[0];
        if (tid == 0) { idxs[j] = old; temp[old] = 1e9f; }
        __syncthreads();
    }
}

template <typename F>
static float median_ms(F launch, int reps = 21) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    launch(); CK(cudaDeviceSynchronize());
    std::vector<float> ts;
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(a)); launch(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms);
    }
    CK(cudaGetLastError());
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
}

static float *rnd(size_t count, unsigned seed) {
    std::vector<float> h(count);
    srand(seed);
    for (auto &v : h) v = rand() / (float)RAND_MAX;
    float *d; CK(cudaMalloc(&d, count * sizeof(float)));
    CK(cudaMemcpy(d, h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

template <typename T>
static double checksum(const T *d, size_t count) {
    std::vector<T> h(count);
    CK(cudaMemcpy(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
    double s = 0;
    for (size_t i = 0; i < count; i++) s += (double)h[i] * (double)((i % 7) + 1);
    return s;
}

int main() {
    {   // K1: n = 16384 points, m = 16384 queries, nsample 16 and 32, block 256
        const int n = 16384, m = 16384;
        float *xyz = rnd(n * 3, 1), *q = rnd(m * 3, 2);
        int *idx; CK(cudaMalloc(&idx, m * 32 * sizeof(int)));
        for (int ns : {16, 32}) {
            size_t shm = 2 * ns * 256 * sizeof(float);
            CK(cudaFuncSetAttribute(knn_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
            float a = median_ms([&] { knn_local<<<m / 256, 256>>>(n, m, ns, xyz, q, idx); }, 7);
            double ca = checksum(idx, (size_t)m * ns);
            float b = median_ms([&] { knn_shared<<<m / 256, 256, shm>>>(n, m, ns, xyz, q, idx); }, 7);
            double cb = checksum(idx, (size_t)m * ns);
            printf("knn_local_ns%d median_ms=%.4f\nknn_shared_ns%d median_ms=%.4f\n", ns, a, ns, b);
            printf("knn_local_ns%d checksum=%.1f\nknn_shared_ns%d checksum=%.1f\n", ns, ca, ns, cb);
        }
    }
    {   // K2: 32768 pixels, ae_dim 32 (AE_DIM), block 64
        const int dim = 32768, ae = 32;
        float *emb = rnd((size_t)ae * dim, 3), *out; CK(cudaMalloc(&out, dim * sizeof(float)));
        float a = median_ms([&] { ae_local<<<dim / 64, 64>>>(dim, ae, emb, out); }, 7);
        double ca = checksum(out, dim);
        float b = median_ms([&] { ae_unrolled<<<dim / 64, 64>>>(dim, ae, emb, out); }, 7);
        double cb = checksum(out, dim);
        printf("ae_local median_ms=%.4f\nae_unrolled median_ms=%.4f\n", a, b);
        printf("ae_local checksum=%.3f\nae_unrolled checksum=%.3f\n", ca, cb);
    }
    {   // K3: 8192 queries x 8192 keys, E = 64
        const int L = 8192, E = 64;
        float *Q = rnd((size_t)L * E, 4), *K = rnd((size_t)L * E, 5), *P;
        CK(cudaMalloc(&P, (size_t)L * L * sizeof(float)));
        dim3 g(L / 16, L / 16), blk(16, 16);
        float a = median_ms([&] { tile_dot<16><<<g, blk>>>(E, L, Q, K, P); });
        double ca = checksum(P, 1 << 20);
        float b = median_ms([&] { tile_dot<17><<<g, blk>>>(E, L, Q, K, P); });
        double cb = checksum(P, 1 << 20);
        printf("tile_keys_stride16 median_ms=%.4f\ntile_keys_stride17 median_ms=%.4f\n", a, b);
        printf("tile_keys_stride16 checksum=%.1f\ntile_keys_stride17 checksum=%.1f\n", ca, cb);
    }
    {   // K4: 4096 x 4096 image, 3 channels
        const int S = 4096 * 4096;
        float *in = rnd((size_t)3 * S, 6), *od, *of;
        CK(cudaMalloc(&od, (size_t)3 * S * sizeof(float))); CK(cudaMalloc(&of, (size_t)5 * S * sizeof(float)));
        float a = median_ms([&] { features_alias<<<S / 256, 256>>>(S, in, od, of); });
        float b = median_ms([&] { features_restrict<<<S / 256, 256>>>(S, in, od, of); });
        printf("features_alias median_ms=%.4f\nfeatures_restrict median_ms=%.4f\n", a, b);
    }
    {   // K5: 32 clouds of 8192 points, 1024 samples, block 512
        const int b = 32, n = 8192, m = 1024;
        float *aos = rnd((size_t)b * n * 3, 7), *temp; int *idxs;
        std::vector<float> h((size_t)b * n * 3), s(h.size());
        CK(cudaMemcpy(h.data(), aos, h.size() * 4, cudaMemcpyDeviceToHost));
        for (int c = 0; c < b; c++) for (int k = 0; k < n; k++) for (int f = 0; f < 3; f++)
            s[(size_t)c * n * 3 + f * n + k] = h[(size_t)c * n * 3 + k * 3 + f];
        float *soa; CK(cudaMalloc(&soa, s.size() * 4));
        CK(cudaMemcpy(soa, s.data(), s.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMalloc(&temp, (size_t)b * n * 4)); CK(cudaMalloc(&idxs, (size_t)b * m * 4));
        float ta = median_ms([&] { CK(cudaMemsetAsync(temp, 0, (size_t)b * n * 4));
                                   mds<false><<<b, 512>>>(n, m, aos, temp, idxs); }, 7);
        double ca = checksum(idxs, (size_t)b * m);
        float tb = median_ms([&] { CK(cudaMemsetAsync(temp, 0, (size_t)b * n * 4));
                                   mds<true><<<b, 512>>>(n, m, soa, temp, idxs); }, 7);
        double cb = checksum(idxs, (size_t)b * m);
        printf("mds_aos median_ms=%.4f\nmds_soa median_ms=%.4f\n", ta, tb);
        printf("mds_aos checksum=%.1f\nmds_soa checksum=%.1f\n", ca, cb);
    }
    return 0;
}
