"""SASS evidence for the floating-point rules (no GPU needed: nvcc -cubin + cuobjdump).

* CL403 / CL402: every fixture unit (a .cu file or a kernel string in a .py file) is
  compiled for sm_90 as written and again with every fix of the rule applied; per kernel
  the FP64 instructions (DMUL/DADD/DFMA/DSETP/F2F.F64/MUFU.*64) and fused multiply-adds
  (FFMA/DFMA) are counted.
* CL401: for every build in the CL401 fixtures, the floating-point options the build
  model found (in their order) are given to nvcc with four probe kernels: `a*b+c`
  (FFMA.FTZ?), `a/b` and `sqrtf(a)` (is the IEEE slow path CALL gone?) and `sinf(a)`
  (MUFU.SIN?).

    python tools/gputruth/fp_sass.py            # rewrites fixtures/CL40x/sass_truth.json
    python tools/gputruth/fp_sass.py --check    # compares with the committed files

cuobjdump comes from the nvidia-cuda-cuobjdump wheel (with nvdisasm) when not on PATH.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

ARCH = "sm_90"
FP64 = re.compile(r"\bD(?:MUL|ADD|FMA|SETP)\b|\bF2F\.F64\.F32\b|\bF2F\.F32\.F64\b|"
                  r"\bMUFU\.\w*64H?\b")
FMA = re.compile(r"\b[FD]FMA\b")

PROBES = r"""
extern "C" __global__ void probe_ftz(float* y, const float* a, const float* b,
                                     const float* c) {
    int i = threadIdx.x; y[i] = a[i] * b[i] + c[i];
}
extern "C" __global__ void probe_div(float* y, const float* a, const float* b) {
    int i = threadIdx.x; y[i] = a[i] / b[i];
}
extern "C" __global__ void probe_sqrt(float* y, const float* a) {
    int i = threadIdx.x; y[i] = sqrtf(a[i]);
}
extern "C" __global__ void probe_sin(float* y, const float* a) {
    int i = threadIdx.x; y[i] = sinf(a[i]);
}
"""


def tools() -> tuple[str | None, str | None, dict]:
    env = dict(os.environ)
    nvcc = shutil.which("nvcc")
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump is None:
        import importlib.util
        spec = importlib.util.find_spec("nvidia")
        for loc in (spec.submodule_search_locations or []) if spec else []:
            for cand in Path(loc).glob("cu*/bin/cuobjdump"):
                cuobjdump = str(cand)
                env["PATH"] = str(cand.parent) + os.pathsep + env.get("PATH", "")
    return nvcc, cuobjdump, env


def sass(code: str, flags: list[str] | tuple[str, ...] = ()) -> dict[str, list[str]]:
    """{function name: SASS instruction lines} of ``code`` built for ARCH."""
    nvcc, cuobjdump, env = tools()
    if nvcc is None or cuobjdump is None:
        raise RuntimeError("nvcc and cuobjdump are needed")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "unit.cu"
        src.write_text(code)
        cubin = Path(tmp) / "unit.cubin"
        subprocess.run([nvcc, "-cubin", f"-arch={ARCH}", *flags, "-o", str(cubin), str(src)],
                       check=True, capture_output=True, env=env, cwd=tmp)
        out = subprocess.run([cuobjdump, "-sass", str(cubin)], check=True,
                             capture_output=True, text=True, env=env).stdout
    funcs: dict[str, list[str]] = {}
    current = None
    for line in out.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            current = m.group(1)
            funcs[current] = []
        elif current and re.search(r"/\*[0-9a-f]{4}\*/", line):
            funcs[current].append(line.split(";")[0].split("*/", 1)[-1].strip())
    return funcs


def counts(lines: list[str]) -> dict[str, int]:
    return {"fp64": sum(1 for x in lines if FP64.search(x)),
            "fma": sum(1 for x in lines if FMA.search(x))}


def kernel_of(sass_name: str, kernels: list[str]) -> str | None:
    for k in kernels:
        if sass_name == k or sass_name.startswith(f"_Z{len(k)}{k}"):
            return k
    return None


# ---------------------------------------------------------------------------------------
# CL402 / CL403


def units_of(path: Path, text: str) -> list[str]:
    if path.suffix == ".cu":
        return [text]
    from cudalint.sources.python.extract import extract_python_units
    return [k.text for k in extract_python_units(text, str(path)).kernels]


def lint(path: Path, text: str, code: str):
    from dataclasses import replace

    from cudalint.config import Settings
    from cudalint.engine import lint_text
    from cudalint.sources.base import file_kind
    settings = replace(Settings(), select=(code,))
    return lint_text(str(path), text, settings, file_kind(path)).diagnostics


def apply_fixes(text: str, diagnostics) -> str:
    edits = sorted((e for d in diagnostics if d.fix is not None for e in d.fix.edits),
                   key=lambda e: e.start, reverse=True)
    for e in edits:
        text = text[:e.start] + e.content + text[e.end:]
    return text


def kernel_ranges(unit_text: str) -> list[tuple[str, int, int, bool]]:
    """(name, start line, end line, is kernel) of every function, lines 1-based in the
    unit."""
    from cudalint.model.kernels import Model
    from cudalint.parse import parse
    model = Model(parse(unit_text.encode()))
    return [(f.name, f.node.start_point[0] + 1, f.node.end_point[0] + 1, f.is_kernel)
            for f in model.functions]


def measure_rule(code: str) -> dict:
    record: dict = {}
    for path in sorted((ROOT / "fixtures" / code).iterdir()):
        if path.suffix not in (".cu", ".py"):
            continue
        text = path.read_text()
        diags = lint(path, text, code)
        fixed = apply_fixes(text, diags)
        before_units, after_units = units_of(path, text), units_of(path, fixed)
        flagged_rows = {d.row for d in diags}
        fixable_rows = {d.row for d in diags if d.fix is not None}
        per_kernel: dict = {}
        offset_line = _unit_line_offsets(path, text)
        for ui, (before, after) in enumerate(zip(before_units, after_units)):
            ranges = kernel_ranges(before)
            base = offset_line[ui] if ui < len(offset_line) else 0
            b, a = sass(before), sass(after)
            for fname, lo, hi, is_kernel in ranges:
                if not is_kernel:
                    continue
                rows = set(range(lo + base, hi + base + 1))
                # device functions the kernel calls count as part of it (inlined)
                body = "\n".join(before.splitlines()[lo - 1:hi])
                for dname, dlo, dhi, dk in ranges:
                    if not dk and re.search(rf"\b{re.escape(dname)}\s*\(", body):
                        rows |= set(range(dlo + base, dhi + base + 1))
                bk = next((v for n, v in b.items() if kernel_of(n, [fname])), None)
                ak = next((v for n, v in a.items() if kernel_of(n, [fname])), None)
                if bk is None:
                    continue
                per_kernel[fname] = {
                    "flagged": bool(rows & flagged_rows),
                    "fixable": bool(rows & flagged_rows) and (rows & flagged_rows) <= fixable_rows,
                    "before": counts(bk), "after": counts(ak or []),
                }
        record[path.name] = per_kernel
    return record


def _unit_line_offsets(path: Path, text: str) -> list[int]:
    """For Python files: the file line (minus one) where each kernel string starts."""
    if path.suffix == ".cu":
        return [0]
    from cudalint.sources.python.extract import extract_python_units
    out = []
    for k in extract_python_units(text, str(path)).kernels:
        first = next((m for m in k.char_map if m >= 0), 0)
        out.append(text.count("\n", 0, first) - (1 if k.text.startswith("\n") else 0))
    return out


# ---------------------------------------------------------------------------------------
# CL401


def fp_command_lines() -> list[list[str]]:
    """The floating-point options of every build in the CL401 fixtures, normalised."""
    from cudalint.project.build_cmake import cmake_builds
    from cudalint.project.build_python import python_builds
    from cudalint.project.build_toml import toml_builds
    from cudalint.project.nvcc_flags import parse_options
    lines: list[list[str]] = [[], ["-ftz=false", "--use_fast_math"],
                              ["--use_fast_math", "-prec-div=true"],
                              ["-ftz=true", "-ftz=false"]]
    for path in sorted((ROOT / "fixtures" / "CL401").iterdir()):
        if not path.is_file():
            continue                    # csrc/, cuda/: the sources the builds compile
        text = path.read_text()
        if path.suffix == ".py":
            builds = python_builds(text, str(path))
        elif path.name == "pyproject.toml":
            builds = toml_builds(text, str(path))
        elif path.name == "CMakeLists.txt" or path.suffix == ".cmake":
            builds = cmake_builds(text, str(path))
        else:
            continue
        for b in builds:
            line = []
            for opt in parse_options(b.flags):
                if opt.name == "use_fast_math":
                    line.append("--use_fast_math")
                elif opt.name in ("ftz", "prec-div", "prec-sqrt", "fmad") and opt.value:
                    line.append(f"-{opt.name}={opt.value}")
            if line not in lines:
                lines.append(line)
    return lines


def measure_flags() -> list[dict]:
    out = []
    for line in fp_command_lines():
        funcs = sass(PROBES, line)
        out.append({
            "flags": line,
            "ftz": any(re.search(r"\bF(?:FMA|MUL|ADD)\.FTZ\b", x) for x in funcs["probe_ftz"]),
            "approx_div": not any("CALL" in x for x in funcs["probe_div"]),
            "approx_sqrt": not any("CALL" in x for x in funcs["probe_sqrt"]),
            "fast_intrinsics": any("MUFU.SIN" in x for x in funcs["probe_sin"]),
        })
    return out


def nvcc_version() -> str:
    nvcc, _, env = tools()
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, env=env).stdout
    m = re.search(r"release [\d.]+, V[\d.]+", out)
    return m.group() if m else out.strip().splitlines()[-1]


def measure_all() -> dict[str, dict]:
    version = nvcc_version()
    return {
        "CL401": {"nvcc": version, "arch": ARCH, "builds": measure_flags()},
        "CL402": {"nvcc": version, "arch": ARCH, "fixtures": measure_rule("CL402")},
        "CL403": {"nvcc": version, "arch": ARCH, "fixtures": measure_rule("CL403")},
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    data = measure_all()
    bad = 0
    for code, rec in data.items():
        path = ROOT / "fixtures" / code / "sass_truth.json"
        if args.check:
            old = json.loads(path.read_text())
            if old != rec:
                print(f"{path}: differs from a fresh measurement")
                bad += 1
        else:
            path.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
            print(f"wrote {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
