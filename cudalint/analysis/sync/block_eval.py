"""How a block run evaluates an expression: per thread, for the active threads only.

``threadIdx`` gives each simulated thread its own index, ``blockDim`` the block shape,
``blockIdx``/``gridDim`` and kernel parameters the sample's uniform figures; ``&&``,
``||`` and ``?:`` split the active threads as branches do. An lvalue in shared memory is
an :class:`~cudalint.analysis.sync.values.SPtr` with a per-thread byte offset: loading
or storing through it logs the access for the race check.
"""
from __future__ import annotations

import re

from tree_sitter import Node

from cudalint.model.consteval import eval_int
from cudalint.analysis.sync.syntax import clean, int_literal, is_int_type, text, unwrap
from cudalint.analysis.sync.values import GLOBAL, WARP, GPtr, SPtr, binop, unop
from cudalint.model.types import type_size

_VECTOR = {"float2": "float", "float3": "float", "float4": "float", "int2": "int",
           "int3": "int", "int4": "int", "uint2": "unsigned", "uint4": "unsigned",
           "double2": "double", "half2": "__half", "__half2": "__half"}


class ExpressionEval:
    """The part of :class:`~cudalint.analysis.sync.block_run.BlockRun` that evaluates
    expressions for the active threads: identifiers, thread and block indices,
    arithmetic, pointers into shared memory, assignments, loads and stores (logged
    through :meth:`~cudalint.analysis.sync.block_log.SharedLog.record`)."""

    # ---- expressions -------------------------------------------------------------------
    def eval(self, node: Node | None, act: int):
        if node is None or not act:
            return None
        t = node.type
        if t == "identifier":                     # the most frequent: inline lookup
            name = text(node)
            for scope in reversed(self.scopes):
                if name in scope:
                    return scope[name]
            return self._ident_outside(name)
        if t == "binary_expression":
            return self.binary(node, act)
        if t == "number_literal":
            return int_literal(text(node))
        if t in ("true", "false"):
            return int(t == "true")
        if t in ("parenthesized_expression", "condition_clause"):
            inner = [c for c in node.named_children if c.type != "comment"]
            if len(inner) != 1:
                for c in inner:
                    v = self.eval(c, act)
                return None
            return self.eval(inner[0], act)
        if t == "identifier":
            return self.ident(node)
        if t == "qualified_identifier":
            v = eval_int(text(node), self.fn.constants)
            return v
        if t == "field_expression":
            return self.field(node, act)
        if t == "binary_expression":
            return self.binary(node, act)
        if t == "unary_expression":
            aux = node.aux
            if aux is None:
                aux = node.aux = (text(node.child_by_field_name("operator")),
                                  node.child_by_field_name("argument"))
            return unop(aux[0], self.eval(aux[1], act))
        if t == "update_expression":
            return self.update(node, act)
        if t == "assignment_expression":
            return self.assignment(node, act)
        if t == "conditional_expression":
            c = self.eval(node.child_by_field_name("condition"), act)
            tm, fm, um = self.split(c, act)
            if um:
                saved = self.maybe
                self.maybe |= um
                try:
                    a = self.eval(node.child_by_field_name("consequence"), tm | um)
                    b = self.eval(node.child_by_field_name("alternative"), fm | um)
                finally:
                    self.maybe = saved
                return None
            a = self.eval(node.child_by_field_name("consequence"), tm) if tm else None
            b = self.eval(node.child_by_field_name("alternative"), fm) if fm else None
            if not fm:
                return a
            if not tm:
                return b
            if isinstance(a, (SPtr, GPtr)) or isinstance(b, (SPtr, GPtr)):
                return None
            va, vb = self.vec(a), self.vec(b)
            return tuple(va[i] if tm >> i & 1 else vb[i] for i in range(self.n))
        if t == "cast_expression":
            aux = node.aux
            if aux is None:
                aux = node.aux = (text(node.child_by_field_name("type")),
                                  node.child_by_field_name("value"))
            return self.cast(aux[0], self.eval(aux[1], act))
        if t == "call_expression":
            return self.call(node, act)
        if t in ("subscript_expression", "pointer_expression"):
            if t == "pointer_expression" and text(node.child_by_field_name("operator")) == "&":
                return self.address_of(node.child_by_field_name("argument"), act)
            return self.load(node, act)
        if t == "sizeof_expression":
            ty = node.child_by_field_name("type")
            return type_size(text(ty), self.structs) if ty is not None else None
        if t == "comma_expression":
            self.eval(node.child_by_field_name("left"), act)
            return self.eval(node.child_by_field_name("right"), act)
        if t == "gnu_asm_expression":
            return self.asm(node, act)
        if t in ("string_literal", "char_literal", "concatenated_string", "lambda_expression",
                 "initializer_list", "null", "nullptr", "this", "type_descriptor",
                 "template_function", "raw_string_literal"):
            return None
        # anything else: evaluate children for their side effects (shared accesses)
        for c in node.named_children:
            if c.type not in ("comment", "type_descriptor", "argument_list",
                              "template_argument_list"):
                self.eval(c, act)
            elif c.type == "argument_list":
                for a in c.named_children:
                    self.eval(a, act)
        return None

    def ident(self, node: Node):
        name = text(node)
        found, v = self.lookup(name)
        if found:
            return v
        return self._ident_outside(name)

    def _ident_outside(self, name: str):
        """A name no scope of the run holds: shared, warpSize, or a constant."""
        var = self.shared.get(name)
        if var is not None:
            return self._shared_value(var)
        if name == "warpSize":
            return WARP
        if name in self.fn.constants:
            return self.fn.constants[name]
        return None

    def field(self, node: Node, act: int):
        aux = node.aux
        if aux is None:
            arg = node.child_by_field_name("argument")
            aux = node.aux = (arg, text(node.child_by_field_name("field")),
                              text(node.child_by_field_name("operator")), text(arg))
        arg, comp, op, base = aux
        if op == "." and base in ("threadIdx", "blockDim", "blockIdx", "gridDim"):
            axis = "xyz".find(comp)
            if axis < 0:
                return None
            if base == "threadIdx":
                return (self.tx, self.ty, self.tz)[axis]
            if base == "blockDim":
                return self.block[axis]
            if base == "blockIdx":
                return self.block_idx if axis == 0 else 0
            return self.grid_dim if axis == 0 else 1
        # a field of a shared struct/vector element: a load
        return self.load(node, act)

    def binary(self, node: Node, act: int):
        aux = node.aux
        if aux is None:
            aux = node.aux = (text(node.child_by_field_name("operator")),
                              node.child_by_field_name("left"),
                              node.child_by_field_name("right"))
        op, left, right = aux
        self.work += self.n >> 2          # an operation on every thread's value
        a = self.eval(left, act)
        if op in ("&&", "||"):
            tm, fm, um = self.split(a, act)
            go = (tm if op == "&&" else fm)
            saved = self.maybe
            self.maybe |= um
            try:
                b = self.eval(right, go | um) if go | um else None
            finally:
                self.maybe = saved
            bt, bf, bu = self.split(b, go | um) if go | um else (0, 0, 0)
            if op == "&&":
                res_t, res_f = tm & bt & ~um, fm | (tm & bf & ~um)
            else:
                res_t, res_f = tm | (fm & bt & ~um), fm & bf & ~um
            unknown = act & ~(res_t | res_f)
            if unknown == act:
                return None
            if res_t == act:
                return 1
            if res_f == act:
                return 0
            return tuple(None if unknown >> i & 1 else (1 if res_t >> i & 1 else 0)
                         for i in range(self.n))
        b = self.eval(right, act)
        if isinstance(a, SPtr) and op in ("+", "-"):
            return self.ptr_add(a, b, op == "-")
        if isinstance(b, SPtr) and op == "+":
            return self.ptr_add(b, a, False)
        if isinstance(a, (SPtr, GPtr)) or isinstance(b, (SPtr, GPtr)):
            return GLOBAL if op in ("+", "-") and (isinstance(a, GPtr) or isinstance(b, GPtr)) \
                else None
        return binop(op, a, b)

    def ptr_add(self, p: SPtr, off, negative: bool):
        size = self._elem_bytes(p)
        if size is None or off is None:
            return None
        step = binop("*", off, size)
        if negative:
            step = unop("-", step)
        return SPtr(p.key, binop("+", p.offset, step), p.elem, p.dims[1:] if p.dims else (),
                    p.size)

    def _elem_bytes(self, p: SPtr) -> int | None:
        size = self._size(p.elem)
        if size is None:
            return None
        for d in p.dims[1:]:
            if d is None:
                return None
            size *= d
        return size

    def cast(self, ty: str, v):
        if "*" in ty:
            if isinstance(v, SPtr):
                if ty.count("*") != 1:
                    return None
                return self.decay(v, clean(ty.replace("*", " ")))
            return GLOBAL if isinstance(v, GPtr) else None
        if is_int_type(ty) and not isinstance(v, (SPtr, GPtr)):
            return v
        return None

    def update(self, node: Node, act: int):
        aux = node.aux
        if aux is None:
            aux = node.aux = (node.child_by_field_name("argument"),
                              text(node.child_by_field_name("operator")),
                              bool(node.children and node.children[0].type in ("++", "--")))
        arg, op, prefix = aux
        old = self.eval(arg, act) if arg.type != "identifier" else self.ident(arg)
        new = binop("+" if op == "++" else "-", old, 1) if not isinstance(old, SPtr) \
            else self.ptr_add(old, 1, op == "--")
        self.store(arg, new, act, compound=True)
        return new if prefix else old

    def assignment(self, node: Node, act: int):
        aux = node.aux
        if aux is None:
            aux = node.aux = (node.child_by_field_name("left"),
                              node.child_by_field_name("right"),
                              text(node.child_by_field_name("operator")))
        left, right, op = aux
        key = None
        inner = unwrap(right)
        if op == "=" and inner.type == "cast_expression" and \
                _FLOAT_TYPE.match(text(inner.child_by_field_name("type"))):
            # `x[0] = (float)threadIdx.x`: the run keeps no float values, but an integer
            # below 2**24 converts exactly, so the stores differ where the integers do
            # (what a write conflict compares)
            key = self.eval(inner.child_by_field_name("value"), act)
            value = self.cast(text(inner.child_by_field_name("type")), key)
            if not _exact_in_float(key):
                key = None
        else:
            value = self.eval(right, act)
        if op != "=":
            old = self.eval(left, act) if left.type != "identifier" else self.ident(left)
            if isinstance(old, SPtr) and op in ("+=", "-="):
                value = self.ptr_add(old, value, op == "-=")
            else:
                value = binop(op[:-1], old, value)
        self.store(left, value, act, compound=op != "=", key=key)
        return value

    def store(self, left: Node, value, act: int, compound: bool, key=None) -> None:
        left = unwrap(left)
        if left.type == "identifier":
            name = text(left)
            found, _ = self.lookup(name)
            if found:
                self.assign(name, value, act)
                var = self.local_shared_scalar(name)
                if var is not None and not compound:
                    # a `__shared__ int x;` of the kernel: its value is followed like a
                    # local's, and one store by threads with different values is CL107's
                    p = self._shared_value(var)
                    if p is not None:
                        self.write_conflict(p, left, value if key is None else key, act)
                return
            var = self.shared.get(name)
            if var is not None and not var.dims:
                p = self._shared_value(var)
                if p is not None:
                    self.record(p, left, True, act)
                    if not compound:
                        self.write_conflict(p, left, value if key is None else key, act)
            return
        p = self.lvalue(left, act)
        if isinstance(p, SPtr):
            self.record(p, left, True, act)
            if not compound:
                self.write_conflict(p, left, value if key is None else key, act)

    def load(self, node: Node, act: int):
        p = self.lvalue(node, act)
        if isinstance(p, SPtr):
            if p.dims:
                return p          # an inner row of a multi-dimensional array: a pointer
            self.record(p, node, False, act)
        return None

    def address_of(self, node: Node, act: int):
        node = unwrap(node)
        if node.type == "identifier":
            var = self.shared.get(text(node))
            found, _ = self.lookup(text(node))
            if var is not None and not found:
                return self._shared_value(var)
            return None
        p = self.lvalue(node, act)
        return p if isinstance(p, SPtr) else None

    def lvalue(self, node: Node, act: int):
        """Where an lvalue expression lives (SPtr with per-thread byte offset), else
        GLOBAL or None."""
        node = unwrap(node)
        t = node.type
        if t == "subscript_expression":
            aux = node.aux
            if aux is None:
                idx_list = node.child_by_field_name("indices")
                idx_nodes = [c for c in idx_list.named_children if c.type != "comment"] \
                    if idx_list is not None else []
                aux = node.aux = (node.child_by_field_name("argument"),
                                  idx_nodes[0] if len(idx_nodes) == 1 else None)
            base = self.eval(aux[0], act)
            idx = self.eval(aux[1], act) if aux[1] is not None else None
            if isinstance(base, SPtr):
                return self.ptr_add(base, idx, False)
            return GLOBAL if isinstance(base, GPtr) else None
        if t == "pointer_expression":
            base = self.eval(node.child_by_field_name("argument"), act)
            if isinstance(base, SPtr):
                return SPtr(base.key, base.offset, base.elem, base.dims[1:] if base.dims
                            else (), base.size)
            return GLOBAL if isinstance(base, GPtr) else None
        if t == "field_expression":
            op = text(node.child_by_field_name("operator"))
            arg = node.child_by_field_name("argument")
            fname = text(node.child_by_field_name("field"))
            if op == "->":
                base = self.eval(arg, act)
            else:
                if unwrap(arg).type == "identifier":
                    found, _ = self.lookup(text(unwrap(arg)))
                    var = self.shared.get(text(unwrap(arg)))
                    base = self._shared_value(var) if var is not None and not found and \
                        not var.dims else None
                else:
                    base = self.lvalue(arg, act)
            if not isinstance(base, SPtr) or base.dims:
                return GLOBAL if isinstance(base, GPtr) else None
            elem = clean(base.elem)
            st = self.structs.get(elem)
            if st is not None and fname in st.fields:
                off, ftype = st.fields[fname]
            elif fname in "xyzw" and len(fname) == 1 and _VECTOR.get(elem):
                ftype = _VECTOR[elem]
                off = "xyzw".index(fname) * (type_size(ftype) or 4)
            else:
                return None
            return SPtr(base.key, binop("+", base.offset, off), ftype, (), base.size)
        if t == "identifier":
            v = self.ident(node)
            return v if isinstance(v, SPtr) and not v.dims else None
        return None


_FLOAT_TYPE = re.compile(r"^\s*(?:const\s+)?(?:float|double)\s*$")


def _exact_in_float(v) -> bool:
    """An integer (or per-thread integers) that a float holds exactly."""
    vals = v if isinstance(v, tuple) else (v,)
    return all(isinstance(x, int) and not isinstance(x, bool) and abs(x) < 1 << 24
               for x in vals if x is not None) and any(x is not None for x in vals)
