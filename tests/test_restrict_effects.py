"""CL203 (what a missing `__restrict__` makes a kernel execute) and CL205 (the opt-in
read-only observation): messages, the target architecture, warp-uniform loads."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_text
from cudalint.rule import all_rules

ROOT = Path(__file__).resolve().parent.parent

SPLIT = """
__global__ void split(const float* a, float* o, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { o[2*i] = a[i]*2.0f; o[2*i+1] = a[i]*3.0f; }
}
"""
SCALE = """
__global__ void scale(float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}
"""


def lint(source: str, *codes: str, path: str = "k.cu", **settings):
    s = replace(Settings(), select=codes, **settings)
    return [d for d in lint_text(path, source, s, "cuda").diagnostics if d.code in codes]


def test_reload_message_states_the_count_and_the_aliasing_pointer():
    [d] = lint(SPLIT, "CL203")
    assert d.message.startswith("`a[i]` is loaded 2 times per thread instead of 1 because "
                                "`o` may alias it")
    assert d.metrics["loads"] == 2 and d.metrics["loads_fixed"] == 1
    assert d.fix is not None and not d.fix.is_safe
    assert "__restrict__" in d.fix.message


def test_kept_store_message_names_the_loop_and_the_readers():
    src = """
__global__ void mv(const float* w, const float* x, float* o, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = 0; j < n; j++) o[i] += w[i * n + j] * x[j];
}
"""
    [d] = lint(src, "CL203")
    assert d.message.startswith("`o[i]` is stored once per iteration in the loop over `j` "
                                "instead of once after it, because loads through `w`, `x`")
    assert d.metrics["kind"] == "kept_store"


def test_a_read_only_pointer_without_an_effect_is_cl205_and_only_on_request():
    assert lint(SCALE, "CL203") == []
    [d] = lint(SCALE, "CL205")
    assert "changes no run time" in d.message
    assert not all_rules()["CL205"].default_enabled
    assert all_rules()["CL203"].default_enabled


def test_pre_volta_targets_get_the_read_only_path_finding():
    [d] = lint(SCALE, "CL203", arch="sm_60")
    assert "read-only data cache of sm_60" in d.message
    assert lint(SCALE, "CL205", arch="sm_60") == []        # CL203 has it


def test_the_target_comes_from_the_build_files_when_the_setting_is_left(tmp_path):
    (tmp_path / "setup.py").write_text(
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "ext = CUDAExtension('k', ['k.cu'], extra_compile_args={'nvcc': "
        "['-gencode=arch=compute_61,code=sm_61']})\n")
    path = str(tmp_path / "k.cu")
    (tmp_path / "k.cu").write_text(SCALE)
    [d] = lint(SCALE, "CL203", path=path)
    assert "sm_61" in d.message and "build files" in d.message
    # an explicit setting wins
    assert lint(SCALE, "CL203", path=path, arch="sm_80") == []


def test_warp_uniform_loads_are_never_reported():
    src = """
__global__ void s(const double* a_val, const float* bias, double* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[2*i] = a_val[0] * 2.0 + bias[blockIdx.x];
    out[2*i+1] = a_val[0] * 3.0 + bias[blockIdx.x];
}
"""
    assert lint(src, "CL203") == []
    assert lint(src, "CL205") == []
    assert lint(src, "CL203", arch="sm_60") == []


def test_a_launch_passing_one_buffer_twice_silences_the_reload():
    src = SPLIT + "void f(float* b, int n) { split<<<1, 256>>>(b, b, n); }\n"
    assert lint(src, "CL203") == []


def test_loads_separated_by_an_index_update_are_different_elements():
    src = """
__global__ void k(const float* a, float* o, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    o[2*i] = a[i];
    i += n;
    o[2*i+1] = a[i];
}
"""
    assert lint(src, "CL203") == []


def test_a_conditional_store_in_the_loop_is_not_a_kept_store():
    src = """
