"""The language server's protocol handlers: the LSP features it registers (lifecycle,
document notifications, pushed and pulled diagnostics, code actions, hover) and what each
answers. Every handler is guarded: one that fails logs the error and answers a default. A
mixin of ``CudalintServer``."""
from __future__ import annotations

import asyncio
import functools
import inspect
import os
from typing import Any

from lsprotocol import types as lsp

from cudalint import rule_url
from cudalint.config import ConfigError, Settings
from cudalint.server.positions import SOURCE, LineIndex, minimal_edit, noqa_edit
from cudalint.server.state import CONFIG_FILES, Analysis
from cudalint.server.worker import Worker, _job_fix_all, _job_lint
from cudalint.suppressions import parse_suppressions

FIX_ALL_KIND = "source.fixAll.cudalint"


def _guard(default: Any = None):
    """A handler that fails logs the error and answers ``default``; the server lives on."""
    def wrap(fn):
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def run_async(self, *args, **kwargs):
                try:
                    return await fn(self, *args, **kwargs)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self.report_failure(fn.__name__, exc)
                    return default
            return run_async

        @functools.wraps(fn)
        def run(self, *args, **kwargs):
            try:
                return fn(self, *args, **kwargs)
            except Exception as exc:
                self.report_failure(fn.__name__, exc)
                return default
        return run
    return wrap


