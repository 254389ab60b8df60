"""Where else a per-thread array that ptxas puts in local memory could live, in numbers:
what CL204's advice rests on, so that it offers only remedies that exist for the array.

* Registers: an array kept in registers takes one 32-bit register per word, and a thread
  has at most 255 (every architecture since sm_35; CUDA C++ Programming Guide, "Technical
  Specifications per Compute Capability"). An array of more than 255 words (1020 bytes)
  cannot be held in registers whatever its index: no unrolling helps it.
* Shared memory: one copy per thread takes the array's bytes times the threads of a
  block. That is the block of the kernel's launch, or, for a device function, the block
  of the kernels of the unit that call it when they agree (:func:`function_block`).

The per-block limits of shared memory (48 KB static, the architecture's opt-in maximum
with dynamic shared memory) belong to analysis.ptxas.occupancy; the rule combines both.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from cudalint.model.launch_shape import BlockShape, block_shape
from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function

MAX_REGISTERS = 255          # per thread, sm_35 and later
WORD = 4
_MAX_CALLER_DEPTH = 8


def registers_for(nbytes: int | None) -> int | None:
    """32-bit registers an array of ``nbytes`` takes in registers (None: size unknown)."""
    return None if nbytes is None else -(-nbytes // WORD)


def fits_registers(nbytes: int | None) -> bool | None:
    """Could the array live in registers at all (None: size unknown)?"""
    regs = registers_for(nbytes)
    return None if regs is None else regs <= MAX_REGISTERS


def function_block(ctx: "UnitContext", fn: "Function") -> BlockShape | None:
    """The block ``fn`` runs with: its launch's for a kernel; for a device function,
    the one block shape of the kernels of this unit that reach it through calls (None:
    unknown, no such kernel, or kernels with different block sizes). A call reaches the
    definition of its name with as many parameters as it has arguments: overloads
    (mmcv's two `polygon_cut`, one per kernel) are told apart; two definitions a call
    count cannot tell apart leave the block unknown."""
    if fn.is_kernel:
        return block_shape(ctx, fn)
    arity: dict[tuple[str, int], int] = {}
    for g in ctx.model.functions:
        if g.body is not None and g.is_device:
            key = (g.name, len(g.params))
            arity[key] = arity.get(key, 0) + 1
    if arity.get((fn.name, len(fn.params)), 0) != 1:
        return None
    callers: dict[tuple[str, int], list["Function"]] = {}
    for g in ctx.model.functions:
        if g.body is None or not g.is_device:
            continue
        for c in g.nodes_in("callee"):
            call = c.parent
            args = call.child_by_field_name("arguments") if call is not None else None
            n = len([a for a in args.named_children if a.type != "comment"]) \
                if args is not None else -1
            callers.setdefault((text(c), n), [])
            if g not in callers[(text(c), n)]:
                callers[(text(c), n)].append(g)
    kernels: list["Function"] = []
    start = (fn.name, len(fn.params))
    seen = {start}
    frontier = [start]
    for _ in range(_MAX_CALLER_DEPTH):
        nxt = []
        for key in frontier:
            for g in callers.get(key, []):
                if g.is_kernel:
                    if g not in kernels:
                        kernels.append(g)
                    continue
                gk = (g.name, len(g.params))
                if gk not in seen:
                    seen.add(gk)
                    nxt.append(gk)
        frontier = nxt
        if not frontier:
            break
    if not kernels:
        return None
    shapes = [block_shape(ctx, k) for k in kernels]
    if any(s is None for s in shapes) or len({s.threads for s in shapes}) != 1:
        return None
    return shapes[0]
