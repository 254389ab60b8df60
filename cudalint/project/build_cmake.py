"""Builds written in CMake, read with tree-sitter-cmake (never run):
``CMAKE_CUDA_FLAGS[_<CONFIG>]`` via ``set``/``string(APPEND)``, ``CUDA_NVCC_FLAGS``
(FindCUDA), ``add_compile_options`` and ``target_compile_options`` (generator expressions
for another language are dropped), ``cuda_add_library(... OPTIONS ...)``; targets' sources
from ``add_library`` / ``add_executable`` / ``cuda_add_*`` / ``target_sources`` and
``set()`` variables.
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
        if cmd.type in ("if_condition", "foreach_loop", "while_loop", "block_def",
                        "function_def", "macro_def"):
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
        head = args[0].text
        if ident == "set":
            vals = [w for w in args[1:] if w.text not in ("CACHE", "PARENT_SCOPE", "FORCE")]
            if "CACHE" in [w.text for w in args[1:]]:
                i = [w.text for w in args].index("CACHE")
                vals = args[1:i]
            self.vars[head] = vals
        elif ident == "string" and head == "APPEND" and len(args) >= 2:
            self.vars[args[1].text] = self.vars.get(args[1].text, []) + args[2:]
        elif ident == "list" and head in ("APPEND", "PREPEND", "INSERT") and len(args) >= 2:
            vals = args[3:] if head == "INSERT" else args[2:]
            old = self.vars.get(args[1].text, [])
            self.vars[args[1].text] = vals + old if head == "PREPEND" else old + vals
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
        elif ident == "pybind11_add_module" or ident == "python_add_library":
            t = self._target(head)
            t.sources += [w.text for w in args[1:] if w.text.endswith(
                (".cu", ".cpp", ".cc", ".c"))]

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
                    what = "FindCUDA targets (cuda_add_library/cuda_add_executable)"
                builds.append(Build("cmake-dir", f"{what} via {var}", self.path, flags, srcs))
        if self.dir_flags:
            srcs = sorted({s for t in self.targets.values() for s in t.sources}) or ["**/*.cu"]
            builds.append(Build("cmake-dir", "targets of this directory via add_compile_options",
                                self.path, [self._flag(w) for w in self.dir_flags], srcs))
        for t in self.targets.values():
            if t.flags:
                builds.append(t)
        return builds


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


def _byte_to_char(text: str) -> list[int]:
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
