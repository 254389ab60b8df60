"""The types a template argument stands for where the host code does not write one.

Two places in host code name a kernel's instantiation without a type nvcc would see
written at the launch:

- PyTorch's dispatch macros. ``AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "name",
  [&] { k<scalar_t><<<g, b>>>(...); })`` expands the lambda once per type of the set,
  with ``scalar_t`` an alias of that type: ``k<float>`` and ``k<double>`` are compiled
  (``..._AND_HALF`` adds ``at::Half``, ``..._AND2(kHalf, kBFloat16, ...)`` the two named).
  :func:`dispatch_aliases` says, for a place in a launcher's text, which aliases the
  dispatch calls around it define and the types of each; a set with a type whose size
  is not known here (complex, a project enum) is unknown, and so is a macro not listed.
  :func:`expand_aliases` instantiates the first type of each size only (the analyses
  read a type argument for its layout: ``int`` after ``float`` is the same analysis).
- Deduced template arguments. ``k<<<g, b>>>(p)`` with ``template <typename T> __global__
  void k(T *p)`` instantiates ``k<float>`` when ``p`` is a ``float *``. :func:`arg_type`
  reads an argument's type from the launcher's text (a declaration before the launch,
  ``x.data_ptr<float>()``, a cast, a literal); :func:`deduce` matches the kernel's
  parameters against those types. Only what is written is used: an argument whose type
  is not declared in the text, or a parameter matched to two types, leaves the
  instantiation unknown (the kernel is analysed as written, as before).

Text based (no parse): the project index reads launchers in other files without a tree.
"""
from __future__ import annotations

import re
from itertools import product
from typing import TYPE_CHECKING

from cudalint.model.consteval import sizeof_type

if TYPE_CHECKING:
    from cudalint.model.instances import TemplateParam
    from cudalint.model.kernels import Param

# ScalarType names (``at::kHalf``, ``at::ScalarType::Half``, ``torch::kHalf``) as the C++
# type the dispatch aliases to (c10/core/ScalarType.h)
SCALAR_TYPES = {
    "Byte": "uint8_t", "Char": "int8_t", "Short": "int16_t", "Int": "int", "Long": "int64_t",
    "Float": "float", "Double": "double", "Half": "at::Half", "BFloat16": "at::BFloat16",
    "Bool": "bool",
}
# float first: on a tie of figures the engine keeps the first instantiation's message,
# and float is what these kernels run with most (PyTorch's own order is double, float)
_FLOATING = ("float", "double")
_INTEGRAL = ("uint8_t", "int8_t", "int", "int64_t", "int16_t")
# macro -> (alias, base types, how many ScalarType arguments come first)
DISPATCH = {
    "AT_DISPATCH_FLOATING_TYPES": ("scalar_t", _FLOATING, 0),
    "AT_DISPATCH_FLOATING_TYPES_AND_HALF": ("scalar_t", _FLOATING + ("at::Half",), 0),
    "AT_DISPATCH_FLOATING_TYPES_AND": ("scalar_t", _FLOATING, 1),
    "AT_DISPATCH_FLOATING_TYPES_AND2": ("scalar_t", _FLOATING, 2),
    "AT_DISPATCH_FLOATING_TYPES_AND3": ("scalar_t", _FLOATING, 3),
    "AT_DISPATCH_REDUCED_FLOATING_TYPES": ("scalar_t", ("at::Half", "at::BFloat16"), 0),
    "AT_DISPATCH_INTEGRAL_TYPES": ("scalar_t", _INTEGRAL, 0),
    "AT_DISPATCH_INTEGRAL_TYPES_AND": ("scalar_t", _INTEGRAL, 1),
    "AT_DISPATCH_ALL_TYPES": ("scalar_t", _FLOATING + _INTEGRAL, 0),
    "AT_DISPATCH_ALL_TYPES_AND": ("scalar_t", _FLOATING + _INTEGRAL, 1),
    "AT_DISPATCH_ALL_TYPES_AND2": ("scalar_t", _FLOATING + _INTEGRAL, 2),
    "AT_DISPATCH_ALL_TYPES_AND3": ("scalar_t", _FLOATING + _INTEGRAL, 3),
    "AT_DISPATCH_INDEX_TYPES": ("index_t", ("int", "int64_t"), 0),
}
MAX_INSTANTIATIONS = 16     # combinations of nested dispatches' types expanded
_REACH = 40_000             # characters before a place searched for its dispatch calls
_MACRO = re.compile(r"(AT_DISPATCH_[A-Z0-9_]+)\s*\(")
# brackets and commas, and what to jump over (comments, string and character literals)
_TOKEN = re.compile(r"""[()\[\]{},]|//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""",
                    re.DOTALL)


