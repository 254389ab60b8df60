"""Is a tree reparsed from the previous keystroke's tree the tree a fresh parse gives?

The language server's fast worker parses each keystroke's text from the previous tree
(``cudalint.parse.reuse_trees``). This applies random edits (a statement typed, a
character typed or deleted, a brace opened, a line removed) to CUDA files and compares
every node (type, byte range, points, missing/error flags) of the reparsed tree with a
fresh parse; it also counts how often the previous tree was reused (never from a tree
with errors, nor when the edited text parses with errors: there the two differ).

    python bench/incremental_parse.py /tmp/real --files 300 --seed 3
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import tree_sitter

import cudalint.parse as P


def shape(tree: tree_sitter.Tree) -> list[tuple]:
    out, stack = [], [tree.root_node]
    while stack:
        n = stack.pop()
        out.append((n.type, n.start_byte, n.end_byte, n.start_point, n.end_point,
                    n.is_named, n.is_missing, n.has_error))
        stack.extend(reversed(n.children))
    return out


def edited(cur: bytes, rng: random.Random) -> bytes:
    pos = rng.randrange(len(cur) + 1)
    kind = rng.randrange(5)
    if kind == 0:
        return cur[:pos] + b"\n    float edit = 1.0f;\n" + cur[pos:]
    if kind == 1:
        return cur[:pos] + rng.choice([b"{", b"}", b"(", b";", b"x", b"/*", b'"', b"#",
                                       b"<"]) + cur[pos:]
    if kind == 2:
        return cur[:pos] + cur[pos + rng.randint(1, 5):]
    if kind == 3:
        return cur[:pos] + b"if (x) {" + cur[pos:]
    lines = cur.split(b"\n")
    del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--edits", type=int, default=6, help="edits per file, one after another")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    files = sorted(f for p in args.paths for f in (p.rglob("*.cu*") if p.is_dir() else [p])
                   if f.suffix in (".cu", ".cuh"))
    rng.shuffle(files)
    fresh = tree_sitter.Parser(P.LANGUAGE)
    P.reuse_trees(True)
    compared = different = reused = 0
    reparse = full = 0.0
    for path in files[:args.files]:
        data = path.read_bytes()
        if len(data) > 300_000:
            continue
        P._RECENT.clear()
        P.parse(data)
        cur = data
        for _ in range(args.edits):
            new = edited(cur, rng)
            reused += P._edited(new) is not None
            t = time.process_time()
            got = P.parse(new)
            reparse += time.process_time() - t
            t = time.process_time()
            ref = fresh.parse(new)
            full += time.process_time() - t
            compared += 1
            if shape(got) != shape(ref):
                different += 1
                print(f"different: {path} after {compared} edits")
            cur = new
    print(f"{compared} edits of {min(len(files), args.files)} files: {different} trees "
          f"differ from a fresh parse; the previous tree reused for {reused}; parse CPU "
          f"{reparse:.2f} s with reuse, {full:.2f} s fresh")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
