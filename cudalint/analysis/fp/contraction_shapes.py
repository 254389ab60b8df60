"""Which `-` signs of a device function may be a CL402 contraction candidate, read from the
tree-sitter tree and the text (no types): the shapes :func:`fpfilter.clang_plan` keeps a
body for, and the offsets the libclang walk must reach in it.

A candidate is a binary ``-`` with a product on its left and, on its right, a product with
the difference's sign tested (compared, stored and compared, returned from an
``orient``/``det``-like function), or a variable initialised with a product whose operands
the left product splits (``ah*bh - p``); macros expanding to products count as products.
These mirror the tests of :class:`fptypes._ClangWalk` and answer "maybe" wherever
tree-sitter's reading may differ from clang's.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cudalint.analysis.fp.fpfilter import _Unit

_IDENT = re.compile(rb"[A-Za-z_]\w*")
_PRODUCT_DECL = re.compile(rb"\b[A-Za-z_]\w*\s*(?:=(?!=)|[({])[^;]*\*")
_CMP_OPS = ("<", ">", "<=", ">=", "==", "!=")
_SIGN_FN = re.compile(rb"orient|ccw|det|sign|side|incircle|insphere|inside|winding|edge",
                      re.I)


def contraction_marks(u: _Unit, fn, body, data: bytes,
                      minus: list[int]) -> list[int] | None:
    """Offsets the CL402 walk must reach in this body: each candidate `-` (``minus``:
    the `-` signs of the body), each declaration of a variable it subtracts, and, where
    a macro may expand to a difference of products, the macro's uses and every variable
    initialised with a product; [] when there is none."""
    s, e = body.start_byte, body.end_byte
    marks: list[int] = []
    if u.dop_macros:
        uses = [i.start() for i in _IDENT.finditer(data, s, e) if i.group() in u.dop_macros]
        if uses:
            marks += uses
            marks += [m.start() + s for m in _PRODUCT_DECL.finditer(data[s:e])]
    if not minus or data.find(b"-", s, e) < 0:
        return marks
    star = u.star_macros
    if data.find(b"*", s, e) < 0 and not star:
        return marks
    header = data[fn.start_byte:s]
    for pos in minus:
        if not star:
            a = max(data.rfind(b";", s, pos), data.rfind(b"{", s, pos),
                    data.rfind(b"}", s, pos))
            if data.find(b"*", a, pos) < 0:
                continue                # no product before it in the statement
        found = _minus_candidate(body, pos, data, header, u)
        if found is None:
            continue
        marks.append(pos)
        if found:                       # the variable subtracted: reach its declarations
            marks.extend(m2.start() + s for m2 in re.finditer(
                rb"\b" + re.escape(found) + rb"\s*[=({]", data[s:e]))
    return marks


def _strip(node):
    while node is not None and node.type == "parenthesized_expression":
        node = node.named_children[0] if node.named_children else None
    return node


def _op(node) -> bytes:
    o = node.child_by_field_name("operator")
    return o.text if o is not None else b""


def _productish(node, macros: _Unit) -> bool:
    node = _strip(node)
    if node is None:
        return False
    t = node.type
    if t == "binary_expression":
        return _op(node) == b"*"
    if t == "identifier":
        return node.text in macros.star_macros
    if t == "call_expression":
        f = node.child_by_field_name("function")
        return f is not None and f.text in macros.star_macros
    if t in ("number_literal", "field_expression", "subscript_expression", "string_literal",
             "char_literal", "true", "false", "this"):
        return False
    # anything else tree-sitter may have read differently from clang (a cast over a
    # dereference, `(x)*y`): a product if a `*` or a product macro is in it
    return b"*" in node.text or any(m.group() in macros.star_macros
                                    for m in _IDENT.finditer(node.text))


def _minus_candidate(body, pos: int, data: bytes, header: bytes,
                     macros: _Unit) -> bytes | None:
    """Is the `-` at ``pos`` a difference of products whose sign is tested, or a product
    minus a product variable it may split (an error term)? Mirrors fptypes' tests on the
    tree-sitter tree, answering yes where the tree may differ from clang's. None: no;
    otherwise the name of the subtracted variable (b"" for none)."""
    tok = body.descendant_for_byte_range(pos, pos + 1)
    if tok is None or tok.type != "-":
        return b"" if tok is not None and tok.type == "ERROR" else None
    node = tok.parent
    if node is None:
        return None
    if node.type != "binary_expression":
        up = node
        while up is not None and up.id != body.id:
            if up.type == "ERROR":
                return b""              # tree-sitter could not read it: ask clang
            up = up.parent
        return None
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if not _productish(left, macros):
        return None
    text = data[body.start_byte:body.end_byte]
    r = _strip(right)
    name = r.text if r is not None and r.type == "identifier" else b""
    if _productish(right, macros) and _sign_tested(node, text, header):
        return name
    if name and _error_term(_strip(left), name, text, macros):
        return name
    return None


def _sign_tested(node, text: bytes, header: bytes) -> bool:
    p = node.parent
    while p is not None and p.type == "parenthesized_expression":
        p = p.parent
    if p is None:
        return False
    t = p.type
    if t == "binary_expression":
        return _op(p).decode() in _CMP_OPS
    if t == "return_statement":
        return _SIGN_FN.search(header) is not None
    if t in ("argument_list", "initializer_list"):
        if p.parent is None or p.parent.type != "init_declarator":
            return False                # a call's argument, an aggregate's element
        p, t = p.parent, "init_declarator"
    if t == "init_declarator":
        # stored in a variable: compared anywhere in the function (clang: after it)
        d = p.child_by_field_name("declarator")
        if d is None or d.type != "identifier":
            return True
        name = re.escape(d.text)
        cmp = rb"(?:<=?|>=?|==|!=)"
        return re.search(rb"\b" + name + rb"\s*" + cmp + rb"|" + cmp + rb"\s*" + name +
                         rb"\b|signbit\s*\(\s*" + name + rb"\b|copysignf?\s*\([^;]*\b" +
                         name + rb"\b", text) is not None
    if t == "ERROR":
        return True
    return False


def _base(operand: bytes) -> bytes:
    return re.split(rb"[\[.(]", operand, maxsplit=1)[0]


def _top_level_other_operator(expr: bytes) -> bool:
    """Does ``expr`` have, outside brackets, an operator binding looser than `*` (a
    binary `+`/`-`, a comparison, a conditional, an assignment, a comma)?"""
    depth = 0
    prev = 0
    for idx, ch in enumerate(expr):
        if ch in b"([{":
            depth += 1
        elif ch in b")]}":
            depth -= 1
        elif depth == 0 and idx > 0:
            if ch in b"?:<>=&|,":
                return True
            if ch in b"+-" and prev and (chr(prev).isalnum() or prev in b"_)]."):
                # binary, unless the exponent of a literal (`1e-3`)
                k = idx - 1
                while k >= 0 and (chr(expr[k]).isalnum() or expr[k] in b"._"):
                    k -= 1
                word = expr[k + 1:idx]
                if not (word[:1].isdigit() and word[-1:] in b"eE"):
                    return True
        if ch not in b" \t\r\n":
            prev = ch
    return False


def _top_level_split(expr: bytes) -> list[bytes] | None:
    """``a * b`` -> [a, b] at parenthesis depth 0; None when not a plain product."""
    parts, depth, cur = [], 0, bytearray()
    for ch in expr:
        c = bytes((ch,))
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
        if c == b"*" and depth == 0:
            parts.append(bytes(cur))
            cur = bytearray()
            continue
        cur += c
    parts.append(bytes(cur))
    return [re.sub(rb"\s+", b"", p) for p in parts]


def _error_term(left, name: bytes, text: bytes, macros: _Unit) -> bool:
    """Could ``left - name`` be an error term: ``name`` initialised with a product whose
    operands the product ``left`` splits (fptypes._split_of)?"""
    if left is None or left.type != "binary_expression" or _op(left) != b"*":
        return True                     # a product macro or an unusual shape: ask clang
    a, b = left.child_by_field_name("left"), left.child_by_field_name("right")
    if a is None or b is None:
        return True
    parts = [_base(re.sub(rb"\s+", b"", a.text)), _base(re.sub(rb"\s+", b"", b.text))]
    for m in re.finditer(rb"\b" + re.escape(name) + rb"\s*(=(?!=)|\(|\{)([^;]*)", text):
        if m.group(1) != b"=":
            return True                 # `float p(a*b)`: ask clang
        init = m.group(2).strip()
        while init.startswith(b"(") and init.endswith(b")"):
            init = init[1:-1].strip()
        if b"*" not in init and not any(i.group() in macros.star_macros
                                          for i in _IDENT.finditer(init)):
            continue                    # not a product: no error term
        if _top_level_other_operator(init):
            continue                    # `a*b + c`: a sum, not a product
        whole = _top_level_split(init)
        if whole is None or len(whole) != 2:
            return True
        w = [_base(x) for x in whole]
        if not all(parts + w) or set(parts) & set(w):
            continue
        if (parts[0].startswith(w[0]) and parts[1].startswith(w[1])) or \
                (parts[0].startswith(w[1]) and parts[1].startswith(w[0])):
            return True
    return False
