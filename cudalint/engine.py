"""Lint one file: read, split into units, run the rules once per unit, map every finding
back to the file, apply suppressions. Never raises for bad input: problems become CL000.
"""
from __future__ import annotations

import re
import traceback
from collections import OrderedDict
from contextlib import contextmanager
from copy import deepcopy
from dataclasses import dataclass, field, replace

from cudalint import rule_url
from cudalint.config import Settings
from cudalint.context import FileContext, UnitContext
from cudalint.diagnostics import CELL_KEY, Diagnostic, Edit, Finding, Fix, edit_rc
from cudalint.model.instances import INSTANCE_RE, merged as merge_instances
from cudalint.rule import Rule, all_rules
from cudalint.selection import code_ignored, enabled_rules, per_file_ignored
from cudalint.sources.base import SourceFile, Unit, file_kind
from cudalint.sources.python.units import OPAQUE_PREFIX, describe_opaque
from cudalint.suppressions import parse_suppressions

BINARY_SNIFF = 8192
# bound (issue 25): the CUDA units of one file analysed, at most (distinct ones: copies
# of one compile call are analysed once). A Python file of the corpora gives at most 42
# (ptypy's kernels.py, over 1,271 files that compile CUDA); a fuzzed one gave 512 (64
# copies of pycuda's reduction, each read through 8 callers: 9 s a lint). The units past
# it are not analysed, and a CL000 says how many.
MAX_UNITS_PER_FILE = 128


@dataclass
class FileResult:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    lines: dict[int, str] = field(default_factory=dict)   # source rows the output shows
    lines_of_code: int = 0
    error: str | None = None                               # could not be read at all
    # compile calls of a Python file whose CUDA was not analysed: (row, column, message)
    unread: list[tuple[int, int, str]] = field(default_factory=list)

    @property
    def visible(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if not d.suppressed]


def decode(data: bytes) -> tuple[str | None, str | None]:
    """(text, None) or (None, why-not)."""
    if b"\0" in data[:BINARY_SNIFF]:
        return None, "binary file (contains NUL bytes); skipped"
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        return None, (f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start});"
                      " skipped")


def lint_bytes(path: str, data: bytes, settings: Settings, kind: str | None = None
               ) -> FileResult:
    kind = kind or file_kind(path) or "cuda"
    text, problem = decode(data)
    if text is None:
        return lint_unreadable(path, problem or "unreadable", settings)
    return lint_text(path, text, settings, kind)


def lint_unreadable(path: str, why: str, settings: Settings) -> FileResult:
    result = FileResult(path)
    if any(r.code == "CL000" for r in enabled_rules(settings)):
        result.diagnostics.append(_notice(path, why, 1, 1, settings))
    return result


# (path, kind, settings, text) -> result, inside :func:`reuse_lints` only
_REUSE: "OrderedDict[tuple, FileResult] | None" = None
_REUSE_SIZE = 8


@contextmanager
def reuse_lints():
    """Within the block, linting a text that was linted there before (same path, kind
    and settings) gives a copy of the first result instead of a second analysis. Only
    for work during which nothing else a lint reads can change: one ``--fix`` run lints
    each file's text before its fixes (the check already did), after each pass, and the
    fixed text once more for the report, where 2 distinct texts were linted 4 times (a
    262 KB file of 244 kernels: 13.8 s, fuzz seed 37). :func:`remember` hands it
    results linted elsewhere (the run's worker processes)."""
    global _REUSE
    saved, _REUSE = _REUSE, OrderedDict()
    try:
        yield
    finally:
        _REUSE = saved


def _reuse_key(path: str, text: str, settings: Settings, kind: str) -> tuple:
    return path, kind, settings.fingerprint(), text


def remember(path: str, text: str, settings: Settings, kind: str, result: FileResult
             ) -> None:
    """Inside :func:`reuse_lints`: ``result`` is what linting ``text`` gives."""
    if _REUSE is not None:
        _REUSE[_reuse_key(path, text, settings, kind)] = _copy(result)
        while len(_REUSE) > _REUSE_SIZE:
            _REUSE.popitem(last=False)


