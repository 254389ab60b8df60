"""The names a Python body binds, and where: what a string resolution looks names up in.

A :class:`Scope` is a module, class or function body. Its bindings, collected on first
use, record for each name the line, the value expression (a function or class name is
bound to its ``def``), whether it is a ``+=``, whether the statement belongs to the
body itself (``direct``: not under ``if``/``for``/``try``), and, for a binding inside
one ``for`` loop that is itself a statement of the body, that loop (``loop``): the
``+=`` of a loop over constants can then be unrolled (resolve.py). :func:`one_block`
and :func:`branch_chains` say which bindings a read sees when a name is rebound in one
statement list, or extended with ``+=`` in the two branches of an ``if``/``else``.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass
class Binding:
    line: int
    value: ast.AST | None
    aug: bool
    direct: bool             # a statement of the scope's own body (not under if/for/try)
    loop: ast.For | None = None   # the one for loop (a direct statement) it sits in
    block: int = 0           # which statement list it is in (id of the list)
    looped: bool = False     # inside a for/while body, at any depth
    block_end: int = 0       # last line of that statement list


class Scope:
    """A module, class or function body; its bindings are collected on first use."""

    def __init__(self, node: ast.AST, parent: "Scope | None"):
        self.node = node
        self.parent = parent
        self._bindings: dict[str, list[Binding]] | None = None
        self._params: set[str] = set()

    @property
    def params(self) -> set[str]:
        self.bindings        # noqa: B018 (collects)
        return self._params

    @property
    def bindings(self) -> dict[str, list[Binding]]:
        if self._bindings is None:
            self._bindings = {}
            node = self.node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = node.args
                for arg in a.posonlyargs + a.args + a.kwonlyargs:
                    self._params.add(arg.arg)
                if a.vararg:
                    self._params.add(a.vararg.arg)
                if a.kwarg:
                    self._params.add(a.kwarg.arg)
                body = node.body if isinstance(node.body, list) else []
            else:
                body = getattr(node, "body", [])
            self._looped = False
            self._collect(body, direct=True, loop=None)
        return self._bindings

    def _collect(self, stmts, direct: bool, loop: ast.For | None) -> None:
        end = max((getattr(st, "end_lineno", 0) or 0 for st in stmts), default=0)
        for st in stmts:
            self._block, self._block_end = id(stmts), end
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._bind(st.name, st.lineno, st, direct, loop)   # shadows any string
                continue
            if isinstance(st, ast.Assign):
                for t in st.targets:
                    if isinstance(t, ast.Name):
                        self._bind(t.id, st.lineno, st.value, direct, loop)
                    else:
                        for n in ast.walk(t):
                            if isinstance(n, ast.Name):
                                self._bind(n.id, st.lineno, None, direct, loop)
            elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                if st.value is not None:
                    self._bind(st.target.id, st.lineno, st.value, direct, loop)
            elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
                if isinstance(st.op, ast.Add):
                    self._bindings.setdefault(st.target.id, []).append(
                        Binding(st.lineno, st.value, True, direct, loop, self._block,
                                self._looped, self._block_end))
                else:
                    self._bind(st.target.id, st.lineno, None, direct, loop)
            elif isinstance(st, (ast.For, ast.AsyncFor)):
                for n in ast.walk(st.target):
                    if isinstance(n, ast.Name):
                        self._bind(n.id, st.lineno, None, False, None)
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                for alias in st.names:   # bound to the import: only a reason reads it
                    self._bind((alias.asname or alias.name).split(".")[0], st.lineno, st,
                               direct, loop)
            for name in ("body", "orelse", "finalbody"):
                sub = getattr(st, name, None)
                if isinstance(sub, list) and not isinstance(
                        st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    # the body of a for loop that is a direct statement: still one loop
                    inner = st if (direct and name == "body" and isinstance(st, ast.For)
                                   and not st.orelse) else None
                    was = self._looped
                    self._looped = was or (name == "body" and isinstance(
                        st, (ast.For, ast.AsyncFor, ast.While)))
                    self._collect(sub, direct=False, loop=inner)
                    self._looped = was
            for h in getattr(st, "handlers", []) or []:
                self._collect(h.body, direct=False, loop=None)
            if isinstance(st, ast.With) or isinstance(st, ast.AsyncWith):
                for item in st.items:
                    if item.optional_vars is not None:
                        for n in ast.walk(item.optional_vars):
                            if isinstance(n, ast.Name):
                                self._bind(n.id, st.lineno, None, False, None)
            if hasattr(ast, "Match") and isinstance(st, ast.Match):
                for case in st.cases:
                    self._collect(case.body, direct=False, loop=None)

    def _bind(self, name: str, line: int, value, direct: bool, loop) -> None:
        self._bindings.setdefault(name, []).append(
            Binding(line, value, False, direct, loop, self._block, self._looped,
                    self._block_end))


MAX_CHAINS = 8          # the values branch_chains gives (calls.MAX_BRANCHES reads them all)


def branch_chains(node: ast.AST, cands: list[Binding]) -> list[list[Binding]] | None:
    """A name built with ``+=`` where some parts are appended in the branches of
    ``if`` statements of the body (``code = ...; if c: code += a else: code += b;
    if d: code += e; code += ...``): the chain of bindings each way through them gives
    (at most MAX_CHAINS), or None for any other shape (a plain assignment in a
    branch, parts in a loop body or deeper than one ``if``). An ``elif`` is one more
    way through its ``if``; ``if`` statements with the same condition (cucim's
    ``if compute_bbox:`` around two parts) take the same way, so no chain mixes an
    arm with its condition's opposite."""
    plain = [k for k, b in enumerate(cands) if not b.aug]
    if not plain or not cands[plain[-1]].direct or cands[plain[-1]].value is None:
        return None
    first, rest = cands[plain[-1]], cands[plain[-1] + 1:]
    nested = [b for b in rest if not b.direct and b.loop is None]
    if not nested or any(b.looped for b in nested):
        return None
    if any(not b.direct and b.loop is not None for b in rest):
        return None
    arms_of: dict[int, list[list[int]]] = {}    # if statement -> its arms' block ids
    conds: dict[int, str] = {}
    for st in getattr(node, "body", []):
        if not isinstance(st, ast.If):
            continue
        arms = _arms(st)
        if arms is None:
            continue
        arms_of[id(st)] = arms
        conds[id(st)] = ast.dump(st.test)
    block_if = {blk: key for key, arms in arms_of.items() for arm in arms for blk in arm}
    used = []
    for b in nested:
        key = block_if.get(b.block)
        if key is None:
            return None                 # in a deeper if, a try, a with ...
        if key not in used:
            used.append(key)
    by_flags = _flag_chains(node, used, first, rest)
    if by_flags is not None:
        return by_flags
    # statements with one condition choose together: one choice per condition
    groups: dict[str, list[int]] = {}
    for key in used:
        groups.setdefault(conds[key], []).append(key)
    # groups whose conditions share a name may contradict (`if a:` and `if not a:`):
    # choosing their arms independently would build a source no run builds
    seen_names: set[str] = set()
    for keys in groups.values():
        names = {n.id for k in keys for n in ast.walk(_stmt(node, k).test)
                 if isinstance(n, ast.Name)}
        if names & seen_names:
            return None
        seen_names |= names
    choices: list[list[frozenset[int]]] = []
    for keys in groups.values():
        n = {len(arms_of[k]) for k in keys}
        if len(n) != 1:
            return None
        (count,) = n
        choices.append([frozenset(blk for k in keys for blk in arms_of[k][a])
                        for a in range(count)])
    total = 1
    for c in choices:
        total *= len(c)
        if total > MAX_CHAINS:
            return None
    out: list[list[Binding]] = [[]]
    for c in choices:
        out = [done + [arm] for done in out for arm in c]
    chains = []
    for picked in out:
        taken = frozenset().union(*picked)
        chains.append([first] + [b for b in rest if b.direct or b.block in taken])
    return chains


