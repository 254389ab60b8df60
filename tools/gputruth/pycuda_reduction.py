"""GPU truth for pycuda's reduction template (issues 15 and 21): compute-sanitizer racecheck
on the CUDA text that fixtures/CL101/pycuda_reduction.py generates for one concrete setting,
the one pycuda's get_sum_kernel(np.float32, np.float32) gives its first stage:
out_type float, BLOCK_SIZE 512 (ReductionKernel's self.block_size), neutral "0",
REDUCE(a, b) a+b, READ_AND_MAP(i) in[i], arguments "const float *in".

The fixture's two template functions are called with those values, pycuda's modules
stubbed (SourceModule keeps the text it receives), so the CUDA file is exactly what the
Python builds: get_reduction_module (volatile final warp, no __syncwarp: the linter
reports CL101) and get_synced_reduction_module (a temporary and __syncwarp() around
each store: silent). Each is built for sm_90 with -lineinfo with a driver that launches
it once (grid GRID blocks of 512 threads, 512 floats of dynamic shared memory, seq_count
1, n GRID*512). Racecheck's hazard lines in the generated file are mapped to lines of the
fixture (the text's first line is the line of the string's opening quotes).

The record goes to fixtures/CL101/pycuda_reduction.truth.json (and $OUT), written by this
script; tests/test_pycuda_reduction_truth.py compares it with the linter's findings.

    python tools/gputruth/pycuda_reduction.py --compile-only     # here: nvcc builds
    python3 tools/gputruth/pycuda_reduction.py --out $OUT        # on the GPU machine
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "CL101" / "pycuda_reduction.py"
TRUTH = FIXTURE.with_name("pycuda_reduction.truth.json")
BLOCK = 512
GRID = 4
# get_sum_kernel(float32, float32), stage 1 (pycuda/reduction.py)
SETTING = {"out_type": "float", "block_size": BLOCK, "neutral": "0", "reduce_expr": "a+b",
           "map_expr": "in[i]", "arguments": "const float *in",
           "name": "reduce_kernel_stage1"}
VARIANTS = ("get_reduction_module", "get_synced_reduction_module")


def generated(function: str) -> str:
    """The CUDA text the fixture's ``function`` hands to SourceModule for SETTING."""
    captured: list[str] = []

    class SourceModule:
        def __init__(self, src, **_):
            captured.append(src)

    pycuda = types.ModuleType("pycuda")
    compiler = types.ModuleType("pycuda.compiler")
    compiler.SourceModule = SourceModule
    tools = types.ModuleType("pycuda.tools")
    tools.dtype_to_ctype = lambda dtype: "float"
    saved = {k: sys.modules.get(k) for k in ("pycuda", "pycuda.compiler", "pycuda.tools")}
    sys.modules.update({"pycuda": pycuda, "pycuda.compiler": compiler,
                        "pycuda.tools": tools})
    try:
        scope: dict = {"__name__": "pycuda_reduction_fixture"}
        exec(compile(FIXTURE.read_text(), str(FIXTURE), "exec"), scope)
        s = SETTING
        scope[function](s["out_type"], s["block_size"], s["neutral"], s["reduce_expr"],
                        s["map_expr"], s["arguments"], s["name"])
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return captured[0]


def string_line(function: str) -> int:
    """The fixture line of the opening quotes of ``function``'s template string."""
    tree = ast.parse(FIXTURE.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for sub in ast.walk(node):
                if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Mod) and \
                        isinstance(sub.left, ast.Constant) and isinstance(sub.left.value, str):
                    return sub.left.lineno
    raise SystemExit(f"no template string in {function}")


def driver(cu: str) -> str:
    return f"""#include "{cu}"
#include <cstdio>
#include <vector>
int main() {{
  const size_t n = {GRID} * {BLOCK};
  std::vector<float> h(n, 1.0f);
  float *in, *out;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, {GRID} * sizeof(float));
  cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  {SETTING["name"]}<<<{GRID}, {BLOCK}, {BLOCK} * sizeof(float)>>>(out, in, 1u, n);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {{ printf("%s\\n", cudaGetErrorString(e)); return 1; }}
  float r[{GRID}];
  cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost);
  printf("sums:");
  for (int b = 0; b < {GRID}; ++b) printf(" %g", r[b]);
  printf("\\n");
  return 0;
}}
"""


def sh(cmd: list[str], timeout: int = 120) -> tuple[int | str, str]:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return "timeout", str(e.stdout or "")
    return res.returncode, res.stdout + res.stderr


def racecheck(exe: str, cu_name: str) -> dict:
    rc, out = sh(["compute-sanitizer", "--tool", "racecheck", "--racecheck-report",
                  "hazard", "--racecheck-detect-level", "info", "--print-limit", "50", exe])
    m = re.search(r"RACECHECK SUMMARY:\s*(\d+) hazards? displayed \((\d+) errors?, "
                  r"(\d+) warnings?\)", out)
    lines = sorted({int(x) for x in re.findall(re.escape(cu_name) + r":(\d+)", out)})
    return {"rc": rc, "errors": int(m.group(2)) if m else None,
            "warnings": int(m.group(3)) if m else None, "lines": lines,
            "summary": [line for line in out.splitlines() if "SUMMARY" in line],
            "sums": [line for line in out.splitlines() if line.startswith("sums:")]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for function in VARIANTS:
            cu = Path(tmp) / f"{function}.cu"
            cu.write_text(generated(function))
            src = Path(tmp) / f"{function}_driver.cu"
            src.write_text(driver(str(cu)))
            exe = str(Path(tmp) / function)
            rc, out = sh(["nvcc", "-arch=sm_90", "-lineinfo", "-o", exe, str(src)], 300)
            if rc != 0:
                raise SystemExit(f"nvcc {function} failed:\n{out}")
            print(f"built {function}", flush=True)
            if args.out:
                Path(args.out).mkdir(parents=True, exist_ok=True)
                Path(args.out, cu.name).write_text(cu.read_text())
            if args.compile_only:
                continue
            first = string_line(function)
            rec = {"function": function, "kernel": SETTING["name"], "setting": SETTING,
                   "block": [BLOCK, 1, 1], "grid": [GRID, 1, 1]}
            rec.update(racecheck(exe, cu.name))
            rec["fixture_lines"] = [first + line - 1 for line in rec["lines"]]
            records.append(rec)
            print(f"  {function}: {rec['summary']} lines {rec['fixture_lines']}", flush=True)
    if args.compile_only:
        return
    _, gpu = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    data = {"tool": "tools/gputruth/pycuda_reduction.py", "gpu": gpu.strip(),
            "arch": "sm_90", "fixture": str(FIXTURE.relative_to(ROOT)), "records": records}
    body = json.dumps(data, indent=1, sort_keys=True) + "\n"
    TRUTH.write_text(body)
    if args.out:
        Path(args.out, TRUTH.name).write_text(body)
    print(f"{len(records)} records")


if __name__ == "__main__":
    main()
