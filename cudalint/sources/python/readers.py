"""CUDA files that the project's Python reads and compiles, linted at their own positions.

cupy's ``_pba_2d.py`` reads ``cuda/pba_kernels_2d.h`` (a path built from ``__file__``)
and hands it to ``RawModule``; no ``.cu`` includes that header, so no C++ build says how
it is compiled: the Python does (its launches, its options, the ``#define`` lines it
puts before the text). files.py reads such a file into the Python call's kernel. Here
the other direction: when the file itself is linted, its units are the kernels of the
Python calls that read it (:func:`reader_units`), each a copy of that kernel whose
characters map into the file, and only findings inside the file's own text are kept
(:class:`ReadFileUnit`); the Python file then leaves them out (``Unit.keeps``), so
each is reported once, at the file's own row and column, where its ``noqa`` and its
fix go. :func:`read_files` gives discovery the files a Python file reads this way (a
``.h`` that no ``.cu`` includes is then linted), :func:`reader_deps` the cache the
Python files a file's result depends on.

The Python files looked at are those of the file's folder and of the two folders
above it (files.py reads files two levels below the module's folder) that name the
file's name in a string literal and ``__file__``.
"""
from __future__ import annotations

import copy
import hashlib
import os
from functools import lru_cache
from pathlib import Path

from cudalint.sources.base import CUDA_SUFFIXES, SourceFile, Unit
from cudalint.sources.python.files import _LITERAL_FILE
from cudalint.sources.python.units import EmbeddedKernel, PyLaunch

MAX_LEVELS = 2
MAX_READERS = 16           # Python files followed for one CUDA file
# Rules whose findings depend on which arrays a launch passes (CL203/CL205: a pointer
# that may alias another; CL108: races across the grid, which a Python launch sizes from
# the data): the arguments of a Python launch are not read, so in a Python kernel these
# rules leave text the .py file does not hold alone (Unit.is_written), and so do the
# views of a file the Python reads. Measured on cupy's and cucim's pba_kernels_2d.h:
# CL205 would offer `const __restrict__` on `input` of kernelFloodDown/kernelFloodUp,
# which _pba_2d.py launches with input and output the same array, and CL108 4 races
# between margin_out[tid] and margin_out[bid] that its padding of `size` to a multiple
# of the block rules out. A .cu or .cuh file is linted on its own as well, for these
# rules only (own_part): what they said before the Python's view existed, they still say.
ARGUMENT_RULES = frozenset({"CL108", "CL203", "CL205"})
_PY = (".py", ".pyi")


class ReadFileUnit(Unit):
    """A Python kernel seen from the CUDA file it read: findings outside the file's
    own characters (the Python's ``#define`` lines, its options) are not this file's."""

    def keeps(self, finding) -> bool:
        """Findings in the file's own characters, of the rules that do not depend on
        what the launch's arguments alias (:data:`ARGUMENT_RULES`)."""
        if finding.in_file or getattr(finding, "code", "") in ARGUMENT_RULES:
            return False
        cmap = self.char_map or []
        char = self.char_offset(finding.start)
        return 0 <= char < len(cmap) and cmap[char] >= 0

    def map_edit(self, start: int, end: int, replacement: str):
        """An edit of characters copied from the file, one after another there."""
        cmap = self.char_map or []
        n = len(cmap)
        if not 0 <= start <= end <= n:
            return None
        if start == end:
            if start < n and cmap[start] >= 0:
                return cmap[start], cmap[start], replacement
            if start > 0 and cmap[start - 1] >= 0:
                return cmap[start - 1] + 1, cmap[start - 1] + 1, replacement
            return None
        for i in range(start, end):
            if cmap[i] < 0 or (i > start and cmap[i] != cmap[i - 1] + 1):
                return None
        return cmap[start], cmap[end - 1] + 1, replacement


class _OwnPart(Unit):
    """A .cu/.cuh file read by Python, linted on its own for ARGUMENT_RULES only."""

    def keeps(self, finding) -> bool:
        return getattr(finding, "code", "") in ARGUMENT_RULES


def own_part(path: str) -> bool:
    """Whether a file with Python views is linted on its own too (a .cu or .cuh file,
    which discovery lints whatever reads it)."""
    return os.path.splitext(path)[1].lower() in CUDA_SUFFIXES


def as_own_part(unit: Unit) -> Unit:
    return _OwnPart(file=unit.file, text=unit.text, index=unit.index,
                    extra_defines=unit.extra_defines, char_map=unit.char_map,
                    launches=unit.launches)


