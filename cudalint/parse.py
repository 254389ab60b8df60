"""The one place that talks to tree-sitter: a parser per process and compiled queries."""
from __future__ import annotations

import hashlib
import re
import threading
import time
from functools import lru_cache
from operator import attrgetter

import tree_sitter
import tree_sitter_cuda

LANGUAGE = tree_sitter.Language(tree_sitter_cuda.language())
_parser: tree_sitter.Parser | None = None


# the trees of the last two texts parsed: `--fix` lints a text and then measures how the
# fixed one parses (fixes.parse_quality), then lints that one, and a second run does both
# again: seven parses of two texts per file in the fuzz check of a fix, 1.3 s each for a
# 240 KB input (issue 25). Trees are never edited, so one can be handed out twice.
_RECENT: list[tuple[bytes, tree_sitter.Tree, bool]] = []     # text, tree, parsed as is
RECENT = 2


def parse(data: bytes) -> tree_sitter.Tree:
    global _parser
    for seen, tree, _ in _RECENT:
        if seen == data:
            return tree
    if _parser is None:
        _parser = tree_sitter.Parser(LANGUAGE)
    key = data
    if data.count(b"<") >= _ANGLE_RUN_MIN and _ANGLE_HINT.search(data):
        data = _ANGLE_RUN.sub(_blank, data)
    if _COMMENT_HINT in data:
        data = _COMMENT_RUN.sub(_blank, data)
    old = _edited(data) if data is key and getattr(_LOCAL, "reuse", False) else None
    tree = None if old is None else _bounded(data, old)
    if tree is None or tree.root_node.has_error:
        # after error recovery an edited tree may differ from a fresh one (a brace typed
        # and not yet closed: 3 of 900 random edits of corpus files); without errors
        # none did (bench/incremental_parse.py)
        tree = _bounded(data)
    if tree is None:
        data = data.translate(_NOT_LINE_BREAK)
        tree = _parser.parse(data)
        _GAVE_UP[_digest(key)] = None
        while len(_GAVE_UP) > 64:
            del _GAVE_UP[next(iter(_GAVE_UP))]
    _RECENT.insert(0, (bytes(key), tree, data is key))
    del _RECENT[RECENT:]
    return tree


# bound (issue 25): tree-sitter's error recovery costs about 100 microseconds a token in
# some broken shapes (fuzz seed 37: 1,780 `if(x)` inside an `if` condition, on 29 lines of a
# 262 KB file, 7 s a parse; seed 44: 43 KB texts at 11-25 us a byte, parsed 8 times by one
# editor session). Real code parses at 0.3-1.9 microseconds a byte (967 files over 8 KB of
# /tmp/real, newcorpus5, nc8, nc9: the slowest rate gpu4pyscf's 45 KB md_contract_j.cu,
# 0.083 s; the slowest file a 1.9 MB one, 0.64 s); a parse is stopped after PARSE_MIN_S or
# PARSE_S_PER_MB per megabyte of CPU, whichever is more (about 3 times the slowest real
# file's time and rate), and the text is then seen as blank: nothing in it is analysed,
# and the engine says so (gave_up).
PARSE_MIN_S = 0.25
PARSE_S_PER_MB = 5.0
UNBOUNDED_BYTES = 10 << 10
_CHUNK = 1 << 16
_GAVE_UP: dict[bytes, None] = {}     # digests of the texts whose parse was stopped


def parse_budget_s(size: int) -> float:
    """CPU seconds a parse of ``size`` bytes may take."""
    return max(PARSE_MIN_S, PARSE_S_PER_MB * size / 1e6)


def _bounded(data: bytes, old: tree_sitter.Tree | None = None) -> tree_sitter.Tree | None:
    """The parse of ``data``, or None when it took longer than its budget."""
    if len(data) < UNBOUNDED_BYTES:
        # the worst rate seen (25 us a byte, seed 37) cannot reach PARSE_MIN_S here: one
        # plain parse, not the timed one and its reparse (many real files are this small)
        return _parser.parse(data, old) if old is not None else _parser.parse(data)
    limit = parse_budget_s(len(data))
    start = time.thread_time()

    def too_long(_offset: int, _has_error: bool) -> bool:
        return time.thread_time() - start > limit
    try:
        read = lambda at, _point: data[at:at + _CHUNK]     # noqa: E731
        if old is None:
            timed = _parser.parse(read, progress_callback=too_long)
        else:
            timed = _parser.parse(read, old, progress_callback=too_long)
    except ValueError:          # "Parsing failed": stopped by too_long
        _parser.reset()
        return None
    # a tree parsed from a callback has no text of its own: nodes of it read their text
    # back through the callback, and deep in a 2,670-term sum that crashed the process
    # (SIGSEGV, fuzz seed 38). Parsed again from the bytes with it as the old tree (no
    # edit: every node reused, a few ms), the tree holds the text.
    return _parser.parse(data, timed)


def gave_up(data: bytes) -> bool:
    """Whether the parse of ``data`` (a text :func:`parse` was given) was stopped."""
    return bool(_GAVE_UP) and _digest(data) in _GAVE_UP


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


