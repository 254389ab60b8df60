"""Issue 21: every compile call a Python file makes is read (with exact positions), given
the block shape its launches use, or listed as not analysed with the reason."""
from __future__ import annotations

import re
import textwrap
from dataclasses import replace

import pytest

from cudalint.config import ConfigError, Settings, parse_table
from cudalint.engine import lint_text
from cudalint.sources.python.extract import extract_python_units
from fixture_support import FIXTURES, expectations


def _lint(path, codes):
    text = path.read_text(encoding="utf-8")
    return lint_text(str(path), text, replace(Settings(), select=tuple(codes)), "python")


def _ex(src: str, **kw):
    return extract_python_units(textwrap.dedent(src), "t.py", **kw)


# ---------------------------------------------------------------------------------------
# fixtures: row and column of every finding


@pytest.mark.parametrize("name", ["python_forms.py", "python_flow.py", "python_wrapper.py"])
def test_every_form_reports_at_the_exact_column(name):
    path = FIXTURES / "CL104" / name
    lines = path.read_text(encoding="utf-8").splitlines()
    expect, _ = expectations(path)
    wanted = {(row, lines[row - 1].index("__shfl_down(") + 1) for row in expect}
    got = {(d.row, d.column) for d in _lint(path, ["CL104"]).diagnostics}
    assert got == wanted


def test_block_shapes_from_python_each_reported():
    path = FIXTURES / "CL201" / "python_launches.py"
    found = [d for d in _lint(path, ["CL201"]).diagnostics]
    blocks = sorted((d.row, d.message.split("(block ")[1].split(" ")[0]) for d in found)
    # CuPy's ElementwiseKernel block, both shapes of the if/else, PyCUDA's block=
    assert blocks == [(12, "128"), (24, "256"), (24, "64"), (43, "128")]
    lines = path.read_text(encoding="utf-8").splitlines()
    for d in found:
        assert lines[d.row - 1][d.column - 1:].startswith(("p[3", "a[3", "a[2"))


def test_python_launch_figures_equal_ncu():
    """The figures CL201 gives with the block shapes read from Python are the ones ncu
    measured for those kernels at those blocks (fixtures/CL201/python_launches.truth.json)."""
    import json
    path = FIXTURES / "CL201" / "python_launches.py"
    truth = json.loads(path.with_suffix(".truth.json").read_text())["records"]
    got = sorted((d.row, tuple(d.metrics["block"]), d.metrics["sectors_per_request"])
                 for d in _lint(path, ["CL201"]).diagnostics)
    assert got == sorted((r["row"], tuple(r["block"]), round(r["ld_sectors_per_request"]))
                         for r in truth)


def test_wrapper_of_another_module_of_the_project():
    """A call of a compile wrapper defined in another module of the project (pyinn's
    load_kernel) is a compile call: parameters bound to its arguments, **opt spread,
    a key stored after the dict left opaque, the kernel name from get_function, the
    launch block read; the wrapper's own compile call is a wrapper body, not unread."""
    path = FIXTURES / "CL104" / "python_wrapper.py"
    ex = extract_python_units(path.read_text(encoding="utf-8"), str(path))
    [k] = ex.kernels
    assert (k.name, [la.block for la in k.launches]) == ("shift_float", [(128, 1, 1)])
    assert "shift_float(const float* x, float* y)" in k.text
    assert list(k.opaque.values()) == ["${n}"] and not ex.unread
    lib = FIXTURES / "CL104" / "kernel_lib" / "build.py"
    lex = extract_python_units(lib.read_text(encoding="utf-8"), str(lib))
    assert not lex.kernels and not lex.unread and len(lex.wrappers) == 1


