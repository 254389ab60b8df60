"""The kernels found in one Python file, as the engine and the rules see them.

An :class:`EmbeddedKernel` is the CUDA text one compile call receives, with the file
offset of each of its characters (``char_map``; -1 for wrapper code and substituted
values), the call's span, kernel name and compiler options (:class:`PyOption`, each
with its span in the file) and the calls that launch it (:class:`PyLaunch`).
:meth:`EmbeddedKernel.map_edit` turns an edit of the CUDA text into one of the file.
An :class:`Unread` is a compile call whose source could not be read, with the reason.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from cudalint.sources.python.mapping import fits_literal

# the identifier an unknown template value becomes in the CUDA text (never guessed)
OPAQUE_PREFIX = "__cudalint_opaque_"
_OPAQUE = re.compile(re.escape(OPAQUE_PREFIX) + r"\d+__")


_OPAQUE_AT = re.compile(r"(?=(" + re.escape(OPAQUE_PREFIX) + r"(\d+)__))")


def opaque_in(text: str, origins: dict[str, str]) -> dict[str, str]:
    """The entries of ``origins`` whose token ``text`` holds, in the order they were made
    (``origins`` is filled in token order). Read from the tokens in the text: asking
    every origin of the file whether the text holds it was quadratic (issue 25: 5,256
    kernel strings x thousands of origins, 30 s for a 125 KB fuzzed Python file)."""
    if OPAQUE_PREFIX not in text:
        return {}
    found = {(int(m.group(2)), m.group(1)) for m in _OPAQUE_AT.finditer(text)}
    return {t: origins[t] for _, t in sorted(found) if t in origins}


def describe_opaque(message: str, origins: dict[str, str] | None) -> str:
    """A message with each opaque identifier replaced by where its value comes from in
    the Python file (``%(name)s``, ``{dtype}``, ``<helper()>``): users never see the
    internal token."""
    if OPAQUE_PREFIX not in message:
        return message
    return _OPAQUE.sub(lambda m: (origins or {}).get(m.group(0)) or
                       "<a value known only when the program runs>", message)


class PyOption(str):
    """One compiler option as written in the Python call, with its file span."""

    start: int
    end: int

    def __new__(cls, value: str, start: int = -1, end: int = -1) -> "PyOption":
        obj = super().__new__(cls, value)
        obj.start, obj.end = start, end
        return obj


@dataclass
class PyLaunch:
    """A Python call that launches an embedded kernel (CuPy or PyCUDA style)."""

    kernel: str | None                      # kernel function name, None: the unit's only one
    block: tuple[int, ...] | None
    grid: tuple[int, ...] | None
    shared_mem: int | None
    start: int
    end: int


@dataclass
class EmbeddedKernel:
    api: str                                # e.g. "cupy.RawKernel"
    text: str                               # the CUDA text the parser sees
    char_map: list[int]                     # file char offset per text char, -1 synthetic
    verbatim: bytearray                     # 1 where the file holds exactly this char
    call_start: int                         # file span of the API call
    call_end: int
    name: str | None = None                 # kernel / module name argument
    options: list[PyOption] = field(default_factory=list)
    options_opaque: bool = False            # options given but not statically known
    launches: list[PyLaunch] = field(default_factory=list)
    no_extern_c: bool = False
    pieces: list[tuple[int, int, bool, str]] = field(default_factory=list)
    # (file start, file end, raw, quote) of each string literal the text came from
    name_expressions: list[str] = field(default_factory=list)   # RawModule instantiations
    # opaque identifier in ``text`` -> the placeholder or expression it stands for
    opaque: dict[str, str] = field(default_factory=dict)
    # stretches of ``text`` read from a file of the package (files.py): (start, end,
    # path, the file offset of each character (-1: a separator the program adds), the
    # file's text)
    files: list[tuple[int, int, str, list[int], str]] = field(default_factory=list)

    def map_offset(self, i: int) -> int:
        if 0 <= i < len(self.char_map):
            return self.char_map[i]
        return -1

    def map_edit(self, start: int, end: int, replacement: str
                 ) -> tuple[int, int, str] | None:
        """Translate an edit of ``text[start:end]`` into one of the file, or None.

        Only characters written verbatim, contiguous in the file, can be replaced, and
        only by text that needs no escaping in the literal that holds them.
        """
        n = len(self.char_map)
        if not (0 <= start <= end <= n):
            return None
        if start == end:
            if start < n and self.char_map[start] >= 0 and (
                    self.verbatim[start] or self._escape_start(start)):
                fs = self.char_map[start]
            elif start > 0 and self.char_map[start - 1] >= 0 and self.verbatim[start - 1]:
                fs = self.char_map[start - 1] + 1
            else:
                return None
            fe = fs
        else:
            for i in range(start, end):
                if self.char_map[i] < 0 or not self.verbatim[i]:
                    return None
                if i > start and self.char_map[i] != self.char_map[i - 1] + 1:
                    return None
            fs, fe = self.char_map[start], self.char_map[end - 1] + 1
        piece = self._piece_at(fs if start == end or fs == fe else fs)
        if piece is None:
            return None
        if start != end and (self._piece_at(fe - 1) is not piece):
            return None
        _, _, raw, quote = piece
        if not fits_literal(replacement, raw, quote):
            return None
        return fs, fe, replacement

    def _escape_start(self, i: int) -> bool:
        # an escaped char maps to its backslash: inserting before it is still safe
        return self.char_map[i] >= 0

    def _piece_at(self, offset: int):
        starts = [p[0] for p in self.pieces]
        k = bisect.bisect_right(starts, offset) - 1
        if k >= 0 and self.pieces[k][0] <= offset < self.pieces[k][1]:
            return self.pieces[k]
        return None


@dataclass(frozen=True)
class Unread:
    """A compile call whose CUDA source was not analysed, and why."""

    start: int                              # file span of the call
    end: int
    api: str                                # e.g. "cupy.RawModule"
    reason: str

    def message(self) -> str:
        return f"`{self.api}` call not analysed: {self.reason}"


@dataclass
class PythonExtraction:
    kernels: list[EmbeddedKernel] = field(default_factory=list)
    notes: list[tuple[int, str]] = field(default_factory=list)   # (file offset, message)
    unread: list[Unread] = field(default_factory=list)
    # compile calls inside a project's own wrapper: what they compile is passed by the
    # wrapper's callers, each of which counts as a compile call (read or unread)
    wrappers: list[Unread] = field(default_factory=list)
    # calls of a compile API that compile no CUDA C++ (RawModule(path=) loads a cubin)
    not_compiled: list[Unread] = field(default_factory=list)
