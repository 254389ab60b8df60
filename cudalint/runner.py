"""Lint many files: cache lookups, then the misses in parallel across cores."""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .cache import Cache, cache_key
from .discovery import Target
from .engine import FileResult, lint_bytes, lint_unreadable
from .selection import enabled_rules

PARALLEL_MIN_FILES = 6


_RULE_KEYS: dict[int, tuple[object, str]] = {}


def _rules_key(target: Target) -> str:
    got = _RULE_KEYS.get(id(target.settings))
    if got is None or got[0] is not target.settings:
        got = (target.settings, ",".join(r.code for r in enabled_rules(target.settings)))
        _RULE_KEYS[id(target.settings)] = got
    return got[1]


def _key(target: Target, data: bytes) -> str:
    extra = ""
    if target.kind == "cuda" and b"#include" in data:
        from .sources.includes import include_digest
        extra = include_digest(target.path, data.decode("utf-8", "replace"))
    if target.kind == "cuda":
        from .analysis.buildflags import build_digest
        extra += build_digest(target.path)
    if target.settings.ptxas.log:
        from .analysis.ptxas_run import ptxas_digest
        extra += ptxas_digest(target.settings)
    return cache_key(target.display, data, target.settings.fingerprint() + extra,
                     _rules_key(target))


def _read(path: Path) -> bytes | str:
    try:
        return path.read_bytes()
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"


def _lint_one(target: Target) -> tuple[FileResult, str | None]:
    data = _read(target.path)
    if isinstance(data, str):
        return lint_unreadable(target.display, data, target.settings), None
    key = _key(target, data)
    return lint_bytes(target.display, data, target.settings, target.kind), key


def _worker(batch: list[Target]) -> list[tuple[FileResult, str | None]]:
    return [_lint_one(t) for t in batch]


def run(targets: list[Target], use_cache: bool = True, jobs: int | None = None
        ) -> list[FileResult]:
    results: dict[int, FileResult] = {}
    todo: list[int] = []
    caches: dict[str, Cache] = {}
    keys: dict[int, str] = {}
    for i, t in enumerate(targets):
        if use_cache:
            data = _read(t.path)
            if isinstance(data, bytes):
                key = _key(t, data)
                keys[i] = key
                cache = caches.setdefault(t.settings.root, Cache(Path(t.settings.root)))
                hit = cache.get(key)
                if hit is not None:
                    results[i] = hit
                    continue
        todo.append(i)

    jobs = jobs or os.cpu_count() or 1
    if len(todo) >= PARALLEL_MIN_FILES and jobs > 1:
        batches = [todo[k::jobs * 4] for k in range(jobs * 4)]
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            for batch, out in zip(batches, pool.map(
                    _worker, [[targets[i] for i in b] for b in batches])):
                for i, (res, _) in zip(batch, out):
                    results[i] = res
    else:
        for i in todo:
            results[i] = _lint_one(targets[i])[0]

    if use_cache:
        for i in todo:
            res = results[i]
            if res.error is None and i in keys:
                caches[targets[i].settings.root].put(keys[i], res)
    return [results[i] for i in range(len(targets))]
