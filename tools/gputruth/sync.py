"""GPU truth for CL101-CL107: compute-sanitizer racecheck and synccheck on every fixture
kernel of fixtures/CL101, CL102, CL103, CL105, CL106 and CL107, and a plain run under a
time limit (mismatched barriers can hang a block: the record says so).

Each fixture file is built for sm_90 with -lineinfo together with a generated host
harness whose ``main(argc, argv)`` launches the kernel named by ``argv[1]`` once, with
the block/grid of the fixture's own launch line, on buffers of 1.0f (pointers to
integers: buffers of 5; integer parameters: 5). Every kernel then runs alone under
``compute-sanitizer --tool racecheck`` (hazard report, every severity) and ``--tool
synccheck``, several kernels at a time; a run past its time limit is killed with its
process group and recorded as ``"timeout"``. The raw reports and the parsed hazards
(kind, severity, the two source lines) go to fixtures/<CODE>/truth.json, next to what
the CUDA programming model says about the kernel (from the fixture's ruleid
annotations) and, where the two differ, why (NOTES below).

``--probes`` also runs the kernels of tools/gputruth/probes/*.cu (shapes no rule
speaks about yet) and writes their raw reports to $OUT/probes.json only (the issue 23
probes' output of 2026-11-24 is kept as tools/gputruth/probes/results.json: racecheck
sees no hazard for the in-place global neighbour update, which it does not check, and
263 errors for one shared address stored with different values).

    python tools/gputruth/sync.py --plan                 # here: kernels and launch shapes
    python tools/gputruth/sync.py --compile-only         # here: the harnesses build
    python3 tools/gputruth/sync.py --out $OUT --probes   # on the GPU machine
    python tools/gputruth/sync.py --records RAW.json     # re-parse committed raw output
    python3 tools/gputruth/sync.py --out $OUT --only fixtures/CL107   # some files only
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAN = Path(__file__).with_name("sync_plan.json")
CODES = ("CL101", "CL102", "CL103", "CL105", "CL106", "CL107")
PROBES = Path(__file__).with_name("probes")
FLOATS = 1 << 20
INT_VALUE = 5             # what integer buffers and integer parameters hold
PLAIN_LIMIT_S = 20        # a plain run of one kernel takes well under a second
SANITIZER_LIMIT_S = 60
WORKERS = 8
_INT_TYPES = ("int", "unsigned", "unsigned int", "long", "size_t", "int64_t",
              "uint32_t", "int32_t", "short", "char", "unsigned char")

# Why the programming model and the sanitizer disagree, per kernel (written after the
# measurement, explained from the programming guide; the measured fields are never
# edited by hand).
_EXITED = ("synccheck and racecheck are silent: the threads that skip the barrier exit, and "
           "since Volta a barrier waits only for threads that have not exited, so nothing is "
           "left waiting. CL103 is silent; the opt-in CL106 reports it after the Programming "
           "Guide's letter (every thread of the block reaches the barrier), which pre-Volta "
           "GPUs needed.")
_MASK = ("synccheck is silent on sm_90: the lanes the mask names but that never arrive go "
         "on to exit, and a warp-level sync, like a block barrier, waits only for lanes "
         "that have not exited (for shuffles ptxas may also drop the mask). The "
         "programming model makes it undefined: every calling lane must be in the mask "
         "and every non-exited lane named in it must call the same intrinsic with the same "
         "mask; CL105 follows the model.")
NOTES: dict[str, str] = {
    "syncwarp_after_each_step": (
        "racecheck reports no hazard. The programming model says race: in "
        "`s[tid] += s[tid + 16]` lane t reads s[t+16] while lane t+16 writes s[t+16] in "
        "the same statement, and nothing orders the two lanes (for one thread the load "
        "and the store are different addresses, so the compiler may reorder them). On "
        "the GPU the warp runs that statement converged, every lane's LDS issues before "
        "any lane's STS, and racecheck's run-time analysis sees no hazard; CL101 follows "
        "the model."),
    "argmin_guarded_steps": (
        "racecheck reports no hazard, as for syncwarp_after_each_step: in "
        "`if (d[t] > d[t + 16]) { d[t] = d[t + 16]; ... }` lane t reads d[t+16] while lane "
        "t+16, taking its own branch, writes d[t+16], with no __syncwarp() between; the "
        "warp runs the step converged, every lane's loads issue before any lane's stores, "
        "and racecheck's run-time analysis sees no hazard. CL101 follows the model."),
    "barrier_in_tid_branch": _EXITED,
    "early_return_before_barrier": _EXITED,
    "barrier_in_thread_dependent_loop": _EXITED,
    "cg_block_sync_in_branch": _EXITED,
    "strided_loop_then_exit": _EXITED,
    "branch_barrier_others_return": _EXITED,
    "tail_return_tile": _EXITED,
    "cg_sync_in_first_warp": _EXITED,
    "this_block_sync_in_branch": _EXITED,
    "ptx_barrier_after_return": _EXITED,
    "break_then_barrier": (
        "the plain run and both sanitizers hang (killed at their time limits): the "
        "threads that break out of the loop wait at the barrier after it while the "
        "others wait at the loop's barriers."),
    "strided_loop_then_block_sum": (
        "the plain run and racecheck hang (killed at their time limits): the threads "
        "that leave the block-strided loop wait at the block sum's barriers while the "
        "others wait at the loop's; synccheck reports the divergent barrier."),
    "full_mask_in_half_warp": _MASK,
    "partial_mask_all_lanes": _MASK,
    "syncwarp_full_mask_divergent": _MASK,
}


def kernels_of(path: Path) -> list[dict]:
    from cudalint.model.kernels import Model
    from cudalint.parse import parse
    model = Model(parse(path.read_bytes()))
    out = []
    for fn in model.kernels:
        if fn.is_template:
            continue            # instantiations: tools/gputruth/templates.py
        launches = [l for l in model.launches if l.kernel == fn.name]
        if not launches or launches[0].block is None:
            continue
        l = launches[0]
        entry = {"kernel": fn.name, "line": fn.node.start_point[0] + 1,
                 "end_line": fn.node.end_point[0] + 1,
                 "block": list(l.block), "grid": list(l.grid or (1, 1, 1)),
                 "params": [p.base_type + ("*" if p.is_pointer else "")
                            for p in fn.params]}
        # an integer literal the fixture's launch passes (`k<<<1, 256>>>(in, out, 1024)`)
        # is what the harness passes too (INT_VALUE for the others)
        literal = {str(i): int(a.text) for i, a in enumerate(l.args)
                   if a.type == "number_literal" and a.text.isdigit()}
        if literal:
            entry["values"] = literal
        out.append(entry)
    return out


def expected_rules(path: Path) -> dict[int, set[str]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from fixture_support import expectations
    expect, _ = expectations(path)
    return expect


def harness(path: Path, kernels: list[dict]) -> str:
    lines = [f'#include "{path}"', "#include <cstdio>", "#include <cstring>",
             "#include <vector>",
             "int main(int argc, char** argv) {",
             "  if (argc < 2) return 2;",
             f"  std::vector<float> host({FLOATS}, 1.0f);",
             f"  std::vector<int> ihost({FLOATS}, {INT_VALUE});",
             "  float* buf[4];",
             "  int* ibuf[4];",
             "  for (int i = 0; i < 4; ++i) {",
             f"    cudaMalloc(&buf[i], {FLOATS} * sizeof(float));",
             f"    cudaMemcpy(buf[i], host.data(), {FLOATS} * sizeof(float), "
             "cudaMemcpyHostToDevice);",
             f"    cudaMalloc(&ibuf[i], {FLOATS} * sizeof(int));",
             f"    cudaMemcpy(ibuf[i], ihost.data(), {FLOATS} * sizeof(int), "
             "cudaMemcpyHostToDevice);",
             "  }"]
    for k in kernels:
        values = k.get("values", {})
        args = ", ".join(_argument(t, i, values.get(str(i)))
                         for i, t in enumerate(k["params"]))
        b, g = k["block"], k["grid"]
        lines.append(f'  if (!strcmp(argv[1], "{k["kernel"]}")) {k["kernel"]}<<<dim3({g[0]}, '
                     f"{g[1]}, {g[2]}), dim3({b[0]}, {b[1]}, {b[2]})>>>({args});")
    lines += ["  cudaError_t e = cudaDeviceSynchronize();",
              '  if (e != cudaSuccess) { printf("%s\\n", cudaGetErrorString(e)); return 1; }',
              "  return 0;", "}"]
    return "\n".join(lines) + "\n"


def _argument(ptype: str, i: int, value: int | None = None) -> str:
    """The harness's argument for a parameter of type ``ptype`` ("float*", "int", ...):
    ``value`` for an integer parameter the fixture's launch gives a literal."""
    pointer = ptype.endswith("*")
    base = ptype.rstrip("*").strip()
    integer = base in _INT_TYPES
    if pointer:
        return f"({base}*)ibuf[{i}]" if integer else f"({base}*)buf[{i}]"
    if integer:
        return f"({base}){INT_VALUE if value is None else value}"
    return f"({base})1.0f"