def test_a_function_of_another_module_that_compiles_its_own_kernel_is_not_a_wrapper(
        tmp_path):
    """Calling a function that compiles a kernel written inside it (chainer's
    conv.im2col_gpu) is not a compile call: its kernel is read where it is written."""
    (tmp_path / "lib.py").write_text(
        "import cupy\n"
        "def im2col(x):\n"
        "    k = cupy.ElementwiseKernel('T a', 'T b', 'b = a', 'im2col')\n"
        "    return k(x)\n"
        "def build(src):\n"
        "    return cupy.RawKernel(src, 'k')\n")
    use = tmp_path / "use.py"
    use.write_text("from lib import build, im2col\n"
                   "y = im2col(x)\n"
                   "k = build('__global__ void k() {}')\n")
    ex = extract_python_units(use.read_text(), str(use))
    assert [(k.call_start, k.name) for k in ex.kernels] == [(48, "k")] and not ex.unread


def test_wrapper_modules_are_cache_dependencies():
    from cudalint.sources.python.modules import python_deps
    path = FIXTURES / "CL104" / "python_wrapper.py"
    digest, deps = python_deps(path, path.read_text(encoding="utf-8"))
    assert digest and [p.rsplit("/", 2)[-2:] for p, _ in deps] == [["kernel_lib", "build.py"]]


def test_a_changed_wrapper_module_is_read_again(tmp_path, monkeypatch, capsys):
    """The result of a file that calls a wrapper of another module is cached with that
    module's bytes: changing the wrapper changes what a warm run reports."""
    from cudalint.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "lib.py").write_text(
        "import cupy\ndef build(src):\n    return cupy.RawKernel(src, 'k')\n")
    (tmp_path / "use.py").write_text(
        "from lib import build\n"
        "k = build('__global__ void k(float* x) { x[0] = __shfl_down(x[0], 1); }')\n")

    def findings() -> int:
        main(["check", "use.py", "--select", "CL104", "--output-format", "json"])
        import json
        return len(json.loads(capsys.readouterr().out))
    assert findings() == 1 and findings() == 1          # cold, then warm
    (tmp_path / "lib.py").write_text("def build(src):\n    return src\n")
    assert findings() == 0


def test_a_file_of_the_package_is_read_and_its_findings_are_at_its_own_place():
    """A kernel file read from the module's own package (a path built from __file__,
    lines joined with "\n" as cupy's _pba_2d does): the call is read; the finding is
    reported by the lint of that file at its own line and column (DELTA from the
    Python's #define), not at the call; a path relative to the working directory is
    not read."""
    path = FIXTURES / "CL104" / "python_file_read.py"
    assert _lint(path, ["CL104"]).diagnostics == []
    header = FIXTURES / "CL104" / "kernel_lib" / "shift_kernels.h"
    [d] = lint_text(str(header), header.read_text(encoding="utf-8"),
                    replace(Settings(), select=("CL104",)), "cuda").diagnostics
    assert (d.row, d.column, d.filename) == (3, 22, str(header))
    assert "read by this call" not in d.message
    ex = extract_python_units(path.read_text(encoding="utf-8"), str(path))
    assert [u.reason for u in ex.unread] == ["read from a file at run time"]
    from cudalint.sources.python.modules import python_deps
    _, deps = python_deps(path, path.read_text(encoding="utf-8"))
    assert [p.rsplit("/", 1)[-1] for p, _ in deps] == ["shift_kernels.h"]


def test_unknown_macro_body_still_reads_the_macro_parameters():
    """Issue 15: `#define REDUCE(a, b) (%(reduce_expr)s)` with the expression unknown
    (pycuda/reduction.py) becomes an opaque expression of a and b, not a bare token."""
    ex = _ex('''
        from pycuda.compiler import SourceModule
        def module(reduce_expr, name):
            src = """
            #define REDUCE(a, b) (%(reduce_expr)s)
            __global__ void %(name)s(float* s) { s[0] = REDUCE(s[1], s[2]); }
            """ % {"reduce_expr": reduce_expr, "name": name}
            return SourceModule(src)
        module(get_expr(), "k")
        ''')
    [k] = ex.kernels
    assert re.search(r"#define REDUCE\(a, b\) \(__cudalint_opaque_\d+__\(a, b\)\)", k.text)
    assert "__global__ void k(float* s)" in k.text


