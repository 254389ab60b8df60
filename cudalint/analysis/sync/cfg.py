"""Control-flow view of a kernel body for the synchronization rules (CL101-CL105).

CUDA kernels are structured code, so the view is the syntax tree itself read as a
structured control-flow graph: a node's *control context* is the chain of branches and
loops that decide whether (and how often) it runs, and its *early exits* are the
``return``/``break``/``continue`` statements that can leave the region before it.

Barriers are classified here once, for every rule and analysis:

    kind  "block"  ``__syncthreads*``, ``bar.sync``/``barrier.sync`` without a thread
                   count, ``cg::this_thread_block().sync()``, ``block.sync()``,
                   ``cg::sync(block)`` (also ``sync(block)``, ``synchronize(block)``),
                   ``grid.sync()``
          "warp"   ``__syncwarp(mask)``, ``tile.sync()`` / ``cg::sync(tile)`` for a
                   ``thread_block_tile<N>`` (``size`` = N) or a ``coalesced_group``
          "named"  ``bar.sync id, count``: a barrier for part of the block, by design
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, overload

from tree_sitter import Node

from cudalint.parse import captures, text

BLOCK_SYNC_CALLS = frozenset({"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                              "__syncthreads_or", "__barrier_sync"})
WARP_SYNC_CALLS = frozenset({"__syncwarp"})
_GROUP_SYNC_FUNCS = frozenset({"sync", "synchronize"})
# PTX barriers: bar.sync / barrier.sync / bar.red / barrier.cta.sync (optionally .aligned)
_PTX_BAR = re.compile(r"\b(?:bar|barrier)(?:\.cta)?\.(?:sync|red\.\w+|arrive)(?:\.aligned)?"
                      r"\s+([^;\"]*)")
_PTX_BAR_WARP = re.compile(r"\bbar\.warp\.sync\b")
LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
FUNCTION_LIKE = ("function_definition", "lambda_expression")


# Everything the synchronization analyses read from a function body, in one query (a
# query's cost is the walk of the body, whatever its patterns): BodyQueries runs it at
# most once per body and unit; each capture list equals that of a query of its own.
BODY_QUERY = """
(declaration) @declaration
(call_expression) @call
(gnu_asm_expression) @asm
(return_statement) @return
(break_statement) @break
(continue_statement) @continue
(init_declarator declarator: (_) @init_name value: (_) @init_value)
(assignment_expression left: (_) @assign_left right: (_) @assign_right)
(update_expression argument: (_) @update)
(gnu_asm_output_operand value: (_) @asm_out)
(initializer_list) @init_list
"""
Captures = dict[str, list[Node]]


class BodyQueries:
    """Per unit (``ctx.analysis(BodyQueries)``): BODY_QUERY's captures of a function
    body, and facts derived from them, computed once per body."""

    def __init__(self, ctx=None):
        self._caps: dict[int, Captures] = {}
        self._exits: dict[int, list] = {}

    def __call__(self, body: Node) -> Captures:
        caps = self._caps.get(body.id)
        if caps is None:
            caps = self._caps[body.id] = captures(BODY_QUERY, body)
        return caps

    def exits(self, body: Node) -> list[tuple[str, Node, list["Guard"], Node | None]]:
        """(kind, statement, control context, owning loop) of every return/break/continue
        of ``body`` outside nested function-like nodes, in exits_before's order."""
        out = self._exits.get(body.id)
        if out is None:
            out = self._exits[body.id] = _exit_statements(body, self(body))
        return out


@dataclass(frozen=True)
class Group:
    """A cooperative-groups handle declared in a kernel."""
    kind: str            # "block" | "tile" | "coalesced" | "grid" | "thread_group"
    size: int | None = None


@dataclass(frozen=True)
class Sync:
    node: Node           # the call / asm expression
    kind: str            # "block" | "warp" | "named" | "grid"
    size: int | None     # lanes per group for tile syncs (None: whole warp/block)
    spelling: str        # as written, for messages


