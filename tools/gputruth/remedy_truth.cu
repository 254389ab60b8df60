// CL202 layout remedies, as written and as cudalint's printed remedy says (issue 20):
// each kernel keeps only the shared-memory accesses of its source, with the block shape
// cudalint states. tools/gputruth/remedy_truth.py builds this file and measures every
// kernel with ncu; tests/test_cl202_remedy_truth.py compares cudalint's findings here
// with fixtures/CL202/remedy_truth.json. One kernel per launch, in the launch order below.

// cuda-samples convolutionSeparable.cu:99 (block 16x4): s_Data[4][160]; printed remedy [4][176]
__constant__ float c_Kernel[17];

__global__ void conv_rows_as_written(float* d_Dst, const float* d_Src) {
  __shared__ float s_Data[4][160];
#pragma unroll
  for (int i = 0; i < 10; i++) s_Data[threadIdx.y][threadIdx.x + i * 16] = d_Src[i * 16 + threadIdx.x];
  __syncthreads();
#pragma unroll
  for (int i = 1; i < 9; i++) {
    float sum = 0;
#pragma unroll
    for (int j = -8; j <= 8; j++) sum += c_Kernel[8 - j] * s_Data[threadIdx.y][threadIdx.x + i * 16 + j];
    d_Dst[(threadIdx.y * 9 + i) * 16 + threadIdx.x] = sum;
  }
}

__global__ void conv_rows_remedy(float* d_Dst, const float* d_Src) {
  __shared__ float s_Data[4][176];
#pragma unroll
  for (int i = 0; i < 10; i++) s_Data[threadIdx.y][threadIdx.x + i * 16] = d_Src[i * 16 + threadIdx.x];
  __syncthreads();
#pragma unroll
  for (int i = 1; i < 9; i++) {
    float sum = 0;
#pragma unroll
    for (int j = -8; j <= 8; j++) sum += c_Kernel[8 - j] * s_Data[threadIdx.y][threadIdx.x + i * 16 + j];
    d_Dst[(threadIdx.y * 9 + i) * 16 + threadIdx.x] = sum;
  }
}

// the smaller paddings the remedy passed over, for contrast: one float and eight floats
__global__ void conv_rows_pad1(float* d_Dst, const float* d_Src) {
  __shared__ float s_Data[4][161];
#pragma unroll
  for (int i = 0; i < 10; i++) s_Data[threadIdx.y][threadIdx.x + i * 16] = d_Src[i * 16 + threadIdx.x];
  __syncthreads();
#pragma unroll
  for (int i = 1; i < 9; i++) {
    float sum = 0;
#pragma unroll
    for (int j = -8; j <= 8; j++) sum += c_Kernel[8 - j] * s_Data[threadIdx.y][threadIdx.x + i * 16 + j];
    d_Dst[(threadIdx.y * 9 + i) * 16 + threadIdx.x] = sum;
  }
}

__global__ void conv_rows_pad8(float* d_Dst, const float* d_Src) {
  __shared__ float s_Data[4][168];
#pragma unroll
  for (int i = 0; i < 10; i++) s_Data[threadIdx.y][threadIdx.x + i * 16] = d_Src[i * 16 + threadIdx.x];
  __syncthreads();
#pragma unroll
  for (int i = 1; i < 9; i++) {
    float sum = 0;
#pragma unroll
    for (int j = -8; j <= 8; j++) sum += c_Kernel[8 - j] * s_Data[threadIdx.y][threadIdx.x + i * 16 + j];
    d_Dst[(threadIdx.y * 9 + i) * 16 + threadIdx.x] = sum;
  }
}

// gsplat IntersectCommon.cu:184-185 (block 256, MT_META_WORDS 32, 8 rows): int2 [8][36];
// printed remedy [8][38]. The load kernel isolates line 184 (a load), the store kernel
// line 185 (a store); the other access of each is the conflict-free row-major one.
__global__ void gsplat_load_as_written(int2* out, const int2* in) {
  __shared__ int2 smem_sums[8][36];
  const int tid = threadIdx.x;
  const int load_row = tid / 32, load_col = tid % 32;
  smem_sums[load_row][load_col] = in[tid];
  __syncthreads();
  const int scan_row = tid % 8, pair_col = tid / 8;
  int2 v = smem_sums[scan_row][pair_col];
  out[tid] = v;
}

