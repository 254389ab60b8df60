"""GPU truth for CL201 on column walks whose sectors other threads use, and on row walks
from the lane's own row start (issue 20, sheet-newcorpus5 W4/W5, sheet-newcorpus4 #29-#32).

    python tools/gputruth/column_walk.py --out $OUT     # on a machine with a GPU
    python tools/gputruth/column_walk.py --compile-only # here: nvcc only

Builds column_walk.cu for sm_90, times each kernel against its coalesced twin (CUDA events,
median of 21 runs, 256 MB of floats), and reads, for one launch of each with ncu (caches
flushed), DRAM bytes read, L1 global-load sectors and requests, and L2 sectors read by L1;
writes fixtures/CL201/column_walk.json (and a copy under --out).
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
RECORD = ROOT / "fixtures" / "CL201" / "column_walk.json"
METRICS = ("dram__bytes_read.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
           "lts__t_sectors_srcunit_tex_op_read.sum")
_LINE = re.compile(r"(\w+) (.*?) median_ms=([\d.]+) useful_GBps=([\d.]+) err=(.*)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    exe = tmp / "column_walk"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-o", str(exe),
                    str(HERE / "column_walk.cu")], check=True)
    if args.compile_only:
        print("built", exe)
        return
    timing = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    runs: dict[str, dict] = {}
    order = []
    for line in timing.splitlines():
        m = _LINE.match(line)
        if m:
            key = f"{m[1]} {m[2]}"
            order.append(key)
            runs[key] = {"kernel": m[1], "shape": m[2], "median_ms": float(m[3]),
                         "useful_GBps": float(m[4]), "error": m[5]}
    prof = subprocess.run(["ncu", "--csv", "--metrics", ",".join(METRICS), str(exe),
                           "--once"], capture_output=True, text=True).stdout
    rows = list(csv.DictReader(io.StringIO(prof[prof.find('"ID"'):])))
    ids = sorted({int(r["ID"]) for r in rows if r.get("ID", "").isdigit()})
    for key, launch in zip(order, ids):
        for r in rows:
            if r.get("ID") != str(launch) or r.get("Metric Name") not in METRICS:
                continue
            unit = r.get("Metric Unit", "")
            scale = {"Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Ksector": 1e3,
                     "Msector": 1e6, "Krequest": 1e3, "Mrequest": 1e6}.get(unit, 1)
            runs[key][r["Metric Name"]] = float(r["Metric Value"].replace(",", "")) * scale
    record = {"gpu": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                     "--format=csv,noheader"], capture_output=True,
                                    text=True).stdout.strip(),
              "runs": runs, "raw_timing": timing, "ncu_tail": prof[-2000:]}
    RECORD.write_text(json.dumps(record, indent=1) + "\n")
    if args.out:
        (args.out / RECORD.name).write_text(RECORD.read_text())
    print(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
