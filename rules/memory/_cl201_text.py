"""CL201's words: the remedies it prints and the column-walk text with its H100 figures.

Kept apart from the rule (rules/memory/cl201_uncoalesced_global_access.py) so that the
rule reads in one sitting; nothing here decides whether a finding is made.
"""
from __future__ import annotations

from cudalint.analysis.memory.siblings import SiblingGroup
from cudalint.analysis.memory.siblings import direction as _direction


# fixtures/CL201/column_walk.json (tools/gputruth/column_walk.py), 256 MB of floats;
# tests/test_cl201_column_walk.py checks these figures against the record
_MEASURED_COLUMN_BLOCK = ("measured on an H100 for loads (a 32x32 block per frame), DRAM "
                          "moved the useful bytes, but the walk took 2.2-2.8x the time "
                          "of the lanes on the contiguous index")
_MEASURED_COLUMN_GRID = ("measured on an H100 for loads with the neighbours a grid row "
                         "apart (blockIdx.y), the blocks that read them ran too far apart "
                         "for the caches to keep the sectors: DRAM moved 8-16x the useful "
                         "bytes, and the walk took 3.4-8.7x the time of the lanes on "
                         "consecutive elements")


def _column_walk_text(near, fig: dict, direction: str | None) -> str:
    """The waste of a column walk whose sectors other warps or blocks use."""
    count = f"{fig['sectors_per_request']:g}"
    verb = {"store": "write", "load": "read"}.get(direction, "update")
    if near.more:
        return _several_text(near, fig, verb)
    if near.in_block:
        return (f"lanes walk down a column, and other warps of the block {verb} the "
                f"neighbouring elements of each sector (the next values of `{near.name}`, "
                f"from {near.axis}): the bytes are used, but each request costs {count} "
                f"L1 sectors where {least_sectors(fig)} would do: "
                f"{_MEASURED_COLUMN_BLOCK}")
    untested = "" if near.axis == "blockIdx.y" else \
        f"; neighbours in {near.axis} were not measured"
    return (f"lanes walk down a column, and other blocks {verb} the neighbouring elements "
            f"of each sector (the next values of `{near.name}`, from {near.axis}), not "
            f"this warp: {_MEASURED_COLUMN_GRID}{untested}")


def _several_text(near, fig: dict, verb: str) -> str:
    """Neighbours from several indices together (sheet-newcorpus8 W1: the block's rows
    fill half of each sector, the next block row the other half)."""
    pairs = [(near.name, near.axis), *near.more]
    named = ", and of ".join(f"`{n}`, from {a}" for n, a in pairs)
    who = "other warps of the block" if near.in_block else \
        "other warps of the block and other blocks" if any(
            a.startswith("threadIdx") for _, a in pairs) else "other blocks"
    count = f"{fig['sectors_per_request']:g}"
    measured = _MEASURED_COLUMN_BLOCK if near.in_block else \
        f"{_MEASURED_COLUMN_BLOCK}; {_MEASURED_COLUMN_GRID}; this mix was not measured"
    return (f"lanes walk down a column, and {who} {verb} the neighbouring elements of "
            f"each sector (the next values of {named}): the bytes are used, but each "
            f"request costs {count} L1 sectors where {least_sectors(fig)} "
            f"would do: {measured}")


def _column_walk_remedy(waste: dict, kind: str) -> str:
    verb = "write" if kind == "store" else "read"
    name, axis = waste["neighbour_index"], waste["neighbour_axis"]
    more = waste.get("more_neighbours")
    if more:
        names = " and ".join(f"`{n}`" for n in [name, *(m["index"] for m in more)])
        axes = " and ".join([axis, *(m["axis"] for m in more)])
        return (f"put the lanes on the contiguous index: let consecutive lanes {verb} "
                f"consecutive elements along {names} (from {axes} now), with threadIdx.x "
                f"on them and the index the lanes walk now on another axis, or transpose "
                f"through a shared-memory tile")
    if axis.startswith("threadIdx"):
        return (f"put the lanes on the contiguous index: swap the roles of threadIdx.x "
                f"and {axis} so that consecutive lanes {verb} consecutive values of "
                f"`{name}`, or transpose through a shared-memory tile")
    return (f"put the lanes on the contiguous index: let consecutive lanes {verb} "
            f"consecutive values of `{name}` (threadIdx.x for it, {axis} for the index "
            f"the lanes walk now), or transpose through a shared-memory tile")


def _linear(a: int, name: str, b: int) -> str:
    """``4 * `cols```, ``4 * `cols` + 4``."""
    head = name if a == 1 else f"{a} * {name}"
    if b:
        return f"{head} {'+' if b > 0 else '-'} {abs(b)}"
    return head


