"""What nvcc (or NVRTC) makes of a list of flags.

A :class:`Flag` is one command-line token as written in a build file, with where it was
written. :func:`interpret` turns a sequence of them into :class:`NvccSettings`, the way
nvcc does (measured with nvcc 13.0 on sm_90 SASS, see ``fixtures/CL401/sass_truth.json``):

* long and short spellings are the same option (``--use_fast_math`` / ``-use_fast_math``,
  ``--ftz`` / ``-ftz``, ``--gpu-architecture`` / ``-arch``, ``--ptxas-options`` /
  ``-Xptxas``); values come after ``=`` or as the next token;
* ``--use_fast_math`` implies ``-ftz=true -prec-div=false -prec-sqrt=false -fmad=true``
  and fast intrinsics, but an explicit ``-ftz``/``-prec-div``/``-prec-sqrt``/``-fmad``
  wins whatever the order (``--use_fast_math -ftz=false`` and ``-ftz=false
  --use_fast_math`` both keep denormals);
* between explicit values of one option the later one wins (nvcc warns "the last value
  of this option was used");
* ``-Xcompiler``/``--compiler-options`` go to the host compiler: ``-Xcompiler
  -ffast-math`` does not change device code.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence


@dataclass(frozen=True)
class Flag:
    """One token of an nvcc command line and where it was written (file char offsets)."""
    text: str
    path: str = ""
    start: int = -1
    end: int = -1

    def __str__(self) -> str:
        return self.text


# canonical option name -> spellings (without leading dashes)
_ALIASES = {
    "use_fast_math": ("use_fast_math", "use-fast-math"),
    "ftz": ("ftz",),
    "prec-div": ("prec-div", "prec_div"),
    "prec-sqrt": ("prec-sqrt", "prec_sqrt"),
    "fmad": ("fmad",),
    "gpu-architecture": ("gpu-architecture", "arch"),
    "gpu-code": ("gpu-code", "code"),
    "generate-code": ("generate-code", "gencode"),
    "define-macro": ("define-macro", "D"),
    "include-path": ("include-path", "I"),
    "compiler-options": ("compiler-options", "Xcompiler"),
    "ptxas-options": ("ptxas-options", "Xptxas"),
    "linker-options": ("linker-options", "Xlinker"),
    "nvlink-options": ("nvlink-options", "Xnvlink"),
    "maxrregcount": ("maxrregcount",),
    "std": ("std",),
}
_BY_SPELLING = {s: canon for canon, spellings in _ALIASES.items() for s in spellings}
# options that take a value (after `=` or as the next token)
_VALUED = {"ftz", "prec-div", "prec-sqrt", "fmad", "gpu-architecture", "gpu-code",
           "generate-code", "define-macro", "include-path", "compiler-options",
           "ptxas-options", "linker-options", "nvlink-options", "maxrregcount", "std"}
# options whose value may be glued to a one-letter spelling (-DFOO, -Iinclude)
_GLUED = {"D": "define-macro", "I": "include-path"}
FP_OPTIONS = ("ftz", "prec-div", "prec-sqrt", "fmad")
FAST_MATH_IMPLIES = {"ftz": True, "prec-div": False, "prec-sqrt": False, "fmad": True}
IEEE_DEFAULTS = {"ftz": False, "prec-div": True, "prec-sqrt": True, "fmad": True}


@dataclass
class Option:
    """A recognised option: its canonical name, value and the token(s) that wrote it."""
    name: str
    value: str | None
    flag: Flag                  # the option token (where CL401 points)


@dataclass
class NvccSettings:
    ftz: bool = False
    prec_div: bool = True
    prec_sqrt: bool = True
    fmad: bool = True
    fast_intrinsics: bool = False
    arch: list[str] = field(default_factory=list)
    gencode: list[str] = field(default_factory=list)
    defines: dict[str, str] = field(default_factory=dict)
    include_dirs: list[str] = field(default_factory=list)
    ptxas_options: list[str] = field(default_factory=list)
    compiler_options: list[str] = field(default_factory=list)
    maxrregcount: int | None = None
    # which option decided each floating-point setting (None: the default)
    decided_by: dict[str, Option | None] = field(default_factory=dict)
    fast_math_flags: list[Option] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)
    opaque: bool = False        # part of the command line is not statically known

    @property
    def fast_math(self) -> bool:
        return bool(self.fast_math_flags)

    def fp(self, name: str) -> bool:
        return {"ftz": self.ftz, "prec-div": self.prec_div, "prec-sqrt": self.prec_sqrt,
                "fmad": self.fmad}[name]


def split_words(text: str, start: int = -1, path: str = "") -> list[Flag]:
    """Whitespace-split a flags string, each word keeping its offset (start + index)."""
    out = []
    for m in re.finditer(r"\S+", text):
        s = start + m.start() if start >= 0 else -1
        e = start + m.end() if start >= 0 else -1
        out.append(Flag(m.group(), path, s, e))
    return out


def parse_options(flags: Sequence[Flag | str]) -> list[Option]:
    """Recognised options, in order; unknown tokens are skipped."""
    toks = [f if isinstance(f, Flag) else Flag(str(f)) for f in flags]
    out: list[Option] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        t = tok.text
        i += 1
        if not t.startswith("-") or t in ("-", "--"):
            continue
        body = t[2:] if t.startswith("--") else t[1:]
        name, eq, value = body.partition("=")
        canon = _BY_SPELLING.get(name)
        if canon is None and len(body) > 1 and body[0] in _GLUED and not eq:
            out.append(Option(_GLUED[body[0]], body[1:], tok))
            continue
        if canon is None and len(body) > 1 and body[0] in _GLUED and eq and \
                body[0] == "D":
            out.append(Option("define-macro", body[1:], tok))
            continue
        if canon is None:
            continue
        if canon in _VALUED:
            if not eq:
                if i < len(toks):
                    value = toks[i].text
                    i += 1
                else:
                    value = None
            out.append(Option(canon, value, tok))
        else:
            out.append(Option(canon, None, tok))
    return out


def _bool(value: str | None) -> bool | None:
    if value is None:
        return None
    v = value.strip().strip("'\"").lower()
    if v in ("true", "1"):
        return True
    if v in ("false", "0"):
        return False
    return None


def interpret(flags: Sequence[Flag | str], opaque: bool = False) -> NvccSettings:
    s = NvccSettings(opaque=opaque)
    options = parse_options(flags)
    s.options = options
    explicit: dict[str, Option] = {}
    for opt in options:
        if opt.name == "use_fast_math":
            s.fast_math_flags.append(opt)
        elif opt.name in FP_OPTIONS:
            if _bool(opt.value) is not None:
                explicit[opt.name] = opt          # later explicit values win
        elif opt.name == "gpu-architecture" and opt.value:
            s.arch.append(opt.value)
        elif opt.name == "generate-code" and opt.value:
            s.gencode.append(opt.value)
        elif opt.name == "define-macro" and opt.value:
            k, _, v = opt.value.partition("=")
            s.defines[k] = v or "1"
        elif opt.name == "include-path" and opt.value:
            s.include_dirs.append(opt.value)
        elif opt.name == "ptxas-options" and opt.value:
            s.ptxas_options.extend(v for v in opt.value.split(",") if v)
        elif opt.name == "compiler-options" and opt.value:
            s.compiler_options.extend(v for v in opt.value.split(",") if v)
        elif opt.name == "maxrregcount" and opt.value and opt.value.isdigit():
            s.maxrregcount = int(opt.value)
    fast = s.fast_math_flags[-1] if s.fast_math_flags else None
    for name in FP_OPTIONS:
        if name in explicit:
            value, by = bool(_bool(explicit[name].value)), explicit[name]
        elif fast is not None:
            value, by = FAST_MATH_IMPLIES[name], fast
        else:
            value, by = IEEE_DEFAULTS[name], None
        s.decided_by[name] = by
        setattr(s, name.replace("-", "_"), value)
    s.fast_intrinsics = fast is not None
    return s


# What a flag does to single-precision device code, for messages.
EFFECTS = {
    "ftz": "float denormals flushed to zero",
    "prec-div": "approximate division",
    "prec-sqrt": "approximate square root",
    "fast-intrinsics": "fast intrinsics for sinf/cosf/expf/logf/powf",
}


def fast_math_effects(settings: NvccSettings, opt: Option) -> list[str]:
    """The effects of ``opt`` that survive the rest of the command line (keys of EFFECTS)."""
    out = []
    if opt.name == "use_fast_math":
        for name in ("ftz", "prec-div", "prec-sqrt"):
            if settings.decided_by.get(name) is not None and \
                    settings.decided_by[name].name == "use_fast_math" and \
                    settings.fp(name) == FAST_MATH_IMPLIES[name]:
                out.append(name)
        out.append("fast-intrinsics")
    elif opt.name in ("ftz", "prec-div", "prec-sqrt"):
        if settings.decided_by.get(opt.name) is opt and \
                settings.fp(opt.name) == FAST_MATH_IMPLIES[opt.name]:
            out.append(opt.name)
    return out


def reported_options(settings: NvccSettings) -> Iterable[tuple[Option, list[str]]]:
    """Every fast-math option of the command line with the effects it still has."""
    for opt in settings.options:
        if opt.name in ("use_fast_math", "ftz", "prec-div", "prec-sqrt"):
            effects = fast_math_effects(settings, opt)
            if effects:
                yield opt, effects
