// Issue 20, sheet-newcorpus8 N2 and N5: do the "not worth acting on" findings' remedies
// change the time on an H100? Each pair runs the same arithmetic on the same data; only
// the layout the finding names changes. Built and timed by newcorpus8_worth.py.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include "median_ms.cuh"

// ---- N2: a per-thread row re-read inside a 4-deep loop (gpu4pyscf sem/grad_kernel.cu) ----
// row layout: P[p * 81 + k] (the finding: a stride of 648 bytes between lanes);
// column layout: P[k * np + p] (lanes on the contiguous index: the finding's remedy)
template <bool COLUMN, bool HEAVY>
__global__ void n2_energy(const double* P, const double* W, double* E, int np, int ni) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= np) return;
  double e = 0.0;
  for (int mu = 0; mu < ni; mu++)
    for (int nu = 0; nu < ni; nu++)
      for (int l = 0; l < ni; l++)
        for (int s = 0; s < ni; s++) {
          double w = W[(mu * 9 + nu) * 81 + l * 9 + s];
          if (w == 0.0) continue;
          double a = COLUMN ? P[(mu * 9 + nu) * np + p] : P[p * 81 + mu * 9 + nu];
          double b = COLUMN ? P[(l * 9 + s) * np + p] : P[p * 81 + l * 9 + s];
          double t = a * b * w;
          if (HEAVY) t = exp(-t * t);
          e += t;
        }
  E[p] = e;
}

// ---- N5: a 2-way conflict in a loop bound by global loads (gpu4pyscf nr_numint_sparse) ----
// block 8x4x4; sb[ty * TX + q * 8 + tx] as found (PAD 0: the four threadIdx.y rows of a
// warp on the same 16 banks, 4 wavefronts), or rows padded by 8 doubles (2 wavefronts)
#define TX 32
template <int PAD>
__global__ void n5_dot(double* out, const double* bra, const double* ket, int ng) {
  int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
  int txy = ty * 8 + tx;
  __shared__ double sb[4 * (TX + PAD)], sk[4 * (TX + PAD)];
  double val = 0;
  const double* b0 = bra + (size_t)blockIdx.x * 4 * ng;
  const double* k0 = ket + (size_t)blockIdx.x * 4 * ng;
  for (int g0 = 0; g0 + TX <= ng; g0 += TX) {
    if (tz == 0)
      for (int n = 0; n < 4; n++) {
        sb[n * (TX + PAD) + txy] = b0[n * ng + g0 + txy];
        sk[n * (TX + PAD) + txy] = k0[n * ng + g0 + txy];
      }
    __syncthreads();
    for (int q = 0; q < 4; q++)
      val += sb[ty * (TX + PAD) + q * 8 + tx] * sk[tz * (TX + PAD) + q * 8 + tx];
    __syncthreads();
  }
  atomicAdd(out + blockIdx.x * 16 + ty * 4 + tz, val);
}

template <typename F>
static float median_ms(F launch, int reps = 21) {
  return timed_median_ms(launch, reps, 1);
}

int main() {
  // N2: np threads, rows of 81 doubles, W with a fraction of zeros
  for (int np : {1 << 16, 1 << 17}) {
    for (int zeros_pct : {0, 50}) {
      double *P, *W, *E;
      cudaMalloc(&P, sizeof(double) * 81 * (size_t)np);
      cudaMalloc(&W, sizeof(double) * 81 * 81);
      cudaMalloc(&E, sizeof(double) * np);
      std::vector<double> hp(81 * (size_t)np), hw(81 * 81);
      for (size_t i = 0; i < hp.size(); i++) hp[i] = 1e-3 * (double)(i % 97);
      srand(7);
      for (auto& w : hw) w = (rand() % 100) < zeros_pct ? 0.0 : 1e-2 * (1 + rand() % 9);
      cudaMemcpy(P, hp.data(), sizeof(double) * hp.size(), cudaMemcpyHostToDevice);
      cudaMemcpy(W, hw.data(), sizeof(double) * hw.size(), cudaMemcpyHostToDevice);
      int threads = 256, blocks = (np + threads - 1) / threads;
      float row = median_ms([&] { n2_energy<false, false><<<blocks, threads>>>(P, W, E, np, 9); }, 5);
      float col = median_ms([&] { n2_energy<true, false><<<blocks, threads>>>(P, W, E, np, 9); }, 5);
      float rowh = median_ms([&] { n2_energy<false, true><<<blocks, threads>>>(P, W, E, np, 9); }, 5);
      float colh = median_ms([&] { n2_energy<true, true><<<blocks, threads>>>(P, W, E, np, 9); }, 5);
      printf("N2 np=%d zeros=%d%% light row_ms=%.3f column_ms=%.3f ratio=%.3f\n", np, zeros_pct, row, col, row / col);
      printf("N2 np=%d zeros=%d%% heavy row_ms=%.3f column_ms=%.3f ratio=%.3f\n", np, zeros_pct, rowh, colh, rowh / colh);
      cudaFree(P); cudaFree(W); cudaFree(E);
    }
  }
  // N5: blocks of 8x4x4, each over its own 4 x ng doubles of bra and ket
  for (int ng : {1024, 8192}) {
    int nblocks = 2048;
    double *bra, *ket, *out;
    size_t n = (size_t)nblocks * 4 * ng;
    cudaMalloc(&bra, sizeof(double) * n);
    cudaMalloc(&ket, sizeof(double) * n);
    cudaMalloc(&out, sizeof(double) * nblocks * 16);
    cudaMemset(bra, 0, sizeof(double) * n);
    cudaMemset(ket, 0, sizeof(double) * n);
    dim3 block(8, 4, 4);
    float c = median_ms([&] { n5_dot<0><<<nblocks, block>>>(out, bra, ket, ng); });
    float p = median_ms([&] { n5_dot<8><<<nblocks, block>>>(out, bra, ket, ng); });
    printf("N5 ng=%d blocks=%d conflict_ms=%.4f padded_ms=%.4f ratio=%.3f\n", ng, nblocks, c, p, c / p);
    cudaFree(bra); cudaFree(ket); cudaFree(out);
  }
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
  return 0;
}
