"""The language server's document and workspace state: the settings of each file (its
closest configuration with the editor's options on top), the open documents' texts, and
their analyses, cached per text, settings and position encoding; one analysis in flight per
key. A mixin of ``CudalintServer``: it reads the workspace, the options and the workers from
``self``."""
from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from cudalint.config import ConfigError, ConfigResolver, Settings
from cudalint.engine import FileResult
from cudalint.server.options import parse_options
from cudalint.server.positions import LineIndex, to_lsp, unread_hint
from cudalint.server.worker import (WorkerFailure, _failure_diagnostic, _job_lint,
                                     _job_lint_open)
from cudalint.sources.base import file_kind

CUDA_LANGUAGE_IDS = frozenset({"cuda", "cuda-cpp", "cuda-c++", "cuda_cpp"})
PYTHON_LANGUAGE_IDS = frozenset({"python"})
CONFIG_FILES = ("pyproject.toml", "cudalint.toml", ".cudalint.toml")


@dataclass
class Analysis:
    key: tuple
    text: str
    kind: str | None
    result: FileResult
    items: list[lsp.Diagnostic]
    index: LineIndex
    partial: bool = False      # the edited kernel re-analysed, the rest moved along
    failed: bool = False       # the worker did not finish
    # the other files whose facts the result used (headers, launchers): a change to one
    # of them re-lints the document (handlers.relint_dependents)
    deps: tuple[str, ...] = ()

    @property
    def result_id(self) -> str:
        return hashlib.sha1(repr(self.key).encode()).hexdigest()[:16]


class DocumentState:
    """Settings, documents and analyses of ``CudalintServer``."""

    def _apply_options(self, raw: Any) -> None:
        self.options = parse_options(raw)
        self.worker.timeout = self.fast_worker.timeout = self.options.timeout_s
        self._resolver = None

    # -- settings -------------------------------------------------------------------------
    def _workspace_root(self) -> Path:
        try:
            root = self.workspace.root_path
        except Exception:
            root = None
        return Path(root) if root else Path.cwd()

    def resolver(self) -> ConfigResolver:
        if self._resolver is None:
            forced = None
            if self.options.configuration:
                forced = Path(self.options.configuration).expanduser()
                if not forced.is_absolute():
                    forced = self._workspace_root() / forced
            from cudalint.selection import check_settings
            self._resolver = ConfigResolver(dict(self.options.overrides), forced,
                                            check=check_settings)
        return self._resolver

    def settings_for(self, path: str | None) -> Settings:
        target = Path(path) if path else self._workspace_root() / "_"
        try:
            return self.resolver().for_path(target)
        except ConfigError as exc:
            self._show_once(f"cudalint: {exc} (using the default settings)")
            return replace(Settings(root=str(self._workspace_root())),
                           **self.options.overrides)

    # -- analysis -------------------------------------------------------------------------
    def _document(self, uri: str):
        try:
            return self.workspace.get_text_document(uri)
        except Exception:
            return None

    @staticmethod
    def _path_of(uri: str) -> str | None:
        if not uri.startswith("file:"):
            return None
        try:
            return to_fs_path(uri)
        except Exception:
            return None

    @staticmethod
    def kind_of(path: str | None, language_id: str | None) -> str | None:
        kind = file_kind(path) if path else None
        if kind == "notebook":
            return None   # positions would be the cells', not the JSON's (docs/editors.md)
        if kind is not None:
            return kind
        lang = (language_id or "").lower()
        if lang in CUDA_LANGUAGE_IDS:
            return "cuda"
        if lang in PYTHON_LANGUAGE_IDS:
            return "python"
        return None

    def _key(self, uri: str, doc) -> tuple:
        path = self._path_of(uri)
        settings = self.settings_for(path)
        kind = self.kind_of(path, getattr(doc, "language_id", None))
        text = doc.source
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"),
                                 digest_size=12).hexdigest()
        return (uri, doc.version, digest, settings.fingerprint(), kind,
                self._encoding()), path, settings, kind, text

    def cached(self, uri: str) -> Analysis | None:
        return self._analyses.get(uri)

    async def analyse(self, uri: str, full: bool = False) -> Analysis | None:
        """The analysis of the document's current text (cached per text and settings).

        After an edit inside one kernel only that kernel is analysed again (``partial``)
        and a whole-file analysis follows once the edits pause; ``full=True`` waits for
        the whole-file one."""
        doc = self._document(uri)
        if doc is None:
            return None
        key, path, settings, kind, text = self._key(uri, doc)
        current = self._analyses.get(uri)
        if current is not None and current.key == key and (not full or not current.partial):
            return current
        previous = None if full else current
        flight = (key, full)
        running = self._inflight.get(flight)
        if running is None:
            running = asyncio.ensure_future(self._run_analysis(uri, key, path, settings,
                                                               kind, text, previous))
            self._inflight[flight] = running
            running.add_done_callback(lambda _f, k=flight: self._inflight.pop(k, None))
        analysis = await asyncio.shield(running)
        if analysis is not None:
            latest = self._analyses.get(uri)
            if latest is None or latest.key != key or (latest.partial and not analysis.partial):
                self._analyses[uri] = analysis
            if analysis.partial:
                self._schedule_full(uri)
        return analysis

    def _wanted(self, uri: str, version) -> Callable[[], bool]:
        def wanted() -> bool:
            doc = self._document(uri)
            return doc is not None and doc.version == version
        return wanted

    async def _run_analysis(self, uri: str, key: tuple, path: str | None,
                            settings: Settings, kind: str | None, text: str,
                            previous: Analysis | None = None) -> Analysis | None:
        name = path or "-"
        result: FileResult | None
        failed = False
        deps: tuple[str, ...] = ()
        if previous is not None and kind == "cuda":
            fast = await self._fast(uri, key, name, settings, text, previous)
            if fast is not None:
                return fast
        excluded = False
        if path is not None and kind is not None:
            from cudalint.discovery import _excluded
            try:
                excluded = _excluded(Path(path), settings)
            except Exception:
                excluded = False
        if kind is None or excluded:
            result = FileResult(name)
        else:
            try:
                if kind == "cuda" and path is not None:
                    got = await self.worker.call(_job_lint_open, name, text, settings,
                                                 kind, self._open_cuda_texts(),
                                                 wanted=self._wanted(uri, key[1]))
                    result, deps = got if got is not None else (None, ())
                else:
                    result = await self.worker.call(_job_lint, name, text, settings, kind,
                                                    wanted=self._wanted(uri, key[1]))
            except WorkerFailure as exc:
                result = FileResult(name)
                result.diagnostics.append(_failure_diagnostic(name, str(exc)))
                failed = True
            if result is None:
                return None        # the text changed while waiting: a newer run follows
        index = LineIndex(text, self._encoding())
        items = [to_lsp(d, index) for d in result.visible] + \
            [unread_hint(u, index) for u in result.unread]
        return Analysis(key, text, kind, result, items, index, failed=failed, deps=deps)

    def _open_cuda_texts(self) -> dict[str, str]:
        """path -> text of the open CUDA documents (the project of a linted file)."""
        out = {}
        for uri, doc in list(self.workspace.text_documents.items()):
            path = self._path_of(uri)
            if path is not None and self.kind_of(path, doc.language_id) == "cuda":
                out[path] = doc.source
        return out
