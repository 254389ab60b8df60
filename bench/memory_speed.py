"""CL201/CL202 cost against tree-sitter parsing alone, in one process (no CLI start-up,
no cache), over real CUDA sources checked out locally.

    python bench/memory_speed.py /tmp/real/cuda-samples /tmp/real/apex ...

Prints lines/second for: parse only; the whole linter with only CL201/CL202 selected
(read, parse, model, lane engine, findings, suppressions); the whole linter with the
default rule set. CPU time of this process (time.process_time), best of --repeat runs.
Nothing here is a pass/fail test; the target is CL201+CL202 within 2x parse time.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_bytes
from cudalint.parse import parse

SUFFIXES = (".cu", ".cuh")


def sources(roots: list[Path]) -> list[tuple[str, bytes]]:
    files = [p for r in roots for p in ([r] if r.is_file() else sorted(r.rglob("*")))
             if p.suffix in SUFFIXES and p.is_file() and ".git" not in p.parts]
    return [(str(p), p.read_bytes()) for p in files]


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    data = sources(args.paths)
    lines = sum(d.count(b"\n") + 1 for _, d in data)
    memory = replace(Settings(), select=("CL201", "CL202"))
    default = Settings()
    counts: dict[str, int] = {}

    def lint(settings, key):
        def run():
            counts[key] = sum(len(lint_bytes(p, d, settings).visible) for p, d in data)
        return run

    parse_s = best(lambda: [parse(d) for _, d in data], args.repeat)
    mem_s = best(lint(memory, "memory"), args.repeat)
    all_s = best(lint(default, "default"), 1)
    print(f"files {len(data)}  lines {lines}")
    print(f"parse only             {parse_s:7.2f} s {lines / parse_s:10,.0f} lines/s")
    print(f"lint CL201+CL202 only  {mem_s:7.2f} s {lines / mem_s:10,.0f} lines/s  "
          f"{mem_s / parse_s:4.2f}x parse  ({counts['memory']} findings)")
    print(f"lint default rules     {all_s:7.2f} s {lines / all_s:10,.0f} lines/s  "
          f"{all_s / parse_s:4.2f}x parse  ({counts['default']} findings)")


if __name__ == "__main__":
    main()
