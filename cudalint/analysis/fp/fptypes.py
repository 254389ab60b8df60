"""Floating-point types of device expressions, for CL402 (FMA contraction) and CL403
(silent FP64).

The semantic engine is libclang (the ``libclang`` wheel): the unit is parsed as CUDA
device code, with a small shim of CUDA keywords, built-in variables and math-function
overloads in place of the toolkit's headers, so no CUDA installation is needed (the
session: :mod:`clang_session`; it runs in a helper process, :mod:`clang_process`, so
that an abort inside libclang costs one unit's facts and not the run). ``#include`` lines are blanked (same length,
offsets kept): names from headers stay unknown, their expressions get no type, and the
rules stay silent there. Typedefs, ``auto``, templates (instantiated ones) and overloaded
math functions are resolved by clang.

Without libclang, :func:`fp_facts` falls back to tree-sitter facts: only names declared
``float``/``double`` (parameters, locals, pointer elements) in the same function have a
type, and ``FpFacts.engine`` says so.

What counts as silent FP64 follows what nvcc emits (measured, ``fixtures/CL403/
sass_truth.json``): a float promoted to double meets a double literal or a double math
function and the result goes back to float (or into a comparison). nvcc narrows the
trivial case itself -- one ``+ - * /`` or comparison whose operands are promoted floats
and literals exactly representable in float, its result converted straight back to float
(``float y = x * 0.5`` is an FMUL) -- so that case is not reported; ``x * 0.1``, ``x *
0.5 + b``, ``2.0 * x * x``, ``pow(x, 2.0)`` and ``exp(x * 0.5)`` are DMUL/DADD/DFMA.
A subexpression of constants (``2.65625f * 3.0``, macros, enumerators, constexpr values:
whatever clang's constant evaluator folds) counts as one constant: nvcc folds it, so
``K * 3.0 * (b - a)`` with a constant ``K`` is the trivial case, with a run-time ``k`` it
is two DMULs (``folded_constants`` / ``runtime_scale_chain`` in the SASS truth).
"""
from __future__ import annotations

import hashlib
import math
import re
from bisect import bisect_left

from cudalint.analysis.fp import clang_process
from cudalint.analysis.fp.clang_session import (_ANGLE_CHAIN, _DOUBLE_MATH,
                                                MACRO_TOKENS_MAX, _index, _on_big_stack,
                                                _parse, _parse_setup, _shim_decls,
                                                _stack_for, macro_expansion,
                                                stack_for_expansion)
from cudalint.analysis.fp.facts import (Contraction, FpFacts, Promotion, exactly_float,
                                        literal_value)

_INCLUDE_LINE = re.compile(rb"^[ \t]*#[ \t]*include[^\n]*", re.M)


# ---------------------------------------------------------------------------------------
# prefilter (tree-sitter): is there anything for libclang to look at?


_CANDIDATE = re.compile(rb"\d\.\d*(?:[eE][+-]?\d+)?(?![fF\w])|\.\d+(?![fF\w\d])|\(\s*double\s*\)"
                        rb"|\bM_PI|\*[^;]*-[^;]*\*|\bdouble\b|\bpow\s*\(|\bexp\s*\(")


# the alternatives of _CANDIDATE, each in a form the regex engine scans fast (a leading
# character set or literal), tried cheapest first: has_candidates(d) is exactly
# `_CANDIDATE.search(d) is not None`, about 10x faster
_CAND_LITERAL = re.compile(rb"[0-9.](?:(?<=\d)\.\d*(?:[eE][+-]?\d+)?(?![fF\w])"
                           rb"|(?<=\.)\d+(?![fF\w\d]))")
_CAND_WORDS = ((b"double", re.compile(rb"\bdouble\b")), (b"M_PI", re.compile(rb"\bM_PI")),
               (b"pow", re.compile(rb"\bpow\s*\(")), (b"exp", re.compile(rb"\bexp\s*\(")))


def has_candidates(data: bytes) -> bool:
    if _CAND_LITERAL.search(data) is not None:
        return True
    for word, rx in _CAND_WORDS:
        if word in data and rx.search(data) is not None:
            return True
    if b"*" not in data or b"-" not in data:
        return False
    # `\*[^;]*-[^;]*\*`: a `*`, then a `-`, then a `*`, with no `;` between
    for seg in data.split(b";"):
        i = seg.find(b"*")
        if i >= 0:
            j = seg.find(b"-", i + 1)
            if j >= 0 and seg.find(b"*", j + 1) >= 0:
                return True
    return False



