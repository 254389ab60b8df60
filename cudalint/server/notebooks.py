"""The language server's notebook documents (LSP 3.17 notebook sync): a notebook's Python
code cells, in order, are linted as one Python text -- each cell blanked of IPython syntax
and followed by a newline, as ``cudalint nb.ipynb`` reads the file
(cudalint/sources/notebook.py) -- and every finding is told to the cell it lies in, at
positions of that cell's own text, under the cell's URI. A cell is then a document like
any other for the handlers: ``analyse(cell_uri)`` answers a view of the notebook's analysis
restricted to the cell, so pushed and pulled diagnostics, quick fixes, "Disable for this
line" and hover work inside cells unchanged; "fix all" fixes the whole notebook, as
``cudalint --fix`` does, and edits each changed cell. A mixin of ``CudalintServer``, placed
before ``ProtocolHandlers`` so that its ``analyse`` and ``_fix_all_edit`` come first."""
from __future__ import annotations

import asyncio
import bisect
import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path

from lsprotocol import types as lsp

from cudalint.diagnostics import Diagnostic, Edit, Fix
from cudalint.engine import FileResult
from cudalint.server.positions import LineIndex, minimal_edit, to_lsp, unread_hint
from cudalint.server.state import PYTHON_LANGUAGE_IDS, Analysis
from cudalint.server.worker import WorkerFailure, _failure_diagnostic, _job_fix_all, _job_lint
from cudalint.sources.notebook import blank

# what the server asks for: the Python cells of notebooks of any type ("*"; a filter with
# no notebook at all is what ruff sends, but lsprotocol's own converter, which pygls-based
# clients use, cannot read one)
NOTEBOOK_SYNC = lsp.NotebookDocumentSyncOptions(
    notebook_selector=[lsp.NotebookDocumentFilterWithCells(
        notebook="*", cells=[lsp.NotebookCellLanguage(language="python")])],
    save=True)


@dataclass
class _Cells:
    """A notebook's Python code cells as one text: URIs, each cell's text (line breaks
    made ``\\n``: rows and columns unchanged), where each starts in :attr:`python`."""
    uris: list[str]
    versions: list[int]
    texts: list[str]
    python: str
    starts: list[int]

    @classmethod
    def of(cls, cells: list[tuple[str, int, str]]) -> "_Cells":
        uris, versions, texts, starts = [], [], [], []
        parts: list[str] = []
        at = 0
        for uri, version, source in cells:
            text = source.replace("\r\n", "\n").replace("\r", "\n")
            uris.append(uri)
            versions.append(version)
            texts.append(text)
            starts.append(at)
            body = blank(text)              # every row keeps its length
            parts.append(body + "\n")
            at += len(body) + 1
        return cls(uris, versions, texts, "".join(parts), starts)

    def cell_of(self, offset: int) -> int:
        return max(0, bisect.bisect_right(self.starts, offset) - 1)

    def row_starts(self) -> list[int]:
        """The first row of each cell in :attr:`python` (1-based)."""
        rows, row = [], 1
        for text in self.texts:
            rows.append(row)
            row += text.count("\n") + 1
        return rows


def _local(d: Diagnostic, k: int, cells: _Cells, first_row: int) -> Diagnostic:
    """``d`` (offsets and rows of the notebook's Python text) told in cell ``k``, whose
    first row there is ``first_row``."""
    base, text = cells.starts[k], cells.texts[k]
    start = min(max(d.start_offset - base, 0), len(text))
    end = min(max(d.end_offset - base, start), len(text))   # a span past the cell ends there
    row = text.count("\n", 0, start) + 1
    end_row = text.count("\n", 0, end) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    end_column = end - (text.rfind("\n", 0, end) + 1) + 1
    fix = d.fix
    if fix is not None:
        edits = tuple(Edit(e.start - base, e.end - base, e.content) for e in fix.edits)
        inside = all(0 <= e.start <= e.end <= len(text) for e in edits)
        fix = Fix(fix.message, edits, fix.applicability) if inside else None
    noqa_row = None if d.noqa_row is None else d.noqa_row - first_row + 1
    return replace(d, start_offset=start, end_offset=end, row=row, column=column,
                   end_row=end_row, end_column=end_column, fix=fix, noqa_row=noqa_row)


