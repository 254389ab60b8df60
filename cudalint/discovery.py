"""Which files to lint: walk the given paths, honour ``exclude`` and ``.gitignore``
(nested ones too, through pathspec), and add the local headers that ``.cu`` files include.
Files named explicitly on the command line are always linted (like ruff), as CUDA when
their kind is unknown -- except the kinds of :data:`UNSUPPORTED` (none now), which are
skipped with a one-line warning (``cudalint: warning: NAME: ...; skipped``) that changes
no exit status. Jupyter notebooks (``*.ipynb``) are linted like Python files, found in
folders and named (cudalint/sources/notebook.py).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from fnmatch import translate as fnmatch_translate
from pathlib import Path
from typing import Callable

import pathspec

from cudalint.config import ConfigResolver, Settings
from cudalint.sources.base import HEADER_SUFFIXES, file_kind

_INCLUDE = re.compile(rb'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
# suffixes of files that are never linted, even when named: why, for the warning
UNSUPPORTED: dict[str, str] = {}


def unsupported(name: str | Path) -> str | None:
    """Why a file named on the command line (or as ``--stdin-filename``) is not linted;
    None when it is."""
    return UNSUPPORTED.get(os.path.splitext(os.fspath(name))[1].lower())


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
    objects cost more than the matching itself. Each folder's chain of specs (up to the
    repository's top) is found once; each spec has one combined regex that says whether
    any of its patterns can match at all (most paths match none), and only a path that
    one matches is given to pathspec for the exact gitignore verdict.
    """

    def __init__(self):
        self._specs: dict[str, tuple | None] = {}
        self._top: dict[str, bool] = {}        # folder holds .git (or is /): stop there
        self._chains: dict[str, tuple] = {}

    def _spec(self, folder: str) -> tuple | None:
        if folder not in self._specs:
            spec = None
            gi = os.path.join(folder, ".gitignore")
            if os.path.isfile(gi):
                try:
                    with open(gi, encoding="utf-8", errors="replace") as fh:
                        spec = pathspec.GitIgnoreSpec.from_lines(fh.read().splitlines())
                except (OSError, ValueError):
                    spec = None
            self._specs[folder] = None if spec is None else (spec, _any_pattern(spec))
        return self._specs[folder]

    def _chain(self, folder: str) -> tuple:
        """(folder, spec, prefilter) for folder and each enclosing one up to the top."""
        got = self._chains.get(folder)
        if got is None:
            spec = self._spec(folder)
            here = () if spec is None else ((folder, spec[0], spec[1]),)
            top = self._top.get(folder)
            if top is None:
                parent = os.path.dirname(folder)
                top = self._top[folder] = parent == folder or \
                    os.path.exists(os.path.join(folder, ".git"))
            got = here if top else here + self._chain(os.path.dirname(folder))
            self._chains[folder] = got
        return got

    def ignored(self, path: str, is_dir: bool) -> bool:
        for folder, spec, prefilter in self._chain(os.path.dirname(path)):
            rel = path[len(folder):].lstrip(os.sep)
            if os.sep != "/":
                rel = rel.replace(os.sep, "/")
            if is_dir:
                rel += "/"
            if (prefilter is None or prefilter.match(rel)) and spec.match_file(rel):
                return True
        return False


def _any_pattern(spec) -> re.Pattern | None:
    """One regex that matches where any pattern of the spec matches (None: cannot tell,
    every path goes to pathspec)."""
    try:
        parts = [p.regex.pattern for p in spec.patterns
                 if p.include is not None and p.regex is not None]
        if not parts:
            return re.compile(r"(?!)")
        if not all(isinstance(x, str) for x in parts):
            return None
        return re.compile("|".join(f"(?:{x.replace('(?P<ps_d>', '(?:')})" for x in parts))
    except (AttributeError, re.error):
        return None


_KINDS = {".cu": "cuda", ".cuh": "cuda", ".py": "python", ".pyi": "python",
          ".ipynb": "notebook"}


def _rel(full: str, root: str) -> str:
    """os.path.relpath(full, root) for a normalised absolute path (the common case, a
    path under root, without relpath's own normalising)."""
    if full.startswith(root) and full[len(root):len(root) + 1] == os.sep:
        return full[len(root) + 1:]
    return os.path.relpath(full, root)


def _excluded_entry(posix_folder: str, absfolder: str, name: str,
                    settings: Settings) -> bool:
    """:func:`_excluded` for an entry of a walked folder, on strings (``posix_folder``:
    ``Path(folder).as_posix()``)."""
    root, regex = _matcher(settings)
    if regex is None:
        return False
    if regex.match(name):
        return True
    full = os.path.join(absfolder, name)
    rel = _rel(full, root) if full.startswith(root) else \
        (name if posix_folder == "." else f"{posix_folder}/{name}")
    if os.sep != "/":
        rel = rel.replace(os.sep, "/")
    return bool(regex.match(rel))


_KIND_OF_NAME: dict[str, str | None] = {}


def _kind_of(name: str) -> str | None:
    kind = _KINDS.get(os.path.splitext(name)[1].lower())
    if kind is None:
        kind = _KIND_OF_NAME.get(name, "")
        if kind == "":
            kind = _KIND_OF_NAME[name] = file_kind(name)   # build files, kinds added later
    return kind


