"""GPU truth for CL202's printed layout remedies (issue 20): for each remedy cudalint prints
on the real corpus or the fixtures, the shared-memory wavefronts of the access as written
and as the remedy says, measured with ncu.

    python tools/gputruth/remedy_truth.py --compile-only     # here: build, count the SASS
    python tools/gputruth/remedy_truth.py --out $OUT         # on a machine with a GPU

remedy_truth.cu holds one kernel per variant, reduced to its source's shared accesses with
the block shape cudalint states; this script adds a main() that launches each once (one
block), so ncu's per-kernel sums are one block's. Each record names the access's source,
the kernel pair and the side (ld or st) the flagged access is on: the other side of that
kernel holds only conflict-free accesses, so the side's wavefronts per instruction are the
flagged access's. Writes fixtures/CL202/remedy_truth.json (and a copy under --out);
tests/test_cl202_remedy_truth.py compares cudalint's findings on remedy_truth.cu with it.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SOURCE = HERE / "remedy_truth.cu"
RECORD = ROOT / "fixtures" / "CL202" / "remedy_truth.json"
METRICS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
)
# (name, where cudalint printed the remedy, kernel as written, kernel as remedied, side,
#  the access's line in remedy_truth.cu, contrast kernels)
CASES = (
    ("convolutionSeparable_rows", ["cuda-samples convolutionSeparable.cu:99"],
     "conv_rows_as_written", "conv_rows_remedy", "ld", 19, ["conv_rows_pad1", "conv_rows_pad8"]),
    ("gsplat_smem_sums", ["gsplat IntersectCommon.cu:184"],
     "gsplat_load_as_written", "gsplat_load_remedy", "ld", 77, []),
    ("gsplat_smem_carries", ["gsplat IntersectCommon.cu:185"],
     "gsplat_store_as_written", "gsplat_store_remedy", "st", 96, []),
    ("tile16_load", ["fixtures/CL202/blocks2d.cu:8"],
     "tile16_as_written", "tile16_remedy", "ld", 119, []),
    ("tile16_padded17_store", ["fixtures/CL202/blocks2d.cu:15",
                               "fixtures/CL102/block_barrier.cu:117"],
     "tile16_padded17_as_written", "tile16_remedy", "st", 127, []),
    ("tile16_padded17_load", ["fixtures/CL202/blocks2d.cu:18",
                              "fixtures/CL102/block_barrier.cu:119"],
     "tile16_padded17_as_written", "tile16_remedy", "ld", 129, []),
)
MAIN = """
#include "%s"
#include <cstdio>
int main() {
  float *f_in, *f_out;
  int2 *i_in, *i_out;
  cudaMalloc(&f_in, 1 << 16);
  cudaMalloc(&f_out, 1 << 16);
  cudaMalloc(&i_in, 1 << 16);
  cudaMalloc(&i_out, 1 << 16);
  cudaMemset(f_in, 0, 1 << 16);
  cudaMemset(i_in, 0, 1 << 16);
  launch_remedy_truth(f_out, f_in, i_out, i_in);
  cudaError_t e = cudaDeviceSynchronize();
  printf("status=%%s\\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
"""


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for base in sys.path:               # the nvidia-cuda-* wheels of a virtual environment
        cand = Path(base) / "nvidia" / "cu13" / "bin" / name
        if cand.is_file():
            return str(cand)
    raise SystemExit(f"{name} not found")


def build(tmp: Path) -> Path:
    main = tmp / "main.cu"
    main.write_text(MAIN % SOURCE)
    exe = tmp / "remedy_truth"
    subprocess.run([_tool("nvcc"), "-O3", "-arch=sm_90", "-lineinfo", "-o", str(exe),
                    str(main)], check=True)
    return exe


def sass_counts(exe: Path) -> dict[str, dict[str, int]]:
    """Shared-memory instructions per kernel (extern "C++" names, demangled by hand)."""
    sass = subprocess.run([_tool("cuobjdump"), "-sass", str(exe)], capture_output=True,
                          text=True, check=True).stdout
    out: dict[str, dict[str, int]] = {}
    cur = None
    for line in sass.splitlines():
        m = re.search(r"Function : _Z\d+(\w+?)P", line)
        if m:
            cur = m[1]
            out[cur] = {}
            continue
        m = re.search(r"\b(STS|LDS)(\.\d+)?\b", line)
        if m and cur:
            out[cur][m[0]] = out[cur].get(m[0], 0) + 1
    return out


def profile(exe: Path) -> tuple[dict[str, dict[str, float]], str]:
    proc = subprocess.run([_tool("ncu"), "--csv", "--print-units", "base", "--metrics",
                           ",".join(METRICS), str(exe)],
                          capture_output=True, text=True, timeout=100)
    text = proc.stdout
    start = text.find('"ID"')
    rows = list(csv.DictReader(io.StringIO(text[start:]))) if start >= 0 else []
    prof: dict[str, dict[str, float]] = {}
    for r in rows:
        try:
            name = r["Kernel Name"].split("(")[0].strip()
            prof.setdefault(name, {})[r["Metric Name"]] = \
                float(r["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
    return prof, text + proc.stderr


def per_inst(m: dict[str, float], side: str) -> float | None:
    inst = m.get(f"smsp__sass_inst_executed_op_shared_{side}.sum")
    wf = m.get(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{side}.sum")
    return round(wf / inst, 4) if inst and wf is not None else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    exe = build(tmp)
    counts = sass_counts(exe)
    kernels = {k for c in CASES for k in (c[2], c[3], *c[6])}
    missing = kernels - set(counts)
    assert not missing, missing
    for k in kernels:
        assert counts[k], (k, "no shared accesses in the SASS")
    print(f"SASS checked: {len(counts)} kernels")
    if args.compile_only:
        print(json.dumps(counts, indent=1, sort_keys=True))
        return
    prof, log = profile(exe)
    if args.out:
        (args.out / "ncu.txt").write_text(log)
    runs = {k: {"sass": counts[k], "ncu": prof.get(k, {}),
                "ld_wavefronts_per_inst": per_inst(prof.get(k, {}), "ld"),
                "st_wavefronts_per_inst": per_inst(prof.get(k, {}), "st")}
            for k in sorted(kernels)}
    records = []
    for name, where, written, remedy, side, line, contrast in CASES:
        records.append({
            "name": name, "printed_at": where, "side": side, "line": line,
            "as_written": written, "remedy": remedy, "contrast": contrast,
            "as_written_wavefronts_per_inst": runs[written][f"{side}_wavefronts_per_inst"],
            "remedy_wavefronts_per_inst": runs[remedy][f"{side}_wavefronts_per_inst"],
            "contrast_wavefronts_per_inst": {
                k: runs[k][f"{side}_wavefronts_per_inst"] for k in contrast},
        })
    record = {
        "gpu": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                               "--format=csv,noheader"], capture_output=True,
                              text=True).stdout.strip(),
        "nvcc": subprocess.run([_tool("nvcc"), "--version"], capture_output=True,
                               text=True).stdout.strip().splitlines()[-1],
        "source": "tools/gputruth/remedy_truth.cu", "records": records, "runs": runs}
    text = json.dumps(record, indent=1, sort_keys=True) + "\n"
    RECORD.write_text(text)
    if args.out:
        (args.out / "remedy_truth.json").write_text(text)
    for r in records:
        print(r["name"], r["side"], r["as_written_wavefronts_per_inst"], "->",
              r["remedy_wavefronts_per_inst"], r["contrast_wavefronts_per_inst"])


if __name__ == "__main__":
    main()
