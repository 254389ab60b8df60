"""How a block run executes a call: a barrier clears the shared-memory log, a warp sync
orders lanes, a warp intrinsic has its mask checked (CL105), a cooperative group method
gives ranks and sizes, a device function of the unit is inlined (its body run for the
calling threads with its parameters bound), and a function the run cannot see into
counts as a barrier.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.model.instances import bind_call
from cudalint.parse import captures
from cudalint.analysis.sync.block_log import GiveUp
from cudalint.analysis.sync.callees import (LANE_FUNCS, MASKED, MAX_INLINE_DEPTH, PURE,
                                            WARP_INTRINSICS, reachable_texts)
from cudalint.analysis.sync.cfg import Group, callee_short_name, classify_sync
from cudalint.analysis.sync.syntax import text, unwrap
from cudalint.analysis.sync.values import FULL_MASK, GPtr, SPtr, minmax

if TYPE_CHECKING:
    from cudalint.model.kernels import Function


# words whose presence in a device function makes it a cooperative one (its threads
# differ, or meet): see CallEval._one_thread_call
_THREAD_WORDS = (b"threadIdx", b"thread_rank", b"__syncthreads", b"__syncwarp", b"sync(",
                 b"bar.sync", b"barrier") + tuple(n.encode() for n in sorted(LANE_FUNCS))


class Frame:
    def __init__(self, site: Node | None = None):
        # the kernel's call statement this inlined body runs under (the outermost call:
        # where a barrier or a guard goes when the body races with itself), None in the
        # kernel's own frame
        self.site = site
        self.ret = 0
        self.value: list | None = None
        self.loops: list[list[int]] = []      # [break, continue, left early: masks]


class CallEval:
    """The part of :class:`~cudalint.analysis.sync.block_run.BlockRun` that runs calls:
    barriers and warp syncs, warp intrinsics, cooperative group methods, device
    functions of the unit (inlined, in a new :class:`Frame`) and inline ``asm``; an
    unknown function counts as a barrier."""

    # ---- calls ---------------------------------------------------------------------------
    def call(self, node: Node, act: int):
        aux = node.aux
        if aux is None or aux[0] is not self.groups:
            # decoded once per group handles in scope (the barrier kind depends on them)
            fnode = node.child_by_field_name("function")
            args_node = node.child_by_field_name("arguments")
            arg_nodes = [c for c in args_node.named_children if c.type != "comment"] \
                if args_node is not None else []
            aux = node.aux = (self.groups, fnode, arg_nodes, classify_sync(node, self.groups))
        _, fnode, arg_nodes, sync = aux
        if sync is not None:
            vals = [self.eval(a, act) for a in arg_nodes]
            if sync.kind in ("block", "grid", "named"):
                if sync.kind == "block":
                    self.arrive(node, act)
                self.block_barrier()
                return None
            mask = None
            if fnode is not None and text(fnode) == "__syncwarp":
                mask = (vals[0] if isinstance(vals[0], int) else None) if vals else FULL_MASK
                self.check_mask(node, mask, act)
            self.warp_sync(act, mask, sync.size)
            return None
        name = text(fnode) if fnode is not None else ""
        short = callee_short_name(fnode)
        if fnode is not None and fnode.type == "field_expression":
            return self.method(node, fnode, arg_nodes, act)
        if short in WARP_INTRINSICS:
            vals = [self.eval(a, act) for a in arg_nodes]
            if vals and isinstance(vals[0], int):
                self.check_mask(node, vals[0], act)
            return None
        if short in LANE_FUNCS:
            return tuple(self.lane_of)
        if short in ("this_thread_block", "tiled_partition", "this_grid",
                     "coalesced_threads"):
            return None
        callee = self.functions.get(short)
        if callee is not None and callee.body is not None:
            if fnode.type == "template_function" and callee.is_template:
                callee = self.instantiate(callee, fnode, act) or callee
            return self.inline(callee, arg_nodes, act, node)
        vals = [self.eval(a, act) for a in arg_nodes]
        if short in ("min", "max", "umin", "umax", "imin", "imax") and len(vals) == 2:
            return minmax(short.endswith("min"), vals[0], vals[1])
        if short in ("static_cast", "int", "unsigned", "size_t") and len(vals) == 1:
            return vals[0] if not isinstance(vals[0], (SPtr, GPtr)) else None
        if short == "reinterpret_cast" and len(vals) == 1 and fnode.type == "template_function":
            targs = fnode.child_by_field_name("arguments")
            return self.cast(text(targs).strip("<>"), vals[0])
        if short.startswith("__") or PURE.match(name) or PURE.match(short):
            return None
        if short.startswith("atomic"):
            return None
        # a function the unit does not define: it may contain a barrier
        self.block_barrier()
        return None

    def method(self, node: Node, fnode: Node, arg_nodes: list[Node], act: int):
        recv = fnode.child_by_field_name("argument")
        meth = text(fnode.child_by_field_name("field"))
        group = self.groups.get(text(recv)) if recv is not None and recv.type == "identifier" \
            else (Group("block") if "this_thread_block" in text(recv) else None)
        for a in arg_nodes:
            self.eval(a, act)
        if group is not None:
            if meth == "thread_rank":
                if group.kind == "block":
                    return self.linear
                if group.kind == "tile" and group.size:
                    return tuple(t % group.size for t in self.linear)
                return None
            if meth in ("size", "num_threads"):
                if group.kind == "block":
                    return self.total
                if group.kind == "tile" and group.size:
                    return group.size
                return None
            if meth == "meta_group_rank" and group.kind == "tile" and group.size:
                return tuple(t // group.size for t in self.linear)
            return None
        if meth in ("shfl", "shfl_down", "shfl_up", "shfl_xor", "any", "all", "ballot",
                    "match_any", "match_all", "thread_rank", "size", "num_threads", "x",
                    "y", "z", "load", "get"):
            return None
        self.block_barrier()       # an unknown method (CUB, cuda::barrier): may sync
        return None

    def instantiate(self, callee: "Function", fnode: Node, act: int) -> "Function | None":
        """``f<a, b>(...)``: the device function with its template arguments bound (the
        caller's values; types through the caller's instantiation), None if unknown."""
        targs = fnode.child_by_field_name("arguments")
        args = [c for c in (targs.named_children if targs is not None else [])
                if c.type != "comment"]
        values = [v if isinstance(v, int) else None
                  for v in (self.eval(a, act) if a.type != "type_descriptor" else None
                            for a in args)]
        return bind_call(callee, args, values, self.fn.type_bindings)

    def inline(self, callee: "Function", arg_nodes: list[Node], act: int,
               site: Node | None = None):
        if self.depth >= MAX_INLINE_DEPTH:
            raise GiveUp("inline depth")
        vals = []
        for k, a in enumerate(arg_nodes):
            v = self.eval(a, act)
            p = callee.params[k] if k < len(callee.params) else None
            if p is not None and p.is_reference:
                v = None
            vals.append(v)
        if self.memo.inert(callee, self.functions) and \
                not any(isinstance(v, SPtr) for v in vals):
            # nothing in it can touch shared memory, synchronize, check a mask or
            # leave the kernel, and no integer it returns is used: only its reference
            # arguments change (to unknown, as after a run of its body)
            for k, a in enumerate(arg_nodes):
                p = callee.params[k] if k < len(callee.params) else None
                if p is not None and p.is_reference and unwrap(a).type == "identifier":
                    self.assign(text(unwrap(a)), None, act)
            return None
        saved_scopes = self.scopes
        saved_groups = self.groups
        self.scopes = [{**(callee.bindings or {}), **self._bind_params(callee, vals)}]
        self.groups = self.memo.groups(callee.body)
        outer = self.frames[-1].site if self.frames else None
        if outer is None and site is not None and len(self.frames) == 1 and \
                not self._one_thread_call(callee, vals):
            site = None
        frame = Frame(outer if outer is not None else site)
        self.frames.append(frame)
        self.depth += 1
        try:
            self.exec_block(self.memo.syntax(callee.body), act)
        finally:
            self.depth -= 1
            self.frames.pop()
            self.scopes = saved_scopes
            self.groups = saved_groups
        # reference arguments: the callee may have changed them
        for k, a in enumerate(arg_nodes):
            p = callee.params[k] if k < len(callee.params) else None
            if p is not None and p.is_reference and unwrap(a).type == "identifier":
                self.assign(text(unwrap(a)), None, act)
        return tuple(frame.value) if frame.value is not None else None

    def _one_thread_call(self, callee: "Function", vals: list) -> bool:
        """The kernel's call runs a computation written for one thread: every argument
        is the same for all threads (a shared pointer at one offset included) and
        nothing the call can run names a thread index, a lane, a barrier or a warp
        intrinsic. When all threads run such a call on shared data, its races with
        itself are one bug whose fix goes at the call (one thread runs it, then a
        barrier), not at the accesses inside it (CL102 reports them there)."""
        for v in vals:
            if isinstance(v, tuple) or isinstance(v, SPtr) and isinstance(v.offset, tuple):
                return False
        memo = self.__dict__.setdefault("_one_thread", {})
        ok = memo.get(callee.name)
        if ok is None:
            texts = reachable_texts(callee, self.functions)
            ok = memo[callee.name] = not any(
                w in t for t in texts for w in _THREAD_WORDS) and \
                not any(m in t for t in texts for m in MASKED)
        return ok

    def asm(self, node: Node, act: int):
        sync = classify_sync(node, self.groups)
        if sync is not None:
            if sync.kind == "warp":
                self.warp_sync(act, None, None)
            else:
                if sync.kind == "block":
                    self.arrive(node, act)
                self.block_barrier()
            return None
        asm_text = text(node)
        for out in captures("(gnu_asm_output_operand value: (_) @v)", node.ts).get("v", []):
            name = text(unwrap(out))
            if "%laneid" in asm_text and unwrap(out).type == "identifier":
                self.assign(name, tuple(self.lane_of), act)
            elif unwrap(out).type == "identifier":
                self.assign(name, None, act)
        return None
