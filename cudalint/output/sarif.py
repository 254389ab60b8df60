"""SARIF 2.1.0 for GitHub code scanning: repo-relative URIs under %SRCROOT%, rule metadata
with help text and help URI, partial fingerprints, suppressed findings marked in-source."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from cudalint import __version__, rule_url
from cudalint.output.machine import _write

SCHEMA = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
          "sarif-schema-2.1.0.json")
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}

if TYPE_CHECKING:
    from cudalint.engine import FileResult


def _srcroot() -> Path:
    cur = Path.cwd().resolve()
    for folder in [cur, *cur.parents]:
        if (folder / ".git").exists():
            return folder
    return cur


def _uri(filename: str, root: Path) -> str:
    """Relative to %SRCROOT% (percent-encoded), or an absolute file URI outside it."""
    path = Path(filename).resolve()
    try:
        return quote(path.relative_to(root).as_posix())
    except ValueError:
        return path.as_uri()


def _description(rule) -> str:
    """What it does (and why it matters): the rule's description without its examples."""
    sections = rule.doc_sections()
    parts = [sections.get("What it does", ""), sections.get("Why is this bad?", "")]
    return "\n\n".join(p for p in parts if p) or rule.summary() or rule.code


def sarif_document(results: list[FileResult]) -> dict:
    root = _srcroot()
    from cudalint.rule import all_rules
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
            "fullDescription": {"text": _description(rule) if rule else code},
            "help": {"text": doc or code, "markdown": doc or code},
            "helpUri": rule_url(code),
            "defaultConfiguration": {"level": _LEVEL[rule.severity] if rule else "warning"},
            "properties": {"tags": ["cuda", "performance" if code[2] in "235" else
                                    "correctness"]},
        })
    out = []
    for res in results:
        seen: dict[str, int] = {}
        for d in res.diagnostics:
            uri = _uri(d.filename, root)
            # stable across line moves: code, file, the line's text and the message; the
            # n-th identical finding in a file gets its own (as GitHub's line hash does)
            shown = res.lines.get(d.line_key(d.row), '').strip()
            fp = hashlib.sha256(f"{d.code}\0{uri}\0{shown}\0"
                                f"{d.message}".encode()).hexdigest()[:32]
            seen[fp] = seen.get(fp, 0) + 1
            fp = f"{fp}:{seen[fp]}"
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
            if d.cell is not None:        # a notebook: the region's rows are the cell's
                item.setdefault("properties", {})["cell"] = d.cell
                item["message"]["text"] = f"cell {d.cell}: {d.message}"
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
