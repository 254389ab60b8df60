"""What the host code's ``if`` conditions say about a kernel's integer arguments.

A launch under ``if (s <= 256)`` passes ``s`` as an argument: the kernel's parameter
bound to it is at most 256 in every run that launch makes. The block runs take their
parameter figures from here when every launch of a kernel (or of one template
instantiation) bounds the argument (sheet-newcorpus8 W8: ColossalAI's
``cumsum_kernel<256, 1>`` launched only under ``if (s <= 256)``, whose loop then runs
once, was said to race across the loop's passes).

Read: the ``if``/``else`` chain around the launch in its host function, conditions that
compare the argument's variable with a constant (``<``, ``<=``, ``>``, ``>=``, ``==``,
either side, joined by ``&&`` in a taken branch or ``||`` in an ``else``). The argument
must be that variable itself, and the host function must never assign it (a parameter
or a local set at its declaration): otherwise nothing is known.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.model.consteval import eval_int
from cudalint.model.kernels import last_initializer, written_after

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function

Range = tuple  # (lowest or None, highest or None), inclusive

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}
_NOT = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}
MAX_UP = 64                     # ancestors walked from a launch to its function


def param_ranges(ctx: "UnitContext", fn: "Function") -> dict[str, Range]:
    """Kernel parameter name -> (lo, hi) that every launch of ``fn`` in this unit
    guarantees (the hull over the launches); {} when a launch is not in this unit."""
    nodes = _launch_nodes(ctx, fn)
    if not nodes:
        return {}
    names = [p.name for p in fn.params]
    hull: dict[str, Range] | None = None
    for node in nodes:
        got = _ranges_at(ctx, node, names)
        if hull is None:
            hull = got
            continue
        merged = {}
        for name in hull.keys() & got.keys():
            (a_lo, a_hi), (b_lo, b_hi) = hull[name], got[name]
            lo = None if a_lo is None or b_lo is None else min(a_lo, b_lo)
            hi = None if a_hi is None or b_hi is None else max(a_hi, b_hi)
            if lo is not None or hi is not None:
                merged[name] = (lo, hi)
        hull = merged
    return hull or {}


def sample_in_ranges(value: int, k: int, ranges: dict[str, Range]) -> dict[str, int]:
    """The figure of sample ``k`` (whose figure for a parameter is ``value``) for each
    bounded parameter: ``value`` where the range holds it, else the k-th value in from
    the range's violated end (samples stay different where the range has room)."""
    out = {}
    for name, (lo, hi) in ranges.items():
        v = value
        if hi is not None and v > hi:
            v = hi - k
        if lo is not None and v < lo:
            v = lo + k
        if hi is not None and v > hi:
            v = hi
        out[name] = v
    return out


def _launch_nodes(ctx: "UnitContext", fn: "Function") -> list[Node]:
    sites = fn.instance_launches
    if sites is not None:
        nodes = [s.node for s in sites]
        return [] if not nodes or any(n is None for n in nodes) else nodes
    from cudalint.model.launch_shape import runnable_launches
    launches = ctx.model.launches_of(fn.name)
    if not launches or len(launches) != len(runnable_launches(ctx.model, fn.name)):
        return []
    return [l.node for l in launches]


def _ranges_at(ctx: "UnitContext", call: Node, names: list[str]) -> dict[str, Range]:
    arglist = call.child_by_field_name("arguments")
    args = [a for a in (arglist.named_children if arglist else []) if a.type != "comment"]
    facts = _guards(call)
    if not facts:
        return {}
    host = ctx.model.enclosing_function(call)
    if host is None or host.body is None:
        return {}
    constants = ctx.model.constants
    out: dict[str, Range] = {}
    for k, name in enumerate(names):
        if k >= len(args) or not name or args[k].type != "identifier":
            continue
        var = args[k].text.decode("utf-8", "replace")
        lo = hi = None
        for left, op, right in facts:
            bound = _compare(left, op, right, var, constants)
            if bound is None:
                continue
            b_lo, b_hi = bound
            lo = b_lo if lo is None else (lo if b_lo is None else max(lo, b_lo))
            hi = b_hi if hi is None else (hi if b_hi is None else min(hi, b_hi))
        if (lo is not None or hi is not None) and not _written(host, var, call):
            out[name] = (lo, hi)
    return out


def _written(host: "Function", var: str, call: Node) -> bool:
    """Is ``var`` written in the host function other than where it is declared with a
    value (a parameter: anywhere in its body)? The test the launch's argument values
    use too (model/kernels.written_after)."""
    init = last_initializer(host.nodes_in("declaration"), var, before=call.start_byte)
    start = init.end_byte if init is not None else host.body.start_byte
    return written_after(host.body, var, start)


def _guards(call: Node) -> list[tuple[Node, str, Node]]:
    """(left, operator, right) comparisons that hold where ``call`` runs."""
    facts: list[tuple[Node, str, Node]] = []
    child, node = call, call.parent
    for _ in range(MAX_UP):
        if node is None or node.type == "function_definition":
            break
        if node.type == "if_statement":
            cond = node.child_by_field_name("condition")
            if node.child_by_field_name("consequence") == child:
                _collect(cond, True, facts)
            elif node.child_by_field_name("alternative") == child:
                _collect(cond, False, facts)
        child, node = node, node.parent
    return facts


def _collect(cond: Node | None, holds: bool, facts: list) -> None:
    """Comparisons ``cond`` implies when it is ``holds`` (unknown shapes add none)."""
    while cond is not None and cond.type in ("condition_clause", "parenthesized_expression"):
        inner = [c for c in cond.named_children if c.type != "comment"]
        cond = inner[0] if len(inner) == 1 else None
    if cond is None or cond.type != "binary_expression":
        return
    op_node = cond.child_by_field_name("operator")
    op = op_node.type if op_node is not None else ""
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    if (op == "&&" and holds) or (op == "||" and not holds):
        _collect(left, holds, facts)
        _collect(right, holds, facts)
    elif op in _FLIP and holds:
        facts.append((left, op, right))
    elif op in _NOT and not holds:
        facts.append((left, _NOT[op], right))


def _compare(left: Node, op: str, right: Node, var: str, constants) -> Range | None:
    if right.type == "identifier" and right.text == var.encode():
        left, right, op = right, left, _FLIP[op]
    if left.type != "identifier" or left.text != var.encode():
        return None
    value = eval_int(right.text.decode("utf-8", "replace"), constants)
    if value is None:
        return None
    return {"<": (None, value - 1), "<=": (None, value), ">": (value + 1, None),
            ">=": (value, None), "==": (value, value)}[op]
