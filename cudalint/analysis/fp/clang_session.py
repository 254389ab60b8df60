"""The libclang session of the FP analysis: the CUDA shim, the index, the parse of one unit,
and the guards that keep a parse from crashing or running away.

The unit is parsed as CUDA device code (``-x cuda --cuda-device-only -nocudainc
-nocudalib``) with a small shim of CUDA keywords, built-in variables and math-function
overloads in place of the toolkit's headers, so no CUDA installation is needed. The shim
is precompiled once (a PCH, kept in the temp directory per user and version) where libclang allows it. Parses run on a thread
whose stack is sized by the source (:func:`_stack_for`, :func:`_on_big_stack`): clang's
parser recurses once per nesting level. :mod:`fptypes` walks the translation units this
module produces; nothing here knows what the rules look for.
"""
from __future__ import annotations

import os
import re
from functools import lru_cache

_DOUBLE_MATH = ("pow", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p",
                "sqrt", "cbrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
                "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "lgamma",
                "tgamma", "hypot", "fmod", "remainder", "fabs", "floor", "ceil", "round",
                "trunc", "rint", "fmin", "fmax", "fma", "copysign", "sinpi", "cospi", "erfinv",
                "erfcinv", "normcdf", "normcdfinv", "rcbrt", "exp10", "ldexp", "frexp",
                "modf", "nearbyint", "fdim")
_TWO_ARG = {"pow", "atan2", "hypot", "fmod", "remainder", "fmin", "fmax", "copysign", "fdim"}
_THREE_ARG = {"fma"}


def _shim() -> str:
    lines = [
        "#define __global__ __attribute__((global))",
        "#define __device__ __attribute__((device))",
        "#define __host__ __attribute__((host))",
        "#define __shared__ __attribute__((shared))",
        "#define __constant__ __attribute__((constant))",
        "#define __managed__ __attribute__((managed))",
        "#define __forceinline__ __inline__ __attribute__((always_inline))",
        "#define __noinline__ __attribute__((noinline))",
        "#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))",
        "#define __restrict__ __restrict",
        "#define __CUDACC__ 1",
        "#define __CUDA_ARCH__ 900",
        "#define M_PI 3.14159265358979323846",
        "#define M_E 2.7182818284590452354",
        "#define M_SQRT2 1.41421356237309504880",
        "#define M_LN2 0.69314718055994530942",
        "#define M_PI_2 1.57079632679489661923",
        "#define INFINITY __builtin_inff()",
        "#define NAN __builtin_nanf(\"\")",
        "#define FLT_MAX 3.402823466e+38F",
        "#define FLT_EPSILON 1.192092896e-07F",
        "#define FLT_MIN 1.175494351e-38F",
        "typedef __SIZE_TYPE__ size_t;",
        "struct uint3 { unsigned x, y, z; };",
        "struct dim3 { unsigned x, y, z; __host__ __device__ dim3(unsigned a = 1, "
        "unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };",
        "extern const __device__ uint3 threadIdx; extern const __device__ uint3 blockIdx;",
        "extern const __device__ dim3 blockDim; extern const __device__ dim3 gridDim;",
        "extern const __device__ int warpSize;",
        "struct float2 { float x, y; }; struct float3 { float x, y, z; };",
        "struct float4 { float x, y, z, w; }; struct double2 { double x, y; };",
        "struct int2 { int x, y; }; struct int4 { int x, y, z, w; };",
        "typedef struct CUstream_st* cudaStream_t;",
        "extern \"C\" int cudaConfigureCall(dim3, dim3, size_t = 0, cudaStream_t = 0);",
        "extern \"C\" unsigned __cudaPushCallConfiguration(dim3, dim3, size_t = 0, "
        "void* = 0);",
        "__device__ void __syncthreads(); __device__ void __syncwarp(unsigned = 0xffffffff);",
        "__device__ void __threadfence();",
        "template <class T> __device__ T __shfl_sync(unsigned, T, int, int = 32);",
        "template <class T> __device__ T __shfl_down_sync(unsigned, T, unsigned, int = 32);",
        "template <class T> __device__ T __shfl_up_sync(unsigned, T, unsigned, int = 32);",
        "template <class T> __device__ T __shfl_xor_sync(unsigned, T, int, int = 32);",
        "template <class T> __device__ T atomicAdd(T*, T);",
        "template <class T> __device__ T __ldg(const T*);",
        "template <class T> __host__ __device__ T min(T, T);",
        "template <class T> __host__ __device__ T max(T, T);",
    ]
    for name in _DOUBLE_MATH:
        if name in _THREE_ARG:
            lines.append(f"__device__ double {name}(double, double, double);")
            lines.append(f"__device__ float {name}(float, float, float);")
            lines.append(f"__device__ float {name}f(float, float, float);")
        elif name in _TWO_ARG:
            lines.append(f"__device__ double {name}(double, double);")
            lines.append(f"__device__ float {name}(float, float);")
            lines.append(f"__device__ float {name}f(float, float);")
            # mixed arguments promote to double (std::pow(float, double) is double)
            lines.append(f"template <class A, class B> __device__ double {name}(A, B);")
        else:
            lines.append(f"__device__ double {name}(double);")
            lines.append(f"__device__ float {name}(float);")
            lines.append(f"__device__ float {name}f(float);")
    # pow(float, int) is the double template in CUDA 13 (measured: DFMA/DMUL in SASS)
    lines.append("__device__ float powf(float, float);")
    for name in ("__expf", "__logf", "__sinf", "__cosf", "__tanf", "__log2f", "__log10f",
                 "__exp10f", "__saturatef", "__frsqrt_rn", "__fsqrt_rn"):
        lines.append(f"__device__ float {name}(float);")
    for name in ("__powf", "__fdividef", "__fmul_rn", "__fadd_rn", "__fsub_rn", "__fdiv_rn",
                 "__fmul_rz", "__fadd_rz"):
        lines.append(f"__device__ float {name}(float, float);")
    for name in ("__dmul_rn", "__dadd_rn", "__dsub_rn"):
        lines.append(f"__device__ double {name}(double, double);")
    lines.append("__device__ float __fmaf_rn(float, float, float);")
    return "\n".join(lines) + "\n"


