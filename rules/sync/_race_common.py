"""Shared by CL101 and CL102: the races of each rule, by later access (CL102) or by
warp-synchronous exchange (CL101: one array, one kernel, one barrier-free region); and by
the sync rules: how a message names the instantiation of a template kernel."""
from __future__ import annotations

import re
from dataclasses import dataclass

from cudalint.analysis.sync.cfg import BodyQueries
from cudalint.model.instances import mention
from cudalint.model.preproc import not_for_modern_cuda
from cudalint.analysis.sync.races import Race, RaceAnalysis
from cudalint.analysis.sync.warp_reach import partial_warp_reason
from cudalint.parse import text


def instance_mentions(ctx, fn) -> list[str]:
    """``, in instantiation `k<3>``` for each instantiation the project makes of template
    kernel ``fn`` (an analysis that reads the kernel as written holds for each; the
    engine says alike findings once, naming them all); [""] when ``fn`` is no template
    kernel, is an instantiation already, or some launch leaves its arguments unknown."""
    if fn.instance:
        return [f", in {mention(fn.instance)}"]
    if not fn.is_kernel or not fn.is_template:
        return [""]
    from cudalint.model.instances import Instances
    insts = ctx.analysis(Instances).of(fn)
    if not insts or any(not i.instance for i in insts):
        return [""]
    return [f", in {mention(i.instance)}" for i in insts]


def races_for(ctx, rule: str):
    """The races of ``rule`` grouped by their later access: (later node, [races])."""
    facts = ctx.analysis(RaceAnalysis)
    by_second: dict[int, list[Race]] = {}
    for race in facts.races:
        by_second.setdefault((race.second.id, race.kernel.instance), []).append(race)
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
        if not_for_modern_cuda(node, ctx):
            continue
        yield node, races


def line(node) -> int:
    """The node's line in the unit (for ordering; messages use ``ctx.line``, the file's)."""
    return node.start_point[0] + 1


def describe(race: Race, ctx) -> tuple[str, str, str]:
    """(write expression + line, read expression + line, the example threads)."""
    first = f"`{text(race.first)}` (line {ctx.line(race.first)})"
    second = f"`{text(race.second)}` (line {ctx.line(race.second)})"
    t_first, t_second = race.threads
    if race.first_write:
        write, read = first, second
        example = f"thread {t_second} reads what thread {t_first} wrote"
    else:
        write, read = second, first
        example = f"thread {t_second} overwrites what thread {t_first} read"
    if race.kernel.instance:        # a template kernel as a launch instantiates it
        example += f", in {mention(race.kernel.instance)}"
    return write, read, example


