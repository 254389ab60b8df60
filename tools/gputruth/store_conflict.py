"""GPU truth for CL202's store threshold: what an n-way bank conflict on a shared-memory
store costs a kernel, against the same conflict on a load.

    python tools/gputruth/store_conflict.py --compile-only     # here: build, check the SASS
    python tools/gputruth/store_conflict.py --out $OUT         # on a machine with a GPU

Builds store_conflict.cu for sm_90 and checks in its SASS that every kernel issues the
shared accesses it is meant to (8 STS / 32 LDS per tile for 4-byte lanes, 2 STS.128 / 8
LDS.128 for 16-byte lanes; the pure-store kernels only STS). On the GPU it times every
kernel (CUDA events, 3 alternating rounds of 7 launches, median of 21) and reads, with ncu
on one launch of each, the shared store and load wavefronts, bank conflicts and
instructions, so each run's degree is measured, not assumed. Writes
fixtures/CL202/store_conflict.json (and a copy under --out).

Kernels (see the .cu): ``tile_st{W}_ld1_b{V}_f{F}`` is a GEMM-style staging loop (global
load -> shared store with a W-way conflict -> barrier -> conflict-free shared loads and F
FMAs per loaded float -> barrier); ``tile_st1_ld{W}_...`` puts the W-way conflict on the
loads instead; ``pure_st{W}_b{V}`` only stores. V is 1 (4-byte lanes) or 4 (16-byte).

How the record decides the threshold (fixed before the run, checked by
tests/test_cl202_store_threshold.py): for each store degree W, the slowdown of every tile
configuration (V in 1, 4; F in 2, 4, 8) against its conflict-free run; the default
threshold is the smallest W whose median slowdown over the six configurations is at least
5% of the kernel's time (the bar of the triage, bench/triage/sheet-final.md).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RECORD = ROOT / "fixtures" / "CL202" / "store_conflict.json"
METRICS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "gpu__time_duration.sum",
)
_NAME = re.compile(r"(tile|pure)_st(\d+)(?:_ld(\d+))?_b(\d+)(?:_f(\d+))?$")


def describe(name: str) -> dict:
    """The parameters a kernel's name encodes."""
    m = _NAME.match(name)
    if m is None:
        raise ValueError(name)
    kind, st, ld, vec, fma = m.groups()
    return {"kind": kind, "store_ways": int(st), "load_ways": int(ld or 1),
            "lane_bytes": 4 * int(vec), "fma_per_float": int(fma or 0)}


def build(tmp: Path) -> Path:
    exe = tmp / "store_conflict"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-lineinfo", "-o", str(exe),
                    str(HERE / "store_conflict.cu")], check=True)
    return exe


def _cuobjdump() -> str:
    found = shutil.which("cuobjdump")
    if found:
        return found
    for base in sys.path:               # the nvidia-cuda-* wheels of a virtual environment
        cand = Path(base) / "nvidia" / "cu13" / "bin" / "cuobjdump"
        if cand.is_file():
            return str(cand)
    raise SystemExit("cuobjdump not found")


def sass_counts(exe: Path) -> dict[str, dict[str, int]]:
    """Shared-memory instructions per kernel, by demangled-enough template arguments."""
    sass = subprocess.run([_cuobjdump(), "-sass", str(exe)], capture_output=True, text=True,
                          check=True).stdout
    out: dict[str, dict[str, int]] = {}
    cur = None
    for line in sass.splitlines():
        m = re.search(r"Function : _Z\d+(tile_loop|pure_store)I((?:Li\d+E)+)E", line)
        if m:
            args = [int(a) for a in re.findall(r"Li(\d+)E", m[2])]
            if m[1] == "tile_loop":
                v, st, ld, f = args
                cur = f"tile_st{st}_ld{ld}_b{v}_f{f}"
            else:
                v, st = args
                cur = f"pure_st{st}_b{v}"
            out[cur] = {}
            continue
        m = re.search(r"\b(STS|LDS)(\.\d+)?\b", line)
        if m and cur:
            out[cur][m[0]] = out[cur].get(m[0], 0) + 1
    return out


