// GPU truth for three "worth acting on" questions of issue 20 (built and run by
// tools/gputruth/worth_acting.py, which documents the measurement and the decision rules).
// Prints one line per kernel: "name=... block=... grid=... median_ms=... min_ms=... max_ms=...",
// then "check ..." lines (results of the variants of one computation agree). With --once it
// launches the conv and sg kernels once each (for ncu), in the order of their names.
//
// A. cuda-samples convolutionSeparable, convolutionRowsKernel, verbatim (3072x3072 image,
//    block 16x4, s_Data[4][160]): its tile stores are 2-way (rows 160 floats apart, the two
//    half-warps of a warp on the same banks), its loads too. Variants: PITCH 176 (the padding
//    cudalint prints: both conflict-free) and `warp_rows` (the same [4][160] tile filled one
//    32-float row segment per warp store: the stores conflict-free, the loads unchanged), so
//    the stores' own share of the time is measured.
// B. CL204's shared-memory advice for a per-thread array of E 32-bit words: the array in
//    local memory (block 256) against one slice per thread in dynamic shared memory
//    (`sh[e * blockDim.x + threadIdx.x]`, conflict-free), at the block size that keeps the
//    most threads per SM. Two index shapes: `hist` (data-dependent index, a histogram) and
//    `scan` (a run-time loop counter: fill, then four passes).
// C. kaolin's sg inner-product loop, analog written here: per iteration some FP32 work and 7
//    transposes through a float[16][17] tile (16x16 block; store shm[ty][tx], barrier, load
//    shm[tx][ty], barrier: both 2-way), against the XOR-swizzled [16][16] tile (conflict-free).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

// ---------------------------------------------------------------- A. convolutionSeparable
#define KERNEL_RADIUS 8
#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)
#define ROWS_BLOCKDIM_X 16
#define ROWS_BLOCKDIM_Y 4
#define ROWS_RESULT_STEPS 8
#define ROWS_HALO_STEPS 1
__constant__ float c_Kernel[KERNEL_LENGTH];

#define ROWS_COMPUTE()                                                                     \
  __syncthreads();                                                                         \
  _Pragma("unroll")                                                                        \
  for (int i = ROWS_HALO_STEPS; i < ROWS_HALO_STEPS + ROWS_RESULT_STEPS; i++) {            \
    float sum = 0;                                                                         \
    _Pragma("unroll")                                                                      \
    for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; j++) {                                \
      sum += c_Kernel[KERNEL_RADIUS - j] * s_Data[threadIdx.y][threadIdx.x + i * ROWS_BLOCKDIM_X + j]; \
    }                                                                                      \
    d_Dst[i * ROWS_BLOCKDIM_X] = sum;                                                      \
  }