def dispatch_aliases(text: str, offset: int, lo: int = 0
                     ) -> dict[str, tuple[str, ...] | None]:
    """The type aliases the dispatch calls enclosing ``offset`` (and starting after
    ``lo``: the launching function's start) define: alias -> its types, or None where
    the call is a dispatch macro whose set is not known here (the inner call of two that
    define the same alias wins)."""
    if "AT_DISPATCH" not in text:
        return {}
    lo = max(lo, offset - _REACH)
    found: list[tuple[int, str, tuple[str, ...] | None]] = []
    pos = text.find("AT_DISPATCH_", lo, offset)
    while pos >= 0:
        # str.find for the literal, then the pattern at that place: a regex starting
        # with \b would try every character of the window
        m = _MACRO.match(text, pos)
        pos = text.find("AT_DISPATCH_", pos + 12, offset)
        if m is None or (m.start() and (text[m.start() - 1].isalnum()
                                        or text[m.start() - 1] == "_")):
            continue
        args = _open_args(text, m.end(), offset)
        if args is None:
            continue                        # closed before ``offset``: not around it
        spec = DISPATCH.get(m.group(1))
        if spec is None:
            if m.group(1).startswith("AT_DISPATCH_"):
                found.append((m.start(), "scalar_t", None))
            continue
        alias, base, extra = spec
        types: tuple[str, ...] | None = base
        if extra:
            named = [_scalar_type(a) for a in args[:extra]]
            if len(args) <= extra or None in named:
                types = None
            else:
                types = tuple(dict.fromkeys(base + tuple(named)))     # type: ignore
        found.append((m.start(), alias, types))
    out: dict[str, tuple[str, ...] | None] = {}
    for _, alias, types in sorted(found):
        out[alias] = types                  # later (inner) calls override outer ones
    return out


def _open_args(text: str, start: int, offset: int) -> list[str] | None:
    """The top-level arguments written between ``start`` (after a ``(``) and ``offset``
    when the parenthesis is still open at ``offset``; None when it closes before."""
    depth = 1
    args: list[str] = []
    cur = start
    for m in _TOKEN.finditer(text, start, offset):
        c = m.group(0)
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return None
        elif c == "," and depth == 1:
            args.append(text[cur:m.start()].strip())
            cur = m.end()
    return args


def _scalar_type(arg: str) -> str | None:
    name = arg.strip().rsplit("::", 1)[-1]
    if name.startswith("k") and name[1:] in SCALAR_TYPES:
        name = name[1:]
    return SCALAR_TYPES.get(name)


def expand_aliases(args: list[str], aliases: dict[str, tuple[str, ...] | None]
                   ) -> list[list[str]] | None:
    """``args`` once per combination of the types of the aliases they name (``[args]``
    when they name none); None when one they name has unknown types."""
    named = [a for a in aliases if any(re.search(rf"\b{a}\b", x) for x in args)]
    if not named:
        return [args]
    if any(aliases[a] is None for a in named):
        return None
    out = []
    for combo in product(*(_one_per_size(aliases[a]) for a in named)):
        table = dict(zip(named, combo))
        out.append([re.sub(r"\b(" + "|".join(named) + r")\b",
                           lambda m: table[m.group(1)], x) for x in args])
        if len(out) >= MAX_INSTANTIATIONS:
            break
    return out


def _one_per_size(types) -> tuple[str, ...]:
    """The first type of each size: the analyses read a type argument for its layout
    alone, so ``int`` after ``float`` (or ``int64_t`` after ``double``) would be the
    same analysis again (``AT_DISPATCH_ALL_TYPES``: 7 types, 4 sizes)."""
    seen: set = set()
    out = []
    for t in types:
        size = sizeof_type(t)
        if size in seen:
            continue
        seen.add(size)
        out.append(t)
    return tuple(out)


# ---- deduced template arguments ------------------------------------------------------
_ACCESSOR = re.compile(r"\.\s*(?:template\s+)?(?:mutable_|const_)?data(?:_ptr)?\s*<\s*"
                       r"([A-Za-z_][\w:]*(?:\s*\*)?)\s*>\s*\(\s*\)$")
_CAST = re.compile(r"^(?:\(\s*((?:const\s+)?[A-Za-z_][\w:]*\s*\*+)\s*\)|"
                   r"(?:reinterpret|static)_cast\s*<\s*((?:const\s+)?[A-Za-z_][\w:]*\s*\*+)"
                   r"\s*>)")
_FLOAT_LIT = re.compile(r"^[+-]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][+-]?\d+)?([fF]?)$")
_INT_LIT = re.compile(r"^[+-]?\d+$")
_QUALS = frozenset({"const", "volatile", "__restrict__", "__restrict", "restrict",
                    "static", "constexpr", "register", "struct", "class"})
_NOT_TYPES = frozenset({"return", "else", "case", "goto", "delete", "new", "throw",
                        "typedef", "using", "sizeof", "co_return"})


