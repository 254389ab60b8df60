"""Where a name is written in a function body, found from the text instead of a query
over every identifier: the identifier nodes spelled that way, the path of nodes down to
each, whether a lambda, inline assembly or code the parser could not read surrounds it,
and whether it is the name a declaration declares.

Pointer analyses (pointer_access for CL203, local_index for CL204) ask about a few names
per body; searching the bytes for each and descending the tree only to the matches costs
far less than visiting every node, however deep a fuzzed expression nests.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Iterator

from tree_sitter import Node

from cudalint.parse import captures, text

_DECLARATOR_TYPES = frozenset({"pointer_declarator", "reference_declarator",
                               "array_declarator", "init_declarator", "declaration",
                               "parameter_declaration", "function_declarator",
                               "optional_parameter_declaration"})


_OPAQUE = {"lambda_expression": "captured by a lambda",
           "gnu_asm_expression": "used in inline assembly",
           "asm_statement": "used in inline assembly",
           "ERROR": "in code the parser could not read"}


_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$")


@lru_cache(maxsize=1024)
def _bounded_pattern(name: str) -> "re.Pattern[bytes]":
    return re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")


@lru_cache(maxsize=8192)
def _word_pattern(name: str) -> "re.Pattern[bytes]":
    """``name`` not followed by more of an identifier (the byte before is checked by the
    caller: a pattern that starts with a literal is searched about 10x faster than one
    that starts with a lookbehind). Compiled once per process: names repeat from file to
    file, and compiling costs more than searching a function body."""
    return re.compile(re.escape(name.encode("utf-8", "replace")) + rb"(?![A-Za-z0-9_$])")


def _node_parent(node: Node) -> Node | None:
    return node.parent


def scan_identifiers(within: Node, data: bytes, name: str,
                     parents: dict[int, Node] | None = None,
                     spans: "list[tuple[int, int]] | None" = None
                     ) -> Iterator[tuple[Node, list[Node], str | None]]:
    """Every ``identifier`` node spelled ``name`` inside ``within``, in source order, the
    same ones a ``(identifier)`` query finds (see scan_paths). Yields (identifier, path
    from ``within`` down to it, why it is opaque: the innermost lambda, inline assembly or
    ERROR node around it, or None); the path is reused, read it before the next item."""
    for s, e, path, opaque in scan_paths(within, data, name, parents, spans):
        cur = path[-1]
        if cur.type == "identifier" and cur.is_named and cur.start_byte == s and \
                cur.end_byte == e and len(path) > 1:
            yield cur, path, opaque[-2]


def _word_spans(data: bytes, name: str, within: Node) -> Iterator[tuple[int, int]]:
    if not name:
        return
    for m in _word_pattern(name).finditer(data, within.start_byte, within.end_byte):
        s = m.start()
        if s and data[s - 1] in _WORD_BYTES:
            continue                                # the tail of a longer name
        yield s, m.end()


class NameScanner:
    """scan_identifiers for the names one analysis asks about in one node (a function
    body): the text is searched for each name, until more than INDEX_AFTER names were
    asked for; then one ``(identifier)`` query indexes them all (a fuzzed body declaring
    thousands of aliases would otherwise be searched once per alias)."""
    INDEX_AFTER = 32

    def __init__(self, within: Node, data: bytes, parents: dict[int, Node]):
        self.within = within
        self.data = data
        self.parents = parents
        self._asked = 0
        self._index: dict[bytes, list[tuple[int, int]]] | None = None

    @property
    def indexed(self) -> bool:
        """Have spans() switched to the identifier index (so they list identifiers only)?"""
        return self._index is not None

    def spans(self, name: str) -> list[tuple[int, int]]:
        """Where ``name`` may be an identifier (exactly where it is, once indexed)."""
        self._asked += 1
        if self._index is None and self._asked > self.INDEX_AFTER:
            index: dict[bytes, list[tuple[int, int]]] = {}
            for n in captures("(identifier) @id", self.within).get("id", []):
                s, e = n.start_byte, n.end_byte
                index.setdefault(self.data[s:e], []).append((s, e))
            self._index = index
        if self._index is not None:
            return self._index.get(name.encode("utf-8", "replace"), [])
        return list(_word_spans(self.data, name, self.within))

    def identifiers(self, name: str, spans: list[tuple[int, int]] | None = None
                    ) -> Iterator[tuple[Node, list[Node], str | None]]:
        """scan_identifiers(within, name); ``spans``: from spans(name) already."""
        if spans is None:
            spans = self.spans(name)
        return scan_identifiers(self.within, self.data, name, self.parents, spans)


def scan_paths(within: Node, data: bytes, name: str,
               parents: dict[int, Node] | None = None,
               spans: "list[tuple[int, int]] | None" = None
               ) -> Iterator[tuple[int, int, list[Node], list[str | None]]]:
    """Where ``name`` is written as a word inside ``within``: the text is searched for it
    and the tree descended to each match (from the deepest node of the previous path
    that still contains it, so a whole scan costs about one walk of the nodes on those
    paths, however deep they are). Yields (start, end, every node from ``within`` down to
    the smallest that contains the match, the innermost lambda / inline assembly / ERROR
    around each of them); the lists are reused, read them before the next item.
    ``parents`` (node id -> parent) is filled for the nodes on the paths. ``spans``:
    where to descend instead of searching the text (in source order)."""
    if not name:
        return
    path = [within]                 # the cursor's node and its ancestors up to within
    opaque: list[str | None] = [None]
    cursor = within.walk()          # (Node.first_child_for_byte crashes on a leaf)
    for s, e in (spans if spans is not None else _word_spans(data, name, within)):
        while len(path) > 1 and (path[-1].start_byte > s or path[-1].end_byte < e):
            path.pop()
            opaque.pop()
            cursor.goto_parent()
        cur = path[-1]
        while cursor.goto_first_child_for_byte(s) is not None:
            child = cursor.node
            if child.start_byte > s or child.end_byte < e:
                cursor.goto_parent()
                break
            if parents is not None:
                parents[child.id] = cur
            path.append(child)
            opaque.append(_OPAQUE.get(child.type, opaque[-1]))
            cur = child
        yield s, e, path, opaque


def _same(a: Node | None, b: Node | None) -> bool:
    return a is not None and b is not None and a.id == b.id


def _is_declared_name(ident: Node, parent_of: "Callable[[Node], Node | None] | None" = None
                      ) -> bool:
    parent_of = parent_of or _node_parent
    cur, parent = ident, parent_of(ident)
    while parent is not None and parent.type in _DECLARATOR_TYPES:
        if parent.type in ("init_declarator", "pointer_declarator", "reference_declarator",
                           "array_declarator", "declaration", "parameter_declaration",
                           "optional_parameter_declaration"):
            if not _same(parent.child_by_field_name("declarator"), cur) and \
                    parent.type != "reference_declarator":
                return False
            if parent.type in ("init_declarator", "declaration", "parameter_declaration",
                               "optional_parameter_declaration"):
                return True
        elif parent.type == "function_declarator":
            return _same(parent.child_by_field_name("declarator"), cur)
        cur, parent = parent, parent_of(parent)
    return False


def _enclosing_declaration(ident: Node, parent_of: "Callable[[Node], Node | None]"
                           ) -> Node | None:
    cur = parent_of(ident)
    while cur is not None and cur.type in _DECLARATOR_TYPES - {"declaration"}:
        cur = parent_of(cur)
    return cur if cur is not None and cur.type in ("declaration", "for_range_loop") else None


def self_bump(write: Node, name: str) -> tuple[Node, int] | None:
    """``p = p + e``, ``p = e + p`` (``(e, 1)``) or ``p = p - e`` (``(e, -1)``): the
    pointer moved by ``e`` elements, as ``p += e`` moves it; None for anything else."""
    if text(write.child_by_field_name("operator")) != "=" or \
            text(write.child_by_field_name("left")) != name:
        return None
    right = write.child_by_field_name("right")
    while right is not None and right.type == "parenthesized_expression" and \
            right.named_child_count == 1:
        right = right.named_children[0]
    if right is None or right.type != "binary_expression":
        return None
    op = text(right.child_by_field_name("operator"))
    left, other = right.child_by_field_name("left"), right.child_by_field_name("right")
    if op in ("+", "-") and left is not None and left.type == "identifier" and \
            text(left) == name:
        return other, 1 if op == "+" else -1
    if op == "+" and other is not None and other.type == "identifier" and text(other) == name:
        return left, 1
    return None
