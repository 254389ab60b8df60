"""Tree-sitter fallback for :mod:`fptypes` when libclang cannot be loaded.

Only names declared ``float`` in the same device function (parameters, pointer elements,
locals) have a type; ``auto``, typedefs, templates and overloads are unknown, so far less
is found, and nothing is guessed: FMA-contraction facts (CL402) need libclang.
"""
from __future__ import annotations

from cudalint.analysis.fp.facts import FpFacts, Promotion, exactly_float, literal_value

_ARITH = {"+", "-", "*", "/"}
_MATH = {"pow", "exp", "log", "sqrt", "sin", "cos", "tan", "atan2", "exp2", "log2"}


def _float_names(fn, text) -> set[str]:
    names = {p.name for p in fn.params if p.base_type == "float"}
    stack = [fn.body] if fn.body is not None else []
    while stack:
        n = stack.pop()
        if n.type == "declaration":
            t = n.child_by_field_name("type")
            if t is not None and text(t) == "float":
                for d in n.children_by_field_name("declarator"):
                    while d is not None and d.type not in ("identifier",):
                        d = d.child_by_field_name("declarator")
                    if d is not None:
                        names.add(text(d))
        stack.extend(n.named_children)
    return names


def _is_float(node, names, text) -> bool:
    while node is not None and node.type == "parenthesized_expression":
        node = node.named_children[0] if node.named_children else None
    if node is None:
        return False
    if node.type == "identifier":
        return text(node) in names
    if node.type == "subscript_expression":
        arg = node.child_by_field_name("argument")
        return arg is not None and arg.type == "identifier" and text(arg) in names
    return False


def ts_facts(ctx) -> FpFacts:
    facts = FpFacts("tree-sitter")
    text = ctx.text
    for fn in ctx.model.functions:
        if not fn.is_device or fn.body is None:
            continue
        names = _float_names(fn, text)
        if not names:
            continue
        for lit in ctx.captures("(number_literal) @n", fn.body).get("n", []):
            value = literal_value(text(lit))
            if value is None or "." not in text(lit) and "e" not in text(lit).lower():
                continue
            expr = lit.parent
            if expr is None or expr.type != "binary_expression" or \
                    text(expr.child_by_field_name("operator")) not in _ARITH:
                continue
            other = expr.child_by_field_name("left")
            if other is not None and other.id == lit.id:
                other = expr.child_by_field_name("right")
            if not _is_float(other, names, text):
                continue
            up = expr.parent
            while up is not None and up.type == "parenthesized_expression":
                up = up.parent
            nested = up is not None and (
                (up.type == "binary_expression" and
                 text(up.child_by_field_name("operator")) in _ARITH) or
                (up.type == "argument_list" and up.parent is not None and
                 text(up.parent.child_by_field_name("function")) in _MATH))
            exact = exactly_float(value)
            if nested or not exact:
                facts.promotions.append(Promotion(lit.start_byte, lit.end_byte, "literal",
                                                  text(lit), exact, 1 if not nested else 2,
                                                  expr.start_byte, expr.end_byte))
    return facts