def recall(path: str, text: str, settings: Settings, kind: str) -> FileResult | None:
    """Inside :func:`reuse_lints`: a copy of the result of an earlier lint of ``text``."""
    if _REUSE is None:
        return None
    got = _REUSE.get(_reuse_key(path, text, settings, kind))
    return _copy(got) if got is not None else None


def _copy(result: FileResult) -> FileResult:
    """A copy its receiver may change (lint_notebook renumbers the rows of its result's
    diagnostics). Built field by field: ``deepcopy`` of the result itself would leave
    ``__slotnames__`` on the FileResult class (copyreg caches it there)."""
    return FileResult(result.path, deepcopy(result.diagnostics), dict(result.lines),
                      result.lines_of_code, result.error, list(result.unread))


def lint_text(path: str, text: str, settings: Settings, kind: str) -> FileResult:
    if _REUSE is not None:
        got = recall(path, text, settings, kind)
        if got is not None:
            return got
        result = _lint_text(path, text, settings, kind)
        remember(path, text, settings, kind, result)
        return result
    return _lint_text(path, text, settings, kind)


def _lint_text(path: str, text: str, settings: Settings, kind: str) -> FileResult:
    if kind == "notebook":
        return lint_notebook(path, text, settings)
    file = SourceFile(path=path, text=text, kind=kind)
    rules = enabled_rules(settings)
    findings: list[tuple[type[Rule], Finding, Unit | None]] = []
    notices: list[tuple[int, str]] = []          # (file char offset, message) -> CL000
    unread: list = []                            # compile calls not analysed (Python)

    units: list[Unit] = []
    views: list[Unit] = []
    if kind == "cuda" and path not in ("-", "<stdin>"):
        # a file the project's Python reads and compiles: seen as those calls see it
        from cudalint.sources.python.readers import as_own_part, own_part, reader_units
        views = reader_units(file, dict(settings.defines))
        units = list(views)
    if kind == "cuda" and (not views or own_part(path)):
        defines = dict(settings.defines)
        if "#include" in text and path not in ("-", "<stdin>"):
            from pathlib import Path
            from cudalint.project.includes import include_constants
            defines = {**include_constants(Path(path), text), **defines}
        view = None
        if path not in ("-", "<stdin>"):     # the project's macros, constants, launches
            from cudalint.project.index import unit_view
            view = unit_view(path, text, settings)
        if view is None:
            units.append(Unit(file=file, text=text, extra_defines=defines))
        else:
            notices.extend(view.notices)
            units.append(Unit(file=file, text=view.text, char_map=view.char_map,
                              launches=view.launches, spliced=view.spliced,
                              extra_defines={**view.constants, **defines}))
        if views:                   # beside the Python's views: its own findings of
            units[-1] = as_own_part(units[-1])   # the rules those leave out
    elif kind == "python":
        units.extend(_python_units(file, settings, notices, unread))

    unit_rules = [r for r in rules if r.target == "unit"]
    seen: set = set()
    analysed = 0
    for k, unit in enumerate(units):
        key = _analysis_key(unit)
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        analysed += 1
        if analysed > MAX_UNITS_PER_FILE:
            emb = unit.embedded
            left = len(units) - k
            notices.append((emb.call_start if emb is not None else 0,
                            f"{left} more CUDA unit{'s' if left != 1 else ''} of this file "
                            f"(compile calls and their callers) not analysed: at most "
                            f"{MAX_UNITS_PER_FILE} a file"))
            break
        ctx = UnitContext(unit, settings)
        if settings.parse_notices and _wants_notices(rules):
            for off, msg in _parse_notices(ctx):
                notices.append((off, _described(msg, unit)))
        for rule in unit_rules:
            _run(rule, ctx, unit, findings, notices)
        notices.extend((unit.file_offset(off), _described(msg, unit))
                       for off, msg in ctx.notices if unit.spliced_piece(off) is None)
    file_rules = [r for r in rules if r.target == "file" and kind in r.file_kinds]
    if file_rules:
        fctx = FileContext(file, settings)
        for rule in file_rules:
            _run(rule, fctx, None, findings, notices)

    diagnostics = _distinct(_to_diagnostic(rule, f, unit, file, settings)
                            for rule, f, unit in findings if unit is None or unit.keeps(f))
    if any(r.code == "CL000" for r in rules):
        for off, msg in notices:
            row, col = file.position(off)
            diagnostics.append(_notice(path, msg, row, col, settings, off))
    diagnostics = _apply_suppressions(diagnostics, file, settings, rules)
    diagnostics.sort(key=Diagnostic.sort_key)
    result = FileResult(path, diagnostics, lines_of_code=text.count("\n") + 1)
    result.unread = [(*file.position(u.start), u.message()) for u in unread]
    for d in diagnostics:
        for row in range(d.row, min(d.end_row, d.row + 8) + 1):
            result.lines[row] = file.line_text(row)
    return result