def group_handles(body: Node | None, caps: Captures | None = None) -> dict[str, Group]:
    """Variables holding cooperative groups: ``cg::thread_block b = this_thread_block()``,
    ``auto t = cg::tiled_partition<32>(b)``, ``thread_block_tile<16> t = ...``.
    ``caps``: BODY_QUERY's captures of ``body``, when the caller has them."""
    out: dict[str, Group] = {}
    if body is None:
        return out
    decls = caps.get("declaration", []) if caps is not None else \
        captures("(declaration) @d", body).get("d", [])
    for decl in decls:
        type_text = text(decl.child_by_field_name("type"))
        for d in decl.children_by_field_name("declarator"):
            value = None
            if d.type == "init_declarator":
                value = d.child_by_field_name("value")
                d = d.child_by_field_name("declarator")
            while d is not None and d.type == "reference_declarator":
                d = next((c for c in d.named_children), None)
            if d is None or d.type != "identifier":
                continue
            g = _group_of(type_text, text(value) if value is not None else "")
            if g is not None:
                out[text(d)] = g
    return out


_TILE = re.compile(r"thread_block_tile\s*<\s*(\d+)")
_PARTITION = re.compile(r"tiled_partition\s*(?:<\s*(\d+)\s*>\s*\(|\([^,]*,\s*(\d+)\s*\))")


def _group_of(type_text: str, value_text: str) -> Group | None:
    m = _TILE.search(type_text)
    if m:
        return Group("tile", int(m.group(1)))
    if "grid_group" in type_text or "this_grid" in value_text:
        return Group("grid")
    if "coalesced_group" in type_text or "coalesced_threads" in value_text:
        return Group("coalesced")
    m = _PARTITION.search(value_text)
    if m:
        size = m.group(1) or m.group(2)
        return Group("tile", int(size)) if size else Group("thread_group")
    if re.search(r"\bthread_block\b", type_text) or "this_thread_block" in value_text:
        return Group("block")
    return None


def classify_sync(node: Node, groups: dict[str, Group]) -> Sync | None:
    """The barrier a call or asm expression is, or None."""
    if node.type == "gnu_asm_expression":
        asm = "".join(text(s) for s in node.named_children if s.type in (
            "string_literal", "concatenated_string"))
        if _PTX_BAR_WARP.search(asm):
            return Sync(node, "warp", None, "bar.warp.sync")
        m = _PTX_BAR.search(asm)
        if m is None:
            return None
        operands = [o for o in m.group(1).split(",") if o.strip()]
        if len(operands) >= 2:
            return Sync(node, "named", None, "bar.sync (named, with a thread count)")
        return Sync(node, "block", None, "bar.sync")
    if node.type != "call_expression":
        return None
    fn = node.child_by_field_name("function")
    if fn is None:
        return None
    name = text(fn)
    if fn.type == "identifier":
        if name in BLOCK_SYNC_CALLS:
            return Sync(node, "block", None, name + "()")
        if name in WARP_SYNC_CALLS:
            return Sync(node, "warp", None, "__syncwarp()")
        if name not in _GROUP_SYNC_FUNCS:
            return None
    # sync(g) under `using namespace cooperative_groups`; synchronize(g) is the name of
    # early cooperative-groups headers (GPUVerify's CUDA suite uses it)
    if fn.type == "identifier" or fn.type == "qualified_identifier" and (
            name.endswith("::sync") or name.endswith("::synchronize")):
        args = node.child_by_field_name("arguments")
        first = args.named_children[0] if args is not None and args.named_children else None
        return _group_sync(node, _group_expr(first, groups), f"{name}({text(first)})")
    if fn.type == "field_expression" and text(fn.child_by_field_name("field")) in (
            "sync", "barrier_sync"):
        recv = fn.child_by_field_name("argument")
        return _group_sync(node, _group_expr(recv, groups), name + "()")
    return None


def _group_expr(node: Node | None, groups: dict[str, Group]) -> Group | None:
    if node is None:
        return None
    if node.type == "identifier":
        return groups.get(text(node))
    t = text(node)
    if node.type == "call_expression":
        return _group_of("", t)
    return None


