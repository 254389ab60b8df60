"""Formats for code-review tools: ``gitlab`` (GitLab Code Quality report: a JSON list of
issues with description, check_name, fingerprint, severity, location.path and
location.lines.begin, the fields GitLab reads for merge-request widgets) and ``rdjson``
(reviewdog's Diagnostic JSON: one DiagnosticResult with source, and per finding message,
location.path, location.range with 1-based lines and UTF-8 byte columns, severity, code
with url, and the fix as suggestions). A notebook's finding has the row of its cell and
says the cell in its text (neither format knows cells).
"""
from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from cudalint import rule_url

if TYPE_CHECKING:
    from cudalint.diagnostics import Diagnostic
    from cudalint.engine import FileResult

# GitLab's levels: info, minor, major, critical, blocker
_GITLAB = {"error": "major", "warning": "minor", "info": "info"}
_RDJSON = {"error": "ERROR", "warning": "WARNING", "info": "INFO"}


def _path(name: str) -> str:
    return name.replace("\\", "/")


def _text(d: Diagnostic) -> str:
    return d.message if d.cell is None else f"cell {d.cell}: {d.message}"


def gitlab_issues(results: list[FileResult]) -> list[dict]:
    out = []
    for res in results:
        seen: dict[str, int] = {}
        for d in res.visible:
            # stable when lines move: code, file, the row's text and the message; the
            # n-th identical finding of a file gets its own
            shown = res.lines.get(d.line_key(d.row), "").strip()
            fp = hashlib.sha256(f"{d.code}\0{_path(d.filename)}\0{shown}\0{d.message}"
                                .encode()).hexdigest()
            seen[fp] = seen.get(fp, 0) + 1
            if seen[fp] > 1:
                fp = hashlib.sha256(f"{fp}:{seen[fp]}".encode()).hexdigest()
            out.append({
                "description": f"{d.code} {_text(d)}",
                "check_name": d.code,
                "fingerprint": fp,
                "severity": _GITLAB[d.severity],
                "location": {"path": _path(d.filename),
                             "lines": {"begin": d.row, "end": d.end_row}},
            })
    return out


def render_gitlab(results, console, **_) -> None:
    console.file.write(json.dumps(gitlab_issues(results), indent=2) + "\n")


def _byte_column(res: FileResult, d: Diagnostic, row: int, column: int) -> int:
    line = res.lines.get(d.line_key(row))
    if line is None:
        return column
    return len(line[:column - 1].encode("utf-8", "surrogatepass")) + 1


def _range(res, d, start: tuple[int, int], end: tuple[int, int]) -> dict:
    return {"start": {"line": start[0], "column": _byte_column(res, d, *start)},
            "end": {"line": end[0], "column": _byte_column(res, d, *end)}}


def rdjson_result(results: list[FileResult], unsafe_fixes: bool = False) -> dict:
    diagnostics = []
    for res in results:
        for d in res.visible:
            item = {
                "message": _text(d),
                "location": {"path": _path(d.filename),
                             "range": _range(res, d, (d.row, d.column),
                                             (d.end_row, d.end_column))},
                "severity": _RDJSON[d.severity],
                "code": {"value": d.code, "url": d.url or rule_url(d.code)},
            }
            if d.fix is not None and (d.fix.is_safe or unsafe_fixes) and d.cell is None:
                item["suggestions"] = [{"range": _range(res, d, e.start_rc, e.end_rc),
                                        "text": e.content} for e in d.fix_edits_rc]
            diagnostics.append(item)
    return {"source": {"name": "cudalint", "url": "https://github.com/cudalint/cudalint"},
            "diagnostics": diagnostics}


def render_rdjson(results, console, unsafe_fixes: bool = False, **_) -> None:
    console.file.write(json.dumps(rdjson_result(results, unsafe_fixes), indent=2) + "\n")