SHIM = _shim()
SHIM_NAME = "/__cudalint_shim.cuh"
_CLANG_ARGS = ["-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib",
               "--cuda-gpu-arch=sm_70", "-std=c++17", "-Wno-unknown-cuda-version",
               "-include", SHIM_NAME, "-ferror-limit=0"]


@lru_cache(maxsize=1)
def _index():
    try:
        import clang.cindex as ci

        class _Index(ci.Index):
            def __del__(self):          # at interpreter exit the library may be gone
                try:
                    super().__del__()
                except Exception:
                    pass

        # parse in the calling thread (see _on_big_stack), not on libclang's own thread
        # with its fixed 8 MB stack, which deep expressions overflow (a segfault)
        os.environ.setdefault("LIBCLANG_NOTHREADS", "1")
        idx = _Index(ci.conf.lib.clang_createIndex(0, 0))
        # a smoke parse: the shared library must load
        idx.parse("t.cu", args=_CLANG_ARGS, unsaved_files=[("t.cu", b""), (SHIM_NAME, SHIM)])
        return ci, idx
    except Exception:           # missing wheel, missing shared library, ABI mismatch
        return None


@lru_cache(maxsize=1)
def _parse_setup() -> tuple[list[str], list[tuple[str, bytes]]]:
    """clang arguments and unsaved files for a unit: the shim precompiled once per
    process into a temporary PCH (a parse then costs ~1.7 ms instead of ~4.2 ms), or, if
    that fails, the shim text included in every parse."""
    fallback = (_CLANG_ARGS, [(SHIM_NAME, SHIM)])
    got = _index()
    if got is None:
        return fallback
    ci, idx = got
    i = _CLANG_ARGS.index("-include")
    base = _CLANG_ARGS[:i] + _CLANG_ARGS[i + 2:]
    try:
        pch = _shim_pch(ci, idx, base)
        args = base + ["-include-pch", pch]
        # the PCH must give the shim's names: a float times a double literal is DMUL
        probe = idx.parse("unit.cu", args=args, options=0, unsaved_files=[
            ("unit.cu", b"__device__ float f(float x) { return sqrtf(x) * M_PI; }")])
        if any(d.severity >= 3 for d in probe.diagnostics):
            return fallback
        return args, []
    except Exception:                   # no writable temp dir, a PCH libclang refuses
        return fallback


