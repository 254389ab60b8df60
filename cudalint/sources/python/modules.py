"""The project's own modules a Python file imports: the compile wrappers they define.

A project often compiles its kernels through a helper of its own, defined in one module
and called from the others (pyinn's ``load_kernel(name, code, **kwargs)`` in
``pyinn/utils.py``: ``Template(code).substitute(**kwargs)`` then
``cupy.cuda.compile_with_cache``; cupyx's ``_filters_core._generate_nd_kernel``). For
each ``from M import f`` of a file, and each module bound to a name used as ``M.f``
(``from pkg import M``, ``from . import M``, ``import pkg.M as M``: :func:`imported_modules`),
M is looked for on disk next to the file (relative imports from the file's folder;
absolute ones from the folder of the file or of one of its parents, as a script or an
installed package would find it), read with :mod:`ast` (never run) and kept while its
bytes stay the same. ``f`` is a wrapper when its body makes a call of the compile API
table: the caller's call of ``f`` (or ``M.f``) is then a compile call, read by binding
``f``'s parameters to the caller's arguments (calls.py). Text written in M is synthetic
in the caller's kernel (its nodes carry ``_cl_foreign``; names are read with M's own
imports, ``_cl_aliases``; literals and ``__file__`` carry M's path, ``_cl_path``, for
imports.py and files.py). :func:`called_elsewhere` tells the collector of M whether
another module calls ``f`` that way (its inner compile call is then a wrapper body).

:func:`python_deps` gives the cache the modules a file's result depends on.
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
import time
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from cudalint.sources.python.apis import BUILTIN_WORDS

MAX_MODULE_BYTES = 1 << 20
MAX_PARENTS = 6            # folders above the importing file searched for a package
SIG_SECONDS = 2.0          # how long a folder's listing is trusted
# both start with their keyword (the regex engine then skips ahead to it: a ^ anchor
# tried at every line, or a \b, costs 10-40x); the line's start is checked in _imports
_FROM = re.compile(r"from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+"
                   r"(?:\(([^)]*)\)|([^#\n]*))")
_IMPORT = re.compile(r"import[ \t]+([\w.]+)(?:[ \t]+as[ \t]+(\w+))?[ \t]*(?:#[^\n]*)?$",
                     re.MULTILINE)


@dataclass
class Module:
    """One of the project's modules, parsed; its nodes are marked foreign."""

    path: str
    text: str
    tree: ast.Module
    aliases: dict[str, str]
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    scope: object = None        # the module's Scope, made by the first reader
    naming: dict = field(default_factory=dict)   # words -> functions naming one


def module_file(importer: str, module: str, level: int) -> Path | None:
    """The file of ``module`` as ``from <level dots><module> import ...`` in `importer`
    finds it, or None."""
    try:
        base = Path(importer).resolve().parent
    except (OSError, RuntimeError, ValueError):
        return None
    return _module_file_from(base, module, level)


@lru_cache(maxsize=4096)
def _folder_of(importer: str) -> Path | None:
    """The resolved folder of a file (symbolic links followed, once per file)."""
    try:
        return Path(os.path.dirname(os.path.realpath(importer)))
    except (OSError, RuntimeError, ValueError):
        return None


def _module_file_from(base: Path, module: str, level: int) -> Path | None:
    """:func:`module_file` for an importer in the folder ``base`` (resolved). Every
    ``from`` import of every Python file asks: the candidates are tested as strings,
    and the answer is kept for the files of the same folder importing the same name
    (a module created while a language server runs is found at the next stat change
    of the folder that gains it)."""
    return _module_file_cached(str(base), module, level, _folder_sig(str(base)))


def _folder_sig(folder: str) -> int:
    return _folder_sig_at(folder, int(time.monotonic() / SIG_SECONDS))


@lru_cache(maxsize=4096)
def _folder_sig_at(folder: str, tick: int) -> int:
    """A folder's modification time, asked again every SIG_SECONDS (every import of
    every file asks about its folder: one stat per folder and tick, not per import)."""
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return 0


@lru_cache(maxsize=8192)
def _module_file_cached(folder: str, module: str, level: int, sig: int) -> Path | None:
    base = Path(folder)
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
    tree._cl_path = path                            # type: ignore[attr-defined]
    for node in ast.walk(tree):
        node._cl_foreign = True                     # type: ignore[attr-defined]
        if isinstance(node, ast.Name):
            node._cl_aliases = aliases              # type: ignore[attr-defined]
            if node.id == "__file__":               # this module's file, not the reader's
                node._cl_path = path                # type: ignore[attr-defined]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            node._cl_path = path                    # type: ignore[attr-defined]
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
    text = _text(path, mtime_ns, size)
    return text is not None and any(w in text for w in words)


