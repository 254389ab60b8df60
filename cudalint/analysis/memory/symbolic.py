"""Figures of an access whose lane stride is an unknown kernel parameter.

``acc += a[row * cols + k]`` with ``row`` from threadIdx.x and ``cols`` a kernel
parameter: the lane engine samples ``cols`` (lane_values.PARAM_SAMPLES) and the figure
changes between samples (4 sectors at ``cols`` = 1, 32 at 37 and 1024), so the sure lower
bound of figures.lower_bound is one lane's worth and no finding. Yet the figure is a
function of ``cols`` alone: lane l sits ``4 * l * cols`` bytes after lane 0. This module

- finds such accesses: per warp, every lane's offset from the warp's first lane is
  ``a * v + b`` for the parameter sample v, in every sample (``LinearLanes.fit``);
- names the parameter: the only unknown scalar parameter the address reads, or the one
  that keeps the fit when every other is fixed (``identify``, by evaluating again);
- gives the figure for any value of it (``LinearLanes.figure``), the values for which it
  stays below a limit, and where it reaches its final value (``coalescing_by_value``);
- leaves alone an access under an ``if`` that compares the parameter with a constant
  (``if (incx == 1) ... else ... x[i * incx]``): the kernel already has its fast path.

Shared-memory bank conflicts are not given by value: with a row pitch of p words,
lanes l * p hit distinct banks for every odd p, so no conflict holds for all but a few
values of an unknown pitch.

The parameter is taken to be non-negative (sizes, strides, pitches). Launch constants
are bound before this: an access whose parameters every launch passes as one constant
has exact figures already (lanes.launch_bindings).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Callable

from cudalint.analysis.memory.figures import SECTOR, _min_sectors_shifted, least_metrics
from cudalint.analysis.memory.lane_values import N_SAMPLES, PARAM_SAMPLES, WARP

if TYPE_CHECKING:
    from cudalint.analysis.memory.figures import Access

# the largest parameter value scanned for the figure's final value; beyond it: no claim
MAX_SCAN = 4096
# how many values of the parameter may leave the access below the threshold (0, 1, ...):
# a 16x16 block reading A[c * ld + r] is coalesced for ld = 0, 1, 2 and 3
MAX_EXCEPTIONS = 4


@dataclass
class LinearLanes:
    """Per warp: for each lane active in every sample, (lane, a, b) with the lane's
    offset from the warp's first lane equal to ``a * value + b`` bytes."""
    param: str
    warps: list[list[tuple[int, int, int]]]
    width: int

    @staticmethod
    def fit(access: "Access", param: str = "") -> "LinearLanes | None":
        groups = access.groups
        nw = len(groups) // N_SAMPLES
        v0, v1, v2 = PARAM_SAMPLES
        warps = []
        moving = False
        for w in range(nw):
            rows = [groups[s * nw + w] for s in range(N_SAMPLES)]
            lanes = [l for l in range(WARP) if all(r[l] is not None for r in rows)]
            if not lanes:
                continue
            l0 = lanes[0]
            rel = [[r[l] - r[l0] for l in lanes] for r in rows]
            if rel[0] == rel[1] == rel[2]:
                fitted = [(l, 0, d) for l, d in zip(lanes, rel[0])]
                if fitted not in warps:
                    warps.append(fitted)
                continue                    # no lane moves with the samples here
            fitted = []
            for l in lanes:
                r0, r1, r2 = (r[l] - r[l0] for r in rows)
                a, rem = divmod(r1 - r0, v1 - v0)
                if rem:
                    return None
                b = r0 - a * v0
                if a * v2 + b != r2:
                    return None
                moving = moving or a != 0
                fitted.append((l, a, b))
            if fitted not in warps:         # warps of one shape: one figure
                warps.append(fitted)
        if not warps or not moving:
            return None
        return LinearLanes(param, warps, access.width)

    def stride(self) -> tuple[int, int] | None:
        """(A, B) when lane k of warp 0 sits (A * value + B) * k bytes after its first
        lane: a lane stride of A * value + B bytes."""
        lanes = self.warps[0]
        if len(lanes) < 2:
            return None
        l0 = lanes[0][0]
        _, a1, b1 = lanes[1]
        k1 = lanes[1][0] - l0
        if a1 % k1 or b1 % k1:
            return None
        unit_a, unit_b = a1 // k1, b1 // k1
        if all(a == unit_a * (l - l0) and b == unit_b * (l - l0) for l, a, b in lanes):
            return unit_a, unit_b
        return None

    def same_shape(self, other: "LinearLanes") -> bool:
        return self.warps == other.warps

    def offsets(self, value: int) -> list[list[int]]:
        return [[a * value + b for _, a, b in lanes] for lanes in self.warps]

    def figure(self, value: int) -> int:
        """Sectors per request at this value, at the best base alignment; the smallest
        over the warps (a sure lower bound, as figures.lower_bound)."""
        return min(_figure(tuple(offs), self.width) for offs in self.offsets(value))

    def settles(self) -> int | None:
        """A value from which the figure no longer changes: every two lanes whose
        distance moves with the value are then more than two sectors apart, in every
        warp (None: past MAX_SCAN)."""
        start = 0
        for lanes in self.warps:
            for i, (_, a1, b1) in enumerate(lanes):
                for _, a2, b2 in lanes[i + 1:]:
                    da, db = a2 - a1, b2 - b1
                    if da == 0:
                        continue
                    # |da * v + db| >= 2 * SECTOR + width for every v >= need
                    need = -(-(2 * SECTOR + self.width + abs(db)) // abs(da))
                    start = max(start, need)
                    if start > MAX_SCAN:
                        return None
        return start


@lru_cache(maxsize=8192)
def _figure(offsets: tuple[int, ...], width: int) -> int:
    # the same lane shapes recur across accesses and files (4 * k * cols, ...)
    return _min_sectors_shifted(list(offsets), width, SECTOR)


def coalescing_by_value(lin: LinearLanes, limit: float) -> dict | None:
    """The access's sectors per request for every value of its parameter >= 0: None
    unless it is below ``limit`` for at most MAX_EXCEPTIONS values. Otherwise ``final``
    (a figure every value from ``final_from`` on reaches), ``least`` (the smallest
    figure over the values outside ``exceptions``), ``exceptions``.

    Past ``settles()`` the lanes fall into clusters that never share a sector; only
    where the clusters start within a sector still moves with the value, and that
    repeats every SECTOR values: the figures from there to SECTOR values later cover
    every value beyond."""
    end = lin.settles()
    if end is None or lin.figure(end) < limit:
        return None                     # below the limit for ever more values
    figures = []
    exceptions = []
    for v in range(end + SECTOR + 1):
        figures.append(lin.figure(v))
        if figures[-1] < limit:
            exceptions.append(v)
            if len(exceptions) > MAX_EXCEPTIONS or v >= end:
                return None
    final = min(figures[end:])
    final_from = end
    while final_from > 0 and figures[final_from - 1] >= final:
        final_from -= 1
    least = min(f for v, f in enumerate(figures) if v not in exceptions)
    return {"final": final, "final_from": final_from, "least": least,
            "exceptions": exceptions}


def identify(access: "Access", evaluate_with: Callable[[dict[str, int]], "Access | None"]
             ) -> LinearLanes | None:
    """The parameter the access's lane offsets are a linear function of: the only unknown
    parameter it reads, or, among several, the one whose fit survives fixing every other
    to a value (``evaluate_with(bound)`` evaluates the access again with those bound)."""
    if not access.params:
        return None
    lin = LinearLanes.fit(access)
    if lin is None:
        return None
    if len(access.params) == 1:
        (lin.param,) = access.params
        return lin
    found = None
    for name in sorted(access.params):
        others = {q: PARAM_SAMPLES[-1] for q in access.params if q != name}
        again = evaluate_with(others)
        if again is None:
            continue
        lin2 = LinearLanes.fit(again, name)
        if lin2 is not None and lin2.same_shape(lin):
            if found is not None:
                return None             # two parameters would do: no claim
            found = lin2
    return found


def coalescing_figures_by_value(access: "Access", threshold: float) -> dict | None:
    """CL201 metrics of an access whose lane offsets follow one unknown parameter, when
    it reaches ``threshold`` times the ideal for every value of it but at most
    MAX_EXCEPTIONS: ``sectors_per_request`` is the figure every value from
    ``condition``'s bound on reaches (``exact`` false), ``by_value`` the rest."""
    lin = access.symbolic
    if not isinstance(lin, LinearLanes) or branches_on(access, lin.param):
        return None
    ideal = access.ideal_sectors
    got = coalescing_by_value(lin, threshold * ideal)
    if got is None:
        return None
    fig: dict = {"sectors_per_request": got["final"], "ideal_sectors_per_request": ideal,
                 "exact": False, **least_metrics(access),
                 "condition": f"{lin.param} >= {got['final_from']}",
                 "by_value": {"param": lin.param, "from": got["final_from"],
                              "least": got["least"], "exceptions": got["exceptions"]}}
    stride = lin.stride()
    if stride is not None:
        fig["stride_bytes_per_unit"], fig["stride_bytes_offset"] = stride
    else:
        x_stride = access.x_stride_bytes()      # rows of the block apart by the value
        if x_stride is not None:
            fig["x_stride_bytes"] = x_stride
    fig.update({"block": None if access.block.source == "any-1d" else
                list(access.block.dims), "block_source": access.block.source})
    return fig


def large_value_samples(fig: dict) -> set[int] | None:
    """The samples of the unknowns (indices into PARAM_SAMPLES) at which a figure by
    value holds: the parameter's sample is at least its bound and not an exception."""
    by = fig.get("by_value")
    if not by:
        return None
    return {s for s, v in enumerate(PARAM_SAMPLES)
            if v >= by["from"] and v not in by["exceptions"]}


def branches_on(access: "Access", name: str) -> bool:
    """An ``if`` around the access compares ``name`` with a constant (``if (incx == 1)
    {...} else {... x[i * incx] ...}``): the kernel already tells the values apart, the
    strided path is there for the others."""
    body = access.kernel.body
    pattern = re.compile(rf"\b{re.escape(name)}\b\s*(?:==|!=|<=|>=|<|>)\s*[0-9]|"
                         rf"[0-9]\s*(?:==|!=|<=|>=|<|>)\s*\b{re.escape(name)}\b")
    cur = access.node.parent
    while cur is not None and (body is None or cur.id != body.id):
        if cur.type in ("if_statement", "conditional_expression"):
            cond = cur.child_by_field_name("condition")
            if cond is not None and pattern.search(cond.text.decode("utf-8", "replace")):
                return True
        cur = cur.parent
    return False
