"""SARIF 2.1.0 for GitHub code scanning: repo-relative URIs under %SRCROOT%, rule metadata
with help text and help URI, partial fingerprints, suppressed findings marked in-source."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .. import __version__, rule_url
from ..engine import FileResult
from ..rule import all_rules
from .machine import _write

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _srcroot() -> Path:
    cur = Path.cwd().resolve()
    for folder in [cur, *cur.parents]:
        if (folder / ".git").exists():
            return folder
    return cur


def _uri(filename: str, root: Path) -> str:
    path = Path(filename).resolve()
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_uri()


def sarif_document(results: list[FileResult]) -> dict:
    root = _srcroot()
    rules = all_rules()
    used = sorted({d.code for r in results for d in r.diagnostics})
    index = {code: i for i, code in enumerate(used)}
    descriptors = []
    for code in used:
        rule = rules.get(code)
        doc = rule.doc() if rule else ""
        descriptors.append({
            "id": code,
            "name": rule.name if rule else code,
            "shortDescription": {"text": (rule.summary() if rule else code) or code},
            "fullDescription": {"text": doc or code},
            "help": {"text": doc or code, "markdown": doc or code},
            "helpUri": rule_url(code),
            "defaultConfiguration": {"level": _LEVEL[rule.severity] if rule else "warning"},
            "properties": {"tags": ["cuda", "performance" if code[2] in "23" else
                                    "correctness"]},
        })
    out = []
    for res in results:
        for d in res.diagnostics:
            uri = _uri(d.filename, root)
            fp = hashlib.sha256(f"{d.code}\0{uri}\0{res.lines.get(d.row, '').strip()}\0"
                                f"{d.message}".encode()).hexdigest()[:32]
            item = {
                "ruleId": d.code,
                "ruleIndex": index[d.code],
                "level": _LEVEL[d.severity],
                "message": {"text": d.message},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"}
                    if not uri.startswith("file:") else {"uri": uri},
                    "region": {"startLine": d.row, "startColumn": d.column,
                               "endLine": d.end_row, "endColumn": max(d.end_column, 1)},
                }}],
                "partialFingerprints": {"cudalintFingerprint/v1": fp},
            }
            if d.metrics:
                item["properties"] = {"metrics": d.metrics}
            if d.suppressed:
                item["suppressions"] = [{"kind": "inSource",
                                         "justification": "noqa comment"}]
            out.append(item)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "cudalint", "version": __version__,
                                "informationUri": rule_url("").rsplit("#", 1)[0],
                                "rules": descriptors}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": out,
        }],
    }


def render_sarif(results, console, **_) -> None:
    _write(console, json.dumps(sarif_document(results), indent=2))