def _shim_pch(ci, idx, base: list[str]) -> str:
    """The shim precompiled, in one folder per user and shim/libclang version under the
    temp directory, made once and reused by every process and run after it (worker and
    libclang helper processes end with os._exit, where no atexit clean-up runs: a folder
    per process was litter, 56 after a few dozen runs). Written to a temporary name and
    renamed, so processes building it at once never read half a file."""
    import hashlib
    import tempfile
    lib = getattr(ci.conf, "lib", None)
    key = hashlib.sha256(SHIM.encode() + "\0".join(base).encode() +
                         str(getattr(lib, "_name", "")).encode() +
                         str(getattr(ci, "__file__", "")).encode()).hexdigest()[:16]
    uid = os.getuid() if hasattr(os, "getuid") else 0
    folder = os.path.join(tempfile.gettempdir(), f"cudalint-shim-{uid}-{key}")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.stat(folder)
    if hasattr(os, "getuid") and (st.st_uid != uid or st.st_mode & 0o022):
        raise OSError("shim folder owned by another user or writable by others")
    pch = os.path.join(folder, "shim.pch")
    if os.path.isfile(pch):
        return pch
    header = os.path.join(folder, "shim.cuh")
    tmp_header = f"{header}.{os.getpid()}.tmp"
    with open(tmp_header, "w", encoding="utf-8") as f:
        f.write(SHIM)
    os.replace(tmp_header, header)
    tu = idx.parse(header, args=base + ["-Xclang", "-emit-pch"],
                   options=ci.TranslationUnit.PARSE_INCOMPLETE)
    tmp_pch = f"{pch}.{os.getpid()}.tmp"
    tu.save(tmp_pch)
    os.replace(tmp_pch, pch)
    return pch


def _parse(idx, src: bytes):
    args, unsaved = _parse_setup()
    return idx.parse("unit.cu", args=args, unsaved_files=[("unit.cu", src), *unsaved],
                     options=0)


@lru_cache(maxsize=1)
def _shim_decls() -> int:
    """How many top-level cursors the shim alone produces (they precede the unit's)."""
    got = _index()
    if got is None:
        return 0
    return sum(1 for _ in _parse(got[1], b"").cursor.get_children())


def libclang_available() -> bool:
    return _index() is not None


# `a < a < a < ... < expr` with undeclared names: clang 18 tries each `a <` both as a
# comparison and as the start of a template argument list, re-reading what follows each
# time, so the parse costs about len(expr) * 2**k (fuzz: 21 of them before a 3000-term
# sum, minutes). Real code has at most 4 in a row (`value_type_t<is_optional<...`, over
# /tmp/real); 8 or more and the unit is left to silence.
_ANGLE_CHAIN = re.compile(rb"(?:\b[A-Za-z_]\w*\s*<(?![<=])\s*){8}")


# clang's parser recurses once per nesting level (`- - - x`, `(float)(float)x`, `a ? b :
# c ? ...`), about 1.3 KB of stack per level (measured: 200,000 unary minuses need more
# than 256 MB), and a level can take one source byte (`!!!!x`). libclang's own parse
# thread has 8 MB: a fuzzed 22 KB line of `*/*/*` crashed the process. So libclang runs on
# a thread whose stack is sized by the source, and a source too large for the cap is
# parsed only when the tree-sitter tree is shallow enough.
_STACK_MIN = 64 << 20
_STACK_MAX = 1 << 30
_STACK_PER_BYTE = 4096
_STACK_PER_LEVEL = 8192
_NOT_BLANK = bytes(range(256)).translate(None, b" \t\r\n")


def _stack_for(src: bytes, ctx) -> int | None:
    """Stack bytes for parsing ``src``, or None when it cannot be made safe."""
    need = (len(src) - len(src.translate(None, _NOT_BLANK))) * _STACK_PER_BYTE
    if need <= _STACK_MAX:
        return max(_STACK_MIN, need)
    if ctx is None:
        return None
    # a large unit: bound the nesting by the depth of its tree-sitter tree
    limit = _STACK_MAX // _STACK_PER_LEVEL
    cursor = ctx.root.walk()
    depth = best = 0
    while True:
        if cursor.goto_first_child():
            depth += 1
            if depth > best:
                best = depth
                if best > limit:
                    return None
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return _STACK_MAX
            depth -= 1


