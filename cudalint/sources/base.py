"""Files and units.

A :class:`SourceFile` is the text of one file on disk (or stdin) and knows how to turn a
character offset into a 1-based (row, column). A :class:`Unit` is the CUDA text that gets
parsed: the whole file for ``.cu``/``.cuh``, or one kernel string extracted from Python.
Every position a rule reports is a byte offset in the unit's UTF-8 text; the unit, and
only the unit, translates it back to a character offset in the file, through one char
map: an embedded kernel's, or a CUDA file's whose project macros were expanded.
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cudalint.sources.python.units import EmbeddedKernel

_NON_ASCII = re.compile(r"[^\x00-\x7f]")
CUDA_SUFFIXES = frozenset({".cu", ".cuh"})
# Headers are linted only when included from a .cu file or named on the command line.
HEADER_SUFFIXES = frozenset({".h", ".hpp", ".hh", ".inl", ".cuh"})
PYTHON_SUFFIXES = frozenset({".py", ".pyi"})
NOTEBOOK_SUFFIXES = frozenset({".ipynb"})     # code cells read as Python (sources/notebook.py)
# Build files: read for the nvcc flags they set (cudalint/analysis/buildflags.py).
CMAKE_NAMES = frozenset({"cmakelists.txt"})
CMAKE_SUFFIXES = frozenset({".cmake"})
TOML_NAMES = frozenset({"pyproject.toml"})
MAKE_NAMES = frozenset({"makefile", "gnumakefile"})
MAKE_SUFFIXES = frozenset({".mk"})


def file_kind(path: str | Path) -> str | None:
    name = os.path.basename(os.fspath(path)).lower()
    suffix = os.path.splitext(name)[1]
    if suffix in CUDA_SUFFIXES:
        return "cuda"
    if suffix in PYTHON_SUFFIXES:
        return "python"
    if suffix in NOTEBOOK_SUFFIXES:
        return "notebook"
    if name in CMAKE_NAMES or suffix in CMAKE_SUFFIXES:
        return "cmake"
    if name in TOML_NAMES:
        return "toml"
    if name in MAKE_NAMES or suffix in MAKE_SUFFIXES:
        return "make"
    return None


@dataclass(eq=False)
class SourceFile:
    path: str                  # as displayed (relative to the working directory when possible)
    text: str
    kind: str                  # "cuda" | "python" | "notebook" | "cmake" | "toml" | "make"

    @cached_property
    def line_starts(self) -> list[int]:
        starts = [0]
        text = self.text
        i = text.find("\n")
        while i >= 0:
            starts.append(i + 1)
            i = text.find("\n", i + 1)
        return starts

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (row, column) of a character offset; column counts characters."""
        offset = max(0, min(offset, len(self.text)))
        row = bisect.bisect_right(self.line_starts, offset) - 1
        return row + 1, offset - self.line_starts[row] + 1

    def offset(self, row: int, column: int) -> int:
        """Inverse of :meth:`position` (clamped)."""
        row = max(1, min(row, len(self.line_starts)))
        return min(self.line_starts[row - 1] + column - 1, len(self.text))

    def line_text(self, row: int) -> str:
        starts = self.line_starts
        if row < 1 or row > len(starts):
            return ""
        end = starts[row] - 1 if row < len(starts) else len(self.text)
        return self.text[starts[row - 1]:end]


