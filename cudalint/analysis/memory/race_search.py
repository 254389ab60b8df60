"""The byte search of CL108's race finder (global_races): given each access of a kernel
evaluated in blocks 0 and 1 (byte offset per column of the lane engine, width, whether
the address reads a sampled size, buffer, uniform), the first access that meets each
store for two different threads, in one block or across the two.

Each store's bytes are indexed per buffer, sample and byte, and every access looks its
own bytes up; the work is kept to what can meet: bytes a grain at a time (the gcd of a
buffer's offsets and widths: 4 for whole ``float`` accesses), and between blocks only
the samples where a store's and an access's spans overlap (blocks 0 and 1 of an
elementwise kernel share no byte). Same pairs and bytes as a byte-by-byte search
(fuzz seed 36's fix_cuda d1f8d7e713: 504 elementwise kernels, 10 ms each before).
"""
from __future__ import annotations

from itertools import groupby
from math import gcd

from tree_sitter import Node

from cudalint.analysis.memory.lane_values import N_SAMPLES
from cudalint.parse import text

MAX_BUCKET = 8
_NONE, _MIXED = object(), object()      # _meet_all's bucket threads: none yet, several


def search(evaluated, cols, same_block: bool, cross_block: bool, up) -> dict:
    """store index -> (other index, thread of the store, thread of the other, blocks,
    byte): for each store the first other access (in source order) that meets it, a
    pair within one block first (the neighbour the message is about), then blocks."""
    found: dict[int, tuple] = {}
    if not evaluated:
        return found
    shape = _Shape(evaluated, cols)
    if same_block:
        _meet_all(evaluated, cols, 0, 0, False, found, up, shape)
    if cross_block:
        _meet_all(evaluated, cols, 0, 1, True, found, up, shape)
        _meet_all(evaluated, cols, 1, 0, True, found, up, shape)
    return found


class _Shape:
    """What bounds the work of ``_meet_all`` before it indexes a byte: the columns of
    each sample (cols are sample-major), each access's span of bytes per sample and
    block, and per buffer the grain its accesses are made of (``_grains``)."""

    def __init__(self, evaluated, cols):
        self.runs: list[tuple[int, int, int]] = []         # (sample, first col, end)
        c = 0
        for s, run in groupby(col[0] for col in cols):
            n = sum(1 for _ in run)
            self.runs.append((s, c, c + n))
            c += n
        self.samples = sorted({s for s, _, _ in self.runs})
        self._cols = cols
        self.grain = _grains(evaluated)
        self._evaluated = evaluated
        self._spans: dict[tuple[int, int], dict[int, tuple[int, int]]] = {}
        self._regions: dict[str, list[int]] = {}
        for i, e in enumerate(evaluated):
            self._regions.setdefault(e[1], []).append(i)

    def own_elements(self, region: str, s: int, blk: int) -> bool:
        """Every access of ``region`` in sample ``s`` of block ``blk`` is each thread's
        own element: all of them have the same address in each column, of one width,
        and no two threads' bytes overlap. Then every byte's bucket holds one thread,
        which only that thread looks up: within the block nothing meets there."""
        cols = [c for t, a, b in self.runs if t == s for c in range(a, b)]
        first = None
        for i in self._regions.get(region, ()):
            off, width = self._evaluated[i][4][blk][0], self._evaluated[i][4][blk][1]
            mine = [off[c] for c in cols]
            if first is None:
                first, w = mine, width
            elif mine != first or width != w:
                return False
        if first is None:
            return True
        if len({self._cols[c][1] for c in cols}) != len(cols):
            return False                    # a thread in two columns
        at = sorted(o for o in first if o is not None)
        return all(b - a >= w for a, b in zip(at, at[1:]))

    def spans(self, i: int, blk: int) -> dict[int, tuple[int, int]]:
        """{sample: (first byte, end)} of entry ``i`` in block ``blk``: the bytes of the
        columns that run it."""
        got = self._spans.get((i, blk))
        if got is None:
            val = self._evaluated[i][4][blk]
            got = self._spans[i, blk] = self._span_of(val[0], val[1])
        return got

    def _span_of(self, off: list, width: int) -> dict[int, tuple[int, int]]:
        out: dict[int, tuple[int, int]] = {}
        for s, a, b in self.runs:
            seg = [o for o in off[a:b] if o is not None]
            if seg:
                lo, hi = min(seg), max(seg) + width
                if s in out:
                    lo, hi = min(lo, out[s][0]), max(hi, out[s][1])
                out[s] = (lo, hi)
        return out


