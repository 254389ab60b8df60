"""Tail paths: branches of a loop body that at most one lane of a warp can run.

A loop that hands each lane a group of elements (``for (k = 4 * threadIdx.x; k < n; k +=
4 * blockDim.x)``) often handles the group that straddles the end apart: ``if (k + 3 <
n) {...} else {... inp[k2] ...}``. The lane engine assumes a condition on a uniform
unknown (``n``) holds, which would put all 32 lanes on the tail path and give its
accesses a whole warp's figure. But the lanes that run the ``else`` have ``n - 3 <= k <
n``: a window of 3 values, and lanes' ``k`` are 4 apart, so at most one lane of a warp is
ever there (pointnet2's cumsumKernel, sheet-newcorpus4 W2). This module finds such
branches from the two comparisons against the same bound: the loop's ``Y < N`` and the
branch's ``X >= N - c`` with ``X - Y`` a constant, which leave ``Y`` a window of a fixed
width whatever ``N`` is; the lanes' ``Y`` values say how many of them fit in it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.analysis.memory.lane_values import WARP, Opaque
from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.analysis.memory.kernel_lanes import KernelLanes

_LESS = {"<": 0, "<=": 1}          # L < H + p
_GREATER = {">": 0, ">=": 1}       # H < L + p, read the other way round


def _relation(cond: Node | None) -> tuple[Node, Node, int] | None:
    """``(L, H, p)`` meaning ``L < H + p`` for a comparison ``cond``, or None."""
    while cond is not None and cond.type in ("condition_clause",
                                             "parenthesized_expression") and \
            cond.named_child_count == 1:
        cond = cond.named_children[0]
    if cond is None or cond.type != "binary_expression":
        return None
    op = text(cond.child_by_field_name("operator"))
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    if left is None or right is None:
        return None
    if op in _LESS:
        return left, right, _LESS[op]
    if op in _GREATER:
        return right, left, _GREATER[op]
    return None


def _negated(rel: tuple[Node, Node, int]) -> tuple[Node, Node, int]:
    """not (L < H + p)  <=>  H + p <= L  <=>  H < L + (1 - p)."""
    low, high, p = rel
    return high, low, 1 - p


def _enclosing_loop(node: Node, body: Node | None) -> Node | None:
    """The nearest ``for`` statement whose body holds ``node``."""
    cur = node
    while cur.parent is not None and (body is None or cur.id != body.id):
        parent = cur.parent
        if parent.type == "for_statement":
            loop_body = parent.child_by_field_name("body")
            if loop_body is not None and loop_body.id == cur.id:
                return parent
        cur = parent
    return None


def one_lane_branch(lanes: "KernelLanes", if_node: Node, taken: bool,
                    act: list) -> bool:
    """Whether at most one lane of each warp can run the branch of ``if_node`` (its
    consequence when ``taken``), whatever the uniform bound the condition and the loop
    around it share: the loop keeps ``Y < N + a``, the branch ``X > N - b`` with ``X - Y``
    the same constant in every column, so ``Y`` lies in a window of ``a + b + c - 1``
    values; true when no window of that width holds two active lanes' ``Y``."""
    memo = lanes.tail_windows
    key = (if_node.id, taken)
    if key not in memo:
        memo[key] = _window(lanes, if_node, taken)
    found = memo[key]
    if found is None:
        return False
    ys, width = found
    for g in range(lanes.groups):
        values = sorted(y for y, on in zip(ys[g * WARP:(g + 1) * WARP],
                                           act[g * WARP:(g + 1) * WARP]) if on)
        if any(hi - lo < width for lo, hi in zip(values, values[1:])):
            return False        # two lanes' values fit in one window
    return True


def _window(lanes: "KernelLanes", if_node: Node, taken: bool) -> tuple[tuple, int] | None:
    """The loop variable's values per column and the width of the window of them that
    runs the branch, or None when the branch and its loop do not bound one variable
    from both sides by the same bound."""
    rel = _relation(if_node.child_by_field_name("condition"))
    loop = _enclosing_loop(if_node, lanes.fn.body) if rel is not None else None
    if loop is None:
        return None
    guard = _relation(loop.child_by_field_name("condition"))
    if guard is None:
        return None
    y_node, bound, a = guard
    bound_low, x_node, b = rel if taken else _negated(rel)
    if text(bound) != text(bound_low) or not text(bound):
        return None             # not the same bound on both sides
    saved, saved_params = lanes.used_tid, lanes.used_params
    lanes.used_tid, lanes.used_params = set(), set(saved_params)
    try:
        ys, xs, ns = (lanes.int_value(y_node), lanes.int_value(x_node),
                      lanes.int_value(bound))
    except Opaque:
        return None
    finally:
        lanes.used_tid, lanes.used_params = saved, saved_params
    if not lanes._uniform(ns):
        return None             # a bound of each lane's own: no shared window
    shifts = {x - y for x, y in zip(xs, ys)}
    if len(shifts) != 1:
        return None
    width = a + b + shifts.pop() - 1
    return (ys, width) if width > 0 else None


def first_lane_only(act: list, groups: int) -> list:
    """``act`` with only the lowest active lane of each (sample, warp) group left: the
    one lane a tail path runs on, for its figures."""
    out = list(act)
    for g in range(groups):
        seen = False
        for i in range(g * WARP, (g + 1) * WARP):
            if out[i] and seen:
                out[i] = False
            seen = seen or bool(out[i])
    return out
