"""Staged tiles: shared-memory stores (and the global loads feeding them) whose cost every
thread of a large block amortises by reading the whole tile afterwards.

pcn's tf_approxmatch (sheet-newcorpus4 #34-36, #51-53) stages a tile of records with the
block: ``for (l = threadIdx.x; l < lend; l += blockDim.x) { x2 = xyz2[3*(l0+l)]; ...
buf[l*4+0] = x2; ... }``, then, after a barrier, every thread walks the whole tile:
``for (l = 0; l < lend; l++) ... buf[l*4+0] ...``. Each staged element is then read by
every thread of the block, so the staging loads and stores are one part in the block's
size of the tile's traffic. On an H100 (tools/gputruth/staging.py,
fixtures/CL202/staging.json) the remedies of CL201 (SoA loads) and CL202 (a float4 store
per record) changed such a kernel's time by -3.2% to +30% at 128 and 512 threads, and
saved 4.8-9.7% at 32 threads. So the shape is silent when the block has at least
``MIN_THREADS`` threads.

The shape is read from the source: the store's loop starts from the thread index, the
later loop starts from a constant, steps by one, has the same bound, and reads the array
at the index the store wrote (its counter in place of the store's); both loops sit in the
same loop (the tile loop) or in none.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.analysis.memory.figures import Access

# the smallest block whose threads amortise a staged tile (fixtures/CL202/staging.json:
# 128 and 512 threads, remedies -3.2% to +30%; 32 threads, 4.8-9.7% saved)
MIN_THREADS = 128

_LOOPS = ("for_statement", "while_statement", "do_statement")


def _loop_of(node: Node, body: Node | None) -> Node | None:
    cur = node.parent
    while cur is not None and (body is None or cur.id != body.id):
        if cur.type in _LOOPS:
            return cur
        cur = cur.parent
    return None


def _counter(loop: Node) -> tuple[str, Node] | None:
    """(name, first value) of a ``for`` loop's counter."""
    init = loop.child_by_field_name("initializer")
    if init is None:
        return None
    if init.type == "declaration":
        decl = init.child_by_field_name("declarator")
        if decl is None or decl.type != "init_declarator":
            return None
        name, value = decl.child_by_field_name("declarator"), decl.child_by_field_name("value")
    elif init.type == "assignment_expression":
        name, value = init.child_by_field_name("left"), init.child_by_field_name("right")
    else:
        return None
    if name is None or value is None or name.type != "identifier":
        return None
    return text(name), value


def _bound(loop: Node, name: str) -> str | None:
    """``N`` of a ``for`` condition ``name < N``."""
    cond = loop.child_by_field_name("condition")
    if cond is None or cond.type != "binary_expression" or \
            text(cond.child_by_field_name("operator")) not in ("<", "<=") or \
            text(cond.child_by_field_name("left")) != name:
        return None
    return text(cond.child_by_field_name("operator")) + text(cond.child_by_field_name("right"))


def _steps_by_one(loop: Node, name: str) -> bool:
    update = loop.child_by_field_name("update")
    return update is not None and re.sub(r"\s+", "", text(update)) in (
        f"{name}++", f"++{name}", f"{name}+=1", f"{name}={name}+1")


def _squash(index: str) -> str:
    return re.sub(r"\s+", "", index)


def _renamed(index: str, old: str, new: str) -> str:
    return re.sub(rf"\b{re.escape(old)}\b", new, _squash(index))


def staged_tile_loop(store: "Access") -> Node | None:
    """The loop in which every thread of the block reads back the whole tile that this
    ``__shared__`` store stages, or None: see the module docstring."""
    if store.space != "shared" or not store.is_store or store.is_load or \
            store.block.source == "any-1d" or store.block.threads < MIN_THREADS:
        return None
    node, body = store.node, store.kernel.body
    if node.type != "subscript_expression" or body is None:
        return None
    staging = _loop_of(node, body)
    if staging is None or staging.type != "for_statement":
        return None
    counter = _counter(staging)
    if counter is None or "threadIdx" not in text(counter[1]):
        return None                 # not the block staging the tile together
    name = counter[0]
    bound = _bound(staging, name)
    array = text(node.child_by_field_name("argument"))
    index = text(node.child_by_field_name("indices"))
    if bound is None or name not in re.findall(r"\w+", index):
        return None
    tile = _loop_of(staging, body)
    for loop in (n for n in _descendants(tile if tile is not None else body)
                 if n.type == "for_statement" and n.start_byte > staging.end_byte):
        around = _loop_of(loop, body)
        if (around is None) != (tile is None) or around is not None and around.id != tile.id:
            continue                # another phase of the kernel, not this tile's
        walk = _counter(loop)
        if walk is None or "threadIdx" in text(walk[1]) or \
                not re.fullmatch(r"\s*0\s*", text(walk[1])) or \
                _bound(loop, walk[0]) != bound or not _steps_by_one(loop, walk[0]):
            continue
        want = _renamed(index, name, walk[0])
        for read in _descendants(loop):
            if read.type == "subscript_expression" and \
                    text(read.child_by_field_name("argument")) == array and \
                    _squash(text(read.child_by_field_name("indices"))) == want and \
                    not _is_written(read):
                return loop
    return None


def staging_load(load: "Access", shared: list["Access"]) -> Node | None:
    """The read-back loop of the tile when every use of this global load's value is a
    staged store (``staged_tile_loop``), directly (``buf[i] = g[j]``) or through a local
    the load initialises (``float x = g[j]; buf[i] = x;``); else None."""
    if load.space != "global" or load.is_store or load.kernel.body is None:
        return None
    stores = {(a.node.start_byte, a.node.end_byte): a for a in shared
              if a.space == "shared" and a.is_store}
    node = load.node
    parent = node.parent
    targets: list[Node] = []
    if parent is not None and parent.type == "assignment_expression" and \
            text(parent.child_by_field_name("operator")) == "=" and \
            parent.child_by_field_name("right") is not None and \
            parent.child_by_field_name("right").id == node.id:
        targets.append(parent.child_by_field_name("left"))
    elif parent is not None and parent.type == "init_declarator" and \
            parent.child_by_field_name("value") is not None and \
            parent.child_by_field_name("value").id == node.id:
        name = text(parent.child_by_field_name("declarator"))
        scope = parent.parent.parent if parent.parent is not None else None
        if scope is None or not re.fullmatch(r"\w+", name):
            return None
        for use in _descendants(scope):
            if use.type != "identifier" or text(use) != name or \
                    use.start_byte < parent.end_byte:
                continue
            up = use.parent
            if up is None or up.type != "assignment_expression" or \
                    text(up.child_by_field_name("operator")) != "=" or \
                    up.child_by_field_name("right") is None or \
                    up.child_by_field_name("right").id != use.id:
                return None     # the value is used for something else too
            targets.append(up.child_by_field_name("left"))
    found = None
    for target in targets:
        store = stores.get((target.start_byte, target.end_byte))
        loop = staged_tile_loop(store) if store is not None else None
        if loop is None:
            return None
        found = found or loop
    return found


def _is_written(node: Node) -> bool:
    up = node.parent
    return up is not None and (
        up.type == "assignment_expression" and up.child_by_field_name("left") is not None
        and up.child_by_field_name("left").id == node.id or up.type == "update_expression")


def _descendants(node: Node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))
