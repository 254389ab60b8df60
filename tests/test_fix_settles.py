"""Fixes settle (issue 25, item 3): ``--fix --unsafe-fixes`` run twice over a copy of every
fixture, every example, every fuzz regression input (the gzipped slow ones too) and a fixed
fuzzed corpus changes nothing the second time, and no finding whose fix was applied is
still reported after the first run; a fix whose finding stays is applied once, not once
per pass.

The three lints are three CLI runs over the whole tree (one process each, as a user runs
them: folder configs, notebooks, discovery), not a process per file."""
from __future__ import annotations

import difflib
import gzip
import json
import os
import random
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
# regression targets whose inputs a lint reads as source (the others are logs, caches,
# configs, server scripts), and the suffix a gzipped ``<target>_slow`` input gets
SOURCE_TARGETS = ("cuda", "cuda_slow", "cuda_crash", "cuda_text", "python", "notebook",
                  "build_cmake", "build_setup")
SLOW_SUFFIX = {"cuda_text": ".cu", "fix_cuda": ".cu", "hostile_fix": ".cu",
               "hostile_cuda": ".cu", "python": ".py", "fix_python": ".py",
               "hostile_fix_python": ".py", "hostile_python": ".py", "notebook": ".ipynb"}
FUZZED = 240                    # inputs of the fixed fuzzed corpus (about 1 MB)
FUZZ_SEED = 25


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _cli(folder: Path, *args: str) -> list[dict]:
    """`cudalint check --select ALL --unsafe-fixes --output-format json ARGS .` in a child
    process (a crash in a C library must not take the test run with it)."""
    res = subprocess.run([sys.executable, "-m", "cudalint", "check", "--select", "ALL",
                          "--no-cache", "--unsafe-fixes", "--output-format", "json",
                          "--jobs", "1", *args, "."],
                         cwd=folder, capture_output=True, text=True, timeout=900,
                         preexec_fn=_limit, env={**os.environ, "PYTHONUTF8": "1"})
    assert res.returncode in (0, 1), res.stderr[-2000:]
    return json.loads(res.stdout)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _text(data: bytes) -> str:
    return data.decode("utf-8-sig", errors="replace")


def _excerpt(text: str, d: dict) -> str:
    """The text a diagnostic covers (rows end at `\\n`, as the engine counts them;
    columns are 1-based characters)."""
    lines = text.split("\n")

    def offset(loc: dict) -> int:
        row = min(max(loc["row"], 1), len(lines))
        return sum(len(line) + 1 for line in lines[:row - 1]) + loc["column"] - 1
    return text[offset(d["location"]):offset(d["end_location"])]


def _row_map(before: str, after: str):
    """Row in ``before`` -> the row it became in ``after``: a line diff; a block of
    changed lines of one length maps line to line, another block maps each old line to
    the most similar new one (in order): a fix that rewrites a line and adds lines above
    it keeps the row with the rewritten line."""
    a, b = before.split("\n"), after.split("\n")
    table: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False
                                                       ).get_opcodes():
        if tag == "equal" or i2 - i1 == j2 - j1 or j2 == j1 or \
                (i2 - i1) * (j2 - j1) > 400:
            for i in range(i1, i2):
                table[i + 1] = j1 + 1 + (min(i - i1, j2 - j1 - 1) if j2 > j1 else 0)
            continue
        low = j1
        for i in range(i1, i2):
            best = max(range(low, j2), key=lambda j: difflib.SequenceMatcher(
                None, a[i], b[j], autojunk=False).quick_ratio())
            table[i + 1] = best + 1
            low = best
    return lambda row: table.get(row, row)


def _place(d: dict) -> tuple:
    return (d.get("cell"), d["location"]["row"])


