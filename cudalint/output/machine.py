"""Machine formats: json (the documented contract), json-lines, GitHub annotations, JUnit."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cudalint.engine import FileResult


def _write(console, text: str) -> None:
    console.file.write(text + "\n")


def _visible(results: list[FileResult]):
    return [d for r in results for d in r.visible]


def render_json(results, console, **_) -> None:
    _write(console, json.dumps([d.to_json() for d in _visible(results)], indent=2))


def statistics(results, unsafe_fixes: bool = False) -> list[dict]:
    """``--statistics`` as data, ruff's fields: one entry per code, most frequent first."""
    from collections import Counter

    from cudalint.rule import all_rules
    diags = _visible(results)
    counts = Counter(d.code for d in diags)
    fixable = Counter(d.code for d in diags
                      if d.fix is not None and (d.fix.is_safe or unsafe_fixes))
    rules = all_rules()
    return [{"code": code, "name": rules[code].name if code in rules else "", "count": n,
             "fixable": bool(fixable[code])} for code, n in counts.most_common()]


def render_statistics_json(results, console, unsafe_fixes: bool = False, **_) -> None:
    _write(console, json.dumps(statistics(results, unsafe_fixes), indent=2))


def render_statistics_json_lines(results, console, unsafe_fixes: bool = False, **_) -> None:
    for entry in statistics(results, unsafe_fixes):
        _write(console, json.dumps(entry))


def render_json_lines(results, console, **_) -> None:
    for d in _visible(results):
        _write(console, json.dumps(d.to_json()))


def _gh_escape(value: str, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def render_github(results, console, **_) -> None:
    level = {"error": "error", "warning": "warning", "info": "notice"}
    for d in _visible(results):
        props = (f"title={_gh_escape(f'cudalint ({d.code})', True)},"
                 f"file={_gh_escape(d.filename, True)},line={d.row},col={d.column},"
                 f"endLine={d.end_row},endColumn={d.end_column}")
        _write(console, f"::{level[d.severity]} {props}::"
                    f"{_gh_escape(f'{d.filename}:{d.where}: {d.code} {d.message}')}")


def _cell(d) -> str:
    return "" if d.cell is None else f"cell {d.cell}, "


def render_junit(results, console, **_) -> None:
    from xml.sax.saxutils import escape, quoteattr   # imports urllib, http, email: 25 ms
    diags = _visible(results)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name="cudalint" tests="{max(1, len(diags))}" '
             f'failures="{len(diags)}" errors="0">',
             f'  <testsuite name="cudalint" tests="{max(1, len(diags))}" '
             f'failures="{len(diags)}" errors="0">']
    if not diags:
        lines.append('    <testcase name="cudalint" classname="cudalint"/>')
    for d in diags:
        name = f"{d.code} at {d.filename}:{d.where}"
        lines.append(f"    <testcase name={quoteattr(name)} classname={quoteattr(d.filename)}"
                     f' file={quoteattr(d.filename)} line="{d.row}">')
        lines.append(f"      <failure message={quoteattr(d.message)} type={quoteattr(d.code)}>"
                     f"{escape(_cell(d) + f'line {d.row}, col {d.column}, {d.message}')}</failure>")
        lines.append("    </testcase>")
    lines += ["  </testsuite>", "</testsuites>"]
    _write(console, "\n".join(lines))
