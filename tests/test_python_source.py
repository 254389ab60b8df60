"""CUDA inside Python strings: which calls are found, what text they hold, and that every
character maps back to the right place in the .py file."""
from __future__ import annotations

import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudalint.parse import parse
from cudalint.sources.python.extract import extract_python_units


def only(src: str):
    ex = extract_python_units(src, "t.py")
    assert len(ex.kernels) == 1, (ex.kernels, ex.notes)
    return ex.kernels[0]


def check_map(src: str, k, ordered: bool = True) -> None:
    """Every mapped char is where the map says: itself if verbatim, else an escape."""
    last = -1
    for i, ch in enumerate(k.text):
        off = k.char_map[i]
        if off < 0:
            continue
        assert off > last or not ordered, f"map not increasing at {i}"
        last = off
        if k.verbatim[i]:
            assert src[off] == ch, (i, ch, src[off:off + 5])
        else:
            assert src[off] in "\\\r{}%", (i, ch, src[off:off + 5])


# ---------------------------------------------------------------------------------------
# property: random kernels in random literal forms


kernel_chars = st.text(
    alphabet=st.sampled_from(list("abcxyz_{}[]();=+*/%<>-.,#'\"\\\t ") + ["\n", "é", "Ω", "🙂",
                                                                        "\x07", "\r"]),
    min_size=0, max_size=80)


def py_literal(value: str, form: int) -> str:
    """A Python expression whose value is `value`, in one of several spellings."""
    if form == 0:
        return repr(value)
    if form == 1 and '"""' not in value and not value.endswith(('"', "\\")) \
            and "\r" not in value and "\\" not in value:
        return 'r"""' + value + '"""'
    if form == 2:                      # implicit concatenation of escaped pieces
        mid = len(value) // 2
        return "(" + repr(value[:mid]) + "\n    " + repr(value[mid:]) + ")"
    if form == 3 and "'''" not in value and not value.endswith(("'", "\\")) \
            and "\\" not in value and "\r" not in value:
        return "'''" + value + "'''"
    if form == 4:                      # escapes for every non-ASCII char
        return ascii(value)
    return repr(value)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(body=kernel_chars, form=st.integers(0, 5), indent=st.integers(0, 8),
       dedent_it=st.booleans())
def test_random_kernel_positions(body, form, indent, dedent_it):
    value = "\n".join(" " * indent + line for line in body.split("\n"))
    lit = py_literal(value, form)
    expr = f"textwrap.dedent({lit})" if dedent_it else lit
    src = f"import textwrap\nimport cupy as cp\n\nk = cp.RawKernel({expr}, 'k')\n"
    k = only(src)
    expected = textwrap.dedent(value) if dedent_it else value
    assert k.text == expected
    check_map(src, k)
    # every char that is not a decoded escape must be mapped
    assert all(m >= 0 for m in k.char_map)


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(kernel_chars, min_size=1, max_size=4), via_name=st.booleans())
def test_random_concatenation(parts, via_name):
    pieces = " + ".join(repr(p) for p in parts)
    if via_name:
        src = f"from cupy import RawModule as RM\nCODE = {pieces}\nm = RM(code=CODE)\n"
    else:
        src = f"from cupy import RawModule as RM\nm = RM(code={pieces})\n"
    k = only(src)
    assert k.text == "".join(parts)
    check_map(src, k)


# ---------------------------------------------------------------------------------------
# exact positions of a kernel token, in the forms people write


@pytest.mark.parametrize("src", [
    'import cupy\nk = cupy.RawKernel("__global__ void f(){ __shfl(1,0); }", "f")\n',
    'import cupy as cp\nk = cp.RawKernel(\n    "__global__ void f()"  # c\n'
    '    "{ __shfl(1,0); }", "f")\n',
    'import cupy as cp\nk = cp.RawKernel("a\\tb\\n\\x41__shfl(1,0);", "f")\n',
    'import cupy as cp\nimport textwrap as tw\nS = tw.dedent("""\\\n    a;\n'
    '      __shfl(1,0);\n""")\nk = cp.RawKernel(S, "f")\n',
    'import cupy as cp\nk = cp.RawKernel(f"""int a[{N}];\n  __shfl(1,0);""", "f")\n',
    'import cupy as cp\nk = cp.RawKernel("\u00e9\U0001f642 __shfl(1,0);", "f")\n',
    'import cupy as cp\r\nk = cp.RawKernel("""x\r\n  __shfl(1,0);""", "f")\r\n',
])
def test_exact_positions(src):
    """The mapped offset of a token is where the token is written in the file."""
    k = only(src)
    i = k.text.index("__shfl")
    assert k.char_map[i] == src.index("__shfl")
    check_map(src, k)


# ---------------------------------------------------------------------------------------
# the call forms and value forms


