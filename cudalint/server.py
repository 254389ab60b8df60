"""``cudalint server``: the language server (stdio), on pygls and lsprotocol.

* Diagnostics are pushed (``textDocument/publishDiagnostics``) after open, change (with a
  debounce) and save, or pulled (``textDocument/diagnostic``) when the client says it can
  pull; never both. Each has ``code``, ``codeDescription.href``, ``source: "cudalint"``
  and an exact range in the negotiated position encoding (UTF-16 code units unless the
  client offers another), inside Python strings too.
* Code actions: every fix of a finding, "cudalint (CODE): Disable for this line" (adds the
  code to the line's ``noqa`` comment or writes one, ``//`` or ``#`` as the spot needs),
  and ``source.fixAll.cudalint`` (the safe fixes, as ``cudalint --fix``).
* Hover on a finding, or on a code in a ``noqa`` comment, shows the rule's documentation.
* Settings: the closest ``pyproject.toml``/``cudalint.toml`` of each file, exactly as the
  command line finds it, with ``initializationOptions`` (or
  ``workspace/didChangeConfiguration``) on top; the text analysed is the editor's buffer.
* Latency: an edit inside a kernel re-analyses that kernel alone (a slice of the file,
  ``cudalint/incremental.py``) and moves the other findings along; the whole file is
  analysed again when the edits pause (``fullDelay``) and replaces the quick result.
* The analysis runs in worker processes (one for whole files, one for edited kernels):
  a rule that loops forever, or a crash that takes a process down, becomes a CL000
  diagnostic and a fresh worker; the server stays up. Every handler is guarded as well.
"""
from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import io
import logging
import multiprocessing
import os
import re
import sys
import tokenize
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from cudalint import __version__, rule_url
from cudalint.config import OPTIONS, ConfigError, ConfigResolver, Settings
from cudalint.diagnostics import Diagnostic, Edit
from cudalint.engine import FileResult
from cudalint.sources.base import file_kind
from cudalint.suppressions import parse_suppressions

log = logging.getLogger("cudalint.server")

SOURCE = "cudalint"
FIX_ALL_KIND = "source.fixAll.cudalint"
CUDA_LANGUAGE_IDS = frozenset({"cuda", "cuda-cpp", "cuda-c++", "cuda_cpp"})
PYTHON_LANGUAGE_IDS = frozenset({"python"})
CONFIG_FILES = ("pyproject.toml", "cudalint.toml", ".cudalint.toml")
DEFAULT_DEBOUNCE_MS = 50
DEFAULT_FULL_DELAY_MS = 400
DEFAULT_TIMEOUT_S = 60.0
_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning,
             "info": lsp.DiagnosticSeverity.Information}


# ---------------------------------------------------------------------------------------
# Positions: cudalint reports character offsets into the text (and 1-based character
# columns); LSP wants 0-based lines and columns in code units of the negotiated encoding.

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class LineIndex:
    """Character offsets <-> LSP positions for one text. Lines end at ``\\r\\n``, ``\\r``
    or ``\\n`` as LSP says; columns count UTF-16 code units (a character outside the
    Basic Multilingual Plane is two), UTF-8 bytes or code points, as negotiated."""

    def __init__(self, text: str, encoding: str = "utf-16"):
        self.text = text
        self.encoding = str(encoding).lower().replace("_", "-")
        self.starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
        self.ends = [m.start() for m in _LINE_BREAK.finditer(text)] + [len(text)]

    def _units(self, chars: str) -> int:
        if self.encoding == "utf-32" or chars.isascii():
            return len(chars)
        if self.encoding == "utf-8":
            return len(chars.encode("utf-8", "surrogatepass"))
        return len(chars) + sum(1 for ch in chars if ord(ch) > 0xFFFF)

    def _line_of(self, offset: int) -> int:
        import bisect
        return bisect.bisect_right(self.starts, offset) - 1

    def position(self, offset: int) -> lsp.Position:
        offset = max(0, min(offset, len(self.text)))
        line = self._line_of(offset)
        start = self.starts[line]
        offset = min(offset, self.ends[line])       # never inside a \r\n
        return lsp.Position(line=line, character=self._units(self.text[start:offset]))

    def offset(self, pos: lsp.Position) -> int:
        if pos.line >= len(self.starts):
            return len(self.text)
        start, end = self.starts[pos.line], self.ends[pos.line]
        if self.encoding == "utf-32":
            return min(start + pos.character, end)
        units = 0
        i = start
        while i < end and units < pos.character:
            units += self._units(self.text[i])
            i += 1
        return i

    def range(self, start: int, end: int) -> lsp.Range:
        return lsp.Range(start=self.position(start), end=self.position(max(start, end)))


