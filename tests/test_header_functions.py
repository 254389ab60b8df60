"""Issue 13: a kernel's calls into the device functions of a project header are followed
as nvcc inlines them (project/header_functions.py). A figure that depends on the
caller's lanes is reported at the call in the kernel's file and says where the access
is in the header; nothing is reported inside the appended text itself."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.config import Settings
from cudalint.engine import lint_text

HELPERS = """#pragma once
__device__ inline float first_field(const float* xyz, int i) {
    return xyz[3 * i];
}
__device__ inline float same_lane(const float* v, int i) {
    return v[i];
}
__device__ inline float widen(float x) { return x * 0.1; }
__device__ inline float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    return v;
}
"""

KERNEL = """#include "helpers.cuh"
__global__ void k(const float* xyz, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = first_field(xyz, i);
}
void launch(const float* x, float* o, int n) { k<<<(n + 255) / 256, 256>>>(x, o, n); }
"""


def _lint(folder: Path, name: str, select=("ALL",)):
    path = folder / name
    # sm_86: FP64 at 1/64 of the FP32 rate, where CL403 speaks
    return lint_text(str(path), path.read_text(), Settings(select=tuple(select),
                                                           arch="sm_86"),
                     "cuda").diagnostics


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "helpers.cuh").write_text(HELPERS)
    (tmp_path / "k.cu").write_text(KERNEL)
    return tmp_path


def test_a_header_device_function_is_reported_at_the_call(project):
    (d,) = [d for d in _lint(project, "k.cu") if d.code == "CL201"]
    # at `first_field(xyz, i)` on line 4 of k.cu, not in the header, not at the include
    assert (d.row, d.column) == (4, 25), (d.row, d.column)
    assert d.end_row == 4 and d.end_column == 25 + len("first_field(xyz, i)")
    assert d.metrics["sectors_per_request"] == 12 and d.metrics["stride_bytes"] == 12
    # what ncu measured on an H100 for one field of 12-byte records (traffic.json)
    record = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "CL201" /
                         "traffic.json").read_text())
    (field,) = [r for r in record["records"] if r["label"] == "aos3_one_field"]
    assert d.metrics["sectors_per_request"] == field["sectors_per_request"]
    assert d.metrics["warp_fetched_bytes"] / d.metrics["warp_used_bytes"] == \
        pytest.approx(field["dram_read_over_useful"], rel=0.01)
    assert d.metrics["in_header"] == {"file": "helpers.cuh", "line": 3, "column": 12}
    assert "in `helpers.cuh` at line 3, column 12, called here" in d.message
    assert "reached from `k` at line 4" in d.message
    # the same figure as with the function written in the kernel's file
    inline = KERNEL.replace('#include "helpers.cuh"\n', HELPERS.replace("#pragma once\n", ""))
    (project / "one.cu").write_text(inline)
    (same,) = [d for d in _lint(project, "one.cu") if d.code == "CL201"]
    assert same.metrics["sectors_per_request"] == d.metrics["sectors_per_request"]
    assert same.message.split(" (block")[0] == d.message.split(" (block")[0]


def test_the_header_alone_and_look_alikes_are_silent(project):
    assert not [d for d in _lint(project, "helpers.cuh") if d.code == "CL201"]
    (project / "k.cu").write_text(KERNEL.replace("first_field(xyz, i)", "same_lane(xyz, i)"))
    assert not [d for d in _lint(project, "k.cu") if d.code == "CL201"]


def test_what_the_header_says_by_itself_is_left_to_its_own_lint(project):
    """CL403 in `widen` and a parse error in another function are the header's findings
    (its own lint reports them at its rows), never the includer's."""
    (project / "helpers.cuh").write_text(HELPERS + "__device__ float broken(float x) "
                                         "{ return x +* ; }\n")
    (project / "k.cu").write_text(KERNEL.replace("first_field(xyz, i)",
                                                 "widen(first_field(xyz, i)) + broken(1.f)"))
    found = _lint(project, "k.cu")
    assert not [d for d in found if d.code in ("CL403", "CL000")], \
        [(d.code, d.row, d.message) for d in found]
    own = _lint(project, "helpers.cuh")
    assert [d.row for d in own if d.code == "CL403"] == [8]


