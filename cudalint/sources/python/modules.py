"""The project's own modules a Python file imports: the compile wrappers they define.

A project often compiles its kernels through a helper of its own, defined in one module
and called from the others (pyinn's ``load_kernel(name, code, **kwargs)`` in
``pyinn/utils.py``: ``Template(code).substitute(**kwargs)`` then
``cupy.cuda.compile_with_cache``). For each ``from M import f`` of a file, M is looked
for on disk next to the file (relative imports from the file's folder; absolute ones
from the folder of the file or of one of its parents, as a script or an installed
package would find it), read with :mod:`ast` (never run) and kept while its bytes stay
the same. ``f`` is a wrapper when its body makes a call of the compile API table: the
caller's call of ``f`` is then a compile call, read by binding ``f``'s parameters to the
caller's arguments (calls.py). Text written in M is synthetic in the caller's kernel
(its nodes carry ``_cl_foreign``; names are read with M's own imports, ``_cl_aliases``):
a finding in it has no position in the caller's file.

:func:`python_deps` gives the cache the modules a file's result depends on.
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

MAX_MODULE_BYTES = 1 << 20
MAX_PARENTS = 6            # folders above the importing file searched for a package
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+"
                   r"(?:\(([^)]*)\)|([^#\n]*))", re.MULTILINE)


@dataclass
class Module:
    """One of the project's modules, parsed; its nodes are marked foreign."""

    path: str
    text: str
    tree: ast.Module
    aliases: dict[str, str]
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    scope: object = None        # the module's Scope, made by the first reader


def module_file(importer: str, module: str, level: int) -> Path | None:
    """The file of ``module`` as ``from <level dots><module> import ...`` in `importer`
    finds it, or None."""
    try:
        base = Path(importer).resolve().parent
    except (OSError, RuntimeError, ValueError):
        return None
    return _module_file_from(base, module, level)


def _module_file_from(base: Path, module: str, level: int) -> Path | None:
    """:func:`module_file` for an importer in the folder ``base`` (resolved). Every
    ``from`` import of every Python file asks: the candidates are tested as strings."""
    parts = [p for p in module.split(".") if p]
    if level:
        for _ in range(level - 1):
            base = base.parent
        folders = [base]
    else:
        if not parts:
            return None
        folders = [base, *list(base.parents)[:MAX_PARENTS]]
    for folder in folders:
        stem = os.path.join(folder, *parts)
        for candidate in (stem + ".py" if parts else None,
                          os.path.join(stem, "__init__.py")):
            if candidate is not None and os.path.isfile(candidate):
                return Path(candidate)
    return None


def _aliases(tree: ast.Module) -> dict[str, str]:
    out: dict[str, str] = {}
    for st in tree.body:
        if isinstance(st, ast.Import):
            for a in st.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else \
                    a.name.split(".")[0]
        elif isinstance(st, ast.ImportFrom) and st.module and st.level == 0:
            for a in st.names:
                if a.name != "*":
                    out[a.asname or a.name] = f"{st.module}.{a.name}"
    return out


@lru_cache(maxsize=256)
def _load(path: str, mtime_ns: int, size: int) -> Module | None:
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if len(data) > MAX_MODULE_BYTES:
        return None
    text = data.decode("utf-8", "replace")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    aliases = _aliases(tree)
    for node in ast.walk(tree):
        node._cl_foreign = True                     # type: ignore[attr-defined]
        if isinstance(node, ast.Name):
            node._cl_aliases = aliases              # type: ignore[attr-defined]
    mod = Module(path, text, tree, aliases)
    for st in tree.body:
        if isinstance(st, ast.FunctionDef):
            mod.functions[st.name] = st
    return mod


def load(path: Path, words: tuple[str, ...] | None = None) -> Module | None:
    """The parsed module; with `words`, None at once when its text names none of them
    (most of a project's modules: parsing and marking them all cost more than the rest
    of reading a project's Python)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if words is not None and not _names_any(str(path), st.st_mtime_ns, st.st_size, words):
        return None
    return _load(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=4096)
def _names_any(path: str, mtime_ns: int, size: int, words: tuple[str, ...]) -> bool:
    """Whether the text :func:`_load` would keep for this file holds one of `words`."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return False
    if len(data) > MAX_MODULE_BYTES:
        return False
    text = data.decode("utf-8", "replace")
    return any(w in text for w in words)


def imported_from_project(importer: str, text: str) -> dict[str, tuple[Path, str]]:
    """``{local name: (module file, name in it)}`` for each ``from M import f`` of the
    text whose M is a file of the project (read from the text, so that a file is
    looked at before it is parsed)."""
    out: dict[str, tuple[Path, str]] = {}
    if "import" not in text or importer.startswith("<"):
        return out
    base: Path | None = None
    for m in _FROM.finditer(text):
        level, module = len(m.group(1)), m.group(2)
        names = m.group(3) if m.group(3) is not None else m.group(4)
        if not level and module.split(".")[0] in _NEVER_LOCAL:
            continue
        if base is None:
            try:
                base = Path(importer).resolve().parent
            except (OSError, RuntimeError, ValueError):
                return out
        where = _module_file_from(base, module, level)
        if where is None:
            continue
        for part in names.split(","):
            bits = part.split()
            if bits and bits[0].isidentifier():
                local = bits[2] if len(bits) == 3 and bits[1] == "as" else bits[0]
                out[local] = (where, bits[0])
    return out


# packages that are never a module of the project being linted
_NEVER_LOCAL = {"cupy", "cupyx", "pycuda", "torch", "numpy", "chainer", "typing",
                "__future__", "os", "sys", "re", "string", "collections", "functools",
                "itertools", "math", "abc", "dataclasses", "pathlib", "textwrap"}


def wrapper_modules(importer: str, text: str, words: tuple[str, ...]
                    ) -> dict[str, tuple[Module, ast.FunctionDef]]:
    """The imported functions of the project whose module names a compile API (one of
    `words`): candidates for wrappers, checked by the collector."""
    out: dict[str, tuple[Module, ast.FunctionDef]] = {}
    for local, (where, name) in imported_from_project(importer, text).items():
        mod = load(where, words)
        if mod is None or name not in mod.functions or \
                not any(w in mod.text for w in words):
            continue
        out[local] = (mod, mod.functions[name])
    return out


def python_deps(path: Path, text: str) -> tuple[str, tuple]:
    """(digest, deps) for the result cache: the bytes and stat signatures of the
    project modules the file imports names from (a wrapper there may change what the
    file compiles) and of the files it may read as CUDA (files.py); ("", ()) when
    there is none."""
    from cudalint.sources.signature import file_sig
    from cudalint.sources.python.files import read_files_deps
    files = sorted({str(w) for w, _ in imported_from_project(str(path), text).values()}
                   | set(read_files_deps(path, text)))
    if not files:
        return "", ()
    h = hashlib.sha256()
    deps = []
    for f in files:
        deps.append((f, file_sig(Path(f))))
        try:
            data = Path(f).read_bytes()
        except OSError:
            continue
        h.update(f.encode("utf-8", "surrogateescape") + b"\0%d\0" % len(data) + data)
    return h.hexdigest(), tuple(deps)
