"""Which operations of the code a build compiles change by more than a few ulp under
fast-math flags, and where they are (read by CL401).

``--use_fast_math`` turns some math calls into hardware approximations and ``-ftz=true``
flushes single-precision subnormals; most of what changes stays within a few ulp of the
IEEE result on normal floats. What this module looks for is the operations whose fast
version can be far from the IEEE result on ordinary inputs, by the CUDA C++ Programming
Guide's accuracy tables ("Mathematical Functions" appendix, intrinsic functions) and the
SASS nvcc 13.0 emits for sm_90 (``tools/gputruth/fast_math_ops.py``, recorded in
``fixtures/CL401/fast_math_ops.json``):

* ``sinf``/``cosf``/``tanf``/``sincosf`` (and ``sin``/``cos``/``tan`` of a float):
  ``__sinf`` is ``FMUL.RZ`` by 1/(2 pi) then ``MUFU.SIN``, with no range reduction; the
  guide bounds its error (2^-21.41 absolute) only for x in [-pi, pi], "larger otherwise".
* ``powf`` (``pow`` of floats, not ``pow(float, int)``, which nvcc 13 computes in double
  whatever the flags): ``__powf`` is ``MUFU.LG2``, ``FMUL``, ``MUFU.EX2``, i.e.
  exp2(y * log2(x)) ("derived from its implementation"): NaN for every negative base,
  where ``powf(-2.0f, 3.0f)`` is -8. A base the code makes non-negative (a non-negative
  literal, ``fabsf``/``sqrtf``/``expf`` of something) leaves the error bounded like
  ``__expf``'s and is not counted.
* ``tanhf`` (``tanh`` of a float): ``MUFU.TANH`` (``tanh.approx.f32``, relative error
  about 2^-11 by the PTX ISA, against 2 ulp for ``tanhf``).
* ``x / c`` with ``c`` in (2^126, 2^128) (``FLT_MAX``, ``3.4e38f``): the guide says
  ``__fdividef`` returns 0 there; nvcc folds ``x / 3.4e38f`` to ``x * 0``.
* a float constant below FLT_MIN (``1e-40f``, ``FLT_TRUE_MIN``) under ``-ftz=true``:
  the epsilon that was to keep a divisor or a ``fmaxf`` away from zero is zero.

Not counted, with the bound that says why: ``__expf`` (2 + floor(|1.173 x|) ulp: at most
106 ulp, 1.3e-5 relative, wherever the result is a normal float), ``__exp10f`` (2 +
floor(|2.97 x|) ulp, at most 116), ``__logf``/``__log2f``/``__log10f`` (at most 3 ulp,
or an absolute error of 2^-21.41 or less for x in [0.5, 2], a few times the spacing of
the inputs there), division under ``-prec-div=false`` (2 ulp, full range: ``div.full``)
or ``__fdividef`` for other divisors (2 ulp), ``sqrtf`` under ``-prec-sqrt=false`` and
``1/sqrtf`` (``MUFU.SQRT``/``MUFU.RSQ``: 1 and 2 ulp), and flushing of subnormal
values the code computes (only inputs and results below 2^-126 change).

The scan is lexical: comments and string literals are blanked, and in a ``.cu`` or header
only code inside a function whose head says ``__global__``/``__device__`` (or a macro
with DEVICE in its name) counts; a kernel string of a Python call is device code
throughout. An unsuffixed ``sin``/``pow``/``tanh`` counts unless its argument shows a
double (a double literal, a cast, a name declared ``double`` in the file).
"""
from __future__ import annotations

import glob
import os
import re
import struct
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from pathlib import Path

from cudalint.model.preproc import needs_undefined

MAX_FILES = 600                 # CUDA files read for one build (a folder-wide build)
MAX_PATTERN_PARTS = 32          # folders in one source pattern (a fuzzed 'cu/*/*/...')
MAX_FILE_BYTES = 4 << 20
MAX_INCLUDE_DEPTH = 3
FLT_MIN = 1.1754943508222875e-38
TWO_126 = 2.0 ** 126
TWO_128 = 2.0 ** 128

