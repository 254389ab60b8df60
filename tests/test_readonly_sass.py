"""CL203/CL204/CL205 against the machine code nvcc emits (no GPU needed).

CL203: every fixture is built as written and after ``--unsafe-fixes``; on the source lines
of each finding (``nvdisasm -g``) SASS must hold as many LDG (reloads, split vector
loads, with the widths the message states) or STG (kept stores) as the message says as
written, and one once fixed; the vector look-alikes execute the same loads with every
read-only pointer ``const __restrict__``.
CL205: every fixture is built as written and after cudalint's own fixes (fix_text, the
code behind ``--fix`` and ``--unsafe-fixes``). For each flagged parameter, its loads
(SASS ``LDG`` instructions on the source lines of its load sites, via ``nvdisasm -g``)
must be off the read-only path as written and all ``LDG...CONSTANT`` once fixed.
CL204: every flagged kernel has a ptxas stack frame, every look-alike kernel none.
The recomputed facts must also equal the committed ones (fixtures/CL203/counts.json,
fixtures/CL205/sass.json, fixtures/CL204/stack.json, written by tools/gputruth/readonly_sass.py) when the same
nvcc version produced them.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixture_support import gputruth

ROOT = Path(__file__).resolve().parent.parent
truth = gputruth("readonly_sass")

PROBLEM = truth.tools_problem()
needs_tools = pytest.mark.skipif(PROBLEM is not None, reason=f"SASS check skipped: {PROBLEM}")


@pytest.fixture(scope="module")
def counts(tmp_path_factory):
    return truth.cl203_records(tmp_path_factory.mktemp("cl203"))


@pytest.fixture(scope="module")
def sass(tmp_path_factory):
    return truth.cl205_records(tmp_path_factory.mktemp("cl205"))


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    return truth.cl204_records(tmp_path_factory.mktemp("cl204"))


@needs_tools
def test_every_cl203_count_is_what_sass_executes_and_the_fix_leaves_one(counts):
    kinds = {r["kind"] for r in counts["records"]}
    assert kinds == {"reload", "kept_store", "split_load"} and len(counts["records"]) >= 16
    for rec in counts["records"]:
        where = f"{rec['file']} {rec['kernel']}({rec['param']}) {rec['element']}"
        if rec["kind"] == "split_load":
            continue            # below: counts and widths
        if rec["predicted"] is not None:
            assert rec["original"] == rec["predicted"], (where, rec)
        else:                   # a run-time trip count: one store per unrolled copy
            assert rec["original"] > 1, (where, rec)
        assert rec["fixed"] == 1, (where, rec)


@needs_tools
def test_every_split_vector_load_count_and_width_is_what_sass_executes(counts):
    # loads of the fields of one vector element: as many LDG, of the widths the
    # message states, as written; the fixed kernel's vector load(s) after the fix
    split = [r for r in counts["records"] if r["kind"] == "split_load"]
    assert len(split) >= 10
    for rec in split:
        where = f"{rec['file']} {rec['kernel']}({rec['param']}) {rec['element']}"
        assert rec["predicted"] > rec["predicted_fixed"], where
        if rec["in_loop"]:      # a constant trip count, unrolled: per iteration
            trips = rec["fixed"] // rec["predicted_fixed"]
            assert trips >= 1 and rec["fixed"] == trips * rec["predicted_fixed"], rec
            assert rec["original"] == trips * rec["predicted"], rec
            assert rec["original_bytes"] == sorted(rec["predicted_bytes"] * trips), rec
            assert rec["fixed_bytes"] == sorted(rec["predicted_fixed_bytes"] * trips), rec
        else:
            assert rec["original"] == rec["predicted"], (where, rec)
            assert rec["original_bytes"] == rec["predicted_bytes"], (where, rec)
            assert rec["fixed"] == rec["predicted_fixed"] == 1, (where, rec)
            assert rec["fixed_bytes"] == rec["predicted_fixed_bytes"], (where, rec)
        # the stores are split too (or already scalar: a float* written)
        assert rec["fixed_STG"] <= rec["original_STG"], rec


@needs_tools
def test_vector_look_alikes_execute_the_same_loads_with_restrict(counts):
    got = [r for r in counts["lookalikes"] if r["file"].endswith("vector_look_alikes.cu")]
    assert len(got) >= 9
    for rec in got:
        assert (rec["LDG"], rec["STG"]) == (rec["LDG_restrict"], rec["STG_restrict"]), rec
    by = {r["kernel"]: r for r in got}
    for kernel in ("scale4", "scale4_mirror", "swap_via_locals", "swap_whole"):
        assert by[kernel]["LDG"] == 1, by[kernel]       # merged without __restrict__


@needs_tools
def test_cl203_look_alikes_that_restrict_or_shared_memory_already_settle(counts):
    got = {r["kernel"]: r for r in counts["lookalikes"]}
    for kernel in ("split_restrict", "split_out_restrict", "via_shared", "copy_once"):
        assert got[kernel]["LDG"] == 1, got[kernel]
    for kernel in ("gemv_register", "gemv_restrict"):
        assert got[kernel]["STG"] == 1, got[kernel]


@needs_tools
def test_every_cl205_fix_moves_the_loads_to_the_read_only_path(sass):
    assert len(sass["records"]) >= 15
    for rec in sass["records"]:
        where = f"{rec['file']} {rec['kernel']}({rec['param']})"
        assert rec["original"], f"{where}: no load of the parameter found in SASS"
        assert not any(truth.is_read_only_path(op) for op in rec["original"]), \
            f"{where}: already on the read-only path as written: {rec['original']}"
        assert rec["unsafe_fix"] and all(truth.is_read_only_path(op)
                                         for op in rec["unsafe_fix"]), \
            f"{where}: not all loads use LDG...CONSTANT after the fixes: {rec['unsafe_fix']}"
        assert len(rec["unsafe_fix"]) == len(rec["original"]), where


@needs_tools
def test_const_alone_does_not_reach_the_read_only_path(sass):
    # why __restrict__ is needed (and the reason the rule offers it): RULES.md's claim
    for rec in sass["records"]:
        assert not any(truth.is_read_only_path(op) for op in rec["safe_fix"]), rec


@needs_tools
def test_fixed_fixtures_are_clean_and_compile(tmp_path):
    from cudalint.engine import lint_text
    for path in sorted((ROOT / "fixtures" / "CL205").glob("*.cu")):
        _, unsafe = truth.fixed_texts(path)
        left = [d for d in lint_text(str(path), unsafe, truth._settings("CL205"),
                                     "cuda").diagnostics if d.code == "CL205"]
        # what stays flagged could not be made const (an explicit instantiation)
        assert all("const" in d.message and d.fix is None for d in left), left
        truth.build(unsafe, path.stem, tmp_path)


@needs_tools
def test_cl204_flags_exactly_the_kernels_with_a_stack_frame(stack):
    assert len(stack["records"]) >= 10
    for rec in stack["records"]:
        assert rec["stack_frame_bytes"] is not None, rec
        assert rec["flagged"] == (rec["stack_frame_bytes"] > 0), rec


@needs_tools
@pytest.mark.parametrize("name", ["counts", "sass", "stack"])
def test_recorded_facts_are_reproduced(name, request):
    now = request.getfixturevalue(name)
    path = {"counts": truth.COUNTS_JSON, "sass": truth.SASS_JSON,
            "stack": truth.STACK_JSON}[name]
    recorded = json.loads(path.read_text())
    if recorded["nvcc"] != now["nvcc"]:
        pytest.skip(f"recorded with nvcc {recorded['nvcc']}, this is {now['nvcc']}")
    assert recorded == now


def test_sass_parsing_reads_constant_forms():
    assert truth.is_read_only_path("LDG.E.CONSTANT")
    assert truth.is_read_only_path("LDG.E.128.CONSTANT")
    assert truth.is_read_only_path("LDG.E.64.CONSTANT")
    assert not truth.is_read_only_path("LDG.E")
    assert not truth.is_read_only_path("LDG.E.STRONG.SYS")
    assert not truth.is_read_only_path("LDC.64")


@needs_tools
def test_split_vector_load_counts_hold_on_random_kernels(tmp_path):
    # tools/gputruth/vector_split_fuzz.py: random orders of field loads and stores,
    # compared with nvcc's PTX as written and with __restrict__
    fuzz = gputruth("vector_split_fuzz")
    got = fuzz.run_seed(11, 100, tmp_path)
    assert got["wrong"] == 0, got["wrong_cases"]
    assert got["split_load_right"] >= 25 and got["missed"] <= 15, got
    recorded = json.loads((ROOT / "fixtures" / "CL203" / "vector_fuzz.json").read_text())
    assert sum(s["wrong"] for s in recorded["seeds"]) == 0
    assert sum(s["split_load_right"] for s in recorded["seeds"]) >= 600
