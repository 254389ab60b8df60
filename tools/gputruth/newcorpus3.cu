// GPU truth for the third issue-20 triage (bench/triage/sheet-newcorpus3.md): analogs,
// written here (not the projects' code), of the kernel shapes behind the CL201 and CL203
// findings whose worth reading alone cannot settle. Each pair runs the shape as the
// project writes it and with the change the finding asks for; same data, same work.
// Prints one line per kernel: "name median_ms=X" (CUDA events, median of 21 runs).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

// K1: three-point interpolation, point-major threads, channel in blockIdx.y (OpenPCDet
// pointnet2_stack three_interpolate: CL201 on out[pt * C + c]) vs channel on the lanes.
__global__ void interp_point_major(int N, int C, const float *feat, const int *idx,
                                   const float *w, float *out) {
    int c = blockIdx.y, p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= N || c >= C) return;
    w += p * 3; idx += p * 3; out += p * C + c;
    out[0] = w[0] * feat[idx[0] * C + c] + w[1] * feat[idx[1] * C + c] + w[2] * feat[idx[2] * C + c];
}
__global__ void interp_channel_major(int N, int C, const float *feat, const int *idx,
                                     const float *w, float *out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= N * C) return;
    int p = t / C, c = t % C;
    w += p * 3; idx += p * 3; out += p * C + c;
    out[0] = w[0] * feat[idx[0] * C + c] + w[1] * feat[idx[1] * C + c] + w[2] * feat[idx[2] * C + c];
}

// K2: one thread per box walks its row of the point mask (roiaware collect_inside_pts:
// CL201 row walk on pts_mask[box * P + k]) vs the mask stored point-major.
__global__ void collect_rows(int B, int P, int V, int maxp, const int *mask, int *vox) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B) return;
    vox += b * V * maxp;
    for (int k = 0; k < P; k++) {
        if (mask[b * P + k] != -1) {
            unsigned e = mask[b * P + k];
            unsigned base = (e % V) * maxp;
            unsigned cnt = vox[base];
            if (cnt < maxp - 1) { vox[base + cnt + 1] = k; vox[base]++; }
        }
    }
}
__global__ void collect_cols(int B, int P, int V, int maxp, const int *maskT, int *vox) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B) return;
    vox += b * V * maxp;
    for (int k = 0; k < P; k++) {
        if (maskT[k * B + b] != -1) {
            unsigned e = maskT[k * B + b];
            unsigned base = (e % V) * maxp;
            unsigned cnt = vox[base];
            if (cnt < maxp - 1) { vox[base + cnt + 1] = k; vox[base]++; }
        }
    }
}

// K3: output[index] += ... in a loop whose loads may alias output (Pointcept aggregation
// forward: CL203 "stored once per iteration instead of once after it"); RO: the fix.
#define AGG_FWD(NAME, RO)                                                                  \
__global__ void NAME(int n, int ns, int c, int wc, const float *input,                     \
                     const float *position, const float *weight, const int *idx,           \
                     float *RO output) {                                                   \
    int index = blockIdx.x * blockDim.x + threadIdx.x;                                     \
    if (index >= n * c) return;                                                            \
    int ci = index % c, ni = index / c, wci = ci % wc;                                     \
    for (int s = 0; s < ns; s++) {                                                         \
        int ii = idx[ni * ns + s] * c + ci;                                                \
        int pi = ni * ns * c + s * c + ci;                                                 \
        int wi = ni * ns * wc + s * wc + wci;                                              \
        output[index] += (input[ii] + position[pi]) * weight[wi];                          \
    }                                                                                      \
}
AGG_FWD(aggregate_fwd, )
AGG_FWD(aggregate_fwd_restrict, __restrict__)

// K4: reloads after atomics (Pointcept aggregation backward: CL203 "grad_output[index]
// loaded 3 times per loop iteration instead of 1", "weight[...] 2 times"); RO: the fix.
#define AGG_BWD(NAME, RO)                                                                  \
__global__ void NAME(int n, int ns, int c, int wc, const float *RO input,                  \
                     const float *RO position, const float *RO weight, const int *idx,     \
                     const float *RO grad_output, float *grad_input,                      \
                     float *grad_position, float *grad_weight) {                           \
    int index = blockIdx.x * blockDim.x + threadIdx.x;                                     \
    if (index >= n * c) return;                                                            \
    int ci = index % c, ni = index / c, wci = ci % wc;                                     \
    for (int s = 0; s < ns; s++) {                                                         \
        int ii = idx[ni * ns + s] * c + ci;                                                \
        int pi = ni * ns * c + s * c + ci;                                                 \
        int wi = ni * ns * wc + s * wc + wci;                                              \
        atomicAdd(grad_input + ii, grad_output[index] * weight[wi]);                       \
        grad_position[pi] = grad_output[index] * weight[wi];                               \
        atomicAdd(grad_weight + wi, grad_output[index] * (input[ii] + position[pi]));      \
    }                                                                                      \
}
AGG_BWD(aggregate_bwd, )
AGG_BWD(aggregate_bwd_restrict, __restrict__)

static float time_it(void (*launch)(void *), void *arg) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<float> ts;
    launch(arg);
    CK(cudaDeviceSynchronize());
    for (int r = 0; r < 21; r++) {
        CK(cudaEventRecord(a));
        launch(arg);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    return ts[10];
}

struct Bufs {
    int N, C, M, B, P, V, maxp, n, ns, c, wc;
    float *feat, *w, *out, *input, *position, *weight, *go, *gi, *gp, *gw;
    int *idx, *mask, *maskT, *vox, *aidx;
};

