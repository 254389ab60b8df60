"""CL402/CL403/CL404 CPU seconds over real CUDA sources, against tree-sitter parsing alone.

    python bench/fp_speed.py /tmp/real/cuda-samples /tmp/real/apex /tmp/real/mmcv \\
        /tmp/real/llm.c /tmp/real/gsplat /tmp/real/detectron2

Same method as bench/memory_speed.py (CPU time of this process, time.process_time, best of
--repeat passes; libclang runs in-process, so its time counts): every .cu/.cuh file is one
unit; its tree and parse model are built once, outside the timings, and shared the way
the engine shares them; each rule row runs that rule alone on fresh contexts, so it pays
for the analyses it asks for (the libclang facts of fptypes) as if it were the only rule
selected. The libclang result cache (fptypes._CACHE, keyed by content) is emptied before
every pass, so repeated passes measure work, not cache hits. ``--no-prefilter`` times the
whole-unit libclang path (every unit with a device function and a candidate is parsed and
walked in full), the way the rules ran before the prefilters.

Also prints how many units libclang parsed and how the time splits. Not a pass/fail
test; the budget: CL402+CL403+CL404 together well under 1x parse.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from cudalint.analysis.fp import clang_session, fptypes
from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.model.kernels import Model
from cudalint.parse import parse
from cudalint.rule import rule_by_code
from cudalint.sources.base import SourceFile, Unit

SUFFIXES = (".cu", ".cuh")
CODES = ("CL402", "CL403", "CL404")


def units(roots: list[Path]) -> list[Unit]:
    files = [p for r in roots for p in ([r] if r.is_file() else sorted(r.rglob("*")))
             if p.suffix in SUFFIXES and p.is_file() and ".git" not in p.parts]
    out = []
    for p in files:
        try:
            text = p.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            continue
        out.append(Unit(file=SourceFile(path=str(p), text=text, kind="cuda"), text=text))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-prefilter", action="store_true",
                    help="libclang on whole units (the path before the prefilters)")
    args = ap.parse_args()
    data = units(args.paths)
    lines = sum(u.text.count("\n") + 1 for u in data)
    for u in data:
        u.data  # noqa: B018  (encode once, outside the timings)
    clang_session.libclang_available()      # load the library and the shim PCH once
    clang_session._parse_setup()
    clang_session._shim_decls()

    def cpu(fn) -> float:
        best = None
        for _ in range(args.repeat):
            fptypes._CACHE.clear()
            start = time.process_time()
            fn()
            t = time.process_time() - start
            best = t if best is None else min(best, t)
        return best or 0.0

    parse_s = cpu(lambda: [parse(u.data) for u in data])
    trees = [parse(u.data) for u in data]
    models = []
    for u, tree in zip(data, trees):
        m = Model(tree, u.extra_defines)
        m.index, m.functions, m.error_nodes  # noqa: B018
        models.append(m)
    settings = Settings()

    def contexts():
        for u, tree, model in zip(data, trees, models):
            ctx = UnitContext(u, settings)
            ctx.__dict__["tree"] = tree
            ctx.__dict__["model"] = model
            yield ctx

    real_fp_facts = fptypes.fp_facts
    if args.no_prefilter:
        def whole(unit_data, tree_facts=None, want_contractions=True):
            return real_fp_facts(unit_data, None, want_contractions)
        import sys
        sys.modules[rule_by_code("CL403").__module__].fp_facts = whole

    counts: dict[str, int] = {}

    def run(codes: tuple[str, ...]):
        def go():
            n = 0
            for ctx in contexts():
                for code in codes:
                    n += sum(1 for _ in rule_by_code(code)().check(ctx))
            counts[",".join(codes)] = n
        return go

    print(f"files {len(data)}  lines {lines}  (best of {args.repeat}, CPU seconds"
          f"{', whole-unit libclang' if args.no_prefilter else ''})")
    print(f"{'parse only':34} {parse_s:7.3f} s  1.00x parse")
    for code in CODES:
        t = cpu(run((code,)))
        print(f"{code + ' ' + rule_by_code(code).name:34} {t:7.3f} s  {t / parse_s:4.2f}x parse"
              f"  ({counts[code]} findings)")
    t = cpu(run(CODES))
    print(f"{'CL402+CL403+CL404 together':34} {t:7.3f} s  {t / parse_s:4.2f}x parse"
          f"  ({counts[','.join(CODES)]} findings)")

    # how many units reach libclang
    parsed = 0
    real_parse = fptypes._parse

    def counting(idx, src):
        nonlocal parsed
        parsed += 1
        return real_parse(idx, src)
    fptypes._parse = counting
    fptypes._CACHE.clear()
    run(("CL403",))()
    fptypes._parse = real_parse
    print(f"units given to libclang: {parsed} of {len(data)}")


if __name__ == "__main__":
    main()