def test_a_race_through_a_header_reduction_is_seen(project):
    """llm.c's softmax_forward.cu shape: the block's maximum is read from `s[0]` by
    every thread, then (after a warp reduction from a header, shuffles only) lane 0 of
    each warp writes `s[warp]` with no barrier between: thread 0 overwrites what
    thread 32 may not have read yet. With the header's body unknown, the call could
    have held a barrier; with it followed, CL102 says so."""
    (project / "r.cu").write_text(
        '#include "helpers.cuh"\n'
        "__global__ void r(const float* x, float* out) {\n"
        "    __shared__ float s[8];\n"
        "    int t = threadIdx.x;\n"
        "    if (t == 0) s[0] = x[0];\n"
        "    __syncthreads();\n"
        "    float m = s[0];\n"
        "    float v = warp_sum(x[t] - m);\n"
        "    if (t % 32 == 0) s[t / 32] = v;\n"
        "    __syncthreads();\n"
        "    out[t] = s[0];\n"
        "}\n"
        "void go(const float* x, float* o) { r<<<1, 256>>>(x, o); }\n")
    rows = [(d.code, d.row) for d in _lint(project, "r.cu") if d.code.startswith("CL1")]
    assert ("CL102", 9) in rows, rows
    # the same kernel with the header's body replaced by an unknown declaration: silent
    (project / "helpers.cuh").write_text("#pragma once\n__device__ float warp_sum(float v);\n")
    assert not [d for d in _lint(project, "r.cu") if d.code == "CL102"]


def test_library_headers_are_not_read(tmp_path):
    lib = tmp_path / "third_party"
    lib.mkdir()
    (lib / "helpers.cuh").write_text(HELPERS)
    (tmp_path / "k.cu").write_text(KERNEL.replace('"helpers.cuh"', '"third_party/helpers.cuh"'))
    assert not [d for d in _lint(tmp_path, "k.cu") if d.code == "CL201"]


def test_a_kernel_whose_calls_were_not_all_followed_claims_no_unused_bytes(tmp_path,
                                                                            monkeypatch):
    """gsplat's ftheta kernels write 48-byte records, 8 floats in one device function
    and 4 in the kernel. When the callee budget ran out before the device function was
    followed, the kernel's 4 stores looked like a third of each record: "of the 1024
    bytes a warp moves, the kernel writes 512" (false: it writes them all)."""
    import cudalint.analysis.memory.callee_lanes as callee_lanes
    src = ("__device__ void head(float* s, int off) {\n"
           + "".join(f"    s[off + {j}] = 1.f;\n" for j in range(8)) + "}\n"
           "__device__ float tail(const float* a, int i) { return a[i]; }\n"
           "__global__ void k(const float* a, float* s, int n) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i >= n) return;\n"
           "    float v = tail(a, i);\n"
           "    int off = i * 12;\n"
           "    head(s, off);\n"
           + "".join(f"    s[off + {j}] = v;\n" for j in range(8, 12)) + "}\n"
           "void go(const float* a, float* s, int n) { k<<<n / 256, 256>>>(a, s, n); }\n")
    (tmp_path / "g.cu").write_text(src)
    assert not [d for d in _lint(tmp_path, "g.cu") if d.code == "CL201"]
    monkeypatch.setattr(callee_lanes, "MAX_BINDINGS", 1)     # `head` is not followed
    assert not [d for d in _lint(tmp_path, "g.cu") if d.code == "CL201"]


def test_the_cli_reports_the_call_in_json(project):
    out = subprocess.run([sys.executable, "-m", "cudalint", "check", str(project),
                          "--no-cache", "--output-format", "json", "--select", "CL201"],
                         capture_output=True, text=True, timeout=120)
    found = json.loads(out.stdout)
    assert [(Path(d["filename"]).name, d["location"]["row"], d["location"]["column"])
            for d in found] == [("k.cu", 4, 25)], out.stdout


