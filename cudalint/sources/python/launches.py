"""The Python calls that launch a kernel found in the file: grid, block, shared memory.

A variable bound to a compile call, or to ``mod.get_function("name")`` of one, is a
kernel handle; a call of a handle that passes a block is a launch (CuPy
``k(grid, block, args, shared_mem=...)``, PyCUDA ``f(..., block=..., grid=...,
shared=...)``). Each launch is attached to the kernels its handle stands for; block and
grid are kept only when every dimension is a known positive int.
"""
from __future__ import annotations

import ast

from cudalint.sources.python.resolve import Extractor, Scope
from cudalint.sources.python.units import EmbeddedKernel, PyLaunch, PythonExtraction


class LaunchReader:
    """The launch half of :class:`~cudalint.sources.python.calls.Collector`.

    It reads the collector's extractor (``ex``), the kernels found so far (``result``),
    the statements whose expressions may hold calls (``pending``), and the collector's
    ``arg``, ``lines_matching`` and ``touches``.
    """

    ex: Extractor
    result: PythonExtraction
    pending: list[tuple[ast.AST, Scope]]

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
