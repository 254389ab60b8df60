"""CL201 in a branch that one thread of a warp runs: ``else if (idx == n)`` (cucim's
jitter kernels finish the last bytes of an image this way). The thread index equal to a
uniform value holds for at most one lane of a warp, so an access there is one lane's,
not a warp's with a stride; a condition that lets several lanes of a warp through
(``idx / 8 == k``) is assumed to hold as before."""
from __future__ import annotations

from dataclasses import replace

from cudalint.config import Settings
from cudalint.engine import lint_text

_KERNEL = """
__global__ void tail(unsigned char* in, unsigned char* out, int total, int k) {
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    int vec = total >> 2;
    if (idx < vec) {
        reinterpret_cast<unsigned int*>(out)[idx] = reinterpret_cast<unsigned int*>(in)[idx];
    } else if (idx == vec) {
        int start = idx << 2;
        while (start < total) {
            out[start] = in[start];
            start++;
        }
    }
}

__global__ void eight_lanes(float* in, float* out, int k) {
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    if (idx / 8 == k) {
        out[idx * 16] = in[idx * 16];
    }
}

void launch(unsigned char* in, unsigned char* out, int total, int k, float* a, float* b) {
    tail<<<(total + 511) / 512, 128>>>(in, out, total, k);
    eight_lanes<<<4, 128>>>(a, b, k);
}
"""


def test_a_tail_one_lane_runs_is_not_uncoalesced():
    found = lint_text("tail.cu", _KERNEL, replace(Settings(), select=("CL201",)),
                      "cuda").diagnostics
    # before: out[start] and in[start] of the tail (row 10) at "4 sectors instead of 1"
    assert sorted((d.row, d.column) for d in found) == [(19, 9), (19, 25)], \
        [(d.row, d.message[:60]) for d in found]
