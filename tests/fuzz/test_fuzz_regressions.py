"""Every input a fuzz run ever broke cudalint with, run through its target again.

``tests/fuzz/regressions/<target>/<file>``; the folder names the target (README.md).
"""
from __future__ import annotations

import contextlib
import signal
from pathlib import Path

import pytest

import fuzzlib as fl

PTXAS_CU = sorted(fl.FIXTURES.glob("CL30*/*.cu"))
SLOW_LIMIT_S = 5


class TooSlow(BaseException):
    """Raised by the alarm: a BaseException, so no guard around a rule swallows it."""


@contextlib.contextmanager
def time_limit(seconds: int):
    def alarm(signum, frame):
        raise TooSlow(f"ran past {seconds} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    except TooSlow as exc:
        raise AssertionError(str(exc)) from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _cases() -> list[Path]:
    return sorted(p for p in fl.REGRESSIONS.rglob("*") if p.is_file()
                  and p.name != "README.md")


def run_regression(path: Path, tmp: Path) -> None:
    data = path.read_bytes()
    target = path.parent.name
    if target == "cuda":
        fl.check_cuda(data)
        fl.check_cuda(data, notices=True)
        fl.check_fix(data, "cuda")
    elif target == "cuda_text":
        fl.check_cuda_text(data.decode("utf-8", "surrogateescape"))
    elif target == "python":
        fl.check_python(data)
        fl.check_python(data, notices=True)
        fl.check_fix(data, "python")
    elif target == "ptxas":
        fl.check_ptxas(data)
        for cu in PTXAS_CU:
            fl.check_ptxas(data, cu=cu.read_bytes(), tmpdir=tmp)
    elif target == "config":
        name = "pyproject.toml" if path.name.endswith("pyproject.toml") else "cudalint.toml"
        fl.check_config(data, name, tmp)
    elif target == "cache":
        fl.check_cache_entry(data, tmp)
    elif target == "build_cmake":
        fl.check_build(data, "CMakeLists.txt", tmp)
    elif target == "build_toml":
        fl.check_build(data, "pyproject.toml", tmp)
    elif target == "build_setup":
        fl.check_build(data, "setup.py", tmp)
    elif target == "cuda_slow":
        # must finish within SLOW_LIMIT_S seconds (a hang found by a long run)
        with time_limit(SLOW_LIMIT_S):
            fl.check_cuda(data)
    elif target == "server":
        import server_target
        server_target.check_server_script(data)
    else:
        raise AssertionError(f"unknown fuzz target folder {target!r} for {path}")


@pytest.mark.parametrize("path", _cases(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_regression(path, tmp_path):
    run_regression(path, tmp_path)


def test_regressions_exist():
    # every target folder that exists holds at least one case, and the folders are known
    assert _cases(), "the regression corpus is empty"


# Crashes found by fuzzing in code that is being written by someone else right now: kept
# here, reported to the owner, and expected to fail until fixed (strict: once the fix
# lands the test fails, and the case moves to regressions/).
OPEN = sorted(p for p in (fl.REGRESSIONS.parent / "open").rglob("*") if p.is_file())


@pytest.mark.parametrize("path", OPEN, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.xfail(strict=True,
                   reason="open fuzz finding reported to the owner (tests/fuzz/README.md)")
def test_open_finding(path, tmp_path):
    run_regression(path, tmp_path)
