"""CUDA source a Python module reads from a file of its own package at run time.

``open(os.path.join(os.path.dirname(__file__), "cuda", "k.h")).read()``, a ``with
open(...) as f`` block's ``f.read()`` or ``"\\n".join(f.readlines())``, and
``Path(__file__).parent / "k.cu"`` with ``.read_text()``: when the path is built from
``__file__`` with constants (``os.path.join``/``dirname``/``abspath``, ``Path``'s
``parent`` and ``/``, names bound once to such values), the file next to the module is
the text, read here (never the program). A path that does not start from
``__file__`` (the working directory of a run is not known) is not read.

The text is synthetic in the Python file; the kernel keeps, for each stretch of it
that came from a file, that file's path and the file offset of each character
(``EmbeddedKernel.files``), so that a finding in it is reported at the compile call
and names its place in the file (:meth:`cudalint.sources.base.Unit.file_note`).
:func:`read_files_deps` gives the cache the files a module may read this way.
"""
from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from cudalint.sources.python.mapping import MStr

if TYPE_CHECKING:
    from cudalint.sources.python.resolve import Extractor

MAX_FILE_BYTES = 2 << 20
_OS_PATH = {"os.path.join", "os.path.dirname", "os.path.abspath", "os.path.realpath",
            "os.path.normpath"}
_PATHS = {"pathlib.Path", "pathlib.PurePath"}
_OPEN = {"open", "io.open", "codecs.open"}
_LITERAL_FILE = re.compile(r"""["']([\w./-]+\.(?:h|hpp|hh|cuh|cu|inl|cpp|c))["']""")


class FileReads:
    """Mixin of the Extractor: the value of a file read, and where its text came from."""

    filename: str
    file_reads: list[tuple[str, str, list[int], str]]

    def path_value(self: "Extractor", expr: ast.expr, scope, depth: int = 0) -> str | None:
        """An absolute path built from ``__file__`` with constants, or None."""
        if depth > 16:
            return None
        if isinstance(expr, ast.Name) and expr.id == "__file__":
            # in another module of the project (modules.py), that module's file
            where = getattr(expr, "_cl_path", None) or self.filename
            if not where or where.startswith("<"):
                return None
            try:
                return str(Path(where).resolve())
            except (OSError, RuntimeError, ValueError):
                return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return expr.value
        if isinstance(expr, ast.Name):
            saved = self.why
            found = self.lookup(expr.id, scope, expr.lineno, depth)
            self.why = saved
            if found is None or len(found[1]) != 1 or not isinstance(found[1][0].value,
                                                                      ast.expr):
                return None
            return self.path_value(found[1][0].value, found[0], depth + 1)
        if isinstance(expr, ast.Call):
            q = self.qualname(expr.func) or (expr.func.id if isinstance(
                expr.func, ast.Name) else "")
            if expr.keywords:
                return None
            parts = [self.path_value(a, scope, depth + 1) for a in expr.args]
            if any(p is None for p in parts):
                return None
            if q == "os.path.join" and parts:
                return os.path.join(*parts)
            if q in _OS_PATH and len(parts) == 1:
                fn = getattr(os.path, q.rsplit(".", 1)[1])
                return fn(parts[0])
            if (q in _PATHS or q.rsplit(".", 1)[-1] == "Path") and len(parts) == 1:
                return parts[0]
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in (
                    "resolve", "absolute") and not expr.args:
                return self.path_value(expr.func.value, scope, depth + 1)
            return None
        if isinstance(expr, ast.Attribute) and expr.attr == "parent":
            inner = self.path_value(expr.value, scope, depth + 1)
            return os.path.dirname(inner) if inner else None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
            a = self.path_value(expr.left, scope, depth + 1)
            b = self.path_value(expr.right, scope, depth + 1)
            return os.path.join(a, b) if a and b else None
        return None

    def opened_path(self: "Extractor", expr: ast.expr, scope) -> str | None:
        """The path of ``open(P)`` / ``Path(P)``, or of the ``with open(P) as f`` that
        binds the name ``f`` in the current function or module."""
        if isinstance(expr, ast.Call) and expr.args and (
                self.qualname(expr.func) in _OPEN or
                (isinstance(expr.func, ast.Name) and expr.func.id == "open")):
            mode = expr.args[1] if len(expr.args) > 1 else None
            if isinstance(mode, ast.Constant) and "b" in str(mode.value):
                return None
            return self.path_value(expr.args[0], scope)
        if isinstance(expr, ast.Name) and scope is not None:
            for node in ast.walk(scope.node):
                if isinstance(node, (ast.With, ast.AsyncWith)) and \
                        node.lineno <= expr.lineno <= (node.end_lineno or node.lineno):
                    for item in node.items:
                        if isinstance(item.optional_vars, ast.Name) and \
                                item.optional_vars.id == expr.id:
                            return self.opened_path(item.context_expr, scope)
            return None
        return self.path_value(expr, scope)

    def file_value(self: "Extractor", expr: ast.Call, scope) -> MStr | None:
        """``X.read()`` / ``X.read_text()`` of a file of the package, or None."""
        fn = expr.func
        if not isinstance(fn, ast.Attribute) or fn.attr not in ("read", "read_text") or \
                expr.args or expr.keywords:
            return None
        path = self.opened_path(fn.value, scope)
        text = _read(path) if path else None
        if text is None:
            return None
        self.file_reads.append((path, text, list(range(len(text))), text))
        return MStr.synthetic(text)

    def file_lines_joined(self: "Extractor", sep: MStr, arg: ast.expr, scope
                          ) -> MStr | None:
        """``sep.join(f.readlines())``: the file's lines (each keeping its line end)
        joined with the separator."""
        if not (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and
                arg.func.attr == "readlines" and not arg.args and not arg.keywords):
            return None
        path = self.opened_path(arg.func.value, scope)
        text = _read(path) if path else None
        if text is None:
            return None
        out: list[str] = []
        offsets: list[int] = []
        pos = 0
        for k, line in enumerate(text.splitlines(keepends=True)):
            if k:
                out.append(sep.text)
                offsets.extend([-1] * len(sep.text))
            out.append(line)
            offsets.extend(range(pos, pos + len(line)))
            pos += len(line)
        joined = "".join(out)
        self.file_reads.append((path, joined, offsets, text))
        return MStr.synthetic(joined)


