"""Compile-only truth for CL202's merged statements (issue 20, sheet-newcorpus5 W7): which
shared stores and loads of fixtures/CL202/merged_statements.cu ptxas merges into one
STS.64/STS.128 (LDS.64/LDS.128), per kernel and source line. No GPU: nvcc -cubin
-arch=sm_90 -lineinfo, then cuobjdump -sass and nvdisasm -g for the lines (the helpers
of readonly_sass.py).

    python tools/gputruth/merged_statements.py      # writes fixtures/CL202/merged_statements.json

tests/test_cl202_merged_statements.py compares the vector widths the analysis
(cudalint/analysis/memory/bank_vectors.py) predicts with this record, and rebuilds it
when nvcc is found. The wavefronts of the 16-byte accesses are not measured here: they
are the model's, and the H100 records of fixtures/CL202/truth.json (stride2_float4,
col_float4_32x32, col_float4_32x36) and store_conflict.json (16-byte stores) agree with
it for the same lane patterns.
"""
from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIXTURE = ROOT / "fixtures" / "CL202" / "merged_statements.cu"
RECORD = FIXTURE.with_suffix(".json")
# look-alikes whose stores move with a loop nvcc keeps: the width ptxas picks varies
ROLLED = HERE / "merged_statements_rolled.cu"

_spec = importlib.util.spec_from_file_location("readonly_sass", HERE / "readonly_sass.py")
sass = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("readonly_sass", sass)
_spec.loader.exec_module(sass)


def _ops(source: Path, workdir: Path) -> dict:
    cubin, _ = sass.build(source.read_text(), source.stem, workdir)
    found = sass.global_loads(cubin, prefixes=("STS", "LDS"))
    return {k: {"ops": sorted([op, line] for op, line in ops if line is not None)}
            for k, ops in sorted(found.items())}


def records(workdir: Path) -> dict:
    """{"nvcc", "arch", "kernels": {kernel: {"ops": [[opcode, line], ...]}}, "rolled":
    the same for ROLLED} for every shared store and load (STS*, LDS*)."""
    return {"nvcc": sass.nvcc_version(), "arch": sass.ARCH,
            "fixture": str(FIXTURE.relative_to(ROOT)), "kernels": _ops(FIXTURE, workdir),
            "rolled_source": str(ROLLED.relative_to(ROOT)), "rolled": _ops(ROLLED, workdir)}


def vector_bytes(opcode: str, width: int) -> int:
    """Bytes per lane of an STS/LDS: ``.128`` 16, ``.64`` 8, else the element's."""
    parts = opcode.split(".")
    if "128" in parts:
        return 16
    if "64" in parts:
        return 8
    return width


def main() -> None:
    problem = sass.tools_problem()
    if problem is not None:
        sys.exit(f"no SASS tools: {problem}")
    with tempfile.TemporaryDirectory() as tmp:
        rec = records(Path(tmp))
    RECORD.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    for k, v in {**rec["kernels"], **rec["rolled"]}.items():
        print(k, v["ops"])


if __name__ == "__main__":
    main()
