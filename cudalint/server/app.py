"""The language server itself: ``CudalintServer`` (pygls) made of the protocol handlers,
the incremental path and the document state, with what it negotiated with the client, and
``serve``, which runs it on stdin/stdout (``cudalint server``)."""
from __future__ import annotations

import asyncio
import logging
import os
import sys

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from cudalint import __version__
from cudalint.config import ConfigResolver
from cudalint.server.handlers import ProtocolHandlers
from cudalint.server.incremental import IncrementalPath
from cudalint.server.notebooks import NOTEBOOK_SYNC, NotebookDocuments
from cudalint.server.options import ServerOptions
from cudalint.server.state import Analysis, DocumentState
from cudalint.server.worker import DEFAULT_TIMEOUT_S, Worker

log = logging.getLogger("cudalint.server")


class CudalintServer(NotebookDocuments, ProtocolHandlers, IncrementalPath, DocumentState,
                     LanguageServer):
    def __init__(self, use_process: bool = True):
        super().__init__("cudalint", __version__,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=NOTEBOOK_SYNC)
        self.options = ServerOptions()
        self.worker = Worker(DEFAULT_TIMEOUT_S, use_process)        # whole files
        self.fast_worker = Worker(DEFAULT_TIMEOUT_S, use_process,   # edited kernels
                                  compile_all=True)
        self._full_pending: dict[str, asyncio.Task] = {}
        self._resolver: ConfigResolver | None = None
        self._analyses: dict[str, Analysis] = {}
        self._inflight: dict[tuple, asyncio.Future] = {}
        self._pending: dict[str, asyncio.Task] = {}
        self._reported: set[str] = set()
        self._notebook_analyses: dict[str, tuple] = {}    # notebook URI -> (key, cell views)
        self._register()
        self._register_notebooks()

    def report_failure(self, where: str, exc: BaseException) -> None:
        message = f"cudalint: {where} failed: {type(exc).__name__}: {exc}"
        log.exception(message) if sys.exc_info()[0] else log.error(message)
        try:
            self.window_log_message(lsp.LogMessageParams(lsp.MessageType.Error, message))
        except Exception:
            pass

    def _show_once(self, message: str, kind=lsp.MessageType.Error) -> None:
        if message in self._reported:
            return
        self._reported.add(message)
        try:
            self.window_show_message(lsp.ShowMessageParams(kind, message))
        except Exception:
            pass

    # -- capabilities -------------------------------------------------------------------
    @property
    def pull_mode(self) -> bool:
        if self.options.diagnostic_mode != "auto":
            return self.options.diagnostic_mode == "pull"
        caps = self.client_capabilities
        return bool(caps and caps.text_document and caps.text_document.diagnostic)

    def _supports_document_changes(self) -> bool:
        caps = self.client_capabilities
        return bool(caps and caps.workspace and caps.workspace.workspace_edit and
                    caps.workspace.workspace_edit.document_changes)

    def _supports_resolve(self) -> bool:
        caps = self.client_capabilities
        action = caps and caps.text_document and caps.text_document.code_action
        support = action and action.resolve_support
        return bool(support and "edit" in (support.properties or []))

    def _encoding(self) -> str:
        try:
            return str(self.workspace.position_encoding or "utf-16")
        except Exception:
            return "utf-16"


def serve(use_process: bool = True) -> None:
    """Run the language server on stdin/stdout until the client says exit."""
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("CUDALINT_LOG", "WARNING"))
    server = CudalintServer(use_process=use_process)
    try:
        server.start_io()
    finally:
        server.worker.stop()
