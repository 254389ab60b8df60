"""Fixes settle (issue 25): ``--fix --unsafe-fixes`` run twice over a copy of every fixture
and every fuzz regression input changes nothing the second time, and no finding whose fix
was applied is still reported after the first run; a fix whose finding stays is applied
once, not once per pass."""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.diagnostics import Diagnostic, Edit, Fix

ROOT = Path(__file__).resolve().parent.parent
REGRESSIONS = ROOT / "tests" / "fuzz" / "regressions"
MEMORY_LIMIT = 3 << 30          # a runaway stops instead of taking the machine


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _cli(folder: Path, *args: str) -> list[dict]:
    """`cudalint check --select ALL --unsafe-fixes --output-format json ARGS .` in a child
    process (a crash in a C library must not take the test run with it)."""
    res = subprocess.run([sys.executable, "-m", "cudalint", "check", "--select", "ALL",
                          "--no-cache", "--unsafe-fixes", "--output-format", "json",
                          "--jobs", "1", *args, "."],
                         cwd=folder, capture_output=True, text=True, timeout=600,
                         preexec_fn=_limit, env={**os.environ, "PYTHONUTF8": "1"})
    assert res.returncode in (0, 1), res.stderr[-2000:]
    return json.loads(res.stdout)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _excerpt(text: str, d: dict) -> str:
    """The text a diagnostic covers (rows and columns are 1-based characters)."""
    lines = text.splitlines(keepends=True)

    def offset(loc: dict) -> int:
        row = min(max(loc["row"], 1), len(lines) or 1)
        return sum(len(l) for l in lines[:row - 1]) + loc["column"] - 1
    return text[offset(d["location"]):offset(d["end_location"])]


def _keys(folder: Path, found: list[dict], fixed_only: bool) -> dict[tuple, int]:
    out: dict[tuple, int] = {}
    texts: dict[str, str] = {}
    for d in found:
        if fixed_only and not d.get("fix"):
            continue
        name = d["filename"]
        if name not in texts:
            texts[name] = (folder / name).read_text(encoding="utf-8-sig", errors="replace")
        key = (name, d["code"], _excerpt(texts[name], d))
        out[key] = out.get(key, 0) + 1
    return out


def test_fix_twice_over_fixtures_and_regressions_changes_nothing(tmp_path):
    work = tmp_path / "w"
    shutil.copytree(ROOT / "fixtures", work / "fixtures")
    for target in sorted(REGRESSIONS.iterdir()):
        # every input a lint reads as source (other targets are logs, caches, scripts)
        if target.name in ("cuda", "cuda_slow", "cuda_crash", "cuda_text", "python",
                           "build_cmake", "build_setup"):
            shutil.copytree(target, work / "regressions" / target.name)
    before = _cli(work)
    fixable = _keys(work, before, fixed_only=True)
    assert fixable, "no fixable finding in the fixtures: the test tests nothing"
    everything = _keys(work, before, fixed_only=False)
    after_first = _cli(work, "--fix")
    once = _snapshot(work)
    left = _keys(work, after_first, fixed_only=False)
    # a finding whose fix was applied is gone: of the findings that share a place, code
    # and text, at most those without a fix are left
    stuck = {k: n for k, n in left.items()
             if k in fixable and n > everything[k] - fixable[k]}
    assert not stuck, f"fixed findings still reported: {sorted(stuck)[:10]}"
    _cli(work, "--fix")
    twice = _snapshot(work)
    changed = sorted(k for k in once if twice.get(k) != once[k])
    assert not changed, f"a second --fix changed {changed[:10]}"


def test_a_fix_that_leaves_its_finding_is_applied_once(monkeypatch):
    """A rule's fix that does not remove its finding (CL101 before issue 25) is applied
    once per finding, not on each of the ten passes."""
    from cudalint import fixes
    from cudalint.engine import FileResult

    def fake_lint(path, text, settings, kind):
        start = text.index("s[i][i]")
        end = start + len("s[i][i]")
        at = text.index("s[tid]")
        d = Diagnostic(code="CL101", name="x", message="m", severity="warning",
                       filename=path, row=1, column=1, end_row=1, end_column=1,
                       start_offset=start, end_offset=end,
                       fix=Fix("insert", (Edit(at, at, "__syncwarp(); "),), "unsafe"))
        return FileResult(path, [d])

    monkeypatch.setattr(fixes, "lint_text", fake_lint)
    text = "void f() { s[tid] = s[i][i]; }\n"
    fixed, n = fixes.fix_text("t.cu", text, replace(Settings(), select=("CL101",)), "cuda",
                              True)
    assert n == 1 and fixed.count("__syncwarp();") == 1


def test_cl101_no_fix_under_a_condition_that_splits_a_warp():
    """Issue 25, item 4: the step under `if (threadIdx.x > i)` (lanes 0..i skip it) gets
    no fix; the finding stays. Under `if (tid < 32)` (whole warps) the fix is offered."""
    from cudalint.engine import lint_bytes
    src = (REGRESSIONS / "cuda" / "cl101_fix_under_divergent_if.cu").read_bytes()
    res = lint_bytes("t.cu", src, replace(Settings(), select=("CL101", "CL102")), "cuda")
    found = [d for d in res.diagnostics if d.code in ("CL101", "CL102")]
    assert found and all(d.fix is None for d in found)
    whole = (b"__global__ void k(float* o) { __shared__ float s[64];\n"
             b"    unsigned tid = threadIdx.x;\n    s[tid] = o[tid];\n    __syncthreads();\n"
             b"    if (tid < 32) {\n        s[tid] += s[tid + 16];\n"
             b"        s[tid] += s[tid + 8];\n    }\n    o[tid] = s[tid];\n}\n"
             b"void h(float* o) { k<<<1, 64>>>(o); }\n")
    (d,) = [d for d in lint_bytes("t.cu", whole, replace(Settings(), select=("CL101",)),
                                  "cuda").diagnostics]
    assert d.fix is not None
    split = whole.replace(b"if (tid < 32)", b"if (tid < 16)")
    (d,) = [d for d in lint_bytes("t.cu", split, replace(Settings(), select=("CL101",)),
                                  "cuda").diagnostics]
    assert d.fix is None
