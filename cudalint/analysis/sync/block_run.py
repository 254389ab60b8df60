"""One run of a kernel's block (:class:`BlockRun`): the threads of chosen warps execute
the body together, statement by statement.

Per-thread values are vectors, the active threads a bit mask: branches split the mask,
loops iterate while any thread continues, ``return``/``break``/``continue`` leave per
thread. A condition the run cannot evaluate puts the threads it splits on unknown paths
(their accesses are never reported); a loop it cannot bound, or a budget of statement
executions spent, stops the run (:class:`~cudalint.analysis.sync.block_log.GiveUp`).
Large blocks run only some of their warps (:func:`_chosen_warps`: those at the
distances at which reductions and stencils pair threads). Each kernel runs once per
sample of the figures it cannot know (:data:`SAMPLES`) and per block shape
(:data:`GUESSED_BLOCKS` when no launch gives it).
"""
from __future__ import annotations

import re
from itertools import repeat
from operator import is_
from typing import TYPE_CHECKING, Any

from tree_sitter import Node

from cudalint.model.consteval import eval_int
from cudalint.analysis.sync.barrier_order import mismatched_barriers
from cudalint.analysis.sync.block_calls import CallEval, Frame
from cudalint.analysis.sync.block_eval import ExpressionEval
from cudalint.analysis.sync.block_log import Accesses, GiveUp, RunResult, SharedLog
from cudalint.analysis.sync.cfg import Group
from cudalint.analysis.sync.syntax import clean, declarator, group_type, is_int_type, text, \
    unwrap
from cudalint.analysis.sync.unit_memo import UnitMemo
from cudalint.analysis.sync.values import GLOBAL, WARP, GPtr, SPtr, SharedVar
from cudalint.model.types import type_size

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function

LOOP_CAP = 64                 # iterations of one loop in one run
STEP_BUDGET = 2500             # statement executions per run (at most)
THREAD_STEPS = 100_000         # statement executions x simulated threads per run
# (kernel parameters, blockIdx, gridDim) per run: large sizes so that bounds checks
# such as `i < n` hold for the sampled blocks, two different values so that a figure
# that depends on them is not taken for a fact
SAMPLES = ((1024, 0, 4), (2053, 1, 7))
GUESSED_BLOCKS = ((128, 1, 1), (256, 1, 1))
# the byte width given to an element of a type a Python template leaves unknown: byte
# addresses are then element indices (races pair accesses by address alone)
OPAQUE_ELEMENT = 1


_BIN = bytes.maketrans(b"\x00\x01", b"01")
_SIDE_EFFECT = re.compile(r"\+\+|--|[^=!<>]=(?!=)|\(")


def _chosen_warps(nwarps: int) -> list[int]:
    """All warps of small blocks; for large ones the first four, both warps around each
    power-of-two distance, and the last (the races of reductions and stencils pair
    threads at such distances)."""
    if nwarps <= 8:
        return list(range(nwarps))
    chosen = {0, 1, 2, 3, nwarps - 1, nwarps - 2}
    p = 1
    while p < nwarps:
        chosen.update({p - 1, p, p + 1})
        p *= 2
    return sorted(w for w in chosen if 0 <= w < nwarps)


# a __shared__ array past this many bytes fails to compile (GPUs hold at most 228 KB of
# shared memory a block): a run of its kernel stops there (issue 25). Fuzzed notebooks
# declared `s[1 << 62][1 << 62]`; byte addresses past 2**61 hash alike in Python's
# dictionaries (i * 2**64 + 4 * tid hashes as 8 * i + 4 * tid), and the access log slowed
# to 8 us a lookup (12 s CPU for a 4 KB notebook)
MAX_SHARED_BYTES = 1 << 32

