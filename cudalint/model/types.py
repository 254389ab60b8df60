"""Sizes and layouts of the types a unit names: built-in scalars, CUDA vector types, and the
structs the unit defines (field offsets with C alignment), and the names a unit makes
another name for a type (:class:`TypeAliases`: ``typedef``, ``using``, object-like
``#define``), resolved once per unit (``Model.type_aliases``) so that the lane engine (CL201,
CL202) and the block simulation (CL101-CL107) size ``out_type`` alike. A name that stands
for an unknown type (a Python template's ``typedef %(out_type)s out_type;``) is opaque: the
block simulation still follows its arrays by element index."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from tree_sitter import Node

from cudalint.model.consteval import sizeof_type
from cudalint.parse import text
from cudalint.sources.python.units import OPAQUE_PREFIX

VECTOR_COMPONENT = {
    "float2": "float", "float3": "float", "float4": "float", "int2": "int", "int3": "int",
    "int4": "int", "uint2": "unsigned", "uint4": "unsigned", "double2": "double",
    "__half2": "__half", "half2": "__half", "char4": "char", "uchar4": "unsigned char",
    "short2": "short", "short4": "short", "longlong2": "long long", "char2": "char",
}
_EXTRA_SIZES = {"char4": 4, "uchar4": 4, "short2": 4, "short4": 8, "longlong2": 16,
                "char2": 2, "ulonglong2": 16, "double4": 32, "uint3": 12,
                "unsigned long": 8, "signed": 4}


@dataclass
class StructType:
    name: str
    size: int
    fields: dict[str, tuple[int, str]]      # name -> (byte offset, type)


def struct_types(specifiers: list[Node]) -> dict[str, StructType]:
    out: dict[str, StructType] = {}
    for struct in specifiers:
        spec = struct.child_by_field_name("body")
        name = text(struct.child_by_field_name("name"))
        offset, align, fields = 0, 1, {}
        ok = True
        for fd in spec.named_children:
            if fd.type != "field_declaration":
                continue
            ftype = text(fd.child_by_field_name("type"))
            size = type_size(ftype, out)
            if size is None:
                ok = False
                break
            falign = min(size, 16) if ftype in VECTOR_COMPONENT or size in (1, 2, 4, 8, 16) \
                else 4
            if ftype in ("float3", "int3", "uint3"):
                falign = 4
            if ftype in out:
                falign = 4
            for d in fd.children_by_field_name("declarator"):
                if d.type != "field_identifier":
                    ok = False
                    break
                offset = -(-offset // falign) * falign
                fields[text(d)] = (offset, ftype)
                offset += size
                align = max(align, falign)
            if not ok:
                break
        if ok and fields:
            out[name] = StructType(name, -(-offset // align) * align, fields)
    return out


def type_size(name: str, structs: dict[str, StructType] | None = None) -> int | None:
    name, size = _plain_type_size(name)
    if size is None and structs and name in structs:
        size = structs[name].size
    return size


@lru_cache(maxsize=4096)
def _plain_type_size(name: str) -> tuple[str, int | None]:
    """The type name without qualifiers, and its size when it is not a struct of ours."""
    name = " ".join(name.replace("const", " ").replace("volatile", " ")
                    .replace("struct ", " ").split())
    return name, sizeof_type(name) or _EXTRA_SIZES.get(name)


class TypeAliases:
    """The type names a unit makes another name for a type, and their sizes: ``typedef
    float real;``, ``using real = float;``, ``#define real float`` (the last definition of
    a macro counts), followed through chains of aliases. Sizes assume the unit's one set
    of structs (memoised by name)."""

    def __init__(self, defines: list[Node], data: bytes):
        self._defines = defines
        self._data = data
        self._targets: dict[str, str | None] = {}
        self._sizes: dict[str, int | None] = {}

    def target(self, name: str) -> str | None:
        """What ``name`` is another name for, as written (one step), or None."""
        if name in self._targets:
            return self._targets[name]
        target = None
        for d in self._defines:
            if text(d.child_by_field_name("name")) == name:
                value = d.child_by_field_name("value")
                target = text(value).strip() if value is not None else None
        if target is None:
            key = re.escape(name.encode())
            m = re.search(rb"\btypedef\s+([A-Za-z_][\w\s:<>,]*?)\s+" + key + rb"\s*;",
                          self._data) or \
                re.search(rb"\busing\s+" + key + rb"\s*=\s*([A-Za-z_][\w\s:<>,]*?)\s*;",
                          self._data)
            target = m.group(1).decode("ascii", "replace") if m else None
        if target:
            target = " ".join(target.replace("const", " ").replace("struct ", " ").split())
        self._targets[name] = target
        return target

    def size(self, name: str, structs: dict[str, StructType]) -> int | None:
        """sizeof ``name`` when the unit makes it another name for a sized type."""
        if not name.isidentifier():
            return None
        sizes = self._sizes
        if name in sizes:
            return sizes[name]
        sizes[name] = None                  # a cycle of aliases: no size
        target = self.target(name)
        size = None
        if target:
            size = type_size(target, structs)
            if size is None and target != name:
                size = self.size(target, structs)
        sizes[name] = size
        return size

    def resolved(self, name: str) -> str:
        """The type a chain of aliases ends at (qualifiers aside): ``out_type`` ->
        ``float``, or ``__cudalint_opaque_3__``; ``name`` itself when it is no alias."""
        name = _plain_type_size(name)[0]
        for _ in range(8):
            if not name.isidentifier():
                break
            nxt = self.target(name)
            if not nxt or nxt == name:
                break
            name = nxt
        return name

    def is_opaque(self, name: str) -> bool:
        """``name`` is, or is an alias of, a type a Python template leaves unknown
        (``__cudalint_opaque_N__``): an element whose size nobody knows."""
        return self.resolved(name).startswith(OPAQUE_PREFIX)
