"""Mismatched block barriers: threads that skip a barrier and then wait at another one.

Since Volta a block barrier completes when every thread of the block that has not
exited has reached it (CUDA Programming Guide, "Independent Thread Scheduling"). So the
threads that skip a barrier break the program only when they go on to wait at *another*
barrier (or at the same one in a later iteration) while the others wait at the first:
synccheck then reports "divergent thread(s) in block", and a block-strided loop with a
barrier followed by a block sum hangs on an H100 (fixtures/CL103/truth.json). Threads
that skip it and exit leave a defined program.

One block run (:class:`~cudalint.analysis.sync.block_run.BlockRun`) logs every block
barrier it executes with the threads that arrive, in run order. Each thread's barriers
form a sequence; two threads are matched while one sequence is a prefix of the other
(the shorter one exited, or the run ended). The first event that holds one thread of a
pair and not the other is where they part: if the thread left out arrives at any
barrier later in the run, the two wait at different barriers, and both barriers are
mismatched. Threads are kept in classes of equal sequences (bit masks), so the cost is
events x classes, not events x threads.

Only what the run knows counts: the log is read up to its first uncertain event (a
barrier reached while some live thread's path is unknown, or a call that may
synchronize), so a mismatch is never inferred from a guessed path.
"""
from __future__ import annotations

from tree_sitter import Node


def mismatched_barriers(events: list) -> dict[int, tuple[Node, Node]]:
    """barrier node id -> (barrier, the barrier threads that skip it wait at instead),
    from a run's log of ``(barrier node, arriving threads' mask, certain)`` entries
    (None: a call that may synchronize)."""
    known = []
    for e in events:
        if e is None or not e[2]:
            break
        known.append(e)
    if len(known) < 2:
        return {}
    # later[k]: the threads that arrive at some barrier after event k
    later = [0] * len(known)
    acc = 0
    for k in range(len(known) - 1, -1, -1):
        later[k] = acc
        acc |= known[k][1]
    out: dict[int, tuple[Node, Node]] = {}
    classes = [-1]          # every thread (exited ones never arrive again)
    pairs = 0
    for k, (node, act, _) in enumerate(known):
        split = []
        for c in classes:
            went, skipped = c & act, c & ~act
            if went and skipped:
                left = skipped & later[k]
                if left and pairs < _PAIRS:
                    pairs += 1
                    _pair_up(known, k, went & -went, left & -left, out)
                split.append(went)
                split.append(skipped)
            else:
                split.append(c)
        classes = split
    return out


_PAIRS = 64             # parting points followed per run
_POSITIONS = 256        # barriers compared after each


def _pair_up(known: list, k: int, one: int, other: int, out: dict) -> None:
    """Threads ``one`` (at event ``k``) and ``other`` (which skipped it) parted at event
    ``k``: compare their next barriers position by position; every pair of different
    events is a pair of mismatched barriers (one node met in two different iterations
    counts: the others wait at it in this one)."""
    mine = (e for e in known[k:] if e[1] & one)
    theirs = (e for e in known[k + 1:] if e[1] & other)
    for _, a, b in zip(range(_POSITIONS), mine, theirs):
        if a is b:
            return
        out.setdefault(a[0].id, (a[0], b[0]))
        out.setdefault(b[0].id, (b[0], a[0]))