def _group_sync(node: Node, group: Group | None, spelling: str) -> Sync | None:
    if group is None:
        return None
    if group.kind == "block":
        return Sync(node, "block", None, spelling)
    if group.kind == "grid":
        return Sync(node, "grid", None, spelling)
    if group.kind == "tile" and group.size is not None and group.size <= 32:
        return Sync(node, "warp", group.size, spelling)
    if group.kind == "coalesced":
        return Sync(node, "warp", None, spelling)
    return None


def syncs_in(body: Node | None, groups: dict[str, Group] | None = None,
             caps: Captures | None = None) -> list[Sync]:
    """Every barrier in a function body, in source order."""
    if body is None:
        return []
    groups = group_handles(body, caps) if groups is None else groups
    if caps is not None:
        nodes = caps.get("call", []) + caps.get("asm", [])
    else:
        found = captures("(call_expression) @c (gnu_asm_expression) @a", body)
        nodes = found.get("c", []) + found.get("a", [])
    out = []
    for node in nodes:
        s = classify_sync(node, groups)
        if s is not None:
            out.append(s)
    return sorted(out, key=lambda s: s.node.start_byte)


# ---------------------------------------------------------------------------------------
# control context

@dataclass(frozen=True)
class Guard:
    """One enclosing decision a node depends on."""
    kind: str            # "if" | "else" | "loop" | "switch" | "ternary" | "opaque"
    node: Node           # the if/loop/switch statement
    condition: Node | None


def control_context(node: Node, body: Node) -> list[Guard]:
    """Enclosing branches and loops of ``node`` inside ``body``, innermost first.
    A nested function-like node (a macro such as ``CUDA_KERNEL_LOOP(i, n) { ... }``
    parses as one) is an "opaque" guard: what it does with its body is unknown."""
    out: list[Guard] = []
    child = node
    path = ancestors(node, body, MAX_GUARD_DEPTH)
    if path is None:
        # deeper than any program (a fuzzed sum of 16,000 terms with a barrier at its
        # bottom, asked for each of its barriers): unknown, as a macro-like block is
        return [Guard("opaque", body, None)]
    for cur in path:
        t = cur.type
        if t == "if_statement":
            cons = cur.child_by_field_name("consequence")
            alt = cur.child_by_field_name("alternative")
            cond = cur.child_by_field_name("condition")
            if cons is not None and _within(child, cons):
                out.append(Guard("if", cur, cond))
            elif alt is not None and _within(child, alt):
                out.append(Guard("else", cur, cond))
        elif t in LOOPS:
            cond = cur.child_by_field_name("condition")
            loop_body = cur.child_by_field_name("body")
            if loop_body is not None and _within(child, loop_body) or t == "do_statement":
                out.append(Guard("loop", cur, cond))
        elif t == "switch_statement":
            out.append(Guard("switch", cur, cur.child_by_field_name("condition")))
        elif t == "conditional_expression":
            cond = cur.child_by_field_name("condition")
            if cond is None or not _within(child, cond):
                out.append(Guard("ternary", cur, cond))
        elif t == "binary_expression" and _operator(cur) in ("&&", "||"):
            right = cur.child_by_field_name("right")
            if right is not None and _within(child, right):
                out.append(Guard("ternary", cur, cur.child_by_field_name("left")))
        elif t in FUNCTION_LIKE:
            out.append(Guard("opaque", cur, None))
        child = cur
    return out


def callee_short_name(fnode: Node | None) -> str:
    """The called function's name without namespace or template arguments, from a
    call's ``function`` node: `cg::this_grid` -> `this_grid`, `f<T>` -> `f`."""
    if fnode is None:
        return ""
    if fnode.type == "template_function":
        n = fnode.child_by_field_name("name")
        if n is not None:
            fnode = n
    return text(fnode).split("::")[-1]


# nesting below a body that control_context reads (the corpus's trees are under 1,000 deep)
MAX_GUARD_DEPTH = 4_000


@overload
def ancestors(node: Node, top: Node) -> list[Node]: ...
@overload
def ancestors(node: Node, top: Node, limit: int) -> list[Node] | None: ...


