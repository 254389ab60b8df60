"""Values a host variable must hold where a statement runs, read from the branch around it.

A host dispatcher picks a template instantiation by a run-time size and passes the size on:

    switch (nv) {
    case 4: rows<4, 2><<<grid, 256>>>(nr, nv, X, Y); break;
    case 8: rows<8, 3><<<grid, 256>>>(nr, nv, X, Y); break;
    }

At the first launch ``nv`` is 4 and at the second 8, as surely as if the literal were
written (dgSPARSE-Lib's SpMM does exactly this; the lane figures of each instantiation
depend on it). :func:`branch_values` gives those facts for a node of a host function: a
``case C:`` of ``switch (v)`` that no other label falls into, and the then-branch of
``if (v == C)`` (``C == v``, and each side of an ``&&``). Only a plain name tested against
a constant counts, and only when the function never assigns that name (``v = ...``,
``v++``, ``&v``): what a loop or an earlier statement may have changed is not a fact.
"""
from __future__ import annotations

from typing import Callable

from tree_sitter import Node

from cudalint.parse import text

_EXITS = frozenset({"break_statement", "return_statement", "continue_statement",
                    "throw_statement", "goto_statement"})
MAX_LEVELS = 64         # ancestors looked at: the launch's enclosing statements


def branch_values(node: Node, body: Node, evaluate: Callable[[str], int | None]
                  ) -> dict[str, int]:
    """name -> value for the variables the branches around ``node`` (inside ``body``, a
    function body) fix; ``evaluate`` gives a constant expression's value or None."""
    facts: dict[str, int] = {}
    child, parent, levels = node, node.parent, 0
    while parent is not None and levels < MAX_LEVELS and child.id != body.id:
        levels += 1
        if parent.type == "case_statement" and child.type != "number_literal":
            _case_fact(parent, evaluate, facts)
        elif parent.type == "if_statement":
            consequence = parent.child_by_field_name("consequence")
            if consequence is not None and consequence.id == child.id:
                cond = parent.child_by_field_name("condition")
                if cond is not None:
                    _equalities(cond, evaluate, facts)
        child, parent = parent, parent.parent
    if not facts:
        return facts
    changed = _assigned_names(body, set(facts))
    return {k: v for k, v in facts.items() if k not in changed}


def _case_fact(case: Node, evaluate, facts: dict[str, int]) -> None:
    value = case.child_by_field_name("value")
    if value is None:                       # default:
        return
    block = case.parent                     # the switch's compound statement
    switch = block.parent if block is not None else None
    if switch is None or switch.type != "switch_statement":
        return
    cond = switch.child_by_field_name("condition")
    subject = _plain_name(cond)
    if subject is None:
        return
    previous = case.prev_named_sibling
    while previous is not None and previous.type == "comment":
        previous = previous.prev_named_sibling
    if previous is not None and previous.type == "case_statement" and \
            not _ends_in_exit(previous):
        return                              # another label falls through into this one
    got = evaluate(text(value))
    if got is not None:
        facts.setdefault(subject, got)


def _ends_in_exit(case: Node) -> bool:
    body = [c for c in case.named_children
            if c.type != "comment" and c.id != (case.child_by_field_name("value") or
                                                case).id]
    if not body:
        return False
    last = body[-1]
    while last.type == "compound_statement" and last.named_children:
        last = last.named_children[-1]
    return last.type in _EXITS


def _plain_name(cond: Node | None) -> str | None:
    """The name a condition clause ``(v)`` or a parenthesised expression holds alone."""
    while cond is not None and cond.type in ("condition_clause", "parenthesized_expression") \
            and cond.named_child_count == 1:
        cond = cond.named_children[0]
    if cond is not None and cond.type == "identifier":
        return text(cond)
    return None


def _equalities(cond: Node, evaluate, facts: dict[str, int]) -> None:
    while cond.type in ("condition_clause", "parenthesized_expression") and \
            cond.named_child_count == 1:
        cond = cond.named_children[0]
    if cond.type != "binary_expression":
        return
    op = text(cond.child_by_field_name("operator"))
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    if left is None or right is None:
        return
    if op == "&&":
        _equalities(left, evaluate, facts)
        _equalities(right, evaluate, facts)
        return
    if op != "==":
        return
    for name_side, value_side in ((left, right), (right, left)):
        name = _plain_name(name_side)
        if name is not None:
            got = evaluate(text(value_side))
            if got is not None:
                facts.setdefault(name, got)
                return


def _assigned_names(body: Node, names: set[str]) -> set[str]:
    """Those of ``names`` that ``body`` assigns, steps or takes the address of."""
    found: set[str] = set()
    stack = [body]
    while stack:
        n = stack.pop()
        target = None
        if n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "update_expression":
            target = n.child_by_field_name("argument")
        elif n.type == "pointer_expression" and \
                text(n.child_by_field_name("operator")) == "&":
            target = n.child_by_field_name("argument")
        if target is not None and target.type == "identifier" and text(target) in names:
            found.add(text(target))
        stack.extend(n.named_children)
    return found
