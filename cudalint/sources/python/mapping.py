"""Mapped strings: a string value that keeps, per character, where it came from.

Every character of an extracted text keeps the offset of the file character it came
from (``map``; -1 for wrapper code and substituted values). A character written as an
escape maps to its backslash. ``verb`` marks characters that appear in the file exactly
as themselves, which is what an edit (a fix) needs. :class:`Scanner` reads the string
literals of a span of the .py file (any prefix, implicit concatenation, escapes,
f-string fields) into such strings, and :func:`fits_literal` says whether a replacement
can be written into a literal as it is.
"""
from __future__ import annotations

import re
import unicodedata


def fits_literal(text: str, raw: bool, quote: str) -> bool:
    if quote[0] in text:
        return False
    if "\\" in text and not raw:
        return False
    if raw and text.endswith("\\"):
        return False
    if len(quote) == 1 and ("\n" in text or "\r" in text):
        return False
    return True


# ---------------------------------------------------------------------------------------
# mapped strings


class MStr:
    """A string value plus, per character, the file offset and whether it is verbatim."""

    __slots__ = ("text", "map", "verb", "pieces")

    def __init__(self, text: str = "", map_: list[int] | None = None,
                 verb: bytearray | None = None, pieces: list | None = None):
        self.text = text
        self.map = map_ if map_ is not None else [-1] * len(text)
        self.verb = verb if verb is not None else bytearray(len(text))
        self.pieces = pieces if pieces is not None else []

    @classmethod
    def synthetic(cls, text: str) -> "MStr":
        return cls(text)

    def __add__(self, other: "MStr") -> "MStr":
        return MStr(self.text + other.text, self.map + other.map, self.verb + other.verb,
                    self.pieces + other.pieces)

    @classmethod
    def concat(cls, parts: list["MStr"]) -> "MStr":
        """All parts in one step (``+`` in a loop copies the maps again and again)."""
        out = cls("".join(p.text for p in parts), [], bytearray(), [])
        for p in parts:
            out.map.extend(p.map)
            out.verb.extend(p.verb)
            out.pieces.extend(p.pieces)
        return out

    def slice(self, a: int, b: int) -> "MStr":
        return MStr(self.text[a:b], self.map[a:b], self.verb[a:b], self.pieces)


_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n",
            "r": "\r", "t": "\t", "v": "\v"}
_PREFIX_RE = re.compile(r"[A-Za-z]{0,3}(?=['\"])")
# runs of characters the scanners below pass over one at a time to no effect: skipped
# as a whole (the character loops were most of the time of reading a kernel string)
_LITERAL_RUN = {(False, "'"): re.compile(r"[^\\']*"), (False, '"'): re.compile(r'[^\\"]*'),
                (True, "'"): re.compile(r"[^\\{}'\"]*"), (True, '"'): re.compile(r"[^\\{}'\"]*")}
_PLAIN_RUN = {False: re.compile(r"[^\r\\]+"), True: re.compile(r"[^\r\\{}]+")}


