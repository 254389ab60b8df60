"""Instantiations the host code names without writing a type (issue 13): PyTorch's
dispatch macros (``AT_DISPATCH_FLOATING_TYPES(..., [&] { k<scalar_t><<<...>>>(...); })``
compiles ``k<double>`` and ``k<float>``) and template arguments deduced from the launch's
arguments (``k<<<g, b>>>(p)`` with ``float *p``). The multi-file form is
fixtures/project/dispatch (checked by test_project_index, with and without the index)."""
from __future__ import annotations

from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.engine import lint_text
from cudalint.model.consteval import sizeof_type
from cudalint.model.dispatch import arg_type, declared_type, deduce, dispatch_aliases
from cudalint.model.instances import Instances, TemplateParam
from cudalint.sources.base import SourceFile, Unit

KERNEL = ("template <typename scalar_t>\n"
          "__global__ void k(const scalar_t* x, scalar_t* out, int n) {\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "  if (i < n) out[i] = x[3 * i];\n}\n")


def _kernels(src: str):
    unit = Unit(file=SourceFile(path="t.cu", text=src, kind="cuda"), text=src)
    return UnitContext(unit, Settings()).analysis(Instances).kernels()


def _at(src: str, mark: str = "k<") -> dict:
    return dispatch_aliases(src, src.index(mark))


def test_dispatch_sets():
    def one(macro: str, extra: str = "") -> tuple | None:
        src = f'{macro}({extra}x.scalar_type(), "n", [&] {{ k<scalar_t><<<1, 32>>>(p); }});'
        return _at(src)["scalar_t"]
    assert one("AT_DISPATCH_FLOATING_TYPES") == ("float", "double")
    assert one("AT_DISPATCH_FLOATING_TYPES_AND_HALF") == ("float", "double", "at::Half")
    assert one("AT_DISPATCH_FLOATING_TYPES_AND2", "at::ScalarType::Half, kBFloat16, ") == \
        ("float", "double", "at::Half", "at::BFloat16")
    assert one("AT_DISPATCH_ALL_TYPES_AND", "at::ScalarType::Bool, ") == \
        ("float", "double", "uint8_t", "int8_t", "int", "int64_t", "int16_t", "bool")
    # a set with a type whose size is not known here, or a macro not listed: unknown
    assert one("AT_DISPATCH_FLOATING_TYPES_AND", "at::ScalarType::ComplexFloat, ") is None
    assert one("AT_DISPATCH_COMPLEX_TYPES") is None


def test_only_the_dispatch_around_the_place_counts():
    src = ('AT_DISPATCH_FLOATING_TYPES(t, "a", [&] { f<scalar_t>(); });\n'
           'AT_DISPATCH_INDEX_TYPES(i, "b", [&] {\n'
           '  AT_DISPATCH_FLOATING_TYPES_AND_HALF(t, "c", [&] {\n'
           '    k<scalar_t, index_t><<<1, 32>>>(p); // "}));" in a comment\n'
           '  });\n});\n'
           'k<scalar_t><<<1, 32>>>(p);\n')
    assert _at(src) == {"index_t": ("int", "int64_t"),
                        "scalar_t": ("float", "double", "at::Half")}
    assert dispatch_aliases(src, src.rindex("k<")) == {}


def test_half_types_have_their_size():
    assert sizeof_type("at::Half") == sizeof_type("c10::Half") == 2
    assert sizeof_type("at::BFloat16") == 2


def test_same_file_dispatch_instantiates_each_type():
    src = KERNEL + ("void go(at::Tensor x, at::Tensor o, int n) {\n"
                    '  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "k", ([&] {\n'
                    "    k<scalar_t><<<(n + 255) / 256, 256>>>(x.data_ptr<scalar_t>(),\n"
                    "        o.data_ptr<scalar_t>(), n);\n  }));\n}\n")
    fns = _kernels(src)
    assert [f.instance for f in fns] == ["k<float>", "k<double>", "k<at::Half>"]
    assert [f.params[0].base_type for f in fns] == ["float", "double", "at::Half"]
    assert all(f.instance_launches[0].block == (256, 1, 1) for f in fns)


def test_scalar_t_outside_a_dispatch_stays_unknown():
    src = KERNEL + "void go(float* x, float* o, int n) { k<scalar_t><<<1, 256>>>(x, o, n); }\n"
    assert [f.instance for f in _kernels(src)] == [None]


def test_figures_follow_the_element_size_of_each_instantiation():
    src = KERNEL + ("void go(at::Tensor x, at::Tensor o, int n) {\n"
                    '  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "k", [&] {\n'
                    "    k<scalar_t><<<(n + 255) / 256, 256>>>(x.data_ptr<scalar_t>(),\n"
                    "        o.data_ptr<scalar_t>(), n);\n  });\n}\n")
    res = lint_text("t.cu", src, Settings(select=("CL201",)), "cuda")
    (d,) = res.diagnostics
    # the worst is kept: double, 24 sectors of an ideal 8; float (12 of 4) named after it
    assert d.metrics["sectors_per_request"] == 24 and d.metrics["ideal_sectors_per_request"] == 8
    assert "instantiation `k<double>`" in d.message
    assert d.metrics["also_for"] == ["instantiation `k<float>`"]


