"""Every input a fuzz run ever broke cudalint with, run through its target again.

``tests/fuzz/regressions/<target>/<file>``; the folder names the target (README.md).
"""
from __future__ import annotations

from pathlib import Path

import pytest

import fuzzlib as fl

PTXAS_CU = sorted(fl.FIXTURES.glob("CL30*/*.cu"))


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
