"""Macro expansion with positions: a file's CUDA text with the project's function-like
macros expanded, and for every character of the result the place in the file it stands
for (the unit's ``char_map``, the same map embedded kernels use).

nvcc sees ``CUDA_1D_KERNEL_LOOP(i, n) { ... }`` as the loop it expands to; tree-sitter
sees a call followed by a block, and every analysis that needs the loop (the thread index
``i``, its stride) goes silent. Expanding the project's own macros before the parse gives
the analyses what nvcc compiles, and the map gives every finding a place in the file:

- a character copied from the file maps to itself;
- a macro argument's characters, substituted into the body, map to where the argument
  is written (``i`` in the loop is the ``i`` of the invocation);
- a character of a macro body maps to the start of the outermost invocation, encoded as
  ``-2 - offset`` (:func:`at_invocation`): a position for messages, but not written
  there (no fix may edit it).

Only macros handed in are expanded (the project index gives those defined in the file
and its project headers; a macro from a system or library header stays as written).
Function-like macros are expanded where they are invoked outside comments, strings and
preprocessor lines. Object-like macros are expanded inside those expansions, and in
device code where their body (its own macros expanded) names a built-in index variable
(:func:`index_macros`: ``#define tid threadIdx.x``, ``#define IDX (blockIdx.x *
blockDim.x + threadIdx.x)``): left as a name, such an index is unknown to the lanes,
the block runs and CL108. Other object-like macros stay as written: an integer one
already reaches the analyses as a constant (``#define N 256``), and its name is what
messages quote. An invocation after an ``#undef`` of the name in the file (and before
it is defined again) stays as written, as the preprocessor leaves it.
Expansion is bounded (:data:`MAX_DEPTH` nested expansions, :data:`MAX_CHARS` characters
from one invocation, :data:`MAX_GROWTH` times the file and :data:`MAX_INVOCATIONS`
invocations in all): an invocation past the budget stays as written, its meaning unknown
to the analyses (issue 25), and the unit says so once (a CL000 with parse-notices on).
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache

MAX_DEPTH = 32
MAX_CHARS = 20_000          # characters one invocation may expand to
MAX_GROWTH = 4              # the whole unit may grow to this many times the file
MAX_INVOCATIONS = 2000      # invocations expanded in one unit (real files: under 200)
# tokens one invocation's expansion may read, each rescan and nested call counted (real
# files: at most 1,570): MAX_CHARS bounds what comes out only once a level has been
# built, so a doubling chain of function-like macros (M24(x) -> M23(x) M23(x) ...) made
# 32,000 nested calls per invocation before stopping, 9 s for 16 invocations of one text
# under --fix (issue 25); an invocation text that went past a budget once is not tried
# again in the unit
MAX_STEPS = 2 * MAX_CHARS

_TOKEN = re.compile(r"""
    (?P<id>[A-Za-z_]\w*)
  | (?P<num>\.?\d(?:[eEpP][-+]|[\w.])*)
  | (?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<ws>(?:\s|/\*.*?\*/|//[^\n]*)+)
  | (?P<punct>\#\#|\#|::|->|<<=|>>=|\.\.\.|[-+*/%&|^!=<>]=?|&&|\|\||\+\+|--|.)
""", re.VERBOSE | re.DOTALL)
# regions where a name is not an invocation: comments, literals, preprocessor lines
_SKIP = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'"""
                   r"""|^[ \t]*\#(?:[^\n\\]|\\.|\\\n)*""", re.MULTILINE | re.DOTALL)


class CharMap:
    """A unit's char map kept as runs (a copied stretch of the file is one run, not one
    integer per character): indexed like a list of file offsets, ``len`` is the unit's
    length."""

    __slots__ = ("starts", "values", "linear", "length")

    def __init__(self) -> None:
        self.starts: list[int] = []     # unit index where each run starts
        self.values: list[int] = []     # its first character's value
        self.linear: list[bool] = []    # values go up by one per character
        self.length = 0

    def add(self, value: int, count: int, linear: bool) -> None:
        if count <= 0:
            return
        if self.starts and not linear and not self.linear[-1] and self.values[-1] == value:
            self.length += count        # the same synthetic value goes on
            return
        self.starts.append(self.length)
        self.values.append(value)
        self.linear.append(linear)
        self.length += count

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> int:
        if i < 0:
            i += self.length
        if not 0 <= i < self.length:
            raise IndexError(i)
        k = bisect_right(self.starts, i) - 1
        v = self.values[k]
        return v + (i - self.starts[k]) if self.linear[k] else v


def at_invocation(offset: int) -> int:
    """The char-map value of a character that a macro body wrote at ``offset``."""
    return -2 - offset


def map_target(value: int) -> int:
    """The file offset a char-map value stands for (-1: none)."""
    return value if value >= 0 else (-2 - value if value <= -2 else -1)


@dataclass(frozen=True)
class MacroDef:
    name: str
    params: tuple[str, ...] | None     # None: object-like; a variadic one's last
                                       # parameter is __VA_ARGS__ (or its own name)
    body: str                          # without comments and line continuations
    variadic: bool = False
    where: str = ""                    # "file:line" of the #define, for messages


@dataclass
class Expansion:
    text: str
    char_map: "CharMap | None"         # None: nothing was expanded (text is the file's)
    expanded: list[tuple[int, str]] = field(default_factory=list)    # (offset, name)
    over_budget: list[tuple[int, str]] = field(default_factory=list)


class _Over(Exception):
    pass


# a token: (kind, text, origin); origin >= 0: the file offset of its first character
# (its characters follow one another in the file); origin <= -2: at_invocation(...)
Tok = tuple


def _tokens(text: str, origin: int | None, synthetic: int = -1) -> list[Tok]:
    if origin is None:
        return [(kind, txt, synthetic) for kind, txt in _body_tokens(text)]
    return [(m.lastgroup, m.group(), origin + m.start()) for m in _TOKEN.finditer(text)]


@lru_cache(maxsize=8192)
def _body_tokens(text: str) -> tuple[tuple[str, str], ...]:
    """A macro body's tokens, read once per body."""
    return tuple((m.lastgroup, m.group()) for m in _TOKEN.finditer(text))


class _Expander:
    def __init__(self, macros: dict[str, MacroDef]):
        self.macros = macros
        self.steps = 0                  # tokens read by expand (MAX_STEPS)

    def expand(self, toks: list[Tok], disabled: frozenset, depth: int) -> list[Tok]:
        if depth > MAX_DEPTH:
            raise _Over
        self.steps += len(toks) + 1
        if self.steps > MAX_STEPS:
            raise _Over
        out: list[Tok] = []
        i, n = 0, len(toks)
        size = 0
        macros = self.macros
        while i < n:
            tok = toks[i]
            i += 1
            macro = macros.get(tok[1]) if tok[0] == "id" else None
            if macro is None or tok[1] in disabled:
                out.append(tok)
                size += len(tok[1])
                if size > MAX_CHARS:
                    raise _Over
                continue
            mark = len(out)
            at = tok[2] if tok[2] <= -2 else at_invocation(tok[2])
            if macro.params is None:
                if self.steps + len(_body_tokens(macro.body)) + 1 > MAX_STEPS:
                    # what expand(body) would find first, before a list of every
                    # token of the body is built (a `#define` on lone-CR lines runs
                    # to the end of the file: 256 KB a use, 30 ms each; fuzz seed 35)
                    raise _Over
                body = _tokens(macro.body, None, at)
                out.extend(self.expand(body, disabled | {macro.name}, depth + 1))
                size += sum(len(t[1]) for t in out[mark:])
                if size > MAX_CHARS:
                    raise _Over
                continue
            j = i
            while j < n and toks[j][0] == "ws":
                j += 1
            if j >= n or toks[j][1] != "(":
                out.append(tok)                 # the name alone: not an invocation
                continue
            args, end = _split_args(toks, j)
            if args is None:
                out.append(tok)
                continue
            i = end
            out.extend(self.expand(self.substitute(macro, args, at, disabled, depth),
                                   disabled | {macro.name}, depth + 1))
            size += sum(len(t[1]) for t in out[mark:])
            if size > MAX_CHARS:
                raise _Over
        return out

    def substitute(self, macro: MacroDef, args: list[list[Tok]], at: int,
                   disabled: frozenset, depth: int) -> list[Tok]:
        params = list(macro.params or ())
        if macro.variadic and params:
            # the last parameter (__VA_ARGS__, or a named `args...`) takes the rest
            fixed = len(params) - 1
            head, rest = args[:fixed], args[fixed:]
            joined: list[Tok] = []
            for k, a in enumerate(rest):
                if k:
                    joined.append(("punct", ",", at))
                joined.extend(a)
            args = head + [joined]
        if len(args) == 1 and not args[0] and not params:
            args = []
        if len(args) != len(params):
            raise _Over                         # a call nvcc would reject: leave it
        raw = dict(zip(params, args))
        expanded: dict[str, list[Tok]] = {}
        body = _tokens(macro.body, None, at)
        out: list[Tok] = []
        k = 0
        while k < len(body):
            kind, txt, org = body[k]
            if txt == "#" and k + 1 < len(body):
                nxt = _skip_ws(body, k + 1)
                if nxt < len(body) and body[nxt][1] in raw:
                    s = "".join(t[1] for t in raw[body[nxt][1]]).strip()
                    out.append(("str", '"' + s.replace("\\", "\\\\").replace('"', '\\"')
                                + '"', at))
                    k = nxt + 1
                    continue
            if txt == "##":
                while out and out[-1][0] == "ws":
                    out.pop()
                nxt = _skip_ws(body, k + 1)
                if nxt < len(body):
                    right = raw.get(body[nxt][1], [body[nxt]])
                    left = out.pop() if out else ("ws", "", at)
                    pasted = left[1] + "".join(t[1] for t in right).strip()
                    out.extend(_tokens(pasted, None, at))
                    k = nxt + 1
                    continue
                k += 1
                continue
            if kind == "id" and txt in raw:
                nxt = _skip_ws(body, k + 1)
                if nxt < len(body) and body[nxt][1] == "##":
                    out.extend(raw[txt])        # pasted: not expanded first
                else:
                    if txt not in expanded:
                        expanded[txt] = self.expand(raw[txt], disabled, depth + 1)
                    out.extend(expanded[txt])
                k += 1
                continue
            out.append(body[k])
            k += 1
            if len(out) > MAX_CHARS:
                raise _Over
        return out


def _skip_ws(toks: list[Tok], k: int) -> int:
    while k < len(toks) and toks[k][0] == "ws":
        k += 1
    return k


def _split_args(toks: list[Tok], j: int) -> tuple[list[list[Tok]] | None, int]:
    """The arguments of the call whose ``(`` is ``toks[j]``, and the index after ``)``."""
    depth = 0
    args: list[list[Tok]] = [[]]
    for k in range(j, len(toks)):
        txt = toks[k][1]
        if txt in ("(", "[", "{"):
            depth += 1
            if depth == 1 and txt == "(":
                continue
        elif txt in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return [_strip_ws(a) for a in args], k + 1
        elif txt == "," and depth == 1:
            args.append([])
            continue
        args[-1].append(toks[k])
    return None, j


def _strip_ws(toks: list[Tok]) -> list[Tok]:
    a, b = 0, len(toks)
    while a < b and toks[a][0] == "ws":
        a += 1
    while b > a and toks[b - 1][0] == "ws":
        b -= 1
    return toks[a:b]


_CLOSER = {"(": ")", "[": "]", "{": "}"}


def _invocation_end(text: str, start: int) -> int | None:
    """The offset after the ``)`` closing the arguments that start at ``text[start]``
    (``(``), skipping comments and literals; None if they do not close."""
    stack: list[str] = []
    pos = start
    n = len(text)
    while pos < n:
        c = text[pos]
        if c in "([{":
            stack.append(_CLOSER[c])
        elif c in ")]}":
            if not stack or stack.pop() != c:
                return None                     # brackets that do not match: leave it
            if not stack:
                return pos + 1
        elif c == ";" and len(stack) == 1:
            return None                         # a statement ends inside the arguments
        elif c in "\"'/":
            m = _SKIP.match(text, pos)
            if m and m.end() > pos:
                pos = m.end()
                continue
        pos += 1
        if pos - start > MAX_CHARS:
            return None
    return None


@lru_cache(maxsize=512)
def _names_pattern(names: tuple[str, ...]) -> re.Pattern:
    return re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")


# the built-in variables that place a thread in its launch
_BUILTIN = re.compile(r"\b(?:threadIdx|blockIdx|blockDim|gridDim)\b")


def index_macros(macros: dict[str, MacroDef]) -> frozenset[str]:
    """The object-like macros of ``macros`` whose body names a built-in index variable,
    itself or through other macros of ``macros`` (``#define gid (blockIdx.x * B +
    tid)`` with ``#define tid threadIdx.x``): found by name, one pass per level of
    macros in between, never by expanding a body. A macro more levels deep than an
    expansion may nest (MAX_DEPTH) is not one: it would stay as written anyway."""
    bodies = {n: m.body for n, m in macros.items() if m.body}
    found = {n for n, b in bodies.items()
             if ("Idx" in b or "Dim" in b) and _BUILTIN.search(b)}
    for _ in range(MAX_DEPTH + 1):
        if not found:
            break
        names = _names_pattern(tuple(sorted(found)))
        more = {n for n, b in bodies.items() if n not in found and names.search(b)}
        if not more:
            break
        found |= more
    return frozenset(n for n in found if macros[n].params is None)


_UNDEF = re.compile(r"^[ \t]*#[ \t]*undef[ \t]+([A-Za-z_]\w*)", re.MULTILINE)


def _undefs(text: str) -> dict[str, list[int]]:
    """The offsets of the text's ``#undef`` directives, by name, in order."""
    out: dict[str, list[int]] = {}
    if "undef" in text:
        for m in _UNDEF.finditer(text):
            out.setdefault(m.group(1), []).append(m.start())
    return out


def _undefined_at(text: str, undefs: dict[str, list[int]], name: str, pos: int) -> bool:
    """Is ``name`` undefined at ``pos``: an ``#undef`` of it before, and no ``#define``
    of it again between that and ``pos``?"""
    offsets = undefs.get(name)
    if not offsets or offsets[0] > pos:
        return False
    last = offsets[bisect_right(offsets, pos) - 1]
    again = re.compile(r"^[ \t]*#[ \t]*define[ \t]+" + re.escape(name) + r"\b",
                       re.MULTILINE)
    return again.search(text, last, pos) is None


def expand_expression(expr: str, macros: dict[str, MacroDef]) -> str | None:
    """An expression with every macro of ``macros`` in it expanded (object-like ones
    too: ``GET_BLOCKS(n, THREADS_PER_BLOCK)`` for its value), None past the budget."""
    try:
        toks = _Expander(macros).expand(_tokens(expr, 0), frozenset(), 0)
    except (_Over, RecursionError):
        return None
    return "".join(t[1] for t in toks)


_LOOK_BACK = 4096


def _not_code(text: str, pos: int) -> bool:
    """Is ``pos`` in a comment, a string literal or a preprocessor line? Judged from its
    line and the last ``/*`` before it (no scan of the whole file)."""
    low = max(0, pos - _LOOK_BACK)          # bounded: a file of one long line stays linear
    start = text.rfind("\n", low, pos) + 1 or low
    line = text[start:pos]
    if "//" in line or (line.count('"') - line.count('\\"')) % 2:
        return True
    first = start
    while first > low + 1 and text[first - 2] == "\\":  # a continued line
        first = text.rfind("\n", low, first - 1) + 1 or low
    if text[first:pos].lstrip().startswith("#"):
        return True
    k = text.rfind("/*", low, pos)
    return k >= 0 and text.find("*/", k, pos) < 0


_DEVICE = re.compile(r"__global__|__device__")

_BRACES = re.compile(r"[{};]")


def _calls_in(text: str, a: int, b: int, macros: dict[str, MacroDef]):
    """(offset, name) of each function-like macro of ``macros`` named before a ``(`` in
    ``text[a:b]`` (one str.find per parenthesis: cheaper than a regex over every name)."""
    pos = text.find("(", a, b)
    while pos >= 0:
        e = pos
        while e > a and text[e - 1] in " \t":
            e -= 1
        s = e
        while s > a and (text[s - 1].isalnum() or text[s - 1] == "_"):
            s -= 1
        if s < e:
            d = macros.get(text[s:e])
            if d is not None and d.params is not None:
                yield s, d.name
        pos = text.find("(", pos + 1, b)


def device_regions(text: str) -> list[tuple[int, int]]:
    """Spans of the bodies of ``__global__``/``__device__`` functions and lambdas, in
    order and not nested, found by counting braces (cheap; a brace in a comment or a
    literal can shift one, which only changes which invocations are expanded)."""
    out: list[tuple[int, int]] = []
    pos = 0
    while True:
        m = _DEVICE.search(text, pos)
        if m is None:
            return out
        pos = m.end()
        depth = 0
        start = -1
        for b in _BRACES.finditer(text, pos):
            c = b.group()
            if c == ";" and depth == 0:
                break                           # a declaration: no body
            if c == "{":
                if depth == 0:
                    start = b.start()
                depth += 1
            elif c == "}":
                depth -= 1
                if depth <= 0:
                    if start >= 0:
                        out.append((start, b.end()))
                    pos = b.end()
                    break
        else:
            return out


def expand_text(text: str, macros: dict[str, MacroDef],
                defined_at: dict[str, int] | None = None) -> Expansion:
    """``text`` with the invocations of ``macros`` expanded, and its char map.

    Only invocations that can change what the analyses see are expanded: those inside
    device code (:func:`device_regions`), and those of macros whose body writes device
    code (a kernel generator); an error-checking macro in host code stays as
    written (host code is read only for launches, which the project index resolves).
    ``defined_at``: for macros the text itself defines, the offset where the definition
    ends (an invocation before it is left as written, as the preprocessor would).
    """
    if not macros:
        return Expansion(text, None)
    generators = [n for n, m in macros.items() if m.params is not None
                  and _DEVICE.search(m.body) and n in text]
    regions = device_regions(text) if "__device__" in text or "__global__" in text else []
    if not regions and not generators:
        return Expansion(text, None)
    # calls of a function-like macro: in device code, or of a generator anywhere; and
    # names of an index macro in device code
    found: list[tuple[int, str]] = []
    objects = [n for n in index_macros(macros) if n in text] if regions else []
    uses = _names_pattern(tuple(sorted(objects))) if objects else None
    for a, b in regions:
        found.extend(_calls_in(text, a, b, macros))
        if uses is not None:
            found.extend((m.start(), m.group()) for m in uses.finditer(text, a, b))
    if generators:
        names = _names_pattern(tuple(sorted(generators)))
        found.extend((m.start(), m.group()) for m in names.finditer(text))
    if not found:
        return Expansion(text, None)
    if generators or uses is not None:
        found.sort()
    undefs = _undefs(text)
    expander = _Expander(macros)
    pieces: list[tuple[str, int | None]] = []      # (text, file offset or None: tokens)
    cmap_parts: list = []
    result = Expansion(text, None)
    last = 0
    budget = max(MAX_CHARS, MAX_GROWTH * len(text))
    grown = 0
    over: set[str] = set()                  # invocation texts past a budget
    for start, name in found:
        if start < last:
            continue
        if _not_code(text, start):
            continue
        if defined_at and start < defined_at.get(name, -1):
            continue
        if undefs and _undefined_at(text, undefs, name, start):
            continue
        if macros[name].params is None:
            end = start + len(name)
        else:
            pos = start + len(name)
            while pos < len(text) and text[pos] in " \t\r\n":
                pos += 1
            if pos >= len(text) or text[pos] != "(":
                continue
            end = _invocation_end(text, pos)
            if end is None:
                continue
        if len(result.expanded) >= MAX_INVOCATIONS:
            result.over_budget.append((start, name))
            break                               # the rest stays as written
        if text[start:end] in over:
            result.over_budget.append((start, name))
            continue
        toks = _tokens(text[start:end], start)
        expander.steps = 0
        try:
            out = expander.expand(toks, frozenset(), 0)
        except (_Over, RecursionError):
            result.over_budget.append((start, name))
            over.add(text[start:end])
            continue
        size = sum(len(t[1]) for t in out)
        grown += size
        if grown > budget or len(result.expanded) >= MAX_INVOCATIONS:
            result.over_budget.append((start, name))
            continue
        pieces.append((text[last:start], last))
        cmap_parts.append(out)
        pieces.append(("", None))
        result.expanded.append((start, name))
        last = end
    if not result.expanded:
        return result
    pieces.append((text[last:], last))
    chunks: list[str] = []
    cmap = CharMap()
    it = iter(cmap_parts)
    for piece, origin in pieces:
        if origin is not None:
            chunks.append(piece)
            cmap.add(origin, len(piece), True)
            continue
        for kind, txt, org in next(it):
            if kind == "ws" and "\n" in txt:
                txt = " "                       # one line, as the preprocessor's output
                org = -1
            chunks.append(txt)
            cmap.add(org, len(txt), org >= 0)
    result.text = "".join(chunks)
    result.char_map = cmap
    return result
