"""Hostile inputs of issue 25, for the fuzz campaign (``fuzz/long_run.py``): what made
cudalint abort, blow up or loop on 2026-11-24, generated in many variants.

* huge literals where a shape is read: launch configurations (``<<<g, b, smem>>>``,
  ``dim3``), ``__launch_bounds__``, ``#define``/``constexpr`` values used as shared-array
  sizes, loop bounds and launch arguments, PyCUDA ``block=``/``grid=`` and CuPy launches;
* doubling macro chains (``#define M5 (M4 + M4)``), object- and function-like, with a
  device function that calls ``pow`` (the unit then reaches libclang);
* Python templates: kernels built by ``%``-format, ``str.format``, f-strings and
  ``string.Template`` with huge values substituted;
* Jupyter notebooks (``.ipynb`` JSON with code cells, ``%%writefile`` CUDA cells);
* byte flips, truncation and splices of corpus files (``CUDALINT_FUZZ_CORPUS``: a folder
  of real projects, e.g. /tmp/real; files under 100 KB).

Every generator is a deterministic function of its ``random.Random``.
"""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

HUGE = ["99999999999", "2147483647", "2147483648", "4294967295", "4294967296", "-1", "0",
        "1025", "65", "65536", "0x7fffffffffffffff", "18446744073709551615",
        "18446744073709551616", "99999999999999999999", "(1 << 62)", "(1ULL << 63)",
        "(1 << 64)", "(1 + 34359738368)", "(1 + 8589934592)", "(1 + 99999999999999999999)",
        "-2147483648", "(-1u)", "1e30", "(2147483647 * 2147483647)", "(1 << 31)", "1024",
        "(0x100000000 >> 1)", "999999999999999999999999999999999999999", "(~0ULL)",
        "(N * N)", "(N << N)", "sizeof(float) * 99999999999"]
SMALL = ["1", "2", "32", "64", "128", "256", "512", "1024"]


def huge(rng: random.Random) -> str:
    return rng.choice(HUGE) if rng.random() < 0.8 else rng.choice(SMALL)


_BODIES = [
    "  int t = threadIdx.x + blockDim.x * threadIdx.y;\n  s[t] = in[t];\n  __syncthreads();\n"
    "  out[t] = s[(t + 1) % BLOCK];\n",
    "  s[threadIdx.x] = in[blockIdx.x * BLOCK + threadIdx.x];\n  if (threadIdx.x < 32) "
    "s[threadIdx.x] += s[threadIdx.x + 32];\n  out[blockIdx.x] = s[0];\n",
    "  for (int i = 0; i < N; ++i) { s[i][threadIdx.x] = in[i]; if (threadIdx.x > i) "
    "s[threadIdx.x][i] /= s[i][i]; }\n",
    "  float v = in[threadIdx.x];\n  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync"
    "(0xffffffff, v, o);\n  out[threadIdx.x] = v * 0.1;\n",
    "  out[threadIdx.x * N + threadIdx.y] = pow(in[threadIdx.x], 2.0) * 0.5;\n",
]


def gen_launch(rng: random.Random) -> str:
    """A kernel whose block/grid shape, launch bounds or shared sizes come from huge or
    absurd constants, by every route the analysis reads them."""
    lines = []
    if rng.random() < 0.7:
        lines.append(f"#define BLOCK {huge(rng)}")
    else:
        lines.append(f"constexpr int BLOCK = {huge(rng)};")
    lines.append(f"#define N {huge(rng)}" if rng.random() < 0.6 else
                 f"static const int N = {huge(rng)};")
    if rng.random() < 0.3:
        lines.append(f"#define SMEM {huge(rng)}")
    bounds = ""
    r = rng.random()
    if r < 0.4:
        bounds = f"__launch_bounds__({huge(rng)}) "
    elif r < 0.6:
        bounds = f"__launch_bounds__({huge(rng)}, {huge(rng)}) "
    elif r < 0.7:
        bounds = "__launch_bounds__(BLOCK) "
    dims = rng.choice(["[BLOCK]", "[N]", f"[{huge(rng)}]", "[N][N]", "[BLOCK][N + 1]",
                       f"[{huge(rng)}][{huge(rng)}]", "[32][33]"])
    templ = rng.random() < 0.25
    if templ:
        lines.append("template <int B>")
    lines.append(f"__global__ void {bounds}k(float* out, const float* in) {{")
    lines.append(f"  __shared__ float s{dims};")
    if rng.random() < 0.3:
        lines.append("  extern __shared__ float dyn[];\n  dyn[threadIdx.x] = 0;")
    lines.append(rng.choice(_BODIES).rstrip("\n"))
    lines.append("}")
    block = rng.choice(["BLOCK", huge(rng), f"dim3({huge(rng)}, {huge(rng)}, {huge(rng)})",
                        f"dim3({huge(rng)})", "dim3(BLOCK, BLOCK)", "N"])
    grid = rng.choice(["1", huge(rng), f"dim3({huge(rng)}, {huge(rng)})", "N"])
    smem = rng.choice(["", ", 0", ", SMEM" if "#define SMEM" in "\n".join(lines) else "",
                       f", {huge(rng)}",
                       f", {huge(rng)}, 0"])
    targs = f"<{huge(rng)}>" if templ else ""
    launch = f"k{targs}<<<{grid}, {block}{smem}>>>(o, i);"
    if rng.random() < 0.2:
        launch = (f"dim3 b({huge(rng)}, {huge(rng)}); dim3 g({huge(rng)}); "
                  f"k{targs}<<<g, b>>>(o, i);")
    lines.append(f"void host(float* o, const float* i) {{ {launch} }}")
    return "\n".join(lines) + "\n"