# what each kind of operation needs from the command line to change (keys of
# nvcc_flags.EFFECTS, plus "approx-div": '/' turned into __fdividef by --use_fast_math)
NEEDS = {"trig": "fast-intrinsics", "pow": "fast-intrinsics", "tanh": "fast-intrinsics",
         "huge-divisor": "approx-div", "subnormal": "ftz"}

WHY = {
    "trig": "becomes `{fast}`, which has no range reduction: its error is bounded "
            "(2^-21.41 absolute) only for |x| <= pi and is larger outside",
    "pow": "becomes `__powf` = exp2(y * log2(x)), NaN for every negative base "
           "(powf(-2, 3) is -8)",
    "tanh": "becomes `tanh.approx.f32`, relative error about 2^-11 (tanhf: 2 ulp)",
    "huge-divisor": "becomes `__fdividef`, which returns 0 for divisors of magnitude in "
                    "(2^126, 2^128)",
    "subnormal": "is below FLT_MIN, and -ftz=true makes it 0",
}

_CUDA_SUFFIXES = (".cu", ".cuh")
# builds whose code is the kernel string of their Python call
EMBEDDED = ("cupy", "pycuda", "torch.load_inline")
_HEADER_SUFFIXES = (".cuh", ".h", ".hpp", ".hh", ".inl", ".inc")


@dataclass(frozen=True)
class Hit:
    """One operation whose fast-math version is far from the IEEE result."""
    kind: str                   # a key of WHY
    name: str                   # as written: `sinf`, `pow`, `/ FLT_MAX`, `1e-40f`
    fast: str                   # what it becomes, for messages (`__sinf`)
    offset: int                 # in the scanned text


@dataclass(frozen=True)
class Located:
    """A hit with the file it is in (None: the build file itself) and its 1-based line."""
    hit: Hit
    path: str | None
    line: int


# -- blanking and device regions ----------------------------------------------------------

_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                     re.S)


def blank(text: str) -> str:
    """Comments and string/char literals replaced by spaces (newlines kept)."""
    def repl(m: re.Match) -> str:
        return re.sub(r"[^\n]", " ", m.group())
    return _TOKENS.sub(repl, text)


_DEVICE_HEAD = re.compile(r"__global__|__device__|\b\w*DEVICE\w*\b|__hostdev__|"
                          r"\bCUDA_CALLABLE\w*|\b__hd__\b")


def device_regions(clean: str) -> list[tuple[int, int]]:
    """Spans of the bodies of functions (and lambdas) whose head marks them device code."""
    out: list[tuple[int, int]] = []
    stack: list[tuple[int, bool]] = []
    head_start = 0
    for m in re.finditer(r"[{};]", clean):
        ch, at = m.group(), m.start()
        if ch == "{":
            inside = any(dev for _, dev in stack)
            head = clean[head_start:at]
            dev = not inside and ")" in head and _DEVICE_HEAD.search(head) is not None
            stack.append((at, dev))
            head_start = at + 1
        elif ch == "}":
            if stack:
                start, dev = stack.pop()
                if dev:
                    out.append((start, at))
            head_start = at + 1
        else:
            # a `;` ends a statement, but not the head of a function (a `for (;;)` head
            # or a template default keeps going to its `{`)
            if not _open_paren(clean, head_start, at):
                head_start = at + 1
    return out


def _open_paren(text: str, start: int, end: int) -> bool:
    seg = text[start:end]
    return seg.count("(") > seg.count(")")


def _inside(regions: list[tuple[int, int]], offset: int) -> bool:
    """``regions`` sorted and disjoint (a device body inside another is not recorded)."""
    k = bisect_right(regions, (offset, offset)) - 1
    return k >= 0 and regions[k][0] < offset < regions[k][1]


# -- the operations -------------------------------------------------------------------------

_CALL = re.compile(r"\b(sinf|cosf|tanf|sincosf|sin|cos|tan|sincos|powf|pow|tanhf|tanh)\s*\(")
_MEMBER_BEFORE = re.compile(r"(?:\.|->|\$)\s*$")
_FAST = {"sin": "__sinf", "cos": "__cosf", "tan": "__tanf", "sincos": "__sincosf",
         "pow": "__powf", "tanh": "tanh.approx.f32"}
_BASE = {"sinf": "sin", "cosf": "cos", "tanf": "tan", "sincosf": "sincos", "powf": "pow",
         "tanhf": "tanh"}
