"""The project index (issue 13): fixture projects under fixtures/project/ (a folder each,
several files, annotated like every fixture) are linted as one run; each needs the index
(macros from headers found on include folders, launches in other files or through a
function pointer) and holds look-alikes that must stay silent. Plus the char map through
macro expansions, the expansion budget, and the cache key's launcher dependency."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

import cudalint.project.index as index
from cudalint.config import ConfigResolver, Settings
from cudalint.discovery import discover
from cudalint.runner import run
from cudalint.sources.base import SourceFile, Unit
from cudalint.sources.macros import MacroDef, expand_text, map_target
from fixture_support import FIXTURES, expectations

PROJECTS = sorted(p for p in (FIXTURES / "project").iterdir() if p.is_dir())
# python_header's findings need the Python that reads the header (its #define and launch
# block), not the index: test_python_project_modules removes ops.py and sees them go
INDEX_PROJECTS = [p for p in PROJECTS if p.name != "python_header"]


def _lint_project(folder: Path, codes: set[str]):
    targets = [replace(t, settings=replace(t.settings, select=tuple(sorted(codes))))
               for t in discover([str(folder)], ConfigResolver())]
    results = run(targets, use_cache=False, jobs=1)
    found: dict[tuple[str, int], set[str]] = {}
    for r in results:
        for d in r.diagnostics:
            if d.code in codes and not d.suppressed:
                found.setdefault((os.path.realpath(r.path), d.row), set()).add(d.code)
    return found


def _annotations(folder: Path):
    out = []
    for path in sorted(folder.rglob("*")):
        if path.suffix in (".cu", ".cuh", ".h", ".hpp"):
            expect, forbid = expectations(path)
            out.append((path, expect, forbid))
    return out


def _codes(annotated) -> set[str]:
    return {c for _, expect, forbid in annotated
            for codes in list(expect.values()) + list(forbid.values()) for c in codes}


@pytest.mark.parametrize("folder", PROJECTS, ids=[p.name for p in PROJECTS])
def test_project_fixture_agrees_with_annotations(folder):
    annotated = _annotations(folder)
    codes = _codes(annotated)
    assert codes, f"{folder} has no ruleid/ok annotation"
    found = _lint_project(folder, codes)
    expected_places = set()
    for path, expect, forbid in annotated:
        real = os.path.realpath(path)
        for row, wanted in expect.items():
            expected_places.add((real, row))
            missing = wanted - found.get((real, row), set())
            assert not missing, f"{path}:{row}: expected {sorted(missing)}, found {found}"
        for row, banned in forbid.items():
            assert not banned & found.get((real, row), set()), f"{path}:{row}: flagged ok"
    for place, got in found.items():
        assert place in expected_places, f"{place}: unexpected {sorted(got)}"


@pytest.mark.parametrize("folder", INDEX_PROJECTS, ids=[p.name for p in INDEX_PROJECTS])
def test_project_fixture_needs_the_index(folder, monkeypatch):
    """Without the index, some finding the fixture expects is not made."""
    annotated = _annotations(folder)
    monkeypatch.setattr(index, "ENABLED", False)
    found = _lint_project(folder, _codes(annotated))
    missing = [(path, row) for path, expect, _ in annotated for row, wanted in expect.items()
               if wanted - found.get((os.path.realpath(path), row), set())]
    assert missing, f"{folder.name}: every finding is made without the project index"


LOOP = MacroDef("LOOP", ("i", "n"), "for (int i = threadIdx.x; i < (n); i += blockDim.x)")


def test_expanded_characters_map_back_to_the_invocation_and_its_arguments():
    text = "__global__ void k(float* a, int m) {\n  LOOP(idx,\n       m * 2) {\n" \
           "    a[idx] = 0;\n  }\n}\n"
    e = expand_text(text, {"LOOP": LOOP})
    assert e.expanded == [(text.index("LOOP"), "LOOP")]
    assert "for (int idx = threadIdx.x; idx < (m * 2); idx += blockDim.x) {" in e.text
    assert len(e.char_map) == len(e.text)
    # an argument's characters are where the argument is written
    arg = e.text.index("m * 2")
    assert e.char_map[arg] == text.index("m * 2")
    # a body character is at the invocation, and not written there
    body = e.text.index("threadIdx")
    assert map_target(e.char_map[body]) == text.index("LOOP")
    unit = Unit(file=SourceFile("k.cu", text, "cuda"), text=e.text, char_map=e.char_map)
    assert unit.file_offset(body) == text.index("LOOP")
    assert not unit.is_written(body)
    assert unit.is_written(arg)
    # text after the expansion keeps its place in the file
    after = e.text.index("a[idx]")
    assert unit.file_offset(after) == text.index("a[idx]")
    # an edit of copied characters maps; one of a macro body's does not
    assert unit.map_edit(after, after + 1, "b") == (text.index("a[idx]"),
                                                    text.index("a[idx]") + 1, "b")
    assert unit.map_edit(body, body + 9, "x") is None


def test_host_code_and_comments_stay_as_written():
    text = "void host() { LOOP(i, 4) {} }\n__global__ void k() {\n  // LOOP(j, 2)\n}\n"
    assert expand_text(text, {"LOOP": LOOP}).char_map is None


def test_expansion_past_the_budget_stays_as_written():
    # each level doubles: 2**40 characters if expanded
    macros = {"M0": MacroDef("M0", ("x",), "(x + x)")}
    for k in range(1, 41):
        macros[f"M{k}"] = MacroDef(f"M{k}", ("x",), f"M{k - 1}(M{k - 1}(x))")
    text = "__global__ void k(int* a) {\n  a[0] = M40(1);\n}\n"
    e = expand_text(text, macros)
    assert e.char_map is None and e.over_budget == [(text.index("M40"), "M40")]


def test_a_launcher_is_part_of_the_kernel_files_cache_key(tmp_path):
    from cudalint.project.includes import include_deps
    (tmp_path / "k.cuh").write_text("__global__ void k(float* a) { a[threadIdx.x] = 0; }\n")
    launcher = tmp_path / "main.cu"
    launcher.write_text('#include "k.cuh"\nvoid go(float* a) { k<<<1, 64>>>(a); }\n')
    targets = [t for t in discover([str(tmp_path)], ConfigResolver())]
    try:
        index.prepare(targets)
        kernel = tmp_path / "k.cuh"
        digest, deps = include_deps(kernel, kernel.read_text())
        assert str(launcher) in {p for p, _ in deps}
        launcher.write_text('#include "k.cuh"\nvoid go(float* a) { k<<<1, 128>>>(a); }\n')
        index.prepare(targets)
        assert include_deps(kernel, kernel.read_text())[0] != digest
    finally:
        index._CURRENT = None


def test_include_dirs_setting_finds_headers(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "loops.h").write_text("#define BLOCK 128\n")
    src = tmp_path / "src" / "k.cu"
    src.parent.mkdir()
    src.write_text('#include "loops.h"\n__global__ void k() {}\n')
    settings = Settings(include_dirs=("inc",), root=str(tmp_path))
    view = index.unit_view(str(src), src.read_text(), settings)
    assert view is not None and view.constants.get("BLOCK") == 128
    assert index.unit_view(str(src), src.read_text(), Settings(root=str(tmp_path))
                           ).constants.get("BLOCK") is None


def test_many_invocations_are_bounded():
    from cudalint.sources.macros import MAX_INVOCATIONS
    macros = {"A": MacroDef("A", ("x",), "((x)+(x))")}
    text = "__global__ void k(int* a) {\n" + "a[0] = A(A(A(1)));" * 20000 + "\n}\n"
    e = expand_text(text, macros)
    assert len(e.expanded) == MAX_INVOCATIONS and e.over_budget


def test_unbalanced_invocation_stays_as_written():
    text = "__global__ void k(int* a) { a[0] = LOOP(3; }\n"
    assert expand_text(text, {"LOOP": LOOP}).char_map is None


def test_macros_on_the_hip_side_of_a_platform_guard_are_not_expanded(tmp_path):
    """exllamav2's compat.cuh: `#if defined(USE_ROCM)` maps `__shfl_xor_sync` to the
    legacy `__shfl_xor`. A CUDA build never sees that define; expanded anyway, each
    `__shfl_xor_sync` of the kernel files became a CL104 (8 false findings). Defines
    on the CUDA side of a guard (`#else`, `#ifndef __HIP_PLATFORM_AMD__`) still count."""
    (tmp_path / "compat.cuh").write_text(
        "#pragma once\n#if defined(USE_ROCM)\n"
        "#define __shfl_xor_sync(mask, var, laneMask) __shfl_xor(var, laneMask)\n"
        "#define WIDTH 64\n#else\n#define WIDTH 32\n#endif\n"
        "#ifndef __HIP_PLATFORM_AMD__\n#define LANES WIDTH\n#else\n#define LANES 64\n#endif\n")
    (tmp_path / "k.cu").write_text(
        '#include "compat.cuh"\n'
        "__global__ void k(float* o) {\n"
        "    float s = o[threadIdx.x];\n"
        "    for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffff, s, d);\n"
        "    __shared__ float t[LANES];\n"
        "    t[threadIdx.x] = s; o[threadIdx.x] = t[LANES - 1 - threadIdx.x]; }\n")
    facts = index.scan(str(tmp_path / "compat.cuh"), (tmp_path / "compat.cuh").read_text())
    defined = {(m.name, m.body) for m, _ in facts.macros}
    assert defined == {("WIDTH", "32"), ("LANES", "WIDTH")}, defined
    found = _lint_project(tmp_path, {"CL104"})
    assert not found, found
