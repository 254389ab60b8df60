"""Lanes that leave a loop iteration before a shared access: ``if (c) continue;`` and
``if (c) break;`` earlier in the iterations around it.

The lane engine (``KernelLanes.active``) removes from an access the lanes an enclosing
``if`` shuts out, but not those that jumped past it: in gpu4pyscf's ``type1_rad_ang<3>``
(ecp_type1.cu:169-171, sheet-newcorpus8 W4) the lanes with ``i + j + k`` above 3 or odd
``continue`` before ``prad[0]``, so only ``rad_all[0]`` and ``rad_all[8]`` are read, in
different banks; counted with the lanes that skip it, ``rad_all[16]`` shared a bank with
``rad_all[0]`` and CL202 said 2-way. CL202 (alone) reads this module: a jump is applied
to an access's lane set as ``if (!c) { access }`` would be, with the same test of the
condition (a condition on the thread index whose lanes are the same in every sample of
the unknowns; anything else leaves the lanes as they were)."""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.analysis.memory.kernel_lanes_conditions import condition_mask
from cudalint.analysis.memory.lane_values import N_SAMPLES, WARP

if TYPE_CHECKING:
    from cudalint.analysis.memory.figures import Access

_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
_FUNCTIONS = ("function_definition", "lambda_expression", "translation_unit")
# statements walked up from an access at most (a fuzzed nest of thousands of blocks)
MAX_LEVELS = 64


def exits_before(node: Node) -> list[Node]:
    """The conditions of ``if (c) continue;`` / ``if (c) break;`` statements that run
    before ``node`` in the same iteration of a loop around it: earlier statements of a
    block that holds ``node``, inside that loop (a ``break`` of a ``switch`` is not
    one)."""
    out: list[Node] = []
    cur = node
    for _ in range(MAX_LEVELS):
        up = cur.parent
        if up is None or up.type in _FUNCTIONS:
            break
        if up.type == "compound_statement":
            for stmt in up.named_children:
                if stmt.start_byte >= cur.start_byte:
                    break
                cond = _jump_condition(stmt)
                if cond is not None:
                    out.append(cond)
        cur = up
    return out


def _jump_condition(stmt: Node) -> Node | None:
    """``c`` of ``if (c) continue;`` or ``if (c) break;`` (the jump alone, braced or
    not) whose target is a loop around the statement."""
    if stmt.type != "if_statement":
        return None
    cons = stmt.child_by_field_name("consequence")
    if cons is not None and cons.type == "compound_statement":
        inner = [c for c in cons.named_children if c.type != "comment"]
        cons = inner[0] if len(inner) == 1 else None
    if cons is None or cons.type not in ("continue_statement", "break_statement"):
        return None
    if b"constexpr" in (stmt.text or b"")[:20]:
        return None                     # folded by the compiler; lanes alike
    cur = stmt.parent
    while cur is not None and cur.type not in _FUNCTIONS:
        if cur.type in _LOOPS:
            return stmt.child_by_field_name("condition")
        if cur.type == "switch_statement" and cons.type == "break_statement":
            return None                 # leaves the switch, not the iteration
        cur = cur.parent
    return None


def reaching_columns(access: "Access") -> tuple | None:
    """Per column, whether the lane may still reach ``access`` after the jumps before
    it (None: no jump removes a lane, or what they remove depends on the unknowns).

    Columns are sample-major. A sample in which every lane jumps is a pass of the loop
    that no lane runs the access in (a loop counter held past the loop's bound: the
    lanes of ``for (n = threadIdx.x; n < 64; n += blockDim.x)`` at n + 128); it is left
    out of the comparison and keeps no lane. The other samples must agree lane for lane,
    as ``KernelLanes.active`` asks of an enclosing condition: a jump decided by an
    unknown (``if (threadIdx.x >= n) continue;``) removes nobody."""
    values = access.int_values
    if values is None:
        return None
    columns = len(access.groups) * WARP
    if columns % N_SAMPLES:
        return None
    width = columns // N_SAMPLES

    def leaf(cond: Node) -> tuple | None:
        vec = values(cond)
        return vec if vec is not None and len(vec) == columns else None
    mask: list[int] | None = None
    for cond in exits_before(access.node):
        stays = condition_mask(leaf, cond, False)
        if stays is None or len(stays) != columns:
            continue
        mask = list(stays) if mask is None else [a and b for a, b in zip(mask, stays)]
    if mask is None or all(mask):
        return None
    blocks = [tuple(mask[s * width:(s + 1) * width]) for s in range(N_SAMPLES)]
    live = {b for b in blocks if any(b)}
    if len(live) != 1:
        return None                 # depends on the unknowns, or nobody runs it at all
    return tuple(mask)


def without_exits(access: "Access", columns: tuple | None = None) -> "Access":
    """``access`` with the lanes that left the iteration before it made inactive (the
    access itself where none did)."""
    mask = reaching_columns(access) if columns is None else columns
    if mask is None:
        return access
    groups = [[o if mask[g * WARP + l] else None for l, o in enumerate(row)]
              for g, row in enumerate(access.groups)]
    return replace(access, groups=groups)
