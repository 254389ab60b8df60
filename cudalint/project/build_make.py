"""Builds written in GNU Makefiles (``Makefile``, ``GNUmakefile``, ``*.mk``), read line by
line, never run: variable assignments (``=``, ``:=``, ``::=``, ``?=``, ``+=``; ``!=`` runs
a shell, so its value is unknown), backslash continuations, comments, and recipe lines
that call nvcc (``nvcc``, ``$(NVCC)``, ``.../bin/nvcc``). A recipe's words are expanded
with the variables' final values, as make does after reading the whole file, and each
flag keeps the place where it was written (inside the variable's definition when it came
through one). ``ifeq``/``ifdef`` blocks are not decided: every branch counts, as for an
undecided CMake ``if()``. Without an nvcc recipe, variables named like nvcc flag lists
(``NVCC_FLAGS``, ``NVCCFLAGS``, ``CUDA_FLAGS``, ``CUFLAGS``, ``NVFLAGS``) count.

There is no maintained Python parser for GNU make (pymake was dropped with Mozilla's
build system); the subset above is what flag lists need, and a line reader keeps the
offsets exact.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from cudalint.project.build import Build
from cudalint.project.nvcc_flags import Flag

_ASSIGN = re.compile(r"^\s*(?:(?:override|export|private)\s+)*([A-Za-z_][A-Za-z0-9_.-]*)\s*"
                     r"(\?=|::=|:=|\+=|!=|=)")
_CONDITIONAL = re.compile(r"^\s*(ifeq|ifneq|ifdef|ifndef|else|endif)\b")
_REF = re.compile(r"^\$[({]([A-Za-z_][A-Za-z0-9_.-]*)[)}]$")
_NVCC = re.compile(r"^(?:@?-?)?(?:nvcc|\$[({]NVCC[)}]|\S*/nvcc)$")
_FLAG_VARS = ("NVCC_FLAGS", "NVCCFLAGS", "CUDA_FLAGS", "CUDAFLAGS", "CUFLAGS", "NVFLAGS")


@dataclass
class _Word:
    text: str
    start: int
    end: int


def _logical_lines(text: str):
    """(first offset, [(piece, offset)], is a recipe line) per logical line."""
    pieces: list[tuple[str, int]] = []
    recipe = False
    for m in re.finditer(r"[^\n]*\n?", text):
        raw = m.group()
        if not raw:
            break
        line = raw.rstrip("\r\n")
        if not pieces:
            recipe = line.startswith("\t")
        if line.endswith("\\") and not line.endswith("\\\\"):
            pieces.append((line[:-1], m.start()))
            continue
        pieces.append((line, m.start()))
        yield pieces, recipe
        pieces = []
    if pieces:
        yield pieces, recipe


def _words(pieces: list[tuple[str, int]], comment: bool = True) -> list[_Word]:
    out = []
    for line, base in pieces:
        if comment:
            cut = re.search(r"(?<!\\)#", line)
            if cut:
                line = line[:cut.start()]
        for m in re.finditer(r"\S+", line):
            out.append(_Word(m.group(), base + m.start(), base + m.end()))
    return out


class _Make:
    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path
        self.vars: dict[str, list[_Word]] = {}
        self.opaque: set[str] = set()
        self.recipes: list[list[_Word]] = []
        # the branch each line is in: one (block number, branch number) per open block
        self.branches: list[tuple[int, int]] = []
        self.blocks = 0
        self.assigned_in: dict[str, tuple[tuple[int, int], ...]] = {}

    def run(self) -> list[Build]:
        in_define = False
        for pieces, recipe in _logical_lines(self.text):
            first = pieces[0][0]
            if in_define:
                in_define = not re.match(r"^\s*endef\b", first)
                continue
            if re.match(r"^\s*define\b", first):
                in_define = True
                continue
            if recipe:
                words = _words(pieces, comment=False)
                if words and (_NVCC.match(words[0].text) or any(
                        _NVCC.match(w.text) for w in words[:3])):
                    self.recipes.append(words)
                continue
            c = _CONDITIONAL.match(first)
            if c:
                self._conditional(c.group(1))
                continue
            m = _ASSIGN.match(first)
            if m:
                self._assign(m, pieces)
        return self._builds()

    def _conditional(self, word: str) -> None:
        if word.startswith("if"):
            self.blocks += 1
            self.branches.append((self.blocks, 0))
        elif word == "else" and self.branches:
            block, branch = self.branches.pop()
            self.branches.append((block, branch + 1))      # `else ifeq ...` too
        elif word == "endif" and self.branches:
            self.branches.pop()

    def _sibling(self, name: str) -> bool:
        """``name`` was last set in another branch of a block this line is in: make
        takes one branch or the other, so both values count."""
        before = self.assigned_in.get(name)
        now = tuple(self.branches)
        self.assigned_in[name] = now
        if before is None:
            return False
        return any(a[0] == b[0] and a[1] != b[1] for a, b in zip(before, now))

    def _assign(self, m: re.Match, pieces: list[tuple[str, int]]) -> None:
        name, op = m.group(1), m.group(2)
        value = [(pieces[0][0][m.end():], pieces[0][1] + m.end())] + pieces[1:]
        words = _words(value)
        if op == "!=":
            self.vars[name] = []
            self.opaque.add(name)
            return
        if op == "?=" and name in self.vars:
            return
        if op in (":=", "::="):                  # expanded now
            words = self._expand(words, set())
        union = self._sibling(name)
        self.vars[name] = (self.vars.get(name, []) + words) if op == "+=" or union else words

    def _expand(self, words: list[_Word], seen: set[str]) -> list[_Word]:
        out: list[_Word] = []
        for w in words:
            m = _REF.match(w.text)
            if m and m.group(1) in self.vars and m.group(1) not in seen:
                out += self._expand(self.vars[m.group(1)], seen | {m.group(1)})
            else:
                out.append(w)
        return out

    def _flag(self, w: _Word) -> Flag:
        text, start, end = w.text, w.start, w.end
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text, start, end = text[1:-1], start + 1, end - 1
        return Flag(text, self.path, start, end)

    def _builds(self) -> list[Build]:
        flags: list[Flag] = []
        opaque = False
        if self.recipes:
            for words in self.recipes:
                at = next(i for i, w in enumerate(words) if _NVCC.match(w.text))
                for w in self._expand(words[at + 1:], set()):
                    if w.text.startswith("$"):
                        opaque = True
                    else:
                        flags.append(self._flag(w))
            label = "nvcc commands of this Makefile"
        else:
            names = [n for n in _FLAG_VARS if n in self.vars]
            if not names:
                return []
            for n in names:
                for w in self._expand(self.vars[n], set()):
                    if w.text.startswith("$"):
                        opaque = True
                    else:
                        flags.append(self._flag(w))
            label = f"{' and '.join(names)} of this Makefile"
        if not flags and not opaque:
            return []
        return [Build("make", label, self.path, flags, ["**/*.cu"], opaque)]


def make_builds(text: str, path: str = "Makefile") -> list[Build]:
    """The nvcc compilation of a GNU Makefile (one build: every .cu it compiles)."""
    return _Make(text, path).run()
