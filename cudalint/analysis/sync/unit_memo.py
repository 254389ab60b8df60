"""What every run of every kernel of a unit shares (:class:`UnitMemo`): the mirrored
bodies, cooperative group handles and assigned names of each body, the device functions
each kernel reaches, and which device functions are inert.

A kernel is run once per sample and block shape, and the interval check walks it
before: both ask the same questions of the same bodies, so the answers are kept once per
unit. An inert device function (:meth:`UnitMemo.inert`) cannot touch shared memory,
synchronize or return an integer: a run does not inline its calls.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.parse import captures
from cudalint.parse import text as _ts_text
from cudalint.analysis.sync.callees import LANE_FUNCS, MASKED, PURE, VALUE_CALLS, \
    WARP_INTRINSICS, reachable_names
from cudalint.analysis.sync.cfg import BodyQueries, Group, callee_short_name, classify_sync, \
    group_handles
from cudalint.analysis.sync.syntax import Syn, is_int_type

if TYPE_CHECKING:
    from cudalint.model.kernels import Function


class UnitMemo:
    """What every run of every kernel of a unit shares: mirrored bodies, group handles."""

    def __init__(self, queries: BodyQueries | None = None):
        self._queries = queries
        self._syntax: dict[int, Syn] = {}
        self._groups: dict[int, dict[str, Group]] = {}
        self._assigned: dict[int, list[str]] = {}
        self._inert: dict[int, bool] = {}
        self._fn_re = None
        self._reach: dict[int, set[str]] = {}
        self.shared_names: set[str] = set()
        self._selects: dict[int, frozenset[str] | None] = {}

    def syntax(self, body: Node) -> Syn:
        s = self._syntax.get(body.id)
        if s is None:
            s = self._syntax[body.id] = Syn(body)
        return s

    def assigned_names(self, node: Node) -> list[str]:
        """Identifiers assigned or incremented anywhere inside ``node``."""
        names = self._assigned.get(node.id)
        if names is None:
            caps = captures("(assignment_expression left: (identifier) @a) "
                            "(update_expression argument: (identifier) @u)", node)
            names = self._assigned[node.id] = [
                _ts_text(i) for i in caps.get("a", []) + caps.get("u", [])]
        return names

    def select_branch(self, node: Node) -> frozenset[str] | None:
        """For an if statement of the compare-and-select shape of a warp argmin or
        argmax, ``if (d[t] > d[t + k]) { d[t] = d[t + k]; idx[t] = idx[t + k]; }``: the
        arrays its condition reads. The condition reads array elements and calls
        nothing; each side holds only assignments (no call, no other statement), and
        one of them writes an array the condition reads. Else None."""
        if node.id in self._selects:
            return self._selects[node.id]
        found = self._selects[node.id] = _select_shape(node)
        return found

    def function_names_re(self, functions):
        """A regex of the unit's device function names (memoised)."""
        r = self._fn_re
        if r is None:
            names = sorted(functions, key=len, reverse=True)
            r = self._fn_re = re.compile(
                rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b"
                if names else rb"(?!)")
        return r

    def reachable(self, fn: "Function", functions) -> set[str]:
        v = self._reach.get(fn.node.id)
        if v is None:
            v = self._reach[fn.node.id] = reachable_names(fn, functions)
        return v

    def inert(self, fn: "Function", functions) -> bool:
        """Whether a run may skip a call of the device function ``fn`` (arguments
        evaluated, no shared pointer among them): it returns nothing a run could know
        (void, floating point, a struct: not an integer) and its body is inert (see
        :meth:`inert_body`)."""
        ret = fn.node.child_by_field_name("type")
        ret_text = _ts_text(ret) if ret is not None else ""
        if ret_text != "void" and (not ret_text or is_int_type(ret_text)):
            return False
        return self.inert_body(fn, functions)

    def inert_body(self, fn: "Function", functions) -> bool:
        """``fn``'s body and the device functions it calls (transitively) name no
        ``__shared__`` memory, barrier, warp intrinsic or ``asm``, cannot leave the
        kernel, and call only value-only functions (math, conversions, atomics; no
        unknown function, which a run takes for a barrier; no method)."""
        key = fn.node.id
        v = self._inert.get(key)
        if v is None:
            self._inert[key] = False          # a recursive call: not inert
            v = self._inert[key] = self._is_inert_body(fn, functions)
        return v

    def _is_inert_body(self, fn: "Function", functions) -> bool:
        data = fn.body.text or b""
        if b"__shared__" in data or b"asm" in data or b"sync" in data or \
                b"bar." in data or b"exit" in data or b"trap" in data or \
                any(n.encode() in data for n in self.shared_names) or \
                any(n in data for n in MASKED):
            return False
        caps = self._queries(fn.body) if self._queries is not None else \
            {"call": captures("(call_expression) @c", fn.body).get("c", [])}
        groups = self.groups(fn.body)
        for node in caps.get("call", []):
            if classify_sync(node, groups) is not None:
                return False
            fnode = node.child_by_field_name("function")
            if fnode is None or fnode.type == "field_expression":
                return False
            name = _ts_text(fnode)
            short = callee_short_name(fnode)
            if short in WARP_INTRINSICS:
                return False
            callee = functions.get(short)
            if callee is not None and callee.body is not None:
                if not self.inert_body(callee, functions):
                    return False
                continue
            if short in LANE_FUNCS or short in VALUE_CALLS or short.startswith("__") \
                    or short.startswith("atomic") or PURE.match(name) or \
                    PURE.match(short):
                continue
            return False                      # unknown: a run takes it for a barrier
        return True

    def groups(self, body: Node) -> dict[str, Group]:
        g = self._groups.get(body.id)
        if g is None:
            caps = self._queries(body) if self._queries is not None else None
            g = self._groups[body.id] = group_handles(body, caps)
        return g


_SELECT_STATEMENTS = ("compound_statement", "expression_statement", "comment")


def _select_shape(node: Node) -> frozenset[str] | None:
    cond = node.child_by_field_name("condition")
    cons = node.child_by_field_name("consequence")
    if cond is None or cons is None:
        return None
    found = captures("(subscript_expression argument: (_) @base) @sub (call_expression) @call "
                     "(assignment_expression) @assign (update_expression) @update", cond)
    if found.get("call") or found.get("assign") or found.get("update") or \
            not found.get("sub"):
        return None
    if any(b.type != "identifier" for b in found.get("base", [])):
        return None
    read = frozenset(_ts_text(b) for b in found.get("base", []))
    sides = [cons]
    alt = node.child_by_field_name("alternative")
    if alt is not None:
        sides.extend(c for c in alt.named_children if c.type != "comment")
    written: set[str] = set()
    for side in sides:
        stack = [side]
        while stack:
            cur = stack.pop()
            if cur.type == "compound_statement":
                stack.extend(cur.named_children)
                continue
            if cur.type == "comment":
                continue
            if cur.type != "expression_statement":
                return None
            inner = [c for c in cur.named_children if c.type != "comment"]
            if len(inner) != 1 or inner[0].type != "assignment_expression":
                return None
            if captures("(call_expression) @c (update_expression) @u", inner[0]):
                return None
            left = inner[0].child_by_field_name("left")
            if left is not None and left.type == "subscript_expression":
                base = left.child_by_field_name("argument")
                if base is not None and base.type == "identifier":
                    written.add(_ts_text(base))
    return read if read & written else None
