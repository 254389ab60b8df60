"""Preprocessor context of a node: which ``#if``/``#ifdef`` branches enclose it.

Rules about the modern CUDA model stay silent in code that is not compiled for it:
the HIP/ROCm side of a platform guard (``#ifdef USE_ROCM`` ... ``#else`` is CUDA code
again), and either side of a toolkit/architecture version guard (``#if CUDA_VERSION <
9000``): such code is deliberate compatibility code.

A platform guard's sides are found by evaluating its chain of conditions as a CUDA build
would (``off_cuda_build``): ROCm/HIP words (``USE_ROCM``, ``TENSORFLOW_USE_ROCM``,
``__HIPCC__``, ``__HIP_PLATFORM_AMD__``, ``__HIP_PLATFORM_HCC__``) are undefined there,
while ``GOOGLE_CUDA`` (TensorFlow's convention), ``__HIP_PLATFORM_NVCC__`` and
``__HIP_PLATFORM_NVIDIA__`` (HIP on NVIDIA, which HOOMD's CMake defines for every CUDA
build) are defined. So ``#if GOOGLE_CUDA ... #elif TENSORFLOW_USE_ROCM`` and the
``#else`` of ``#ifdef __HIP_PLATFORM_NVCC__`` are HIP code: deepmd-kit's `__shfl` on
the ROCm side of tabulate.cu and HOOMD's in ECL.cuh were two wrong CL104 of the eighth
triage (bench/triage/sheet-newcorpus8.md, class W3). ``__CUDACC__`` is not a platform
word: its ``#else`` is host-compiler code, not HIP.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from cudalint.parse import text

VERSION = re.compile(r"CUDA_VERSION|CUDART_VERSION|__CUDACC_VER|__CUDA_ARCH__|CUDA_ARCH")
PLATFORM = re.compile(r"HIP\b|HIP_|ROCM|__HIPCC__")
# defined in a CUDA build, though some spell HIP: TensorFlow's GOOGLE_CUDA, HIP's NVIDIA
# platform (HOOMD's CMake/hoomd/HOOMDHIPSetup.cmake defines __HIP_PLATFORM_NVCC__ for CUDA)
CUDA_SIDE = re.compile(r"\b(?:GOOGLE_CUDA|__HIP_PLATFORM_NVCC__|__HIP_PLATFORM_NVIDIA__)\b")


@dataclass(frozen=True)
class Guard:
    condition: str
    negated: bool        # #ifndef X, #if !defined(X)
    in_else: bool        # the node is in the #else / #elif part
    # the #if/#elif conditions of the block as #if expressions (#ifdef X is `defined(X)`,
    # #ifndef X `!defined(X)`), and the branch holding the node (len(chain): the #else)
    chain: tuple[str, ...] = ()
    branch: int = 0


def as_if(directive: str, condition: str) -> str:
    """An #if/#ifdef/#ifndef/#elif/#elifdef/#elifndef condition as an #if expression."""
    condition = _CONTINUATION.sub(" ", condition).strip()
    if directive.endswith("ndef"):
        return f"!defined({condition})"
    if directive.endswith("def"):
        return f"defined({condition})"
    return condition


def _guard(cond_node: Node, node: Node) -> Guard:
    alternative = cond_node.child_by_field_name("alternative")
    in_else = alternative is not None and alternative.start_byte <= node.start_byte
    cond = cond_node.child_by_field_name("condition") or cond_node.child_by_field_name("name")
    directive = text(cond_node.children[0]) if cond_node.children else ""
    cond_text = text(cond)
    negated = directive.endswith("ifndef") or cond_text.lstrip().startswith("!")
    chain, branch = [as_if(directive, cond_text)], 0
    alt = alternative
    while alt is not None:
        if alt.type == "preproc_else":
            if alt.start_byte <= node.start_byte:
                branch = len(chain)
            break
        c = alt.child_by_field_name("condition") or alt.child_by_field_name("name")
        word = text(alt.children[0]) if alt.children else "#elif"
        chain.append(as_if(word, text(c) if c is not None else ""))
        if alt.start_byte <= node.start_byte:
            branch = len(chain) - 1
        alt = alt.child_by_field_name("alternative")
    return Guard(cond_text, negated, in_else, tuple(chain), branch)


