"""Applying fixes: non-overlapping edits, repeated until nothing changes (so a fix run
twice changes nothing the second time), refused when the result parses worse than the
original, and written atomically (temp file in the same folder + rename, mode kept).
"""
from __future__ import annotations

import ast
import difflib
import glob
import os
import re
import tempfile
import time
import warnings
from pathlib import Path

from cudalint.config import Settings
from cudalint.diagnostics import Diagnostic, Edit
from cudalint.engine import lint_text
from cudalint.parse import parse

MAX_PASSES = 10
_NUMBER = re.compile(r"\b[0-9]+\b")    # not the digits inside names (matrixMul_bs16)


def applicable(d: Diagnostic, unsafe: bool) -> bool:
    return d.fix is not None and not d.suppressed and (d.fix.is_safe or unsafe)


def apply_edits(text: str, diagnostics: list[Diagnostic], unsafe: bool) -> tuple[str, int]:
    """Apply every fix that does not overlap an earlier one; returns (text, fixes applied)."""
    new, count, _ = apply_edits_of(text, diagnostics, unsafe)
    return new, count


def apply_edits_of(text: str, diagnostics: list[Diagnostic], unsafe: bool
                   ) -> tuple[str, int, list[Diagnostic]]:
    """:func:`apply_edits`, and the diagnostics whose fixes were applied."""
    chosen: list[Diagnostic] = []
    taken: list[tuple[int, int]] = []
    for d in sorted((d for d in diagnostics if applicable(d, unsafe)),
                    key=lambda d: min(e.start for e in d.fix.edits)):
        spans = [(e.start, e.end) for e in d.fix.edits]
        if any(s < te and ts < max(e, s + 1) or (s == e == ts) for s, e in spans
               for ts, te in taken):
            continue
        taken.extend(spans)
        chosen.append(d)
    edits = sorted((e for d in chosen for e in d.fix.edits), key=lambda e: (e.start, e.end),
                   reverse=True)
    for e in edits:
        text = text[:e.start] + e.content + text[e.end:]
    return text, len(chosen), chosen


