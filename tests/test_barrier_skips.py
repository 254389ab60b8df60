"""CL103 (mismatched barriers) and CL106 (barriers skipped by exiting threads): the
barrier order of a block run, the static path of the skipping threads, the pre-Volta
setting and the hang recorded on an H100 (fixtures/CL103/truth.json)."""
from __future__ import annotations

import json
from dataclasses import replace

from cudalint.analysis.sync.barrier_order import mismatched_barriers
from cudalint.analysis.sync.skipped_barriers import SkippedBarriers, pre_volta
from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.engine import lint_bytes
from cudalint.sources.base import SourceFile, Unit
from fixture_support import FIXTURES


def _ctx(src: str, settings: Settings | None = None) -> UnitContext:
    return UnitContext(Unit(SourceFile("t.cu", src, "cuda"), src), settings or Settings())


def _codes(src: str, arch: str = "sm_90") -> list[tuple[int, str]]:
    settings = replace(Settings(), select=("CL103", "CL106"), arch=arch)
    res = lint_bytes("t.cu", src.encode(), settings, "cuda")
    return sorted((d.row, d.code) for d in res.diagnostics)


class _N:
    """A stand-in barrier node: the order analysis reads only ``id``."""

    def __init__(self, i):
        self.id = i


def test_barrier_order_prefixes_match_and_partings_do_not():
    a, b, c = _N(1), _N(2), _N(3)
    # threads 0-1 reach a then b, thread 2 only a (then exits): a prefix, matched
    assert mismatched_barriers([(a, 0b111, True), (b, 0b011, True)]) == {}
    # if/else: threads 0-1 at a, thread 2 at b, then all at c
    got = mismatched_barriers([(a, 0b011, True), (b, 0b100, True), (c, 0b111, True)])
    assert set(got) == {1, 2} and got[1][1] is b and got[2][1] is a
    # a loop's barrier a in two iterations: thread 2 skips the first (continue)
    got = mismatched_barriers([(a, 0b011, True), (a, 0b111, True)])
    assert set(got) == {1} and got[1][1] is a


def test_barrier_order_stops_at_the_first_uncertain_event():
    a, b = _N(1), _N(2)
    assert mismatched_barriers([(a, 0b011, True), None, (b, 0b100, True)]) == {}
    assert mismatched_barriers([(a, 0b011, True), (b, 0b100, False)]) == {}


_KERNEL = """
__global__ void k(float* o, const float* in, int n) {
    __shared__ float s[128];
    unsigned tid = threadIdx.x;
    s[tid] = in[tid];
    if (tid < n) {
        __syncthreads();
        o[tid] = s[127 - tid];
    }
    %s
}
void h(float* o, const float* in, int n) { k<<<1, 128>>>(o, in, n); }
"""


def test_branch_then_barrier_found_without_running_it():
    """n is a parameter: the runs take it large, no thread skips; the skipping threads'
    path reaches the barrier after the branch."""
    assert _codes(_KERNEL % "__syncthreads(); o[tid] += s[tid];") == [(7, "CL103")]
    assert _codes(_KERNEL % "o[tid] += 1.f;") == [(7, "CL106")]
    # a return on the way: the skipping threads may exit
    assert _codes(_KERNEL % "if (o[0] > 0.f) return; __syncthreads();") == [(7, "CL106")]
    # a barrier in both branches of a uniform if counts; in one branch only it does not
    assert _codes(_KERNEL % "if (n > 4) __syncthreads(); else __syncthreads();") == [
        (7, "CL103")]
    assert _codes(_KERNEL % "if (n > 4) __syncthreads();") == [(7, "CL106")]


def test_device_function_barrier_on_the_path():
    src = _KERNEL.replace("__global__", "__device__ void bar() { __syncthreads(); }\n"
                          "__global__") % "bar();"
    assert _codes(src) == [(8, "CL103")]


def test_pre_volta_reports_every_skipped_barrier():
    src = _KERNEL % "o[tid] += 1.f;"
    assert _codes(src, "sm_60") == [(7, "CL103")]
    assert pre_volta("sm_62") and pre_volta("sm_35") and not pre_volta("sm_70")
    assert not pre_volta("sm_90")


def test_each_skipped_barrier_gets_one_code():
    for path in sorted((FIXTURES / "CL103").glob("*.cu")) + sorted(
            (FIXTURES / "CL106").glob("*.cu")):
        ctx = _ctx(path.read_text())
        items = ctx.analysis(SkippedBarriers).items
        res = lint_bytes(str(path), path.read_bytes(),
                         replace(Settings(), select=("CL103", "CL106")), "cuda")
        rows = [d.row for d in res.diagnostics]
        assert len(rows) == len(set(rows)) == len(items), path


def test_recorded_hangs_are_cl103():
    recs = json.loads((FIXTURES / "CL103" / "truth.json").read_text())["records"]
    hung = {r["kernel"] for r in recs if r["plain_timed_out"]}
    assert hung == {"strided_loop_then_block_sum", "break_then_barrier"}
    for r in recs:
        if r["kernel"] in hung:
            assert "CL103" in r["model"] and "CL106" not in r["model"]


def test_device_function_early_return_then_caller_barrier():
    """The threads returning early from a device function go on in the kernel and wait
    at its barrier: mismatched (the run inlines the call); with no barrier after the
    call in any kernel, only CL106."""
    stage = ("__device__ void stage(float* s, const float* in, int n) {\n"
             "    if (threadIdx.x >= n) return;\n"
             "    s[threadIdx.x] = in[threadIdx.x];\n"
             "    __syncthreads();\n"
             "    s[threadIdx.x] += s[(threadIdx.x + 1) % n];\n"
             "}\n")
    kernel = ("__global__ void k(float* out, const float* in) {\n"
              "    __shared__ float s[128];\n"
              "    stage(s, in, 64);\n"
              "    %s\n"
              "    out[threadIdx.x] = s[threadIdx.x %% 64];\n"
              "}\n"
              "void h(float* o, const float* in) { k<<<1, 128>>>(o, in); }\n")
    assert _codes(stage + kernel % "__syncthreads();") == [(4, "CL103")]
    assert _codes(stage + kernel % "") == [(4, "CL106")]


def test_early_return_after_another_barrier_is_mismatched():
    """Threads that wait at a barrier of their own and then return: the others' barrier
    after the branch is mismatched with theirs (the run shows it; an early return is
    not always an exit without a barrier)."""
    src = ("__global__ void k(float* out, const float* in) {\n"
           "    __shared__ float s[128];\n"
           "    unsigned tid = threadIdx.x;\n"
           "    s[tid] = in[tid];\n"
           "    if (tid < 64) {\n"
           "        out[tid] = 1.f;\n"
           "    } else {\n"
           "        __syncthreads();\n"
           "        return;\n"
           "    }\n"
           "    __syncthreads();\n"
           "    out[tid] = s[127 - tid];\n"
           "}\n"
           "void h(float* o, const float* in) { k<<<1, 128>>>(o, in); }\n")
    assert _codes(src) == [(8, "CL103"), (11, "CL103")]
