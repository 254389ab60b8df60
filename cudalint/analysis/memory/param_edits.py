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
    if param.pointee_const:
        return None
    type_node = param.node.child_by_field_name("type")
    if type_node is None:
        return None
    start = type_node.start_byte
    if _const_just_before(param.node, start):
        return None          # a `const` the parse left outside the parameter (broken code)
    # "struct Foo* p", "unsigned int* p": the type node starts at the first word already;
    # a leading qualifier such as volatile stays in front of the new const
    return Edit(start, start, "const ")


def _const_just_before(node, start: int) -> bool:
    """Is the text right before ``start`` (in the parameter list) the word ``const``?
    Error recovery can put it in an ERROR node before the parameter, and inserting
    another ``const`` then never settles (fuzz: fix_cuda seed 30)."""
    outer = node.parent if node.parent is not None else node
    text = outer.text or b""
    head = text[:max(0, start - outer.start_byte)].rstrip()
    return head.endswith(b"const") and (len(head) == 5 or not
                                        (chr(head[-6]).isalnum() or head[-6:-5] == b"_"))


def restrict_edit(param: "Param", data: bytes) -> Edit | None:
    """`` __restrict__`` right after the parameter's (outermost) ``*``, spaced the way
    the user spaces it: ``float* p`` -> ``float* __restrict__ p``, ``float *p`` ->
    ``float *__restrict__ p``."""
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
