"""GPU truth for CL201's hot-path condition (issue 20): what does an uncoalesced record store
cost when it runs once per thread after a loop over n items that loads and computes?

    python tools/gputruth/hot_path.py --compile-only     # here: nvcc + ptxas, no GPU
    python tools/gputruth/hot_path.py --out $OUT         # on a machine with a GPU

Builds fixtures/CL201/hot_path.cu for sm_90 (the fixture is also the benchmark: the
linter reads the same kernels), times every kernel (CUDA events, median of 15 launches
after a warm-up; 2^20 threads, blocks of 256) and profiles one launch of each with ncu
(kernel time, DRAM bytes written and read, global store sectors and requests). Each
thread scans n items (a run-time count, n = 64, 256, 1024, 4096; or a constant, 64, 256,
1024) and writes a 3- or 8-float record: array of structs (`out[i * R + r]`) against
structure of arrays (`out[r * T + i]`). `tail_share` is (AoS - SoA) / AoS: the share of
the AoS kernel's time the uncoalesced store costs. walk_rows / walk_cols: a pixel's
K-record (K = 8) walked inside a loop that gathers 9 floats per face and ends in 9
atomics, rows against k-major columns. Writes fixtures/CL201/hot_path.json (and a copy
under --out).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import re
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SOURCE = ROOT / "fixtures" / "CL201" / "hot_path.cu"
RECORD = ROOT / "fixtures" / "CL201" / "hot_path.json"
METRICS = ("gpu__time_duration.sum", "dram__bytes_write.sum", "dram__bytes_read.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
           "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")
_SCALE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1e-6,
          "usecond": 1e-3, "msecond": 1.0, "second": 1e3, "ns": 1e-6, "us": 1e-3,
          "ms": 1.0, "s": 1e3}


def build(tmp: Path) -> Path:
    exe = tmp / "hot_path"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-lineinfo", "-Xptxas", "-v", "-o",
                    str(exe), str(SOURCE)], check=True)
    return exe


def timings(exe: Path) -> dict:
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    runs = {}
    for line in out.splitlines():
        m = re.match(r"(\w+) (n|K)=(\d+) median_ms=([\d.]+)", line)
        if m:
            runs[f"{m[1]} {m[2]}={m[3]}"] = {"kernel": m[1], m[2]: int(m[3]),
                                              "median_ms": float(m[4])}
    return runs


def profile(exe: Path) -> list[dict]:
    """One row per launch of the --once run, in launch order."""
    got = subprocess.run(["ncu", "--csv", "--metrics", ",".join(METRICS), str(exe), "--once"],
                         capture_output=True, text=True)
    text = got.stdout
    start = text.find('"ID"')
    if start < 0:
        raise SystemExit(f"ncu gave no table:\n{text[-3000:]}\n{got.stderr[-3000:]}")
    launches: dict[str, dict] = {}
    for r in csv.DictReader(io.StringIO(text[start:])):
        name = r.get("Metric Name")
        if name not in METRICS:
            continue
        value = float(r["Metric Value"].replace(",", ""))
        value *= _SCALE.get(r.get("Metric Unit", ""), 1)
        row = launches.setdefault(r["ID"], {"kernel": r["Kernel Name"].split("(")[0]})
        key = {"gpu__time_duration.sum": "ncu_ms"}.get(name, name)
        row[key] = value
    return [launches[k] for k in sorted(launches, key=int)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--rescale-ncu-ns", action="store_true",
                    help="convert the ncu kernel times of the committed record from ns to "
                         "ms (the first run's unit map lacked ncu's 'ns')")
    args = ap.parse_args()
    if args.rescale_ncu_ns:
        record = json.loads(RECORD.read_text())
        for run in record["runs"].values():
            if "ncu_ms" in run:
                run["ncu_ms"] = round(run["ncu_ms"] * 1e-6, 6)
        record["ncu_time_unit_note"] = "ncu reported ns; rescaled to ms by --rescale-ncu-ns"
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        return
    tmp = Path(tempfile.mkdtemp())
    exe = build(tmp)
    if args.compile_only:
        print(f"built {exe}")
        return
    runs = timings(exe)
    order = list(runs)              # --once launches the kernels in the timing order
    ncu_error = None
    try:
        rows = profile(exe)
    except (SystemExit, OSError) as e:  # keep the timings when the profiler fails
        rows, ncu_error = [], str(e)[-2000:]
    for key, row in zip(order, rows):
        if row["kernel"] != runs[key]["kernel"]:
            ncu_error = f"ncu order differs: {key} vs {row['kernel']}"
            break
        runs[key].update({k: v for k, v in row.items() if k != "kernel"})
    for key, run in runs.items():
        if "_aos" in run["kernel"]:
            soa = runs.get(key.replace("_aos", "_soa"))
            if soa:
                run["soa_median_ms"] = soa["median_ms"]
                run["tail_share"] = round((run["median_ms"] - soa["median_ms"]) /
                                          run["median_ms"], 4)
        if run["kernel"] == "walk_rows":
            cols = runs.get(key.replace("walk_rows", "walk_cols"))
            if cols:
                run["cols_median_ms"] = cols["median_ms"]
                run["tail_share"] = round((run["median_ms"] - cols["median_ms"]) /
                                          run["median_ms"], 4)
    record = {"gpu": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                     "--format=csv,noheader"], capture_output=True,
                                    text=True).stdout.strip(),
              "threads": 1 << 20, "block": 256, "runs": runs}
    if ncu_error:
        record["ncu_error"] = ncu_error
    RECORD.write_text(json.dumps(record, indent=1) + "\n")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / RECORD.name).write_text(RECORD.read_text())
    print(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
