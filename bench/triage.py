"""Triage: how often is a default finding right and worth acting on, per rule?

    python bench/triage.py sample ROOT [--total 60] [--min-per-rule 3] [--seed 2026]
                                       [--findings run.json] [--out sheet.md|sheet.csv]
    python bench/triage.py score SHEET [--update]

``sample`` runs cudalint with its default rules over ROOT (a folder of fetched projects,
one per subfolder; never committed), or reads a JSON run given with ``--findings``, draws
a sample stratified by rule with a seed, and writes a sheet to fill in: for each sampled
finding its location, message, a few lines of code around it, and empty ``verdict`` and
``reason`` fields. A verdict is one of

- ``right``: the finding is true and acting on it changes what the GPU executes or
  computes (a speed-up, a wrong result avoided);
- ``not-worth``: true, but acting on it changes nothing that matters;
- ``wrong``: something the finding states is false.

``score`` reads a filled sheet (markdown or CSV) and prints precision per rule -- right /
judged -- with a 95% Wilson interval and the counts, and the total re-weighted by the
population of each rule (small rules are over-represented in a stratified sample).
``--update`` writes the table into the sheet between ``<!-- precision -->`` markers.

The sample is deterministic: findings are sorted by (rule, file, row, column, message)
before drawing, so the order in which a parallel run reports them does not matter.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import math
import random
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

VERDICTS = {"right": "right", "r": "right", "tp": "right",
            "wrong": "wrong", "w": "wrong", "fp": "wrong",
            "not-worth": "not-worth", "not worth": "not-worth",
            "not worth acting on": "not-worth", "not-worth-acting-on": "not-worth",
            "nw": "not-worth", "u": "not-worth"}
CONTEXT = 3                     # lines of code either side of the reported line
_HEAD = re.compile(r"^### (\d+)\. (CL\d{3}) `([^`]*)`")
_FIELD = re.compile(r"^- (verdict|reason):[ \t]*(.*)$")
_POPULATION = re.compile(r"<!-- population: (\{.*\}) -->")


@dataclass
class Entry:
    n: int
    code: str
    location: str               # path:row:col, relative to ROOT
    message: str = ""
    context: str = ""
    verdict: str = ""
    reason: str = ""


# -- sampling ------------------------------------------------------------------------------

def allocate(counts: dict[str, int], total: int, min_per_rule: int) -> dict[str, int]:
    """How many findings to draw from each rule: at least ``min_per_rule`` (or all of a
    smaller rule), the rest in proportion to the rule's size (largest remainders), never
    more than a rule has."""
    alloc = {c: min(n, min_per_rule) for c, n in counts.items()}
    left = total - sum(alloc.values())
    while left > 0:
        room = {c: counts[c] - alloc[c] for c in counts if counts[c] > alloc[c]}
        if not room:
            break
        size = sum(room.values())
        share = {c: left * r / size for c, r in room.items()}
        give = {c: min(room[c], int(s)) for c, s in share.items()}
        if sum(give.values()) == 0:
            # fewer places than rules: by largest share, ties by code
            for c in sorted(share, key=lambda c: (-share[c], c))[:left]:
                give[c] = 1
        for c, g in give.items():
            alloc[c] += g
        left = total - sum(alloc.values())
    return alloc


def _key(f: dict) -> tuple:
    return (f["code"], f["filename"], f["location"]["row"], f["location"]["column"],
            f["message"])


def draw(findings: list[dict], total: int, min_per_rule: int, seed: int) -> list[dict]:
    """A stratified sample: per rule, a seeded random draw of its allocation, in a fixed
    order (rule, then position) whatever the order of ``findings``."""
    by_rule: dict[str, list[dict]] = {}
    for f in sorted(findings, key=_key):
        by_rule.setdefault(f["code"], []).append(f)
    alloc = allocate({c: len(v) for c, v in by_rule.items()}, total, min_per_rule)
    rng = random.Random(seed)
    out = []
    for code in sorted(by_rule):
        picked = rng.sample(range(len(by_rule[code])), alloc[code])
        out += [by_rule[code][i] for i in sorted(picked)]
    return out


def run_cudalint(root: Path, jobs: int) -> list[dict]:
    cmd = [sys.executable, "-m", "cudalint", "check", ".", "--output-format", "json",
           "--no-cache", "--exit-zero", "-j", str(jobs)]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"cudalint failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout or "[]")


def context_of(root: Path, f: dict, width: int = CONTEXT) -> str:
    path = root / f["filename"]
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    row = f["location"]["row"]
    lo, hi = max(1, row - width), min(len(lines), row + width)
    return "\n".join(f"{'>' if i == row else ' '}{i:6d}  {lines[i - 1]}"
                     for i in range(lo, hi + 1))


def _fence(path: str) -> str:
    return "cuda" if path.endswith((".cu", ".cuh", ".h", ".hpp", ".cpp")) else \
        "python" if path.endswith(".py") else ""


def write_sheet(out: Path, entries: list[Entry], header: str,
                population: dict[str, int]) -> None:
    if out.suffix == ".csv":
        with out.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["n", "code", "location", "message", "context", "verdict", "reason"])
            for e in entries:
                w.writerow([e.n, e.code, e.location, e.message, e.context, e.verdict,
                            e.reason])
        return
    parts = [header.rstrip() + "\n",
             f"<!-- population: {json.dumps(population, sort_keys=True)} -->\n",
             "<!-- precision -->\n<!-- /precision -->\n", "## Findings\n"]
    for e in entries:
        path = e.location.rsplit(":", 2)[0]
        parts.append(f"### {e.n}. {e.code} `{e.location}`\n\n{e.message}\n\n"
                     f"```{_fence(path)}\n{e.context}\n```\n\n"
                     f"- verdict: {e.verdict}\n- reason: {e.reason}\n")
    out.write_text("\n".join(parts), encoding="utf-8")


# -- scoring -------------------------------------------------------------------------------

def read_sheet(path: Path) -> tuple[list[Entry], dict[str, int]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        return [Entry(int(r["n"]), r["code"], r["location"], r.get("message", ""),
                      r.get("context", ""), r.get("verdict", ""), r.get("reason", ""))
                for r in rows], {}
    m = _POPULATION.search(text)
    population = json.loads(m.group(1)) if m else {}
    entries: list[Entry] = []
    for line in text.splitlines():
        h = _HEAD.match(line)
        if h:
            entries.append(Entry(int(h.group(1)), h.group(2), h.group(3)))
            continue
        f = _FIELD.match(line)
        if f and entries:
            setattr(entries[-1], f.group(1), f.group(2).strip())
    return entries, population


def verdict_of(text: str) -> str | None:
    """The normalised verdict, None when not judged; ValueError for anything else."""
    t = text.strip().strip("*").strip().lower()
    if not t:
        return None
    if t in VERDICTS:
        return VERDICTS[t]
    raise ValueError(f"unknown verdict {text!r} (right / wrong / not-worth)")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


@dataclass
class RuleScore:
    code: str
    population: int = 0
    sampled: int = 0
    right: int = 0
    not_worth: int = 0
    wrong: int = 0
    reasons: list[str] = field(default_factory=list)

    @property
    def judged(self) -> int:
        return self.right + self.not_worth + self.wrong

    @property
    def precision(self) -> float | None:
        return self.right / self.judged if self.judged else None


def score(entries: list[Entry], population: dict[str, int]) -> dict[str, RuleScore]:
    out: dict[str, RuleScore] = {}
    for e in entries:
        s = out.setdefault(e.code, RuleScore(e.code, population.get(e.code, 0)))
        s.sampled += 1
        v = verdict_of(e.verdict)
        if v == "right":
            s.right += 1
        elif v == "wrong":
            s.wrong += 1
        elif v == "not-worth":
            s.not_worth += 1
    return dict(sorted(out.items()))


def table(scores: dict[str, RuleScore]) -> str:
    rows = ["| rule | findings | sampled | judged | right | not worth | wrong | precision "
            "| 95% interval |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for s in scores.values():
        p = s.precision
        lo, hi = wilson(s.right, s.judged)
        rows.append(f"| {s.code} | {s.population or '?'} | {s.sampled} | {s.judged} | "
                    f"{s.right} | {s.not_worth} | {s.wrong} | "
                    f"{'-' if p is None else f'{p:.0%}'} | "
                    f"{'-' if p is None else f'{lo:.0%}-{hi:.0%}'} |")
    judged = [s for s in scores.values() if s.judged]
    right = sum(s.right for s in judged)
    n = sum(s.judged for s in judged)
    rows.append(f"| all (sample) | {sum(s.population for s in scores.values()) or '?'} | "
                f"{sum(s.sampled for s in scores.values())} | {n} | {right} | "
                f"{sum(s.not_worth for s in judged)} | {sum(s.wrong for s in judged)} | "
                f"{'-' if not n else f'{right / n:.0%}'} | |")
    if judged and all(s.population for s in judged):
        weight = sum(s.population for s in judged)
        est = sum(s.population * s.precision for s in judged) / weight
        rows.append(f"\nRe-weighted by each rule's number of findings (rules with a judged "
                    f"sample, {weight} findings): {est:.0%} right.")
    return "\n".join(rows)


def update_sheet(path: Path, text_table: str) -> None:
    text = path.read_text(encoding="utf-8")
    block = f"<!-- precision -->\n## Precision per rule\n\n{text_table}\n<!-- /precision -->"
    new, n = re.subn(r"<!-- precision -->.*?<!-- /precision -->", lambda _: block, text,
                     flags=re.S)
    path.write_text(new if n else text + "\n" + block + "\n", encoding="utf-8")


# -- command line --------------------------------------------------------------------------

def _git_head() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parent)
    return done.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sample", help="run cudalint and write a sheet to fill in")
    s.add_argument("root", type=Path)
    s.add_argument("--total", type=int, default=60)
    s.add_argument("--min-per-rule", type=int, default=3)
    s.add_argument("--seed", type=int, default=2026)
    s.add_argument("--findings", type=Path, help="a cudalint JSON run (relative to ROOT)")
    s.add_argument("--save-findings", type=Path, help="keep the JSON run here")
    s.add_argument("--jobs", type=int, default=2)
    s.add_argument("--out", type=Path)
    c = sub.add_parser("score", help="precision per rule from a filled sheet")
    c.add_argument("sheet", type=Path)
    c.add_argument("--update", action="store_true", help="write the table into the sheet")
    args = ap.parse_args(argv)

    if args.cmd == "score":
        entries, population = read_sheet(args.sheet)
        text_table = table(score(entries, population))
        print(text_table)
        if args.update and args.sheet.suffix != ".csv":
            update_sheet(args.sheet, text_table)
        return 0

    root = args.root.resolve()
    findings = json.loads(args.findings.read_text()) if args.findings else \
        run_cudalint(root, args.jobs)
    if args.save_findings:
        args.save_findings.write_text(json.dumps(findings))
    population = dict(sorted(Counter(f["code"] for f in findings).items()))
    picked = draw(findings, args.total, args.min_per_rule, args.seed)
    entries = [Entry(i, f["code"], f"{f['filename']}:{f['location']['row']}:"
                     f"{f['location']['column']}", f["message"], context_of(root, f))
               for i, f in enumerate(picked, 1)]
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    out = args.out or Path(__file__).resolve().parent / "triage" / f"sheet-{today}.md"
    per_rule = Counter(e.code for e in entries)
    header = (f"# Triage sheet, {today}\n\n"
              f"- cudalint at commit {_git_head()} (working tree as it was), default "
              f"rules, over `{root}` ({len(findings)} findings).\n"
              f"- Findings per rule: "
              f"{', '.join(f'{c} {n}' for c, n in population.items())}.\n"
              f"- Sample: {len(entries)} findings, seed {args.seed}, at least "
              f"{args.min_per_rule} per rule, the rest in proportion: "
              f"{', '.join(f'{c} {n}' for c, n in sorted(per_rule.items()))}.\n"
              "- Verdicts: `right` (true, and acting on it changes what the GPU executes "
              "or computes), `not-worth` (true, but acting on it changes nothing that "
              "matters), `wrong` (something stated is false). Fill `verdict` and "
              "`reason`, then `python bench/triage.py score SHEET --update`.\n")
    write_sheet(out, entries, header, population)
    print(f"{out}: {len(entries)} findings of {len(findings)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
