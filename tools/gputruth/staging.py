"""GPU truth for CL201/CL202 on staging code (issue 20, sheet-newcorpus4 #34-36, #51-53):
do uncoalesced staging loads and bank-conflicted staging stores cost anything when every
thread of the block then reads every staged element in a loop (pcn's tf_approxmatch)?

    python tools/gputruth/staging.py --out $OUT      # on a machine with a GPU
    python tools/gputruth/staging.py --compile-only  # here: build, SASS counts only

Builds staging.cu for sm_90 and times, for blocks of 32, 128 and 512 threads and for two
consumers (pcn's __expf and a cheap multiply), the kernel as written (12-byte records
loaded field by field, stored to buf[l*4+f]: CL201 12 sectors, CL202 4-way), with the
CL202 remedy (one float4 store per record) and with both remedies (SoA loads too); CUDA
events, median of 15 launches, checksums per trio. ncu reads the staging stores'
wavefronts and the loads' sectors per request for one launch of each. Writes
fixtures/CL202/staging.json (and a copy under --out).
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
RECORD = ROOT / "fixtures" / "CL202" / "staging.json"
METRICS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
           "smsp__sass_inst_executed_op_shared_st.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")


def build(exe: Path) -> dict:
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-o", str(exe), str(HERE / "staging.cu")],
                   check=True)
    tool = shutil.which("cuobjdump") or str(Path(sys.prefix) / "lib" / "python3.11" /
                                             "site-packages/nvidia/cu13/bin/cuobjdump")
    sass = subprocess.run([tool, "-sass", str(exe)], capture_output=True, text=True,
                          check=True).stdout
    counts: dict[str, dict[str, int]] = {}
    name = None
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            name = m[1]
            counts[name] = {}
            continue
        op = re.search(r"\b(STS(?:\.\d+)?|LDS(?:\.\d+)?|LDG\S*)\s", line)
        if name and op:
            counts[name][op[1]] = counts[name].get(op[1], 0) + 1
    return counts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    exe = Path(tempfile.mkdtemp()) / "staging"
    sass = build(exe)
    if args.compile_only:
        print(json.dumps(sass, indent=1))
        return
    timing = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    runs = {}
    pat = (r"block=(\d+) mode=(\d) expf=(\d) n=(\d+) m=(\d+) median_ms=([\d.]+) "
           r"checksum=(\S+) err=(.*)")
    for line in timing.splitlines():
        m = re.match(pat, line)
        if m:
            runs[f"b{m[1]}_mode{m[2]}_expf{m[3]}"] = {
                "block": int(m[1]), "mode": int(m[2]), "expf": bool(int(m[3])),
                "n": int(m[4]), "m": int(m[5]), "median_ms": float(m[6]),
                "checksum": float(m[7]), "error": m[8]}
    order = list(runs)
    try:
        prof = subprocess.run(["ncu", "--csv", "--metrics", ",".join(METRICS), str(exe),
                               "once"], capture_output=True, text=True, timeout=90).stdout
        rows = list(csv.DictReader(io.StringIO(prof[prof.find('"ID"'):])))
        for r in rows:
            i = int(r["ID"])
            if i < len(order) and r.get("Metric Name") in METRICS:
                runs[order[i]].setdefault("ncu", {})[r["Metric Name"]] = float(
                    r["Metric Value"].replace(",", ""))
    except (subprocess.TimeoutExpired, ValueError, KeyError) as e:
        print("ncu failed:", e)
    for run in runs.values():
        ncu = run.get("ncu", {})
        st = ncu.get("smsp__sass_inst_executed_op_shared_st.sum")
        if st:
            run["st_wavefronts_per_inst"] = round(
                ncu["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"] / st, 3)
        req = ncu.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
        if req:
            run["ld_sectors_per_request"] = round(
                ncu["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] / req, 3)
    # the cost of each remedy, as a share of the kernel as written
    change = {}
    for key, run in runs.items():
        if run["mode"] == 0:
            base = run["median_ms"]
            for mode, what in ((1, "cl202_remedy"), (2, "both_remedies")):
                other = runs.get(key.replace("_mode0_", f"_mode{mode}_"))
                if other:
                    change.setdefault(what, {})[key.replace("_mode0", "")] = round(
                        other["median_ms"] / base - 1, 4)
    record = {"gpu": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                     "--format=csv,noheader"], capture_output=True,
                                    text=True).stdout.strip(),
              "nvcc": subprocess.run(["nvcc", "--version"], capture_output=True,
                                     text=True).stdout.strip().splitlines()[-1],
              "runs": runs, "change": change, "sass": sass, "raw_timing": timing}
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    if args.out:
        (args.out / RECORD.name).write_text(RECORD.read_text())
    print(json.dumps(change, indent=1))


if __name__ == "__main__":
    main()
