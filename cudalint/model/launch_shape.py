"""The block shape a kernel runs with, and where it came from: a launch in the unit, a
Python launch call, or the ``block-size`` setting (never ``__launch_bounds__``: it is an upper
bound on every launch, not the shape of one, and :func:`launch_bounds_threads` hands it to
the analyses that guess a block, to bound the guess); and the hardware
limits every block and grid shape is checked against.

:func:`block_shape` is the one place that hands a block shape to the analyses, and it
hands over only shapes a GPU can run (:func:`block_problem` is None): at most 1024 threads
per block, x and y at most 1024, z at most 64 (CUDA C++ Programming Guide, "Compute
Capabilities", table "Technical Specifications per Compute Capability": the same on every
compute capability from 2.0 to 12.x). A launch with another shape returns an error and runs
nothing (``cudaErrorInvalidValue`` measured with CUDA 13.0 on an H100; the runtime documents
``cudaErrorInvalidConfiguration``, "invalid configuration argument"), so there is nothing
to model; CL601 reports it. Bounding the shape here bounds every
analysis that enumerates the threads of a block (the lane engine of CL201/CL202 and the
block run of CL101-CL105), whatever number the source wrote.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Callable
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function


MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = ((1 << 31) - 1, 65535, 65535)
_AXES = "xyz"


def dims3(raw: object) -> tuple[int, int, int] | None:
    """One to three positive integers (a ``dim3``, a Python ``block=`` tuple or a bare
    int) as (x, y, z); None for anything else."""
    values = list(raw) if isinstance(raw, (tuple, list)) else [raw]
    if not 1 <= len(values) <= 3 or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        return None
    return tuple(values + [1] * (3 - len(values)))  # type: ignore[return-value]


def block_problem(dims: tuple[int, int, int]) -> str | None:
    """Why no GPU runs a block of this shape (None: it fits the hardware limits)."""
    threads = dims[0] * dims[1] * dims[2]
    if threads > MAX_THREADS_PER_BLOCK:
        return f"{threads} threads per block, at most {MAX_THREADS_PER_BLOCK}"
    for axis, value, limit in zip(_AXES, dims, MAX_BLOCK_DIMS):
        if value > limit:
            return f"block {axis} is {value}, at most {limit}"
    return None


def grid_problem(dims: tuple[int, int, int]) -> str | None:
    """Why no GPU runs a grid of this shape (None: it fits the hardware limits)."""
    for axis, value, limit in zip(_AXES, dims, MAX_GRID_DIMS):
        if value > limit:
            return f"grid {axis} is {value}, at most {limit}"
    return None


def checked_block(raw: object) -> tuple[int, int, int] | None:
    """A block shape from any source as (x, y, z), or None when it is not one a GPU can
    run: what every analysis and rule builds a block from."""
    dims = dims3(raw)
    return dims if dims is not None and block_problem(dims) is None else None


def launch_bounds_threads(fn: "Function") -> int | None:
    """The maximum threads per block of ``__launch_bounds__``, when a block can have
    that many (a larger bound describes no launch that can run)."""
    bounds = fn.launch_bounds
    if not bounds or not bounds[0] or bounds[0] <= 0 or bounds[0] > MAX_THREADS_PER_BLOCK:
        return None
    return bounds[0]


@dataclass(frozen=True)
class BlockShape:
    dims: tuple[int, int, int]
    source: str          # "launch" | "project-launch" | "python-launch" |
                         # "launch_bounds" | "config"
    # the file line the shape was read from, computed only when a message needs it
    where: Callable[[], int | None] | None = field(default=None, compare=False, repr=False)
    file: str | None = field(default=None, compare=False)   # a launch in another file
    instance: str | None = field(default=None, compare=False)   # `reduce6<256>`

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
        if self.instance:
            from cudalint.model.instances import mention
            at += f", {mention(self.instance)}"
        return f"block {dims} from {where}{at}"



_RUNNABLE: "WeakKeyDictionary[object, dict[str, list]]" = WeakKeyDictionary()


def runnable_launches(model, name: str) -> list:
    """The launches of kernel ``name`` in a unit's model whose block a GPU can run, in
    source order. Indexed once per unit: a fuzzed file of 244 copies of one kernel and
    its launch checked all 244 launches for each copy (5 s a lint, seed 37)."""
    by_name = _RUNNABLE.get(model)
    if by_name is None:
        by_name = _RUNNABLE[model] = {}
    got = by_name.get(name)
    if got is None:
        got = by_name[name] = [launch for launch in model.launches_of(name)
                               if checked_block(launch.block) is not None]
    return got


def block_shape(ctx: "UnitContext", fn: "Function") -> BlockShape | None:
    """The block shape a kernel runs with, and where it came from (None: unknown). A
    launch whose shape no GPU runs is left out, as if it were not there. An
    instantiation of a template kernel runs with the blocks of the launches that bind
    it (model/instances.py), and says which it is."""
    shape = _block_shape(ctx, fn)
    if shape is not None and fn.instance:
        shape = replace(shape, instance=fn.instance)
    return shape


def _block_shape(ctx: "UnitContext", fn: "Function") -> BlockShape | None:
    sites = fn.instance_launches
    if sites is not None:
        known = [s for s in sites if checked_block(s.block) is not None]
        if len({s.block for s in known}) > 1:
            return None
        if known:
            first = known[0]
            shown = _shown(ctx, first.file) if first.file else None
            return BlockShape(checked_block(first.block), "launch" if shown is None
                              else "project-launch", first.line, file=shown)
    launches = [] if sites is not None else runnable_launches(ctx.model, fn.name)
    shapes = {l.block for l in launches}
    if len(shapes) == 1:
        first = launches[0].node.start_byte
        return BlockShape(shapes.pop(), "launch", cache(lambda: _line(ctx, first)))
    if len(shapes) > 1:
        return None
    # launches in other files of the project (or through a function pointer): all of
    # one shape, or none is assumed (project/index.py finds them)
    elsewhere = [] if sites is not None else \
        [l for l in getattr(ctx.unit, "launches", None) or []
         if l.kernel == fn.name and checked_block(l.block) is not None]
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
            dims = checked_block(block) if block else None
            if dims is not None and (name in (None, fn.name)):
                py.add(dims)
                start = getattr(launch, "start", None)
                if line is None and isinstance(start, int):
                    line = start
        if len(py) == 1:
            at = line
            return BlockShape(py.pop(), "python-launch", None if at is None else
                              cache(lambda: ctx.unit.file.position(at)[0]))
        if len(py) > 1:
            return None
    # __launch_bounds__ is not a block shape: it bounds every launch from above (cusignal's
    # sosfilt says 1024 and launches one thread per filter section, 2-16); the analyses
    # that evaluate a kernel for an unknown block bound their guesses by it
    # (launch_bounds_threads)
    configured = checked_block(ctx.settings.block_size) if ctx.settings.block_size else None
    if configured is not None:          # checked when the setting is read, and again here
        return BlockShape(configured, "config")
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