def test_aliases_and_from_imports():
    src = textwrap.dedent('''
        from cupy import RawKernel as RK
        import pycuda.compiler as comp
        from torch.utils import cpp_extension
        a = RK("__global__ void a(){}", "a")
        b = comp.SourceModule("__global__ void b(){}", options=["-O3", "--use_fast_math"],
                              no_extern_c=True)
        c = cpp_extension.load_inline("mod", "", cuda_sources=["__global__ void c(){}",
                                                               "__global__ void d(){}"])
        d = RawKernel("__global__ void e(){}", "e")   # not imported: not ours
    ''')
    ex = extract_python_units(src, "t.py")
    apis = [(k.api, k.name) for k in ex.kernels]
    assert apis == [("cupy.RawKernel", "a"), ("pycuda.SourceModule", None),
                    ("torch.load_inline", "mod")]
    b = ex.kernels[1]
    assert [str(o) for o in b.options] == ["-O3", "--use_fast_math"]
    assert b.no_extern_c is True
    o = b.options[1]
    assert src[o.start:o.end] == '"--use_fast_math"'
    assert ex.kernels[2].text == "__global__ void c(){}\n__global__ void d(){}"


def test_name_bound_in_function_shadows_module():
    src = textwrap.dedent('''
        import cupy as cp
        CODE = "__global__ void module_level(){}"
        def build():
            CODE = "__global__ void local(){}"
            return cp.RawKernel(CODE, "local")
        def other(code):
            return cp.RawKernel(code, "param")      # a parameter: unknown
        def third():
            return cp.RawKernel(CODE, "module")     # the module's binding
    ''')
    texts = [k.text for k in extract_python_units(src, "t.py").kernels]
    assert texts == ["__global__ void local(){}", "__global__ void module_level(){}"]


def test_ambiguous_binding_is_not_guessed():
    """A source chosen in if/else is not guessed: each branch is a kernel of its own
    (issue 21), and a name also bound elsewhere is not read at all."""
    src = textwrap.dedent('''
        import cupy as cp
        if FLAG:
            CODE = "__global__ void a(){}"
        else:
            CODE = "__global__ void b(){}"
        k = cp.RawKernel(CODE, "a")
    ''')
    texts = [k.text for k in extract_python_units(src, "t.py").kernels]
    assert texts == ["__global__ void a(){}", "__global__ void b(){}"]
    src2 = src.replace("k = cp", "for CODE in X: pass\nk = cp")
    assert extract_python_units(src2, "t.py").kernels == []


def test_parts_appended_under_flags_give_one_kernel_per_way():
    """cucim's regionprops kernels: `source +=` one part per `if compute_x:` and one
    under `if compute_a or compute_c:`. Each assignment of the flags is a kernel (at
    most 8); a part under a condition's opposite never joins its arm, and a condition
    that is no boolean of plain names (or too many flags) reads nothing, as before."""
    src = textwrap.dedent('''
        import cupy as cp
        def make(a, b):
            code = "__global__ void k(float* o) {"
            if a:
                code += " o[0] = 1;"
            if a or b:
                code += " o[1] = 2;"
            if not a:
                code += " o[2] = 3;"
            code += " }"
            return cp.RawKernel(code, "k")
    ''')
    texts = sorted(k.text for k in extract_python_units(src, "t.py").kernels)
    base = "__global__ void k(float* o) {"
    assert texts == sorted([base + " o[2] = 3; }",                     # a=0, b=0
                            base + " o[0] = 1; o[1] = 2; }",           # a=1
                            base + " o[1] = 2; o[2] = 3; }"]), texts    # a=0, b=1
    for k in extract_python_units(src, "t.py").kernels:
        check_map(src, k)
    many = src.replace("if a or b:", "if a or b or c or d:")   # 16 ways: not read
    assert extract_python_units(many, "t.py").kernels == []
    # conditions on different names are independent: 2 x 2 x 2 ways
    other = src.replace("if a or b:", "if n > 2:").replace("if not a:", "if b:")
    assert len({k.text for k in extract_python_units(other, "t.py").kernels}) == 8
    # `if a:` beside `if n > 2 and not a:`: not all plain flags, and they share `a`
    mixed = src.replace("if a or b:", "if n > 2 and not a:")
    assert extract_python_units(mixed, "t.py").kernels == []


def test_augmented_concatenation():
    src = 'import cupy as cp\nS = "__global__ "\nS += "void f(){}"\nk = cp.RawKernel(S, "f")\n'
    k = only(src)
    assert k.text == "__global__ void f(){}"
    check_map(src, k)


def test_templates_substitute_module_constants_only():
    src = textwrap.dedent('''
        import cupy as cp
        BLOCK = 128
        NAME = "scale"
        def make(n):
            a = cp.RawKernel("float s[{B}]; int m = {n}; // {{x}}".format(B=BLOCK, n=n), NAME)
            b = cp.RawKernel("float s[%d]; int m = %d; 100%%" % (BLOCK * 2, n), NAME)
            c = cp.RawKernel(f"float s[{BLOCK:>5}]; int m = {n}; {{y}}", NAME)
            return a, b, c
    ''')
    ks = extract_python_units(src, "t.py").kernels
    assert [k.name for k in ks] == ["scale"] * 3
    assert ks[0].text == "float s[128]; int m = __cudalint_opaque_0__; // {x}"
    assert ks[1].text == "float s[256]; int m = __cudalint_opaque_1__; 100%"
    assert ks[2].text == "float s[  128]; int m = __cudalint_opaque_2__; {y}"
    for k in ks:
        check_map(src, k)
        i = k.text.index("float")
        assert src[k.char_map[i]:k.char_map[i] + 5] == "float"


