"""The tenth triage's wrong classes (bench/triage/sheet-newcorpus10.md).

W2 (CL201, pytorch-loss taylor_softmax.cu): a host variable declared `int m_size = 1;` and
multiplied in a loop before the launch was bound to its initializer ("`m_size` = 1 from
the launch"), which made a unit-stride access a row walk. A variable written after its
initializer has no value at the launch."""
from __future__ import annotations

from dataclasses import replace

from cudalint.config import Settings
from cudalint.engine import lint_text

MSIZE = """
__global__ void rowsoft(const int n_size, const int dimsize, const int m_size,
                        const float *feat, float *out) {
    int sid = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    for (int i{sid}; i < n_size * m_size; i += stride) {
        int n_ind = i / m_size;
        int m_ind = i % m_size;
        for (int j{0}; j < dimsize; ++j) {
            int ind = n_ind * dimsize * m_size + j * m_size + m_ind;
            out[ind] = feat[ind] * 2.f;
        }
    }
}
void go(const float* feat, float* out, const int* sizes, int ndim, int dim) {
    int n_size = 1;
    int dimsize = sizes[dim];
    int m_size = 1;
    for (int i{0}; i < dim; ++i) {n_size *= sizes[i];}
    LOOP
    rowsoft<<<4096, 512>>>(n_size, dimsize, m_size, feat, out);
}
"""
S = replace(Settings(), select=("CL201",))


def _cl201(text: str) -> list:
    return lint_text("m.cu", text, S, "cuda").diagnostics


def test_w2_a_host_variable_written_after_its_initializer_is_not_bound():
    assert _cl201(MSIZE.replace("LOOP", "for (int i{dim + 1}; i < ndim; ++i) "
                                        "{m_size *= sizes[i];}")) == []
    for write in ("m_size = sizes[ndim - 1];", "++m_size;", "m_size += 2;",
                  "int* p = &m_size;"):
        assert _cl201(MSIZE.replace("LOOP", write)) == [], write


def test_w2_a_host_variable_left_at_its_initializer_is_bound():
    found = _cl201(MSIZE.replace("LOOP", "int unused = m_size == 1;"))
    assert found and all("`m_size` = 1 from the launch" in d.message for d in found)


SLOT = """
#define BLOCKSIZE 256
__global__ void fwd(const int n, const float* logits, float* losses) {
    __shared__ int sdata[BLOCKSIZE];
    sdata[0] = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[1] = n;
    sdata[2] = gridDim.x * blockDim.x;
    BETWEEN
    for (int i{sdata[0]}; i < sdata[1]; i += sdata[2]) losses[i] = logits[i] * 2.f;
}
void go(int n, const float* l, float* o) { fwd<<<(n + 255) / 256, BLOCKSIZE>>>(n, l, o); }
"""


def _sync(text: str) -> list:
    s = replace(Settings(), select=("CL102", "CL107"))
    return lint_text("s.cu", text, s, "cuda").diagnostics


def test_w1_a_per_thread_value_in_one_shared_word_is_one_finding_with_the_register_remedy():
    (d,) = _sync(SLOT.replace("BETWEEN", ""))
    assert d.code == "CL107" and d.row == 5
    assert "each thread reads `sdata[0]` back at line 9 as its own value" in d.message
    assert "keep it in a register" in d.message and "let one thread" not in d.message


def test_w1_read_after_a_barrier_keeps_the_one_writer_remedy():
    found = _sync(SLOT.replace("BETWEEN", "__syncthreads();"))
    (d,) = [d for d in found if d.code == "CL107"]
    assert "let one thread store it" in d.message and "register" not in d.message