_DOUBLE_LITERAL = re.compile(r"(?<![\w.])(?:\d+\.\d*|\.\d+|\d+[eE])(?:[eE][+-]?\d+)?"
                             r"(?![\w.])")
_DOUBLE_CAST = re.compile(r"\(\s*double\s*\)|static_cast\s*<\s*double\s*>|\bdouble\s*\(")
_NONNEG_BASE = re.compile(r"^\s*(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?[fF]?\s*$|"
                          r"(?:std\s*::\s*)?(?:fabsf?|abs|sqrtf?|expf?|exp2f?|__expf|"
                          r"rsqrtf?|cosh|coshf|hypotf?|norm3df?)\s*\()")
_HUGE_DIVISOR = re.compile(r"(?<![/*])/\s*(FLT_MAX\b|(?:\d+\.?\d*|\.\d+)[eE]\+?3[89][fF]?"
                           r"(?![\w.]))")
_SUBNORMAL = re.compile(r"(?<![\w.])((?:\d+\.?\d*|\.\d+)[eE]-\d+[fF])(?![\w.])|"
                        r"\b(FLT_TRUE_MIN|__FLT_DENORM_MIN__|FLT_DENORM_MIN)\b|"
                        r"numeric_limits\s*<\s*float\s*>\s*::\s*denorm_min\b")


# cheap screens: the full patterns above try a match at every digit
_HUGE_WORD = re.compile(r"[eE]\+?3[89]")
_TINY_WORD = re.compile(r"[eE]-(?:3[89]|4\d)|TRUE_MIN|DENORM_MIN|denorm_min")


