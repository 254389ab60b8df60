"""GPU truth for the issue 23 misses closed on 2026-11-24: a ``continue`` before a
shared-memory exchange (CL102), a ``__shared__`` scalar and a cast of a shared array
stored with different values (CL107), a grid barrier part of a block skips (CL106), and
a global-memory race whose store is in a device function (CL108).

One program per fixture file, built for sm_90 with -lineinfo, measured in one command:

- fixtures/CL102/continue_exchange.cu and fixtures/CL107/shared_scalar.cu: the harness
  and measurements of tools/gputruth/sync.py (each kernel alone, plain run under a time
  limit, compute-sanitizer racecheck and synccheck), records in sync.py's format;
- fixtures/CL106/grid_sync.cu: each kernel launched with cudaLaunchCooperativeKernel
  (4 blocks of 64 threads, on a buffer of 256 ints), a plain run under a time limit
  (a launch that does not complete in it is recorded as "timeout": blocks waiting at a
  grid barrier for a block that never arrives) and synccheck;
- fixtures/CL108/device_function.cu: the method of tools/gputruth/global_race.py (two
  serial schedules of each launch, ascending and descending thread order, and two GPU
  runs; a kernel whose serial schedules leave different buffers races).

The raw output goes to $OUT/issue23_raw.json; ``--records`` turns it into the records
beside each fixture (``<fixture stem>.truth.json``), here, where cudalint's parser reads
the fixtures' annotations (the device machine may lack it).

    python tools/gputruth/issue23.py --compile-only          # here: everything builds
    python3 tools/gputruth/issue23.py --out $OUT              # on the GPU machine
    python tools/gputruth/issue23.py --records RAW.json       # here: write the records
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import global_race as GR  # noqa: E402
import sync as S  # noqa: E402

ROOT = S.ROOT
# racecheck/synccheck with sync.py's harness: (file, kernel, block, grid, parameter types)
SHARED = {
    "fixtures/CL102/continue_exchange.cu": [
        ("fps_continue", [256, 1, 1], [1, 1, 1],
         ["float*", "float*", "int*", "int", "int"]),
        ("fps_continue_synced", [256, 1, 1], [1, 1, 1],
         ["float*", "float*", "int*", "int", "int"])],
    "fixtures/CL107/shared_scalar.cu": [
        (k, [64, 1, 1], [2, 1, 1], ["int*"]) for k in (
            "scalar_thread_ids", "scalar_one_value", "scalar_one_thread",
            "cast_words_thread_ids", "cast_own_word")],
}
GRID_FILE = "fixtures/CL106/grid_sync.cu"
GRID = {"grid_sync_even_threads": 1, "grid_sync_skipped_by_thread_zero": 1,
        "grid_sync_every_thread": 1, "grid_sync_uniform_condition": 2}   # arguments
GRID_BLOCKS, GRID_THREADS = 4, 64
GRID_LIMIT_S = 15
DEVICE_FILE = "fixtures/CL108/device_function.cu"
DEVICE_PLAN = {
    "add_neighbour_kernel": (1, 256, [("int", 512)], ["b0", "1"]),
    "scale_own_kernel": (4, 256, [("float", 1024)], ["b0", "1024"]),
    "shift_out_of_place_kernel": (4, 256, [("float", 1024), ("float", 1024)],
                                  ["b0", "b1", "1024"]),
}


def _kernel_lines(rel: str) -> dict[str, tuple[int, int]]:
    """kernel -> (first line, last line), from the text (no parser on the device)."""
    lines = (ROOT / rel).read_text().splitlines()
    out, name, depth, start = {}, None, 0, 0
    for k, line in enumerate(lines, 1):
        if name is None and line.startswith("__global__ void "):
            name, start, depth = line.split()[2].split("(")[0], k, 0
        if name is not None:
            depth += line.count("{") - line.count("}")
            if depth == 0 and "}" in line:
                out[name], name = (start, k), None
    return out


def shared_plan() -> dict[str, list[dict]]:
    plan = {}
    for rel, kernels in SHARED.items():
        spans = _kernel_lines(rel)
        plan[rel] = [{"kernel": k, "line": spans[k][0], "end_line": spans[k][1],
                      "block": b, "grid": g, "params": p} for k, b, g, p in kernels]
    return plan


def grid_harness() -> str:
    lines = [f'#include "{ROOT / GRID_FILE}"', "#include <cstdio>", "#include <cstring>",
             "int main(int argc, char** argv) {", "  if (argc < 2) return 2;",
             f"  int h[{GRID_BLOCKS * GRID_THREADS}];",
             f"  for (int i = 0; i < {GRID_BLOCKS * GRID_THREADS}; ++i) h[i] = i;",
             "  int* a; cudaMalloc(&a, sizeof h);",
             "  cudaMemcpy(a, h, sizeof h, cudaMemcpyHostToDevice);",
             "  int n = 5; void* args[] = {&a, &n};",
             "  cudaError_t l = cudaErrorInvalidValue;"]
    for k in GRID:
        lines.append(f'  if (!strcmp(argv[1], "{k}")) l = cudaLaunchCooperativeKernel('
                     f"(void*){k}, dim3({GRID_BLOCKS}), dim3({GRID_THREADS}), args);")
    lines += ['  if (l != cudaSuccess) { printf("launch: %s\\n", cudaGetErrorString(l)); '
              "return 1; }",
              "  cudaError_t e = cudaDeviceSynchronize();",
              '  if (e != cudaSuccess) { printf("%s\\n", cudaGetErrorString(e)); return 1; }',
              '  printf("completed\\n");', "  return 0;", "}"]
    return "\n".join(lines) + "\n"


def build(tmp: Path) -> dict[str, object]:
    """Every program: sync-style harnesses per file, the grid harness, the CL108
    schedules program. name -> executable path (or the failed build's output)."""
    jobs = {}
    for rel, kernels in shared_plan().items():
        src = tmp / (Path(rel).stem + "_harness.cu")
        src.write_text(S.harness(ROOT / rel, kernels))
        jobs[rel] = (["nvcc", "-arch=sm_90", "-lineinfo", "-o", str(tmp / Path(rel).stem),
                      str(src)], tmp / Path(rel).stem)
    src = tmp / "grid_harness.cu"
    src.write_text(grid_harness())
    jobs[GRID_FILE] = (["nvcc", "-arch=sm_90", "-lineinfo", "-o", str(tmp / "grid"),
                        str(src)], tmp / "grid")
    GR.PLAN = DEVICE_PLAN
    names = []
    for name, text in GR.sources(ROOT / DEVICE_FILE).items():
        (tmp / name).write_text(text)
        names.append(str(tmp / name))
    jobs[DEVICE_FILE] = (["nvcc", "-O2", "-arch=sm_90", "-w", "-o", str(tmp / "devfn")]
                         + names, tmp / "devfn")

    def one(item):
        rel, (cmd, exe) = item
        res = S.sh(cmd, 300)
        print(f"built {rel}: rc={res['rc']}", flush=True)
        return rel, (str(exe) if res["rc"] == 0 else res)
    with ThreadPoolExecutor(4) as pool:
        return dict(pool.map(one, jobs.items()))


def _grid_measure(exe: str, name: str) -> dict:
    runs = {"plain": S.sh([exe, name], GRID_LIMIT_S),
            "synccheck": S.sh(["compute-sanitizer", "--tool", "synccheck",
                               "--print-limit", "50", exe, name], 3 * GRID_LIMIT_S)}
    print(f"  {name}: plain={runs['plain']['rc']} synccheck={runs['synccheck']['rc']}",
          flush=True)
    return runs


def measure(exes: dict) -> dict:
    raw: dict[str, dict] = {}
    jobs = []
    for rel, kernels in shared_plan().items():
        raw[rel] = {}
        if isinstance(exes[rel], str):
            jobs.extend(lambda into=raw[rel], k=k["kernel"], exe=exes[rel]:
                        S._measure(into, exe, k) for k in kernels)
    raw[GRID_FILE] = {}
    if isinstance(exes[GRID_FILE], str):
        jobs.extend(lambda k=k: raw[GRID_FILE].__setitem__(
            k, _grid_measure(exes[GRID_FILE], k)) for k in GRID)
    with ThreadPoolExecutor(S.WORKERS) as pool:
        for _ in pool.map(lambda job: job(), jobs):
            pass
    if isinstance(exes[DEVICE_FILE], str):
        run = S.sh([exes[DEVICE_FILE]], 120)
        raw[DEVICE_FILE] = run
    for rel, exe in exes.items():
        if not isinstance(exe, str):
            raw[rel] = {"build": exe}
    return raw


def write_records(data: dict) -> None:
    raw, gpu = data["runs"], data["gpu"]
    meta = {"tool": "tools/gputruth/issue23.py", "gpu": gpu, "arch": "sm_90",
            "sanitizer": data["sanitizer"]}
    for rel, kernels in shared_plan().items():
        recs = S.records({rel: raw.get(rel, {})}, {rel: kernels})
        items = [r for rs in recs.values() for r in rs]
        _write(rel, dict(meta, records=items))
    recs = []
    for k, n_args in GRID.items():
        r = raw.get(GRID_FILE, {}).get(k, {})
        plain, sc = r.get("plain", {}), r.get("synccheck", {})
        parsed = S.parse_synccheck(sc.get("output", ""))
        recs.append({"file": GRID_FILE, "kernel": k, "grid": GRID_BLOCKS,
                     "block": GRID_THREADS, "launch": "cudaLaunchCooperativeKernel",
                     "plain_rc": plain.get("rc"),
                     "plain_timed_out": plain.get("rc") == "timeout",
                     "plain_output": plain.get("output", "")[-300:],
                     "synccheck": {"rc": sc.get("rc"), "errors": parsed["errors"],
                                   "messages": parsed["messages"],
                                   "summary": parsed["summary"],
                                   "raw": S._trim(sc.get("output", ""))}})
    _write(GRID_FILE, dict(meta, records=recs))
    run = raw.get(DEVICE_FILE, {})
    doc = dict(meta, method="serial ascending vs descending thread order (device-function "
               "copy driven by one thread) and two parallel GPU runs; counts of differing "
               "elements over all buffers (tools/gputruth/global_race.py)",
               rc=run.get("rc"))
    try:
        doc["records"] = json.loads(run.get("output", ""))
    except ValueError:
        doc["records"] = []
        doc["output"] = run.get("output", "")[-2000:]
    _write(DEVICE_FILE, doc)


def _write(rel: str, doc: dict) -> None:
    dest = (ROOT / rel).with_suffix(".truth.json")
    dest.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {dest.relative_to(ROOT)}: {len(doc.get('records', []))} records")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--records", type=Path, help="a raw JSON from --out: write records")
    a = ap.parse_args()
    if a.records:
        write_records(json.loads(a.records.read_text()))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        exes = build(Path(tmp))
        failed = [rel for rel, exe in exes.items() if not isinstance(exe, str)]
        for rel in failed:
            print(rel, exes[rel]["output"][-3000:])
        if a.compile_only:
            return 1 if failed else 0
        raw = measure(exes)
    gpu = S.sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    version = S.sh(["compute-sanitizer", "--version"])
    data = {"gpu": gpu["output"].strip(), "sanitizer": version["output"].strip()[-200:],
            "runs": raw}
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "issue23_raw.json").write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
