"""CL201 messages on the eighth triage's wrong classes (bench/triage/sheet-newcorpus8.md,
section "Classes"): where the other bytes of each sector the warp fetches are used by the
thread's own later iterations, by other warps of the block or by other blocks, the message
must not say "of the N bytes a warp moves here, the kernel reads M" with the one-field
(SoA) remedy; the sector figure stays.

- W5 (fixtures/CL201/long_row_walk.cu): a row walked across a constant-trip loop of more
  than 16 iterations, element 0 written before it: the row-walk message.
- W1, W2 (fixtures/CL201/filled_by_neighbours.cu): a column walk whose sectors the block's
  other rows (threadIdx.y) and the next block rows (blockIdx.y) fill, or the thread's own
  loop plus the next block rows: the column-walk message naming those indices.
  Look-alikes that leave bytes of each sector to nobody keep the unused-bytes message.
- N4 (fixtures/CL201/short_rows.cu): short rows stay silent where their length is known
  (at most 36 bytes: fixtures/CL201/record_loop.json); a run-time length stays a finding
  (the same shape with long rows was judged right in that triage).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import json

from cudalint.config import Settings
from cudalint.engine import lint_text
from cudalint.rules.memory.cl201_uncoalesced_global_access import (SHORT_RECORD_BYTES,
                                                                   UncoalescedGlobalAccess)

ROOT = Path(__file__).resolve().parents[1]


def _findings(name: str, every: bool = False) -> dict[int, object]:
    path = ROOT / "fixtures/CL201" / name
    s = replace(Settings(), select=("CL201",))
    saved = UncoalescedGlobalAccess.report_whole_records
    UncoalescedGlobalAccess.report_whole_records = every
    try:
        res = lint_text(str(path), path.read_text(), s, "cuda")
    finally:
        UncoalescedGlobalAccess.report_whole_records = saved
    return {d.row: d for d in res.diagnostics if d.code == "CL201"}


def test_w5_a_long_constant_row_walk_is_a_row_walk():
    d = _findings("long_row_walk.cu")[19]
    assert d.metrics["wasted"] == "row_walk" and d.metrics["loop_line"] == 16
    assert "each thread writes its own row across the loop at line 16" in d.message
    assert "the kernel writes" not in d.message and "one field" not in d.message
    assert d.metrics["sectors_per_request"] == 32
    assert d.metrics["ideal_sectors_per_request"] == 8


def test_w5_one_field_in_a_long_loop_keeps_the_unused_bytes_message():
    d = _findings("long_row_walk.cu")[33]
    assert d.metrics["wasted"] == "unused_bytes"
    assert "of the 1024 bytes a warp moves here, the kernel writes 256" in d.message


def test_w1_rows_of_the_block_and_next_blocks_fill_the_sectors():
    found = _findings("filled_by_neighbours.cu")
    d = found[15]
    assert d.metrics["wasted"] == "column_walk"
    assert d.metrics["neighbour_index"] == "idw"
    assert d.metrics["neighbour_axis"] == "threadIdx.y"
    assert d.metrics["more_neighbours"] == [{"index": "idy", "axis": "blockIdx.y"}]
    assert d.metrics["sectors_per_request"] == 32     # the figure is unchanged
    assert "other warps of the block and other blocks" in d.message
    assert "`idw`, from threadIdx.y, and of `idy`, from blockIdx.y" in d.message
    assert "this mix was not measured" in d.message
    assert "bytes a warp moves here" not in d.message and "SoA" not in d.message


def test_w2_the_thread_loop_and_next_blocks_fill_the_sectors():
    d = _findings("filled_by_neighbours.cu")[25]
    assert d.metrics["wasted"] == "column_walk"
    assert (d.metrics["neighbour_index"], d.metrics["neighbour_axis"]) == ("idy", "blockIdx.y")
    assert "more_neighbours" not in d.metrics
    assert "other blocks read the neighbouring elements" in d.message
    assert "bytes a warp moves here" not in d.message and "SoA" not in d.message
    assert d.metrics["sectors_per_request"] == 32


def test_look_alikes_that_leave_bytes_to_nobody_keep_the_waste():
    found = _findings("filled_by_neighbours.cu")
    for row in (37, 47):
        assert found[row].metrics["wasted"] == "unused_bytes", row
        assert "bytes a warp moves here" in found[row].message


def test_n4_short_rows_of_known_length_are_records_read_whole():
    runs = json.loads((ROOT / "fixtures/CL201/record_loop.json").read_text())["runs"]
    for k in (3, 8, 9):             # the shapes measured at no cost
        rows, cols = runs[f"rows_K{k}"]["median_ms"], runs[f"cols_K{k}"]["median_ms"]
        assert rows <= 1.05 * cols, k
        assert 4 * k <= SHORT_RECORD_BYTES
    slow = runs["rows_K32"]["median_ms"] / runs["cols_K32"]["median_ms"]
    assert slow > 2.4
    found = _findings("short_rows.cu")
    assert not {19, 31, 42} & set(found)            # D = 3 (template, launch), M = 8
    every = _findings("short_rows.cu", every=True)
    assert {19, 31, 42} <= set(every)               # the figures are still there


def test_n4_a_run_time_row_length_stays_a_row_walk_finding():
    d = _findings("short_rows.cu")[51]
    assert d.metrics["wasted"] == "row_walk"
    assert "rows of 9 floats or fewer (`D` <= 9) ran as fast" in d.message
    assert "rows of 32 floats or more (`D` >= 32 here)" in d.message


def test_undecided_neighbours_drop_the_unused_bytes_claim():
    # sheet-newcorpus8 #24 (a 16x16 transpose, i from blockIdx.y * blockDim.y +
    # threadIdx.y) and #6 (dev_dot, its argument moved by idw = threadIdx.y and idy =
    # blockIdx.y in the caller): other warps and blocks may read the rest of each sector
    found = _findings("undecided_neighbours.cu")
    for row, sectors in ((17, 16), (25, 32)):
        d = found[row]
        assert d.metrics["wasted"] == "undecided", row
        assert d.metrics["sectors_per_request"] == sectors, row   # the figure stays
        assert "bytes a warp moves here" not in d.message, row
        assert "SoA" not in d.message and "vector access" not in d.message, row
        assert "warp_used_bytes" not in d.metrics, row
        assert "other warps or blocks may read the rest of each sector" in d.message, row


def test_fields_read_by_the_warp_itself_keep_the_unused_bytes_claim():
    # a flat index over a 32x4 block (the next warp reads the next records) in a device
    # function, and threadIdx.x alone: one field of 12-byte records, 128 of 384 bytes
    found = _findings("undecided_neighbours.cu")
    for row in (42, 55):
        d = found[row]
        assert d.metrics["wasted"] == "unused_bytes", row
        assert "of the 384 bytes a warp moves here, the kernel reads 128" in d.message, row
        assert "SoA" in d.message, row
    assert found[35].metrics["wasted"] == "column_walk"


# #11 (deepmd-kit prod_virial.cu:63): block 16x9, lanes 16-31 read what lanes 0-15 read in
# the warps whose two threadIdx.y share `idz / 3`, other addresses in the others
DUPLICATE_LANES = """
__global__ void virial(float* v, const float* nd, const float* in_deriv, int nnei) {
  const int ndescrpt = nnei * 4;
  const int idx = blockIdx.x, idy = threadIdx.x, idz = threadIdx.y;
  if (idy >= nnei) return;
  float t = 0.f;
  for (int idw = 0; idw < 4; ++idw)
    t += nd[idx * ndescrpt + idy * 4 + idw] *
         in_deriv[idx * ndescrpt * 3 + (idy * 4 + idw) * 3 + idz / 3];
  atomicAdd(v + idz, t);
}
void go(float* v, const float* nd, const float* i, int n) { virial<<<n, dim3(16, 9)>>>(v, nd, i, n); }
"""


def test_11_the_least_sectors_count_lanes_that_share_an_address_once():
    s = replace(Settings(), select=("CL201",))
    res = lint_text("v.cu", DUPLICATE_LANES, s, "cuda")
    (d,) = [d for d in res.diagnostics if "in_deriv" in d.message]
    # 16 distinct floats (2 sectors) in warps 0, 2, 3; 32 (4 sectors) in warp 1
    assert d.metrics["least_sectors_per_request"] == 2
    assert d.metrics["least_sectors_per_request_max"] == 4
    assert "instead of 2-4 " in d.message
    assert d.metrics["ideal_sectors_per_request"] == 4       # the threshold's base


def test_half_a_warp_needs_half_the_sectors():
    d = _findings("../CL201/strides.cu")[159]
    assert d.metrics["least_sectors_per_request"] == 2
    assert "least_sectors_per_request_max" not in d.metrics
    assert "16 32-byte sectors per request instead of 2 " in d.message