def _args(clean: str, open_at: int) -> list[str] | None:
    """The top-level arguments of the call whose `(` is at ``open_at``."""
    depth, start, out = 0, open_at + 1, []
    for i in range(open_at, min(len(clean), open_at + 2000)):
        c = clean[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                out.append(clean[start:i])
                return out
        elif c == "," and depth == 1:
            out.append(clean[start:i])
            start = i + 1
    return None


def _double_names(clean: str) -> frozenset[str]:
    return frozenset(re.findall(r"\bdouble\s*[*&]?\s*(?:const\s+)?(?:__restrict__\s+)?"
                                r"([A-Za-z_]\w*)", clean))


def _int_names(clean: str) -> frozenset[str]:
    """Names declared with an integer type (scalars, pointers, arrays) in the file."""
    return frozenset(re.findall(
        r"\b(?:int|unsigned|long|short|size_t|u?int(?:8|16|32|64)_t)\s*(?:const\s*)?"
        r"[*&]?\s*(?:const\s+)?(?:__restrict__\s+)?([A-Za-z_]\w*)\s*[=;,)\[]", clean))


def _is_int(arg: str, ints: frozenset[str]) -> bool:
    """An expression of integer names and literals only (``k + 1``, ``*step``)."""
    if re.search(r"[.\"']|\b\d+[eE]|[fF]\b", arg):
        return False
    words = re.findall(r"[A-Za-z_]\w*", arg)
    return all(w in ints for w in words) and re.fullmatch(r"[\w\s+\-*/%()\[\]]*", arg) \
        is not None and (bool(words) or re.search(r"\d", arg) is not None)


def _non_integer_literal(arg: str) -> bool:
    """A literal exponent with a fractional part (``0.5f``, ``2.4``): IEEE powf is NaN
    for a negative base there too, so __powf's NaN changes nothing."""
    m = re.fullmatch(r"\s*((?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?)[fF]?\s*", arg)
    if m is None:
        return False
    v = float(m.group(1))
    return v != int(v)


def _is_double(arg: str, doubles: frozenset[str]) -> bool:
    if _DOUBLE_CAST.search(arg) or _DOUBLE_LITERAL.search(arg):
        return True
    return any(w in doubles for w in re.findall(r"[A-Za-z_]\w*", arg))


def _as_float32(v: float) -> float:
    """The float a literal with an `f` suffix is (1.17549435e-38f is FLT_MIN itself)."""
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except (OverflowError, struct.error):
        return float("inf")


def scan(text: str, device_only: bool) -> list[Hit]:
    """The far-from-IEEE operations in ``text`` (a CUDA file, or a kernel string with
    ``device_only=False``: all of it is device code), in text order."""
    clean = blank(text)
    if not any(w in clean for w in ("sin", "cos", "tan", "pow", "/", "e-", "MIN")):
        return []
    # worked out on first need: most files have no candidate at all
    regions: list[tuple[int, int]] | None = None
    doubles: frozenset[str] | None = None
    ints: frozenset[str] | None = None
    hits: list[Hit] = []

    def device(at: int) -> bool:
        nonlocal regions
        if not device_only:
            return True
        if regions is None:
            regions = sorted(device_regions(clean))
        return _inside(regions, at)

    for m in _CALL.finditer(clean):
        name = m.group(1)
        if _MEMBER_BEFORE.search(clean, max(0, m.start() - 4), m.start()) or \
                not device(m.start(1)):
            continue            # p->sin(x), v.pow(2): a method, not the math function
        args = _args(clean, m.end() - 1)
        if not args:
            continue
        base = _BASE.get(name, name)
        suffixed = base != name
        if doubles is None:
            doubles = _double_names(clean) if "double" in clean else frozenset()
        if not suffixed and _is_double(args[0], doubles):
            continue
        if base == "pow":
            if len(args) != 2:
                continue
            if not suffixed:
                if ints is None:
                    ints = _int_names(clean)
                # pow(float, int): nvcc computes it in double, whatever the flags
                if _is_int(args[1], ints) or _is_double(args[1], doubles):
                    continue
            if _NONNEG_BASE.match(args[0]) or _non_integer_literal(args[1]):
                continue
            kind = "pow"
        elif base == "tanh":
            kind = "tanh"
        else:
            kind = "trig"
        hits.append(Hit(kind, name, _FAST[base], m.start(1)))
    huge = "FLT_MAX" in clean or _HUGE_WORD.search(clean) is not None
    for m in _HUGE_DIVISOR.finditer(clean) if huge else ():
        if not device(m.start()):
            continue
        word = m.group(1)
        if word != "FLT_MAX":
            try:
                v = float(word.rstrip("fF"))
            except ValueError:
                continue
            if not TWO_126 < v < TWO_128:
                continue
        hits.append(Hit("huge-divisor", f"/ {word}", "__fdividef", m.start()))
    tiny = _TINY_WORD.search(clean) is not None
    for m in _SUBNORMAL.finditer(clean) if tiny else ():
        if not device(m.start()):
            continue
        lit = m.group(1)
        if lit is not None:
            try:
                v = float(lit.rstrip("fF"))
            except ValueError:
                continue
            if not 0.0 < _as_float32(v) < FLT_MIN:
                continue
            hits.append(Hit("subnormal", lit, "0", m.start()))
        else:
            hits.append(Hit("subnormal", m.group().replace(" ", ""), "0", m.start()))
    hits.sort(key=lambda h: h.offset)
    return hits


# -- the files a build compiles ---------------------------------------------------------------

def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


@lru_cache(maxsize=2048)
def _file_scan(path: str, mtime_ns: int, size: int
               ) -> tuple[tuple[Located, ...], tuple[str, ...], tuple]:
    """(hits with lines, (name, quoted) of each #include, the regions compiled only
    where a macro is not defined: model/preproc.needs_undefined) of one CUDA file."""
    if size > MAX_FILE_BYTES:
        return (), (), ()
    try:
        data = Path(path).read_bytes()
    except OSError:
        return (), (), ()
    if b"\0" in data[:8192]:
        return (), (), ()
    text = data.decode("utf-8", "replace")
    hits = scan(text, device_only=True)
    starts = [m.end() for m in re.finditer(r"\n", text)]
    located = []
    for h in hits:
        line = 1 + _count_before(starts, h.offset)
        located.append(Located(h, path, line))
    includes = tuple((m.group(1) or m.group(2), m.group(1) is not None)
                     for m in _INCLUDE.finditer(text))
    regions = needs_undefined(text) if hits and "#" in text else ()
    return tuple(located), includes, regions


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>)', re.M)


def _count_before(starts: list[int], offset: int) -> int:
    return bisect_right(starts, offset)


