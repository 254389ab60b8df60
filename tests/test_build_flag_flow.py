"""CL401 through Python data flow and CMake conditions (issues 15 and 20): flags returned
by helper functions, records read back by attribute, conditions decided by environment
and option() defaults; exact positions and the notes the messages carry."""
from __future__ import annotations

from fixture_support import FIXTURES, lint_fixture

from cudalint.project.build_cmake import cmake_builds
from cudalint.project.build_python import python_builds


def _found(name):
    result = lint_fixture(FIXTURES / "CL401" / name, {"CL401"})
    return [(d.row, d.column, d.end_column, d.message) for d in result.diagnostics
            if d.code == "CL401" and not d.suppressed]


def test_helper_functions_and_env_defaults_positions():
    got = _found("setup_helpers.py")
    assert [g[:3] for g in got] == [(15, 21, 36), (28, 16, 30), (33, 23, 32), (42, 46, 61),
                                   (50, 95, 110)]
    notes = {g[0]: g[3] for g in got}
    assert "`-use_fast_math` on unless FAST_MATH=0" in notes[28]
    assert "`-ftz=true` on unless NO_FTZ is set" in notes[33]
    assert "on unless" not in notes[15] and "extension `ops._a`" in notes[15]


def test_namespace_record_through_formatting_helper():
    got = _found("load_namespace.py")
    assert [g[:3] for g in got] == [(27, 28, 42)]
    assert "`load` module `fused_cuda` (`-use_fast_math` on unless FAST_MATH=0)" in got[0][3]


def test_cmake_if_blocks_follow_option_defaults():
    got = _found("conditional.cmake")
    assert [g[:3] for g in got] == [(7, 36, 51), (20, 36, 45)]
    assert "on unless USE_FAST_MATH=OFF" in got[0][3]


def test_default_off_condition_drops_the_flag():
    text = ('import os\nfrom torch.utils.cpp_extension import load\n'
            'FAST = os.getenv("FAST_MATH", "0") == "1"\n'
            'f = ["-O3"] + (["--use_fast_math"] if FAST else [])\n'
            'load("m", ["a.cu"], extra_cuda_cflags=f)\n')
    (build,) = python_builds(text, "b.py")
    assert [f.text for f in build.flags] == ["-O3"] and not build.opaque


def test_undecided_condition_keeps_both_branches_without_note():
    text = ('import sys\nfrom torch.utils.cpp_extension import load\n'
            'f = ["--use_fast_math"] if sys.platform == "linux" else []\n'
            'load("m", ["a.cu"], extra_cuda_cflags=f)\n')
    (build,) = python_builds(text, "b.py")
    assert [f.text for f in build.flags] == ["--use_fast_math"] and build.opaque
    assert "unless" not in build.label


def test_recursive_helper_terminates():
    text = ('from torch.utils.cpp_extension import load\n'
            'def flags(n):\n    return flags(n - 1) + ["-ftz=true"]\n'
            'load("m", ["a.cu"], extra_cuda_cflags=flags(3))\n')
    (build,) = python_builds(text, "b.py")
    assert [f.text for f in build.flags] == ["-ftz=true"] and build.opaque


def test_cmake_unknown_condition_keeps_every_branch():
    text = ('if(MSVC)\n  string(APPEND CMAKE_CUDA_FLAGS " -ftz=true")\nelse()\n'
            '  string(APPEND CMAKE_CUDA_FLAGS " --use_fast_math")\nendif()\n')
    (build,) = [b for b in cmake_builds(text) if "CMAKE_CUDA_FLAGS" in b.label]
    assert [f.text for f in build.flags] == ["-ftz=true", "--use_fast_math"]
    assert "unless" not in build.label


def test_cmake_set_switch_off_skips_block():
    text = ('set(FAST OFF)\nif(FAST)\n  string(APPEND CMAKE_CUDA_FLAGS " --use_fast_math")\n'
            'endif()\nif(NOT FAST)\n  string(APPEND CMAKE_CUDA_FLAGS " -lineinfo")\nendif()\n')
    (build,) = [b for b in cmake_builds(text) if "CMAKE_CUDA_FLAGS" in b.label]
    assert [f.text for f in build.flags] == ["-lineinfo"]


def test_setup_py_switches_are_off_by_default():
    got = _found("setup_argv.py")
    assert [g[:3] for g in got] == [(28, 24, 33)]
    assert "`-ftz=true` on unless setup.py gets --no_ftz" in got[0][3]


def test_makefile_recipes_and_variables_positions():
    got = _found("Makefile")
    # line 27, `-prec-sqrt=false` alone: 1 ulp, never reported (CL401 since e9e2734)
    assert [g[:3] for g in got] == [(7, 26, 41), (10, 17, 26)]
    assert "nvcc commands of this Makefile" in got[0][3]
    assert [g[:3] for g in _found("cuda.mk")] == [(3, 14, 28)]


def test_makefile_reader_semantics():
    from cudalint.project.build_make import make_builds
    text = ("A ?= -O2\nA ?= --use_fast_math\n"          # ?= keeps the first value
            "B != echo -ftz=true\n"                      # shell: unknown
            "define RECIPE\n\tnvcc -prec-div=false\nendef\n"
            "C = -lineinfo \\\n    -prec-sqrt=false\n"
            "x: x.cu\n\t@$(NVCC) $(A) $(B) $(C) $(UNSET) $^\n")
    (build,) = make_builds(text)
    assert [f.text for f in build.flags] == ["-O2", "-lineinfo", "-prec-sqrt=false"]
    assert build.opaque
    assert make_builds("CFLAGS = -ffast-math\nall:\n\tgcc $(CFLAGS) a.c\n") == []


def test_makefile_branches_of_one_block_both_count():
    from cudalint.project.build_make import make_builds
    text = ("ifeq ($(CC),)\n  F = -O3 --use_fast_math\nelse\n  F = -O3 -ftz=true\nendif\n"
            "G = -prec-div=false\nG = -O2\n"                   # plain reassignment: last wins
            "x: x.cu\n\tnvcc $(F) $(G) $^\n")
    (build,) = make_builds(text)
    assert [f.text for f in build.flags] == ["-O3", "--use_fast_math", "-O3", "-ftz=true",
                                            "-O2"]