# The language server's fast worker parses, on each keystroke, the text of a moment ago
# with one edit (and its slice of one kernel, likewise): tree-sitter reparses such a text
# from the previous tree in a fraction of a fresh parse (2,000 lines: ~18 ms fresh). Off
# unless the thread asks (``reuse_trees``): a run over files never has a similar one.
_LOCAL = threading.local()
_SIMILAR = 8       # reuse a tree when at most 1/8 of the text changed


def reuse_trees(on: bool = True) -> None:
    """Let this thread's parses start from the most similar recent tree."""
    _LOCAL.reuse = on


def _edited(data: bytes) -> tree_sitter.Tree | None:
    """A copy of the recent tree whose text differs least from ``data``, told the edit
    that makes its text ``data``; None when no recent text is that close (or its tree
    was parsed from a blanked text)."""
    best = None
    for seen, tree, as_is in _RECENT:
        if not as_is or tree.root_node.has_error:
            continue
        start = _common_prefix(seen, data)
        limit = min(len(seen), len(data)) - start
        suffix = _common_prefix(seen[::-1][:limit], data[::-1][:limit])
        changed = len(seen) + len(data) - 2 * (start + suffix)
        if changed * _SIMILAR <= len(data) and (best is None or changed < best[0]):
            best = (changed, seen, tree, start, len(seen) - suffix, len(data) - suffix)
    if best is None:
        return None
    _, seen, tree, start, old_end, new_end = best
    old = tree.copy()
    old.edit(start, old_end, new_end, _point(data, start), _point(seen, old_end),
             _point(data, new_end))
    return old


def _common_prefix(a: bytes, b: bytes) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:                       # binary search with C-speed slice compares
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _point(data: bytes, offset: int) -> tuple[int, int]:
    return data.count(b"\n", 0, offset), offset - (data.rfind(b"\n", 0, offset) + 1)


# `a<a<a<...`: tree-sitter's parser keeps every reading of each `<` (comparison or
# template arguments) open until it can decide, so the parse grows about quadratically
# with the run (fuzz: twelve runs of 2,070 in 61 KB took 3.6 s). Real code has at most 4
# in a row (/tmp/real); a run of 32 or more is blanked (same length, line breaks kept, so
# every offset and line stays right): the tree has nothing there, and nothing there is
# analysed.
_ANGLE_RUN_MIN = 32
_ANGLE_RUN = re.compile(rb"(?:\b[A-Za-z_]\w*[ \t\r\n]*<(?![<=])[ \t\r\n]*){%d,}"
                        % _ANGLE_RUN_MIN)
# 8 in a row, found fast (a literal first: 9 ms over 7 MB of the corpus, the full pattern
# 300 ms); a run of 32 has it
_ANGLE_HINT = re.compile(rb"<(?:[ \t\r\n]*[A-Za-z_]\w*[ \t\r\n]*<(?![<=])){7}")
# `/*/*/*/*...`: comments `/*/*/` between `*`s. After a `#define` with no name, each
# later token cost the parser's error recovery time in the length of such a run (fuzz
# seed 34: 40 lines of 2,800 `/*` before 60 `#define`s, 16-18 s for 226 KB). No source
# of the corpora has two in a row (/tmp/real, newcorpus 1-5: only Python path globs);
# a run of 16 is blanked like the angle runs.
_COMMENT_RUN = re.compile(rb"(?:/\*){16,}")
_COMMENT_HINT = b"/*" * 16
_NOT_LINE_BREAK = bytes(b if b in b"\r\n" else 32 for b in range(256))


def _blank(m: re.Match) -> bytes:
    return m.group().translate(_NOT_LINE_BREAK)


@lru_cache(maxsize=None)
def query(source: str) -> tree_sitter.Query:
    return tree_sitter.Query(LANGUAGE, source)


# deepest node (below the one queried) where a query match may start. The query cursor
# keeps a match's start depth in 16 bits: in a tree deeper than 65,535 (a fuzzed 256 KB
# expression of 80,000 nested operators) the depth wraps, matches that should have ended
# stay open, and one query over the unit took 6-15 s (then found nothing more). Corpus
# trees are under 1,000 deep.
MAX_QUERY_DEPTH = 65_000


def captures(source: str, node: tree_sitter.Node) -> dict[str, list[tree_sitter.Node]]:
    """Run a (cached, compiled) query over ``node``; captures grouped by name, in order."""
    cursor = tree_sitter.QueryCursor(query(source))
    cursor.set_max_start_depth(MAX_QUERY_DEPTH)
    result = cursor.captures(node)
    for nodes in result.values():
        nodes.sort(key=_START)        # the cursor yields them in no useful order
    return result


_START = attrgetter("start_byte")


def text(node: tree_sitter.Node | None) -> str:
    if node is None:
        return ""
    return node.text.decode("utf-8", "replace")


def nesting(node: tree_sitter.Node, limit: int) -> int:
    """How many tree levels lie below ``node`` (its deepest descendant's distance), read
    with a cursor (no recursion, however deep the tree); stops once past ``limit``.
    The analyses that walk a body recursively ask this first (issue 25)."""
    cur = node.walk()
    d = deepest = 0
    while True:
        if cur.goto_first_child():
            d += 1
            if d > deepest:
                deepest = d
                if d > limit:
                    return d
            continue
        while not cur.goto_next_sibling():
            if d == 0 or not cur.goto_parent():
                return deepest
            d -= 1