def _on_big_stack(fn, size: int):
    """``fn()`` on a fresh thread with a ``size``-byte stack (virtual memory: only what
    is touched is used); its result or its exception."""
    import threading
    out: dict[str, object] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:    # noqa: BLE001 (re-raised in the caller)
            out["error"] = exc
    old = threading.stack_size()
    try:
        threading.stack_size(size)
        thread = threading.Thread(target=target, name="cudalint-libclang", daemon=True)
        thread.start()
    except (ValueError, RuntimeError, MemoryError):
        raise RuntimeError("no thread with a large enough stack for libclang") from None
    finally:
        threading.stack_size(old)
    thread.join()
    if "error" in out:
        raise out["error"]              # type: ignore[misc]
    return out["value"]


# clang expands macros in full: `#define M1 (M0 + M0)` ... `#define M24 (M23 + M23)` and one
# use of M24 is 2**24 copies of M0, "LLVM ERROR: out of memory" (an abort) after several
# GB (measured: 107, 218 and 660 MB at 18, 20 and 22 levels); at 16 to 18 levels the parse
# takes minutes, and a chain of `-1 -1 ...` nests deeper than any stack (fuzz, 2026-11-24:
# a segfault). What every macro and every call of one expands to is bounded first, in
# tokens, without expanding anything; past this budget the unit is not given to
# libclang. Over /tmp/real the largest bound is under 20,000 tokens (apex
# group_norm/macros.h, its dispatch macros nested), the next under 12,000
# (group_norm_v2), then under 2,000. Below the budget, the expansion sizes the parse's
# stack like nesting.
MACRO_TOKENS_MAX = 1 << 16
# Read as clang's first translation phases do, or a chain hides from the count (fuzz seed
# 28: `#\fdefine M9 M8 M8` took one level out and the 18-level chain segfaulted libclang):
# a backslash, blanks, a line end splice lines; a lone CR ends a line; a NUL is blank; a
# comment is a space (string and character literals are kept so `"/*"` opens none);
# `\f` and `\v` are blanks; `%:` is `#`; `$`, bytes over 127 and `\uXXXX` make names.
_SPLICE = re.compile(rb"\\[ \t\f\v]*(?:\r\n?|\n)")
_COMMENT_OR_LITERAL = re.compile(rb'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:[^"\\\n]|\\.)*"?'
                                 rb"|'(?:[^'\\\n]|\\.)*'?", re.S)
_UCN = re.compile(rb"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8}))")
_BLANK = rb"[ \t\f\v]"
_NAME = rb"[A-Za-z_$\x80-\xff][\w$\x80-\xff]*"
# bytes that are not UTF-8 before the `#` do not stop clang from reading the directive
# (it reports "source file is not valid UTF-8" and goes on: fuzz seed 41, `\xc0\x80#define
# M10 M9 M9` in a 2**18-token chain segfaulted libclang while this screen counted 1,024)
_DEFINE = re.compile(rb"^(?:" + _BLANK + rb"|[\x80-\xff])*(?:#|%:)" + _BLANK + rb"*define"
                     + _BLANK + rb"+("
                     + _NAME + rb")(\([^)\n]*\))?([^\n]*)", re.M)
_TOKEN = re.compile(rb"[\w$\x80-\xff]+|[^\w\s$\x80-\xff]")


def _ucn(m: re.Match) -> bytes:
    point = int(m.group(1) or m.group(2), 16)
    return chr(point).encode("utf-8", "surrogatepass") if point <= 0x10FFFF else b"?"


