"""CPU seconds per rule over real CUDA sources, against tree-sitter parsing alone.

    python bench/rule_speed.py /tmp/real/cuda-samples /tmp/real/apex ...
    python bench/rule_speed.py --select CL101,CL102,CL103,CL105 /tmp/real/mmcv

Every .cu/.cuh file under the paths becomes one unit (with the constants of its local
includes, as the engine does). The tree and the parse model (its one combined query,
functions, constants, arrays, launches) are built once and shared; each rule then runs
alone on a fresh context over every unit, so it pays for the analyses it asks for
(RaceAnalysis, ThreadDependence, the lane engine, ...) as if no other rule were
selected. Rules that share analyses are also timed together ("group" rows), the way the
linter runs them. Figures are CPU time of this process (time.process_time), best of
--repeat passes (the first pass also fills the model's lazy caches).

Nothing here is a pass/fail test. The budget: the whole linter within 3x parse time;
the synchronization rules (CL101/CL102/CL103/CL105) together well under 1x parse.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.model.kernels import Model
from cudalint.parse import parse
from cudalint.rule import all_rules
from cudalint.selection import enabled_rules
from cudalint.sources.base import SourceFile, Unit
from cudalint.project.includes import include_constants

SUFFIXES = (".cu", ".cuh")
GROUPS = {"sync (CL101+CL102+CL103+CL105)": ("CL101", "CL102", "CL103", "CL105"),
          "memory (CL201+CL202)": ("CL201", "CL202")}


def units(roots: list[Path]) -> list[Unit]:
    files = [p for r in roots for p in ([r] if r.is_file() else sorted(r.rglob("*")))
             if p.suffix in SUFFIXES and p.is_file() and ".git" not in p.parts]
    out = []
    for p in files:
        try:
            text = p.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            continue
        defines = include_constants(p, text) if "#include" in text else {}
        out.append(Unit(file=SourceFile(path=str(p), text=text, kind="cuda"), text=text,
                        extra_defines=defines))
    return out


def cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--select", default="", help="comma-separated codes (default: all "
                    "rules enabled by default that run on CUDA units)")
    args = ap.parse_args()
    settings = Settings()
    codes = [c for c in args.select.split(",") if c]
    rules = {r.code: r for r in (all_rules().values() if codes else enabled_rules(settings))
             if r.target == "unit" and (not codes or r.code in codes)}
    data = units(args.paths)
    lines = sum(u.text.count("\n") + 1 for u in data)
    for u in data:
        u.data  # noqa: B018  (encode once, outside the timings)

    parse_s = min(cpu(lambda: [parse(u.data) for u in data]) for _ in range(args.repeat))
    trees = [parse(u.data) for u in data]
    models: list[Model] = []

    def build_models():
        models.clear()
        for u, tree in zip(data, trees):
            m = Model(tree, u.extra_defines)
            m.index, m.constants, m.functions, m.kernels, m.arrays, m.launches  # noqa: B018
            models.append(m)
    model_s = min(cpu(build_models) for _ in range(args.repeat))

    def contexts():
        for u, tree, model in zip(data, trees, models):
            ctx = UnitContext(u, replace(settings, select=tuple(rules)))
            ctx.__dict__["tree"] = tree          # cached_property slots: share, never re-parse
            ctx.__dict__["model"] = model
            yield ctx

    counts: dict[str, int] = {}

    def run(codes_: tuple[str, ...], key: str):
        def go():
            n = 0
            for ctx in contexts():
                for code in codes_:
                    n += sum(1 for _ in rules[code]().check(ctx))
            counts[key] = n
        return go

    rows: list[tuple[str, float]] = []
    for _ in range(args.repeat):            # one untimed-order pass per repeat: best of N
        for code in rules:
            t = cpu(run((code,), code))
            rows.append((code, t))
    per_rule = {c: min(t for k, t in rows if k == c) for c in rules}
    groups = {}
    for name, members in GROUPS.items():
        members = tuple(c for c in members if c in rules)
        if members:
            groups[name] = (members, min(cpu(run(members, name)) for _ in range(args.repeat)))
    everything = tuple(rules)
    all_s = min(cpu(run(everything, "all")) for _ in range(args.repeat))

    print(f"files {len(data)}  lines {lines}  (best of {args.repeat}, CPU seconds)")
    print(f"{'parse only':40} {parse_s:7.3f} s  1.00x parse")
    print(f"{'model (index, functions, ...)':40} {model_s:7.3f} s  {model_s / parse_s:4.2f}x parse")
    for code, t in per_rule.items():
        print(f"{code + ' ' + rules[code].name:40} {t:7.3f} s  {t / parse_s:4.2f}x parse"
              f"  ({counts.get(code, 0)} findings)")
    for name, (members, t) in groups.items():
        print(f"{name:40} {t:7.3f} s  {t / parse_s:4.2f}x parse  ({counts.get(name, 0)} "
              f"findings)")
    print(f"{'all rules above together':40} {all_s:7.3f} s  {all_s / parse_s:4.2f}x parse"
          f"  ({counts.get('all', 0)} findings)")
    total = parse_s + model_s + all_s
    print(f"{'parse + model + all rules':40} {total:7.3f} s  {total / parse_s:4.2f}x parse")


if __name__ == "__main__":
    main()