# ---------------------------------------------------------------------------------------
# "Disable for this line": where the noqa comment goes and in which comment syntax.

def _rows_ending_inside_strings(text: str) -> set[int]:
    """1-based rows whose line break is inside a Python string literal (a kernel string):
    a comment there must be CUDA's ``//``, written inside the string."""
    rows: set[int] = set()
    opened: list[int] = []
    starts = {getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START")
              if hasattr(tokenize, n)}
    ends = {getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END")
            if hasattr(tokenize, n)}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING:
                rows.update(range(tok.start[0], tok.end[0]))
            elif tok.type in starts:
                opened.append(tok.start[0])
            elif tok.type in ends and opened:
                rows.update(range(opened.pop(), tok.end[0]))
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return rows


def noqa_edit(text: str, kind: str, row: int, code: str) -> Edit | None:
    """The edit that suppresses ``code`` on 1-based ``row`` (cudalint rows: split on
    ``\\n``), or None when the line cannot take a comment (it continues with ``\\``) or
    already suppresses the code."""
    lines = text.split("\n")
    if not 1 <= row <= len(lines):
        return None
    line_start = sum(len(line) + 1 for line in lines[:row - 1])
    line = lines[row - 1]
    directive = parse_suppressions(line).lines.get(1)
    if directive is not None:
        if directive.codes is None or code in directive.codes:
            return None
        at = line_start + directive.code_spans[-1][2]
        return Edit(at, at, f", {code}")
    content = line.rstrip("\r").rstrip()
    if content.endswith("\\"):
        return None               # a macro or string continued on the next line
    if kind == "python":
        prefix = "//" if row in _rows_ending_inside_strings(text) else "#"
    elif kind == "cuda":
        prefix = "//"
    else:
        prefix = "#"
    at = line_start + len(content)
    return Edit(at, at, f"{'  ' if content else ''}{prefix} noqa: {code}")


# ---------------------------------------------------------------------------------------
# The worker: one process (tree-sitter's parser and the rules' caches are per process).

def _worker_init() -> None:
    # stdout is the LSP channel of the parent: nothing in the worker may write there
    try:
        os.dup2(2, 1)
    except OSError:
        pass
    sys.stdout = sys.stderr
    from cudalint.config import Settings as _S
    from cudalint.engine import lint_text
    lint_text("warm-up.cu", "__global__ void k(float* a) { a[threadIdx.x] = 0.0f; }\n",
              _S(), "cuda")


def _job_lint(path: str, text: str, settings: Settings, kind: str) -> FileResult:
    from cudalint.engine import lint_text
    return lint_text(path, text, settings, kind)


def _job_slice(path: str, text: str, settings: Settings, kind: str, start: int, end: int):
    from cudalint.incremental import lint_kernel_slice
    return lint_kernel_slice(path, text, settings, kind, start, end)


def _job_fix_all(path: str, text: str, settings: Settings, kind: str, unsafe: bool) -> str:
    from cudalint.fixes import fix_text
    return fix_text(path, text, settings, kind, unsafe)[0]


class WorkerFailure(Exception):
    """The analysis did not finish: it ran out of time or its process died."""