def guards(node: Node, ctx=None) -> list[Guard]:
    """Every enclosing conditional, innermost first. With ``ctx`` (the unit's context)
    the unit's conditionals are listed once and the ones containing ``node`` are taken:
    ``Node.parent`` costs the node's depth (tree-sitter walks down from the root), so
    walking up from a node 44,000 levels deep (a fuzzed 100 KB expression) took minutes
    per barrier."""
    if ctx is not None:
        return ctx.analysis(Conditionals).guards(node)
    out = []
    cur = node.parent
    while cur is not None:
        if cur.type in ("preproc_if", "preproc_ifdef"):
            out.append(_guard(cur, node))
        cur = cur.parent
    return out


class Conditionals:
    """The unit's ``#if``/``#ifdef`` blocks (an analysis: ``ctx.analysis(Conditionals)``)."""

    def __init__(self, ctx):
        found = ctx.model.nodes("preproc_conditional")      # the unit's index query
        # outermost first: a block starts before the blocks inside it (or with them, and
        # is then longer)
        self.blocks = sorted(found, key=lambda n: (n.start_byte, -n.end_byte))

    def guards(self, node: Node) -> list[Guard]:
        out = []
        lo, hi = node.start_byte, node.end_byte
        for block in self.blocks:
            if block.start_byte > lo:
                break
            # ranges of a tree nest: a block containing the node encloses it
            if hi <= block.end_byte and block.id != node.id:
                out.append(_guard(block, node))
        out.reverse()
        return out


def not_for_modern_cuda(node: Node, ctx=None) -> bool:
    """True when ``node`` sits in version-guarded code or on the HIP side of a guard."""
    for g in guards(node, ctx):
        if VERSION.search(g.condition):
            return True
        if off_cuda_build(g.chain or (g.condition,), g.branch if g.chain else
                          (1 if g.in_else else 0)):
            return True
    return False


def off_cuda_build(chain: tuple[str, ...] | list[str], branch: int) -> bool:
    """True when branch ``branch`` of an #if/#elif.../#else chain (``branch ==
    len(chain)`` is the #else) is on the HIP/ROCm side of a platform guard: a CUDA build
    never compiles it. An #elif or #else after a condition that holds in a CUDA build
    (``GOOGLE_CUDA``, ``defined(__HIP_PLATFORM_NVCC__)``, ``!defined(USE_ROCM)``) is HIP
    code, and so is a branch whose own condition fails there (``TENSORFLOW_USE_ROCM``).
    Besides, a first condition that names a HIP word and no CUDA-side word keeps the test
    used before (its then-side is HIP unless negated, its other branches are HIP when it
    is): ``#ifdef ENABLE_HIP`` (HOOMD's GPU switch) and ``HIP_VERSION >= 402`` stay off,
    so no code that was silent before is reported now."""
    first = chain[0] if chain else ""
    if PLATFORM.search(first) and not CUDA_SIDE.search(first):
        negated = first.lstrip().startswith("!")
        if (branch == 0) != negated:
            return True
    for k, cond in enumerate(chain[:branch + 1]):
        value = cuda_build_value(cond)
        if k < branch and value is True:
            return True             # an earlier branch is the one a CUDA build takes
        if k == branch and value is False:
            return True
    return False


_CONTINUATION = re.compile(r"\\\r?\n")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_TOKEN = re.compile(r"\s*(\|\||&&|[<>=!]=|[<>!()]|[A-Za-z_]\w*|\d\w*|\S)")


def cuda_build_value(condition: str) -> bool | None:
    """An #if expression's truth in a CUDA build, where it can be told from platform
    words alone (HIP words undefined, CUDA-side words defined as 1); None when it names
    no platform word or depends on anything else (a version, a project option)."""
    condition = _COMMENT.sub(" ", _CONTINUATION.sub(" ", condition))
    if not (PLATFORM.search(condition) or CUDA_SIDE.search(condition)) or \
            len(condition) > 400:
        return None
    tokens = _TOKEN.findall(condition)
    try:
        value, end = _or(tokens, 0)
    except (IndexError, ValueError):
        return None
    if end != len(tokens) or value is None:
        return None
    return bool(value)