def ancestors(node: Node, top: Node, limit: int | None = None) -> list[Node] | None:
    """The ancestors of ``node`` below ``top``, innermost first (all of them, up to the
    root, when ``node`` is not inside ``top``). Found going down from ``top``:
    ``Node.parent`` costs the node's depth (tree-sitter walks down from the root), so
    walking up was quadratic in the depth -- minutes for a barrier 44,000 levels deep in
    a fuzzed expression. With ``limit``: None when ``node`` lies deeper than that below
    ``top``."""
    path: list[Node] = []
    if top.id != node.id and top.start_byte <= node.start_byte \
            and node.end_byte <= top.end_byte:
        cur = top.child_with_descendant(node)
        while cur is not None and cur.id != node.id:
            path.append(cur)
            if limit is not None and len(path) > limit:
                return None
            cur = cur.child_with_descendant(node)
        if cur is not None:
            path.reverse()
            return path
        path = []
    cur = node.parent
    while cur is not None and cur.id != top.id:
        path.append(cur)
        cur = cur.parent
    return path


def _operator(node: Node) -> str:
    """The operator of a binary expression: its token's type is its spelling (cheaper
    than decoding its text, for each level of a 40,000-term sum)."""
    op = node.child_by_field_name("operator")
    return "" if op is None else op.type


def _within(node: Node, region: Node) -> bool:
    return region.start_byte <= node.start_byte and node.end_byte <= region.end_byte


@dataclass
class Exit:
    node: Node           # the return / break / continue statement
    kind: str            # "return" | "break" | "continue"
    guards: list[Guard] = field(default_factory=list)


def exits_before(node: Node, body: Node, queries: BodyQueries | None = None,
                 guards_of_node: list[Guard] | None = None) -> Iterator[Exit]:
    """``return`` statements that can run before ``node`` on some path (lexically before
    it, or anywhere in a loop that encloses it), and ``break``/``continue`` of the loops
    that enclose it. ``queries``: the unit's BodyQueries (the statements and their
    contexts are then read once per body); ``guards_of_node``: control_context(node)."""
    if guards_of_node is None:
        guards_of_node = control_context(node, body)
    loops = [g.node for g in guards_of_node if g.kind == "loop"]
    statements = queries.exits(body) if queries is not None else \
        _exit_statements(body, None)
    for kind, stmt, guards, owner in statements:
        if stmt.id == node.id:
            continue
        if kind == "return":
            before = stmt.start_byte < node.start_byte
            in_loop = any(_within(stmt, lp) for lp in loops)
            if not (before or in_loop):
                continue
        else:
            if owner is None or not any(owner.id == lp.id for lp in loops):
                continue
            # the guards that matter are those between the loop and the statement
            guards = [g for g in guards if _within(g.node, owner) and g.node.id != owner.id]
        yield Exit(stmt, kind, guards)


def _exit_statements(body: Node, caps: Captures | None):
    """(kind, statement, control context, owning loop or None) of the return, break and
    continue statements of ``body`` (returns, then breaks, then continues, each in
    source order), less those inside a nested function-like node (opaque)."""
    if caps is None:
        found = captures("(return_statement) @r (break_statement) @b "
                         "(continue_statement) @c", body)
        caps = {"return": found.get("r", []), "break": found.get("b", []),
                "continue": found.get("c", [])}
    out = []
    for kind in ("return", "break", "continue"):
        for stmt in caps.get(kind, []):
            guards = control_context(stmt, body)
            if any(g.kind == "opaque" for g in guards):
                continue
            owner = _owning_loop(stmt, body) if kind != "return" else None
            out.append((kind, stmt, guards, owner))
    return out


def _owning_loop(stmt: Node, body: Node) -> Node | None:
    """The loop a break/continue belongs to (a break inside a switch belongs to it)."""
    for cur in ancestors(stmt, body):
        if cur.type in LOOPS:
            return cur
        if cur.type == "switch_statement" and stmt.type == "break_statement":
            return None
    return None
