"""The Python calls that launch a kernel found in the file: grid, block, shared memory.

A kernel handle is a variable (or ``self.attribute``) bound to a compile call, to
``mod.get_function("name")`` of one, or to a call of a function of the module that
returns one (``_get_kernel()`` in a memoized helper); a call of a handle that passes a
block is a launch: CuPy ``k(grid, block, args, shared_mem=...)``, PyCUDA ``f(...,
block=..., grid=..., shared=...)`` and ``f.prepared_call(grid, block, ...)``, and for
the kernels the library launches itself (CuPy ElementwiseKernel, ReductionKernel), a
``block_size=`` keyword. Each launch is attached to the kernels its handle stands for.

A block is kept only when every dimension is a known positive int. A block tuple (or
one of its dimensions) assigned in the branches of an ``if``/``elif``/``else`` gives one
launch per shape; a kernel launched with several shapes is then analysed once per shape
(:func:`split_by_shape`), so each finding says which shape it holds for, and a finding
that holds for all of them is said once.
"""
from __future__ import annotations

import ast
import copy
import itertools
from collections import deque

from cudalint.sources.python import apis as A
from cudalint.sources.python.flow import _own_returns, statement_children
from cudalint.sources.python.resolve import Extractor, Scope
from cudalint.sources.python.snippets import arg
from cudalint.sources.python.units import EmbeddedKernel, PyLaunch, PythonExtraction

MAX_SHAPES = 4            # shapes of one kernel analysed apart; more: none is assumed
_HANDLE_ATTRS = ("get_function", "get_kernel")
_PREPARED = ("prepared_call", "prepared_async_call", "prepared_timed_call")


