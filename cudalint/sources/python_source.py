"""CUDA code inside Python strings, read with :mod:`ast` (project code is never run).

Recognised calls (imports may be aliased, ``import cupy as cp``, ``from cupy import
RawKernel as RK``):

* CuPy ``RawKernel(code, name, options)``, ``RawModule(code=..., options=...)``,
  ``ElementwiseKernel(in_params, out_params, operation, name, ..., preamble=...)`` and
  ``ReductionKernel(...)`` (snippets wrapped in a synthetic kernel so they parse);
* PyCUDA ``SourceModule(source, options=[...], no_extern_c=...)``;
* torch ``torch.utils.cpp_extension.load_inline(name, cpp_sources, cuda_sources=...)``.

The code argument may be a literal (any prefix, implicit concatenation, escapes), a name
bound to one in the function or module, ``+`` / ``+=`` concatenation, ``textwrap.dedent``,
``.strip()``, or a ``.format()`` / ``%`` / f-string template. A placeholder whose value is
an int or str constant bound in the module is substituted; any other placeholder becomes
an opaque identifier (``__cudalint_opaque_N__``): a value is never guessed.

Every character of the extracted text keeps the offset of the file character it came
from (``char_map``; -1 for wrapper code and substituted values). A character written
as an escape maps to its backslash. ``verbatim`` marks characters that appear in the file
exactly as themselves, which is what an edit (a fix) needs.
"""
from __future__ import annotations

import ast
import bisect
import re
import unicodedata
import warnings
from dataclasses import dataclass, field

# A file without one of these words holds no kernel we know: skip ast.parse entirely.
API_WORDS = ("RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel",
             "SourceModule", "load_inline")
# ...and one that never calls them (or imports them under another name) neither.
_API_USE = re.compile(r"\b(?:RawKernel|RawModule|ElementwiseKernel|ReductionKernel|"
                      r"SourceModule|load_inline)\s*(?:\(|as\b)")

_CUPY_RAW = {"cupy.RawKernel", "cupy._core.raw.RawKernel", "cupy.cuda.RawKernel"}
_CUPY_MODULE = {"cupy.RawModule", "cupy._core.raw.RawModule", "cupy.cuda.RawModule"}
_CUPY_ELEMENTWISE = {"cupy.ElementwiseKernel", "cupy._core._kernel.ElementwiseKernel"}
_CUPY_REDUCTION = {"cupy.ReductionKernel", "cupy._core._reduction.ReductionKernel"}
_PYCUDA = {"pycuda.compiler.SourceModule", "pycuda.compiler.DynamicSourceModule"}
_TORCH = {"torch.utils.cpp_extension.load_inline"}
_DEDENT = {"textwrap.dedent"}

MAX_DEPTH = 24          # name/expression resolution depth


# ---------------------------------------------------------------------------------------
# public data


class PyOption(str):
    """One compiler option as written in the Python call, with its file span."""

    start: int
    end: int

    def __new__(cls, value: str, start: int = -1, end: int = -1) -> "PyOption":
        obj = super().__new__(cls, value)
        obj.start, obj.end = start, end
        return obj


@dataclass
class PyLaunch:
    """A Python call that launches an embedded kernel (CuPy or PyCUDA style)."""

    kernel: str | None                      # kernel function name, None: the unit's only one
    block: tuple[int, ...] | None
    grid: tuple[int, ...] | None
    shared_mem: int | None
    start: int
    end: int


@dataclass
class EmbeddedKernel:
    api: str                                # e.g. "cupy.RawKernel"
    text: str                               # the CUDA text the parser sees
    char_map: list[int]                     # file char offset per text char, -1 synthetic
    verbatim: bytearray                     # 1 where the file holds exactly this char
    call_start: int                         # file span of the API call
    call_end: int
    name: str | None = None                 # kernel / module name argument
    options: list[PyOption] = field(default_factory=list)
    options_opaque: bool = False            # options given but not statically known
    launches: list[PyLaunch] = field(default_factory=list)
    no_extern_c: bool = False
    pieces: list[tuple[int, int, bool, str]] = field(default_factory=list)
    # (file start, file end, raw, quote) of each string literal the text came from

    def map_offset(self, i: int) -> int:
        if 0 <= i < len(self.char_map):
            return self.char_map[i]
        return -1

    def map_edit(self, start: int, end: int, replacement: str
                 ) -> tuple[int, int, str] | None:
        """Translate an edit of ``text[start:end]`` into one of the file, or None.

        Only characters written verbatim, contiguous in the file, can be replaced, and
        only by text that needs no escaping in the literal that holds them.
        """
        n = len(self.char_map)
        if not (0 <= start <= end <= n):
            return None
        if start == end:
            if start < n and self.char_map[start] >= 0 and (
                    self.verbatim[start] or self._escape_start(start)):
                fs = self.char_map[start]
            elif start > 0 and self.char_map[start - 1] >= 0 and self.verbatim[start - 1]:
                fs = self.char_map[start - 1] + 1
            else:
                return None
            fe = fs
        else:
            for i in range(start, end):
                if self.char_map[i] < 0 or not self.verbatim[i]:
                    return None
                if i > start and self.char_map[i] != self.char_map[i - 1] + 1:
                    return None
            fs, fe = self.char_map[start], self.char_map[end - 1] + 1
        piece = self._piece_at(fs if start == end or fs == fe else fs)
        if piece is None:
            return None
        if start != end and (self._piece_at(fe - 1) is not piece):
            return None
        _, _, raw, quote = piece
        if not _fits_literal(replacement, raw, quote):
            return None
        return fs, fe, replacement

    def _escape_start(self, i: int) -> bool:
        # an escaped char maps to its backslash: inserting before it is still safe
        return self.char_map[i] >= 0

    def _piece_at(self, offset: int):
        starts = [p[0] for p in self.pieces]
        k = bisect.bisect_right(starts, offset) - 1
        if k >= 0 and self.pieces[k][0] <= offset < self.pieces[k][1]:
            return self.pieces[k]
        return None