def _stmt(node: ast.AST, key: int) -> ast.If:
    return next(st for st in getattr(node, "body", []) if id(st) == key)


def _flag_chains(node: ast.AST, used: list[int], first: Binding, rest: list[Binding]
                 ) -> list[list[Binding]] | None:
    """When every condition of the ``if`` statements that build the name is a boolean
    expression of a few plain names (``if compute_bbox:``, ``if compute_bbox or
    compute_coordinate_sums:``, ``elif not fast:``), one chain per assignment of those
    names (at most MAX_CHAINS): conditions that share a name then never disagree."""
    stmts = {id(st): st for st in getattr(node, "body", []) if isinstance(st, ast.If)}
    tests: list[ast.expr] = []
    for key in used:
        st = stmts[key]
        while True:
            tests.append(st.test)
            if len(st.orelse) == 1 and isinstance(st.orelse[0], ast.If):
                st = st.orelse[0]
                continue
            break
    names: list[str] = []
    for t in tests:
        got = _flag_names(t)
        if got is None:
            return None
        names.extend(n for n in got if n not in names)
    if not names or 2 ** len(names) > MAX_CHAINS:
        return None
    chains: list[list[Binding]] = []
    seen: set[tuple[int, ...]] = set()
    for k in range(2 ** len(names)):
        env = {n: bool(k >> i & 1) for i, n in enumerate(names)}
        taken: set[int] = set()
        for key in used:
            st = stmts[key]
            while True:
                if _truth(st.test, env):
                    taken.add(id(st.body))
                    break
                if len(st.orelse) == 1 and isinstance(st.orelse[0], ast.If):
                    st = st.orelse[0]
                    continue
                taken.add(id(st.orelse))
                break
        chain = [first] + [b for b in rest if b.direct or b.block in taken]
        sig = tuple(id(b) for b in chain)
        if sig not in seen:
            seen.add(sig)
            chains.append(chain)
    return chains