def test_warp_size_and_a_class_constant_fill_placeholders():
    """Issue 15: dev.warp_size (and get_attribute(...WARP_SIZE)) is 32 on every CUDA
    device; self.block_size assigned once in the class is a constant (pycuda's sparse
    coordinate kernels)."""
    ex = _ex('''
        import pycuda.driver as drv
        from pycuda.compiler import SourceModule
        T = """
        #define BLOCK_SIZE %(block_size)d
        #define WARP_SIZE %(warp_size)d
        #define LANES %(lanes)d
        __global__ void k(float* x) { x[threadIdx.x % WARP_SIZE] = BLOCK_SIZE; }
        """
        class Coo:
            def __init__(self, n):
                self.block_size = 128
                self.n = n
            def kernel(self):
                dev = drv.Context.get_device()
                return SourceModule(T % {
                    "block_size": self.block_size,
                    "warp_size": dev.warp_size,
                    "lanes": dev.get_attribute(drv.device_attribute.WARP_SIZE) + self.n})
        ''')
    [k] = ex.kernels
    assert "#define BLOCK_SIZE 128" in k.text and "#define WARP_SIZE 32" in k.text
    assert "#define LANES __cudalint_opaque_" in k.text      # self.n: a parameter


def test_file_read_is_listed_as_unread():
    path = FIXTURES / "CL104" / "python_forms.py"
    ex = extract_python_units(path.read_text(encoding="utf-8"), str(path))
    [u] = ex.unread
    assert u.api == "cupy.RawKernel" and "file" in u.reason
    assert path.read_text(encoding="utf-8")[u.start:u.end].startswith("cupy.RawKernel(f.read()")


# ---------------------------------------------------------------------------------------
# the table


def test_core_paths_and_compile_with_cache():
    ex = _ex("""
        from cupy import _core
        import cupy
        a = _core.RawModule(code='__global__ void a() {}')
        b = _core.ReductionKernel('T x', 'T y', 'x', 'a + b', 'y = a', '0', 'r')
        c = cupy.cuda.compile_with_cache('__global__ void c() {}')
        """)
    assert [k.api for k in ex.kernels] == ["cupy.RawModule", "cupy.ReductionKernel",
                                           "cupy.cuda.compile_with_cache"]
    assert ex.kernels[1].launches[0].block == (512,)     # cupy/_core/_reduction.pyx:232


def test_older_cupy_paths_and_chainer_cupy():
    ex = _ex("""
        import cupy
        from chainer.backends import cuda
        a = cupy.core.ElementwiseKernel('T x', 'T y', 'y = x', 'a')
        b = cuda.cupy.RawKernel('__global__ void b() {}', 'b')
        c = cuda.cupy.ReductionKernel('T x', 'T y', 'x', 'a + b', 'y = a', '0', 'c')
        """)
    assert [k.api for k in ex.kernels] == ["cupy.ElementwiseKernel", "cupy.RawKernel",
                                           "cupy.ReductionKernel"]


def test_name_expressions_and_template_launch():
    ex = _ex("""
        import cupy
        mod = cupy.RawModule(code='template<class T> __global__ void k(T* x) {}',
                             name_expressions=['k<float>', 'k<double>'])
        f = mod.get_function('k<float>')
        f((4,), (96,), (x,))
        """)
    [k] = ex.kernels
    assert k.name_expressions == ["k<float>", "k<double>"]
    assert [(la.kernel, la.block) for la in k.launches] == [("k", (96,))]


def test_configured_wrapper():
    settings = parse_table({"python-compile-apis": {
        "mylib.cuda.build": {"source": [1, "code"], "name": "kernel_name",
                             "options": "flags"}}}, "cfg")
    ex = _ex("""
        from mylib.cuda import build
        k = build(3, '__global__ void w() {}', kernel_name='w', flags=('-O3',))
        """, compile_apis=settings.python_compile_apis)
    [k] = ex.kernels
    assert (k.api, k.name, list(k.options)) == ("mylib.cuda.build", "w", ["-O3"])


