"""Conditions the lane engine keeps as lane masks (issue 20, sheet-newcorpus5 W1, W2, W3,
W6): the condition of a conditional expression around a load, the thread conjunct of
``A && B`` whose ``B`` reads memory, the block width a kernel's own index says, and a
``__shared__`` winner read after a barrier. Each reproducer gave a wrong finding at
1087e05 (CL108 races only a thread failing the guard could make, a 256-thread block
against ``block_size_x``, a warp figure for a one-lane store); each look-alike, spelt
the same way with a guard that does not separate the threads, stays reported
(fixtures/CL108/guards.cu, fixtures/CL201/shared_winner.cu)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from cudalint.config import Settings
from cudalint.engine import lint_bytes

LAUNCH = "<<<rows, (len + 31) / 32 * 32>>>"


def _rows(src: str, code: str) -> list[int]:
    res = lint_bytes("t.cu", src.encode(), replace(Settings(), select=(code,)), "cuda")
    return sorted(d.row for d in res.diagnostics if d.code == code)


W1 = """
__global__ void softmax_row(float* c, int len) {
  int idx = blockIdx.x * len + threadIdx.x;
  float v = threadIdx.x < len ? READ : -1e30f;
  v = __expf(v);
  __syncthreads();
  if (threadIdx.x < len) c[idx] = v;
}
void go(float* c, int rows, int len) { softmax_row<<<rows, (len + 31) / 32 * 32>>>(c, len); }
"""


@pytest.mark.parametrize("read, rows", [
    ("c[idx]", []),                 # W1: each block reads and writes its own row
    ("c[idx + 1]", [7]),            # thread len - 1 reads block 1's first element
])
def test_conditional_expression_guards_its_load(read, rows):
    assert _rows(W1.replace("READ", read), "CL108") == rows


def test_the_other_side_of_a_conditional_runs_where_it_fails():
    src = W1.replace("threadIdx.x < len ? READ : -1e30f", "threadIdx.x < len ? -1e30f : c[idx]")
    assert _rows(src, "CL108") == [7]       # threads past len read the next row


W2 = """
__global__ void zero_rows(float* c, const int* pad, int len) {
  int idx = blockIdx.x * len + threadIdx.x;
  if (threadIdx.x < len OP pad[blockIdx.x]) { c[idx] = 0.f; return; }
  if (threadIdx.x < len) c[idx] = c[idx] * 2.f;
}
void go(float* c, const int* p, int rows, int len) { zero_rows<<<rows, (len + 31) / 32 * 32>>>(c, p, len); }
"""


@pytest.mark.parametrize("op, rows", [
    ("&&", []),                     # W2: the thread conjunct holds in the branch
    ("||", [4, 5]),                 # threads past len store where the flag is set
])
def test_thread_conjunct_survives_a_memory_conjunct(op, rows):
    assert _rows(W2.replace("OP", op), "CL108") == rows


def test_memory_conjunct_first_and_negated_thread_conjunct():
    src = """
__global__ void k(float* c, const int* pad, int len) {
  int idx = blockIdx.x * len + threadIdx.x;
  if (pad[blockIdx.x] && !(threadIdx.x >= len)) c[idx] = 0.f;
  if (threadIdx.x < len) c[idx] = 1.f + c[idx];
}
void go(float* c, const int* p, int rows, int len) { k<<<rows, (len + 31) / 32 * 32>>>(c, p, len); }
"""
    assert _rows(src, "CL108") == []


W3 = """
#ifndef block_size_x
#define block_size_x 32
#endif
__global__ void col_mean(int h, int w, float* input) {
  int j = INDEX;
  if (j < w) {
    float s = 0.0f;
    for (int i = 0; i < h - 1; i += 2) s += input[i * w + j];
    if (h & 1) s += input[(h - 1) * w + j];
    for (int i = 0; i < h - 1; i += 2) input[i * w + j] -= s;
    if (h & 1) input[(h - 1) * w + j] -= s;
  }
}
"""


@pytest.mark.parametrize("index, rows", [
    ("threadIdx.x + blockIdx.x * block_size_x", []),    # W3: blocks of block_size_x
    ("blockIdx.x * block_size_x + threadIdx.x", []),
    ("threadIdx.x + block_size_x * blockIdx.x", []),
    # a width of 256 is what the index says here: thread 32 of block 0 is j = 32 again
    ("threadIdx.x + blockIdx.x * 16", [12]),            # under 32: no width said
])
def test_block_width_from_the_kernels_own_index(index, rows):
    assert _rows(W3.replace("INDEX", index), "CL108") == rows


def test_block_width_from_the_index_keeps_a_real_cross_block_race():
    src = """
#define block_size_x 32
__global__ void col_fold(int w, float* input) {
  int j = threadIdx.x + blockIdx.x * block_size_x;
  if (j + block_size_x < w) input[j] += input[j + block_size_x];
}
"""
    assert _rows(src, "CL108") == [5]


def test_a_kernel_reading_blockdim_says_no_width():
    from cudalint.analysis.memory import global_races
    assert global_races._WIDTH.search(
        "int j = threadIdx.x + blockIdx.x * block_size_x;")
    assert not global_races._WIDTH.search(
        "int j = threadIdx.x + blockIdx.x * block_size_x * 4;")
    src = W3.replace("INDEX", "threadIdx.x + blockIdx.x * block_size_x").replace(
        "if (j < w)", "if (j < w && blockDim.x > 0)")
    assert _rows(src, "CL108") == [12]      # any width: the 256 it is evaluated at


W6 = """
__global__ void route(const float* __restrict__ g, float* score, int experts, int maxtok) {
  int t = blockIdx.x, e = threadIdx.x;
  float v = e < experts ? g[t * experts + e] : -1e30f;
  __shared__ int best;
  if (e == 0) best = 0;
  __syncthreads();
  if (e < experts && v > 0.5f) best = e;
  BARRIER
  if (e CMP best) score[e * maxtok + t] = v;
}
void go(const float* g, float* s, int tokens, int experts, int maxtok) { route<<<tokens, (experts + 31) / 32 * 32>>>(g, s, experts, maxtok); }
"""


@pytest.mark.parametrize("barrier, cmp, rows", [
    ("__syncthreads();", "==", []),     # W6: one lane of the block stores
    ("__syncthreads();", ">=", [10]),   # every lane from the winner on
    ("", "==", [10]),                   # unsettled: lanes may read different winners
])
def test_shared_winner_after_a_barrier_is_one_lane(barrier, cmp, rows):
    src = W6.replace("BARRIER", barrier).replace("CMP", cmp)
    assert _rows(src, "CL201") == rows


def test_condition_mask_splits_what_it_can():
    from cudalint.analysis.memory.kernel_lanes_conditions import condition_mask
    from cudalint.parse import parse
    tree = parse(b"int f() { return (a && m) || !b; }")
    expr = tree.root_node.named_children[0].child_by_field_name("body") \
        .named_children[0].named_children[0]
    values = {"a": (1, 1, 0, 0), "b": (1, 0, 1, 0)}

    def leaf(node):
        return values.get(node.text.decode())     # m: unknown
    # true where a (m unknown) or where b is false; false only where b is true
    assert condition_mask(leaf, expr, True) == (1, 1, 0, 1)
    assert condition_mask(leaf, expr, False) == (1, 0, 1, 0)
    left = expr.child_by_field_name("left")
    assert condition_mask(leaf, left, True) == (1, 1, 0, 0)
    assert condition_mask(leaf, left, False) is None
