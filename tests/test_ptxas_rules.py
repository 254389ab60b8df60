"""CL301-CL303: ptxas log parsing, matching to definitions, the occupancy calculator
against GPU truth (fixtures/CL303/truth.json), and the fixtures with their own logs."""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace

import pytest

from cudalint.analysis.ptxas.occupancy import (ARCHS, launch_bounds_register_cap, limits_for,
                                         occupancy, occupancy_table, registers_for_next_step)
from cudalint.analysis.ptxas.ptxas_log import parse_log
from cudalint.config import PtxasSettings, Settings
from fixture_support import FIXTURES, expectations, lint_fixture

CODES = ("CL301", "CL302", "CL303")
PTXAS_FIXTURES = [p for c in CODES for p in sorted((FIXTURES / c).glob("*.cu"))]


def _found(result, codes):
    out: dict[int, set[str]] = {}
    for d in result.diagnostics:
        if d.code in codes and not d.suppressed:
            out.setdefault(d.row, set()).add(d.code)
    return out


@pytest.mark.parametrize("path", PTXAS_FIXTURES, ids=lambda p: p.name)
def test_fixture_with_its_captured_log(path):
    log = path.with_suffix(".ptxas.log")
    assert log.is_file(), f"{log} (captured with nvcc -cubin -arch=sm_90 -Xptxas -v)"
    settings = Settings(ptxas=PtxasSettings(log=(str(log),)))
    expect, forbid = expectations(path)
    codes = {path.parent.name} | {c for v in list(expect.values()) + list(forbid.values())
                                  for c in v}
    found = _found(lint_fixture(path, codes, settings), codes)
    for row, codes in expect.items():
        assert codes <= found.get(row, set()), (row, found)
    for row, codes in found.items():
        assert codes <= expect.get(row, set()), (row, codes)
    for row, codes in forbid.items():
        assert not codes & found.get(row, set())


def test_without_ptxas_data_the_rules_are_silent():
    for path in PTXAS_FIXTURES:
        settings = replace(Settings(), select=CODES)
        from cudalint.engine import lint_bytes
        res = lint_bytes(str(path), path.read_bytes(), settings, "cuda")
        assert not [d for d in res.diagnostics if d.code in CODES]


def test_messages_and_metrics():
    path = FIXTURES / "CL301" / "spills.cu"
    res = lint_fixture(path, {"CL301"})
    [d] = [d for d in res.diagnostics if d.code == "CL301"]
    assert d.message.startswith("`gemm_tile<128>` spills 5492 bytes (stores) / 5684 bytes "
                                "(loads) on sm_90 at 32 registers; `__launch_bounds__(1024, "
                                "2)` caps it at 32 registers")
    assert d.metrics["spill_store_bytes"] == 5492 and d.metrics["registers"] == 32
    assert d.metrics["stack_frame_bytes"] == 2272
    path = FIXTURES / "CL303" / "occupancy.cu"
    res = lint_fixture(path, {"CL303"})
    heavy = next(d for d in res.diagnostics if "`heavy`" in d.message)
    assert ("occupancy 37.5% (24 of 64 warps/SM) on sm_90, limited by registers: 72 per "
            "thread at 256 threads/block; 64 registers would give 50%") in heavy.message
    assert heavy.metrics["active_warps"] == 24 and heavy.metrics["limiter"] == "registers"
    assert heavy.metrics["block"] == 256
    tile = next(d for d in res.diagnostics if "`big_tile`" in d.message)
    assert tile.metrics["limiter"] == "shared memory"


# ---- parser ---------------------------------------------------------------------------
def test_multiarch_log_from_the_device():
    text = (FIXTURES / "CL301" / "CL301_spills.multiarch.log").read_text()
    recs = parse_log(text)
    archs = {r.arch for r in recs}
    assert {"sm_80", "sm_90"} <= archs and len(archs) >= 2
    gemm = {r.arch: r for r in recs if r.display_name == "gemm_tile<128>"}
    assert set(gemm) == archs
    assert all(r.spill_stores > 0 for r in gemm.values())
    assert gemm["sm_90"].registers == gemm["sm_80"].registers == 32
    # sm_75 has 1024 threads/SM: ptxas ignores the 2 of __launch_bounds__(1024, 2)
    if "sm_75" in gemm:
        assert gemm["sm_75"].registers == 64 == launch_bounds_register_cap("sm_75", 1024, 2)


def test_multiarch_log_used_for_the_configured_arch():
    path = FIXTURES / "CL301" / "spills.cu"
    log = FIXTURES / "CL301" / "CL301_spills.multiarch.log"
    settings = Settings(arch="sm_80", ptxas=PtxasSettings(log=(str(log),)))
    res = lint_fixture(path, {"CL301"}, settings)
    [d] = [d for d in res.diagnostics if d.code == "CL301"]
    assert d.metrics["arch"] == "sm_80" and "on sm_80" in d.message


