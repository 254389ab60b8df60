"""CUDA files that no build of the project compiles (issue 20: findings in them were judged
not worth acting on in two triages: GANet's ``GANet_kernel0.cu`` and pytorch-loss's
``lovasz_softmax_old.cu``, old copies that ``setup.py`` no longer lists).

A ``.cu`` file found by walking a folder is *unbuilt* when all of this holds:

- the project declares a build: a ``setup.py`` or ``CMakeLists.txt`` in the file's folder
  or a folder above it (a project with no build file is linted as it is);
- no text file of the project names the file: not a build file, not a Python loader
  (``load(sources=[...])``, ``RawModule(path=...)``, ``open(...)``), not an ``#include``,
  not a Makefile;
- no text file of the project names CUDA files generically, which might take it in: a
  pattern (``glob("*.cu")``, ``file(GLOB ... *.cu)``, ``$(wildcard *.cu)``), a built name
  (``name + ".cu"``, ``f"{name}.cu"``, ``"%s.cu"``), a suffix test (``endswith(".cu")``).

The project is the repository the file is in (the nearest folder above it with ``.git``);
without one, the folder the walk started from when it holds a build file, else the folder
below it that holds the file (a folder of projects). Reading is bounded (``MAX_BYTES`` in all,
``MAX_FILE_BYTES`` a file); beyond it nothing is decided and every file is linted.
Files named on the command line, and every file with the ``lint-unbuilt`` setting, are
always linted: the decision is only about what a folder walk takes in.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

BUILD_NAMES = ("setup.py", "CMakeLists.txt")
TEXT_SUFFIXES = (".py", ".pyx", ".pxd", ".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h",
                 ".hpp", ".hxx", ".inl", ".txt", ".cmake", ".toml", ".cfg", ".in", ".sh",
                 ".mk", ".bzl", ".bazel", ".json", ".yaml", ".yml", ".ipynb", ".jinja",
                 ".j2", ".mako", ".tmpl", ".template", ".md", ".rst")
TEXT_NAMES = ("Makefile", "makefile", "GNUmakefile", "BUILD", "WORKSPACE", "SConstruct",
              "SConscript", "meson.build", "Justfile")
MAX_BYTES = 64 << 20
MAX_FILE_BYTES = 4 << 20
MAX_LEVELS = 6
# a mention of a CUDA file: ".cu" / ".cuh" not followed by a word character, and the
# path-ish run of characters before it (at most MAX_NAME of them: found from each ".cu"
# backwards, so the scan is linear in the text however long its lines)
_SUFFIX = re.compile(rb"\.cuh?(?![\w])")
_PATHISH = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                     b"_./*?{}%$()[]<>@+-")
_GENERIC = re.compile(rb"[*?{}%$()\[\]<>@+]")
MAX_NAME = 256


class _Project:
    """The CUDA file names that a project's text files mention, read once."""

    def __init__(self, root: str):
        self.root = root
        self.names: dict[bytes, set[str]] = {}    # basename -> files that mention it
        self.generic: str | None = None           # a file naming CUDA files by pattern
        self.undecided = False                    # too much text to read
        self._read()

    def _read(self) -> None:
        total = 0
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and
                             d not in ("node_modules", "__pycache__"))
            for f in files:
                if not (f.endswith(TEXT_SUFFIXES) or f in TEXT_NAMES):
                    continue
                path = os.path.join(folder, f)
                try:
                    size = os.path.getsize(path)
                    if size > MAX_FILE_BYTES:
                        continue
                    total += size
                    if total > MAX_BYTES:
                        self.undecided = True
                        return
                    with open(path, "rb") as fh:
                        data = fh.read()
                except OSError:
                    continue
                if b".cu" not in data:
                    continue
                for m in _SUFFIX.finditer(data):
                    start = m.start()
                    while start > 0 and m.start() - start < MAX_NAME and \
                            data[start - 1] in _PATHISH:
                        start -= 1
                    token = data[start:m.end()]
                    base = token.rsplit(b"/", 1)[-1]
                    if base in (b".cu", b".cuh") or _GENERIC.search(base):
                        if self.generic is None:
                            self.generic = path
                        continue
                    self.names.setdefault(base, set()).add(path)


_PROJECTS: dict[str, _Project] = {}


_GIT_ROOTS: dict[Path, Path | None] = {}
_BUILD_FILES: dict[Path, bool] = {}


def _git_root(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` with ``.git`` (memoised per folder: every
    file of a walk asks)."""
    if folder in _GIT_ROOTS:
        return _GIT_ROOTS[folder]
    found = folder if (folder / ".git").exists() else \
        (None if folder.parent == folder else _git_root(folder.parent))
    _GIT_ROOTS[folder] = found
    return found


def _has_build_file(folder: Path) -> bool:
    got = _BUILD_FILES.get(folder)
    if got is None:
        got = _BUILD_FILES[folder] = any((folder / n).is_file() for n in BUILD_NAMES)
    return got


def _project_root(path: Path, walk_root: Path) -> Path:
    """Without a repository: the folder the walk started from when it holds a build file
    (`cudalint .` in a project), else the folder below it that holds ``path`` (a folder
    of projects, each in a folder of its own)."""
    if any((walk_root / n).is_file() for n in BUILD_NAMES + ("pyproject.toml",)):
        return walk_root
    try:
        first = path.relative_to(walk_root).parts[0]
    except (ValueError, IndexError):
        return walk_root
    child = walk_root / first
    return child if child.is_dir() else walk_root


def _declares_a_build(path: Path, root: Path) -> bool:
    folder = path.parent
    for _ in range(MAX_LEVELS):
        if _has_build_file(folder):
            return True
        if folder == root or folder.parent == folder:
            return False
        folder = folder.parent
    return False


def unbuilt_reason(path: Path, walk_root: Path) -> str | None:
    """Why no build of the project compiles ``path`` (a ``.cu`` file found under
    ``walk_root``), or None when one may."""
    path = Path(os.path.abspath(path))
    root = _git_root(path.parent) or _project_root(path, Path(os.path.abspath(walk_root)))
    if not _declares_a_build(path, root):
        return None
    key = str(root)
    project = _PROJECTS.get(key)
    if project is None:
        project = _PROJECTS[key] = _Project(key)
    if project.undecided or project.generic is not None:
        return None
    others = project.names.get(path.name.encode(), set()) - {str(path)}
    if others:
        return None
    return ("no build of the project compiles it (no setup.py, CMakeLists.txt, Python "
            "loader or #include names it)")


def forget() -> None:
    """Drop what was read (the language server's long runs; tests)."""
    _PROJECTS.clear()
    _GIT_ROOTS.clear()
    _BUILD_FILES.clear()
