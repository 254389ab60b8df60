"""``noqa`` comments, flake8/ruff grammar, in CUDA (``//``) and Python (``#``) alike.

* line: ``// noqa: CL202`` or ``# noqa: CL202, CL104`` on the reported line; a bare
  ``noqa`` suppresses everything on that line. In a Python file the comment may also be
  written inside the CUDA string, on the line that holds the reported code.
* file: ``// cudalint: noqa`` or ``# cudalint: noqa: CL203`` anywhere in the file.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

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

    def match(self, code: str, row: int) -> Directive | None:
        for d in self.file:
            if d.codes is None or code in d.codes:
                return d
        d = self.lines.get(row)
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
    for line in text.split("\n"):
        row += 1
        lower = line.lower()
        if "noqa" in lower:
            fm = _FILE.search(line)
            if fm:
                files.append(_directive(fm, row, pos, file_level=True))
            else:
                m = _LINE.search(line)
                if m:
                    lines[row] = _directive(m, row, pos)
        pos += len(line) + 1
    return Suppressions(lines, files)


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
