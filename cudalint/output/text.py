"""Human formats: ``full`` (source excerpt with the span underlined, like ruff) and
``concise`` (one line per finding), plus ``--statistics``. Lines are written as parts
through :func:`cudalint.output.console.line` (rich on a terminal, plain text otherwise)."""
from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from cudalint.output.console import line

if TYPE_CHECKING:
    from cudalint.diagnostics import Diagnostic
    from cudalint.engine import FileResult

_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}
# a URL rich's style grammar takes whole (no spaces or brackets; plugins set their own URLs)
_LINKABLE = re.compile(r"https?://[^\s\[\]]+")


def _all(results: list[FileResult]) -> list[Diagnostic]:
    return [d for r in results for d in r.visible]


def _fix_marker(d: Diagnostic, unsafe: bool) -> str:
    if d.fix is None:
        return ""
    return "[*] " if d.fix.is_safe or unsafe else ""


def _code_style(d: Diagnostic) -> str:
    """The code's style; on a terminal the code is also an OSC 8 hyperlink to the rule's
    docs, as ruff prints it (terminals without OSC 8 show the plain code; plain output
    drops styles, links included)."""
    style = _STYLE[d.severity]
    if d.url and _LINKABLE.fullmatch(d.url):
        style += f" link={d.url}"
    return style


def _headline(d: Diagnostic, unsafe_fixes: bool) -> list:
    return [("bold", d.filename), f":{d.where}: ", (_code_style(d), d.code),
            " ", _fix_marker(d, unsafe_fixes), d.message]


def render_concise(results, console, unsafe_fixes: bool = False,
                   quiet: bool = False, fixed: int = 0, **_) -> None:
    for d in _all(results):
        line(console, _headline(d, unsafe_fixes), highlight=False, soft_wrap=True)
    if not quiet:
        _summary(results, console, unsafe_fixes, fixed)


def render_full(results, console, unsafe_fixes: bool = False, quiet: bool = False,
                fixed: int = 0, show_metrics: bool = False, **_) -> None:
    by_file = {r.path: r for r in results}
    for d in _all(results):
        res = by_file[d.filename]
        line(console, _headline(d, unsafe_fixes), highlight=False, soft_wrap=True)
        _excerpt(console, res, d)
        if d.metrics and show_metrics:    # internal numbers: --show-metrics, or JSON
            shown = ", ".join(f"{k}={v}" for k, v in d.metrics.items()
                              if isinstance(v, (int, float, str)))
            if shown:
                line(console, ["  ", ("dim", f"= metrics: {shown}")], highlight=False)
        if d.fix is not None:
            tag = "" if d.fix.is_safe else " (unsafe)"
            line(console, ["  ", ("cyan", "= help"), ": ", d.fix.message, tag],
                 highlight=False)
        console.print()
    if not quiet:
        _summary(results, console, unsafe_fixes, fixed)


def _excerpt(console, res: FileResult, d: Diagnostic) -> None:
    rows = list(range(max(1, d.row - 1), min(d.end_row, d.row + 3) + 1))
    rows = [r for r in rows if d.line_key(r) in res.lines]
    if not rows:
        return
    width = len(str(rows[-1]))
    pad = " " * width
    line(console, [("blue", f"{pad} |")], highlight=False)
    for r in rows:
        raw = res.lines[d.line_key(r)]
        text = raw.replace("\t", "    ")
        line(console, [("blue", f"{r:>{width}} |"), " ", text], highlight=False,
             soft_wrap=True)
        if d.row <= r <= d.end_row:
            start = d.column - 1 if r == d.row else len(raw) - len(raw.lstrip())
            end = d.end_column - 1 if r == d.end_row else len(raw)
            start_vis = len(raw[:start].replace("\t", "    "))
            end_vis = len(raw[:end].replace("\t", "    "))
            carets = "^" * max(1, end_vis - start_vis)
            label = f" {d.code}" if r == d.end_row or r == rows[-1] else ""
            line(console, [("blue", f"{pad} |"), f" {' ' * start_vis}",
                           (_STYLE[d.severity], f"{carets}{label}")],
                 highlight=False, soft_wrap=True)
    line(console, [("blue", f"{pad} |")], highlight=False)


