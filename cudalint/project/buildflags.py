"""The build model: which nvcc flags each CUDA unit is built with, and where each flag was
written.

Build descriptions are read, never run:

* Python (:func:`python_builds`, with :mod:`ast`): setuptools/torch ``CUDAExtension`` /
  ``CppExtension`` / ``Extension(extra_compile_args={'nvcc': [...]})``, torch
  ``load(...)``/``load_inline(...)`` ``extra_cuda_cflags``, CuPy ``RawKernel`` /
  ``RawModule`` / ``ElementwiseKernel`` / ``ReductionKernel`` ``options``, PyCUDA
  ``SourceModule(options=...)``. Flag lists may be literals, names bound to them, ``+``,
  ``+=``, ``.append``/``.extend``/``.insert``, ``d['nvcc']`` items and ``str.split()``.
* CMake (:func:`cmake_builds`, tree-sitter-cmake): ``CMAKE_CUDA_FLAGS[_<CONFIG>]`` via
  ``set``/``string(APPEND)``, ``CUDA_NVCC_FLAGS`` (FindCUDA), ``add_compile_options`` and
  ``target_compile_options`` (generator expressions for another language are dropped),
  ``cuda_add_library(... OPTIONS ...)``; targets' sources from ``add_library`` /
  ``add_executable`` / ``cuda_add_*`` / ``target_sources`` and ``set()`` variables.
* ``pyproject.toml`` (:func:`toml_builds`): scikit-build-core / py-build-cmake cmake
  arguments and defines (``-DCMAKE_CUDA_FLAGS=...``), ``CUDAFLAGS`` environment entries.

A :class:`Build` is one compilation description: its flags (each with file offsets), the
sources it compiles (paths or glob patterns relative to the build file's folder, or the
embedded code of a Python call) and a label for messages. :func:`flags_for_source` finds
the builds of a ``.cu`` file by looking in its folder and the folders above.
"""
from __future__ import annotations

import ast
import fnmatch
import os
import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from cudalint.project.nvcc_flags import Flag, NvccSettings, interpret, split_words

# A build file without one of these words sets no flag the FP rules care about.
FAST_MATH_WORDS = ("fast_math", "fast-math", "ftz", "prec-div", "prec_div", "prec-sqrt",
                   "prec_sqrt", "fmad")


@dataclass
class Build:
    kind: str                   # "extension" | "torch.load" | "torch.load_inline" |
                                # "cupy" | "pycuda" | "cmake-target" | "cmake-dir" | "toml"
    label: str                  # e.g. "extension `warpy._C`", "CMake target `foo`"
    path: str                   # the build file
    flags: list[Flag] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)   # relative paths / glob patterns
    opaque: bool = False        # some flags are not statically known
    call_start: int = -1        # Python call span (embedded code builds)
    call_end: int = -1

    @property
    def settings(self) -> NvccSettings:
        return interpret(self.flags, self.opaque)

    def units(self) -> str:
        """The affected units, for messages."""
        if self.sources and self.sources != ["**/*.cu"]:
            shown = ", ".join(self.sources[:3]) + (", ..." if len(self.sources) > 3 else "")
            return f"{self.label} ({shown})"
        return self.label

    def compiles(self, rel: str) -> bool:
        rel = _norm(rel)
        return any(fnmatch.fnmatchcase(rel, _norm(p)) for p in self.sources)


def _norm(p: str) -> str:
    p = p.replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return os.path.normpath(p).replace("\\", "/") if p else p


# =======================================================================================
# Python


_EXTENSIONS = {"CUDAExtension", "CppExtension", "Extension", "CUDAExtensionBuilder"}
_CUPY = {"RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel"}
_PYCUDA = {"SourceModule", "DynamicSourceModule"}
_MUTATORS = {"append", "extend", "insert"}