class BlockRun(ExpressionEval, CallEval, SharedLog):
    """One execution of a kernel for one block shape and one sample. The driver,
    the masks of active threads, statements, declarations and variables are here;
    expressions in :class:`~cudalint.analysis.sync.block_eval.ExpressionEval`, calls in
    :class:`~cudalint.analysis.sync.block_calls.CallEval`, the shared-memory log and the
    mask checks in :class:`~cudalint.analysis.sync.block_log.SharedLog`."""

    def __init__(self, ctx: "UnitContext", fn: "Function", block: tuple[int, int, int],
                 sample: tuple[int, int, int], structs, functions, shared_globals,
                 memo: "UnitMemo | None" = None):
        self.ctx, self.fn = ctx, fn
        self.memo = memo if memo is not None else UnitMemo()
        self.block = block
        self.param_value, self.block_idx, self.grid_dim = sample
        # integer parameters whose every launch bounds them (model/launch_guards.py):
        # their figure for this sample, inside those bounds
        self.param_values: dict[str, int] = {}
        self.structs = structs
        self.functions = functions
        bx, by, bz = block
        total = bx * by * bz
        self.total = total
        nwarps = -(-total // WARP)
        self.tids = [t for w in _chosen_warps(nwarps) for t in range(w * WARP, min(
            total, (w + 1) * WARP))]
        n = len(self.tids)
        self.n = n
        self.full = (1 << n) - 1
        self.warp_of = [t // WARP for t in self.tids]
        self.lane_of = [t % WARP for t in self.tids]
        self.tx = tuple(t % bx for t in self.tids)
        self.ty = tuple((t // bx) % by for t in self.tids)
        self.tz = tuple(t // (bx * by) for t in self.tids)
        self.linear = tuple(self.tids)
        self.warp_bits: dict[int, int] = {}
        for i, w in enumerate(self.warp_of):
            self.warp_bits[w] = self.warp_bits.get(w, 0) | (1 << i)
        self.scopes: list[dict[str, Any]] = []
        self.shared: dict[str, SharedVar] = dict(shared_globals)
        # (id of the scope, name) -> the __shared__ scalar declared there
        self._scalars: dict[tuple[int, str], SharedVar] = {}
        self.maybe = 0           # threads whose path here is not known (scoped)
        self.ghost = 0           # threads that may have left (persistent)
        self.exited = 0          # threads that returned from the kernel
        self.frames: list[Frame] = []
        self.steps = 0
        # thread accesses logged, folded into the address map and paired: what makes a
        # step cost more than 0.2 us (a log that never meets a barrier); counted, so that
        # the file's budget is the same on any machine (races.FILE_WORK)
        self.work = 0
        self.budget = min(STEP_BUDGET, max(300, THREAD_STEPS // max(1, n)))
        # array key -> (writes, reads) since the last block barrier (see Accesses)
        self.log: dict[str, tuple[Accesses, Accesses]] = {}
        self.events: dict[int, list[int]] = {}
        self._event_counts: dict[int, int] | None = None     # len of each events list
        self.result = RunResult()
        # (barrier, threads arriving, certain) per block barrier reached, in run order;
        # None for a call that may synchronize (see SharedLog.arrive)
        self.barrier_events: list = []
        self.arrived = False
        self.groups: dict[str, Group] = {}
        self.depth = 0
        self._bits: dict[int, list[int]] = {}
        self._sizes: dict[str, int | None] = {}

    # ---- driver --------------------------------------------------------------------
    def run(self) -> RunResult:
        self.groups = self.memo.groups(self.fn.body)
        self.frames.append(Frame())
        self.scopes.append(self._bind_params(self.fn, None))
        try:
            self.exec_block(self.memo.syntax(self.fn.body), self.full)
        except GiveUp as e:
            self.result.complete = False
            self.result.reason = str(e)
        except (RecursionError, ValueError, TypeError, AttributeError, IndexError,
                OverflowError, ZeroDivisionError, MemoryError) as e:
            self.result.complete = False
            self.result.reason = f"internal: {type(e).__name__}"
        self.result.mismatched = mismatched_barriers(self.barrier_events)
        return self.result

    def _bind_params(self, fn: "Function", args: list | None) -> dict[str, Any]:
        scope: dict[str, Any] = {}
        for k, p in enumerate(fn.params):
            if not p.name:
                continue
            if args is not None:
                scope[p.name] = args[k] if k < len(args) else None
            elif p.is_pointer:
                scope[p.name] = GLOBAL
            elif p.is_reference or not is_int_type(p.base_type):
                scope[p.name] = None
            else:
                scope[p.name] = self.param_values.get(p.name, self.param_value)
        return scope

    def _size(self, elem: str) -> int | None:
        """sizeof an element type under the unit's structs and type aliases (memoised per
        run). A type a Python template leaves unknown counts one byte: its arrays are then
        followed by element index, and nothing reinterprets them (:meth:`decay`)."""
        sizes = self._sizes
        if elem in sizes:
            return sizes[elem]
        v = sizes[elem] = self.elem_size(elem)
        return v

    def elem_size(self, elem: str) -> int | None:
        v = type_size(elem, self.structs)
        if v is None:
            aliases = self.ctx.model.type_aliases
            name = clean(elem)
            v = aliases.size(name, self.structs)
            if v is None and aliases.is_opaque(name):
                v = OPAQUE_ELEMENT
        return v

    def _step(self):
        self.steps += 1
        if self.steps > self.budget:
            raise GiveUp("step budget")

    # ---- masks & vectors ---------------------------------------------------------------
    def bits(self, mask: int) -> list[int]:
        """Indices of the set bits of ``mask``, ascending (memoised per run: the same
        few masks come back at every statement)."""
        idx = self._bits.get(mask)
        if idx is None:
            if len(self._bits) > 4096:
                self._bits.clear()
            s = bin(mask)[:1:-1]
            idx = []
            i = s.find("1")
            while i >= 0:
                idx.append(i)
                i = s.find("1", i + 1)
            self._bits[mask] = idx
        return idx

    def vec(self, v) -> tuple:
        if isinstance(v, tuple):
            return v
        return (v,) * self.n

    def split(self, v, act: int) -> tuple[int, int, int]:
        """(true, false, unknown) masks of a condition over the active threads."""
        if v is None or isinstance(v, (GPtr, SPtr)):
            return 0, 0, act
        if isinstance(v, int):
            return (act, 0, 0) if v else (0, act, 0)
        # per-thread truth and unknown-ness as bit masks, built at C speed
        true = int(bytes(map(bool, reversed(v))).translate(_BIN), 2)
        if None in v:
            unknown = int(bytes(map(is_, reversed(v), repeat(None))).translate(_BIN), 2) & act
        else:
            unknown = 0
        true &= act
        return true, act & ~true & ~unknown, unknown

    def merge(self, old, new, act: int):
        """Per thread: ``new`` where active, ``old`` elsewhere (unknown where unsure)."""
        unsure = act & self.maybe
        if act == self.full and not unsure:
            return new
        if isinstance(new, SPtr) or isinstance(old, SPtr):
            if isinstance(new, SPtr) and isinstance(old, SPtr) and new.key == old.key and \
                    new.dims == old.dims and not unsure:
                return SPtr(new.key, self.merge(old.offset, new.offset, act), new.elem,
                            new.dims, new.size)
            return None
        if isinstance(new, GPtr) or isinstance(old, GPtr):
            return GLOBAL if new is old else None
        if old == new and not unsure and (isinstance(new, int) or new is None):
            return new
        o, w = self.vec(old), self.vec(new)
        out = list(o)
        for i in self.bits(act & ~unsure if unsure else act):
            out[i] = w[i]
        if unsure:
            for i in self.bits(unsure):
                out[i] = None
        return tuple(out)

    # ---- statements --------------------------------------------------------------------
    def exec_block(self, node: Node, act: int) -> int:
        self.scopes.append({})
        try:
            for child in node.named_children:
                if not act:
                    break
                act = self.exec(child, act)
        finally:
            self.scopes.pop()
        return act

    def exec(self, node: Node, act: int) -> int:
        t = node.type
        if t == "expression_statement":
            self._step()
            for c in node.named_children:
                if c.type != "comment":
                    self.eval(c, act)
            return act
        if t == "declaration":
            self._step()
            self.declare(node, act)
            return act
        if t in ("comment", "preproc_call", "preproc_def", "preproc_function_def",
                 "type_definition", "using_declaration", "alias_declaration",
                 "static_assert_declaration", "empty_statement", "preproc_include",
                 "struct_specifier", "class_specifier", "enum_specifier",
                 "namespace_alias_definition"):
            return act
        self._step()
        if t == "compound_statement":
            return self.exec_block(node, act)
        if t == "expression_statement":
            for c in node.named_children:
                if c.type != "comment":
                    self.eval(c, act)
            return act
        if t == "declaration":
            self.declare(node, act)
            return act
        if t == "if_statement":
            return self.exec_if(node, act)
        if t in ("for_statement", "while_statement", "do_statement"):
            return self.exec_loop(node, act)
        if t == "return_statement":
            frame = self.frames[-1]
            expr = next((c for c in node.named_children if c.type != "comment"), None)
            if expr is not None:
                v = self.eval(expr, act)
                if len(self.frames) > 1:
                    if frame.value is None:
                        frame.value = [None] * self.n
                    vv = self.vec(v) if not isinstance(v, (SPtr, GPtr)) else (None,) * self.n
                    for i in self.bits(act):
                        frame.value[i] = vv[i]
            frame.ret |= act
            if len(self.frames) == 1:
                self.exited |= act & ~self.maybe
                self.ghost |= act & self.maybe
            return 0
        if t == "break_statement":
            if not self.frames[-1].loops:
                raise GiveUp("break outside a loop")
            self.frames[-1].loops[-1][0] |= act
            return 0
        if t == "continue_statement":
            if not self.frames[-1].loops:
                raise GiveUp("continue outside a loop")
            self.frames[-1].loops[-1][1] |= act
            return 0
        if t == "preproc_if":
            # `#if (BLOCK_SIZE >= 512)` inside the body: the branch the unit's constants
            # choose runs in the enclosing scope (pycuda's reduction template)
            for child in self._preproc_branch(node):
                if not act:
                    break
                act = self.exec(child, act)
            return act
        if t in ("preproc_ifdef", "preproc_else", "preproc_elif"):
            raise GiveUp("preprocessor conditional")
        raise GiveUp(f"statement {t}")

    def _preproc_branch(self, node: Node) -> list[Node]:
        """The statements of the branch of an ``#if``/``#elif``/``#else`` chain that the
        unit's integer constants choose (GiveUp when a condition is not such a constant:
        an undefined name, ``defined(X)``)."""
        for _ in range(64):
            if node.type == "preproc_else":
                return [c for c in node.named_children if c.type != "comment"]
            cond = node.child_by_field_name("condition")
            alt = node.child_by_field_name("alternative")
            v = self.env_int(text(cond)) if cond is not None else None
            if v is None:
                raise GiveUp("preprocessor conditional")
            if v:
                return [c for c in node.named_children if c.type != "comment" and
                        c.id != cond.id and (alt is None or c.id != alt.id)]
            if alt is None:
                return []
            node = alt
        raise GiveUp("preprocessor conditional")

    def exec_if(self, node: Node, act: int) -> int:
        aux = node.aux
        if aux is None:
            alt = node.child_by_field_name("alternative")
            if alt is not None and alt.type == "else_clause":
                alt = next((c for c in alt.named_children if c.type != "comment"), None)
            aux = node.aux = (unwrap(node.child_by_field_name("condition")),
                              node.child_by_field_name("consequence"), alt)
        cond, cons, alt = aux
        v = self.eval(cond, act)
        tm, fm, um = self.split(v, act)
        if um and self._shared_select(node):
            return self._select(node, cons, alt, tm, fm, um)
        ghost0 = self.ghost
        saved = self.maybe
        self.maybe |= um
        try:
            out_t = self.exec(cons, tm | um) if cons is not None and (tm | um) else 0
            out_f = self.exec(alt, fm | um) if alt is not None and (fm | um) else fm | um
        finally:
            self.maybe = saved
        out = out_t | out_f
        lost = um & ~(out_t & out_f)
        if lost:
            # unknown threads that may have left (return/break/continue in one branch)
            self.ghost |= lost
            out |= lost & act
            frame = self.frames[-1]
            if frame.loops:
                # those that may only have left by this loop's break/continue are back
                # on a known path once it ends (exec_loop): a `continue` under a data
                # test must not hide what the block does after the loop
                loop = frame.loops[-1]
                loop[2] |= lost & (loop[0] | loop[1]) & ~frame.ret & ~ghost0
        return out

    def _shared_select(self, node: Node) -> bool:
        """A compare-and-select branch (:meth:`UnitMemo.select_branch`) whose condition
        reads only ``__shared__`` arrays."""
        names = self.memo.select_branch(node.ts)
        if not names:
            return False
        for name in names:
            found, v = self.lookup(name)
            if name not in self.shared or (found and not isinstance(v, SPtr)):
                return False
        return True

    def _select(self, node: Node, cons: Node | None, alt: Node | None, tm: int, fm: int,
                um: int) -> int:
        """A compare-and-select on shared values the run does not know: for each thread
        some data takes either side, so both sides run for it as known paths (a warp
        argmin's lane t+k writes d[t+k] while lane t reads it: a race for the data where
        lane t+k takes the branch). Locals either side assigns are unknown after."""
        if cons is not None and tm | um:
            self.exec(cons, tm | um)
        if alt is not None and fm | um:
            self.exec(alt, fm | um)
        for name in self.memo.assigned_names(node.ts):
            found, _ = self.lookup(name)
            if found:
                self.assign(name, None, um)
        return tm | fm | um

    def exec_loop(self, node: Node, act: int) -> int:
        t = node.type
        self.scopes.append({})
        frame = self.frames[-1]
        try:
            aux = node.aux
            if aux is None:
                aux = node.aux = (
                    node.child_by_field_name("initializer") if t == "for_statement" else None,
                    node.child_by_field_name("condition"),
                    node.child_by_field_name("update"), node.child_by_field_name("body"))
            init, cond, update, body = aux
            if init is not None:
                if init.type == "declaration":
                    self.declare(init, act)
                else:
                    self.eval(init, act)
            running = act
            done = soft = 0
            first = True
            for _ in range(LOOP_CAP + 1):
                if not running:
                    break
                if not (t == "do_statement" and first) and cond is not None:
                    v = self.eval(unwrap(cond), running)
                    tm, fm, um = self.split(v, running)
                    if um:
                        return done | self._opaque_loop(node, body, update, running)
                    done |= fm
                    running = tm
                    if not running:
                        break
                first = False
                frame.loops.append([0, 0, 0])
                try:
                    out = self.exec(body, running) if body is not None else running
                finally:
                    brk, cont, left = frame.loops.pop()
                soft |= left
                done |= brk
                running = out | cont
                if update is not None and running:
                    self.eval(update, running)
                self._step()
            else:
                raise GiveUp("loop bound")
            soft &= ~(frame.ret | self.exited)
            if soft:
                # threads that may have left an iteration early ran the rest of it as
                # well: what the loop assigns is unknown for them, their path is known
                for name in self.memo.assigned_names(node.ts):
                    self.assign(name, None, soft)
                self.ghost &= ~soft
            return done
        finally:
            self.scopes.pop()

    def _opaque_loop(self, node: Node, body: Node | None, update: Node | None,
                     running: int) -> int:
        """A loop whose condition the run cannot evaluate: its body runs once for the
        threads still in it, on unknown paths (its accesses are uncertain, so never
        reported), then every variable it assigns is unknown."""
        frame = self.frames[-1]
        saved = self.maybe
        self.maybe |= running
        frame.loops.append([0, 0, 0])
        try:
            if body is not None:
                self.exec(body, running)
            if update is not None:
                self.eval(update, running)
        finally:
            frame.loops.pop()
            self.maybe = saved
        for name in self.memo.assigned_names(node.ts):
            for scope in reversed(self.scopes):
                if name in scope:
                    scope[name] = None
                    break
        if frame.ret & running:
            self.ghost |= running
        return running

    def _declaration_form(self, node: Node) -> tuple:
        """(kernel, qualifiers, type text, [(name, dims, pointer, reference, value)]) of a
        declaration, decoded once per kernel (array sizes use its constants)."""
        aux = node.aux
        if aux is None or aux[0] is not self.fn:
            quals = {text(c) for c in node.children if c.type in (
                "type_qualifier", "storage_class_specifier")}
            type_text = text(node.child_by_field_name("type"))
            items = []
            for d in node.children_by_field_name("declarator"):
                value = None
                if d.type == "init_declarator":
                    value = d.child_by_field_name("value")
                    d = d.child_by_field_name("declarator")
                name, dims, ptr, ref = declarator(d, self.env_int)
                items.append((name, dims, ptr, ref, value))
            aux = node.aux = (self.fn, quals, type_text, items)
        return aux

    def declare(self, node: Node, act: int) -> None:
        _, quals, type_text, items = self._declaration_form(node)
        scope = self.scopes[-1]
        for name, dims, ptr, ref, value in items:
            if not name:
                continue
            if "__shared__" in quals:
                key = f"{name}@{node.start_byte}"
                self.shared[name] = SharedVar(key, name, type_text, tuple(dims),
                                              "extern" in quals)
                scope[name] = self._shared_value(self.shared[name])
                if not dims:
                    self._scalars[id(scope), name] = self.shared[name]
                continue
            if dims:
                scope[name] = None           # a thread's own array: not tracked
                continue
            if value is None:
                scope[name] = None
                continue
            if value.type in ("initializer_list", "argument_list"):
                inner = [c for c in value.named_children if c.type != "comment"]
                if len(inner) == 1 and not ref:
                    v = self.eval(inner[0], act)
                else:
                    for c in inner:
                        self.eval(c, act)
                    v = None
            else:
                v = self.eval(value, act)
                if v is None and not ptr and not ref and is_int_type(type_text) and \
                        self._uniform_global_load(value, act):
                    # one count per block read from memory (`int m = cnt[blockIdx.x]`):
                    # unknown but the same in every thread, so it gets the sample
                    # figure an integer parameter gets
                    v = self.param_value
            if ref:
                v = None
            elif not ptr and isinstance(v, (SPtr, GPtr)) and "auto" not in type_text:
                v = None
            elif not ptr and not is_int_type(type_text) and "auto" not in type_text \
                    and not isinstance(v, (SPtr, GPtr)):
                v = None if not group_type(type_text) else v
            elif ptr and isinstance(v, SPtr):
                v = self.decay(v, clean(type_text))
            scope[name] = v        # a new variable: only the active threads see it

    def _uniform_global_load(self, node: Node, act: int) -> bool:
        """``node`` loads global memory at an index the same for every active thread."""
        node = unwrap(node)
        if node.type != "subscript_expression":
            return False
        base = node.child_by_field_name("argument")
        idx = node.child_by_field_name("indices")
        if base is None or idx is None or unwrap(base).type != "identifier":
            return False
        inner = [c for c in idx.named_children if c.type != "comment"]
        if len(inner) != 1 or _SIDE_EFFECT.search(text(inner[0])):
            return False
        if not isinstance(self.eval(base, act), GPtr):
            return False
        v = self.eval(inner[0], act)
        if isinstance(v, int):
            return True
        if isinstance(v, tuple):
            seen = {v[i] for i in self.bits(act)}
            return len(seen) == 1 and None not in seen
        return False

    def decay(self, v: SPtr, elem: str) -> SPtr | None:
        """A shared array or pointer converted to ``elem*`` (arrays decay to their
        first element; a pointer of another element type reinterprets the bytes)."""
        if len(v.dims) > 1:
            return None
        if elem == clean(v.elem) and len(v.dims) <= 1:
            return SPtr(v.key, v.offset, v.elem, (), v.size)
        aliases = self.ctx.model.type_aliases
        if aliases.is_opaque(elem) or aliases.is_opaque(clean(v.elem)):
            # out_type* to out_type_alias* is the same element; any other type than an
            # opaque one reinterprets bytes whose width nobody knows
            same = aliases.resolved(elem) == aliases.resolved(clean(v.elem))
            return SPtr(v.key, v.offset, v.elem, (), v.size) if same else None
        if self.elem_size(elem) is None:
            return None
        return SPtr(v.key, v.offset, elem, (), v.size)

    def _shared_value(self, var: SharedVar):
        esize = self.elem_size(var.elem)
        if esize is None:
            return None
        size = None
        if var.dims and all(d is not None for d in var.dims):
            size = esize
            for d in var.dims:
                size *= d
        elif not var.dims:
            size = esize
        if size is not None and size > MAX_SHARED_BYTES:
            raise GiveUp("a __shared__ array no GPU can hold")
        return SPtr(var.key, 0, var.elem, tuple(var.dims), size)

    def env_int(self, node_text: str) -> int | None:
        return eval_int(node_text, self.fn.constants)

    # ---- variables -----------------------------------------------------------------
    def lookup(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope:
                return True, scope[name]
        return False, None

    def local_shared_scalar(self, name: str) -> SharedVar | None:
        """The ``__shared__`` scalar of the kernel that ``name`` means here (the
        innermost scope holding it declared it so), else None."""
        if not self._scalars:
            return None
        for scope in reversed(self.scopes):
            if name in scope:
                return self._scalars.get((id(scope), name))
        return None

    def assign(self, name: str, value, act: int) -> None:
        for scope in reversed(self.scopes):
            if name in scope:
                scope[name] = self.merge(scope[name], value, act)
                return
        # a global or unknown variable: nothing to track
