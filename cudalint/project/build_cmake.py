"""Builds written in CMake, read with tree-sitter-cmake (never run):
``CMAKE_CUDA_FLAGS[_<CONFIG>]`` via ``set``/``string(APPEND)``, ``CUDA_NVCC_FLAGS``
(FindCUDA), ``add_compile_options`` and ``target_compile_options`` (generator expressions
for another language are dropped), ``cuda_add_library(... OPTIONS ...)``; targets' sources
from ``add_library`` / ``add_executable`` / ``cuda_add_*`` / ``target_sources`` and
``set()`` variables. Commands inside ``if()``/``elseif()``/``else()`` blocks count; a block
whose condition is an ``option()`` or a ``set()`` to ON/OFF (``if(USE_FAST_MATH)``,
``if(NOT X)``) is followed as the defaults decide, and its flags carry a note for
messages ("on unless USE_FAST_MATH=OFF"); any other condition keeps every branch.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from cudalint.project.build import Build
from cudalint.project.nvcc_flags import Flag


@dataclass
class _Word:
    text: str
    start: int          # char offsets in the file
    end: int
    cuda_only: bool | None = None   # True: under $<COMPILE_LANGUAGE:CUDA>, False: other lang


# words of one command's arguments or of one variable's value that are read (issue 25): a
# fuzzed CMakeLists.txt doubled CMAKE_CUDA_FLAGS on each of its `set` lines (an escaped
# quote left every line's `${CMAKE_CUDA_FLAGS}` in the value twice): 3.9 million flags
# and 13 s of CPU for 2 KB. Real flag variables hold tens of words
MAX_WORDS = 4096
_GENEX_LANG = re.compile(r"\$<\$<COMPILE_LANG(?:UAGE|_AND_ID):([A-Za-z_+]+)[^>]*>:")


class _CMake:
    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path
        self.vars: dict[str, list[_Word]] = {}
        self.targets: dict[str, Build] = {}
        self.builds: list[Build] = []
        self.dir_flags: list[_Word] = []        # add_compile_options
        self.cuda_flags: list[_Word] = []       # CMAKE_CUDA_FLAGS*
        self.nvcc_flags: list[_Word] = []       # CUDA_NVCC_FLAGS
        self._b2c = None if text.isascii() else _byte_to_char(text)
        self.switches: dict[str, tuple[bool, bool]] = {}   # name -> (value, is an option())
        self.notes: dict[tuple[int, int], str] = {}        # word span -> its condition
        self._active_notes: list[str] = []

    def c(self, b: int) -> int:
        return b if self._b2c is None else self._b2c[b]

    def args(self, cmd) -> list[_Word]:
        """The command's arguments, variables expanded and lists split, with offsets."""
        out: list[_Word] = []
        arglist = next((ch for ch in cmd.children if ch.type == "argument_list"), None)
        if arglist is None:
            return out
        for arg in arglist.children:
            if arg.type != "argument" or not arg.children:
                continue
            node = arg.children[0]
            if node.type == "quoted_argument":
                inner = [ch for ch in node.children if ch.type == "quoted_element"]
                if not inner:
                    out.append(_Word("", self.c(node.start_byte), self.c(node.end_byte)))
                    continue
                out.extend(self._expand(inner[0], split=False))
            else:
                out.extend(self._expand(node, split=True))
            if len(out) >= MAX_WORDS:
                return out[:MAX_WORDS]
        return out

    def _expand(self, node, split: bool) -> list[_Word]:
        """Text of an argument with ${VAR} replaced; each word keeps its file span."""
        pieces: list[tuple[bytes, int, int] | list[_Word]] = []
        pos = node.start_byte
        data = node.text
        base = node.start_byte
        for ch in node.children:
            if ch.type == "variable_ref":
                if ch.start_byte > pos:
                    pieces.append((data[pos - base:ch.start_byte - base], pos, ch.start_byte))
                name = ch.text.decode("utf-8", "replace")
                m = re.fullmatch(r"\$\{([A-Za-z0-9_]+)\}", name)
                pieces.append(self.vars.get(m.group(1), []) if m else [])
                pos = ch.end_byte
        if node.end_byte > pos:
            pieces.append((data[pos - base:], pos, node.end_byte))
        words: list[_Word] = []
        for p in pieces:
            if len(words) >= MAX_WORDS:
                return words[:MAX_WORDS]
            if isinstance(p, list):
                words.extend(p)
                continue
            s, b0, _ = p
            # on the bytes: offsets stay exact whatever the text holds (invalid UTF-8,
            # lone surrogates of an editor buffer)
            for m in re.finditer(rb"[^\s;]+", s):
                words.append(_Word(_text(m.group()), self.c(b0 + m.start()),
                                   self.c(b0 + m.end())))
        return words

    def run(self, root) -> list[Build]:
        for cmd in root.children:
            self._command(cmd)
        return self._finish()

    def _command(self, cmd) -> None:
        if cmd.type == "if_condition":
            self._if(cmd)
            return
        if cmd.type in ("foreach_loop", "while_loop", "block_def", "function_def",
                        "macro_def", "body"):
            for ch in cmd.children:
                self._command(ch)
            return
        if cmd.type != "normal_command":
            return
        ident = cmd.children[0].text.decode("utf-8", "replace").lower()
        if ident in ("if", "elseif", "else", "endif", "foreach", "endforeach", "while",
                     "endwhile"):
            return
        args = self.args(cmd)
        if not args:
            return
        if self._active_notes:
            note = " and ".join(dict.fromkeys(self._active_notes))
            for w in args:
                self.notes.setdefault((w.start, w.end), note)
        head = args[0].text
        if ident == "option" and len(args) >= 2:
            raw = self._raw_args(cmd)        # the help text is one argument, not words
            value = _switch(raw[2].text) if len(raw) >= 3 else False
            if value is not None and head not in self.switches:
                self.switches[head] = (value, True)
        if ident == "set" and len(args) == 2 and _switch(args[1].text) is not None:
            self.switches[head] = (_switch(args[1].text), False)
        if ident == "set":
            vals = [w for w in args[1:] if w.text not in ("CACHE", "PARENT_SCOPE", "FORCE")]
            if "CACHE" in [w.text for w in args[1:]]:
                i = [w.text for w in args].index("CACHE")
                vals = args[1:i]
            self.vars[head] = vals
        elif ident == "string" and head == "APPEND" and len(args) >= 2:
            self.vars[args[1].text] = (self.vars.get(args[1].text, []) + args[2:])[:MAX_WORDS]
        elif ident == "list" and head in ("APPEND", "PREPEND", "INSERT") and len(args) >= 2:
            vals = args[3:] if head == "INSERT" else args[2:]
            old = self.vars.get(args[1].text, [])
            self.vars[args[1].text] = (vals + old if head == "PREPEND" else old + vals
                                       )[:MAX_WORDS]
        elif ident in ("add_library", "add_executable", "cuda_add_library",
                       "cuda_add_executable"):
            words = [w for w in args[1:] if w.text not in (
                "STATIC", "SHARED", "MODULE", "OBJECT", "INTERFACE", "EXCLUDE_FROM_ALL",
                "WIN32", "MACOSX_BUNDLE", "IMPORTED", "ALIAS", "GLOBAL")]
            opts: list[_Word] = []
            if ident.startswith("cuda_") and any(w.text == "OPTIONS" for w in words):
                i = [w.text for w in words].index("OPTIONS")
                words, opts = words[:i], words[i + 1:]
            t = self._target(head)
            t.sources += [w.text for w in words if not w.text.startswith("$<")]
            if ident.startswith("cuda_"):
                t.kind = "cmake-findcuda"
            if opts:
                self.builds.append(Build("cmake-target", f"CMake target `{head}`", self.path,
                                         [self._flag(w) for w in opts], t.sources))
        elif ident == "target_sources":
            t = self._target(head)
            t.sources += [w.text for w in args[1:] if w.text not in (
                "PRIVATE", "PUBLIC", "INTERFACE") and not w.text.startswith("$<")]
        elif ident == "target_compile_options":
            t = self._target(head)
            for w in self._cuda_words(args[1:]):
                if w.text not in ("PRIVATE", "PUBLIC", "INTERFACE", "BEFORE"):
                    t.flags.append(self._flag(w))
        elif ident == "add_compile_options":
            self.dir_flags.extend(self._cuda_words(args))
        elif ident == "target_compile_definitions":
            # macros the target's CUDA is compiled with: -D flags (CL401 leaves out
            # code under the #else of an #ifdef of one: sheet-newcorpus9 W2)
            t = self._target(head)
            for w in self._cuda_words(args[1:]):
                if w.text not in ("PRIVATE", "PUBLIC", "INTERFACE") and _MACRO.match(w.text):
                    t.flags.append(Flag(_as_define(w.text), self.path, w.start, w.end))
        elif ident in ("add_compile_definitions", "add_definitions"):
            self.dir_flags.extend(
                _Word(_as_define(w.text), w.start, w.end) for w in self._cuda_words(args)
                if _MACRO.match(w.text) and (ident == "add_compile_definitions" or
                                             w.text.startswith("-D")))
        elif ident == "pybind11_add_module" or ident == "python_add_library":
            t = self._target(head)
            t.sources += [w.text for w in args[1:] if w.text.endswith(
                (".cu", ".cpp", ".cc", ".c"))]

    def _if(self, node) -> None:
        """Follow the branch the defaults take when every condition up to it is known;
        otherwise every branch (a build may take any of them)."""
        decided = True
        taking: tuple[bool, str | None] | None = None
        for ch in node.children:
            if ch.type in ("if_command", "elseif_command", "else_command"):
                if not decided:
                    cond = None
                elif ch.type == "else_command":
                    cond = (True, None)
                else:
                    cond = self._condition(ch)
                taking = cond
                continue
            if ch.type != "body":
                continue
            if taking is None:
                decided = False
                self._command(ch)
                continue
            on, note = taking
            if on:
                if note:
                    self._active_notes.append(note)
                self._command(ch)
                if note:
                    self._active_notes.pop()
                return                       # the later branches are not taken
        return

    def _condition(self, cmd) -> tuple[bool, str | None] | None:
        words = [w.text for w in self._raw_args(cmd)]
        negate = False
        if len(words) == 2 and words[0].upper() == "NOT":
            negate, words = True, words[1:]
        if len(words) != 1:
            return None
        name = words[0]
        m = re.fullmatch(r"\$\{([A-Za-z0-9_]+)\}", name)
        if m:
            name = m.group(1)
        if name not in self.switches:
            lit = _switch(name)
            return None if lit is None else (lit != negate, None)
        value, is_option = self.switches[name]
        on = value != negate
        if not is_option:
            return on, None
        return on, f"on unless {name}={'OFF' if value else 'ON'}"

    def _raw_args(self, cmd) -> list[_Word]:
        arglist = next((ch for ch in cmd.children if ch.type == "argument_list"), None)
        out = []
        for arg in arglist.children if arglist is not None else []:
            if arg.type == "argument" and arg.children:
                t = _text(arg.children[0].text).strip('"')
                out.append(_Word(t, 0, 0))
        return out

    def labelled(self, label: str, flags: list[Flag]) -> str:
        noted = []
        for f in flags:
            note = self.notes.get((f.start, f.end))
            if note and any(w in f.text for w in ("fast_math", "fast-math", "ftz",
                                                   "prec-div", "prec_div", "prec-sqrt",
                                                   "prec_sqrt", "fmad")):
                entry = f"`{f.text}` {note}"
                if entry not in noted:
                    noted.append(entry)
        return f"{label} ({'; '.join(noted)})" if noted else label

    def _cuda_words(self, words: list[_Word]) -> list[_Word]:
        """Drop words under a generator expression for another language, strip genex
        wrappers, split `;` lists."""
        out: list[_Word] = []
        lang_stack: list[bool] = []
        for w in words:
            text, start = w.text, w.start
            m = _GENEX_LANG.match(text)
            if m:
                lang_stack.append(m.group(1).upper() == "CUDA")
                text, start = text[m.end():], start + m.end()
            elif text.startswith("$<"):
                # another generator expression ($<BUILD_INTERFACE:...>, $<$<CONFIG:..>:..>)
                k = text.rfind(">:")
                if k < 0:
                    continue
                lang_stack.append(True)
                text, start = text[k + 2:], start + k + 2
            closing = 0
            while text.endswith(">") and lang_stack and closing < len(lang_stack):
                text = text[:-1]
                closing += 1
            applies = all(lang_stack) if lang_stack else True
            if text and applies:
                out.append(_Word(text, start, start + len(text)))
            for _ in range(closing):
                lang_stack.pop()
        return out

    def _flag(self, w: _Word) -> Flag:
        return Flag(w.text, self.path, w.start, w.end)

    def _target(self, name: str) -> Build:
        if name not in self.targets:
            self.targets[name] = Build("cmake-target", f"CMake target `{name}`", self.path)
        return self.targets[name]

    def _finish(self) -> list[Build]:
        builds = list(self.builds)
        for var in sorted(self.vars):
            if var == "CMAKE_CUDA_FLAGS" or var.startswith("CMAKE_CUDA_FLAGS_") or \
                    var == "CUDA_NVCC_FLAGS" or var.startswith("CUDA_NVCC_FLAGS_"):
                flags = [self._flag(w) for w in self.vars[var]
                         if not w.text.startswith("${")]
                srcs = sorted({s for t in self.targets.values() for s in t.sources
                               if s.endswith((".cu", ".cuh"))}) or ["**/*.cu"]
                what = "the CUDA sources of this CMake project"
                if var.startswith("CUDA_NVCC_FLAGS"):
                    # read by FindCUDA's cuda_add_* and by whatever passes it on
                    # (target_compile_options(t ${CUDA_NVCC_FLAGS})): say no more than that
                    what = "the CUDA sources built with CUDA_NVCC_FLAGS"
                builds.append(Build("cmake-dir", self.labelled(f"{what} via {var}", flags),
                                    self.path, flags, srcs))
        if self.dir_flags:
            srcs = sorted({s for t in self.targets.values() for s in t.sources}) or ["**/*.cu"]
            flags = [self._flag(w) for w in self.dir_flags]
            builds.append(Build("cmake-dir", self.labelled(
                "targets of this directory via add_compile_options", flags),
                self.path, flags, srcs))
        # the directory's compile definitions apply to every target's CUDA too
        dir_defines = [self._flag(w) for w in self.dir_flags if w.text.startswith("-D")]
        for t in self.targets.values():
            if t.flags:
                t.label = self.labelled(t.label, t.flags)
                t.flags += [f for f in dir_defines if f not in t.flags]
                builds.append(t)
        return builds


