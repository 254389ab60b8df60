"""Fuzz targets, seeds and mutations shared by the hypothesis tests (CI and long runs),
the regression corpus and the atheris entry point (``fuzz/atheris_main.py``).

A *target* is a function ``check_<name>(data: bytes, **options)`` that feeds one input to
one entry of cudalint and asserts the generic properties:

* it never raises (and no rule raises either: an ``internal error in rule`` CL000 is a
  crash the engine merely caught);
* every diagnostic lies inside the file: 1-based rows and columns, the end not before
  the start, offsets within the text and in agreement with (row, column);
* every diagnostic survives JSON: ``to_json`` is strict JSON (no NaN), ``to_cache`` read
  back with ``from_json`` gives the same diagnostic;
* for Python files every position (kernel characters, calls, launches, options, fix
  edits) lands inside the file.

Every input that ever broke a property is kept in ``tests/fuzz/regressions/<target>/``.
"""
from __future__ import annotations

import functools
import json
import math
import os
import random
import sys
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

from cudalint.config import ConfigError, ConfigResolver, Settings, load_config_file
from cudalint.engine import FileResult, decode, lint_bytes, lint_text, reuse_lints

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
EXAMPLES = ROOT / "examples"
REGRESSIONS = Path(__file__).resolve().parent / "regressions"

# inputs fed to each target in this process (printed at the end of a pytest run)
RUNS: Counter = Counter()

ALL = Settings(select=("ALL",))
ALL_NOTICES = Settings(select=("ALL",), parse_notices=True)


# CL000 wordings of a libclang helper or a worker that died or ran out of its budget
ISOLATED = ("ended its process", "took more than", "memory-limit-mb", "worker process",
            "its analysis failed")


class FuzzFailure(AssertionError):
    """A property broke; the message says which."""


def _fail(what: str) -> None:
    raise FuzzFailure(what)


def quiet(fn):
    """The target must not print "Exception ignored ..." to stderr either (an exception
    raised where nobody can catch it: a ctypes callback, a __del__): a user would see a
    traceback for a file cudalint reports as fine."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        seen = []
        old = sys.unraisablehook
        sys.unraisablehook = seen.append
        try:
            out = fn(*args, **kwargs)
        finally:
            sys.unraisablehook = old
        if seen:
            u = seen[0]
            _fail(f"printed to stderr: Exception ignored in {u.object!r}: "
                  f"{u.exc_type.__name__}: {u.exc_value}")
        return out
    return run


# ---------------------------------------------------------------------------------------
# seeds


def _files(suffixes: tuple[str, ...]) -> list[Path]:
    out = []
    for base in (FIXTURES, EXAMPLES, REGRESSIONS):
        if base.is_dir():
            out.extend(p for p in base.rglob("*") if p.is_file() and p.name.endswith(suffixes)
                       and ".cudalint_cache" not in p.parts)
    return sorted(out)


def _read_all(paths: list[Path]) -> list[bytes]:
    return [p.read_bytes() for p in paths]


CUDA_SEEDS = _read_all(_files((".cu", ".cuh")))
PYTHON_SEEDS = _read_all([p for p in _files((".py",)) if "regressions" not in p.parts
                          or p.parent.name == "python"])
PTXAS_SEEDS = _read_all(_files((".log",)))
TOML_SEEDS = _read_all(_files((".toml",))) + [(ROOT / "pyproject.toml").read_bytes()]
PTXAS_LOGS = sorted(p for p in FIXTURES.rglob("*.log"))


# ---------------------------------------------------------------------------------------
# mutations (deterministic functions of their parameters, so hypothesis can shrink them)

CUDA_SNIPPETS: tuple[bytes, ...] = tuple(s.encode("utf-8") if isinstance(s, str) else s for s in (
    "#define F(x) x\n", "#define BEGIN {\n", "#define END }\n", "BEGIN", "END",
    "#define K __global__ void\n", "K kk(float*p){p[threadIdx.x]=0;}\n",
    "#if 0\n", "#endif\n", "#else\n", "#elif 1\n", "#ifdef __HIP_PLATFORM_AMD__\n",
    "#if __CUDA_ARCH__ < 700\n", "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n",
    "#include \"nope.h\"\n", "#include <cuda.h>\n", "#include \"../../etc/passwd\"\n",
    "#pragma unroll\n", "#define N 1099511627776\n", "#define N -1\n", "#define N 0\n",
    "\"unterminated", "/* unterminated", "'", "R\"(raw", "\\\n", "*/", "//", "\"",
    "__shfl_down(v, 1)", "__shfl(v, 0)", "__ballot(1)", "__any(x)", "__all(x)",
    "__shfl_xor(v, 1, 16)", " // noqa: CL104\n", " // noqa\n", " // noqa: CL999, E501\n",
    "// cudalint: noqa\n", "// cudalint: noqa: CL202\n", " // noqa: CL202, CL201\n",
    "__global__ void k(float* a){ a[threadIdx.x * 2] = 0; }\n",
    "__global__ void k2(float* a, int n){ for (int i = threadIdx.x; i < n; i += 32) a[i*33]"
    " = a[i]; }\n",
    "__shared__ float s[32][33];", "__shared__ double t[0];", "__shared__ char u[-1];",
    "__shared__ float v[1 << 40];", "s[threadIdx.x][threadIdx.y] = 0;",
    "s[threadIdx.y][threadIdx.x * 32] = 0;", "template<int N> __global__ void t(float*p)"
    "{p[N*threadIdx.x]=1;}\n", "<<<1, 256>>>", "k<<<g, b, 0, s>>>(p);", "k<<<",
    "__launch_bounds__(256, 2)", "__launch_bounds__(0)", "__launch_bounds__(-1, 99999)",
    "extern __shared__ float dyn[];", "asm volatile(\"bar.sync 0;\");", "threadIdx.x",
    "blockDim.x * blockIdx.x + threadIdx.x", "1e308*1e308", "0x7fffffffffffffff",
    "18446744073709551616", "-2147483648", "1/0", "% 0", "<< 64", ">> -1", "[-1]",
    "(float4*)", "reinterpret_cast<float2*>(p)", "__syncthreads();", "__syncwarp();",
    "for(;;){", "while(1)", "switch(x){case 1:}", "goto L; L:", "do { } while (0);",
    "αβγ", "\u2028", "\ufeff", "\x0c", "\r", "\t", "\r\n", "\x00", "#", "##", "#x",
    "struct S { float x, y; }; __global__ void ks(S* p){ p[threadIdx.x].y = 1; }\n",
    "__device__ __forceinline__ float d(float v){ return __shfl_down(v, 1); }\n",
    "if (threadIdx.x < 16) { __syncthreads(); }", "return;", "}", "{", ")", "(", ";",
    b"\xff\xfe", b"\xed\xa0\x80", b"\xc0\x80", b"\xf4\x90\x80\x80", b"\x80",
))

PY_SNIPPETS: tuple[bytes, ...] = tuple(s.encode("utf-8") if isinstance(s, str) else s for s in (
    "import cupy as cp\n", "from cupy import RawKernel as RK\n", "import cupy\n",
    "from pycuda.compiler import SourceModule\n", "import textwrap\n",
    "from torch.utils.cpp_extension import load_inline\n",
    "k = cp.RawKernel(CODE, 'k')\n", "m = SourceModule(CODE, options=['-O3'])\n",
    "CODE = \"__global__ void k(float*p){p[threadIdx.x*2]=__shfl(p[0],0);}\"\n",
    "CODE += '\\n'\n", "CODE = CODE.format(N=4)\n", "CODE = CODE % (1,)\n",
    "CODE = f'{N}' + CODE\n", "N = 32\n", "N = 'x'\n", "N = 10**100\n",
    "k((1,), (256,), (x,))\n", "f = m.get_function('k')\n", "f(x, block=(32,1,1), grid=(1,1))\n",
    "def g():\n    ", "class C:\n    ", "    ", "\t", "\\\n", "'''", '"""', "'", '"', "f'",
    "rb'", "u'", "\\N{GREEK SMALL LETTER ALPHA}", "\\x41", "\\u00e9", "\\U0001F600", "\\",
    "{", "}", "{0}", "{N}", "%s", "%(N)d", "{{", "}}", "(", ")", "[", "]", ",", " + ",
    "textwrap.dedent(", ".strip()", "lambda: ", "@decorator\n", "async def a():\n    ",
    "# noqa: CL104\n", "# cudalint: noqa\n", "\r\n", "\x00", b"\xff", b"\xed\xa0\x80",
    "if True:\n", "else:\n", "try:\n    pass\nexcept Exception:\n    pass\n",
))