@dataclass
class PythonExtraction:
    kernels: list[EmbeddedKernel] = field(default_factory=list)
    notes: list[tuple[int, str]] = field(default_factory=list)   # (file offset, message)


def _fits_literal(text: str, raw: bool, quote: str) -> bool:
    if quote[0] in text:
        return False
    if "\\" in text and not raw:
        return False
    if raw and text.endswith("\\"):
        return False
    if len(quote) == 1 and ("\n" in text or "\r" in text):
        return False
    return True


# ---------------------------------------------------------------------------------------
# mapped strings


class MStr:
    """A string value plus, per character, the file offset and whether it is verbatim."""

    __slots__ = ("text", "map", "verb", "pieces")

    def __init__(self, text: str = "", map_: list[int] | None = None,
                 verb: bytearray | None = None, pieces: list | None = None):
        self.text = text
        self.map = map_ if map_ is not None else [-1] * len(text)
        self.verb = verb if verb is not None else bytearray(len(text))
        self.pieces = pieces if pieces is not None else []

    @classmethod
    def synthetic(cls, text: str) -> "MStr":
        return cls(text)

    def __add__(self, other: "MStr") -> "MStr":
        return MStr(self.text + other.text, self.map + other.map, self.verb + other.verb,
                    self.pieces + other.pieces)

    def slice(self, a: int, b: int) -> "MStr":
        return MStr(self.text[a:b], self.map[a:b], self.verb[a:b], self.pieces)


class _Opaque:
    def __init__(self) -> None:
        self.n = 0

    def token(self) -> MStr:
        tok = f"__cudalint_opaque_{self.n}__"
        self.n += 1
        return MStr.synthetic(tok)


_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n",
            "r": "\r", "t": "\t", "v": "\v"}
_PREFIX_RE = re.compile(r"[A-Za-z]{0,3}(?=['\"])")


class _Scanner:
    """Reads the string literals of an expression span of the file text."""

    def __init__(self, src: str):
        self.src = src

    def skip_gap(self, i: int, end: int) -> int:
        src = self.src
        while i < end:
            c = src[i]
            if c in " \t\f\r\n()":
                i += 1
            elif c == "\\" and i + 1 < end and src[i + 1] in "\r\n":
                i += 1
            elif c == "#":
                j = src.find("\n", i)
                i = end if j < 0 else j
            else:
                break
        return i

    def literals(self, start: int, end: int):
        """Yield (prefix, quote, body_start, body_end, lit_start, lit_end) in a span."""
        src = self.src
        i = self.skip_gap(start, end)
        while i < end:
            m = _PREFIX_RE.match(src, i)
            if m is None:
                raise ValueError("not a string literal")
            prefix = m.group(0).lower()
            q = m.end()
            quote = src[q] * 3 if src.startswith(src[q] * 3, q) else src[q]
            body = q + len(quote)
            j = body
            raw = "r" in prefix
            fstr = "f" in prefix
            depth = 0
            while True:
                if j >= len(src):
                    raise ValueError("unterminated literal")
                c = src[j]
                if c == "\\" and not (fstr and depth):
                    j += 2
                    continue
                if fstr and c in "{}":
                    if depth == 0 and src.startswith(c * 2, j):
                        j += 2
                        continue
                    depth += 1 if c == "{" else -1
                    depth = max(depth, 0)
                    j += 1
                    continue
                if fstr and depth and c in "'\"":
                    # a string inside a replacement field
                    k = src.find(c, j + 1)
                    j = (k + 1) if k >= 0 else len(src)
                    continue
                if depth == 0 and src.startswith(quote, j):
                    break
                j += 1
            yield prefix, quote, body, j, i, j + len(quote)
            i = self.skip_gap(j + len(quote), end)

    def decode(self, prefix: str, quote: str, a: int, b: int, lit: tuple[int, int],
               fields: list | None = None) -> MStr:
        """The value of a literal body src[a:b] with its map.

        For f-strings, each replacement field is replaced by ``fields.pop(0)`` (an MStr).
        """
        src = self.src
        raw = "r" in prefix
        fstr = "f" in prefix
        out: list[str] = []
        mp: list[int] = []
        vb = bytearray()
        piece = (lit[0], lit[1], raw, quote)
        i = a
        while i < b:
            c = src[i]
            if c == "\r":
                # the tokenizer reads \r\n and \r as \n
                out.append("\n"); mp.append(i); vb.append(0)
                i += 2 if src.startswith("\r\n", i) else 1
                continue
            if fstr and c in "{}":
                if src.startswith(c * 2, i):
                    out.append(c); mp.append(i); vb.append(0)
                    i += 2
                    continue
                if c == "{":
                    j = _field_end(src, i, b)
                    if fields is None or not fields:
                        raise ValueError("f-string field without a value")
                    val = fields.pop(0)
                    out.append(val.text); mp.extend(val.map); vb.extend(val.verb)
                    i = j
                    continue
                raise ValueError("single '}' in f-string")
            if c == "\\" and not raw:
                n = src[i + 1] if i + 1 < b else ""
                if n in "\r\n":                     # line continuation inside the string
                    i += 3 if src.startswith("\r\n", i + 1) else 2
                    continue
                if n in _ESCAPES:
                    out.append(_ESCAPES[n]); mp.append(i); vb.append(0)
                    i += 2
                    continue
                if n in "01234567":
                    m = re.match(r"[0-7]{1,3}", src[i + 1:i + 4])
                    assert m is not None
                    out.append(chr(int(m.group(0), 8))); mp.append(i); vb.append(0)
                    i += 1 + len(m.group(0))
                    continue
                width = {"x": 2, "u": 4, "U": 8}.get(n)
                if width and "b" not in prefix:
                    hexd = src[i + 2:i + 2 + width]
                    out.append(chr(int(hexd, 16))); mp.append(i); vb.append(0)
                    i += 2 + width
                    continue
                if n == "N":
                    close = src.index("}", i)
                    out.append(unicodedata.lookup(src[i + 3:close])); mp.append(i); vb.append(0)
                    i = close + 1
                    continue
                # unknown escape: backslash kept as itself
                out.append("\\"); mp.append(i); vb.append(1)
                i += 1
                continue
            if c == "\\" and raw and i + 1 < b:
                # in a raw string the backslash stays, and protects the next char
                out.append(c); mp.append(i); vb.append(1)
                n = src[i + 1]
                if n == "\r":
                    out.append("\n"); mp.append(i + 1); vb.append(0)
                    i += 3 if src.startswith("\r\n", i + 1) else 2
                else:
                    out.append(n); mp.append(i + 1); vb.append(1)
                    i += 2
                continue
            out.append(c); mp.append(i); vb.append(1)
            i += 1
        return MStr("".join(out), mp, vb, [piece])