class NotebookDocuments:
    """Notebook documents of ``CudalintServer``: notifications, analysis, cell views."""

    def _register_notebooks(self) -> None:
        for name, method in ((lsp.NOTEBOOK_DOCUMENT_DID_OPEN, self.notebook_did_open),
                             (lsp.NOTEBOOK_DOCUMENT_DID_CHANGE, self.notebook_did_change),
                             (lsp.NOTEBOOK_DOCUMENT_DID_SAVE, self.notebook_did_save),
                             (lsp.NOTEBOOK_DOCUMENT_DID_CLOSE, self.notebook_did_close)):
            def handler(params, method=method):
                try:
                    method(params)
                except Exception as exc:        # the server lives on (handlers._guard)
                    self.report_failure(method.__name__, exc)
            handler.__name__ = method.__name__
            self.feature(name)(handler)

    # -- notifications (pygls has updated the workspace's notebook and cells first) ---------
    def notebook_did_open(self, params: lsp.DidOpenNotebookDocumentParams) -> None:
        self._resolver = None
        self._schedule_cells(params.notebook_document.uri, 0)

    def notebook_did_change(self, params: lsp.DidChangeNotebookDocumentParams) -> None:
        structure = params.change.cells and params.change.cells.structure
        self._forget_cells([c.uri for c in (structure and structure.did_close) or []])
        self._schedule_cells(params.notebook_document.uri, self.options.debounce_ms)

    def notebook_did_save(self, params: lsp.DidSaveNotebookDocumentParams) -> None:
        self._resolver = None
        self._schedule_cells(params.notebook_document.uri, 0)

    def notebook_did_close(self, params: lsp.DidCloseNotebookDocumentParams) -> None:
        self._notebook_analyses.pop(params.notebook_document.uri, None)
        self._forget_cells([c.uri for c in params.cell_text_documents])

    def _forget_cells(self, uris: list[str]) -> None:
        for uri in uris:
            for pending in (self._pending, self._full_pending):
                task = pending.pop(uri, None)
                if task is not None:
                    task.cancel()
            self._analyses.pop(uri, None)
            if not self.pull_mode:
                self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                    uri=uri, diagnostics=[]))

    def _schedule_cells(self, notebook_uri: str, delay_ms: int) -> None:
        """Every code cell published again: a change in one cell can change another's
        findings (a kernel string defined in one cell, launched in the next)."""
        if self.pull_mode:
            caps = self.client_capabilities
            ws = caps and caps.workspace
            if ws and ws.diagnostics and ws.diagnostics.refresh_support:
                self.workspace_diagnostic_refresh(None)
            return
        notebook = self._notebook(notebook_uri=notebook_uri)
        for cell in (notebook.cells if notebook is not None else []):
            if cell.kind == lsp.NotebookCellKind.Code:
                self.schedule(cell.document, delay_ms)

    # -- analysis -------------------------------------------------------------------------
    def _notebook(self, **uri):
        try:
            return self.workspace.get_notebook_document(**uri)
        except Exception:
            return None

    async def analyse(self, uri: str, full: bool = False) -> Analysis | None:
        """A cell of an open notebook: the notebook's analysis as seen from the cell."""
        notebook = self._notebook(cell_uri=uri)
        if notebook is None:
            return await super().analyse(uri, full)      # type: ignore[misc]
        views = await self._analyse_notebook(notebook.uri)
        return None if views is None else views.get(uri)

    def _cells_of(self, notebook) -> _Cells:
        found = []
        for cell in notebook.cells:
            doc = self._document(cell.document) if cell.kind == lsp.NotebookCellKind.Code \
                else None
            language = (getattr(doc, "language_id", None) or "python").lower()
            if doc is not None and language in PYTHON_LANGUAGE_IDS:
                found.append((cell.document, doc.version, doc.source))
        return _Cells.of(found)

    async def _analyse_notebook(self, notebook_uri: str) -> dict[str, Analysis] | None:
        notebook = self._notebook(notebook_uri=notebook_uri)
        if notebook is None:
            return None
        cells = self._cells_of(notebook)
        path = self._path_of(notebook_uri)
        settings = self.settings_for(path)
        digest = hashlib.blake2b(json.dumps([cells.uris, cells.texts]).encode(
            "utf-8", "surrogatepass"), digest_size=12).hexdigest()
        key = (notebook_uri, digest, settings.fingerprint(), self._encoding())
        cached = self._notebook_analyses.get(notebook_uri)
        if cached is not None and cached[0] == key:
            return cached[1]
        flight = ("notebook", key)
        running = self._inflight.get(flight)
        if running is None:
            running = asyncio.ensure_future(self._run_notebook(key, path, settings, cells))
            self._inflight[flight] = running
            running.add_done_callback(lambda _f, k=flight: self._inflight.pop(k, None))
        views = await asyncio.shield(running)
        if views is not None:
            self._notebook_analyses[notebook_uri] = (key, views)
        return views

    async def _run_notebook(self, key: tuple, path: str | None, settings, cells: _Cells
                            ) -> dict[str, Analysis] | None:
        name = path or "-"
        failed = False
        excluded = False
        if path is not None:
            from cudalint.discovery import _excluded
            try:
                excluded = _excluded(Path(path), settings)
            except Exception:
                excluded = False
        if excluded or not cells.uris:
            result = FileResult(name)
        else:
            try:
                result = await self.worker.call(_job_lint, name, cells.python, settings,
                                                "python")
            except WorkerFailure as exc:
                result = FileResult(name)
                result.diagnostics.append(_failure_diagnostic(name, str(exc)))
                failed = True
        rows = cells.row_starts()
        per_cell: list[list[Diagnostic]] = [[] for _ in cells.uris]
        for d in result.diagnostics:
            k = cells.cell_of(d.start_offset)
            if per_cell:
                per_cell[k].append(_local(d, k, cells, rows[k]))
        unread: list[list[tuple[int, int, str]]] = [[] for _ in cells.uris]
        for row, column, message in result.unread:
            k = max(0, bisect.bisect_right(rows, row) - 1)
            if unread:
                unread[k].append((row - rows[k] + 1, column, message))
        views: dict[str, Analysis] = {}
        for k, uri in enumerate(cells.uris):
            text = blank(cells.texts[k])      # what noqa edits and hover read
            index = LineIndex(text, self._encoding())
            part = FileResult(name, per_cell[k], error=result.error)
            part.unread = unread[k]
            items = [to_lsp(d, index) for d in part.visible] + \
                [unread_hint(u, index) for u in part.unread]
            views[uri] = Analysis((uri, cells.versions[k], *key), text, "python", part,
                                  items, index, failed=failed)
        return views

    # -- fix all: the notebook's fixes, as `cudalint --fix nb.ipynb`, cell by cell ------------
    async def _fix_all_edit(self, uri: str, analysis: Analysis) -> lsp.WorkspaceEdit | None:
        notebook = self._notebook(cell_uri=uri)
        if notebook is None:
            return await super()._fix_all_edit(uri, analysis)   # type: ignore[misc]
        cells = self._cells_of(notebook)
        raw = {"cells": [{"cell_type": "code", "metadata": {}, "source": text}
                         for text in cells.texts], "metadata": {}}
        before = json.dumps(raw)
        path = self._path_of(notebook.uri)
        fixed = await self.worker.call(_job_fix_all, path or "-", before,
                                       self.settings_for(path), "notebook",
                                       self.options.unsafe_fixes)
        if fixed is None or fixed == before:
            return None
        after = [c["source"] for c in json.loads(fixed)["cells"]]
        changes = []
        for k, (old, new) in enumerate(zip(cells.texts, after)):
            if isinstance(new, list):
                new = "".join(new)
            if new != old:
                index = LineIndex(old, self._encoding())
                e = minimal_edit(old, new)
                changes.append((cells.uris[k], cells.versions[k],
                                [lsp.TextEdit(range=index.range(e.start, e.end),
                                              new_text=e.content)]))
        if not changes:
            return None
        if self._supports_document_changes():
            return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
                text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=u, version=v),
                edits=edits) for u, v, edits in changes])
        return lsp.WorkspaceEdit(changes={u: edits for u, _, edits in changes})
