"""GPU truth for CL201 (global sectors per request) and CL202 (shared wavefronts).

For every kernel in fixtures/CL201/*.cu and fixtures/CL202/*.cu: build the fixture for
sm_90 with -lineinfo together with a generated host driver that launches each kernel once
with the block/grid/dynamic-shared-memory of the fixture's own launch line (or
__launch_bounds__), on zeroed 64 MiB buffers; profile it with ncu and write one record per
kernel to fixtures/<CODE>/truth.json (and a copy under --out).

    python tools/gputruth/memory.py --out $OUT            # on a machine with a GPU
    python tools/gputruth/memory.py --compile-only        # check the build step
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

PLAN = Path(__file__).with_name("memory_plan.json")

CODES = ("CL201", "CL202")
METRICS = [
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
]
BUFFER_BYTES = 64 << 20


def kernels_of(path: Path) -> list[dict]:
    # the device machine may lack tree-sitter: it reads the plan written here by --plan
    from cudalint.model.consteval import eval_int
    from cudalint.model.kernels import Model
    from cudalint.parse import parse, text
    model = Model(parse(path.read_bytes()))
    out = []
    for fn in model.kernels:
        launches = [l for l in model.launches if l.kernel == fn.name]
        if launches:
            l = launches[0]
            block, grid = l.block, l.grid or (1, 1, 1)
            smem = 0
            if len(l.config) > 2:
                env = l.function.constants if l.function else model.constants
                smem = eval_int(text(l.config[2]), env) or 0
        elif fn.launch_bounds and fn.launch_bounds[0]:
            block, grid, smem = (fn.launch_bounds[0], 1, 1), (1, 1, 1), 0
        else:
            continue
        if block is None or not all(p.is_pointer for p in fn.params):
            continue
        out.append({"kernel": fn.name, "block": list(block), "grid": list(grid),
                    "smem": smem,
                    "params": [p.base_type for p in fn.params]})
    return out


def driver(path: Path, kernels: list[dict]) -> str:
    nbuf = max((len(k["params"]) for k in kernels), default=1)
    lines = [f'#include "{path}"', "#include <cstdio>", "int main() {",
             f"  void* buf[{nbuf}];",
             f"  for (int i = 0; i < {nbuf}; ++i) {{ cudaMalloc(&buf[i], {BUFFER_BYTES}); "
             f"cudaMemset(buf[i], 0, {BUFFER_BYTES}); }}"]
    for k in kernels:
        args = ", ".join(f"({t}*)buf[{i}]" for i, t in enumerate(k["params"]))
        b, g = k["block"], k["grid"]
        lines.append(f"  {k['kernel']}<<<dim3({g[0]}, {g[1]}, {g[2]}), "
                     f"dim3({b[0]}, {b[1]}, {b[2]}), {k['smem']}>>>({args});")
    lines += ["  cudaError_t e = cudaDeviceSynchronize();",
              '  if (e != cudaSuccess) { printf("%s\\n", cudaGetErrorString(e)); return 1; }',
              "  return 0;", "}"]
    return "\n".join(lines) + "\n"


def run(cmd: list[str]) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res.stdout}\n{res.stderr}")
    return res.stdout


def profile(exe: str) -> dict[str, dict[str, float]]:
    out = run(["ncu", "--csv", "--print-units", "base", "--metrics", ",".join(METRICS), exe])
    start = out.find('"ID"')
    by_kernel: dict[str, dict[str, float]] = {}
    for row in csv.DictReader(io.StringIO(out[start:])):
        name = row["Kernel Name"].split("(")[0].strip()
        value = float(row["Metric Value"].replace(",", "") or 0)
        by_kernel.setdefault(name, {})[row["Metric Name"]] = value
    return by_kernel


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 4) if b else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--plan", action="store_true",
                    help="only write tools/gputruth/memory_plan.json (needs cudalint)")
    args = ap.parse_args()
    if args.plan:
        plan = {str(p.relative_to(ROOT)): kernels_of(p) for code in CODES
                for p in sorted((ROOT / "fixtures" / code).glob("*.cu"))}
        PLAN.write_text(json.dumps(plan, indent=1) + "\n")
        return
    plan = json.loads(PLAN.read_text())
    records: dict[str, list[dict]] = {c: [] for c in CODES}
    with tempfile.TemporaryDirectory() as tmp:
        for code in CODES:
            for path in sorted((ROOT / "fixtures" / code).glob("*.cu")):
                kernels = plan[str(path.relative_to(ROOT))]
                src = Path(tmp) / f"{code}_{path.stem}_driver.cu"
                src.write_text(driver(path, kernels))
                exe = str(Path(tmp) / f"{code}_{path.stem}")
                run(["nvcc", "-arch=sm_90", "-lineinfo", "-o", exe, str(src)])
                print(f"built {path.relative_to(ROOT)}: {len(kernels)} kernels", flush=True)
                if args.compile_only:
                    continue
                measured = profile(exe)
                for k in kernels:
                    m = measured.get(k["kernel"], {})
                    rec = {"file": str(path.relative_to(ROOT)), "kernel": k["kernel"],
                           "block": k["block"], "grid": k["grid"], "metrics": m}
                    g = lambda n: m.get(n, 0.0)  # noqa: E731
                    rec["ld_sectors_per_request"] = ratio(
                        g(METRICS[0]), g(METRICS[1]))
                    rec["st_sectors_per_request"] = ratio(
                        g(METRICS[2]), g(METRICS[3]))
                    rec["ld_wavefronts"] = ratio(g(METRICS[4]), g(METRICS[6]))
                    rec["st_wavefronts"] = ratio(g(METRICS[5]), g(METRICS[7]))
                    records[code].append(rec)
    if args.compile_only:
        return
    gpu = run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    for code, recs in records.items():
        data = {"tool": "tools/gputruth/memory.py", "gpu": gpu.strip(), "arch": "sm_90",
                "records": recs}
        body = json.dumps(data, indent=1, sort_keys=True) + "\n"
        (ROOT / "fixtures" / code / "truth.json").write_text(body)
        if args.out:
            Path(args.out, code).mkdir(parents=True, exist_ok=True)
            Path(args.out, code, "truth.json").write_text(body)
        print(f"{code}: {len(recs)} records")


if __name__ == "__main__":
    main()
