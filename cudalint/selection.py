"""Which rules run: ``select`` / ``extend-select`` / ``ignore`` with ruff's semantics.

A selector is a code prefix (``CL2``, ``CL20``, ``CL202``) or ``ALL``. Without ``select``
the default set is every rule whose ``default_enabled`` is true. When a code matches both
an enabling and an ignoring selector, the more specific (longer) one wins; ``ignore`` wins
a tie. ``per-file-ignores`` then removes codes for files that match a glob.
"""
from __future__ import annotations

from fnmatch import fnmatch
from functools import lru_cache
from pathlib import PurePath

from cudalint.config import Settings
from cudalint.rule import Rule, all_rules


def _specificity(selector: str, code: str) -> int:
    if selector == "ALL":
        return 0
    return len(selector) if code.startswith(selector) else -1


def unknown_selectors(selectors: tuple[str, ...]) -> list[str]:
    codes = all_rules()
    return [s for s in selectors
            if s != "ALL" and not any(c.startswith(s) for c in codes)]


def is_enabled(code: str, rule: type[Rule], settings: Settings) -> bool:
    on = -1
    if settings.select is None:
        if rule.default_enabled:
            on = 0
    else:
        on = max((_specificity(s, code) for s in settings.select), default=-1)
    on = max([on] + [_specificity(s, code) for s in settings.extend_select])
    off = max((_specificity(s, code) for s in settings.ignore), default=-1)
    return on >= 0 and on > off


@lru_cache(maxsize=64)
def enabled_rules(settings: Settings) -> tuple[type[Rule], ...]:
    return tuple(r for code, r in all_rules().items() if is_enabled(code, r, settings))


def per_file_ignored(settings: Settings, filename: str) -> tuple[str, ...]:
    """Codes ignored for this file by ``per-file-ignores`` (globs relative to the config)."""
    if not settings.per_file_ignores:
        return ()
    path = PurePath(filename)
    try:
        rel = path.resolve().relative_to(PurePath(settings.root).resolve()) \
            if hasattr(path, "resolve") else path
    except ValueError:
        rel = path
    out: list[str] = []
    for glob, codes in settings.per_file_ignores:
        if fnmatch(rel.as_posix(), glob) or fnmatch(path.name, glob) or \
                fnmatch(rel.as_posix(), glob.rstrip("/") + "/*"):
            out.extend(codes)
    return tuple(out)


def code_ignored(code: str, ignored: tuple[str, ...]) -> bool:
    return any(s == "ALL" or code.startswith(s) for s in ignored)