def _bases(folder: str) -> list[str]:
    """The build file's folder and those above it, to the repository root: torch's
    ``load(sources=["cuda/x.cu"])`` names paths relative to where the program runs,
    which is often a folder above the one that holds the call."""
    out = [folder]
    cur = folder
    for _ in range(4):
        if os.path.isdir(os.path.join(cur, ".git")):
            break
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        out.append(parent)
        cur = parent
    return out


def _walk_cuda(folder: str) -> list[str]:
    out: list[str] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if f.endswith(_CUDA_SUFFIXES):
                out.append(os.path.join(root, f))
                if len(out) >= MAX_FILES:
                    return out
    return out


def resolve_sources(patterns: list[str], folder: str) -> list[str] | None:
    """The CUDA files (.cu, .cuh) the patterns name, each looked for in the build file's
    folder and then in the folders above it; ``**/*.cu`` is every CUDA file under the
    folder. None when a pattern names a CUDA file that is found nowhere (the build
    compiles code this run cannot read)."""
    found: list[str] = []
    for pat in patterns:
        pat = pat.replace("\\", "/")
        if pat in ("**/*.cu", "**/*.cu*"):
            found += _walk_cuda(folder)
            continue
        if not pat.endswith(_CUDA_SUFFIXES) and not pat.endswith("*"):
            continue                    # a .cpp: built by the host compiler
        hits: list[str] = []
        wild = any(c in pat for c in "*?[")
        if pat.count("/") > MAX_PATTERN_PARTS or (wild and os.path.isabs(pat)):
            return None             # not a project's pattern: what it compiles is unknown
        # a wildcard is expanded in the build file's folder only: from the folders above
        # it, `*/*.cu` or `**` could walk a home directory
        bases = [""] if os.path.isabs(pat) else _bases(folder)[:1 if wild else None]
        for base in bases:
            full = os.path.join(base, pat) if base else pat
            try:
                found_here = (p for p in glob.iglob(full, recursive=True)
                              if p.endswith(_CUDA_SUFFIXES) and os.path.isfile(p))
                hits = sorted(islice(found_here, MAX_FILES))
            except (OSError, ValueError, RecursionError):
                hits = []
            if hits:
                break
        if not hits and pat.endswith(_CUDA_SUFFIXES):
            return None
        found += hits
    seen: set[str] = set()
    return [p for p in (os.path.normpath(f) for f in found)
            if not (p in seen or seen.add(p))][:MAX_FILES]


def files_hits(paths: list[str], seen: set[str] | None = None,
               search: tuple[str, ...] = (), defined: frozenset[str] = frozenset()
               ) -> list[Located]:
    """The hits in the files and the headers they include, three deep: a quoted include
    relative to its file, then any include on ``search`` (the build's -I folders and the
    project's ``include/``; a system header is found on none and not read). ``seen``
    collects the files read. Hits in a branch compiled only where a macro the build
    defines (``defined``) is not defined are left out."""
    out: list[Located] = []
    seen = set() if seen is None else seen
    todo = [(p, 0) for p in paths]
    while todo and len(seen) < MAX_FILES:
        path, depth = todo.pop(0)
        if path in seen:
            continue
        seen.add(path)
        sig = _stat(path)
        if sig is None:
            continue
        located, includes, regions = _file_scan(path, *sig)
        if defined and regions:
            off = [(a, b) for a, b, name in regions if name in defined]
            located = tuple(h for h in located
                            if not any(a <= h.hit.offset < b for a, b in off))
        out += located
        if depth >= MAX_INCLUDE_DEPTH:
            continue
        here = os.path.dirname(path)
        for name, quoted in includes:
            if not name.endswith(_HEADER_SUFFIXES + _CUDA_SUFFIXES):
                continue
            found = _find_include(name, (here,) + search if quoted else search)
            if found is not None and found not in seen:
                todo.append((found, depth + 1))
    return out


@lru_cache(maxsize=8192)
def _find_include(name: str, dirs: tuple[str, ...]) -> str | None:
    for d in dirs:
        cand = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(cand):
            return cand
    return None


