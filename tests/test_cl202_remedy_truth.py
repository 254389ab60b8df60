"""CL202's printed layout remedies against the H100 record fixtures/CL202/remedy_truth.json
(written by tools/gputruth/remedy_truth.py from tools/gputruth/remedy_truth.cu): each
remedy cudalint prints for the real corpus (cuda-samples convolutionSeparable, gsplat
IntersectCommon) and the 16x16 transposes of the fixtures lowers the measured shared
wavefronts of the access, cudalint's degree for the access as written is the measured one,
and the remedied kernel gets no finding while measuring the ideal wavefronts cudalint
states ("N wavefronts instead of M": M is its figure for a conflict-free layout)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cudalint.config import Settings
from cudalint.engine import lint_text

ROOT = Path(__file__).resolve().parents[1]
RECORD = json.loads((ROOT / "fixtures/CL202/remedy_truth.json").read_text())
SOURCE = ROOT / "tools/gputruth/remedy_truth.cu"
RECORDS = {r["name"]: r for r in RECORD["records"]}
# the remedy cudalint prints, as it prints it on the record's sources
REMEDY = {
    "convolutionSeparable_rows": "`__shared__ float s_Data[4][176];`",
    "gsplat_smem_sums": "`__shared__ int2 smem_sums[8][38];`",
    "gsplat_smem_carries": "`__shared__ int2 smem_carries[8][38];`",
    "tile16_load": "`tile[tx][ty ^ (tx % 16)]` here",
    "tile16_padded17_store": "`tile[ty][tx ^ (ty % 16)]` here",
    "tile16_padded17_load": "`tile[tx][ty ^ (tx % 16)]` here",
}
_WAVES = re.compile(r"(\d+) wavefronts instead of (\d+)")


def _cl202(path: Path) -> list:
    return [d for d in lint_text(str(path), path.read_text(), Settings(select=("CL202",)),
                                 "cuda").diagnostics if d.code == "CL202"]


FINDINGS = _cl202(SOURCE)


def _kernel_rows(name: str) -> range:
    lines = SOURCE.read_text().splitlines()
    start = next(i for i, t in enumerate(lines, 1) if f"void {name}(" in t)
    end = next((i for i, t in enumerate(lines, 1) if i > start and t.startswith(("__global__", "void "))), len(lines) + 1)
    return range(start, end)


def test_the_record_is_an_h100_run_of_every_printed_remedy():
    assert RECORD["gpu"].startswith("NVIDIA H100")
    assert set(RECORDS) == set(REMEDY)


@pytest.mark.parametrize("name", sorted(REMEDY))
def test_the_printed_remedy_lowers_the_measured_wavefronts(name):
    r = RECORDS[name]
    assert r["remedy_wavefronts_per_inst"] < r["as_written_wavefronts_per_inst"]
    bank = f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{r['side']}.sum"
    assert RECORD["runs"][r["remedy"]]["ncu"][bank] == 0


@pytest.mark.parametrize("name", sorted(REMEDY))
def test_cudalint_predicts_what_the_gpu_measured(name):
    r = RECORDS[name]
    [d] = [d for d in FINDINGS if d.row == r["line"]]
    assert REMEDY[name] in d.message
    written, ideal = (int(x) for x in _WAVES.search(d.message).groups())
    assert written == r["as_written_wavefronts_per_inst"]
    # the remedied layout: no finding in its kernel, and the ideal figure measured
    assert not [d for d in FINDINGS if d.row in _kernel_rows(r["remedy"])]
    assert ideal == r["remedy_wavefronts_per_inst"]


def test_smaller_paddings_than_the_printed_one_keep_the_conflict():
    # convolutionSeparable: rows of 161 or 168 floats keep the 2-way conflict on the GPU,
    # as cudalint says; 176 (16 floats of padding) is the smallest that frees it
    r = RECORDS["convolutionSeparable_rows"]
    assert r["contrast_wavefronts_per_inst"] == {"conv_rows_pad1": 2.0, "conv_rows_pad8": 2.0}
    for k in r["contrast"]:
        assert [d for d in FINDINGS if d.row in _kernel_rows(k)]


@pytest.mark.parametrize("path,row,name", [
    ("fixtures/CL202/blocks2d.cu", 8, "tile16_load"),
    ("fixtures/CL202/blocks2d.cu", 15, "tile16_padded17_store"),
    ("fixtures/CL202/blocks2d.cu", 18, "tile16_padded17_load"),
    ("fixtures/CL102/block_barrier.cu", 117, "tile16_padded17_store"),
    ("fixtures/CL102/block_barrier.cu", 119, "tile16_padded17_load"),
])
def test_the_fixtures_print_the_measured_remedy(path, row, name):
    [d] = [d for d in _cl202(ROOT / path) if d.row == row]
    assert REMEDY[name] in d.message
    assert f"{path}:{row}" in RECORDS[name]["printed_at"]