def discover(paths: list[str], resolver: ConfigResolver,
             includes: Callable[[Path, Settings], list[Path]] | None = None,
             skipped: list[tuple[str, str]] | None = None,
             unbuilt: list[tuple[str, str]] | None = None) -> list[Target]:
    """``includes``: finds a .cu file's local headers in place of :func:`_local_includes`
    (the runner's cache lookup remembers them for unchanged files). ``skipped`` receives
    (display name, why) for each file named explicitly that is not linted
    (:func:`unsupported`). ``unbuilt``: when given, ``.cu`` files found by walking a
    folder that no build of the project compiles (:mod:`cudalint.project.unbuilt`) are
    left out, and (display name, why) of each goes there; files named on the command
    line, and every file under the ``lint-unbuilt`` setting, are linted."""
    seen: set[str] = set()
    targets: list[Target] = []
    gitignores = _GitIgnores()
    walked: dict[int, Path] = {}            # id of a walked .cu target -> the walk's root
    explicit: set[str] = set()

    def add(path: Path, kind: str, settings: Settings | None = None,
            absolute: str | None = None, display: str | None = None) -> None:
        real = absolute or (os.path.realpath(path) if path.is_symlink()
                            else os.path.abspath(path))
        if real in seen:
            return
        seen.add(real)
        targets.append(Target(path, display if display is not None else _display(path),
                              kind,
                              settings if settings is not None else resolver.for_path(path)))

    for raw in paths:
        root = Path(raw)
        if root.is_file():
            explicit.add(os.path.abspath(root))
            why = unsupported(root)
            if why is not None:
                if skipped is not None:
                    skipped.append((_display(root), why))
                continue
            kind = file_kind(root) or ("cuda" if root.suffix.lower() in HEADER_SUFFIXES
                                       else None)
            add(root, kind or "cuda")
            continue
        if not root.is_dir():
            raise FileNotFoundError(f"{raw}: no such file or directory")
        for folder, dirs, files in os.walk(root):
            absfolder = os.path.abspath(folder)
            posix_folder = Path(folder).as_posix()
            settings = resolver.for_folder(absfolder)
            git = settings.respect_gitignore
            keep = []
            for d in sorted(dirs):
                if _excluded_entry(posix_folder, absfolder, d, settings) or (
                        git and gitignores.ignored(os.path.join(absfolder, d), True)):
                    continue
                keep.append(d)
            dirs[:] = keep
            shown = None
            for f in sorted(files):
                kind = _kind_of(f)
                if kind is None:
                    continue
                absolute = os.path.join(absfolder, f)
                if _excluded_entry(posix_folder, absfolder, f, settings) or (
                        git and gitignores.ignored(absolute, False)):
                    continue
                if shown is None:
                    shown = _display(Path(folder))
                before = len(targets)
                add(Path(folder, f), kind, settings, absolute,
                    f if shown == "." else os.path.join(shown, f))
                if len(targets) > before and f.lower().endswith(".cu"):
                    walked[id(targets[-1])] = root
    if unbuilt is not None and walked:
        from cudalint.project.unbuilt import unbuilt_reason
        kept = []
        for target in targets:
            root = walked.get(id(target))
            why = None if root is None or target.settings.lint_unbuilt or \
                os.path.abspath(target.path) in explicit else \
                unbuilt_reason(target.path, root)
            if why is None:
                kept.append(target)
            else:
                unbuilt.append((target.display, why))
        targets = kept
    # local headers included from .cu files are linted once, like .cuh files
    for target in list(targets):
        if target.kind != "cuda":
            continue
        for header in (includes(target.path, target.settings) if includes is not None
                       else _local_includes(target.path)):
            if header.suffix.lower() in HEADER_SUFFIXES and \
                    os.path.abspath(header) not in seen:
                if not _excluded(header, target.settings):
                    add(header, "cuda")
    # CUDA files the project's Python reads and compiles (a .h that no .cu includes):
    # linted at their own positions (cudalint/sources/python/readers.py)
    from cudalint.sources.python.readers import read_files
    real: set[str] | None = None
    for target in list(targets):
        if target.kind == "python":
            for header in read_files(str(target.path)):
                if real is None:     # the files found under a symbolic link too
                    real = {os.path.realpath(t.path) for t in targets if t.kind == "cuda"}
                if header not in real and not _excluded(Path(header), target.settings):
                    real.add(header)
                    add(Path(header), "cuda")
    return targets


_HASH_INCLUDE = re.compile(rb'#\s*include\s*"([^"]+)"')
_BLANK = b" \t\r\f\v"


def _include_names(head: bytes) -> list[bytes]:
    """``_INCLUDE.finditer(head)``'s names, about ten times faster: the regex engine looks
    for ``#`` instead of trying ``^\\s*`` at every line start; a ``#`` counts when only
    blanks stand before it on its line (what ``^\\s*`` allows)."""
    out = []
    pos = 0
    while True:
        m = _HASH_INCLUDE.search(head, pos)
        if m is None:
            return out
        start = m.start()
        if head[head.rfind(b"\n", 0, start) + 1:start].strip(_BLANK):
            pos = start + 1
        else:
            out.append(m.group(1))
            pos = m.end()


def include_names(path: Path | str) -> list[str] | None:
    """The quoted include names of a file's first megabyte (None: unreadable)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
    except OSError:
        return None
    out = []
    for raw in _include_names(head):
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            continue
    return out


def existing_includes(path: Path, names: list[str]) -> list[Path]:
    """The names that are files, relative to the including file's folder."""
    parent = path.parent
    return [parent / name for name in names if os.path.isfile(os.path.join(parent, name))]


def _local_includes(path: Path) -> list[Path]:
    return existing_includes(path, include_names(path) or [])
