"""Whether every lane of a warp reaches a statement: where a full-mask ``__syncwarp()``
may be put.

``__syncwarp()`` names all 32 lanes, and every lane it names that has not exited must
execute it (CUDA C++ Programming Guide, ``__syncwarp()``): one that only some lanes of a
warp reach -- inside ``if (threadIdx.x > i)``, after a ``continue`` taken by some lanes --
is undefined behaviour. CL101's fix inserts such calls, so it asks here first, and offers
no fix where the answer is not a sure yes (issue 25: a fix inside ``if (threadIdx.x > i)``
was wrong, left the race, and was inserted again by every ``--fix`` run).

A statement is reached by whole warps when every decision between it and the kernel's
body is the same for all the lanes of a warp:

* conditions that do not depend on the thread (:mod:`divergence`), or
* comparisons of the thread's x index (``threadIdx.x``, or a local that holds exactly
  that) with a constant that splits the block at a multiple of 32 (``tid < 32``,
  ``tid >= 64``) when warps are runs of 32 x indices (a 1-D block, or x a multiple of
  32), or of the warp index (``tid / 32``, ``tid >> 5``, ``tid / warpSize``) with
  anything uniform; ``&&``, ``||`` and ``!`` of such conditions;

and no ``break`` or ``continue`` of an enclosing loop is taken under any other
thread-dependent condition. ``return`` does not count: exited lanes are not waited for.
Anything else (a statement outside the kernel's own body, a macro-like block, a split at
another place) is "no".
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.analysis.sync.cfg import BodyQueries, control_context, exits_before
from cudalint.analysis.sync.divergence import FunctionDependence, ThreadDependence
from cudalint.model.consteval import eval_int
from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function

WARP = 32
_COMPARISONS = ("<", "<=", ">", ">=")
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def partial_warp_reason(ctx: "UnitContext", fn: "Function", stmt: Node,
                        block: tuple[int, int, int]) -> str | None:
    """None when each warp of a ``block``-shaped launch of ``fn`` reaches ``stmt`` with all
    its live lanes or none; else what may split a warp (a condition's text, or why the
    question cannot be answered)."""
    body = fn.body
    if body is None or not (body.start_byte <= stmt.start_byte
                            and stmt.end_byte <= body.end_byte) or stmt.id == body.id:
        return "outside the kernel's body"
    dep = ctx.analysis(ThreadDependence).of(fn)
    check = _Uniform(fn, dep, block, ctx.analysis(BodyQueries)(body))
    guards = control_context(stmt, body)
    for g in guards:
        if g.kind == "opaque":
            return "inside a macro-like block"
        cond = g.condition
        if g.kind == "loop" and g.node.type == "for_range_loop":
            cond = g.node.child_by_field_name("right")
        if cond is not None and not check.warp_uniform(cond):
            return text(cond)
    for e in exits_before(stmt, body, ctx.analysis(BodyQueries), guards):
        if e.kind == "return":
            continue
        for g in e.guards:
            if g.kind == "opaque" or g.condition is not None and \
                    not check.warp_uniform(g.condition):
                return f"a `{e.kind}` under `{text(g.condition)}`"
    return None


class _Uniform:
    def __init__(self, fn: "Function", dep: FunctionDependence,
                 block: tuple[int, int, int], caps: dict[str, list[Node]]):
        self.fn, self.dep, self.caps = fn, dep, caps
        # warps are runs of 32 consecutive x indices
        self.x_warps = block[1] * block[2] == 1 or block[0] % WARP == 0
        self._aliases: dict[str, str | None] = {}

    def warp_uniform(self, node: Node) -> bool:
        node = _unwrap(node)
        if node is None:
            return False
        if not self.dep.varies(node):
            return True
        if not self.x_warps:
            return False
        if node.type == "unary_expression" and _op(node) == "!":
            arg = node.child_by_field_name("argument")
            return arg is not None and self.warp_uniform(arg)
        if node.type != "binary_expression":
            return False
        op = _op(node)
        left = _unwrap(node.child_by_field_name("left"))
        right = _unwrap(node.child_by_field_name("right"))
        if left is None or right is None:
            return False
        if op in ("&&", "||"):
            return self.warp_uniform(left) and self.warp_uniform(right)
        if op not in _COMPARISONS + ("==", "!="):
            return False
        for a, b in ((left, right), (right, left)):
            if self._kind(a) == "warp" and not self.dep.varies(b):
                return True         # the warp index against anything uniform
        if op not in _COMPARISONS:
            return False
        if self._kind(left) == "x" and not self.dep.varies(right):
            x_op, bound = op, right
        elif self._kind(right) == "x" and not self.dep.varies(left):
            x_op, bound = _MIRROR[op], left
        else:
            return False
        value = eval_int(text(bound), self.fn.constants)
        if value is None:
            return False
        split = value if x_op in ("<", ">=") else value + 1     # x < split: one side
        return split % WARP == 0

    def _kind(self, node: Node) -> str | None:
        """"x": the thread's x index; "warp": its warp index (x / 32); None: other."""
        node = _unwrap(node)
        if node is None:
            return None
        t = node.type
        if t == "field_expression" and text(node).replace(" ", "") == "threadIdx.x":
            return "x"
        if t == "cast_expression":
            return self._kind(node.child_by_field_name("value"))
        if t == "identifier":
            return self._alias(text(node))
        if t == "binary_expression":
            op = _op(node)
            right = node.child_by_field_name("right")
            bound = text(right).strip() if right is not None else ""
            if self._kind(node.child_by_field_name("left")) == "x" and (
                    op == "/" and bound in ("32", "warpSize") or op == ">>" and bound == "5"):
                return "warp"
        return None

    def _alias(self, name: str) -> str | None:
        """The kind of a local written once, where it is declared, with the thread's x
        or warp index (``unsigned tid = threadIdx.x;``), and never again."""
        if name in self._aliases:
            return self._aliases[name]
        self._aliases[name] = None          # a self-reference is no alias
        writes = [(n, v) for n, v in zip(self.caps.get("init_name", []),
                                          self.caps.get("init_value", []))
                  if text(n) == name]
        others = [n for n in self.caps.get("assign_left", []) + self.caps.get("update", [])
                  if text(n) == name]
        taken = any(text(n) == name for n in self.fn.nodes_in("address_taken"))
        kind = None
        if len(writes) == 1 and not others and not taken and \
                all(p.name != name for p in self.fn.params):
            kind = self._kind(writes[0][1])
        self._aliases[name] = kind
        return kind


def _unwrap(node: Node | None) -> Node | None:
    """The expression inside parentheses and a condition clause."""
    while node is not None and node.type in ("parenthesized_expression", "condition_clause"):
        inner = [c for c in node.named_children if c.type != "comment"]
        if len(inner) != 1:
            return None
        node = inner[0]
    return node


def _op(node: Node) -> str:
    op = node.child_by_field_name("operator")
    return text(op) if op is not None else ""