def _sig(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


@lru_cache(maxsize=4096)
def _names(path: str, sig: tuple) -> frozenset[str]:
    """The file names a Python file's string literals end with, when it reads files
    relative to its own (``__file__``); empty otherwise."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return frozenset()
    # files.py reads text with .read(), .read_text() and .readlines() only
    if b"__file__" not in data or b".read" not in data or len(data) > 1 << 20:
        return frozenset()
    text = data.decode("utf-8", "replace")
    return frozenset(m.group(1).rsplit("/", 1)[-1] for m in _LITERAL_FILE.finditer(text))


@lru_cache(maxsize=256)
def _kernels(path: str, sig: tuple, deps: str) -> tuple[EmbeddedKernel, ...]:
    """The kernels of a Python file that hold text read from a file (``deps``: the
    digest of what its result depends on, so that a changed module reads it again)."""
    from cudalint.sources.python.extract import extract_python_units
    try:
        text = Path(path).read_bytes().decode("utf-8", "replace")
    except OSError:
        return ()
    return tuple(k for k in extract_python_units(text, path).kernels if k.files)


def _kernels_of(py: str) -> tuple[EmbeddedKernel, ...]:
    sig = _sig(py)
    if sig is None:
        return ()
    from cudalint.sources.python.modules import python_deps
    try:
        text = Path(py).read_bytes().decode("utf-8", "replace")
    except OSError:
        return ()
    return _kernels(py, sig, python_deps(Path(py), text)[0])


@lru_cache(maxsize=1024)
def _python_files(folder: str, sig: tuple | None) -> tuple[str, ...]:
    """The Python files of a folder (listed again when the folder changes)."""
    try:
        return tuple(os.path.join(folder, f) for f in sorted(os.listdir(folder))
                     if f.endswith(_PY))
    except OSError:
        return ()


def readers(path: str) -> list[str]:
    """The Python files that may read the CUDA file `path` relative to themselves."""
    try:
        here = Path(path).resolve()
    except (OSError, RuntimeError, ValueError):
        return []
    name = here.name
    out: list[str] = []
    folder = here.parent
    for _ in range(MAX_LEVELS + 1):
        for p in _python_files(str(folder), _sig(str(folder))):
            sig = _sig(p)
            if sig is not None and name in _names(p, sig):
                out.append(p)
                if len(out) >= MAX_READERS:
                    return out
        if folder.parent == folder:
            break
        folder = folder.parent
    return out


def reader_units(file: SourceFile, defines: dict) -> list[Unit]:
    """The units of a CUDA file that Python calls of the project read and compile (one
    per kernel of those calls), or [] when none does (the file is linted on its own)."""
    if file.path in ("-", "<stdin>"):
        return []
    try:
        here = str(Path(file.path).resolve())
    except (OSError, RuntimeError, ValueError):
        return []
    units: list[Unit] = []
    for py in readers(file.path):
        for k in _kernels_of(py):
            view = _view(k, here, file.text)
            if view is not None:
                units.append(ReadFileUnit(file=file, text=view.text, embedded=view,
                                          index=len(units), extra_defines=dict(defines),
                                          char_map=view.char_map))
    return units


def _view(k: EmbeddedKernel, path: str, text: str) -> EmbeddedKernel | None:
    """A copy of a Python kernel whose characters read from `path` map to that file's
    offsets (every other character: -1); None when the file's text is not the one the
    Python read (line ends, a change since)."""
    cmap = [-1] * len(k.text)
    found = False
    for start, end, where, offsets, whole in k.files:
        if where != path or whole != text:
            continue
        for i in range(start, end):
            cmap[i] = offsets[i - start]
        found = True
    if not found:
        return None
    view = copy.copy(k)
    view.char_map = cmap
    view.verbatim = bytearray(1 if c >= 0 else 0 for c in cmap)
    view.call_start = view.call_end = 0
    view.files = []
    view.pieces = []
    # the launches and options stay (the block shape, the flags), without their
    # places: they are in the Python file
    view.launches = [PyLaunch(la.kernel, la.block, la.grid, la.shared_mem, None, None)
                     for la in k.launches]                  # type: ignore[arg-type]
    return view


def read_files(path: str) -> list[str]:
    """The CUDA files (not Python modules) whose text a Python file's compile calls
    read relative to ``__file__`` (files.py), for discovery to lint them."""
    sig = _sig(path)
    if sig is None or not _names(path, sig) or not _names_a_file(path, sig):
        return []
    out = {f[2] for k in _kernels_of(path) for f in k.files if not f[2].endswith(_PY)}
    return sorted(out)


@lru_cache(maxsize=1024)
def _names_a_file(path: str, sig: tuple) -> bool:
    """Whether a file that a string literal of the module names is there to be read
    (before the module is parsed for its compile calls)."""
    from cudalint.sources.python.files import read_files_deps
    try:
        text = Path(path).read_bytes().decode("utf-8", "replace")
    except OSError:
        return False
    return any(not f.endswith(_PY) for f in read_files_deps(Path(path), text))


def reader_deps(path: str) -> tuple[str, tuple]:
    """(digest, deps) for the result cache of a CUDA file: the Python files that may
    read it (their bytes and stat signatures); ("", ()) when there is none."""
    files = readers(path)
    if not files:
        return "", ()
    from cudalint.sources.signature import file_sig
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
