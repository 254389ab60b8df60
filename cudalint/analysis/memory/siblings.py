"""Sibling accesses: the fields of one per-lane record, accessed one after another.

Array-of-structs code reads or writes a thread's record field by field::

    image_points[idx * 2 + 0] = p.x;        // 8 sectors per request
    image_points[idx * 2 + 1] = p.y;        // 8 sectors per request, same records

Each scalar access is uncoalesced on its own (and the GPU measures each one), but they
are one problem with one remedy. Two accesses of a kernel are *siblings* when

- they go through the same base pointer (the same kernel parameter), in the same
  direction (loads with loads, stores with stores) and with the same width;
- in every column the lane engine evaluated (every sample of the unknowns, every warp,
  every lane) their byte addresses differ by the same constant, and the same lanes run
  both: the distance between them does not depend on the thread or on anything the
  kernel receives;
- all the accesses of a group fit in one record: the span from the lowest to the highest
  byte they touch is at most the byte stride between lanes (``p[2*i]`` and ``p[2*i+1]``
  are the two halves of 8-byte records; ``p[2*i]`` and ``p[2*i+64]`` are not);
- they run in the same basic block: both are unconditional parts of statements of one
  ``{ ... }`` block (not inside a branch, a loop, the right side of ``&&``/``||`` or a
  ``?:`` arm of their statement), and the statements from the first to the second contain
  no branch, loop, jump, nested block or barrier (``__syncthreads``, ``__syncwarp``,
  ``__threadfence``, cooperative-groups ``sync``, ``bar.sync`` in ``asm``, or a call of a
  function of the unit that contains one);
- each is at most ``MAX_GAP_LINES`` source lines after the previous access of its group.

``group_siblings`` groups, in source order, accesses a rule has already decided to
report; the first access of a group is the one to report.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from operator import sub
from typing import TYPE_CHECKING, Any

from tree_sitter import Node

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.analysis.memory.figures import Access

MAX_GAP_LINES = 10

_BARRIER = re.compile(
    rb"__syncthreads|__syncwarp|__threadfence|__barrier_sync|\bbar\.sync|\bbarrier\b|"
    rb"\bsync\s*\(|\.\s*sync\s*\(|->\s*sync\s*\(|\barrive_and_wait\b|\bgrid_sync\b")
# the path from an access to its statement crosses these: the access runs on some paths
_CONDITIONAL = frozenset({
    "for_statement", "for_range_loop", "while_statement", "do_statement",
    "switch_statement", "case_statement", "lambda_expression", "labeled_statement",
    "compound_statement", "else_clause", "try_statement", "catch_clause"})
# statements that may lie between two siblings (straight-line code)
_STRAIGHT = frozenset({"expression_statement", "declaration", "comment", "preproc_call",
                       "type_definition", "alias_declaration", "using_declaration",
                       "static_assert_declaration"})


@dataclass
class SiblingGroup:
    """Accesses to the same records; ``members[0]`` is the one reported."""
    members: list["Access"]
    offsets: list[int]              # byte distance of each member from members[0]
    stride: int                     # bytes between the records of neighbouring lanes
    payload: list[Any] = field(default_factory=list)   # what the caller attached

    @property
    def first(self) -> "Access":
        return self.members[0]

    @property
    def siblings(self) -> list["Access"]:
        return self.members[1:]

    def span(self) -> tuple[int, int]:
        """Lowest and one-past-highest byte touched, relative to members[0]."""
        w = self.first.width
        return min(self.offsets), max(self.offsets) + w

    def covers_record(self) -> bool:
        """Every byte of one stride-sized record is accessed by some member."""
        w = self.first.width
        lo, hi = self.span()
        if hi - lo != self.stride:
            return False
        touched = set()
        for off in self.offsets:
            touched.update(range(off, off + w))
        return len(touched) == self.stride

    def record_phases(self) -> set[int]:
        """Where the lowest member starts within a stride-sized record, from the base
        pointer, over every column: {0} means a vector access of the whole record is
        aligned when the base is; several values mean it depends on the unknowns."""
        lo_index = self.offsets.index(min(self.offsets))
        low = self.members[lo_index]
        return {a % self.stride for row in low.groups for a in row if a is not None}


def constant_distance(a: "Access", b: "Access") -> int | None:
    """``b``'s byte address minus ``a``'s when it is the same in every column and both
    run on the same lanes; None otherwise."""
    if len(a.groups) != len(b.groups):
        return None
    diff = None
    for ra, rb in zip(a.groups, b.groups):
        if len(ra) != len(rb):
            return None
        if None not in ra and None not in rb:       # every lane active: at C speed
            ds = set(map(sub, rb, ra))
            if len(ds) > 1:
                return None
            for d in ds:
                if diff is None:
                    diff = d
                elif d != diff:
                    return None
            continue
        for x, y in zip(ra, rb):
            if x is None or y is None:
                if x is not y:
                    return None
                continue
            d = y - x
            if diff is None:
                diff = d
            elif d != diff:
                return None
    return diff


def direction(access: "Access") -> str:
    if access.is_store and not access.is_load:
        return "store"
    if access.is_load and not access.is_store:
        return "load"
    return "update"


def statement_of(node: Node) -> Node | None:
    """The statement of the innermost enclosing ``{}`` block that holds ``node``, when
    ``node`` runs every time that statement does; None when it is conditional within it
    (a branch or loop body, a ``?:`` arm, the right side of ``&&``/``||``)."""
    child, cur = node, node.parent
    while cur is not None:
        t = cur.type
        if t == "compound_statement":
            return child
        if t in ("translation_unit", "function_definition"):
            return None
        if t == "if_statement":
            cond = cur.child_by_field_name("condition")
            if cond is None or cond.id != child.id:
                return None
        elif t == "conditional_expression":
            cond = cur.child_by_field_name("condition")
            if cond is None or cond.id != child.id:
                return None
        elif t == "binary_expression":
            op = cur.child_by_field_name("operator")
            right = cur.child_by_field_name("right")
            if op is not None and op.type in ("&&", "||", "and", "or") and \
                    right is not None and right.id == child.id:
                return None
        elif t in _CONDITIONAL:
            return None
        child, cur = cur, cur.parent
    return None


class _Blocks:
    """Same-basic-block test between two accesses of a unit."""

    def __init__(self, ctx: "UnitContext"):
        self.ctx = ctx
        self._stmt: dict[int, Node | None] = {}
        self._barrier_calls: re.Pattern[bytes] | None = None
        self._clean: dict[tuple[int, int], bool] = {}
        self._barrier: dict[int, bool] = {}

    def statement(self, node: Node) -> Node | None:
        if node.id not in self._stmt:
            self._stmt[node.id] = statement_of(node)
        return self._stmt[node.id]

    def _has_barrier(self, stmt: Node) -> bool:
        found = self._barrier.get(stmt.id)
        if found is None:
            found = self._barrier[stmt.id] = self._scan_barrier(stmt)
        return found

    def _scan_barrier(self, stmt: Node) -> bool:
        data = stmt.text
        if _BARRIER.search(data):
            return True
        if self._barrier_calls is None:
            # one scan of the unit: a barrier match never holds a brace, so a body that
            # is a { ... } block has one exactly when a match of the unit starts inside it
            unit = self.ctx.unit.data
            starts = [m.start() for m in _BARRIER.finditer(unit)]
            names = set()
            for fn in self.ctx.model.functions:
                body = getattr(fn, "body", None)
                if body is None or not fn.name:
                    continue
                lo, hi = body.start_byte, body.end_byte
                if unit[lo:lo + 1] == b"{" and unit[hi - 1:hi] == b"}":
                    i = bisect_left(starts, lo)
                    found = i < len(starts) and starts[i] < hi
                else:
                    found = _BARRIER.search(body.text) is not None
                if found:
                    names.add(re.escape(fn.name.split("::")[-1].encode()))
            self._barrier_calls = re.compile(
                rb"\b(?:" + b"|".join(sorted(names)) + rb")\s*(?:<[^;{}()]*>)?\s*\(") \
                if names else re.compile(rb"(?!)")
        return bool(self._barrier_calls.search(data))

    def same_block(self, a: Node, b: Node) -> bool:
        """``a`` (earlier) and ``b`` run together: same block, straight-line code from
        the statement of ``a`` to the statement of ``b``, no barrier."""
        sa, sb = self.statement(a), self.statement(b)
        if sa is None or sb is None or sa.parent is None or sb.parent is None or \
                sa.parent.id != sb.parent.id:
            return False
        if sa.id == sb.id:
            return not self._has_barrier(sa)
        key = (sa.id, sb.id)
        if key in self._clean:
            return self._clean[key]
        ok = sa.type in ("expression_statement", "declaration")
        inside = False
        if ok:
            for s in sa.parent.named_children:
                if s.id == sa.id:
                    inside = True
                if not inside:
                    continue
                if s.id != sa.id and s.id != sb.id and s.type not in _STRAIGHT:
                    ok = False
                elif self._has_barrier(s):
                    ok = False
                if not ok or s.id == sb.id:
                    break
        self._clean[key] = ok
        return ok


def _row(ctx: "UnitContext", node: Node) -> int | None:
    return ctx.unit.own_line(node.start_byte)


def access_row(ctx: "UnitContext", access: "Access") -> int | None:
    return _row(ctx, access.node)


def group_siblings(ctx: "UnitContext", items: list[tuple["Access", int | None, Any]]
                   ) -> list[SiblingGroup]:
    """Group reported accesses (in source order) with their siblings.

    ``items``: (access, stride in bytes between neighbouring lanes' records or None,
    payload). An access without a stride is never grouped. Returns the groups in the
    order of their first access; each payload is kept beside its access.
    """
    blocks = _Blocks(ctx)
    groups: list[SiblingGroup] = []
    open_groups: dict[tuple, list[SiblingGroup]] = {}
    lines: dict[int, int] = {}          # id(group) -> row of its last member

    def row(node: Node) -> int:
        return node.start_point[0]      # unit rows: only distances are compared

    for access, stride, payload in items:
        placed = False
        if stride:
            stride = abs(stride)
            key = (id(access.kernel), access.space, access.region, direction(access),
                   access.width, stride)
            for g in reversed(open_groups.get(key, [])):
                if row(access.node) - lines[id(g)] > MAX_GAP_LINES:
                    continue
                d = constant_distance(g.first, access)
                if d is None:
                    continue
                offs = g.offsets + [d]
                if max(offs) + access.width - min(offs) > stride:
                    continue
                if not blocks.same_block(g.members[-1].node, access.node):
                    continue
                g.members.append(access)
                g.offsets.append(d)
                g.payload.append(payload)
                lines[id(g)] = row(access.node)
                placed = True
                break
        if placed:
            continue
        g = SiblingGroup([access], [0], abs(stride) if stride else 0, [payload])
        groups.append(g)
        lines[id(g)] = row(access.node)
        if stride:
            open_groups.setdefault(key, []).append(g)
    return groups
