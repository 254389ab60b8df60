"""Which lanes a condition lets through, kept as a lane mask where only part of it can
be evaluated, and the conditions an access sits under inside its own expression.

A condition ``threadIdx.x < len && pad[blockIdx.x]`` cannot be evaluated as a whole
(the lane engine does not read memory), yet every lane that runs its branch has passed
``threadIdx.x < len``: dropping the whole condition puts lanes on the branch that never
run it (sheet-newcorpus5 W2, CL108 reported a race only a thread failing the guard
could make). Likewise ``threadIdx.x < len ? c[idx] : -inf`` reads ``c[idx]`` only in
the lanes where the condition holds (W1), and ``a && b[i]`` reads ``b[i]`` only where
``a`` holds. ``condition_mask`` splits ``&&``, ``||`` and ``!`` and keeps what each
evaluable part says; ``expression_guards`` names the conditions of the short-circuit
and conditional operators around an access. Both are read by the lane engine
(``KernelLanes.active``: the lanes CL201's figures count) and by the race search
(global_races: CL108), each with its own evaluation of a single condition; and
``settled_shared`` lets a ``__shared__`` scalar read after a barrier be a uniform value
in a condition (W6: ``if (e == best)`` is one lane, not the warp).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable

from tree_sitter import Node

from cudalint.parse import text

# guards kept per access at most (a fuzzed chain of thousands of ``&&``)
MAX_GUARD_DEPTH = 64


def strip(node: Node) -> Node:
    """The condition inside ``if (...)`` and redundant parentheses."""
    while node.type in ("condition_clause", "parenthesized_expression") and \
            node.named_child_count == 1:
        node = node.named_children[0]
    return node


def condition_mask(leaf: Callable[[Node], tuple | None], cond: Node | None,
                   want: bool = True) -> tuple | None:
    """``_mask``, or None where the condition nests too deep to split (a fuzzed chain
    of thousands of ``&&``)."""
    try:
        return _mask(leaf, cond, want)
    except RecursionError:
        return None


def _mask(leaf: Callable[[Node], tuple | None], cond: Node | None,
          want: bool = True) -> tuple | None:
    """The columns where ``cond`` may be ``want``: 0 only where it is known not to be
    (an over-approximation of the lanes that run the branch), or None when nothing is
    known. ``leaf`` evaluates a condition that is not ``&&``, ``||`` or ``!`` (its
    truth per column, or None). ``A && B`` is true only where both are: the parts
    known are kept and an unknown part is taken to hold; it is false where either is,
    which an unknown part leaves unknown (``||`` the other way round)."""
    if cond is None:
        return None
    inner = strip(cond)
    if inner.type == "unary_expression" and \
            text(inner.child_by_field_name("operator")) == "!":
        return _mask(leaf, inner.child_by_field_name("argument"), not want)
    if inner.type == "binary_expression":
        op = text(inner.child_by_field_name("operator"))
        if op in ("&&", "||"):
            a = _mask(leaf, inner.child_by_field_name("left"), want)
            b = _mask(leaf, inner.child_by_field_name("right"), want)
            if (op == "&&") == want:
                # every part must be ``want``: the lanes known to fail one are out
                if a is None or b is None:
                    return a if b is None else b
                return tuple(int(x and y) for x, y in zip(a, b))
            if a is None or b is None:
                return None
            return tuple(int(x or y) for x, y in zip(a, b))
    vec = leaf(inner)
    if vec is None:
        return None
    return tuple(int(bool(v) == want) for v in vec)


def expression_guards(node: Node, body: Node | None) -> list[tuple[Node, bool]]:
    """(condition, value it has where ``node`` is evaluated) for each operator of
    ``body`` that evaluates ``node`` only on one outcome, innermost first: the
    condition of ``c ? node : y`` (true) and ``c ? x : node`` (false), the left side
    of ``l && node`` (true) and ``l || node`` (false)."""
    if body is None:
        return []
    link = _guard_links(body).get(node.id)
    out: list[tuple[Node, bool]] = []
    while link is not None and len(out) < MAX_GUARD_DEPTH:
        guard, link = link
        out.append(guard)
    return out


@lru_cache(maxsize=8)
def _guard_links(body: Node) -> dict[int, tuple]:
    """node id -> its guards as a linked list ((condition, value), outer link), for
    the nodes of ``body`` under at least one guarding operator: one cursor walk of the
    body, the guards kept on a stack (``Node.parent`` costs the node's depth, and
    fuzzed sums nest thousands of operators)."""
    out: dict[int, tuple] = {}
    if not _GUARD_TEXT.search(body.text or b""):
        return out
    cursor = body.walk()
    parents: list[Node] = []
    links: list[tuple | None] = [None]
    while True:
        node = cursor.node
        if links[-1] is not None:
            out[node.id] = links[-1]
        if cursor.goto_first_child():
            parents.append(node)
            links.append(_child_link(node, cursor.field_name, links[-1]))
            continue
        while not cursor.goto_next_sibling():
            if not parents or not cursor.goto_parent():
                return out
            parents.pop()
            links.pop()
        links[-1] = _child_link(parents[-1], cursor.field_name, links[-2])


_GUARD_TEXT = re.compile(rb"\?|&&|\|\|")


def _child_link(parent: Node, field: str | None, link: tuple | None) -> tuple | None:
    """The guards of ``parent``'s child in ``field``: the parent's, plus the
    parent's own where it evaluates that child on one outcome only."""
    if field is None:
        return link
    if parent.type == "conditional_expression" and field in ("consequence",
                                                              "alternative"):
        return ((parent.child_by_field_name("condition"), field == "consequence"), link)
    if parent.type == "binary_expression" and field == "right":
        op = text(parent.child_by_field_name("operator"))
        if op in ("&&", "||"):
            return ((parent.child_by_field_name("left"), op == "&&"), link)
    return link


