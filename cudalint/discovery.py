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
    """Stacked .gitignore files; a path is ignored if any enclosing spec ignores it.

    Works on absolute path strings: discovery visits every file of a tree, and pathlib
    objects cost more than the matching itself.
    """

    def __init__(self):
        self._specs: dict[str, pathspec.PathSpec | None] = {}
        self._top: dict[str, bool] = {}        # folder holds .git (or is /): stop there

    def _spec(self, folder: str) -> pathspec.PathSpec | None:
        if folder not in self._specs:
            spec = None
            gi = os.path.join(folder, ".gitignore")
            if os.path.isfile(gi):
                try:
                    with open(gi, encoding="utf-8", errors="replace") as fh:
                        spec = pathspec.GitIgnoreSpec.from_lines(fh.read().splitlines())
                except (OSError, ValueError):
                    spec = None
            self._specs[folder] = spec
        return self._specs[folder]

    def ignored(self, path: str, is_dir: bool) -> bool:
        folder = os.path.dirname(path)
        while True:
            spec = self._spec(folder)
            if spec is not None:
                rel = path[len(folder):].lstrip(os.sep)
                if os.sep != "/":
                    rel = rel.replace(os.sep, "/")
                if spec.match_file(rel + ("/" if is_dir else "")):
                    return True
            top = self._top.get(folder)
            if top is None:
                parent = os.path.dirname(folder)
                top = self._top[folder] = parent == folder or \
                    os.path.exists(os.path.join(folder, ".git"))
            if top:
                return False
            folder = os.path.dirname(folder)


_KINDS = {".cu": "cuda", ".cuh": "cuda", ".py": "python", ".pyi": "python"}


def discover(paths: list[str], resolver: ConfigResolver) -> list[Target]:
    seen: set[str] = set()
    targets: list[Target] = []
    gitignores = _GitIgnores()

    def add(path: Path, kind: str, settings: Settings | None = None,
            absolute: str | None = None) -> None:
        real = absolute or (os.path.realpath(path) if path.is_symlink()
                            else os.path.abspath(path))
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
            absfolder = os.path.abspath(folder)
            settings = resolver.for_path(Path(folder) / "_")
            git = settings.respect_gitignore
            keep = []
            for d in sorted(dirs):
                dpath = os.path.join(folder, d)
                if _excluded(Path(dpath), settings) or (
                        git and gitignores.ignored(os.path.join(absfolder, d), True)):
                    continue
                keep.append(d)
            dirs[:] = keep
            for f in sorted(files):
                kind = _KINDS.get(os.path.splitext(f)[1].lower())
                if kind is None:
                    kind = file_kind(f)          # kinds added later (build files, ...)
                    if kind is None:
                        continue
                absolute = os.path.join(absfolder, f)
                path = Path(folder, f)
                if _excluded(path, settings) or (git and gitignores.ignored(absolute, False)):
                    continue
                add(path, kind, settings, absolute)
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