class Worker:
    """Runs analysis jobs one at a time in a worker process, with a time limit."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT_S, use_process: bool = True):
        self.timeout = timeout
        self.use_process = use_process
        self._pool: Executor | None = None
        self._lock: asyncio.Lock | None = None

    def start(self) -> None:
        if self._pool is not None:
            return
        if self.use_process:
            try:
                self._pool = ProcessPoolExecutor(
                    1, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_worker_init)
                return
            except Exception as exc:           # no processes here: analyse in a thread
                log.warning("cudalint: no worker process (%s); analysing in a thread", exc)
                self.use_process = False
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="cudalint-analysis")

    def _discard(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        for proc in list(getattr(pool, "_processes", {}).values()):
            try:
                proc.kill()
            except Exception:
                pass
        try:
            pool.shutdown(wait=False, cancel_futures=True)
        except Exception:
            pass

    def stop(self) -> None:
        self._discard()

    async def call(self, fn: Callable, *args, wanted: Callable[[], bool] | None = None):
        """fn(*args) in the worker. Returns None when ``wanted()`` turned false while
        waiting for the worker (the text changed again)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if wanted is not None and not wanted():
                return None
            self.start()
            assert self._pool is not None
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(self._pool, fn, *args)
            try:
                return await asyncio.wait_for(future, self.timeout)
            except asyncio.TimeoutError:
                self._discard()
                raise WorkerFailure(f"the analysis took longer than {self.timeout:g} s and "
                                    "was stopped") from None
            except BrokenProcessPool:
                self._discard()
                raise WorkerFailure("the analysis process died") from None
            except BaseException as exc:
                if isinstance(exc, asyncio.CancelledError):
                    raise
                if isinstance(exc, (SystemExit, KeyboardInterrupt)):
                    # a rule that calls sys.exit() in the thread fallback
                    self._discard()
                raise WorkerFailure(f"{type(exc).__name__}: {exc}") from None


# ---------------------------------------------------------------------------------------
# Options from initializationOptions / workspace/didChangeConfiguration.

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _option_key(key: str) -> str:
    return _CAMEL.sub(r"-\1", key).lower().replace("_", "-")


@dataclass
class ServerOptions:
    overrides: dict[str, Any] = field(default_factory=dict)   # Settings fields
    configuration: str | None = None         # use only this config file
    unsafe_fixes: bool = False               # source.fixAll applies unsafe fixes too
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    full_delay_ms: int = DEFAULT_FULL_DELAY_MS   # whole-file analysis after an edit
    timeout_s: float = DEFAULT_TIMEOUT_S
    diagnostic_mode: str = "auto"            # "auto" | "push" | "pull"


SERVER_KEYS = {"configuration", "unsafe-fixes", "debounce", "full-delay", "timeout",
               "diagnostic-mode", "settings"}


