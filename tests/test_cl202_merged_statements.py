"""CL202 on statements ptxas merges into one vector access (issue 20, sheet-newcorpus5
W7): the vector widths the analysis predicts on fixtures/CL202/merged_statements.cu
against the SASS nvcc emits (fixtures/CL202/merged_statements.json, written by
tools/gputruth/merged_statements.py; rebuilt here when nvcc is found), and the figures
and remedies of the findings against the H100 records of the same lane patterns
(fixtures/CL202/truth.json)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalint.analysis.memory.bank_vectors import merged_statements
from cudalint.analysis.memory.figures import wavefronts
from cudalint.analysis.memory.lanes import LaneAnalysis
from cudalint.analysis.memory.loops import vector_access
from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.sources.base import SourceFile, Unit
from fixture_support import expectations, gputruth, lint_fixture

ROOT = Path(__file__).resolve().parent.parent
truth = gputruth("merged_statements", "merged_statements_truth")

FIXTURE = truth.FIXTURE
RECORD = json.loads(truth.RECORD.read_text())
MEASURED = {r["kernel"]: r for r in
            json.loads((ROOT / "fixtures" / "CL202" / "truth.json").read_text())["records"]}


def _kernel_rows() -> dict[str, tuple[int, int]]:
    lines = FIXTURE.read_text().splitlines()
    starts = [(i + 1, l.split("(")[0].split()[-1]) for i, l in enumerate(lines)
              if l.startswith("__global__")]
    ends = [s for s, _ in starts[1:]] + [len(lines) + 1]
    return {name: (s, e) for (s, name), e in zip(starts, ends)}


def _predicted() -> dict[str, set[int]]:
    """kernel -> the bytes per lane of what executes on its annotated shared lines."""
    src = FIXTURE.read_text()
    unit = Unit(SourceFile(str(FIXTURE), src, "cuda"), src)
    ctx = UnitContext(unit, Settings())
    accesses = ctx.analysis(LaneAnalysis).accesses
    merges = merged_statements(ctx, accesses)
    expect, forbid = expectations(FIXTURE)
    annotated = set(expect) | set(forbid)
    out: dict[str, set[int]] = {}
    for a in accesses:
        if a.space != "shared" or a.node.start_point[0] + 1 not in annotated:
            continue
        m = merges.get(id(a))
        stated = a if m is None else m.executed
        out.setdefault(a.kernel.name, set()).add((vector_access(stated) or stated).width)
    return out


def _sass_widths(record: dict) -> dict[str, set[int]]:
    expect, forbid = expectations(FIXTURE)
    annotated = set(expect) | set(forbid)
    rows = _kernel_rows()
    out: dict[str, set[int]] = {}
    for kernel, rec in record["kernels"].items():
        lo, hi = rows[kernel]
        elem = 8 if kernel.startswith("w7") else 4
        out[kernel] = {truth.vector_bytes(op, elem) for op, line in rec["ops"]
                       if line in annotated and lo <= line < hi}
    return out


def test_predicted_vector_widths_are_the_sass_ones():
    predicted = _predicted()
    sass = _sass_widths(RECORD)
    assert set(predicted) == set(sass) and len(sass) == 16
    assert predicted == sass
    # the record holds both outcomes: merged (8 and 16 bytes) and left scalar
    assert {16} in sass.values() and {8} in sass.values() and {4} in sass.values()


@pytest.mark.skipif(truth.sass.tools_problem() is not None,
                    reason=f"SASS check skipped: {truth.sass.tools_problem()}")
def test_record_is_what_nvcc_emits(tmp_path):
    rec = truth.records(tmp_path)
    if rec["nvcc"] != RECORD["nvcc"]:
        pytest.skip(f"nvcc {rec['nvcc']}, record made with {RECORD['nvcc']}")
    assert _sass_widths(rec) == _sass_widths(RECORD)
    assert rec["kernels"] == RECORD["kernels"] and rec["rolled"] == RECORD["rolled"]


def _findings():
    result = lint_fixture(FIXTURE, {"CL202"})
    return {d.row: d for d in result.diagnostics if d.code == "CL202"}


def _row(kernel: str, needle: str) -> int:
    lo, hi = _kernel_rows()[kernel]
    lines = FIXTURE.read_text().splitlines()
    return next(i + 1 for i in range(lo - 1, hi - 1) if needle in lines[i])


def test_w7_is_one_16_byte_store_two_way_as_measured():
    found = _findings()
    first = _row("w7_u64_pair", "cache[(threadIdx.x * 2 + r) * 2] =")
    second = _row("w7_u64_pair", "cache[(threadIdx.x * 2 + r) * 2 + 1] =")
    d = found[first]
    assert second not in found
    m = d.metrics
    assert (m["wavefronts"], m["ideal_wavefronts"], m["bank_ways"]) == (8, 4, 2)
    assert m["vector_bytes"] == 16 and m["merged_lines"] == [first, second]
    # 16-byte lanes 32 bytes apart: the H100 measured 8 wavefronts (a float4 read)
    assert MEASURED["stride2_float4"]["ld_wavefronts"] == m["wavefronts"]
    # the 8-byte pad of the scalar model would break the 16-byte alignment
    assert "by 8 bytes" not in d.message and "pad the row stride by 16 bytes" in d.message
    assert "one 16-byte store" in d.message
    # the printed pad, checked: 16-byte lanes 48 bytes apart take the ideal 4 wavefronts
    assert wavefronts([lane * 48 for lane in range(32)], 16) == 4


def test_rows_padding_keeps_the_vector_and_frees_it():
    found = _findings()
    d = found[_row("rows_f32", "tile[t][0] =")]
    assert d.metrics["vector_bytes"] == 16 and d.metrics["wavefronts"] == 32
    assert MEASURED["col_float4_32x32"]["ld_wavefronts"] == 32
    assert "tile[32][36]" in d.message and "[32][33]" not in d.message
    # the padded rows, 16-byte lanes 144 bytes apart: 4 wavefronts, as measured
    row = [lane * 36 * 4 for lane in range(32)]
    assert wavefronts(row, 16) == MEASURED["col_float4_32x36"]["ld_wavefronts"] == 4


def test_said_once_at_the_first_statement_in_source_order():
    found = _findings()
    first = _row("pair_swapped", "s[t * 4 + 1] =")
    assert found[first].metrics["vector_bytes"] == 8
    assert _row("pair_swapped", "s[t * 4] =") not in found


def test_unproven_or_interrupted_pairs_keep_the_scalar_figure():
    found = _findings()
    for kernel in ("pair_odd_start", "pair_unknown_offset", "pair_offset_difference", "pair_load_between",
                   "pair_pointer_store_between", "pair_in_branches"):
        rows = [r for r in found if _kernel_rows()[kernel][0] <= r < _kernel_rows()[kernel][1]]
        assert len(rows) == 2, kernel
        for r in rows:
            assert "vector_bytes" not in found[r].metrics
            assert found[r].metrics["bank_ways"] == 4, kernel


def test_stores_moving_with_a_kept_loop_keep_the_scalar_figure():
    """nvcc gives the same four stores of buf[l * 4 + f] in a strided loop one STS.128
    in one kernel and two STS.64 in pcn's (the record): no width is sure, so none is
    claimed, and the scalar figure stands."""
    widths = {k: {truth.vector_bytes(op, 4) for op, _ in v["ops"] if op.startswith("STS")}
              for k, v in RECORD["rolled"].items()}
    assert widths == {"rolled_outer": {16}, "rolled_nested": {8}}
    src = truth.ROLLED.read_text()
    unit = Unit(SourceFile(str(truth.ROLLED), src, "cuda"), src)
    ctx = UnitContext(unit, Settings())
    accesses = [a for a in ctx.analysis(LaneAnalysis).accesses
                if a.space == "shared" and a.is_store]
    assert len(accesses) == 8
    assert merged_statements(ctx, accesses) == {}