def test_configured_wrapper_errors_name_the_key():
    with pytest.raises(ConfigError, match="python-compile-apis.a.b.sourse"):
        parse_table({"python-compile-apis": {"a.b": {"sourse": 0}}}, "cfg")
    with pytest.raises(ConfigError, match="wrong value"):
        parse_table({"python-compile-apis": {"a.b": {"source": -1}}}, "cfg")


def test_look_alike_calls_are_not_compile_calls():
    ex = _ex("""
        from functools import reduce
        import cupy
        def elementwise(a, b, c, d): pass
        reduce(lambda a, b: a + b, [1, 2])
        elementwise('T x', 'T y', 'y = __shfl_down(x, 1)', 'k')
        """)
    assert ex.kernels == [] and ex.unread == []


# ---------------------------------------------------------------------------------------
# resolution


def test_substituted_string_maps_to_its_own_literal():
    src = textwrap.dedent("""
        import cupy
        BODY = 'x[0] = __shfl_down(x[0], 1);'
        k = cupy.RawKernel('__global__ void k(float* x) { %s }' % BODY, 'k')
        """)
    [k] = extract_python_units(src, "t.py").kernels
    i = k.text.index("__shfl_down")
    assert src[k.char_map[i]:].startswith("__shfl_down")


def test_join_of_comprehension_and_unknown_template_key():
    ex = _ex("""
        import cupy, string
        T = string.Template('__global__ void k_$t($t* x, $$dollar) { $unknown; }')
        src = '\\n'.join(T.safe_substitute(t=ty) for ty in ('float', 'int'))
        k = cupy.RawKernel(src, 'k_float')
        """)
    [k] = ex.kernels
    assert "k_float(float* x, $dollar)" in k.text and "k_int(int* x" in k.text
    assert "__cudalint_opaque_" in k.text


def test_str_replace_keeps_the_rest_mapped():
    src = textwrap.dedent("""
        import cupy
        T = '__global__ void k(TYPE* x) { x[0] = __shfl_down(x[0], 1); }'
        k = cupy.RawKernel(T.replace('TYPE', 'float'), 'k')
        """)
    [k] = extract_python_units(src, "t.py").kernels
    assert k.text == "__global__ void k(float* x) { x[0] = __shfl_down(x[0], 1); }"
    i = k.text.index("__shfl_down")
    assert src[k.char_map[i]:].startswith("__shfl_down")
    assert k.char_map[k.text.index("float")] == -1


def test_method_returning_source_and_branch_sources():
    ex = _ex("""
        import cupy
        class Op:
            def _code(self, op='+'):
                return '__global__ void k(float* x) { x[0] = x[0] %s 1; }' % op
            def build(self):
                return cupy.RawKernel(self._code(), 'k')
        def pick(fast):
            if fast:
                code = '__global__ void k() { /* fast */ }'
            else:
                code = '__global__ void k() { /* slow */ }'
            return cupy.RawKernel(code, 'k')
        """)
    texts = [k.text for k in ex.kernels]
    assert texts[0] == "__global__ void k(float* x) { x[0] = x[0] + 1; }"
    assert "fast" in texts[1] and "slow" in texts[2]


def test_parameters_from_the_module_callers():
    ex = _ex("""
        import cupy
        def _kernel(int_type, op='+'):
            return cupy.ElementwiseKernel(
                'raw T x', 'T y', 'y = x[i] %s (T)sizeof(%s)' % (op, int_type), 'k')
        def a():
            return _kernel('int')
        def b(t):
            return _kernel(t, op='*')
        """)
    ops = [k.text.split("{\n")[-1].split(";")[0] for k in ex.kernels]
    # one kernel per caller; an unknown argument stays opaque, never guessed
    assert ops[0] == "y = x[i] + (T)sizeof(int)"
    assert ops[1].startswith("y = x[i] * (T)sizeof(__cudalint_opaque_")


