"""Shared by CL101 and CL102: the races of each rule, by later access, grouped into one
race per finding: CL102 by one-thread call, by array and barrier interval, or by
statement, with the pairs that read back a value every thread stores alike told apart
(:func:`race_groups`); CL101 by warp-synchronous exchange (one array, one kernel, one
barrier-free region). And by the sync rules: how a message names the instantiation of a
template kernel."""
from __future__ import annotations

import re
from dataclasses import dataclass

from cudalint.analysis.sync.cfg import BodyQueries, ancestors
from cudalint.analysis.sync.divergence import ThreadDependence
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
    first = f"`{text(race.first)}` ({ctx.place(race.first)})"
    second = f"`{text(race.second)}` ({ctx.place(race.second)})"
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


def relocated(ctx, finding, race: Race):
    """``finding`` when it is in the file's own text; one made on a header's device
    function (text appended to the unit: project/header_functions.py, where the engine
    reports nothing) moved to the kernel's call that ran it, saying where it is in the
    header; None when that call is not in the file's own text either (issue 13)."""
    unit = ctx.unit
    if not unit.spliced or unit.spliced_piece(finding.start) is None:
        return finding
    site = race.site or _call_in_kernel(ctx, finding.start, race)
    place = unit.header_place(finding.start)
    if site is None or place is None or unit.spliced_piece(site.start_byte) is not None:
        return None
    shown, row, col = place
    finding.start, finding.end = site.start_byte, site.end_byte
    finding.message += f" (in `{shown}` at line {row}, column {col}, called here)"
    finding.metrics["in_header"] = {"file": shown, "line": row, "column": col}
    finding.fix = None
    return finding


def _call_in_kernel(ctx, offset: int, race: Race):
    """The first call in the race's kernel, in the file's own text, of the header
    function holding unit byte ``offset`` (None: called only through other functions)."""
    model = ctx.model
    holder = next((f for f in model.functions if f.body is not None
                   and f.node.start_byte <= offset < f.node.end_byte), None)
    body = race.kernel.body
    if holder is None or body is None:
        return None
    for call in ctx.calls_named(holder.name):
        if body.start_byte <= call.start_byte < body.end_byte and \
                ctx.unit.spliced_piece(call.start_byte) is None:
            return call
    return None


