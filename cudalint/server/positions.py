"""Positions and conversion for the language server: cudalint reports character offsets
into the text, LSP wants 0-based lines and columns in code units of the negotiated encoding
(``LineIndex``); a finding as an LSP diagnostic (``to_lsp``); the edits the server offers
that are not a rule's fix: the ``noqa`` comment of "Disable for this line" (``noqa_edit``,
from cudalint/suppressions.py, which ``--add-noqa`` shares) and the one changed middle of a
fixed text (``minimal_edit``)."""
from __future__ import annotations

import re
from typing import Any

from lsprotocol import types as lsp

from cudalint import rule_url
from cudalint.diagnostics import Diagnostic, Edit
from cudalint.suppressions import noqa_edit  # noqa: F401 (the server's name for it)

SOURCE = "cudalint"
_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning,
             "info": lsp.DiagnosticSeverity.Information}


# ---------------------------------------------------------------------------------------
# Positions: cudalint reports character offsets into the text (and 1-based character
# columns); LSP wants 0-based lines and columns in code units of the negotiated encoding.

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class LineIndex:
    """Character offsets <-> LSP positions for one text. Lines end at ``\\r\\n``, ``\\r``
    or ``\\n`` as LSP says; columns count UTF-16 code units (a character outside the
    Basic Multilingual Plane is two), UTF-8 bytes or code points, as negotiated."""

    def __init__(self, text: str, encoding: str = "utf-16"):
        self.text = text
        self.encoding = str(encoding).lower().replace("_", "-")
        self.starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
        self.ends = [m.start() for m in _LINE_BREAK.finditer(text)] + [len(text)]

    def _units(self, chars: str) -> int:
        if self.encoding == "utf-32" or chars.isascii():
            return len(chars)
        if self.encoding == "utf-8":
            return len(chars.encode("utf-8", "surrogatepass"))
        return len(chars) + sum(1 for ch in chars if ord(ch) > 0xFFFF)

    def _line_of(self, offset: int) -> int:
        import bisect
        return bisect.bisect_right(self.starts, offset) - 1

    def position(self, offset: int) -> lsp.Position:
        offset = max(0, min(offset, len(self.text)))
        line = self._line_of(offset)
        start = self.starts[line]
        offset = min(offset, self.ends[line])       # never inside a \r\n
        return lsp.Position(line=line, character=self._units(self.text[start:offset]))

    def offset(self, pos: lsp.Position) -> int:
        if pos.line >= len(self.starts):
            return len(self.text)
        start, end = self.starts[pos.line], self.ends[pos.line]
        if self.encoding == "utf-32":
            return min(start + pos.character, end)
        units = 0
        i = start
        while i < end and units < pos.character:
            units += self._units(self.text[i])
            i += 1
        return i

    def range(self, start: int, end: int) -> lsp.Range:
        return lsp.Range(start=self.position(start), end=self.position(max(start, end)))


def minimal_edit(before: str, after: str) -> Edit:
    """One edit that turns ``before`` into ``after``: the changed middle only."""
    from cudalint.incremental import changed_span
    start, end_b, end_a = changed_span(before, after)
    return Edit(start, end_b, after[start:end_a])


def to_lsp(d: Diagnostic, index: LineIndex) -> lsp.Diagnostic:
    tags = [lsp.DiagnosticTag.Unnecessary] if d.code == "CL001" else None
    data: dict[str, Any] = {"name": d.name}
    if d.metrics:
        data["metrics"] = d.metrics
    if d.fix is not None:
        data["fix"] = {"message": d.fix.message, "applicability": d.fix.applicability}
    return lsp.Diagnostic(
        range=index.range(d.start_offset, d.end_offset),
        severity=_SEVERITY.get(d.severity, lsp.DiagnosticSeverity.Warning),
        code=d.code,
        code_description=lsp.CodeDescription(href=d.url or rule_url(d.code)),
        source=SOURCE,
        message=d.message,
        tags=tags,
        data=data,
    )


def unread_hint(unread: tuple[int, int, str], index: LineIndex) -> lsp.Diagnostic:
    """A compile call in Python whose CUDA was not analysed (FileResult.unread: 1-based
    row and column, the message): a hint from the call to the end of its line, so that
    nothing is unread in silence in the editor either (the CLI lists them with
    ``--show-unread``)."""
    row, column, message = unread
    line = max(0, min(row - 1, len(index.starts) - 1))
    start = min(index.starts[line] + max(column - 1, 0), index.ends[line])
    return lsp.Diagnostic(range=index.range(start, index.ends[line]),
                          severity=lsp.DiagnosticSeverity.Hint, source=SOURCE,
                          message=message, data={"name": "unread"})
