"""Integer constants from the local headers a CUDA file includes (``#include "tile.cuh"``),
so that ``TILE`` defined in a header sizes the arrays of the ``.cu`` that includes it.

Only quoted includes that resolve relative to the including file are read, two levels
deep; nothing is searched on include paths, and a header that cannot be read adds
nothing. The headers' bytes take part in the cache key (see :func:`include_digest`).
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.MULTILINE)
MAX_DEPTH = 2
MAX_HEADER_BYTES = 2 << 20


def local_includes(path: Path, text: str) -> list[Path]:
    out = []
    for m in _INCLUDE.finditer(text):
        candidate = path.parent / m.group(1)
        try:
            if candidate.is_file():
                out.append(candidate.resolve())
        except OSError:
            continue
    return out


@lru_cache(maxsize=512)
def _header(path: Path) -> tuple[str, dict[str, int]] | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if len(data) > MAX_HEADER_BYTES or b"\0" in data[:8192]:
        return None
    text = data.decode("utf-8", "replace")
    from cudalint.model.kernels import Model
    from cudalint.parse import parse
    return text, dict(Model(parse(data)).constants)


def include_constants(path: Path, text: str, depth: int = 0,
                      seen: frozenset[Path] = frozenset()) -> dict[str, int]:
    env: dict[str, int] = {}
    if depth >= MAX_DEPTH:
        return env
    for header in local_includes(path, text):
        if header in seen:
            continue
        loaded = _header(header)
        if loaded is None:
            continue
        htext, constants = loaded
        env.update(include_constants(header, htext, depth + 1, seen | {header}))
        env.update(constants)
    return env


def include_digest(path: Path, text: str) -> str:
    """Hash of the included headers' bytes (for the cache key)."""
    h = hashlib.sha256()
    for header in local_includes(path, text):
        try:
            h.update(str(header).encode())
            h.update(header.read_bytes())
        except OSError:
            continue
    return h.hexdigest()


def include_deps(path: Path, text: str) -> tuple[str, tuple]:
    """(digest, deps) for the result cache: the digest of every local header that
    :func:`include_constants` may read (both levels: paths and bytes), and each include
    candidate's stat signature (None where no regular file is), so that a warm run can
    tell by stat alone that nothing it includes changed -- a header created where there
    was none included. The project index's dependencies of the file (headers on include
    folders, the files that launch its kernels: :func:`cudalint.project.index.project_deps`)
    are added the same way; ("", ()) when there is none of either."""
    from cudalint.sources.signature import file_sig
    h = hashlib.sha256()
    deps: list[tuple[str, tuple | None]] = []
    seen: set[Path] = set()

    def visit(file: Path, body: str, depth: int) -> None:
        if depth >= MAX_DEPTH:
            return
        for m in _INCLUDE.finditer(body):
            candidate = file.parent / m.group(1)
            sig = file_sig(candidate)
            deps.append((str(candidate), sig))
            if sig is None:
                continue
            try:
                real = candidate.resolve()
                if real in seen:
                    continue
                seen.add(real)
                with open(real, "rb") as fh:
                    data = fh.read()
            except (OSError, ValueError, RuntimeError):
                continue
            h.update(str(real).encode("utf-8", "surrogateescape"))
            h.update(b"\0%d\0" % len(data))
            h.update(data)
            if len(data) <= MAX_HEADER_BYTES and b"\0" not in data[:8192]:
                visit(real, data.decode("utf-8", "replace"), depth + 1)

    if "#include" in text:
        visit(path, text, 0)
    # the project index's files: headers found on include folders, the files launching
    # this one's kernels (their bytes and signatures, like the local headers')
    from cudalint.project.index import project_deps
    extra = project_deps(str(path))
    if not extra and not deps:
        return "", ()
    listed = {p for p, _ in deps}
    for other in extra:
        if other in listed:
            continue
        sig = file_sig(other)
        deps.append((other, sig))
        try:
            with open(other, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        h.update(other.encode("utf-8", "surrogateescape"))
        h.update(b"\0%d\0" % len(data))
        h.update(data)
    return h.hexdigest(), tuple(deps)