def _flag_names(test: ast.expr) -> list[str] | None:
    if isinstance(test, ast.Name):
        return [test.id]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _flag_names(test.operand)
    if isinstance(test, ast.BoolOp):
        out: list[str] = []
        for v in test.values:
            got = _flag_names(v)
            if got is None:
                return None
            out.extend(got)
        return out
    return None


def _truth(test: ast.expr, env: dict[str, bool]) -> bool:
    if isinstance(test, ast.Name):
        return env[test.id]
    if isinstance(test, ast.UnaryOp):
        return not _truth(test.operand, env)
    values = [_truth(v, env) for v in test.values]       # ast.BoolOp
    return all(values) if isinstance(test.op, ast.And) else any(values)


def _arms(st: ast.If) -> list[list[int]] | None:
    """The statement lists one way through an ``if``/``elif``/``else`` runs, each as
    the ids of its lists (an arm is one list; a missing ``else`` an empty one)."""
    arms: list[list[int]] = []
    while True:
        arms.append([id(st.body)])
        orelse = st.orelse
        if len(orelse) == 1 and isinstance(orelse[0], ast.If):
            st = orelse[0]
            continue
        arms.append([id(orelse)])
        return arms


def one_block(binds: list[Binding], cands: list[Binding], line: int
               ) -> list[Binding] | None:
    """The bindings a read at `line` sees when the last one before it sits in a statement
    list that also holds the read (a loop body: ``k = "..."`` then ``k = k.replace(...)``,
    read below): that binding and the ``+=`` before it back to a plain assignment, all
    of that list, run in order before the read in every pass. None when a binding of
    the name follows the read inside that list (a loop could carry it back)."""
    last = cands[-1]
    if not (last.line < line <= last.block_end):
        return None
    chain: list[Binding] = []
    for b in reversed(cands):
        if b.block != last.block or (b.aug and b.loop is not None):
            return None
        chain.append(b)
        if not b.aug:
            break
    else:
        return None
    if any(line < b.line <= last.block_end for b in binds):
        return None
    return chain[::-1]
