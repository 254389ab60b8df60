"""``loops.bounded_trip``: at most how many times a ``for`` loop with constant bounds
runs (the weight of a loop's accesses in CL201/CL202's hot-path condition). A loop from
a negative start, or to an inclusive bound, runs more often than its bound alone says:
``for (j = -8; j <= 8; ++j)`` is 17 iterations (it was read as 8)."""
from __future__ import annotations

import pytest

from cudalint.analysis.memory.loops import bounded_trip
from cudalint.model.consteval import eval_int
from cudalint.parse import captures, parse, text

LANES = {"ty": tuple(range(8)), "ty - 8": tuple(range(-8, 0))}     # by lane


def _int_values(node):
    name = text(node)
    if name in LANES:
        return LANES[name]
    v = eval_int(name, {})
    return (v,) if v is not None else None


def _trip(header: str) -> int | None:
    tree = parse(f"__global__ void k(float* a) {{ int j; {header} a[0] += 1; }}".encode())
    loop = captures("(for_statement) @l", tree.root_node)["l"][0]
    return bounded_trip(_int_values, loop)


@pytest.mark.parametrize("header, trips", [
    ("for (j = -8; j <= 8; ++j)", 17),
    ("for (int j = -8; j < 8; j++)", 16),
    ("for (int i = 0; i <= 8; ++i)", 9),
    ("for (int i = 0; i < 32; i += 8)", 4),
    ("for (int i = 4; i < 32; i += 8)", 4),     # 4, 12, 20, 28
    ("for (int i = 1; i < 8; ++i)", 7),
    ("for (int i = -3; i != 3; ++i)", 6),
    ("for (int r = ty; r < 32; r += 8)", 4),    # lanes start at 0..7: lane 0 runs 4
    ("for (int r = ty - 8; r < 32; r += 8)", 5),    # lane 0 starts at -8
    ("for (int r = 7; r >= 0; r -= 2)", 4),     # decreasing: 7, 5, 3, 1
    ("for (int i = 9; i < 8; ++i)", 0),
])
def test_trip_count_from_start_to_bound(header, trips):
    assert _trip(header) == trips


def test_a_counter_other_than_the_one_started_counts_from_zero():
    # the header starts another variable: the counter's start is not known
    assert _trip("for (int i = -8; j < 8; ++j)") == 8
