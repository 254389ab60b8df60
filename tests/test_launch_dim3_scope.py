"""A launch's ``dim3`` variable is the declaration in scope at the launch
(model.kernels ``last_initializer``): gpu4pyscf's solvent/pcm.cu declares `const dim3
threads(THREADS, THREADS)` in one `{ }` and `const dim3 threads(THREADS * THREADS)` in
the next; the second launch's block was read as the first's 32x32 (a false CL108,
bench/triage/sheet-newcorpus8.md class W7). CL201/CL202 read the same Launch.block."""
from __future__ import annotations

from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.sources.base import SourceFile, Unit

SCOPES = """\
#define T 32
__global__ void k(float* o) { o[threadIdx.x] = 0.f; }
void host(float* p, int n) {
    {
        const dim3 threads(T, T);
        k<<<1, threads>>>(p);
    }
    {
        const dim3 threads(T * T);
        k<<<2, threads>>>(p);
    }
    dim3 outer(64, 2);
    {
        k<<<3, outer>>>(p);
        dim3 outer(8);
        k<<<4, outer>>>(p);
    }
    k<<<5, outer>>>(p);
    for (dim3 b(16, 16); n > 0; --n) k<<<6, b>>>(p);
    {
        dim3 late(128);
    }
    k<<<7, late>>>(p);
}
"""


def test_the_dim3_in_scope_at_each_launch():
    unit = Unit(SourceFile("c.cu", SCOPES, "cuda"), SCOPES)
    blocks = [launch.block for launch in UnitContext(unit, Settings()).model.launches]
    assert blocks == [
        (32, 32, 1),
        None,            # `T * T`: not the sibling's (32, 32); its value is not read
        (64, 2, 1),
        (8, 1, 1),       # the inner declaration hides the outer one
        (64, 2, 1),      # and ends with its block
        (16, 16, 1),     # a for's own declaration
        None,            # declared in a block that ended before the launch
    ], blocks