def arg_type(expr: str, before: str) -> str | None:
    """The type of a launch argument ``expr`` as the launcher writes it (``before``: the
    launching function's text up to the launch): ``float *`` for a name declared
    ``float *p`` there (a parameter or a local), ``x.data_ptr<float>()``, ``(float *)q``,
    ``reinterpret_cast<float *>(q)``; ``float``/``double``/``int`` for a literal and for
    a name declared with that type; None when it is not written."""
    e = expr.strip()
    if not e:
        return None
    m = _FLOAT_LIT.match(e)
    if m:
        return "float" if m.group(1) else "double"
    if _INT_LIT.match(e):
        return "int"
    m = _ACCESSOR.search(e)
    if m and not e.startswith(("(", "*", "&")):
        inner = _norm(m.group(1))
        return None if inner.endswith("*") else inner + " *"
    m = _CAST.match(e)
    if m:
        return _norm(m.group(1) or m.group(2))
    if re.fullmatch(r"[A-Za-z_]\w*", e):
        return declared_type(before, e)
    return None


def declared_type(before: str, name: str) -> str | None:
    """The type of the last declaration of ``name`` in ``before`` (``float *name``,
    ``const float* __restrict__ name``, ``auto name = x.data_ptr<float>()``, ``int name``
    in a parameter list or a statement)."""
    best = None
    pat = re.compile(r"(?<![\w.>])" + re.escape(name) + r"\b(?!\s*[.(])")
    for m in pat.finditer(before):
        start = max(before.rfind(c, 0, m.start()) for c in ";{}(,") + 1
        head = before[start:m.start()]
        if "\n#" in head or "=" in head or "<<" in head or ">>" in head:
            continue
        words = head.replace("*", " * ").replace("&", " & ").split()
        if not words or words[0] in _NOT_TYPES:
            continue
        nxt = before[m.end():m.end() + 200].lstrip()
        if words[-1] == "auto" or words == ["const", "auto"]:
            init = re.match(r"=\s*([^;]+);", nxt)
            got = arg_type(init.group(1), "") if init else None
            best = got if got is not None and got.endswith("*") else None
            continue
        if "&" in words:
            continue                        # a reference: not followed
        stars = words.count("*")
        names = [w for w in words if w != "*" and w not in _QUALS]
        if len(names) != 1 or not re.fullmatch(r"[A-Za-z_][\w:]*", names[0]) or \
                not (nxt.startswith((";", ",", ")", "=", "[")) or not nxt):
            continue
        if nxt.startswith("["):
            stars += 1                      # an array: a pointer when passed
        base = names[0]
        if base in ("unsigned", "signed", "long", "short"):
            base = "int" if base in ("unsigned", "signed") else base
        best = base + (" " + "*" * stars if stars else "")
    return best


def _norm(t: str) -> str:
    t = " ".join(w for w in t.replace("*", " * ").split() if w not in _QUALS)
    stars = t.count("*")
    base = t.replace("*", "").strip()
    return base + (" " + "*" * stars if stars else "")


def split_call(args: str) -> list[str]:
    """A call's argument list split at its top-level commas (``()``, ``[]``, ``{}``
    nest; ``<`` does not: ``a < b`` and ``p->x`` are no brackets)."""
    if not args.strip():
        return []
    if not any(c in args for c in "([{"):
        return [a.strip() for a in args.split(",")]
    out, depth, start = [], 0, 0
    for m in _TOKEN.finditer(args):
        c = m.group(0)
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(args[start:m.start()].strip())
            start = m.end()
    out.append(args[start:].strip())
    return out


def deduce(tparams: list["TemplateParam"], params: list["Param"],
           arg_types: list[str | None]) -> list[str] | None:
    """The template arguments of a launch without them, deduced from its arguments'
    types as C++ deduces a parameter ``T *p`` or ``T v`` (top-level const dropped),
    defaults for the rest; None when a parameter is matched to two types, one is
    neither deduced nor defaulted, or none is deduced."""
    if len(arg_types) != len(params):
        return None
    got: dict[str, str] = {}
    names = {tp.name for tp in tparams if tp.kind == "type"}
    for p, t in zip(params, arg_types):
        if p.base_type not in names or t is None:
            continue
        if p.is_array and not p.pointer_depth:
            depth = 1
        else:
            depth = p.pointer_depth
        stars = t.count("*")
        if stars != depth:
            if stars < depth:
                return None                 # a scalar for a pointer: nvcc rejects it
            continue
        base = t.replace("*", "").strip()
        if got.setdefault(p.base_type, base) != base:
            return None
    if not got:
        return None                         # nothing deduced: the kernel as written
    last = max(k for k, tp in enumerate(tparams) if tp.name in got)
    out = []
    for k, tp in enumerate(tparams):
        arg = got.get(tp.name)
        if arg is None and tp.default is None:
            return None
        if k <= last:
            out.append(arg if arg is not None else tp.default)
    return out          # the defaults after the last deduced one: binding's
