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


def _worker(batch: list["Target"], keyed: bool) -> list[tuple]:
    _tune_gc()
    return [_lint_one(t, keyed) for t in batch]


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
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial
    _preload()
    chunks = _chunks(targets, todo, jobs)
    done: dict[int, tuple] = {}
    gc.freeze()            # what is imported now is never collected: the workers skip it
    try:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=ctx) as pool:
            for chunk, out in zip(chunks, pool.map(partial(_worker, keyed=keyed),
                                                   [[targets[i] for i in c] for c in chunks])):
                done.update(zip(chunk, out))
    finally:
        gc.unfreeze()
    return done


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
            done = {i: _lint_one(targets[i], use_cache) for i in todo}
        finally:
            gc.set_threshold(*old)

    for i, (res, key, sig, deps, ctx) in done.items():
        results[i] = res
        if use_cache and res.error is None and key is not None:
            lookup.cache(targets[i]).put(key, res, _name(targets[i]), sig, deps, ctx)
    for cache in lookup.caches.values():
        cache.save()
    return [results[i] for i in range(len(targets))]
