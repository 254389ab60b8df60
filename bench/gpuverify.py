"""GPUVerify's CUDA test suite as a yardstick for the race and barrier rules (issue 23).

GPUVerify (github mc-imperial/gpuverify) ships ``testsuite/CUDA``: 183 kernels, each in
its own folder as ``kernel.cu``, whose first line says what GPUVerify should conclude
(``//pass``, ``//xfail:NOT_ALL_VERIFIED`` for a race, a barrier divergence or a failed
assertion, ``//xfail:BUGLE_ERROR`` / ``CLANG_ERROR`` for inputs its front end rejects)
and whose second line gives the launch (``//--blockDim=32 --gridDim=2``). This script
extracts that folder from a fetched mirror into /tmp (nothing of it is committed), lints
every kernel with cudalint's default rules, the grid and block of the second line given
as a launch appended to the file and as the ``block-size`` setting (GPUVerify's harness
gives them on the command line; the kernels have no launch), and prints, per expected outcome, how many kernels the race
and barrier rules flag: by default (CL101-CL105, CL107, CL108) and with the opt-in
strict CL106 added. ``--list`` names the flagged kernels and the codes.

    python bench/gpuverify.py --mirror /work/.mirror/mc-imperial+gpuverify/repo
    python bench/gpuverify.py --list            # the suite already extracted
    python bench/gpuverify.py --json out.json   # the figures and every kernel's codes
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_bytes

DEFAULT_MIRROR = "/work/.mirror/mc-imperial+gpuverify/repo"
DEST = Path("/tmp/gpuverify_cuda")
# The race and barrier-divergence kernels GPUVerify fails, judged one by one (issue 23's
# closing note); every other //xfail kernel is a null pointer, an assertion, a loop
# invariant, constant memory, function pointers or a front-end error: not a race shape.
JUDGED = {
    "cooperative_groups/fail/race": "flagged: CL108, A[idx] = A[idx + 1] across blocks",
    "warpsync/bad_inter_group": "flagged: CL108, a block reads the next block's range",
    "warpsync/broken_shuffle": "flagged: CL108, in-place rotation through a local pointer",
    "warpsync/equality_abstraction_issue": "flagged: CL108, A[0] = 1 against A[tid] = 0",
    "fail_tests/race_on_shared": "flagged: CL107, one shared element, different values",
    "cooperative_groups/fail/divergence_thread_block":
        "flagged with strict CL106: the threads that skip synchronize(t) exit",
    "cooperative_groups/fail/divergence_grid_group":
        "flagged with strict CL106: a grid barrier the odd threads skip and exit",
    "cooperative_groups/fail/block_divergence_grid_group":
        "not applicable: whole blocks skip a grid barrier (a cooperative launch hangs); "
        "the rules model one block",
    "fail_tests/shared_int": "flagged: CL107, a __shared__ int of the kernel, thread ids",
    "pointertests/cast": "flagged: CL107, ((unsigned int *)x)[i] = threadIdx.x",
    "misc/fail/miscfail3": "flagged: CL108, A[tid] += A[tid + offset] in the device "
                           "function, `#define tid threadIdx.x` read as nvcc expands it",
    "misc/fail/miscfail4": "flagged: CL108, as miscfail3",
    "param_values/value_causing_race": "not applicable: races only for x = 185 exactly",
    "pointeranalysistests/testbasicaliasing":
        "not applicable: p[100] = q[100] + 1 by every thread, one address for all threads "
        "on both sides (left alone: most often one thread's work under an unread condition)",
    "atomics/add_tid": "not applicable: the index comes from an atomic's result",
    "atomics/add_zero": "not applicable: the index comes from an atomic's result",
    "loop_unwind": "not applicable: every thread stores the same value A[i] to B[i] "
                   "(benign same-value writes stay silent, CL107)",
    # a folder's kernels (keys ending in /)
    "fresh_arrays/fail/": "not applicable: GPUVerify's __requires_fresh_array on a "
                          "pointer held in a struct",
    "curand_tests/fail/": "not applicable: the race is inside curand's state update",
    "memcpy/": "not applicable: memcpy lengths and null pointers (no memcpy model)",
    # GPUVerify fails these on something other than a race or a barrier (read 2026-11-24)
    "function_pointers/": "not applicable: a possible null function pointer or "
                          "GPUVerify's own assert(false), no race",
    "atomics/test_abstraction_enforced": "not applicable: GPUVerify's abstraction of an "
                                         "atomic's result breaks an assert; one thread, no race",
    "globalarray/fail": "not applicable: GPUVerify may not assume the contents of a "
                        "__constant__ table; with the initialiser the store never runs",
    "memset/null_dst": "not applicable: memset of a null pointer, no race",
    "misc/fail/miscfail2": "not applicable: a loop invariant its annotations leave out "
                           "(a proof failure; the barrier orders the loop's accesses)",
    "misc/fail/miscfail5": "not applicable: a store to __constant__ memory (nvcc warns "
                           "it cannot store there), no race",
    "misc/pass/misc3": "not applicable: a store to __constant__ memory, as miscfail5",
    "misc/fail/miscfail6": "not applicable: a zero-sized array",
    "misc/fail/miscfail7": "not applicable: a pointer moved and back, a possible null "
                           "pointer access, no race",
    "misc/fail/miscfail8": "not applicable: GPUVerify's __assert(false)",
    "param_values/value_in_assert": "not applicable: a failed __assert on parameters",
}
# //pass kernels flagged because they rely on lock-step warps (GPUVerify's --warp-sync):
# without that assumption (Volta's independent thread scheduling) they race
LOCK_STEP = {"warpsync/2d": "CL101", "warpsync/scan_warp": "CL108",
             "warpsync/shuffle": "CL108"}
RACE_CODES = ("CL101", "CL102", "CL103", "CL105", "CL107", "CL108")
STRICT = ("CL106",)


def extract(mirror: str, dest: Path) -> Path:
    suite = dest / "testsuite" / "CUDA"
    if not suite.is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", f"--git-dir={mirror}", "archive", "HEAD",
                                  "testsuite/CUDA"], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return suite


def expected(first_line: str) -> str:
    """'pass' or 'xfail:<REASON>' from a kernel's first line."""
    line = first_line.strip().lstrip("/").strip().lower()
    return line.split()[0] if line else "?"


