"""A static proof that a kernel's run can report nothing but divergent barriers
(:func:`quiet_kernel`, by :class:`IntervalCheck`).

Between two block barriers, on every path (loops and inlined device functions
included), each ``__shared__`` array is only read or only written: no read can pair
with a write, whatever the threads. With no warp intrinsic reachable either (CL105
checks those), a run could only tell CL103 which barriers part of the block reached,
so :class:`~cudalint.analysis.sync.races.RaceAnalysis` defers such kernels until CL103
asks. The check is cheap next to a run, and anything it does not model leaves the
kernel to be run as before.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.parse import captures
from cudalint.parse import text as _ts_text
from cudalint.analysis.sync.callees import MASKED, MAX_INLINE_DEPTH, WARP_INTRINSICS
from cudalint.analysis.sync.cfg import BODY_QUERY, callee_short_name, classify_sync
from cudalint.analysis.sync.syntax import unwrap

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function
    from cudalint.analysis.sync.unit_memo import UnitMemo


class _Unproven(Exception):
    """The barrier-interval check cannot decide: the kernel is run."""


_R, _W = 1, 2
# what makes a statement matter to the barrier-interval check besides names
# (a break or continue moves the state to the loop's exit or head: never skipped)
_HOT = re.compile(rb"sync|bar\.|asm|__shfl|__ballot|__any|__all|__match|__reduce|__uni|"
                  rb"__activemask|\bbreak\b|\bcontinue\b|goto|switch|#")
# return types that cannot hold a pointer
_VALUE_TYPE = re.compile(
    r"^(?:(?:static|inline|__forceinline__|__inline__|__device__|__host__|const|"
    r"constexpr|unsigned|signed|long|short)\s+)*(?:void|bool|char|int|long|short|float|"
    r"double|size_t|u?int(?:8|16|32|64)_t|unsigned|__half2?|half2?|__nv_bfloat162?|"
    r"(?:u?char|u?short|u?int|u?long|u?longlong|float|double)[1-4])$")
_IGNORED_STATEMENTS = frozenset({
    "comment", "preproc_call", "preproc_def", "preproc_function_def", "type_definition",
    "using_declaration", "alias_declaration", "static_assert_declaration",
    "empty_statement", "preproc_include", "struct_specifier", "class_specifier",
    "enum_specifier", "namespace_alias_definition"})
_LOOP_NODES = ("for_statement", "while_statement", "do_statement")


class IntervalCheck:
    """A sound, cheap check that a run of a kernel can report nothing but divergent
    barriers: between two block barriers (on every path, loops and inlined device
    functions included) each ``__shared__`` array is only read or only written, so no
    read can pair with a write (what a race needs, whatever the threads); and nothing
    a run checks for CL105 (a warp intrinsic or ``__syncwarp``) is reachable. Abstract
    states map an array to the kinds of access (read, write) since the last barrier;
    None is a path no thread takes. Pointers into shared memory (``float* p = smem +
    n``, a device function's parameter) stand for every array they may point into.
    What it does not model (``switch``, ``goto``, preprocessor conditionals, lambdas,
    references to shared elements, barriers inside expressions) leaves it undecided,
    and the kernel is run as before."""

    def __init__(self, fn: "Function", functions, memo: "UnitMemo", shared: set[str],
                 arrays: set[str], alias: dict[str, frozenset] | None = None,
                 depth: int = 0, dims: dict[str, int] | None = None):
        self.fn, self.functions, self.memo = fn, functions, memo
        self.groups = memo.groups(fn.body)
        self.shared = shared          # names of __shared__ variables (arrays and scalars)
        self.arrays = arrays          # those that are arrays (a bare use is a pointer)
        self.depth = depth
        self.dims: dict[str, int] = dims or {}   # dimensions of the arrays declared here
        # name -> arrays it may point into (shared arrays themselves, pointers)
        self.alias: dict[str, frozenset] = {a: frozenset((a,)) for a in arrays}
        if alias:
            self.alias.update(alias)
        self.loops: list[tuple[list, list]] = []
        self.returns: list | None = None if depth == 0 else []
        self._names_re = self._hot_re = None
        self._aliases(fn.body)

    def quiet(self) -> bool:
        try:
            self.stmt(self.fn.body, {})
        except (_Unproven, RecursionError):
            return False
        return True

    def _aliases(self, body: Node) -> None:
        """Pointers into shared memory declared or assigned in ``body`` (a fixpoint)."""
        caps = self.memo._queries(body) if self.memo._queries is not None else \
            captures(BODY_QUERY, body)
        pairs: list[tuple[str, Node, bool | None]] = []
        escapes: list[Node] = []
        for n in caps.get("declaration", []):
            type_node = n.child_by_field_name("type")
            type_text = _ts_text(type_node) if type_node is not None else ""
            for d in n.children_by_field_name("declarator"):
                if d.type != "init_declarator":
                    continue
                v = d.child_by_field_name("value")
                d = d.child_by_field_name("declarator")
                pointer = "auto" in type_text
                while d is not None and d.type != "identifier":
                    if d.type in ("pointer_declarator", "array_declarator"):
                        pointer = True
                    elif d.type == "reference_declarator":
                        pointer = True
                        if v is not None and self._mentions(v):
                            raise _Unproven("a reference into shared memory")
                    d = d.child_by_field_name("declarator") or next(
                        (c for c in d.named_children if c.type != "comment"), None)
                if v is None:
                    continue
                if v.type in ("initializer_list", "argument_list"):
                    escapes.extend(v.named_children)   # `P q{s};`, `P q(s);`
                    continue
                if d is not None:
                    pairs.append((_ts_text(d), v, pointer))
        for left in caps.get("assign_left", []):
            assign = left.parent
            right = assign.child_by_field_name("right") if assign is not None else None
            left = unwrap(left)
            if right is None or left is None:
                continue
            if left.type == "identifier":
                pairs.append((_ts_text(left), right, None))
            else:
                escapes.append(right)
        for lst in caps.get("init_list", []):
            escapes.extend(lst.named_children)
        pointers = {name for name, _, pointer in pairs if pointer}
        changed = True
        while changed:
            changed = False
            for name, v, pointer in pairs:
                if not self._mentions(v):
                    continue
                arrs = self.arrays_of(v)
                if not arrs and (pointer or pointer is None and name in pointers) and \
                        unwrap(v).type not in ("subscript_expression", "identifier"):
                    raise _Unproven("a pointer into shared memory the check cannot follow")
                if arrs and not arrs <= self.alias.get(name, frozenset()):
                    self.alias[name] = self.alias.get(name, frozenset()) | arrs
                    self._names_re = self._hot_re = None
                    changed = True
        # a pointer into shared memory stored anywhere but in a local variable (a
        # struct field, an array of pointers) is not followed
        for v in escapes:
            if self._mentions(v) and self.arrays_of(v):
                raise _Unproven("a pointer into shared memory stored in memory")

    def _names(self):
        r = self._names_re
        if r is None:
            names = sorted(self.shared | set(self.alias), key=len, reverse=True)
            r = self._names_re = re.compile(
                rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b"
                if names else rb"(?!)")
        return r

    def _mentions(self, node: Node) -> bool:
        """Whether ``node`` names shared memory or a pointer into it."""
        return self._names().search(node.text or b"") is not None

    def _hot(self, node: Node) -> bool:
        """Whether ``node`` may matter at all: it names shared memory, a pointer into
        it or a device function of the unit, or may synchronize."""
        r = self._hot_re
        if r is None:
            names = sorted(self.shared | set(self.alias) | set(self.functions), key=len,
                           reverse=True)
            alts = [rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b"] \
                if names else []
            r = self._hot_re = re.compile(b"|".join(alts + [_HOT.pattern]))
        return r.search(node.text or b"") is not None

    def arrays_of(self, node: Node | None) -> frozenset:
        """The shared arrays a pointer-valued expression may point into."""
        node = unwrap(node)
        if node is None:
            return frozenset()
        t = node.type
        if t == "identifier":
            return self.alias.get(_ts_text(node), frozenset())
        if t == "cast_expression":
            return self.arrays_of(node.child_by_field_name("value"))
        if t == "binary_expression":
            op = _ts_text(node.child_by_field_name("operator"))
            if op in ("+", "-"):
                return self.arrays_of(node.child_by_field_name("left")) | \
                    self.arrays_of(node.child_by_field_name("right"))
            return frozenset()
        if t == "conditional_expression":
            return self.arrays_of(node.child_by_field_name("consequence")) | \
                self.arrays_of(node.child_by_field_name("alternative"))
        if t in ("assignment_expression", "comma_expression"):
            return self.arrays_of(node.child_by_field_name("right"))
        if t == "subscript_expression":        # a row of a multi-dimensional array
            base = unwrap(node.child_by_field_name("argument"))
            if base is not None and base.type == "identifier":
                name = _ts_text(base)
                if name in self.arrays and self.dims.get(name, 2) >= 2:
                    return self.alias.get(name, frozenset((name,)))
                return frozenset()        # an element of a vector or of what p points to
            return self.arrays_of(base)
        if t == "pointer_expression":
            op = _ts_text(node.child_by_field_name("operator"))
            arg = unwrap(node.child_by_field_name("argument"))
            if op == "&" and arg is not None and arg.type == "identifier" and \
                    _ts_text(arg) in self.shared:
                return frozenset((_ts_text(arg),))    # a shared scalar's address
            return self.arrays_of(arg) if op == "&" else frozenset()
        if t == "call_expression":
            fnode = node.child_by_field_name("function")
            short = callee_short_name(fnode)
            callee = self.functions.get(short)
            if callee is not None and callee.body is not None:
                # what a device function returns: maybe a pointer into shared memory
                # when it returns a pointer and was given one or names shared memory
                ret = callee.node.child_by_field_name("type")
                ret_text = _ts_text(ret) if ret is not None else ""
                declarator = callee.node.child_by_field_name("declarator")
                pointer = declarator is not None and declarator.type in (
                    "pointer_declarator", "reference_declarator")
                if not pointer and _VALUE_TYPE.match(ret_text):
                    return frozenset()
                args = node.child_by_field_name("arguments")
                if args is not None and any(self.arrays_of(a) for a in args.named_children):
                    raise _Unproven("a device function given shared memory returns")
                for f in self.memo.reachable(callee, self.functions):
                    data = self.functions[f].body.text or b""
                    if b"__shared__" in data or any(n.encode() in data
                                                     for n in self.shared):
                        raise _Unproven("a device function returning shared memory")
                return frozenset()
            args = node.child_by_field_name("arguments")
            name = _ts_text(fnode) if fnode is not None else ""
            if fnode is not None and fnode.type == "template_function":
                n = fnode.child_by_field_name("name")
                name = _ts_text(n) if n is not None else name
            inner = [c for c in args.named_children if c.type != "comment"] \
                if args is not None else []
            if name.split("::")[-1] in ("reinterpret_cast", "static_cast", "const_cast") \
                    and len(inner) == 1:
                return self.arrays_of(inner[0])
        return frozenset()

    # ---- states --------------------------------------------------------------------
    @staticmethod
    def join(a, b):
        if a is None:
            return b
        if b is None:
            return a
        out = dict(a)
        for k, v in b.items():
            out[k] = out.get(k, 0) | v
        return out

    @staticmethod
    def apply(state, kinds: dict[str, int]):
        if state is None or not kinds:
            return state
        out = dict(state)
        for arr, k in kinds.items():
            before = out.get(arr, 0)
            if k == _R | _W or (k & _W and before & _R) or (k & _R and before & _W):
                raise _Unproven("read and write in one interval")
            out[arr] = before | k
        return out

    # ---- statements ----------------------------------------------------------------
    def expr_stmt(self, node: Node | None, state):
        """The accesses of an expression, with the device functions it calls run in
        between (before and after them, in any order)."""
        if node is None or state is None or not self._hot(node):
            return state
        kinds: dict[str, int] = {}
        calls: list = []
        self.walk(node, kinds, calls)
        state = self.apply(state, kinds)
        if calls:
            for callee, alias in calls:
                state = self.inline(callee, alias, state)
            state = self.apply(state, kinds)
        return state

    def inline(self, callee: "Function", alias: dict[str, frozenset], state):
        if self.depth >= MAX_INLINE_DEPTH or state is None:
            raise _Unproven("inline depth")
        data = callee.body.text or b""
        if b"_sync" in data and any(n in data for n in MASKED):
            raise _Unproven("a warp intrinsic (CL105 checks its mask)")
        found = _shared_declared(callee.body, self.memo)
        if found is None:
            raise _Unproven("a shared declaration")
        names, arrays, dims = found
        # a parameter pointing into shared memory: as many dimensions as its arrays
        dims = {**self.dims, **{p: max(self.dims.get(a, 2) for a in arrs)
                                for p, arrs in alias.items()}, **dims}
        sub = IntervalCheck(callee, self.functions, self.memo,
                            self.shared | names | set(alias),
                            self.arrays | arrays | set(alias), alias, self.depth + 1,
                            dims)
        end = sub.stmt(callee.body, state)
        for r in sub.returns or ():
            end = sub.join(end, r)
        return end

    def stmt(self, node: Node, state):
        if state is None:
            return None
        if not self._hot(node):
            # no access, barrier or call that matters: the state stays (an early exit
            # in it could only make it smaller)
            return state
        t = node.type
        if t == "compound_statement":
            for c in node.named_children:
                state = self.stmt(c, state)
                if state is None:
                    return None
            return state
        if t in _IGNORED_STATEMENTS:
            return state
        if t == "expression_statement":
            kids = [c for c in node.named_children if c.type != "comment"]
            if len(kids) == 1 and self.barrier(kids[0]):
                args = unwrap(kids[0]).child_by_field_name("arguments")
                state = self.expr_stmt(args, state)
                return {} if state is not None else None
            for c in kids:
                state = self.expr_stmt(c, state)
            return state
        if t == "declaration":
            quals = {_ts_text(c) for c in node.children if c.type in (
                "storage_class_specifier", "type_qualifier")}
            if "__shared__" in quals:
                return state          # registered up front; no initializer runs
            for d in node.children_by_field_name("declarator"):
                if d.type == "init_declarator":
                    v = d.child_by_field_name("value")
                    if v is not None:
                        if self.barrier(v):
                            raise _Unproven("barrier in a declaration")
                        state = self.expr_stmt(v, state)
                elif d.type != "identifier":
                    state = self.expr_stmt(d, state)
            return state
        if t == "if_statement":
            state = self.expr_stmt(node.child_by_field_name("condition"), state)
            cons = node.child_by_field_name("consequence")
            alt = node.child_by_field_name("alternative")
            out_t = self.stmt(cons, state) if cons is not None else state
            out_f = state
            if alt is not None:
                inner = [c for c in alt.named_children if c.type != "comment"]
                out_f = self.stmt(inner[0], state) if inner else state
            return self.join(out_t, out_f)
        if t in _LOOP_NODES:
            return self.loop(node, state)
        if t == "return_statement":
            for c in node.named_children:
                if c.type != "comment":
                    state = self.expr_stmt(c, state)
            if self.returns is not None:
                self.returns.append(state)
            return None
        if t in ("break_statement", "continue_statement"):
            if not self.loops:
                raise _Unproven("break outside a loop")
            self.loops[-1][0 if t == "break_statement" else 1].append(state)
            return None
        raise _Unproven(f"statement {t}")

    def loop(self, node: Node, state):
        t = node.type
        init = node.child_by_field_name("initializer") if t == "for_statement" else None
        cond = node.child_by_field_name("condition")
        update = node.child_by_field_name("update") if t == "for_statement" else None
        body = node.child_by_field_name("body")
        if init is not None:
            state = self.stmt(init, state) if init.type == "declaration" else \
                self.expr_stmt(init, state)
        entry = head = state
        for _ in range(64):
            top = head if t == "do_statement" else self.expr_stmt(cond, head)
            breaks: list = []
            conts: list = []
            self.loops.append((breaks, conts))
            try:
                out = self.stmt(body, top) if body is not None else top
            finally:
                self.loops.pop()
            for c in conts:
                out = self.join(out, c)
            out = self.expr_stmt(update, out)
            if t == "do_statement":
                out = self.expr_stmt(cond, out)
            new_head = self.join(entry, out)
            if new_head == head:
                exit_state = out if t == "do_statement" else top
                for b in breaks:
                    exit_state = self.join(exit_state, b)
                return exit_state
            head = new_head
        raise _Unproven("loop states do not settle")

    # ---- expressions ---------------------------------------------------------------
    def barrier(self, node: Node) -> bool:
        """A block barrier as the whole statement (a run clears its log there)."""
        node = unwrap(node)
        if node is None or node.type not in ("call_expression", "gnu_asm_expression"):
            return False
        s = classify_sync(node, self.groups)
        return s is not None and s.kind in ("block", "grid", "named")

    def access(self, arrs: frozenset, kind: int, out: dict[str, int]) -> None:
        for a in arrs:
            out[a] = out.get(a, 0) | kind

    def target(self, left: Node, kind: int, out: dict[str, int], calls: list) -> None:
        cur = unwrap(left)
        while cur is not None and cur.type == "field_expression":
            op = cur.child_by_field_name("operator")
            if op is None or _ts_text(op) != ".":
                break
            cur = unwrap(cur.child_by_field_name("argument"))
        if cur is None:
            return
        t = cur.type
        if t == "identifier":
            name = _ts_text(cur)
            if name in self.shared and name not in self.arrays:
                out[name] = out.get(name, 0) | kind
            return                    # a local (a pointer's new value: see _aliases)
        base = None
        if t == "subscript_expression" or t == "pointer_expression" and \
                _ts_text(cur.child_by_field_name("operator")) == "*" or \
                t == "field_expression":      # p->f (`.` was unwrapped above)
            base = cur.child_by_field_name("argument")
            arrs = self.arrays_of(base)
            if arrs:
                self.access(arrs, kind, out)
                self.pointer_walk(base, out, calls)
                if t == "subscript_expression":
                    i = cur.child_by_field_name("indices")
                    if i is not None:
                        self.walk(i, out, calls)
                return
        # a store through memory the check does not see as shared: its base must not
        # involve shared memory (its indices may read it)
        if self._mentions(base if base is not None else left):
            raise _Unproven("a store the check cannot follow")
        self.walk(left, out, calls)

    def pointer_walk(self, node: Node | None, out: dict[str, int], calls: list) -> None:
        """A pointer-valued expression: no access of its own (rows of ``s[i][j]``),
        only those of its offsets."""
        node = unwrap(node)
        if node is None:
            return
        if node.type == "subscript_expression":
            self.pointer_walk(node.child_by_field_name("argument"), out, calls)
            i = node.child_by_field_name("indices")
            if i is not None:
                self.walk(i, out, calls)
            return
        self.walk(node, out, calls)

    def walk(self, node: Node, out: dict[str, int], calls: list) -> None:
        t = node.type
        if t == "identifier":
            name = _ts_text(node)
            if name in self.shared and name not in self.arrays:
                out[name] = out.get(name, 0) | _R
            return
        if t == "subscript_expression":
            arg = node.child_by_field_name("argument")
            arrs = self.arrays_of(arg)
            if arrs:
                self.access(arrs, _R, out)
                self.pointer_walk(arg, out, calls)
                i = node.child_by_field_name("indices")
                if i is not None:
                    self.walk(i, out, calls)
                return
        elif t == "assignment_expression":
            op = node.child_by_field_name("operator")
            right = node.child_by_field_name("right")
            if right is not None:
                self.walk(right, out, calls)
            left = node.child_by_field_name("left")
            if left is not None:
                self.target(left, _W if op is not None and _ts_text(op) == "=" else
                            _R | _W, out, calls)
            return
        elif t == "update_expression":
            arg = node.child_by_field_name("argument")
            if arg is not None:
                self.target(arg, _R | _W, out, calls)
            return
        elif t in ("pointer_expression", "field_expression"):
            op = node.child_by_field_name("operator")
            arg = node.child_by_field_name("argument")
            o = _ts_text(op) if op is not None else ""
            if o in ("*", "->") and arg is not None:
                arrs = self.arrays_of(arg)
                if arrs:
                    self.access(arrs, _R, out)
                    self.pointer_walk(arg, out, calls)
                    return
            elif o == "&" and arg is not None:
                # an address: no access (a pointer made of it is an alias)
                self.pointer_walk(arg, out, calls)
                return
        elif t == "call_expression":
            if self.call(node, out, calls):
                return
        elif t in ("lambda_expression", "gnu_asm_expression", "compound_statement"):
            raise _Unproven(t)
        for c in node.named_children:
            self.walk(c, out, calls)

    def call(self, node: Node, out: dict[str, int], calls: list) -> bool:
        """Handles a call; True when its arguments were walked."""
        sync = classify_sync(node, self.groups)
        if sync is not None:
            if sync.kind in ("block", "grid", "named"):
                raise _Unproven("a barrier inside an expression")
            return False
        fnode = node.child_by_field_name("function")
        if fnode is None:
            raise _Unproven("call")
        short = callee_short_name(fnode)
        if short in WARP_INTRINSICS:
            raise _Unproven("a warp intrinsic (CL105 checks its mask)")
        callee = self.functions.get(short)
        if callee is None or callee.body is None or fnode.type == "field_expression":
            return False
        args = node.child_by_field_name("arguments")
        arg_nodes = [c for c in args.named_children if c.type != "comment"] \
            if args is not None else []
        alias: dict[str, frozenset] = {}
        for k, a in enumerate(arg_nodes):
            arrs = self.arrays_of(a)
            p = callee.params[k] if k < len(callee.params) else None
            if arrs:
                if p is None or not p.name or p.is_reference:
                    raise _Unproven("shared memory passed by reference")
                alias[p.name] = arrs
                self.pointer_walk(a, out, calls)
            else:
                if p is not None and p.is_reference and self._mentions(a):
                    raise _Unproven("a shared element passed by reference")
                self.walk(a, out, calls)
        calls.append((callee, alias))
        return True


def _shared_declared(body: Node, memo: "UnitMemo"
                     ) -> tuple[set[str], set[str], dict[str, int]] | None:
    """(names, array names, their dimensions) of the ``__shared__`` variables declared in
    ``body``, None when a declarator is not understood."""
    names: set[str] = set()
    arrays: set[str] = set()
    dims: dict[str, int] = {}
    if b"__shared__" not in (body.text or b""):
        return names, arrays, dims
    caps = memo._queries(body) if memo._queries is not None else None
    decls = caps.get("declaration", []) if caps is not None else \
        captures("(declaration) @d", body).get("d", [])
    for decl in decls:
        if not any(c.type in ("storage_class_specifier", "type_qualifier") and
                   c.text == b"__shared__" for c in decl.children):
            continue
        for d in decl.children_by_field_name("declarator"):
            if d.type == "init_declarator":
                d = d.child_by_field_name("declarator")
            depth = 0
            while d is not None and d.type != "identifier":
                if d.type in ("array_declarator", "pointer_declarator"):
                    depth += 1
                d = d.child_by_field_name("declarator") or next(
                    (c for c in d.named_children if c.type != "comment"), None)
            if d is None:
                return None
            name = _ts_text(d)
            names.add(name)
            if depth:
                arrays.add(name)
                dims[name] = max(depth, dims.get(name, 0))
    return names, arrays, dims


def quiet_kernel(ctx: "UnitContext", fn: "Function", functions, memo: "UnitMemo"
                 ) -> bool:
    """Whether :class:`IntervalCheck` proves a run of ``fn`` finds no race and no mask
    mismatch (it may still show CL103 a divergent barrier: such kernels are deferred)."""
    if fn.body is None:
        return False
    for name in memo.reachable(fn, functions):
        f = functions.get(name, fn)
        data = f.body.text or b""
        if b"_sync" in data and any(n in data for n in MASKED):
            return False                # CL105 checks the mask of a warp intrinsic
    found = _shared_declared(fn.body, memo)
    if found is None:
        return False
    shared, arrays, dims = found
    for a in ctx.model.shared_arrays:
        if a.function is None:          # file scope: any bare use is left undecided
            shared.add(a.name)
            arrays.add(a.name)
    try:
        check = IntervalCheck(fn, functions, memo, shared, arrays, dims=dims)
    except (_Unproven, RecursionError):
        return False
    return check.quiet()
