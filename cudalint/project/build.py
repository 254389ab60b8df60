"""A build: one compilation description read from a build file -- its nvcc flags (each
with the file offsets where it was written), the sources it compiles (paths or glob
patterns relative to the build file's folder, or the embedded code of a Python call) and
a label for messages. The readers (:mod:`build_python`, :mod:`build_cmake`,
:mod:`build_toml`) make them; :mod:`buildflags` finds those that compile a source file.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field

from cudalint.project.nvcc_flags import Flag, NvccSettings, interpret


@dataclass
class Build:
    kind: str                   # "extension" | "torch.load" | "torch.load_inline" |
                                # "cupy" | "pycuda" | "cmake-target" | "cmake-dir" | "toml"
    label: str                  # e.g. "extension `warpy._C`", "CMake target `foo`"
    path: str                   # the build file
    flags: list[Flag] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)   # relative paths / glob patterns
    opaque: bool = False        # some flags are not statically known
    call_start: int = -1        # Python call span (embedded code builds)
    call_end: int = -1

    @property
    def settings(self) -> NvccSettings:
        return interpret(self.flags, self.opaque)

    def units(self) -> str:
        """The affected units, for messages."""
        if self.sources and self.sources != ["**/*.cu"]:
            shown = ", ".join(self.sources[:3]) + (", ..." if len(self.sources) > 3 else "")
            return f"{self.label} ({shown})"
        return self.label

    def compiles(self, rel: str) -> bool:
        rel = _norm(rel)
        return any(fnmatch.fnmatchcase(rel, _norm(p)) for p in self.sources)


def _norm(p: str) -> str:
    p = p.replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return os.path.normpath(p).replace("\\", "/") if p else p
