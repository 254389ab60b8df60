"""Random kernels against CL203's split-vector-load counts, without a GPU.

Each kernel loads some fields of one element of a vector-typed read-only pointer (float2,
float4, int2, int4, uint4, double2, or structs declared ``__align__(8)``/``(16)``) into
locals, in a random order, with stores of those locals to another pointer (the same
type, another vector type or a ``float*``; other elements; never the same location
twice, so no store is dead) between and after the loads. The file is compiled to PTX
with ``nvcc -arch=sm_90`` twice, as written and with the read pointer
``__restrict__``; the ``ld.global`` instructions of each kernel (and their widths) are
compared with what CL203 says:

* reported with kind ``split_load``: its load count and widths must be the PTX's as
  written, its fixed count and widths the PTX's with ``__restrict__``;
* reported as a reload: ``__restrict__`` must remove loads;
* not reported: ``right`` when ``__restrict__`` changes no load count, else ``missed``
  (fields with a gap, and orders where the model's two estimates disagree, are not
  reported on purpose).

    python tools/gputruth/vector_split_fuzz.py            # fixtures/CL203/vector_fuzz.json
    python tools/gputruth/vector_split_fuzz.py --check    # recompute and compare

tests/test_readonly_sass.py runs one seed and requires no wrong finding.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OUT_JSON = ROOT / "fixtures" / "CL203" / "vector_fuzz.json"
SEEDS = tuple(range(1, 9))
KERNELS = 200
TYPES = {"float2": ("xy", "float"), "float4": ("xyzw", "float"), "int2": ("xy", "int"),
         "int4": ("xyzw", "int"), "double2": ("xy", "double"), "S4": ("abcd", "float"),
         "P2": ("ab", "float"), "uint4": ("xyzw", "unsigned")}
HEADER = ("struct __align__(16) S4 { float a, b, c, d; };\n"
          "struct __align__(8) P2 { float a, b; };\n")


def kernel(rng: random.Random, k: int) -> str:
    """One random kernel named ``k<k>``; ``IN_R`` marks where ``__restrict__`` goes."""
    tin = rng.choice(list(TYPES))
    fin, scalar = TYPES[tin]
    kind = rng.choice(["same", "same", "same", "scalar", "other"])
    tout = tin if kind == "same" else None if kind == "scalar" else \
        rng.choice([t for t in TYPES if t != tin])
    idx = rng.choice(["i", "i", "n - 1 - i"])
    count = rng.randint(2, len(fin))
    fields = rng.sample(fin, count) if rng.random() < 0.5 else list(fin[:count])
    used: set[tuple[int, str]] = set()

    def store(src: int, nth: int) -> str:
        if tout is None:
            return f"    out[8 * i + {nth}] = (float)v{src};"
        fout, cast = TYPES[tout]
        while True:
            where = (rng.randrange(2), rng.choice(fout))
            if where not in used:
                used.add(where)
                break
        at = idx if where[0] == 0 else f"{idx} + 1"
        return f"    out[{at}].{where[1]} = ({cast})v{src};"

    body, pending, stored = [], [], 0
    for j, f in enumerate(fields):
        body.append(f"    {scalar} v{j} = in[i].{f};")
        pending.append(j)
        if rng.random() < 0.6:
            body.append(store(pending.pop(rng.randrange(len(pending))), stored))
            stored += 1
    while pending:
        body.append(store(pending.pop(0), stored))
        stored += 1
    out = f"{tout}* out" if tout else "float* out"
    return (f"__global__ void k{k}({out}, const {tin}* IN_R in, int n)\n{{\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n" + "\n".join(body) + "\n}\n")


def ptx_loads(source: str, workdir: Path) -> dict[str, list[int]]:
    """{kernel: widths in bytes of its ld.global instructions} from nvcc's PTX."""
    src, ptx = workdir / "k.cu", workdir / "k.ptx"
    src.write_text(source)
    subprocess.run(["nvcc", "-ptx", "-arch=sm_90", "-o", str(ptx), str(src)], check=True,
                   capture_output=True)
    out: dict[str, list[int]] = {}
    cur = None
    for line in ptx.read_text().splitlines():
        m = re.match(r"\.visible \.entry _Z\d+(k\d+)", line)
        if m:
            cur = m.group(1)
            out[cur] = []
        elif cur and re.search(r"\bld\.global", line):
            op = line.split()[0]
            lanes = 4 if ".v4" in op else 2 if ".v2" in op else 1
            out[cur].append(lanes * (8 if op.split(".")[-1].endswith("64") else 4))
    return out


def run_seed(seed: int, kernels: int, workdir: Path) -> dict:
    from cudalint.config import Settings
    from cudalint.engine import lint_text
    rng = random.Random(seed)
    texts = [kernel(rng, k) for k in range(kernels)]
    orig = HEADER + "\n".join(t.replace("IN_R ", "") for t in texts)
    fixed = HEADER + "\n".join(t.replace("IN_R ", "__restrict__ ") for t in texts)
    before, after = ptx_loads(orig, workdir), ptx_loads(fixed, workdir)
    lines = orig.splitlines()
    found = {}
    for d in lint_text("k.cu", orig, replace(Settings(), select=("CL203",)),
                       "cuda").diagnostics:
        for row in range(d.row - 1, -1, -1):
            m = re.search(r"void (k\d+)\(", lines[row])
            if m:
                found[m.group(1)] = d
                break
    tally = {"split_load_right": 0, "reload_right": 0, "wrong": 0, "silent_right": 0,
             "missed": 0}
    wrong = []
    for name in sorted(before, key=lambda s: int(s[1:])):
        o, f = sorted(before[name]), sorted(after[name])
        d = found.get(name)
        if d is None:
            tally["silent_right" if len(o) == len(f) else "missed"] += 1
            continue
        m = d.metrics
        if m.get("kind") == "split_load":
            ok = (o, f) == (sorted(m["load_bytes"]), sorted(m["load_bytes_fixed"]))
            tally["split_load_right" if ok else "wrong"] += 1
        else:
            ok = len(o) > len(f)
            tally["reload_right" if ok else "wrong"] += 1
        if not ok:
            wrong.append({"kernel": name, "ptx": o, "ptx_restrict": f,
                          "metrics": {k: m.get(k) for k in ("kind", "load_bytes",
                                                             "load_bytes_fixed")}})
    return {"seed": seed, "kernels": kernels, **tally, "wrong_cases": wrong}


def nvcc_version() -> str:
    out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release [\d.]+, V([\d.]+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        seeds = [run_seed(s, KERNELS, Path(tmp)) for s in SEEDS]
    result = {"nvcc": nvcc_version(), "arch": "sm_90", "seeds": seeds}
    if args.check:
        ok = json.loads(OUT_JSON.read_text()) == result
        print("agrees" if ok else "DIFFERS")
        return 0 if ok else 1
    OUT_JSON.write_text(json.dumps(result, indent=1) + "\n")
    total = {k: sum(s[k] for s in seeds) for k in ("split_load_right", "reload_right",
                                                   "wrong", "silent_right", "missed")}
    print(f"wrote {OUT_JSON.relative_to(ROOT)}: {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
