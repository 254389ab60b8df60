"""Row stores on the hits of a scan that stops after a count (CL201's message, issue 20).

Ball and voxel queries write each query's row of neighbour indices on the hits of an
O(n) scan that breaks once ``nsample`` are found (``if (d2 < r2) { idx[cnt] = k; if
(++cnt >= nsample) break; }``), and pad the rest of the row in a loop after the scan.
Whether such rows are worth storing column-major depends on the hit rate, which is data:
CL201 quotes the measured range for them (fixtures/CL201/not_worth.json). This module
finds the scan from the syntax tree alone: the loop whose ``break`` is conditioned on a
count its body increments, with the store in the incrementing block or in a loop after
the scan whose header reads the count.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

    from cudalint.analysis.memory.figures import Access


_LOOPS = ("for_statement", "while_statement", "do_statement")


def early_break_scan(access: "Access") -> Node | None:
    """The scan whose hits write this store's row, or None: a loop with a `break` of its
    own under a condition on a count the loop body increments (`if (++cnt >= nsample)
    break;`), with the store in the block that increments it (the hit branch), or in a
    loop after the scan whose header reads that count (the padding loop `for (l = cnt;
    l < nsample; ++l)`), as in ball queries."""
    body = access.kernel.body
    cur, outer_loop = access.node, None
    while cur.parent is not None and (body is None or cur.id != body.id):
        parent = cur.parent
        if parent.type in _LOOPS:
            counts = _break_counts(parent)
            if any(_within(access.node, block) for _, block in counts):
                return parent
            outer_loop = outer_loop or parent
        if parent.type == "compound_statement" and outer_loop is not None:
            header = _header_text(outer_loop)
            for sib in parent.children:
                if sib.start_byte >= cur.start_byte:
                    break
                if sib.type in _LOOPS and any(
                        re.search(rf"\b{re.escape(name)}\b", header)
                        for name, _ in _break_counts(sib)):
                    return sib
        cur = parent
    return None


def _break_counts(loop) -> list[tuple[str, object]]:
    """(count, the block incrementing it) for the counts a `break` of this loop (not of
    a nested loop or switch) is conditioned on and its body increments."""
    body = loop.child_by_field_name("body")
    if body is None:
        return []
    incs: dict[str, list] = {}
    conds: set[str] = set()
    stack = [body]
    while stack:
        n = stack.pop()
        if n.type in _LOOPS or n.type == "switch_statement":
            continue
        if n.type == "update_expression" or n.type == "assignment_expression" and \
                n.child_by_field_name("operator") is not None and \
                n.child_by_field_name("operator").type == "+=":
            target = n.child_by_field_name("argument") or n.child_by_field_name("left")
            if target is not None and target.type == "identifier":
                block = n.parent
                while block is not None and block.type != "compound_statement":
                    block = block.parent
                incs.setdefault(target.text.decode("utf-8", "replace"), []).append(block)
        if n.type == "break_statement":
            up = n.parent
            while up is not None and up.id != loop.id and up.type != "if_statement":
                up = up.parent
            if up is not None and up.type == "if_statement":
                cond = up.child_by_field_name("condition")
                if cond is not None:
                    conds.update(_identifiers_of(cond))
        stack.extend(n.children)
    return [(name, block) for name, blocks in incs.items() if name in conds
            for block in blocks if block is not None]


def _identifiers_of(node) -> set[str]:
    out, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            out.add(n.text.decode("utf-8", "replace"))
        stack.extend(n.children)
    return out


def _within(node, block) -> bool:
    return block.start_byte <= node.start_byte and node.end_byte <= block.end_byte


def _header_text(loop) -> str:
    body = loop.child_by_field_name("body")
    end = body.start_byte if body is not None else loop.end_byte
    return loop.text[:end - loop.start_byte].decode("utf-8", "replace")
