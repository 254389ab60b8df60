"""The build model: which nvcc flags each CUDA unit is built with, and where each flag was
written.

Build descriptions are read, never run, by one reader per kind of build file:
:mod:`build_python` (setup.py, torch ``load``/``load_inline``, CuPy, PyCUDA),
:mod:`build_cmake` (CMakeLists.txt) and :mod:`build_toml` (pyproject.toml); each gives
:class:`~cudalint.project.build.Build` objects. This module finds the builds of a source
file (:func:`builds_for_source`: in its folder and the folders above, to the repository
root), what their flags mean for a unit (:func:`unit_settings`, read by CL402/CL404), and
the digest of the build files a source's results depend on (:func:`build_digest`, the
result cache's key).
"""
from __future__ import annotations

import os
import stat
from functools import lru_cache
from pathlib import Path
from weakref import WeakKeyDictionary

from cudalint.project.build import Build
from cudalint.project.build_cmake import cmake_builds
from cudalint.project.build_python import python_builds
from cudalint.project.build_toml import toml_builds
from cudalint.project.nvcc_flags import Flag, NvccSettings, interpret, split_words
from cudalint.sources.base import SourceFile

# A build file without one of these words sets no flag the FP rules care about.
FAST_MATH_WORDS = ("fast_math", "fast-math", "ftz", "prec-div", "prec_div", "prec-sqrt",
                   "prec_sqrt", "fmad")

BUILD_FILES = ("setup.py", "CMakeLists.txt", "pyproject.toml")
MAX_LEVELS = 6
# SourceFile -> the builds that compile it (a SourceFile lives for one lint of its file)
_PER_FILE: WeakKeyDictionary = WeakKeyDictionary()


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
    """The builds (in the source's folder and the folders above) that compile it.

    Which builds compile a file is worked out once per (file, versions of the build files
    above it): every unit of a file asks (CL203, CL204, CL402, CL403, CL404), and the
    matching of every build's sources cost more than the rules that asked. The build
    files are stat-ed on every call, so an edit to one is seen (the language server)."""
    src = Path(source)
    if not src.is_file():
        return []
    src = src.resolve()
    chain = []
    folder = src.parent
    for _ in range(MAX_LEVELS):
        for name in BUILD_FILES:
            bf = os.path.join(folder, name)
            try:
                st = os.stat(bf)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                chain.append((folder, name, st.st_mtime_ns, st.st_size))
        if (folder / ".git").exists() or folder.parent == folder:
            break
        folder = folder.parent
    return list(_builds_compiling(src, tuple(chain)))


@lru_cache(maxsize=4096)
def _builds_compiling(src: Path, chain: tuple[tuple[Path, str, int, int], ...]
                      ) -> tuple[Build, ...]:
    found = []
    for folder, name, mtime_ns, size in chain:
        rel = os.path.relpath(src, folder)
        for b in _builds_in(str(folder / name), mtime_ns, size):
            if b.kind in ("cupy", "pycuda", "torch.load_inline"):
                continue
            if b.compiles(rel):
                found.append(b)
    return tuple(found)


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
    # each rule that asks about a file while it is linted gets the builds found once
    # (the engine makes a SourceFile per lint, so an edited build file is read again)
    memo = isinstance(unit.file, SourceFile)
    builds = _PER_FILE.get(unit.file) if memo else None
    if builds is None:
        builds = builds_for_source(path)
        if memo:
            _PER_FILE[unit.file] = builds
    if not builds:
        return None
    # several builds of one file: combine their flags (a setting counts if any sets it)
    return interpret([f for b in builds for f in b.flags], any(b.opaque for b in builds))
