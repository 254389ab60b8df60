"""Machine-code truth for CL203 (instructions a missing `__restrict__` adds), CL205 (read-only
data path) and CL204 (local-memory arrays), without a GPU: nvcc builds, cuobjdump/nvdisasm
read the SASS, ptxas -v the stack frames.

CL203: every fixture in fixtures/CL203/*.cu is built with ``nvcc -cubin -arch=sm_90
-lineinfo`` as written and after ``cudalint --unsafe-fixes`` (CL203's fixes). Per finding:
the global loads (reloads, split vector loads) or stores (kept stores) in SASS on the
source lines the analysis names, in both builds, beside the count the message states;
for split vector loads also the widths of those loads (``LDG.E`` 4 bytes, or 8 for a
64-bit field; ``LDG.E.64`` 8; ``LDG.E.128`` 16) and the kernel's STG count in both
builds. Per look-alike kernel: its LDG and STG counts as written and with every
read-only pointer ``const __restrict__`` (CL205's and CL203's unsafe fixes).

CL205: every fixture in fixtures/CL205/*.cu is built three times with
``nvcc -cubin -arch=sm_90 -lineinfo``: as written, after cudalint's own safe fixes
(``--fix``) and after the unsafe ones too (``--unsafe-fixes``), both applied by
cudalint.fixes.fix_text, the code behind the CLI. For every global load (``LDG``) in
``cuobjdump -sass`` the source line comes from ``nvdisasm -g``; the loads of a flagged
parameter are those on the lines of its load sites (cudalint's pointer analysis, callees
included). Recorded per flagged parameter: the opcodes of those loads in each build.
For the look-alike kernels (no finding) the opcodes of all their loads as written.

CL204: every fixture in fixtures/CL204/*.cu is built with ``-Xptxas -v``; recorded per
kernel: the stack frame ptxas reports and whether cudalint reports CL204 in it.

    python tools/gputruth/readonly_sass.py            # rewrite fixtures/CL20{3,4,5}/*.json
    python tools/gputruth/readonly_sass.py --check    # recompute and compare, exit 1 if not
    python tools/gputruth/readonly_sass.py --cl203    # rewrite fixtures/CL203/counts.json only
    python tools/gputruth/readonly_sass.py --cl204    # fixtures/CL204/stack.json only

tests/test_readonly_sass.py imports this module and recomputes everything.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ARCH = "sm_90"
SASS_JSON = ROOT / "fixtures" / "CL205" / "sass.json"
COUNTS_JSON = ROOT / "fixtures" / "CL203" / "counts.json"
STACK_JSON = ROOT / "fixtures" / "CL204" / "stack.json"
_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")
_LINE = re.compile(r'//## File "([^"]+)", line (\d+)')
_SECTION = re.compile(r"^\s*\.section\s+\.text\.(\S+?),")


# ---- tools -----------------------------------------------------------------------------
def cuda_bin_dir() -> Path | None:
    """Folder of cuobjdump/nvdisasm from the nvidia-cuda-* wheels (or a toolkit's)."""
    spec = importlib.util.find_spec("nvidia")
    for base in list(spec.submodule_search_locations or []) if spec else []:
        for cand in sorted(Path(base).glob("*/bin")):
            if (cand / "cuobjdump").exists() and (cand / "nvdisasm").exists():
                return cand
    found = shutil.which("cuobjdump")
    if found and shutil.which("nvdisasm"):
        return Path(found).parent
    return None


def tools_problem() -> str | None:
    if shutil.which("nvcc") is None:
        return "nvcc is not on PATH (install the CUDA toolkit or pip install nvidia-cuda-nvcc)"
    if cuda_bin_dir() is None:
        return ("cuobjdump/nvdisasm not found (pip install nvidia-cuda-cuobjdump "
                "nvidia-cuda-nvdisasm, in the test extra)")
    return None


def nvcc_version() -> str:
    out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release [\d.]+, V([\d.]+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{cuda_bin_dir()}{os.pathsep}{env.get('PATH', '')}"
    return env


def build(source: str, name: str, workdir: Path, ptxas_verbose: bool = False
          ) -> tuple[Path, str]:
    """(cubin, ptxas log) for one source text."""
    src = workdir / f"{name}.cu"
    src.write_text(source)
    cubin = workdir / f"{name}.cubin"
    cmd = ["nvcc", "-cubin", f"-arch={ARCH}", "-lineinfo", "-o", str(cubin), str(src)]
    if ptxas_verbose:
        cmd[1:1] = ["-Xptxas", "-v"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    if proc.returncode != 0 and "Unresolved extern function" in proc.stderr:
        # a look-alike calls a device function defined elsewhere: relocatable code
        proc = subprocess.run(cmd[:1] + ["-rdc=true"] + cmd[1:], capture_output=True,
                              text=True, env=_env())
    if proc.returncode != 0:
        raise RuntimeError(f"nvcc failed on {name}:\n{proc.stderr}")
    return cubin, proc.stdout + proc.stderr


def kernel_name(mangled: str) -> str:
    from cudalint.analysis.ptxas.ptxas_log import base_name, demangle
    return base_name(demangle(mangled))


def global_loads(cubin: Path, prefixes: tuple[str, ...] = ("LDG",)
                 ) -> dict[str, list[tuple[str, int | None]]]:
    """{kernel name: [(opcode, source line), ...]} for every LDG (or other ``prefixes``)
    in the cubin."""
    env = _env()
    sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True,
                          text=True, env=env, check=True).stdout
    lines_of: dict[tuple[str, int], int] = {}
    dis = subprocess.run(["nvdisasm", "-g", "-c", str(cubin)], capture_output=True,
                         text=True, env=env, check=True).stdout
    func, line = None, None
    for row in dis.splitlines():
        m = _SECTION.match(row)
        if m:
            func, line = m.group(1), None
            continue
        m = _LINE.search(row)
        if m:
            line = int(m.group(2)) if m.group(1).endswith(cubin.stem + ".cu") else None
            continue
        m = _INSTR.search(row)
        if m and func is not None and line is not None:
            lines_of[(func, int(m.group(1), 16))] = line
    out: dict[str, list[tuple[str, int | None]]] = {}
    func = None
    for row in sass.splitlines():
        m = _FUNCTION.match(row)
        if m:
            func = m.group(1)
            out.setdefault(kernel_name(func), [])
            continue
        m = _INSTR.search(row)
        if m and func is not None and m.group(2).startswith(prefixes):
            out[kernel_name(func)].append(
                (m.group(2), lines_of.get((func, int(m.group(1), 16)))))
    return out


def is_read_only_path(opcode: str) -> bool:
    return opcode.startswith("LDG") and "CONSTANT" in opcode.split(".")


# ---- cudalint ----------------------------------------------------------------------------
def _settings(code: str):
    from cudalint.config import Settings
    return replace(Settings(), select=(code,))


def fixed_texts(path: Path) -> tuple[str, str]:
    """The fixture after ``cudalint --fix`` and after ``--unsafe-fixes`` (CL205 only)."""
    from cudalint.fixes import fix_text
    text = path.read_text()
    safe = _const_fixes_only(path, text)
    unsafe, _ = fix_text(str(path), text, _settings("CL205"), "cuda", unsafe=True)
    return safe, unsafe


def _const_fixes_only(path: Path, text: str) -> str:
    """The fixture with only CL205's `const` fixes applied (safe, or unsafe only because
    the kernel has external C++ linkage): what `const` alone does to the loads."""
    from cudalint.engine import lint_text
    from cudalint.fixes import apply_edits
    diags = [d for d in lint_text(str(path), text, _settings("CL205"), "cuda").diagnostics
             if d.code == "CL205" and d.fix is not None and
             d.fix.message.startswith("Add `const`")]
    fixed, _ = apply_edits(text, diags, True)
    return fixed


def cl205_flags(path: Path) -> list[dict]:
    """Every CL205 finding: kernel, parameter and the lines of its load sites."""
    from cudalint.analysis.memory.pointer_access import PointerAccess
    from cudalint.context import UnitContext
    from cudalint.engine import lint_text
    from cudalint.sources.base import SourceFile, Unit
    text = path.read_text()
    rows = {d.row for d in lint_text(str(path), text, _settings("CL205"), "cuda").diagnostics
            if d.code == "CL205" and not d.suppressed}
    unit = Unit(SourceFile(str(path), text, "cuda"), text)
    ctx = UnitContext(unit, _settings("CL205"))
    facts = ctx.analysis(PointerAccess)
    out = []
    for kernel in ctx.model.kernels:
        for acc in facts.kernel_params(kernel):
            row = acc.param.node.start_point[0] + 1
            if row in rows:
                out.append({"kernel": kernel.name, "param": acc.param.name, "row": row,
                            "load_lines": sorted({n.start_point[0] + 1 for n in acc.loads})})
    return out


def cl204_rows(path: Path) -> set[int]:
    from cudalint.engine import lint_text
    return {d.row for d in lint_text(str(path), path.read_text(), _settings("CL204"),
                                     "cuda").diagnostics if d.code == "CL204"}


# ---- records -----------------------------------------------------------------------------
def cl203_findings(path: Path) -> list[dict]:
    """Every CL203 finding with the source lines its count is about and that count."""
    from cudalint.context import UnitContext
    from cudalint.rules.memory.cl203_read_only_missing_restrict import reported
    from cudalint.sources.base import SourceFile, Unit
    text = path.read_text()
    unit = Unit(SourceFile(str(path), text, "cuda"), text)
    ctx = UnitContext(unit, _settings("CL203"))
    out = []
    for kernel, acc, kind, info in reported(ctx):
        if kind == "reload":
            lines = sorted({n.start_point[0] + 1 for n in info.loads})
            out.append({"kernel": kernel.name, "param": acc.param.name, "kind": kind,
                        "element": info.key, "lines": lines, "predicted": info.count,
                        "opcode": "LDG"})
        elif kind == "split_load":
            lines = sorted({n.start_point[0] + 1 for n in info.loads})
            out.append({"kernel": kernel.name, "param": acc.param.name, "kind": kind,
                        "element": info.key, "lines": lines, "predicted": info.count,
                        "opcode": "LDG", "predicted_bytes": sorted(info.sizes),
                        "predicted_fixed": info.fixed,
                        "predicted_fixed_bytes": sorted(info.fixed_sizes),
                        "in_loop": info.in_loop})
        elif kind == "kept_store":
            out.append({"kernel": kernel.name, "param": acc.param.name, "kind": kind,
                        "element": info.key, "lines": [info.store.start_point[0] + 1],
                        "predicted": info.trip, "opcode": "STG"})
    return out


def load_bytes(opcode: str, wide_fields: bool) -> int:
    """Bytes one LDG/STG moves: ``.128`` 16, ``.64`` 8, else the field size."""
    parts = opcode.split(".")
    if "128" in parts:
        return 16
    if "64" in parts:
        return 8
    return 8 if wide_fields else 4


def cl203_records(workdir: Path) -> dict:
    """SASS instruction counts for every CL203 finding, before and after its fix."""
    from cudalint.fixes import fix_text
    records, lookalikes = [], []
    for path in sorted((ROOT / "fixtures" / "CL203").glob("*.cu")):
        rel = str(path.relative_to(ROOT))
        text = path.read_text()
        fixed, _ = fix_text(str(path), text, _settings("CL203"), "cuda", unsafe=True)
        builds = {}
        for variant, source in (("original", text), ("fixed", fixed)):
            folder = workdir / f"counts_{variant}"
            folder.mkdir(exist_ok=True)
            cubin, _ = build(source, path.stem, folder)
            builds[variant] = global_loads(cubin, ("LDG", "STG"))
        found = cl203_findings(path)
        for f in found:
            rec = {"file": rel, **{k: f[k] for k in ("kernel", "param", "kind", "element",
                                                      "lines", "predicted")}}
            for variant, ops in builds.items():
                rec[variant] = sum(1 for op, line in ops.get(f["kernel"], [])
                                   if line in f["lines"] and op.startswith(f["opcode"]))
            if f["kind"] == "split_load":
                wide = _wide_fields(text, f)
                for k in ("predicted_bytes", "predicted_fixed", "predicted_fixed_bytes",
                          "in_loop"):
                    rec[k] = f[k]
                for variant, ops in builds.items():
                    rec[f"{variant}_bytes"] = sorted(
                        load_bytes(op, wide) for op, line in ops.get(f["kernel"], [])
                        if line in f["lines"] and op.startswith("LDG"))
                    rec[f"{variant}_STG"] = sum(op.startswith("STG")
                                                for op, _ in ops.get(f["kernel"], []))
            records.append(rec)
        flagged = {f["kernel"] for f in found}
        restricted = None
        for kernel, ops in sorted(builds["original"].items()):
            if kernel not in flagged:
                if restricted is None:
                    restricted = _all_restrict_build(path, text, workdir)
                both = restricted.get(kernel, [])
                lookalikes.append({"file": rel, "kernel": kernel,
                                   "LDG": sum(op.startswith("LDG") for op, _ in ops),
                                   "STG": sum(op.startswith("STG") for op, _ in ops),
                                   "LDG_restrict": sum(op.startswith("LDG") for op, _ in both),
                                   "STG_restrict": sum(op.startswith("STG") for op, _ in both)})
    return {"nvcc": nvcc_version(), "arch": ARCH, "records": records,
            "lookalikes": lookalikes}


def _wide_fields(text: str, finding: dict) -> bool:
    """Are the fields of the finding's element 8 bytes (double2, longlong2, ...)?"""
    from cudalint.analysis.memory.vector_split import layout
    from cudalint.context import UnitContext
    from cudalint.sources.base import SourceFile, Unit
    unit = Unit(SourceFile("k.cu", text, "cuda"), text)
    ctx = UnitContext(unit, _settings("CL203"))
    for kernel in ctx.model.kernels:
        if kernel.name == finding["kernel"]:
            for p in kernel.params:
                if p.name == finding["param"]:
                    lay = layout(ctx, p.base_type)
                    return lay is not None and lay.field_size == 8
    return False


def _all_restrict_build(path: Path, text: str, workdir: Path
                        ) -> dict[str, list[tuple[str, int | None]]]:
    """LDG/STG of the fixture with every read-only pointer `const __restrict__` (the
    unsafe fixes of CL203 and CL205): what `__restrict__` would change in a look-alike."""
    from cudalint.config import Settings
    from cudalint.fixes import fix_text
    settings = replace(Settings(), select=("CL203", "CL205"))
    fixed, _ = fix_text(str(path), text, settings, "cuda", unsafe=True)
    folder = workdir / "counts_restrict"
    folder.mkdir(exist_ok=True)
    cubin, _ = build(fixed, path.stem, folder)
    return global_loads(cubin, ("LDG", "STG"))


def cl205_records(workdir: Path) -> dict:
    records, lookalikes = [], []
    for path in sorted((ROOT / "fixtures" / "CL205").glob("*.cu")):
        rel = str(path.relative_to(ROOT))
        safe, unsafe = fixed_texts(path)
        builds = {}
        for variant, text in (("original", path.read_text()), ("safe_fix", safe),
                              ("unsafe_fix", unsafe)):
            folder = workdir / variant
            folder.mkdir(exist_ok=True)
            cubin, _ = build(text, path.stem, folder)
            builds[variant] = global_loads(cubin)
        flags = cl205_flags(path)
        for f in flags:
            rec = {"file": rel, "kernel": f["kernel"], "param": f["param"],
                   "load_lines": f["load_lines"]}
            for variant, loads in builds.items():
                rec[variant] = [op for op, line in loads.get(f["kernel"], [])
                                if line in f["load_lines"]]
            records.append(rec)
        flagged = {f["kernel"] for f in flags}
        for kernel, loads in sorted(builds["original"].items()):
            if kernel not in flagged:
                lookalikes.append({"file": rel, "kernel": kernel,
                                   "original": [op for op, _ in loads]})
    return {"nvcc": nvcc_version(), "arch": ARCH, "records": records,
            "lookalikes": lookalikes}


def cl204_records(workdir: Path) -> dict:
    from cudalint.analysis.ptxas.ptxas_log import parse_log
    from cudalint.model.kernels import Model
    from cudalint.parse import parse
    records = []
    for path in sorted((ROOT / "fixtures" / "CL204").glob("*.cu")):
        rel = str(path.relative_to(ROOT))
        _, log = build(path.read_text(), path.stem, workdir, ptxas_verbose=True)
        frames = {}
        for rec in parse_log(log):
            if rec.entry:
                frames[kernel_name(rec.mangled)] = rec.stack_frame or 0
        rows = cl204_rows(path)
        model = Model(parse(path.read_bytes()))
        for fn in model.kernels:
            span = range(fn.node.start_point[0] + 1, fn.node.end_point[0] + 2)
            records.append({"file": rel, "kernel": fn.name,
                            "flagged": any(r in span for r in rows),
                            "stack_frame_bytes": frames.get(fn.name)})
    return {"nvcc": nvcc_version(), "arch": ARCH, "records": records}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed json")
    ap.add_argument("--cl204", action="store_true",
                    help="only CL204's stack frames (fixtures/CL204/stack.json)")
    ap.add_argument("--cl203", action="store_true",
                    help="only CL203's instruction counts (fixtures/CL203/counts.json)")
    args = ap.parse_args(argv)
    problem = tools_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    if args.cl204:          # ptxas -v alone: no cuobjdump/nvdisasm, no other json
        with tempfile.TemporaryDirectory() as tmp:
            stack = cl204_records(Path(tmp))
        if args.check:
            ok = json.loads(STACK_JSON.read_text()) == stack
            print("agrees" if ok else "DIFFERS")
            return 0 if ok else 1
        STACK_JSON.write_text(json.dumps(stack, indent=1) + "\n")
        print(f"wrote {STACK_JSON.relative_to(ROOT)} ({len(stack['records'])} kernels)")
        return 0
    if args.cl203:
        with tempfile.TemporaryDirectory() as tmp:
            counts = cl203_records(Path(tmp))
        if args.check:
            ok = json.loads(COUNTS_JSON.read_text()) == counts
            print("agrees" if ok else "DIFFERS")
            return 0 if ok else 1
        COUNTS_JSON.write_text(json.dumps(counts, indent=1) + "\n")
        print(f"wrote {COUNTS_JSON.relative_to(ROOT)} ({len(counts['records'])} findings, "
              f"{len(counts['lookalikes'])} look-alike kernels)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        counts = cl203_records(Path(tmp))
        sass = cl205_records(Path(tmp))
        stack = cl204_records(Path(tmp))
    if args.check:
        ok = json.loads(SASS_JSON.read_text()) == sass and \
            json.loads(STACK_JSON.read_text()) == stack and \
            json.loads(COUNTS_JSON.read_text()) == counts
        print("agrees" if ok else "DIFFERS")
        return 0 if ok else 1
    COUNTS_JSON.write_text(json.dumps(counts, indent=1) + "\n")
    SASS_JSON.write_text(json.dumps(sass, indent=1) + "\n")
    STACK_JSON.write_text(json.dumps(stack, indent=1) + "\n")
    print(f"wrote {COUNTS_JSON.relative_to(ROOT)} ({len(counts['records'])} findings), "
          f"{SASS_JSON.relative_to(ROOT)} ({len(sass['records'])} parameters, "
          f"{len(sass['lookalikes'])} look-alike kernels) and "
          f"{STACK_JSON.relative_to(ROOT)} ({len(stack['records'])} kernels)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