def _unread_line(results, console) -> None:
    """One line, as ruff's "N hidden fixes": compile calls whose CUDA was not read."""
    n = sum(len(getattr(r, "unread", None) or ()) for r in results)
    if n:
        console.print(f"{n} CUDA compile call{'s' if n != 1 else ''} in Python "
                      f"{'were' if n != 1 else 'was'} not analysed (list them with "
                      "`--show-unread`).", highlight=False)


def render_unbuilt(unbuilt, console, listed: bool = False, quiet: bool = False) -> None:
    """The ``.cu`` files a folder walk left out because no build of the project compiles
    them: one line (as ruff's "N hidden fixes"), each file with ``--show-unread``."""
    if not unbuilt:
        return
    if listed:
        for shown, why in unbuilt:
            line(console, [("bold", shown), ": ", ("dim", "not linted"), ": ", why],
                 highlight=False)
    if quiet:
        return
    n = len(unbuilt)
    console.print(f"{n} .cu file{'s' if n != 1 else ''} that no build compiles "
                  f"{'were' if n != 1 else 'was'} not linted (list them with "
                  "`--show-unread`; name a file, or set `lint-unbuilt = true`, to lint "
                  "it).", highlight=False)


def render_unread(results, console) -> None:
    """``--show-unread``: each compile call whose CUDA was not analysed, and why."""
    for r in results:
        for row, col, message in getattr(r, "unread", None) or ():
            line(console, [("bold", r.path), f":{row}:{col}: ", ("dim", "unread"), " ",
                           message], highlight=False, soft_wrap=True)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 and noun != 'info' else ''}"


def _found(diags, fixed: int) -> str:
    """"Found 2 errors and 8 warnings." (the severities apart: CI logs are read for the
    errors); after --fix, as ruff: "Found 3 findings (2 fixed, 1 remaining: 1 warning)."."""
    by = Counter(d.severity for d in diags)
    parts = [_count(by[s], s) for s in ("error", "warning", "info") if by[s]]
    said = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1] \
        if parts else ""
    if not fixed:
        return f"Found {said}."
    total = fixed + len(diags)
    rest = f"{len(diags)} remaining" + (f": {said}" if said else "")
    return f"Found {_count(total, 'finding')} ({fixed} fixed, {rest})."


def _summary(results, console, unsafe_fixes: bool, fixed: int = 0) -> None:
    diags = _all(results)
    errors = [r for r in results if r.error]
    for r in errors:
        line(console, [("bold red", "error"), ": ", r.path, ": ", r.error or ""],
             highlight=False)
    if not diags and not fixed:
        console.print("All checks passed!", highlight=False)
        _unread_line(results, console)
        return
    console.print(_found(diags, fixed), highlight=False)
    safe = sum(1 for d in diags if d.fix is not None and (d.fix.is_safe or unsafe_fixes))
    hidden = sum(1 for d in diags if d.fix is not None and not d.fix.is_safe
                 and not unsafe_fixes)
    # ruff's wording: "1 hidden fix can", "2 hidden fixes can"
    hint = (f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the "
            "`--unsafe-fixes` option")
    if safe:
        line(console, [("cyan", "[*]"), f" {safe} fixable with the `--fix` option"
                       + (f" ({hint})." if hidden else ".")], highlight=False)
    elif hidden:
        console.print(f"No fixes available ({hint}).", highlight=False)
    _unread_line(results, console)


def render_statistics(results, console, unsafe_fixes: bool = False) -> None:
    from rich.table import Table

    from cudalint.rule import all_rules
    from cudalint.output.console import PlainConsole
    if isinstance(console, PlainConsole):
        console = console.rich()
    counts = Counter(d.code for d in _all(results))
    fixable = Counter(d.code for d in _all(results)
                      if d.fix is not None and (d.fix.is_safe or unsafe_fixes))
    table = Table(box=None, show_header=False, pad_edge=False)
    for code, n in counts.most_common():
        rule = all_rules().get(code)
        table.add_row(str(n), code, "[*]" if fixable[code] else "",
                      rule.name if rule else "")
    console.print(table)
