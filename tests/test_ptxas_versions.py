"""Real ptxas logs of CUDA 11.8 and 12.9 (tools/ptxas_versions.py) read like nvcc 13's:
the same kernels, the same figures where the compilers agree, and the same findings."""
from __future__ import annotations

import pytest

from cudalint.analysis.ptxas.ptxas_log import parse_log
from cudalint.config import PtxasSettings, Settings
from fixture_support import FIXTURES, lint_fixture

CASES = [("CL301", "spills"), ("CL302", "stack_frame"), ("CL303", "occupancy")]
RELEASES = ("11.8", "12.9")


def records(path):
    return {r.display_name: r for r in parse_log(path.read_text()) if r.arch == "sm_80"}


@pytest.mark.parametrize("code,name", CASES)
def test_every_release_reports_every_kernel(code, name):
    multi = FIXTURES / code / f"{code}_{name}.multiarch.log"
    current = records(multi)                       # nvcc 13.0, sm_80 section
    assert current
    for rel in RELEASES:
        old = records(FIXTURES / code / f"{name}.ptxas-{rel}.log")
        assert set(old) == set(current), rel
        for kname, rec in old.items():
            assert rec.registers and rec.registers > 0, (rel, kname)
            # stack frames and spills appear in the same kernels in every release
            assert (rec.stack_frame > 0) == (current[kname].stack_frame > 0), (rel, kname)
            assert (rec.spill_stores > 0) == (current[kname].spill_stores > 0), (rel, kname)


@pytest.mark.parametrize("code,name", CASES)
@pytest.mark.parametrize("rel", RELEASES)
def test_rules_flag_the_same_kernels_with_an_older_log(code, name, rel):
    src = FIXTURES / code / f"{name}.cu"
    multi = FIXTURES / code / f"{code}_{name}.multiarch.log"
    old = FIXTURES / code / f"{name}.ptxas-{rel}.log"

    def flagged(log):
        s = Settings(arch="sm_80", ptxas=PtxasSettings(log=(str(log),)))
        return {(d.row, d.code) for d in lint_fixture(src, {code}, s).diagnostics
                if d.code == code}

    now = flagged(multi)
    assert now, f"{code} flags nothing with the nvcc 13 log"
    assert flagged(old) == now


def test_occupancy_command(capsys):
    import json
    from cudalint.cli import main
    assert main(["occupancy", "--arch", "sm_90", "--regs", "72", "--block", "256",
                 "--output-format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # 72 regs -> 2304 per warp (256 granularity), 8 warps per block: 65536 / (2304*8) = 3
    assert out["kernel"]["active_blocks"] == 3 and out["kernel"]["active_warps"] == 24
    assert out["kernel"]["limiter"] == "registers"
    row = next(r for r in out["table"] if r["registers_from"] <= 64 <= r["registers_to"])
    assert row["occupancy"] == 0.5 and row["registers_to"] == 64
    assert main(["occupancy", "--arch", "sm_90", "--regs", "72", "--block", "256"]) == 0
    text = capsys.readouterr().out
    assert "occupancy 38% (24 of 64 warps/SM, 3 blocks), limited by registers" in text
    assert main(["occupancy", "--arch", "sm_1", "--block", "256"]) == 2
