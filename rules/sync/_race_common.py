"""Shared by CL101 and CL102: one finding per later access of a racing pair."""
from __future__ import annotations

from cudalint.analysis.preproc import not_for_modern_cuda
from cudalint.analysis.races import Race, RaceAnalysis
from cudalint.parse import text


def races_for(ctx, rule: str):
    """The races of ``rule`` grouped by their later access: (later node, [races])."""
    facts = ctx.analysis(RaceAnalysis)
    by_second: dict[int, list[Race]] = {}
    for race in facts.races:
        by_second.setdefault(race.second.id, []).append(race)
    for races in by_second.values():
        # a later access that races with another warp is CL102 (a __syncthreads() fixes
        # every pair); only when all its partners are lanes of its own warp is it CL101
        code = "CL102" if any(r.cross_warp for r in races) else "CL101"
        if code != rule:
            continue
        races = [r for r in races if r.cross_warp == (code == "CL102")]
        # prefer a write -> read pair, then the nearest earlier access
        races.sort(key=lambda r: (not r.first_write, -r.first.start_byte))
        node = races[0].second
        if not_for_modern_cuda(node):
            continue
        yield node, races


def line(node) -> int:
    return node.start_point[0] + 1


def describe(race: Race) -> tuple[str, str, str]:
    """(write expression + line, read expression + line, the example threads)."""
    first = f"`{text(race.first)}` (line {line(race.first)})"
    second = f"`{text(race.second)}` (line {line(race.second)})"
    t_first, t_second = race.threads
    if race.first_write:
        write, read = first, second
        example = f"thread {t_second} reads what thread {t_first} wrote"
    else:
        write, read = second, first
        example = f"thread {t_second} overwrites what thread {t_first} read"
    return write, read, example


def metrics(race: Race, others: int) -> dict:
    t_first, t_second = race.threads
    return {
        "array": race.array.split("@")[0],
        "write_line": line(race.first if race.first_write else race.second),
        "read_line": line(race.second if race.first_write else race.first),
        "hazard": "read-after-write" if race.first_write else "write-after-read",
        "threads": [t_first, t_second],
        "byte_offset": race.address,
        "pairs": others,
        "block": list(race.block),
        "block_source": race.block_source,
    }


def statement_of(node):
    """The statement holding ``node`` directly inside a { } block, or None."""
    cur = node
    while cur.parent is not None and cur.parent.type != "compound_statement":
        if cur.parent.type in ("function_definition", "lambda_expression"):
            return None
        cur = cur.parent
    return cur if cur.parent is not None else None


def clause(race: Race, who: str) -> str:
    """"`s[tid + 8]` (line 14) reads `s` written at `s[tid]` (line 13) by <who>"."""
    write, read, _ = describe(race)
    arr = race.array.split("@")[0]
    if race.first_write:
        return f"{read} reads `{arr}` written at {write} by {who}"
    return f"{write} overwrites `{arr}` elements that {who} read at {read}"
