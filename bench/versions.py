"""CPU time of whole CLI runs of several cudalint versions, measured side by side in one run.

    python bench/versions.py --version old=SITE_DIR --version new=. /tmp/real
    python bench/versions.py ... --select ALL --repeat 3 --startup

A version is a folder put first on PYTHONPATH, or ``.`` for the installed (editable)
tree. Make one from a commit, so that its ``cudalint.rules`` and entry points come with it:

    mkdir src && git archive 1629080 | tar -x -C src
    pip install --no-deps --no-build-isolation --target DIR src

(pip byte-compiles it; an editable tree run with PYTHONDONTWRITEBYTECODE set compiles
every module on each start, which shows in ``--startup``: ``python -m compileall``.) Runs alternate between versions (old, new, old, new, ...)
so that load on a shared machine falls on all of them alike. Each figure is the CPU time
(user + sys) of the CLI process and the children it waited for, ``--jobs 1 --no-cache``
unless told otherwise; min and median of ``--repeat`` runs, wall time beside it.
``--startup`` also times a 5-line ``.cu`` file (what pre-commit pays per commit).
``--parse`` adds the yardstick of issue 24: the CPU time of parsing every ``.cu``/``.cuh``
file of the paths with tree-sitter alone (this process, min of ``--repeat``), and each
version's corpus CPU as a multiple of it.

Nothing here is a pass/fail test; bench/results/ keeps dated outputs.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TINY = """__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
"""


def run_once(site: str, args: list[str], cwd: str) -> tuple[float, float]:
    env = dict(os.environ)
    if site != ".":
        env["PYTHONPATH"] = site
    cmd = [sys.executable, "-m", "cudalint", "check", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def measure(versions: dict[str, str], args: list[str], repeat: int, cwd: str
            ) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = {k: [] for k in versions}
    for _ in range(repeat):
        for label, site in versions.items():
            out[label].append(run_once(site, args, cwd))
    return out


def parse_only(paths: list[str], repeat: int) -> tuple[float, int]:
    """(CPU seconds, files): tree-sitter parses of the CUDA files alone, min of `repeat`."""
    from cudalint.parse import parse
    files = [p for root in map(Path, paths)
             for p in ([root] if root.is_file() else sorted(root.rglob("*")))
             if p.suffix in (".cu", ".cuh") and p.is_file() and ".git" not in p.parts]
    data = [p.read_bytes() for p in files]
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for d in data:
            parse(d)                # (parse() keeps only the last 2 texts' trees)
        best = min(best, time.process_time() - start)
    return best, len(files)


def report(title: str, results: dict[str, list[tuple[float, float]]],
           parse_s: float | None = None) -> None:
    print(f"\n{title}")
    first = None
    for label, runs in results.items():
        cpu = [c for c, _ in runs]
        wall = [w for _, w in runs]
        best = min(cpu)
        first = first or best
        ratio = f"   {best / parse_s:5.1f}x parse" if parse_s else ""
        print(f"  {label:14} CPU min {best:7.3f} s  median {statistics.median(cpu):7.3f} s"
              f"   wall min {min(wall):7.3f} s   {best / first:5.2f}x the first{ratio}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*", default=["/tmp/real"])
    ap.add_argument("--version", action="append", required=True, metavar="LABEL=SITE")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--select", default="", help="e.g. ALL (default: the default rules)")
    ap.add_argument("--startup", action="store_true", help="also time a 5-line .cu file")
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--parse", action="store_true", help="also time tree-sitter parsing alone")
    args = ap.parse_args()
    versions = dict(v.split("=", 1) for v in args.version)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  {platform.node()}  "
          f"{os.cpu_count()} CPUs  Python {platform.python_version()}")
    for label, site in versions.items():
        print(f"  {label}: {site}")
    common = ["--exit-zero", "--output-format", "json", "--no-cache", "-j", str(args.jobs)]
    if args.select:
        common += ["--select", args.select]
    with tempfile.TemporaryDirectory(prefix="cudalint-versions-") as tmp:
        if not args.no_corpus:
            paths = [str(Path(p).resolve()) for p in args.paths]
            parse_s = None
            if args.parse:
                parse_s, n = parse_only(paths, args.repeat)
                print(f"\nparse only: {n} CUDA files, tree-sitter, CPU min of {args.repeat}: "
                      f"{parse_s:.3f} s")
            report(f"{' '.join(paths)}  ({' '.join(common)}; CPU min/median of "
                   f"{args.repeat})", measure(versions, paths + common, args.repeat, tmp),
                   parse_s)
        if args.startup:
            tiny = Path(tmp) / "tiny.cu"
            tiny.write_text(TINY)
            report(f"5-line .cu ({' '.join(common)}; min/median of {max(args.repeat, 5)})",
                   measure(versions, [str(tiny)] + common, max(args.repeat, 5), tmp))


if __name__ == "__main__":
    main()
