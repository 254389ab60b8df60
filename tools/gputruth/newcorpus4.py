"""GPU truth for the fourth issue-20/14 triage (bench/triage/sheet-newcorpus4.md).

    python tools/gputruth/newcorpus4.py --out $OUT        # on a machine with a GPU
    python tools/gputruth/newcorpus4.py --compile-only    # here: build, SASS counts, frames

Builds newcorpus4.cu for sm_90 (analogs, written here, of the kernel shapes behind
findings whose worth reading cannot settle: a k-nearest insertion sort with local arrays
against a shared-memory slice per thread (CL204), a run-time-bounded embedding loop against
the compile-time bound the CL204 message prints, a 16x16 tile loop with an 8-way transposed
store against an odd stride (CL202), a load/store/reload feature kernel against
`__restrict__` (CL203), and minimum-density sampling on 12-byte records against SoA
(CL201)), records the ptxas stack frame and the global memory instructions of each kernel,
times each kernel (CUDA events, median of 21 or 7 runs) and writes
tools/gputruth/newcorpus4.json (and a copy under --out).
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
RECORD = HERE / "newcorpus4.json"


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


def frames(src: Path, tmp: Path) -> dict[str, int]:
    """ptxas's stack frame per kernel: a per-thread array in local memory shows here."""
    done = subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-c", "-Xptxas", "-v", "-o",
                           str(tmp / "frames.o"), str(src)], capture_output=True, text=True,
                          check=True)
    out, fn = {}, None
    for line in done.stderr.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            fn = m[1]
        m = re.search(r"(\d+) bytes stack frame", line)
        if m and fn:
            out[fn] = int(m[1])
            fn = None
    return dict(sorted(out.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    src = HERE / "newcorpus4.cu"
    cubin = tmp / "newcorpus4.cubin"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", "-o", str(cubin), str(src)],
                   check=True)
    record: dict = {"sass_sm90": sass_counts(cubin), "stack_frame_bytes": frames(src, tmp)}
    if args.compile_only:
        print(json.dumps(record, indent=1))
        return
    exe = tmp / "newcorpus4"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-o", str(exe), str(src)], check=True)
    timing = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    runs = {}
    sums = {}
    for line in timing.splitlines():
        m = re.match(r"(\S+) median_ms=([\d.]+)", line)
        if m:
            runs[m[1]] = float(m[2])
        m = re.match(r"(\S+) checksum=([-\d.e+]+)", line)
        if m:
            sums[m[1]] = float(m[2])
    record["median_ms"] = runs
    record["checksum"] = sums
    pairs = {"knn_ns16": ("knn_local_ns16", "knn_shared_ns16"),
             "knn_ns32": ("knn_local_ns32", "knn_shared_ns32"),
             "ae_dim_loop": ("ae_local", "ae_unrolled"),
             "tile_store_conflict": ("tile_keys_stride16", "tile_keys_stride17"),
             "feature_reload": ("features_alias", "features_restrict"),
             "mds_records": ("mds_aos", "mds_soa")}
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
