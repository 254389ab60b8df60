"""Platform guards as a CUDA build reads them (bench/triage/sheet-newcorpus8.md, class W3):
``model.preproc.off_cuda_build`` decides which branch of an #if/#elif/#else chain nvcc
never compiles, for findings (``not_for_modern_cuda``) and for the project index's
macros (``project.index._hip_regions``). The fixture fixtures/CL104/platform_sides.cu
holds the findings' side; these tests hold the index's, and the cases the earlier test
already silenced (which must stay silent)."""
from __future__ import annotations

import os
from dataclasses import replace

import cudalint.project.index as index
from cudalint.config import ConfigResolver, Settings
from cudalint.discovery import discover
from cudalint.model.preproc import cuda_build_value, off_cuda_build
from cudalint.runner import run


def _lint(folder, codes):
    targets = [replace(t, settings=replace(t.settings, select=tuple(sorted(codes))))
               for t in discover([str(folder)], ConfigResolver())]
    return [(os.path.basename(r.path), d.row, d.code) for r in run(targets, use_cache=False, jobs=1)
            for d in r.diagnostics if d.code in codes and not d.suppressed]


def test_tensorflow_and_hip_nvcc_guards_in_a_header(tmp_path):
    """deepmd-kit's `#if GOOGLE_CUDA ... #elif TENSORFLOW_USE_ROCM` and HOOMD's `#ifdef
    __HIP_PLATFORM_NVCC__ ... #else`: the #elif and the #else are the ROCm side, so
    their defines are not macros of a CUDA build; the CUDA side's are."""
    header = ("#pragma once\n"
              "#if GOOGLE_CUDA\n#define SHFL(v) __shfl_sync(0xffffffff, v, 0)\n"
              "#elif TENSORFLOW_USE_ROCM\n#define SHFL(v) __shfl(v, 0)\n"
              "#else\n#error \"should not touch here\"\n#endif\n"
              "#ifdef __HIP_PLATFORM_NVCC__ // CUDA through HIP\n#define DOWN(v) __shfl_down_sync(0xffffffff, v, 1)\n"
              "#else\n#define DOWN(v) __shfl_down(v, 1)\n#endif\n"
              "#if defined(__HIP_PLATFORM_AMD__) \\\n    || defined(__HIP_PLATFORM_HCC__)\n"
              "#define LANES 64\n#else\n#define LANES 32\n#endif\n")
    (tmp_path / "compat.cuh").write_text(header)
    (tmp_path / "k.cu").write_text(
        '#include "compat.cuh"\n'
        "__global__ void k(float* o) {\n"
        "    float s = SHFL(o[threadIdx.x]);\n"
        "    s = DOWN(s);\n"
        "    o[threadIdx.x % LANES] = s; }\n")
    facts = index.scan(str(tmp_path / "compat.cuh"), header)
    defined = {(m.name, m.body) for m, _ in facts.macros}
    assert defined == {("SHFL", "__shfl_sync(0xffffffff, v, 0)"),
                       ("DOWN", "__shfl_down_sync(0xffffffff, v, 1)"),
                       ("LANES", "32")}, defined
    assert _lint(tmp_path, {"CL104"}) == []


def test_a_branch_is_off_the_cuda_build_only_by_platform_words():
    assert cuda_build_value("GOOGLE_CUDA") is True
    assert cuda_build_value("defined(__HIP_PLATFORM_NVCC__)") is True
    assert cuda_build_value("TENSORFLOW_USE_ROCM") is False
    assert cuda_build_value("defined __HIPCC__") is False
    assert cuda_build_value("GOOGLE_CUDA || TENSORFLOW_USE_ROCM") is True
    assert cuda_build_value("defined(WITH_CUDA) || defined(WITH_HIP)") is None
    assert cuda_build_value("CUDA_VERSION < 9000") is None
    assert cuda_build_value("defined(__CUDACC__)") is None     # host vs nvcc, not HIP
    tf = ("GOOGLE_CUDA", "TENSORFLOW_USE_ROCM")
    assert [off_cuda_build(tf, b) for b in range(3)] == [False, True, True]
    nvcc = ("defined(__HIP_PLATFORM_NVCC__)",)
    assert [off_cuda_build(nvcc, b) for b in range(2)] == [False, True]
    # TensorFlow's `#if GOOGLE_CUDA || TENSORFLOW_USE_ROCM` is GPU code a CUDA build
    # compiles; its #else is the CPU build's
    assert [off_cuda_build(("GOOGLE_CUDA || TENSORFLOW_USE_ROCM",), b) for b in range(2)] \
        == [False, True]


def test_what_the_earlier_test_silenced_stays_silent():
    """The test before this one took a first condition naming a HIP word as the HIP
    side (else the CUDA side when negated); those branches stay off, though some are
    not ROCm-only (HOOMD's ENABLE_HIP is its GPU switch): precision first."""
    assert off_cuda_build(("defined(ENABLE_HIP)",), 0)
    assert not off_cuda_build(("defined(ENABLE_HIP)",), 1)
    assert off_cuda_build(("HIP_VERSION >= 402",), 0)
    assert off_cuda_build(("defined(WITH_CUDA) || defined(WITH_HIP)",), 0)
    assert not off_cuda_build(("!defined(USE_ROCM)",), 0)
    assert off_cuda_build(("!defined(USE_ROCM)",), 1)
    assert not off_cuda_build(("defined(USE_ROCM)", "defined(X)"), 1)
    assert not off_cuda_build(("CUDA_VERSION < 9000",), 1)