def _read(path: str) -> str | None:
    try:
        p = Path(path)
        if not p.is_absolute() or not p.is_file() or p.stat().st_size > MAX_FILE_BYTES:
            return None
        data = p.read_bytes()
    except (OSError, ValueError):
        return None
    if b"\0" in data[:8192]:
        return None
    # text mode: universal newlines, as the program reads it
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def segments(text: str, reads: list[tuple[str, str, list[int], str]]
             ) -> list[tuple[int, int, str, list[int], str]]:
    """Where each file read ended up in a kernel's text: (start, end, path, file
    offset of each character, the file's text); a read whose text is not found whole
    is left out (its findings are then at the call, without a place in the file)."""
    out = []
    for path, produced, offsets, whole in reads:
        i = text.find(produced) if produced else -1
        if i >= 0:
            out.append((i, i + len(produced), path, offsets, whole))
    return out


def place_in_file(files: list[tuple[int, int, str, list[int], str]], char: int
                  ) -> tuple[str, int, int] | None:
    """(path, row, column), both from 1, of a kernel character read from a file."""
    for start, end, path, offsets, whole in files:
        if start <= char < end:
            off = next((o for o in offsets[char - start:] if o >= 0), -1)
            if off < 0:
                return None
            row = whole.count("\n", 0, off) + 1
            return path, row, off - (whole.rfind("\n", 0, off) + 1) + 1
    return None


def read_files_deps(path: Path, text: str) -> list[str]:
    """Files a module may read as CUDA: those of its folder (and the folders in it,
    two levels down) whose name a string literal of the module ends with."""
    names = {m.group(1).rsplit("/", 1)[-1] for m in _LITERAL_FILE.finditer(text)}
    if not names:
        return []
    out = []
    base = Path(path).resolve().parent
    for folder, dirs, files in os.walk(base):
        depth = len(Path(folder).relative_to(base).parts)
        if depth >= 2:
            dirs[:] = []
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out.extend(str(Path(folder) / f) for f in sorted(files) if f in names)
    return sorted(out)