def parse_quality(text: str, kind: str) -> int:
    """Lower is better: error nodes for CUDA, 0/1 for Python."""
    if kind == "python":
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse(text)
            return 0
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return 1
    root = parse(text.encode("utf-8", "surrogatepass")).root_node
    if not root.has_error:
        return 0
    count, stack = 0, [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            count += 1
        elif node.has_error:
            stack.extend(node.children)
    return count


def finding_key(d: Diagnostic, text: str) -> tuple[str, str, str]:
    """What identifies a finding from one pass to the next, when edits elsewhere moved it
    (and changed the line numbers in its message): its code, the text it covers and its
    message without numbers. The message tells apart findings covering the same text in
    different places (`const float *A` of two kernels, CL205): under one key, the second
    kernel's fix would wait for the next run."""
    return d.code, text[d.start_offset:d.end_offset], _NUMBER.sub("#", d.message)


def fix_text(path: str, text: str, settings: Settings, kind: str, unsafe: bool
             ) -> tuple[str, int]:
    """Fixed text and the number of fixes applied (0 and the original if none is safe).

    Passes repeat for fixes that overlapped an applied one (and for findings a fix
    uncovers), but each finding is fixed at most once: a fix whose finding is still
    there after it was applied did not work, and applying it again would only stack the
    same edit (issue 25: a CL101 `__syncwarp();` inserted 10 times a run, every run).
    A finding is the one a fix was applied for when it has the same :func:`finding_key`
    and covers the place that finding's text moved to through the edits since; copies of
    one kernel elsewhere in the file are other findings, fixed in their turn (fuzz seed
    42: 64 copies on one line, of which a pass reports those it analysed)."""
    if kind == "notebook":
        return _fix_notebook(path, text, settings, unsafe)
    original_quality = parse_quality(text, kind)
    total = 0
    current = text
    # (key, start, end) of every finding a fix was applied for, in `current`'s offsets
    fixed: list[tuple[tuple[str, str, str], int, int]] = []
    for _ in range(MAX_PASSES):
        result = lint_text(path, current, settings, kind)
        chosen = []
        for d in result.diagnostics:
            if not applicable(d, unsafe):
                continue
            key = finding_key(d, current)
            if not any(k == key and s <= d.end_offset and d.start_offset <= e
                       for k, s, e in fixed):
                chosen.append(d)
        new, count, used = apply_edits_of(current, chosen, unsafe)
        if count == 0 or new == current:
            break
        if parse_quality(new, kind) > original_quality:
            break                   # never leave a file that parses worse than before
        edits = sorted((e for d in used for e in d.fix.edits), key=lambda e: (e.start, e.end))
        fixed = [(k, moved(s, edits, False), moved(e, edits, True)) for k, s, e in fixed]
        fixed += [(finding_key(d, current), moved(d.start_offset, edits, False),
                   moved(d.end_offset, edits, True)) for d in used]
        current, total = new, total + count
    return current, total


def moved(pos: int, edits: list[Edit], is_end: bool) -> int:
    """Where offset ``pos`` of a text is after ``edits`` (non-overlapping, in order): text
    inserted at a start goes before it, at an end after it; a position inside a replaced
    span goes to the replacement's start."""
    shift = 0
    for e in edits:
        if e.start > pos or (e.start == pos and (is_end or e.end > pos)):
            break
        if e.end > pos:
            return e.start + shift
        shift += len(e.content) - (e.end - e.start)
    return pos + shift


def _fix_notebook(path: str, text: str, settings: Settings, unsafe: bool
                  ) -> tuple[str, int]:
    """Fixes in a notebook's cells: applied to its Python text (a boundary comment between
    cells), written back into the JSON; the notebook unchanged when they cannot be."""
    from cudalint.sources.notebook import NotNotebook, read_notebook
    try:
        nb = read_notebook(text)
    except NotNotebook:
        return text, 0
    fixed, count = fix_text(path, nb.marked, settings, "python", unsafe)
    if count == 0:
        return text, 0
    out = nb.write_back(fixed)
    return (text, 0) if out is None else (out, count)


# codes about noqa comments themselves: a noqa for them would only hide the comment's state
_NOT_NOQA = frozenset({"CL001", "CL002"})


def add_noqa(text: str, kind: str, diagnostics: list[Diagnostic]) -> tuple[str, int, int]:
    """``--add-noqa``: ``text`` with a noqa comment for every finding shown (merged into
    the line's comment when it has one; a line continued with a backslash gets it where
    the continued line ends), the number of codes added, and the number of findings no
    comment could be written for (a Python-level finding on a line that ends inside a
    string: a comment there would change the string). A notebook's comments go into its
    cells."""
    if kind == "notebook":
        return _add_noqa_notebook(text, diagnostics)
    from cudalint.rule import all_rules
    from cudalint.suppressions import comment_row, noqa_edit, rows_ending_inside_strings
    rules = all_rules()
    string_rows = rows_ending_inside_strings(text) if kind == "python" else set()
    lines = text.split("\n")
    wanted: dict[int, list[str]] = {}
    for d in diagnostics:
        if d.suppressed or d.code in _NOT_NOQA:
            continue
        codes = wanted.setdefault(d.noqa_row or d.row, [])
        if d.code not in codes:
            codes.append(d.code)
    added = skipped = 0
    for row in sorted(wanted, reverse=True):        # bottom up: offsets above stay put
        for code in sorted(wanted[row]):
            rule = rules.get(code)
            at = comment_row(lines, row) if 1 <= row <= len(lines) else row
            if at in string_rows and (rule is None or rule.target != "unit"):
                skipped += 1                         # a Python string, not CUDA source
                continue
            edit = noqa_edit(text, kind, row, code, string_rows)
            if edit is None:
                if parse_noqa_codes(text, row, code):
                    continue
                skipped += 1
                continue
            text = text[:edit.start] + edit.content + text[edit.end:]
            added += 1
    return text, added, skipped


def add_noqa_files(targets, results) -> tuple[int, int, int]:
    """``--add-noqa`` over a run's targets and results, each file written atomically:
    (codes added, files changed, findings left without a comment)."""
    added = changed = skipped = 0
    for t, res in zip(targets, results):
        if not res.visible:
            continue
        try:
            text = t.path.read_bytes().decode("utf-8-sig")
        except (OSError, UnicodeDecodeError):
            continue
        new, n, left = add_noqa(text, t.kind, res.diagnostics)
        skipped += left
        if n and new != text:
            write_atomic(t.path, new)
            added, changed = added + n, changed + 1
    return added, changed, skipped


def parse_noqa_codes(text: str, row: int, code: str) -> bool:
    """Does ``row`` already suppress ``code`` (a continued row: where its line ends)?"""
    from cudalint.suppressions import comment_row, parse_suppressions
    lines = text.split("\n")
    if not 1 <= row <= len(lines):
        return False
    return parse_suppressions(lines[comment_row(lines, row) - 1]).match(code, 1) is not None


def _add_noqa_notebook(text: str, diagnostics: list[Diagnostic]) -> tuple[str, int, int]:
    from dataclasses import replace

    from cudalint.sources.notebook import NotNotebook, read_notebook
    try:
        nb = read_notebook(text)
    except NotNotebook:
        return text, 0, 0
    first: dict[int, int] = {}                 # cell number -> its first row in nb.marked
    row = 1
    for k, source in enumerate(nb.sources):
        first[nb.cells[k] + 1] = row
        row += source.count("\n") + 2          # its rows and the boundary comment's
    moved = [replace(d, noqa_row=first[d.cell] + (d.noqa_row or d.row) - 1)
             for d in diagnostics if d.cell in first]
    marked, added, skipped = add_noqa(nb.marked, "python", moved)
    if not added:
        return text, 0, skipped
    out = nb.write_back(marked)
    return (text, 0, skipped + added) if out is None else (out, added, skipped)


def write_atomic(path: Path, text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    folder = path.parent
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:                     # a new file: what open() would give it
        mask = os.umask(0)
        os.umask(mask)
        mode = 0o666 & ~mask
    _remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".cudalint-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


STALE_SECONDS = 600


def _remove_stale_temporaries(path: Path) -> None:
    """Remove this file's temporaries left by a cudalint run that was killed between
    writing and renaming (`.NAME.*.cudalint-tmp`, older than ten minutes, so a run
    writing beside this one is left alone)."""
    try:
        now = time.time()
        for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.cudalint-tmp"):
            try:
                if now - tmp.lstat().st_mtime > STALE_SECONDS and tmp.is_file():
                    tmp.unlink()
            except OSError:
                pass
    except OSError:
        pass


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))
