"""GPU truth for CL303 (and the ptxas logs of CL301-CL303), run on a machine with a GPU.

    python3 tools/gputruth/occupancy.py --out OUT [--compile-only]

1. Every kernel of fixtures/CL303/*.cu is built into a small driver, once per
   ``-maxrregcount`` value (and once without), with ``-Xptxas -v`` so the ptxas-reported
   registers are known. For every kernel, block size and dynamic shared memory size, the
   driver raises ``cudaFuncAttributeMaxDynamicSharedMemorySize`` to the device's opt-in
   maximum and asks ``cudaOccupancyMaxActiveBlocksPerMultiprocessor``; it also prints
   ``cudaFuncGetAttributes`` (numRegs, sharedSizeBytes) and the device's limits.
   Everything goes to OUT/truth.json (copy it to fixtures/CL303/truth.json).
2. Every fixture of CL301-CL303 is compiled for several architectures in one nvcc call
   (``-gencode`` for each), with ``-Xptxas -v,-warn-spills``; the logs go to
   OUT/logs/<code>_<name>.multiarch.log with the nvcc version in OUT/logs/nvcc_version.txt.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures"
MAXRREG = [None, 24, 32, 40, 48, 56, 64, 72, 80, 96, 128, 168, 255]
BLOCKS = [32, 64, 96, 128, 192, 256, 320, 384, 512, 640, 768, 1024]
DYN_SMEM = [0, 1024, 4096, 16384, 40000, 65536, 100000, 150000, 220000]
ARCH_SETS = [["70", "80", "90"], ["75", "80", "90"], ["80", "90"]]

KERNEL_RE = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(")


def kernels_of(path: Path) -> list[str]:
    return KERNEL_RE.findall(path.read_text())


def driver_source(fixture: Path, kernels: list[str]) -> str:
    entries = ",\n".join(f'    {{"{k}", (const void*){k}}}' for k in kernels)
    blocks = ", ".join(map(str, BLOCKS))
    dyn = ", ".join(map(str, DYN_SMEM))
    return f"""#include "{fixture}"
