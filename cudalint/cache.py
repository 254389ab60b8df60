"""Results cached per file in one index per cache folder:
``.cudalint_cache/<version>/index.bin`` under the config's folder.

Each entry, by the path shown for the file, holds

* ``key``: hash(version, settings, build files, ptxas logs, path, the file's bytes and
  the bytes of the local headers it includes) -- the content key, always checked when
  anything below does not match;
* ``sig``: the file's stat signature (mtime_ns, size, inode, ctime_ns), and ``deps``: the
  same for every header candidate it includes (or None where there is none);
* ``ctx``: hash of what does not come from the file's bytes (settings, build files,
  ptxas logs), and the result.

A warm run stats each file and, when the signature, the headers' signatures and ``ctx``
all match, reads nothing else (like ruff). A signature is only trusted when the file was
last changed (mtime or ctime) at least ``RACY_NS`` before the run that recorded it began,
so a write within the same timestamp tick as our read is never hidden (git's "racy
clean" rule); otherwise, and whenever a signature differs (a touched file, a checkout),
the file is read and its content key compared. A ``touch`` costs one read; a change with
size and mtime restored still changes ctime, so it is seen.

The index carries the code fingerprint (cudalint's and the rules' files, plugins,
installed distributions): other code means an empty cache. It is written once per run,
atomically (temp file + rename) with a checksum; a file that cannot be read, is truncated
or fails the checksum is an empty cache, never a crash, and a cache that cannot be
written (full disk, read-only folder) is simply not used.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudalint import __version__
from cudalint.sources.signature import Sig, file_sig

if TYPE_CHECKING:
    from cudalint.engine import FileResult

CACHE_DIR = ".cudalint_cache"
INDEX_NAME = "index.bin"
FORMAT = 3
MAGIC = b"CLIX\n"
RACY_NS = 2_000_000_000        # a change this recent may hide in the timestamp's tick
TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
       "# This file is a cache directory tag created by cudalint.\n"
       "# For information about cache directory tags see https://bford.info/cachedir/\n")

def trusted(sig: Sig | None, started_ns: int) -> bool:
    """Old enough, at the start of the run that recorded it, to stand for the content."""
    return sig is not None and max(sig[0], sig[3]) < started_ns - RACY_NS


# ---------------------------------------------------------------------------------------
# which code computed a result


def _py_files(folder: str, out: list[str]) -> None:
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        out.extend(os.path.join(root, f) for f in files if f.endswith(".py"))


def _entry_point_modules(ep_text: str) -> list[str]:
    """Modules named in the [cudalint.rules] section of an entry_points.txt."""
    out, inside = [], False
    for line in ep_text.splitlines():
        line = line.strip()
        if line.startswith("["):
            inside = line == "[cudalint.rules]"
        elif inside and "=" in line:
            out.append(line.split("=", 1)[1].split(":", 1)[0].strip())
    return out


def _code_files() -> tuple[list[str], list[str]]:
    """(files whose size and mtime identify the code, names that do): cudalint's and the
    built-in rules' modules, every installed distribution (name and version: an upgraded
    tree-sitter or libclang), and the modules of rule plugins found through entry points
    (read from the distributions' entry_points.txt, without importing anything)."""
    from importlib.util import find_spec
    files: list[str] = []
    names: list[str] = []
    _py_files(os.path.dirname(os.path.abspath(__file__)), files)
    modules = ["cudalint.rules"]
    for entry in sys.path:
        if os.path.basename(entry) not in ("site-packages", "dist-packages"):
            continue      # where installed distributions live (not the working folder)
        try:
            with os.scandir(entry or ".") as it:
                dists = sorted(e.name for e in it if e.name.endswith((".dist-info",
                                                                       ".egg-info")))
        except OSError:
            continue
        names.extend(dists)
        for d in dists:
            try:
                with open(os.path.join(entry or ".", d, "entry_points.txt"),
                          encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            if "cudalint.rules" in text:
                found = _entry_point_modules(text)
                names.extend(found)
                modules.extend(found)
    for module in dict.fromkeys(modules):
        try:
            spec = find_spec(module)
        except (ImportError, ValueError, AttributeError):
            spec = None
        if spec is None:
            names.append(f"missing:{module}")
            continue
        if spec.submodule_search_locations:
            for loc in spec.submodule_search_locations:
                _py_files(loc, files)
        elif spec.origin:
            files.append(spec.origin)
    return sorted(set(files)), sorted(set(names))


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Size and mtime of every module of cudalint and of every rule (third-party too),
    and the installed distributions.

    An upgrade, an edited rule or a newly installed plugin changes it, so a result
    computed by other code is never read back. Nothing is imported (a fully cached run
    loads no rule, no parser): a few hundred stats, about a millisecond.
    """
    files, names = _code_files()
    h = hashlib.sha256()
    h.update(f"{sys.version_info[:3]}\0{__version__}\0".encode())
    for n in names:
        h.update(n.encode("utf-8", "surrogateescape") + b"\0")
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            continue
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:16]


def cache_key(path: str, data: bytes, context: str, extra: str = "") -> str:
    """The content key: ``context`` (see :func:`context_key`'s input), the path shown,
    the file's bytes and ``extra`` (the included headers' digest)."""
    h = hashlib.sha256()
    for part in (__version__, code_fingerprint(), context, extra, path):
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    h.update(data)
    return h.hexdigest()


def context_key(context: str) -> bytes:
    return hashlib.sha256(context.encode("utf-8", "surrogateescape")).digest()[:16]


# ---------------------------------------------------------------------------------------
# results <-> plain tuples (marshal)


def _plain(value: Any, depth: int = 0) -> bool:
    """Only what marshal writes and reads back as the same thing."""
    if value is None or type(value) in (str, int, float, bool):
        return True
    if depth > 20:
        return False
    if type(value) in (list, tuple):
        return all(_plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(type(k) in (str, int) and _plain(v, depth + 1)
                   for k, v in value.items())
    return False


def encode_result(result: "FileResult") -> tuple | None:
    diags = []
    for d in result.diagnostics:
        fix = None
        if d.fix is not None:
            fix = (d.fix.message, tuple((e.start, e.end, e.content) for e in d.fix.edits),
                   d.fix.applicability)
        rc = tuple((e.content, tuple(e.start_rc), tuple(e.end_rc)) for e in d.fix_edits_rc)
        diags.append((d.code, d.name, d.message, d.severity, d.filename, d.row, d.column,
                      d.end_row, d.end_column, d.start_offset, d.end_offset, fix,
                      d.metrics, d.url, d.suppressed, d.noqa_row, rc)
                     + (() if d.cell is None else (d.cell,)))      # a notebook's cell
    out = (result.path, result.lines_of_code, tuple(result.lines.items()), tuple(diags),
           tuple(tuple(u) for u in result.unread))
    return out if _plain(out) else None


@dataclass
class CachedResult:
    """A result read back from the cache: :class:`cudalint.engine.FileResult`'s fields and
    ``visible``, without importing the engine (whose import, mostly importlib.metadata
    through the rule registry, was a tenth of a fully cached run's CPU). A test keeps the
    two alike."""
    path: str
    diagnostics: list = field(default_factory=list)
    lines: dict = field(default_factory=dict)
    lines_of_code: int = 0
    error: str | None = None
    unread: list = field(default_factory=list)

    @property
    def visible(self) -> list:
        return [d for d in self.diagnostics if not d.suppressed]


def decode_result(data: tuple) -> "CachedResult | None":
    from cudalint.diagnostics import Diagnostic, Edit, Fix, edit_rc
    FileResult = CachedResult
    try:
        path, loc, lines, raw, unread = data
        if not raw and not lines and not unread and type(path) is str and type(loc) is int:
            return FileResult(path, [], {}, loc)       # most files: nothing to check
        diags = []
        for item in raw:
            (code, name, message, severity, filename, row, column, end_row, end_column,
             start, end, fix, metrics, url, suppressed, noqa_row, rc) = item[:17]
            cell = item[17] if len(item) == 18 else None
            if fix is not None:
                fix = Fix(fix[0], tuple(Edit(s, e, c) for s, e, c in fix[1]), fix[2])
            d = Diagnostic(code=code, name=name, message=message, severity=severity,
                           filename=filename, row=row, column=column, end_row=end_row,
                           end_column=end_column, start_offset=start, end_offset=end,
                           fix=fix, metrics=metrics, url=url, suppressed=suppressed,
                           noqa_row=noqa_row, cell=cell)
            d.fix_edits_rc = [edit_rc(c, tuple(a), tuple(b)) for c, a, b in rc]
            diags.append(d)
        result = FileResult(path, diags, dict(lines), loc, unread=[tuple(u) for u in unread])
    except Exception:          # not our shape: a miss, never a crash
        return None
    return result if _well_formed(result) else None


# ---------------------------------------------------------------------------------------
# the index


BUILD_PREFIX = "\0build\0"     # index names of folders' build digests (no file's name)
INCLUDES_PREFIX = "\0inc\0"     # index names of the include lists discovery reads


def build_chain(folder: str, names: tuple, memo: dict | None = None) -> tuple:
    """Stat signatures of what :func:`cudalint.project.buildflags.build_digest` reads for
    a file in ``folder``: each of ``names`` (its BUILD_FILES) in the folder and in every
    folder above it, up to one holding ``.git`` -- the walk of ``_folder_digest``
    (tests/test_cache.py checks that it covers every file the digest names)."""
    if memo is not None and (folder, names) in memo:
        return memo[folder, names]
    sigs = tuple(file_sig(os.path.join(folder, name)) for name in names)
    parent = os.path.dirname(folder)
    if parent != folder and not os.path.exists(os.path.join(folder, ".git")):
        sigs += build_chain(parent, names, memo)
    if memo is not None:
        memo[folder, names] = sigs
    return sigs


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


def _header(fp: str) -> bytes:
    return f"{FORMAT} {__version__} {fp}\n".encode()


def read_index(path: Path | str, check_code: bool = True) -> dict[str, tuple]:
    """The entries of an index file; {} for anything that is not a whole, current index
    written by this code (missing, truncated, damaged, another version or fingerprint).
    The plain-text header is checked before anything is unmarshalled: an index written
    by other code (or planted in a repository) is never loaded. ``check_code=False``
    (tests, tools): whatever code fingerprint it carries."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
        if not blob.startswith(MAGIC):
            return {}
        end = blob.index(b"\n", len(MAGIC)) + 1
        header = blob[len(MAGIC):end]
        fmt, version, fp = header.decode("ascii").split()
        if fmt != str(FORMAT) or version != __version__ or \
                (check_code and header != _header(code_fingerprint())):
            return {}
        digest, body = blob[end:end + 32], blob[end + 32:]
        if hashlib.blake2b(header + body, digest_size=32).digest() != digest:
            return {}
        entries = marshal.loads(body)
        return entries if type(entries) is dict else {}
    except Exception:
        return {}


def _gone(name: str) -> bool:
    """An entry whose file or folder no longer exists (dropped when the index is saved)."""
    for prefix in (BUILD_PREFIX, INCLUDES_PREFIX):
        if name.startswith(prefix):
            return not os.path.exists(name[len(prefix):])
    return not os.path.exists(name.split("\0", 1)[0])


class Cache:
    """One cache folder's index: loaded once, written once (:meth:`save`)."""

    def __init__(self, root: Path, started_ns: int | None = None):
        self.base = Path(root) / CACHE_DIR
        self.dir = self.base / __version__
        self.index_path = self.dir / INDEX_NAME
        self.started_ns = time.time_ns() if started_ns is None else started_ns
        self._entries: dict[str, tuple] | None = None
        self._changed: dict[str, tuple] = {}
        self._ready = False

    # reading

    @property
    def entries(self) -> dict[str, tuple]:
        if self._entries is None:
            self._entries = read_index(self.index_path)
        return self._entries

    def entry(self, name: str) -> tuple | None:
        e = self.entries.get(name)
        if type(e) is not tuple or len(e) != 5 or type(e[0]) is not str or \
                type(e[2]) is not tuple or type(e[3]) is not bytes or \
                not all(type(d) is tuple and len(d) == 2 and type(d[0]) is str
                        for d in e[2]):
            return None
        return e

    def build_digest(self, folder: str, memo: dict | None = None) -> str | None:
        """A folder's build digest recorded by an earlier run, if no build file it depends
        on changed since (by stat signature); None: compute it."""
        e = self.entries.get(BUILD_PREFIX + folder)
        if type(e) is not tuple or len(e) != 3 or type(e[0]) is not tuple or \
                type(e[2]) is not str or not all(type(n) is str for n in e[0]):
            return None
        return e[2] if e[1] == build_chain(folder, e[0], memo) else None

    def record_build(self, folder: str, names: tuple, chain: tuple, digest: str) -> None:
        """Remember a folder's build digest with the signatures taken before computing it
        (kept only when every one is trusted)."""
        if all(s is None or trusted(s, self.started_ns) for s in chain):
            self._changed[BUILD_PREFIX + folder] = (tuple(names), chain, digest)

    def include_names(self, path: str, sig: Sig) -> list[str] | None:
        """The quoted include names discovery found in a .cu file, if it is unchanged."""
        e = self.entries.get(INCLUDES_PREFIX + path)
        if type(e) is not tuple or len(e) != 2 or e[0] != sig or type(e[1]) is not tuple \
                or not all(type(n) is str for n in e[1]):
            return None
        return list(e[1])

    def record_includes(self, path: str, sig: Sig, names: list[str]) -> None:
        if trusted(sig, self.started_ns):
            self._changed[INCLUDES_PREFIX + path] = (sig, tuple(names))

    def result(self, entry: tuple) -> "FileResult | None":
        return decode_result(entry[4])

    def get(self, key: str) -> "FileResult | None":
        """The result stored under a content key, if any (a scan: for tests and tools)."""
        for e in list(self._changed.values()) + list(self.entries.values()):
            if type(e) is tuple and len(e) == 5 and e[0] == key:
                return decode_result(e[4])
        return None

    # writing

    def put(self, key: str, result: "FileResult", name: str | None = None,
            sig: Sig | None = None, deps: tuple = (), ctx: bytes = b"") -> None:
        """Remember a result; :meth:`save` writes it. ``sig`` and ``deps`` are the stat
        signatures taken when the bytes behind ``key`` were read: the signature is kept
        only when it and every dependency's are trusted (see :func:`trusted`)."""
        payload = encode_result(result)
        if payload is None:
            return
        self._record(name or result.path, key, sig, deps, ctx, payload)

    def refresh(self, name: str, entry: tuple, sig: Sig | None, deps: tuple,
                ctx: bytes) -> None:
        """The content key matched again: take the new signatures."""
        self._record(name, entry[0], sig, deps, ctx, entry[4])

    def _record(self, name, key, sig, deps, ctx, payload) -> None:
        if sig is not None and not (trusted(sig, self.started_ns) and all(
                s is None or trusted(s, self.started_ns) for _, s in deps)):
            sig = None
        self._changed[name] = (key, sig, tuple(deps), ctx, payload)

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

    def save(self) -> None:
        """Write the index if anything changed: what is on disk now (another run may have
        written it meanwhile) with this run's entries on top; temp file + rename."""
        if not self._changed or not self._prepare():
            return
        entries = {n: e for n, e in read_index(self.index_path).items()
                   if n not in self._changed and not _gone(n)}
        entries.update(self._changed)
        try:
            body = marshal.dumps(entries)
        except ValueError:
            return
        header = _header(code_fingerprint())
        blob = MAGIC + header + hashlib.blake2b(header + body, digest_size=32).digest() + body
        try:
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".bin")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(blob)
                os.replace(tmp, self.index_path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except (OSError, TypeError, ValueError):
            return
        self._entries = entries
        self._changed = {}


def _well_formed(result: "FileResult") -> bool:
    """The types the outputs rely on (an index is only ever written whole by us, with a
    checksum; this guards against one written by something else)."""
    if not (isinstance(result.path, str) and type(result.lines_of_code) is int and
            all(type(k) is int and isinstance(v, str) for k, v in result.lines.items()) and
            all(len(u) == 3 and type(u[0]) is int and type(u[1]) is int and
                isinstance(u[2], str) for u in result.unread)):
        return False
    for d in result.diagnostics:
        if not (all(isinstance(v, str) for v in (d.code, d.name, d.message, d.severity,
                                                 d.filename, d.url)) and
                all(type(v) is int for v in (d.row, d.column, d.end_row, d.end_column,
                                             d.start_offset, d.end_offset)) and
                isinstance(d.metrics, dict) and isinstance(d.suppressed, bool) and
                (d.noqa_row is None or type(d.noqa_row) is int) and
                (d.cell is None or type(d.cell) is int)):
            return False
        if d.fix is not None and not all(
                type(e.start) is int and type(e.end) is int and isinstance(e.content, str)
                for e in d.fix.edits):
            return False
        if not all(isinstance(e.content, str) and len(e.start_rc) == 2 and
                   len(e.end_rc) == 2 for e in d.fix_edits_rc):
            return False
    return True