def metrics(race: Race, others: int, ctx) -> dict:
    t_first, t_second = race.threads
    return {
        "array": race.array.split("@")[0],
        "write_line": ctx.own_line(race.first if race.first_write else race.second),
        "read_line": ctx.own_line(race.second if race.first_write else race.first),
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
        """The steps' lines in the file (not those in a header's appended text)."""
        return sorted({n for s in self.steps if (n := ctx.own_line(s)) is not None})


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


# ---- CL102: one finding per race, not per racing pair ----------------------------------

@dataclass
class RaceGroup:
    """The CL102 pairs of one race: ``units`` are the pairs grouped by later access (as
    :func:`races_for` yields them), joined when they share a kernel's call written for
    one thread, or a kernel instance, barrier interval and ``__shared__`` array, or the
    statement of their later access; ``same_value`` holds the ids of the pairs whose
    write stores a value every thread stores alike (:func:`same_value_store`)."""
    units: list[tuple[object, list[Race]]]
    same_value: set[int]

    @property
    def races(self) -> list[Race]:
        return [r for _, rs in self.units for r in rs]

    @property
    def site(self):
        """The one-thread call every pair ran under, or None."""
        sites = {r.site.id if r.site is not None else None for r in self.races}
        if None in sites or len(sites) != 1:
            return None
        return self.races[0].site


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _union(parent: list[int], i: int, j: int) -> None:
    a, b = _find(parent, i), _find(parent, j)
    if a != b:
        parent[max(a, b)] = min(a, b)


def _write_node(race: Race):
    return race.first if race.first_write else race.second


def _base_name(node) -> str | None:
    """``tij`` of ``tij[0]``, ``s`` of ``s[i][j]`` (None for other forms)."""
    cur = node
    while cur is not None and cur.type == "subscript_expression":
        cur = cur.child_by_field_name("argument")
    return text(cur) if cur is not None and cur.type == "identifier" else None


def _names(node) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            out.add(text(n))
        stack.extend(n.children)
    return out


_LEAVE = ("break_statement", "continue_statement", "return_statement", "goto_statement")


def same_value_store(ctx, race: Race, written: set[str]) -> bool:
    """Whether ``race`` pairs a store of a value that every thread of the block stores
    alike with a later read of it by another thread (``qij[0] = qj[3] * qi[0] + ...``
    run by every thread, then read back): the reader stored the same value there first,
    so it reads that value whichever store it sees. It stays a data race under the CUDA
    C++ memory model (two conflicting accesses of different threads that no barrier
    orders), and racecheck measured same-value stores silent (fixtures/CL107/truth.json);
    CL102 keeps such pairs but lets them add no finding of their own.

    Decided from the syntax (the run keeps no float values): a read-after-write pair
    whose write is a plain ``=`` store, in the kernel or in a device function the pair
    ran under a one-thread call of (:attr:`Race.site`), under no condition and in no
    loop that depends on the thread (nor in a loop a thread may leave a pass of early),
    whose stored expression does not depend on the
    thread (:mod:`~cudalint.analysis.sync.divergence`) and names none of ``written``
    (the arrays and pointers that the function holding the store stores to in the pairs
    of the same barrier interval: a read-modify-write ``t[0] = b[0] - t[0]`` reads what
    other threads overwrite). Names are the function's own: a pointer parameter of
    another device function is not followed to the array it points to, so a store that
    reads, through such a parameter, an array other threads overwrite with different
    values counts as same-value (the pair that overwrites it is in the race, and named
    first, all the same)."""
    if not race.first_write:
        return False
    write = race.first
    assign = write.parent
    if assign is None or assign.type != "assignment_expression":
        return False
    left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    op = assign.child_by_field_name("operator")
    if left is None or right is None or left.id != write.id or op is None or \
            text(op) != "=":
        return False
    fn = ctx.model.enclosing_function(write)
    if fn is None or fn.body is None:
        return False
    if not fn.is_kernel and race.site is None:
        return False
    if _names(right) & written:
        return False
    dep = ctx.analysis(ThreadDependence).of(fn)
    if dep.varies(right):
        return False
    for a in ancestors(write, fn.body):
        if a.type in ("while_statement", "do_statement", "for_statement") and \
                _contains(a.child_by_field_name("body") or a, _LEAVE):
            return False        # a thread may skip the store and read in a later pass
        if a.type in ("if_statement", "while_statement", "do_statement", "for_statement",
                      "switch_statement", "conditional_expression"):
            cond = a.child_by_field_name("condition")
            if a.type == "for_statement":
                if cond is not None and dep.varies(cond) or \
                        any(dep.varies(a.child_by_field_name(f)) for f in
                            ("initializer", "update") if a.child_by_field_name(f)):
                    return False
            elif cond is None or dep.varies(cond):
                return False
        elif a.type == "for_range_loop":
            return False
    return True


def race_groups(ctx) -> list[RaceGroup]:
    """CL102's pairs grouped into races (:class:`RaceGroup`), in the order of their
    first later access. Pairs whose writes all store a same-value (see
    :func:`same_value_store`) join another race of their barrier interval: they are
    formally races, but reported as a part of that one (or of one such race)."""
    units = list(races_for(ctx, "CL102"))
    if not units:
        return []
    n = len(units)
    parent = list(range(n))
    owner: dict[tuple, int] = {}
    written: dict[tuple, set[str]] = {}

    def interval(r: Race) -> tuple:
        return (r.kernel.node.id, r.kernel.instance, r.interval)

    def holder(r: Race, node) -> tuple:
        fn = ctx.model.enclosing_function(node)
        return interval(r) + (fn.node.id if fn is not None else None,)

    for races in (rs for _, rs in units):
        for r in races:
            w = _write_node(r)
            name = _base_name(w)
            if name:
                written.setdefault(holder(r, w), set()).add(name)
    for i, (node, races) in enumerate(units):
        sites = {r.site.id if r.site is not None else None for r in races}
        keys: list[tuple] = []
        if None not in sites and len(sites) == 1:
            keys.append(("call", races[0].site.id, races[0].kernel.instance))
        else:
            stmt = statement_of(node)
            if stmt is not None:
                keys.append(("stmt", races[0].kernel.node.id, races[0].kernel.instance,
                             stmt.id))
            keys.extend(("array",) + interval(r) + (r.array,) for r in races)
        for k in keys:
            if k in owner:
                _union(parent, owner[k], i)
            else:
                owner[k] = i
    same: set[int] = set()
    for _, races in units:
        for r in races:
            if same_value_store(ctx, r, written.get(holder(r, _write_node(r)), set())):
                same.add(id(r))
    members: dict[int, list[int]] = {}
    for i in range(n):
        members.setdefault(_find(parent, i), []).append(i)
    # a race of same-value pairs only joins a race of its barrier interval that has
    # other pairs (else the first race of only such pairs there)
    only_same = {root: all(id(r) in same for i in idx for r in units[i][1])
                 for root, idx in members.items()}
    target: dict[tuple, int] = {}
    for root in sorted(members):
        if not only_same[root]:
            for i in members[root]:
                for r in units[i][1]:
                    target.setdefault(interval(r), root)
    for root in sorted(members):
        if only_same[root]:
            for i in members[root]:
                for r in units[i][1]:
                    target.setdefault(interval(r), root)
    for root in sorted(members):
        if only_same[root]:
            r = units[members[root][0]][1][0]
            _union(parent, target[interval(r)], root)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(_find(parent, i), []).append(i)
    return [RaceGroup([units[i] for i in idx], same) for _, idx in sorted(groups.items())]