def check_sass(counts: dict[str, dict[str, int]]) -> None:
    for name, got in counts.items():
        p = describe(name)
        st, ld = ("STS.128", "LDS.128") if p["lane_bytes"] == 16 else ("STS", "LDS")
        if p["kind"] == "tile":
            want = {st: 8 * 4 // p["lane_bytes"], ld: 32 * 4 // p["lane_bytes"]}
            assert got == want, (name, got, want)
        else:
            assert set(got) == {st}, (name, got)


def profile(exe: Path) -> tuple[dict[str, dict[str, float]], str]:
    proc = subprocess.run(["ncu", "--csv", "--print-units", "base", "--metrics",
                           ",".join(METRICS), str(exe), "--once"],
                          capture_output=True, text=True, timeout=200)
    text = proc.stdout
    names = re.findall(r"launched name=(\S+)", text)
    start = text.find('"ID"')
    rows = list(csv.DictReader(io.StringIO(text[start:]))) if start >= 0 else []
    by_id: dict[int, dict[str, float]] = {}
    for r in rows:
        try:
            by_id.setdefault(int(r["ID"]), {})[r["Metric Name"]] = \
                float(r["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
    # ncu numbers launches in the program's order, the order of its 'launched' lines
    prof = {names[i]: m for i, m in enumerate(by_id[k] for k in sorted(by_id))
            if i < len(names)}
    return prof, text + proc.stderr


def slowdowns(record: dict) -> dict:
    """For each store degree: the six tile configurations' slowdowns against their
    conflict-free runs, and the median (the figure that sets the threshold); the same for
    the load degrees (for contrast) and the pure-store kernels."""
    runs = record["runs"]
    out: dict = {"store": {}, "load": {}, "pure_store": {}}
    for side in ("store", "load"):
        for w in (2, 4, 8):
            per = {}
            for v in (1, 4):
                for f in (2, 4, 8):
                    base = runs.get(f"tile_st1_ld1_b{v}_f{f}")
                    key = f"tile_st{w}_ld1_b{v}_f{f}" if side == "store" else \
                        f"tile_st1_ld{w}_b{v}_f{f}"
                    if base and key in runs:
                        per[f"b{v}_f{f}"] = round(runs[key]["median_ms"] /
                                                  base["median_ms"] - 1, 4)
            if per:
                vals = sorted(per.values())
                mid = len(vals) // 2
                med = vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2
                out[side][str(w)] = {"per_config": per, "median": round(med, 4)}
    for v in (1, 4):
        base = runs.get(f"pure_st1_b{v}")
        for w in (2, 4, 8):
            key = f"pure_st{w}_b{v}"
            if base and key in runs:
                out["pure_store"][f"{w}_b{v}"] = round(runs[key]["median_ms"] /
                                                       base["median_ms"], 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    exe = build(tmp)
    counts = sass_counts(exe)
    check_sass(counts)
    print(f"SASS checked: {len(counts)} kernels")
    if args.compile_only:
        print(json.dumps(counts, indent=1))
        return
    out = args.out
    timing = subprocess.run([str(exe)], capture_output=True, text=True, check=True,
                            timeout=120).stdout
    if out:
        (out / "timing.txt").write_text(timing)
    runs: dict[str, dict] = {}
    for line in timing.splitlines():
        m = re.match(r"name=(\S+) blocks=(\d+) ntiles=(\d+) median_ms=([\d.]+) "
                     r"min_ms=([\d.]+) max_ms=([\d.]+)", line)
        if m:
            runs[m[1]] = {**describe(m[1]), "blocks": int(m[2]), "ntiles": int(m[3]),
                          "median_ms": float(m[4]), "min_ms": float(m[5]),
                          "max_ms": float(m[6]), "sass": counts.get(m[1], {})}
    record = {"gpu": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                     "--format=csv,noheader"], capture_output=True,
                                    text=True).stdout.strip(),
              "nvcc": subprocess.run(["nvcc", "--version"], capture_output=True,
                                     text=True).stdout.strip().splitlines()[-1],
              "runs": runs}
    record["slowdown"] = slowdowns(record)
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    if out:
        (out / RECORD.name).write_text(RECORD.read_text())
    try:
        prof, log = profile(exe)
    except subprocess.TimeoutExpired as exc:
        prof, log = {}, f"ncu timed out: {exc}"
    if out:
        (out / "ncu.txt").write_text(log)
    for name, m in prof.items():
        if name not in runs:
            continue
        runs[name]["ncu"] = m
        st_i = m.get("smsp__sass_inst_executed_op_shared_st.sum") or 0
        ld_i = m.get("smsp__sass_inst_executed_op_shared_ld.sum") or 0
        if st_i:
            runs[name]["st_wavefronts_per_inst"] = round(
                m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"] / st_i, 3)
        if ld_i:
            runs[name]["ld_wavefronts_per_inst"] = round(
                m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] / ld_i, 3)
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    if out:
        (out / RECORD.name).write_text(RECORD.read_text())
    print(json.dumps(record["slowdown"], indent=1))
    for name, r in sorted(runs.items()):
        print(name, r["median_ms"], r.get("st_wavefronts_per_inst"),
              r.get("ld_wavefronts_per_inst"))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