// the sample's kernel, its tile row PITCH floats long (160 as written)
template <int PITCH>
__global__ void conv_rows(float* d_Dst, float* d_Src, int imageW, int imageH, int pitch) {
  __shared__ float s_Data[ROWS_BLOCKDIM_Y][PITCH];
  const int baseX = (blockIdx.x * ROWS_RESULT_STEPS - ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X + threadIdx.x;
  const int baseY = blockIdx.y * ROWS_BLOCKDIM_Y + threadIdx.y;
  d_Src += baseY * pitch + baseX;
  d_Dst += baseY * pitch + baseX;
#pragma unroll
  for (int i = ROWS_HALO_STEPS; i < ROWS_HALO_STEPS + ROWS_RESULT_STEPS; i++) {
    s_Data[threadIdx.y][threadIdx.x + i * ROWS_BLOCKDIM_X] = d_Src[i * ROWS_BLOCKDIM_X];
  }
#pragma unroll
  for (int i = 0; i < ROWS_HALO_STEPS; i++) {
    s_Data[threadIdx.y][threadIdx.x + i * ROWS_BLOCKDIM_X] =
        (baseX >= -i * ROWS_BLOCKDIM_X) ? d_Src[i * ROWS_BLOCKDIM_X] : 0;
  }
#pragma unroll
  for (int i = ROWS_HALO_STEPS + ROWS_RESULT_STEPS; i < ROWS_HALO_STEPS + ROWS_RESULT_STEPS + ROWS_HALO_STEPS; i++) {
    s_Data[threadIdx.y][threadIdx.x + i * ROWS_BLOCKDIM_X] =
        (imageW - baseX > i * ROWS_BLOCKDIM_X) ? d_Src[i * ROWS_BLOCKDIM_X] : 0;
  }
  ROWS_COMPUTE()
}

// the same tile and compute; each warp fills its two rows 32 consecutive floats per store
// (lane l of warp w: row 2w + k/5, column l + 32 (k%5), k = 0..9): conflict-free stores
__global__ void conv_rows_warp_rows(float* d_Dst, float* d_Src, int imageW, int imageH, int pitch) {
  __shared__ float s_Data[ROWS_BLOCKDIM_Y][160];
  const int tid = threadIdx.y * ROWS_BLOCKDIM_X + threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int rowX = (blockIdx.x * ROWS_RESULT_STEPS - ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X;
#pragma unroll
  for (int k = 0; k < 10; k++) {
    const int r = 2 * warp + k / 5;
    const int c = lane + 32 * (k % 5);
    const int gx = rowX + c;
    const float* src = d_Src + (blockIdx.y * ROWS_BLOCKDIM_Y + r) * pitch + gx;
    const bool halo = c < ROWS_HALO_STEPS * ROWS_BLOCKDIM_X ||
                      c >= (ROWS_HALO_STEPS + ROWS_RESULT_STEPS) * ROWS_BLOCKDIM_X;
    s_Data[r][c] = (!halo || (gx >= 0 && gx < imageW)) ? *src : 0;
  }
  const int baseX = rowX + threadIdx.x;
  const int baseY = blockIdx.y * ROWS_BLOCKDIM_Y + threadIdx.y;
  d_Dst += baseY * pitch + baseX;
  ROWS_COMPUTE()
}

// ---------------------------------------------------------------- B. local array vs shared
__device__ __forceinline__ unsigned mix(unsigned x) {
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
  return x;
}

template <int E>
__global__ void hist_local(unsigned* out, int n_threads, int m, unsigned seed) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= n_threads) return;
  unsigned bins[E];
  for (int e = 0; e < E; e++) bins[e] = 0;
  unsigned h = mix(tid ^ seed);
  for (int i = 0; i < m; i++) { h = mix(h + i); bins[h & (E - 1)] += 1; }
  unsigned s = 0;
  for (int r = 0; r < 8; r++) s += bins[mix(h + r) & (E - 1)];
  out[tid] = s;
}

template <int E>
__global__ void hist_shared(unsigned* out, int n_threads, int m, unsigned seed) {
  extern __shared__ unsigned sh[];
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= n_threads) return;
  unsigned* bins = sh + threadIdx.x;
  const int B = blockDim.x;
  for (int e = 0; e < E; e++) bins[e * B] = 0;
  unsigned h = mix(tid ^ seed);
  for (int i = 0; i < m; i++) { h = mix(h + i); bins[(h & (E - 1)) * B] += 1; }
  unsigned s = 0;
  for (int r = 0; r < 8; r++) s += bins[(mix(h + r) & (E - 1)) * B];
  out[tid] = s;
}

template <int E>
__global__ void scan_local(float* out, int n_threads, int n, unsigned seed) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= n_threads) return;
  float q[E];
  float x = (mix(tid ^ seed) & 1023) * 1e-3f;
  for (int i = 0; i < n; i++) { x = x * 0.999f + 1.0f; q[i] = x; }
  float s = 0;
  for (int p = 1; p <= 4; p++)
    for (int i = 0; i < n; i++) s += q[i] * p;
  out[tid] = s;
}

template <int E>
__global__ void scan_shared(float* out, int n_threads, int n, unsigned seed) {
  extern __shared__ float shf[];
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= n_threads) return;
  float* q = shf + threadIdx.x;
  const int B = blockDim.x;
  float x = (mix(tid ^ seed) & 1023) * 1e-3f;
  for (int i = 0; i < n; i++) { x = x * 0.999f + 1.0f; q[i * B] = x; }
  float s = 0;
  for (int p = 1; p <= 4; p++)
    for (int i = 0; i < n; i++) s += q[i * B] * p;
  out[tid] = s;
}