class _Line:
    """(line, UTF-8 column) -> character offset."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0]
        for m in re.finditer(r"\r\n|\r|\n", text):     # the line ends ast counts
            self.starts.append(m.end())
        self._ascii = text.isascii()

    def offset(self, line: int, col: int) -> int:
        base = self.starts[line - 1] if line - 1 < len(self.starts) else len(self.text)
        if self._ascii:
            return base + col
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        row = self.text[base:end].encode("utf-8", "surrogatepass")
        return base + sum(1 for b in row[:col] if b & 0xC0 != 0x80)   # chars in col bytes


@dataclass
class _Item:
    """A piece of a flag list: a string constant (its words) or something unknown."""
    flags: list[Flag]
    opaque: bool = False


class _PyBuilds:
    def __init__(self, text: str, path: str, tree: ast.Module):
        self.text = text
        self.path = path
        self.lines = _Line(text)
        self.tree = tree
        self.parents: dict[ast.AST, ast.AST] = {}
        # name -> [(line, stmt)] of statements that bind or mutate it, per scope node
        self.events: dict[tuple[int, str], list[ast.AST]] = {}
        self.builds: list[Build] = []
        self._index(tree, tree)

    # -- bindings ------------------------------------------------------------------------

    def _index(self, node: ast.AST, scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            self.parents[child] = node
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                ast.Lambda)) else scope
            if isinstance(child, ast.Assign):
                for t in child.targets:
                    for key in self._keys(t):
                        self.events.setdefault((id(scope), key), []).append(child)
            elif isinstance(child, (ast.AugAssign, ast.AnnAssign)) and child.value is not None:
                for key in self._keys(child.target):
                    self.events.setdefault((id(scope), key), []).append(child)
            elif isinstance(child, ast.Expr) and isinstance(child.value, ast.Call) and \
                    isinstance(child.value.func, ast.Attribute) and \
                    child.value.func.attr in _MUTATORS:
                for key in self._keys(child.value.func.value):
                    self.events.setdefault((id(scope), key), []).append(child)
            self._index(child, inner)

    def _keys(self, target: ast.AST) -> list[str]:
        if isinstance(target, ast.Name):
            return [target.id]
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and \
                isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
            return [f"{target.value.id}[{target.slice.value!r}]"]
        if isinstance(target, (ast.Tuple, ast.List)):
            return []       # tuple unpacking: not followed
        return []

    def _scopes(self, node: ast.AST) -> list[ast.AST]:
        out = []
        cur = self.parents.get(node)
        while cur is not None:
            if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                ast.Module)):
                out.append(cur)
            cur = self.parents.get(cur)
        return out or [self.tree]

    def _events_before(self, key: str, use: ast.AST, depth: int) -> list[ast.AST] | None:
        for scope in self._scopes(use):
            evs = self.events.get((id(scope), key))
            if not evs:
                continue
            if scope is self._scopes(use)[0]:
                evs = [e for e in evs if e.lineno < use.lineno] or evs
            # the last plain assignment starts the value; later mutations add to it
            start = 0
            for i, e in enumerate(evs):
                if isinstance(e, (ast.Assign, ast.AnnAssign)):
                    start = i
            return evs[start:]
        return None

    # -- values --------------------------------------------------------------------------

    def span(self, node: ast.AST) -> tuple[int, int]:
        s = self.lines.offset(node.lineno, node.col_offset)
        e = self.lines.offset(node.end_lineno, node.end_col_offset)
        return s, e

    def _string_flags(self, node: ast.Constant) -> list[Flag]:
        s, e = self.span(node)
        raw = self.text[s:e]
        m = re.match(r"(?i)([rbuf]*)('''|\"\"\"|'|\")", raw)
        value = node.value
        if m and raw.endswith(m.group(2)):
            inner_start = s + len(m.group(0))
            inner = raw[len(m.group(0)):len(raw) - len(m.group(2))]
            if inner == value:
                return split_words(value, inner_start, self.path)
        # escapes or implicit concatenation: every word points at the whole literal
        return [Flag(w, self.path, s, e) for w in value.split()]

    def flags(self, expr: ast.AST | None, depth: int = 0) -> _Item:
        if expr is None or depth > 16:
            return _Item([], expr is not None)
        if isinstance(expr, ast.Constant):
            if isinstance(expr.value, str):
                return _Item(self._string_flags(expr))
            return _Item([], expr.value is not None)
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            out = _Item([])
            for el in expr.elts:
                sub = self.flags(el.value if isinstance(el, ast.Starred) else el, depth + 1)
                out.flags += sub.flags
                out.opaque |= sub.opaque
            return out
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            a, b = self.flags(expr.left, depth + 1), self.flags(expr.right, depth + 1)
            return _Item(a.flags + b.flags, a.opaque or b.opaque)
        if isinstance(expr, ast.IfExp):
            a, b = self.flags(expr.body, depth + 1), self.flags(expr.orelse, depth + 1)
            return _Item(a.flags + b.flags, True)
        if isinstance(expr, ast.Call):
            f = expr.func
            if isinstance(f, ast.Name) and f.id in ("list", "tuple") and len(expr.args) == 1:
                return self.flags(expr.args[0], depth + 1)
            if isinstance(f, ast.Attribute) and f.attr == "split" and not expr.args and \
                    isinstance(f.value, ast.Constant) and isinstance(f.value.value, str):
                return self.flags(f.value, depth + 1)
            return _Item([], True)
        if isinstance(expr, (ast.Name, ast.Subscript)):
            keys = self._keys(expr)
            if isinstance(expr, ast.Subscript) and not keys:
                return _Item([], True)
            if not keys:
                return _Item([], True)
            evs = self._events_before(keys[0], expr, depth)
            if evs is None:
                if isinstance(expr, ast.Subscript):
                    base = self.dict_value(expr.value, depth + 1)
                    if base is not None and expr.slice.value in base:
                        return self.flags(base[expr.slice.value], depth + 1)
                return _Item([], True)
            out = _Item([])
            for ev in evs:
                sub = self._event_flags(ev, depth + 1)
                out.flags += sub.flags
                out.opaque |= sub.opaque
            return out
        return _Item([], True)

    def _event_flags(self, ev: ast.AST, depth: int) -> _Item:
        if isinstance(ev, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            return self.flags(ev.value, depth)
        call = ev.value                                        # x.append / extend / insert
        args = call.args[1:] if call.func.attr == "insert" else call.args
        if call.func.attr == "append" and len(args) == 1:
            return self.flags(args[0], depth)
        if call.func.attr == "extend" and len(args) == 1:
            return self.flags(args[0], depth)
        if call.func.attr == "insert" and len(args) == 1:
            return self.flags(args[0], depth)
        return _Item([], True)

    def dict_value(self, expr: ast.AST, depth: int = 0) -> dict[str, ast.AST] | None:
        if depth > 16:
            return None
        if isinstance(expr, ast.Dict):
            out = {}
            for k, v in zip(expr.keys, expr.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    out[k.value] = v
            return out
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and \
                expr.func.id == "dict":
            return {k.arg: k.value for k in expr.keywords if k.arg}
        if isinstance(expr, ast.Name):
            evs = self._events_before(expr.id, expr, depth)
            if evs and isinstance(evs[0], (ast.Assign, ast.AnnAssign)):
                return self.dict_value(evs[0].value, depth + 1)
        return None

    def strings(self, expr: ast.AST | None, depth: int = 0) -> list[str]:
        """Source paths or glob patterns of a ``sources`` argument."""
        if expr is None or depth > 16:
            return []
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return [expr.value]
        if isinstance(expr, (ast.List, ast.Tuple)):
            return [s for el in expr.elts for s in self.strings(
                el.value if isinstance(el, ast.Starred) else el, depth + 1)]
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return self.strings(expr.left, depth + 1) + self.strings(expr.right, depth + 1)
        if isinstance(expr, ast.Call):
            name = _callee(expr)
            if name in ("glob", "glob.glob", "iglob", "glob.iglob") and expr.args:
                return self.strings(expr.args[0], depth + 1)
            if name in ("os.path.join", "join", "osp.join", "path.join") and expr.args:
                parts = [self.strings(a, depth + 1) for a in expr.args]
                if all(len(p) == 1 for p in parts):
                    return ["/".join(p[0] for p in parts)]
                return []
            if name in ("list", "sorted", "tuple") and expr.args:
                return self.strings(expr.args[0], depth + 1)
        if isinstance(expr, ast.Name):
            evs = self._events_before(expr.id, expr, depth)
            out: list[str] = []
            for ev in evs or []:
                if isinstance(ev, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    out += self.strings(ev.value, depth + 1)
                elif isinstance(ev, ast.Expr):
                    for a in ev.value.args[-1:]:
                        out += self.strings(a, depth + 1)
            return out
        if isinstance(expr, ast.JoinedStr):
            # f"{ROOT}/csrc/*.cu": the literal tail is still a useful pattern
            tail = "".join(v.value for v in expr.values if isinstance(v, ast.Constant))
            if tail:
                return ["*" + tail if not tail.startswith("*") else tail]
        return []

    # -- calls ---------------------------------------------------------------------------

    def run(self) -> list[Build]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self._call(node)
        return self.builds

    def _call(self, call: ast.Call) -> None:
        name = _callee(call)
        if name is None:
            return
        short = name.rsplit(".", 1)[-1]
        cs, ce = self.span(call)
        if short in _EXTENSIONS:
            ext_args = _kw(call, "extra_compile_args")
            if ext_args is None:
                return
            label_expr = _arg(call, 0, "name")
            label = label_expr.value if isinstance(label_expr, ast.Constant) else None
            sources = self.strings(_arg(call, 1, "sources"))
            d = self.dict_value(ext_args)
            item = None
            if d is not None:
                if "nvcc" in d:
                    item = self.flags(d["nvcc"])
            elif short != "CppExtension":
                item = self.flags(ext_args)          # a list: torch gives it to nvcc too
            if item is None:
                return
            self.builds.append(Build("extension", f"extension `{label}`" if label else
                                     "this extension", self.path, item.flags,
                                     [s for s in sources if _is_cuda_source(s)] or sources,
                                     item.opaque, cs, ce))
        elif short in ("load", "load_inline") and (
                "cpp_extension" in name or name in ("load_inline", "load")):
            flags_expr = _kw(call, "extra_cuda_cflags")
            if flags_expr is None:
                return
            label_expr = _arg(call, 0, "name")
            label = label_expr.value if isinstance(label_expr, ast.Constant) else None
            item = self.flags(flags_expr)
            sources = self.strings(_arg(call, 1, "sources")) if short == "load" else []
            what = "torch.load" if short == "load" else "torch.load_inline"
            self.builds.append(Build(what, f"`{short}` module `{label}`" if label else
                                     f"this `{short}` module", self.path, item.flags,
                                     sources, item.opaque, cs, ce))
        elif short in _CUPY:
            pos = 2 if short == "RawKernel" else None
            opts = _arg(call, pos, "options")
            if opts is None:
                return
            item = self.flags(opts)
            kname = _arg(call, 1 if short == "RawKernel" else 3, "name")
            label = kname.value if isinstance(kname, ast.Constant) and \
                isinstance(kname.value, str) else None
            self.builds.append(Build("cupy", f"CuPy {short} `{label}`" if label else
                                     f"this CuPy {short}", self.path, item.flags, [],
                                     item.opaque, cs, ce))
        elif short in _PYCUDA:
            opts = _arg(call, 2, "options")
            if opts is None:
                return
            item = self.flags(opts)
            self.builds.append(Build("pycuda", f"PyCUDA {short}", self.path, item.flags, [],
                                     item.opaque, cs, ce))


def _callee(call: ast.Call) -> str | None:
    parts = []
    f = call.func
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        parts.append(f.id)
        return ".".join(reversed(parts))
    return None


def _kw(call: ast.Call, name: str) -> ast.AST | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def _arg(call: ast.Call, pos: int | None, name: str) -> ast.AST | None:
    v = _kw(call, name)
    if v is not None:
        return v
    if pos is not None and pos < len(call.args) and not any(
            isinstance(a, ast.Starred) for a in call.args[:pos + 1]):
        return call.args[pos]
    return None


def _is_cuda_source(s: str) -> bool:
    return s.endswith((".cu", ".cuh", "*"))


_PY_WORDS = ("extra_compile_args", "extra_cuda_cflags", "options")


def python_builds(text: str, path: str = "<python>", tree: ast.Module | None = None
                  ) -> list[Build]:
    """Every build description in a Python file (empty when there is none or it does not
    parse)."""
    if not any(w in text for w in _PY_WORDS):
        return []
    if tree is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")      # invalid escapes: not ours to report
                tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):   # MemoryError:
            return []                                # brackets nested too deeply
    try:
        return _PyBuilds(text, path, tree).run()
    except RecursionError:
        return []


# =======================================================================================
# CMake


@dataclass
class _Word:
    text: str
    start: int          # char offsets in the file
    end: int
    cuda_only: bool | None = None   # True: under $<COMPILE_LANGUAGE:CUDA>, False: other lang


_GENEX_LANG = re.compile(r"\$<\$<COMPILE_LANG(?:UAGE|_AND_ID):([A-Za-z_+]+)[^>]*>:")


class _CMake:
    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path
        self.vars: dict[str, list[_Word]] = {}
        self.targets: dict[str, Build] = {}
        self.builds: list[Build] = []
        self.dir_flags: list[_Word] = []        # add_compile_options
        self.cuda_flags: list[_Word] = []       # CMAKE_CUDA_FLAGS*
        self.nvcc_flags: list[_Word] = []       # CUDA_NVCC_FLAGS
        self._b2c = None if text.isascii() else _byte_to_char(text)

    def c(self, b: int) -> int:
        return b if self._b2c is None else self._b2c[b]

    def args(self, cmd) -> list[_Word]:
        """The command's arguments, variables expanded and lists split, with offsets."""
        out: list[_Word] = []
        arglist = next((ch for ch in cmd.children if ch.type == "argument_list"), None)
        if arglist is None:
            return out
        for arg in arglist.children:
            if arg.type != "argument" or not arg.children:
                continue
            node = arg.children[0]
            if node.type == "quoted_argument":
                inner = [ch for ch in node.children if ch.type == "quoted_element"]
                if not inner:
                    out.append(_Word("", self.c(node.start_byte), self.c(node.end_byte)))
                    continue
                out.extend(self._expand(inner[0], split=False))
            else:
                out.extend(self._expand(node, split=True))
        return out

    def _expand(self, node, split: bool) -> list[_Word]:
        """Text of an argument with ${VAR} replaced; each word keeps its file span."""
        pieces: list[tuple[bytes, int, int] | list[_Word]] = []
        pos = node.start_byte
        data = node.text
        base = node.start_byte
        for ch in node.children:
            if ch.type == "variable_ref":
                if ch.start_byte > pos:
                    pieces.append((data[pos - base:ch.start_byte - base], pos, ch.start_byte))
                name = ch.text.decode("utf-8", "replace")
                m = re.fullmatch(r"\$\{([A-Za-z0-9_]+)\}", name)
                pieces.append(self.vars.get(m.group(1), []) if m else [])
                pos = ch.end_byte
        if node.end_byte > pos:
            pieces.append((data[pos - base:], pos, node.end_byte))
        words: list[_Word] = []
        for p in pieces:
            if isinstance(p, list):
                words.extend(p)
                continue
            s, b0, _ = p
            # on the bytes: offsets stay exact whatever the text holds (invalid UTF-8,
            # lone surrogates of an editor buffer)
            for m in re.finditer(rb"[^\s;]+", s):
                words.append(_Word(_text(m.group()), self.c(b0 + m.start()),
                                   self.c(b0 + m.end())))
        return words

    def run(self, root) -> list[Build]:
        for cmd in root.children:
            self._command(cmd)
        return self._finish()

    def _command(self, cmd) -> None:
        if cmd.type in ("if_condition", "foreach_loop", "while_loop", "block_def",
                        "function_def", "macro_def"):
            for ch in cmd.children:
                self._command(ch)
            return
        if cmd.type != "normal_command":
            return
        ident = cmd.children[0].text.decode("utf-8", "replace").lower()
        if ident in ("if", "elseif", "else", "endif", "foreach", "endforeach", "while",
                     "endwhile"):
            return
        args = self.args(cmd)
        if not args:
            return
        head = args[0].text
        if ident == "set":
            vals = [w for w in args[1:] if w.text not in ("CACHE", "PARENT_SCOPE", "FORCE")]
            if "CACHE" in [w.text for w in args[1:]]:
                i = [w.text for w in args].index("CACHE")
                vals = args[1:i]
            self.vars[head] = vals
        elif ident == "string" and head == "APPEND" and len(args) >= 2:
            self.vars[args[1].text] = self.vars.get(args[1].text, []) + args[2:]
        elif ident == "list" and head in ("APPEND", "PREPEND", "INSERT") and len(args) >= 2:
            vals = args[3:] if head == "INSERT" else args[2:]
            old = self.vars.get(args[1].text, [])
            self.vars[args[1].text] = vals + old if head == "PREPEND" else old + vals
        elif ident in ("add_library", "add_executable", "cuda_add_library",
                       "cuda_add_executable"):
            words = [w for w in args[1:] if w.text not in (
                "STATIC", "SHARED", "MODULE", "OBJECT", "INTERFACE", "EXCLUDE_FROM_ALL",
                "WIN32", "MACOSX_BUNDLE", "IMPORTED", "ALIAS", "GLOBAL")]
            opts: list[_Word] = []
            if ident.startswith("cuda_") and any(w.text == "OPTIONS" for w in words):
                i = [w.text for w in words].index("OPTIONS")
                words, opts = words[:i], words[i + 1:]
            t = self._target(head)
            t.sources += [w.text for w in words if not w.text.startswith("$<")]
            if ident.startswith("cuda_"):
                t.kind = "cmake-findcuda"
            if opts:
                self.builds.append(Build("cmake-target", f"CMake target `{head}`", self.path,
                                         [self._flag(w) for w in opts], t.sources))
        elif ident == "target_sources":
            t = self._target(head)
            t.sources += [w.text for w in args[1:] if w.text not in (
                "PRIVATE", "PUBLIC", "INTERFACE") and not w.text.startswith("$<")]
        elif ident == "target_compile_options":
            t = self._target(head)
            for w in self._cuda_words(args[1:]):
                if w.text not in ("PRIVATE", "PUBLIC", "INTERFACE", "BEFORE"):
                    t.flags.append(self._flag(w))
        elif ident == "add_compile_options":
            self.dir_flags.extend(self._cuda_words(args))
        elif ident == "pybind11_add_module" or ident == "python_add_library":
            t = self._target(head)
            t.sources += [w.text for w in args[1:] if w.text.endswith(
                (".cu", ".cpp", ".cc", ".c"))]

    def _cuda_words(self, words: list[_Word]) -> list[_Word]:
        """Drop words under a generator expression for another language, strip genex
        wrappers, split `;` lists."""
        out: list[_Word] = []
        lang_stack: list[bool] = []
        for w in words:
            text, start = w.text, w.start
            m = _GENEX_LANG.match(text)
            if m:
                lang_stack.append(m.group(1).upper() == "CUDA")
                text, start = text[m.end():], start + m.end()
            elif text.startswith("$<"):
                # another generator expression ($<BUILD_INTERFACE:...>, $<$<CONFIG:..>:..>)
                k = text.rfind(">:")
                if k < 0:
                    continue
                lang_stack.append(True)
                text, start = text[k + 2:], start + k + 2
            closing = 0
            while text.endswith(">") and lang_stack and closing < len(lang_stack):
                text = text[:-1]
                closing += 1
            applies = all(lang_stack) if lang_stack else True
            if text and applies:
                out.append(_Word(text, start, start + len(text)))
            for _ in range(closing):
                lang_stack.pop()
        return out

    def _flag(self, w: _Word) -> Flag:
        return Flag(w.text, self.path, w.start, w.end)

    def _target(self, name: str) -> Build:
        if name not in self.targets:
            self.targets[name] = Build("cmake-target", f"CMake target `{name}`", self.path)
        return self.targets[name]

    def _finish(self) -> list[Build]:
        builds = list(self.builds)
        for var in sorted(self.vars):
            if var == "CMAKE_CUDA_FLAGS" or var.startswith("CMAKE_CUDA_FLAGS_") or \
                    var == "CUDA_NVCC_FLAGS" or var.startswith("CUDA_NVCC_FLAGS_"):
                flags = [self._flag(w) for w in self.vars[var]
                         if not w.text.startswith("${")]
                srcs = sorted({s for t in self.targets.values() for s in t.sources
                               if s.endswith((".cu", ".cuh"))}) or ["**/*.cu"]
                what = "the CUDA sources of this CMake project"
                if var.startswith("CUDA_NVCC_FLAGS"):
                    what = "FindCUDA targets (cuda_add_library/cuda_add_executable)"
                builds.append(Build("cmake-dir", f"{what} via {var}", self.path, flags, srcs))
        if self.dir_flags:
            srcs = sorted({s for t in self.targets.values() for s in t.sources}) or ["**/*.cu"]
            builds.append(Build("cmake-dir", "targets of this directory via add_compile_options",
                                self.path, [self._flag(w) for w in self.dir_flags], srcs))
        for t in self.targets.values():
            if t.flags:
                builds.append(t)
        return builds


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


