"""Values a Python file takes from the project's other modules, read with :mod:`ast`.

``from .kernels import SRC`` / ``from pkg import kernels`` then ``kernels.SRC``, and the
text-building helpers of those modules (``kernels.build(n)``, ``from .utils import
make``): the module is found on disk next to the importing file (modules.py, as a
script or an installed package would find it), parsed once, and the name is looked up
in its own bindings, exactly as a name of the importing module would be (constants,
``+`` and ``+=`` of constants, ``.format``, functions whose return is resolvable). A
module that is not a file of the project (cupy, numpy) is never read: its names stay
unknown, and the compile call says so.

Text written in another module has no position in the importing file. A literal of
it that holds a line break or at least MIN_PLACED characters is recorded as a stretch
of the kernel read from that file (like a file read by ``open``, files.py): a finding
in it is reported at the compile call and its message names the line and column in the
module.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from cudalint.sources.python.mapping import MStr, Scanner
from cudalint.sources.python.modules import load, module_file
from cudalint.sources.python.scopes import Scope

if TYPE_CHECKING:
    from cudalint.sources.python.resolve import Extractor

MIN_PLACED = 24          # shorter literals ("float") could be found at the wrong place


def _root(scope: Scope | None) -> Scope | None:
    while scope is not None and scope.parent is not None:
        scope = scope.parent
    return scope


class ImportedValues:
    """Mixin of the Extractor: names bound by imports of the project's own modules."""

    filename: str

    def importer_path(self: "Extractor", scope: Scope | None) -> str:
        """The file whose imports `scope` reads: this file, or another module's."""
        root = _root(scope)
        return getattr(root.node, "_cl_path", None) or self.filename if root else \
            self.filename

    def module_scope(self: "Extractor", importer: str, module: str, level: int
                     ) -> Scope | None:
        """The module scope of ``<level dots><module>`` imported by `importer`, or None
        when it is not a file of the project."""
        if not importer or importer.startswith("<"):
            return None
        where = module_file(importer, module, level)
        mod = load(where) if where is not None else None
        if mod is None:
            return None
        if mod.scope is None:
            mod.scope = Scope(mod.tree, None)
        return mod.scope  # type: ignore[return-value]

    def foreign_lookup(self: "Extractor", name: str, imported: ast.AST, scope: Scope,
                       depth: int):
        """``from M import name``: (scope, bindings) of the name in M, or None."""
        if not isinstance(imported, ast.ImportFrom) or depth > 16:
            return None
        orig = next((a.name for a in imported.names if (a.asname or a.name) == name), None)
        if orig is None or orig == "*":
            return None
        target = self.module_scope(self.importer_path(scope), imported.module or "",
                                   imported.level)
        if target is None or orig not in target.bindings:
            return None
        return self.lookup(orig, target, 1 << 30, depth + 1)

    def bound_module(self: "Extractor", name: str, scope: Scope | None) -> Scope | None:
        """The module scope a name is bound to by ``import M`` / ``import a.M as M`` /
        ``from pkg import M`` (M a file of the project), or None."""
        s = scope
        while s is not None:
            binds = s.bindings.get(name)
            if binds:
                if len(binds) != 1 or not isinstance(binds[0].value,
                                                     (ast.Import, ast.ImportFrom)):
                    return None
                imp = binds[0].value
                importer = self.importer_path(s)
                if isinstance(imp, ast.Import):
                    full = next((a.name for a in imp.names
                                 if (a.asname or a.name) == name), None)
                    return self.module_scope(importer, full, 0) if full else None
                orig = next((a.name for a in imp.names if (a.asname or a.name) == name),
                            None)
                if orig is None:
                    return None
                module = f"{imp.module}.{orig}" if imp.module else orig
                return self.module_scope(importer, module, imp.level)
            if name in s.params:
                return None
            s = s.parent
        return None

    def attribute_lookup(self: "Extractor", expr: ast.Attribute, scope, depth: int):
        """``M.NAME`` with M a module of the project: (scope, bindings) of NAME in M."""
        if not isinstance(expr.value, ast.Name) or expr.value.id in ("self", "cls") or \
                depth > 16:
            return None
        target = self.bound_module(expr.value.id, scope)
        if target is None:
            return None
        if expr.attr not in target.bindings:
            self.fail(f"`{expr.value.id}.{expr.attr}`: its module defines no `{expr.attr}`")
            return None
        return self.lookup(expr.attr, target, 1 << 30, depth + 1)

    def foreign_literal(self: "Extractor", node: ast.Constant) -> MStr:
        """A string literal of another module: synthetic here; a long one is recorded as
        a stretch read from that module's file (its findings name their place there)."""
        value = node.value
        path = getattr(node, "_cl_path", None)
        if path is None or ("\n" not in value and len(value) < MIN_PLACED):
            return MStr.synthetic(value)
        mod = load(Path(path))
        if mod is None:
            return MStr.synthetic(value)
        scanner = self._foreign_scanners.get(path)
        if scanner is None or scanner[0] is not mod:
            starts = [0]
            text = mod.text
            i = text.find("\n")
            while i >= 0:
                starts.append(i + 1)
                i = text.find("\n", i + 1)
            scanner = self._foreign_scanners[path] = (mod, Scanner(text), starts)
        _, scan, starts = scanner
        try:
            s = _offset(mod.text, starts, node.lineno, node.col_offset)
            e = _offset(mod.text, starts, node.end_lineno, node.end_col_offset)
            out = MStr()
            for prefix, quote, a, b, ls, le in scan.literals(s, e):
                if "b" in prefix or "f" in prefix:
                    return MStr.synthetic(value)
                out = out + scan.decode(prefix, quote, a, b, (ls, le))
        except (ValueError, IndexError, KeyError, AssertionError, TypeError):
            return MStr.synthetic(value)
        if out.text != value:
            return MStr.synthetic(value)
        self.file_reads.append((path, value, list(out.map), mod.text))
        return MStr.synthetic(value)


def _offset(text: str, starts: list[int], line: int | None, col_bytes: int | None) -> int:
    start = starts[(line or 1) - 1]
    end = starts[line] if line is not None and line < len(starts) else len(text)
    raw = text[start:end].encode("utf-8", "surrogatepass")
    return start + len(raw[:col_bytes or 0].decode("utf-8", "surrogatepass"))