def _search_dirs(build, folder: str) -> tuple[str, ...]:
    """Where a build's includes are looked for: its -I folders (relative to the build
    file), then the build file's folder and those above it to the repository root, each
    with its ``include/``."""
    out = []
    for d in build.settings.include_dirs:
        d = d.strip("'\"")
        if d and "$" not in d:
            out.append(os.path.normpath(os.path.join(folder, d)))
    for base in _bases(folder):
        out.append(base)
        inc = os.path.join(base, "include")
        if os.path.isdir(inc):
            out.append(inc)
    return tuple(dict.fromkeys(out))


def text_hits(text: str, char_map: list[int], file_text: str) -> list[Located]:
    """The hits in a kernel string, placed on the lines of the Python file (``char_map``
    gives the file offset of each character of ``text``, -1 where synthetic)."""
    out = []
    for h in scan(text, device_only=False):
        off = char_map[h.offset] if 0 <= h.offset < len(char_map) else -1
        if off < 0:
            continue
        out.append(Located(h, None, file_text.count("\n", 0, off) + 1))
    return out


# -- a build ----------------------------------------------------------------------------------

@dataclass
class BuildCode:
    """What a build compiles, as far as this run can see it."""
    hits: list[Located]
    how: str        # "sources": the files it names; "folder": its sources are not written
                    # statically, so the CUDA files under the build file's folder (the
                    # convention of directory-wide CMake and Makefile flags); "embedded":
                    # the kernel string of the Python call; "unknown": nothing readable


def build_code(build, kernels, file_text: str, read: set[str] | None = None) -> BuildCode:
    """The far-from-IEEE operations of the code ``build`` compiles. ``kernels``: the
    embedded kernels of the build file (Python), matched to a CuPy/PyCUDA/``load_inline``
    build by the span of its call."""
    if build.kind in EMBEDDED:
        for k in kernels:
            if k.call_start == build.call_start:
                return BuildCode(text_hits(k.text, k.char_map, file_text), "embedded")
        return BuildCode([], "unknown")
    folder = os.path.dirname(os.path.abspath(build.path))
    if not build.sources:
        paths = _walk_cuda(folder)
        return BuildCode(files_hits(paths, read, _search_dirs(build, folder),
                                    _defined(build)), "folder" if paths else "unknown")
    paths = resolve_sources(build.sources, folder)
    if not paths:
        return BuildCode([], "unknown")
    how = "folder" if build.sources == ["**/*.cu"] else "sources"
    return BuildCode(files_hits(paths, read, _search_dirs(build, folder), _defined(build)),
                     how)


def _defined(build) -> frozenset[str]:
    """The macros a build's own flags define (-D, CMake compile definitions)."""
    return frozenset(build.settings.defines)


def compiled_deps(builds) -> tuple[str, tuple]:
    """(digest, deps) for the result cache of a build file: the CUDA files CL401 reads
    for its builds (bytes in the digest, stat signatures in deps), so that an edit of a
    kernel a build file compiles changes that build file's CL401 result. A CUDA file
    added to a folder-wide build's folder is not seen by stat (as a new header is not)."""
    import hashlib

    from cudalint.sources.signature import file_sig
    read: set[str] = set()
    for b in builds:
        if b.kind not in EMBEDDED:
            build_code(b, [], "", read)
    if not read:
        return "", ()
    h = hashlib.sha256()
    deps = []
    for path in sorted(read):
        deps.append((path, file_sig(path)))
        try:
            h.update(path.encode() + b"\0" + Path(path).read_bytes())
        except OSError:
            continue
    return h.hexdigest(), tuple(deps)


def build_file_deps(path: str, text: str, kind: str) -> tuple[str, tuple]:
    """:func:`compiled_deps` of a build file of ``kind`` (python, cmake, make, toml);
    ("", ()) for a file that sets no fast-math flag."""
    from cudalint.project.buildflags import FAST_MATH_WORDS
    if not any(w in text for w in FAST_MATH_WORDS):
        return "", ()
    if kind == "python":
        from cudalint.project.build_python import python_builds
        builds = python_builds(text, path)
    elif kind == "cmake":
        from cudalint.project.build_cmake import cmake_builds
        builds = cmake_builds(text, path)
    elif kind == "make":
        from cudalint.project.build_make import make_builds
        builds = make_builds(text, path)
    elif kind == "toml":
        from cudalint.project.build_toml import toml_builds
        builds = toml_builds(text, path)
    else:
        return "", ()
    return compiled_deps(builds)
