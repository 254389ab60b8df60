"""Lint many files: cache lookups (by stat signature, then by content), then the misses in
parallel across cores. See :mod:`cudalint.cache` for what makes a hit."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cudalint.cache import Cache, build_chain, cache_key, context_key
from cudalint.sources.signature import file_sig, stat_sig

if TYPE_CHECKING:
    from cudalint.discovery import Target
    from cudalint.engine import FileResult

PARALLEL_MIN_FILES = 6


def _context(target: "Target", build: str | None = None) -> str:
    """What a result depends on besides the bytes of the file and of its headers: the
    settings, the build files above a CUDA file (CL401-CL404 read their flags; ``build``:
    their digest when known), the ptxas logs given."""
    settings = target.settings
    context = settings.fingerprint()
    if target.kind == "cuda":
        if build is None:
            from cudalint.project.buildflags import build_digest
            build = build_digest(target.path)
        context += "\0" + build
    if settings.ptxas.log:
        from cudalint.analysis.ptxas.ptxas_run import ptxas_digest
        context += "\0" + ptxas_digest(settings)
    return context


def _keyed(target: "Target", data: bytes, context: str | None = None
           ) -> tuple[str, tuple, bytes]:
    """(content key, include candidates' signatures, context key)."""
    if context is None:
        context = _context(target)
    extra, deps = "", ()
    if target.kind == "cuda":        # headers, and the launchers the project index found
        from cudalint.project.includes import include_deps
        extra, deps = include_deps(target.path, data.decode("utf-8", "replace"))
        from cudalint.sources.python.readers import reader_deps
        read_extra, read_deps = reader_deps(str(target.path))   # Python that compiles it
        if read_deps:
            extra, deps = extra + read_extra, tuple(deps) + read_deps
    elif target.kind == "python":    # compile wrappers in the project's other modules
        from cudalint.sources.python.modules import python_deps
        extra, deps = python_deps(target.path, data.decode("utf-8", "replace"))
    if target.kind in ("python", "cmake", "make", "toml"):
        # CL401 reads the CUDA files a build compiles: their bytes key its result
        from cudalint.analysis.fp.fast_math_ops import build_file_deps
        flag_extra, flag_deps = build_file_deps(str(target.path),
                                                data.decode("utf-8", "replace"), target.kind)
        if flag_extra or flag_deps:
            extra, deps = extra + flag_extra, tuple(deps) + tuple(flag_deps)
    return cache_key(target.display, data, context, extra), deps, context_key(context)


def _read(path: Path) -> tuple[bytes | str, tuple | None]:
    """(bytes, stat signature of what was read) or (why not, None)."""
    try:
        with open(path, "rb") as fh:
            sig = stat_sig(os.fstat(fh.fileno()))
            return fh.read(), sig
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}", None


def _lint_one(target: "Target", keyed: bool) -> tuple:
    """(result, key, sig, deps, ctx); the key only when the result is to be cached."""
    from cudalint.engine import lint_bytes, lint_unreadable
    data, sig = _read(target.path)
    if isinstance(data, str):
        return lint_unreadable(target.display, data, target.settings), None, None, (), b""
    key, deps, ctx = _keyed(target, data) if keyed else (None, (), b"")
    return lint_bytes(target.display, data, target.settings, target.kind), key, sig, deps, ctx


GC_THRESHOLD = (10000, 10, 10)


def _tune_gc() -> None:
    """Fewer collections while linting: the analyses allocate many small objects and keep
    large structures alive, which the default thresholds traverse thousands of times (12%
    of a cold run's CPU on /tmp/real; about 0.6 s instead of 1.4 s with this, +10 MB)."""
    import gc
    if gc.get_threshold() != GC_THRESHOLD:
        gc.set_threshold(*GC_THRESHOLD)


def _preload() -> None:
    """Import what every worker needs (rules, analyses, the parser) once, before forking:
    the workers share it instead of each importing it again."""
    from cudalint.engine import lint_bytes  # noqa: F401
    from cudalint.parse import parse  # noqa: F401
    from cudalint.rule import all_rules
    all_rules()


