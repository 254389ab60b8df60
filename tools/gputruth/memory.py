"""GPU truth for CL201 (global sectors per request) and CL202 (shared wavefronts).

For every kernel in fixtures/CL201/*.cu and fixtures/CL202/*.cu: build the fixture for
sm_90 with -lineinfo together with a generated host driver that launches each kernel once
with the block/grid/dynamic-shared-memory of the fixture's own launch line (or
__launch_bounds__), on zeroed 64 MiB buffers; profile it with ncu and write one record per
kernel to fixtures/<CODE>/truth.json (and a copy under --out).

    python tools/gputruth/memory.py --out $OUT            # on a machine with a GPU
    python tools/gputruth/memory.py --compile-only        # check the build step
    python tools/gputruth/memory.py --out $OUT --only fixtures/CL201/device_function.cu
                                                          # these fixtures' records only

Int parameters get the launch's constant, else SCALAR_DEFAULTS (memory_plan.json
"values"); a launch whose block is a run-time value gets RUNTIME_BLOCK for 1-D kernels.
``--traffic`` also measures fixtures/CL201/traffic.cu at scale (DRAM bytes against the
bytes the kernel uses, run time against structure-of-arrays twins) into
fixtures/CL201/traffic.json: the evidence for CL201's wasted-traffic condition.
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
RUNTIME_BLOCK = (128, 1, 1)     # what the driver launches where the block is a variable


def kernels_of(path: Path) -> list[dict]:
    # the device machine may lack tree-sitter: it reads the plan written here by --plan
    from cudalint.analysis.memory.lanes import _one_dimensional
    from cudalint.model.consteval import eval_int
    from cudalint.model.kernels import Model
    from cudalint.parse import parse, text
    model = Model(parse(path.read_bytes()))
    out = []
    for fn in model.kernels:
        if fn.is_template:
            continue            # instantiations: tools/gputruth/templates.py
        launches = [l for l in model.launches if l.kernel == fn.name]
        if launches:
            l = launches[0]
            block, grid = l.block, l.grid or (1, 1, 1)
            if block is None and _one_dimensional(fn):
                # a run-time block size: the figure holds for any 1-D block of 32+
                block = RUNTIME_BLOCK
            smem = 0
            if len(l.config) > 2:
                env = l.function.constants if l.function else model.constants
                smem = eval_int(text(l.config[2]), env) or 0
        elif fn.launch_bounds and fn.launch_bounds[0]:
            block, grid, smem = (fn.launch_bounds[0], 1, 1), (1, 1, 1), 0
        else:
            continue
        if block is None:
            continue
        values = _scalar_values(model, fn, launches[0] if launches else None)
        if values is None:
            continue
        out.append({"kernel": fn.name, "block": list(block), "grid": list(grid),
                    "smem": smem,
                    "params": [p.base_type for p in fn.params]})
        if any(v is not None for v in values):
            out[-1]["values"] = values
    return out


# what the driver passes for an int parameter that no launch of the fixture fixes: sizes
# large enough for every thread of the block, strides of a realistic matrix
SCALAR_DEFAULTS = {"n": 4096, "iters": 2}
SCALAR_DEFAULT = 100


def _scalar_values(model, fn, launch) -> list | None:
    """Per parameter: None for a pointer, else the int the driver passes (the launch's
    constant argument, else SCALAR_DEFAULTS); None overall for a parameter the driver
    cannot make (a struct by value, a float)."""
    from cudalint.parse import text
    args = []
    if launch is not None:
        arglist = launch.node.child_by_field_name("arguments")
        args = [a for a in (arglist.named_children if arglist else []) if a.type != "comment"]
    out = []
    for k, p in enumerate(fn.params):
        if p.is_pointer:
            out.append(None)
            continue
        if p.base_type not in ("int", "unsigned", "long", "size_t", "int64_t"):
            return None
        value = None
        if k < len(args):
            host = launch.function
            env = host.constants if host is not None else model.constants
            dims = model.resolve_dim3(args[k], host, env)
            if dims is not None and text(args[k]) != "dim3":
                value = dims[0]
        out.append(value if value is not None else
                   SCALAR_DEFAULTS.get(p.name, SCALAR_DEFAULT))
    return out


def driver(path: Path, kernels: list[dict]) -> str:
    nbuf = max((len(k["params"]) for k in kernels), default=1)
    lines = [f'#include "{path}"', "#include <cstdio>", "int main() {",
             f"  void* buf[{nbuf}];",
             f"  for (int i = 0; i < {nbuf}; ++i) {{ cudaMalloc(&buf[i], {BUFFER_BYTES}); "
             f"cudaMemset(buf[i], 0, {BUFFER_BYTES}); }}"]
    for k in kernels:
        values = k.get("values") or [None] * len(k["params"])
        args = ", ".join(f"({t}*)buf[{i}]" if v is None else f"({t}){v}"
                         for i, (t, v) in enumerate(zip(k["params"], values)))
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


# -- wasted traffic (CL201's default): DRAM bytes and run time of fixtures/CL201/traffic.cu
TRAFFIC_FIXTURE = "fixtures/CL201/traffic.cu"
TRAFFIC_METRICS = [
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "gpu__time_duration.sum",
]
BIG = 1 << 24                   # 16 Mi records of 12 bytes: 192 MiB, far past the L2
L2_RESIDENT = 1 << 20           # 1 Mi records of 12 bytes: 12 MiB, held in the 50 MB L2
PASSES = 32
SM_BLOCKS = 132 * 4             # a grid that fills an H100 with 256-thread blocks
L2_FEW_SMS = 32                 # blocks for the farthest-point-sampling shape: each SM walks
                                # 1/32 of 12 MiB, more than its L1 holds, so passes hit L2
# label: (kernel, records n, passes, blocks (None: one thread per record), useful bytes
# read per record per pass, useful bytes written per record, what it is, its SoA twin)
TRAFFIC = {
    "aos3_once": ("aos3_once", BIG, 1, None, 12, 4, "12-byte records read whole once",
                  "soa3_once"),
    "soa3_once": ("soa3_once", BIG, 1, None, 12, 4, "the same, structure of arrays", None),
    "aos9_once": ("aos9_once", BIG // 4, 1, None, 36, 4, "36-byte records read whole once",
                  "soa9_once"),
    "soa9_once": ("soa9_once", BIG // 4, 1, None, 36, 4, "the same, structure of arrays",
                  None),
    "aos3_one_field": ("aos3_one_field", BIG, 1, None, 4, 4, "one field of 12-byte records",
                       "soa_one_field"),
    "soa_one_field": ("soa_one_field", BIG, 1, None, 4, 4,
                      "the same field as an array of its own", None),
    "aos3_two_fields": ("aos3_two_fields", BIG, 1, None, 8, 4,
                        "two fields of 12-byte records", None),
    "aos3_reread_l1": ("aos3_reread", L2_RESIDENT, PASSES, SM_BLOCKS, 12, 0,
                       "12-byte records re-read by an outer loop, the whole grid: each SM's "
                       "share stays in its L1", "soa3_reread_l1"),
    "soa3_reread_l1": ("soa3_reread", L2_RESIDENT, PASSES, SM_BLOCKS, 12, 0,
                       "the same, structure of arrays", None),
    "aos3_reread_l2": ("aos3_reread", L2_RESIDENT, PASSES, L2_FEW_SMS, 12, 0,
                       "12-byte records re-read by an outer loop on 32 SMs "
                       "(farthest-point-sampling shape): each pass reads L2", "soa3_reread_l2"),
    "soa3_reread_l2": ("soa3_reread", L2_RESIDENT, PASSES, L2_FEW_SMS, 12, 0,
                       "the same, structure of arrays", None),
    "aos3_reread_dram": ("aos3_reread", BIG // 2, 4, SM_BLOCKS, 12, 0,
                         "96 MiB of 12-byte records re-read by an outer loop: past the L2",
                         "soa3_reread_dram"),
    "soa3_reread_dram": ("soa3_reread", BIG // 2, 4, SM_BLOCKS, 12, 0,
                         "the same, structure of arrays", None),
    "aos3_grid_stride_once": ("aos3_grid_stride_once", BIG, 1, SM_BLOCKS, 12, 4,
                              "12-byte records read whole once in a grid-stride loop", None),
    "aos3_store_once": ("aos3_store_once", BIG, 1, None, 4, 12,
                        "12-byte records written whole once", None),
}


def traffic_driver() -> str:
    lines = [f'#include "{ROOT / TRAFFIC_FIXTURE}"', "#include <cstdio>", "#include <cstring>",
             "#include <vector>", "#include <algorithm>",
             "__global__ void fill(float* p, size_t n) { size_t i = blockIdx.x * "
             "(size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = (float)(i % 1000) * 0.001f; }",
             "int main(int argc, char** argv) {",
             "  bool timing = argc > 1 && !strcmp(argv[1], \"time\");",
             f"  size_t elems = (size_t){BIG} * 3;",
             "  float *p, *out; cudaMalloc(&p, elems * 4); cudaMalloc(&out, elems * 4);",
             "  fill<<<(elems + 255) / 256, 256>>>(p, elems);",
             "  fill<<<(elems + 255) / 256, 256>>>(out, elems);",
             "  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);"]
    for label, (name, n, passes, blocks, *_rest) in TRAFFIC.items():
        grid = f"{blocks}" if blocks else f"({n} + 255) / 256"
        args = f"(float*)p, out, {n}" if name != "aos3_store_once" else f"out, p, {n}"
        if "reread" in name:
            args += f", {passes}"
        call = f"{name}<<<{grid}, 256>>>({args})"
        lines += [
            "  {",
            f"    {call};",
            "    if (timing) {",
            "      std::vector<float> t;",
            "      for (int r = 0; r < 5; ++r) { " + call + "; }",
            "      for (int r = 0; r < 25; ++r) { cudaEventRecord(a); " + call +
            "; cudaEventRecord(b); cudaEventSynchronize(b); float ms; "
            "cudaEventElapsedTime(&ms, a, b); t.push_back(ms); }",
            "      std::sort(t.begin(), t.end());",
            f'      printf("TIME,{label},%.5f\\n", t[t.size() / 2]);',
            "    }",
            "  }"]
    lines += ["  cudaError_t e = cudaDeviceSynchronize();",
              '  if (e != cudaSuccess) { printf("%s\\n", cudaGetErrorString(e)); return 1; }',
              "  return 0;", "}"]
    return "\n".join(lines) + "\n"


def traffic(out: str | None, compile_only: bool) -> None:
    """DRAM bytes (ncu, caches flushed before each kernel) against the bytes the kernel
    uses, and run time (CUDA events, median of 25 after 5 warm-ups), per kernel of
    fixtures/CL201/traffic.cu; written to fixtures/CL201/traffic.json."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "traffic_driver.cu"
        src.write_text(traffic_driver())
        exe = str(Path(tmp) / "traffic")
        run(["nvcc", "-arch=sm_90", "-O3", "-lineinfo", "-o", exe, str(src)])
        print("built the traffic driver", flush=True)
        if compile_only:
            return
        times = {}
        for line in run([exe, "time"]).splitlines():
            if line.startswith("TIME,"):
                _, name, ms = line.split(",")
                times[name] = float(ms)
        raw = run(["ncu", "--csv", "--print-units", "base", "--cache-control", "all",
                   "--metrics", ",".join(TRAFFIC_METRICS), exe])
    start = raw.find('"ID"')
    by_id: dict[int, tuple[str, dict[str, float]]] = {}
    for row in csv.DictReader(io.StringIO(raw[start:])):
        name = row["Kernel Name"].split("(")[0].strip()
        value = float(row["Metric Value"].replace(",", "") or 0)
        by_id.setdefault(int(row["ID"]), (name, {}))[1][row["Metric Name"]] = value
    launches = [v for _, v in sorted(by_id.items()) if v[0] != "fill"]
    # one launch per label, in the driver's order
    assert [n for n, _ in launches] == [v[0] for v in TRAFFIC.values()], launches
    measured = {label: m for label, (_, m) in zip(TRAFFIC, launches)}
    records = []
    for name, (kernel, n, passes, blocks, rd, wr, what, twin) in TRAFFIC.items():
        m = measured.get(name, {})
        useful_read = n * rd
        rec = {"label": name, "kernel": kernel, "what": what, "records": n, "passes": passes,
               "blocks": blocks or (n + 255) // 256,
               "useful_bytes_read_per_pass": useful_read, "useful_bytes_written": n * wr,
               "metrics": m, "time_ms": times.get(name),
               "dram_read_over_useful": ratio(m.get("dram__bytes_read.sum", 0), useful_read),
               "l2_to_sm_read_over_useful": ratio(
                   32 * m.get("lts__t_sectors_srcunit_tex_op_read.sum", 0),
                   useful_read * passes),
               "sectors_per_request": ratio(m.get(TRAFFIC_METRICS[4], 0),
                                            m.get(TRAFFIC_METRICS[5], 0)),
               "soa_twin": twin}
        if times.get(name):
            rec["useful_gb_per_s"] = round(useful_read * passes / times[name] / 1e6, 1)
        records.append(rec)
    times = {rec["label"]: rec["time_ms"] for rec in records}
    for rec in records:
        twin = rec["soa_twin"]
        if twin and rec["time_ms"] and times.get(twin):
            rec["time_over_soa"] = round(rec["time_ms"] / times[twin], 3)
    gpu = run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    body = json.dumps({"tool": "tools/gputruth/memory.py --traffic", "gpu": gpu.strip(),
                       "arch": "sm_90", "fixture": TRAFFIC_FIXTURE, "records": records},
                      indent=1, sort_keys=True) + "\n"
    (ROOT / "fixtures" / "CL201" / "traffic.json").write_text(body)
    if out:
        Path(out, "CL201").mkdir(parents=True, exist_ok=True)
        Path(out, "CL201", "traffic.json").write_text(body)
    for rec in records:
        print(rec["label"], rec["time_ms"], rec["dram_read_over_useful"],
              rec["l2_to_sm_read_over_useful"], rec.get("time_over_soa"), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--plan", action="store_true",
                    help="only write tools/gputruth/memory_plan.json (needs cudalint)")
    ap.add_argument("--traffic", action="store_true",
                    help="also measure DRAM bytes and run time of " + TRAFFIC_FIXTURE)
    ap.add_argument("--only-traffic", action="store_true")
    ap.add_argument("--only", nargs="+", default=None, metavar="FIXTURE",
                    help="measure only these fixtures (paths from the repository root); "
                         "their records replace theirs in truth.json, the rest are kept")
    args = ap.parse_args()
    if args.traffic or args.only_traffic:
        traffic(args.out, args.compile_only)
        if args.only_traffic:
            return
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
                if args.only is not None and str(path.relative_to(ROOT)) not in args.only:
                    continue
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
        if args.only is not None:
            # the other fixtures' records as they were measured
            old = json.loads((ROOT / "fixtures" / code / "truth.json").read_text())
            recs = [r for r in old["records"] if r["file"] not in args.only] + recs
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
