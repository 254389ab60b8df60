"""Builds written in Python, read with :mod:`ast` (never run): setuptools/torch
``CUDAExtension`` / ``CppExtension`` / ``Extension(extra_compile_args={'nvcc': [...]})``,
torch ``load(...)``/``load_inline(...)`` ``extra_cuda_cflags``, CuPy ``RawKernel`` /
``RawModule`` / ``ElementwiseKernel`` / ``ReductionKernel`` ``options``, PyCUDA
``SourceModule(options=...)``. Flag lists may be literals, names bound to them, ``+``,
``+=``, ``.append``/``.extend``/``.insert``, ``d['nvcc']`` items and ``str.split()``,
and values returned by helper functions of the same module (``nvcc_flags()``, a dict, a
``SimpleNamespace``/namedtuple read back as ``params.extra_cuda_cflags``; arguments are
passed through). A flag under a condition the module decides from constants and
``os.getenv``/``os.environ.get`` defaults (``flags += ["-use_fast_math"] if FAST_MATH
else []`` with ``FAST_MATH = os.getenv("FAST_MATH", "1") == "1"``; ``if FAST_MATH:``
blocks) is kept when the defaults make it active, with a note for messages ("on unless
FAST_MATH=0"), and dropped when they make it inactive; a condition that cannot be
decided (``sys.platform``, ``torch.version.hip``) keeps the flag without a note.
"""
from __future__ import annotations

import ast
import re
import warnings
from bisect import bisect_left
from contextlib import contextmanager
from dataclasses import dataclass

from cudalint.project.build import Build
from cudalint.project.nvcc_flags import Flag, split_words

