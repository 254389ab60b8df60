"""The H100 record behind this session's issue-20 rule changes
(bench/triage/issue20_worth.json, tools/gputruth/issue20_worth.py): each change is checked
against the measurement it rests on, and the rule against the measured shapes."""
from __future__ import annotations

import json
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_text

ROOT = Path(__file__).resolve().parents[1]
RECORD = json.loads((ROOT / "bench" / "triage" / "issue20_worth.json").read_text())


def _records(group: str, body: str) -> list[dict]:
    return [r for r in RECORD["records"] if r["group"] == group and
            r.get("body", "").startswith(body)]


def _codes(path: str, code: str) -> dict[int, str]:
    text = (ROOT / path).read_text()
    return {d.row: d.message for d in lint_text(path, text, Settings(select=(code,)),
                                                "cuda").diagnostics if d.code == code}


def test_the_record_is_an_h100_measurement():
    assert "H100" in RECORD["gpu"]
    assert {r["group"] for r in RECORD["records"]} == {"R", "H", "B", "D"}


def test_cl402_discriminants_compute_the_same_either_way():
    # contracted and with both products rounded: not one output differs, on random rays
    # and on exactly tangent ones (b*b == a*c), so the finding's fix changes nothing
    cone = _records("D", "cone")
    assert len(cone) == 2 and all(r["differ"] == 0 and r["branch_flips"] == 0 for r in cone)
    assert _codes("fixtures/CL402/discriminants.cu", "CL402").keys() == {43}


def test_cl203_reloads_beside_loads_that_stay_gain_nothing():
    upd = _records("R", "upd_ccpi")
    assert len(upd) == 2 and all(r["ratio"] < 1.0 and r["ratio_all"] < 1.0 for r in upd)
    # where the reload is the only load left after the store, the fix pays
    assert all(r["ratio"] > 1.1 for r in _records("R", "ramp"))
    assert all(r["ratio"] > 1.04 for r in _records("R", "unpack2"))
    found = _codes("fixtures/CL203/loads_stay.cu", "CL203")
    assert sorted(found) == [26, 44], found          # upd_bx_only and ramp, not upd_bx_by


def test_cl204_one_shared_histogram_per_block_pays_and_computes_the_same():
    hist = _records("H", "expert_count")
    assert len(hist) == 4
    assert all(r["ratio"] > 1.5 and r["same_output"] == 1 for r in hist)
    (msg,) = [m for row, m in _codes("fixtures/CL204/block_histogram.cu", "CL204").items()
              if row == 16]
    assert "one histogram per block in shared memory" in msg
