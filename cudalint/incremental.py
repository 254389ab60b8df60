"""Re-analysis of one edited kernel, for the language server's fast path.

While the user types inside a ``__global__`` function, the server analyses a *slice* of
the file: the same text with the bodies of the functions the edited kernel cannot see
blanked out (every character but line breaks and preprocessor lines becomes a space, so
offsets, rows and columns are unchanged). The slice keeps all top-level declarations,
macros and constants (other function definitions are blanked whole), the kernel, the functions it calls (transitively, by name) and the
host functions that name it (its launchers, and what they call); other kernels are
blanked. The findings inside the
kernel come from the slice; the rest of the file keeps the previous findings, moved by
the edit. The server follows up with a full analysis once typing pauses, so a finding
that depends on more than this (a device function judged through its callers) is right
again a moment later.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from cudalint.diagnostics import Diagnostic, Edit, Fix, edit_rc
from cudalint.engine import FileResult, lint_text
from cudalint.sources.base import SourceFile
from cudalint.suppressions import _FILE

_CONTAINERS = frozenset({
    "translation_unit", "declaration_list", "linkage_specification", "namespace_definition",
    "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef",
    "template_declaration",
})
_WORD = re.compile(r"[A-Za-z_]\w*")


@dataclass
class _Function:
    start: int            # character offsets of the whole definition
    end: int
    outer: int            # where its declaration starts (`template <...>`, `extern "C"`)
    body_start: int       # of the body's braces
    body_end: int
    name: str
    is_kernel: bool
    words: frozenset[str]


def _functions(root, text: str, to_char) -> list[_Function]:
    out: list[_Function] = []
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.named_children:
            if child.type == "function_definition":
                fn = _function(child, text, to_char)
                if fn is not None:
                    out.append(fn)
            elif child.type in _CONTAINERS:
                stack.append(child)
    out.sort(key=lambda f: f.start)
    return out


def _function(node, text: str, to_char) -> _Function | None:
    body = node.child_by_field_name("body")
    if body is None or body.type != "compound_statement":
        return None
    start, end = to_char(node.start_byte), to_char(node.end_byte)
    body_start, body_end = to_char(body.start_byte), to_char(body.end_byte)
    head = text[start:body_start]
    paren = head.find("(")
    names = _WORD.findall(head[:paren] if paren >= 0 else head)
    if not names:
        return None
    outer = start
    parent = node.parent
    if parent is not None and parent.type in ("template_declaration",
                                              "linkage_specification"):
        outer = to_char(parent.start_byte)
    return _Function(start, end, outer, body_start, body_end, names[-1],
                     "__global__" in head, _words(text[start:end]))


# Each keystroke asks again for every function of the file; all but the edited one have
# the text they had a moment ago (2,000 lines, per edit: the functions 3.2 -> 1.1 ms,
# the blanking 1.2 -> 0.3 ms with these memos).
@lru_cache(maxsize=4096)
def _words(definition: str) -> frozenset[str]:
    return frozenset(_WORD.findall(definition))


@lru_cache(maxsize=4096)
def _blanked(segment: str) -> str:
    """``segment`` with every character but line breaks turned into a space, except on
    the lines of preprocessor directives (a macro defined in a body stays defined)."""
    lines = segment.split("\n")
    out = []
    continued = False
    for line in lines:
        if continued or line.lstrip().startswith("#"):
            out.append(line)
            continued = line.rstrip().endswith("\\")
        else:
            out.append(" " * len(line.rstrip("\r")) + ("\r" if line.endswith("\r") else ""))
    return "\n".join(out)


@dataclass
class Slice:
    result: FileResult
    start: int            # the edited function's definition, character offsets
    end: int
    # besides it, the kernels that call an edited device function (their findings follow
    # its code: the lane engine and the block run go into callees), new text
    callers: tuple[tuple[int, int], ...] = ()

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        return ((self.start, self.end),) + self.callers


# an edit in a device function called by more kernels than this is analysed whole
MAX_CALLERS = 8


def lint_kernel_slice(path: str, text: str, settings, kind: str, changed_start: int,
                      changed_end: int) -> Slice | None:
    """The findings of the kernel whose body holds ``[changed_start, changed_end)`` (new
    text), from a slice of the file; for a device function's body, its findings and
    those of the kernels that call it (up to MAX_CALLERS, through other device
    functions too). None when the edit is in no function body, or in one that no
    kernel calls (a host function)."""
    if kind != "cuda" or _FILE.search(text):
        return None
    from cudalint.parse import reuse_trees
    # the text, and its slice, each differ from the previous keystroke's by the edit:
    # tree-sitter reparses them from the previous trees (cudalint.parse)
    reuse_trees(True)
    try:
        return _lint_kernel_slice(path, text, settings, kind, changed_start, changed_end)
    finally:
        reuse_trees(False)


def _lint_kernel_slice(path: str, text: str, settings, kind: str, changed_start: int,
                       changed_end: int) -> Slice | None:
    from cudalint.parse import parse
    data = text.encode("utf-8", "surrogatepass")
    if len(data) == len(text):
        def to_char(b: int) -> int:
            return b
    else:
        table: list[int] = []
        for i, ch in enumerate(text):
            table.extend([i] * len(ch.encode("utf-8", "surrogatepass")))
        table.append(len(text))

        def to_char(b: int) -> int:
            return table[min(b, len(table) - 1)]
    functions = _functions(parse(data).root_node, text, to_char)
    target = next((f for f in functions if f.body_start < changed_start and
                   changed_end < f.body_end), None)
    if target is None:
        return None
    kernels = [target] if target.is_kernel else _calling_kernels(target, functions)
    if not kernels or len(kernels) > MAX_CALLERS:
        return None
    by_name: dict[str, list[_Function]] = {}
    for f in functions:
        by_name.setdefault(f.name, []).append(f)
    keep = {id(target)} | {id(k) for k in kernels}
    todo = list(kernels) if target.is_kernel else [target, *kernels]
    todo.extend(f for f in functions if not f.is_kernel and id(f) not in keep and
                any(k.name in f.words for k in kernels))
    for f in todo:
        keep.add(id(f))
    while todo:
        f = todo.pop()
        for word in f.words:
            for g in by_name.get(word, ()):
                # other kernels never matter to this one's findings: a launcher names
                # them all, and a kernel can only launch, not call, another
                if id(g) not in keep and not g.is_kernel:
                    keep.add(id(g))
                    todo.append(g)
    pieces = []
    at = 0
    for f in functions:
        if id(f) not in keep and f.outer >= at and \
                not (f.outer <= target.start and target.end <= f.end):
            # the whole definition: nothing the kernel analysed can name it
            pieces.append(text[at:f.outer])
            pieces.append(_blanked(text[f.outer:f.end]))
            at = f.end
    pieces.append(text[at:])
    sliced = "".join(pieces)
    assert len(sliced) == len(text)
    result = lint_text(path, sliced, settings, kind)
    return Slice(result, target.start, target.end,
                 tuple((k.start, k.end) for k in kernels if k is not target))


def _calling_kernels(target: _Function, functions: list[_Function]) -> list[_Function]:
    """The kernels whose code names ``target``, directly or through functions that do
    (by name, as the slice keeps callees)."""
    reached = {id(target)}
    todo = [target]
    out: list[_Function] = []
    while todo:
        name = todo.pop().name
        for f in functions:
            if id(f) not in reached and name in f.words:
                reached.add(id(f))
                if f.is_kernel:
                    out.append(f)
                else:
                    todo.append(f)
    out.sort(key=lambda f: f.start)
    return out


def _common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:                       # binary search with C-speed slice compares
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def changed_span(old: str, new: str) -> tuple[int, int, int]:
    """(start, old_end, new_end): ``old[start:old_end]`` became ``new[start:new_end]``."""
    start = _common_prefix(old, new)
    limit = min(len(old), len(new)) - start
    suffix = _common_prefix(old[::-1][:limit], new[::-1][:limit])
    return start, len(old) - suffix, len(new) - suffix


def merge(previous: FileResult, old_text: str, new_text: str, piece: Slice,
          old_end: int, new_end: int) -> FileResult:
    """The previous findings outside the re-analysed kernel, moved by the edit, plus the
    slice's findings inside it."""
    delta = new_end - old_end
    file = SourceFile(previous.path, new_text, "cuda")
    # messages and metrics that name a line after the edit name it moved too
    edit_row = old_text.count("\n", 0, old_end) + 1
    rows = new_text.count("\n", piece.start, new_end) - old_text.count(
        "\n", piece.start, old_end)
    # the re-analysed definitions in the old text: the edited one holds the edit, the
    # calling kernels lie wholly before or after it
    old_spans = [(a, b - delta if b >= new_end else b) if a <= piece.start else
                 (a - delta, b - delta) for a, b in piece.spans]
    old_stop = piece.end - delta
    out: list[Diagnostic] = []
    for d in previous.diagnostics:
        if all((d.end_offset <= a and d.start_offset < a) or d.start_offset >= b
               for a, b in old_spans):
            out.append(_moved(d, delta if d.start_offset >= old_stop else 0, file,
                              edit_row, rows))
    out.extend(d for d in piece.result.diagnostics
               if any(a <= d.start_offset and d.end_offset <= b for a, b in piece.spans))
    out.sort(key=Diagnostic.sort_key)
    result = FileResult(previous.path, out, lines_of_code=new_text.count("\n") + 1)
    for d in out:
        result.lines[d.row] = file.line_text(d.row)
    return result


