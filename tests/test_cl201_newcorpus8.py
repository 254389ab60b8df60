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
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_text

ROOT = Path(__file__).resolve().parents[1]


def _findings(name: str) -> dict[int, object]:
    path = ROOT / "fixtures/CL201" / name
    s = replace(Settings(), select=("CL201",))
    res = lint_text(str(path), path.read_text(), s, "cuda")
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