def _byte_to_char(text: str) -> list[int]:
    table = []
    for i, ch in enumerate(text):
        table.extend([i] * len(ch.encode("utf-8", "surrogatepass")))
    table.append(len(text))
    return table


@lru_cache(maxsize=1)
def _cmake_parser():
    import tree_sitter
    import tree_sitter_cmake
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cmake.language()))


def cmake_builds(text: str, path: str = "CMakeLists.txt") -> list[Build]:
    tree = _cmake_parser().parse(text.encode("utf-8", "surrogatepass"))
    return _CMake(text, path).run(tree.root_node)


# =======================================================================================
# pyproject.toml


_CMAKE_FLAG_VARS = ("CMAKE_CUDA_FLAGS", "CUDA_NVCC_FLAGS")
_TOML_STRING = re.compile(r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|'
                          r"'[^'\n]*'", re.S)
_TOML_KEYS = re.compile(r"^\s*([A-Za-z0-9_.\-\"' ]+?)\s*=", re.M)


def _toml_strings(text: str) -> list[tuple[str, int, int, str]]:
    """(value, inner start, inner end, dotted key path) of every string in the file."""
    out = []
    table = ""
    i = 0
    key_path = ""
    for m in re.finditer(r"[^\n]*\n?", text):
        line = m.group()
        if not line:
            break
        stripped = line.strip()
        start = m.start()
        if stripped.startswith("#"):
            continue
        hdr = re.match(r"\s*\[\[?\s*([^\]]+?)\s*\]\]?", line)
        if hdr and not _in_value_continuation(out, start):
            table = hdr.group(1).replace('"', "").replace("'", "")
            key_path = table
            continue
        km = re.match(r"\s*([A-Za-z0-9_.\-\"']+)\s*=", line)
        if km:
            key_path = (table + "." if table else "") + km.group(1).replace('"', "").replace(
                "'", "")
        for sm in _TOML_STRING.finditer(line):
            q = 3 if sm.group().startswith(('"""', "'''")) else 1
            raw = sm.group()[q:-q]
            prefix = line[:sm.start()]
            # key of an inline table entry: `{CMAKE_CUDA_FLAGS = "..."}`
            inline = re.search(r"([A-Za-z0-9_\-]+)\s*=\s*$", prefix)
            kp = key_path + "." + inline.group(1) if inline and km and \
                inline.start() > km.end() else key_path
            if "#" in prefix and prefix.rfind("#") > prefix.rfind('"'):
                continue
            value = _toml_unescape(raw) if "\\" in raw and sm.group()[0] == '"' else raw
            out.append((value, start + sm.start() + q, start + sm.end() - q, kp))
        i += 1
    return out