def _key(expr: ast.expr) -> str | None:
    """The name a handle is kept under: ``k`` or ``self.k``."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and \
            expr.value.id in ("self", "cls"):
        return f"{expr.value.id}.{expr.attr}"
    return None


def _base_name(name: str) -> str:
    """``k<float, 4>`` (a name expression) -> ``k``: the function the launch runs."""
    return name.split("<", 1)[0].strip()


class LaunchReader:
    """The launch half of :class:`~cudalint.sources.python.calls.Collector`.

    It reads the collector's extractor (``ex``), the kernels found so far (``result``),
    the statements whose expressions may hold calls (``pending``), the module
    (``tree``), and the collector's ``lines_matching`` and ``touches``.
    """

    ex: Extractor
    result: PythonExtraction
    pending: list[tuple[ast.AST, Scope]]
    tree: ast.Module

    # -- handles ------------------------------------------------------------------------

    def attach_launches(self) -> None:
        if not self.result.kernels:
            return
        # a call may give several kernels (one per if/else branch or per caller)
        self.by_call: dict[int, list[EmbeddedKernel]] = {}
        for k in self.result.kernels:
            self.by_call.setdefault(id(getattr(k, "_call")), []).append(k)
        self.handles: dict[str, tuple[list[EmbeddedKernel], str | None]] = {}
        self.ambiguous: set[str] = set()
        self.makers: dict[str, tuple[list[EmbeddedKernel], str | None]] = {}
        assigns = sorted(((n, sc) for n, sc in self.pending if isinstance(n, ast.Assign)),
                         key=lambda a: (a[0].lineno, a[0].col_offset))
        # a name bound once in a function, where the module binds it more than once
        # (ker = mod.get_function(...) in each test): (function, name) -> bindings
        self.scoped: dict[tuple[int, str], list[tuple[int, int, tuple]]] = {}
        for _ in range(2):      # a helper's result may be bound before the helper is read
            for node, sc in assigns:
                if len(node.targets) == 1:
                    key = _key(node.targets[0])
                    self._scope = sc
                    got = self.handle_of(node.value) if key else None
                    if got is not None:
                        self.bind(key, got, node)
            self._scope = None
            self.find_makers()
        if not self.handles and not self.makers and not self.scoped:
            return
        hot = self.lines_matching({k.split(".")[-1] for k in self.handles} | set(self.makers)
                                  | set(_PREPARED) | {k for _, k in self.scoped})
        for node, scope in self.pending:
            if not self.touches(node, hot):
                continue
            for call in ast.walk(node):
                if isinstance(call, ast.Call):
                    self.read_launch(call, scope)
        for k in self.result.kernels:
            explicit = [la for la in k.launches if la.start != k.call_start]
            if explicit and any(la.start == k.call_start for la in k.launches):
                # a block_size= given at the launches replaces the library's own
                api = getattr(k, "_api", None)
                if api is not None and api.launch == A.LIBRARY_LAUNCH:
                    k.launches[:] = explicit
        self.result.kernels[:] = split_by_shape(self.result.kernels)

    def bind(self, key: str, value, node) -> None:
        seen = getattr(self, "_bound_at", None)
        if seen is None:
            seen = self._bound_at = {}
        if seen.get(key) is node:
            return
        sc = getattr(self, "_scope", None)
        if sc is not None and isinstance(sc.node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and "." not in key:
            entries = self.scoped.setdefault((id(sc.node), key), [])
            if all(e[0] != id(node) for e in entries):
                entries.append((id(node), node.lineno, value))
        if key in self.handles or key in self.ambiguous:
            self.handles.pop(key, None)
            self.ambiguous.add(key)
            return
        seen[key] = node
        self.handles[key] = value

    def handle_of(self, value: ast.expr):
        """(kernels, kernel name) a value stands for, or None."""
        if not isinstance(value, ast.Call):
            if isinstance(value, (ast.Name, ast.Attribute)):
                key = _key(value)
                return self.handle(key, getattr(self, "_scope", None),
                                   value.lineno) if key else None
            return None
        if id(value) in self.by_call:
            ks = self.by_call[id(value)]
            return ks, ks[0].name
        f = value.func
        if isinstance(f, ast.Attribute) and f.attr in _HANDLE_ATTRS and value.args:
            base = self.handle_of(f.value)
            name = self.ex.const(value.args[0], None)
            if base is not None and isinstance(name, str):
                return base[0], _base_name(name)
            return None
        if isinstance(f, ast.Name) and f.id in self.makers:
            return self.makers[f.id]
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                f.value.id in ("self", "cls") and f.attr in self.makers:
            return self.makers[f.attr]
        return None

    def handle(self, key: str, scope, line: int):
        """The handle a name stands for at `line`: the module's one binding, or, where
        the module binds the name more than once, the one binding of the function the
        name is read in (before `line`)."""
        got = self.handles.get(key)
        if got is not None or key not in self.ambiguous or scope is None:
            return got
        entries = self.scoped.get((id(scope.node), key), [])
        return entries[0][2] if len(entries) == 1 and entries[0][1] < line and \
            len(scope.bindings.get(key, ())) == 1 else None

    def find_makers(self) -> None:
        """Functions of the module every return of which is a kernel handle."""
        candidates = getattr(self, "_returning", None)
        if candidates is None:
            candidates = self._returning = _returning_functions(self.tree)
        for fn, rets in candidates:
            if fn.name in self.makers:
                continue
            got = [self.handle_of(r.value) for r in rets]
            if all(g is not None for g in got) and len({id(g[0][0]) for g in got}) == 1 \
                    and len({g[1] for g in got}) == 1:
                self.makers[fn.name] = got[0]

    # -- launches -----------------------------------------------------------------------

    def read_launch(self, call: ast.Call, scope) -> None:
        f = call.func
        prepared = False
        target = None
        if isinstance(f, ast.Attribute) and f.attr in _PREPARED:
            target = self.handle_of(f.value)
            prepared = True
        elif isinstance(f, (ast.Name, ast.Attribute)):
            key = _key(f)
            target = self.handle(key, scope, call.lineno) if key else None
        elif isinstance(f, ast.Call):
            target = self.handle_of(f)
        if target is None:
            return
        kernels, kname = target
        for launch in self.launches(call, scope, kernels[0], kname, prepared):
            for k in kernels:
                k.launches.append(launch)

    def launches(self, call: ast.Call, scope, k: EmbeddedKernel, kname: str | None,
                 prepared: bool) -> list[PyLaunch]:
        s, e = self.ex.span(call)
        api = getattr(k, "_api", None)
        launch = api.launch if api is not None else A.CUPY_LAUNCH
        if prepared:
            grid, block, shared = arg(call, 0, None), arg(call, 1, None), None
        elif launch == A.PYCUDA_LAUNCH:
            grid, block, shared = (arg(call, None, "grid"), arg(call, None, "block"),
                                   arg(call, None, "shared"))
        elif launch == A.LIBRARY_LAUNCH:
            grid, block, shared = None, arg(call, None, "block_size"), None
        else:
            grid, block, shared = (arg(call, 0, "grid"), arg(call, 1, "block"),
                                   arg(call, None, "shared_mem"))
        if block is None:
            return []
        smem = self.ex.const(shared, scope) if shared is not None else 0
        blocks = self.dims_all(block, scope) or [None]
        grids = self.dims_all(grid, scope) if grid is not None else None
        g = grids[0] if grids and len(grids) == 1 else None
        return [PyLaunch(kernel=kname, block=b, grid=g,
                         shared_mem=smem if isinstance(smem, int) else None, start=s, end=e)
                for b in blocks]

    def dims(self, expr: ast.expr | None, scope) -> tuple[int, ...] | None:
        shapes = self.dims_all(expr, scope) if expr is not None else None
        return shapes[0] if shapes and len(shapes) == 1 else None

    def dims_all(self, expr: ast.expr, scope, depth: int = 0
                 ) -> list[tuple[int, ...]] | None:
        """Every shape a launch dimension expression may have, or None when one of them
        is not known (a name assigned in branches gives one shape per branch)."""
        if depth > 8:
            return None
        if isinstance(expr, ast.Name):
            alts = self.ex.alternatives(expr.id, scope, expr.lineno)
            self.ex.why = None
            if not alts:
                return None
            out: list[tuple[int, ...]] = []
            for owner, value in alts:
                got = self.dims_all(value, owner, depth + 1) \
                    if isinstance(value, ast.expr) else None
                if got is None:
                    return None
                out.extend(x for x in got if x not in out)
            return out if len(out) <= MAX_SHAPES else None
        elts = expr.elts if isinstance(expr, (ast.Tuple, ast.List)) else [expr]
        if not 1 <= len(elts) <= 3:
            return None
        per_dim = []
        for el in elts:
            v = self.ex.const(el, scope)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                per_dim.append([v])
                continue
            if isinstance(el, ast.Name) and isinstance(expr, (ast.Tuple, ast.List)):
                sub = self.dims_all(el, scope, depth + 1)
                if sub and all(len(x) == 1 for x in sub):
                    per_dim.append([x[0] for x in sub])
                    continue
            return None
        shapes = [tuple(c) for c in itertools.product(*per_dim)]
        return shapes if len(shapes) <= MAX_SHAPES else None


def _returning_functions(tree: ast.Module
                         ) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef,
                                         list[ast.Return]]]:
    """The module's functions (nested ones too, in ``ast.walk`` order) whose every own
    return gives a value, with those returns: computed once per module, as the walk
    over every node of the module was most of the time of reading launches."""
    out = []
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            rets = _own_returns(node)
            if rets and all(r.value is not None for r in rets):
                out.append((node, rets))
        todo.extend(statement_children(node))
    return out


def split_by_shape(kernels: list[EmbeddedKernel]) -> list[EmbeddedKernel]:
    """One copy of a kernel per block shape it is launched with (up to MAX_SHAPES), each
    copy keeping the launches of one shape: a rule sees one shape at a time."""
    out = []
    for k in kernels:
        by_name: dict = {}
        for la in k.launches:
            if la.block is not None:
                shape = tuple(list(la.block) + [1] * (3 - len(la.block)))
                by_name.setdefault(la.kernel, [])
                if shape not in by_name[la.kernel]:
                    by_name[la.kernel].append(shape)
        n = max((len(v) for v in by_name.values()), default=1)
        if n <= 1 or n > MAX_SHAPES:
            out.append(k)
            continue
        for i in range(n):
            c = copy.copy(k)
            c.launches = [la for la in k.launches if la.block is None or
                          _shape_index(by_name[la.kernel], la.block, i)]
            out.append(c)
    return out


def _shape_index(shapes: list, block: tuple[int, ...], i: int) -> bool:
    shape = tuple(list(block) + [1] * (3 - len(block)))
    return shapes.index(shape) == i % len(shapes)
