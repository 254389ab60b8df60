"""CL204's advice for a per-thread histogram that the block only adds together (fastmoe's
expert count, sheet-newcorpus12 W1): one shared histogram per block with shared-memory
atomics, not "shared memory is no way out" (one copy per thread does not fit, one per
block does)."""
from __future__ import annotations

import json
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_text

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "CL204" / "block_histogram.cu"


def _found(text: str) -> dict[int, object]:
    return {d.row: d for d in lint_text("h.cu", text, Settings(select=("CL204",)),
                                        "cuda").diagnostics if d.code == "CL204"}


def test_counts_the_block_adds_together_get_one_shared_histogram():
    found = _found(FIXTURE.read_text())
    hist = found[16]
    assert hist.metrics["remedy"] == "block_histogram"
    assert "`__shared__ int res[256];`, 1024 bytes" in hist.message
    assert "atomicAdd(&res[...], 1)" in hist.message
    assert "no way out" not in hist.message
    # bins written out per thread: the slices remedy, not this one
    assert found[35].metrics["remedy"] == "shared"


def test_a_bin_read_outside_a_combining_loop_is_not_a_block_histogram():
    # the thread also uses its own count (a per-thread result): the copies differ
    text = FIXTURE.read_text().replace(
        "        if (threadIdx.x % 32 == 0) atomicAdd(expert_count + i, x);\n    }\n",
        "        if (threadIdx.x % 32 == 0) atomicAdd(expert_count + i, x);\n    }\n"
        "    expert_count[threadIdx.x] += res[threadIdx.x % E];\n", 1)
    assert "res[threadIdx.x % E]" in text
    assert _found(text)[16].metrics["remedy"] != "block_histogram"


def test_a_plain_store_of_data_is_not_a_count():
    text = FIXTURE.read_text().replace("res[idx - lo] += 1;", "res[idx - lo] = i;")
    assert _found(text)[16].metrics["remedy"] != "block_histogram"