def _word(name: str) -> int | None:
    if CUDA_SIDE.fullmatch(name):
        return 1
    if PLATFORM.search(name):
        return 0
    return None


def _or(t: list[str], i: int) -> tuple[int | None, int]:
    value, i = _and(t, i)
    while i < len(t) and t[i] == "||":
        rhs, i = _and(t, i + 1)
        value = 1 if value or rhs else (0 if value == 0 and rhs == 0 else None)
    return value, i


def _and(t: list[str], i: int) -> tuple[int | None, int]:
    value, i = _compare(t, i)
    while i < len(t) and t[i] == "&&":
        rhs, i = _compare(t, i + 1)
        value = 0 if value == 0 or rhs == 0 else (1 if value and rhs else None)
    return value, i


def _compare(t: list[str], i: int) -> tuple[int | None, int]:
    value, i = _unary(t, i)
    if i < len(t) and t[i] in ("==", "!=", "<", ">", "<=", ">="):
        # a version or value comparison: not told by platform words
        _, i = _unary(t, i + 1)
        return None, i
    return value, i


def _unary(t: list[str], i: int) -> tuple[int | None, int]:
    tok = t[i]
    if tok == "!":
        value, i = _unary(t, i + 1)
        return (None if value is None else int(not value)), i
    if tok == "(":
        value, i = _or(t, i + 1)
        if t[i] != ")":
            raise ValueError(tok)
        return value, i + 1
    if tok == "defined":
        if t[i + 1] == "(":
            name, i = t[i + 2], i + 4
            if t[i - 1] != ")":
                raise ValueError(tok)
        else:
            name, i = t[i + 1], i + 2
        word = _word(name)
        return word, i
    if tok[0].isdigit():
        return (int(tok) if tok.isdigit() else None), i + 1
    if tok[0].isalpha() or tok[0] == "_":
        return _word(tok), i + 1
    raise ValueError(tok)


_COND_LINE = re.compile(r"^[ \t]*#[ \t]*(ifdef|ifndef|if|elif|else|endif)\b(.*)$", re.M)
_DEFINED = re.compile(r"^\s*(!)?\s*(?:defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+))\s*$")
MAX_CONDITIONALS = 10_000       # directives read in one file (issue 25)


def needs_undefined(text: str) -> tuple[tuple[int, int, str], ...]:
    """(start, end, X) of the text regions compiled only where macro ``X`` is NOT
    defined: the ``#else``/``#elif`` branches of ``#ifdef X`` (or ``#if defined(X)``),
    and the first branch of ``#ifndef X`` (or ``#if !defined(X)``). A build that defines
    X (``-DX``, CMake ``target_compile_definitions``) does not compile them; a macro the
    build does not define may still come from a header, so the other way is not
    decided (sheet-newcorpus9 W2: torchani's `cosf` under the `#else` of
    `#ifdef TORCHANI_OPT`, a definition of the same CMake target)."""
    out: list[tuple[int, int, str]] = []
    # per open #if group: (macro or None, polarity of the first branch, start of the
    # current branch, index of the branch)
    stack: list[list] = []
    for k, m in enumerate(_COND_LINE.finditer(text)):
        if k >= MAX_CONDITIONALS:
            break
        word, rest = m.group(1), m.group(2)
        if word in ("ifdef", "ifndef", "if"):
            name, first = None, True
            arg = rest.split("//", 1)[0].split("/*", 1)[0].strip()
            if word == "ifdef" and re.fullmatch(r"\w+", arg):
                name, first = arg, True
            elif word == "ifndef" and re.fullmatch(r"\w+", arg):
                name, first = arg, False
            elif word == "if":
                d = _DEFINED.match(arg)
                if d:
                    name, first = d.group(2) or d.group(3), not d.group(1)
            stack.append([name, first, m.end(), 0])
            continue
        if not stack:
            continue
        group = stack[-1]
        name, first, start, branch = group
        if name is not None and ((branch == 0 and not first) or (branch > 0 and first)):
            out.append((start, m.start(), name))
        if word == "endif":
            stack.pop()
        else:
            group[2], group[3] = m.end(), branch + 1
            if word == "elif" and not first:
                group[0] = None         # after `#ifndef X`, an #elif needs X and more
    return tuple(out)