_EXTENSIONS = {"CUDAExtension", "CppExtension", "Extension", "CUDAExtensionBuilder"}
_CUPY = {"RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel"}
_PYCUDA = {"SourceModule", "DynamicSourceModule"}
_MUTATORS = {"append", "extend", "insert"}
_GETENV = {"os.getenv", "getenv", "os.environ.get", "environ.get"}
_ON_WORDS = ("1", "true", "yes", "on", "y")
_UNKNOWN = object()         # a value the module does not decide
_ARGV = object()            # sys.argv: switches given to setup.py, none by default
# flag expressions followed per file (corpus max 126, apex/setup.py); a name built by
# many appends of names built by many appends multiplied them: a fuzzed 262 KB setup.py
# ran over 200 s (seed 34's build_setup c12fe5945d). Past it a flag list is unknown.
MAX_FLAG_STEPS = 10_000


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
        self.functions: dict[str, ast.AST] = {}     # name -> the last def of that name
        # flag span -> why it is on ("on unless FAST_MATH=0"), from conditions decided
        # by environment defaults
        self.notes: dict[tuple[int, int], str] = {}
        self._binds: dict[tuple[int, str], ast.AST] = {}   # (def, parameter) -> argument
        self._following: set[int] = set()                  # defs being followed (recursion)
        self._aliases: set[str] | None = None      # names of torch.utils.cpp_extension
        self.unpacks: dict[tuple[int, str], list[tuple[ast.Assign, int]]] = {}
        self._steps = 0                 # flags() calls so far (MAX_FLAG_STEPS)
        self._lines: dict[tuple[int, str], tuple] = {}      # _event_lines
        self._index(tree, tree)

    # -- bindings ------------------------------------------------------------------------

    def _index(self, node: ast.AST, scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            self.parents[child] = node
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                ast.Lambda)) else scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[child.name] = child
            if isinstance(child, ast.Assign):
                for t in child.targets:
                    for key in self._keys(t):
                        self.events.setdefault((id(scope), key), []).append(child)
                    if isinstance(t, ast.Tuple):          # FAST, argv = _argparse(...)
                        for i, el in enumerate(t.elts):
                            if isinstance(el, ast.Name):
                                self.unpacks.setdefault((id(scope), el.id), []).append(
                                    (child, i))
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
        scopes = self._scopes(use)
        for scope in scopes:
            evs = self.events.get((id(scope), key))
            if not evs:
                continue
            lines, starts = self._event_lines(scope, key, evs)
            end = len(evs)
            if scope is scopes[0]:
                if lines is None:
                    evs = [e for e in evs if e.lineno < use.lineno] or evs
                    end = len(evs)
                    starts = None
                else:
                    end = bisect_left(lines, use.lineno) or end
            # the last plain assignment starts the value; later mutations add to it
            if starts is not None:
                return evs[starts[end - 1]:end]
            start = 0
            for i, e in enumerate(evs):
                if isinstance(e, (ast.Assign, ast.AnnAssign)):
                    start = i
            return evs[start:]
        return None

    def _event_lines(self, scope: ast.AST, key: str, evs: list[ast.AST]
                     ) -> tuple[list[int] | None, list[int] | None]:
        """The events' lines (None: not in order) and where each one's value starts (the
        last plain assignment so far): a name bound 3,000 times (fuzz seed 34)."""
        got = self._lines.get((id(scope), key))
        if got is None:
            lines, starts, start = [e.lineno for e in evs], [], 0
            for i, e in enumerate(evs):
                if isinstance(e, (ast.Assign, ast.AnnAssign)):
                    start = i
                starts.append(start)
            ordered = all(a <= b for a, b in zip(lines, lines[1:]))
            got = self._lines[(id(scope), key)] = (lines if ordered else None, starts)
        return got

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
        self._steps += 1
        if self._steps > MAX_FLAG_STEPS:
            return _Item([], True)      # past the budget: not known here
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
            cond = self.condition(expr.test)
            if cond is not None:
                on, note = cond
                item = self.flags(expr.body if on else expr.orelse, depth + 1)
                self._note(item, note)
                return item
            a, b = self.flags(expr.body, depth + 1), self.flags(expr.orelse, depth + 1)
            return _Item(a.flags + b.flags, True)
        if isinstance(expr, ast.Call):
            f = expr.func
            if isinstance(f, ast.Name) and f.id in ("list", "tuple") and len(expr.args) == 1:
                return self.flags(expr.args[0], depth + 1)
            if isinstance(f, ast.Attribute) and f.attr == "split" and not expr.args and \
                    isinstance(f.value, ast.Constant) and isinstance(f.value.value, str):
                return self.flags(f.value, depth + 1)
            with self._returns(expr) as returned:
                if returned is not None:
                    out = _Item([], not returned)
                    for value in returned:
                        sub = self.flags(value, depth + 1)
                        out.flags += sub.flags
                        out.opaque |= sub.opaque
                    return out
            return _Item([], True)
        if isinstance(expr, ast.Attribute):
            fields = self._record_fields(expr.value, depth + 1)
            if fields is None or expr.attr not in fields:
                return _Item([], True)
            return self.flags(fields[expr.attr], depth + 1)
        if isinstance(expr, (ast.Name, ast.Subscript)):
            keys = self._keys(expr)
            if isinstance(expr, ast.Subscript) and not keys:
                return _Item([], True)
            if not keys:
                return _Item([], True)
            evs = self._events_before(keys[0], expr, depth)
            bound = self._bound(expr) if isinstance(expr, ast.Name) else None
            if bound is not None and (evs is None or not isinstance(
                    evs[0], (ast.Assign, ast.AnnAssign))):
                out = self.flags(bound, depth + 1)      # a parameter: the caller's argument
                for ev in evs or []:
                    sub = self._guarded_event_flags(ev, depth + 1)
                    out = _Item(out.flags + sub.flags, out.opaque or sub.opaque)
                return out
            if evs is None:
                if isinstance(expr, ast.Subscript):
                    base = self.dict_value(expr.value, depth + 1)
                    if base is not None and expr.slice.value in base:
                        return self.flags(base[expr.slice.value], depth + 1)
                return _Item([], True)
            out = _Item([])
            for ev in evs:
                sub = self._guarded_event_flags(ev, depth + 1)
                out.flags += sub.flags
                out.opaque |= sub.opaque
            return out
        return _Item([], True)

    def _guarded_event_flags(self, ev: ast.AST, depth: int) -> _Item:
        """An event's flags, dropped when an enclosing ``if`` is off by the module's
        defaults, noted when it is on because of them."""
        notes = []
        child, cur = ev, self.parents.get(ev)
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                       ast.Lambda, ast.Module)):
            if isinstance(cur, ast.If) and child is not cur.test:
                cond = self.condition(cur.test)
                if cond is not None:
                    on, note = cond
                    if child in cur.orelse:
                        on = not on
                    if not on:
                        return _Item([])
                    if note:
                        notes.append(note)
            child, cur = cur, self.parents.get(cur)
        item = self._event_flags(ev, depth)
        for note in notes:
            self._note(item, note)
        return item

    def _note(self, item: _Item, note: str | None) -> None:
        if note:
            for f in item.flags:
                old = self.notes.get((f.start, f.end))
                self.notes[(f.start, f.end)] = note if old in (None, note) else \
                    f"{old} and {note}"

    def labelled(self, label: str, flags: list[Flag]) -> str:
        """The build's label with the conditions of its fast-math flags, if any."""
        noted = []
        for f in flags:
            note = self.notes.get((f.start, f.end))
            if note and any(w in f.text for w in ("fast_math", "fast-math", "ftz",
                                                   "prec-div", "prec_div", "prec-sqrt",
                                                   "prec_sqrt", "fmad")):
                entry = f"`{f.text}` {note}"
                if entry not in noted:
                    noted.append(entry)
        return f"{label} ({'; '.join(noted)})" if noted else label

    # -- helper functions of the module ------------------------------------------------

    @contextmanager
    def _returns(self, call: ast.Call):
        """The values a same-module function returns, with its parameters bound to this
        call's arguments, while they are being read; None when the callee is not such a
        function (or is already being followed: recursion)."""
        fn = self.functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if fn is None or id(fn) in self._following:
            yield None
            return
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        for name, value in zip(params, call.args):
            if isinstance(value, ast.Starred):
                break
            self._binds[(id(fn), name)] = value
        for k in call.keywords:
            if k.arg:
                self._binds[(id(fn), k.arg)] = k.value
        defaults = fn.args.defaults
        for name, value in zip(params[len(params) - len(defaults):], defaults):
            self._binds.setdefault((id(fn), name), value)
        out: list[ast.AST] = []
        self._collect_returns(fn.body, out)
        self._following.add(id(fn))
        try:
            yield sorted(out, key=lambda n: (n.lineno, n.col_offset))
        finally:
            self._following.discard(id(fn))

    def _collect_returns(self, stmts: list[ast.stmt], out: list[ast.AST]) -> bool:
        """The returned values of a statement list, in order, following only the branch
        of an ``if`` the defaults take; True when the list always returns (what follows
        it is not reached)."""
        for stmt in stmts:
            if isinstance(stmt, ast.Return):
                if stmt.value is not None:
                    out.append(stmt.value)
                return True
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(stmt, ast.If):
                cond = self.condition(stmt.test)
                if cond is not None:
                    if self._collect_returns(stmt.body if cond[0] else stmt.orelse, out):
                        return True
                    continue
                a = self._collect_returns(stmt.body, out)
                b = self._collect_returns(stmt.orelse, out)
                if a and b:
                    return True
                continue
            for child in ast.iter_child_nodes(stmt):     # loops, with, try: any return
                if isinstance(child, ast.stmt):
                    self._collect_returns([child], out)
                elif isinstance(child, ast.ExceptHandler):
                    self._collect_returns(child.body, out)
        return False

    def _bound(self, name: ast.Name) -> ast.AST | None:
        for scope in self._scopes(name):
            value = self._binds.get((id(scope), name.id))
            if value is not None:
                return value
        return None

    def _record_fields(self, expr: ast.AST, depth: int) -> dict[str, ast.AST] | None:
        """Keyword fields of a record a name holds: ``SimpleNamespace(a=...)``, a
        namedtuple or dataclass built with keywords, a dict, possibly returned by a
        helper function of the module."""
        if depth > 16:
            return None
        if isinstance(expr, ast.Name):
            evs = self._events_before(expr.id, expr, depth)
            if evs and isinstance(evs[0], (ast.Assign, ast.AnnAssign)):
                return self._record_fields(evs[0].value, depth + 1)
            return None
        if isinstance(expr, ast.Dict):
            return self.dict_value(expr, depth + 1)
        if isinstance(expr, ast.Call):
            with self._returns(expr) as returned:
                if returned is not None:
                    for value in returned:
                        fields = self._record_fields(value, depth + 1)
                        if fields is not None:
                            return fields
                    return None
            if expr.keywords and all(k.arg for k in expr.keywords):
                return {k.arg: k.value for k in expr.keywords}
        return None

    # -- conditions --------------------------------------------------------------------

    def condition(self, test: ast.AST) -> tuple[bool, str | None] | None:
        """Whether ``test`` holds with the module's constants, the environment variables
        at their defaults and no command-line switch given to setup.py, and a note for
        the branch this takes ("on unless FAST_MATH=0"); None when the module does not
        decide it. The note is only read for a branch that is on."""
        envs: list[tuple[str, object]] = []
        value = self._value(test, envs, 0)
        if value is _UNKNOWN:
            return None
        if not envs:
            return bool(value), None
        notes = []
        for var, default in envs:
            if default is _ARGV:
                notes.append(f"unless setup.py gets {var}")
            elif default is None or default == "":
                notes.append(f"unless {var} is set")
            elif str(default).lower() in _ON_WORDS:
                notes.append(f"unless {var}=0")
            else:
                notes.append(f"while {var}={default!s}")
        return bool(value), "on " + " and ".join(dict.fromkeys(notes))

    def _decided_off(self, node: ast.AST) -> bool:
        """Some ``if`` around ``node`` (inside its function) is off by the defaults."""
        child, cur = node, self.parents.get(node)
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                       ast.Lambda, ast.Module)):
            if isinstance(cur, ast.If) and child is not cur.test:
                cond = self.condition(cur.test)
                if cond is not None and cond[0] == (child in cur.orelse):
                    return True
            child, cur = cur, self.parents.get(cur)
        return False

    def _value(self, expr: ast.AST, envs: list, depth: int) -> object:
        if depth > 16:
            return _UNKNOWN
        if isinstance(expr, ast.Constant):
            return expr.value
        if isinstance(expr, ast.Name):
            evs = self._events_before(expr.id, expr, depth)
            if evs and len(evs) == 1 and isinstance(evs[0], ast.Assign) and \
                    len(evs[0].targets) == 1 and self._top_level(evs[0]):
                return self._value(evs[0].value, envs, depth + 1)
            if evs is None:
                bound = self._bound(expr)
                if bound is not None:
                    return self._value(bound, envs, depth + 1)
                if self._imports_sys_argv(expr.id):
                    return _ARGV            # `from sys import argv`, switches taken off
                return self._unpacked(expr, envs, depth)
            return _UNKNOWN
        if isinstance(expr, ast.Attribute) and expr.attr == "argv" and \
                isinstance(expr.value, ast.Name) and expr.value.id == "sys":
            return _ARGV
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            v = self._value(expr.operand, envs, depth + 1)
            return _UNKNOWN if v is _UNKNOWN else not v
        if isinstance(expr, ast.BoolOp):
            vals = [self._value(v, envs, depth + 1) for v in expr.values]
            if any(v is _UNKNOWN for v in vals):
                return _UNKNOWN
            return all(vals) if isinstance(expr.op, ast.And) else any(vals)
        if isinstance(expr, ast.IfExp):
            t = self._value(expr.test, envs, depth + 1)
            if t is _UNKNOWN:
                return _UNKNOWN
            return self._value(expr.body if t else expr.orelse, envs, depth + 1)
        if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
            a = self._value(expr.left, envs, depth + 1)
            b = self._value(expr.comparators[0], envs, depth + 1)
            if a is _UNKNOWN or b is _UNKNOWN:
                return _UNKNOWN
            op = expr.ops[0]
            if b is _ARGV and isinstance(a, str) and isinstance(op, (ast.In, ast.NotIn)):
                # a command-line switch of setup.py: not given by default
                envs.append((a, _ARGV))
                return isinstance(op, ast.NotIn)
            if _ARGV in (a, b):
                return _UNKNOWN
            try:
                if isinstance(op, (ast.Eq, ast.Is)):
                    return a == b
                if isinstance(op, (ast.NotEq, ast.IsNot)):
                    return a != b
                if isinstance(op, ast.In):
                    return a in b
                if isinstance(op, ast.NotIn):
                    return a not in b
            except TypeError:
                return _UNKNOWN
            return _UNKNOWN
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            vals = [self._value(v, envs, depth + 1) for v in expr.elts]
            return _UNKNOWN if any(v is _UNKNOWN for v in vals) else tuple(vals)
        if isinstance(expr, ast.Call):
            name = _callee(expr)
            if name in _GETENV and expr.args and isinstance(expr.args[0], ast.Constant) \
                    and isinstance(expr.args[0].value, str) and len(expr.args) <= 2:
                default = None
                if len(expr.args) == 2:
                    default = self._value(expr.args[1], envs, depth + 1)
                    if default is _UNKNOWN:
                        return _UNKNOWN
                envs.append((expr.args[0].value, default))
                return default
            if name in ("int", "bool", "str") and len(expr.args) == 1:
                v = self._value(expr.args[0], envs, depth + 1)
                try:
                    return _UNKNOWN if v is _UNKNOWN else {"int": int, "bool": bool,
                                                           "str": str}[name](v)
                except (TypeError, ValueError):
                    return _UNKNOWN
            f = expr.func
            if isinstance(f, ast.Attribute) and f.attr in ("lower", "upper", "strip") and \
                    not expr.args:
                v = self._value(f.value, envs, depth + 1)
                return getattr(v, f.attr)() if isinstance(v, str) else _UNKNOWN
        return _UNKNOWN

    def _imports_sys_argv(self, name: str) -> bool:
        return any(isinstance(n, ast.ImportFrom) and n.module == "sys" and any(
            (a.asname or a.name) == name and a.name == "argv" for a in n.names)
            for n in self.tree.body)

    def _unpacked(self, name: ast.Name, envs: list, depth: int) -> object:
        """A name bound once by unpacking what a same-module function returns
        (``FAST_MATH, argv = _argparse("--fast_math", argv)``)."""
        for scope in self._scopes(name):
            binds = self.unpacks.get((id(scope), name.id))
            if not binds:
                continue
            if len(binds) != 1 or not isinstance(binds[0][0].value, ast.Call):
                return _UNKNOWN
            stmt, index = binds[0]
            values = []
            with self._returns(stmt.value) as returned:
                for r in returned or []:
                    if not (isinstance(r, ast.Tuple) and index < len(r.elts)):
                        return _UNKNOWN
                    values.append(self._value(r.elts[index], envs, depth + 1))
            if not values or any(v is _UNKNOWN for v in values) or len(set(
                    map(repr, values))) != 1:
                return _UNKNOWN
            return values[0]
        return _UNKNOWN

    def _top_level(self, stmt: ast.AST) -> bool:
        """A binding outside any loop or ``try`` of its scope, under ``if`` statements the
        defaults take: its value is the one."""
        child, cur = stmt, self.parents.get(stmt)
        while cur is not None and not isinstance(cur, (ast.Module, ast.FunctionDef,
                                                       ast.AsyncFunctionDef)):
            if isinstance(cur, (ast.For, ast.While, ast.Try, ast.With)):
                return False
            if isinstance(cur, ast.If) and child is not cur.test:
                cond = self.condition(cur.test)
                if cond is None or cond[0] == (child in cur.orelse):
                    return False
            child, cur = cur, self.parents.get(cur)
        return True

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
        if isinstance(expr, ast.Call):
            with self._returns(expr) as returned:
                for value in returned or []:
                    d = self.dict_value(value, depth + 1)
                    if d is not None:
                        return d
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
            self.builds.append(Build("extension", self.labelled(
                                         f"extension `{label}`" if label else
                                         "this extension", item.flags), self.path, item.flags,
                                     [s for s in sources if _is_cuda_source(s)] or sources,
                                     item.opaque, cs, ce))
        elif short in ("load", "load_inline") and (
                "cpp_extension" in name or name in ("load_inline", "load") or
                self._cpp_extension_alias(name)):
            flags_expr = _kw(call, "extra_cuda_cflags")
            if flags_expr is None:
                return
            label_expr = _arg(call, 0, "name")
            if isinstance(label_expr, ast.Attribute):     # params.name of a record
                fields = self._record_fields(label_expr.value, 1) or {}
                label_expr = fields.get(label_expr.attr, label_expr)
            label = self._value(label_expr, [], 0)
            label = label if isinstance(label, str) else None
            item = self.flags(flags_expr)
            sources = self.strings(_arg(call, 1, "sources")) if short == "load" else []
            what = "torch.load" if short == "load" else "torch.load_inline"
            self.builds.append(Build(what, self.labelled(
                                         f"`{short}` module `{label}`" if label else
                                         f"this `{short}` module", item.flags),
                                     self.path, item.flags,
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
            self.builds.append(Build("cupy", self.labelled(
                                         f"CuPy {short} `{label}`" if label else
                                         f"this CuPy {short}", item.flags),
                                     self.path, item.flags, [],
                                     item.opaque, cs, ce))
        elif short in _PYCUDA:
            opts = _arg(call, 2, "options")
            if opts is None:
                return
            item = self.flags(opts)
            self.builds.append(Build("pycuda", self.labelled(f"PyCUDA {short}", item.flags),
                                     self.path, item.flags, [],
                                     item.opaque, cs, ce))

    def _cpp_extension_alias(self, name: str) -> bool:
        """``jit.load`` where the module did ``import torch.utils.cpp_extension as jit``
        (or ``from torch.utils import cpp_extension as jit``)."""
        base = name.rsplit(".", 1)[0] if "." in name else None
        if base is None or "." in base:
            return False
        if self._aliases is None:
            self._aliases = set()
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Import):
                    self._aliases |= {a.asname for a in node.names
                                      if a.asname and a.name == "torch.utils.cpp_extension"}
                elif isinstance(node, ast.ImportFrom) and node.module == "torch.utils":
                    self._aliases |= {a.asname or a.name for a in node.names
                                      if a.name == "cpp_extension"}
        return base in self._aliases


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
