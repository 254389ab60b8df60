"""``noqa`` comments, flake8/ruff grammar, in CUDA (``//``) and Python (``#``) alike.

* line: ``// noqa: CL202`` or ``# noqa: CL202, CL104`` on the reported line; a bare
  ``noqa`` suppresses everything on that line. In a Python file the comment may also be
  written inside the CUDA string, on the line that holds the reported code.
* file: ``// cudalint: noqa`` or ``# cudalint: noqa: CL203`` anywhere in the file.
* a line continued with ``\\`` (a macro body, a Python line continuation) cannot hold a
  comment -- a ``//`` one would swallow the next line into the comment, a ``#`` one is a
  Python syntax error -- so its noqa is the one on the row that ends the continued line,
  as ruff reads continuation lines; :func:`noqa_edit` writes it there too.

Writing one (:func:`noqa_edit`: the language server's "Disable for this line" and
``--add-noqa``): the code joins the line's comment, or a comment is added at the end of the
line, ``//`` in CUDA and ``#`` in Python -- ``//`` written inside the string when the line
ends inside a kernel string.
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from cudalint.diagnostics import Edit

_CODES = r"[A-Za-z]+[0-9]+(?:\s*,\s*[A-Za-z]+[0-9]+)*"
_FILE = re.compile(rf"(?:#|//)\s*cudalint\s*:\s*noqa(?:\s*:\s*(?P<codes>{_CODES}))?",
                   re.IGNORECASE)
_LINE = re.compile(rf"(?:#|//)\s*noqa(?P<colon>\s*:\s*(?P<codes>{_CODES}))?", re.IGNORECASE)


@dataclass
class Directive:
    row: int
    start: int              # file character offsets of the codes list (or the comment)
    end: int
    codes: list[str] | None  # None: bare noqa
    code_spans: list[tuple[str, int, int]] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    file_level: bool = False


@dataclass
class Suppressions:
    lines: dict[int, Directive]
    file: list[Directive]
    continued: dict[int, int] = field(default_factory=dict)   # row -> its line's end row

    def match(self, code: str, row: int) -> Directive | None:
        for d in self.file:
            if d.codes is None or code in d.codes:
                return d
        d = self.lines.get(row) or self.lines.get(self.continued.get(row, row))
        if d is not None and (d.codes is None or code in d.codes):
            return d
        return None


def parse_suppressions(text: str) -> Suppressions:
    lines: dict[int, Directive] = {}
    files: list[Directive] = []
    if "noqa" not in text.lower():
        return Suppressions(lines, files)
    row = 0
    pos = 0
    continued: dict[int, int] = {}
    start = None                          # first row of the continued line being read
    for line in text.split("\n"):
        row += 1
        if _continues(line):
            start = row if start is None else start
        elif start is not None:
            continued.update(dict.fromkeys(range(start, row), row))
            start = None
        lower = line.lower()
        if "noqa" in lower:
            # a row may hold both kinds: with lone-CR line ends a whole file is one row
            # (fuzz seed 35: a `// noqa: CL201` that "Disable for this line" added after
            # a `// cudalint: noqa: CL202` was never read)
            for fm in _FILE.finditer(line):
                files.append(_directive(fm, row, pos, file_level=True))
            m = _LINE.search(line)
            if m:
                lines[row] = _directive(m, row, pos)
        pos += len(line) + 1
    if start is not None:                 # the last row ends the file's last line
        continued.update(dict.fromkeys(range(start, row), row))
    return Suppressions(lines, files, continued)


def _continues(line: str) -> bool:
    """Does the line continue on the next (it ends with ``\\``)?"""
    return line.rstrip("\r").rstrip().endswith("\\")


def continued_to(lines: list[str], row: int) -> int:
    """The row (1-based) that ends the continued line ``row`` is part of: ``row`` itself
    unless it ends with ``\\``."""
    while row < len(lines) and _continues(lines[row - 1]):
        row += 1
    return row


def comment_row(lines: list[str], row: int) -> int:
    """The row whose noqa comment applies to a finding on ``row`` (what
    :meth:`Suppressions.match` reads): its own when it has one, else the row that ends
    its continued line."""
    if "noqa" in lines[row - 1].lower() and parse_suppressions(lines[row - 1]).lines:
        return row
    return continued_to(lines, row)


def _directive(m: re.Match, row: int, line_start: int, file_level: bool = False) -> Directive:
    codes_text = m.group("codes")
    if codes_text is None:
        return Directive(row, line_start + m.start(), line_start + m.end(), None,
                         file_level=file_level)
    spans = []
    base = line_start + m.start("codes")
    for cm in re.finditer(r"[A-Za-z]+[0-9]+", codes_text):
        spans.append((cm.group().upper(), base + cm.start(), base + cm.end()))
    return Directive(row, line_start + m.start(), line_start + m.end(),
                     [c for c, _, _ in spans], spans, file_level=file_level)


# ---------------------------------------------------------------------------------------
# "Disable for this line": where the noqa comment goes and in which comment syntax.

def rows_ending_inside_strings(text: str) -> set[int]:
    """1-based rows whose line break is inside a Python string literal (a kernel string):
    a comment there must be CUDA's ``//``, written inside the string."""
    rows: set[int] = set()
    opened: list[int] = []
    starts = {getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START")
              if hasattr(tokenize, n)}
    ends = {getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END")
            if hasattr(tokenize, n)}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING:
                rows.update(range(tok.start[0], tok.end[0]))
            elif tok.type in starts:
                opened.append(tok.start[0])
            elif tok.type in ends and opened:
                rows.update(range(opened.pop(), tok.end[0]))
    except (tokenize.TokenError, SyntaxError, ValueError, SystemError):
        pass            # SystemError: Python 3.12's tokenizer on some NUL bytes
    return rows


def noqa_edit(text: str, kind: str, row: int, code: str,
              string_rows: set[int] | None = None) -> Edit | None:
    """The edit that suppresses ``code`` on 1-based ``row`` (cudalint rows: split on
    ``\\n``; a row continued with ``\\`` and no noqa comment of its own: the row that
    ends its line), or None when that row already suppresses the code (or is the file's
    last and continued). ``string_rows``: :func:`rows_ending_inside_strings` of a Python
    text, when the caller has them."""
    lines = text.split("\n")
    if not 1 <= row <= len(lines):
        return None
    row = comment_row(lines, row)       # a continued line's comment goes where it ends
    line_start = sum(len(line) + 1 for line in lines[:row - 1])
    line = lines[row - 1]
    directive = parse_suppressions(line).lines.get(1)
    if directive is not None:
        if directive.codes is None or code in directive.codes:
            return None
        at = line_start + directive.code_spans[-1][2]
        return Edit(at, at, f", {code}")
    content = line.rstrip("\r").rstrip()
    if content.endswith("\\"):
        return None               # the file's last row, continued
    if kind == "python":
        if string_rows is None:
            string_rows = rows_ending_inside_strings(text)
        prefix = "//" if row in string_rows else "#"
    elif kind == "cuda":
        prefix = "//"
    else:
        prefix = "#"
    at = line_start + len(content)
    return Edit(at, at, f"{'  ' if content else ''}{prefix} noqa: {code}")