def test_chain_with_another_modules_part_reads_the_rest():
    ex = _ex("""
        import cupy
        from ._shared import declarations
        def kernel():
            code = declarations(3)
            code += 'y = __shfl_down(x, 1);'
            return cupy.ElementwiseKernel('T x', 'T y', code, 'k')
        """)
    [k] = ex.kernels
    assert k.text.split("{\n")[-1].startswith("\ny = __shfl_down(x, 1);")


def test_unread_reasons():
    ex = _ex("""
        import cupy
        def make(src):
            return cupy.RawKernel(src, 'k')
        m = cupy.RawModule(path='kernels.cubin')
        k = cupy.RawKernel(open('k.cu').read(), 'k')
        from .sources import SRC
        i = cupy.RawKernel(SRC, 'i')
        """)
    reasons = [u.reason for u in ex.unread]
    assert reasons[2] == ("`SRC` is imported from `.sources` (text from another module is "
                          "not followed)")
    assert "file" in reasons[1] and len(reasons) == 3
    # what `make` compiles is passed by its callers, and no module of the project calls
    # it: listed (tests/test_python_project_modules.py: a wrapper body when one does)
    assert reasons[0] == ("`src` is a parameter of `make` (and no call of `make` in this "
                          "module passes known values)") and not ex.wrappers
    # RawModule(path=) loads a cubin or ptx: no CUDA C++ is compiled
    assert ["path=" in u.reason for u in ex.not_compiled] == [True]


def test_a_parameter_no_caller_fills_inside_a_called_function_is_unread():
    ex = _ex("""
        import cupy
        def make(src):
            return cupy.RawKernel(src, 'k')
        def run(x):
            make(x.source)
        """)
    assert "is a parameter of `make`" in ex.unread[0].reason and not ex.wrappers


# ---------------------------------------------------------------------------------------
# launches


def test_a_handle_name_bound_in_several_functions_launches_in_each():
    """`mod`/`ker` bound once in each test function (the module binds them several
    times): each launch goes to the kernel of its own function, not to none."""
    ex = _ex('''
        import cupy
        def a(x):
            mod = cupy.RawModule(code='__global__ void k(float* x) {}')
            ker = mod.get_function('k')
            ker((1,), (64,), (x,))
        def b(x):
            mod = cupy.RawModule(code='__global__ void k(float* x) { x[0] = 1; }')
            ker = mod.get_function('k')
            ker((1,), (128,), (x,))
        def c(x, flag):
            ker = cupy.RawKernel('__global__ void k(float* x) { x[1] = 2; }', 'k')
            if flag:
                ker = cupy.RawKernel('__global__ void k(float* x) { x[2] = 3; }', 'k')
            ker((1,), (32,), (x,))
        ''')
    assert [[la.block for la in k.launches] for k in ex.kernels] == [
        [(64,)], [(128,)], [], []]


def test_launch_through_helper_and_prepared_call_and_block_size():
    ex = _ex("""
        import cupy
        from pycuda.compiler import SourceModule
        def _get_kernel():
            return cupy.RawKernel('__global__ void k() {}', 'k')
        def run():
            _get_kernel()((1,), (32, 4), ())
        mod = SourceModule('__global__ void p() {}')
        p = mod.get_function('p')
        p.prepared_call((8, 1), (64, 1, 1), 3)
        ew = cupy.ElementwiseKernel('T x', 'T y', 'y = x', 'ew')
        ew(a, b, block_size=256)
        """)
    blocks = {k.name or k.api: [la.block for la in k.launches] for k in ex.kernels}
    assert blocks == {"k": [(32, 4)], "pycuda.SourceModule": [(64, 1, 1)],
                      "ew": [(256,)]}


