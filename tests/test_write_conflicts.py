"""CL107: one store of different values by two threads to one shared address (issue 23),
against the racecheck records of fixtures/CL107 and at the edges of the shape."""
from __future__ import annotations

from dataclasses import replace

from cudalint.config import Settings
from cudalint.engine import lint_bytes

_K = """__global__ void k(float* out, const float* in) {
    __shared__ float x[4];
    __shared__ int w[4];
    unsigned t = threadIdx.x;
    %s
    __syncthreads();
    out[t] = x[0] + w[0];
}
void h(float* o, const float* in) { k<<<1, 128>>>(o, in); }
"""


def _rows(stmt: str) -> list[int]:
    res = lint_bytes("t.cu", (_K % stmt).encode(),
                     replace(Settings(), select=("CL107",)), "cuda")
    return [d.row for d in res.diagnostics]


def test_different_values_at_one_address():
    assert _rows("x[0] = (float)t;") == [5]
    assert _rows("if (t < 32) w[0] = t;") == [5]        # one warp: racecheck errors too
    assert _rows("w[0] = t / 32;") == [5]
    assert _rows("w[t / 64] = t;") == [5]
    assert _rows("if (t % 32 == 0) w[0] = t;") == [5]


def test_benign_and_unknown_stores_are_silent():
    assert _rows("x[0] = 1.f;") == []                   # one value
    assert _rows("w[0] = blockIdx.x;") == []            # one value per block
    assert _rows("if (t == 0) w[0] = t;") == []         # one thread
    assert _rows("w[t / 32] = t / 32;") == []           # each warp its slot, one value
    assert _rows("x[0] = in[t];") == []                 # values not known
    assert _rows("w[0] += t;") == []                    # a read-modify-write: CL101/CL102