_TOML_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|\s*\n\s*|(.))", re.S)
_TOML_SIMPLE = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b", '"': '"',
                "\\": "\\"}


def _toml_unescape(raw: str) -> str:
    """A TOML basic string's value (an invalid escape stays as written)."""
    def one(m: re.Match) -> str:
        hexa = m.group(1) or m.group(2)
        if hexa:
            cp = int(hexa, 16)
            return chr(cp) if cp <= 0x10FFFF else m.group()
        if m.group(3) is None:
            return ""                     # line-ending backslash of a multi-line string
        return _TOML_SIMPLE.get(m.group(3), m.group())
    return _TOML_ESCAPE.sub(one, raw)


def _in_value_continuation(out, start) -> bool:
    return False


def toml_builds(text: str, path: str = "pyproject.toml") -> list[Build]:
    if not any(v in text for v in _CMAKE_FLAG_VARS + ("CUDAFLAGS",)):
        return []
    by_key: dict[str, list[Flag]] = {}
    for value, s, e, key in _toml_strings(text):
        flags = by_key.setdefault(key, [])
        last = key.rsplit(".", 1)[-1]
        exact = value == text[s:e]
        if last in _CMAKE_FLAG_VARS or last.startswith("CMAKE_CUDA_FLAGS") or \
                last == "CUDAFLAGS":
            flags += split_words(value, s, path) if exact else \
                [Flag(w, path, s, e) for w in value.split()]
            continue
        m = re.match(r"-D(CMAKE_CUDA_FLAGS(?:_[A-Z]+)?|CUDA_NVCC_FLAGS)(?::[A-Z]+)?=", value)
        if m:
            rest = value[m.end():].strip("\"'")
            off = s + m.end() + (1 if value[m.end():m.end() + 1] in "\"'" else 0)
            flags += split_words(rest, off, path) if exact else \
                [Flag(w, path, s, e) for w in rest.split()]
    # each key is its own command line (a backend's args, a define, an environment entry)
    return [Build("toml", f"every CUDA source of the CMake project (via `{key}`)", path,
                  flags, ["**/*.cu"]) for key, flags in by_key.items() if flags]