// ---------------------------------------------------------------- C. kaolin sg loop analog
// each transpose written out as kaolin writes it (store, barrier, load, barrier); the two
// kernels differ only in the tile and its indices
__global__ void sg_loop_17(float* out, const float* in, int iters) {
  __shared__ float shm[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  float a = in[blockIdx.x * 256 + ty * 16 + tx];
  float sx = 0, sy = 0, sz = 0, su = 0;
  for (int it = 0; it < iters; it++) {
    // per-pair FP32 work (kaolin: exponentials, products, a division, selects)
    const float other = 0.5f + 0.001f * (it & 63);
    const float um = fmaxf(a * other + 1.0f, 1e-3f);
    const float ev = __expf(um - 2.0f), er = __expf(-2.0f * um);
    const float g = ev * 6.2831853f * (1.0f - er) / um;
    float x = g * a, y = g * other, z = g * um;
    float ux = x * er + y, uy = y * er + z, uz = z * er + x;
    float sub = ux * uy - uz;
    __syncthreads();
    shm[ty][tx] = x;
    __syncthreads();
    x = shm[tx][ty];
    __syncthreads();
    shm[ty][tx] = y;
    __syncthreads();
    y = shm[tx][ty];
    __syncthreads();
    shm[ty][tx] = z;
    __syncthreads();
    z = shm[tx][ty];
    __syncthreads();
#pragma unroll
    for (int off = 8; off > 0; off /= 2) {
      x += __shfl_down_sync(0xffffffffu, x, off);
      y += __shfl_down_sync(0xffffffffu, y, off);
      z += __shfl_down_sync(0xffffffffu, z, off);
    }
    __syncthreads();
    if (tx == 0) { shm[ty][0] = x; shm[ty][1] = y; shm[ty][2] = z; }
    __syncthreads();
    if (ty == 0) sx += shm[tx / 3][tx % 3];
    __syncthreads();
    shm[ty][tx] = ux;
    __syncthreads();
    ux = shm[tx][ty];
    __syncthreads();
    shm[ty][tx] = uy;
    __syncthreads();
    uy = shm[tx][ty];
    __syncthreads();
    shm[ty][tx] = uz;
    __syncthreads();
    uz = shm[tx][ty];
    __syncthreads();
#pragma unroll
    for (int off = 8; off > 0; off /= 2) {
      ux += __shfl_down_sync(0xffffffffu, ux, off);
      uy += __shfl_down_sync(0xffffffffu, uy, off);
      uz += __shfl_down_sync(0xffffffffu, uz, off);
    }
    __syncthreads();
    if (tx == 0) { shm[ty][0] = ux; shm[ty][1] = uy; shm[ty][2] = uz; }
    __syncthreads();
    if (ty == 0) sy += shm[tx / 3][tx % 3];
    __syncthreads();
    shm[ty][tx] = sub;
    __syncthreads();
    sub = shm[tx][ty];
    __syncthreads();
#pragma unroll
    for (int off = 8; off > 0; off /= 2) sub += __shfl_down_sync(0xffffffffu, sub, off);
    sz += sub;
    su += x + ux;
    a = a * 0.999f + 1e-4f * sub;
  }
  out[blockIdx.x * 256 + ty * 16 + tx] = sx + sy + sz + su;
}

__global__ void sg_loop_swizzled(float* out, const float* in, int iters) {
  __shared__ float shm[16][16];
  const int tx = threadIdx.x, ty = threadIdx.y;
  float a = in[blockIdx.x * 256 + ty * 16 + tx];
  float sx = 0, sy = 0, sz = 0, su = 0;
  for (int it = 0; it < iters; it++) {
    // per-pair FP32 work (kaolin: exponentials, products, a division, selects)
    const float other = 0.5f + 0.001f * (it & 63);
    const float um = fmaxf(a * other + 1.0f, 1e-3f);
    const float ev = __expf(um - 2.0f), er = __expf(-2.0f * um);
    const float g = ev * 6.2831853f * (1.0f - er) / um;
    float x = g * a, y = g * other, z = g * um;
    float ux = x * er + y, uy = y * er + z, uz = z * er + x;
    float sub = ux * uy - uz;
    __syncthreads();
    shm[ty][tx ^ ty] = x;
    __syncthreads();
    x = shm[tx][ty ^ tx];
    __syncthreads();
    shm[ty][tx ^ ty] = y;
    __syncthreads();
    y = shm[tx][ty ^ tx];
    __syncthreads();
    shm[ty][tx ^ ty] = z;
    __syncthreads();
    z = shm[tx][ty ^ tx];
    __syncthreads();
#pragma unroll
    for (int off = 8; off > 0; off /= 2) {
      x += __shfl_down_sync(0xffffffffu, x, off);
      y += __shfl_down_sync(0xffffffffu, y, off);
      z += __shfl_down_sync(0xffffffffu, z, off);
    }
    __syncthreads();
    if (tx == 0) { shm[ty][0] = x; shm[ty][1] = y; shm[ty][2] = z; }
    __syncthreads();
    if (ty == 0) sx += shm[tx / 3][tx % 3];
    __syncthreads();
    shm[ty][tx ^ ty] = ux;
    __syncthreads();
    ux = shm[tx][ty ^ tx];
    __syncthreads();
    shm[ty][tx ^ ty] = uy;
    __syncthreads();
    uy = shm[tx][ty ^ tx];
    __syncthreads();
    shm[ty][tx ^ ty] = uz;
    __syncthreads();
    uz = shm[tx][ty ^ tx];
    __syncthreads();
#pragma unroll
    for (int off = 8; off > 0; off /= 2) {
      ux += __shfl_down_sync(0xffffffffu, ux, off);
      uy += __shfl_down_sync(0xffffffffu, uy, off);
      uz += __shfl_down_sync(0xffffffffu, uz, off);
    }
    __syncthreads();
    if (tx == 0) { shm[ty][0] = ux; shm[ty][1] = uy; shm[ty][2] = uz; }
    __syncthreads();
    if (ty == 0) sy += shm[tx / 3][tx % 3];
    __syncthreads();
    shm[ty][tx ^ ty] = sub;
    __syncthreads();
    sub = shm[tx][ty ^ tx];
    __syncthreads();
#pragma unroll
    for (int off = 8; off > 0; off /= 2) sub += __shfl_down_sync(0xffffffffu, sub, off);
    sz += sub;
    su += x + ux;
    a = a * 0.999f + 1e-4f * sub;
  }
  out[blockIdx.x * 256 + ty * 16 + tx] = sx + sy + sz + su;
}

// ---------------------------------------------------------------- host
struct Timed {
  std::string name;
  dim3 grid, block;
  size_t smem;
  std::function<void()> launch;
};

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// the block (a multiple of 32, or 16) keeping the most threads of a kernel resident per SM
template <typename K>
static int best_block(K kernel, size_t bytes_per_thread, int* resident) {
  int best = 0, best_res = -1;
  for (int b : {16, 32, 64, 96, 128, 160, 192, 224, 256}) {
    size_t smem = bytes_per_thread * b;
    if (smem > 227 * 1024) continue;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int blocks = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, b, smem));
    if (blocks * b >= best_res) { best_res = blocks * b; best = b; }
  }
  *resident = best_res;
  return best;
}

