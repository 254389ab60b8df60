"""GPU truth for CL601 (and the CL101 fix of issue 25): what a GPU does with the launch
configurations of fixtures/CL601, and with a full-mask ``__syncwarp()`` that only some
lanes reach.

* ``__launch_bounds__(N)`` for N around the 1024-thread limit: does nvcc build it?
* every ``<<<grid, block>>>`` line of fixtures/CL601/launch_configuration.cu, with its
  grid and block, launching an empty kernel: the error ``cudaGetLastError()`` gives right
  after the launch (the runtime API);
* the CuPy launches of fixtures/CL601/python_launch.py (the driver API, cuLaunchKernel);
* tests/fuzz/regressions/cuda/cl101_fix_under_divergent_if.cu as written and with the
  old CL101 fix (``__syncwarp();`` inside ``if (threadIdx.x > i)``), under
  compute-sanitizer racecheck and synccheck.

    python3 tools/gputruth/launch.py --out $OUT      # on the GPU machine
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "CL601" / "launch_configuration.cu"
LU = ROOT / "tests" / "fuzz" / "regressions" / "cuda" / "cl101_fix_under_divergent_if.cu"
_LAUNCH = re.compile(r"^\s*(\w+)<<<(.*)>>>\((.*)\);\s*$")


def sh(cmd: list[str], timeout: int = 300) -> dict:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return {"cmd": " ".join(cmd), "rc": p.returncode, "output": (p.stdout + p.stderr)[-4000:]}
    except subprocess.TimeoutExpired:
        return {"cmd": " ".join(cmd), "rc": "timeout", "output": ""}


def launch_bounds(tmp: Path) -> list[dict]:
    out = []
    for n in (1024, 1025, 2048, 2147483647):
        src = tmp / f"lb{n}.cu"
        src.write_text(f"__global__ void __launch_bounds__({n}) k(float* x) "
                       "{ x[threadIdx.x] = 0.0f; }\n")
        out.append({"max_threads": n, **sh(["nvcc", "-arch=sm_90", "-c", "-o",
                                            str(tmp / f"lb{n}.o"), str(src)])})
    return out


def launch_harness() -> str:
    """Every launch line of the fixture, in its own block, launching an empty kernel."""
    head = [l for l in FIXTURE.read_text().splitlines() if l.startswith("#define")]
    body = []
    for row, line in enumerate(FIXTURE.read_text().splitlines(), start=1):
        m = _LAUNCH.match(line)
        if m:
            body.append(f"    {{ noop<<<{m.group(2)}>>>(); cudaError_t e = cudaGetLastError(); "
                        f"cudaError_t s = cudaDeviceSynchronize(); "
                        f'printf("%d\\t%s\\t%s\\n", {row}, cudaGetErrorName(e), '
                        f"cudaGetErrorName(s)); }}")
        elif line.strip().startswith("dim3 "):
            body.append(line)
    return "\n".join(["#include <cstdio>", *head, "__global__ void noop() {}",
                      "int main() {", "    int n = 256;", *body, "    return 0;", "}", ""])


CUPY = r'''
import json, cupy as cp
k = cp.RawKernel(r"""extern "C" __global__ void add(float* x) { }""", "add")
y = cp.zeros(16, dtype=cp.float32)
out = []
for grid, block in (((1, 70000), (256,)), ((1,), (2048,)), ((1,), (32, 32, 2)),
                    ((1,), (1, 1, 128)), ((1,), (99999999999,)), ((1,), (4294967328,)),
                    ((4096,), (256,))):
    try:
        k(grid, block, (y,))
        cp.cuda.runtime.deviceSynchronize()
        out.append({"grid": grid, "block": block, "error": None})
    except Exception as e:
        out.append({"grid": grid, "block": block, "error": f"{type(e).__name__}: {e}"})
print(json.dumps(out))
'''


def lu_runs(tmp: Path) -> dict:
    src = LU.read_text()
    fixed = src.replace("        if (threadIdx.x > i) {\n",
                        "        if (threadIdx.x > i) {\n            __syncwarp();\n", 1)
    out = {}
    for name, text in (("as_written", src), ("old_fix", fixed)):
        path = tmp / f"lu_{name}.cu"
        path.write_text(text + "\nint main() { float* m; cudaMalloc(&m, 256 * 4); "
                        "cudaMemset(m, 0, 256 * 4); host(m); "
                        "return cudaDeviceSynchronize() != cudaSuccess; }\n")
        exe = str(tmp / f"lu_{name}")
        build = sh(["nvcc", "-arch=sm_90", "-lineinfo", "-o", exe, str(path)])
        runs = {"build": build}
        if build["rc"] == 0:
            runs["racecheck"] = sh(["compute-sanitizer", "--tool", "racecheck",
                                    "--racecheck-report", "hazard", "--print-limit", "20", exe])
            runs["synccheck"] = sh(["compute-sanitizer", "--tool", "synccheck",
                                    "--print-limit", "20", exe])
            runs["summary"] = [l.strip("= ").strip() for t in ("racecheck", "synccheck")
                               for l in runs[t]["output"].splitlines() if "SUMMARY" in l]
        out[name] = runs
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    data: dict = {"gpu": sh(["nvidia-smi", "--query-gpu=name,driver_version",
                             "--format=csv,noheader"])["output"].strip(),
                  "nvcc": sh(["nvcc", "--version"])["output"].strip().splitlines()[-1:]}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        data["launch_bounds"] = launch_bounds(tmp)
        src = tmp / "launches.cu"
        src.write_text(launch_harness())
        build = sh(["nvcc", "-arch=sm_90", "-o", str(tmp / "launches"), str(src)])
        data["launches_build"] = build
        if build["rc"] == 0:
            run = sh([str(tmp / "launches")], 300)
            data["launches"] = [dict(zip(("line", "launch_error", "sync_error"), r.split("\t")))
                                for r in run["output"].splitlines() if r.count("\t") == 2]
            data["launches_rc"] = run["rc"]
        cupy = sh(["python3", "-c", CUPY], 300)
        data["cupy"] = cupy
        data["lu"] = lu_runs(tmp)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Path(args.out, "launch_truth.json").write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps({k: v for k, v in data.items() if k != "lu"}, indent=1)[:6000])


if __name__ == "__main__":
    main()