# deeper expressions are not followed (Python recursion, ctypes callbacks): silent there
_MAX_DEPTH = 150
_CXEVAL_FLOAT = 2                   # CXEvalResultKind: CXEval_Float
_EVALUATOR: list = []


def _evaluator(ci):
    """libclang's constant evaluator (clang_Cursor_Evaluate), which the Python bindings
    do not wrap, with its ctypes signatures set once; None where the library lacks it."""
    if not _EVALUATOR:
        import ctypes
        try:
            lib = ci.conf.lib
            lib.clang_Cursor_Evaluate.argtypes = [ci.Cursor]
            lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
            lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
            lib.clang_EvalResult_getKind.restype = ctypes.c_int
            lib.clang_EvalResult_getAsDouble.argtypes = [ctypes.c_void_p]
            lib.clang_EvalResult_getAsDouble.restype = ctypes.c_double
            lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
            lib.clang_EvalResult_dispose.restype = None
        except (AttributeError, OSError):
            lib = None
        _EVALUATOR.append(lib)
    return _EVALUATOR[0]
_CACHE: dict[tuple, "FpFacts"] = {}
_CACHE_MAX = 512


def fp_facts(unit_data: bytes, tree_facts=None, want_contractions: bool = True) -> FpFacts:
    """Facts for one unit. With ``tree_facts`` (the unit's context) the tree-sitter
    prefilters of :mod:`fpfilter` decide whether libclang runs at all and which function
    bodies it sees; results are cached by the content libclang would parse."""
    if not has_candidates(unit_data):
        return FpFacts("none")
    got = _index()
    if got is None:
        from cudalint.analysis.fp.fptypes_ts import ts_facts
        facts = ts_facts(tree_facts) if tree_facts is not None else FpFacts("tree-sitter")
        facts.note = "libclang unavailable: types from declarations only"
        return facts
    plan = None
    src = unit_data
    if tree_facts is not None:
        from cudalint.analysis.fp.fpfilter import clang_plan
        plan = clang_plan(tree_facts, unit_data)
        if plan is None:
            return FpFacts("libclang")          # no function can hold a finding
        if plan.unreadable is not None:
            return FpFacts("libclang", note=f"not analysed: {plan.unreadable}")
        src = plan.source
    src = _INCLUDE_LINE.sub(lambda m: b" " * len(m.group()), src)
    key = (hashlib.blake2b(src, digest_size=20).digest(), want_contractions,
           None if plan is None else (frozenset(plan.walk), frozenset(plan.contract),
                                      frozenset(plan.known),
                                      tuple(sorted((k, tuple(v))
                                                   for k, v in plan.marks.items()))))
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    if _ANGLE_CHAIN.search(src):
        return FpFacts("libclang", note="a chain of '<' after names libclang may not "
                                        "know; the unit was not analysed")
    stack = _stack_for(src, tree_facts)
    if stack is None:
        return FpFacts("libclang", note="expressions nested too deeply for libclang; "
                                        "the unit was not analysed")
    blown, expansion = macro_expansion(src)
    if blown is not None:
        return FpFacts("libclang", notice=f"macro `{blown}` expands to more than "
                                          f"{MACRO_TOKENS_MAX:,} tokens; the unit's "
                                          "floating-point types were not analysed")
    stack = max(stack, stack_for_expansion(expansion))
    settings = getattr(tree_facts, "settings", None)
    _parse_setup()              # the PCH and the shim's size, made once before the fork:
    _shim_decls()               # a helper started again after a crash inherits them
    try:
        facts = clang_process.call(
            _clang_work, (src, plan, want_contractions, stack),
            getattr(settings, "memory_limit_mb", None), getattr(settings, "time_limit_s", None))
    except clang_process.HelperDied as exc:
        return FpFacts("libclang", notice=str(exc))
    except Exception as exc:    # libclang raises TranslationUnitLoadError on hard failures
        return FpFacts("libclang", note=f"libclang could not parse the unit: {exc}")
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = facts
    return facts


