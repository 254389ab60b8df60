"""CuPy RawModule ``name_expressions`` as template instantiations (issue 21, item 3):
fixtures/CL202/cupy_name_expressions.py names transpose_tile<double> and its padded
look-alike; each is analysed as nvcc builds it, with the block of its Python launch. The
figures are those ncu measured for the same kernels in fixtures/CL202/template_tile.cu
(templates.truth.json beside it, tools/gputruth/templates.py on an H100)."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_bytes, lint_text

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "CL202" / "cupy_name_expressions.py"
TRUTH = ROOT / "fixtures" / "CL202" / "templates.truth.json"


def _found(name: str, src: str, kind: str, code: str = "CL202"):
    settings = replace(Settings(), select=(code,))
    return [d for d in lint_bytes(name, src.encode(), settings, kind).diagnostics
            if d.code == code]


def test_a_named_instantiation_gets_the_wavefronts_ncu_measured():
    truth = {r["kernel"]: r for r in json.loads(TRUTH.read_text())["records"]}
    found = _found(str(FIXTURE), FIXTURE.read_text(), "python")
    assert len(found) == 1
    msg = found[0].message
    assert "instantiation `transpose_tile<double>`" in msg and "block 32x32" in msg
    m = re.search(r"(\d+) wavefronts instead of (\d+)", msg)
    assert m and float(m.group(1)) == truth["transpose_tile<double>"]["ld_wavefronts"]
    assert float(m.group(2)) == truth["transpose_tile_padded<double>"]["ld_wavefronts"]


def test_name_expressions_of_other_kernels_or_unknown_types_bind_nothing():
    src = FIXTURE.read_text().replace(
        "name_expressions=['transpose_tile<double>',",
        "name_expressions=['other<double>', 'transpose_tile<my_type>',")
    assert _found("t.py", src, "python") == []


def test_the_cuda_file_is_unchanged():
    # a .cu file has no name_expressions: its uninstantiated template stays silent
    src = FIXTURE.read_text().split("r'''", 1)[1].split("'''", 1)[0]
    settings = replace(Settings(), select=("CL202",))
    assert [d for d in lint_text("t.cu", src, settings, "cuda").diagnostics
            if d.code == "CL202"] == []