@lru_cache(maxsize=4096)
def _text(path: str, mtime_ns: int, size: int) -> str | None:
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if len(data) > MAX_MODULE_BYTES:
        return None
    return data.decode("utf-8", "replace")


_TOP_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)|^(?:class|@)\w*", re.MULTILINE)


@lru_cache(maxsize=1024)
def _defs_naming(path: str, mtime_ns: int, size: int, words: tuple[str, ...]
                 ) -> frozenset[str]:
    """The module-level functions of a file whose text (to the next top-level ``def``,
    ``class`` or decorator) names one of `words`: read before the module is parsed, so
    that a module used only for its other functions (``cuda.to_gpu``) is never parsed."""
    text = _text(path, mtime_ns, size)
    if text is None:
        return frozenset()
    heads = [(m.start(), m.group(1)) for m in _TOP_DEF.finditer(text)]
    out = set()
    for k, (start, name) in enumerate(heads):
        if name:
            end = heads[k + 1][0] if k + 1 < len(heads) else len(text)
            if any(w in text[start:end] for w in words):
                out.add(name)
    return frozenset(out)


def may_wrap(path: Path, names: set[str], words: tuple[str, ...]) -> bool:
    """Whether one of the functions `names` of the module at `path` names a compile API."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return bool(names & _defs_naming(str(path), st.st_mtime_ns, st.st_size, words))


@lru_cache(maxsize=32)
def _imports(text: str) -> tuple[tuple[int, str, tuple[tuple[str, str], ...]], ...]:
    """(dots, module, ((name, local name), ...)) of each ``from`` import of the text,
    and (0, module, ()) with the local name in place of the names for ``import M`` /
    ``import a.b as M`` (as (0, module, (("", local),))); read once per text."""
    out = []
    for m in _FROM.finditer(text):
        if text[text.rfind("\n", 0, m.start()) + 1:m.start()].strip(" \t"):
            continue
        names = m.group(3) if m.group(3) is not None else m.group(4)
        pairs = []
        for part in names.split(","):
            bits = part.split()
            if bits and bits[0].isidentifier():
                pairs.append((bits[0], bits[2] if len(bits) == 3 and bits[1] == "as"
                              else bits[0]))
        out.append((len(m.group(1)), m.group(2), tuple(pairs)))
    for m in _IMPORT.finditer(text):
        line = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
        module, local = m.group(1), m.group(2)
        if line.strip() or (local is None and "." in module):
            continue
        out.append((0, module, (("", local or module),)))
    return tuple(out)


def imported_from_project(importer: str, text: str) -> dict[str, tuple[Path, str]]:
    """``{local name: (module file, name in it)}`` for each ``from M import f`` of the
    text whose M is a file of the project (read from the text, so that a file is
    looked at before it is parsed)."""
    out: dict[str, tuple[Path, str]] = {}
    if "import" not in text or importer.startswith("<"):
        return out
    base: Path | None = None
    for level, module, pairs in _imports(text):
        if (not level and module.split(".")[0] in _NEVER_LOCAL) or pairs[:1] and \
                not pairs[0][0]:
            continue
        if base is None:
            base = _folder_of(importer)
            if base is None:
                return out
        where = _module_file_from(base, module, level)
        if where is None:
            continue
        for name, local in pairs:
            out[local] = (where, name)
    return out


def imported_modules(importer: str, text: str) -> dict[str, Path]:
    """``{local name: module file}`` for each module of the project the text binds to a
    name and then uses as ``name.attr`` (``from pkg import M``, ``from . import M``,
    ``import pkg.M as M``, ``import M``): its functions and constants are read through
    that name (``M.f(...)``, ``M.SRC``)."""
    out: dict[str, Path] = {}
    if "import" not in text or importer.startswith("<"):
        return out
    base: Path | None = None
    for level, module, pairs in _imports(text):
        if not level and module.split(".")[0] in _NEVER_MODULES:
            continue
        if not pairs or not any(local + "." in text for _, local in pairs):
            continue
        if base is None:
            base = _folder_of(importer)
            if base is None:
                return out
        if level > len(base.parts):
            continue
        if pairs[0][0] == "":                               # import a.b as M
            local = pairs[0][1]
            where = _module_file_from(base, module, level) if local + "." in text \
                else None
            if where is not None:
                out[local] = where
            continue
        # from X import M: X a package of the project (the same answer as for its
        # functions, cached), M a module in it
        pkg = _module_file_from(base, module, level) if module else \
            (base.parents[level - 2] if level > 1 else base) / "__init__.py"
        if pkg is None or pkg.name != "__init__.py":
            continue
        for name, local in pairs:
            if local + "." not in text:
                continue
            for c in (pkg.parent / f"{name}.py", pkg.parent / name / "__init__.py"):
                if os.path.isfile(c):
                    out[local] = c
                    break
    return out


# packages that are never a module of the project being linted
_NEVER_LOCAL = {"cupy", "cupyx", "pycuda", "torch", "numpy", "chainer", "typing",
                "__future__", "os", "sys", "re", "string", "collections", "functools",
                "itertools", "math", "abc", "dataclasses", "pathlib", "textwrap"}
# the same for modules used as ``M.f``: the compile libraries' own modules are the
# project when the project is that library (cupyx.scipy.ndimage's _filters_core)
_NEVER_MODULES = _NEVER_LOCAL - {"cupy", "cupyx", "pycuda", "chainer"}


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
    for local, where in imported_modules(importer, text).items():
        called = set(re.findall(re.escape(local) + r"\.(\w+)", text))
        if not may_wrap(where, called - BUILTIN_WORDS, words):
            continue
        mod = load(where, words)
        if mod is None:
            continue
        for name in _naming(mod, words):
            if f"{local}.{name}" in text:
                out[f"{local}.{name}"] = (mod, mod.functions[name])
    return out


def _naming(mod: Module, words: tuple[str, ...]) -> list[str]:
    """The functions of a module whose own lines name a compile API (kept with it)."""
    got = mod.naming.get(words)
    if got is None:
        lines = mod.text.splitlines()
        got = mod.naming[words] = [
            name for name, fn in mod.functions.items()
            if any(w in line for line in lines[fn.lineno - 1:fn.end_lineno or fn.lineno]
                   for w in words)]
    return got


MAX_PACKAGE_FILES = 4000


def called_elsewhere(path: str, name: str, words: tuple[str, ...]) -> bool:
    """Does another module of the project call the function `name` of `path`, as
    ``M.name(...)`` or after ``from M import name``, in a way that module reads as a call
    of this wrapper (:func:`wrapper_modules`)? Such a call is a compile call of its own
    (read, or listed with its reason), so the wrapper's inner call is not counted
    twice. The modules looked at: the package of `path` (the topmost folder above it
    holding an ``__init__.py``, all of it) and the scripts beside that package; for a
    script, the scripts of its folder."""
    try:
        here = Path(path).resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    root = here.parent
    while (root / "__init__.py").is_file() and (root.parent / "__init__.py").is_file() \
            and root.parent != root:
        root = root.parent
    stem = here.stem
    pattern = re.compile(r"\b" + re.escape(stem) + r"\." + re.escape(name) + r"\s*\(")
    imported = re.compile(r"\bimport\b[^\n]*\b" + re.escape(name) + r"\b|^[ \t]*" +
                          re.escape(name) + r"\s*[,)]", re.MULTILINE)
    call = re.compile(r"(?<![\w.])" + re.escape(name) + r"\s*\(")
    for other in _package_files(root):
        if other == str(here):
            continue
        try:
            st = os.stat(other)
        except OSError:
            continue
        text = _text(other, st.st_mtime_ns, st.st_size)
        if text is None or name not in text:
            continue
        if (pattern.search(text) or (stem in text and imported.search(text) and
                                     call.search(text))) and any(
                fn.name == name and _same(mod.path, here)
                for mod, fn in wrapper_modules(other, text, words).values()):
            return True     # ... and that module reads the call as one of this wrapper
    return False


def _package_files(root: Path) -> tuple[str, ...]:
    return _package_files_at(str(root), _folder_sig(str(root)))


@lru_cache(maxsize=16)
def _package_files_at(root: str, sig: int) -> tuple[str, ...]:
    """The Python files of a package and the scripts beside it (at most
    MAX_PACKAGE_FILES), or of a script folder; listed again when the package's folder
    changes (a file added deeper in a running language server is seen at the next)."""
    out: list[str] = []
    top_folder = Path(root)
    folders = [top_folder.parent, top_folder] if (top_folder / "__init__.py").is_file() \
        else [top_folder]
    for k, top in enumerate(folders):
        recursive = k == 1
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if recursive else []
            real = os.path.realpath(folder)
            for f in sorted(files):
                if f.endswith(".py"):
                    out.append(os.path.join(real, f))
                    if len(out) >= MAX_PACKAGE_FILES:
                        return tuple(out)
    return tuple(out)


def _same(a: str, b: Path) -> bool:
    try:
        return Path(a).resolve() == b
    except (OSError, RuntimeError, ValueError):
        return False


def python_deps(path: Path, text: str) -> tuple[str, tuple]:
    """(digest, deps) for the result cache: the bytes and stat signatures of the
    project modules the file imports names from (a wrapper there may change what the
    file compiles) and of the files it may read as CUDA (files.py); ("", ()) when
    there is none."""
    from cudalint.sources.signature import file_sig
    from cudalint.sources.python.files import read_files_deps
    files = sorted({str(w) for w, _ in imported_from_project(str(path), text).values()}
                   | {str(w) for w in imported_modules(str(path), text).values()}
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