_LINE_REF = re.compile(r"\b(lines? )(\d+(?:(?:,? and |, )\d+)*)")


def _moved(d: Diagnostic, delta: int, file: SourceFile, edit_row: int, rows: int
           ) -> Diagnostic:
    message, metrics = d.message, d.metrics
    if rows:
        def shift(n: int) -> int:
            return n + rows if n > edit_row else n

        def bump(m: re.Match) -> str:
            return m.group(1) + re.sub(r"\d+", lambda k: str(shift(int(k.group()))),
                                       m.group(2))

        def value(key: str, v):
            if not ("line" in key or "row" in key):
                return v
            if isinstance(v, int) and not isinstance(v, bool):
                return shift(v)
            if isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool)
                                           for x in v):
                return [shift(x) for x in v]
            return v
        message = _LINE_REF.sub(bump, message)
        metrics = {k: value(k, v) for k, v in metrics.items()}
    if delta == 0 and file.position(d.start_offset) == (d.row, d.column) and \
            message == d.message and metrics == d.metrics:
        return d
    start, end = d.start_offset + delta, d.end_offset + delta
    row, col = file.position(start)
    end_row, end_col = file.position(end)
    fix = d.fix
    edits_rc = []
    if fix is not None:
        fix = Fix(fix.message, tuple(Edit(e.start + delta, e.end + delta, e.content)
                                     for e in fix.edits), fix.applicability)
        edits_rc = [edit_rc(e.content, file.position(e.start), file.position(e.end))
                    for e in fix.edits]
    noqa_row = None if d.noqa_row is None else d.noqa_row + (row - d.row)
    moved = replace(d, row=row, column=col, end_row=end_row, end_column=end_col,
                    start_offset=start, end_offset=end, fix=fix, noqa_row=noqa_row,
                    message=message, metrics=metrics)
    moved.fix_edits_rc = edits_rc
    return moved