def _nest(kind: int, n: int) -> bytes:
    pairs = [b"{", b"(", b"[", b"#if 1\n", b"if(x)", b"a<", b"-", b"!", b"*", b"f("]
    return pairs[kind % len(pairs)] * n


MUTATE_MAX = 4 << 20     # bytes a mutated input may grow to between two operations


def mutate(data: bytes, ops, corpus: list[bytes], snippets: tuple[bytes, ...],
           scale: int = 1) -> bytes:
    """Apply the operations ``ops`` (tuples drawn by :func:`ops_strategy`) to ``data``."""
    buf = bytearray(data)
    for op in ops:
        if len(buf) > MUTATE_MAX:
            # a line duplicated 50 times, several times over, grew past 4 GB in the
            # worker (fuzz seed 39's cache input: MemoryError in the harness itself)
            del buf[MUTATE_MAX:]
        name = op[0]
        n = len(buf)
        if name == "flip" and n:
            buf[op[1] % n] ^= op[2] or 1
        elif name == "delete" and n:
            i = op[1] % n
            del buf[i:i + op[2]]
        elif name == "insert":
            i = op[1] % (n + 1)
            buf[i:i] = op[2]
        elif name == "snippet":
            i = op[1] % (n + 1)
            if op[3]:               # at a line start
                j = buf.rfind(b"\n", 0, i)
                i = j + 1
            buf[i:i] = snippets[op[2] % len(snippets)]
        elif name == "truncate":
            del buf[op[1] % (n + 1):]
        elif name == "splice" and corpus:
            other = corpus[op[1] % len(corpus)]
            if other:
                a = op[2] % len(other)
                piece = other[a:a + op[3]]
                i = op[4] % (n + 1)
                buf[i:i] = piece
        elif name == "crlf":
            buf = bytearray(bytes(buf).replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
        elif name == "cr":
            buf = bytearray(bytes(buf).replace(b"\n", b"\r"))
        elif name == "dupline" and n:
            i = op[1] % n
            a = buf.rfind(b"\n", 0, i) + 1
            b = buf.find(b"\n", i)
            b = n if b < 0 else b + 1
            buf[b:b] = bytes(buf[a:b]) * min(op[2] % 50 + 1, MUTATE_MAX // max(1, b - a) + 1)
        elif name == "nest":
            i = op[1] % (n + 1)
            buf[i:i] = _nest(op[2], op[3] * scale)
        elif name == "hugeline":
            i = op[1] % (n + 1)
            buf[i:i] = (b"a" if op[2] % 3 == 0 else b"x+" if op[2] % 3 == 1 else b"/*")[:2] \
                * (op[3] * 10 * scale)
        elif name == "bom":
            buf[0:0] = b"\xef\xbb\xbf"
    return bytes(buf)


def ops_strategy(max_ops: int = 6, scale: int = 1):
    """Hypothesis strategy for a list of mutation operations."""
    from hypothesis import strategies as st
    pos = st.integers(0, 1 << 20)
    return st.lists(st.one_of(
        st.tuples(st.just("flip"), pos, st.integers(0, 255)),
        st.tuples(st.just("delete"), pos, st.integers(1, 64)),
        st.tuples(st.just("insert"), pos, st.binary(max_size=16)),
        st.tuples(st.just("snippet"), pos, st.integers(0, 1000), st.booleans()),
        st.tuples(st.just("snippet"), pos, st.integers(0, 1000), st.booleans()),
        st.tuples(st.just("truncate"), pos),
        st.tuples(st.just("splice"), st.integers(0, 1000), pos, st.integers(1, 400), pos),
        st.tuples(st.just("crlf")),
        st.tuples(st.just("cr")),
        st.tuples(st.just("dupline"), pos, st.integers(0, 1000)),
        st.tuples(st.just("nest"), pos, st.integers(0, 100), st.integers(1, 300 * scale)),
        st.tuples(st.just("hugeline"), pos, st.integers(0, 2), st.integers(1, 500 * scale)),
        st.tuples(st.just("bom")),
    ), max_size=max_ops)


def random_ops(rng: random.Random, max_ops: int = 6) -> list[tuple]:
    """The same operations drawn from a plain RNG (atheris and scripts)."""
    out = []
    for _ in range(rng.randint(0, max_ops)):
        p = rng.randint(0, 1 << 20)
        kind = rng.choice(["flip", "delete", "insert", "snippet", "snippet", "truncate",
                           "splice", "crlf", "cr", "dupline", "nest", "hugeline", "bom"])
        if kind == "flip":
            out.append((kind, p, rng.randint(0, 255)))
        elif kind == "delete":
            out.append((kind, p, rng.randint(1, 64)))
        elif kind == "insert":
            out.append((kind, p, rng.randbytes(rng.randint(0, 16))))
        elif kind == "snippet":
            out.append((kind, p, rng.randint(0, 1000), rng.random() < 0.5))
        elif kind == "truncate":
            out.append((kind, p))
        elif kind == "splice":
            out.append((kind, rng.randint(0, 1000), p, rng.randint(1, 400),
                        rng.randint(0, 1 << 20)))
        elif kind == "dupline":
            out.append((kind, p, rng.randint(0, 1000)))
        elif kind == "nest":
            out.append((kind, p, rng.randint(0, 100), rng.randint(1, 300)))
        elif kind == "hugeline":
            out.append((kind, p, rng.randint(0, 2), rng.randint(1, 500)))
        else:
            out.append((kind,))
    return out


# ---------------------------------------------------------------------------------------
# generators of well-formed-ish inputs that reach deep into the rules

_IDX = ["threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockDim.x",
        "blockDim.y", "gridDim.x", "i", "j", "n", "lane", "warp", "tid", "N", "S"]
_OPS = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"]
_CONSTS = ["0", "1", "2", "3", "31", "32", "33", "64", "-1", "-32", "1024", "65536",
           "2147483647", "4294967296", "0x7fffffff", "1u", "7ULL", "2.5f", "0.0", "1e40",
           "sizeof(float)", "N", "S", "TILE", "(N+1)", "(1<<31)", "(1<<63)"]


def gen_expr(rng: random.Random, depth: int = 0) -> str:
    r = rng.random()
    if depth > 4 or r < 0.3:
        return rng.choice(_IDX + _CONSTS)
    if r < 0.75:
        return f"({gen_expr(rng, depth + 1)} {rng.choice(_OPS)} {gen_expr(rng, depth + 1)})"
    if r < 0.85:
        return f"({gen_expr(rng, depth + 1)} ? {gen_expr(rng, depth + 1)} : " \
               f"{gen_expr(rng, depth + 1)})"
    if r < 0.92:
        return f"(int){gen_expr(rng, depth + 1)}"
    return f"min({gen_expr(rng, depth + 1)}, {gen_expr(rng, depth + 1)})"


_TYPES = ["float", "double", "int", "char", "short", "float2", "float4", "int4", "half",
          "unsigned long long", "S3", "uint8_t", "__half2", "T"]


def gen_kernel(rng: random.Random) -> str:
    """A kernel with shared/global accesses, loops, syncs and launches, random constants."""
    lines = []
    if rng.random() < 0.5:
        lines.append(f"#define N {rng.choice(_CONSTS[:14])}")
    if rng.random() < 0.5:
        lines.append(f"constexpr int S = {rng.choice(_CONSTS[:14])};")
    if rng.random() < 0.3:
        lines.append(f"#define TILE {rng.choice(['16', '32', '0', '-8', '1<<20'])}")
    lines.append("struct S3 { float x, y, z; };")
    templ = rng.random() < 0.3
    if templ:
        lines.append("template <typename T, int B>")
    lb = f"__launch_bounds__({rng.choice(['256', '1024', '32, 4', '0', '2048, 64'])}) " \
        if rng.random() < 0.3 else ""
    t = rng.choice(_TYPES)
    lines.append(f"__global__ void {lb}kern_{rng.randint(0, 9)}({t}* __restrict__ out, "
                 f"const {t}* in, int n) {{")
    for _ in range(rng.randint(1, 8)):
        r = rng.random()
        if r < 0.15:
            dims = "".join(f"[{rng.choice(_CONSTS[:12] + ['TILE', 'N'])}]"
                           for _ in range(rng.randint(1, 3)))
            lines.append(f"  __shared__ {rng.choice(_TYPES)} sh{dims};")
        elif r < 0.3:
            lines.append(f"  int i = {gen_expr(rng)};")
        elif r < 0.45:
            lines.append(f"  out[{gen_expr(rng)}] = in[{gen_expr(rng)}];")
        elif r < 0.55:
            lines.append(f"  sh[{gen_expr(rng)}] = out[{gen_expr(rng)}];")
        elif r < 0.65:
            lines.append(f"  for (int j = {gen_expr(rng)}; j < {gen_expr(rng)}; "
                         f"j += {gen_expr(rng)}) {{ out[{gen_expr(rng)}] += 1; }}")
        elif r < 0.72:
            lines.append(f"  if ({gen_expr(rng)}) {{ __syncthreads(); }}")
        elif r < 0.8:
            lines.append(f"  float v = {rng.choice(['__shfl_down', '__shfl', '__shfl_xor'])}"
                         f"(in[0], {gen_expr(rng)});")
        elif r < 0.85:
            lines.append(f"  reinterpret_cast<float4*>(out)[{gen_expr(rng)}].y = 0;")
        elif r < 0.9:
            lines.append("  extern __shared__ float dyn[]; dyn[threadIdx.x * "
                         f"{rng.choice(_CONSTS)}] = 0;")
        else:
            lines.append(f"  out[{gen_expr(rng)}].x = in[{gen_expr(rng)}].z;")
    lines.append("}")
    if rng.random() < 0.6:
        grid = gen_expr(rng)
        block = rng.choice(["256", "dim3(32, 8)", "dim3(16,16,4)", "0", "4096", "B",
                            gen_expr(rng)])
        smem = rng.choice(["", ", 0", ", 49152", ", 1<<30", ", -1"])
        targs = "<float, 128>" if templ else ""
        lines.append(f"void host(float* o, const float* i, int n) {{ "
                     f"kern_0{targs}<<<{grid}, {block}{smem}>>>(o, i, n); }}")
    return "\n".join(lines) + "\n"


def _py_literal(rng: random.Random, value: str) -> str:
    form = rng.randint(0, 5)
    if form == 0 and '"""' not in value and not value.endswith(("\\", '"')):
        return 'r"""' + value + '"""'
    if form == 1 and "'''" not in value and "\\" not in value and not value.endswith("'"):
        return "'''" + value + "'''"
    if form == 2 and len(value) > 2:
        mid = rng.randint(1, len(value) - 1)
        return "(" + repr(value[:mid]) + "\n    " + repr(value[mid:]) + ")"
    if form == 3:
        return ascii(value)
    return repr(value)


def gen_python(rng: random.Random, cuda: str) -> str:
    """A Python module that hands ``cuda`` to one of the recognised APIs, in many forms."""
    imports = rng.choice([
        ("import cupy as cp\n", "cp.RawKernel", "cp.RawModule"),
        ("import cupy\n", "cupy.RawKernel", "cupy.RawModule"),
        ("from cupy import RawKernel as RK, RawModule as RM\n", "RK", "RM"),
    ])
    head = imports[0] + "import textwrap\nfrom pycuda.compiler import SourceModule\n" \
        "from torch.utils.cpp_extension import load_inline\n"
    consts = f"N = {rng.choice(['32', '7', '0', '-1', '10**30', repr('x'), 'None'])}\n"
    style = rng.randint(0, 9)
    lit = _py_literal(rng, cuda)
    if style == 0:
        body = f"k = {imports[1]}({lit}, 'kern_0')\n"
    elif style == 1:
        body = f"CODE = {lit}\nk = {imports[2]}(code=CODE, options=('-O3', '-DN=4'))\n"
    elif style == 2:
        mid = len(cuda) // 2
        body = (f"CODE = {_py_literal(rng, cuda[:mid])}\nCODE += {_py_literal(rng, cuda[mid:])}"
                f"\nmod = SourceModule(CODE, options=['-use_fast_math'])\n"
                f"f = mod.get_function('kern_0')\nf(a, b, block=(32, 8, 1), grid=(N, 1))\n")
    elif style == 3:
        body = f"k = {imports[1]}(textwrap.dedent({lit}).strip(), 'kern_0')\n" \
               "k((N,), (256,), (a, b))\n"
    elif style == 4:
        templ = cuda.replace("{", "{{").replace("}", "}}")
        body = f"k = {imports[1]}({_py_literal(rng, templ + '// {N} {0} {x!r:>4}')}" \
               f".format(N, x=N), 'kern_0')\n"
    elif style == 5:
        templ = cuda.replace("%", "%%")
        body = f"k = {imports[1]}({_py_literal(rng, templ + '// %d %s')} % (N, 'a'), 'k')\n"
    elif style == 6:
        safe = cuda.replace("{", "{{").replace("}", "}}").replace("\\", "").replace("'", "")
        body = f"def make(T):\n    return {imports[1]}(f'''{safe} // {{N}} {{T}}''', 'k')\n"
    elif style == 7:
        body = f"mod = load_inline('ext', cpp_sources='', cuda_sources=[{lit}], " \
               "functions=['f'], extra_cuda_cflags=['-O3'])\n"
    elif style == 8:
        body = (f"from cupy import ElementwiseKernel\nk = ElementwiseKernel('float32 x, "
                f"float32 y', 'float32 z', {_py_literal(rng, 'z = x + y; ' + cuda[:200])}, "
                f"'ew', preamble={lit})\n")
    else:
        body = (f"from cupy import ReductionKernel\nk = ReductionKernel('T x', 'T y', 'x', "
                f"'a + b', 'y = a', '0', 'red', preamble={lit})\n")
    if rng.random() < 0.3:
        body = "class Holder:\n" + "".join("    " + ln + "\n" for ln in body.splitlines())
    return head + consts + body


def gen_ptxas(rng: random.Random) -> str:
    """A ptxas -v log with random names, numbers and architectures."""
    names = ["_Z4kernPf", "_Z5heavyPK6float4Pfi", "kern_0", "_ZN2ns4gemmILi128EEEvPKfPfi",
             "_Z1fv", "_Z", "_ZZZ", "''", "", "a b", "_Z3fooIJEEvv", "\u00e9", "x" * 300]
    archs = ["sm_90", "sm_80", "sm_75", "sm_90a", "compute_90", "sm_", "sm_1000", "sm_x"]
    num = lambda: rng.choice(["0", "1", "72", "255", "65536", "99999999999999999999", "-1",
                              "007", "1e5"])  # noqa: E731
    lines = []
    for _ in range(rng.randint(1, 30)):
        r = rng.random()
        nm = rng.choice(names)
        if r < 0.2:
            lines.append(f"ptxas info    : Compiling {rng.choice(['entry ', ''])}function "
                         f"'{nm}' for '{rng.choice(archs)}'")
        elif r < 0.35:
            lines.append(f"ptxas info    : Function properties for {nm}")
        elif r < 0.5:
            lines.append(f"    {num()} bytes stack frame, {num()} bytes spill stores, "
                         f"{num()} bytes spill loads")
        elif r < 0.7:
            lines.append(f"ptxas info    : Used {num()} registers, used {num()} barriers, "
                         f"{num()} bytes smem, {num()} bytes cmem[{num()}], {num()} bytes "
                         f"cumulative stack size")
        elif r < 0.8:
            lines.append(f"ptxas warning : Registers are spilled to local memory in function "
                         f"'{nm}', {num()} bytes spill stores, {num()} bytes spill loads")
        elif r < 0.88:
            lines.append(f"ptxas warning : Local memory used for function '{nm}', size of "
                         f"stack frame: {num()} bytes")
        elif r < 0.93:
            lines.append(f"ptxas info    : {num()} bytes gmem, {num()} bytes cmem[{num()}]")
        else:
            lines.append(rng.choice(["\x1b[0m", "nvcc warning : ...", "", "ptxas fatal",
                                     "ptxas info : Used registers", "\x1b[31mptxas\x1b["]))
    return "\n".join(lines) + rng.choice(["\n", "", "\r\n"])


# ---------------------------------------------------------------------------------------
# properties


def check_result(result: FileResult, text: str | None, kind: str) -> None:
    from cudalint.diagnostics import Diagnostic
    from cudalint.sources.base import SourceFile
    file = SourceFile(path=result.path, text=text or "", kind=kind)
    nrows = len(file.line_starts)
    n = len(file.text)
    for d in result.diagnostics:
        if d.code == "CL000" and "internal error" in d.message:
            _fail(f"rule crashed: {d.message}")
        if d.code == "CL000" and any(w in d.message for w in ISOLATED):
            # the run survived it (issue 25), but an abort or a budget hit is a finding
            _fail(f"isolated failure: {d.message}")
        if not (1 <= d.row <= nrows and 1 <= d.end_row <= nrows):
            _fail(f"{d.code} row {d.row}-{d.end_row} outside 1..{nrows}")
        if (d.end_row, d.end_column) < (d.row, d.column):
            _fail(f"{d.code} ends before it starts: {d.row}:{d.column}-{d.end_row}:"
                  f"{d.end_column}")
        for row, col in ((d.row, d.column), (d.end_row, d.end_column)):
            if not 1 <= col <= len(file.line_text(row)) + 1:
                _fail(f"{d.code} column {col} outside row {row} "
                      f"(length {len(file.line_text(row))})")
        if not 0 <= d.start_offset <= d.end_offset <= n:
            _fail(f"{d.code} offsets {d.start_offset}..{d.end_offset} outside 0..{n}")
        if text is not None and file.position(d.start_offset) != (d.row, d.column):
            _fail(f"{d.code} start offset {d.start_offset} is "
                  f"{file.position(d.start_offset)}, not ({d.row}, {d.column})")
        if text is not None and file.position(d.end_offset) != (d.end_row, d.end_column):
            _fail(f"{d.code} end offset {d.end_offset} is "
                  f"{file.position(d.end_offset)}, not ({d.end_row}, {d.end_column})")
        if d.noqa_row is not None and not 1 <= d.noqa_row <= nrows:
            _fail(f"{d.code} noqa row {d.noqa_row} outside the file")
        if d.fix is not None:
            spans = sorted((e.start, e.end) for e in d.fix.edits)
            for s, e in spans:
                if not 0 <= s <= e <= n:
                    _fail(f"{d.code} fix edit {s}..{e} outside 0..{n}")
            for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
                if s2 < e1:
                    _fail(f"{d.code} fix edits overlap: {s1}..{e1} and {s2}..{e2}")
            if len(d.fix_edits_rc) != len(d.fix.edits):
                _fail(f"{d.code} fix has {len(d.fix.edits)} edits but "
                      f"{len(d.fix_edits_rc)} row/column edits")
        # JSON: strict (no NaN / Infinity), and the cache form reads back the same
        try:
            out = json.dumps(d.to_json(), allow_nan=False)
            json.loads(out)
            cached = json.loads(json.dumps(d.to_cache(), allow_nan=False))
        except (TypeError, ValueError) as exc:
            _fail(f"{d.code} does not serialise to JSON: {exc}")
        back = Diagnostic.from_json(cached)
        again = json.loads(json.dumps(back.to_cache()))
        if again != cached or back.fix != d.fix or back.suppressed != d.suppressed:
            _fail(f"{d.code} changes through the cache: {cached} != {again}")
    for row, line in result.lines.items():
        if text is not None and file.line_text(row) != line:
            _fail(f"excerpt of row {row} is not the file's row")


def check_python_positions(text: str) -> None:
    from cudalint.sources.python.extract import extract_python_units
    ex = extract_python_units(text, "fuzz.py")
    n = len(text)
    for off, _msg in ex.notes:
        if not 0 <= off <= n:
            _fail(f"note offset {off} outside 0..{n}")
    for k in ex.kernels:
        if len(k.char_map) != len(k.text) or len(k.verbatim) != len(k.text):
            _fail(f"char_map/verbatim length {len(k.char_map)}/{len(k.verbatim)} != text "
                  f"length {len(k.text)}")
        if not 0 <= k.call_start <= k.call_end <= n:
            _fail(f"call span {k.call_start}..{k.call_end} outside 0..{n}")
        for i, m in enumerate(k.char_map):
            if m < -1 or m >= n:
                _fail(f"kernel char {i} maps to {m}, outside the file")
            if m >= 0 and k.verbatim[i] and text[m] != k.text[i]:
                _fail(f"verbatim kernel char {i} {k.text[i]!r} maps to file char {m} "
                      f"{text[m]!r}")
        for s, e, _raw, _q in k.pieces:
            if not 0 <= s <= e <= n:
                _fail(f"literal piece {s}..{e} outside 0..{n}")
        for o in k.options:
            if o.start != -1 and not 0 <= o.start <= o.end <= n:
                _fail(f"option {o!r} span {o.start}..{o.end} outside the file")
        for la in k.launches:
            if not 0 <= la.start <= la.end <= n:
                _fail(f"launch span {la.start}..{la.end} outside the file")


def _text_of(data: bytes) -> str | None:
    text, _ = decode(data)
    return text


@quiet
def check_cuda(data: bytes, notices: bool = False, ptxas_log: Path | None = None) -> None:
    """``.cu`` bytes through ``lint_bytes`` with every rule."""
    RUNS["cuda"] += 1
    settings = ALL_NOTICES if notices else ALL
    if ptxas_log is not None:
        settings = replace(settings, ptxas=replace(settings.ptxas, log=(str(ptxas_log),)))
    result = lint_bytes("fuzz.cu", data, settings, "cuda")
    check_result(result, _text_of(data), "cuda")


@quiet
def check_cuda_text(text: str, notices: bool = False) -> None:
    """A str (an editor buffer: may hold lone surrogates, NULs) through ``lint_text``."""
    RUNS["cuda_text"] += 1
    result = lint_text("fuzz.cu", text, ALL_NOTICES if notices else ALL, "cuda")
    check_result(result, text, "cuda")


@quiet
def check_python(data: bytes, notices: bool = False) -> None:
    """A Python file through the extraction and the engine (kind "python")."""
    RUNS["python"] += 1
    text = _text_of(data)
    if text is not None:
        check_python_positions(text)
    result = lint_bytes("fuzz.py", data, ALL_NOTICES if notices else ALL, "python")
    check_result(result, text, "python")


@quiet
def check_ptxas(data: bytes, cu: bytes | None = None, tmpdir: Path | None = None) -> None:
    """A ptxas log through the parser, and (with ``cu``) through CL301-CL303."""
    from cudalint.analysis.ptxas import ptxas_log as pl
    RUNS["ptxas"] += 1
    text = data.decode("utf-8", "replace")
    for rec in pl.parse_log(text, "fuzz.log"):
        for v in (rec.registers, rec.barriers, rec.smem, rec.stack_frame, rec.spill_stores,
                  rec.spill_loads, *rec.cmem.keys(), *rec.cmem.values()):
            if v is not None and (not isinstance(v, int) or v < 0):
                _fail(f"record value {v!r} is not a count")
        rec.demangled, rec.base_name, rec.display_name, rec.param_count  # noqa: B018
    if cu is None:
        return
    own = tmpdir is None
    folder = Path(tempfile.mkdtemp(prefix="cudalint-fuzz-")) if own else tmpdir
    try:
        log = Path(tempfile.mkstemp(dir=folder, suffix=".ptxas.log")[1])
        log.write_bytes(data)
        settings = replace(ALL, ptxas=replace(ALL.ptxas, log=(str(log),)),
                           root=str(folder))
        result = lint_bytes("fuzz.cu", cu, settings, "cuda")
        check_result(result, _text_of(cu), "cuda")
        log.unlink()
    finally:
        if own:
            import shutil
            shutil.rmtree(folder, ignore_errors=True)


@quiet
def check_config(data: bytes, name: str = "pyproject.toml", folder: Path | None = None,
                 cu: bytes = b"__global__ void k(float* p){ p[threadIdx.x * 32] = 0; }\n"
                 ) -> Settings | None:
    """A config file: loading raises nothing but ConfigError; what loads lints a file."""
    RUNS["config"] += 1
    own = folder is None
    folder = Path(tempfile.mkdtemp(prefix="cudalint-fuzz-")) if own else folder
    try:
        path = folder / name
        path.write_bytes(data)
        try:
            settings = load_config_file(path)
            resolved = ConfigResolver().for_path(folder / "k.cu")
        except ConfigError:
            return None
        if settings is not None:
            for s in (settings, resolved, replace(settings, select=("ALL",))):
                s.fingerprint()
                result = lint_bytes(str(folder / "k.cu"), cu, s, "cuda")
                check_result(result, _text_of(cu), "cuda")
        return settings
    finally:
        if own:
            import shutil
            shutil.rmtree(folder, ignore_errors=True)


@quiet
def check_fix(data: bytes, kind: str = "cuda", unsafe: bool = True) -> None:
    """``fix_text``: parses no worse than the input, idempotent, edits stay in the file."""
    from cudalint.fixes import fix_text, parse_quality
    RUNS[f"fix_{kind}"] += 1
    text = _text_of(data)
    if text is None:
        return
    path = "fuzz.cu" if kind == "cuda" else "fuzz.py"
    # as `cudalint --fix` runs it: each distinct text analysed once (engine.reuse_lints)
    with reuse_lints():
        once, n = fix_text(path, text, ALL, kind, unsafe)
        if n == 0 and once != text:
            _fail("text changed without a fix")
        if parse_quality(once, kind) > parse_quality(text, kind):
            _fail("the fixed text parses worse than the input")
        if n:
            twice, n2 = fix_text(path, once, ALL, kind, unsafe)
            if twice != once:
                _fail(f"fix is not idempotent ({n2} more fixes on the second run)")
        check_result(lint_text(path, once, ALL, kind), once, kind)


@quiet
def check_notebook(data: bytes, folder: Path) -> None:
    """A notebook named on the command line and found in a folder (read as Python since
    issue 16, positions in (cell, row, column)): discovery and the runner raise nothing,
    no rule crashes, nothing dies in isolation, every diagnostic is strict JSON."""
    from cudalint.discovery import discover
    from cudalint.runner import run
    RUNS["notebook"] += 1
    path = folder / "nb.ipynb"
    path.write_bytes(data)
    resolver = ConfigResolver(overrides={"select": ("ALL",)})
    for named in (str(path), str(folder)):
        targets = discover([named], resolver, skipped=[])
        for result in run(targets, use_cache=False, jobs=1):
            for d in result.diagnostics:
                if d.code == "CL000" and "internal error" in d.message:
                    _fail(f"rule crashed: {d.message}")
                if d.code == "CL000" and any(w in d.message for w in ISOLATED):
                    _fail(f"isolated failure: {d.message}")
                try:
                    json.loads(json.dumps(d.to_json(), allow_nan=False))
                except (TypeError, ValueError) as exc:
                    _fail(f"{d.code} does not serialise to JSON: {exc}")


def check_cache_entry(data: bytes, folder: Path) -> None:
    """Whatever bytes the cache index holds, reading it gives results or a miss, never
    raises."""
    from cudalint import __version__
    from cudalint.cache import Cache
    RUNS["cache"] += 1
    cache = Cache(folder)
    cache.dir.mkdir(parents=True, exist_ok=True)
    cache.index_path.write_bytes(data)
    assert __version__
    for name in list(cache.entries):
        entry = cache.entry(name)
        got = cache.result(entry) if entry is not None else None
        if got is not None:
            from cudalint.cache import CachedResult
            if not isinstance(got, (FileResult, CachedResult)):
                _fail(f"cache returned {type(got).__name__}")
            for d in got.diagnostics:
                d.to_json()
    cache.get("f" * 64)


def float_ok(x) -> bool:
    return not (isinstance(x, float) and (math.isnan(x) or math.isinf(x)))


def fuzz_scale() -> int:
    return 10 if os.environ.get("CUDALINT_FUZZ_LONG") else 1


# ---------------------------------------------------------------------------------------
# build files: setup.py, CMakeLists.txt, pyproject.toml (cudalint/analysis/buildflags.py)

def _named(names: tuple[str, ...], suffixes: tuple[str, ...] = ()) -> list[Path]:
    out = []
    for base in (FIXTURES, EXAMPLES, REGRESSIONS):
        if base.is_dir():
            out.extend(p for p in base.rglob("*") if p.is_file() and (
                p.name in names or p.name.endswith(suffixes)) and
                ".cudalint_cache" not in p.parts)
    return sorted(out)


CMAKE_SEEDS = _read_all(_named(("CMakeLists.txt",), (".cmake",)))
SETUP_SEEDS = _read_all([p for p in _named((), (".py",)) if "CL401" in p.parts or
                         p.name == "setup.py" or p.parent.name == "build_setup"])
BUILD_TOML_SEEDS = _read_all(_named(("pyproject.toml",)))

FLAG_WORDS = ["--use_fast_math", "-use_fast_math", "--use-fast-math", "-ftz=true", "-ftz=false",
              "-ftz", "-prec-div=false", "-prec-sqrt=false", "-fmad=false", "-fmad",
              "--prec-div", "false", "-Xptxas=-v", "-Xcompiler", "-ffast-math", "-O3",
              "-DN=4", "-D", "-I", "-lineinfo", "--gpu-architecture=sm_90", "-arch",
              "sm_80", "-gencode", "arch=compute_80,code=sm_80", "--maxrregcount=32",
              "-std=c++17", "--ftz=true", "-ftz=maybe", "=", "--", "-", "\"", "'", "\\",
              "${X}", "$<$<COMPILE_LANGUAGE:CUDA>:--use_fast_math>", "\\N{BULLET}",
              "\\N{nope}", "\\x", "\\u12", "\\U0001F600", "é", "\t"]


def gen_cmake(rng: random.Random) -> str:
    w = lambda: " ".join(rng.choice(FLAG_WORDS) for _ in range(rng.randint(0, 4)))  # noqa
    out = ["cmake_minimum_required(VERSION 3.18)", "project(p LANGUAGES CXX CUDA)"]
    for _ in range(rng.randint(1, 12)):
        r = rng.randint(0, 14)
        out.append([
            f'set(CMAKE_CUDA_FLAGS "${{CMAKE_CUDA_FLAGS}} {w()}")',
            f'string(APPEND CMAKE_CUDA_FLAGS " {w()}")',
            f"add_compile_options({w()})",
            f"target_compile_options(t{rng.randint(0, 2)} PRIVATE {w()})",
            f"add_library(t{rng.randint(0, 2)} SHARED k.cu ${{SRCS}} a/b.cu)",
            f"set(SRCS k.cu {w()})",
            f"cuda_add_library(t{rng.randint(0, 2)} k.cu OPTIONS {w()})",
            f"list(APPEND CUDA_NVCC_FLAGS {w()})",
            "if(WIN32)", "endif()", f"set(CMAKE_CUDA_FLAGS_RELEASE [[{w()}]])",
            f"set(CMAKE_CUDA_FLAGS [=[{w()}]=])", f"#[[ {w()} ]]",
            f"target_sources(t0 PRIVATE {w()} k.cu)",
            f"add_executable(t{rng.randint(0, 2)} k.cu)",
        ][r])
    return "\n".join(out) + "\n"


def gen_build_toml(rng: random.Random) -> str:
    w = lambda: " ".join(rng.choice(FLAG_WORDS) for _ in range(rng.randint(0, 4)))  # noqa
    q = lambda s: rng.choice(['"%s"', "'%s'", '"""%s"""', "'''%s'''"]) % s  # noqa
    out = ["[project]", "name = 'p'"]
    for _ in range(rng.randint(1, 8)):
        r = rng.randint(0, 7)
        out.append([
            f"[tool.scikit-build]\ncmake.args = [{q('-DCMAKE_CUDA_FLAGS=' + w())}, '-G']",
            f"[tool.scikit-build.cmake.define]\nCMAKE_CUDA_FLAGS = {q(w())}",
            f"[tool.py-build-cmake.cmake]\noptions = {{ CMAKE_CUDA_FLAGS = {q(w())} }}",
            f"[tool.cibuildwheel.environment]\nCUDAFLAGS = {q(w())}",
            f"CMAKE_CUDA_FLAGS_RELEASE = {q(w())}",
            f"args = [\n  {q('-DCUDA_NVCC_FLAGS:STRING=' + w())},\n]",
            f"# CMAKE_CUDA_FLAGS = {q(w())}",
            f"x = {q(w())} # {q(w())}",
        ][r])
    return "\n".join(out) + "\n"


def gen_setup(rng: random.Random) -> str:
    lit = lambda: repr([rng.choice(FLAG_WORDS) for _ in range(rng.randint(0, 3))])  # noqa
    out = ["from setuptools import setup",
           "from torch.utils.cpp_extension import CUDAExtension, load, BuildExtension"]
    for _ in range(rng.randint(1, 8)):
        r = rng.randint(0, 9)
        out.append([
            f"FLAGS = {lit()}", f"FLAGS += {lit()}", f"FLAGS.extend({lit()})",
            f"FLAGS.append({rng.choice(FLAG_WORDS)!r})", f"FLAGS.insert(0, {lit()})",
            f"args = {{'cxx': ['-O3'], 'nvcc': FLAGS + {lit()}}}",
            f"args['nvcc'] = {lit()}",
            f"m = load('m', ['k.cu'], extra_cuda_cflags={lit()})",
            f"FLAGS = {rng.choice(FLAG_WORDS)!r}.split()",
            f"if X:\n    FLAGS = {lit()}\nelse:\n    FLAGS = [*FLAGS, *{lit()}]",
        ][r])
    out.append("setup(name='p', ext_modules=[CUDAExtension('p._C', sources=['k.cu', "
               f"'b.cu'], extra_compile_args={rng.choice(['args', 'FLAGS', lit()])})],"
               " cmdclass={'build_ext': BuildExtension})")
    return "\n".join(out) + "\n"


BUILD_CU = (b"__global__ void k(float* x, float y) { x[threadIdx.x] = x[threadIdx.x] / y"
            b" + sqrtf(y) * __expf(y); }\n")


@quiet
def check_build(data: bytes, name: str, folder: Path | None = None) -> None:
    """A build file: its model (flags inside the file), the file linted as its own kind,
    and a ``.cu`` beside it linted with the flags the file sets."""
    from cudalint.project.build_cmake import cmake_builds
    from cudalint.project.build_python import python_builds
    from cudalint.project.build_toml import toml_builds
    from cudalint.sources.base import file_kind
    kind = file_kind(name) or "python"
    RUNS[f"build_{kind}"] += 1
    text = _text_of(data)
    own = folder is None
    folder = Path(tempfile.mkdtemp(prefix="cudalint-fuzz-")) if own else folder
    try:
        if text is not None:
            # and as an editor buffer (the same text again when it has no "é": once)
            for t in dict.fromkeys((text, text.replace("é", "\udce9"))):
                builds = (cmake_builds(t, name) if kind == "cmake" else
                          toml_builds(t, name) if kind == "toml" else
                          python_builds(t, name))
                for b in builds:
                    b.settings, b.units()  # noqa: B018
                    for f in b.flags:
                        if f.start != -1 and not 0 <= f.start <= f.end <= len(t):
                            _fail(f"flag {f.text!r} span {f.start}..{f.end} outside "
                                  f"0..{len(t)}")
                        if f.start != -1 and f.end - f.start == len(f.text) and \
                                t[f.start:f.end] != f.text and "\\" not in t[f.start:f.end]:
                            _fail(f"flag {f.text!r} points at {t[f.start:f.end]!r}")
                    if b.call_start != -1 and not 0 <= b.call_start <= b.call_end <= len(t):
                        _fail(f"build call span {b.call_start}..{b.call_end} outside")
                check_result(lint_text(name, t, ALL, kind), t, kind)
        path = folder / name
        path.write_bytes(data)
        check_result(lint_bytes(str(path), data, ALL, kind), text, kind)
        cu = folder / "k.cu"
        cu.write_bytes(BUILD_CU)
        check_result(lint_bytes(str(cu), BUILD_CU, ALL, "cuda"), BUILD_CU.decode(), "cuda")
    finally:
        if own:
            import shutil
            shutil.rmtree(folder, ignore_errors=True)