class Scanner:
    """Reads the string literals of an expression span of the file text."""

    def __init__(self, src: str):
        self.src = src

    def skip_gap(self, i: int, end: int) -> int:
        src = self.src
        while i < end:
            c = src[i]
            if c in " \t\f\r\n()":
                i += 1
            elif c == "\\" and i + 1 < end and src[i + 1] in "\r\n":
                i += 1
            elif c == "#":
                j = src.find("\n", i)
                i = end if j < 0 else j
            else:
                break
        return i

    def literals(self, start: int, end: int):
        """Yield (prefix, quote, body_start, body_end, lit_start, lit_end) in a span."""
        src = self.src
        i = self.skip_gap(start, end)
        while i < end:
            m = _PREFIX_RE.match(src, i)
            if m is None:
                raise ValueError("not a string literal")
            prefix = m.group(0).lower()
            q = m.end()
            quote = src[q] * 3 if src.startswith(src[q] * 3, q) else src[q]
            body = q + len(quote)
            j = body
            raw = "r" in prefix
            fstr = "f" in prefix
            run = _LITERAL_RUN[fstr, quote[0]]
            depth = 0
            while True:
                j = run.match(src, j).end()
                if j >= len(src):
                    raise ValueError("unterminated literal")
                c = src[j]
                if c == "\\" and not (fstr and depth):
                    j += 2
                    continue
                if fstr and c in "{}":
                    if depth == 0 and src.startswith(c * 2, j):
                        j += 2
                        continue
                    depth += 1 if c == "{" else -1
                    depth = max(depth, 0)
                    j += 1
                    continue
                if fstr and depth and c in "'\"":
                    # a string inside a replacement field
                    k = src.find(c, j + 1)
                    j = (k + 1) if k >= 0 else len(src)
                    continue
                if depth == 0 and src.startswith(quote, j):
                    break
                j += 1
            yield prefix, quote, body, j, i, j + len(quote)
            i = self.skip_gap(j + len(quote), end)

    def decode(self, prefix: str, quote: str, a: int, b: int, lit: tuple[int, int],
               fields: list | None = None) -> MStr:
        """The value of a literal body src[a:b] with its map.

        For f-strings, each replacement field is replaced by ``fields.pop(0)`` (an MStr).
        """
        src = self.src
        raw = "r" in prefix
        fstr = "f" in prefix
        out: list[str] = []
        mp: list[int] = []
        vb = bytearray()
        piece = (lit[0], lit[1], raw, quote)
        plain = _PLAIN_RUN[fstr]
        i = a
        while i < b:
            m = plain.match(src, i, b)
            if m is not None:
                j = m.end()
                out.append(src[i:j]); mp.extend(range(i, j)); vb.extend(b"\x01" * (j - i))
                i = j
                continue
            c = src[i]
            if c == "\r":
                # the tokenizer reads \r\n and \r as \n
                out.append("\n"); mp.append(i); vb.append(0)
                i += 2 if src.startswith("\r\n", i) else 1
                continue
            if fstr and c in "{}":
                if src.startswith(c * 2, i):
                    out.append(c); mp.append(i); vb.append(0)
                    i += 2
                    continue
                if c == "{":
                    j = _field_end(src, i, b)
                    if fields is None or not fields:
                        raise ValueError("f-string field without a value")
                    val = fields.pop(0)
                    out.append(val.text); mp.extend(val.map); vb.extend(val.verb)
                    i = j
                    continue
                raise ValueError("single '}' in f-string")
            if c == "\\" and not raw:
                n = src[i + 1] if i + 1 < b else ""
                if n in "\r\n":                     # line continuation inside the string
                    i += 3 if src.startswith("\r\n", i + 1) else 2
                    continue
                if n in _ESCAPES:
                    out.append(_ESCAPES[n]); mp.append(i); vb.append(0)
                    i += 2
                    continue
                if n in "01234567":
                    m = re.match(r"[0-7]{1,3}", src[i + 1:i + 4])
                    assert m is not None
                    out.append(chr(int(m.group(0), 8))); mp.append(i); vb.append(0)
                    i += 1 + len(m.group(0))
                    continue
                width = {"x": 2, "u": 4, "U": 8}.get(n)
                if width and "b" not in prefix:
                    hexd = src[i + 2:i + 2 + width]
                    out.append(chr(int(hexd, 16))); mp.append(i); vb.append(0)
                    i += 2 + width
                    continue
                if n == "N":
                    close = src.index("}", i)
                    out.append(unicodedata.lookup(src[i + 3:close])); mp.append(i); vb.append(0)
                    i = close + 1
                    continue
                # unknown escape: backslash kept as itself
                out.append("\\"); mp.append(i); vb.append(1)
                i += 1
                continue
            if c == "\\" and raw and i + 1 < b:
                # in a raw string the backslash stays, and protects the next char
                out.append(c); mp.append(i); vb.append(1)
                n = src[i + 1]
                if n == "\r":
                    out.append("\n"); mp.append(i + 1); vb.append(0)
                    i += 3 if src.startswith("\r\n", i + 1) else 2
                else:
                    out.append(n); mp.append(i + 1); vb.append(1)
                    i += 2
                continue
            out.append(c); mp.append(i); vb.append(1)
            i += 1
        return MStr("".join(out), mp, vb, [piece])


def _field_end(src: str, i: int, b: int) -> int:
    """Index just past the '}' closing the f-string field that opens at src[i]."""
    depth = 0
    j = i
    while j < b:
        c = src[j]
        if c in "'\"":
            k = src.find(c, j + 1)
            j = (k + 1) if k >= 0 else b
            continue
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise ValueError("unterminated f-string field")


def format_field_end(t: str, i: int) -> int:
    """Index just past the '}' closing the ``str.format`` field that opens at t[i], or -1."""
    depth = 0
    for j in range(i, len(t)):
        if t[j] == "{":
            depth += 1
        elif t[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return -1
