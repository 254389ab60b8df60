"""SASS evidence for CL401-CL403 (tools/gputruth/fp_sass.py wrote the json files).

Without nvcc the recorded facts are checked against the rules' current predictions;
with nvcc (and cuobjdump from the test extra) the facts are measured again first.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools" / "gputruth"))
import fp_sass  # noqa: E402

from cudalint.project.build_cmake import cmake_builds  # noqa: E402
from cudalint.project.build_python import python_builds  # noqa: E402
from cudalint.project.build_toml import toml_builds  # noqa: E402
from cudalint.project.nvcc_flags import interpret  # noqa: E402


def _truth(code: str) -> dict:
    return json.loads((ROOT / "fixtures" / code / "sass_truth.json").read_text())


def _have_tools() -> bool:
    nvcc, cuobjdump, _ = fp_sass.tools()
    return nvcc is not None and cuobjdump is not None


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None,
                                reason="nvcc not found: SASS cannot be regenerated here")


def test_flag_model_agrees_with_nvcc_sass():
    builds = _truth("CL401")["builds"]
    assert len(builds) >= 10
    # the fixtures' command lines are all covered
    assert all(line in [b["flags"] for b in builds] for line in fp_sass.fp_command_lines())
    for b in builds:
        s = interpret(b["flags"])
        got = {"ftz": s.ftz, "approx_div": not s.prec_div, "approx_sqrt": not s.prec_sqrt,
               "fast_intrinsics": s.fast_intrinsics}
        want = {k: b[k] for k in got}
        assert got == want, f"{b['flags']}: model {got}, SASS {want}"
    base = next(b for b in builds if b["flags"] == [])
    assert not any(base[k] for k in ("ftz", "approx_div", "approx_sqrt", "fast_intrinsics"))
    fast = next(b for b in builds if b["flags"] == ["--use_fast_math"])
    assert all(fast[k] for k in ("ftz", "approx_div", "approx_sqrt", "fast_intrinsics"))


def _kernels(code: str):
    for fixture, kernels in _truth(code)["fixtures"].items():
        for name, rec in kernels.items():
            yield fixture, name, rec


def test_cl403_flagged_kernels_run_fp64_and_fixes_remove_it():
    flagged = 0
    for fixture, name, rec in _kernels("CL403"):
        text = (ROOT / "fixtures" / "CL403" / fixture).read_text()
        if rec["flagged"]:
            flagged += 1
            assert rec["before"]["fp64"] > 0, f"{fixture}:{name} flagged but no FP64 in SASS"
            if rec["fixable"]:
                assert rec["after"]["fp64"] == 0, f"{fixture}:{name} still FP64 after fix"
        elif "double" not in text.split(name, 1)[1].split("__global__", 1)[0] and \
                name != "templated":
            assert rec["before"]["fp64"] == 0, f"{fixture}:{name}: FP64 the rule missed"
    assert flagged >= 10


def test_cl402_flagged_kernels_contract_and_fixes_split_them():
    flagged = 0
    for fixture, name, rec in _kernels("CL402"):
        if rec["flagged"]:
            flagged += 1
            assert rec["before"]["fma"] > 0, f"{fixture}:{name} flagged but no FFMA/DFMA"
            assert rec["after"]["fma"] == 0, f"{fixture}:{name} still fused after the fix"
        elif name in ("already_rounded", "integer_det"):
            assert rec["before"]["fma"] == 0
    assert flagged >= 5


def test_recorded_predictions_match_the_rules_now():
    for code in ("CL402", "CL403"):
        for path in sorted((ROOT / "fixtures" / code).iterdir()):
            if path.suffix not in (".cu", ".py"):
                continue
            rows = {d.row for d in fp_sass.lint(path, path.read_text(), code)}
            recorded = _truth(code)["fixtures"][path.name]
            assert any(r["flagged"] for r in recorded.values()) == bool(rows), path.name


@needs_nvcc
def test_sass_truth_is_reproducible():
    if not _have_tools():
        pytest.skip("cuobjdump not found (install the test extra: nvidia-cuda-cuobjdump)")
    fresh = fp_sass.measure_all()
    for code, rec in fresh.items():
        old = _truth(code)
        if old.get("nvcc") != rec["nvcc"]:
            pytest.skip(f"recorded with {old.get('nvcc')}, this nvcc is {rec['nvcc']}")
        assert rec == old, f"{code}: SASS facts differ from fixtures/{code}/sass_truth.json"


def test_examples_builds_are_found():
    ex = ROOT / "examples"
    setup = python_builds((ex / "setup.py").read_text(), "setup.py")
    assert any(b.settings.fast_math for b in setup)
    cmake = cmake_builds((ex / "CMakeLists.txt").read_text(), "CMakeLists.txt")
    assert any(b.settings.fast_math for b in cmake)
    assert toml_builds("[tool.cudalint]\n", "pyproject.toml") == []


@needs_nvcc
def test_examples_fp64_kernels_in_sass():
    if not _have_tools():
        pytest.skip("cuobjdump not found (install the test extra: nvidia-cuda-cuobjdump)")
    path = ROOT / "examples" / "warpy" / "csrc" / "activations.cu"
    text = path.read_text()
    diags = fp_sass.lint(path, text, "CL403")
    assert diags, "the example's promotions are not reported"
    before = fp_sass.sass(text)
    after = fp_sass.sass(fp_sass.apply_fixes(text, diags))
    assert before and all(fp_sass.counts(v)["fp64"] > 0 for v in before.values())
    assert all(fp_sass.counts(v)["fp64"] == 0 for v in after.values())
    # the fast-math flag of the example's builds really changes its SASS
    fast = fp_sass.sass(fp_sass.PROBES, ["--use_fast_math"])
    assert any(".FTZ" in x for x in fast["probe_ftz"])
