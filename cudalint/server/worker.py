"""The language server's analysis worker: jobs (whole file, one edited kernel, fix all) run
one at a time in a worker process with a time limit, so that a rule that loops forever or a
crash that takes the process down becomes a CL000 diagnostic and a fresh worker while the
server stays up. The jobs are module-level functions: the process pool pickles them by name."""
from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import sys
import threading
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

from cudalint import rule_url
from cudalint.config import Settings
from cudalint.diagnostics import Diagnostic
from cudalint.engine import FileResult
from cudalint.server.forkserver import _context, _parent_of_workers

log = logging.getLogger("cudalint.server")

DEFAULT_TIMEOUT_S = 60.0


# ---------------------------------------------------------------------------------------
# The worker: one process (tree-sitter's parser and the rules' caches are per process).

def _worker_init(compile_all: bool = False, parent: int | None = None) -> None:
    # stdout is the LSP channel of the parent: nothing in the worker may write there
    try:
        os.dup2(2, 1)
    except OSError:
        pass
    sys.stdout = sys.stderr
    # a SIGKILLed server must not leave its analysis worker running forever: the worker
    # dies with its parent (the forkserver, which dies with the server; or the server),
    # and exits at once if that parent is already gone (``parent``: asked of it by pid,
    # since a worker whose parent died before this line has init for its parent)
    from cudalint.analysis.fp.clang_process import die_with_parent
    die_with_parent(parent if parent is not None else os.getppid())
    from cudalint.server.preload import TINY, WARM_UP, warm_up
    warm_up(TINY)           # done already where forked from the preloaded forkserver
    if compile_all:
        warm_up(WARM_UP)


def _job_lint(path: str, text: str, settings: Settings, kind: str) -> FileResult:
    from cudalint.engine import lint_text
    return lint_text(path, text, settings, kind)


def _job_lint_open(path: str, text: str, settings: Settings, kind: str,
                   texts: dict[str, str]) -> tuple[FileResult, tuple[str, ...]]:
    """A CUDA file linted with the open documents and its folder as its project
    (``project.index.editor_index``), and the files whose facts its result used: a
    change to one of them re-lints it."""
    from cudalint.engine import lint_text
    from cudalint.project import index
    idx = index.editor_index(path, texts, settings)
    old = index.use_index(idx)
    try:
        result = lint_text(path, text, settings, kind)
        deps = tuple(idx.deps(os.path.abspath(path))) if idx is not None else ()
    finally:
        index.use_index(old)
    return result, deps


def _job_slice(path: str, text: str, settings: Settings, kind: str, start: int, end: int):
    from cudalint.incremental import lint_kernel_slice
    return lint_kernel_slice(path, text, settings, kind, start, end)


def _job_fix_all(path: str, text: str, settings: Settings, kind: str, unsafe: bool) -> str:
    from cudalint.fixes import fix_text
    return fix_text(path, text, settings, kind, unsafe)[0]


def _ready() -> None:
    """A job that does nothing: the pool starts its process for it."""


def _first_job(pool: Executor) -> None:
    try:
        pool.submit(_ready)
    except Exception:        # a broken start shows at the next job, which says why
        pass


class WorkerFailure(Exception):
    """The analysis did not finish: it ran out of time or its process died."""


class Worker:
    """Runs analysis jobs one at a time in a worker process, with a time limit."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT_S, use_process: bool = True,
                 compile_all: bool = False):
        self.timeout = timeout
        self.use_process = use_process
        # compile, as the process starts, the queries most files need (the fast worker:
        # a keystroke must not wait for them; the whole-file worker's first document
        # should not wait for those it does not need)
        self.compile_all = compile_all
        self._pool: Executor | None = None
        self._lock: asyncio.Lock | None = None

    def start(self) -> None:
        if self._pool is not None:
            return
        if self.use_process:
            try:
                ctx = _context()
                pool = ProcessPoolExecutor(1, mp_context=ctx, initializer=_worker_init,
                                           initargs=(self.compile_all, _parent_of_workers(ctx)))
                self._pool = pool
                # the pool starts its process with its first job, and that start waits
                # until the forkserver has its preload done: from a thread, so that the
                # event loop meanwhile reads the client's messages and prepares their
                # analyses (settings, first imports: ~0.15 s before the first job)
                threading.Thread(target=_first_job, args=(pool,), daemon=True,
                                 name="cudalint-worker-start").start()
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


def _failure_diagnostic(path: str, why: str) -> Diagnostic:
    return Diagnostic(code="CL000", name="analysis-notice",
                      message=f"cudalint could not analyse this file: {why}; the server "
                              "carries on (please report it)",
                      severity="warning", filename=path, row=1, column=1, end_row=1,
                      end_column=1, start_offset=0, end_offset=0, url=rule_url("CL000"),
                      noqa_row=1)