# UTF-8 of the characters clang lexes as blanks (its isUnicodeWhitespace: U+0085, U+00A0,
# U+1680, U+180E, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) and of U+FEFF,
# the byte-order mark: the text that reaches libclang may have lost a leading BOM that
# the bytes here still have (fuzz seed 33: two BOMs hid `#define M0 (1.0)` from this
# screen, so a 16-level chain counted 65,536 tokens where libclang expanded 196,608 and
# hung); counting a BOM as a blank can only make the screen stricter.
_UNICODE_BLANK = re.compile(rb"\xef\xbb\xbf|\xc2[\x85\xa0]|\xe1\x9a\x80|\xe1\xa0\x8e"
                            rb"|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80")


def _logical_lines(src: bytes) -> bytes:
    """``src`` as the preprocessor reads its directives (see above)."""
    text = _SPLICE.sub(b"", src).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    text = text.replace(b"\0", b" ")
    if b"\xef" in text or b"\xc2" in text or b"\xe1" in text or b"\xe2" in text \
            or b"\xe3" in text:
        text = _UNICODE_BLANK.sub(b" ", text)
    if b"/" in text:
        text = _COMMENT_OR_LITERAL.sub(
            lambda m: b" " if m.group().startswith(b"/") else m.group(), text)
    if b"\\u" in text or b"\\U" in text:
        text = _UCN.sub(_ucn, text)
    return text


def macro_expansion(src: bytes) -> tuple[str | None, int]:
    """(the first macro whose expansion passes :data:`MACRO_TOKENS_MAX` tokens or None,
    the largest expansion counted). A name defined more than once counts as its largest
    definition (a use may come before a redefinition: fuzz, a CuPy preamble's chain with
    a shorter one in the kernel body after it); a name that refers back to itself counts
    1, as the preprocessor stops there.

    Function-like macros double too: `#define D(x) x x` used as `D(D(D(...(-1))))`, 18
    deep in 100 bytes, segfaulted libclang, and `#define F1(x) F0(F0(x))` ... `F5(-1)`
    took it to 1.3 GB. So each macro is bounded linearly in its arguments' sizes (its
    own tokens, and how many copies of each parameter it makes), calls in bodies
    included, and so is every call in the source."""
    if b"define" not in src and not (b"\\" in src and (
            b"\\u" in src or b"\\U" in src or _SPLICE.search(src))):
        # `define` is spelled in the bytes, or joined by a splice (`d\\<line end>efine`),
        # or made of universal character names: in none of them, no directive defines
        return None, 0
    lines = _logical_lines(src)
    bodies: dict[bytes, list[list[bytes]]] = {}
    params: dict[bytes, list[bytes]] = {}
    for m in _DEFINE.finditer(lines):
        name = m.group(1)
        bodies.setdefault(name, []).append(_TOKEN.findall(m.group(3)))
        if m.group(2) is not None and name not in params:
            got = [t for t in _TOKEN.findall(m.group(2)[1:-1]) if t not in (b",", b".")]
            params[name] = got + [b"__VA_ARGS__"] if b"..." in m.group(2) else got
    if not bodies or (len(bodies) < 2 and not params):
        return None, 0
    defs = {n: [t for b in bs for t in b] for n, bs in bodies.items()}
    cap = MACRO_TOKENS_MAX + 1
    bound: dict[bytes, _Bound] = {}
    largest = 0
    # A bound counted while a macro that the body names was being expanded (a cycle:
    # `M12 -> M16 -> ... -> M13 -> M12`) counted that macro as one token, true only while
    # it stays open: such a bound is provisional, kept in ``standing_on`` with the stack
    # depth of the deepest open macro it counted so, and dropped when that one closes
    # (fuzz seed 34: a chain whose M12 names M16 was counted 20,480 tokens, as M16 had
    # been bounded inside M12's expansion; from the kernel it expanded to 98,352 and
    # libclang hung). ``steps`` bounds the recounting such cycles cause.
    standing_on: dict[bytes, int] = {}
    steps = 0
    for root in defs:
        if root in bound:
            continue
        stack = [(root, 0)]
        open_ = {root: 0}
        while stack:                    # depth-first, no recursion: chains may be long
            steps += 1
            if steps > _SCREEN_STEPS:
                return root.decode("latin-1"), cap
            name, i = stack[-1]
            toks = defs[name]
            while i < len(toks) and (toks[i] not in defs or toks[i] in bound
                                     or toks[i] in open_):
                i += 1
            if i < len(toks):
                stack[-1] = (name, i + 1)
                stack.append((toks[i], 0))
                open_[toks[i]] = len(stack) - 1
                continue
            depth = len(stack) - 1
            own, copies = 0, {}
            for body in bodies[name]:
                b_own, b_copies, _ = _bounded(body, bound, params, params.get(name, ()), cap)
                own = max(own, b_own)
                for k, v in b_copies.items():
                    copies[k] = max(copies.get(k, 0), v)
            bound[name] = (own, copies)
            on = max([open_[t] for t in toks if open_.get(t, depth) < depth]
                     + [standing_on[t] for t in toks if standing_on.get(t, depth) < depth],
                     default=-1)
            if on >= 0:
                standing_on[name] = on
            size = min(cap, own + sum(copies.values()))    # its arguments one token each
            largest = max(largest, size)
            del open_[name]
            stack.pop()
            if standing_on:
                for gone in [n for n, d in standing_on.items() if d >= depth]:
                    del standing_on[gone], bound[gone]
            if size >= cap:
                return name.decode("latin-1"), largest
    if params:
        # every call in the source: its arguments may be calls, nested as deep as the
        # source likes
        biggest, name = _largest_call(lines, bound, params, cap)
        largest = max(largest, biggest)
        if biggest >= cap:
            return name.decode("latin-1"), largest
    return None, largest