def gen_macro_chain(rng: random.Random, depth: int | None = None) -> str:
    """``#define M1 (M0 + M0)`` ... ``M<depth>`` used as a shared size, a loop bound or a
    launch argument, next to a device function that calls ``pow``."""
    depth = depth if depth is not None else rng.choice([4, 8, 12, 16, 18, 20, 22, 24, 26,
                                                        30, 40, 64])
    form = rng.randint(0, 4)
    lines = [f"#define M0 {rng.choice(['1', '2', 'x', '(1.0)', huge(rng)])}"]
    for i in range(1, depth + 1):
        a = f"M{i - 1}"
        if form == 0:
            lines.append(f"#define M{i} ({a} + {a})")
        elif form == 1:
            lines.append(f"#define M{i} ({a} * {a})")
        elif form == 2:
            lines.append(f"#define M{i} {a} {a}")
        elif form == 3:
            lines.append(f"#define M{i}(x) M{i - 1}(x) M{i - 1}(x)" if i > 1 else
                         "#define M1(x) x x")
        else:
            lines.append(f"#define M{i} ({a} << 1)")
    top = f"M{depth}" if form != 3 else f"M{depth}(1)"
    if form == 3:
        lines[0] = "#define M0(x) x"
    use = rng.choice([f"__shared__ float s[{top}];", f"constexpr int K = {top};",
                      f"#define BLOCK {top}", f"__shared__ float s[32]; int q = {top};"])
    lines.append(use if use.startswith("#") else "")
    lines.append("__device__ float f(float x) { return pow(x, 2.0); }")
    lines.append("__global__ void k(float* y) {")
    if not use.startswith("#"):
        lines.append("  " + use)
    lines.append(f"  for (int i = 0; i < {top}; ++i) y[threadIdx.x] += f(y[i]) * 0.1;")
    lines.append("}")
    if rng.random() < 0.5:
        lines.append(f"void host(float* y) {{ k<<<1, {top}>>>(y); }}")
    return "\n".join(lines) + "\n"


def gen_template_python(rng: random.Random, cuda: str | None = None) -> str:
    """A Python module that builds a kernel from a template (``%``, ``format``, f-string,
    ``string.Template``) with huge values, and launches it through CuPy or PyCUDA."""
    if cuda is None:
        cuda = gen_launch(rng) if rng.random() < 0.6 else gen_macro_chain(rng)
    b, n = huge(rng), huge(rng)
    style = rng.randint(0, 4)
    src = cuda.replace("#define BLOCK", "#define BLOCK_UNUSED")
    head = ("import cupy as cp\nimport string\nfrom pycuda.compiler import SourceModule\n"
            f"B = {b if b.lstrip('-').isdigit() else '10**11'}\nN = {n if n.isdigit() else '7'}\n")
    if style == 0:
        body = src.replace("%", "%%")
        code = f"CODE = '''#define BLOCK %(B)d\n{body}''' % {{'B': B, 'N': N}}\n"
    elif style == 1:
        body = src.replace("{", "{{").replace("}", "}}")
        code = f"CODE = '''#define BLOCK {{B}}\n{body}'''.format(B=B, N=N)\n"
    elif style == 2:
        body = src.replace("{", "{{").replace("}", "}}").replace("\\", "")
        code = f"CODE = f'''#define BLOCK {{B}}\n{body}'''\n"
    elif style == 3:
        body = src.replace("$", "$$")
        code = f"CODE = string.Template('''#define BLOCK $B\n{body}''').substitute(B=B)\n"
    else:
        code = f"CODE = '#define BLOCK ' + str(B) + '\\n' + {src!r}\n"
    launch = rng.choice([
        f"k = cp.RawKernel(CODE, 'k')\nk(({huge(rng)},), (B,), (x, y))\n",
        f"k = cp.RawKernel(CODE, 'k')\nk((1,), ({huge(rng)}, {huge(rng)}), (x,), "
        f"shared_mem={huge(rng)})\n",
        f"mod = SourceModule(CODE)\nf = mod.get_function('k')\nf(x, y, block=(B, 1, 1), "
        f"grid=({huge(rng)}, 1))\n",
        f"mod = SourceModule(CODE)\nf = mod.get_function('k')\nf(x, block=({huge(rng)}, "
        f"{huge(rng)}, {huge(rng)}), grid=(1, 1))\n",
        "m = cp.RawModule(code=CODE, options=('-DN=%d' % N,))\n",
    ])
    return head + code + launch


