"""Output formats. Each is a function ``(results, options) -> str`` registered in FORMATS;
the ``full`` format writes to a rich console itself (colour when stdout is a terminal)."""
from __future__ import annotations

from .text import render_concise, render_full, render_statistics
from .machine import render_github, render_json, render_json_lines, render_junit
from .sarif import render_sarif

FORMATS = {
    "full": render_full,
    "concise": render_concise,
    "json": render_json,
    "json-lines": render_json_lines,
    "sarif": render_sarif,
    "github": render_github,
    "junit": render_junit,
}
