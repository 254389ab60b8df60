"""CL201's remedy for records copied into shared memory a field at a time (mmcv's rotated
NMS, issue 13): the copy is what to change, not the layout ("stage the records through
shared memory" would name what the kernel already does)."""
from __future__ import annotations

from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_text

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "CL201" / "mmcv_records.cu"


def _cl201(text: str) -> dict[int, str]:
    found = lint_text("m.cu", text, Settings(select=("CL201",)), "cuda").diagnostics
    return {d.row: d.message for d in found if d.code == "CL201"}


def test_a_field_by_field_copy_into_shared_memory_gets_the_flat_copy():
    found = _cl201(FIXTURE.read_text())
    staged = [m for m in found.values() if "dev_boxes" in m]
    assert len(staged) == 1, found
    assert "the records already go to shared memory" in staged[0]
    assert "k < records * 6; k += blockDim.x" in staged[0]
    assert "stage the records through shared memory" not in staged[0]
    # the BEV boxes are read into registers: not this remedy
    (bev,) = [m for m in found.values() if "box_b" in m]
    assert "already go to shared memory" not in bev


def test_a_value_worked_on_before_the_shared_store_keeps_the_layout_remedy():
    text = FIXTURE.read_text().replace(
        "block_boxes[threadIdx.x * 5 + 0] = dev_boxes[(threadsPerBlock * col_start + "
        "threadIdx.x) * 6 + 0];",
        "block_boxes[threadIdx.x * 5 + 0] = 2.f * dev_boxes[(threadsPerBlock * col_start + "
        "threadIdx.x) * 6 + 0];")
    found = [m for m in _cl201(text).values() if "dev_boxes" in m]
    assert len(found) == 1, found
    assert "already go to shared memory" not in found[0]
    assert "stage the records through shared memory" in found[0]