def test_block_dimension_from_branches():
    ex = _ex("""
        import cupy
        k = cupy.RawKernel('__global__ void k() {}', 'k')
        def run(big):
            if big:
                bx = 256
            elif small:
                bx = 32
            else:
                bx = 64
            k((1,), (bx, 2), ())
        """)
    assert sorted(k.launches[0].block for k in ex.kernels) == [(32, 2), (64, 2), (256, 2)]


# ---------------------------------------------------------------------------------------
# nothing unread in silence


def test_unread_count_line_and_show_unread(tmp_path, monkeypatch, capsys):
    from cudalint.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "k.py").write_text(textwrap.dedent("""
        import cupy
        a = cupy.RawKernel(open('a.cu').read(), 'a')
        from .s import SRC
        b = cupy.RawKernel(SRC, 'b')
        m = cupy.RawModule(path='m.cubin')      # loads a cubin: compiles nothing
        ok = cupy.RawKernel('__global__ void ok() {}', 'ok')
        """))
    for extra in ([], ["--no-cache"]):          # the count survives the cache
        assert main(["check", "k.py", "--output-format", "concise"] + extra) == 0
        out = capsys.readouterr().out
        assert out.splitlines()[-1] == ("2 CUDA compile calls in Python were not analysed "
                                        "(list them with `--show-unread`).")
    main(["check", "k.py", "--output-format", "concise", "--show-unread"])
    listed = [ln for ln in capsys.readouterr().out.splitlines() if " unread " in ln]
    assert listed == [
        "k.py:3:5: unread `cupy.RawKernel` call not analysed: read from a file at run time",
        "k.py:5:5: unread `cupy.RawKernel` call not analysed: `SRC` is imported from "
        "`.s` (text from another module is not followed)"]
    main(["check", "k.py", "--output-format", "json", "--show-unread"])
    assert "unread" not in capsys.readouterr().out       # JSON stays JSON


def test_hostile_generators_stay_cheap():
    """Loops unrolled inside inlined calls inside loops multiply: a budget per call
    stops them (listed with the reason), and what fits is still read."""
    import time
    src = textwrap.dedent("""
        import cupy
        def g(y):
            u = ''
            for d in range(64):
                u += 'x%d' % d
            return u
        def f(x):
            t = ''
            for c in range(64):
                t += g(c)
            return t
        s = ''
        for a in range(64):
            s += f(a)
        k = cupy.RawKernel(s, 'k')
        k3 = cupy.RawKernel(g(1), 'k')
        """)
    t0 = time.process_time()
    ex = extract_python_units(src, "t.py")
    assert time.process_time() - t0 < 2.0
    assert [u.reason for u in ex.unread] == ["more than 4000 steps to follow"]
    assert [len(k.text) for k in ex.kernels] == [182]


def test_alternatives_are_branches_not_reassignments():
    ex = _ex("""
        import cupy
        k = cupy.RawKernel('__global__ void k() {}', 'k')
        def run(big, n):
            if big:
                block = (32,)
                block = (512,)      # the branch's last assignment is its value
            else:
                block = (64,)
            k((1,), block, ())
            shape = (32,)
            for _ in range(n):
                shape = (128,)
            k((1,), shape, ())      # a loop body is not a branch: neither is assumed
        """)
    shapes = sorted(la.block for k in ex.kernels for la in k.launches if la.block)
    assert shapes == [(64,), (512,)]


def test_helper_with_branches_gives_one_kernel_per_branch():
    ex = _ex("""
        import cupy
        def _code(wide):
            if wide:
                code = 'y = x >> 40;'
            else:
                code = 'y = x >> 20;'
            return code
        def kernel(wide):
            return cupy.ElementwiseKernel('T x', 'T y', _code(wide), 'decode')
        """)
    assert sorted(k.text.split("{\n")[-1].split(";")[0] for k in ex.kernels) == [
        "y = x >> 20", "y = x >> 40"]
