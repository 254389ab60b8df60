// CL204 analog of pytorch3d's marching_cubes.cu triangle loop (findings #47, #48): a
// per-thread `const int edgeToVertsTable[12][2]` and `float3 vertlist[12]` indexed by an
// edge number loaded from a table (local memory), against the same loop reading the edge
// table from __constant__ memory and interpolating only the edges it emits.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <random>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("CUDA error %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

__constant__ int c_edge[12][2] = {{0, 1}, {1, 2}, {3, 2}, {0, 3}, {4, 5}, {5, 6},
                                  {7, 6}, {4, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
__device__ float3 interp(float iso, float3 p1, float3 p2, float v1, float v2) {
  float mu = (iso - v1) / (v2 - v1 + 1e-6f);
  return make_float3(p1.x + mu * (p2.x - p1.x), p1.y + mu * (p2.y - p1.y),
                     p1.z + mu * (p2.z - p1.z));
}

template <bool LOCAL>
__global__ void tri(const float *vol, int W, int H, int D, const int *numVerts,
                    const unsigned char *faceTable, float *verts, int nvox, float iso) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= nvox) return;
  int gx = tid % W, gy = tid / W % H, gz = tid / (W * H);
  float val[8]; float3 p[8]; unsigned cube = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) {
    int x = gx + (i & 1), y = gy + (i >> 1 & 1), z = gz + (i >> 2 & 1);
    float v = vol[(z * (H + 1) + y) * (W + 1) + x];
    cube |= (v < iso) << i; val[i] = v; p[i] = make_float3(x, y, z);
  }
  int n = numVerts[cube];
  if (LOCAL) {
    const int edgeToVertsTable[12][2] = {{0, 1}, {1, 2}, {3, 2}, {0, 3}, {4, 5}, {5, 6},
                                         {7, 6}, {4, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
    float3 vertlist[12];
#pragma unroll
    for (int e = 0; e < 12; e++)
      vertlist[e] = interp(iso, p[c_edge[e][0]], p[c_edge[e][1]], val[c_edge[e][0]],
                           val[c_edge[e][1]]);
    for (int i = 0; i < n; i++) {
      int edge = faceTable[cube * 16 + i];
      int v1 = edgeToVertsTable[edge][0], v2 = edgeToVertsTable[edge][1];
      float *o = verts + ((size_t)tid * 16 + i) * 3;
      o[0] = vertlist[edge].x + v1; o[1] = vertlist[edge].y + v2; o[2] = vertlist[edge].z;
    }
  } else {
    for (int i = 0; i < n; i++) {
      int edge = faceTable[cube * 16 + i];
      int v1 = c_edge[edge][0], v2 = c_edge[edge][1];
      float a = 0, b = 0; float3 pa = p[0], pb = p[0];
#pragma unroll
      for (int c = 0; c < 8; c++) {          // select without a dynamic index
        if (c == v1) { a = val[c]; pa = p[c]; }
        if (c == v2) { b = val[c]; pb = p[c]; }
      }
      float3 q = interp(iso, pa, pb, a, b);
      float *o = verts + ((size_t)tid * 16 + i) * 3;
      o[0] = q.x + v1; o[1] = q.y + v2; o[2] = q.z;
    }
  }
}

int main() {
  const int W = 256, H = 256, D = 256, nvox = W * H * D;
  std::vector<float> hv((size_t)(W + 1) * (H + 1) * (D + 1));
  for (int z = 0; z <= D; z++) for (int y = 0; y <= H; y++) for (int x = 0; x <= W; x++)
    hv[((size_t)z * (H + 1) + y) * (W + 1) + x] =
        sinf(x * 0.05f) * cosf(y * 0.07f) + sinf(z * 0.03f);
  std::mt19937 rng(3);
  std::vector<int> nv(256); std::vector<unsigned char> ft(256 * 16);
  for (int c = 0; c < 256; c++) { nv[c] = (c == 0 || c == 255) ? 0 : 3 * (1 + rng() % 4); }
  for (auto &e : ft) e = rng() % 12;
  float *vol, *verts; int *dnv; unsigned char *dft;
  CK(cudaMalloc(&vol, hv.size() * 4)); CK(cudaMalloc(&verts, (size_t)nvox * 16 * 12));
  CK(cudaMalloc(&dnv, 1024)); CK(cudaMalloc(&dft, 4096));
  CK(cudaMemcpy(vol, hv.data(), hv.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dnv, nv.data(), 1024, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dft, ft.data(), 4096, cudaMemcpyHostToDevice));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int local = 1; local >= 0; local--) {
    auto go = [&] {
      if (local) tri<true><<<nvox / 256, 256>>>(vol, W, H, D, dnv, dft, verts, nvox, 0.f);
      else tri<false><<<nvox / 256, 256>>>(vol, W, H, D, dnv, dft, verts, nvox, 0.f);
    };
    for (int i = 0; i < 3; i++) go();
    CK(cudaDeviceSynchronize()); cudaEventRecord(a);
    for (int i = 0; i < 10; i++) go();
    cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b);
    printf("cl204_mcubes_%s_ms %.3f\n", local ? "local_arrays" : "constant_table", ms / 10);
  }
  return 0;
}
