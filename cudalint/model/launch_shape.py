"""The block shape a kernel runs with, and where it came from: a launch in the unit, a
Python launch call, ``__launch_bounds__``, or the ``block-size`` setting."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function


@dataclass(frozen=True)
class BlockShape:
    dims: tuple[int, int, int]
    source: str          # "launch" | "project-launch" | "python-launch" |
                         # "launch_bounds" | "config"
    # the file line the shape was read from, computed only when a message needs it
    where: Callable[[], int | None] | None = field(default=None, compare=False, repr=False)
    file: str | None = field(default=None, compare=False)   # a launch in another file

    @property
    def line(self) -> int | None:
        """Computed on demand (mapping a byte to a file line can cost a table)."""
        return self.where() if self.where is not None else None

    @property
    def threads(self) -> int:
        return self.dims[0] * self.dims[1] * self.dims[2]

    def describe(self) -> str:
        """``block 32x8 from the launch at line 12``: what a message says about it."""
        shown = list(self.dims)
        while len(shown) > 1 and shown[-1] == 1:
            shown.pop()
        dims = "x".join(map(str, shown))
        where = {"launch": "the launch", "python-launch": "the Python launch",
                 "project-launch": f"the launch in {self.file}",
                 "launch_bounds": "__launch_bounds__",
                 "config": "the block-size setting"}.get(self.source, self.source)
        at = f" at line {self.line}" if self.line is not None else ""
        return f"block {dims} from {where}{at}"



def block_shape(ctx: "UnitContext", fn: "Function") -> BlockShape | None:
    """The block shape a kernel runs with, and where it came from (None: unknown)."""
    launches = [l for l in ctx.model.launches if l.kernel == fn.name and l.block]
    shapes = {l.block for l in launches}
    if len(shapes) == 1:
        first = launches[0].node.start_byte
        return BlockShape(shapes.pop(), "launch", cache(lambda: _line(ctx, first)))
    if len(shapes) > 1:
        return None
    # launches in other files of the project (or through a function pointer): all of
    # one shape, or none is assumed (project/index.py finds them)
    elsewhere = [l for l in getattr(ctx.unit, "launches", None) or []
                 if l.kernel == fn.name and l.block]
    if elsewhere:
        if len({l.block for l in elsewhere}) > 1:
            return None
        first = elsewhere[0]
        shown = _shown(ctx, first.file)        # None: this file (a function pointer)
        return BlockShape(first.block, "launch" if shown is None else "project-launch",
                          lambda: first.line, file=shown)
    emb = getattr(ctx.unit, "embedded", None)
    if emb is not None:
        py = set()
        line = None
        for launch in getattr(emb, "launches", None) or []:
            name = getattr(launch, "kernel", None)
            block = getattr(launch, "block", None)
            if block and (name in (None, fn.name)):
                py.add(tuple(list(block) + [1] * (3 - len(block))))
                start = getattr(launch, "start", None)
                if line is None and isinstance(start, int):
                    line = start
        if len(py) == 1:
            at = line
            return BlockShape(py.pop(), "python-launch", None if at is None else
                              cache(lambda: ctx.unit.file.position(at)[0]))
        if len(py) > 1:
            return None
    if fn.launch_bounds and fn.launch_bounds[0]:
        node = fn.launch_bounds_node
        return BlockShape((fn.launch_bounds[0], 1, 1), "launch_bounds",
                          None if node is None else cache(lambda: _line(ctx, node.start_byte)))
    if ctx.settings.block_size:
        return BlockShape(tuple(ctx.settings.block_size), "config")  # type: ignore[arg-type]
    return None


def _shown(ctx: "UnitContext", path: str) -> str | None:
    """Another file's path as messages show it (relative to the unit's file); None for
    the unit's own file."""
    import os
    here = os.path.abspath(ctx.unit.file.path)
    if os.path.abspath(path) == here:
        return None
    try:
        return os.path.relpath(path, os.path.dirname(here))
    except ValueError:
        return path


def _line(ctx: "UnitContext", byte: int) -> int | None:
    try:
        return ctx.unit.file.position(ctx.unit.file_offset(byte))[0]
    except Exception:           # a position the source layer cannot map: say nothing
        return None
