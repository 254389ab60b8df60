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
import tempfile
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


def _include_dirs(path: Path, root: Path) -> list[str]:
    """-I flags a build would give: the file's folder and the usual include folders
    (Common, common, include, csrc) of its ancestors up to the project root."""
    dirs = [path.parent]
    for anc in path.parents:
        dirs += [anc / d for d in ("Common", "common", "include", "csrc", "llmc")
                 if (anc / d).is_dir()]
        if anc == root:
            break
    return [f"-I{d}" for d in dirs]


def clang_tidy_sample(roots: list[Path], n: int) -> dict | None:
    """clang-tidy (CUDA mode) vs cudalint, CPU per line, on the same .cu files.

    Only files clang-tidy compiles without errors are kept (a missing header, such as
    torch's, makes clang stop early: timing that would flatter clang-tidy); candidates are
    taken evenly across the corpus until ``n`` are kept."""
    import os
    import shutil
    tidy = shutil.which("clang-tidy")
    if tidy is None:
        return None
    cu = sorted((p, r) for r in roots for p in files_of(r) if p.suffix == ".cu")
    if not cu:
        return None
    nvcc = shutil.which("nvcc")
    homes = [os.environ.get("CUDA_HOME"), nvcc and Path(nvcc).resolve().parent.parent,
             "/usr/local/cuda"]
    home = next((Path(h) for h in homes if h and
                 (Path(h) / "include" / "cuda_runtime.h").is_file()), None)
    stubs = Path(tempfile.mkdtemp())
    (stubs / "curand_mtgp32_kernel.h").write_text("")   # clang's CUDA wrapper wants it;
    cuda = [f"--cuda-path={home}", "--cuda-gpu-arch=sm_90", f"-isystem{stubs}"] if home \
        else ["--cuda-host-only", "-nocudainc", "-nocudalib"]   # toolkits may lack curand
    step = max(1, len(cu) // (4 * n))
    sample: list[Path] = []
    tried = 0
    tidy_wall = tidy_cpu = 0.0
    for p, root in cu[::step]:
        if len(sample) >= n:
            break
        tried += 1
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        try:
            r = subprocess.run([tidy, "-checks=-*,clang-analyzer-*,bugprone-*,performance-*",
                                str(p), "--", "-x", "cuda", *cuda, "-std=c++17",
                                *_include_dirs(p, root)], capture_output=True, timeout=120)
        except subprocess.TimeoutExpired:
            continue
        if r.returncode != 0:
            continue
        tidy_wall += time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        tidy_cpu += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        sample.append(p)
    if not sample:
        return None
    lines = sum(p.read_bytes().count(b"\n") + 1 for p in sample)
    cmd = [sys.executable, "-m", "cudalint", "check", "--no-cache", "-j", "1",
           "--output-format", "json"]
    ours_wall, ours_cpu = _timed(cmd + list(map(str, sample)), str(sample[0].parent))
    # the interpreter and imports, paid once per command however many files it lints
    empty = Path(tempfile.mkdtemp()) / "empty.cu"
    empty.write_text("__global__ void k() {}\n")
    _, start_cpu = _timed(cmd + [str(empty)], str(empty.parent))
    return {"files": len(sample), "tried": tried, "lines": lines,
            "clang_tidy_s": tidy_wall, "clang_tidy_cpu_s": tidy_cpu,
            "cudalint_s": ours_wall, "cudalint_cpu_s": ours_cpu,
            "cudalint_startup_cpu_s": start_cpu,
            "ratio": tidy_cpu / ours_cpu if ours_cpu else None,
            "ratio_per_line": tidy_cpu / max(1e-9, ours_cpu - start_cpu)}


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
    ap.add_argument("--tidy-sample", type=int, default=30,
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
        print(f"clang-tidy sample: {tidy['files']} .cu files that clang-tidy compiles "
              f"(of {tidy['tried']} tried), {tidy['lines']} lines: CPU clang-tidy "
              f"{tidy['clang_tidy_cpu_s']:.1f} s, cudalint {tidy['cudalint_cpu_s']:.2f} s "
              f"(1 job, one command, start-up {tidy['cudalint_startup_cpu_s']:.2f} s "
              f"included): {tidy['ratio']:.0f}x less CPU; per line after start-up: "
              f"{tidy['ratio_per_line']:.0f}x")
    print(f"crashes: {len(crashes)}")
    for name, rc, err in crashes:
        print(f"  {name}: exit {rc}: {err}")
    if args.json:
        args.json.write_text(json.dumps({"projects": report, "rules": rules, "whole": whole,
                                         "clang_tidy": tidy, "crashes": crashes}, indent=2))
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
