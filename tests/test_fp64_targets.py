"""CL403 speaks only for targets with reduced FP64 throughput (issue 20), and the target
resolution it shares with CL203 (cudalint/project/targets.py)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cudalint.config import ConfigError, Settings, parse_table
from cudalint.engine import lint_bytes
from cudalint.project.targets import BUILD_WHERE, DEFAULT_WHERE, SETTING_WHERE, \
    archs_in_text, target_archs
from fixture_support import FIXTURES, expectations, lint_fixture

DATACENTER = FIXTURES / "CL403" / "datacenter" / "promotions.cu"
KERNEL = b"""__global__ void k(const float* x, float* y) {
    int i = threadIdx.x;
    y[i] = x[i] * 0.1;
}
"""


def _rows(result, code="CL403"):
    return {d.row for d in result.diagnostics if d.code == code and not d.suppressed}


def _lint(path: Path, data: bytes, **settings):
    s = replace(Settings(), select=("CL403",), **settings)
    return lint_bytes(str(path), data, s, "python" if path.suffix == ".py" else "cuda")


def test_silent_for_a_datacenter_build():
    """sm_80/sm_90 in CMAKE_CUDA_ARCHITECTURES: the `ok` lines stay silent ..."""
    expect, forbid = expectations(DATACENTER)
    assert not expect and len(forbid) == 2
    assert not _rows(lint_fixture(DATACENTER, {"CL403"}))
    # ... though they are promotions: the arch setting (sm_86) or "always" reports them
    on_86 = _lint(DATACENTER, DATACENTER.read_bytes(), arch="sm_86")
    assert _rows(on_86) == set(forbid)
    assert all("sm_86 runs FP64 at 1/64 of the FP32 rate (target from the `arch` setting)"
               in d.message for d in on_86.diagnostics)
    always = _lint(DATACENTER, DATACENTER.read_bytes(), fp64_promotion="always")
    assert _rows(always) == set(forbid)
    assert not any("runs FP64" in d.message for d in always.diagnostics)


def test_the_arch_setting_decides_without_build_files(tmp_path):
    src = tmp_path / "k.cu"
    assert not _rows(_lint(src, KERNEL))                     # default: sm_80 and newer
    assert not _rows(_lint(src, KERNEL, arch="sm_80"))
    assert not _rows(_lint(src, KERNEL, arch="sm_100"))
    r = _lint(src, KERNEL, arch="sm_86")
    assert _rows(r) == {3}
    d = r.diagnostics[0]
    assert d.metrics["arch"] == "sm_86" and d.metrics["fp64_rate"] == "1/64"
    r = _lint(src, KERNEL, arch="sm_75")
    assert "sm_75 runs FP64 at 1/32 of the FP32 rate" in r.diagnostics[0].message


def test_build_files_name_the_slowest_target(tmp_path):
    (tmp_path / ".git").mkdir()
    src = tmp_path / "k.cu"
    src.write_bytes(KERNEL)
    (tmp_path / "CMakeLists.txt").write_text(
        "project(p LANGUAGES CUDA)\nset(CMAKE_CUDA_ARCHITECTURES 80-real 89 90)\n"
        "add_library(p k.cu)\n")
    r = _lint(src, KERNEL)
    assert _rows(r) == {3}
    assert "sm_89 runs FP64 at 1/64 of the FP32 rate (target from the build files)" \
        in r.diagnostics[0].message


def test_torch_arch_list_in_setup_py(tmp_path):
    (tmp_path / ".git").mkdir()
    src = tmp_path / "k.cu"
    src.write_bytes(KERNEL)
    setup = tmp_path / "setup.py"
    setup.write_text('import os\nos.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0+PTX"\n')
    assert not _rows(_lint(src, KERNEL))
    setup.write_text('import os\nos.environ["TORCH_CUDA_ARCH_LIST"] = "7.5;8.0;8.6+PTX"\n')
    r = _lint(src, KERNEL)
    assert "sm_86 runs FP64 at 1/64" in r.diagnostics[0].message


def test_python_strings_take_the_call_options(tmp_path):
    def py(arch: str) -> bytes:
        return (b'import cupy as cp\nk = cp.RawKernel(r"""\n' + KERNEL +
                b'""", "k", options=("-arch=' + arch.encode() + b'",))\n')
    path = tmp_path / "m.py"
    assert _rows(_lint(path, py("sm_61"))) == {5}
    assert not _rows(_lint(path, py("sm_90")))


def test_list_reader():
    text = ('set(CMAKE_CUDA_ARCHITECTURES 75-real 86-virtual ${EXTRA} native)\n'
            'set_target_properties(t PROPERTIES CUDA_ARCHITECTURES "89;90a")\n'
            'if cond:\n    os.environ["TORCH_CUDA_ARCH_LIST"] = "6.1;7.0 12.0+PTX"\n'
            'os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "8.7")\n'
            'cmake_args = ["-DCMAKE_CUDA_ARCHITECTURES=72;100"]\n')
    assert archs_in_text(text) == (61, 70, 72, 75, 86, 87, 89, 90, 100, 120)


def test_target_resolution_shared_with_cl203(tmp_path):
    class _File:
        path = str(tmp_path / "k.cu")

    class _Unit:
        file = _File()
        embedded = None

    (tmp_path / ".git").mkdir()
    assert target_archs(_Unit(), Settings()).where == DEFAULT_WHERE
    assert target_archs(_Unit(), Settings(arch="sm_61")).numbers == (61,)
    assert target_archs(_Unit(), Settings(arch="sm_61")).where == SETTING_WHERE
    (tmp_path / "CMakeLists.txt").write_text(
        "project(p LANGUAGES CUDA)\nset(CMAKE_CUDA_ARCHITECTURES 61 86)\n"
        "add_library(p k.cu)\n")
    t = target_archs(_Unit(), Settings())
    assert t.numbers == (61, 86) and t.where == BUILD_WHERE
    # CL203 reads -arch/-gencode only (its pre-Volta finding as validated)
    assert target_archs(_Unit(), Settings(), lists=False).where == DEFAULT_WHERE


def test_setting_values():
    assert parse_table({"fp64-promotion": "always"}, "t").fp64_promotion == "always"
    assert Settings().fp64_promotion == "reduced-fp64"
    with pytest.raises(ConfigError, match="fp64-promotion"):
        parse_table({"fp64-promotion": "yes"}, "t")



def test_an_arch_written_in_the_config_wins_over_the_build_files(tmp_path):
    """`arch = "sm_90"` said explicitly (the default's value) overrides the build files'
    sm_86; left unsaid, the build files decide."""
    from cudalint.config import ConfigResolver

    class _File:
        path = str(tmp_path / "k.cu")

    class _Unit:
        file = _File()
        embedded = None

    (tmp_path / ".git").mkdir()
    (tmp_path / "CMakeLists.txt").write_text(
        "project(p LANGUAGES CUDA)\nset(CMAKE_CUDA_ARCHITECTURES 86)\nadd_library(p k.cu)\n")
    (tmp_path / "cudalint.toml").write_text('arch = "sm_90"\n')
    explicit = ConfigResolver().for_path(tmp_path / "k.cu")
    assert explicit.arch_set
    assert target_archs(_Unit(), explicit).numbers == (90,)
    assert target_archs(_Unit(), explicit).where == SETTING_WHERE
    (tmp_path / "cudalint.toml").write_text("block-size = [128]\n")
    implicit = ConfigResolver().for_path(tmp_path / "k.cu")
    assert not implicit.arch_set
    assert target_archs(_Unit(), implicit).numbers == (86,)
