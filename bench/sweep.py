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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=Path("/tmp/cudalint-corpus"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    corpus = tomllib.loads((HERE / "corpus.toml").read_text())["project"]
    total = Counter()
    rules = Counter()
    crashes = []
    report = []
    print(f"{'project':16} {'files':>6} {'lines':>8} {'parse s':>8} {'cold s':>7} "
          f"{'warm s':>7} {'findings':>8} {'CL000':>6}")
    for project in corpus:
        root = args.root / project["name"]
        if not root.is_dir():
            print(f"{project['name']:16} (missing: check out {project['repo']} at "
                  f"{project['commit'][:12]} into {root})")
            continue
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        if head and head != project["commit"]:
            print(f"  note: {project['name']} is at {head[:12]}, corpus lists "
                  f"{project['commit'][:12]}")
        files = files_of(root)
        lines = sum(p.read_bytes().count(b"\n") + 1 for p in files)
        parse_s = parse_only(files)
        cold, rc, findings, err, _ = run(root, args.jobs, cache=False)
        run(root, args.jobs, cache=True)            # fill the cache
        warm, _, _, _, peak_kb = run(root, args.jobs, cache=True)
        if rc not in (0, 1) or "Traceback" in err or "internal error" in err:
            crashes.append((project["name"], rc, err.strip()[-500:]))
        by_rule = Counter(f["code"] for f in findings)
        rules.update(by_rule)
        total.update(files=len(files), lines=lines)
        total["parse"] += parse_s
        total["cold"] += cold
        total["warm"] += warm
        total["findings"] += len(findings)
        total["cl000"] += by_rule.get("CL000", 0)
        report.append({"project": project["name"], "files": len(files), "lines": lines,
                       "parse_s": parse_s, "cold_s": cold, "warm_s": warm,
                       "peak_rss_mb": peak_kb / 1024, "by_rule": dict(by_rule),
                       "exit_code": rc})
        print(f"{project['name']:16} {len(files):6} {lines:8} {parse_s:8.2f} {cold:7.2f} "
              f"{warm:7.2f} {len(findings):8} {by_rule.get('CL000', 0):6}")
    print(f"{'TOTAL':16} {total['files']:6} {total['lines']:8} {total['parse']:8.2f} "
          f"{total['cold']:7.2f} {total['warm']:7.2f} {total['findings']:8} {total['cl000']:6}")
    print("findings per rule:", dict(sorted(rules.items())))
    peak = max((r["peak_rss_mb"] for r in report), default=0)
    print(f"peak memory of one cudalint run: {peak:.0f} MB")
    print(f"crashes: {len(crashes)}")
    for name, rc, err in crashes:
        print(f"  {name}: exit {rc}: {err}")
    if args.json:
        args.json.write_text(json.dumps({"projects": report, "rules": rules,
                                         "crashes": crashes}, indent=2))
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
