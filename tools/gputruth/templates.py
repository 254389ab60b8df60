"""GPU truth for template kernels (issue 13, items 3-4): each instantiation that a fixture
launches, measured as nvcc builds it.

The fixtures (FILES) hold template kernels launched as ``k<256><<<...>>>`` or
``k<double><<<...>>>``. ``--plan`` (here, needs cudalint) lists each instantiation the
linter finds (model/instances.py: its label, the block of its launch, its parameter types
with the template arguments bound) into templates_plan.json. The device run builds each
fixture for sm_90 with -lineinfo together with a generated host driver whose ``main(argc,
argv)`` launches instantiation number ``argv[1]`` once (buffers of 1.0f, integer
parameters INT_VALUE, grid GRID_X blocks along each used axis) and measures it:

- fixtures/CL101: ``compute-sanitizer --tool racecheck`` (hazard totals: errors between
  warps, warnings within one warp);
- fixtures/CL201, CL202: ncu's global sectors and requests, shared wavefronts and
  instructions (one ncu run per instantiation).

Records go to fixtures/<CODE>/templates.truth.json (and $OUT/<CODE>/), written by this
script; tests/test_templates.py compares them with the linter's findings.

    python tools/gputruth/templates.py --plan                # here
    python tools/gputruth/templates.py --compile-only        # here: the drivers build
    python3 tools/gputruth/templates.py --out $OUT           # on the GPU machine
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAN = Path(__file__).with_name("templates_plan.json")
FILES = ("fixtures/CL101/templated_reduction.cu", "fixtures/CL201/template_dead_loop.cu",
         "fixtures/CL202/template_tile.cu")
FLOATS = 1 << 22            # elements per buffer (of the widest element type: double)
INT_VALUE = 4096            # integer parameters: n, width, n_elements
GRID_X = 4
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
_INT_TYPES = ("int", "unsigned", "unsigned int", "uint32_t", "int32_t", "size_t", "long")


def instantiations(path: Path) -> list[dict]:
    """What the linter instantiates in ``path``: label, block, parameter types."""
    sys.path.insert(0, str(ROOT))
    from cudalint.config import Settings
    from cudalint.context import UnitContext
    from cudalint.model.instances import Instances
    from cudalint.sources.base import SourceFile, Unit
    src = path.read_text()
    ctx = UnitContext(Unit(file=SourceFile(path=str(path), text=src, kind="cuda"),
                           text=src), Settings())
    out = []
    for fn in ctx.analysis(Instances).kernels():
        if not fn.instance:
            continue
        blocks = [l.block for l in fn.instance_launches or () if l.block is not None]
        if not blocks:
            continue
        block = list(blocks[0])
        grid = [GRID_X if block[0] > 1 else 1, GRID_X if block[1] > 1 else 1, 1]
        out.append({"kernel": fn.instance, "name": fn.name, "block": block, "grid": grid,
                    "params": [p.base_type + ("*" if p.is_pointer else "")
                               for p in fn.params]})
    return out


def _argument(ptype: str, i: int) -> str:
    if ptype.endswith("*"):
        base = ptype.rstrip("*").strip()
        return f"({base}*)buf[{i}]"
    base = ptype.replace("const", "").strip()
    if base in _INT_TYPES:
        return f"({base}){INT_VALUE}"
    return f"({base})1"


def driver(path: Path, kernels: list[dict]) -> str:
    lines = [f'#include "{path}"', "#include <cstdio>", "#include <cstdlib>",
             "#include <vector>",
             "int main(int argc, char** argv) {",
             "  if (argc < 2) return 2;",
             "  int which = atoi(argv[1]);",
             "  std::vector<float> hostf(2 * " + str(FLOATS) + ", 1.0f);",
             "  void* buf[8];",
             "  for (int i = 0; i < 8; ++i) {",
             f"    cudaMalloc(&buf[i], {FLOATS} * sizeof(double));",
             f"    cudaMemcpy(buf[i], hostf.data(), {FLOATS} * sizeof(double), "
             "cudaMemcpyHostToDevice);",
             "  }"]
    for k, inst in enumerate(kernels):
        args = ", ".join(_argument(t, i) for i, t in enumerate(inst["params"]))
        b, g = inst["block"], inst["grid"]
        lines.append(f"  if (which == {k}) {inst['kernel']}<<<dim3({g[0]}, {g[1]}, {g[2]}), "
                     f"dim3({b[0]}, {b[1]}, {b[2]})>>>({args});")
    lines += ["  cudaError_t e = cudaDeviceSynchronize();",
              '  if (e != cudaSuccess) { printf("%s\\n", cudaGetErrorString(e)); return 1; }',
              "  return 0;", "}"]
    return "\n".join(lines) + "\n"


def sh(cmd: list[str], timeout: int = 120) -> tuple[int | str, str]:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return "timeout", str(e.stdout or "")
    return res.returncode, res.stdout + res.stderr


def racecheck(exe: str, k: int) -> dict:
    import re
    rc, out = sh(["compute-sanitizer", "--tool", "racecheck", "--racecheck-report",
                  "hazard", "--racecheck-detect-level", "info", "--print-limit", "20",
                  exe, str(k)])
    m = re.search(r"RACECHECK SUMMARY:\s*(\d+) hazards? displayed \((\d+) errors?, "
                  r"(\d+) warnings?\)", out)
    lines = sorted({int(x) for x in re.findall(r"templated_reduction\.cu:(\d+)", out)})
    summary = [l for l in out.splitlines() if "SUMMARY" in l]
    return {"rc": rc, "errors": int(m.group(2)) if m else None,
            "warnings": int(m.group(3)) if m else None, "lines": lines,
            "summary": summary}


def ncu(exe: str, k: int) -> dict:
    rc, out = sh(["ncu", "--csv", "--print-units", "base", "--metrics", ",".join(METRICS),
                  exe, str(k)], 180)
    start = out.find('"ID"')
    metrics: dict[str, float] = {}
    if start >= 0:
        for row in csv.DictReader(io.StringIO(out[start:])):
            metrics[row["Metric Name"]] = float(row["Metric Value"].replace(",", "") or 0)
    g = metrics.get

    def ratio(a: str, b: str) -> float | None:
        return round(g(a, 0.0) / g(b, 0.0), 4) if g(b) else None
    return {"rc": rc, "metrics": metrics,
            "ld_sectors_per_request": ratio(METRICS[0], METRICS[1]),
            "st_sectors_per_request": ratio(METRICS[2], METRICS[3]),
            "ld_wavefronts": ratio(METRICS[4], METRICS[6]),
            "st_wavefronts": ratio(METRICS[5], METRICS[7]),
            "tail": "" if metrics else out[-2000:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--plan", action="store_true")
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    if args.plan:
        plan = {rel: instantiations(ROOT / rel) for rel in FILES}
        PLAN.write_text(json.dumps(plan, indent=1) + "\n")
        print(sum(len(v) for v in plan.values()), "instantiations")
        return
    plan = json.loads(PLAN.read_text())
    records: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rel, kernels in plan.items():
            code = Path(rel).parent.name
            src = Path(tmp) / f"{Path(rel).stem}_driver.cu"
            src.write_text(driver(ROOT / rel, kernels))
            exe = str(Path(tmp) / Path(rel).stem)
            rc, out = sh(["nvcc", "-arch=sm_90", "-lineinfo", "-o", exe, str(src)], 300)
            if rc != 0:
                raise SystemExit(f"nvcc {rel} failed:\n{out}")
            print(f"built {rel}: {len(kernels)} instantiations", flush=True)
            if args.compile_only:
                continue
            for k, inst in enumerate(kernels):
                rec = {"file": rel, "kernel": inst["kernel"], "block": inst["block"],
                       "grid": inst["grid"]}
                rec.update(racecheck(exe, k) if code == "CL101" else ncu(exe, k))
                records.setdefault(code, []).append(rec)
                print(f"  {inst['kernel']}: {rec.get('rc')}", flush=True)
    if args.compile_only:
        return
    _, gpu = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    for code, recs in records.items():
        data = {"tool": "tools/gputruth/templates.py", "gpu": gpu.strip(), "arch": "sm_90",
                "int_value": INT_VALUE, "records": recs}
        body = json.dumps(data, indent=1, sort_keys=True) + "\n"
        (ROOT / "fixtures" / code / "templates.truth.json").write_text(body)
        if args.out:
            Path(args.out, code).mkdir(parents=True, exist_ok=True)
            Path(args.out, code, "templates.truth.json").write_text(body)
        print(f"{code}: {len(recs)} records")


if __name__ == "__main__":
    main()
