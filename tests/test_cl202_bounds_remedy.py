"""Issue 20 (second triage, bench/triage/sheet-newcorpus2.md): CL202 took the block of
cusignal's sosfilt kernels from ``__launch_bounds__(1024)`` (launched with 2-16 threads),
said each place once per instantiation, and printed for kaolin's sg kernel a padding
(``shm[16][18]``) that leaves its row stores conflicted. Here: the bound is never the
block; one finding per place; a layout remedy is printed only when the model, with it,
finds every access to the array freed (or no worse)."""
from __future__ import annotations

from cudalint.config import Settings
from cudalint.engine import lint_text


def _lint(src: str, select=("CL202",)):
    return [d for d in lint_text("t.cu", src, Settings(select=select), "cuda").diagnostics
            if d.code in select]


# cusignal python/cusignal/filtering/_sosfilt.cu, shortened: one thread per section,
# 6 coefficients each; the launch is a CuPy call on a prebuilt fatbin
SOSFILT = """
template<typename T>
__device__ void sosfilt(const int n_sections, const int n_samples, T* x_in) {
  extern __shared__ char smem[];
  T* s_out = reinterpret_cast<T*>(smem);
  T* s_sos = reinterpret_cast<T*>(&s_out[n_sections]);
  const int tx = threadIdx.x;
  T zi0 = 0, zi1 = 0, x_n = 0, temp = 0;
  for (int n = 0; n < n_samples; n++) {
    __syncthreads();
    x_n = tx == 0 ? x_in[blockIdx.x * n_samples + n] : s_out[tx - 1];
    temp = s_sos[tx * 6 + 0] * x_n + zi0;
    zi0 = s_sos[tx * 6 + 1] * x_n - s_sos[tx * 6 + 4] * temp + zi1;
    zi1 = s_sos[tx * 6 + 2] * x_n - s_sos[tx * 6 + 5] * temp;
    s_out[tx] = temp;
  }
}
extern "C" __global__ void __launch_bounds__(1024) sosfilt_float32(
    const int n_sections, const int n_samples, float* x_in) {
  sosfilt<float>(n_sections, n_samples, x_in);
}
extern "C" __global__ void __launch_bounds__(1024) sosfilt_float64(
    const int n_sections, const int n_samples, double* x_in) {
  sosfilt<double>(n_sections, n_samples, x_in);
}
"""


def test_launch_bounds_is_not_the_block():
    assert _lint(SOSFILT) == []


def test_a_launch_still_gives_the_block():
    launched = SOSFILT + ("void go(float* f) { sosfilt_float32<<<4, 64>>>(7, 100, f); }\n")
    found = _lint(launched)
    assert found and all("block 64 from the launch" in d.message for d in found), \
        [d.message for d in found]


def test_launch_bounds_only_bound_the_any_block_form_of_cl201():
    src = ("__global__ void __launch_bounds__(64) k(const float* in, float* out) {\n"
           "  int i = threadIdx.x;\n  out[i] = in[4 * i];\n}\n")
    found = _lint(src, ("CL201",))
    assert len(found) == 1
    assert "any 1-D block of 32 to 64 threads" in found[0].message
    assert "from __launch_bounds__" not in found[0].message
    small = src.replace("__launch_bounds__(64)", "__launch_bounds__(16)")
    assert _lint(small, ("CL201",)) == []       # no block of 32 threads can run it


def test_instantiations_with_different_figures_are_one_finding():
    src = ("template <typename T> __global__ void k(T* o) {\n"
           "  __shared__ T s[128];\n  s[threadIdx.x] = o[threadIdx.x];\n"
           "  __syncthreads();\n  o[threadIdx.x] = s[threadIdx.x * 2];\n}\n"
           "void go(float* f, double* d) { k<float><<<1, 64>>>(f); k<double><<<1, 64>>>(d); }\n")
    found = _lint(src)
    assert len(found) == 1, [d.message for d in found]
    message = found[0].message
    assert "k<float>" in message and "k<double>" in message, message


# kaolin csrc/render/sg/unbatched_reduced_sg_inner_product_cuda.cu, shortened: a 16x16
# block writes shm by rows and reads it transposed; [16][17] leaves 2-way conflicts on
# both, [16][18] frees the reads and keeps the stores 2-way
KAOLIN = """
__global__ void sg(const float* in, float* out) {
  __shared__ float shm[16][17];
  for (int i = 0; i < 64; i++) {
    shm[threadIdx.y][threadIdx.x] = in[i * 256 + threadIdx.y * 16 + threadIdx.x];
    __syncthreads();
    out[i * 256 + threadIdx.y * 16 + threadIdx.x] = shm[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
}
void go(const float* a, float* b) { sg<<<1, dim3(16, 16)>>>(a, b); }
"""


def test_padding_that_leaves_a_conflict_is_not_printed():
    found = _lint(KAOLIN)
    assert len(found) == 2, [d.message for d in found]
    for d in found:
        assert "shm[16][18]" not in d.message, d.message
        assert "__shared__ float shm[16][16];" in d.message, d.message
    store, load = sorted(found, key=lambda d: d.row)
    assert "shm[threadIdx.y][threadIdx.x ^ (threadIdx.y % 16)]" in store.message
    assert "shm[threadIdx.x][threadIdx.y ^ (threadIdx.x % 16)]" in load.message


def test_padding_is_printed_where_it_frees_every_access():
    # the plain 32x8 transpose: [32][33] frees the column reads, the row stores stay free
    src = """
__global__ void transpose(const float* in, float* out) {
  __shared__ float tile[32][32];
  for (int j = 0; j < 32; j += 8)
    tile[threadIdx.y + j][threadIdx.x] = in[(blockIdx.y * 32 + threadIdx.y + j) * 1024 +
                                            blockIdx.x * 32 + threadIdx.x];
  __syncthreads();
  for (int j = 0; j < 32; j += 8)
    out[(blockIdx.x * 32 + threadIdx.y + j) * 1024 + blockIdx.y * 32 + threadIdx.x] =
        tile[threadIdx.x][threadIdx.y + j];
}
void go(const float* a, float* b) { transpose<<<dim3(32, 32), dim3(32, 8)>>>(a, b); }
"""
    found = _lint(src)
    assert len(found) == 1, [d.message for d in found]
    assert "pad the rows: `__shared__ float tile[32][33];`" in found[0].message
