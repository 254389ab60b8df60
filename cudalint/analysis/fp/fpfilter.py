"""Which functions of a unit libclang must see for CL402/CL403 (tree-sitter and regex
prefilters, no types).

libclang costs milliseconds per unit and its cursor walk (ctypes) more, so
:func:`clang_plan` decides from the tree-sitter tree and the text, per function body of
device code (``__device__``/``__global__``, a macro of them, or ``constexpr``):

- CL403 candidate: a source of FP64 -- an unsuffixed floating literal used as an operand
  or as a math call's argument, ``double`` or an alias of it as a cast or template
  argument, a ``M_PI``-like constant of the shim, a two-argument math name whose mixed
  overload is the double template (``pow(x, 2)``), or a macro holding one of these -- in a
  statement where some name may have a float type (declared ``float*``/``auto``/via an
  alias anywhere in the unit, a shim float function, an ``f`` literal);
- CL402 candidate: a binary ``-`` with a product on its left and, on its right, a product
  with the difference's sign tested (compared, stored and compared, returned from an
  ``orient``/``det``-like function), or a variable initialised with a product whose
  operands the left product splits (``ah*bh - p``); macros expanding to products count
  as products (the shapes: :mod:`contraction_shapes`).

Both are necessary conditions of what :mod:`fptypes` reports: they answer "maybe" where
the text or the tree cannot decide. The FP64 sources that passed are kept (``Plan.marks``)
so the libclang walk of a CL403-only body descends only into expressions that hold one.
Every other body is blanked (same length, newlines kept, so offsets and lines stay)
before libclang parses the unit, except bodies other code may need for its types
(``auto``/``decltype`` return types, ``constexpr``/``consteval``) and bodies with
preprocessor directives or parse errors, which are kept as written. A unit with no
candidate (and no unreadable region outside its bodies that could hide one) is not given
to libclang at all.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import cached_property

from cudalint.analysis.fp.contraction_shapes import contraction_marks

# An unsuffixed floating literal (``1.0``, ``.5``, ``2.``, ``1e-3``; not ``1.0f``/``1.0L``)
# or a hexadecimal floating literal (whatever its suffix). Written to start with a
# character set so that the regex engine skips ahead (10x faster than a leading
# look-behind); the look-behind after the first character says what precedes it.
_FP64_LITERAL = (rb"[0-9.](?<![\w.][0-9.])(?:(?:(?<=\.)\d+|(?<=\d)\d*\.\d*|"
                 rb"(?<=\d)\d*(?=[eE][+-]?\d))(?:[eE][+-]?\d+)?(?![\w.])"
                 rb"|(?<=0)[xX][0-9a-fA-F.]*[pP])")
_LITERAL_RE = re.compile(_FP64_LITERAL)
_FLOAT_LITERAL = re.compile(rb"(?<![\w.])(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fF]"
                            rb"(?![\w.])")
# names that make FP64 without a literal: the shim's double constants and the two-argument
# math functions whose mixed-type overload is the double template (pow(float, int))
_FP64_CONSTANTS = (b"M_PI", b"M_E", b"M_SQRT2", b"M_LN2", b"M_PI_2")
_FP64_CALLS = (b"pow", b"atan2", b"hypot", b"fmod", b"remainder", b"fmin", b"fmax",
               b"copysign", b"fdim")
# math functions whose double overload a float argument can meet
_MATH = (b"pow", b"exp", b"exp2", b"exp10", b"expm1", b"log", b"log2", b"log10", b"log1p",
         b"sqrt", b"cbrt", b"rsqrt", b"sin", b"cos", b"tan", b"asin", b"acos", b"atan",
         b"atan2", b"sinh", b"cosh", b"tanh", b"asinh", b"acosh", b"atanh", b"erf", b"erfc",
         b"lgamma", b"tgamma", b"hypot", b"fmod", b"remainder", b"fabs", b"floor", b"ceil",
         b"round", b"trunc", b"rint", b"fmin", b"fmax", b"fma", b"copysign", b"sinpi",
         b"cospi", b"erfinv", b"erfcinv", b"normcdf", b"normcdfinv", b"rcbrt", b"ldexp",
         b"frexp", b"modf", b"nearbyint", b"fdim", b"min", b"max")
_MATH_SET = frozenset(_MATH)
# shim names of float type, or returning float whatever their arguments
_FLOAT_SHIM = frozenset((
    b"INFINITY", b"NAN", b"FLT_MAX", b"FLT_MIN", b"FLT_EPSILON", b"__expf", b"__logf",
    b"__sinf", b"__cosf", b"__tanf", b"__log2f", b"__log10f", b"__exp10f", b"__saturatef",
    b"__frsqrt_rn", b"__fsqrt_rn", b"__powf", b"__fdividef", b"__fmul_rn", b"__fadd_rn",
    b"__fsub_rn", b"__fdiv_rn", b"__fmul_rz", b"__fadd_rz", b"__fmaf_rn", b"powf")) | \
    frozenset(n + b"f" for n in _MATH)

_IDENT = re.compile(rb"[A-Za-z_]\w*")
_DEFINE = re.compile(rb"#[ \t]*define[ \t]+([A-Za-z_]\w*)((?:\\\r?\n|[^\n])*)")
_TYPEDEF = re.compile(rb"typedef\s+(?:const\s+)?(?:long\s+)?(\w+)\s+(\w+)\s*;")
_USING = re.compile(rb"using\s+(\w+)\s*=\s*(?:const\s+)?(?:long\s+)?(\w+)\s*;")
# 32 `<` in one statement with no `>`: no real code, but clang's tentative parsing of
# nested template arguments goes exponential on it (a fuzzed `a<a<a<...` took 11 GB)
_ANGLE_CHAIN = re.compile(rb"<(?:[^<>;{}]*<){31}")
_BRACKETS = re.compile(rb"[(){}\[\]]")
_DIRECTIVE = re.compile(rb"\n[ \t]*#")
_MINUS = re.compile(rb"-(?<!--)(?![-=>])")
# __device__ | __global__ | constexpr | consteval, led by a character set (fast scan)
_DEVICE_WORDS = re.compile(rb"[_c](?:(?<=_)_(?:device|global)__|(?<=c)onste(?:xpr|val))")
# the fixed FP64 names by first character (10x faster than a plain alternation with
# look-arounds); hits() checks the whole word
_FIXED_NAMES = re.compile(rb"[Mdpahfrc](?:_(?:PI_2|PI|E|SQRT2|LN2)|ouble|ow|tan2|ypot|mod|"
                          rb"emainder|min|max|opysign|dim)\b")
_CAST_AFTER = re.compile(rb"\s*[)>(]")
_NOT_CAST_CALL = re.compile(rb"\b(?:sizeof|alignof|decltype|typeid|__alignof__)\s*$")
_KEEP_HEADER = re.compile(rb"\b(?:auto|decltype|constexpr|consteval)\b")
_BLANK = bytes(10 if i == 10 else 32 for i in range(256))    # every byte but \n -> space
_NOT_CODE = frozenset(("comment", "string_literal", "string_content", "char_literal",
                       "raw_string_literal", "escape_sequence", "system_lib_string"))
_ARITH_CHARS = b"+-*/?:"
_NAME_BEFORE = re.compile(rb"[A-Za-z_]\w*$")


@dataclass
class Plan:
    """What libclang parses and which function bodies its walk must visit: a body whose
    start offset is in ``known`` is walked only if it is in ``walk``, searched for
    contractions only if in ``contract``, and, when ``marks`` has its start, descends
    only into expressions whose extent holds one of those offsets. Any other body (one
    tree-sitter did not see: from a macro, in an unreadable region) is walked in full."""
    source: bytes                       # include-blanked unit with non-candidates blanked
    walk: set[int] = field(default_factory=set)
    contract: set[int] = field(default_factory=set)
    known: set[int] = field(default_factory=set)
    marks: dict[int, list[int]] = field(default_factory=dict)
    residual: bool = False              # text outside the recognised bodies may hold some
    unreadable: str | None = None       # garbage libclang must not be given (why)

    def walks(self, start: int) -> bool:
        return start not in self.known or start in self.walk

    def contracts(self, start: int) -> bool:
        return start not in self.known or start in self.contract

    @cached_property
    def _known_sorted(self) -> list[int]:
        return sorted(self.known)

    def skips(self, start: int, end: int) -> bool:
        """A function spanning ``[start, end]`` holds recognised bodies, none to walk."""
        ks = self._known_sorted
        inside = ks[bisect_left(ks, start):bisect_right(ks, end)]
        return bool(inside) and not any(k in self.walk for k in inside)


def _aliases(data: bytes, seeds: set[bytes], prefix: bytes | None = None) -> set[bytes]:
    """``seeds`` plus every typedef/using alias of them (transitively)."""
    names = set(seeds)
    pairs = []
    if b"typedef" in data:
        pairs += [(m.group(2), m.group(1)) for m in _TYPEDEF.finditer(data)]
    if b"using" in data:
        pairs += [(m.group(1), m.group(2)) for m in _USING.finditer(data)]
    changed = bool(pairs)
    while changed:
        changed = False
        for alias, target in pairs:
            if alias not in names and (target in names or
                                       (prefix is not None and target.startswith(prefix))):
                names.add(alias)
                changed = True
    return names


def _closure(defs: list[tuple[bytes, bytes]], test) -> set[bytes]:
    """Macro names whose replacement passes ``test`` or names such a macro."""
    found: set[bytes] = set()
    changed = True
    while changed:
        changed = False
        for name, body in defs:
            if name not in found and (test(body) or
                                      any(i.group() in found for i in _IDENT.finditer(body))):
                found.add(name)
                changed = True
    return found


class _Unit:
    """Per-unit facts for the prefilters, computed once, lazily."""

    def __init__(self, data: bytes):
        self.data = data
        self.defs = [(m.group(1), m.group(2)) for m in _DEFINE.finditer(data)] \
            if b"define" in data else []

    # -- names -----------------------------------------------------------------------

    @cached_property
    def double_types(self) -> set[bytes]:
        return _aliases(self.data, {b"double"})

    @cached_property
    def fp64_macros(self) -> set[bytes]:
        """Macros whose expansion holds an FP64 source: a lone literal (`#define EPS
        1e-6`), a literal used as an operand or argument, a double conversion, a shim
        double constant or mixed-overload math name (or another such macro). A literal
        under a cast (`(float)0.35`) is not one."""
        types = self.double_types
        fixed = set(_FP64_CONSTANTS) | set(_FP64_CALLS)

        def test(body: bytes) -> bool:
            if _LITERAL_RE.search(body) is not None:
                r = body.strip()
                while r.startswith(b"(") and r.endswith(b")"):
                    r = r[1:-1].strip()
                if _LITERAL_RE.fullmatch(r.lstrip(b"+-").strip()):
                    return True
                if any(_literal_context(body, m.start(), m.end(), 0) is not None
                       for m in _LITERAL_RE.finditer(body)):
                    return True
            for i in _IDENT.finditer(body):
                w = i.group()
                if w in fixed or (w in types and _conversion(body, i.start(), i.end())):
                    return True
            return False
        return _closure(self.defs, test)

    @cached_property
    def star_macros(self) -> set[bytes]:
        return {n for n, b in self.defs if b"*" in b}

    @cached_property
    def dop_macros(self) -> set[bytes]:
        return {n for n, b in self.defs if b"*" in b and _MINUS.search(b)}

    @cached_property
    def device_macros(self) -> set[bytes]:
        return _closure(self.defs, lambda b: _DEVICE_WORDS.search(b) is not None)

    @cached_property
    def function_macros(self) -> set[bytes]:
        return {n for n, b in self.defs if b.startswith(b"(")}

    @cached_property
    def macro_risky(self) -> bool:
        """A macro that defines device functions holding candidates (tree-sitter sees only
        its invocation): libclang must look at the unit."""
        suspects = [(n, b) for n, b in self.defs
                    if (b"__device__" in b or b"__global__" in b) and b"{" in b]
        if not suspects:
            return False
        fp64, dop = self.fp64_macros, self.dop_macros
        return any(n in fp64 or n in dop or _LITERAL_RE.search(b) is not None
                   for n, b in suspects)

    @cached_property
    def name_re(self):
        """FP64 names: the shim's double constants and mixed-overload math names,
        ``double`` and its aliases (kept by :meth:`hits` only in cast or template
        position), FP64 macros. A fast first-character form for the fixed names."""
        extra = (self.double_types - {b"double"}) | self.fp64_macros
        if not extra:
            return _FIXED_NAMES
        return re.compile(b"|".join(map(re.escape, sorted(
            {*_FP64_CONSTANTS, *_FP64_CALLS, *self.double_types, *extra},
            key=len, reverse=True))) + rb"\b")

    @cached_property
    def call_re(self):
        """A call of a math function or of a function-like macro of the unit."""
        names = set(_MATH) | self.function_macros
        return re.compile(rb"\b(?:" + b"|".join(re.escape(n) for n in sorted(names)) +
                          rb")\s*\(")

    @cached_property
    def float_types(self) -> set[bytes]:
        """`float` and its aliases (typedef/using of float*, macros naming float)."""
        types = _aliases(self.data, {b"float"}, prefix=b"float")
        return types | _closure(self.defs, lambda b: b"float" in b)

    @cached_property
    def _float_scan(self) -> tuple[set[bytes], dict[int, set[bytes]]]:
        """Identifiers that may have a float type: whatever follows `float...`, a float
        alias, `auto` or `decltype` up to the next `;`, `{` or `}` (declared names,
        parameters, struct fields, initialisers). Outside functions (and a function's
        own name when its return type is float-ish) they count everywhere; inside a
        function (its parameters and body) only there. A superset."""
        d = self.data
        types = self.float_types
        glob = set(types) | set(_FLOAT_SHIM)
        local: dict[int, set[bytes]] = {}
        alt = b"|".join(re.escape(t) for t in sorted(types - {b"float"}))
        pat = rb"(?:float\w*|auto|decltype" + (b"|" + alt if alt else b"") + rb")\b([^;{}]*)"
        for m in re.finditer(pat, d):
            pos = m.start()
            if pos and (d[pos - 1:pos].isalnum() or d[pos - 1] == 95):
                continue                # inside a longer word (`__half2float`)
            names = {i.group() for i in _IDENT.finditer(m.group(1))}
            k = self.function_at(pos)
            if k is None:
                glob |= names
                continue
            local.setdefault(k, set()).update(names)
            fn, body, _ = self.bodies[k]
            if pos < body.start_byte:   # in the header: before the parameters?
                params = _params_start(fn)
                if params is None or pos < params:
                    chunk = m.group(1)
                    cut = chunk.find(b"(")
                    glob.update(i.group() for i in _IDENT.finditer(
                        chunk[:cut] if cut >= 0 else chunk))
        return glob, local

    def function_at(self, pos: int) -> int | None:
        k = bisect_right(self.fn_starts, pos) - 1
        if k >= 0 and pos < self.bodies[k][0].end_byte:
            return k
        return None

    # -- positions -------------------------------------------------------------------

    def segment(self, pos: int) -> tuple[int, int]:
        """The statement-ish stretch around ``pos``, between `;`, `{` and `}`."""
        d = self.data
        a = max(d.rfind(b";", 0, pos), d.rfind(b"{", 0, pos), d.rfind(b"}", 0, pos)) + 1
        ends = [i for i in (d.find(b";", pos), d.find(b"{", pos), d.find(b"}", pos))
                if i >= 0]
        return a, min(ends) if ends else len(d)

    def float_possible(self, a: int, b: int, k: int | None) -> bool:
        """May the text ``[a, b)`` of function ``k`` hold a float value?"""
        t = self.data[a:b]
        if b"float" in t or _FLOAT_LITERAL.search(t):
            return True
        glob, local = self._float_scan
        own = local.get(k, ()) if k is not None else ()
        return any(m.group() in glob or m.group() in own for m in _IDENT.finditer(t))

    @cached_property
    def _device_words(self) -> list[int]:
        """Offsets of `__device__`, `__global__`, `constexpr`, `consteval` and of the
        macros that expand to them, in the whole unit (one scan)."""
        rx = _DEVICE_WORDS
        if self.device_macros:
            rx = re.compile(_DEVICE_WORDS.pattern + b"|" + b"|".join(
                rb"\b" + re.escape(n) + rb"\b" for n in sorted(self.device_macros)))
        return [m.start() for m in rx.finditer(self.data)]

    def device_ish(self, fn, body, model_device: bool) -> bool:
        """May clang see this function as device code? tree-sitter says so, or the text
        from the end of the previous declaration to the body names `__device__`,
        `__global__`, a macro of them, or `constexpr` (implicitly host-device)."""
        if model_device:
            return True
        words = self._device_words
        s = body.start_byte
        k = bisect_left(words, s) - 1
        if k < 0:
            return False
        d = self.data
        f = fn.start_byte
        a = max(d.rfind(b";", 0, f), d.rfind(b"}", 0, f), d.rfind(b"{", 0, f), 0)
        return words[k] >= a

    @cached_property
    def _macro_kinds(self) -> dict[bytes, str]:
        """FP64 macros: "literal" (the replacement is one literal, like the shim's M_PI),
        "float" (the replacement brings a float of its own), "other"."""
        out = {n: "literal" for n in _FP64_CONSTANTS}
        for name, body in self.defs:
            if name not in self.fp64_macros:
                continue
            r = body.strip()
            while r.startswith(b"(") and r.endswith(b")"):
                r = r[1:-1].strip()
            if r.startswith((b"-", b"+")):
                r = r[1:].strip()
            if _LITERAL_RE.fullmatch(r):
                out[name] = "literal"
            elif b"float" in body or _FLOAT_LITERAL.search(body) or \
                    any(i.group() in _FLOAT_SHIM for i in _IDENT.finditer(body)):
                out[name] = "float"
            else:
                out[name] = "other"
        return out

    @cached_property
    def _double_decl(self):
        types = sorted(self.double_types | {b"auto"}, key=len, reverse=True)
        alt = b"|".join(map(re.escape, types))
        head = re.compile(rb"\s*(?:(?:const|static|constexpr|register|volatile)\s+)*(?:" +
                          alt + rb")\s+[A-Za-z_]\w*\s*=(?!=)")
        cast = re.compile(rb"static_cast\s*<\s*(?:const\s+)?(?:" + alt + rb")\s*>")
        return head, cast

    def _no_exit(self, sa: int, sb: int) -> bool:
        """Is the statement ``[sa, sb)`` the declaration of a double (or `auto`) variable
        whose initialiser cannot convert a double back to float: no float type, no
        comparison or conditional, no call but the double math functions? An FP64 region
        must end in a float conversion or a comparison to be reported."""
        head, cast = self._double_decl
        m = head.match(self.data, sa, sb)
        if m is None:
            return False
        expr = cast.sub(b"", self.data[m.end():sb])
        if b"float" in expr or any(c in expr for c in (b"?", b"<", b">", b"!", b"=")):
            return False
        if any(i.group() in self.float_types for i in _IDENT.finditer(expr)):
            return False
        for c in re.finditer(rb"([A-Za-z_]\w*)\s*\(", expr):
            if c.group(1) not in _MATH_SET and c.group(1) not in self.double_types:
                return False
        return True

    def hits(self, s: int, e: int) -> list[tuple[int, int, bytes | None]]:
        """The FP64 sources in ``[s, e)``: (start, end, None for a literal, b"type" for a
        double cast, else the name), in order."""
        d = self.data
        hits = [(m.start(), m.end(), None) for m in _LITERAL_RE.finditer(d, s, e)]
        types = self.double_types
        names = self.fp64_name_set
        found = False
        for m in self.name_re.finditer(d, s, e):
            a, b = m.span()
            word = m.group()
            if word not in names or (a and (d[a - 1:a].isalnum() or d[a - 1] == 95)):
                continue                # part of a longer word
            if word in types:
                if not _conversion(d, a, b):
                    continue            # `double x`, `plus<double>()`, `sizeof(double)`
                word = b"type"
            hits.append((a, b, word))
            found = True
        if found:
            hits.sort()
        return hits

    @cached_property
    def fp64_name_set(self) -> frozenset[bytes]:
        return frozenset({*_FP64_CONSTANTS, *_FP64_CALLS, *self.double_types,
                          *self.fp64_macros})

    def fp64_sources(self, k: int, root, hits) -> list[int]:
        """Offsets of the FP64 sources ``hits`` (in body ``k``) that may meet a float."""
        d = self.data
        found = []
        kinds = self._macro_kinds
        for a, b, kind in hits:
            tok = root.descendant_for_byte_range(a, b)
            if tok is not None and tok.type in _NOT_CODE:
                continue
            sa, sb = self.segment(a)
            mk = kinds.get(kind) if kind not in (None, b"type") else None
            if kind is None or mk == "literal":
                # a literal: an arithmetic operand, or a math call's argument
                where = _literal_context(d, a, b, sa)
                if where is None or (where != b"op" and where not in _MATH_SET and
                                     where not in self.function_macros):
                    continue
            if self._no_exit(sa, sb):
                continue
            if mk == "float" or self.float_possible(sa, sb, k):
                found.append(a)
            elif mk == "other":
                body_ = next(bd for n, bd in self.defs if n == kind)
                if self.float_possible_text(body_):
                    found.append(a)
        return sorted(found)

    def float_possible_text(self, text: bytes) -> bool:
        glob, _ = self._float_scan
        return b"float" in text or _FLOAT_LITERAL.search(text) is not None or \
            any(i.group() in glob for i in _IDENT.finditer(text))


def _conversion(d: bytes, a: int, b: int) -> bool:
    """Is the type name ``d[a:b]`` (`double` or an alias) the target of a conversion:
    `(double)x`, `double(x)`, `static_cast<double>(x)`?"""
    m = _CAST_AFTER.match(d, b)
    if m is None:
        return False
    c = d[m.end() - 1]
    if c == 40:                                         # `double(x)`
        return True
    before = d[max(0, a - 40):a].rstrip()
    if before.endswith(b"const"):
        before = before[:-5].rstrip()
    if c == 41:                                         # `(double)`, not `sizeof(double)`
        if not before.endswith(b"("):
            return False
        return _NOT_CAST_CALL.search(before[:-1]) is None
    return before.endswith(b"<") and before[:-1].rstrip().endswith(b"static_cast")


def _params_start(fn) -> int | None:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
        d = d.child_by_field_name("declarator")
    if d is None or d.type != "function_declarator":
        return None
    p = d.child_by_field_name("parameters")
    return p.start_byte if p is not None else None


def _operand_end(c: int) -> bool:
    return chr(c).isalnum() or c in b"_)].'"


def _literal_context(d: bytes, a: int, b: int, seg: int) -> bytes | None:
    """Where the literal ``d[a:b]`` stands: b"op" as an operand of `+ - * /` or of a
    conditional, the callee's name as a call's argument, None alone (an initialiser, a
    return value, a cast's operand, a comparison's operand: converted or compared as a
    whole, it never meets a float in FP64 arithmetic)."""
    n = len(d)
    i = a - 1
    while i >= seg and d[i] in b" \t\r\n(":
        i -= 1
    if i >= seg and d[i] == 41:         # `(T)0.5`: a cast's operand, converted alone
        return None
    j = b
    while j < n and d[j] in b" \t\r\n)":
        j += 1
    if j < n and d[j] in _ARITH_CHARS:
        return b"op"
    i = a - 1
    while True:
        while i >= seg and d[i] in b" \t\r\n(":
            i -= 1
        if i < seg:
            return None
        c = d[i]
        if c in b"+-":
            k = i - 1
            while k >= seg and d[k] in b" \t\r\n":
                k -= 1
            if k >= seg and _operand_end(d[k]):
                return b"op"            # binary + or -
            i = k                       # a sign: look before it
            continue
        break
    if c in _ARITH_CHARS:
        return b"op"
    if c == 44:                         # `,`: find the call's open parenthesis
        depth = 0
        k = i - 1
        while k >= seg:
            ch = d[k]
            if ch in b")]":
                depth += 1
            elif ch in b"([":
                if depth == 0:
                    if ch == 40:
                        break
                    return None
                depth -= 1
            k -= 1
        if k < seg:
            return None
        i = k - 1
        while i >= seg and d[i] in b" \t\r\n":
            i -= 1
        c = d[i] if i >= seg else 0
        if not (c and (chr(c).isalnum() or c == 95)):
            return None
    elif not ((chr(c).isalnum() or c == 95) and 40 in d[i + 1:a]):
        return None
    m = _NAME_BEFORE.search(d, max(seg, i - 64), i + 1)
    return m.group() if m is not None else None


def _outermost_bodies(ctx) -> list[tuple[object, object, bool]]:
    """(function_definition, body, tree-sitter says device) for every function not
    nested in another one's body, in source order."""
    device_ids = {f.node.id for f in ctx.model.functions if f.is_device}
    out = []
    last_end = -1
    for fn in ctx.model.nodes("function_definition"):      # source order
        if fn.start_byte < last_end:
            continue
        body = fn.child_by_field_name("body")
        if body is None or body.type != "compound_statement":
            continue
        last_end = fn.end_byte
        out.append((fn, body, fn.id in device_ids))
    return out


def clang_plan(ctx, unit_data: bytes) -> Plan | None:
    """The source libclang must parse and the bodies to walk, or None when no device
    function can hold a CL402/CL403 finding."""
    data = ctx.unit.data
    root = ctx.root
    u = _Unit(data)
    plan = Plan(b"", residual=u.macro_risky)
    errors = ctx.model.error_nodes
    if sum(e.end_byte - e.start_byte for e in errors) * 2 > len(data):
        plan.unreadable = "tree-sitter could not read most of the unit"
        return plan
    bodies = _outermost_bodies(ctx)
    starts = [b.start_byte for _, b, _ in bodies]
    u.bodies = bodies
    u.fn_starts = [fn.start_byte for fn, _, _ in bodies]

    # unreadable regions outside the bodies: tree-sitter may hide whole functions there
    for err in ctx.model.error_nodes:
        if plan.residual:
            break
        k = bisect_right(starts, err.start_byte) - 1
        if k >= 0 and err.start_byte < bodies[k][1].end_byte:
            continue                    # inside a body: judged with that body
        t = data[err.start_byte:err.end_byte]
        plan.residual = _LITERAL_RE.search(t) is not None or b"double" in t or \
            (b"*" in t and b"-" in t) or any(i.group() in u.fp64_macros or
                                             i.group() in _FP64_CONSTANTS or
                                             i.group() in _FP64_CALLS
                                             for i in _IDENT.finditer(t))

    products = b"*" in data or bool(u.star_macros)
    directives = [m.start() for m in _DIRECTIVE.finditer(data)] if b"#" in data else []
    src = bytearray(unit_data)
    for k, (fn, body, model_device) in enumerate(bodies):
        s, e = body.start_byte, body.end_byte
        plan.known.add(s)
        if u.device_ish(fn, body, model_device):
            hits = u.hits(s, e)
            marks = u.fp64_sources(k, root, hits) if hits else []
            minus = [m.start() for m in _MINUS.finditer(data, s, e)] if products else []
            cmarks = contraction_marks(u, fn, body, data, minus) \
                if minus or u.dop_macros else []
            if cmarks is None or cmarks:
                plan.contract.add(s)
            if marks or cmarks is None or cmarks:
                plan.walk.add(s)
                if cmarks is not None:
                    plan.marks[s] = sorted(set(marks) | set(cmarks))
                continue
        f = fn.start_byte
        if (data.find(b"auto", f, s) >= 0 or data.find(b"decltype", f, s) >= 0 or
                data.find(b"conste", f, s) >= 0) and \
                _KEEP_HEADER.search(data, f, s) is not None:
            continue                    # kept as written (types elsewhere may need it)
        if body.has_error and not _balanced(data, s + 1, e - 1):
            continue                    # tree-sitter may have its end wrong: keep it
        i = bisect_left(directives, s)
        if i < len(directives) and directives[i] < e:
            # keep the preprocessor lines (a #define may serve later code), blank the rest
            src[s + 1:e - 1] = _blank_but_directives(bytes(src[s + 1:e - 1]))
        else:
            src[s + 1:e - 1] = bytes(src[s + 1:e - 1]).translate(_BLANK)
    if not plan.walk and not plan.residual:
        return None
    # unreadable regions no candidate lies in: clang need not read them either (fuzzed
    # garbage like `a<a<a<...` sends its tentative parsing exponential)
    marked = sorted(m for ms in plan.marks.values() for m in ms)
    walked_in_full = [(b.start_byte, b.end_byte) for _, b, _ in bodies
                      if b.start_byte in plan.walk and b.start_byte not in plan.marks]
    for err in ctx.model.error_nodes:
        a, b = err.start_byte, err.end_byte
        if b - a < 2 or any(x <= a < y for x, y in walked_in_full):
            continue
        k = bisect_left(marked, a)
        if k < len(marked) and marked[k] < b:
            continue
        t = data[a:b]
        if _LITERAL_RE.search(t) or (b"-" in t and b"*" in t) or b"#" in t or \
                not _balanced(data, a, b):
            continue
        src[a:b] = bytes(src[a:b]).translate(_BLANK)
    plan.source = bytes(src)
    if _ANGLE_CHAIN.search(plan.source):
        plan.unreadable = "a chain of `<` clang would try as nested templates"
    return plan


def _balanced(data: bytes, a: int, b: int) -> bool:
    """Do the brackets of ``data[a:b]`` pair up (each kind never below zero, all zero at
    the end)? Blanking such a stretch cannot change the structure around it."""
    depth = {40: 0, 91: 0, 123: 0}
    close = {41: 40, 93: 91, 125: 123}
    for m in _BRACKETS.finditer(data, a, b):
        c = data[m.start()]
        if c in depth:
            depth[c] += 1
        else:
            o = close[c]
            depth[o] -= 1
            if depth[o] < 0:
                return False
    return not any(depth.values())


def _blank_but_directives(text: bytes) -> bytes:
    out = []
    keep = False
    for line in text.split(b"\n"):
        if keep or line.lstrip().startswith(b"#"):
            out.append(line)
            keep = line.rstrip().endswith(b"\\")
        else:
            out.append(line.translate(_BLANK))
    return b"\n".join(out)
