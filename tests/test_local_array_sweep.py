"""CL204's thresholds against ptxas: for each of the generated kernels of
tools/gputruth/local_array_sweep.py (arrays of 16 bytes to 4 KB, indexed by constants,
unrolled and run-time loop counters, thread indices, parameters and data), cudalint
reports CL204 exactly where ptxas gave the kernel a stack frame (fixtures/CL204/sweep.json,
recorded with nvcc; the comparison needs no nvcc). Also: --ptxas / --ptxas-log confirm or
drop each finding by the kernel's stack frame."""
from __future__ import annotations

import json
from dataclasses import replace

from cudalint.config import PtxasSettings, Settings
from cudalint.engine import lint_text
from fixture_support import gputruth

sweep = gputruth("local_array_sweep")


def test_cl204_reports_exactly_the_kernels_ptxas_gave_a_stack_frame():
    recorded = json.loads(sweep.SWEEP_JSON.read_text())
    flags = sweep.cudalint_flags(sweep.sweep_source())
    assert len(recorded["records"]) == len(sweep.KINDS) * len(sweep.SIZES)
    wrong = [(r["kernel"], r["stack_frame"], flags[r["kernel"]]["flagged"])
             for r in recorded["records"]
             if flags[r["kernel"]]["flagged"] != (r["stack_frame"] > 0)]
    assert wrong == []


def test_the_sweep_covers_both_outcomes_for_the_issue_shapes():
    recorded = {r["kernel"]: r for r in json.loads(sweep.SWEEP_JSON.read_text())["records"]}
    # a fully unrolled constant index or a table of constants at one: registers
    assert all(recorded[f"{k}_{s}"]["stack_frame"] == 0
               for k in ("const", "unrolled", "table_index") for s in sweep.SIZES)
    # a data index in a run-time loop: local from 32 bytes; a const uchar table: always
    assert recorded["data_loop_32"]["stack_frame"] > 0
    assert recorded["data_loop_16"]["stack_frame"] == 0
    assert all(recorded[f"const_table_{s}"]["stack_frame"] > 0 for s in sweep.SIZES)
    # one access below 512 bytes: selects (the old rule held for this shape only)
    assert recorded["param_once_256"]["stack_frame"] == 0
    assert recorded["param_once_512"]["stack_frame"] > 0


_KERNEL = """
__global__ void k(const int* __restrict__ keys, int* out, int n)
{
    int bins[32] = {0};
    for (int i = 0; i < n; ++i) bins[keys[i] & 31]++;
#pragma unroll
    for (int b = 0; b < 32; ++b) out[b] = bins[b];
}
"""
_LOG = """ptxas info    : Compiling entry function '_Z1kPKiPii' for 'sm_90'
ptxas info    : Function properties for _Z1kPKiPii
    {frame} bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers, 376 bytes cmem[0]
"""


def _with_log(tmp_path, frame: int):
    log = tmp_path / f"ptxas_{frame}.log"
    log.write_text(_LOG.format(frame=frame))
    s = replace(Settings(), select=("CL204",), root=str(tmp_path),
                ptxas=replace(PtxasSettings(), log=(str(log),)))
    return [d for d in lint_text(str(tmp_path / "k.cu"), _KERNEL, s, "cuda").diagnostics
            if d.code == "CL204"]


def test_ptxas_confirms_a_finding_with_its_stack_frame(tmp_path):
    [d] = _with_log(tmp_path, 128)
    assert "ptxas: 128-byte stack frame on sm_90" in d.message
    assert d.metrics["stack_frame_bytes"] == 128


def test_ptxas_drops_a_finding_when_the_frame_is_empty(tmp_path):
    assert _with_log(tmp_path, 0) == []
    plain = [d for d in lint_text("k.cu", _KERNEL, replace(Settings(), select=("CL204",)),
                                  "cuda").diagnostics if d.code == "CL204"]
    assert len(plain) == 1 and "ptxas" not in plain[0].message


def test_values_followed_through_locals_casts_and_masks():
    src = """
__global__ void k(const float* __restrict__ labels, int* out, int n)
{
    int counts[32] = {0};
    int c;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        c = (int)labels[j];
        c = c & 31;
        counts[c] += 1;
    }
#pragma unroll
    for (int b = 0; b < 32; ++b) out[b] = counts[b];
}
"""
    [d] = [x for x in lint_text("k.cu", src, replace(Settings(), select=("CL204",)),
                                "cuda").diagnostics if x.code == "CL204"]
    assert "`c`" in d.message and "labels[j]" in d.message