def settled_shared(lanes, decl: Node, scope: Node, use: Node) -> bool:
    """``decl`` declares a ``__shared__`` scalar every write of which is separated from
    ``use`` by a block barrier: a ``__syncthreads();`` statement between the write and
    the use, in a block that holds the use, and no write after the use in a loop
    around it. Every thread of the block then reads one value, a uniform unknown (a
    winner one thread stored, ``if (...) best = e; __syncthreads(); if (e == best)``:
    one lane of the block passes, as with ``threadIdx.x == c`` for a uniform ``c``)."""
    quals = {text(c) for c in decl.children if c.type in (
        "type_qualifier", "storage_class_specifier")}
    if "__shared__" not in quals:
        return False
    barriers = _barriers(lanes)
    for w in lanes.writes.get(text(use), []):
        if not scope.start_byte <= w.start_byte < scope.end_byte:
            continue
        if w.start_byte >= use.start_byte:
            if _loop_around(use, w, lanes.fn.body):
                return False            # the next pass reads it unsettled
            continue
        if not any(w.end_byte <= b.start_byte and b.end_byte <= use.start_byte and
                   b.parent is not None and
                   b.parent.start_byte <= use.start_byte < b.parent.end_byte
                   for b in barriers):
            return False
    return True


def _barriers(lanes) -> list[Node]:
    """The kernel's ``__syncthreads();`` statements (once per kernel)."""
    memo = lanes.__dict__.get("_barrier_statements")
    if memo is None:
        memo = []
        for callee in lanes.fn.nodes_in("callee"):
            stmt = callee.parent.parent if callee.parent is not None else None
            if text(callee) == "__syncthreads" and stmt is not None and \
                    stmt.type == "expression_statement":
                memo.append(stmt)
        lanes.__dict__["_barrier_statements"] = memo
    return memo


_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")


def _loop_around(use: Node, other: Node, top: Node | None) -> bool:
    """A loop (inside ``top``) holds both ``use`` and ``other``."""
    cur = use.parent
    while cur is not None and (top is None or cur.id != top.id):
        if cur.type in _LOOPS and cur.start_byte <= other.start_byte < cur.end_byte:
            return True
        cur = cur.parent
    return False