def _field_end(src: str, i: int, b: int) -> int:
    """Index just past the '}' closing the f-string field that opens at src[i]."""
    depth = 0
    j = i
    while j < b:
        c = src[j]
        if c in "'\"":
            k = src.find(c, j + 1)
            j = (k + 1) if k >= 0 else b
            continue
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise ValueError("unterminated f-string field")


# ---------------------------------------------------------------------------------------
# scopes and bindings


@dataclass
class _Binding:
    line: int
    value: ast.expr
    aug: bool
    direct: bool             # a statement of the scope's own body (not under if/for/try)


class _Scope:
    """A module, class or function body; its bindings are collected on first use."""

    def __init__(self, node: ast.AST, parent: "_Scope | None"):
        self.node = node
        self.parent = parent
        self._bindings: dict[str, list[_Binding]] | None = None
        self._params: set[str] = set()

    @property
    def params(self) -> set[str]:
        self.bindings        # noqa: B018 (collects)
        return self._params

    @property
    def bindings(self) -> dict[str, list[_Binding]]:
        if self._bindings is None:
            self._bindings = {}
            node = self.node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = node.args
                for arg in a.posonlyargs + a.args + a.kwonlyargs:
                    self._params.add(arg.arg)
                if a.vararg:
                    self._params.add(a.vararg.arg)
                if a.kwarg:
                    self._params.add(a.kwarg.arg)
                body = node.body if isinstance(node.body, list) else []
            else:
                body = getattr(node, "body", [])
            self._collect(body, direct=True)
        return self._bindings

    def _collect(self, stmts, direct: bool) -> None:
        for st in stmts:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._bind(st.name, st.lineno, None, direct)   # shadows any string
                continue
            if isinstance(st, ast.Assign):
                for t in st.targets:
                    if isinstance(t, ast.Name):
                        self._bind(t.id, st.lineno, st.value, direct)
                    else:
                        for n in ast.walk(t):
                            if isinstance(n, ast.Name):
                                self._bind(n.id, st.lineno, None, direct)
            elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                if st.value is not None:
                    self._bind(st.target.id, st.lineno, st.value, direct)
            elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
                if isinstance(st.op, ast.Add):
                    self._bindings.setdefault(st.target.id, []).append(
                        _Binding(st.lineno, st.value, True, direct))
                else:
                    self._bind(st.target.id, st.lineno, None, direct)
            elif isinstance(st, (ast.For, ast.AsyncFor)):
                for n in ast.walk(st.target):
                    if isinstance(n, ast.Name):
                        self._bind(n.id, st.lineno, None, False)
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                for alias in st.names:
                    self._bind((alias.asname or alias.name).split(".")[0], st.lineno, None,
                               direct)
            for name in ("body", "orelse", "finalbody"):
                sub = getattr(st, name, None)
                if isinstance(sub, list) and not isinstance(
                        st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self._collect(sub, direct=False)
            for h in getattr(st, "handlers", []) or []:
                self._collect(h.body, direct=False)
            if isinstance(st, ast.With) or isinstance(st, ast.AsyncWith):
                for item in st.items:
                    if item.optional_vars is not None:
                        for n in ast.walk(item.optional_vars):
                            if isinstance(n, ast.Name):
                                self._bind(n.id, st.lineno, None, False)
            if hasattr(ast, "Match") and isinstance(st, ast.Match):
                for case in st.cases:
                    self._collect(case.body, direct=False)

    def _bind(self, name: str, line: int, value, direct: bool) -> None:
        self._bindings.setdefault(name, []).append(_Binding(line, value, False, direct))


# ---------------------------------------------------------------------------------------
# the extractor


class _Extractor:
    def __init__(self, text: str):
        self.text = text
        self.scanner = _Scanner(text)
        self.opaque = _Opaque()
        self.aliases: dict[str, str] = {}
        # char offset of the start of each line as ast counts lines
        starts = [0]
        for m in re.finditer(r"\r\n|\r|\n", text):
            starts.append(m.end())
        self.line_starts = starts
        self._ascii = text.isascii()

    # -- positions ----------------------------------------------------------------------

    def offset(self, line: int, col_bytes: int) -> int:
        if line - 1 >= len(self.line_starts):
            return len(self.text)
        start = self.line_starts[line - 1]
        if self._ascii:
            return start + col_bytes
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        raw = self.text[start:end].encode("utf-8", "surrogatepass")
        return start + len(raw[:col_bytes].decode("utf-8", "surrogatepass"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        s = self.offset(node.lineno, node.col_offset)          # type: ignore[attr-defined]
        e = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return s, e

    # -- names --------------------------------------------------------------------------

    def qualname(self, expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return self.aliases.get(expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.qualname(expr.value)
            return f"{base}.{expr.attr}" if base else None
        return None

    # -- values -------------------------------------------------------------------------

    def lookup(self, name: str, scope: _Scope | None, line: int, depth: int):
        """(scope, bindings) of a name as seen at `line`, or None when not one value.

        In the innermost scope only bindings above `line` count; in enclosing scopes
        (a function reading a module constant) every binding counts, and there must be
        one plain assignment (plus any later ``+=``) to follow.
        """
        first = True
        while scope is not None:
            if not first and isinstance(scope.node, ast.ClassDef):
                scope = scope.parent            # class bodies do not enclose methods
                continue
            if name in scope.params:
                return None
            binds = scope.bindings.get(name)
            if binds:
                cands = [b for b in binds if b.line < line] if first else binds
                if not cands:
                    return None
                if len(cands) > 1 and not all(b.direct for b in cands):
                    return None
                last_plain = max((k for k, b in enumerate(cands) if not b.aug), default=-1)
                if last_plain < 0 or cands[last_plain].value is None:
                    return None
                return scope, cands[last_plain:]
            scope = scope.parent
            first = False
        return None

    def string(self, expr: ast.expr, scope: _Scope | None, depth: int = 0) -> MStr | None:
        """The mapped value of a string expression, or None when it is not known."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, ast.Constant):
            if isinstance(expr.value, str):
                return self.literal(expr)
            return None
        if isinstance(expr, ast.JoinedStr):
            return self.fstring(expr, scope, depth)
        if isinstance(expr, ast.Name):
            found = self.lookup(expr.id, scope, expr.lineno, depth)
            if found is None:
                return None
            owner, binds = found
            val = None
            for b in binds:
                part = self.string(b.value, owner, depth + 1)
                if part is None:
                    return None
                val = part if val is None else val + part
            return val
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            left = self.string(expr.left, scope, depth + 1)
            right = self.string(expr.right, scope, depth + 1) if left is not None else None
            return left + right if left is not None and right is not None else None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
            template = self.string(expr.left, scope, depth + 1)
            if template is None:
                return None
            return self.percent(template, expr.right, scope, depth)
        if isinstance(expr, ast.Call):
            fn = expr.func
            if self.qualname(fn) in _DEDENT and len(expr.args) == 1 and not expr.keywords:
                inner = self.string(expr.args[0], scope, depth + 1)
                return dedent(inner) if inner is not None else None
            if isinstance(fn, ast.Attribute):
                if fn.attr in ("strip", "lstrip", "rstrip") and not expr.args \
                        and not expr.keywords:
                    inner = self.string(fn.value, scope, depth + 1)
                    return strip(inner, fn.attr) if inner is not None else None
                if fn.attr == "format":
                    template = self.string(fn.value, scope, depth + 1)
                    if template is None:
                        return None
                    return self.format(template, expr, scope, depth)
                if fn.attr == "join" and len(expr.args) == 1 and not expr.keywords:
                    sep = self.string(fn.value, scope, depth + 1)
                    seq = expr.args[0]
                    if sep is None or not isinstance(seq, (ast.List, ast.Tuple)):
                        return None
                    out: MStr | None = None
                    for k, item in enumerate(seq.elts):
                        part = self.string(item, scope, depth + 1)
                        if part is None:
                            return None
                        out = part if out is None else out + sep + part
                    return out if out is not None else MStr()
        return None

    def const(self, expr: ast.expr, scope: _Scope | None, depth: int = 0):
        """An int/float/str constant value, or None (never a guess)."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float, str)) \
                and not isinstance(expr.value, bool):
            return expr.value
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
            v = self.const(expr.operand, scope, depth + 1)
            return -v if isinstance(v, (int, float)) else None
        if isinstance(expr, ast.Name):
            found = self.lookup(expr.id, scope, expr.lineno, depth)
            if found is None:
                return None
            owner, binds = found
            if len(binds) != 1:
                return None
            return self.const(binds[0].value, owner, depth + 1)
        if isinstance(expr, ast.BinOp):
            a = self.const(expr.left, scope, depth + 1)
            b = self.const(expr.right, scope, depth + 1)
            if a is None or b is None:
                return None
            return _arith(expr.op, a, b)
        return None

    def placeholder(self, value_expr: ast.expr | None, scope, depth: int,
                    spec: str = "", conversion: str = "") -> MStr:
        value = self.const(value_expr, scope, depth + 1) if value_expr is not None else None
        if value is None:
            return self.opaque.token()
        try:
            if conversion == "r":
                value = repr(value)
            elif conversion in ("s", "a"):
                value = str(value) if conversion == "s" else ascii(value)
            return MStr.synthetic(format(value, spec))
        except (ValueError, TypeError):
            return self.opaque.token()

    # -- literal forms ------------------------------------------------------------------

    def literal(self, node: ast.Constant) -> MStr | None:
        s, e = self.span(node)
        try:
            out = MStr()
            for prefix, quote, a, b, ls, le in self.scanner.literals(s, e):
                if "b" in prefix or "f" in prefix:
                    return None
                out = out + self.scanner.decode(prefix, quote, a, b, (ls, le))
        except (ValueError, IndexError, KeyError, AssertionError):
            out = None
        if out is None or out.text != node.value:
            # the scanner disagrees with Python: keep the value, map it to nothing
            return MStr.synthetic(node.value)
        return out

    def fstring(self, node: ast.JoinedStr, scope, depth: int) -> MStr | None:
        fields = [self._fvalue(v, scope, depth) for v in node.values
                  if isinstance(v, ast.FormattedValue)]
        s, e = self.span(node)
        try:
            out = MStr()
            for prefix, quote, a, b, ls, le in self.scanner.literals(s, e):
                if "b" in prefix:
                    return None
                out = out + self.scanner.decode(prefix, quote, a, b, (ls, le), fields)
        except (ValueError, IndexError, KeyError, AssertionError):
            return None
        if fields:
            return None          # the scanner and ast disagree on the fields
        return out

    def _fvalue(self, v: ast.FormattedValue, scope, depth: int) -> MStr:
        spec = ""
        if v.format_spec is not None:
            parts = []
            for p in getattr(v.format_spec, "values", []):
                if isinstance(p, ast.Constant) and isinstance(p.value, str):
                    parts.append(p.value)
                else:
                    return self.opaque.token()
            spec = "".join(parts)
        conv = chr(v.conversion) if v.conversion and v.conversion > 0 else ""
        return self.placeholder(v.value, scope, depth, spec, conv)

    def format(self, template: MStr, call: ast.Call, scope, depth: int) -> MStr | None:
        if any(isinstance(a, ast.Starred) for a in call.args) or \
                any(k.arg is None for k in call.keywords):
            values_known = False
        else:
            values_known = True
        kwargs = {k.arg: k.value for k in call.keywords if k.arg}
        t = template.text
        out = MStr()
        auto = 0
        i = 0
        lit_start = 0
        while i < len(t):
            c = t[i]
            if c in "{}" and i + 1 < len(t) and t[i + 1] == c:
                out = out + template.slice(lit_start, i + 1)
                i += 2
                lit_start = i
                continue
            if c == "}":
                return None                        # str.format would raise
            if c != "{":
                i += 1
                continue
            j = _format_field_end(t, i)
            if j < 0:
                return None
            out = out + template.slice(lit_start, i)
            body = t[i + 1:j - 1]
            m = re.match(r"([^!:.\[]*)([.\[][^!:]*)?(?:!([rsa]))?(?::(.*))?$", body, re.S)
            if m is None:
                return None
            name, rest, conv, spec = m.group(1), m.group(2), m.group(3) or "", m.group(4) or ""
            if "{" in spec:
                value_expr = None
            elif name == "":
                value_expr = call.args[auto] if auto < len(call.args) else None
                auto += 1
            elif name.isdigit():
                k = int(name)
                value_expr = call.args[k] if k < len(call.args) else None
            else:
                value_expr = kwargs.get(name)
            if rest or not values_known:
                value_expr = None
            out = out + self.placeholder(value_expr, scope, depth, spec, conv)
            i = j
            lit_start = i
        return out + template.slice(lit_start, len(t))

    _PCT = re.compile(r"%(?:\((\w+)\))?([#0\- +]*)(\d+)?(?:\.(\d+))?[hlL]?([diouxXeEfFgGcrsa%])")

    def percent(self, template: MStr, right: ast.expr, scope, depth: int) -> MStr | None:
        t = template.text
        if isinstance(right, ast.Tuple):
            seq: list[ast.expr] | None = list(right.elts)
            mapping = None
        elif isinstance(right, ast.Dict):
            seq = None
            mapping = {k.value: v for k, v in zip(right.keys, right.values)
                       if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        else:
            seq, mapping = [right], None
        out = MStr()
        pos = 0
        k = 0
        for m in self._PCT.finditer(t):
            out = out + template.slice(pos, m.start())
            pos = m.end()
            if m.group(5) == "%":
                out = out + template.slice(m.start(), m.start() + 1)
                continue
            key = m.group(1)
            if key is not None:
                expr = mapping.get(key) if mapping is not None else None
            else:
                expr = seq[k] if seq is not None and k < len(seq) else None
                k += 1
            value = self.const(expr, scope, depth + 1) if expr is not None else None
            if value is None:
                out = out + self.opaque.token()
                continue
            spec = "%" + m.group(2) + (m.group(3) or "") + \
                (("." + m.group(4)) if m.group(4) else "") + m.group(5)
            try:
                out = out + MStr.synthetic(spec % (value,))
            except (TypeError, ValueError, OverflowError):
                out = out + self.opaque.token()
        return out + template.slice(pos, len(t))


def _format_field_end(t: str, i: int) -> int:
    depth = 0
    for j in range(i, len(t)):
        if t[j] == "{":
            depth += 1
        elif t[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


def _arith(op: ast.operator, a, b):
    try:
        if isinstance(a, str) or isinstance(b, str):
            return a + b if isinstance(op, ast.Add) and isinstance(a, str) \
                and isinstance(b, str) else None
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            v = a * b
            return v if abs(v) < 1 << 64 else None
        if isinstance(op, ast.FloorDiv):
            return a // b
        if isinstance(op, ast.Mod):
            return a % b
        if isinstance(op, ast.LShift) and isinstance(a, int) and isinstance(b, int) \
                and 0 <= b < 64:
            return a << b
        if isinstance(op, ast.RShift) and isinstance(a, int) and isinstance(b, int) \
                and b >= 0:
            return a >> b
    except (ZeroDivisionError, TypeError, OverflowError):
        return None
    return None


# ---------------------------------------------------------------------------------------
# string operations that keep the map


def dedent(s: MStr) -> MStr:
    """``textwrap.dedent`` on a mapped string (same algorithm, same result)."""
    text = s.text
    # whitespace-only lines become empty (textwrap's _whitespace_only_re)
    keep = [True] * len(text)
    for m in re.finditer(r"^[ \t]+$", text, re.MULTILINE):
        for k in range(m.start(), m.end()):
            keep[k] = False
    text2 = "".join(c for c, k in zip(text, keep) if k)
    idx = [i for i, k in enumerate(keep) if k]
    margin = None
    for m in re.finditer(r"(^[ \t]*)(?:[^ \t\n])", text2, re.MULTILINE):
        indent = m.group(1)
        if margin is None:
            margin = indent
        elif indent.startswith(margin):
            pass
        elif margin.startswith(indent):
            margin = indent
        else:
            for x, (a, b) in enumerate(zip(margin, indent)):
                if a != b:
                    margin = margin[:x]
                    break
    if margin:
        for m in re.finditer(r"(?m)^" + re.escape(margin), text2):
            for k in range(m.start(), m.end()):
                keep[idx[k]] = False
    chosen = [i for i, k in enumerate(keep) if k]
    return MStr("".join(text[i] for i in chosen), [s.map[i] for i in chosen],
                bytearray(s.verb[i] for i in chosen), s.pieces)


def strip(s: MStr, how: str) -> MStr:
    text = s.text
    a, b = 0, len(text)
    if how in ("strip", "lstrip"):
        a = len(text) - len(text.lstrip())
    if how in ("strip", "rstrip"):
        b = len(text.rstrip())
    b = max(a, b)
    return s.slice(a, b)


# ---------------------------------------------------------------------------------------
# ElementwiseKernel / ReductionKernel wrappers

_DTYPES = {
    "bool": "bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short",
    "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int",
    "int64": "long long", "uint64": "unsigned long long", "float16": "half",
    "float32": "float", "float64": "double", "complex64": "complex<float>",
    "complex128": "complex<double>", "float": "float", "double": "double", "int": "int",
}
_PARAM_RE = re.compile(r"^\s*(raw\s+)?([A-Za-z_][\w:<>]*)\s+([A-Za-z_]\w*)\s*$")


def _params(spec: str, out: bool, typenames: list[str]) -> list[str] | None:
    if not spec.strip():
        return []
    decls = []
    for part in spec.split(","):
        m = _PARAM_RE.match(part)
        if m is None:
            return None
        raw, ty, name = m.group(1), m.group(2), m.group(3)
        cty = _DTYPES.get(ty)
        if cty is None:
            cty = ty
            if ty not in typenames:
                typenames.append(ty)
        if raw:
            decls.append(f"{cty}* {name}")
        elif out:
            decls.append(f"{cty}& {name}")
        else:
            decls.append(f"const {cty} {name}")
    return decls


def _wrap(parts: list[tuple[str, MStr | None]]) -> MStr:
    out = MStr()
    for synthetic, real in parts:
        if synthetic:
            out = out + MStr.synthetic(synthetic)
        if real is not None:
            out = out + real
    return out


# ---------------------------------------------------------------------------------------
# entry point


def extract_python_units(text: str, filename: str = "<python>") -> PythonExtraction:
    """Every CUDA unit held in a Python file. Never raises."""
    result = PythonExtraction()
    if not any(w in text for w in API_WORDS) or _API_USE.search(text) is None:
        return result
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # invalid escapes in kernel strings
            tree = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        off = 0
        if exc.lineno:
            ex = _Extractor(text)
            off = ex.offset(exc.lineno, 0) + max(0, (exc.offset or 1) - 1)
        result.notes.append((min(off, len(text)), f"Python syntax error ({exc.msg}); "
                             "kernel strings in this file were not analysed"))
        return result
    except (ValueError, RecursionError, MemoryError) as exc:
        result.notes.append((0, f"could not parse this Python file ({type(exc).__name__}); "
                             "kernel strings in it were not analysed"))
        return result
    try:
        _Collector(text, tree, result).run()
    except RecursionError:
        result.notes.append((0, "Python expressions nested too deeply; kernel strings in "
                             "this file were not analysed"))
    return result


_API_QUALNAMES = {
    **{q: "cupy.RawKernel" for q in _CUPY_RAW}, **{q: "cupy.RawModule" for q in _CUPY_MODULE},
    **{q: "cupy.ElementwiseKernel" for q in _CUPY_ELEMENTWISE},
    **{q: "cupy.ReductionKernel" for q in _CUPY_REDUCTION},
    **{q: "pycuda.SourceModule" for q in _PYCUDA}, **{q: "torch.load_inline" for q in _TORCH},
}
_COMPOUND_BODIES = ("body", "orelse", "finalbody")
_HEADER_FIELDS = ("test", "iter", "target", "items", "subject", "value", "targets")


class _Collector:
    """Finds the API calls and their launches without visiting every expression.

    Statements are walked (cheap); the expressions of a statement are walked only when
    the statement's lines mention an API name, an alias of one, or a kernel handle.
    """

    def __init__(self, text: str, tree: ast.Module, result: PythonExtraction):
        self.ex = _Extractor(text)
        self.text = text
        self.tree = tree
        self.result = result
        self.calls: list[tuple[ast.Call, str, _Scope | None]] = []
        # (statement or header expression, scope) whose expressions may hold calls
        self.pending: list[tuple[ast.AST, _Scope]] = []

    def run(self) -> None:
        module = _Scope(self.tree, None)
        self.statements(self.tree.body, module)
        api_names = {a for a, q in self.ex.aliases.items() if q in _API_QUALNAMES}
        if not api_names and not any(q.split(".")[0] in ("cupy", "pycuda", "torch")
                                     for q in self.ex.aliases.values()):
            return
        words = set(api_names) | {q.rsplit(".", 1)[-1] for q in _API_QUALNAMES}
        hot = self.lines_matching(words)
        for node, scope in self.pending:
            if self.touches(node, hot):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Call):
                        api = _API_QUALNAMES.get(self.ex.qualname(sub.func) or "")
                        if api is not None:
                            self.calls.append((sub, api, scope))
        self.calls.sort(key=lambda c: (c[0].lineno, c[0].col_offset))
        for call, api, scope in self.calls:
            self.result.kernels.extend(self.kernels_of(call, api, scope))
        self.attach_launches()

    # -- walking ------------------------------------------------------------------------

    def statements(self, body: list, scope: _Scope) -> None:
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.statements(st.body, _Scope(st, scope))
                continue
            if isinstance(st, ast.Import):
                for a in st.names:
                    if a.asname:
                        self.ex.aliases[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.ex.aliases[top] = top
                continue
            if isinstance(st, ast.ImportFrom):
                if st.module and st.level == 0:
                    for a in st.names:
                        if a.name != "*":
                            self.ex.aliases[a.asname or a.name] = f"{st.module}.{a.name}"
                continue
            bodies = [getattr(st, f) for f in _COMPOUND_BODIES
                      if isinstance(getattr(st, f, None), list)]
            bodies += [h.body for h in getattr(st, "handlers", None) or []]
            bodies += [c.body for c in getattr(st, "cases", None) or []]
            if not bodies:
                self.pending.append((st, scope))
                continue
            for f in _HEADER_FIELDS:
                v = getattr(st, f, None)
                for e in (v if isinstance(v, list) else [v]):
                    if isinstance(e, ast.AST):
                        self.pending.append((e, scope))
            for b in bodies:
                self.statements(b, scope)

    def lines_matching(self, words: set[str]) -> set[int]:
        if not words:
            return set()
        rx = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(words))) + r")\b")
        starts = self.ex.line_starts
        return {bisect.bisect_right(starts, m.start()) for m in rx.finditer(self.text)}

    @staticmethod
    def touches(node: ast.AST, lines: set[int]) -> bool:
        first = getattr(node, "lineno", None)
        if first is None:
            return True
        last = getattr(node, "end_lineno", first) or first
        if last - first > 64:
            return any(first <= ln <= last for ln in lines)
        return any(ln in lines for ln in range(first, last + 1))

    # -- arguments ----------------------------------------------------------------------

    @staticmethod
    def arg(call: ast.Call, pos: int | None, kw: str) -> ast.expr | None:
        for k in call.keywords:
            if k.arg == kw:
                return k.value
        if pos is not None and pos < len(call.args) and not any(
                isinstance(a, ast.Starred) for a in call.args[:pos + 1]):
            return call.args[pos]
        return None

    def options(self, expr: ast.expr | None, scope) -> tuple[list[PyOption], bool]:
        if expr is None:
            return [], False
        if isinstance(expr, ast.Name):
            found = self.ex.lookup(expr.id, scope, expr.lineno, 0)
            if found is None or len(found[1]) != 1:
                return [], True
            return self.options(found[1][0].value, found[0])
        if isinstance(expr, ast.Constant) and expr.value is None:
            return [], False
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            s, e = self.ex.span(expr)
            return [PyOption(expr.value, s, e)], False
        if isinstance(expr, (ast.List, ast.Tuple)):
            out: list[PyOption] = []
            opaque = False
            for el in expr.elts:
                v = self.ex.const(el, scope)
                if isinstance(v, str):
                    s, e = self.ex.span(el)
                    out.append(PyOption(v, s, e))
                else:
                    opaque = True
            return out, opaque
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            a, oa = self.options(expr.left, scope)
            b, ob = self.options(expr.right, scope)
            return a + b, oa or ob
        return [], True

    def kernels_of(self, call: ast.Call, api: str, scope) -> list[EmbeddedKernel]:
        ex = self.ex
        cs, ce = ex.span(call)
        name = None
        pieces: list[MStr] = []
        opts_expr = None
        no_extern_c = False
        if api == "cupy.RawKernel":
            code = self.arg(call, 0, "code")
            nm = self.arg(call, 1, "name")
            name = ex.const(nm, scope) if nm is not None else None
            opts_expr = self.arg(call, 2, "options")
            s = ex.string(code, scope) if code is not None else None
            pieces = [s] if s is not None else []
        elif api == "cupy.RawModule":
            code = self.arg(call, 0, "code")
            opts_expr = self.arg(call, None, "options")
            s = ex.string(code, scope) if code is not None else None
            pieces = [s] if s is not None else []
        elif api == "pycuda.SourceModule":
            code = self.arg(call, 0, "source")
            opts_expr = self.arg(call, 2, "options")
            nec = self.arg(call, 4, "no_extern_c")
            no_extern_c = isinstance(nec, ast.Constant) and nec.value is True
            s = ex.string(code, scope) if code is not None else None
            pieces = [s] if s is not None else []
        elif api == "torch.load_inline":
            nm = self.arg(call, 0, "name")
            name = ex.const(nm, scope) if nm is not None else None
            code = self.arg(call, 2, "cuda_sources")
            opts_expr = self.arg(call, 5, "extra_cuda_cflags")
            if code is not None:
                items = code.elts if isinstance(code, (ast.List, ast.Tuple)) else [code]
                if isinstance(code, ast.Name):
                    found = ex.lookup(code.id, scope, code.lineno, 0)
                    if found and len(found[1]) == 1 and isinstance(
                            found[1][0].value, (ast.List, ast.Tuple)):
                        items = found[1][0].value.elts
                        scope = found[0]
                parts = [ex.string(i, scope) for i in items]
                if parts and all(p is not None for p in parts):
                    joined = parts[0]
                    for p in parts[1:]:
                        joined = joined + MStr.synthetic("\n") + p
                    pieces = [joined]
        elif api == "cupy.ElementwiseKernel":
            text = self.elementwise(call, scope)
            name_e = self.arg(call, 3, "name")
            name = ex.const(name_e, scope) if name_e is not None else "kernel"
            opts_expr = self.arg(call, None, "options")
            pieces = [text] if text is not None else []
        elif api == "cupy.ReductionKernel":
            text = self.reduction(call, scope)
            name_e = self.arg(call, 6, "name")
            name = ex.const(name_e, scope) if name_e is not None else "reduce_kernel"
            opts_expr = self.arg(call, None, "options")
            pieces = [text] if text is not None else []
        if not pieces:
            return []
        options, opaque = self.options(opts_expr, scope)
        out = []
        for m in pieces:
            k = EmbeddedKernel(api=api, text=m.text, char_map=m.map, verbatim=m.verb,
                               call_start=cs, call_end=ce,
                               name=name if isinstance(name, str) else None,
                               options=options, options_opaque=opaque,
                               no_extern_c=no_extern_c,
                               pieces=sorted({p for p in m.pieces}))
            out.append(k)
            k._call = call          # type: ignore[attr-defined]
        return out

    def elementwise(self, call: ast.Call, scope) -> MStr | None:
        ex = self.ex
        in_e, out_e, op_e = (self.arg(call, 0, "in_params"), self.arg(call, 1, "out_params"),
                             self.arg(call, 2, "operation"))
        if in_e is None or out_e is None or op_e is None:
            return None
        ins, outs = ex.const(in_e, scope), ex.const(out_e, scope)
        op = ex.string(op_e, scope)
        if not isinstance(ins, str) or not isinstance(outs, str) or op is None:
            return None
        name = ex.const(self.arg(call, 3, "name") or ast.Constant("kernel"), scope)
        typenames: list[str] = []
        pin, pout = _params(ins, False, typenames), _params(outs, True, typenames)
        if pin is None or pout is None:
            return None
        extra = {}
        for kw in ("preamble", "loop_prep", "after_loop"):
            e = self.arg(call, None, kw)
            extra[kw] = ex.string(e, scope) if e is not None else None
        template = "template <" + ", ".join(f"typename {t}" for t in typenames) + ">\n" \
            if typenames else ""
        linkage = template or 'extern "C" '      # templates cannot have C linkage
        head = (f'\n{linkage}__global__ void '
                f'{name if isinstance(name, str) and name.isidentifier() else "kernel"}'
                f'({", ".join(pin + pout + ["long long _ind_size"])}) {{\n')
        return _wrap([("", extra["preamble"]), (head, extra["loop_prep"]),
                      ("\nfor (long long i = blockIdx.x * blockDim.x + threadIdx.x; "
                       "i < _ind_size; i += blockDim.x * gridDim.x) {\n", op),
                      (";\n}\n", extra["after_loop"]), ("\n}\n", None)])

    def reduction(self, call: ast.Call, scope) -> MStr | None:
        ex = self.ex
        ins = ex.const(self.arg(call, 0, "in_params") or ast.Constant(None), scope)
        outs = ex.const(self.arg(call, 1, "out_params") or ast.Constant(None), scope)
        exprs = []
        for pos, kw in ((2, "map_expr"), (3, "reduce_expr"), (4, "post_map_expr")):
            e = self.arg(call, pos, kw)
            exprs.append(ex.string(e, scope) if e is not None else None)
        if not isinstance(ins, str) or not isinstance(outs, str) or None in exprs:
            return None
        typenames: list[str] = []
        pin, pout = _params(ins, False, typenames), _params(outs, True, typenames)
        if pin is None or pout is None:
            return None
        pre_e = self.arg(call, None, "preamble")
        preamble = ex.string(pre_e, scope) if pre_e is not None else None
        rtype = "float"
        typenames.append("_type_reduce")
        template = "template <" + ", ".join(f"typename {t}" for t in typenames) + ">\n"
        name = ex.const(self.arg(call, 6, "name") or ast.Constant("reduce_kernel"), scope)
        head = (f'\n{template}__global__ void '
                f'{name if isinstance(name, str) and name.isidentifier() else "reduce_kernel"}'
                f'({", ".join(pin + pout + ["long long _in_ind_size"])}) {{\n'
                "long long i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "_type_reduce _m = (_type_reduce)(")
        del rtype
        return _wrap([("", preamble), (head, exprs[0]),
                      (");\n_type_reduce a = _m, b = _m;\na = (_type_reduce)(", exprs[1]),
                      (");\n{\n", exprs[2]), (";\n}\n}\n", None)])

    # -- launches -----------------------------------------------------------------------

    def attach_launches(self) -> None:
        if not self.result.kernels:
            return
        ex = self.ex
        by_call = {id(getattr(k, "_call")): k for k in self.result.kernels}
        # variables bound to an API call, and to mod.get_function("name")
        handles: dict[str, tuple[list[EmbeddedKernel], str | None]] = {}
        ambiguous: set[str] = set()

        def bind(name: str, value) -> None:
            if name in handles or name in ambiguous:
                handles.pop(name, None)
                ambiguous.add(name)
                return
            handles[name] = value

        assigns: list[ast.Assign] = []
        for node, _ in self.pending:
            if isinstance(node, ast.Assign):
                assigns.append(node)
        assigns.sort(key=lambda n: n.lineno)
        for node in assigns:
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                continue
            target, value = node.targets[0].id, node.value
            if isinstance(value, ast.Call) and id(value) in by_call:
                k = by_call[id(value)]
                bind(target, ([k], k.name))
            elif isinstance(value, ast.Call):
                got = self.get_function(value, handles)
                if got is not None:
                    bind(target, got)
        if not handles:
            return
        hot = self.lines_matching(set(handles))
        for node, scope in self.pending:
            if not self.touches(node, hot):
                continue
            for call in ast.walk(node):
                if not isinstance(call, ast.Call):
                    continue
                target = None
                if isinstance(call.func, ast.Name) and call.func.id in handles:
                    target = handles[call.func.id]
                elif isinstance(call.func, ast.Call):
                    target = self.get_function(call.func, handles)
                if target is None:
                    continue
                kernels, kname = target
                launch = self.launch(call, scope, kernels[0].api, kname)
                if launch is not None:
                    for k in kernels:
                        k.launches.append(launch)

    def get_function(self, call: ast.Call, handles):
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr in ("get_function", "get_kernel") and \
                len(call.args) >= 1 and isinstance(f.value, ast.Name) and \
                f.value.id in handles:
            name = self.ex.const(call.args[0], None)
            if isinstance(name, str):
                return handles[f.value.id][0], name
        return None

    def dims(self, expr: ast.expr | None, scope) -> tuple[int, ...] | None:
        if expr is None:
            return None
        if isinstance(expr, ast.Name):
            found = self.ex.lookup(expr.id, scope, expr.lineno, 0)
            if found is not None and len(found[1]) == 1 and isinstance(
                    found[1][0].value, (ast.Tuple, ast.List)):
                return self.dims(found[1][0].value, found[0])
        elts = expr.elts if isinstance(expr, (ast.Tuple, ast.List)) else [expr]
        vals = []
        for e in elts:
            v = self.ex.const(e, scope)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                return None
            vals.append(v)
        return tuple(vals) if 1 <= len(vals) <= 3 else None

    def launch(self, call: ast.Call, scope, api: str, kname: str | None) -> PyLaunch | None:
        s, e = self.ex.span(call)
        if api.startswith("pycuda"):
            block = self.arg(call, None, "block")
            grid = self.arg(call, None, "grid")
            shared = self.arg(call, None, "shared")
        else:
            grid = self.arg(call, 0, "grid")
            block = self.arg(call, 1, "block")
            shared = self.arg(call, None, "shared_mem")
        if block is None:
            return None
        smem = self.ex.const(shared, scope) if shared is not None else 0
        return PyLaunch(kernel=kname, block=self.dims(block, scope),
                        grid=self.dims(grid, scope),
                        shared_mem=smem if isinstance(smem, int) else None, start=s, end=e)
