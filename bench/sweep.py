"""Real-world sweep: run cudalint over the public projects of bench/corpus.toml.

    python bench/sweep.py [--root /tmp/cudalint-corpus] [--jobs 2] [--json out.json]

Each project must be checked out at ROOT/NAME (at the commit listed; the script warns when
HEAD differs). Reports per project and in total: files, lines, parse-only seconds, cudalint
cold and warm seconds, peak memory, findings per rule, CL000 count, and crashes (exit code
2 or a traceback). Exits 1 if anything crashed.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUFFIXES = (".cu", ".cuh", ".py")


def files_of(root: Path) -> list[Path]:
    skip = {".git", "node_modules", "build", "dist", ".venv", "third_party", "3rdparty"}
    return [p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file()
            and not skip & set(p.relative_to(root).parts)]


def parse_only(files: list[Path]) -> float:
    from cudalint.parse import parse
    start = time.perf_counter()
    for p in files:
        if p.suffix != ".py":
            parse(p.read_bytes())
    return time.perf_counter() - start


def run(root: Path, jobs: int, cache: bool) -> tuple[float, int, list[dict], str, int]:
    cmd = [sys.executable, "-m", "cudalint", "check", str(root), "--output-format", "json",
           "-j", str(jobs)] + ([] if cache else ["--no-cache"])
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root)
    seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    try:
        findings = json.loads(proc.stdout) if proc.stdout.strip() else []
    except json.JSONDecodeError:
        findings = []
    return seconds, proc.returncode, findings, proc.stderr, max(peak_kb, before)


def clang_tidy_sample(roots: list[Path], n: int) -> dict | None:
    """clang-tidy (CUDA mode) vs cudalint, per line, on the same sample of .cu files."""
    import shutil
    tidy = shutil.which("clang-tidy")
    if tidy is None:
        return None
    cu = sorted(p for r in roots for p in files_of(r) if p.suffix == ".cu")
    if not cu:
        return None
    step = max(1, len(cu) // n)
    sample = cu[::step][:n]
    lines = sum(p.read_bytes().count(b"\n") + 1 for p in sample)
    import os
    nvcc = shutil.which("nvcc")
    homes = [os.environ.get("CUDA_HOME"), nvcc and Path(nvcc).resolve().parent.parent,
             "/usr/local/cuda"]
    home = next((Path(h) for h in homes if h and
                 (Path(h) / "include" / "cuda_runtime.h").is_file()), None)
    cuda = [f"--cuda-path={home}", "--cuda-gpu-arch=sm_90"] if home else \
        ["--cuda-host-only", "-nocudainc", "-nocudalib"]
    start = time.perf_counter()
    for p in sample:
        try:
            subprocess.run([tidy, "-checks=-*,clang-analyzer-*,bugprone-*,performance-*",
                            str(p), "--", "-x", "cuda", *cuda, "-std=c++17",
                            f"-I{p.parent}"], capture_output=True, timeout=120)
        except subprocess.TimeoutExpired:
            pass
    tidy_s = time.perf_counter() - start
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cudalint", "check", "--no-cache", "-j", "1",
                    "--output-format", "json", *map(str, sample)], capture_output=True)
    ours_s = time.perf_counter() - start
    return {"files": len(sample), "lines": lines, "clang_tidy_s": tidy_s,
            "cudalint_s": ours_s, "ratio": tidy_s / ours_s if ours_s else None}


def _timed(cmd: list[str], cwd: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def whole_corpus(roots: list[Path], jobs: int, warm_runs: int = 5) -> dict:
    """One cudalint command over every project: cold, then warm (cache filled), in a fresh
    working folder (its cache starts empty). Wall and CPU time: the machine may be shared,
    so warm runs are repeated (best and median)."""
    import statistics
    import tempfile
    base = [sys.executable, "-m", "cudalint", "check", *(str(r.resolve()) for r in roots),
            "-q", "--output-format", "concise", "-j", str(jobs)]
    out = {}
    with tempfile.TemporaryDirectory(prefix="cudalint-sweep-") as cwd:
        out["cold_s"], out["cold_cpu_s"] = _timed(base + ["--no-cache"], cwd)
        out["fill_s"], out["fill_cpu_s"] = _timed(base, cwd)       # fill the cache
        warm = [_timed(base, cwd) for _ in range(warm_runs)]
    walls, cpus = [w for w, _ in warm], [c for _, c in warm]
    out["warm_s"] = min(walls)
    out["warm_median_s"] = statistics.median(walls)
    out["warm_cpu_s"] = min(cpus)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=Path("/tmp/cudalint-corpus"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--tidy-sample", type=int, default=12,
                    help="number of .cu files timed under clang-tidy (0: skip)")
    args = ap.parse_args()
    corpus = tomllib.loads((HERE / "corpus.toml").read_text())["project"]
    total = Counter()
    rules = Counter()
    crashes = []
    report = []
    roots = []
    print(f"{'project':16} {'files':>6} {'lines':>8} {'parse s':>8} {'cold s':>7} "
          f"{'findings':>8} {'CL000':>6}")
    for project in corpus:
        root = args.root / project["name"]
        if not root.is_dir():
            print(f"{project['name']:16} (missing: check out {project['repo']} at "
                  f"{project['commit'][:12]} into {root})")
            continue
        roots.append(root)
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        if head and head != project["commit"]:
            print(f"  note: {project['name']} is at {head[:12]}, corpus lists "
                  f"{project['commit'][:12]}")
        files = files_of(root)
        lines = sum(p.read_bytes().count(b"\n") + 1 for p in files)
        parse_s = parse_only(files)
        cold, rc, findings, err, _ = run(root, args.jobs, cache=False)
        if rc not in (0, 1) or "Traceback" in err or "internal error" in err:
            crashes.append((project["name"], rc, err.strip()[-500:]))
        by_rule = Counter(f["code"] for f in findings)
        rules.update(by_rule)
        total.update(files=len(files), lines=lines)
        total["parse"] += parse_s
        total["cold"] += cold
        total["findings"] += len(findings)
        total["cl000"] += by_rule.get("CL000", 0)
        report.append({"project": project["name"], "files": len(files), "lines": lines,
                       "parse_s": parse_s, "cold_s": cold, "by_rule": dict(by_rule),
                       "exit_code": rc})
        print(f"{project['name']:16} {len(files):6} {lines:8} {parse_s:8.2f} {cold:7.2f} "
              f"{len(findings):8} {by_rule.get('CL000', 0):6}")
    print(f"{'TOTAL':16} {total['files']:6} {total['lines']:8} {total['parse']:8.2f} "
          f"{total['cold']:7.2f} {total['findings']:8} {total['cl000']:6}")
    print("findings per rule:", dict(sorted(rules.items())))
    whole = whole_corpus(roots, args.jobs) if roots else {}
    if whole:
        print(f"whole corpus in one command ({args.jobs} jobs): cold {whole['cold_s']:.2f} s "
              f"({total['lines'] / whole['cold_s']:.0f} lines/s, "
              f"{whole['cold_s'] / total['parse']:.2f}x parse-only; "
              f"{whole['cold_cpu_s']:.2f} s CPU), warm {whole['warm_s']:.2f} s best "
              f"({whole['warm_median_s']:.2f} s median, {whole['warm_cpu_s']:.2f} s CPU), "
              f"peak memory {whole['peak_rss_mb']:.0f} MB")
    tidy = clang_tidy_sample(roots, args.tidy_sample) if args.tidy_sample else None
    if tidy:
        print(f"clang-tidy sample: {tidy['files']} .cu files, {tidy['lines']} lines: "
              f"clang-tidy {tidy['clang_tidy_s']:.1f} s, cudalint {tidy['cudalint_s']:.2f} s "
              f"(1 job, process start included): {tidy['ratio']:.0f}x faster")
    print(f"crashes: {len(crashes)}")
    for name, rc, err in crashes:
        print(f"  {name}: exit {rc}: {err}")
    if args.json:
        args.json.write_text(json.dumps({"projects": report, "rules": rules, "whole": whole,
                                         "clang_tidy": tidy, "crashes": crashes}, indent=2))
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