def stuck_findings(texts_before: dict[str, str], texts_after: dict[str, str],
                   before: list[dict], after: list[dict]) -> list[tuple]:
    """Findings a fix claimed to remove that the run after it still reports without a
    fix: of the findings of one code at one place, more are left than had no fix. A
    place is the row, carried through the edits (a fix often rewrites the very text its
    finding covers: `float* in` -> `const float* __restrict__ in`), and, apart from
    that, the code and the text covered (a finding that moved to another row)."""
    maps = {name: _row_map(texts_before[name], texts_after.get(name, texts_before[name]))
            for name in {d["filename"] for d in before if d.get("fix")}
            if name in texts_before}
    stuck = []
    for how in ("row", "text"):
        def key(d: dict, moved: bool) -> tuple:
            name = d["filename"]
            if how == "text" and d.get("cell") is None:   # notebook rows are per cell
                texts = texts_after if moved else texts_before
                return name, d["code"], _excerpt(texts.get(name, ""), d)
            cell, row = _place(d)
            if not moved and cell is None and name in maps:
                row = maps[name](row)
            return name, d["code"], cell, row
        everything: dict[tuple, int] = {}
        fixable: dict[tuple, int] = {}
        for d in before:
            k = key(d, False)
            everything[k] = everything.get(k, 0) + 1
            if d.get("fix"):
                fixable[k] = fixable.get(k, 0) + 1
        left: dict[tuple, int] = {}
        for d in after:
            if d.get("fix"):
                # its fix was not applied (refused: the file would parse worse, or it
                # overlapped another): whether a second run applies it is the other check
                continue
            k = key(d, True)
            left[k] = left.get(k, 0) + 1
        stuck += [k for k, n in left.items() if k in fixable
                  and n > everything[k] - fixable[k]]
    return sorted(set(stuck), key=repr)


def write_fuzzed(folder: Path, n: int = FUZZED, seed: int = FUZZ_SEED) -> None:
    """A fixed fuzzed corpus: the mutations and generators of the fuzz campaign
    (``fuzz/long_run.py``: fix_cuda, fix_python, hostile_fix, hostile_fix_python,
    notebook), drawn from one seed, on fixtures and examples under 16 KB."""
    sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
    import fuzzlib as fl
    import hostile
    rng = random.Random(seed)

    def seeds(suffix: str) -> list[bytes]:
        return [p.read_bytes() for base in (ROOT / "fixtures", ROOT / "examples")
                for p in sorted(base.rglob(f"*{suffix}")) if p.stat().st_size < 16384]
    cuda, python = seeds(".cu"), seeds(".py")
    folder.mkdir(parents=True)
    for i in range(n):
        kind = i % 6
        if kind in (0, 1):
            base = fl.gen_kernel(rng).encode() if kind == 0 else rng.choice(cuda)
            data, suffix = fl.mutate(base, fl.random_ops(rng, 4), cuda,
                                     fl.CUDA_SNIPPETS), ".cu"
        elif kind == 2:
            base = fl.gen_python(rng, fl.gen_kernel(rng)).encode("utf-8", "surrogatepass") \
                if rng.random() < 0.5 else rng.choice(python)
            data, suffix = fl.mutate(base, fl.random_ops(rng, 3), python,
                                     fl.PY_SNIPPETS + fl.CUDA_SNIPPETS[:60]), ".py"
        elif kind == 3:
            data, suffix = (hostile.gen_launch(rng) if rng.random() < 0.6
                            else hostile.gen_macro_chain(rng)).encode(), ".cu"
        elif kind == 4:
            data, suffix = hostile.gen_template_python(rng).encode(), ".py"
        else:
            data, suffix = hostile.gen_notebook(rng), ".ipynb"
        (folder / f"{i:03}{suffix}").write_bytes(data)


def _work_tree(work: Path) -> None:
    shutil.copytree(ROOT / "fixtures", work / "fixtures")
    shutil.copytree(ROOT / "examples", work / "examples")
    for target in sorted(REGRESSIONS.iterdir()):
        if target.name in SOURCE_TARGETS:
            shutil.copytree(target, work / "regressions" / target.name)
        elif target.name.endswith("_slow") and target.name[:-5] in SLOW_SUFFIX \
                and not target.name.startswith(("fix_", "hostile_fix")):
            # (fix_*_slow and hostile_fix*_slow inputs are fixed twice by their own
            # target in test_fuzz_regressions, fuzzlib.check_fix: half this test's time)
            out = work / "regressions" / target.name
            out.mkdir(parents=True)
            for gz in sorted(target.glob("*.gz")):
                name = gz.name[:-3].removesuffix(".input") + SLOW_SUFFIX[target.name[:-5]]
                (out / name).write_bytes(gzip.decompress(gz.read_bytes()))
    write_fuzzed(work / "fuzzed")