@dataclass(eq=False)
class Unit:
    """CUDA text to analyse, plus the way back to the file that holds it."""

    file: SourceFile
    text: str
    embedded: "EmbeddedKernel | None" = None
    index: int = 0                      # n-th unit of the file
    extra_defines: dict[str, int] = field(default_factory=dict)
    # a CUDA file with the project's macros expanded (cudalint/sources/macros.py): the
    # file offset of each character of ``text`` (None: ``text`` is the file's text).
    # Embedded kernels keep theirs in ``embedded.char_map``; both are read the same way
    char_map: "Sequence[int] | None" = None
    # launches of this unit's kernels elsewhere in the project (project.index.LaunchSite:
    # .kernel, .block, .file, .line), as ``embedded.launches`` are for Python launch calls
    launches: list = field(default_factory=list)
    # device functions of project headers appended after the file's text
    # (project/header_functions.py): (unit char start, end, header path, header offset)
    spliced: list = field(default_factory=list)

    @property
    def _cmap(self) -> "Sequence[int] | None":
        return self.embedded.char_map if self.embedded is not None else self.char_map

    @cached_property
    def data(self) -> bytes:
        return self.text.encode("utf-8", "surrogatepass")

    @cached_property
    def _wide_chars(self) -> tuple[list[int], list[int], list[int], list[int]] | None:
        """For each non-ASCII character: byte start, width, char index, extra bytes so far.

        Sparse, so a file with a few accented letters in comments costs a few entries,
        not a table the size of the file.
        """
        if len(self.data) == len(self.text):   # pure ASCII: bytes are chars
            return None
        starts, widths, chars, extra_after = [], [], [], []
        extra = 0
        for m in _NON_ASCII.finditer(self.text):
            c = m.start()
            w = len(m.group(0).encode("utf-8", "surrogatepass"))
            starts.append(c + extra)
            widths.append(w)
            chars.append(c)
            extra += w - 1
            extra_after.append(extra)
        return starts, widths, chars, extra_after

    def char_offset(self, byte_offset: int) -> int:
        b = max(0, min(byte_offset, len(self.data)))
        wide = self._wide_chars
        if wide is None:
            return b
        starts, widths, chars, extra_after = wide
        k = bisect.bisect_right(starts, b) - 1
        if k < 0:
            return b
        if b < starts[k] + widths[k]:
            return chars[k]                  # inside a multi-byte character: its start
        return b - extra_after[k]

    def file_offset(self, byte_offset: int, *, end: bool = False) -> int:
        """Character offset in the file for a byte offset in the unit.

        For embedded kernels a synthetic character (wrapper code, opaque token) has no
        file position: the nearest real character is used, or the API call itself.
        """
        char = self.char_offset(byte_offset)
        cmap = self._cmap
        if cmap is None:
            return char
        emb = self.embedded
        # a value <= -2 is a macro body's character: at the invocation (-2 - offset)
        if end:
            # an end offset maps to one past the last real character before it
            for i in range(char - 1, -1, -1):
                mapped = cmap[i] if i < len(cmap) else -1
                if mapped >= 0:
                    return mapped + 1
                if mapped <= -2:
                    return -1 - mapped
            return emb.call_end if emb is not None else len(self.file.text)
        for i in range(char, len(cmap)):
            mapped = cmap[i]
            if mapped >= 0:
                return mapped
            if mapped <= -2:
                return -2 - mapped
        return emb.call_start if emb is not None else len(self.file.text)

    def is_written(self, byte_offset: int) -> bool:
        """Is the character at ``byte_offset`` written in the file (not wrapper code or
        an opaque token that cudalint made up for a CuPy/PyCUDA snippet)?"""
        cmap = self._cmap
        if cmap is None:
            return True
        char = self.char_offset(byte_offset)
        return 0 <= char < len(cmap) and cmap[char] >= 0

    def map_edit(self, start: int, end: int, replacement: str
                 ) -> tuple[int, int, str] | None:
        """An edit of unit characters ``[start, end)`` as one of the file, or None: for
        a unit whose macros were expanded, only characters copied from the file, one
        after another there, can be edited (never a macro body's)."""
        if self.embedded is not None:
            return self.embedded.map_edit(start, end, replacement)
        cmap = self.char_map
        if cmap is None:
            return start, end, replacement
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

    def keeps(self, finding) -> bool:
        """Whether this unit reports `finding`: not one in text that a Python call read
        from a CUDA file of its package, which the lint of that file reports at the
        file's own row and column (sources/python/readers.py), nor one in the header
        device functions appended to the unit (project/header_functions.py)."""
        if finding.in_file:
            return True
        if self.spliced and self.spliced_piece(finding.start) is not None:
            return False            # header text appended: the header's own lint says
        emb = self.embedded
        if emb is None or not getattr(emb, "files", None):
            return True
        from cudalint.sources.python.files import place_in_file
        got = place_in_file(emb.files, self.char_offset(finding.start))
        return got is None or got[0].endswith((".py", ".pyi"))

    def file_span(self, start_byte: int, end_byte: int) -> tuple[int, int]:
        emb = self.embedded
        if emb is not None and getattr(emb, "files", None) and \
                self.file_note(start_byte) is not None:
            return emb.call_start, emb.call_end     # text read from a file: at the call
        start = self.file_offset(start_byte)
        end = self.file_offset(end_byte, end=True) if end_byte > start_byte else start
        return start, max(start, end)

    def spliced_piece(self, byte_offset: int) -> tuple[str, int] | None:
        """For a character of a header device function appended to the unit: (header
        path, its char offset in the header); None for the file's own text."""
        if not self.spliced:
            return None
        char = self.char_offset(byte_offset)
        for start, end, path, origin in self.spliced:
            if start <= char < end:
                return path, origin + char - start
        return None

    def own_line(self, byte_offset: int) -> int | None:
        """The file's 1-based line of a unit byte, for a message that names another
        place ("the loop at line 12"); None for a header's appended text (not this
        file's line) or a position the source layer cannot map."""
        if self.spliced and self.spliced_piece(byte_offset) is not None:
            return None
        try:
            return self.file.position(self.file_offset(byte_offset))[0]
        except Exception:           # a position the source layer cannot map
            return None

    def header_place(self, byte_offset: int) -> tuple[str, int, int] | None:
        """Where an appended header character is: (the header's path relative to the
        file's folder, row, column), both from 1."""
        got = self.spliced_piece(byte_offset)
        if got is None:
            return None
        path, off = got
        try:
            with open(path, "rb") as fh:
                head = fh.read(off + 1).decode("utf-8", "replace")[:off]
        except OSError:
            return None
        row = head.count("\n") + 1
        col = off - (head.rfind("\n") + 1) + 1
        try:
            shown = os.path.relpath(path, os.path.dirname(os.path.abspath(self.file.path)))
        except ValueError:
            shown = path
        return shown, row, col

    def file_note(self, start_byte: int) -> str | None:
        """For a character of an embedded kernel that the Python read from a file of its
        package (sources/python/files.py): where it is in that file, as messages say
        it; None for any other character."""
        emb = self.embedded
        if emb is None or not getattr(emb, "files", None):
            return None
        from cudalint.sources.python.files import place_in_file
        got = place_in_file(emb.files, self.char_offset(start_byte))
        if got is None:
            return None
        path, row, col = got
        try:
            shown = os.path.relpath(path, os.path.dirname(os.path.abspath(self.file.path)))
        except ValueError:
            shown = path
        return f"in `{shown}` at line {row}, column {col}, read by this call"

    @property
    def label(self) -> str:
        if self.embedded is None:
            return self.file.path
        name = f" {self.embedded.name}" if self.embedded.name else ""
        return f"{self.file.path} ({self.embedded.api}{name})"
