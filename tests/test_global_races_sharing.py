"""CL108 once per instantiation the race search can tell apart (issue 24): template
kernels made once per dispatch type (``float``, ``double``, ``at::Half``) differ in the
element size only, which scales every address into their buffers alike, so the search
runs once for them and the others share its result; where the size reaches an address
otherwise (``sizeof``, a cast to a pointer type) each size is searched again."""
from __future__ import annotations

from dataclasses import replace

import pytest

import cudalint.analysis.memory.global_races as global_races
from cudalint.config import Settings
from cudalint.engine import lint_bytes

_KERNEL = """template <typename T>
__global__ void k(T* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    %s
}
void h(float* f, double* d, int n) {
    k<float><<<4, 256>>>(f, n);
    k<double><<<4, 256>>>(d, n);
}
"""


def _run(body: str, monkeypatch) -> tuple[list, int]:
    """CL108's findings, and how many instantiations the search ran for."""
    searched = []
    real = global_races._engine

    def counted(ctx, fn, shape, structs, values, bx):
        if bx == 0:
            searched.append(fn.instance)
        return real(ctx, fn, shape, structs, values, bx)
    monkeypatch.setattr(global_races, "_engine", counted)
    src = (_KERNEL % body).encode()
    res = lint_bytes("t.cu", src, replace(Settings(), select=("CL108",)), "cuda")
    return res.diagnostics, len(searched)


def test_one_search_for_instantiations_that_differ_in_element_size(monkeypatch):
    found, searched = _run("if (i < n) a[2 * i] = a[2 * i + 1];", monkeypatch)
    assert found == [] and searched == 1


def test_a_race_is_searched_in_each_instantiation(monkeypatch):
    found, searched = _run("if (i < n) a[i] = a[i + 1];", monkeypatch)
    assert len(found) == 1 and searched == 2


@pytest.mark.parametrize("body", [
    # float: a float stored at each even float, the odd ones read; double: the first
    # half of double 2i + 1 stored by thread 2i + 1 while thread i reads it whole
    "float* w = (float*)a; if (i < n) { float x = a[2 * i + 1]; w[2 * i] = x; }",
])
def test_sizes_that_reach_an_address_are_searched_apart(body, monkeypatch):
    found, searched = _run(body, monkeypatch)
    assert len(found) == 1 and searched == 2, (found, searched)
    with monkeypatch.context() as m:
        # with the size screen taken out, double shares float's silence: wrong
        m.setattr(global_races, "_SIZE_SEEN", global_races.re.compile(rb"(?!)"))
        shared, once = _run(body, m)
    assert shared == [] and once == 1
