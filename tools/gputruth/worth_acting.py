"""GPU truth for three "worth acting on" questions left by issue 20's second triage, in one
H100 run (the kernels and what each isolates: worth_acting.cu).

    python tools/gputruth/worth_acting.py --compile-only     # here: build, ptxas, SASS checks
    python tools/gputruth/worth_acting.py --out $OUT         # on a machine with a GPU

1. CL202, convolutionSeparable's 2-way tile stores (cuda-samples convolutionRowsKernel,
   verbatim, 3072x3072): cudalint models them (2-way, the degree ncu measured:
   fixtures/CL202/remedy_truth.json) but leaves them out of the default findings as outside
   the kernel's hottest region (`loops.hot`: 10 stores beside 136 loads per thread). The
   run times the kernel as written, with the stores alone made conflict-free (`warp_rows`)
   and with the printed padding [4][176] (stores and loads), and reads the store and load
   wavefronts of each with ncu. Decision, fixed before the run: the stores are a default
   finding of their own if freeing them alone saves at least 5% of the kernel's time (the
   triage's bar, as for CL202's store threshold).
2. CL204's shared-memory advice when the block is unknown: offered only if at least
   MIN_SHARED_THREADS (128) threads' copies fit one block. Measured: a per-thread array of
   E 32-bit words (256 B to 8 KB) in local memory (ptxas -v: a 4E-byte stack frame) against
   one slice per thread in dynamic shared memory (0-byte frame), at the block keeping the
   most threads per SM, for a data-dependent index (`hist`) and a run-time loop counter
   (`scan`). Decision, fixed before the run: the cutoff is the smallest "threads fitting a
   block" (227 KB // bytes on sm_90) such that every measured size fitting at least as many
   gains at least 5% in both shapes; none if the largest fitting size does not.
3. kaolin's sg loop (2-way transposes through a float[16][17] tile between barriers; the
   triage judged its CL202 findings "not worth acting on", an estimate): an analog as written
   against the conflict-free XOR swizzle, to put a measured figure beside the verdict.

Writes fixtures/CL202/worth_acting.json and fixtures/CL204/shared_cutoff.json (copies under
--out). Tests: tests/test_worth_acting_truth.py.
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
SOURCE = HERE / "worth_acting.cu"
CL202_RECORD = ROOT / "fixtures" / "CL202" / "worth_acting.json"
CL204_RECORD = ROOT / "fixtures" / "CL204" / "shared_cutoff.json"
METRICS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
)
BAR = 0.05                       # the triage's "worth acting on": 5% of the kernel's time
SM90_OPTIN = 232448              # dynamic shared memory a block may have on sm_90 (227 KB)
SIZES = (64, 128, 256, 512, 1024, 2048)
_ENTRY = re.compile(r"Compiling entry function '(_Z\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def kernel_name(mangled: str) -> str:
    """The name worth_acting.cu prints for a kernel, from its mangled symbol."""
    m = re.match(r"_Z\d+(hist|scan)_(local|shared)ILi(\d+)EE", mangled)
    if m:
        return f"{m[1]}_{m[2]}_{m[3]}"
    m = re.match(r"_Z\d+conv_rowsILi(\d+)EE", mangled)
    if m:
        return f"conv_rows_{m[1]}"
    if "conv_rows_warp_rows" in mangled:
        return "conv_rows_warp_rows"
    m = re.match(r"_Z\d+(sg_loop_\w+?)Pf", mangled)
    if m:
        return m[1]
    raise ValueError(mangled)


def build(tmp: Path) -> tuple[Path, dict[str, dict[str, int]]]:
    """The executable, and ptxas -v's stack frame and spills per kernel."""
    exe = tmp / "worth_acting"
    proc = subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-lineinfo", "-Xptxas", "-v",
                           "-o", str(exe), str(SOURCE)], capture_output=True, text=True,
                          check=True)
    frames: dict[str, dict[str, int]] = {}
    cur = None
    for line in (proc.stdout + proc.stderr).splitlines():
        m = _ENTRY.search(line)
        if m:
            cur = kernel_name(m[1])
            continue
        m = _FRAME.search(line)
        if m and cur:
            frames[cur] = {"stack_frame": int(m[1]), "spill_stores": int(m[2]),
                           "spill_loads": int(m[3])}
            cur = None
    return exe, frames


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
    """Shared-memory instructions (STS/LDS by width) of the conv and sg kernels."""
    sass = subprocess.run([_cuobjdump(), "-sass", str(exe)], capture_output=True, text=True,
                          check=True).stdout
    out: dict[str, dict[str, int]] = {}
    cur = None
    for line in sass.splitlines():
        m = re.search(r"Function : (_Z\w+)", line)
        if m:
            name = kernel_name(m[1])
            cur = name if name.startswith(("conv", "sg")) else None
            if cur:
                out[cur] = {}
            continue
        m = re.search(r"\b(STS|LDS)(\.\d+)?\b", line)
        if m and cur:
            out[cur][m[0]] = out[cur].get(m[0], 0) + 1
    return out


