"""The language server's incremental path: after an edit inside one kernel, the previous
analysis is moved along the edit and that kernel alone is analysed again (a slice of the
file, ``cudalint.incremental``) in the fast worker; the whole file is analysed again once
the edits pause (``fullDelay``) and replaces the quick result. A mixin of
``CudalintServer``."""
from __future__ import annotations

import asyncio

from lsprotocol import types as lsp

from cudalint.config import Settings
from cudalint.server.positions import LineIndex, to_lsp
from cudalint.server.state import Analysis
from cudalint.server.worker import WorkerFailure, _job_slice


class IncrementalPath:
    """The edited kernel re-analysed alone, then the whole file after a pause."""

    async def _fast(self, uri: str, key: tuple, name: str, settings: Settings, text: str,
                    previous: Analysis) -> Analysis | None:
        """The previous analysis moved along an edit inside one kernel, with that kernel
        analysed again; None when the edit is elsewhere (the whole file is analysed)."""
        from cudalint.incremental import changed_span, merge
        if previous.failed or previous.key[3:] != key[3:] or previous.kind != "cuda":
            return None
        start, old_end, new_end = changed_span(previous.text, text)
        if start == old_end == new_end:
            result = previous.result
        else:
            try:
                piece = await self.fast_worker.call(_job_slice, name, text, settings, "cuda",
                                                    start, new_end,
                                                    wanted=self._wanted(uri, key[1]))
            except WorkerFailure:
                return None
            if piece is None:
                return None
            result = merge(previous.result, previous.text, text, piece, old_end, new_end)
        index = LineIndex(text, self._encoding())
        items = [to_lsp(d, index) for d in result.visible]
        return Analysis(key, text, "cuda", result, items, index, partial=True,
                        deps=previous.deps)

    def _schedule_full(self, uri: str) -> None:
        old = self._full_pending.pop(uri, None)
        if old is not None:
            old.cancel()
        self._full_pending[uri] = asyncio.ensure_future(self._full_later(uri))

    async def _full_later(self, uri: str) -> None:
        try:
            await asyncio.sleep(self.options.full_delay_ms / 1000)
            analysis = await self.analyse(uri, full=True)
            doc = self._document(uri)
            if analysis is None or doc is None or doc.version != analysis.key[1]:
                return
            if self.pull_mode:
                caps = self.client_capabilities
                ws = caps and caps.workspace
                if ws and ws.diagnostics and ws.diagnostics.refresh_support:
                    self.workspace_diagnostic_refresh(None)
            else:
                self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                    uri=uri, diagnostics=analysis.items, version=doc.version))
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            self.report_failure("whole-file analysis", exc)
        finally:
            if self._full_pending.get(uri) is asyncio.current_task():
                self._full_pending.pop(uri, None)