template <int E>
static void add_local_shared(std::vector<Timed>& ks, unsigned* ubuf, float* fbuf, int n_threads) {
  const int m = 256;
  int res_h = 0, res_s = 0;
  const int bh = best_block(hist_shared<E>, 4 * E, &res_h);
  const int bs = best_block(scan_shared<E>, 4 * E, &res_s);
  char name[96];
  const int lb = 256;
  snprintf(name, sizeof name, "hist_local_%d", E);
  ks.push_back({name, dim3((n_threads + lb - 1) / lb), dim3(lb), 0,
                [=] { hist_local<E><<<(n_threads + lb - 1) / lb, lb>>>(ubuf, n_threads, m, 7u); }});
  snprintf(name, sizeof name, "hist_shared_%d resident_per_sm=%d", E, res_h);
  ks.push_back({name, dim3((n_threads + bh - 1) / bh), dim3(bh), (size_t)4 * E * bh,
                [=] { hist_shared<E><<<(n_threads + bh - 1) / bh, bh, (size_t)4 * E * bh>>>(
                          ubuf + n_threads, n_threads, m, 7u); }});
  snprintf(name, sizeof name, "scan_local_%d", E);
  ks.push_back({name, dim3((n_threads + lb - 1) / lb), dim3(lb), 0,
                [=] { scan_local<E><<<(n_threads + lb - 1) / lb, lb>>>(fbuf, n_threads, E, 7u); }});
  snprintf(name, sizeof name, "scan_shared_%d resident_per_sm=%d", E, res_s);
  ks.push_back({name, dim3((n_threads + bs - 1) / bs), dim3(bs), (size_t)4 * E * bs,
                [=] { scan_shared<E><<<(n_threads + bs - 1) / bs, bs, (size_t)4 * E * bs>>>(
                          fbuf + n_threads, n_threads, E, 7u); }});
}

