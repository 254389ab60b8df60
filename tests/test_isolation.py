"""An abort costs one file (or one unit's FP facts), never the run (issue 25, item 2).

libclang runs in a helper process (cudalint/analysis/fp/clang_process.py) and files in
worker processes (cudalint/runner.py). These tests abort libclang, kill a worker in the
middle of a run and let one file overrun its time budget, and check that the file gets a
CL000 that says so while every other file's findings are still reported.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest

import cudalint.analysis.fp.clang_process as clang_process
from cudalint.analysis.fp.clang_session import libclang_available
import cudalint.analysis.fp.fptypes as fptypes
import cudalint.engine as engine
from cudalint.config import ConfigError, Settings, parse_table
from cudalint.discovery import Target
from cudalint.runner import run

# CL403 (the libclang rule these tests watch) reports on every target only when asked
ALL = Settings(select=("ALL",), fp64_promotion="always")
KERNEL = b"__global__ void %s(float* y, const float* x) { y[threadIdx.x] = x[threadIdx.x] * 0.1; }\n"

pytestmark = pytest.mark.skipif(not libclang_available(), reason="needs libclang")

_ORIGINAL_WORK = fptypes._clang_work
_ORIGINAL_LINT = engine.lint_bytes


def _aborting_work(src, plan, want, stack):
    if b"abort_in_libclang" in src:
        os.abort()
    return _ORIGINAL_WORK(src, plan, want, stack)


def _dying_lint(path, data, settings, kind=None):
    if b"die_here kill" in data:
        os.kill(os.getpid(), signal.SIGKILL)
    if b"die_here abort" in data:
        os.abort()                  # a signal handler (libclang installs some) cannot stop it
    if b"hang_here" in data:
        time.sleep(60)
    return _ORIGINAL_LINT(path, data, settings, kind)


def _files(tmp_path: Path, n: int, special: dict[int, bytes]) -> list[Target]:
    out = []
    for i in range(n):
        p = tmp_path / f"f{i:02d}.cu"
        p.write_bytes(KERNEL % special.get(i, f"k{i}".encode()))
        out.append(Target(p, p.name, "cuda", ALL))
    return out


def _codes(result) -> list[str]:
    return [d.code for d in result.diagnostics]


@pytest.fixture
def fresh_helper():
    clang_process.stop()            # the next helper is forked after the patch
    fptypes._CACHE.clear()
    yield
    clang_process.stop()
    fptypes._CACHE.clear()


@pytest.mark.parametrize("jobs", [1, 2])
def test_abort_inside_libclang_costs_one_unit(tmp_path, monkeypatch, fresh_helper, jobs):
    monkeypatch.setattr(fptypes, "_clang_work", _aborting_work)
    targets = _files(tmp_path, 8, {3: b"abort_in_libclang"})
    results = run(targets, use_cache=False, jobs=jobs)
    for i, r in enumerate(results):
        if i == 3:
            notes = [d for d in r.diagnostics if d.code == "CL000"]
            assert len(notes) == 1, r.diagnostics
            assert "libclang ended its process (SIGABRT" in notes[0].message
            assert "CL403" not in _codes(r)
        else:
            assert "CL403" in _codes(r) and "CL000" not in _codes(r), (i, r.diagnostics)


def test_helper_restarts_after_an_abort(monkeypatch, fresh_helper):
    monkeypatch.setattr(fptypes, "_clang_work", _aborting_work)
    first = engine.lint_bytes("a.cu", KERNEL % b"abort_in_libclang", ALL, "cuda")
    assert "CL000" in _codes(first)
    pid = clang_process.helper_pid()
    assert pid is None                          # reaped
    second = engine.lint_bytes("b.cu", KERNEL % b"fine", ALL, "cuda")
    assert "CL403" in _codes(second) and "CL000" not in _codes(second)
    assert clang_process.helper_pid() is not None


def test_libclang_time_limit(monkeypatch, fresh_helper):
    monkeypatch.setattr(fptypes, "_clang_work", _slow_work)
    settings = replace(ALL, time_limit_s=0.5)
    t0 = time.monotonic()
    r = engine.lint_bytes("a.cu", KERNEL % b"slow_in_libclang", settings, "cuda")
    assert time.monotonic() - t0 < 10
    assert any("libclang took more than 0.5 s" in d.message for d in r.diagnostics)


def test_libclang_memory_limit(monkeypatch, fresh_helper):
    monkeypatch.setattr(fptypes, "_clang_work", _greedy_work)
    r = engine.lint_bytes("a.cu", KERNEL % b"greedy_in_libclang",
                          replace(ALL, memory_limit_mb=256), "cuda")
    assert any("libclang needed more than memory-limit-mb (256 MB)" in d.message
               for d in r.diagnostics), r.diagnostics


def _greedy_work(src, plan, want, stack):
    if b"greedy_in_libclang" in src:
        bytearray(4 << 30)
    return _ORIGINAL_WORK(src, plan, want, stack)


def _slow_work(src, plan, want, stack):
    if b"slow_in_libclang" in src:
        time.sleep(60)
    return _ORIGINAL_WORK(src, plan, want, stack)


def test_doubling_macro_chain_never_reaches_libclang():
    """The issue's trigger: 24 levels, `pow` in a device function: LLVM aborted after
    several GB. Now the unit is screened out in well under a second."""
    src = "#define M0 1\n" + "".join(f"#define M{i} (M{i - 1} + M{i - 1})\n"
                                     for i in range(1, 25))
    src += ("__shared__ float s[M24];\n__device__ float f(float x) { return pow(x, 2.0); }\n"
            "__global__ void k(float* y) { y[threadIdx.x] = f(y[0]) * 0.1; }\n")
    t0 = time.monotonic()
    r = engine.lint_bytes("chain.cu", src.encode(), ALL, "cuda")
    assert time.monotonic() - t0 < 5
    notes = [d.message for d in r.diagnostics if d.code == "CL000"]
    assert any("macro `M15` expands to more than 65,536 tokens" in m for m in notes), notes


@pytest.mark.parametrize("how", [b"die_here kill", b"die_here abort"])
def test_worker_killed_in_the_middle_of_a_run(tmp_path, monkeypatch, how):
    """A worker dies on file 5 of 12: that file gets a CL000 naming the signal, and every
    other file (those the dead worker had still to do included) has its findings."""
    monkeypatch.setattr(engine, "lint_bytes", _dying_lint)
    targets = _files(tmp_path, 12, {5: b"k5 /* " + how + b" */"})
    results = run(targets, use_cache=False, jobs=2)
    assert [r.path for r in results] == [t.display for t in targets]
    for i, r in enumerate(results):
        if i == 5:
            assert _codes(r) == ["CL000"], r.diagnostics
            sig = "SIGKILL" if b"kill" in how else "SIGABRT"
            assert f"its worker process was ended by {sig}" in r.diagnostics[0].message
            assert r.diagnostics[0].filename == "f05.cu"
        else:
            assert "CL403" in _codes(r) and "CL000" not in _codes(r), (i, r.diagnostics)


def test_worker_time_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "lint_bytes", _dying_lint)
    targets = [replace(t, settings=replace(ALL, time_limit_s=1.0))
               for t in _files(tmp_path, 8, {2: b"k2 /* hang_here */"})]
    t0 = time.monotonic()
    results = run(targets, use_cache=False, jobs=2)
    assert time.monotonic() - t0 < 30
    assert "took more than 1 s (time-limit-s)" in results[2].diagnostics[0].message
    assert all("CL403" in _codes(r) for i, r in enumerate(results) if i != 2)


def _greedy_lint(path, data, settings, kind=None):
    if b"eat_memory" in data:
        bytearray(4 << 30)                  # past memory-limit-mb: MemoryError
    return _ORIGINAL_LINT(path, data, settings, kind)


def test_worker_memory_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "lint_bytes", _greedy_lint)
    targets = [replace(t, settings=replace(ALL, memory_limit_mb=256))
               for t in _files(tmp_path, 8, {4: b"k4 /* eat_memory */"})]
    results = run(targets, use_cache=False, jobs=2)
    assert _codes(results[4]) == ["CL000"]
    assert "MemoryError" in results[4].diagnostics[0].message
    assert all("CL403" in _codes(r) for i, r in enumerate(results) if i != 4)


def test_budgets_are_settings():
    s = parse_table({"memory-limit-mb": 512, "time-limit-s": 5}, "t")
    assert (s.memory_limit_mb, s.time_limit_s) == (512, 5.0)
    assert Settings().memory_limit_mb == 2048 and Settings().time_limit_s == 60.0
    # a budget is no part of what a cached result depends on
    assert s.fingerprint() == Settings().fingerprint()
    for bad in ({"memory-limit-mb": 10}, {"memory-limit-mb": "1G"}, {"time-limit-s": 0}):
        with pytest.raises(ConfigError):
            parse_table(bad, "t")
