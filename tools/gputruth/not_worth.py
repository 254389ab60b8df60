"""GPU truth for issue 20's "true but not worth acting on" groups of the third triage.

    python tools/gputruth/not_worth.py --out $OUT        # on a machine with a GPU
    python tools/gputruth/not_worth.py --compile-only    # here: build + SASS counts only

Builds not_worth.cu for sm_90 (analogs of (a) CL203 reloads after atomicAdds through a
pointer that may alias, over 2-4 atomics, per thread or in a loop, three atomic targets
and three reloaded elements; (b) CL201 row stores of `nsample` indices inside an O(n)
scan with an early break, over hit rates 1-50%, nsample 16-64 and n 1k-64k, two store
shapes), counts global memory instructions per kernel in the SASS (cuobjdump) and times
each kernel (CUDA events, median of 21 runs). Writes fixtures/CL203/not_worth.json and
fixtures/CL201/not_worth.json (copies under --out): the records the rules' tests read.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CL203_RECORD = ROOT / "fixtures" / "CL203" / "not_worth.json"
CL201_RECORD = ROOT / "fixtures" / "CL201" / "not_worth.json"

import sys                                   # noqa: E402  (run as a script)
sys.path.insert(0, str(HERE))
from newcorpus3 import sass_counts           # noqa: E402


def _nvcc(*args: str) -> None:
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-std=c++17", *args], check=True)


def _reload_sass(sass: dict) -> dict:
    """LDG/RED per instantiation, keyed like the timing lines ("A=2 TGT=0 SRC=1")."""
    out = {}
    for fn, counts in sass.items():
        m = re.match(r"_Z\d+(reload_plain|reload_restrict)ILi(\d)ELi(\d)ELi(\d)E", fn)
        if m:
            out.setdefault(f"A={m[2]} TGT={m[3]} SRC={m[4]}", {})[m[1].split("_")[1]] = counts
    return out


def parse(text: str) -> tuple[list, list, dict]:
    reloads: dict = {}
    rows: dict = {}
    hit_rate = {}
    for line in text.splitlines():
        m = re.match(r"reload A=(\d) TGT=(\d) SRC=(\d) ITER=(\d+) (plain|restrict) "
                     r"median_ms=([\d.]+)", line)
        if m:
            key = tuple(int(m[i]) for i in range(1, 5))
            reloads.setdefault(key, {})[m[5]] = float(m[6])
            continue
        m = re.match(r"ballq MODE=(\d) n=(\d+) ns=(\d+) p=([\d.]+) (rows|cols) "
                     r"median_ms=([\d.]+)", line)
        if m:
            key = (int(m[1]), int(m[2]), int(m[3]), float(m[4]))
            rows.setdefault(key, {})[m[5]] = float(m[6])
            continue
        m = re.match(r"hit_rate p=([\d.]+) measured=([\d.]+)", line)
        if m:
            hit_rate[m[1]] = float(m[2])
    a = [{"atomics": k[0], "target": ["distinct", "contended", "scattered"][k[1]],
          "reloaded": ["coalesced_invariant", "gathered_invariant", "per_iteration"][k[2]],
          "iterations": k[3], "plain_ms": v["plain"], "restrict_ms": v["restrict"],
          "saving": round(1 - v["restrict"] / v["plain"], 4)}
         for k, v in sorted(reloads.items())]
    b = [{"store": ["fill_then_hits", "hits_then_pad"][k[0]], "n": k[1], "nsample": k[2],
          "hit_rate": k[3], "rows_ms": v["rows"], "cols_ms": v["cols"],
          "saving": round(1 - v["cols"] / v["rows"], 4)}
         for k, v in sorted(rows.items())]
    return a, b, hit_rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--parse", type=Path, help="rebuild the records from a saved stdout")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    src = HERE / "not_worth.cu"
    cubin = tmp / "not_worth.cubin"
    _nvcc("-cubin", "-o", str(cubin), str(src))
    sass = _reload_sass(sass_counts(cubin))
    if args.compile_only:
        print(json.dumps(sass, indent=1))
        return
    if args.parse is not None:
        text = args.parse.read_text()
    else:
        exe = tmp / "not_worth"
        _nvcc("-o", str(exe), str(src))
        text = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "not_worth.stdout").write_text(text)
    device = ""
    try:
        device = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    a, b, hit_rate = parse(text)
    common = {"script": "tools/gputruth/not_worth.py", "source": "tools/gputruth/not_worth.cu",
              "device": device, "timing": "CUDA events, median of 21 runs"}
    cl203 = {**common, "shape": "reloads after atomicAdd through a pointer that may alias "
             "(2^21 threads, c = 64)", "sass_sm90": sass, "cases": a}
    cl201 = {**common, "shape": "nsample-index row stores inside an O(n) scan with an early "
             "break (32768 queries), rows (as written) vs columns", "hit_rate_host": hit_rate,
             "cases": b}
    for path, rec in ((CL203_RECORD, cl203), (CL201_RECORD, cl201)):
        text_out = json.dumps(rec, indent=1) + "\n"
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{path.parent.name}_not_worth.json").write_text(text_out)
        path.write_text(text_out)
    print(json.dumps({"reloads": a, "rows": b}, indent=0))


if __name__ == "__main__":
    main()