def test_fix_twice_over_fixtures_regressions_and_fuzzed_inputs_changes_nothing(tmp_path):
    work = tmp_path / "w"
    _work_tree(work)
    before = _cli(work)
    texts = {d["filename"]: _text((work / d["filename"]).read_bytes()) for d in before}
    assert sum(1 for d in before if d.get("fix")) > 100, \
        "few fixable findings: the test tests little"
    assert {d["filename"].split(os.sep)[0] for d in before if d.get("fix")} >= {
        "fixtures", "examples", "regressions", "fuzzed"}
    after_first = _cli(work, "--fix")
    once = _snapshot(work)
    fixed = {name: _text(once[name]) for name in texts}
    stuck = stuck_findings(texts, fixed, before, after_first)
    assert not stuck, f"fixed findings still reported: {stuck[:10]}"
    _cli(work, "--fix")
    twice = _snapshot(work)
    changed = sorted(k for k in once if twice.get(k) != once[k])
    assert not changed, f"a second --fix changed {changed[:10]}"


def test_a_finding_whose_own_text_the_fix_rewrote_is_seen_left():
    """The check above on a finding that covers the text its fix edits (CL205's
    parameter): the text changes, the row does not, and the finding is still there."""
    before_text = "__global__ void k(float* in, float* out)\n{ out[0] = in[0]; }\n"
    after_text = before_text.replace("float* in", "const float* in")
    d = {"filename": "k.cu", "code": "CL205", "location": {"row": 1, "column": 19},
         "end_location": {"row": 1, "column": 28}, "fix": {"edits": []}}
    left = {**d, "end_location": {"row": 1, "column": 34}, "fix": None}
    got = stuck_findings({"k.cu": before_text}, {"k.cu": after_text}, [d], [left])
    assert got == [("k.cu", "CL205", None, 1)]
    # lines inserted above move it: still the same finding
    moved = "// note\n// more\n" + after_text
    left_moved = {**left, "location": {"row": 3, "column": 19},
                  "end_location": {"row": 3, "column": 34}}
    assert stuck_findings({"k.cu": before_text}, {"k.cu": moved}, [d], [left_moved])
    # gone, or only a finding that had no fix left at that place: nothing stuck
    assert stuck_findings({"k.cu": before_text}, {"k.cu": after_text}, [d], []) == []
    plain = {**d, "fix": None}
    assert stuck_findings({"k.cu": before_text}, {"k.cu": after_text}, [d, plain],
                          [left]) == []


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


def test_copies_a_pass_did_not_report_are_fixed_in_a_later_pass(monkeypatch):
    """Fuzz seed 42: copies of one kernel share a finding key (code, text, message); a
    pass reports only the copies its budget reached. A later pass fixes the others (each
    copy once), so that a second run has nothing left: before, no more fixes were applied
    under a key than one pass had reported."""
    from cudalint import fixes
    from cudalint.engine import FileResult
    calls = []

    def fake_lint(path, text, settings, kind):
        calls.append(text)
        found = []
        at = text.find("s[i]")
        while at >= 0:
            if not text[:at].endswith("__syncwarp(); "):
                found.append(Diagnostic(
                    code="CL101", name="x", message="2 steps (lines 1, 1)",
                    severity="warning", filename=path, row=1, column=1, end_row=1,
                    end_column=1, start_offset=at, end_offset=at + 4,
                    fix=Fix("insert", (Edit(at, at, "__syncwarp(); "),), "unsafe")))
            at = text.find("s[i]", at + 1)
        # the budget reaches the first two copies only on the first pass
        return FileResult(path, found[:2] if len(calls) == 1 else found)

    monkeypatch.setattr(fixes, "lint_text", fake_lint)
    text = "void f() { x = s[i]; y = s[i]; z = s[i]; w = s[i]; }\n"
    settings = replace(Settings(), select=("CL101",))
    fixed, n = fixes.fix_text("t.cu", text, settings, "cuda", True)
    assert n == 4 and fixed.count("__syncwarp(); s[i]") == 4
    again, n2 = fixes.fix_text("t.cu", fixed, settings, "cuda", True)
    assert n2 == 0 and again == fixed


def test_offsets_move_through_edits():
    from cudalint.fixes import moved
    edits = [Edit(2, 2, "abc"), Edit(5, 8, "x")]       # insert 3 at 2; 3 -> 1 at 5
    assert moved(1, edits, False) == 1
    assert moved(2, edits, False) == 5                  # inserted before a start
    assert moved(2, edits, True) == 2                   # after an end
    assert moved(4, edits, False) == 7
    assert moved(6, edits, False) == 8                  # inside the replaced span
    assert moved(8, edits, True) == 9
    assert moved(10, edits, False) == 11


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