def _rows_text(rows: list[int | None]) -> str:
    """`` (line 41)``, `` (lines 41-42)``, `` (lines 41-45, 47)``."""
    known = sorted({r for r in rows if r is not None})
    if not known:
        return ""
    runs: list[list[int]] = []
    for r in known:
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs]
    return f" (line{'s' if len(known) > 1 else ''} {', '.join(parts)})"


def _ordinal(k: int) -> str:
    if 10 <= k % 100 <= 20:
        return f"{k}th"
    return f"{k}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _group_remedy(access, group: SiblingGroup) -> str | None:
    """The remedy when the group shows how each lane uses its record."""
    verb = {"store": "write", "load": "read"}.get(_direction(access), "update")
    stride, width = group.stride, access.width
    if access.struct_field:
        fields = []
        for a in group.members:
            if a.struct_field and a.struct_field not in fields:
                fields.append(a.struct_field)
        names = ", ".join(f"`{f}`" for f in fields)
        return (f"each lane {verb}s {names} of its record one field at a time: store the "
                f"fields in arrays of their own (SoA instead of an array of structs)")
    if stride >= 128 or stride % width:
        return None
    k, n = stride // width, len(group.members)
    if not group.covers_record():
        return None
    every = "both" if k == 2 else f"all {k}"
    phases = group.record_phases()
    if stride in _VECTORS and phases == {0}:
        return (f"each lane {verb}s {every} elements of its {stride}-byte record with {n} "
                f"scalar accesses: {verb} them with one vector access "
                f"({_VECTORS[stride]} through reinterpret_cast; the base pointer must be "
                f"{stride}-byte aligned)")
    if stride in _VECTORS and len(phases) > 1:
        return (f"each lane {verb}s {every} elements of its {stride}-byte record with {n} "
                f"scalar accesses: {verb} them with one vector access "
                f"({_VECTORS[stride]} through reinterpret_cast) if the records are "
                f"{stride}-byte aligned (here that depends on values the kernel receives), "
                f"otherwise keep each component in an array of its own (SoA)")
    pad = (" or pad the records to 16 bytes and use one float4/int4 access,"
           if stride < 16 and width == 4 else "")
    return (f"each lane {verb}s {every} elements of its {stride}-byte record with {n} "
            f"scalar accesses: keep each component in an array of its own (SoA),{pad} or "
            f"stage the block's records through shared memory with consecutive lanes "
            f"copying consecutive elements")


_VECTORS = {4: "char4/__half2", 8: "float2/int2/uint2", 16: "float4/int4/uint4"}


def _symbolic_elements(fig: dict, by: dict | None, width: int) -> str | None:
    """The lane stride in elements as the source writes it (`` `stride` ``, ``3 *
    `n` ``) when it is a run-time value: the remedy then says "every `stride`-th
    element", not the count at the smallest value the figure holds for (issue 14's
    triage, D2: "every 32nd element" for apex's run-time `stride`)."""
    if by is None or "stride_bytes_per_unit" not in fig or not width:
        return None
    unit, offset = fig["stride_bytes_per_unit"], fig["stride_bytes_offset"]
    if unit % width or offset % width:
        return None
    return _linear(unit // width, f"`{by['param']}`", offset // width)


def _remedy(access, stride, elements: str | None = None) -> str:
    verb = "write" if access.is_store and not access.is_load else "read"
    if access.struct_field:
        return (f"store `{access.struct_field}` in an array of its own (SoA instead of "
                f"an array of structs)")
    if stride is not None and stride >= 128:
        return (f"let consecutive lanes {verb} consecutive addresses, e.g. transpose "
                f"through a shared-memory tile for column walks")
    if stride is not None and stride > access.width and stride % access.width == 0:
        k = stride // access.width
        if stride in _VECTORS:
            return (f"if each lane {verb}s the {k} elements of its {stride}-byte record, "
                    f"{verb} them with one vector access ({_VECTORS[stride]} through "
                    f"reinterpret_cast) instead of {k} scalar ones; otherwise let "
                    f"consecutive lanes {verb} consecutive elements")
        if elements is not None:
            return (f"lanes {verb} elements {elements} apart (records of {elements} "
                    f"elements): keep each component in an array of its own (SoA), or "
                    f"stage the records through shared memory")
        return (f"lanes {verb} every {_ordinal(k)} element (records of {k}): keep each component "
                f"in an array of its own (SoA), or stage the records through shared memory")
    return (f"let consecutive lanes {verb} consecutive elements, or have each lane {verb} "
            f"its elements with one vector access (float2/float4)")


def least_sectors(fig: dict) -> str:
    """The sectors the request's distinct bytes need (lanes that share an address share
    them): what the message says the request could cost ("2-4" when warps differ)."""
    lo = fig.get("least_sectors_per_request", fig["ideal_sectors_per_request"])
    hi = fig.get("least_sectors_per_request_max", lo)
    return f"{lo}" if hi == lo else f"{lo}-{hi}"
