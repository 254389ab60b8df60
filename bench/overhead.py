"""Where a whole run's time goes outside the rules, measured as CPU time (the machine is
shared: wall time there says little), with an estimate of the wall time on an idle one.

    python bench/overhead.py PATH [PATH...] [--jobs 2] [--runs 5]

* warm: the CLI run again and again on a filled cache (concise, -q); best and median wall
  and CPU (user + sys of the child), and the CPU of each phase in-process (start-up and
  imports, discovery, cache lookups, rendering).
* cold (--no-cache): one in-process run with the workers instrumented: CPU of the main
  process, of each worker (the sum over its chunks), the imbalance between workers, and
  ``idle wall ~ main + the busiest worker``.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cli(paths: list[str], jobs: int, cwd: str, *extra: str) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "cudalint", "check", *paths, "-q", "--exit-zero",
           "--output-format", "concise", "-j", str(jobs), *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def warm_phases(paths: list[str], jobs: int) -> dict:
    t0 = time.process_time()
    from cudalint.config import ConfigResolver
    from cudalint.discovery import discover
    from cudalint.output import FORMATS
    from cudalint.output.console import PlainConsole
    from cudalint.runner import Lookup, run
    t1 = time.process_time()
    lookup = Lookup(time.time_ns())          # as the CLI does: discovery shares it
    targets = discover(paths, ConfigResolver(), includes=lookup.includes)
    t2 = time.process_time()
    results = run(targets, jobs=jobs, lookup=lookup)
    t3 = time.process_time()
    FORMATS["concise"](results, PlainConsole(io.StringIO()), quiet=True)
    t4 = time.process_time()
    return {"imports": t1 - t0, "discovery": t2 - t1, "cache": t3 - t2, "render": t4 - t3}


_REAL = _LOG = None


def _timed(*a, **k):
    """The runner's worker, timed (module level: the pool pickles it by name)."""
    start = time.process_time()
    out = _REAL(*a, **k)
    with open(_LOG, "a") as fh:
        fh.write(f"{os.getpid()} {time.process_time() - start} {len(a[0])}\n")
    return out


def cold_profile(paths: list[str], jobs: int, log: str, baseline: bool = False) -> dict:
    """``baseline``: as the runner was before (8 interleaved batches per 2 jobs, nothing
    imported before forking, default gc thresholds), for comparison on the same code."""
    import cudalint.runner as runner
    from cudalint.config import ConfigResolver
    from cudalint.discovery import discover
    global _REAL, _LOG
    _REAL, _LOG = runner._worker, log
    if baseline:
        runner._chunks = lambda targets, todo, jobs: [todo[k::jobs * 4]
                                                      for k in range(jobs * 4)]
        runner._preload = lambda: None
        runner._tune_gc = lambda: None
    runner._worker = _timed
    t0 = time.process_time()
    targets = discover(paths, ConfigResolver())
    wall = time.perf_counter()
    runner.run(targets, use_cache=False, jobs=jobs)
    wall = time.perf_counter() - wall
    main_cpu = time.process_time() - t0
    per: dict[str, float] = {}
    chunks = 0
    for line in open(log):
        pid, cpu, _ = line.split()
        per[pid] = per.get(pid, 0.0) + float(cpu)
        chunks += 1
    busiest = max(per.values()) if per else 0.0
    return {"files": len(targets), "chunks": chunks, "main_cpu": main_cpu,
            "workers_cpu": sorted(per.values(), reverse=True),
            "imbalance": busiest - min(per.values()) if per else 0.0,
            "idle_wall_estimate": main_cpu + busiest, "wall_here": wall}


def _rounded(v):
    if isinstance(v, float):
        return round(v, 3)
    if isinstance(v, dict):
        return {k: _rounded(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_rounded(x) for x in v]
    return v


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--skip-warm", action="store_true")
    ap.add_argument("--baseline", action="store_true",
                    help="cold run with the runner's previous chunking, preload and gc")
    args = ap.parse_args()
    paths = [str(Path(p).resolve()) for p in args.paths]
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="cudalint-overhead-") as tmp:
        if not args.skip_warm:
            cli(paths, args.jobs, tmp)                             # fill the cache
            runs = [cli(paths, args.jobs, tmp) for _ in range(args.runs)]
            walls, cpus = [r[0] for r in runs], [r[1] for r in runs]
            out["warm"] = {"wall_best": min(walls), "wall_median": statistics.median(walls),
                           "cpu_best": min(cpus), "cpu_median": statistics.median(cpus)}
            os.chdir(tmp)
            phases = [warm_phases(paths, args.jobs) for _ in range(3)]
            out["warm"]["phases_cpu_best"] = {k: min(p[k] for p in phases)
                                              for k in phases[0]}
        if not args.skip_cold:
            os.chdir(tmp)
            out["cold"] = cold_profile(paths, args.jobs, os.path.join(tmp, "workers.log"),
                                       args.baseline)
    print(json.dumps(_rounded(out), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