def metrics(race: Race, others: int, ctx) -> dict:
    t_first, t_second = race.threads
    return {
        "array": race.array.split("@")[0],
        "write_line": ctx.line(race.first if race.first_write else race.second),
        "read_line": ctx.line(race.second if race.first_write else race.first),
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


def clause(race: Race, who: str, ctx) -> str:
    """"`s[tid + 8]` (line 14) reads `s` written at `s[tid]` (line 13) by <who>"."""
    write, read, _ = describe(race, ctx)
    arr = race.array.split("@")[0]
    if race.first_write:
        return f"{read} reads `{arr}` written at {write} by {who}"
    return f"{write} overwrites `{arr}` elements that {who} read at {read}"


# ---- CL101: one finding per warp-synchronous exchange -----------------------------------

@dataclass
class Exchange:
    """The lane-to-lane races of one kernel on one ``__shared__`` array within one
    barrier-free stretch of code: ``races`` (every pair), ``steps`` (the statements of
    their later accesses, in source order), ``race`` (the one the message describes)."""
    races: list[Race]
    steps: list
    race: Race

    @property
    def node(self):
        return self.race.second

    def lines(self, ctx) -> list[int]:
        """The steps' lines in the file."""
        return sorted({ctx.line(s) for s in self.steps})


def _span(race: Race) -> tuple[int, int]:
    """Bytes from the earlier to the later of the statements holding the two accesses
    (a pair across loop iterations runs backwards in the source)."""
    nodes = [statement_of(race.first) or race.first, statement_of(race.second) or race.second]
    return min(n.start_byte for n in nodes), max(n.end_byte for n in nodes)


def warp_exchanges(ctx) -> list[Exchange]:
    """CL101's races grouped: per kernel and array, pairs whose statement spans overlap,
    or follow one another with no barrier, call or asm statement between them, are one
    exchange (the steps of a warp-synchronous reduction or scan)."""
    by_array: dict[tuple[int, str], list[Race]] = {}
    for _, races in races_for(ctx, "CL101"):
        for r in races:
            by_array.setdefault((r.kernel.node.id, r.kernel.instance, r.array), []).append(r)
    queries = ctx.analysis(BodyQueries)
    out: list[Exchange] = []
    for races in by_array.values():
        kernel = races[0].kernel
        caps = queries(kernel.body)
        stops = sorted(n.start_byte for n in caps.get("call", []) + caps.get("asm", []))
        races.sort(key=_span)
        groups: list[tuple[int, list[Race]]] = []
        for r in races:
            start, end = _span(r)
            if groups:
                last_end, members = groups[-1]
                if start < last_end or not any(last_end <= b < start for b in stops):
                    members.append(r)
                    groups[-1] = (max(last_end, end), members)
                    continue
            groups.append((end, [r]))
        for _, members in groups:
            steps: dict[int, object] = {}
            for r in members:
                st = statement_of(r.second) or r.second
                steps.setdefault(st.id, st)
            # the earliest later access, a write -> read pair first
            race = min(members, key=lambda r: (line(r.second), not r.first_write,
                                               r.second.start_byte, -r.first.start_byte))
            out.append(Exchange(members, sorted(steps.values(), key=lambda n: n.start_byte),
                                race))
    out.sort(key=lambda e: e.node.start_byte)
    return out


def line_ranges(lines: list[int]) -> str:
    """[19, 20, 21, 25] -> "19-21, 25"."""
    runs: list[list[int]] = []
    for x in lines:
        if runs and x == runs[-1][1] + 1:
            runs[-1][1] = x
        else:
            runs.append([x, x])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


# ---- CL101's fix: every racing step split, a __syncwarp() between steps ----------------

_COMPOUND = ("+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")
_SIMPLE = ("identifier", "subscript_expression", "call_expression", "number_literal",
           "parenthesized_expression", "field_expression", "char_literal")
_IMPURE = ("call_expression", "assignment_expression", "update_expression",
           "subscript_expression", "pointer_expression", "comma_expression",
           "gnu_asm_expression", "lambda_expression")


def _contains(node, types) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in types:
            return True
        stack.extend(n.children)
    return False


def _inside(node, outer) -> bool:
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def _assignment_of(stmt):
    """``L op= R`` of an expression statement ``L op= R;`` (or None)."""
    if stmt.type != "expression_statement":
        return None
    kids = [c for c in stmt.named_children if c.type != "comment"]
    if len(kids) != 1 or kids[0].type != "assignment_expression":
        return None
    return kids[0]


def split_step(stmt, races: list[Race], name: str, indent: str) -> str | None:
    """``stmt`` (``L op= R;`` or ``if (c) L op= R;``) rewritten so that every lane reads
    before any lane writes: the value into ``name``, ``__syncwarp()``, the store. None
    when its racing accesses are not a store to ``L`` and reads inside ``R``, ``L`` or
    the condition could change meaning when evaluated twice, or the form is another."""
    cond = None
    body = stmt
    if stmt.type == "if_statement":
        cons = stmt.child_by_field_name("consequence")
        c = stmt.child_by_field_name("condition")
        if stmt.child_by_field_name("alternative") is not None or cons is None or \
                c is None or _contains(c, _IMPURE) or c.type == "condition_clause" and \
                any(k.type in ("declaration", "init_statement") for k in c.named_children):
            return None
        cond, body = c, cons
    assign = _assignment_of(body)
    if assign is None:
        return None
    left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    op = assign.child_by_field_name("operator")
    op = text(op) if op is not None else ""
    if left is None or right is None or (op != "=" and op not in _COMPOUND) or \
            _contains(left, ("call_expression", "assignment_expression",
                             "update_expression", "comma_expression")):
        return None
    for r in races:
        for node, write in ((r.first, r.first_write), (r.second, not r.first_write)):
            if not _inside(node, stmt):
                continue
            if write and node.id != left.id or not write and not _inside(node, right):
                return None
    rhs = text(right) if right.type in _SIMPLE else f"({text(right)})"
    value = rhs if op == "=" else f"{text(left)} {op[:-1]} {rhs}"
    nl = "\n" + indent
    if cond is None:
        return (f"auto {name} = {value};{nl}__syncwarp();{nl}"
                f"{text(left)} = {name};")
    if op == "=":
        return None          # the temporary's type needs `L op R` (a prvalue)
    cond_text = text(cond)
    if not cond_text.startswith("("):
        cond_text = f"({cond_text})"
    return (f"decltype({value}) {name}{{}};{nl}if {cond_text} {name} = {value};{nl}"
            f"__syncwarp();{nl}if {cond_text} {text(left)} = {name};")


def exchange_fix(ctx, ex: Exchange, taken: set[str]):
    """(description, edits) that put a ``__syncwarp()`` between every racing pair of
    ``ex``, or None when one of its statements cannot be rewritten or is not reached by
    whole warps (:func:`~cudalint.analysis.sync.warp_reach.partial_warp_reason`). Temporaries are
    named ``<array>_step<n>``, numbered per kernel (not by line, so that a fix does not
    change when lines move) past the names in ``taken`` (updated: the fixes of one run
    may all be applied together)."""
    data = ctx.unit.data if isinstance(ctx.unit.data, bytes) else ctx.unit.data.encode()
    kernel_text = text(ex.race.kernel.node)
    array = ex.race.array.split("@")[0]
    names = []
    split: dict[int, tuple] = {}
    before: dict[int, object] = {}
    for r in ex.races:
        a, b = statement_of(r.first), statement_of(r.second)
        if a is None or b is None:
            return None
        if a.id == b.id:
            split.setdefault(b.id, (b, []))[1].append(r)
        else:
            before[b.id] = b
    edits = []
    for sid in sorted(set(split) | set(before), key=lambda i: (split.get(i) or
                                                               (before[i],))[0].start_byte):
        stmt = split[sid][0] if sid in split else before[sid]
        # the __syncwarp() goes beside the statement: every live lane of a warp must
        # reach it (a full mask that part of a warp reaches is undefined); else no fix
        if partial_warp_reason(ctx, ex.race.kernel, stmt, ex.race.block) is not None:
            taken.difference_update(names)
            return None
        line_start = data.rfind(b"\n", 0, stmt.start_byte) + 1
        indent = data[line_start:stmt.start_byte]
        if indent.strip():
            return None
        ind = indent.decode()
        content = ""
        if sid in before:
            content = "__syncwarp();\n" + ind
        if sid in split:
            n = 1
            while f"{array}_step{n}" in taken or \
                    re.search(rf"\b{array}_step{n}\b", kernel_text):
                n += 1
            name = f"{array}_step{n}"
            taken.add(name)
            names.append(name)
            rewritten = split_step(stmt, split[sid][1], name, ind)
            if rewritten is None:
                taken.difference_update(names)
                return None
            edits.append((stmt.start_byte, stmt.end_byte, content + rewritten))
        else:
            edits.append((stmt.start_byte, stmt.start_byte, content))
    if not edits:
        return None
    if split:
        what = ("Read each step's value into a temporary, `__syncwarp()`, then store it "
                "(and `__syncwarp()` between steps)")
    else:
        what = "Insert `__syncwarp();` between the accesses"
    return what, edits
