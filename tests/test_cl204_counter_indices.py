"""CL204 on indices built from loop counters (sheet-newcorpus4 W3-W5,
fixtures/CL204/counter_indices.cu): a count reset before triangular constant loops, a local
array holding loop-counter values, and a loop counter kept in an array element are constants
once the constant loops unroll, so ptxas keeps the array in registers; their look-alikes,
indexed by data, are in local memory. CL204 must report a kernel exactly where ptxas gives
it a stack frame (checked with ptxas where nvcc is installed)."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from cudalint.config import Settings
from cudalint.engine import lint_text

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures/CL204/counter_indices.cu"
REGISTERS = {"tri", "perm", "corner"}
LOCAL = {"tri_data", "perm_data", "corner_data"}


def _reported_kernels() -> set[str]:
    src = FIXTURE.read_text()
    s = replace(Settings(), select=("CL204",), arch="sm_90", arch_set=True)
    rows = [d.row for d in lint_text(str(FIXTURE), src, s, "cuda").diagnostics
            if d.code == "CL204"]
    starts = [(i + 1, m.group(1)) for i, line in enumerate(src.splitlines())
              for m in [re.match(r"__global__ void (\w+)\(", line)] if m]
    return {[k for start, k in starts if start <= row][-1] for row in rows}


def test_counter_indices_are_not_reported_and_data_indices_are():
    assert _reported_kernels() == LOCAL


def test_the_messages_of_the_look_alikes_name_data():
    src = FIXTURE.read_text()
    s = replace(Settings(), select=("CL204",), arch="sm_90", arch_set=True)
    msgs = [d.message for d in lint_text(str(FIXTURE), src, s, "cuda").diagnostics]
    assert any("a running count, stepped under a condition that depends on data" in m
               for m in msgs)
    assert any("loaded from memory (`pi[0]`)" in m for m in msgs)
    assert any("loaded from memory (`o[0]`)" in m for m in msgs)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found")
def test_reported_exactly_where_ptxas_gives_a_stack_frame(tmp_path):
    out = subprocess.run(["nvcc", "-arch=sm_90", "-Xptxas", "-v", "-c", str(FIXTURE),
                          "-o", str(tmp_path / "k.o")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    frames = {}
    kernel = None
    for line in out.stderr.splitlines():
        m = re.search(r"Compiling entry function '_Z\d+(\w+?)P", line)
        if m:
            kernel = m.group(1)
        m = re.search(r"(\d+) bytes stack frame", line)
        if m and kernel is not None:
            frames[kernel] = int(m.group(1))
            kernel = None
    assert set(frames) == REGISTERS | LOCAL
    assert {k for k, f in frames.items() if f > 0} == LOCAL
    assert _reported_kernels() == LOCAL