def _chunks(targets: list["Target"], todo: list[int], jobs: int) -> list[list[int]]:
    """Misses in chunks, biggest files first (their cost dominates and a big file started
    last leaves the other cores idle): small chunks handed out as workers free up."""
    def size(i: int) -> int:
        try:
            return os.stat(targets[i].path).st_size
        except (OSError, ValueError):
            return 0
    order = sorted(todo, key=size, reverse=True)
    alone = jobs * 16                     # the biggest files one by one
    n = max(1, min(16, (len(order) - alone) // (jobs * 16)))
    return [[i] for i in order[:alone]] + \
        [order[k:k + n] for k in range(alone, len(order), n)]


def _parallel(targets: list["Target"], todo: list[int], jobs: int, keyed: bool
              ) -> dict[int, tuple]:
    import gc
    _preload()
    chunks = _chunks(targets, todo, jobs)
    memory = max(targets[i].settings.memory_limit_mb for i in todo)
    gc.freeze()            # what is imported now is never collected: the workers skip it
    try:
        return _Workers(targets, keyed, memory).run(chunks, min(jobs, len(chunks)))
    finally:
        gc.unfreeze()


def _serve(conn, targets: list["Target"], keyed: bool, memory_mb: int) -> None:
    """A worker process: chunks of indices in, one ``(index, result)`` out per file, so
    that the parent knows which file it was on if it dies."""
    import signal
    from multiprocessing import parent_process
    from cudalint.analysis.fp import clang_process
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it closes the pipe
    clang_process.die_with_parent(parent_process().pid)     # SIGKILL of the parent too
    clang_process.limit_memory(memory_mb)
    _tune_gc()
    try:
        while True:
            try:
                chunk = conn.recv()
            except (EOFError, OSError):
                return
            for i in chunk:
                try:
                    out = _lint_one(targets[i], keyed)
                except Exception as exc:  # noqa: BLE001 (MemoryError outside a rule, say)
                    out = _lost(targets[i], f"its analysis failed ({type(exc).__name__}: "
                                            f"{exc})")
                conn.send((i, out))
    finally:
        clang_process.stop(kill=False)     # exits at EOF; reaped here (its CPU time counts)


class _OverTime(BaseException):
    """The serial path's alarm: a file ran past its ``time_limit_s`` (a BaseException, so
    that no rule's ``except Exception`` takes it for its own failure)."""


def _over_time(signum, frame) -> None:
    raise _OverTime


def _serial(targets: list["Target"], todo: list[int], keyed: bool) -> dict[int, tuple]:
    """The misses in this process, one after the other, each under its file's
    ``time_limit_s`` as in a worker (:class:`_Workers`): past it the file gets the same
    CL000 and the next file is linted. The alarm is a SIGALRM timer, so only where this
    process may take that signal (the main thread of a POSIX process); elsewhere (the
    language server's threads) files run without a time budget."""
    import signal
    import threading
    if not hasattr(signal, "setitimer") or \
            threading.current_thread() is not threading.main_thread():
        return {i: _lint_one(targets[i], keyed) for i in todo}
    _preload()              # imports are the run's, not the first file's, time
    done: dict[int, tuple] = {}
    previous = signal.signal(signal.SIGALRM, _over_time)
    try:
        for i in todo:
            limit = targets[i].settings.time_limit_s
            try:
                signal.setitimer(signal.ITIMER_REAL, limit)
                try:
                    done[i] = _lint_one(targets[i], keyed)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            except _OverTime:
                # a libclang call cut off mid-answer would hand its answer to the next
                from cudalint.analysis.fp import clang_process
                clang_process.stop(kill=True)
                done[i] = _lost(targets[i], f"it took more than {limit:g} s (time-limit-s)")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return done


def _lost(target: "Target", why: str) -> tuple:
    from cudalint.engine import lint_unreadable
    return lint_unreadable(target.display, f"not analysed: {why}; the other files' "
                                           "findings are complete", target.settings), \
        None, None, (), b""


class _Workers:
    """Worker processes forked from this one (they share what it imported), fed chunks of
    files. A worker that dies (a signal, an abort, its memory budget) or spends more than
    the file's ``time_limit_s`` on one file costs that file a CL000; its other files go
    to a fresh worker, and every other file's findings are reported."""

    def __init__(self, targets: list["Target"], keyed: bool, memory_mb: int):
        import multiprocessing
        self.ctx = multiprocessing.get_context("fork")
        self.targets = targets
        self.keyed = keyed
        self.memory_mb = memory_mb

    def _start(self) -> dict:
        conn, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_serve, args=(child, self.targets, self.keyed,
                                                     self.memory_mb), daemon=True)
        proc.start()
        child.close()
        return {"proc": proc, "conn": conn, "pending": [], "since": 0.0}

    def run(self, chunks: list[list[int]], n: int) -> dict[int, tuple]:
        from multiprocessing.connection import wait
        queue = [list(c) for c in chunks]
        queue.reverse()                         # pop() from the end: the first chunk
        done: dict[int, tuple] = {}
        workers = [self._start() for _ in range(n)]
        try:
            for w in workers:
                self._feed(w, queue)
            while any(w["pending"] for w in workers):
                busy = [w for w in workers if w["pending"]]
                now = time.monotonic()
                left = min(w["since"] + self._limit(w) - now for w in busy)
                ready = wait([w["conn"] for w in busy] + [w["proc"].sentinel for w in busy],
                             timeout=max(0.0, left))
                for k, w in enumerate(workers):
                    if not w["pending"]:
                        continue
                    if w["conn"] in ready or w["proc"].sentinel in ready:
                        if not self._receive(w, done):
                            workers[k] = self._replace(w, done, queue, self._died(w))
                            continue
                    elif time.monotonic() - w["since"] > self._limit(w):
                        workers[k] = self._replace(
                            w, done, queue, f"it took more than {self._limit(w):g} s "
                                            "(time-limit-s)")
                        continue
                    if not w["pending"]:
                        self._feed(w, queue)
        except BaseException:       # Ctrl-C: no result is wanted, no worker waited for
            for w in workers:
                w["proc"].kill()
            raise
        finally:
            for w in workers:
                w["conn"].close()
                w["proc"].join(1)
                if w["proc"].is_alive():
                    w["proc"].kill()
                    w["proc"].join()
        return done

    def _limit(self, w: dict) -> float:
        return self.targets[w["pending"][0]].settings.time_limit_s

    def _feed(self, w: dict, queue: list[list[int]]) -> None:
        if queue:
            w["pending"] = queue.pop()
            w["since"] = time.monotonic()
            w["conn"].send(w["pending"])

    def _receive(self, w: dict, done: dict[int, tuple]) -> bool:
        """Take every result the worker sent; False once it is gone."""
        try:
            while w["conn"].poll():
                i, out = w["conn"].recv()
                done[i] = out
                w["pending"].remove(i)
                w["since"] = time.monotonic()
                if not w["pending"]:
                    return True
        except (EOFError, OSError):
            return False
        return w["proc"].is_alive() or not w["pending"]

    def _died(self, w: dict) -> str:
        w["proc"].join(5)
        code = w["proc"].exitcode
        if code is not None and code < 0:
            import signal
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"its worker process was ended by {name}" + (
                " (killed: out of memory?)" if name == "SIGKILL" else
                " (an abort)" if name == "SIGABRT" else "")
        return f"its worker process exited (status {code}; out of memory-limit-mb?)"

    def _replace(self, w: dict, done: dict[int, tuple], queue: list[list[int]],
                 why: str) -> dict:
        """The file the worker was on gets a CL000; the rest of its chunk goes back in
        the queue and a fresh worker takes the next chunk."""
        if w["proc"].is_alive():
            w["proc"].kill()
        w["proc"].join()
        w["conn"].close()
        lost, rest = w["pending"][0], w["pending"][1:]
        done[lost] = _lost(self.targets[lost], why)
        if rest:
            queue.append(rest)
        fresh = self._start()
        self._feed(fresh, queue)
        return fresh


def _name(target: "Target") -> str:
    """An index entry's name: the file, and the path shown for it (which its results
    carry: another working folder shows it by another name)."""
    return f"{os.path.abspath(target.path)}\0{target.display}"


class Lookup:
    """Cache lookups of one run (discovery's too, see :meth:`includes`): contexts and
    build digests memoised per folder. Made before any file is stat-ed or read."""

    def __init__(self, started_ns: int):
        self.started_ns = started_ns
        self.caches: dict[str, Cache] = {}
        self._contexts: dict[tuple, tuple] = {}
        self._builds: dict[str, str] = {}
        self._chains: dict[tuple, tuple] = {}

    def cache(self, target: "Target") -> Cache:
        return self.cache_of(target.settings.root)

    def cache_of(self, root: str) -> Cache:
        cache = self.caches.get(root)
        if cache is None:
            cache = self.caches[root] = Cache(Path(root), self.started_ns)
        return cache

    def context(self, target: "Target") -> tuple[str, bytes]:
        folder = os.path.dirname(os.path.abspath(target.path)) \
            if target.kind == "cuda" else ""
        k = (id(target.settings), folder)
        got = self._contexts.get(k)
        if got is None or got[0] is not target.settings:
            build = self.build(target, folder) if folder else None
            context = _context(target, build)
            got = self._contexts[k] = (target.settings, context, context_key(context))
        return got[1], got[2]

    def build(self, target: "Target", folder: str) -> str:
        """The build digest of a folder: recorded in the index while no build file above
        it changed (a warm run neither imports nor reads the build files), else computed."""
        got = self._builds.get(folder)
        if got is None:
            cache = self.cache(target)
            got = cache.build_digest(folder, self._chains)
            if got is None:
                from cudalint.project.buildflags import BUILD_FILES, build_digest
                chain = build_chain(folder, BUILD_FILES, self._chains)
                got = build_digest(target.path)
                cache.record_build(folder, BUILD_FILES, chain, got)
            self._builds[folder] = got
        return got

    def includes(self, path: Path, settings) -> list[Path]:
        """discovery's local headers of a .cu file; the names are read from the file only
        when its stat signature differs from the one recorded with them."""
        from cudalint.discovery import existing_includes, include_names
        cache = self.cache_of(settings.root)
        full = os.path.abspath(path)
        sig = file_sig(full)
        names = cache.include_names(full, sig) if sig is not None else None
        if names is None:
            names = include_names(path)
            if names is None:
                return []
            if sig is not None:
                cache.record_includes(full, sig, names)
        return existing_includes(path, names)

    def get(self, target: "Target") -> "FileResult | None":
        cache = self.cache(target)
        name = _name(target)
        entry = cache.entry(name)
        if entry is None:
            return None
        sig = file_sig(target.path)
        if sig is None:
            return None
        context, ctx = self.context(target)
        if entry[1] == sig and entry[3] == ctx and \
                all(file_sig(p) == s for p, s in entry[2]):
            return cache.result(entry)           # nothing read but the index
        # a signature differs (or was never trusted): compare the content key
        data, sig = _read(target.path)
        if isinstance(data, str):
            return None
        key, deps, ctx = _keyed(target, data, context)
        if key != entry[0]:
            return None
        result = cache.result(entry)
        if result is not None:
            cache.refresh(name, entry, sig, deps, ctx)
        return result


def run(targets: list["Target"], use_cache: bool = True, jobs: int | None = None,
        lookup: Lookup | None = None) -> list["FileResult"]:
    """Results in the order of ``targets``; ``lookup``: the one discovery used (else a
    new one, made before any file is stat-ed or read)."""
    if lookup is None:
        lookup = Lookup(time.time_ns())
    results: dict[int, FileResult] = {}
    todo: list[int] = []
    for i, t in enumerate(targets):
        hit = lookup.get(t) if use_cache else None
        if hit is None:
            todo.append(i)
            if use_cache and t.kind == "cuda":
                lookup.context(t)           # the folder's build digest goes to the index
        else:
            results[i] = hit

    if todo:                    # the project index, before the workers fork (they share it)
        from cudalint.project.index import prepare
        prepare(targets)
    jobs = jobs or os.cpu_count() or 1
    if len(todo) >= PARALLEL_MIN_FILES and jobs > 1:
        done = _parallel(targets, todo, jobs, use_cache)
    else:
        import gc
        old = gc.get_threshold()
        if todo:
            _tune_gc()
        try:
            done = _serial(targets, todo, use_cache)
        finally:
            gc.set_threshold(*old)

    for i, (res, key, sig, deps, ctx) in done.items():
        results[i] = res
        if use_cache and res.error is None and key is not None:
            lookup.cache(targets[i]).put(key, res, _name(targets[i]), sig, deps, ctx)
    for cache in lookup.caches.values():
        cache.save()
    return [results[i] for i in range(len(targets))]