# =======================================================================================
# per-source lookup


BUILD_FILES = ("setup.py", "CMakeLists.txt", "pyproject.toml")
MAX_LEVELS = 6


@lru_cache(maxsize=256)
def _builds_in(path: str, mtime_ns: int, size: int) -> tuple[Build, ...]:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    name = os.path.basename(path)
    if name == "CMakeLists.txt":
        return tuple(cmake_builds(text, path))
    if name == "pyproject.toml":
        return tuple(toml_builds(text, path))
    return tuple(python_builds(text, path))


def builds_in_file(path: str | Path) -> tuple[Build, ...]:
    p = str(path)
    try:
        st = os.stat(p)
    except OSError:
        return ()
    return _builds_in(p, st.st_mtime_ns, st.st_size)


def builds_for_source(source: str | Path) -> list[Build]:
    """The builds (in the source's folder and the folders above) that compile it."""
    src = Path(source)
    if not src.is_file():
        return []
    src = src.resolve()
    found = []
    folder = src.parent
    for _ in range(MAX_LEVELS):
        for name in BUILD_FILES:
            bf = folder / name
            if bf.is_file():
                rel = os.path.relpath(src, folder)
                for b in builds_in_file(bf):
                    if b.kind in ("cupy", "pycuda", "torch.load_inline"):
                        continue
                    if b.compiles(rel):
                        found.append(b)
        if (folder / ".git").exists() or folder.parent == folder:
            break
        folder = folder.parent
    return found


