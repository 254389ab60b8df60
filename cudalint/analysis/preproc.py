"""Preprocessor context of a node: which ``#if``/``#ifdef`` branches enclose it.

Code under a version or platform guard (``#if CUDA_VERSION < 9000``, ``#ifdef USE_ROCM``)
is compatibility code for another toolkit or for HIP; rules about the modern CUDA model
stay silent there rather than report code that is never compiled for it.
"""
from __future__ import annotations

import re

from tree_sitter import Node

from ..parse import text

_CONDITIONALS = ("preproc_if", "preproc_ifdef", "preproc_elif", "preproc_else",
                 "preproc_elifdef")
VERSION_OR_PLATFORM = re.compile(
    r"CUDA_VERSION|CUDART_VERSION|__CUDACC_VER|__CUDA_ARCH__|__HIP|HIP_|USE_ROCM|"
    r"__HIPCC__|ROCM|TORCH_HIP|WITH_HIP|__NVCC__|CUDA_ARCH")


def guards(node: Node) -> list[str]:
    """Condition texts of every enclosing conditional branch (innermost first).

    An ``#else`` branch reports the condition of the ``#if`` it belongs to.
    """
    out = []
    cur = node.parent
    while cur is not None:
        if cur.type in _CONDITIONALS:
            cond = cur.child_by_field_name("condition") or cur.child_by_field_name("name")
            if cond is None:      # #else: find the owning #if
                owner = cur.parent
                while owner is not None and owner.type not in ("preproc_if", "preproc_ifdef"):
                    owner = owner.parent
                if owner is not None:
                    cond = owner.child_by_field_name("condition") or \
                        owner.child_by_field_name("name")
            out.append(text(cond))
        cur = cur.parent
    return out


def under_version_guard(node: Node) -> bool:
    return any(VERSION_OR_PLATFORM.search(g) for g in guards(node))
