"""Object-like macros for thread indices (issue 13): ``#define tid threadIdx.x`` is read
as the expression nvcc compiles (GPUVerify's misc/fail/miscfail3 and miscfail4), with
positions at the use in the file; integer constants stay names (the model reads their
values); ``#undef``, names with two bodies, recursion and the expansion budget bound it.
The fixtures (fixtures/CL108/object_macros.cu, object_macro_constant.cu,
fixtures/CL102/object_macros.cu, fixtures/CL201/object_macros.cu,
fixtures/project/index_macros/) hold the findings and their look-alikes."""
from __future__ import annotations

import time

import cudalint.project.index as index
from cudalint.config import Settings
from cudalint.engine import lint_text
from cudalint.sources.base import SourceFile, Unit
from cudalint.sources.macros import MacroDef, expand_text, index_macros, map_target


def _obj(name: str, body: str) -> MacroDef:
    return MacroDef(name, None, body)


TID = _obj("tid", "threadIdx.x")
N = _obj("N", "256")


def test_an_index_macro_in_device_code_is_its_expression_at_the_use():
    text = ("#define tid threadIdx.x\n#define N 256\n"
            "__global__ void k(int* a) {\n  a[tid] = a[tid + 1] + N;\n}\n")
    e = expand_text(text, {"tid": TID, "N": N})
    assert "a[threadIdx.x] = a[threadIdx.x + 1] + N;" in e.text
    uses = [i for i in range(len(text)) if text.startswith("tid", i) and i > 30]
    assert [at for at, _ in e.expanded] == uses
    unit = Unit(file=SourceFile("k.cu", text, "cuda"), text=e.text, char_map=e.char_map)
    second = e.text.index("threadIdx.x + 1")
    assert map_target(e.char_map[second]) == uses[1]
    assert unit.file_offset(second) == uses[1] and not unit.is_written(second)
    # copied characters keep their place; no fix may rewrite the macro's body
    plus = e.text.index("+ 1]")
    assert unit.file_offset(plus) == text.index("+ 1]")
    assert unit.map_edit(second, second + 11, "threadIdx.y") is None


def test_host_code_comments_strings_and_constants_stay_as_written():
    text = ('#define tid threadIdx.x\nvoid host(int* a) { a[tid] = 0; }\n'
            '__global__ void k(int* a) {\n  // tid\n  const char* s = "tid";\n'
            '  a[N] = 1;\n}\n')
    assert expand_text(text, {"tid": TID, "N": N}).char_map is None


def test_index_macros_are_found_through_other_macros_never_constants():
    macros = {"tid": TID, "N": N,
              "GID": _obj("GID", "(blockIdx.x * N + tid)"),
              "ROW": _obj("ROW", "LANE_OF(GID)"),
              "LANE_OF": MacroDef("LANE_OF", ("i",), "((i) & 31)"),
              "WARPS": _obj("WARPS", "(N / 32)"),
              "FROM_FN": _obj("FROM_FN", "THREAD()"),
              "THREAD": MacroDef("THREAD", (), "threadIdx.y"),
              "real": _obj("real", "float")}
    assert index_macros(macros) == {"tid", "GID", "ROW", "FROM_FN"}
    text = "__global__ void k(int* a) { a[ROW] = a[FROM_FN]; }\n"
    e = expand_text(text, macros)
    assert "a[((( blockIdx.x * 256 + threadIdx.x)) & 31)] = a[threadIdx.y];" in \
        e.text.replace("((blockIdx", "(( blockIdx")


def test_self_and_mutually_referring_macros_expand_once():
    macros = {"t": _obj("t", "(t + threadIdx.x)"),
              "a": _obj("a", "(b + threadIdx.x)"), "b": _obj("b", "(a + 1)")}
    text = "__global__ void k(int* p) { p[t] = p[a]; }\n"
    e = expand_text(text, macros)
    assert "p[(t + threadIdx.x)] = p[((a + 1) + threadIdx.x)];" in e.text


def test_undef_ends_the_macro_and_a_new_define_starts_it_again():
    text = ("#define lane threadIdx.x\n__global__ void k1(int* a) { a[lane] = 0; }\n"
            "#undef lane\n__global__ void k2(int* a) { const int lane = 0; a[lane] = 1; }\n"
            "#define lane threadIdx.x\n__global__ void k3(int* a) { a[lane] = 2; }\n")
    e = expand_text(text, {"lane": _obj("lane", "threadIdx.x")})
    assert "a[threadIdx.x] = 0;" in e.text and "a[threadIdx.x] = 2;" in e.text
    assert "const int lane = 0; a[lane] = 1;" in e.text


def test_a_name_with_two_bodies_stays_unknown(tmp_path):
    # which branch holds is not known here: neither body is taken
    src = tmp_path / "k.cu"
    src.write_text("#ifdef GLOBAL_INDEX\n#define tid (blockIdx.x * blockDim.x + threadIdx.x)\n"
                   "#else\n#define tid 0\n#endif\n"
                   "__global__ void k(int* a) { a[tid] = a[tid + 1]; }\n")
    view = index.unit_view(str(src), src.read_text(), Settings(root=str(tmp_path)))
    assert view is not None and view.text == src.read_text()


def test_a_doubling_chain_stays_as_written_within_the_budget():
    macros = {"M0": _obj("M0", "threadIdx.x")}
    for k in range(1, 41):
        macros[f"M{k}"] = _obj(f"M{k}", f"(M{k - 1} + M{k - 1})")
    text = "__global__ void k(int* a) {\n" + "  a[M40] = a[M20] + a[M3];\n" * 50 + "}\n"
    start = time.process_time()
    e = expand_text(text, macros)
    assert time.process_time() - start < 2.0
    # M3 expands; M20 (a million tokens) is past the budget, tried once and said;
    # M40 is more levels deep than an expansion may nest: left as written
    assert "a[(((threadIdx.x + threadIdx.x)" in e.text
    assert "a[M40] = a[M20]" in e.text
    assert {name for _, name in e.over_budget} == {"M20"}


def test_gpuverify_miscfail4_is_a_race():
    src = """//xfail:NOT_ALL_VERIFIED
#define tid threadIdx.x

__device__ static __attribute__((always_inline))
void inlined(int *A, int offset)
{
   int temp = A[tid + offset];
   A[tid] += temp;
}

__global__ void inline_test(int *A, int offset) {
  __requires(offset >= 0);
  __requires(offset < 1024);
  inlined(A, offset);
}

void launch(int* A) { inline_test<<<1, 1024>>>(A, 1); }
"""
    found = [d for d in lint_text("kernel.cu", src, Settings(), "cuda").diagnostics
             if d.code == "CL108"]
    assert [(d.row, d.column) for d in found] == [(8, 4)]
    # the same kernel with the constant 0 for tid: one element, one value, no race
    same = src.replace("#define tid threadIdx.x", "#define tid 0").replace(
        "A[tid] += temp;", "A[tid] = temp;")
    assert not [d for d in lint_text("kernel.cu", same, Settings(), "cuda").diagnostics
                if d.code == "CL108"]
