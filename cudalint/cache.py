"""Results cached by content: ``.cudalint_cache/<version>/<key>.json`` under the config's
folder, where key = hash(version, code of cudalint and its rules, settings, enabled rules,
path, file bytes). Writes are atomic (temp file + rename), and a cache that cannot be read or written is simply not used:
a killed run or a full disk can never leave a result that is read back wrong.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from . import __version__
from .diagnostics import Diagnostic
from .engine import FileResult

CACHE_DIR = ".cudalint_cache"
TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
       "# This file is a cache directory tag created by cudalint.\n"
       "# For information about cache directory tags see https://bford.info/cachedir/\n")


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Size and mtime of every module of cudalint and of every rule (third-party too).

    An upgrade, an edited rule or a newly installed plugin changes the key, so a result
    computed by other code is never read back; stat-ing ~100 files costs well under 1 ms.
    """
    from .rule import all_rules
    import sys
    files = set()
    pkg = Path(__file__).resolve().parent
    files.update(pkg.rglob("*.py"))
    for rule in all_rules().values():
        mod = sys.modules.get(rule.__module__)
        f = getattr(mod, "__file__", None)
        if f:
            files.add(Path(f))
    h = hashlib.sha256()
    for f in sorted(files):
        try:
            st = f.stat()
        except OSError:
            continue
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:16]


def cache_key(path: str, data: bytes, settings_fp: str, rules: str) -> str:
    h = hashlib.sha256()
    for part in (__version__, code_fingerprint(), settings_fp, rules, path):
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    h.update(data)
    return h.hexdigest()


STALE_TEMP_S = 3600     # a temp file this old belongs to a run that was killed


def _sweep_temps(folder: Path) -> None:
    """Remove the temp files of killed runs (never a live run's: those are recent)."""
    try:
        now = time.time()
        with os.scandir(folder) as it:
            for e in it:
                if e.name.startswith(".tmp-") and now - e.stat().st_mtime > STALE_TEMP_S:
                    os.unlink(e.path)
    except OSError:
        pass


class Cache:
    def __init__(self, root: Path):
        self.base = root / CACHE_DIR
        self.dir = self.base / __version__
        self._ready = False

    def _prepare(self) -> bool:
        if self._ready:
            return True
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            _sweep_temps(self.dir)
            tag = self.base / "CACHEDIR.TAG"
            if not tag.exists():
                tag.write_text(TAG)
            gi = self.base / ".gitignore"
            if not gi.exists():
                gi.write_text("*\n")
            self._ready = True
        except OSError:
            return False
        return True

    def get(self, key: str) -> FileResult | None:
        try:
            with open(self.dir / f"{key}.json", encoding="utf-8") as fh:
                data = json.load(fh)
            result = FileResult(data["path"], [Diagnostic.from_json(d) for d in data["d"]],
                                {int(k): v for k, v in data["lines"].items()}, data["loc"])
        except Exception:      # unreadable, truncated or not our shape: a miss, never a crash
            return None
        return result if _well_formed(result) else None

    def put(self, key: str, result: FileResult) -> None:
        if not self._prepare():
            return
        payload = {"path": result.path, "d": [d.to_cache() for d in result.diagnostics],
                   "lines": result.lines, "loc": result.lines_of_code}
        try:
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(payload, fh)
                os.replace(tmp, self.dir / f"{key}.json")
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except (OSError, TypeError, ValueError):
            return


def _well_formed(result: FileResult) -> bool:
    """The types the outputs rely on (an entry is only ever written whole by us; this
    guards against a file that was damaged or written by something else)."""
    if not (isinstance(result.path, str) and type(result.lines_of_code) is int and
            all(isinstance(v, str) for v in result.lines.values())):
        return False
    for d in result.diagnostics:
        if not (all(isinstance(v, str) for v in (d.code, d.name, d.message, d.severity,
                                                 d.filename, d.url)) and
                all(type(v) is int for v in (d.row, d.column, d.end_row, d.end_column,
                                             d.start_offset, d.end_offset)) and
                isinstance(d.metrics, dict) and isinstance(d.suppressed, bool) and
                (d.noqa_row is None or type(d.noqa_row) is int)):
            return False
        if d.fix is not None and not all(
                type(e.start) is int and type(e.end) is int and isinstance(e.content, str)
                for e in d.fix.edits):
            return False
    return True
