"""CL202's model of ptxas's vector shared loads against the machine code nvcc emits (no
GPU needed): fixtures/CL202/vectorised.cu is built for sm_90, and on the source line of
each flagged or `ok` access SASS must hold LDS.128 exactly where the lane model merged
the thread's unrolled consecutive loads into one 16-byte access (metric
``vector_bytes``, or the conflict-free `ok` line that only the merge explains), and
scalar LDS where it did not (``#pragma unroll 1``, a first element off 16-byte
alignment)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cudalint.config import Settings
from fixture_support import gputruth, lint_fixture

ROOT = Path(__file__).resolve().parent.parent
truth = gputruth("readonly_sass")

PROBLEM = truth.tools_problem()
FIXTURE = ROOT / "fixtures" / "CL202" / "vectorised.cu"
def _line(kernel: str) -> int:
    lines = FIXTURE.read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if f" {kernel}(" in l)
    return next(i for i in range(start, len(lines)) if "acc[i] +=" in lines[i]) + 1


def test_vector_metric_on_the_kernels_the_model_merges():
    result = lint_fixture(FIXTURE, {"CL202"})
    rows = {d.row: d for d in result.diagnostics if d.code == "CL202"}
    assert rows[_line("rows32_vectorised_conflict")].metrics.get("vector_bytes") == 16
    for k in ("rows16_rolled", "rows17_unaligned"):
        assert "vector_bytes" not in rows[_line(k)].metrics
    assert _line("rows16_vectorised") not in rows


@pytest.mark.skipif(PROBLEM is not None, reason=f"SASS check skipped: {PROBLEM}")
def test_lds128_exactly_where_the_model_merges(tmp_path):
    cubin, _ = truth.build(FIXTURE.read_text(), "vectorised", tmp_path)
    loads = truth.global_loads(cubin, prefixes=("LDS",))

    def ops(kernel):
        line = _line(kernel)
        return [op for op, row in loads[kernel] if row == line]
    # per pass: A's loads (8 rows x 16 elements per thread) and B's 64 scalar ones
    for kernel in ("rows16_vectorised", "rows32_vectorised_conflict"):
        got = ops(kernel)
        assert got.count("LDS.128") == 32 and got.count("LDS") == 64, (kernel, got)
    rolled = ops("rows16_rolled")
    assert "LDS.128" not in rolled and rolled.count("LDS") >= 8, rolled
    # one word past alignment: ptxas covers elements 1-3 with an LDS.128 of the aligned
    # chunk and loads element 4 of each row alone (8 rows): the scalar part the model
    # reports (4-way) is there, beside B's 16 scalar loads
    unaligned = ops("rows17_unaligned")
    assert unaligned.count("LDS") == 16 + 8, unaligned