_MACRO = re.compile(r"^(?:-D)?[A-Za-z_]\w*(?:=\S*)?$")


def _as_define(word: str) -> str:
    """A compile definition (``NAME``, ``NAME=1``, ``-DNAME``) as nvcc's -D flag."""
    return word if word.startswith("-D") else f"-D{word}"


def _switch(word: str) -> bool | None:
    """CMake's constant truth values (``if(<constant>)``); None for anything else."""
    w = word.upper()
    if w in ("1", "ON", "YES", "TRUE", "Y"):
        return True
    if w in ("0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND", "") or \
            w.endswith("-NOTFOUND"):
        return False
    return None


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


def _byte_to_char(text: str) -> list[int]:
    if text.isascii():          # one byte per character (most CMake files)
        return list(range(len(text) + 1))
    table = []
    for i, ch in enumerate(text):
        table.extend([i] * len(ch.encode("utf-8", "surrogatepass")))
    table.append(len(text))
    return table


@lru_cache(maxsize=1)
def _cmake_parser():
    import tree_sitter
    import tree_sitter_cmake
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cmake.language()))


def cmake_builds(text: str, path: str = "CMakeLists.txt") -> list[Build]:
    tree = _cmake_parser().parse(text.encode("utf-8", "surrogatepass"))
    return _CMake(text, path).run(tree.root_node)