def test_a_namespaced_helper_is_followed(tmp_path):
    """`util::second(p, i)`, defined in a namespace of a header (or of the file): the
    call is followed by the function's own name, as a plain call is (it was not, in
    the file either)."""
    (tmp_path / "h.cuh").write_text(
        "#pragma once\nnamespace util {\ntemplate <typename T>\n"
        "__device__ __forceinline__ T second(const T* p, int i) { return p[4 * i + 1]; }\n"
        "}\n")
    (tmp_path / "k.cu").write_text(
        '#include "h.cuh"\n'
        "__global__ void k(const float* p, float* o, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) o[i] = util::second(p, i);\n}\n"
        "void go(const float* p, float* o, int n) { k<<<n / 128, 128>>>(p, o, n); }\n")
    (d,) = [d for d in _lint(tmp_path, "k.cu") if d.code == "CL201"]
    assert (d.row, d.column) == (4, 21) and d.metrics["sectors_per_request"] == 16
    # ncu on an H100: float loads 16 bytes apart (grouping.cu float4_as_scalars)
    truth = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "CL201" /
                        "truth.json").read_text())
    (rec,) = [r for r in truth["records"] if r["kernel"] == "float4_as_scalars"]
    assert d.metrics["sectors_per_request"] == rec["ld_sectors_per_request"]
    assert d.metrics["in_header"]["line"] == 4


def test_lines_inside_the_header_are_not_told_as_lines_of_the_file(tmp_path):
    """kaolin's `identify_multiscale` (spc_utils.cuh) writes each thread's row of
    `level + 1` ints in a loop: the message said "the loop at line 21", a line of the
    header read as one of query_cuda.cu (the #include's). Lines of appended text are
    left out; the place in the header is given once, at the end."""
    (tmp_path / "spc.cuh").write_text(
        "#pragma once\n\n\n"
        "__device__ void rows(int* out, int level) {\n"
        "    for (int j = 0; j < level; j++) {\n"
        "        out[j + 1] = j;\n"
        "    }\n}\n")
    (tmp_path / "q.cu").write_text(
        '#include "spc.cuh"\n'
        "__global__ void q(int* pidx, int level, int n) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) rows(pidx + i * (level + 1), level);\n}\n"
        "void go(int* p, int l, int n) { q<<<n / 256, 256>>>(p, l, n); }\n")
    found = [d for d in _lint(tmp_path, "q.cu") if d.code == "CL201"]
    assert len(found) == 1, [d.message for d in found]
    (d,) = found
    assert d.row == 4 and "loop at line" not in d.message, d.message
    assert "across the loop" in d.message
    assert d.message.endswith("(in `spc.cuh` at line 6, column 9, called here)")


def test_a_race_into_header_code_names_the_header_line(tmp_path: Path):
    # the kernel stores to `__shared__` and a header function reads a neighbour's slot
    # with no barrier between: the message must name the header's line for the read, not
    # the `#include` line its appended text maps to (a "line 1" that names the wrong code)
    (tmp_path / "nb.cuh").write_text(
        "#pragma once\n"
        "__device__ inline float left(const float* s) {\n"
        "    return s[threadIdx.x + 1];\n"
        "}\n")
    (tmp_path / "k.cu").write_text(
        '#include "nb.cuh"\n'
        "__global__ void k(const float* in, float* out) {\n"
        "    __shared__ float s[257];\n"
        "    s[threadIdx.x] = in[threadIdx.x];\n"
        "    out[threadIdx.x] = left(s);\n"
        "}\n"
        "void go(const float* i, float* o) { k<<<1, 256>>>(i, o); }\n")
    races = [d for d in _lint(tmp_path, "k.cu", ("CL101", "CL102")) if d.code == "CL102"]
    assert races, "the cross-warp read-after-write is found through the header"
    (d,) = races
    # reported at the kernel's call of the header function (the read itself is in the
    # header's appended text, where nothing is reported), naming the header's line
    assert (d.row, d.column) == (5, 24), (d.row, d.column)
    assert "`s[threadIdx.x + 1]` (line 3 of `nb.cuh`)" in d.message, d.message
    assert "`s[threadIdx.x]` (line 4)" in d.message, d.message
    assert "(line 1)" not in d.message, d.message
    assert d.metrics["read_line"] is None and d.metrics["write_line"] == 4
    assert d.metrics["in_header"] == {"file": "nb.cuh", "line": 3, "column": 12}
