"""Builds written in Python, read with :mod:`ast` (never run): setuptools/torch
``CUDAExtension`` / ``CppExtension`` / ``Extension(extra_compile_args={'nvcc': [...]})``,
torch ``load(...)``/``load_inline(...)`` ``extra_cuda_cflags``, CuPy ``RawKernel`` /
``RawModule`` / ``ElementwiseKernel`` / ``ReductionKernel`` ``options``, PyCUDA
``SourceModule(options=...)``. Flag lists may be literals, names bound to them, ``+``,
``+=``, ``.append``/``.extend``/``.insert``, ``d['nvcc']`` items and ``str.split()``.
"""
from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass

from cudalint.project.build import Build
from cudalint.project.nvcc_flags import Flag, split_words

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
