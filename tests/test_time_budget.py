"""The per-file time budget (``time-limit-s``) holds on both paths of the runner (issue 25):
in worker processes (``--jobs`` 2 or more, six files or more) and in this process
(``--jobs 1``, or too few files to fork for). A file past it gets a CL000 that names it
and the budget; every other file's findings are still reported, and the run goes on.
"""
from __future__ import annotations

import signal
import time
from dataclasses import replace

import pytest

import cudalint.engine as engine
import cudalint.runner as runner
from cudalint.config import Settings
from cudalint.discovery import Target
from cudalint.runner import run

KERNEL = b"__global__ void %s(float* p) { p[threadIdx.x * 32] = 0; }\n"
_ORIGINAL_LINT = engine.lint_bytes


def _slow_lint(path, data, settings, kind=None):
    if b"hang_here" in data:
        time.sleep(30)
    if b"busy_here" in data:            # pure Python work, no system call to interrupt
        end = time.monotonic() + 30
        while time.monotonic() < end:
            pass
    return _ORIGINAL_LINT(path, data, settings, kind)


def _targets(tmp_path, n: int, special: dict[int, bytes], limit: float) -> list[Target]:
    settings = Settings(select=("ALL",), time_limit_s=limit)
    out = []
    for i in range(n):
        p = tmp_path / f"f{i:02d}.cu"
        p.write_bytes(KERNEL % special.get(i, f"k{i}".encode()))
        out.append(Target(p, p.name, "cuda", settings))
    return out


@pytest.mark.parametrize("jobs, n", [(1, 8), (1, 3), (2, 8)])
@pytest.mark.parametrize("how", [b"hang_here", b"busy_here"])
def test_file_over_its_time_budget(tmp_path, monkeypatch, jobs, n, how):
    monkeypatch.setattr(engine, "lint_bytes", _slow_lint)
    targets = _targets(tmp_path, n, {1: b"k1 /* " + how + b" */"}, 1.0)
    t0 = time.monotonic()
    results = run(targets, use_cache=False, jobs=jobs)
    assert time.monotonic() - t0 < 20
    assert [r.path for r in results] == [t.display for t in targets]
    (d,) = results[1].diagnostics
    assert d.code == "CL000" and d.filename == "f01.cu", d
    assert "took more than 1 s (time-limit-s)" in d.message
    for i, r in enumerate(results):
        if i != 1:
            assert [x.code for x in r.diagnostics] == ["CL201"], (i, r.diagnostics)


def test_serial_budget_leaves_no_alarm(tmp_path, monkeypatch):
    """The serial path puts back the SIGALRM handler it found and leaves no timer."""
    monkeypatch.setattr(engine, "lint_bytes", _slow_lint)

    def mine(signum, frame):
        raise AssertionError("the runner's alarm outlived the run")
    previous = signal.signal(signal.SIGALRM, mine)
    try:
        run(_targets(tmp_path, 2, {0: b"k0 /* hang_here */"}, 0.5), use_cache=False, jobs=1)
        assert signal.getsignal(signal.SIGALRM) is mine
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_budget_default_is_documented():
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert f"time-limit-s = {Settings().time_limit_s:g}" in readme
    assert runner._serial.__doc__ and "time_limit_s" in runner._serial.__doc__
