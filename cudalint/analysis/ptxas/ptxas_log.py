"""Parse what ``ptxas -v`` prints (through ``nvcc -Xptxas -v``), nvcc 11.x to 13.x.

A log may hold several architectures and several translation units (a build log), and
lines of other tools in between. What is read, per function and architecture::

    ptxas info    : Compiling entry function '_Z5heavyPK6float4Pfi' for 'sm_90'
    ptxas info    : Function properties for _Z5heavyPK6float4Pfi
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 72 registers, used 0 barriers, 49152 bytes smem, 352 bytes cmem[0]
    ptxas warning : Registers are spilled to local memory in function '_Z..', 96 bytes
                    spill stores, 128 bytes spill loads          (-Xptxas -warn-spills)
    ptxas warning : Local memory used for function '_Z..', size of stack frame: 16 bytes
                    (-Xptxas -warn-lmem-usage)

``Function properties for`` blocks appear for kernels (after their ``Compiling entry
function``) and for non-inlined device functions (which have no ``Compiling`` line of
their own unless compiled separately, ``Compiling function``). CUDA 11 prints ``Used N
registers, N bytes cmem[0]`` without barriers; CUDA 13 drops cmem and adds ``bytes
cumulative stack size``. Warnings carry no architecture: they are kept for the
architecture of the next ``Compiling`` line in the same block of output, or the last one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

COMPILING = re.compile(
    r"Compiling\s+(entry\s+)?function\s+'([^']+)'\s+for\s+'(sm_\w+|compute_\w+)'")
PROPERTIES = re.compile(r"Function properties for\s+(\S+)")
FRAME = re.compile(r"(\d+)\s+bytes stack frame,\s*(\d+)\s+bytes spill stores,\s*(\d+)\s+"
                   r"bytes spill loads")
USED = re.compile(r"Used\s+(\d+)\s+registers")
BARRIERS = re.compile(r"used\s+(\d+)\s+barriers")
SMEM = re.compile(r"(\d+)\s+bytes\s+smem")
CMEM = re.compile(r"(\d+)\s+bytes\s+cmem\[(\d+)\]")
WARN_SPILL = re.compile(r"Registers are spilled to local memory in function '([^']+)',\s*"
                        r"(\d+)\s+bytes spill stores,\s*(\d+)\s+bytes spill loads")
WARN_LMEM = re.compile(r"Local memory used for function '([^']+)',\s*size of stack frame:\s*"
                       r"(\d+)\s+bytes")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass
class PtxasRecord:
    """ptxas facts about one function compiled for one architecture."""
    mangled: str
    arch: str | None                  # "sm_90"; None when the log never said
    entry: bool = False               # a kernel (Compiling entry function)
    registers: int | None = None
    barriers: int | None = None
    smem: int | None = None           # static shared memory, bytes
    cmem: dict[int, int] = field(default_factory=dict)
    stack_frame: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    source: str = ""                  # the log it came from

    @property
    def demangled(self) -> str:
        return demangle(self.mangled)

    @property
    def base_name(self) -> str:
        """``gemm_tile`` for ``void ns::gemm_tile<128>(float const*, ...)``."""
        return base_name(self.demangled)

    @property
    def display_name(self) -> str:
        """``gemm_tile<128>``: the name with template arguments, without the signature."""
        return display_name(self.demangled)

    @property
    def param_count(self) -> int | None:
        return param_count(self.demangled)

    def key(self) -> tuple:
        return (self.registers, self.barriers, self.smem, self.stack_frame,
                self.spill_stores, self.spill_loads)


@lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    if not name.startswith("_Z"):
        return name            # extern "C" kernels are not mangled
    try:
        import cxxfilt
        return cxxfilt.demangle(name, external_only=False)
    except Exception:          # unknown mangling or no demangler: keep the raw name
        return name


def _split_signature(demangled: str) -> tuple[str, str | None]:
    """(qualified name with template args, parameter list or None)."""
    s = demangled.strip()
    depth = 0
    # the parameter list is the last top-level (...) group
    if s.endswith(")"):
        for i in range(len(s) - 1, -1, -1):
            c = s[i]
            if c == ")":
                depth += 1
            elif c == "(":
                depth -= 1
                if depth == 0:
                    return s[:i], s[i + 1:-1]
    return s, None


def _strip_return_type(head: str) -> str:
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        c = head[i]
        if c == ">":
            depth += 1
        elif c == "<":
            depth -= 1
        elif c == " " and depth == 0:
            return head[i + 1:]
    return head


def display_name(demangled: str) -> str:
    head, _ = _split_signature(demangled)
    name = _strip_return_type(head)
    # drop namespaces (outside template arguments)
    depth = 0
    cut = 0
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == ":" and depth == 0 and i + 1 < len(name) and name[i + 1] == ":":
            cut = i + 2
    return name[cut:]


def base_name(demangled: str) -> str:
    return display_name(demangled).split("<", 1)[0].strip()


def param_count(demangled: str) -> int | None:
    _, params = _split_signature(demangled)
    if params is None:
        return None
    params = params.strip()
    if params in ("", "void"):
        return 0
    depth = 0
    count = 1
    for c in params:
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif c == "," and depth == 0:
            count += 1
    return count


def parse_log(text: str, source: str = "") -> list[PtxasRecord]:
    """Every function record in a log, in order (one per function and architecture)."""
    records: list[PtxasRecord] = []
    by_key: dict[tuple[str, str | None], PtxasRecord] = {}
    current: PtxasRecord | None = None      # the function "Used N registers" refers to
    props: PtxasRecord | None = None        # the function the next frame line refers to
    arch: str | None = None                 # architecture of the current compilation
    pending_warnings: list[tuple[str, dict]] = []

    def get(mangled: str, a: str | None, fresh: bool = False) -> PtxasRecord:
        rec = by_key.get((mangled, a))
        if rec is None or (fresh and rec.registers is not None):
            # a second compilation of the same name (another translation unit of a
            # build log) is a record of its own
            rec = PtxasRecord(mangled=mangled, arch=a, source=source)
            by_key[(mangled, a)] = rec
            records.append(rec)
        return rec

    def flush_warnings(a: str | None) -> None:
        for mangled, values in pending_warnings:
            rec = get(mangled, a)
            for k, v in values.items():
                if getattr(rec, k) is None:
                    setattr(rec, k, v)
        pending_warnings.clear()

    for raw in text.splitlines():
        line = ANSI.sub("", raw)
        if "ptxas" not in line and not FRAME.search(line):
            continue
        m = COMPILING.search(line)
        if m:
            arch = m.group(3).replace("compute_", "sm_")
            flush_warnings(arch)
            current = get(m.group(2), arch, fresh=True)
            current.entry = current.entry or bool(m.group(1))
            props = None
            continue
        m = PROPERTIES.search(line)
        if m:
            props = get(m.group(1), arch)
            continue
        m = FRAME.search(line)
        if m and props is not None:
            props.stack_frame, props.spill_stores, props.spill_loads = (
                int(m.group(1)), int(m.group(2)), int(m.group(3)))
            props = None
            continue
        m = USED.search(line)
        if m and current is not None:
            current.registers = int(m.group(1))
            b = BARRIERS.search(line)
            if b:
                current.barriers = int(b.group(1))
            s = SMEM.search(line)
            current.smem = int(s.group(1)) if s else 0
            for c in CMEM.finditer(line):
                current.cmem[int(c.group(2))] = int(c.group(1))
            continue
        m = WARN_SPILL.search(line)
        if m:
            pending_warnings.append((m.group(1), {"spill_stores": int(m.group(2)),
                                                  "spill_loads": int(m.group(3))}))
            continue
        m = WARN_LMEM.search(line)
        if m:
            pending_warnings.append((m.group(1), {"stack_frame": int(m.group(2))}))
            continue
        if "bytes gmem" in line:
            # a new ptxas invocation begins: "Used" lines of the last one are done
            current = None
            props = None
    flush_warnings(arch)
    return records
