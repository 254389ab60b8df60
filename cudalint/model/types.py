"""Sizes and layouts of the types a unit names: built-in scalars, CUDA vector types, and the
structs the unit defines (field offsets with C alignment). Read by the lane engine (CL201,
CL202) and the block simulation (CL101-CL105)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from tree_sitter import Node

from cudalint.model.consteval import sizeof_type
from cudalint.parse import text

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