def lint_notebook(path: str, text: str, settings: Settings) -> FileResult:
    """A notebook's code cells linted as one Python file (cudalint/sources/notebook.py),
    every position then told as cell and row in the cell."""
    from cudalint.sources.notebook import NotNotebook, read_notebook
    try:
        nb = read_notebook(text)
    except NotNotebook as exc:
        return lint_unreadable(path, str(exc), settings)
    inner = lint_text(path, nb.python, settings, "python")
    file = SourceFile(path=path, text=nb.python, kind="python")
    result = FileResult(path, [], lines_of_code=nb.python.count("\n") + 1, error=inner.error)
    for d in inner.diagnostics:
        cell, row = nb.locate(d.row)
        end_cell, end_row = nb.locate(d.end_row)
        if end_cell != cell:           # a span past its cell ends with the cell's row
            end_row, d.end_column = row, len(file.line_text(d.row)) + 1
        d.row, d.end_row = row, end_row
        if d.noqa_row is not None:
            d.noqa_row = nb.locate(d.noqa_row)[1]
        d.fix_edits_rc = [edit_rc(e.content, (nb.locate(e.start_rc[0])[1], e.start_rc[1]),
                                  (nb.locate(e.end_rc[0])[1], e.end_rc[1]))
                          for e in d.fix_edits_rc]
        d.cell = cell
        result.diagnostics.append(d)
    for row, line in inner.lines.items():
        cell, in_cell = nb.locate(row)
        result.lines[cell * CELL_KEY + in_cell] = line
    result.unread = [(nb.locate(r)[1], c, m) for r, c, m in inner.unread]
    return result


_OPAQUE_NAME = re.compile(re.escape(OPAQUE_PREFIX) + r"\d+__")


def _analysis_key(unit: Unit) -> tuple | None:
    """All that a Python-embedded unit's findings depend on, or None. Two compile calls of
    one source with the same options and launches (a call in an unrolled loop, copies:
    fuzz seed 33 had 40 in a 2.4 KB file, 9.7 s) give the same findings at the same file
    positions, since those come through the text's char map: the second is not analysed
    again. Text read from a file is told at each call (``files``): never merged."""
    emb = unit.embedded
    if emb is None or emb.files:
        return None
    try:
        key = (unit.text, repr(sorted(unit.extra_defines.items())),
               repr(replace(emb, call_start=0, call_end=0)), repr(unit.launches))
    except (ValueError, RecursionError):    # an int over 4,300 digits (fuzz seed 34)
        return None
    if OPAQUE_PREFIX not in unit.text:
        return key
    # a template value unknown statically becomes a placeholder numbered per file: the
    # same string compiled by 51 calls held 51 names for one unknown (fuzz seed 37, 37 s).
    # Numbered by first appearance in the unit, the copies compare equal (the char map
    # still tells apart placeholders of different lengths)
    order: dict[str, str] = {}

    def renumber(m: re.Match) -> str:
        return order.setdefault(m.group(0), f"{OPAQUE_PREFIX}{len(order)}__")
    return tuple(_OPAQUE_NAME.sub(renumber, part) for part in key)


