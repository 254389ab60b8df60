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
    unknown, no such kernel, or kernels with different block sizes)."""
    if fn.is_kernel:
        return block_shape(ctx, fn)
    callers: dict[str, list["Function"]] = {}
    for g in ctx.model.functions:
        if g.body is None or not g.is_device:
            continue
        for callee in {text(c) for c in g.nodes_in("callee")}:
            callers.setdefault(callee, []).append(g)
    kernels: list["Function"] = []
    seen = {fn.name}
    frontier = [fn.name]
    for _ in range(_MAX_CALLER_DEPTH):
        nxt = []
        for name in frontier:
            for g in callers.get(name, []):
                if g.is_kernel:
                    kernels.append(g)
                elif g.name not in seen:
                    seen.add(g.name)
                    nxt.append(g.name)
        frontier = nxt
        if not frontier:
            break
    if not kernels:
        return None
    shapes = [block_shape(ctx, k) for k in kernels]
    if any(s is None for s in shapes) or len({s.threads for s in shapes}) != 1:
        return None
    return shapes[0]