def _meet_all(evaluated, cols, s_blk: int, x_blk: int, cross: bool, found: dict, up,
              shape: _Shape):
    """Stores of block ``s_blk`` against every access of block ``x_blk`` through one
    index of the stores' bytes (per buffer, sample and byte; a bucket keeps two threads
    of each of at most MAX_BUCKET stores, enough to find a pair). Bytes are taken a
    grain at a time (``_grains``): within a grain every bucket is the same. A buffer's
    sample whose stores span no byte an access of the other block spans is neither
    indexed nor looked up (blocks 0 and 1 of an elementwise kernel: nothing to meet,
    and each of 504 kernels of fuzz seed 36's d1f8d7e713 indexed 288 columns twice)."""
    def eligible(e) -> bool:
        return not cross or (not e[5] and _per_block(e[4]))
    grain, runs = shape.grain, shape.runs
    last = N_SAMPLES - 1
    # access -> the samples it is looked up in (a sampled size or pitch is compared at
    # its largest sample only: every entry is skipped for the others, below)
    met: dict[int, list[int]] = {
        j: [s for s in shape.samples if not x[4][x_blk][2] or s == last]
        for j, x in enumerate(evaluated) if eligible(x)}
    if cross:
        # within one block the spans meet (a thread's own element)
        hull: dict[tuple[str, int], tuple[int, int]] = {}      # the stores' bytes
        for i, e in enumerate(evaluated):
            if not e[2] or i in found or not eligible(e):
                continue
            for s, (lo, hi) in shape.spans(i, s_blk).items():
                h = hull.get((e[1], s))
                hull[e[1], s] = (lo, hi) if h is None else (min(lo, h[0]), max(hi, h[1]))
        for j in list(met):
            span, region = shape.spans(j, x_blk), evaluated[j][1]
            met[j] = [s for s in met[j] if s in span and (region, s) in hull and
                      span[s][0] < hull[region, s][1] and hull[region, s][0] < span[s][1]]
            if not met[j]:
                del met[j]
        useful = {(evaluated[j][1], s) for j, got in met.items() for s in got}
    else:
        # within one block: where every access of a buffer is each thread's own element
        # (``y[i] = f(y[i])``), nothing meets
        useful = {(r, s) for r in {e[1] for e in evaluated} for s in shape.samples
                  if not shape.own_elements(r, s, s_blk)}
        for j in list(met):
            met[j] = [s for s in met[j] if (evaluated[j][1], s) in useful]
            if not met[j]:
                del met[j]
    index: dict[tuple, list[tuple[int, int]]] = {}
    # the one thread of a bucket whose entries all have it (_MIXED: several): within a
    # block such a bucket meets no access of that thread, and a kernel of 19 stores
    # `y[i] = ...` of the same element had each access walk 16 entries of its own
    # thread per byte (fuzz seed 32's build_setup 3e8cb09477: 15 s)
    solo: dict[tuple, object] = {}
    for i, e in enumerate(evaluated):
        if not e[2] or i in found or not eligible(e):
            continue
        off, width = e[4][s_blk][0], e[4][s_blk][1]
        step = grain[e[1]]
        for c in [c for s, a, b in runs if (e[1], s) in useful for c in range(a, b)]:
            o = off[c]
            if o is None:
                continue
            s, t = cols[c]
            for k in range(o, o + width, step):
                key = (e[1], s, k)
                bucket = index.setdefault(key, [])
                # two threads of a store are enough to find a pair with any third
                if len(bucket) < 2 * MAX_BUCKET and (
                        len(bucket) < 2 or bucket[-2][0] != i):
                    bucket.append((i, t))
                    one = solo.get(key, _NONE)
                    if one is _NONE:
                        solo[key] = t
                    elif one is not _MIXED and one != t:
                        solo[key] = _MIXED
    if not index:
        return
    for j, x in enumerate(evaluated):
        if j not in met:
            continue
        off, width, x_par, _, x_uni = x[4][x_blk]
        step = grain[x[1]]
        for c in [c for s, a, b in runs if s in met[j] for c in range(a, b)]:
            o = off[c]
            if o is None:
                continue
            s, t = cols[c]
            for k in range(o, o + width, step):
                if not cross:
                    one = solo.get((x[1], s, k), _MIXED)
                    if one is not _MIXED and one == t:
                        continue        # every entry is this thread's own (below)
                for i, ta in index.get((x[1], s, k), ()):
                    if i in found or (i == j and not evaluated[i][3]) or \
                            (not cross and ta == t):
                        continue
                    e_val = evaluated[i][4][s_blk]
                    # a sampled size or pitch: compared at its largest sample only
                    if (e_val[2] or x_par) and s != last:
                        continue
                    if e_val[4] and x_uni:
                        continue    # one address for every thread on both sides
                    if x[2] and i != j and _same_constant(evaluated[i][0], x[0], up):
                        continue
                    found[i] = (j, ta, t, (s_blk, x_blk), k)


def _grains(evaluated) -> dict[str, int]:
    """Buffer -> the largest grain its accesses are made of: the gcd of their byte
    offsets (in both blocks) and widths (4 where every access is a whole aligned ``float``).
    Every access covers whole grains, so the bytes of one grain meet the same accesses
    in the same order: indexing and looking up the first byte of each grain finds the
    same pairs, and the same first byte, as every byte does, in a grain-th of the work
    (fuzz seed 36's fix_cuda d1f8d7e713: 504 kernels of float accesses, 10 ms each)."""
    out: dict[str, int] = {}
    for e in evaluated:
        g = out.get(e[1], 0)
        for off, width, *_ in e[4]:
            g = gcd(g, width, *filter(None, off))
        out[e[1]] = g
    return {region: g or 1 for region, g in out.items()}


def _per_block(val) -> bool:
    """The address moves with blockIdx: a kernel whose addresses do not is written for
    one block (several blocks would all redo the same elements)."""
    return val[0][0] != val[1][0]


def _same_constant(a: Node, b: Node, up) -> bool:
    """Two plain stores of one constant (``mask[i] = false`` and ``mask[i + 1] =
    false``): whichever lands last, the element holds that value."""
    values = []
    for node in (a, b):
        parent = up(node)
        while parent is not None and parent.type == "parenthesized_expression":
            parent = up(parent)
        if parent is None or parent.type != "assignment_expression" or \
                text(parent.child_by_field_name("operator")) != "=":
            return False
        right = parent.child_by_field_name("right")
        if right.type not in ("number_literal", "true", "false", "char_literal"):
            return False
        values.append(text(right))
    return values[0] == values[1]