def block_of(header: str) -> tuple[int, int, int] | None:
    """--blockDim=32 or --blockDim=[16,16] (GPUVerify's launch line)."""
    m = re.search(r"--blockDim=(\[[^\]]*\]|\d+)", header)
    if not m:
        return None
    dims = [int(v) for v in re.findall(r"\d+", m.group(1))][:3]
    while len(dims) < 3:
        dims.append(1)
    return tuple(dims)  # type: ignore[return-value]


def grid_of(header: str) -> str | None:
    m = re.search(r"--gridDim=(\[[^\]]*\]|\d+)", header)
    if not m:
        return None
    dims = re.findall(r"\d+", m.group(1))[:3]
    return f"dim3({', '.join(dims)})"


def with_launch(data: bytes, header: str) -> bytes:
    """The kernel file with a host function launching each kernel with GPUVerify's
    grid and block (the suite's harness gives them on the command line): the launch
    tells the rules the grid, as a project's own launch would. No arguments are passed
    (nothing about them is known), so no launch-bound value or aliasing is read."""
    grid, block = grid_of(header), block_of(header)
    if grid is None or block is None:
        return data
    names = re.findall(rb"__global__\s+void\s+(\w+)\s*\(", data)
    calls = "".join(f"    {n.decode()}<<<{grid}, dim3({block[0]}, {block[1]}, {block[2]})>>>();\n"
                    for n in dict.fromkeys(names))
    return data + f"\nvoid __gpuverify_launch() {{\n{calls}}}\n".encode()


def run(suite: Path) -> list[dict]:
    out = []
    base = replace(Settings(), extend_select=STRICT)
    for path in sorted(suite.rglob("kernel.cu")):
        data = path.read_bytes()
        lines = data.decode("utf-8", "replace").splitlines() or [""]
        header = "\n".join(lines[:3])
        block = block_of(header)
        settings = replace(base, block_size=block) if block else base
        try:
            res = lint_bytes(str(path), with_launch(data, header), settings, "cuda")
            codes = sorted({d.code for d in res.diagnostics if not d.suppressed})
        except Exception as exc:                      # a kernel the linter fails on
            codes = [f"error:{type(exc).__name__}"]
        out.append({"kernel": str(path.parent.relative_to(suite)),
                    "expected": expected(lines[0]), "block": block, "codes": codes})
    return out


def figures(rows: list[dict]) -> dict[str, dict[str, int]]:
    table: dict[str, Counter] = {}
    for r in rows:
        c = table.setdefault(r["expected"], Counter())
        c["total"] += 1
        race = set(r["codes"]) & set(RACE_CODES)
        c["flagged"] += bool(race)
        c["flagged_strict"] += bool(race or set(r["codes"]) & set(STRICT))
    return {k: dict(v) for k, v in sorted(table.items())}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default=DEFAULT_MIRROR, help="a fetched gpuverify git dir")
    ap.add_argument("--dest", type=Path, default=DEST)
    ap.add_argument("--list", action="store_true", help="name every flagged kernel")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    suite = extract(a.mirror, a.dest)
    rows = run(suite)
    table = figures(rows)
    print(f"{'expected':28} {'flagged':>8} {'+CL106':>8} {'total':>6}")
    for k, c in table.items():
        print(f"{k:28} {c.get('flagged', 0):>8} {c.get('flagged_strict', 0):>8} "
              f"{c['total']:>6}")
    if a.list:
        for r in rows:
            hit = sorted(set(r["codes"]) & set(RACE_CODES + STRICT))
            note = JUDGED.get(r["kernel"]) or next(
                (v for k, v in JUDGED.items() if k.endswith("/") and
                 r["kernel"].startswith(k) and r["expected"] != "pass"), None) or (
                "relies on lock-step warps" if r["kernel"] in LOCK_STEP else "")
            if hit or note:
                print(f"  {r['expected']:24} {r['kernel']:52} {' '.join(hit) or '-':12} "
                      f"{note}")
    if a.json:
        a.json.write_text(json.dumps({"figures": table, "kernels": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
