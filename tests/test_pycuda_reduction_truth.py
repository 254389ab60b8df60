"""pycuda's reduction template (fixtures/CL101/pycuda_reduction.py) against the GPU: CL101's
prediction on each template function compared with compute-sanitizer racecheck on the CUDA
text that function generates for a float32 sum with 512 threads
(fixtures/CL101/pycuda_reduction.truth.json, written by tools/gputruth/pycuda_reduction.py
on an H100). Also the pieces that make the finding possible: an element type that is a
typedef, or a typedef of a type the template leaves unknown, and BLOCK_SIZE from a class
constant passed through two functions."""
from __future__ import annotations

import ast
import json
from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_bytes

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "CL101" / "pycuda_reduction.py"
TRUTH = FIXTURE.with_name("pycuda_reduction.truth.json")


def _cl101(name: str, data: bytes, kind: str) -> list:
    settings = replace(Settings(), select=("CL101",))
    return [d for d in lint_bytes(name, data, settings, kind).diagnostics
            if d.code == "CL101"]


def _spans() -> dict[str, tuple[int, int]]:
    tree = ast.parse(FIXTURE.read_text())
    return {n.name: (n.lineno, n.end_lineno) for n in tree.body
            if isinstance(n, ast.FunctionDef)}


def test_racecheck_agrees_with_cl101_on_each_template_function():
    truth = json.loads(TRUTH.read_text())
    spans = _spans()
    rows = [d.row for d in _cl101(str(FIXTURE), FIXTURE.read_bytes(), "python")]
    assert len(truth["records"]) == 2
    for rec in truth["records"]:
        lo, hi = spans[rec["function"]]
        mine = [r for r in rows if lo <= r <= hi]
        hazards = rec["errors"] + rec["warnings"]
        assert rec["rc"] == 0 and rec["errors"] == 0        # all within one warp
        if rec["function"] == "get_reduction_module":
            # racecheck: the first step's store (line 56) and the second step's read
            # (line 58); CL101 at that read
            assert hazards > 0 and mine and set(mine) <= set(rec["fixture_lines"])
        else:
            assert hazards == 0 and not mine


_KERNEL = """{typedef}
__global__ void red(out_type *out, const out_type *in)
{{
    __shared__ out_type sdata[256];
    unsigned tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * 256 + tid];
    __syncthreads();
    for (unsigned s = 128; s > 32; s >>= 1) {{
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }}
    if (tid < 32) {{
        volatile out_type *s = sdata;
        s[tid] += s[tid + 16];
        s[tid] += s[tid + 8];
    }}
    if (tid == 0) out[blockIdx.x] = sdata[0];
}}
void host(out_type *o, const out_type *i) {{ red<<<64, 256>>>(o, i); }}
"""


def test_a_typedef_or_opaque_element_type_is_followed_by_the_block_run():
    for typedef in ("typedef float out_type;", "using out_type = double;",
                    "#define out_type float",
                    "typedef __cudalint_opaque_3__ out_type;"):
        src = _KERNEL.format(typedef=typedef).encode()
        found = _cl101("k.cu", src, "cuda")
        assert [d.message.split(":")[0] for d in found] == \
            ["warp-synchronous shared memory"], typedef


def test_an_opaque_array_read_as_another_type_is_not_followed():
    src = _KERNEL.format(typedef="typedef __cudalint_opaque_3__ out_type;").replace(
        "volatile out_type *s = sdata;", "volatile float *s = (float *)sdata;").encode()
    assert _cl101("k.cu", src, "cuda") == []


def test_block_size_through_two_callers_and_a_class_constant():
    from cudalint.sources.python.extract import extract_python_units
    found = extract_python_units(FIXTURE.read_text(), str(FIXTURE))
    assert found.kernels and all("#define BLOCK_SIZE 512" in k.text for k in found.kernels)


_PREPROC = """#define N {n}
__global__ void k(float *o) {{
    __shared__ float s[64];
    unsigned t = threadIdx.x;
    s[t] = t;
    __syncthreads();
    if (t < 32) {{
#if N > 4
        __syncwarp();
#elif N > 1
        s[t] += s[t + 16];
        s[t] += s[t + 8];
#else
        __syncwarp();
#endif
    }}
    o[t] = s[t];
}}
void h(float *o) {{ k<<<1, 64>>>(o); }}
"""


def test_the_block_run_takes_the_branch_of_an_if_chain_the_constants_choose():
    # pycuda's `#if (BLOCK_SIZE >= 512)` around a reduction step
    assert [d.row for d in _cl101("k.cu", _PREPROC.format(n=2).encode(), "cuda")] == [11]
    assert _cl101("k.cu", _PREPROC.format(n=1).encode(), "cuda") == []
    unknown = _PREPROC.format(n=2).replace("#define N 2", "")     # undefined: no run
    assert _cl101("k.cu", unknown.encode(), "cuda") == []