def parse_options(raw: Any) -> ServerOptions:
    """``{"settings": {<[tool.cudalint] keys>}, "unsafeFixes": ..., ...}``; the settings
    may also sit at the top level or under ``"cudalint"``. Raises ConfigError."""
    where = "initializationOptions"
    if raw is None:
        return ServerOptions()
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be an object, got {type(raw).__name__}")
    if isinstance(raw.get("cudalint"), dict):
        raw = raw["cudalint"]
    opts = ServerOptions()
    table: dict[str, Any] = {}
    for key, value in raw.items():
        norm = _option_key(key)
        if norm == "settings":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `settings` must be an object")
            table.update({_option_key(k): v for k, v in value.items()})
        elif norm == "configuration":
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"{where}: `configuration` must be a path")
            opts.configuration = value or None
        elif norm == "unsafe-fixes":
            opts.unsafe_fixes = bool(value)
        elif norm in ("debounce", "full-delay"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not 0 <= value <= 600_000:            # NaN and infinity fail too
                raise ConfigError(f"{where}: `{key}` must be milliseconds (0 to 600000)")
            if norm == "debounce":
                opts.debounce_ms = int(value)
            else:
                opts.full_delay_ms = int(value)
        elif norm == "timeout":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not 0 < value <= 86_400:
                raise ConfigError(f"{where}: `timeout` must be seconds (up to 86400)")
            opts.timeout_s = float(value)
        elif norm == "diagnostic-mode":
            if value not in ("auto", "push", "pull"):
                raise ConfigError(f"{where}: `diagnosticMode` must be auto, push or pull")
            opts.diagnostic_mode = value
        elif norm in OPTIONS:
            table[norm] = value
        else:
            raise ConfigError(f"{where}: unknown option `{key}` (known: "
                              f"{', '.join(sorted(SERVER_KEYS | set(OPTIONS)))})")
    for key, value in table.items():
        option = OPTIONS.get(key)
        if option is None:
            raise ConfigError(f"{where}: unknown setting `{key}` (known: "
                              f"{', '.join(sorted(OPTIONS))})")
        name, convert = option
        opts.overrides[name] = convert(key, value, where)
    return opts


# ---------------------------------------------------------------------------------------
# The server.

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

    @property
    def result_id(self) -> str:
        return hashlib.sha1(repr(self.key).encode()).hexdigest()[:16]


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


class CudalintServer(LanguageServer):
    def __init__(self, use_process: bool = True):
        super().__init__("cudalint", __version__,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.options = ServerOptions()
        self.worker = Worker(DEFAULT_TIMEOUT_S, use_process)        # whole files
        self.fast_worker = Worker(DEFAULT_TIMEOUT_S, use_process)   # edited kernels
        self._full_pending: dict[str, asyncio.Task] = {}
        self._resolver: ConfigResolver | None = None
        self._analyses: dict[str, Analysis] = {}
        self._inflight: dict[tuple, asyncio.Future] = {}
        self._pending: dict[str, asyncio.Task] = {}
        self._reported: set[str] = set()
        self._register()

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
        async def warm(worker: Worker):
            try:
                await worker.call(_job_lint, "warm-up.cu", "__global__ void k() {}\n",
                                  Settings(), "cuda")
            except Exception:
                pass
        asyncio.ensure_future(warm(self.worker))
        asyncio.ensure_future(warm(self.fast_worker))

    @_guard()
    def on_shutdown(self, params: None) -> None:
        for task in list(self._pending.values()) + list(self._full_pending.values()):
            task.cancel()
        self.worker.stop()
        self.fast_worker.stop()

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
            self._resolver = ConfigResolver(dict(self.options.overrides), forced)
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
        return Analysis(key, text, "cuda", result, items, index, partial=True)

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
                result = await self.worker.call(_job_lint, name, text, settings, kind,
                                                wanted=self._wanted(uri, key[1]))
            except WorkerFailure as exc:
                result = FileResult(name)
                result.diagnostics.append(_failure_diagnostic(name, str(exc)))
                failed = True
            if result is None:
                return None        # the text changed while waiting: a newer run follows
        index = LineIndex(text, self._encoding())
        items = [to_lsp(d, index) for d in result.visible]
        return Analysis(key, text, kind, result, items, index, failed=failed)

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

    @_guard()
    def did_save(self, params: lsp.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if any(uri.endswith("/" + name) for name in CONFIG_FILES):
            self._relint_all()
        else:
            self._resolver = None      # a config saved outside the editor counts too
            self.schedule(uri, 0)

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


def minimal_edit(before: str, after: str) -> Edit:
    """One edit that turns ``before`` into ``after``: the changed middle only."""
    from cudalint.incremental import changed_span
    start, end_b, end_a = changed_span(before, after)
    return Edit(start, end_b, after[start:end_a])


def _failure_diagnostic(path: str, why: str) -> Diagnostic:
    return Diagnostic(code="CL000", name="analysis-notice",
                      message=f"cudalint could not analyse this file: {why}; the server "
                              "carries on (please report it)",
                      severity="warning", filename=path, row=1, column=1, end_row=1,
                      end_column=1, start_offset=0, end_offset=0, url=rule_url("CL000"),
                      noqa_row=1)


def to_lsp(d: Diagnostic, index: LineIndex) -> lsp.Diagnostic:
    tags = [lsp.DiagnosticTag.Unnecessary] if d.code == "CL001" else None
    data: dict[str, Any] = {"name": d.name}
    if d.metrics:
        data["metrics"] = d.metrics
    if d.fix is not None:
        data["fix"] = {"message": d.fix.message, "applicability": d.fix.applicability}
    return lsp.Diagnostic(
        range=index.range(d.start_offset, d.end_offset),
        severity=_SEVERITY.get(d.severity, lsp.DiagnosticSeverity.Warning),
        code=d.code,
        code_description=lsp.CodeDescription(href=d.url or rule_url(d.code)),
        source=SOURCE,
        message=d.message,
        tags=tags,
        data=data,
    )


def serve(use_process: bool = True) -> None:
    """Run the language server on stdin/stdout until the client says exit."""
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("CUDALINT_LOG", "WARNING"))
    server = CudalintServer(use_process=use_process)
    try:
        server.start_io()
    finally:
        server.worker.stop()
