"""GPU truth for CL108 (global-memory races between threads of one launch).

compute-sanitizer racecheck checks shared memory only (tools/gputruth/probes/results.json:
0 hazards for an in-place neighbour update), so the evidence is the result itself. Every
kernel of fixtures/CL108/global_race.cu is built twice for sm_90:

- as written, launched with the block and grid of PLAN on buffers filled with a
  deterministic pattern, twice (two GPU runs);
- as a device function (``__global__`` rewritten to ``__device__``, ``threadIdx``/``blockIdx``/
  ``blockDim``/``gridDim`` read from device variables) called by a one-thread driver
  kernel for every thread of the launch, one after the other: once in ascending order
  (block 0 thread 0 first) and once in descending order (the last thread of the last
  block first). These are two legal schedules of the launch, run serially.

A kernel whose two serial schedules leave different buffers depends on the order its
threads run in: a race. The record counts, per kernel, the elements that differ between
the two serial schedules, between each and the GPU run, and between the two GPU runs.

    python tools/gputruth/global_race.py --compile-only     # here: the program builds
    python3 tools/gputruth/global_race.py --out $OUT --racecheck   # on the GPU machine
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "CL108" / "global_race.cu"
RECORD = ROOT / "fixtures" / "CL108" / "truth.json"

# kernel -> (grid, block, buffers [(C type, elements)], arguments as C expressions over
# the buffers b0, b1, ... already cast to their types)
PLAN: dict[str, tuple[int, int, list[tuple[str, int]], list[str]]] = {
    "shift_left_in_place": (4, 256, [("float", 1024)], ["b0", "1024"]),
    "add_neighbour_offset": (1, 256, [("int", 512)], ["b0", "1"]),
    "read_next_block": (4, 256, [("float", 1280)], ["b0"]),
    "smooth": (4, 256, [("float", 1024)], ["b0", "b0", "1024"]),
    "scale_own_element": (4, 256, [("float", 1024)], ["b0", "1024"]),
    "disjoint_ranges": (4, 256, [("float", 4096)], ["b0"]),
    "shift_left_out_of_place": (4, 256, [("float", 1024), ("float", 1024)],
                                ["b0", "b1", "1024"]),
    "write_pass": (4, 256, [("float", 1024), ("float", 1024)], ["b0", "b1", "1024"]),
    "read_pass": (4, 256, [("float", 1024), ("float", 1024)], ["b1", "b0", "1024"]),
    "fold_halves": (4, 256, [("float", 1024)], ["b0", "512"]),
    "atomic_neighbour": (4, 256, [("int", 1024)], ["b0", "1024"]),
    "mark_duplicates": (4, 256, [("bool", 1024), ("int", 1024)], ["b0", "b1", "1024"]),
    "scale_rows": (4, 256, [("float", 2400)], ["b0", "300", "8", "300"]),
}


def _init(ctype: str, k: int) -> str:
    """The fill of buffer k: neighbours differ; the keys of mark_duplicates come in runs
    of 4, so that two threads store ``false`` to one element."""
    if ctype == "bool":
        return "1"
    if ctype == "int":
        return f"(int)((i / {1 + 3 * k}) % 89 + 1)"   # buffer 1 (keys): runs of 4
    return f"(float)((i * {7 + k}) % 97 + 1)"


def sources(fixture: Path) -> dict[str, str]:
    text = fixture.read_text()
    launches = re.compile(r"\b\w+\s*<<<[^;]*;")
    par = [f'#include "{fixture}"', "#include <cstdio>"]
    ser = ["#include <cstdio>",
           "__device__ uint3 cl_tid, cl_bid, cl_bdim, cl_gdim;",
           "#define threadIdx cl_tid", "#define blockIdx cl_bid",
           "#define blockDim cl_bdim", "#define gridDim cl_gdim",
           "namespace serial {",
           launches.sub(";", text).replace("__global__", "__device__"),
           "}",
           "#undef threadIdx", "#undef blockIdx",
           "#undef blockDim", "#undef gridDim"]
    main = ["#include <cstdio>", "#include <cstring>", "#include <cuda_runtime.h>",
            "#include <vector>"]
    for name, (grid, block, bufs, args) in PLAN.items():
        casts = "".join(f"{t}* b{k} = ({t}*)p{k}; " for k, (t, _) in enumerate(bufs))
        params = ", ".join(f"void* p{k}" for k in range(len(bufs)))
        call = f"{name}({', '.join(args)})"
        par.append(f'extern "C" void par_{name}({params}) {{ {casts}'
                   f'{name}<<<{grid}, {block}>>>({", ".join(args)}); }}')
        ser.append(
            f'__global__ void drv_{name}({params}, int down) {{ {casts}\n'
            f'  cl_bdim = make_uint3({block}, 1, 1); cl_gdim = make_uint3({grid}, 1, 1);\n'
            f'  for (int k = 0; k < {grid * block}; ++k) {{\n'
            f'    int g = down ? {grid * block - 1} - k : k;\n'
            f'    cl_bid = make_uint3(g / {block}, 0, 0);'
            f' cl_tid = make_uint3(g % {block}, 0, 0);\n'
            f'    serial::{call};\n  }}\n}}')
        ser.append(f'extern "C" void ser_{name}({params}, int down) {{ '
                   f'drv_{name}<<<1, 1>>>({", ".join(f"p{k}" for k in range(len(bufs)))}, down); }}')
        main.append(f'extern "C" void par_{name}({params});')
        main.append(f'extern "C" void ser_{name}({params}, int down);')
    main.append(_main())
    return {"par.cu": "\n".join(par) + "\n", "ser.cu": "\n".join(ser) + "\n",
            "main.cu": "\n".join(main) + "\n"}


def _main() -> str:
    body = ["static void fill(std::vector<char>& h, const char* t, int k, int n) {"]
    body.append("  for (int i = 0; i < n; ++i) {")
    for t in ("float", "int", "bool"):
        body.append(f'    if (!strcmp(t, "{t}")) (({t}*)h.data())[i] = {_init(t, 0)};')
    body.append('    if (!strcmp(t, "int") && k == 1) ((int*)h.data())[i] = '
                f'{_init("int", 1)};')
    body.append("  }\n}")
    body.append("int main() {\n  printf(\"[\\n\");\n  bool first = true;")
    for name, (grid, block, bufs, _) in PLAN.items():
        sizes = [(t, n, {"float": 4, "int": 4, "bool": 1}[t]) for t, n in bufs]
        nb = len(bufs)
        body.append("  {")
        body.append(f"    const char* types[] = {{{', '.join(chr(34) + t + chr(34) for t, _, _ in sizes)}}};")
        body.append(f"    int counts[] = {{{', '.join(str(n) for _, n, _ in sizes)}}};")
        body.append(f"    int widths[] = {{{', '.join(str(w) for _, _, w in sizes)}}};")
        body.append(f"    std::vector<char> out[4][{nb}]; void* d[{nb}];")
        body.append(f"    for (int r = 0; r < 4; ++r) {{\n"
                    f"      for (int k = 0; k < {nb}; ++k) {{\n"
                    f"        std::vector<char> h(counts[k] * widths[k]); fill(h, types[k], k, counts[k]);\n"
                    f"        cudaMalloc(&d[k], h.size()); cudaMemcpy(d[k], h.data(), h.size(), cudaMemcpyHostToDevice);\n"
                    f"      }}\n"
                    f"      if (r < 2) par_{name}({', '.join(f'd[{k}]' for k in range(nb))});\n"
                    f"      else ser_{name}({', '.join(f'd[{k}]' for k in range(nb))}, r - 2);\n"
                    f"      cudaError_t e = cudaDeviceSynchronize();\n"
                    f"      if (e != cudaSuccess) {{ fprintf(stderr, \"%s: %s\\n\", \"{name}\", cudaGetErrorString(e)); return 1; }}\n"
                    f"      for (int k = 0; k < {nb}; ++k) {{\n"
                    f"        out[r][k].resize(counts[k] * widths[k]);\n"
                    f"        cudaMemcpy(out[r][k].data(), d[k], out[r][k].size(), cudaMemcpyDeviceToHost); cudaFree(d[k]);\n"
                    f"      }}\n    }}")
        body.append("    auto diff = [&](int x, int y) { long c = 0; for (int k = 0; k < "
                    f"{nb}; ++k) for (int i = 0; i < counts[k]; ++i) "
                    "c += memcmp(&out[x][k][i * widths[k]], &out[y][k][i * widths[k]], widths[k]) != 0; return c; };")
        total = sum(n for _, n in bufs)
        body.append(f'    printf("%s {{\\"kernel\\": \\"{name}\\", \\"grid\\": {grid}, \\"block\\": {block}, '
                    f'\\"elements\\": {total}, \\"serial_orders_differ\\": %ld, \\"gpu_vs_ascending\\": %ld, '
                    f'\\"gpu_vs_descending\\": %ld, \\"gpu_runs_differ\\": %ld}}\\n", first ? " " : ",", '
                    f"diff(2, 3), diff(0, 2), diff(0, 3), diff(0, 1)); first = false;")
        body.append("  }")
    body.append('  printf("]\\n");\n  return 0;\n}')
    return "\n".join(body)


def build(work: Path) -> Path:
    for name, src in sources(FIXTURE).items():
        (work / name).write_text(src)
    exe = work / "global_race"
    cmd = ["nvcc", "-O2", "-arch=sm_90", "-w", "-o", str(exe),
           str(work / "par.cu"), str(work / "ser.cu"), str(work / "main.cu")]
    subprocess.run(cmd, check=True)
    return exe


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--racecheck", action="store_true",
                    help="also run the program under compute-sanitizer racecheck")
    a = ap.parse_args()
    sanitizer = None
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(Path(tmp))
        if a.compile_only:
            print("built", exe.name)
            return 0
        run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            print(run.stdout, run.stderr, file=sys.stderr)
            return 1
        records = json.loads(run.stdout)
        if a.racecheck:
            rc = subprocess.run(["compute-sanitizer", "--tool", "racecheck", str(exe)],
                                capture_output=True, text=True, timeout=150)
            sanitizer = [line for line in (rc.stdout + rc.stderr).splitlines()
                         if line.startswith("=========") and "SUMMARY" in line or
                         "hazard" in line.lower()][:20]
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    doc = {"gpu": gpu, "arch": "sm_90", "fixture": str(FIXTURE.relative_to(ROOT)),
           "method": "serial ascending vs descending thread order (device-function copy "
                     "driven by one thread) and two parallel GPU runs; counts of differing "
                     "elements over all buffers",
           "records": records}
    if sanitizer is not None:
        doc["racecheck"] = sanitizer
    dest = (a.out / "truth.json") if a.out else RECORD
    dest.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
