"""Which files to lint: walk the given paths, honour ``exclude`` and ``.gitignore``
(nested ones too, through pathspec), and add the local headers that ``.cu`` files include.
Files named explicitly on the command line are always linted (like ruff).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from fnmatch import translate as fnmatch_translate
from pathlib import Path

import pathspec

from .config import ConfigResolver, Settings
from .sources.base import HEADER_SUFFIXES, file_kind

_INCLUDE = re.compile(rb'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


@dataclass(frozen=True)
class Target:
    path: Path
    display: str
    kind: str
    settings: Settings


_CWD = os.getcwd()


def _display(path: Path) -> str:
    try:
        return os.path.relpath(os.path.join(_CWD, path), _CWD)
    except ValueError:
        return str(path)


_MATCHERS: dict[int, tuple[Settings, str, re.Pattern | None]] = {}


def _matcher(settings: Settings) -> tuple[str, re.Pattern | None]:
    """(config root, one regex for every exclude pattern), built once per settings."""
    got = _MATCHERS.get(id(settings))
    if got is not None and got[0] is settings:
        return got[1], got[2]
    patterns = [p.rstrip("/") for p in settings.exclude + settings.extend_exclude]
    regex = None
    if patterns:
        parts = []
        for pat in patterns:
            parts.append(fnmatch_translate(pat))
            parts.append(fnmatch_translate(pat + "/*"))
        regex = re.compile("|".join(f"(?:{p})" for p in parts))
    root = os.path.abspath(settings.root)
    _MATCHERS[id(settings)] = (settings, root, regex)
    return root, regex


def _excluded(path: Path, settings: Settings) -> bool:
    root, regex = _matcher(settings)
    if regex is None:
        return False
    name = path.name
    full = os.path.abspath(path)
    rel = os.path.relpath(full, root) if full.startswith(root) else path.as_posix()
    if os.sep != "/":
        rel = rel.replace(os.sep, "/")
    return bool(regex.match(name) or regex.match(rel))


class _GitIgnores:
    """Stacked .gitignore files; a path is ignored if any enclosing spec ignores it."""

    def __init__(self):
        self._specs: dict[Path, pathspec.PathSpec | None] = {}
        self._top: dict[Path, bool] = {}       # folder holds .git (or is /): stop there

    def _spec(self, folder: Path) -> pathspec.PathSpec | None:
        if folder not in self._specs:
            spec = None
            gi = folder / ".gitignore"
            if gi.is_file():
                try:
                    lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = pathspec.GitIgnoreSpec.from_lines(lines)
                except (OSError, ValueError):
                    spec = None
            self._specs[folder] = spec
        return self._specs[folder]

    def ignored(self, path: Path, is_dir: bool) -> bool:
        folder = path.parent
        while True:
            spec = self._spec(folder)
            if spec is not None:
                rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
                if spec.match_file(rel):
                    return True
            top = self._top.get(folder)
            if top is None:
                top = self._top[folder] = (folder / ".git").exists() or \
                    folder.parent == folder
            if top:
                return False
            folder = folder.parent


def discover(paths: list[str], resolver: ConfigResolver) -> list[Target]:
    seen: set[str] = set()
    targets: list[Target] = []
    gitignores = _GitIgnores()

    def add(path: Path, kind: str, settings: Settings | None = None) -> None:
        real = os.path.realpath(path) if path.is_symlink() else os.path.abspath(path)
        if real in seen:
            return
        seen.add(real)
        targets.append(Target(path, _display(path), kind,
                              settings if settings is not None else resolver.for_path(path)))

    for raw in paths:
        root = Path(raw)
        if root.is_file():
            kind = file_kind(root) or ("cuda" if root.suffix.lower() in HEADER_SUFFIXES
                                       else None)
            add(root, kind or "cuda")
            continue
        if not root.is_dir():
            raise FileNotFoundError(f"{raw}: no such file or directory")
        for folder, dirs, files in os.walk(root):
            fpath = Path(folder)
            settings = resolver.for_path(fpath / "_")
            keep = []
            for d in sorted(dirs):
                dpath = fpath / d
                if _excluded(dpath, settings) or (settings.respect_gitignore and
                                                  gitignores.ignored(dpath, True)):
                    continue
                keep.append(d)
            dirs[:] = keep
            for f in sorted(files):
                path = fpath / f
                kind = file_kind(path)
                if kind is None:
                    continue
                if _excluded(path, settings) or (settings.respect_gitignore and
                                                 gitignores.ignored(path, False)):
                    continue
                add(path, kind, settings)
    # local headers included from .cu files are linted once, like .cuh files
    for target in list(targets):
        if target.kind != "cuda":
            continue
        for header in _local_includes(target.path):
            if header.suffix.lower() in HEADER_SUFFIXES and \
                    os.path.abspath(header) not in seen:
                if not _excluded(header, target.settings):
                    add(header, "cuda")
    return targets


def _local_includes(path: Path) -> list[Path]:
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
    except OSError:
        return []
    out = []
    for m in _INCLUDE.finditer(head):
        try:
            candidate = path.parent / m.group(1).decode("utf-8")
        except UnicodeDecodeError:
            continue
        if candidate.is_file():
            out.append(candidate)
    return out
