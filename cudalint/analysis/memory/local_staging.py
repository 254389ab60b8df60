"""Whether a per-thread array stages data the thread loads from memory: the test that
decides if CL204's last remedy ("hold fewer elements per thread, process the array in
chunks") is one a reader can act on.

CL204 offers that remedy alone when nothing cheaper holds the array (no registers, no
shared-memory slice, no unrolling). The eighth triage (bench/triage/sheet-newcorpus8.md,
class N1) judged 8 such findings not worth acting on: arrays of values the thread
computes itself (indices of the hits of a scan, ``tmp[cnt] = k``; octree flags;
recurrence coefficients in gpu4pyscf's ``contract_Et.cu``), where the message has nothing
to offer. The findings of that kind judged right are arrays that buffer loaded data:
AutoGPTQ's ``weight[k] = scale * (w_tmp - zero)`` with ``w_tmp`` read from ``mat`` in the
same loop (sheet-newcorpus8 #93-#96) and DeepSpeed's ``data[reg_count] = data_reg``,
``data_reg = vals_cast[...]`` (sheet-newcorpus2 #31: processing the group in chunks, read
again from global memory, measured -13% and -22% on an H100,
bench/triage/gpu/results-newcorpus2/layers.json). There the array's local traffic
doubles the kernel's own, and consuming each value where it is loaded removes it.

The same holds where the data pick the element (``h[labels[k] % 200] += 1.0f``, an
index loaded from memory): every loaded value costs a local access.

``stages_loaded_data``: inside a loop, an index of the array or the value of an ``=``
store to it reads memory (a subscript or dereference of anything but a local array of
the function, a ``->`` field) in the same pass: in the expression itself, or through
locals given a value in the body of the innermost loop around the access (not the
loop's counter: ``for (int k = off[0]; ...) tmp[cnt] = k`` stores an index; not a
value given outside the loop: SoftGroup's ``cnt = thre - start_len[0]`` after the
scan). A store outside every loop (``Ez[0] = cc``) streams nothing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.analysis.memory.local_index import LocalArrayFacts, LocalArrayIndexing

_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
MAX_DEPTH = 4          # locals followed from a stored value
MAX_NODES = 2048       # nodes of one stored expression walked (fuzzed sums)


def stages_loaded_data(owner: "LocalArrayIndexing", facts: "LocalArrayFacts") -> bool:
    fn = facts.array.function
    if fn is None or fn.body is None:
        return False
    local = {a.name for a in owner.model.local_arrays if a.function is fn}
    for access in facts.accesses:
        scope = _loop_body(owner, access.node, fn.body)
        if scope is None:
            continue                    # one store outside loops: nothing streams
        if access.source == "memory" and any(
                _reads_memory(i, scope, local, 0, set()) for i in _indices(access.node)):
            return True                 # an index loaded in the pass: a histogram
        right = _stored_value(owner, access.node)
        if right is not None and _reads_memory(right, scope, local, 0, set()):
            return True
    return False


def _indices(node: Node) -> list[Node]:
    """The index expressions of ``a[i][j]`` (``node`` the outermost subscript)."""
    out: list[Node] = []
    while node is not None and node.type == "subscript_expression":
        idx = node.child_by_field_name("indices")
        if idx is not None:
            out.extend(idx.named_children)
        node = node.child_by_field_name("argument")
    return out


def _stored_value(owner: "LocalArrayIndexing", node: Node) -> Node | None:
    """The right side of ``node = value`` or ``node.field = value`` (a plain store),
    else None."""
    cur, up = node, owner.parent(node)
    while up is not None and (up.type == "parenthesized_expression" or (
            up.type == "field_expression" and
            text(up.child_by_field_name("operator")) == "." and
            up.child_by_field_name("argument") is not None and
            up.child_by_field_name("argument").id == cur.id)):
        cur, up = up, owner.parent(up)
    if up is None or up.type != "assignment_expression":
        return None
    left = up.child_by_field_name("left")
    if left is None or left.id != cur.id or text(up.child_by_field_name("operator")) != "=":
        return None
    return up.child_by_field_name("right")


def _loop_body(owner: "LocalArrayIndexing", node: Node, top: Node) -> Node | None:
    """The body of the innermost loop around ``node`` (None: in no loop)."""
    cur = owner.parent(node)
    while cur is not None and cur.id != top.id:
        if cur.type in _LOOPS:
            return cur.child_by_field_name("body")
        cur = owner.parent(cur)
    return None


def _reads_memory(expr: Node, scope: Node, local: set[str], depth: int,
                  seen: set[str]) -> bool:
    stack = [expr]
    walked = 0
    while stack:
        n = stack.pop()
        walked += 1
        if walked > MAX_NODES:
            return False
        t = n.type
        if t == "subscript_expression":
            base = n.child_by_field_name("argument")
            while base is not None and base.type == "subscript_expression":
                base = base.child_by_field_name("argument")
            if base is None or base.type != "identifier" or text(base) not in local:
                return True
        elif t == "pointer_expression" and text(n.child_by_field_name("operator")) == "*":
            return True
        elif t == "field_expression" and text(n.child_by_field_name("operator")) == "->":
            return True
        elif t == "identifier" and depth < MAX_DEPTH:
            name = text(n)
            if name not in seen and name not in local:
                seen.add(name)
                for value in _values_in(scope, name):
                    if _reads_memory(value, scope, local, depth + 1, seen):
                        return True
        stack.extend(n.named_children)
    return False


def _values_in(scope: Node, name: str) -> list[Node]:
    """The values ``name`` is given inside ``scope``: initialisers and ``=`` sides."""
    out: list[Node] = []
    if name.encode() not in (scope.text or b""):
        return out
    stack = [scope]
    while stack:
        n = stack.pop()
        if n.type == "init_declarator":
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "identifier" and text(d) == name:
                v = n.child_by_field_name("value")
                if v is not None:
                    out.append(v)
        elif n.type == "assignment_expression":
            left = n.child_by_field_name("left")
            if left is not None and left.type == "identifier" and text(left) == name:
                v = n.child_by_field_name("right")
                if v is not None:
                    out.append(v)
        stack.extend(n.named_children)
    return out