def test_older_nvcc_formats_warnings_and_device_functions():
    # CUDA 11.x style lines (no barriers, cmem), -warn-spills warnings, a device function
    text = """\
ptxas warning : Registers are spilled to local memory in function '_Z1kPf', 8 bytes spill stores, 12 bytes spill loads
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z1kPf' for 'sm_70'
ptxas info    : Function properties for _Z1kPf
    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, 360 bytes cmem[0], 4 bytes cmem[2]
ptxas info    : Function properties for _Z6helperi
    24 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
[3/7] ptxas info    : Compiling entry function '_ZN2ns4gemmIfLi64EEEvPKT_PS1_' for 'sm_80'
ptxas info    : Used 40 registers, used 1 barriers, 8192 bytes smem, 352 bytes cmem[0]
"""
    recs = {(r.mangled, r.arch): r for r in parse_log(text)}
    k = recs[("_Z1kPf", "sm_70")]
    assert (k.registers, k.stack_frame, k.spill_stores, k.spill_loads) == (255, 16, 8, 12)
    assert k.cmem == {0: 360, 2: 4} and k.entry
    h = recs[("_Z6helperi", "sm_70")]
    assert h.stack_frame == 24 and not h.entry and h.base_name == "helper"
    g = recs[("_ZN2ns4gemmIfLi64EEEvPKT_PS1_", "sm_80")]
    assert (g.registers, g.barriers, g.smem) == (40, 1, 8192)
    assert g.display_name == "gemm<float, 64>" and g.base_name == "gemm"


def test_same_name_compiled_differently_is_ambiguous():
    path = FIXTURES / "CL301" / "spills.cu"
    log = (FIXTURES / "CL301" / "spills.ptxas.log").read_text()
    other = log.replace("5492 bytes spill stores", "1 bytes spill stores")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "build.log")
        with open(p, "w") as fh:
            fh.write(log + other)
        res = lint_fixture(path, {"CL301"}, Settings(ptxas=PtxasSettings(log=(p,))))
    assert not [d for d in res.diagnostics if d.code == "CL301"]


# ---- occupancy ------------------------------------------------------------------------
TRUTH = json.loads((FIXTURES / "CL303" / "truth.json").read_text())


def test_calculator_agrees_with_the_gpu_on_every_point():
    assert TRUTH["device"]["cc"] == "9.0" and len(TRUTH["records"]) > 1000
    bad = []
    for r in TRUTH["records"]:
        assert r["registers"] == r["ptxas_registers"], r
        # measured: the API does not check __launch_bounds__' maximum (heavy_bounded,
        # bounded to 512 threads, gets 1 block at 640..1024 threads), so neither do we
        occ = occupancy("sm_90", r["ptxas_registers"], r["block"], r["static_smem"],
                        r["dynamic_smem"], r["barriers"])
        if occ.active_blocks != max(r["active_blocks"], 0):
            bad.append((r, occ.active_blocks))
    assert not bad, bad[:5]


def test_sm90_row_matches_the_device():
    dev = TRUTH["device"]
    lim = ARCHS["sm_90"]
    assert lim.regs_per_sm == dev["regs_per_sm"]
    assert lim.regs_per_block == dev["regs_per_block"]
    assert lim.max_threads_per_sm == dev["max_threads_per_sm"]
    assert lim.max_blocks_per_sm == dev["max_blocks_per_sm"]
    assert lim.smem_per_sm == dev["smem_per_sm"]
    assert lim.smem_per_block == dev["smem_per_block"]
    assert lim.smem_per_block_optin == dev["smem_per_block_optin"]
    assert lim.smem_reserved_per_block == dev["reserved_smem_per_block"]


@pytest.mark.parametrize("arch,warps,blocks,smem_kb", [
    # CUDA C++ Programming Guide, Technical Specifications per Compute Capability
    ("sm_50", 64, 32, 64), ("sm_52", 64, 32, 96), ("sm_60", 64, 32, 64),
    ("sm_61", 64, 32, 96), ("sm_70", 64, 32, 96), ("sm_75", 32, 16, 64),
    ("sm_80", 64, 32, 164), ("sm_86", 48, 16, 100), ("sm_87", 48, 16, 164),
    ("sm_89", 48, 24, 100), ("sm_90", 64, 32, 228), ("sm_100", 64, 32, 228),
    ("sm_120", 48, 24, 100)])
def test_published_limits(arch, warps, blocks, smem_kb):
    lim = limits_for(arch)
    assert (lim.max_warps_per_sm, lim.max_blocks_per_sm, lim.smem_per_sm // 1024) == \
        (warps, blocks, smem_kb)
    assert lim.regs_per_sm == 65536 and lim.reg_alloc_unit == 256


def test_every_arch_from_sm50_to_sm120_is_known():
    for a in ("sm_50", "sm_53", "sm_62", "sm_72", "sm_90a", "compute_90", "sm_103",
              "sm_110", "sm_121"):
        assert limits_for(a) is not None, a
    assert limits_for("sm_35") is None


def test_next_step_and_launch_bounds_cap():
    step = registers_for_next_step("sm_90", 72, 256)
    assert step[0] == 64 and step[1].active_warps == 32
    assert launch_bounds_register_cap("sm_90", 1024, 2) == 32
    assert launch_bounds_register_cap("sm_90", 256, 3) == 80   # what ptxas uses
    rows = occupancy_table("sm_90", 256)
    assert rows[0][2] == 64 and rows[-1][1] == 255


# ---- getting the data -----------------------------------------------------------------
def test_ptxas_without_nvcc_exits_2(monkeypatch, capsys):
    from cudalint import cli
    monkeypatch.setenv("PATH", "/nonexistent")
    rc = cli.main(["check", "--ptxas", "--no-cache", str(FIXTURES / "CL303" / "occupancy.cu")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "nvcc" in err and "pip install cudalint[nvcc]" in err


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_self_compilation_gives_the_same_findings(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = FIXTURES / "CL303" / "occupancy.cu"
    settings = Settings(ptxas=PtxasSettings(enabled=True))
    first = _found(lint_fixture(path, set(CODES), settings), CODES)
    with_log = _found(lint_fixture(path, set(CODES)), CODES)
    assert first == with_log and first
    assert list((tmp_path / "cudalint" / "ptxas").glob("*.log"))   # cached on disk