__global__ void gsplat_load_remedy(int2* out, const int2* in) {
  __shared__ int2 smem_sums[8][38];
  const int tid = threadIdx.x;
  const int load_row = tid / 32, load_col = tid % 32;
  smem_sums[load_row][load_col] = in[tid];
  __syncthreads();
  const int scan_row = tid % 8, pair_col = tid / 8;
  int2 v = smem_sums[scan_row][pair_col];
  out[tid] = v;
}

__global__ void gsplat_store_as_written(int2* out, const int2* in) {
  __shared__ int2 smem_carries[8][36];
  const int tid = threadIdx.x;
  const int scan_row = tid % 8, pair_col = tid / 8;
  smem_carries[scan_row][pair_col] = in[tid];
  __syncthreads();
  const int load_row = tid / 32, load_col = tid % 32;
  out[tid] = smem_carries[load_row][load_col];
}

__global__ void gsplat_store_remedy(int2* out, const int2* in) {
  __shared__ int2 smem_carries[8][38];
  const int tid = threadIdx.x;
  const int scan_row = tid % 8, pair_col = tid / 8;
  smem_carries[scan_row][pair_col] = in[tid];
  __syncthreads();
  const int load_row = tid / 32, load_col = tid % 32;
  out[tid] = smem_carries[load_row][load_col];
}

// fixtures/CL202/blocks2d.cu tile16_unpadded (block 16x16): float [16][16]; printed
// remedy: keep [16][16], `[row][col ^ (row % 16)]` in both accesses
__global__ void tile16_as_written(const float* in, float* out) {
  __shared__ float tile[16][16];
  int tx = threadIdx.x, ty = threadIdx.y;
  tile[ty][tx] = in[ty * 16 + tx];
  __syncthreads();
  out[ty * 16 + tx] = tile[tx][ty];
}

// blocks2d.cu tile16_padded17 and CL102/block_barrier.cu transpose_no_barrier (block
// 16x16; the latter with its missing barrier put back): float [16][17]; the same remedy
__global__ void tile16_padded17_as_written(const float* in, float* out) {
  __shared__ float tile[16][17];
  int tx = threadIdx.x, ty = threadIdx.y;
  tile[ty][tx] = in[ty * 16 + tx];
  __syncthreads();
  out[ty * 16 + tx] = tile[tx][ty];
}

__global__ void tile16_remedy(const float* in, float* out) {
  __shared__ float tile[16][16];
  int tx = threadIdx.x, ty = threadIdx.y;
  tile[ty][tx ^ (ty % 16)] = in[ty * 16 + tx];
  __syncthreads();
  out[ty * 16 + tx] = tile[tx][ty ^ (tx % 16)];
}

void launch_remedy_truth(float* f_out, const float* f_in, int2* i_out, const int2* i_in) {
  conv_rows_as_written<<<1, dim3(16, 4)>>>(f_out, f_in);
  conv_rows_remedy<<<1, dim3(16, 4)>>>(f_out, f_in);
  conv_rows_pad1<<<1, dim3(16, 4)>>>(f_out, f_in);
  conv_rows_pad8<<<1, dim3(16, 4)>>>(f_out, f_in);
  gsplat_load_as_written<<<1, 256>>>(i_out, i_in);
  gsplat_load_remedy<<<1, 256>>>(i_out, i_in);
  gsplat_store_as_written<<<1, 256>>>(i_out, i_in);
  gsplat_store_remedy<<<1, 256>>>(i_out, i_in);
  tile16_as_written<<<1, dim3(16, 16)>>>(f_in, f_out);
  tile16_padded17_as_written<<<1, dim3(16, 16)>>>(f_in, f_out);
  tile16_remedy<<<1, dim3(16, 16)>>>(f_in, f_out);
}
// main() is in the harness tools/gputruth/remedy_truth.py writes beside its build