def _distinct(diagnostics) -> list[Diagnostic]:
    """One diagnostic per (code, place, message): a kernel string handed to several
    RawKernel/RawModule calls is analysed once per call, but said once; a finding
    made alike in several instantiations of a template kernel (from their own launches)
    is said once, naming them all (model/instances.py)."""
    seen: dict[tuple, Diagnostic] = {}
    merged: dict[int, tuple[list[str], list[str], str]] = {}
    out = []
    for d in diagnostics:
        message = d.message
        named = INSTANCE_RE.findall(message) if "instantiation `" in message else []
        if len(named) == 1:
            message = INSTANCE_RE.sub("\x00", message)
        key = (d.code, d.start_offset, d.end_offset, message)
        first = seen.get(key)
        if first is None:
            seen[key] = d
            out.append(d)
            if len(named) == 1:
                line, sep, label = named[0]
                merged[id(d)] = ([line] if line else [], [label], sep)
        elif len(named) == 1 and id(first) in merged:
            line, _, label = named[0]
            lines, labels, sep = merged[id(first)]
            if label not in labels:
                labels.append(label)
                if line and line not in lines:
                    lines.append(line)
                first.message = key[3].replace("\x00", merge_instances(lines, labels, sep),
                                               1).replace("launch at lines", "launches at lines")
    return _one_per_place(out)


# the figure that says how bad a finding of a lane rule is, most telling first
_WORST_BY = ("bank_ways", "wavefronts", "sectors_per_request")
_VARIANT_RE = re.compile(r"(?:instantiations? `[^`]+`(?:, `[^`]+`)*(?: and \d+ more)?|"
                         r"reached from [^;)]*)")


