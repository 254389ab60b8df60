"""bench/triage.py: the stratified sample is deterministic and stratified; precision per
rule is computed from a filled sheet (markdown or CSV)."""
from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "bench" / "triage.py"
_spec = importlib.util.spec_from_file_location("triage", _PATH)
triage = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("triage", triage)       # dataclasses look their module up
_spec.loader.exec_module(triage)


def _findings():
    out = []
    for code, n in (("CL203", 300), ("CL201", 40), ("CL103", 10), ("CL204", 2)):
        for i in range(n):
            out.append({"code": code, "filename": f"p/{code.lower()}_{i % 7}.cu",
                        "location": {"row": i + 1, "column": 3}, "message": f"m{i}"})
    return out


def test_allocation_has_a_floor_is_proportional_and_capped():
    alloc = triage.allocate({"CL203": 300, "CL201": 40, "CL103": 10, "CL204": 2}, 60, 3)
    assert sum(alloc.values()) == 60
    assert alloc["CL204"] == 2                       # all it has
    assert alloc["CL103"] >= 3 and alloc["CL201"] >= 3
    assert alloc["CL203"] > alloc["CL201"] > alloc["CL103"]


def test_allocation_when_fewer_findings_than_places():
    assert triage.allocate({"CL203": 5, "CL201": 2}, 60, 3) == {"CL203": 5, "CL201": 2}


def test_draw_is_deterministic_with_the_seed_and_ignores_input_order():
    f = _findings()
    a = triage.draw(f, 60, 3, seed=7)
    shuffled = list(f)
    random.Random(1).shuffle(shuffled)
    assert triage.draw(shuffled, 60, 3, seed=7) == a
    assert triage.draw(f, 60, 3, seed=8) != a


def test_draw_is_stratified_by_rule():
    picked = triage.draw(_findings(), 60, 3, seed=2026)
    counts = {}
    for p in picked:
        counts[p["code"]] = counts.get(p["code"], 0) + 1
    assert counts == triage.allocate({"CL203": 300, "CL201": 40, "CL103": 10, "CL204": 2},
                                     60, 3)
    assert len({(p["filename"], p["location"]["row"], p["code"]) for p in picked}) == 60


def _sheet(tmp_path, verdicts):
    entries = [triage.Entry(i, code, f"p/a.cu:{i}:1", "msg", "   1  x") for i, code in
               enumerate(["CL203", "CL203", "CL203", "CL201", "CL201", "CL401"], 1)]
    for e, (v, r) in zip(entries, verdicts):
        e.verdict, e.reason = v, r
    return entries


def test_score_from_a_filled_markdown_sheet(tmp_path):
    out = tmp_path / "sheet.md"
    triage.write_sheet(out, _sheet(tmp_path, [("", "")] * 6), "# t\n",
                       {"CL203": 100, "CL201": 10, "CL401": 4})
    text = out.read_text()
    fills = iter(["right", "not-worth", "wrong", "right", "Right", ""])
    text = "\n".join(f"- verdict: {next(fills)}" if line.startswith("- verdict:") else line
                     for line in text.splitlines())
    out.write_text(text)
    entries, population = triage.read_sheet(out)
    assert population == {"CL203": 100, "CL201": 10, "CL401": 4}
    s = triage.score(entries, population)
    assert (s["CL203"].right, s["CL203"].not_worth, s["CL203"].wrong) == (1, 1, 1)
    assert s["CL203"].precision == pytest.approx(1 / 3)
    assert s["CL201"].precision == 1.0 and s["CL401"].precision is None
    t = triage.table(s)
    assert "| CL203 | 100 | 3 | 3 | 1 | 1 | 1 | 33% |" in t
    assert "| CL401 | 4 | 1 | 0 | 0 | 0 | 0 | - | - |" in t
    # re-weighted by population over the judged rules: (100*1/3 + 10*1) / 110
    assert "39% right" in t
    triage.update_sheet(out, t)
    triage.update_sheet(out, t)
    assert out.read_text().count("## Precision per rule") == 1


def test_score_from_csv(tmp_path):
    out = tmp_path / "sheet.csv"
    triage.write_sheet(out, _sheet(tmp_path, [("right", "a, b"), ("wrong", "x\ny")] +
                                   [("nw", "")] * 4), "", {})
    entries, _ = triage.read_sheet(out)
    assert entries[1].reason == "x\ny"
    s = triage.score(entries, {})
    assert (s["CL203"].right, s["CL203"].wrong, s["CL203"].not_worth) == (1, 1, 1)
    assert s["CL201"].not_worth == 2


def test_unknown_verdict_is_an_error():
    with pytest.raises(ValueError):
        triage.verdict_of("maybe")


def test_wilson_interval():
    lo, hi = triage.wilson(9, 10)
    assert 0.55 < lo < 0.6 and 0.98 < hi <= 1.0
    assert triage.wilson(0, 0) == (0.0, 1.0)
