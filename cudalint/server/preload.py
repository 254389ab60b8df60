"""What the language server's worker processes start from. Imported by the forkserver
(``cudalint.server.forkserver``) before it forks any worker, it imports the engine and
the rules and lints ``TINY`` (the model's index query, which every CUDA file needs), so
each worker, a replacement after a time-out or a crash too, starts with that done. The
fast worker then lints ``WARM_UP`` as it starts (``worker._worker_init``), a small file
written to reach the queries the analyses compile on first use (20-80 ms each; 12 of
the 15 a corpus run compiles, ~0.4 s of CPU in all), so that no keystroke waits for them;
the forkserver does not, since the first document's analysis waits for the forkserver
and needs only some of them (on a busy 2-core machine that CPU was on its path).

The texts have no floating-point literal or math call: they must not start libclang or
its helper process (``analysis.fp.clang_process``), which a fork would share."""
from __future__ import annotations

import os
import sys

TINY = "__global__ void k(float* a) { a[threadIdx.x] = 0.0f; }\n"

WARM_UP = """\
#include <cuda_runtime.h>
#define TILE 32
#if TILE > 16
#define WIDE 1
#endif
#ifdef WIDE
#define STEP 2
#endif
enum { LANES = 32 };
struct Pair { int a; int b; };
typedef int idx_t;

template <int N>
__device__ __forceinline__ int warp_total(int v) {
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__device__ int twice(int v) { return v * STEP; }

template <int BLOCK>
__global__ void reduce(const int* __restrict__ in, int* out, int n) {
    __shared__ int buf[BLOCK];
    const int tid = threadIdx.x;
    idx_t i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    int v = 0;
    if (i < n) v += in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    buf[tid] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s)
            buf[tid] += buf[tid + s];
        __syncthreads();
    }
    int k = 0;
    while (k < 4) { k++; }
    do { --k; } while (k > 0);
    int* p = &k;
    *p = twice(*p);
    if (tid < 32) {
        int w = warp_total<32>(buf[tid] + buf[tid + 32]);
        if (tid == 0) out[blockIdx.x] = w;
    }
}

__global__ void transpose(const int* in, int* out, int rows, int cols, Pair* q) {
    __shared__ int tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    int lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    if (x < cols && y < rows)
        tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    if (x < rows && y < cols)
        out[y * rows + x] = tile[threadIdx.x][threadIdx.y] + q[x].a + lane;
    int local[8];
    for (int j = 0; j < cols; ++j)
        local[j & 7] = in[j];
    out[x] = local[y & 7];
}

__global__ void scale(int* a, int* o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    o[2 * i] = a[i] * 2;
    o[2 * i + 1] = a[i] * 3;
    int best = a[i], at = i;
    for (int d = 16; d > 0; d /= 2) {
        int other = __shfl_xor_sync(0xffffffffu, best, d);
        int where = __shfl_xor_sync(0xffffffffu, at, d);
        if (other < best) { best = other; at = where; }
    }
    if ((threadIdx.x & 31) == 0) o[at] = best;
}

void launch(const int* x, int* y, int* tmp, Pair* q, int n, int rows, int cols) {
    reduce<256><<<(n + 511) / 512, 256>>>(x, tmp, n);
    dim3 block(TILE, TILE);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose<<<grid, block>>>(x, y, rows, cols, q);
    scale<<<(n + 255) / 256, 256>>>(tmp, y, n);
}
"""


def warm_up(text: str) -> None:
    """Import the engine and the rules and lint ``text``; a failure is no error (the
    analysis that needs them then imports and compiles them itself)."""
    try:
        from cudalint.config import Settings
        from cudalint.engine import lint_text
        lint_text("warm-up.cu", text, Settings(), "cuda")
    except Exception:
        pass


def _in_forkserver(server: int) -> None:
    # The workers die with their parent, this process (worker._worker_init); this
    # process must die with the server, however it ends: multiprocessing keeps a
    # forkserver until its last worker has ended, and the workers would wait forever.
    from cudalint.analysis.fp.clang_process import die_with_parent
    die_with_parent(server)
    # stdout is the server's LSP channel, inherited by this process and every worker
    # forked from it: nothing there may write to it
    try:
        os.dup2(2, 1)
    except OSError:
        pass
    sys.stdout = sys.stderr
    warm_up(TINY)


# taken out of the environment here, so that the workers forked from this process (which
# import this module for the texts) do not take themselves for the forkserver
_SERVER = os.environ.pop("CUDALINT_FORKSERVER", "")
if _SERVER.isdigit():
    _in_forkserver(int(_SERVER))