def sh(cmd: list[str], timeout: int = 180) -> dict:
    """Run ``cmd``; past ``timeout`` seconds kill its whole process group (the
    sanitizer's target process too) and return rc "timeout" with the output so far."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        rc: int | str = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        rc = "timeout"
    return {"rc": rc, "output": (out or b"").decode(errors="replace")[-20000:]}


# ---- parsing ------------------------------------------------------------------------
_RACE = re.compile(
    r"(Error|Warning|Info):\s*(?:\(([^)]*)\)\s*)?Potential (\w+) hazard detected at "
    r"__shared__ (0x[0-9a-f]+) in block \(([\d,]+)\)\s*:\s*\n=+\s*(\w+) Thread "
    r"\(([\d,]+)\) at [^\n]*? in ([\w.]+):(\d+)\s*\n=+\s*(\w+) Thread \(([\d,]+)\) at "
    r"[^\n]*? in ([\w.]+):(\d+)")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY:\s*(\d+) hazards? displayed \((\d+) errors?, "
                           r"(\d+) warnings?\)")
_SYNC = re.compile(r"Barrier error detected\.\s*([^\n]*)\n(?:=+[^\n]*\n){0,3}?=+\s*at [^\n]*? in "
                   r"(?:\S*?)([\w.]+):(\d+)")
_SYNC_OTHER = re.compile(r"=+\s*((?:Invalid|Divergent|Barrier)[^\n]*)")
_SUMMARY = re.compile(r"(?:RACECHECK SUMMARY|ERROR SUMMARY):\s*([^\n]*)")


def parse_racecheck(output: str) -> dict:
    """Hazards by (severity, category, kind, first line, second line) with counts, and
    the summary's totals (errors: threads of different warps; warnings: "Warp Level
    Programming", lanes of one warp)."""
    counts: dict[tuple, int] = {}
    for m in _RACE.finditer(output):
        sev, cat, kind, _addr, _blk, _a1, _t1, _f1, l1, _a2, _t2, _f2, l2 = m.groups()
        key = (sev.lower(), cat or "", kind, int(l1), int(l2))
        counts[key] = counts.get(key, 0) + 1
    hazards = [{"severity": k[0], "category": k[1], "kind": k[2], "first_line": k[3],
                "second_line": k[4], "shown": n} for k, n in sorted(counts.items())]
    m = _RACE_SUMMARY.search(output)
    totals = {"displayed": int(m.group(1)), "errors": int(m.group(2)),
              "warnings": int(m.group(3))} if m else None
    return {"hazards": hazards, "totals": totals}