def test_declared_types():
    before = ("void go(const float* __restrict__ a, double *b, int n, Buf c) {\n"
              "  auto p = t.data_ptr<int64_t>();\n  float q[4];\n  half* r = nullptr;\n")
    assert declared_type(before, "a") == "float *"
    assert declared_type(before, "b") == "double *"
    assert declared_type(before, "n") == "int"
    assert declared_type(before, "c") == "Buf"
    assert declared_type(before, "p") == "int64_t *"
    assert declared_type(before, "q") == "float *"
    assert declared_type(before, "r") == "half *"
    assert declared_type(before, "zz") is None
    assert arg_type("x.data_ptr<scalar_t>()", "") == "scalar_t *"
    assert arg_type("(float *)buf", "") == "float *"
    assert arg_type("reinterpret_cast<const float4*>(buf)", "") == "float4 *"
    assert arg_type("2.0f", "") == "float" and arg_type("2.0", "") == "double"
    assert arg_type("b.in()", before) is None and arg_type("a + 1", before) is None


def test_deduce():
    src = ("template <typename T, typename U = int, int N = 4>\n"
           "__global__ void k(const T* a, T* b, U n) { b[threadIdx.x] = a[threadIdx.x]; }\n")
    (fn,) = _kernels(src)
    tps = [TemplateParam("T", "type", None), TemplateParam("U", "type", "int"),
           TemplateParam("N", "value", "4")]
    assert deduce(tps, fn.params, ["float *", "float *", None]) == ["float"]
    assert deduce(tps, fn.params, ["float *", "float *", "int64_t"]) == ["float", "int64_t"]
    assert deduce(tps, fn.params, ["float *", "double *", None]) is None      # two types
    assert deduce(tps, fn.params, [None, None, None]) is None                 # nothing
    assert deduce(tps, fn.params, ["float *", "float *"]) is None             # arity


def test_deduced_in_a_host_template_takes_its_instantiations():
    src = ("template <typename T> __global__ void k(T* a) { a[threadIdx.x * 2] = 0; }\n"
           "template <typename T> void launch(T* a) { k<<<1, 256>>>(a); }\n"
           "void go(float* a, double* b) { launch<float>(a); launch<double>(b); }\n")
    assert sorted(f.instance for f in _kernels(src)) == ["k<double>", "k<float>"]


def test_a_deduced_device_function_keeps_its_binding_when_reevaluated():
    """A record walked whole by a deduced template device function is a row walk (the
    loop's counter reaches every field), not one field read: the callee re-evaluated at
    each counter value keeps the instantiation its call made (it was instantiated a
    second time, found nothing to deduce on bound parameters, and lost its arguments)."""
    src = ("template <typename T>\n"
           "__device__ float walk(T const* const p) {\n"
           "  float s = 0;\n"
           "  for (int i = 0; i < 9; i++) { s += p[i * 2]; s += p[i * 2 + 1]; }\n"
           "  return s;\n}\n"
           "template <typename T>\n"
           "__global__ void k(int n, const T* b, T* o) {\n"
           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "  if (i < n) o[i] = walk(b + i * 18);\n}\n"
           "void go(int n, const float* b, float* o) { k<float><<<n / 256, 256>>>(n, b, o); }\n")
    res = lint_text("t.cu", src, Settings(select=("CL201",)), "cuda")
    (d,) = res.diagnostics
    assert d.row == 4 and "walks its own row across the loop" in d.message
    assert "the kernel reads" not in d.message


ROWS = ("__global__ void rows(int n, const float* in, float* out) {\n"
        "  int index = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (index < n) out[index * 4 + threadIdx.y] = in[index];\n}\n"
        "__global__ void spread(int n, const float* in, float* out) {\n"
        "  int index = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (index < n) out[index * 16 + threadIdx.y] = in[index];\n}\n"
        "__global__ void copied(int n, const float* in, float* out) {\n"
        "  int index = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (index >= n) return;\n"
        "  out[index * 8] = in[index];\n"
        "  memcpy(out + index * 8 + 1, in + n, 7 * sizeof(float));\n}\n"
        "void go(int n, const float* in, float* out) {\n"
        "  dim3 b(128, 4);\n"
        "  rows<<<n / 128, b>>>(n, in, out);\n"
        "  spread<<<n / 128, b>>>(n, in, out);\n"
        "  copied<<<n / 128, 128>>>(n, in, out);\n}\n")


def test_no_waste_claimed_where_the_blocks_rows_or_a_memcpy_fill_the_record():
    """Surfaced by the dispatch instantiations (mmcv border_align: ``output[index * 4 +
    threadIdx.y]`` with blocks of 128x4, each row of the block one field of the record;
    roipoint_pool3d: 3 fields stored, the rest memcpy'd): no byte of the record is
    wasted, so no default CL201. Rows that leave most of the record keep it."""
    res = lint_text("t.cu", ROWS, Settings(select=("CL201",)), "cuda")
    assert [d.row for d in res.diagnostics] == [7]


def test_one_instantiation_per_element_size():
    """AT_DISPATCH_ALL_TYPES compiles 7 types; int after float and int64_t after double
    are the same analysis (the analyses read a type for its layout): 4 are analysed."""
    src = KERNEL + ("void go(at::Tensor x, at::Tensor o, int n) {\n"
                    '  AT_DISPATCH_ALL_TYPES(x.scalar_type(), "k", [&] {\n'
                    "    k<scalar_t><<<(n + 255) / 256, 256>>>(x.data_ptr<scalar_t>(),\n"
                    "        o.data_ptr<scalar_t>(), n);\n  });\n}\n")
    assert [f.instance for f in _kernels(src)] == \
        ["k<float>", "k<double>", "k<uint8_t>", "k<int16_t>"]
