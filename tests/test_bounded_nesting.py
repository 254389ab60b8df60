"""Deeply nested kernels never take an analysis down to the interpreter's recursion limit
(issue 25).

The sync analysis (interval check, block run), the lane engine (CL201/CL202) and CL108
walk a body recursively and used to stop only at a RecursionError. At that depth there is
no stack left for anything else: fuzz seed 31 found a 24 KB kernel (a 3,000-term sum) on
which the garbage collector ran a WeakKeyDictionary callback at the bottom of such a walk
and printed "Exception ignored ... RecursionError". Each analysis now looks at the
body's nesting first (``parse.nesting``) and leaves a kernel nested past its bound alone.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cudalint.config import Settings
from cudalint.engine import lint_bytes
from cudalint.parse import nesting, parse

N = 1000
_HEAD = ("__global__ void k(float* out, const float* in, int n) {\n"
         "    __shared__ float s[256];\n    unsigned tid = threadIdx.x;\n")
_TAIL = ("    __syncthreads();\n    out[tid] = s[tid];\n}\n"
         "void h(float* o, const float* i, int n) { k<<<2, 128>>>(o, i, n); }\n")
PROBES = {
    "sum": "    s[tid] = " + "+".join(["in[tid]"] * N) + ";\n",
    "shared_sum": "    s[tid] = 1.f;\n    __syncthreads();\n    out[tid] = "
                  + "+".join(["s[tid]"] * N) + ";\n",
    "parentheses": "    s[tid] = " + "(" * N + "in[tid]" + ")" * N + ";\n",
    "blocks": "    " + "{" * N + "s[tid] = in[tid];" + "}" * N + "\n",
    "loops": "    " + "for (int i = 0; i < n; ++i) " * N + "s[tid] += in[tid];\n",
    "index": "    s[tid] = in[" + "tid+" * N + "0];\n",
    "global_index": "    out[" + "tid+" * N + "0] = in[tid];\n",
}
SEED31 = Path(__file__).parent / "fuzz" / "regressions" / "cuda_slow" / \
    "seed31_24898ef347_sum_of_3000.cu"


def _deepest(run) -> int:
    """Python frames below the caller at the deepest point of ``run()``."""
    depth = [0, 0]

    def profile(frame, event, arg):
        if event == "call":
            depth[0] += 1
            if depth[0] > depth[1]:
                depth[1] = depth[0]
        elif event == "return":
            depth[0] -= 1
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return depth[1]


@pytest.mark.parametrize("name", sorted(PROBES) + ["seed31"])
def test_deep_kernel_stays_far_from_the_recursion_limit(name):
    data = SEED31.read_bytes() if name == "seed31" else \
        (_HEAD + PROBES[name] + _TAIL).encode()
    settings = Settings(select=("ALL",))
    deepest = _deepest(lambda: lint_bytes("k.cu", data, settings, "cuda"))
    # an analysis that still walked such a body went to the limit (about 1,000 frames)
    assert deepest < sys.getrecursionlimit() // 2, deepest


def test_nesting_counts_levels_without_recursion():
    root = parse(b"int f() { return ((((1)))); }\nint g() { return 1; }\n").root_node
    f, g = root.children[0], root.children[1]
    assert nesting(g, 100) == 3          # body, return statement, number
    assert nesting(f, 100) == 3 + 4      # and a level for each ( )
    assert nesting(f, 3) == 4            # stops once past the limit
    deep = parse(b"int x = " + b"(" * 5000 + b"1" + b")" * 5000 + b";").root_node
    assert nesting(deep, 10**6) > 5000