def gen_notebook(rng: random.Random, cuda: str | None = None) -> bytes:
    """An ``.ipynb``: code cells handing kernels to CuPy, ``%%writefile`` CUDA cells,
    markdown, outputs; sometimes malformed JSON or nbformat."""
    cuda = cuda if cuda is not None else (gen_launch(rng) if rng.random() < 0.5
                                          else gen_macro_chain(rng, rng.choice([4, 24])))
    cells = []
    for _ in range(rng.randint(0, 6)):
        r = rng.random()
        if r < 0.35:
            text = gen_template_python(rng, cuda)
            cells.append({"cell_type": "code", "metadata": {}, "execution_count": None,
                          "outputs": [], "source": text.splitlines(True)})
        elif r < 0.6:
            cells.append({"cell_type": "code", "metadata": {}, "execution_count": 1,
                          "outputs": [{"output_type": "stream", "name": "stdout",
                                       "text": ["Writing k.cu\n"]}],
                          "source": ("%%writefile k.cu\n" + cuda).splitlines(True)})
        elif r < 0.8:
            cells.append({"cell_type": "markdown", "metadata": {},
                          "source": ["# kernels\n", "```cuda\n", cuda, "```\n"]})
        else:
            cells.append({"cell_type": rng.choice(["raw", "code", "??"]),
                          "source": cuda if rng.random() < 0.5 else [cuda, 7, None]})
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}},
          "nbformat": rng.choice([4, 3, 99, "4"]), "nbformat_minor": 5}
    out = json.dumps(nb, indent=rng.choice([None, 1])).encode()
    if rng.random() < 0.3:
        out = out[:rng.randint(0, len(out))]
    return out


def corpus(limit: int = 100 * 1024) -> dict[str, list[bytes]]:
    """Real files from ``CUDALINT_FUZZ_CORPUS`` by kind ("cuda", "python"), each under
    ``limit`` bytes; empty lists without it."""
    out: dict[str, list[bytes]] = {"cuda": [], "python": []}
    root = os.environ.get("CUDALINT_FUZZ_CORPUS")
    if not root or not os.path.isdir(root):
        return out
    for p in sorted(Path(root).rglob("*")):
        kind = "cuda" if p.suffix in (".cu", ".cuh") else "python" if p.suffix == ".py" \
            else None
        try:
            if kind and p.is_file() and p.stat().st_size < limit:
                data = p.read_bytes()
                if kind == "cuda" or any(w in data for w in (b"RawKernel", b"SourceModule",
                                                             b"load_inline", b"RawModule")):
                    out[kind].append(data)
        except OSError:
            continue
    return out


def corrupt(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    """Byte flips, truncation, a splice of two files, a duplicated stretch."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        n = len(buf)
        if r < 0.35 and n:
            for _ in range(rng.randint(1, 16)):
                buf[rng.randrange(n)] ^= 1 << rng.randrange(8)
        elif r < 0.5:
            del buf[rng.randint(0, n):]
        elif r < 0.75 and others:
            other = rng.choice(others)
            a = rng.randint(0, n)
            b = rng.randint(0, len(other))
            buf = buf[:a] + bytearray(other[b:])
        elif r < 0.9 and n:
            a = rng.randrange(n)
            b = min(n, a + rng.randint(1, 2000))
            buf[b:b] = bytes(buf[a:b]) * rng.randint(1, 8)
        else:
            i = rng.randint(0, n)
            buf[i:i] = rng.choice([b"__launch_bounds__(2147483647)", b"<<<1, 99999999999>>>",
                                   b"#define N (1 + 34359738368)\n", b"[N]", b"\xff\xfe",
                                   b"block=(99999999999, 1, 1)", b"\x00", b"{" * 500])
    return bytes(buf[:256 * 1024])