def _largest_call(lines: bytes, bound: dict[bytes, _Bound], params: dict[bytes, list],
                  cap: int) -> tuple[int, bytes]:
    """The largest call in ``lines`` not inside another (its tokens, its macro), as
    :func:`_bounded` over every token of ``lines`` finds it, the first to reach ``cap``
    ending the search; but only the tokens of calls are read: outside a call a token
    adds nothing to a call's size. A call starts where a whole name token of a
    function-like macro is followed by ``(`` (blanks between), which a search finds
    without tokenizing the text before it (over /tmp/real: most of a file's tokens)."""
    # a name left unbounded (a provisional bound dropped) calls nothing: one token
    names = sorted((n for n in params if n in bound), key=len, reverse=True)
    if not names:
        return 0, b""
    start = re.compile(rb"(?<![\w$\x80-\xff])(?:" + b"|".join(map(re.escape, names))
                       + rb")(?![\w$\x80-\xff])\s*\(")
    biggest: tuple[int, bytes] = (0, b"")
    pos = 0
    while True:
        m = start.search(lines, pos)
        if m is None:
            return biggest
        tokens = _TOKEN.finditer(lines, m.start())
        got, pos = _bounded_call(tokens, bound, params, cap)
        if got[0] > biggest[0]:
            biggest = got
        if biggest[0] >= cap or pos < 0:
            return biggest


# steps of the screen's walk over the definitions (cycles recount what stands on them):
# beyond it, the file is taken as over budget (real code: under 20,000 steps)
_SCREEN_STEPS = 2_000_000

# a macro's bound: (tokens of its own, copies of each parameter, by name)
_Bound = tuple[int, dict]


def _bounded(toks: list[bytes], bound: dict[bytes, _Bound], params: dict[bytes, list],
             own_params, cap: int) -> tuple[int, dict, tuple[int, bytes]]:
    """(tokens, copies of each of ``own_params``) that ``toks`` expand to at most, and the
    largest call not inside another (its tokens, its macro). A parameter is (0, {it: 1});
    a macro its bound; a call ``F(a, b)`` F's own tokens plus, for each parameter, its
    copies times the size of its argument (``__VA_ARGS__``: the rest of them). A macro
    not yet bounded (one that refers back to itself) counts one token."""
    frames: list[list] = []             # open calls: [macro, arguments, depth]
    own, copies = 0, {}
    biggest: tuple[int, bytes] = (0, b"")
    i, n = 0, len(toks)
    while i < n:
        t = toks[i]
        i += 1
        if t in params and t in bound and i < n and toks[i] == b"(":
            frames.append([t, [[0, {}]], 0])
            i += 1
            continue
        if frames and frames[-1][2] == 0 and t in (b")", b","):
            frame = frames[-1]
            if t == b",":
                frame[1].append([0, {}])
                continue
            frames.pop()
            value = _call(bound[frame[0]], params[frame[0]], frame[1], cap)
            if not frames and value[0] > biggest[0]:
                biggest = (value[0], frame[0])
        else:
            if frames:
                frames[-1][2] += (t == b"(") - (t == b")")
            if t in own_params:
                value = (0, {t: 1})
            else:
                got = bound.get(t)
                value = (1, {}) if got is None else (
                    max(1, min(cap, got[0] + sum(got[1].values()))), {})
        target = frames[-1][1][-1] if frames else None
        if target is None:
            own = min(cap, own + value[0])
            for k, v in value[1].items():
                copies[k] = min(cap, copies.get(k, 0) + v)
            if biggest[0] >= cap:
                break
        else:
            target[0] = min(cap, target[0] + value[0])
            for k, v in value[1].items():
                target[1][k] = min(cap, target[1].get(k, 0) + v)
    for frame in frames:                # calls left open: their arguments as written
        for arg in frame[1]:
            own = min(cap, own + arg[0])
            for k, v in arg[1].items():
                copies[k] = min(cap, copies.get(k, 0) + v)
    return own, copies, biggest