#include <cstdio>
#include <cuda_runtime.h>
struct K {{ const char* name; const void* fn; }};
static K kernels[] = {{
{entries}
}};
int main() {{
    cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
    printf("DEVICE\\t%s\\t%d.%d\\t%d\\t%d\\t%zu\\t%zu\\t%zu\\t%zu\\t%d\\t%d\\n", p.name, p.major, p.minor,
           p.regsPerMultiprocessor, p.maxThreadsPerMultiProcessor, p.sharedMemPerMultiprocessor,
           p.sharedMemPerBlock, p.sharedMemPerBlockOptin, p.reservedSharedMemPerBlock,
           p.maxBlocksPerMultiProcessor, p.regsPerBlock);
    int blocks[] = {{{blocks}}};
    int dyn[] = {{{dyn}}};
    for (auto& k : kernels) {{
        cudaFuncAttributes a; cudaFuncGetAttributes(&a, k.fn);
        int optin = (int)p.sharedMemPerBlockOptin - (int)a.sharedSizeBytes;
        cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
        for (int b : blocks) for (int d : dyn) {{
            int n = -1;
            cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k.fn, b, d);
            if (e != cudaSuccess) {{ cudaGetLastError(); n = -1; }}
            printf("OCC\\t%s\\t%d\\t%zu\\t%d\\t%d\\t%d\\t%d\\n", k.name, a.numRegs,
                   a.sharedSizeBytes, a.maxThreadsPerBlock, b, d, n);
        }}
    }}
    return 0;
}}
"""


def run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)


def build(work: Path, fixture: Path, kernels: list[str], maxrreg: int | None):
    tag = f"r{maxrreg}" if maxrreg else "rdefault"
    src = work / f"driver_{fixture.stem}_{tag}.cu"
    src.write_text(driver_source(fixture.resolve(), kernels))
    exe = work / f"driver_{fixture.stem}_{tag}"
    cmd = ["nvcc", "-O2", "-arch=sm_90", "-Xptxas", "-v", "-o", str(exe), str(src)]
    if maxrreg:
        cmd.insert(1, f"-maxrregcount={maxrreg}")
    proc = run(cmd)
    return maxrreg, exe, proc.returncode, proc.stdout + proc.stderr


def ptxas_registers(log: str) -> dict[str, tuple[int, int]]:
    """{kernel: (registers, barriers)} for sm_90, by mangled name (no demangler needed:
    the fixture kernels are plain functions, ``_Z<len><name>...``)."""
    sys.path.insert(0, str(ROOT))
    from cudalint.analysis.ptxas.ptxas_log import parse_log
    out = {}
    for r in parse_log(log):
        m = re.match(r"_Z(\d+)", r.mangled)
        if r.entry and r.registers is not None and r.arch == "sm_90" and m:
            n = int(m.group(1))
            out[r.mangled[m.end():m.end() + n]] = (r.registers, r.barriers or 0)
    return out


def annotate_ptxas(truth_path: Path) -> None:
    """Fill ptxas_registers/barriers of an existing truth.json by rebuilding the drivers
    here (same nvcc build as on the device: compile-time facts, no GPU needed). The first
    device run (2025 session) matched names through the demangler, absent there."""
    data = json.loads(truth_path.read_text())
    work = Path("/tmp/cudalint_gputruth_build")
    work.mkdir(parents=True, exist_ok=True)
    facts: dict[tuple[str, int | None], dict[str, tuple[int, int]]] = {}
    for fixture in sorted((FIX / "CL303").glob("*.cu")):
        kernels = kernels_of(fixture)
        with ThreadPoolExecutor(8) as pool:
            for maxrreg, _, rc, log in pool.map(lambda r: build(work, fixture, kernels, r),
                                                MAXRREG):
                if rc == 0:
                    facts[(fixture.name, maxrreg)] = ptxas_registers(log)
    for rec in data["records"]:
        got = facts.get((rec["fixture"], rec["maxrregcount"]), {}).get(rec["kernel"])
        if got is not None:
            rec["ptxas_registers"], rec["barriers"] = got
    data["ptxas_facts_from"] = run(["nvcc", "--version"]).stdout.strip().splitlines()[-1]
    truth_path.write_text(json.dumps(data, indent=1) + "\n")


def capture_logs(out: Path) -> None:
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "nvcc_version.txt").write_text(run(["nvcc", "--version"]).stdout)
    for code in ("CL301", "CL302", "CL303"):
        for cu in sorted((FIX / code).glob("*.cu")):
            for archs in ARCH_SETS:
                cmd = ["nvcc", "-c", "-o", "/dev/null", "-Xptxas", "-v,-warn-spills"]
                for a in archs:
                    cmd += ["-gencode", f"arch=compute_{a},code=sm_{a}"]
                proc = run(cmd + [cu.name], cwd=cu.parent)
                if proc.returncode == 0:
                    (logs / f"{code}_{cu.stem}.multiarch.log").write_text(
                        "# " + " ".join(cmd + [cu.name]) + "\n" + proc.stdout + proc.stderr)
                    break
                print(f"{cu.name} for {archs}: {proc.stderr.strip()[:200]}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--annotate-ptxas", metavar="TRUTH_JSON",
                    help="only fill ptxas_registers/barriers of an existing truth.json")
    args = ap.parse_args()
    if args.annotate_ptxas:
        annotate_ptxas(Path(args.annotate_ptxas))
        return 0
    out = Path(args.out)
    work = Path("/tmp/cudalint_gputruth_build")   # binaries stay out of OUT
    work.mkdir(parents=True, exist_ok=True)
    capture_logs(out)
    records = []
    device = None
    for fixture in sorted((FIX / "CL303").glob("*.cu")):
        kernels = kernels_of(fixture)
        with ThreadPoolExecutor(8) as pool:
            builds = list(pool.map(lambda r: build(work, fixture, kernels, r), MAXRREG))
        for maxrreg, exe, rc, log in builds:
            if rc != 0:
                print(f"build failed ({maxrreg}): {log[-2000:]}", file=sys.stderr)
                continue
            regs = ptxas_registers(log)
            if args.compile_only:
                print(maxrreg, regs)
                continue
            proc = run([str(exe)])
            for line in proc.stdout.splitlines():
                f = line.split("\t")
                if f[0] == "DEVICE":
                    device = dict(zip(["name", "cc", "regs_per_sm", "max_threads_per_sm",
                                       "smem_per_sm", "smem_per_block", "smem_per_block_optin",
                                       "reserved_smem_per_block", "max_blocks_per_sm",
                                       "regs_per_block"],
                                      [f[1], f[2]] + [int(x) for x in f[3:]]))
                elif f[0] == "OCC":
                    name = f[1]
                    records.append({
                        "fixture": fixture.name, "kernel": name,
                        "maxrregcount": maxrreg, "registers": int(f[2]),
                        "ptxas_registers": regs.get(name, (None, 0))[0],
                        "barriers": regs.get(name, (None, 0))[1],
                        "static_smem": int(f[3]), "max_threads_per_block": int(f[4]),
                        "block": int(f[5]), "dynamic_smem": int(f[6]),
                        "active_blocks": int(f[7])})
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
    if not args.compile_only:
        nvcc = run(["nvcc", "--version"]).stdout.strip().splitlines()[-1:]
        (out / "truth.json").write_text(json.dumps({
            "tool": "tools/gputruth/occupancy.py",
            "api": "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
            "nvcc": nvcc[0] if nvcc else None, "device": device,
            "records": records}, indent=1) + "\n")
        print(f"{len(records)} records", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
