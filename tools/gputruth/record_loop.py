"""GPU truth for CL201 on row-per-thread loops: is a row walked whole by one thread across a
loop (lane stride K floats) slower than the coalesced layout?

    python tools/gputruth/record_loop.py --out $OUT     # on a machine with a GPU

Builds record_loop.cu for sm_90, times rows vs cols kernels (CUDA events, median of 21 runs,
256 MB of floats) for K = 3, 8, 9, 32, 256, 2048 floats per row, and reads DRAM bytes with
ncu for one launch of each; writes fixtures/CL201/record_loop.json (and a copy under --out).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import re
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RECORD = ROOT / "fixtures" / "CL201" / "record_loop.json"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    exe = tmp / "record_loop"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-o", str(exe), str(HERE / "record_loop.cu")],
                   check=True)
    timing = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    runs = {}
    for line in timing.splitlines():
        m = re.match(r"(rows|cols) K=(\d+) n=(\d+) median_ms=([\d.]+) useful_GBps=([\d.]+)", line)
        if m:
            runs[f"{m[1]}_K{m[2]}"] = {"kernel": m[1], "K": int(m[2]), "n": int(m[3]),
                                       "median_ms": float(m[4]), "useful_GBps": float(m[5])}
    prof = subprocess.run(["ncu", "--csv", "--metrics", "dram__bytes_read.sum",
                           "--launch-skip", "0", "--launch-count", "252", str(exe)],
                          capture_output=True, text=True).stdout
    rows = [r for r in csv.DictReader(io.StringIO(prof[prof.find('"ID"'):]))
            if r.get("Metric Name") == "dram__bytes_read.sum"]
    # launches come in the program's order: for each K, 21 rows then 21 cols
    order = [f"{w}_K{k}" for k in (3, 8, 9, 32, 256, 2048) for w in ("rows", "cols")
             for _ in range(21)]
    for key, r in zip(order, rows):
        unit = r.get("Metric Unit", "byte")
        value = float(r["Metric Value"].replace(",", ""))
        scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(unit, 1)
        runs[key].setdefault("dram_bytes_read", []).append(value * scale)
    for run in runs.values():
        got = run.pop("dram_bytes_read", [])
        if got:
            got.sort()
            run["dram_bytes_read"] = got[len(got) // 2]
            run["useful_bytes"] = run["n"] * run["K"] * 4
    record = {"gpu": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                     "--format=csv,noheader"], capture_output=True,
                                    text=True).stdout.strip(),
              "runs": runs, "raw_timing": timing}
    RECORD.write_text(json.dumps(record, indent=1) + "\n")
    if args.out:
        (args.out / RECORD.name).write_text(RECORD.read_text())
    print(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
