"""CPU seconds of the project index (cudalint/project/index.py) against tree-sitter parsing
alone, over the CUDA files of real projects.

    python bench/project_index.py /tmp/real
    python bench/project_index.py --repeat 3 /tmp/real/mmcv

What a run pays for the index: ``prepare`` (read and scan every CUDA file of the run and
the project headers they include, resolve includes, before the workers fork) and one
``unit_view`` per file (macro expansion, constants from headers, launches of its kernels
elsewhere), plus the dependencies added to each file's cache key. The parse column is
tree-sitter on each file's bytes, as the engine parses a unit. Texts are read before the
clock starts (the engine has them already). CPU time of this process, best of --repeat
passes with the file-facts memo cleared between passes. Target (issue 13): index under
0.3x parse.
"""
from __future__ import annotations

import argparse
import time

import cudalint.project.index as index
from cudalint.config import ConfigResolver
from cudalint.discovery import discover
from cudalint.parse import parse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    targets = [t for t in discover(args.paths, ConfigResolver()) if t.kind == "cuda"]
    texts = {t.path: t.path.read_text(encoding="utf-8", errors="replace") for t in targets}
    datas = {t.path: t.path.read_bytes() for t in targets}
    best: dict[str, float] = {}
    expanded = 0
    for _ in range(args.repeat):
        index._facts_at.cache_clear()
        t0 = time.process_time()
        index.prepare(targets)
        t1 = time.process_time()
        views = [index.unit_view(str(t.path), texts[t.path], t.settings) for t in targets]
        t2 = time.process_time()
        for t in targets:
            index.project_deps(str(t.path))
        t3 = time.process_time()
        for t in targets:
            parse(datas[t.path])
        t4 = time.process_time()
        expanded = sum(1 for v in views if v is not None and v.char_map is not None)
        for key, value in (("prepare", t1 - t0), ("views", t2 - t1), ("deps", t3 - t2),
                           ("parse", t4 - t3)):
            best[key] = min(best.get(key, value), value)
    total = best["prepare"] + best["views"] + best["deps"]
    print(f"{len(targets)} CUDA files, {expanded} with macros expanded")
    print(f"index: prepare {best['prepare']:.2f} s + views {best['views']:.2f} s + "
          f"deps {best['deps']:.2f} s = {total:.2f} s")
    print(f"parse: {best['parse']:.2f} s -> index/parse {total / best['parse']:.2f}x")
    index._CURRENT = None


if __name__ == "__main__":
    main()
