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

from ..parse import text

VERSION = re.compile(r"CUDA_VERSION|CUDART_VERSION|__CUDACC_VER|__CUDA_ARCH__|CUDA_ARCH")
PLATFORM = re.compile(r"HIP\b|HIP_|ROCM|__HIPCC__")


@dataclass(frozen=True)
class Guard:
    condition: str
    negated: bool        # #ifndef X, #if !defined(X)
    in_else: bool        # the node is in the #else / #elif part


def guards(node: Node) -> list[Guard]:
    """Every enclosing conditional, innermost first."""
    out = []
    child = node
    cur = node.parent
    while cur is not None:
        if cur.type in ("preproc_if", "preproc_ifdef"):
            alternative = cur.child_by_field_name("alternative")
            in_else = alternative is not None and alternative.start_byte <= child.start_byte
            cond = cur.child_by_field_name("condition") or cur.child_by_field_name("name")
            directive = text(cur.children[0]) if cur.children else ""
            cond_text = text(cond)
            negated = directive.endswith("ifndef") or cond_text.lstrip().startswith("!")
            out.append(Guard(cond_text, negated, in_else))
        child = cur
        cur = cur.parent
    return out


def not_for_modern_cuda(node: Node) -> bool:
    """True when ``node`` sits in version-guarded code or on the HIP side of a guard."""
    for g in guards(node):
        if VERSION.search(g.condition):
            return True
        if PLATFORM.search(g.condition) and (g.in_else == g.negated):
            return True
    return False