def _one_per_place(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """One diagnostic per (code, place) among those said for several instantiations of a
    template, or for a device function reached from several kernels, whose messages
    differ in more than the name (other element types, other figures: cusignal's
    sosfilt<float> and sosfilt<double>): the worst is kept (its figure in the metrics,
    the first on a tie) and names the others (``also_for``)."""
    groups: dict[tuple, list[Diagnostic]] = {}
    for d in diagnostics:
        if _VARIANT_RE.search(d.message):
            groups.setdefault((d.code, d.start_offset, d.end_offset), []).append(d)
    dropped: set[int] = set()
    for group in groups.values():
        if len(group) < 2:
            continue
        worst = max(group, key=lambda d: tuple(
            v if isinstance(v := d.metrics.get(k), (int, float)) else 0 for k in _WORST_BY))
        others = [_VARIANT_RE.search(d.message).group(0) for d in group if d is not worst]
        worst.message += f" (also {'; '.join(others)}, with a figure no worse)"
        worst.metrics["also_for"] = others
        dropped.update(id(d) for d in group if d is not worst)
    return [d for d in diagnostics if id(d) not in dropped]


def _python_units(file: SourceFile, settings: Settings, notices, unread: list
                  ) -> list[Unit]:
    from cudalint.sources.python.extract import extract_python_units
    extraction = extract_python_units(file.text, file.path, settings.python_compile_apis)
    notices.extend(extraction.notes)
    unread.extend(extraction.unread)
    return [Unit(file=file, text=k.text, embedded=k, index=i,
                 extra_defines=dict(settings.defines))
            for i, k in enumerate(extraction.kernels)]


def _wants_notices(rules) -> bool:
    return any(r.code == "CL000" for r in rules)


def _parse_notices(ctx: UnitContext) -> list[tuple[int, str]]:
    """One CL000 per device function whose body the parser could not fully read.

    Off by default (``parse-notices = true`` turns it on): on real code about one file in
    five has such a region, nearly always a macro, and a notice the user cannot act on
    is noise. Whole files and kernel strings that cannot be read are always reported.
    """
    out = []
    model = ctx.model
    seen: set[int] = set()
    for node in model.error_nodes:
        fn = model.enclosing_function(node)
        if fn is None or not fn.is_device or fn.node.id in seen or \
                ctx.unit.spliced_piece(node.start_byte) is not None:
            continue                # (appended header text: the header's own lint says)
        seen.add(fn.node.id)
        what = "kernel" if fn.is_kernel else "device function"
        out.append((ctx.unit.file_offset(node.start_byte),
                    f"could not parse part of {what} `{fn.name}` (a macro or unsupported "
                    "syntax); rules skip that region"))
    return out


def _run(rule: type[Rule], ctx, unit: Unit | None, findings: list, notices: list) -> None:
    try:
        for finding in rule().check(ctx):
            finding.code = rule.code
            findings.append((rule, finding, unit))
    except Exception as exc:   # a broken rule must never take the run down
        where = unit.file_offset(0) if unit is not None else 0
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        notices.append((where, f"internal error in rule {rule.code} ({type(exc).__name__}: "
                               f"{exc} at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno});"
                               " please report it"))


def _to_diagnostic(rule: type[Rule], f: Finding, unit: Unit | None, file: SourceFile,
                   settings: Settings) -> Diagnostic:
    if unit is not None and f.in_file:         # a place in the file outside the unit
        start = max(0, min(f.start, len(file.text)))
        end = max(start, min(f.end, len(file.text)))
    elif unit is not None:
        start, end = unit.file_span(f.start, f.end)
    else:
        start, end = f.start, max(f.start, f.end)
    row, col = file.position(start)
    end_row, end_col = file.position(end)
    fix = _map_fix(f.fix, unit) if f.fix is not None and not f.in_file else None
    if fix is not None:
        fix = Fix(_described(fix.message, unit), fix.edits, fix.applicability)
    d = Diagnostic(code=rule.code, name=rule.name,
                   message=_described(f.message, unit, None if f.in_file else f.start),
                   severity=f.severity or settings.severity_of(rule.code, rule.severity),
                   filename=file.path, row=row, column=col, end_row=end_row,
                   end_column=end_col, start_offset=start, end_offset=end, fix=fix,
                   metrics=dict(f.metrics), url=rule_url(rule.code), noqa_row=row)
    if fix is not None:
        d.fix_edits_rc = [edit_rc(e.content, file.position(e.start), file.position(e.end))
                          for e in fix.edits]
    return d


def _described(message: str, unit: Unit | None, start: int | None = None) -> str:
    """Messages never show the opaque identifiers of Python templates: each is replaced
    by the placeholder it stands for (sources/python/units.describe_opaque). A finding
    in text the Python read from a file of its package is reported at the call and
    says where it is in that file (Unit.file_note)."""
    emb = getattr(unit, "embedded", None) if unit is not None else None
    message = describe_opaque(message, getattr(emb, "opaque", None))
    note = unit.file_note(start) if unit is not None and start is not None else None
    return f"{message} ({note})" if note else message


def _map_fix(fix: Fix, unit: Unit | None) -> Fix | None:
    """Unit-byte edits -> file-character edits; None if any edit cannot be mapped exactly."""
    if unit is None:
        return fix
    edits = []
    for e in fix.edits:
        cs, ce = unit.char_offset(e.start), unit.char_offset(e.end)
        mapped = unit.map_edit(cs, ce, e.content)
        if mapped is None:
            return None
        edits.append(Edit(*mapped))
    return Fix(fix.message, tuple(edits), fix.applicability)


def _notice(path: str, message: str, row: int, col: int, settings: Settings,
            offset: int = 0) -> Diagnostic:
    return Diagnostic(code="CL000", name="analysis-notice",
                      message=_described(message, None),
                      severity=settings.severity_of("CL000", "warning"), filename=path,
                      row=row, column=col, end_row=row, end_column=col, start_offset=offset,
                      end_offset=offset, url=rule_url("CL000"), noqa_row=row)


def _apply_suppressions(diagnostics: list[Diagnostic], file: SourceFile, settings: Settings,
                        rules) -> list[Diagnostic]:
    ignored = per_file_ignored(settings, file.path)
    if ignored:
        diagnostics = [d for d in diagnostics if not code_ignored(d.code, ignored)]
    sup = parse_suppressions(file.text)
    if not sup.lines and not sup.file:
        return diagnostics
    for d in diagnostics:
        directive = sup.match(d.code, d.noqa_row or d.row)
        if directive is not None:
            d.suppressed = True
            directive.used.add(d.code)
    enabled = {r.code for r in rules}
    known = all_rules()
    extra: list[Diagnostic] = []
    for directive in list(sup.lines.values()) + sup.file:
        # every code it names is reported unused: fixed one by one, the comment goes
        doomed = all(c.startswith("CL") and c in known and c in enabled
                     and c not in directive.used for c, _, _ in directive.code_spans)
        for code, start, end in directive.code_spans:
            if not code.startswith("CL"):
                continue            # another tool's code (flake8, ruff): not ours to judge
            if code not in known:
                if "CL002" in enabled:
                    extra.append(_engine_finding(
                        file, "CL002", "unknown-code", settings, start, end,
                        f"unknown rule code `{code}` in a noqa comment"))
            elif "CL001" in enabled and code not in directive.used and code in enabled:
                extra.append(_engine_finding(
                    file, "CL001", "unused-suppression", settings, start, end,
                    f"unused `noqa` directive: {code} is not reported here",
                    fix=_remove_code_fix(file, directive, code, doomed)))
    return diagnostics + extra


def _engine_finding(file: SourceFile, code: str, name: str, settings: Settings, start: int,
                    end: int, message: str, fix: Fix | None = None) -> Diagnostic:
    row, col = file.position(start)
    end_row, end_col = file.position(end)
    rule = all_rules()[code]
    d = Diagnostic(code=code, name=name, message=message,
                   severity=settings.severity_of(code, rule.severity), filename=file.path,
                   row=row, column=col, end_row=end_row, end_column=end_col,
                   start_offset=start, end_offset=end, fix=fix, url=rule_url(code),
                   noqa_row=row)
    if fix is not None:
        d.fix_edits_rc = [edit_rc(e.content, file.position(e.start), file.position(e.end))
                          for e in fix.edits]
    return d


def _remove_code_fix(file: SourceFile, directive, code: str, doomed: bool) -> Fix | None:
    """Removing ``code`` from the directive, or the whole comment with its last code;
    None when the comment would go (``doomed``: all its codes are unused) and another
    noqa comment shares its row. A row's directive is its first noqa comment: with this
    one gone, the other would become the directive, suppressing what this one did not
    and reported unused on the next run (a whole file is one row with CR-only line
    endings)."""
    if doomed:
        text = file.text
        row_start = text.rfind("\n", 0, directive.start) + 1
        row_end = text.find("\n", directive.end)
        row_end = len(text) if row_end < 0 else row_end
        if "noqa" in (text[row_start:directive.start] + text[directive.end:row_end]).lower():
            return None
    others = [c for c in directive.codes or [] if c != code]
    if others:
        first = directive.code_spans[0][1]
        last = directive.code_spans[-1][2]
        return Fix(f"Remove {code} from the noqa comment",
                   (Edit(first, last, ", ".join(others)),), "safe")
    # the whole comment goes, with the blank space before it
    start = directive.start
    while start > 0 and file.text[start - 1] in " \t":
        start -= 1
    return Fix("Remove the unused noqa comment", (Edit(start, directive.end, ""),), "safe")