@lru_cache(maxsize=1024)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    import hashlib
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return ""


def _folder_digest(folder: str) -> str:
    """Hash of the build files of one folder and the folders above it (to the repo root).
    Stat-ed on every call (a long-running server sees edits); contents hashed once per
    (path, mtime, size)."""
    parts = []
    while True:
        for name in BUILD_FILES:
            bf = os.path.join(folder, name)
            try:
                st = os.stat(bf)
            except OSError:
                continue
            parts.append(f"{bf}:{_file_digest(bf, st.st_mtime_ns, st.st_size)}")
        parent = os.path.dirname(folder)
        if parent == folder or os.path.exists(os.path.join(folder, ".git")):
            break
        folder = parent
    return ";".join(parts)


def build_digest(source: str | Path) -> str:
    """What the flags of `source` depend on, for the result cache key: a change to a
    setup.py, CMakeLists.txt or pyproject.toml above it changes CL401-CL404 results."""
    return _folder_digest(os.path.dirname(os.path.abspath(source)))


def unit_settings(unit) -> NvccSettings | None:
    """Build settings of a unit: the embedding call's options, or the builds that compile
    the file. None when no build is known (the caller uses nvcc's defaults)."""
    emb = getattr(unit, "embedded", None)
    if emb is not None:
        flags = [Flag(str(o), unit.file.path, getattr(o, "start", -1), getattr(o, "end", -1))
                 for o in emb.options]
        words = [w for f in flags for w in split_words(f.text, f.start, f.path)]
        return interpret(words, getattr(emb, "options_opaque", False))
    path = unit.file.path
    if path in ("-", "<stdin>"):
        return None
    builds = builds_for_source(path)
    if not builds:
        return None
    # several builds of one file: combine their flags (a setting counts if any sets it)
    return interpret([f for b in builds for f in b.flags], any(b.opaque for b in builds))