def _clang_work(src: bytes, plan, want_contractions: bool, stack: int) -> FpFacts:
    """Parse and walk one unit: what the libclang helper process runs."""
    ci, idx = _index()

    def work() -> FpFacts:
        tu = _parse(idx, src)
        return _ClangWalk(ci, src, plan).run(tu, want_contractions)
    return _on_big_stack(work, stack)


class _ClangWalk:
    def __init__(self, ci, data: bytes, plan=None):
        self.ci = ci
        self.plan = plan
        self.K = ci.CursorKind
        self.T = ci.TypeKind
        self.data = data
        self.facts = FpFacts("libclang")
        self.seen: set[tuple[int, int]] = set()

    # -- helpers -------------------------------------------------------------------------

    def tkind(self, c):
        try:
            return c.type.get_canonical().kind
        except Exception:
            return None

    def is_double(self, c) -> bool:
        return self.tkind(c) == self.T.DOUBLE

    def is_float(self, c) -> bool:
        return self.tkind(c) == self.T.FLOAT

    def span(self, c) -> tuple[int, int]:
        e = c.extent
        return e.start.offset, e.end.offset

    def in_main(self, c) -> bool:
        f = c.location.file
        return f is not None and f.name == "unit.cu"

    def text(self, c) -> str:
        s, e = self.span(c)
        return self.data[s:e].decode("utf-8", "replace")

    def op(self, c) -> str | None:
        """The operator of a binary operator cursor, read between its operands."""
        kids = list(c.get_children())
        if len(kids) != 2:
            return None
        a = kids[0].extent.end.offset
        b = kids[1].extent.start.offset
        between = self.data[a:b].decode("utf-8", "replace")
        between = re.sub(r"/\*.*?\*/|//[^\n]*", " ", between, flags=re.S).strip()
        between = between.strip("()").strip()
        return between or None

    def strip(self, c):
        """Through parentheses and value-preserving implicit casts of the same type."""
        K = self.K
        while True:
            kids = list(c.get_children())
            if c.kind == K.PAREN_EXPR and len(kids) == 1:
                c = kids[0]
            elif c.kind == K.UNEXPOSED_EXPR and len(kids) == 1 and \
                    self.tkind(kids[0]) == self.tkind(c):
                c = kids[0]
            else:
                return c

    # -- walk ----------------------------------------------------------------------------

    def run(self, tu, want_contractions: bool) -> FpFacts:
        skip = _shim_decls()
        for i, c in enumerate(tu.cursor.get_children()):
            if i < skip - 1:
                continue                # the shim's own declarations come first
            self._decl(c, want_contractions)
        return self.facts

    def _decl(self, c, want_contractions: bool) -> None:
        K = self.K
        if not self.in_main(c):
            return
        if c.kind in (K.NAMESPACE, K.LINKAGE_SPEC, K.CLASS_DECL, K.STRUCT_DECL,
                      K.CLASS_TEMPLATE):
            for ch in c.get_children():
                self._decl(ch, want_contractions)
            return
        if c.kind not in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD):
            return
        if self.plan is not None and self.plan.skips(*self.span(c)):
            return                      # its body was seen and blanked (fpfilter)
        kids = list(c.get_children())
        if not any(k.kind in (K.CUDADEVICE_ATTR, K.CUDAGLOBAL_ATTR) for k in kids):
            return
        body = next((k for k in kids if k.kind == K.COMPOUND_STMT), None)
        if body is None:
            return
        self.function = c
        self.body_start, self.body_end = self.span(body)
        plan = self.plan
        marks = None
        if plan is not None:
            if not plan.walks(self.body_start):
                return                  # no candidate in it (fpfilter): blanked, skip
            want_contractions = want_contractions and plan.contracts(self.body_start)
            marks = plan.marks.get(self.body_start)
        self.body_text = self.text(body)
        self._walk(body, [], want_contractions, {}, marks)

    def _walk(self, c, stack: list, want_contractions: bool, products: dict,
              marks: list[int] | None = None) -> None:
        K = self.K
        if len(stack) > _MAX_DEPTH:
            return                      # a pathologically deep expression: stay silent
        if marks is not None:
            # descend only where a source the prefilter kept lies (fpfilter.Plan.marks)
            s, e = self.span(c)
            if self.body_start <= s <= e <= self.body_end:
                k = bisect_left(marks, s)
                if k == len(marks) or marks[k] > e:
                    return
        parent = stack[-1] if stack else None
        if self.is_double(c) and c.kind not in (K.DECL_REF_EXPR,) and \
                (parent is None or not self._continues(parent, c)):
            self._region_root(c, parent)
        if want_contractions:
            self._contraction(c, stack, products)
        stack.append(c)
        for ch in c.get_children():
            self._walk(ch, stack, want_contractions, products, marks)
        stack.pop()

    def _continues(self, parent, child) -> bool:
        """Is ``parent`` part of the same FP64 expression as ``child``?"""
        K = self.K
        if not self.is_double(parent):
            return False
        return parent.kind in (K.BINARY_OPERATOR, K.PAREN_EXPR, K.UNEXPOSED_EXPR,
                               K.UNARY_OPERATOR, K.CONDITIONAL_OPERATOR, K.CALL_EXPR,
                               K.CSTYLE_CAST_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR,
                               K.CXX_STATIC_CAST_EXPR)

    # -- CL403 ---------------------------------------------------------------------------

    def _region_root(self, root, parent) -> None:
        K = self.K
        exit_ = self._exit(root, parent)
        if exit_ is None:
            return
        info = {"promoted": 0, "literals": [], "intended": False, "ops": 0, "calls": [],
                "casts": [], "leaves_exact": True}
        self._collect(root, info, top=True)
        if info["intended"] or not info["promoted"]:
            return
        if not (info["literals"] or info["calls"] or info["casts"]):
            return
        fp64_ops = info["ops"] + len(info["calls"])
        if exit_ == "float":
            trivial = info["ops"] == 1 and not info["calls"] and info["leaves_exact"]
            if info["ops"] == 0 and not info["calls"]:
                return                      # (double)x straight back to float
        else:                               # comparison operand
            trivial = info["ops"] == 0 and not info["calls"] and info["leaves_exact"]
        if trivial:
            return
        rs, re_ = self.span(root)
        for lit in info["literals"]:
            s, e = self.span(lit)
            text = self.data[s:e].decode("utf-8", "replace")
            value = literal_value(text)
            key = (s, e)
            if key in self.seen:
                continue
            self.seen.add(key)
            self.facts.promotions.append(Promotion(
                s, e, "literal", text, exactly_float(value) if value is not None else None,
                max(fp64_ops, 1), rs, re_))
        if not info["literals"]:
            what = info["casts"][0] if info["casts"] else info["calls"][0]
            s, e = self.span(what)
            if (s, e) not in self.seen:
                self.seen.add((s, e))
                kind = "cast" if info["casts"] else "call"
                text = self.text(what)
                if kind == "call":
                    callee = next(iter(what.get_children()), None)
                    if callee is not None:
                        s, e = self.span(callee)
                        text = self.text(callee)
                self.facts.promotions.append(Promotion(s, e, kind, text, None,
                                                       max(fp64_ops, 1), rs, re_))

    def _exit(self, root, parent) -> str | None:
        K = self.K
        if parent is None:
            return None
        if parent.kind in (K.UNEXPOSED_EXPR, K.CSTYLE_CAST_EXPR, K.CXX_STATIC_CAST_EXPR,
                           K.CXX_FUNCTIONAL_CAST_EXPR) and self.is_float(parent):
            return "float"
        if parent.kind == K.COMPOUND_ASSIGNMENT_OPERATOR and self.is_float(parent):
            return "float-accumulate"
        if parent.kind == K.BINARY_OPERATOR and self.op(parent) in (
                "<", ">", "<=", ">=", "==", "!="):
            return "compare"
        return None

    def _collect(self, c, info, top: bool = False, depth: int = 0) -> None:
        K = self.K
        if depth > _MAX_DEPTH:
            info["intended"] = True             # too deep to follow: stay silent
            return
        kids = list(c.get_children())
        if c.kind == K.FLOATING_LITERAL:
            info["literals"].append(c)
            v = literal_value(self.text(c))
            if v is None or not exactly_float(v):
                info["leaves_exact"] = False
            return
        if c.kind in (K.UNEXPOSED_EXPR, K.CSTYLE_CAST_EXPR, K.CXX_STATIC_CAST_EXPR,
                      K.CXX_FUNCTIONAL_CAST_EXPR) and kids:
            inner = kids[-1]
            if c.kind != K.UNEXPOSED_EXPR:
                # (double)x is an explicit cast over an implicit FloatingCast
                while inner.kind == K.UNEXPOSED_EXPR and self.is_double(inner) and \
                        len(list(inner.get_children())) == 1:
                    inner = next(iter(inner.get_children()))
            if self.is_float(inner):
                info["promoted"] += 1
                if c.kind != K.UNEXPOSED_EXPR:
                    info["casts"].append(c)
                return
            if self.is_double(inner):
                self._collect(inner, info, depth=depth + 1)
                return
            if c.kind == K.UNEXPOSED_EXPR and inner.kind == K.FLOATING_LITERAL:
                self._collect(inner, info, depth=depth + 1)
                return
            return                                          # int -> double: neutral
        if not (self.is_double(c) or self.is_float(c)):
            return                                          # integers: neutral
        if c.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR, K.ARRAY_SUBSCRIPT_EXPR):
            info["intended"] = True                         # double data: on purpose
            return
        if c.kind == K.PAREN_EXPR and kids:
            self._collect(kids[0], info, depth=depth + 1)
            return
        if c.kind == K.UNARY_OPERATOR and kids:
            self._collect(kids[-1], info, depth=depth + 1)
            return
        if c.kind == K.BINARY_OPERATOR and len(kids) == 2:
            value = self.constant(c)
            if value is not None:
                # a product of constants (`2.65625f * 3.0`, a macro, constexpr or enum
                # operands) is folded by nvcc: one constant, no FP64 instruction at run
                # time (sm_86/sm_90 SASS: fixtures/CL403/sass_truth.json, `folded`)
                info["literals"].extend(self._double_literals(c))
                if not exactly_float(value):
                    info["leaves_exact"] = False
                return
            if self.op(c) in ("+", "-", "*", "/"):
                info["ops"] += 1
            for k in kids:
                self._collect(k, info, depth=depth + 1)
            return
        if c.kind == K.CONDITIONAL_OPERATOR and len(kids) == 3:
            info["ops"] += 1
            for k in kids[1:]:
                self._collect(k, info, depth=depth + 1)
            return
        if c.kind == K.CALL_EXPR:
            ref = c.referenced
            name = ref.spelling if ref is not None else ""
            if name in _DOUBLE_MATH and self.is_double(c):
                info["calls"].append(c)
                for k in kids[1:]:
                    if self.is_float(self.strip(k)):
                        info["promoted"] += 1       # float passed to a double template
                    else:
                        self._collect(k, info, depth=depth + 1)
                return
            info["intended"] = True                         # a double-returning function
            return
        info["intended"] = True                             # unknown shape: stay silent

    def constant(self, c) -> float | None:
        """The value clang's constant evaluator gives ``c`` (literals, macros expanding to
        them, enumerators, constexpr and const variables with constant initializers), or
        None when ``c`` needs run-time values."""
        lib = _evaluator(self.ci)
        if lib is None:
            return None
        res = lib.clang_Cursor_Evaluate(c)
        if not res:
            return None
        try:
            if lib.clang_EvalResult_getKind(res) != _CXEVAL_FLOAT:
                return None
            return lib.clang_EvalResult_getAsDouble(res)
        finally:
            lib.clang_EvalResult_dispose(res)

    def _double_literals(self, c) -> list:
        K = self.K
        if c.kind == K.FLOATING_LITERAL:
            return [c] if self.is_double(c) else []
        return [lit for k in c.get_children() for lit in self._double_literals(k)]

    # -- CL402 ---------------------------------------------------------------------------

    def _product(self, c):
        c = self.strip(c)
        if c.kind == self.K.BINARY_OPERATOR and self.op(c) == "*" and \
                (self.is_float(c) or self.is_double(c)):
            return c
        return None

    def _contraction(self, c, stack, products: dict) -> None:
        K = self.K
        # remember `p = a*b` (declarations and assignments)
        if c.kind == K.VAR_DECL and (self.is_float(c) or self.is_double(c)):
            kids = list(c.get_children())
            if kids:
                prod = self._product(kids[-1])
                if prod is not None:
                    products[c.spelling] = (self._operands(prod), self.span(prod))
            return
        if c.kind != K.BINARY_OPERATOR or not (self.is_float(c) or self.is_double(c)):
            return
        if self.op(c) != "-":
            return
        kids = list(c.get_children())
        if len(kids) != 2:
            return
        left, right = self._product(kids[0]), self._product(kids[1])
        dtype = "float" if self.is_float(c) else "double"
        s, e = self.span(c)
        if left is not None and right is not None and self._sign_tested(c, stack) and \
                not (self._exact(left) or self._exact(right)):
            # an exact product (`4.0f * b`) makes the fused form the correctly rounded
            # difference: contraction can only fix the sign, never break it
            self.facts.contractions.append(Contraction(s, e, "difference-of-products",
                                                       dtype, self.text(c)))
            return
        r = self.strip(kids[1])
        if left is not None and r.kind == K.DECL_REF_EXPR and r.spelling in products:
            operands, where = products[r.spelling]
            if _split_of(self._operands(left), operands):
                self.facts.contractions.append(Contraction(s, e, "error-free-transform",
                                                           dtype, self.text(c), where))

    def _exact(self, prod) -> bool:
        """Is the product exact in its type: one factor a power-of-two constant (`4.0f*b`,
        `0.5*x`, `2*y`)? (Overflow and underflow aside, as the rule's model is.)"""
        K = self.K
        for k in prod.get_children():
            k = self.strip(k)
            neg = False
            while k.kind == K.UNARY_OPERATOR and self.text(k).lstrip().startswith(("-", "+")):
                kids = list(k.get_children())
                if len(kids) != 1:
                    break
                neg, k = not neg, self.strip(kids[0])
            if k.kind not in (K.FLOATING_LITERAL, K.INTEGER_LITERAL):
                continue
            word = self.text(k).strip().rstrip("fFlLuU")
            try:
                value = float(int(word, 0)) if k.kind == K.INTEGER_LITERAL else \
                    float.fromhex(word) if word.lower().startswith("0x") else float(word)
            except ValueError:
                continue
            if value != 0 and math.isfinite(value) and math.frexp(abs(value))[0] == 0.5:
                return True
        return False

    def _operands(self, prod) -> tuple[str, ...]:
        return tuple(sorted(re.sub(r"\s+", "", self.text(k)) for k in prod.get_children()))

    _CMP = ("<", ">", "<=", ">=", "==", "!=")
    _SIGN_FN = re.compile(r"orient|ccw|det|sign|side|incircle|insphere|inside|winding|edge",
                          re.I)

    def _sign_tested(self, c, stack) -> bool:
        """Is the difference's sign tested (an orientation / determinant test)? Directly
        in a comparison, through a variable compared later in the function, or returned
        from a function whose name says it is such a test."""
        K = self.K
        for p in reversed(stack):
            if p.kind in (K.PAREN_EXPR, K.UNEXPOSED_EXPR):
                continue
            if p.kind == K.BINARY_OPERATOR:
                return self.op(p) in self._CMP
            if p.kind == K.VAR_DECL:
                name = re.escape(p.spelling)
                after = self.body_text[self.span(p)[1] - self.body_start:]
                cmp = r"(?:<=?|>=?|==|!=)"
                return re.search(rf"\b{name}\s*{cmp}|{cmp}\s*{name}\b|signbit\s*\(\s*{name}"
                                 rf"\b|copysignf?\s*\([^;]*\b{name}\b", after) is not None
            if p.kind == K.RETURN_STMT:
                return self._SIGN_FN.search(self.function.spelling or "") is not None
            return False
        return False


def _base(operand: str) -> str:
    return re.split(r"[\[.(]", operand, maxsplit=1)[0]


def _split_of(parts: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    """Are ``parts`` the split halves of ``whole``'s operands (``ah*bh`` against
    ``p = a*b``: each name extends a different operand's name)? Other products subtracted
    from a product variable (recurrences, running sums) are not error terms."""
    if len(parts) != 2 or len(whole) != 2:
        return False
    p = [_base(x) for x in parts]
    w = [_base(x) for x in whole]
    if not all(p + w) or set(p) & set(w):
        return False
    return (p[0].startswith(w[0]) and p[1].startswith(w[1])) or \
        (p[0].startswith(w[1]) and p[1].startswith(w[0]))
