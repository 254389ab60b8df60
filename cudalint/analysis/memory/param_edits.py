"""The edits that make a pointer parameter ``const`` and ``__restrict__`` (CL203's fix, and
the ``const`` the pointer_access tracer asks of device-function parameters a read-only
pointer reaches), written so that the rest of the declaration stays as the user wrote it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from cudalint.diagnostics import Edit

if TYPE_CHECKING:
    from cudalint.model.kernels import Param


def const_edit(param: "Param") -> Edit | None:
    """``const `` inserted before the parameter's type (keeps everything else as is)."""
    if param.pointee_const or not _read_whole(param.node):
        return None
    type_node = param.node.child_by_field_name("type")
    if type_node is None:
        return None
    start = type_node.start_byte
    # "struct Foo* p", "unsigned int* p": the type node starts at the first word already;
    # a leading qualifier such as volatile stays in front of the new const
    return Edit(start, start, "const ")


def _read_whole(node) -> bool:
    """Did the parse read this parameter declaration, and nothing glued to its front?
    Error recovery can give a parameter an empty type (``[-1]  const int* index``: the
    type is a zero-width name before the ERROR holding ``const int``) or leave a word
    that belongs to it in an ERROR before it (``constreinterpret_cast<float2*>(p) float*
    items``: a ``const`` inserted there stays outside the parameter). An edit computed
    from such a tree is not what the text says: the next run reads the parameter the
    same way and edits again (fuzz: fix_cuda seeds 26 and 30, CR-only line ends and a
    parameter list split by recovery). No edit then; the finding stays for the user."""
    if node.has_error or node.is_missing:
        return False
    before = node.prev_sibling
    while before is not None and before.type == "comment":
        before = before.prev_sibling
    return before is None or not (before.type == "ERROR" or before.is_missing)


def restrict_edit(param: "Param", data: bytes) -> Edit | None:
    """`` __restrict__`` right after the parameter's (outermost) ``*``, spaced the way
    the user spaces it: ``float* p`` -> ``float* __restrict__ p``, ``float *p`` ->
    ``float *__restrict__ p``."""
    if not _read_whole(param.node):
        return None
    decl = param.node.child_by_field_name("declarator")
    if decl is None or decl.type != "pointer_declarator":
        return None
    star = next((c for c in decl.children if c.type == "*"), None)
    if star is None:
        return None
    after = data[star.end_byte:star.end_byte + 1]
    if after in (b" ", b"\t"):
        return Edit(star.end_byte, star.end_byte, " __restrict__")
    return Edit(star.end_byte, star.end_byte, "__restrict__ ")