def check_build(frames: dict, counts: dict) -> None:
    """What the measurement needs from the compiler: each local variant keeps its array in
    a stack frame of its full size, each shared variant and the conv/sg kernels have none,
    nothing spills, and the conv variants issue the same shared instructions."""
    for e in SIZES:
        for shape in ("hist", "scan"):
            assert frames[f"{shape}_local_{e}"]["stack_frame"] == 4 * e, (shape, e, frames)
            assert frames[f"{shape}_shared_{e}"]["stack_frame"] == 0, (shape, e)
    assert all(f["spill_stores"] == 0 and f["spill_loads"] == 0 for f in frames.values())
    conv = {k: v for k, v in counts.items() if k.startswith("conv")}
    assert len(conv) == 3 and len({json.dumps(v, sort_keys=True) for v in conv.values()}) \
        == 1, conv
    assert conv["conv_rows_160"] == {"STS": 10, "LDS": 129}, conv


def profile(exe: Path) -> tuple[dict[str, dict[str, float]], str]:
    proc = subprocess.run(["ncu", "--csv", "--print-units", "base", "--metrics",
                           ",".join(METRICS), str(exe), "--once"],
                          capture_output=True, text=True, timeout=120)
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
    prof = {names[i]: m for i, m in enumerate(by_id[k] for k in sorted(by_id))
            if i < len(names)}
    return prof, text + proc.stderr


def cutoff(sizes: dict) -> int | None:
    """The smallest threads-fitting count at and above which every measured size gains at
    least BAR in both index shapes (None: not even the smallest array does)."""
    best = None
    for s in sorted(sizes.values(), key=lambda s: -s["threads_fitting"]):
        if min(s["gain"].values()) < BAR:
            break
        best = s["threads_fitting"]
    return best


def decide(runs: dict) -> tuple[dict, dict]:
    """The two records' decisions from the timed runs (and ncu where present)."""
    t = {k: v["median_ms"] for k, v in runs.items()}
    conv = {
        "store_share": round(t["conv_rows_160"] / t["conv_rows_warp_rows"] - 1, 4),
        "remedy_gain": round(t["conv_rows_160"] / t["conv_rows_176"] - 1, 4),
    }
    conv["stores_default_finding"] = conv["store_share"] >= BAR
    sg = {"swizzle_gain": round(t["sg_loop_17"] / t["sg_loop_swizzled"] - 1, 4)}
    sg["worth_acting"] = sg["swizzle_gain"] >= BAR
    sizes = {}
    for e in SIZES:
        b = 4 * e
        sizes[str(e)] = {
            "bytes": b, "threads_fitting": SM90_OPTIN // b,
            "gain": {shape: round(t[f"{shape}_local_{e}"] / t[f"{shape}_shared_{e}"] - 1, 4)
                     for shape in ("hist", "scan")},
            "shared_block": {shape: runs[f"{shape}_shared_{e}"]["block"]
                             for shape in ("hist", "scan")},
            "shared_resident_per_sm": {shape: runs[f"{shape}_shared_{e}"].get("resident")
                                       for shape in ("hist", "scan")},
        }
    return {"conv_rows": conv, "sg_loop": sg}, {"sizes": sizes, "cutoff": cutoff(sizes)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    exe, frames = build(tmp)
    counts = sass_counts(exe)
    check_build(frames, counts)
    print(f"ptxas and SASS checked: {len(frames)} kernels")
    if args.compile_only:
        print(json.dumps({"ptxas": frames, "sass": counts}, indent=1, sort_keys=True))
        return
    out = args.out
    timing = subprocess.run([str(exe)], capture_output=True, text=True, check=True,
                            timeout=150).stdout
    print(timing)
    if out:
        (out / "timing.txt").write_text(timing)
    runs: dict[str, dict] = {}
    for line in timing.splitlines():
        m = re.match(r"name=(\S+) block=(\d+) grid=(\d+) smem=(\d+) median_ms=([\d.]+) "
                     r"min_ms=([\d.]+) max_ms=([\d.]+)(?: resident_per_sm=(\d+))?", line)
        if m:
            runs[m[1]] = {"block": int(m[2]), "grid": int(m[3]), "smem": int(m[4]),
                          "median_ms": float(m[5]), "min_ms": float(m[6]),
                          "max_ms": float(m[7]), **({"resident": int(m[8])} if m[8] else {}),
                          "ptxas": frames.get(m[1], {}), "sass": counts.get(m[1], {})}
    checks = [line for line in timing.splitlines() if line.startswith("check ")]
    env = {"gpu": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                  "--format=csv,noheader"], capture_output=True,
                                 text=True).stdout.strip(),
           "nvcc": subprocess.run(["nvcc", "--version"], capture_output=True,
                                  text=True).stdout.strip().splitlines()[-1],
           "checks": checks}
    cl202, cl204 = decide(runs)

    def write() -> None:
        r202 = {**env, "runs": {k: v for k, v in runs.items()
                                if k.startswith(("conv", "sg"))}, **cl202}
        r204 = {**env, "runs": {k: v for k, v in runs.items()
                                if k.startswith(("hist", "scan"))}, **cl204}
        for path, rec in ((CL202_RECORD, r202), (CL204_RECORD, r204)):
            path.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
            if out:
                (out / path.name).write_text(path.read_text())
    write()                     # the timings first: ncu may run out of time
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
        for side in ("st", "ld"):
            inst = m.get(f"smsp__sass_inst_executed_op_shared_{side}.sum") or 0
            if inst:
                runs[name][f"{side}_wavefronts_per_inst"] = round(
                    m[f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{side}.sum"] / inst, 3)
    write()
    print(json.dumps({"cl202": cl202, "cl204": cl204}, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
