"""CL204's shared-memory cutoff against the H100 record fixtures/CL204/shared_cutoff.json
(written by tools/gputruth/worth_acting.py from worth_acting.cu): with the block unknown,
the advice "one slice per thread in shared memory" is offered only if at least
MIN_SHARED_THREADS threads' copies fit one block, and that number is the one the record
measures: the smallest threads-fitting count at and above which every measured array size
ran at least 5% faster in shared slices than in local memory, for a data-dependent index and
for a run-time loop counter. The record's kernels are what the rule speaks of: ptxas gives
each local variant a stack frame of the array's size and each shared variant none."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cudalint.config import Settings
from cudalint.engine import lint_text
from cudalint.rules.memory.cl204_local_memory_array import MIN_SHARED_THREADS

ROOT = Path(__file__).resolve().parents[1]
RECORD = json.loads((ROOT / "fixtures/CL204/shared_cutoff.json").read_text())
RUNS = RECORD["runs"]
SIZES = (64, 128, 256, 512, 1024, 2048)          # 32-bit words per thread
OPTIN_SM90 = 232448                              # 227 KB: a block's shared memory, sm_90
BAR = 0.05


def _gain(shape: str, e: int) -> float:
    return RUNS[f"{shape}_local_{e}"]["median_ms"] / RUNS[f"{shape}_shared_{e}"]["median_ms"] - 1


def _measured_cutoff() -> int | None:
    best = None
    for e in SIZES:                              # most threads fitting first
        if min(_gain("hist", e), _gain("scan", e)) < BAR:
            break
        best = OPTIN_SM90 // (4 * e)
    return best


def test_the_record_is_an_h100_run_whose_variants_agree():
    assert RECORD["gpu"].startswith("NVIDIA H100")
    assert "check local_shared hist_mismatches=0 scan_maxreldiff=0" in RECORD["checks"]


@pytest.mark.parametrize("e", SIZES)
def test_each_local_variant_has_the_array_in_its_stack_frame(e):
    for shape in ("hist", "scan"):
        local, shared = RUNS[f"{shape}_local_{e}"], RUNS[f"{shape}_shared_{e}"]
        assert local["ptxas"]["stack_frame"] == 4 * e
        assert shared["ptxas"]["stack_frame"] == 0
        assert local["ptxas"]["spill_stores"] == shared["ptxas"]["spill_stores"] == 0
        # the shared variant ran with one slice per thread of its block
        assert shared["smem"] == 4 * e * shared["block"]


def test_the_cutoff_is_the_measured_one():
    assert _measured_cutoff() == MIN_SHARED_THREADS == RECORD["cutoff"]
    # the cutoff used before, 128 threads, withheld the advice from sizes that gain
    assert OPTIN_SM90 // (4 * 512) < 128 and min(_gain("hist", 512), _gain("scan", 512)) > 1


def _lint(src: str, arch: str = "sm_90"):
    s = replace(Settings(), select=("CL204",), arch=arch, arch_set=True)
    return [d for d in lint_text("k.cu", src, s, "cuda").diagnostics if d.code == "CL204"]


_KERNEL = """
__global__ void hist(const int* keys, int* out, int n)
{
    int bins[%d];
    for (int e = 0; e < n; ++e) bins[e] = 0;
    for (int i = 0; i < n; ++i) bins[keys[i] & %d]++;
    out[threadIdx.x] = bins[keys[0] & %d];
}
"""


@pytest.mark.parametrize("words,fit,offered", [(512, 113, True), (1024, 56, True),
                                               (2048, 28, False)])
def test_advice_follows_the_measured_cutoff(words, fit, offered):
    """2 KB and 4 KB per thread (113 and 56 threads fit 227 KB) are offered shared slices,
    as measured (4.2x and 2.19x faster at worst); 8 KB (28 fit) is not (0.75x)."""
    [d] = _lint(_KERNEL % (words, words - 1, words - 1))
    assert ("keep it in dynamic shared memory, one slice per thread, for blocks of at "
            f"most {fit} threads" in d.message) is offered
    assert ("shared" in d.metrics["remedy"].split("+")) is offered
    if not offered:
        assert f"only for blocks of at most {fit} threads" in d.message
