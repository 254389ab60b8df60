"""Loop and statement shapes that CL204's index classification (local_index) reads:
a loop's counter, step and constant trip count, ``#pragma unroll`` before it, and whether
an array element is stored or a local declared. Kept apart so local_index stays one
sitting's read."""
from __future__ import annotations

import re

from typing import Callable

from tree_sitter import Node

from cudalint.model.consteval import eval_int
from cudalint.parse import text

_MAX_TRIP = 1 << 16
_UNROLL_ONE = re.compile(r"#\s*pragma\s+unroll\s*\(?\s*1\s*\)?\s*$")


def first_value(loop: Node, name: str, env: dict[str, int]) -> int | None:
    """The value the loop's initializer gives its counter ``name``."""
    init = loop.child_by_field_name("initializer")
    if init is None:
        return None
    if init.type == "assignment_expression" and \
            text(init.child_by_field_name("left")) == name:
        return eval_int(text(init.child_by_field_name("right")), env)
    for d in init.children_by_field_name("declarator"):
        if d.type == "init_declarator" and text(d.child_by_field_name("declarator")) \
                == name:
            return eval_int(text(d.child_by_field_name("value")), env)
    return None


def trip_with(loop: Node, name: str, env: dict[str, int],
              modified: Callable[[Node], bool]) -> int | None:
    """The constant trip count of ``loop`` over ``name`` with the constants ``env``
    (None: not constant, or ``modified(body)``: its body changes the counter)."""
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    upd = loop.child_by_field_name("update")
    if init is None or cond is None or upd is None:
        return None
    start = None
    if init.type == "assignment_expression" and \
            text(init.child_by_field_name("left")) == name:
        start = eval_int(text(init.child_by_field_name("right")), env)
    for d in init.children_by_field_name("declarator"):
        if d.type == "init_declarator" and text(d.child_by_field_name("declarator")) \
                == name:
            start = eval_int(text(d.child_by_field_name("value")), env)
    if start is None or cond.type != "binary_expression":
        return None
    op = text(cond.child_by_field_name("operator"))
    if text(cond.child_by_field_name("left")) != name:
        return None
    bound = eval_int(text(cond.child_by_field_name("right")), env)
    if bound is None:
        return None
    step = _step(upd, name, env)
    if step is None or step == 0:
        return None
    body = loop.child_by_field_name("body")
    if body is not None and modified(body):
        return None
    if op in ("<", "<=") and step > 0:
        last = bound - (op == "<")
        trip = max(0, (last - start) // step + 1)
    elif op in (">", ">=") and step < 0:
        last = bound + (op == ">")
        trip = max(0, (start - last) // (-step) + 1)
    elif op == "!=":
        if (bound - start) % step:
            return None
        trip = (bound - start) // step
    else:
        return None
    return trip if trip <= _MAX_TRIP else None


def _is_store(node: Node, parent: Callable[[Node], Node | None]) -> bool:
    p = parent(node)
    while p is not None and p.type == "parenthesized_expression":
        node, p = p, parent(p)
    if p is None:
        return False
    if p.type == "assignment_expression":
        left = p.child_by_field_name("left")
        return left is not None and left.id == node.id and \
            text(p.child_by_field_name("operator")) == "="
    return False


def _mentions(node: Node, name: str) -> bool:
    """Does the identifier ``name`` occur in ``node``?"""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier" and text(n) == name:
            return True
        stack.extend(n.named_children)
    return False


def _declares(init: Node, name: str) -> bool:
    if init.type == "assignment_expression":           # `int j; for (j = 0; ...)`
        left = init.child_by_field_name("left")
        return left is not None and text(left) == name and \
            text(init.child_by_field_name("operator")) == "="
    if init.type != "declaration":
        return False
    for d in init.children_by_field_name("declarator"):
        if d.type == "init_declarator" and text(d.child_by_field_name("declarator")) == name:
            return True
    return False


def _counter_name(loop: Node) -> str | None:
    init = loop.child_by_field_name("initializer")
    if init is not None and init.type == "assignment_expression" and \
            text(init.child_by_field_name("operator")) == "=":
        left = init.child_by_field_name("left")
        return text(left) if left is not None and left.type == "identifier" else None
    if init is None or init.type != "declaration":
        return None
    ds = [d for d in init.children_by_field_name("declarator") if d.type == "init_declarator"]
    if len(ds) > 1:
        # `for (int n = 0, i = threadIdx.x; n < NB; ++n, i += blockDim.x)`: the one the
        # condition bounds is the counter (the others ride along)
        cond = loop.child_by_field_name("condition")
        left = cond.child_by_field_name("left") if cond is not None and \
            cond.type == "binary_expression" else None
        named = [d for d in ds if left is not None and
                 text(d.child_by_field_name("declarator")) == text(left)]
        ds = named
    if len(ds) != 1:
        return None
    return text(ds[0].child_by_field_name("declarator"))


def _parts(upd: Node) -> list[Node]:
    """The expressions of a comma-separated update (``++n, i += blockDim.x``)."""
    if upd.type != "comma_expression":
        return [upd]
    out: list[Node] = []
    stack = [upd]
    while stack:
        n = stack.pop()
        if n.type == "comma_expression":
            stack.extend(reversed(n.named_children))
        else:
            out.append(n)
    return out


def _step(upd: Node, name: str, env: dict[str, int]) -> int | None:
    if upd.type == "comma_expression":
        # nvcc unrolls `for (n = 0, i = t; n < 8; ++n, i += s)` by its counter n (ptxas
        # -v, sm_90: fixtures/CL204/unrolled_break.cu); only the part that steps n counts
        steps = [p for p in _parts(upd) if _steps_name(p, name)]
        return _step(steps[0], name, env) if len(steps) == 1 else None
    if upd.type == "update_expression" and text(upd.child_by_field_name("argument")) == name:
        return 1 if "++" in text(upd) else -1
    if upd.type == "assignment_expression" and \
            text(upd.child_by_field_name("left")) == name:
        op = text(upd.child_by_field_name("operator"))
        v = eval_int(text(upd.child_by_field_name("right")), env)
        if v is None:
            return None
        return v if op == "+=" else -v if op == "-=" else None
    return None


def _steps_name(upd: Node, name: str) -> bool:
    target = upd.child_by_field_name("argument") if upd.type == "update_expression" else \
        upd.child_by_field_name("left") if upd.type == "assignment_expression" else None
    return target is not None and text(target) == name


def _unroll_one(loop: Node) -> bool:
    prev = loop.prev_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_sibling
    return prev is not None and prev.type == "preproc_call" and \
        _UNROLL_ONE.match(text(prev).strip()) is not None


_UNROLL_ANY = re.compile(r"#\s*pragma\s+unroll\b")


def _unroll_pragma(loop: Node) -> bool:
    """``#pragma unroll`` (any count) right before the loop."""
    prev = loop.prev_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_sibling
    return prev is not None and prev.type == "preproc_call" and \
        _UNROLL_ANY.match(text(prev).strip()) is not None


def _declared_name(d: Node | None) -> str | None:
    while d is not None and d.type != "identifier":
        d = d.child_by_field_name("declarator")
    return text(d) if d is not None else None