class ProtocolHandlers:
    """The LSP features of ``CudalintServer`` and their handlers."""

    # -- wiring -------------------------------------------------------------------------
    def _register(self) -> None:
        def f(name, options=None):
            def register(method):
                # pygls marks the handler with attributes: a plain function, not a method
                if inspect.iscoroutinefunction(method):
                    async def handler(params):
                        return await method(params)
                else:
                    def handler(params):
                        return method(params)
                handler.__name__ = method.__name__
                return self.feature(name, options)(handler)
            return register
        f(lsp.INITIALIZE)(self.on_initialize)
        f(lsp.INITIALIZED)(self.on_initialized)
        f(lsp.SHUTDOWN)(self.on_shutdown)
        f(lsp.TEXT_DOCUMENT_DID_OPEN)(self.did_open)
        f(lsp.TEXT_DOCUMENT_DID_CHANGE)(self.did_change)
        f(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))(self.did_save)
        f(lsp.TEXT_DOCUMENT_DID_CLOSE)(self.did_close)
        f(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)(self.did_change_configuration)
        f(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)(self.did_change_watched_files)
        f(lsp.TEXT_DOCUMENT_DIAGNOSTIC, lsp.DiagnosticOptions(
            identifier=SOURCE, inter_file_dependencies=False,
            workspace_diagnostics=False))(self.pull_diagnostics)
        f(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL_KIND],
            resolve_provider=True))(self.code_action)
        f(lsp.CODE_ACTION_RESOLVE)(self.resolve_code_action)
        f(lsp.TEXT_DOCUMENT_HOVER)(self.hover)
        self._answer_malformed()

    def _answer_malformed(self) -> None:
        """A request pygls cannot read (params of the wrong shape, no "jsonrpc") gets a
        JSON-RPC error response: pygls only logs it, and the client waits for its timeout.
        The reader calls ``structure_message`` for each dict of a message, the request
        itself last (the only one with "method" and "id")."""
        from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
        protocol = self.protocol
        structure = protocol.structure_message

        def checked(data):
            is_request = isinstance(data, dict) and "method" in data and \
                isinstance(data.get("id"), (int, str)) and not isinstance(data["id"], bool)
            if is_request and data.get("jsonrpc") != "2.0":
                protocol._send_response(data["id"], error=JsonRpcInvalidRequest(
                    "not a JSON-RPC 2.0 request").to_response_error())
                raise JsonRpcInvalidRequest()
            try:
                return structure(data)
            except JsonRpcException as exc:
                if is_request:
                    protocol._send_response(data["id"], error=exc.to_response_error())
                raise
        protocol.structure_message = checked

    def report_server_error(self, error: Exception, source) -> None:
        """A body that is not JSON gets JSON-RPC's parse error (id null), then pygls's
        default report."""
        import json
        if isinstance(error, json.JSONDecodeError):
            try:     # a dict: pygls's message classes would leave out the null id
                self.protocol._send_data({"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32700, "message": f"Parse error: {error}"}})
            except Exception:
                pass
        super().report_server_error(error, source)   # type: ignore[misc]

    # -- lifecycle ------------------------------------------------------------------------
    @_guard()
    def on_initialize(self, params: lsp.InitializeParams) -> None:
        try:
            self._apply_options(params.initialization_options)
        except ConfigError as exc:
            self._show_once(f"cudalint: {exc}")

    @_guard()
    def on_initialized(self, params: lsp.InitializedParams) -> None:
        self.worker.start()
        self.fast_worker.start()
        self._warm_up()
        caps = self.client_capabilities
        watched = caps and caps.workspace and caps.workspace.did_change_watched_files
        if watched and watched.dynamic_registration:
            watchers = [lsp.FileSystemWatcher(glob_pattern=f"**/{name}")
                        for name in CONFIG_FILES]
            self.client_register_capability(lsp.RegistrationParams(registrations=[
                lsp.Registration(id="cudalint-config-files",
                                 method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                 register_options=lsp.DidChangeWatchedFilesRegistrationOptions(
                                     watchers=watchers))]))

    def _warm_up(self) -> None:
        """Workers in threads import and compile here, before the first document; a
        worker process starts warm (forked from the preloaded forkserver, or warmed by
        its initializer)."""
        async def warm(worker: Worker):
            try:
                await worker.call(_job_lint, "warm-up.cu", "__global__ void k() {}\n",
                                  Settings(), "cuda")
            except Exception:
                pass
        for worker in (self.worker, self.fast_worker):
            if not worker.use_process:
                asyncio.ensure_future(warm(worker))

    @_guard()
    def on_shutdown(self, params: None) -> None:
        for task in list(self._pending.values()) + list(self._full_pending.values()):
            task.cancel()
        self.worker.stop()
        self.fast_worker.stop()

    # -- push -------------------------------------------------------------------------------
    def schedule(self, uri: str, delay_ms: int) -> None:
        if self.pull_mode:
            return
        old = self._pending.pop(uri, None)
        if old is not None:
            old.cancel()
        task = asyncio.ensure_future(self._publish_later(uri, delay_ms))
        self._pending[uri] = task

    async def _publish_later(self, uri: str, delay_ms: int) -> None:
        try:
            if delay_ms > 0:
                await asyncio.sleep(delay_ms / 1000)
            analysis = await self.analyse(uri)
            doc = self._document(uri)
            if analysis is None or doc is None or doc.version != analysis.key[1]:
                return              # superseded: the newer version publishes
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                uri=uri, diagnostics=analysis.items, version=doc.version))
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            self.report_failure("publishing diagnostics", exc)
        finally:
            if self._pending.get(uri) is asyncio.current_task():
                self._pending.pop(uri, None)

    def _relint_all(self) -> None:
        self._resolver = None
        if self.pull_mode:
            caps = self.client_capabilities
            ws = caps and caps.workspace
            if ws and ws.diagnostics and ws.diagnostics.refresh_support:
                self.workspace_diagnostic_refresh(None)
            return
        for uri in list(self.workspace.text_documents):
            self.schedule(uri, 0)

    # -- document notifications -----------------------------------------------------------
    @_guard()
    def did_open(self, params: lsp.DidOpenTextDocumentParams) -> None:
        self._resolver = None          # config files may have changed meanwhile
        self.schedule(params.text_document.uri, 0)

    @_guard()
    def did_change(self, params: lsp.DidChangeTextDocumentParams) -> None:
        self.schedule(params.text_document.uri, self.options.debounce_ms)
        self.relint_dependents(params.text_document.uri, self.options.debounce_ms)

    @_guard()
    def did_save(self, params: lsp.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if any(uri.endswith("/" + name) for name in CONFIG_FILES):
            self._relint_all()
        else:
            self._resolver = None      # a config saved outside the editor counts too
            self.schedule(uri, 0)
            self.relint_dependents(uri, 0)

    def relint_dependents(self, uri: str, delay_ms: int) -> None:
        """The open documents whose last result used the facts of ``uri``'s file (a
        header they include, a file launching their kernels) are analysed again: their
        own text did not change, their diagnostics may have (``k<1>`` became ``k<3>``)."""
        path = self._path_of(uri)
        if path is None:
            return
        full = os.path.abspath(path)
        dependents = [u for u, a in list(self._analyses.items())
                      if u != uri and full in a.deps]
        for u in dependents:
            self._analyses.pop(u, None)
        if not dependents:
            return
        if self.pull_mode:
            caps = self.client_capabilities
            ws = caps and caps.workspace
            if ws and ws.diagnostics and ws.diagnostics.refresh_support:
                self.workspace_diagnostic_refresh(None)
            return
        for u in dependents:
            self.schedule(u, delay_ms)

    @_guard()
    def did_close(self, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        for pending in (self._pending, self._full_pending):
            task = pending.pop(uri, None)
            if task is not None:
                task.cancel()
        self._analyses.pop(uri, None)
        if not self.pull_mode:
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                uri=uri, diagnostics=[]))

    @_guard()
    def did_change_configuration(self, params: lsp.DidChangeConfigurationParams) -> None:
        raw = params.settings
        if isinstance(raw, dict) and ("cudalint" in raw or raw):
            try:
                self._apply_options(raw.get("cudalint", raw))
            except ConfigError as exc:
                self._show_once(f"cudalint: {exc}")
                return
        self._relint_all()

    @_guard()
    def did_change_watched_files(self, params: lsp.DidChangeWatchedFilesParams) -> None:
        self._relint_all()

    # -- pull -------------------------------------------------------------------------------
    @_guard()
    async def pull_diagnostics(self, params: lsp.DocumentDiagnosticParams):
        analysis = await self.analyse(params.text_document.uri)
        if analysis is None:
            return lsp.RelatedFullDocumentDiagnosticReport(items=[])
        if params.previous_result_id == analysis.result_id:
            return lsp.RelatedUnchangedDocumentDiagnosticReport(result_id=analysis.result_id)
        return lsp.RelatedFullDocumentDiagnosticReport(items=analysis.items,
                                                       result_id=analysis.result_id)

    # -- code actions -----------------------------------------------------------------------
    def _workspace_edit(self, uri: str, version, index: LineIndex, edits) -> lsp.WorkspaceEdit:
        text_edits = [lsp.TextEdit(range=index.range(e.start, e.end), new_text=e.content)
                      for e in sorted(edits, key=lambda e: (e.start, e.end))]
        if self._supports_document_changes():
            return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
                text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri,
                                                                          version=version),
                edits=text_edits)])
        return lsp.WorkspaceEdit(changes={uri: text_edits})

    @_guard(default=[])
    async def code_action(self, params: lsp.CodeActionParams):
        uri = params.text_document.uri
        analysis = await self.analyse(uri)
        if analysis is None or analysis.kind is None:
            return []
        only = list(params.context.only or [])

        def wanted(kind: str) -> bool:
            return not only or any(kind == o or kind.startswith(f"{o}.") for o in only)

        version = analysis.key[1]
        index = analysis.index
        lo = index.offset(params.range.start)
        hi = index.offset(params.range.end)
        actions: list[lsp.CodeAction] = []
        if wanted(lsp.CodeActionKind.QuickFix.value):
            fixes, noqa = [], []
            seen: set[tuple[str, int]] = set()
            for d, item in zip(analysis.result.visible, analysis.items):
                if not (d.start_offset <= hi and lo <= d.end_offset):
                    continue
                if d.fix is not None:
                    unsafe = "" if d.fix.is_safe else " (unsafe)"
                    fixes.append(lsp.CodeAction(
                        title=f"cudalint ({d.code}): {d.fix.message}{unsafe}",
                        kind=lsp.CodeActionKind.QuickFix, diagnostics=[item],
                        is_preferred=d.fix.is_safe,
                        edit=self._workspace_edit(uri, version, index, d.fix.edits)))
                row = d.noqa_row or d.row
                if d.code in ("CL001", "CL002") or (d.code, row) in seen:
                    continue
                seen.add((d.code, row))
                edit = noqa_edit(analysis.text, analysis.kind, row, d.code)
                if edit is not None:
                    noqa.append(lsp.CodeAction(
                        title=f"cudalint ({d.code}): Disable for this line",
                        kind=lsp.CodeActionKind.QuickFix, diagnostics=[item],
                        edit=self._workspace_edit(uri, version, index, [edit])))
            actions.extend(fixes + noqa)
        explicit = bool(only) and wanted(FIX_ALL_KIND)
        if wanted(FIX_ALL_KIND) and (explicit or self._supports_resolve()):
            from cudalint.fixes import applicable
            if any(applicable(d, self.options.unsafe_fixes) for d in analysis.result.diagnostics):
                action = lsp.CodeAction(title="cudalint: Fix all auto-fixable problems",
                                        kind=FIX_ALL_KIND,
                                        data={"uri": uri, "version": version})
                if explicit or not self._supports_resolve():
                    action.edit = await self._fix_all_edit(uri, analysis)
                    if action.edit is None:
                        return actions
                actions.append(action)
        return actions

    async def _fix_all_edit(self, uri: str, analysis: Analysis) -> lsp.WorkspaceEdit | None:
        path = self._path_of(uri)
        settings = self.settings_for(path)
        fixed = await self.worker.call(_job_fix_all, path or "-", analysis.text, settings,
                                       analysis.kind, self.options.unsafe_fixes)
        if fixed is None or fixed == analysis.text:
            return None
        edit = minimal_edit(analysis.text, fixed)
        return self._workspace_edit(uri, analysis.key[1], analysis.index, [edit])

    @_guard()
    async def resolve_code_action(self, action: lsp.CodeAction) -> lsp.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri")
        if action.kind == FIX_ALL_KIND and uri and action.edit is None:
            analysis = await self.analyse(uri)
            if analysis is not None and analysis.kind is not None:
                action.edit = await self._fix_all_edit(uri, analysis) or lsp.WorkspaceEdit()
        return action

    # -- hover ------------------------------------------------------------------------------
    @_guard()
    async def hover(self, params: lsp.HoverParams) -> lsp.Hover | None:
        analysis = await self.analyse(params.text_document.uri)
        if analysis is None:
            return None
        at = analysis.index.offset(params.position)
        from cudalint.rule import all_rules
        rules = all_rules()
        parts: list[str] = []
        span: tuple[int, int] | None = None
        for d in analysis.result.visible:
            if d.start_offset <= at <= max(d.end_offset, d.start_offset + 1):
                parts.append(_hover_text(d.code, rules.get(d.code), d.message))
                span = span or (d.start_offset, d.end_offset)
        if not parts:
            # a code in a noqa comment
            line_no = analysis.text.count("\n", 0, at) + 1
            line_start = analysis.text.rfind("\n", 0, at) + 1
            line = analysis.text[line_start:analysis.text.find("\n", at) % (len(
                analysis.text) + 1) if "\n" in analysis.text[at:] else len(analysis.text)]
            sup = parse_suppressions(line)
            for directive in list(sup.lines.values()) + sup.file:
                for code, s, e in directive.code_spans:
                    if line_start + s <= at <= line_start + e and code in rules:
                        parts.append(_hover_text(code, rules[code], None))
                        span = (line_start + s, line_start + e)
            del line_no
        if not parts:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown,
                                                    value="\n\n---\n\n".join(parts)),
                         range=analysis.index.range(*span) if span else None)


def _hover_text(code: str, rule, message: str | None) -> str:
    title = f"**{code}** `{rule.name}`" if rule is not None else f"**{code}**"
    out = [title]
    if message:
        out.append(message)
    if rule is not None and rule.doc():
        out.append(rule.doc())
    out.append(f"[{code} documentation]({rule_url(code)})")
    return "\n\n".join(out)
