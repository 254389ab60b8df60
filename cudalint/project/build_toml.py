"""Builds written in ``pyproject.toml``: scikit-build-core / py-build-cmake cmake arguments
and defines (``-DCMAKE_CUDA_FLAGS=...``), ``CUDAFLAGS`` environment entries. Read with a
few regular expressions (no TOML library: offsets of each flag are kept).
"""
from __future__ import annotations

import re

from cudalint.project.build import Build
from cudalint.project.nvcc_flags import Flag, split_words

_CMAKE_FLAG_VARS = ("CMAKE_CUDA_FLAGS", "CUDA_NVCC_FLAGS")
_TOML_STRING = re.compile(r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|'
                          r"'[^'\n]*'", re.S)
_KEY_BEFORE = re.compile(r"\s*=\s*([A-Za-z0-9_\-]+)")    # `name = ` read backwards
_TOML_KEYS = re.compile(r"^\s*([A-Za-z0-9_.\-\"' ]+?)\s*=", re.M)


def _toml_strings(text: str) -> list[tuple[str, int, int, str]]:
    """(value, inner start, inner end, dotted key path) of every string in the file."""
    out = []
    table = ""
    i = 0
    key_path = ""
    for m in re.finditer(r"[^\n]*\n?", text):
        line = m.group()
        if not line:
            break
        stripped = line.strip()
        start = m.start()
        if stripped.startswith("#"):
            continue
        hdr = re.match(r"\s*\[\[?\s*([^\]]+?)\s*\]\]?", line)
        if hdr and not _in_value_continuation(out, start):
            table = hdr.group(1).replace('"', "").replace("'", "")
            key_path = table
            continue
        km = re.match(r"\s*([A-Za-z0-9_.\-\"']+)\s*=", line)
        if km:
            key_path = (table + "." if table else "") + km.group(1).replace('"', "").replace(
                "'", "")
        for sm in _TOML_STRING.finditer(line):
            q = 3 if sm.group().startswith(('"""', "'''")) else 1
            raw = sm.group()[q:-q]
            prefix = line[:sm.start()]
            # key of an inline table entry: `{CMAKE_CUDA_FLAGS = "..."}`; matched on the
            # reversed prefix (a search for `name = $` retries every start: quadratic on
            # a 40 KB run of letters, minutes in a fuzz run)
            inline = _KEY_BEFORE.match(prefix[::-1])
            kp = key_path + "." + inline.group(1)[::-1] if inline and km and \
                len(prefix) - inline.end() > km.end() else key_path
            if "#" in prefix and prefix.rfind("#") > prefix.rfind('"'):
                continue
            value = _toml_unescape(raw) if "\\" in raw and sm.group()[0] == '"' else raw
            out.append((value, start + sm.start() + q, start + sm.end() - q, kp))
        i += 1
    return out


_TOML_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|\s*\n\s*|(.))", re.S)
_TOML_SIMPLE = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b", '"': '"',
                "\\": "\\"}


def _toml_unescape(raw: str) -> str:
    """A TOML basic string's value (an invalid escape stays as written)."""
    def one(m: re.Match) -> str:
        hexa = m.group(1) or m.group(2)
        if hexa:
            cp = int(hexa, 16)
            return chr(cp) if cp <= 0x10FFFF else m.group()
        if m.group(3) is None:
            return ""                     # line-ending backslash of a multi-line string
        return _TOML_SIMPLE.get(m.group(3), m.group())
    return _TOML_ESCAPE.sub(one, raw)


def _in_value_continuation(out, start) -> bool:
    return False


def toml_builds(text: str, path: str = "pyproject.toml") -> list[Build]:
    if not any(v in text for v in _CMAKE_FLAG_VARS + ("CUDAFLAGS",)):
        return []
    by_key: dict[str, list[Flag]] = {}
    for value, s, e, key in _toml_strings(text):
        flags = by_key.setdefault(key, [])
        last = key.rsplit(".", 1)[-1]
        exact = value == text[s:e]
        if last in _CMAKE_FLAG_VARS or last.startswith("CMAKE_CUDA_FLAGS") or \
                last == "CUDAFLAGS":
            flags += split_words(value, s, path) if exact else \
                [Flag(w, path, s, e) for w in value.split()]
            continue
        m = re.match(r"-D(CMAKE_CUDA_FLAGS(?:_[A-Z]+)?|CUDA_NVCC_FLAGS)(?::[A-Z]+)?=", value)
        if m:
            tail = value[m.end():]
            rest = tail.strip("\"'")
            # every quote stripped in front moves the words (`=""a b`: two, fuzz seed 37)
            off = s + m.end() + len(tail) - len(tail.lstrip("\"'"))
            flags += split_words(rest, off, path) if exact else \
                [Flag(w, path, s, e) for w in rest.split()]
    # each key is its own command line (a backend's args, a define, an environment entry)
    return [Build("toml", f"every CUDA source of the CMake project (via `{key}`)", path,
                  flags, ["**/*.cu"]) for key, flags in by_key.items() if flags]