int main(int argc, char** argv) {
  const bool once = argc > 1 && !strcmp(argv[1], "--once");
  // A
  const int W = 3072, H = 3072;
  float *src, *dst;
  CK(cudaMalloc(&src, sizeof(float) * W * H));
  CK(cudaMalloc(&dst, sizeof(float) * W * H * 3));
  {
    std::vector<float> h(W * H);
    unsigned s = 12345;
    for (auto& v : h) { s = s * 1664525u + 1013904223u; v = (s >> 8) * (1.0f / 16777216.0f); }
    CK(cudaMemcpy(src, h.data(), sizeof(float) * W * H, cudaMemcpyHostToDevice));
    float k[KERNEL_LENGTH];
    for (int i = 0; i < KERNEL_LENGTH; i++) k[i] = 1.0f / (1 + i);
    CK(cudaMemcpyToSymbol(c_Kernel, k, sizeof k));
  }
  const dim3 cgrid(W / (ROWS_RESULT_STEPS * ROWS_BLOCKDIM_X), H / ROWS_BLOCKDIM_Y);
  const dim3 cblock(ROWS_BLOCKDIM_X, ROWS_BLOCKDIM_Y);
  std::vector<Timed> ks;
  ks.push_back({"conv_rows_160", cgrid, cblock, 0,
                [=] { conv_rows<160><<<cgrid, cblock>>>(dst, src, W, H, W); }});
  ks.push_back({"conv_rows_warp_rows", cgrid, cblock, 0,
                [=] { conv_rows_warp_rows<<<cgrid, cblock>>>(dst + W * H, src, W, H, W); }});
  ks.push_back({"conv_rows_176", cgrid, cblock, 0,
                [=] { conv_rows<176><<<cgrid, cblock>>>(dst + 2 * W * H, src, W, H, W); }});
  // C
  const int sg_blocks = 132 * 8, sg_iters = 256;
  float *sg_in, *sg_out;
  CK(cudaMalloc(&sg_in, sizeof(float) * sg_blocks * 256));
  CK(cudaMalloc(&sg_out, sizeof(float) * sg_blocks * 256 * 2));
  {
    std::vector<float> h(sg_blocks * 256);
    for (size_t i = 0; i < h.size(); i++) h[i] = 0.01f * (i % 97);
    CK(cudaMemcpy(sg_in, h.data(), sizeof(float) * h.size(), cudaMemcpyHostToDevice));
  }
  ks.push_back({"sg_loop_17", dim3(sg_blocks), dim3(16, 16), 0,
                [=] { sg_loop_17<<<sg_blocks, dim3(16, 16)>>>(sg_out, sg_in, sg_iters); }});
  ks.push_back({"sg_loop_swizzled", dim3(sg_blocks), dim3(16, 16), 0,
                [=] { sg_loop_swizzled<<<sg_blocks, dim3(16, 16)>>>(sg_out + sg_blocks * 256, sg_in, sg_iters); }});
  const size_t n_ncu = ks.size();
  // B
  const int n_threads = 1 << 18;
  unsigned* ubuf;
  float* fbuf;
  CK(cudaMalloc(&ubuf, sizeof(unsigned) * n_threads * 2));
  CK(cudaMalloc(&fbuf, sizeof(float) * n_threads * 2));
  if (!once) {
    add_local_shared<64>(ks, ubuf, fbuf, n_threads);
    add_local_shared<128>(ks, ubuf, fbuf, n_threads);
    add_local_shared<256>(ks, ubuf, fbuf, n_threads);
    add_local_shared<512>(ks, ubuf, fbuf, n_threads);
    add_local_shared<1024>(ks, ubuf, fbuf, n_threads);
    add_local_shared<2048>(ks, ubuf, fbuf, n_threads);
  }
  if (once) {
    for (size_t i = 0; i < n_ncu; i++) {
      printf("launched name=%s\n", ks[i].name.c_str());
      ks[i].launch();
      CK(cudaDeviceSynchronize());
    }
    return 0;
  }
  for (auto& k : ks) { k.launch(); CK(cudaGetLastError()); }
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<std::vector<float>> t(ks.size());
  for (int round = 0; round < 3; round++)
    for (size_t i = 0; i < ks.size(); i++)
      for (int r = 0; r < 5; r++) {
        CK(cudaEventRecord(e0));
        ks[i].launch();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t[i].push_back(ms);
      }
  CK(cudaGetLastError());
  for (size_t i = 0; i < ks.size(); i++) {
    std::string n = ks[i].name, extra;
    size_t sp = n.find(' ');
    if (sp != std::string::npos) { extra = n.substr(sp); n = n.substr(0, sp); }
    printf("name=%s block=%d grid=%d smem=%zu median_ms=%.5f min_ms=%.5f max_ms=%.5f%s\n",
           n.c_str(), ks[i].block.x * ks[i].block.y, ks[i].grid.x * ks[i].grid.y, ks[i].smem,
           median(t[i]), *std::min_element(t[i].begin(), t[i].end()),
           *std::max_element(t[i].begin(), t[i].end()), extra.c_str());
  }
  // the variants of one computation agree
  {
    std::vector<float> h(3 * (size_t)W * H);
    CK(cudaMemcpy(h.data(), dst, sizeof(float) * h.size(), cudaMemcpyDeviceToHost));
    double d1 = 0, d2 = 0;
    for (size_t i = 0; i < (size_t)W * H; i++) {
      d1 = std::max(d1, (double)fabsf(h[i] - h[i + W * H]));
      d2 = std::max(d2, (double)fabsf(h[i] - h[i + 2 * (size_t)W * H]));
    }
    printf("check conv warp_rows_maxdiff=%g pad176_maxdiff=%g\n", d1, d2);
    std::vector<float> g(2 * (size_t)sg_blocks * 256);
    CK(cudaMemcpy(g.data(), sg_out, sizeof(float) * g.size(), cudaMemcpyDeviceToHost));
    double d3 = 0;
    for (size_t i = 0; i < (size_t)sg_blocks * 256; i++)
      d3 = std::max(d3, (double)fabsf(g[i] - g[i + sg_blocks * 256]) / (1e-6 + fabsf(g[i])));
    printf("check sg swizzled_maxreldiff=%g\n", d3);
    // the last local/shared pair launched (E = 2048) computes the same per thread
    std::vector<unsigned> u(2 * (size_t)n_threads);
    std::vector<float> f(2 * (size_t)n_threads);
    CK(cudaMemcpy(u.data(), ubuf, sizeof(unsigned) * u.size(), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(f.data(), fbuf, sizeof(float) * f.size(), cudaMemcpyDeviceToHost));
    size_t bad_u = 0;
    double d4 = 0;
    for (size_t i = 0; i < (size_t)n_threads; i++) {
      bad_u += u[i] != u[i + n_threads];
      d4 = std::max(d4, (double)fabsf(f[i] - f[i + n_threads]) / (1e-6 + fabsf(f[i])));
    }
    printf("check local_shared hist_mismatches=%zu scan_maxreldiff=%g\n", bad_u, d4);
  }
  return 0;
}
