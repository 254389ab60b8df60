"""Which rules run: ``select`` / ``extend-select`` / ``ignore`` with ruff's semantics.

A selector is a code prefix (``CL2``, ``CL20``, ``CL202``) or ``ALL``. Without ``select``
the default set is every rule whose ``default_enabled`` is true. When a code matches both
an enabling and an ignoring selector, the more specific (longer) one wins; ``ignore`` wins
a tie. ``per-file-ignores`` then removes codes for files that match a glob.
"""
from __future__ import annotations

import difflib
from fnmatch import fnmatch
from functools import lru_cache
from pathlib import PurePath

from cudalint.config import ConfigError, Settings
from cudalint.rule import Rule, all_rules


def _specificity(selector: str, code: str) -> int:
    if selector == "ALL":
        return 0
    return len(selector) if code.startswith(selector) else -1


def unknown_selectors(selectors: tuple[str, ...]) -> list[str]:
    codes = all_rules()
    return [s for s in selectors
            if s != "ALL" and not any(c.startswith(s) for c in codes)]


def closest_selector(selector: str) -> str:
    """The valid selector nearest to a typo, as the error's hint: the code of a rule given
    by (nearly) its name, the numerically nearest code or prefix of the same length for
    ``CL`` and digits (``CL9`` -> ``CL6``, ``CL999`` -> ``CL601``), else by spelling."""
    rules = all_rules()
    wanted = selector.strip()
    names = {rule.name: code for code, rule in rules.items()}
    near = difflib.get_close_matches(wanted.lower(), list(names), n=1, cutoff=0.6)
    if near:
        return names[near[0]]
    prefixes = sorted({c[:n] for c in rules for n in range(3, len(c) + 1)})
    upper = wanted.upper()
    if upper.startswith("CL") and upper[2:].isdigit():
        upper = upper[:max(len(c) for c in rules)]
        same = [p for p in prefixes if len(p) == len(upper)] or list(rules)
        return min(same, key=lambda p: (abs(int(p[2:]) - int(upper[2:] or 0)), p))
    best = difflib.get_close_matches(upper, prefixes + ["ALL"], n=1, cutoff=0.3)
    return best[0] if best else ""


def selector_error(selector: str, key: str, where: str) -> str:
    """One message for a bad selector on the command line or in a config file."""
    near = closest_selector(selector)
    hint = f"closest valid: `{near}`; " if near else ""
    return (f"{where}: unknown rule selector `{selector}` in `{key}` ({hint}see "
            "`cudalint rule --all`)")


def check_settings(settings: Settings) -> None:
    """Every rule selector of one config file's settings names a rule or a prefix of one,
    as on the command line: a typo in ``select`` would otherwise turn every rule off and
    report "All checks passed!" (ruff refuses such a file too). ``severity`` maps exact
    codes. Raises :class:`ConfigError` naming the file, the key and the closest code."""
    where = settings.config_path or "config"
    keyed = [("select", settings.select or ()), ("ignore", settings.ignore),
             ("extend-select", settings.extend_select)]
    keyed += [(f"per-file-ignores.\"{glob}\"", codes)
              for glob, codes in settings.per_file_ignores]
    for key, selectors in keyed:
        bad = unknown_selectors(tuple(selectors))
        if bad:
            raise ConfigError(selector_error(bad[0], key, where))
    rules = all_rules()
    for code, _ in settings.severity:
        if code not in rules:
            raise ConfigError(selector_error(code, f"severity.{code}", where).replace(
                "rule selector", "rule code"))


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
