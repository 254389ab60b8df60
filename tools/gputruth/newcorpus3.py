"""GPU truth for the third issue-20 triage (bench/triage/sheet-newcorpus3.md).

    python tools/gputruth/newcorpus3.py --out $OUT        # on a machine with a GPU
    python tools/gputruth/newcorpus3.py --compile-only    # here: build + SASS counts only

Builds newcorpus3.cu for sm_90 (analogs, written here, of the kernel shapes behind CL201
and CL203 findings whose worth reading cannot settle: OpenPCDet's point-major three-point
interpolation, roiaware's per-box row walk of the point mask, Pointcept's aggregation
forward and backward as written and with `__restrict__`), counts global memory
instructions per kernel in the SASS (cuobjdump), times each kernel (CUDA events, median
of 21 runs) and writes bench/triage/gpu/results-newcorpus3/timings.json (and a copy
under --out).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RECORD = ROOT / "bench" / "triage" / "gpu" / "results-newcorpus3" / "timings.json"


def _cuobjdump() -> str:
    found = shutil.which("cuobjdump")
    if found:
        return found
    for cand in Path("/").glob("tmp/*/lib/python3*/site-packages/nvidia/cu13/bin/cuobjdump"):
        return str(cand)
    raise SystemExit("cuobjdump not found")


def sass_counts(cubin: Path) -> dict[str, dict[str, int]]:
    text = subprocess.run([_cuobjdump(), "-sass", str(cubin)], capture_output=True,
                          text=True, check=True).stdout
    out: dict[str, Counter] = {}
    fn = None
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            fn = m[1]
            out[fn] = Counter()
            continue
        if fn is None:
            continue
        for word in line.split():
            if re.match(r"(LDG|STG|REDG|ATOMG|RED|ATOM)\b", word):
                out[fn][word.rstrip(";")] += 1
    return {k: dict(v) for k, v in sorted(out.items())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    src = HERE / "newcorpus3.cu"
    cubin = tmp / "newcorpus3.cubin"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", "-o", str(cubin), str(src)],
                   check=True)
    record: dict = {"sass_sm90": sass_counts(cubin)}
    if args.compile_only:
        print(json.dumps(record, indent=1))
        return
    exe = tmp / "newcorpus3"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-o", str(exe), str(src)], check=True)
    timing = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    runs = {}
    for line in timing.splitlines():
        m = re.match(r"(\S+) median_ms=([\d.]+)", line)
        if m:
            runs[m[1]] = float(m[2])
    record["median_ms"] = runs
    pairs = {"interp_stack": ("interp_point_major", "interp_channel_major"),
             "collect_inside_pts": ("collect_rows", "collect_cols"),
             "aggregation_fwd": ("aggregate_fwd", "aggregate_fwd_restrict"),
             "aggregation_bwd": ("aggregate_bwd", "aggregate_bwd_restrict")}
    record["fix_over_as_written"] = {k: round(runs[b] / runs[a], 4)
                                     for k, (a, b) in pairs.items() if a in runs and b in runs}
    record["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                    "--format=csv,noheader"], capture_output=True,
                                   text=True).stdout.strip()
    record["nvcc"] = subprocess.run(["nvcc", "--version"], capture_output=True,
                                    text=True).stdout.strip().splitlines()[-1]
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text(json.dumps(record, indent=1) + "\n")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "timings.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
