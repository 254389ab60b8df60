"""CL101 (the shared-memory block run behind CL101/CL102/CL105) on files of many kernels:
CPU seconds per kernel should stay flat as the file grows (linear in kernels).

    python bench/sync_scaling.py                 # 1, 4, 8, 16 copies of the CL10x fixtures
    python bench/sync_scaling.py --copies 1 32   # other sizes
    python bench/sync_scaling.py --fit 2000      # one fixture padded to N lines, as
                                                 # bench/lsp_latency.py --file does

Each copy of every CL101/CL102/CL103/CL105 fixture file gets its kernels, device and
host functions renamed (``name_<copy>``) so that the copies are distinct kernels with
their own launches. ``--fit`` instead repeats the lines of each fixture (duplicate
kernel names, as a padded file has). Figures: best of --repeat, time.process_time.
Nothing here is a pass/fail test.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_bytes

ROOT = Path(__file__).resolve().parent.parent
CODES = ("CL101", "CL102", "CL103", "CL105")


def fixture_files() -> list[Path]:
    return [p for c in CODES for p in sorted((ROOT / "fixtures" / c).glob("*.cu"))]


def renamed_copies(copies: int) -> str:
    out = ["#include <cooperative_groups.h>", "namespace cg = cooperative_groups;"]
    for i in range(copies):
        for f in fixture_files():
            t = "\n".join(line for line in f.read_text().splitlines()
                          if not line.startswith(("#include", "namespace cg")))
            names = set(re.findall(r"__global__\s+void\s+(\w+)", t))
            names |= set(re.findall(r"__device__\s+\w+\s+(\w+)\s*\(", t))
            names |= set(re.findall(r"^void\s+(\w+)", t, re.M))
            for n in sorted(names, key=len, reverse=True):
                t = re.sub(rf"\b{n}\b", f"{n}_{i}", t)
            out.append(t)
    return "\n".join(out) + "\n"


def fit(text: str, lines: int) -> str:
    rows = text.split("\n")
    while len(rows) < lines:
        rows += rows[:lines - len(rows)]
    return "\n".join(rows[:lines]) + "\n"


def cpu(text: str, code: str, repeat: int) -> tuple[float, int]:
    settings = replace(Settings(), select=(code,))
    best, n = float("inf"), 0
    for _ in range(repeat):
        start = time.process_time()
        res = lint_bytes("bench.cu", text.encode(), settings, "cuda")
        best = min(best, time.process_time() - start)
        n = len(res.diagnostics)
    return best, n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, nargs="+", default=[1, 4, 8, 16])
    ap.add_argument("--fit", type=int, default=0, help="pad each fixture to N lines")
    ap.add_argument("--code", default="CL101")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    cases: list[tuple[str, str]] = []
    if args.fit:
        cases = [(f"{f.parent.name}/{f.name} fit {args.fit}", fit(f.read_text(), args.fit))
                 for f in fixture_files()]
    else:
        cases = [(f"{c} copies", renamed_copies(c)) for c in args.copies]
    print(f"{'file':40} {'lines':>6} {'kernels':>7} {'CPU s':>7} {'ms/kernel':>9} findings")
    for name, text in cases:
        kernels = len(re.findall(r"__global__", text))
        t, n = cpu(text, args.code, args.repeat)
        print(f"{name:40} {text.count(chr(10)):6d} {kernels:7d} {t:7.2f} "
              f"{1000 * t / max(1, kernels):9.1f} {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