def test_elementwise_and_reduction_wrappers_parse():
    src = textwrap.dedent('''
        import cupy as cp
        sq = cp.ElementwiseKernel("T x, raw float32 w", "T y",
                                  "y = x * w[i]", "sq", preamble="__device__ int g;")
        red = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2")
    ''')
    ks = extract_python_units(src, "t.py").kernels
    assert [k.name for k in ks] == ["sq", "l2"]
    for k in ks:
        tree = parse(k.text.encode())
        assert not tree.root_node.has_error, k.text
        check_map(src, k, ordered=False)      # the preamble comes first in the wrapper
    i = ks[0].text.index("y = x * w[i]")
    assert src[ks[0].char_map[i]:ks[0].char_map[i] + 12] == "y = x * w[i]"
    assert "template <typename T>" in ks[0].text and "float* w" in ks[0].text


def test_launches_cupy_and_pycuda():
    src = textwrap.dedent('''
        import cupy as cp
        from pycuda.compiler import SourceModule
        BLOCK = 64
        k = cp.RawKernel("__global__ void k(){}", "k")
        m = cp.RawModule(code="__global__ void f(){} __global__ void g(){}")
        f = m.get_function("f")
        def go(n):
            k((n // BLOCK,), (BLOCK,), ())
            f((4,), (32, 4), (), shared_mem=1024)
            m.get_function("g")((1,), (n,), ())
        mod = SourceModule("__global__ void h(){}")
        h = mod.get_function("h")
        h(block=(256, 1, 1), grid=(8, 1))
    ''')
    ks = extract_python_units(src, "t.py").kernels
    launches = {k.api: [(l.kernel, l.block, l.grid, l.shared_mem) for l in k.launches]
                for k in ks}
    assert launches["cupy.RawKernel"] == [("k", (64,), None, 0)]
    assert launches["cupy.RawModule"] == [("f", (32, 4), (4,), 1024), ("g", None, (1,), 0)]
    assert launches["pycuda.SourceModule"] == [("h", (256, 1, 1), (8, 1), 0)]


# ---------------------------------------------------------------------------------------
# edits (fixes) inside strings


def test_map_edit_refuses_what_would_need_escaping():
    src = 'import cupy as cp\nk = cp.RawKernel("a\\nb __shfl(v, 0)", "f")\n'
    k = only(src)
    i = k.text.index("__shfl")
    fs, fe, new = k.map_edit(i, i + 6, "__shfl_sync")
    assert src[fs:fe] == "__shfl" and new == "__shfl_sync"
    assert k.map_edit(i, i + 6, 'say "hi"') is None          # a quote would end the string
    assert k.map_edit(i, i + 6, "a\\b") is None              # a backslash would escape
    j = k.text.index("\n")
    assert k.map_edit(j, j + 1, " ") is None                 # an escape is not verbatim
    assert k.map_edit(i, i, "x") == (fs, fs, "x")            # insertion


# ---------------------------------------------------------------------------------------
# never raise


@pytest.mark.parametrize("src", [
    "import cupy as cp\nk = cp.RawKernel('unterminated\n",
    "import cupy as cp\nx = (" * 1 + "(" * 500 + ")" * 500 + ")\nRawKernel\n",
    "import cupy as cp\nx = " + "1+" * 100000 + "1\nk = cp.RawKernel('a', 'b')\n",
    "import cupy as cp\nk = cp.RawKernel(b'bytes', 'b')\n",
    "import cupy as cp\nk = cp.RawKernel(open('k.cu').read(), 'b')\n",
    "import cupy as cp\nk = cp.RawKernel(*args)\n",
    "import cupy as cp\nk = cp.RawKernel('%s' % x, 'b')\n",
    "import cupy as cp\na = a + 'x'\nk = cp.RawKernel(a, 'b')\n",
    "\x00RawKernel",
])
def test_never_raises(src):
    ex = extract_python_units(src, "t.py")
    for k in ex.kernels:
        assert len(k.char_map) == len(k.text)


def test_syntax_error_is_a_note_at_the_error():
    src = "import cupy as cp\nk = cp.RawKernel('x', 'k'\n"
    ex = extract_python_units(src, "t.py")
    assert ex.kernels == []
    [(off, msg)] = ex.notes
    assert "syntax error" in msg and src.count("\n", 0, off) + 1 in (2, 3)


def test_files_without_kernel_apis_are_not_parsed():
    # a file that is not valid Python but names no API gives nothing, not a note
    assert extract_python_units("def (:\n", "t.py").notes == []