def parse_synccheck(output: str) -> dict:
    errors = [{"kind": m.group(1).strip(), "line": int(m.group(3))}
              for m in _SYNC.finditer(output)]
    other = sorted({m.group(1).strip() for m in _SYNC_OTHER.finditer(output)})
    summary = [s.strip() for s in _SUMMARY.findall(output)]
    return {"errors": errors, "messages": other, "summary": summary}


def records(raw: dict, plan: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {c: [] for c in CODES
                                  if any(Path(rel).parent.name == c for rel in plan)}
    for rel, kernels in plan.items():
        code = Path(rel).parent.name
        expect = expected_rules(ROOT / rel)
        for k in kernels:
            r = raw.get(rel, {}).get(k["kernel"], {})
            rc = parse_racecheck(r.get("racecheck", {}).get("output", ""))
            sc = parse_synccheck(r.get("synccheck", {}).get("output", ""))
            model = sorted({c for line, cs in expect.items()
                            if k["line"] <= line <= k["end_line"] for c in cs})
            rec = {"file": rel, "kernel": k["kernel"], "block": k["block"],
                   "grid": k["grid"], "model": model,
                   "racecheck": {"hazards": rc["hazards"], "totals": rc["totals"],
                                 "rc": r.get("racecheck", {}).get("rc"),
                                 "raw": _trim(r.get("racecheck", {}).get("output", ""))},
                   "synccheck": {"errors": _dedupe(sc["errors"]),
                                 "messages": sc["messages"], "summary": sc["summary"],
                                 "rc": r.get("synccheck", {}).get("rc"),
                                 "raw": _trim(r.get("synccheck", {}).get("output", ""))},
                   "plain_rc": r.get("plain", {}).get("rc"),
                   "plain_timed_out": r.get("plain", {}).get("rc") == "timeout"}
            totals = rc["totals"] or {"errors": 0, "warnings": 0}
            rec["racecheck_errors"] = totals["errors"]
            rec["racecheck_warnings"] = totals["warnings"]
            rec["racecheck_positive"] = bool(totals["errors"] or totals["warnings"])
            rec["synccheck_positive"] = bool(rec["synccheck"]["errors"] or any(
                "Invalid" in m or "Divergent" in m for m in sc["messages"]))
            if k["kernel"] in NOTES:
                rec["note"] = NOTES[k["kernel"]]
            out[code].append(rec)
    return out


def _dedupe(items: list[dict]) -> list[dict]:
    seen, out = set(), []
    for it in items:
        key = json.dumps(it, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(it)
    return out


def _trim(s: str, limit: int = 1500) -> str:
    lines = [l for l in s.splitlines() if l.startswith("=========")]
    text = "\n".join(lines)
    return text if len(text) <= limit else text[:limit] + "\n... (trimmed)"


def write_records(recs: dict[str, list[dict]], gpu: str, tool_versions: str) -> None:
    for code, items in recs.items():
        data = {"tool": "tools/gputruth/sync.py", "gpu": gpu, "arch": "sm_90",
                "sanitizer": tool_versions, "records": items}
        (ROOT / "fixtures" / code / "truth.json").write_text(
            json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"{code}: {len(items)} records")


def _measure(into: dict, exe: str, name: str) -> None:
    runs = {
        "plain": sh([exe, name], PLAIN_LIMIT_S),
        "racecheck": sh(["compute-sanitizer", "--tool", "racecheck",
                         "--racecheck-report", "hazard",
                         "--racecheck-detect-level", "info",
                         "--print-limit", "200", exe, name], SANITIZER_LIMIT_S),
        "synccheck": sh(["compute-sanitizer", "--tool", "synccheck",
                         "--print-limit", "200", exe, name], SANITIZER_LIMIT_S),
    }
    into[name] = runs
    print(f"  {name}: plain={runs['plain']['rc']} racecheck={runs['racecheck']['rc']} "
          f"synccheck={runs['synccheck']['rc']}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--plan", action="store_true")
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--records", default=None, help="re-parse a raw.json from --out")
    ap.add_argument("--probes", action="store_true", help="also run probes/*.cu")
    ap.add_argument("--only", default=None, help="the fixture files under this path")
    args = ap.parse_args()
    if args.plan:
        plan = {str(p.relative_to(ROOT)): kernels_of(p) for code in CODES
                for p in sorted((ROOT / "fixtures" / code).glob("*.cu"))}
        PLAN.write_text(json.dumps(plan, indent=1) + "\n")
        probes_plan = {str(p.relative_to(ROOT)): kernels_of(p)
                       for p in sorted(PROBES.glob("*.cu"))}
        (PROBES / "plan.json").write_text(json.dumps(probes_plan, indent=1) + "\n")
        print(sum(len(v) for v in plan.values()), "kernels,",
              sum(len(v) for v in probes_plan.values()), "probes")
        return
    plan = json.loads(PLAN.read_text())
    if args.only:
        plan = {rel: ks for rel, ks in plan.items() if rel.startswith(args.only)}
    if args.records:
        raw = json.loads(Path(args.records).read_text())
        write_records(records(raw["runs"], plan), raw["gpu"], raw["sanitizer"])
        return
    raw: dict[str, dict] = {}
    probes: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        builds = dict(plan)
        if args.probes:
            builds.update(json.loads((PROBES / "plan.json").read_text()))

        def build_one(rel: str):
            path = ROOT / rel
            src = Path(tmp) / (path.stem + "_harness.cu")
            src.write_text(harness(path, builds[rel]))
            exe = str(Path(tmp) / path.stem)
            res = sh(["nvcc", "-arch=sm_90", "-lineinfo", "-o", exe, str(src)], 300)
            print(f"built {rel}: rc={res['rc']} {len(builds[rel])} kernels", flush=True)
            return rel, exe, res

        jobs = []
        with ThreadPoolExecutor(WORKERS) as pool:
            for rel, exe, res in pool.map(build_one, list(builds)):
                into = raw if rel in plan else probes
                if res["rc"] != 0:
                    print(res["output"])
                    into[rel] = {"build": res}
                    continue
                into[rel] = {}
                jobs.extend((into[rel], exe, k["kernel"]) for k in builds[rel])
        if not args.compile_only:
            with ThreadPoolExecutor(WORKERS) as pool:
                for _ in pool.map(lambda j: _measure(*j), jobs):
                    pass
    if args.probes and args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, "probes.json").write_text(json.dumps(probes, indent=1) + "\n")
    if args.compile_only:
        return
    gpu = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    version = sh(["compute-sanitizer", "--version"])
    data = {"gpu": gpu["output"].strip(), "sanitizer": version["output"].strip()[-200:],
            "runs": raw}
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, "sync_raw.json").write_text(json.dumps(data, indent=1) + "\n")
    try:
        write_records(records(raw, plan), data["gpu"], data["sanitizer"])
        if args.out:
            for code in sorted({Path(rel).parent.name for rel in plan}):
                Path(args.out, code).mkdir(exist_ok=True)
                Path(args.out, code, "truth.json").write_text(
                    (ROOT / "fixtures" / code / "truth.json").read_text())
    except Exception as e:   # the device may lack tree-sitter: re-parse here later
        print(f"records not written here ({type(e).__name__}: {e}); use --records")


if __name__ == "__main__":
    main()