def _bounded_call(tokens, bound: dict[bytes, _Bound], params: dict[bytes, list], cap: int
                  ) -> tuple[tuple[int, bytes], int]:
    """The call that ``tokens`` (matches of :data:`_TOKEN`) open with its macro's name
    and ``(``, bounded as :func:`_bounded` bounds it: ((its tokens, its macro), the
    offset after its ``)``), or ((0, b""), -1) when the text ends inside it."""
    frames: list[list] = []             # open calls: [macro, arguments, depth]
    pending: bytes | None = None        # a name whose next token decides if it calls
    for m in tokens:
        t = m.group()
        if pending is not None:
            name, pending = pending, None
            if t == b"(":
                frames.append([name, [[0, {}]], 0])
                continue
            _argument_token(frames, name, bound, cap)
        if t in params and t in bound:
            pending = t
            continue
        if frames[-1][2] == 0 and t in (b")", b","):
            frame = frames[-1]
            if t == b",":
                frame[1].append([0, {}])
                continue
            frames.pop()
            value = _call(bound[frame[0]], params[frame[0]], frame[1], cap)
            if not frames:
                return (value[0], frame[0]), m.end()
            target = frames[-1][1][-1]
            target[0] = min(cap, target[0] + value[0])
            for k, v in value[1].items():
                target[1][k] = min(cap, target[1].get(k, 0) + v)
            continue
        _argument_token(frames, t, bound, cap)
    return (0, b""), -1


def _argument_token(frames: list[list], t: bytes, bound: dict[bytes, _Bound], cap: int
                    ) -> None:
    """A token that opens or closes no call, counted into the innermost call's argument
    (its bound if it is an object-like macro or a function-like one not called)."""
    frames[-1][2] += (t == b"(") - (t == b")")
    got = bound.get(t)
    size = 1 if got is None else max(1, min(cap, got[0] + sum(got[1].values())))
    target = frames[-1][1][-1]
    target[0] = min(cap, target[0] + size)


def _call(macro: _Bound, names: list[bytes], args: list, cap: int) -> tuple[int, dict]:
    """The bound of one call: ``args`` are [tokens, copies] of each argument."""
    own, copies = macro[0], {}
    for k, name in enumerate(names):
        times = macro[1].get(name, 0)
        if not times:
            continue
        if name == b"__VA_ARGS__":
            rest = args[k:]
            arg = [sum(a[0] for a in rest) + max(0, len(rest) - 1), {}]
            for a in rest:
                for q, v in a[1].items():
                    arg[1][q] = arg[1].get(q, 0) + v
        elif k < len(args):
            arg = args[k]
        else:
            continue
        own = min(cap, own + times * arg[0])
        for q, v in arg[1].items():
            copies[q] = min(cap, copies.get(q, 0) + times * v)
    return own, copies


def stack_for_expansion(tokens: int) -> int:
    """Stack bytes for a parse in which a macro expands to ``tokens`` tokens (a level of
    nesting each, at worst)."""
    return min(_STACK_MAX, tokens * _STACK_PER_LEVEL)