__global__ void k(const float* w, float* o, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = 0; j < n; j++) if (w[j] > 0.0f) o[i] += w[j];
}
"""
    assert lint(src, "CL203") == []


def test_gpu_timing_of_every_fixture_finding_is_recorded_and_never_slower():
    """fixtures/CL203/timing.json (tools/gputruth/restrict_timing.py on an H100): each
    flagged fixture kernel, as written and fixed, same output, the fix never slower."""
    import json
    timing = json.loads((ROOT / "fixtures" / "CL203" / "timing.json").read_text())
    counts = json.loads((ROOT / "fixtures" / "CL203" / "counts.json").read_text())
    flagged = {r["kernel"] for r in counts["records"] if r["file"].endswith("aliasing.cu")}
    timed = {k["kernel"]: k for k in timing["kernels"]}
    assert flagged <= set(timed), flagged - set(timed)
    for name in flagged:
        k = timed[name]
        assert k["same_output"] in (True, None), k          # None: atomics, order varies
        assert k["ratio"] >= 0.98, k
    assert sum(timed[n]["ratio"] > 1.05 for n in flagged) >= 4
    assert "H100" in timing["device"]


def test_read_only_path_finding_names_a_target_that_has_the_path():
    """sm_30 has no read-only data cache (non-coherent LDG needs sm_32): a unit built for
    sm_30 alone gets no read-only-path finding, one built for sm_35 does (triage: chainer
    rnn.cu was told 'the read-only data cache of sm_30')."""
    from cudalint.config import Settings
    from cudalint.engine import lint_bytes
    src = (b"__global__ void copy(float* out, float* in, int n) {\n"
           b"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           b"  if (i < n) out[i] = in[i];\n}\n")

    def cl203(arch):
        s = Settings(select=("CL203",), arch=arch, arch_set=True)
        return [d for d in lint_bytes("k.cu", src, s, "cuda").diagnostics if d.code == "CL203"]
    assert cl203("sm_30") == []
    found = cl203("sm_35")
    assert len(found) == 1 and "sm_35" in found[0].message


SWAP2 = """
__global__ void swap(float2* out, const float2* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i].x = in[i].y;
    out[i].y = in[i].x;
}
"""


def test_split_vector_load_message_states_the_loads_and_their_widths():
    [d] = lint(SWAP2, "CL203")
    assert d.message.startswith(
        "`in[i]` is read with 2 loads (4 bytes each) per thread instead of one 8-byte load "
        "because stores through `out` may alias it: declare `in` `__restrict__`")
    assert d.metrics["kind"] == "split_load" and d.metrics["loads"] == 2
    assert d.metrics["load_bytes"] == [4, 4] and d.metrics["load_bytes_fixed"] == [8]
    assert d.fix is not None and not d.fix.is_safe
    assert lint(SWAP2, "CL205") == []                  # CL203 has it


def test_split_vector_loads_follow_the_fields_nvcc_tells_apart():
    # reversed float4: x+y and z+w still merge (a store to another field of the same
    # struct type does not block), measured 2 x LDG.E.64
    rev = SWAP2.replace("float2", "float4").replace(
        "out[i].x = in[i].y;\n    out[i].y = in[i].x;",
        "out[i].w = in[i].x; out[i].z = in[i].y; out[i].y = in[i].z; out[i].x = in[i].w;")
    [d] = lint(rev, "CL203")
    assert d.metrics["load_bytes"] == [8, 8] and d.metrics["load_bytes_fixed"] == [16]
    # field order: nvcc merges without __restrict__ (LDG.E.128): nothing to report
    order = rev.replace("out[i].w = in[i].x; out[i].z = in[i].y; out[i].y = in[i].z; "
                        "out[i].x = in[i].w;",
                        "out[i].x = in[i].x; out[i].y = in[i].y; out[i].z = in[i].z; "
                        "out[i].w = in[i].w;")
    assert lint(order, "CL203") == []
    # a float* store may write any field: field order splits too
    scalar = order.replace("float4* out", "float* out").replace(
        "out[i].x = in[i].x; out[i].y = in[i].y; out[i].z = in[i].z; out[i].w = in[i].w;",
        "out[4*i] = in[i].x; out[4*i+1] = in[i].y; out[4*i+2] = in[i].z; "
        "out[4*i+3] = in[i].w;")
    [d] = lint(scalar, "CL203")
    assert d.metrics["loads"] == 4 and d.metrics["type"] == "float4"


def test_split_vector_loads_of_aligned_structs_only():
    aligned = "struct __align__(8) P { float a, b; };\n" + SWAP2.replace(
        "float2", "P").replace(".x", ".a").replace(".y", ".b")
    [d] = lint(aligned, "CL203")
    assert d.metrics["type"] == "P"
    # without __align__ the struct is aligned to 4: never one vector load
    assert lint(aligned.replace("__align__(8) ", ""), "CL203") == []


def test_split_vector_loads_need_straight_line_code_and_a_thread_index():
    branchy = SWAP2.replace("out[i].y = in[i].x;", "if (n > 4) out[i].y = 1.0f;\n"
                            "    out[i].y += in[i].x;")
    assert lint(branchy, "CL203") == []
    uniform = SWAP2.replace("in[i]", "in[blockIdx.x]")
    assert lint(uniform, "CL203") == []


def test_gpu_timing_of_every_split_vector_load_fixture_is_recorded_and_never_slower():
    """fixtures/CL203/vector_timing.json (tools/gputruth/restrict_timing.py --fixture
    vector on an H100): each flagged kernel of vector_split.cu at 2^24 and 2^18
    elements, as written and fixed, same output, the fix never slower."""
    import json
    timing = json.loads((ROOT / "fixtures" / "CL203" / "vector_timing.json").read_text())
    counts = json.loads((ROOT / "fixtures" / "CL203" / "counts.json").read_text())
    flagged = {r["kernel"] for r in counts["records"]
               if r["file"].endswith("vector_split.cu")}
    timed = {k["kernel"]: k for k in timing["kernels"]}
    assert len(flagged) >= 10 and "H100" in timing["device"]
    for name in flagged:
        for n in timing["n"]:
            k = timed[f"{name}@{n}"]
            assert k["same_output"] is True and k["ratio"] >= 0.98, k
    big = [timed[f"{name}@{timing['n'][0]}"]["ratio"] for name in flagged]
    assert min(big) > 1.05


def test_no_split_vector_load_across_a_barrier_an_atomic_or_a_call():
    # measured: nvcc merges none of these even with __restrict__ (two ld.global.nc.f32)
    for between in ("__syncthreads();", "atomicAdd(o2 + i, a);", "ext(o2 + i, a);"):
        src = ("__device__ __noinline__ void ext(float* p, float v) { p[0] = v; }\n"
               "__global__ void k(float2* out, const float2* in, float* o2)\n{\n"
               "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
               f"    float a = in[i].x; o2[i] = a; {between} out[i].x = a + in[i].y;\n}}\n")
        assert lint(src, "CL203") == [], between
    plain = src.replace(" ext(o2 + i, a);", "")
    [d] = lint(plain, "CL203")
    assert d.metrics["aliased_by"] == ["o2"]
