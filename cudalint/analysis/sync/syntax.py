"""How the block run and the interval check read a kernel's source: a memoised mirror of
tree-sitter nodes and the decoding of declarators, literals and type names.

A run evaluates the same few nodes again and again (every loop iteration, every inlined
call); tree-sitter answers each question with a new Node object and the text sliced and
decoded anew. :class:`Syn` keeps the answers (and a slot for the evaluator's decoded form
of the node), :func:`text` reads either kind of node. The helpers below say what a
declaration or an expression's text means to a run: a declarator's name, array
dimensions and pointer-ness, an integer literal's value, whether a type holds an integer
(the only scalars a run tracks) or a cooperative group handle.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from tree_sitter import Node

from cudalint.parse import text as _ts_text

_INT_TYPES = ("int", "long", "short", "char", "size_t", "unsigned", "signed", "auto",
              "int32_t", "int64_t", "uint32_t", "uint64_t", "index_t", "bool", "uint",
              "dim_t", "int16_t", "uint16_t", "int8_t", "uint8_t")


class Syn:
    """A tree-sitter node as the block run reads it, with what it asks for memoised:
    type, byte range, children, fields and text. A run evaluates the same few nodes
    again and again (every loop iteration, every inlined call); asking tree-sitter each
    time (a new Node object per call, the text sliced and decoded anew) cost more than
    the evaluation itself. Only the subset of the Node API the run uses; ``ts`` is the
    node itself (results hold it, never the mirror)."""

    __slots__ = ("ts", "id", "type", "_named", "_children", "_fields", "_str", "aux")

    def __init__(self, ts: Node):
        self.ts = ts
        self.id = ts.id
        self.type = ts.type
        self._named: list[Syn] | None = None
        self._children: list[Syn] | None = None
        self._fields: dict[str, Any] | None = None
        self._str: str | None = None
        self.aux: tuple | None = None      # the evaluator's decoded form of the node

    @property
    def start_byte(self) -> int:
        return self.ts.start_byte

    @property
    def end_byte(self) -> int:
        return self.ts.end_byte

    @property
    def named_children(self) -> list["Syn"]:
        v = self._named
        if v is None:
            v = self._named = [Syn(c) for c in self.ts.named_children]
        return v

    @property
    def children(self) -> list["Syn"]:
        v = self._children
        if v is None:
            v = self._children = [Syn(c) for c in self.ts.children]
        return v

    def child_by_field_name(self, name: str) -> "Syn | None":
        f = self._fields
        if f is None:
            f = self._fields = {}
        elif name in f:
            return f[name]
        c = self.ts.child_by_field_name(name)
        v = f[name] = Syn(c) if c is not None else None
        return v

    def children_by_field_name(self, name: str) -> list["Syn"]:
        f = self._fields
        if f is None:
            f = self._fields = {}
        key = "*" + name
        v = f.get(key)
        if v is None:
            v = f[key] = [Syn(c) for c in self.ts.children_by_field_name(name)]
        return v

    @property
    def text(self) -> bytes | None:
        return self.ts.text

    @property
    def str(self) -> str:
        v = self._str
        if v is None:
            v = self._str = _ts_text(self.ts)
        return v


def text(node) -> str:
    """Source text of a mirrored or a plain tree-sitter node."""
    if node.__class__ is Syn:
        s = node._str
        if s is None:
            s = node._str = _ts_text(node.ts)
        return s
    return _ts_text(node)


def unwrap(node: Node | None) -> Node | None:
    while node is not None and node.type in ("parenthesized_expression", "condition_clause") \
            and len([c for c in node.named_children if c.type != "comment"]) == 1:
        node = next(c for c in node.named_children if c.type != "comment")
    return node


@lru_cache(maxsize=4096)
def clean(type_text: str) -> str:
    return " ".join(type_text.replace("const", " ").replace("volatile", " ")
                    .replace("__restrict__", " ").replace("struct ", " ").split())


@lru_cache(maxsize=4096)
def is_int_type(type_text: str) -> bool:
    words = set(re.findall(r"\w+", type_text))
    return bool(words & set(_INT_TYPES)) and not words & {"float", "double", "half",
                                                          "__half", "bfloat16"}


@lru_cache(maxsize=4096)
def group_type(type_text: str) -> bool:
    return "thread_block" in type_text or "thread_group" in type_text


def declarator(d: Node | None, env_int) -> tuple[str, list, bool, bool]:
    """(name, array dims, is pointer, is reference) of a declarator."""
    dims: list = []
    ptr = ref = False
    cur = d
    while cur is not None and cur.type in ("pointer_declarator", "reference_declarator",
                                           "array_declarator", "parenthesized_declarator"):
        if cur.type == "pointer_declarator":
            ptr = True
        elif cur.type == "reference_declarator":
            ref = True
        elif cur.type == "array_declarator":
            size = cur.child_by_field_name("size")
            dims.append(env_int(text(size)) if size is not None else None)
        nxt = cur.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in cur.named_children if c.type in (
                "identifier", "pointer_declarator", "array_declarator",
                "reference_declarator")), None)
        cur = nxt
    if cur is None or cur.type != "identifier":
        return "", dims, ptr, ref
    return text(cur), list(reversed(dims)), ptr, ref


@lru_cache(maxsize=4096)
def int_literal(s: str) -> int | None:
    s = s.lower().replace("'", "")
    if any(c in s for c in ".p") or (("e" in s or s.endswith("f")) and not s.startswith("0x")):
        return None
    s = s.rstrip("ul")
    try:
        return int(s, 0)
    except ValueError:
        try:
            return int(s, 8) if s.startswith("0") else None
        except ValueError:
            return None
