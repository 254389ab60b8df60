"""Preprocessor context of a node: which ``#if``/``#ifdef`` branches enclose it.

Rules about the modern CUDA model stay silent in code that is not compiled for it:
the HIP/ROCm side of a platform guard (``#ifdef USE_ROCM`` ... ``#else`` is CUDA code
again), and either side of a toolkit/architecture version guard (``#if CUDA_VERSION <
9000``): such code is deliberate compatibility code.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from cudalint.parse import text

VERSION = re.compile(r"CUDA_VERSION|CUDART_VERSION|__CUDACC_VER|__CUDA_ARCH__|CUDA_ARCH")
PLATFORM = re.compile(r"HIP\b|HIP_|ROCM|__HIPCC__")


@dataclass(frozen=True)
class Guard:
    condition: str
    negated: bool        # #ifndef X, #if !defined(X)
    in_else: bool        # the node is in the #else / #elif part


def _guard(cond_node: Node, node: Node) -> Guard:
    alternative = cond_node.child_by_field_name("alternative")
    in_else = alternative is not None and alternative.start_byte <= node.start_byte
    cond = cond_node.child_by_field_name("condition") or cond_node.child_by_field_name("name")
    directive = text(cond_node.children[0]) if cond_node.children else ""
    cond_text = text(cond)
    negated = directive.endswith("ifndef") or cond_text.lstrip().startswith("!")
    return Guard(cond_text, negated, in_else)


def guards(node: Node, ctx=None) -> list[Guard]:
    """Every enclosing conditional, innermost first. With ``ctx`` (the unit's context)
    the unit's conditionals are listed once and the ones containing ``node`` are taken:
    ``Node.parent`` costs the node's depth (tree-sitter walks down from the root), so
    walking up from a node 44,000 levels deep (a fuzzed 100 KB expression) took minutes
    per barrier."""
    if ctx is not None:
        return ctx.analysis(Conditionals).guards(node)
    out = []
    cur = node.parent
    while cur is not None:
        if cur.type in ("preproc_if", "preproc_ifdef"):
            out.append(_guard(cur, node))
        cur = cur.parent
    return out


class Conditionals:
    """The unit's ``#if``/``#ifdef`` blocks (an analysis: ``ctx.analysis(Conditionals)``)."""

    def __init__(self, ctx):
        found = ctx.model.nodes("preproc_conditional")      # the unit's index query
        # outermost first: a block starts before the blocks inside it (or with them, and
        # is then longer)
        self.blocks = sorted(found, key=lambda n: (n.start_byte, -n.end_byte))

    def guards(self, node: Node) -> list[Guard]:
        out = []
        lo, hi = node.start_byte, node.end_byte
        for block in self.blocks:
            if block.start_byte > lo:
                break
            # ranges of a tree nest: a block containing the node encloses it
            if hi <= block.end_byte and block.id != node.id:
                out.append(_guard(block, node))
        out.reverse()
        return out


def not_for_modern_cuda(node: Node, ctx=None) -> bool:
    """True when ``node`` sits in version-guarded code or on the HIP side of a guard."""
    for g in guards(node, ctx):
        if VERSION.search(g.condition):
            return True
        if PLATFORM.search(g.condition) and (g.in_else == g.negated):
            return True
    return False