static void l_interp_pm(void *v) { Bufs *b = (Bufs *)v;
    interp_point_major<<<dim3((b->N + 255) / 256, b->C), 256>>>(b->N, b->C, b->feat, b->idx, b->w, b->out); }
static void l_interp_cm(void *v) { Bufs *b = (Bufs *)v;
    interp_channel_major<<<(b->N * b->C + 255) / 256, 256>>>(b->N, b->C, b->feat, b->idx, b->w, b->out); }
static void l_rows(void *v) { Bufs *b = (Bufs *)v;
    CK(cudaMemsetAsync(b->vox, 0, sizeof(int) * b->B * b->V * b->maxp));
    collect_rows<<<(b->B + 255) / 256, 256>>>(b->B, b->P, b->V, b->maxp, b->mask, b->vox); }
static void l_cols(void *v) { Bufs *b = (Bufs *)v;
    CK(cudaMemsetAsync(b->vox, 0, sizeof(int) * b->B * b->V * b->maxp));
    collect_cols<<<(b->B + 255) / 256, 256>>>(b->B, b->P, b->V, b->maxp, b->maskT, b->vox); }
static void l_agg(void *v) { Bufs *b = (Bufs *)v;
    aggregate_fwd<<<(b->n * b->c + 511) / 512, 512>>>(b->n, b->ns, b->c, b->wc, b->input, b->position, b->weight, b->aidx, b->out); }
static void l_agg_r(void *v) { Bufs *b = (Bufs *)v;
    aggregate_fwd_restrict<<<(b->n * b->c + 511) / 512, 512>>>(b->n, b->ns, b->c, b->wc, b->input, b->position, b->weight, b->aidx, b->out); }
static void l_bwd(void *v) { Bufs *b = (Bufs *)v;
    aggregate_bwd<<<(b->n * b->c + 511) / 512, 512>>>(b->n, b->ns, b->c, b->wc, b->input, b->position, b->weight, b->aidx, b->go, b->gi, b->gp, b->gw); }
static void l_bwd_r(void *v) { Bufs *b = (Bufs *)v;
    aggregate_bwd_restrict<<<(b->n * b->c + 511) / 512, 512>>>(b->n, b->ns, b->c, b->wc, b->input, b->position, b->weight, b->aidx, b->go, b->gi, b->gp, b->gw); }

template <typename T> static T *dev(const std::vector<T> &h) {
    T *d; CK(cudaMalloc(&d, sizeof(T) * h.size()));
    CK(cudaMemcpy(d, h.data(), sizeof(T) * h.size(), cudaMemcpyHostToDevice)); return d;
}

int main() {
    srand(3);
    Bufs b;
    b.N = 1 << 17; b.C = 64; b.M = 1 << 15;            // K1
    b.B = 128; b.P = 1 << 16; b.V = 14 * 14 * 14; b.maxp = 128;   // K2
    b.n = 1 << 15; b.ns = 16; b.c = 64; b.wc = 8;       // K3, K4
    std::vector<float> f((size_t)b.M * b.C), w((size_t)b.N * 3);
    std::vector<int> ix((size_t)b.N * 3);
    for (auto &x : f) x = rand() / (float)RAND_MAX;
    for (auto &x : w) x = rand() / (float)RAND_MAX;
    for (auto &x : ix) x = rand() % b.M;
    b.feat = dev(f); b.w = dev(w); b.idx = dev(ix);
    CK(cudaMalloc(&b.out, sizeof(float) * (size_t)b.N * b.C));
    std::vector<int> m((size_t)b.B * b.P), mt((size_t)b.B * b.P);
    for (int i = 0; i < b.B; i++)
        for (int k = 0; k < b.P; k++) {
            int e = (rand() % 100 < 5) ? rand() % b.V : -1;   // 5% of points in each box
            m[(size_t)i * b.P + k] = e; mt[(size_t)k * b.B + i] = e;
        }
    b.mask = dev(m); b.maskT = dev(mt);
    CK(cudaMalloc(&b.vox, sizeof(int) * (size_t)b.B * b.V * b.maxp));
    std::vector<float> in((size_t)b.n * b.c), pos((size_t)b.n * b.ns * b.c), wt((size_t)b.n * b.ns * b.wc);
    std::vector<int> ai((size_t)b.n * b.ns);
    for (auto &x : in) x = rand() / (float)RAND_MAX;
    for (auto &x : pos) x = rand() / (float)RAND_MAX;
    for (auto &x : wt) x = rand() / (float)RAND_MAX;
    for (auto &x : ai) x = rand() % b.n;
    b.input = dev(in); b.position = dev(pos); b.weight = dev(wt); b.aidx = dev(ai);
    b.go = dev(in);
    CK(cudaMalloc(&b.gi, sizeof(float) * in.size()));
    CK(cudaMalloc(&b.gp, sizeof(float) * pos.size()));
    CK(cudaMalloc(&b.gw, sizeof(float) * wt.size()));
    CK(cudaMemset(b.out, 0, sizeof(float) * (size_t)b.N * b.C));
    printf("interp_point_major median_ms=%.5f\n", time_it(l_interp_pm, &b));
    printf("interp_channel_major median_ms=%.5f\n", time_it(l_interp_cm, &b));
    printf("collect_rows median_ms=%.5f\n", time_it(l_rows, &b));
    printf("collect_cols median_ms=%.5f\n", time_it(l_cols, &b));
    printf("aggregate_fwd median_ms=%.5f\n", time_it(l_agg, &b));
    printf("aggregate_fwd_restrict median_ms=%.5f\n", time_it(l_agg_r, &b));
    printf("aggregate_bwd median_ms=%.5f\n", time_it(l_bwd, &b));
    printf("aggregate_bwd_restrict median_ms=%.5f\n", time_it(l_bwd_r, &b));
    return 0;
}
