"""Whether an lvalue expression stores, loads or both (an update), for the lane model's
accesses: the left of an assignment stores (and loads when compound), ``++``/``--``
update, a reference binding (``T& r = a[e];``) is what the uses of ``r`` after it do,
anything else loads."""
from __future__ import annotations

from tree_sitter import Node

from cudalint.parse import text


def _node_parent(node: Node) -> Node | None:
    return node.parent


def direction_of(node: Node, up=None) -> tuple[bool, bool]:
    """(is_store, is_load) for an lvalue expression."""
    up = up or _node_parent
    cur = node
    parent = up(cur)
    while parent is not None and parent.type == "parenthesized_expression":
        cur, parent = parent, up(parent)
    if parent is not None and parent.type == "assignment_expression" and \
            parent.child_by_field_name("left").id == cur.id:
        op = text(parent.child_by_field_name("operator"))
        return True, op != "="
    if parent is not None and parent.type == "update_expression":
        return True, True
    if parent is not None and parent.type == "init_declarator":
        decl = parent.child_by_field_name("declarator")
        if decl is not None and decl.type == "reference_declarator":
            return _reference_uses(decl, up(parent), up)
    return False, True


MAX_REFERENCE_USES = 4096       # nodes walked after a reference binding (issue 25)


def _reference_uses(decl: Node, declaration: Node | None, up) -> tuple[bool, bool]:
    """(is_store, is_load) of ``T& r = a[e];``: the binding loads nothing, the uses of
    ``r`` after it in its block do (assigned, as a whole or a field: a store; compound
    assignment or ``++``: both; any other mention: a load). Sheet-newcorpus9 W1: 3dgrut's
    ``float3& vrt = gPrimVrt[k]; vrt = ...;`` was a load. A ``const`` reference, or one
    whose uses cannot be walked, reads."""
    name = next((c for c in decl.named_children if c.type == "identifier"), None)
    block = up(declaration) if declaration is not None else None
    if name is None or block is None or declaration is None or \
            "const" in text(declaration).split("=", 1)[0].split():
        return False, True
    key = name.text
    store = load = False
    stack = [c for c in block.children if c.start_byte >= declaration.end_byte]
    seen = 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_REFERENCE_USES:
            return False, True
        if node.type == "identifier" and node.text == key:
            cur, par = node, up(node)
            while par is not None and par.type in ("parenthesized_expression",
                                                   "field_expression") and \
                    (par.type != "field_expression" or
                     par.child_by_field_name("argument") == cur):
                cur, par = par, up(par)
            if par is not None and par.type == "assignment_expression" and \
                    par.child_by_field_name("left") == cur:
                store = True
                load = load or text(par.child_by_field_name("operator")) != "="
            elif par is not None and par.type == "update_expression":
                store = load = True
            else:
                load = True
            continue
        stack.extend(node.children)
    return (store, load) if store or load else (False, True)
