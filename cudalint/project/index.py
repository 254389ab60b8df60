"""The project index: what crosses files in a CUDA project, read once per run.

Real CUDA is not written one closed file at a time: mmcv keeps its kernels as templates
in ``common/cuda/*_kernel.cuh``, writes their loops with ``CUDA_1D_KERNEL_LOOP`` from a
helper header, and launches them from ``pytorch/cuda/*.cu`` with ``THREADS_PER_BLOCK``.
The index reads every CUDA file of the run and the project headers they include, with
regular expressions (no parse: its cost must stay a small fraction of the parse), and
holds for each file (:class:`FileFacts`, memoised by the file's stat signature):

- its quoted includes, resolved relative to the includer, then the ``include-dirs``
  setting, then the include folders the build files above it declare (setup.py strings
  on ``include`` lines, CMake ``include_directories``, nvcc ``-I``). Headers under a
  library folder (torch, ATen, c10, cub, thrust, cutlass, third_party) are never read:
  what they define stays unknown;
- its macros (:class:`~cudalint.sources.macros.MacroDef`: name, parameters, body, where);
- its integer constants (object-like macros and ``const``/``constexpr`` integers at
  file scope, evaluated in include order);
- the kernels it defines and the launches it writes (``k<<<g, b>>>``, ``k<T><<<...>>>``,
  through a function pointer assigned in the same function), with the block shape
  resolved where it is a constant.

A launch in file L reaches a kernel defined in file F when L is F, L includes F
(directly or through headers), or L is in F's folder and no other file there defines a
kernel of that name. :func:`unit_view` hands one file what the linting of it needs; the
files whose facts it used are its dependencies, which :func:`project_deps` gives the
result cache (through :func:`cudalint.project.includes.include_deps`).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from cudalint.model.consteval import eval_int
from cudalint.model.dispatch import dispatch_aliases
from cudalint.model.preproc import as_if, off_cuda_build
from cudalint.model.instances import split_args
from cudalint.project.launch_text import call_args, local_init, pointer_targets, split_top
from cudalint.project.header_functions import header_functions
from cudalint.sources.macros import (CharMap, MacroDef, at_invocation, expand_expression,
                                     expand_text)
from cudalint.sources.signature import file_sig

MAX_INCLUDE_DEPTH = 8
MAX_FILE_BYTES = 2 << 20
LIBRARY_PARTS = frozenset({"torch", "aten", "c10", "cub", "thrust", "cutlass", "cute",
                           "third_party", "3rdparty", "thirdparty", "external",
                           "site-packages"})
BUILD_FILES = ("setup.py", "CMakeLists.txt")
MAX_LEVELS = 6
WINDOW = 8000           # characters around a launch searched for its block's declaration

# patterns that start with a literal (the regex engine then skips ahead to it: 10x faster
# than a ^ anchor on every line); what is before the match is checked by _at_line_start
_INCLUDE = re.compile(r'#[ \t]*include[ \t]*"([^"\n]+)"')
_DEFINE = re.compile(r"#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^)\n]*\))?"
                     r"((?:[^\n\\]|\\[^\n]|\\\n)*)")
_CONST = re.compile(r"const(?:expr)?[ \t]+(?:static[ \t]+)?"
                    r"(?:unsigned[ \t]+|signed[ \t]+)?(?:int|long|short|size_t|unsigned|"
                    r"u?int(?:8|16|32|64)_t)[ \t]+([A-Za-z_]\w*)[ \t]*=[ \t]*([^;{}\n]+);")
_GLOBAL = re.compile(r"__global__")
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^()]*(?:\([^()]*\)[^()]*)*\)")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_NOISE = re.compile(r"/\*.*?\*/|//[^\n]*|\\\r?\n", re.DOTALL)
_SKIP = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""",
                   re.DOTALL)
_QUOTED = re.compile(r"""['"]([^'"\n]+)['"]""")
_CMAKE_INC = re.compile(r"\b(target_)?include_directories\s*\(([^)]*)\)", re.IGNORECASE)
_DASH_I = re.compile(r"""['"\s]-I\s*([^'"\s]+)""")


@dataclass(frozen=True)
class LaunchSite:
    kernel: str                     # the kernel launched (a function pointer resolved)
    template_args: str              # "<scalar_t>", or ""
    block_text: str                 # the block expression as written
    file: str                       # absolute path of the launching file
    offset: int                     # char offset of the launch in that file
    line: int
    block: tuple[int, int, int] | None = None     # resolved (x, y, z), None: unknown
    through: str = ""               # the function pointer's name, when launched through one
    # each template argument, evaluated in the launcher where it is an integer
    # ("256" for <BLOCK>), else as written ("double")
    template_values: tuple[str, ...] = ()
    # the type aliases of the dispatch calls around it (alias, its types or None:
    # model.dispatch), e.g. (("scalar_t", ("double", "float")),)
    aliases: tuple = ()
    # without template arguments: its call's argument list as written, and the launching
    # function's text before it (their declarations), for deduced template arguments
    args_text: str = ""
    before: str = field(default="", repr=False, compare=False)


@dataclass
class FileFacts:
    path: str
    includes: list[str]
    macros: list[tuple[MacroDef, int]]          # (definition, char offset of its end)
    kernels: list[str]
    raw_launches: list[tuple]                   # see _launches
    text: str = field(repr=False, default="")

    @cached_property
    def constants(self) -> list[tuple[str, str]]:
        """(name, expression) of object-like macros, then of const/constexpr integers
        at the start of a line: read only for headers and launchers that need them."""
        out = [(m.name, m.body) for m, _ in self.macros if m.params is None and m.body]
        text = self.text
        if "const" in text:
            for m in _CONST.finditer(text):
                if _at_line_start(text, m.start()) or \
                        _at_line_start(text, m.start(), "static"):
                    out.append((m.group(1), m.group(2)))
        return out


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_FILE_BYTES or b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


@lru_cache(maxsize=4096)
def _facts_at(path: str, sig: tuple) -> FileFacts | None:
    text = _read(path)
    if text is None:
        return None
    return scan(path, text)


def facts(path: str) -> FileFacts | None:
    """A file's facts, read once per content (its stat signature)."""
    sig = file_sig(path)
    return _facts_at(path, sig) if sig is not None else None


def _at_line_start(text: str, pos: int, allowed: str = "") -> bool:
    """Only blanks (and the words of ``allowed``) between the line's start and ``pos``."""
    start = text.rfind("\n", 0, pos) + 1
    head = text[start:pos]
    return not head.strip() or (bool(allowed) and head.split() == allowed.split())


def scan(path: str, text: str) -> FileFacts:
    includes = [m.group(1) for m in _INCLUDE.finditer(text)
                if _at_line_start(text, m.start())] if "include" in text else []
    macros = []
    line, counted = 1, 0
    if "define" in text:
        hip = _hip_regions(text) if _PLATFORM_HINT.search(text) else []
        for m in _DEFINE.finditer(text):
            if not _at_line_start(text, m.start()):
                continue
            if hip and any(a <= m.start() < b for a, b in hip):
                continue            # the HIP side of a platform guard: not in a CUDA build
            params = m.group(2)
            body = _NOISE.sub(" ", m.group(3)).strip()
            variadic = False
            plist = None
            if params is not None:
                names = [p.strip() for p in params[1:-1].split(",") if p.strip()]
                if names and names[-1] == "...":
                    variadic = True
                    names[-1] = "__VA_ARGS__"
                elif names and names[-1].endswith("..."):
                    names[-1] = names[-1][:-3].strip()     # a named variadic parameter
                    variadic = True
                plist = tuple(names)
            line += text.count("\n", counted, m.start())
            counted = m.start()
            macros.append((MacroDef(m.group(1), plist, body, variadic,
                                    f"{os.path.basename(path)}:{line}"), m.end()))
    kernels = []
    if "__global__" in text:
        for m in _GLOBAL.finditer(text):
            if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
                continue
            seg = _LAUNCH_BOUNDS.sub(" ", text[m.end():m.end() + 400])
            k = seg.find("(")
            names = _IDENT.findall(seg[:k]) if k > 0 else []
            if names:
                kernels.append(names[-1])
    raw = _launches(text) if "<<<" in text else []
    return FileFacts(path, includes, macros, kernels, raw, text)


_PLATFORM_HINT = re.compile(r"HIP|ROCM|GOOGLE_CUDA")
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b"
                        r"((?:[^\n]*\\\r?\n)*[^\n]*)", re.MULTILINE)


def _hip_regions(text: str) -> list[tuple[int, int]]:
    """Char ranges on the HIP/ROCm side of a platform guard (``#if defined(USE_ROCM)``
    up to its ``#else``; after the ``#else`` of ``#ifndef __HIP_PLATFORM_AMD__``; the
    ``#elif TENSORFLOW_USE_ROCM`` of ``#if GOOGLE_CUDA``; the ``#else`` of ``#ifdef
    __HIP_PLATFORM_NVCC__``): a CUDA build never sees what is defined there (exllamav2's
    compat.cuh maps `__shfl_xor_sync` to the legacy `__shfl_xor` for ROCm only; expanded
    in a CUDA file, it made 8 false CL104). The same test as
    model.preproc.not_for_modern_cuda (``off_cuda_build`` on the chain of conditions)."""
    out: list[tuple[int, int]] = []
    stack: list[tuple[list[str], int, int]] = []   # (conditions so far, branch, start)
    for m in _DIRECTIVE.finditer(text):
        kind, rest = m.group(1), _TAIL_COMMENT.sub(" ", m.group(2))
        if kind in ("if", "ifdef", "ifndef"):
            stack.append(([as_if(kind, rest)], 0, m.end()))
        elif not stack:
            continue
        else:
            chain, branch, start = stack[-1]
            if off_cuda_build(chain, branch):
                out.append((start, m.start()))
            if kind == "endif":
                stack.pop()
            elif kind == "else":
                stack[-1] = (chain, len(chain), m.end())
            else:
                chain = chain + [as_if(kind, rest)]
                stack[-1] = (chain, len(chain) - 1, m.end())
    return out


_TAIL_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def _launches(text: str) -> list[tuple]:
    """(name, template args, config texts, offset, window start, window end) of each
    ``<<<...>>>``; the window stands for the function around it."""
    out = []
    for m in re.finditer(r"<<<", text):
        p = m.start()
        end = text.find(">>>", p + 3, p + 3000)
        if end < 0:
            continue
        q = p
        while q > 0 and text[q - 1] in " \t\r\n":
            q -= 1
        targs = ""
        if q > 0 and text[q - 1] == ">":
            depth, r = 0, q - 1
            while r >= 0 and q - r < 300:
                c = text[r]
                if c == ">":
                    depth += 1
                elif c == "<":
                    depth -= 1
                    if depth == 0:
                        break
                elif c in ";{}":
                    r = -1
                    break
                r -= 1
            if r < 0 or depth != 0:
                continue
            targs = text[r:q]
            q = r
            while q > 0 and text[q - 1] in " \t":
                q -= 1
        s = q
        while s > 0 and (text[s - 1].isalnum() or text[s - 1] in "_:"):
            s -= 1
        name = text[s:q].split("::")[-1]
        if not name or not (name[0].isalpha() or name[0] == "_"):
            continue
        config = split_top(text[p + 3:end])
        # the launch's function: back to the end of the one before it (a `}` that
        # starts a line), at most WINDOW characters either way
        lo = max(0, p - WINDOW)
        brace = text.rfind("\n}", lo, s)
        if brace >= 0:
            lo = brace + 2
        hi = min(len(text), end + WINDOW)
        nxt = text.find("\n}", end, hi)
        if nxt >= 0:
            hi = nxt + 2
        out.append((name, targs, config, s, lo, hi))
    return out


# ---- include resolution ------------------------------------------------------------------
def _library(path: str) -> bool:
    parts = [p.lower() for p in Path(path).parts]
    return any(p in LIBRARY_PARTS for p in parts[-4:-1])


@lru_cache(maxsize=1024)
def _build_dirs_in(folder: str) -> tuple[str, ...]:
    """Include folders that the build files of ``folder`` name (existing folders only)."""
    out: list[str] = []
    for name in BUILD_FILES:
        path = os.path.join(folder, name)
        text = _read(path) if os.path.isfile(path) else None
        if not text or "include" not in text.lower():
            continue
        cands: list[str] = []
        if name == "setup.py":
            for line in text.splitlines():
                low = line.lower()
                if "include" in low:
                    cands.extend(_QUOTED.findall(line))
                if "-i" in low:
                    cands.extend(m.group(1) for m in _DASH_I.finditer(line))
        else:
            for m in _CMAKE_INC.finditer(text):
                words = m.group(2).split()
                if m.group(1):
                    words = words[1:]
                for w in words:
                    w = w.strip('"')
                    for var in ("${CMAKE_CURRENT_SOURCE_DIR}", "${PROJECT_SOURCE_DIR}",
                                "${CMAKE_SOURCE_DIR}", "${CMAKE_CURRENT_LIST_DIR}"):
                        w = w.replace(var, folder)
                    if "$" not in w and w.upper() not in ("PUBLIC", "PRIVATE", "INTERFACE",
                                                          "SYSTEM", "BEFORE", "AFTER"):
                        cands.append(w)
        for c in cands:
            c = c.strip()
            if not c or any(ch in c for ch in "*?{}$\n"):
                continue
            full = os.path.normpath(os.path.join(folder, c))
            if os.path.isdir(full) and not _library(full + "/x"):
                out.append(full)
    return tuple(dict.fromkeys(out))


@lru_cache(maxsize=1024)
def build_include_dirs(folder: str) -> tuple[str, ...]:
    """The include folders the build files in ``folder`` and above it declare."""
    out: list[str] = []
    cur = folder
    for _ in range(MAX_LEVELS):
        out.extend(_build_dirs_in(cur))
        if os.path.exists(os.path.join(cur, ".git")):
            break
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    return tuple(dict.fromkeys(out))


class ProjectIndex:
    """The facts of one run's files and the project headers they include."""

    def __init__(self, files: list[str], include_dirs: tuple[str, ...] = ()):
        self.files = [os.path.abspath(f) for f in files]
        self.include_dirs = tuple(os.path.abspath(d) for d in include_dirs)
        self._resolved: dict[tuple[str, str], str | None] = {}
        self._closure: dict[str, tuple[str, ...]] = {}
        self._launch_map: dict[str, list[LaunchSite]] | None = None
        self._sites: dict[str, list[LaunchSite]] = {}
        self._kernel_names: dict[str, frozenset[str]] = {}
        self._closure_sets: dict[str, frozenset[str]] = {}
        self._constants: dict[str, dict[str, int]] = {}
        self._macros: dict[str, tuple[dict[str, MacroDef], dict[str, int]]] = {}
        self._definers: dict[tuple[str, str], list[str]] | None = None
        self.file_set = frozenset(self.files)
        self._facts: dict[str, FileFacts | None] = {}
        self._own_constants: dict[str, dict[str, int]] = {}
        self._in_progress: set[str] = set()

    def facts(self, path: str) -> FileFacts | None:
        """:func:`facts`, stat-ed once per run (files do not change during one)."""
        if path in self._facts:
            return self._facts[path]
        got = self._facts[path] = facts(path)
        return got

    # ---- includes ---------------------------------------------------------------------
    def resolve(self, includer: str, name: str) -> str | None:
        folder = os.path.dirname(includer)
        key = (folder, name)
        if key in self._resolved:
            return self._resolved[key]
        found = None
        for base in (folder,) + self.include_dirs + build_include_dirs(folder):
            cand = os.path.normpath(os.path.join(base, name))
            if os.path.isfile(cand):
                found = None if _library(cand) else cand
                break
        self._resolved[key] = found
        return found

    def closure(self, path: str) -> tuple[str, ...]:
        """The project headers ``path`` includes, transitively, in include order
        (depth first, each once), without ``path`` itself."""
        got = self._closure.get(path)
        if got is not None:
            return got
        order: list[str] = []
        seen = {path}

        def visit(file: str, depth: int) -> None:
            if depth >= MAX_INCLUDE_DEPTH:
                return
            f = self.facts(file)
            if f is None:
                return
            for name in f.includes:
                header = self.resolve(file, name)
                if header is None or header in seen:
                    continue
                seen.add(header)
                visit(header, depth + 1)
                order.append(header)

        visit(path, 0)
        got = self._closure[path] = tuple(order)
        return got

    # ---- macros and constants ---------------------------------------------------------
    def macros(self, path: str) -> tuple[dict[str, MacroDef], dict[str, int]]:
        """The macros ``path`` sees from its project headers and itself (a name defined
        with two different bodies is left out: which one holds is not known here), and
        for those ``path`` defines, where the definition ends."""
        got = self._macros.get(path)
        if got is not None:
            return got
        defs: dict[str, MacroDef] = {}
        conflicts: set[str] = set()
        own_end: dict[str, int] = {}
        for file in self.closure(path) + (path,):
            f = self.facts(file)
            if f is None:
                continue
            for m, end in f.macros:
                old = defs.get(m.name)
                if old is not None and (old.params, old.body) != (m.params, m.body):
                    conflicts.add(m.name)
                defs[m.name] = m
                if file == path:
                    own_end.setdefault(m.name, end)
        for name in conflicts:
            defs.pop(name, None)
        got = self._macros[path] = (defs, own_end)
        return got

    def constants(self, path: str) -> dict[str, int]:
        """Integer constants ``path`` sees from its project headers (not its own: the
        model reads those from its tree), each header's evaluated once per run."""
        got = self._constants.get(path)
        if got is not None:
            return got
        env: dict[str, int] = {}
        f = self.facts(path)
        self._in_progress.add(path)
        for name in (f.includes if f is not None else ()):
            header = self.resolve(path, name)
            if header is None or header in self._in_progress:
                continue
            env.update(self.constants(header))
            env.update(self.own_constants(header))
        self._in_progress.discard(path)
        self._constants[path] = env
        return env

    def own_constants(self, path: str) -> dict[str, int]:
        """The constants ``path`` defines, evaluated after its headers'."""
        got = self._own_constants.get(path)
        if got is not None:
            return got
        f = self.facts(path)
        env = dict(self.constants(path))
        out: dict[str, int] = {}
        for name, expr in (f.constants if f is not None else ()):
            if '"' in expr or "{" in expr or expr.startswith("__") or not (
                    any(c.isdigit() for c in expr) or "sizeof" in expr
                    or any(n in env for n in _IDENT.findall(expr))):
                continue                # not an integer (an attribute, a type, a string)
            v = eval_int(expr, env)
            if v is not None:
                env[name] = out[name] = v
        self._own_constants[path] = out
        return out

    def value(self, path: str, expr: str, env: dict[str, int]) -> int | None:
        """An expression of ``path`` as an integer: its macros expanded, then evaluated."""
        v = eval_int(expr, env)
        if v is not None:
            return v
        defs, _ = self.macros(path)
        if not defs or not any(n in expr for n in defs):
            return None
        expanded = expand_expression(expr, defs)
        return eval_int(expanded, env) if expanded is not None else None

    # ---- launches ---------------------------------------------------------------------
    def launch_sites(self, path: str) -> list[LaunchSite]:
        got = self._sites.get(path)
        if got is None:
            got = self._sites[path] = self._launch_sites(path)
        return got

    def _launch_sites(self, path: str) -> list[LaunchSite]:
        f = self.facts(path)
        if f is None or not f.raw_launches:
            return []
        env = {**self.constants(path), **self.own_constants(path)}
        text = f.text
        kernels = set(self.kernel_names(path))
        dispatch = "AT_DISPATCH" in text
        out = []
        line, counted = 1, 0
        for name, targs, config, offset, lo, hi in f.raw_launches:
            line += text.count("\n", counted, offset)
            counted = offset
            block_text = config[1] if len(config) > 1 else ""
            block = self._dim3(path, block_text, text[lo:offset], env)
            targets = [name]
            through = ""
            if name not in kernels:
                pointed = [k for k in pointer_targets(text[lo:hi], name) if k in kernels]
                if pointed:
                    targets, through = pointed, name
            tvalues = self._template_values(path, targs, text[lo:offset], env) \
                if targs else ()
            aliases = tuple(dispatch_aliases(text, offset, lo).items()) \
                if dispatch else ()
            args = call_args(text, offset) if not targs else ""
            for k in targets:
                out.append(LaunchSite(k, targs, block_text, path, offset, line, block,
                                      through, tvalues, aliases, args,
                                      text[lo:offset] if args else ""))
        return out

    def _template_values(self, path: str, targs: str, before: str,
                         env: dict[str, int]) -> tuple[str, ...]:
        """``<BLOCK, float>`` as ("256", "float"): integers through the launching
        function's locals and the launcher's macros and constants."""
        out = []
        for arg in split_args(targs):
            expr = arg
            if _IDENT.fullmatch(arg):
                expr = local_init(before, arg) or arg
            v = self.value(path, expr, env) if any(c.isdigit() for c in expr) or \
                _IDENT.search(expr) else None
            out.append(str(v) if v is not None else arg)
        return tuple(out)

    def kernel_names(self, path: str) -> frozenset[str]:
        """The kernels ``path`` defines or sees in its project headers."""
        got = self._kernel_names.get(path)
        if got is None:
            names: list[str] = []
            for file in (path,) + self.closure(path):
                f = self.facts(file)
                if f is not None:
                    names.extend(f.kernels)
            got = self._kernel_names[path] = frozenset(names)
        return got

    def _by_kernel(self) -> dict[str, list[LaunchSite]]:
        """Every launch of the run's files, by the kernel it launches."""
        if self._launch_map is None:
            self._launch_map = {}
            for file in self.files:
                f = self.facts(file)
                if f is None or not f.raw_launches:
                    continue
                for site in self.launch_sites(file):
                    self._launch_map.setdefault(site.kernel, []).append(site)
        return self._launch_map

    def _dim3(self, path: str, expr: str, before: str, env: dict[str, int]
              ) -> tuple[int, int, int] | None:
        expr = expr.strip()
        if not expr:
            return None
        if _IDENT.fullmatch(expr):
            init = local_init(before, expr)
            if init is None:
                v = self.value(path, expr, env)
                return (v, 1, 1) if v and v > 0 else None
            expr = init
        m = re.fullmatch(r"(?:dim3\s*)?[({](.*)[)}]", expr, re.DOTALL)
        args = split_top(m.group(1)) if m else [expr]
        if not 1 <= len(args) <= 3:
            return None
        vals = [self.value(path, a, env) for a in args]
        if any(v is None or v <= 0 for v in vals):
            return None
        return tuple(vals + [1] * (3 - len(vals)))  # type: ignore[return-value]

    def launches_of(self, path: str) -> list[LaunchSite]:
        """Launches elsewhere in the project (and through function pointers in ``path``
        itself) of the kernels ``path`` defines."""
        f = self.facts(path)
        if f is None or not f.kernels:
            return []
        folder = os.path.dirname(path)
        by_kernel = self._by_kernel()
        out = []
        for kernel in dict.fromkeys(f.kernels):
            for site in by_kernel.get(kernel, ()):
                launcher = site.file
                if launcher == path:
                    ok = bool(site.through)     # a direct one the model sees itself
                elif path in self.closure_set(launcher):
                    ok = True
                else:
                    ok = os.path.dirname(launcher) == folder and \
                        kernel not in self.kernel_names(launcher) and \
                        self._sole_definer(folder, kernel) == path
                if ok:
                    out.append(site)
        return out

    def closure_set(self, path: str) -> frozenset[str]:
        got = self._closure_sets.get(path)
        if got is None:
            got = self._closure_sets[path] = frozenset(self.closure(path))
        return got

    def _sole_definer(self, folder: str, kernel: str) -> str | None:
        if self._definers is None:
            self._definers = {}
            for p in self.files:
                f = self.facts(p)
                for k in (f.kernels if f is not None else ()):
                    got = self._definers.setdefault((os.path.dirname(p), k), [])
                    if p not in got:
                        got.append(p)
        definers = self._definers.get((folder, kernel), [])
        return definers[0] if len(definers) == 1 else None

    def deps(self, path: str) -> list[str]:
        """The files whose facts the linting of ``path`` uses: its project headers, the
        files launching its kernels and their headers."""
        out = list(self.closure(path))
        for site in self.launches_of(path):
            if site.file != path:
                out.append(site.file)
                out.extend(self.closure(site.file))
        return list(dict.fromkeys(p for p in out if p != path))


# ---- the run's index ---------------------------------------------------------------------
_CURRENT: ProjectIndex | None = None
ENABLED = True          # tests switch the mechanism off to show what it adds


def prepare(targets) -> ProjectIndex | None:
    """Make the index of a run over its targets (``.path``, ``.kind``, ``.settings``):
    called once before the files are linted (workers forked afterwards share it)."""
    global _CURRENT
    files = [str(t.path) for t in targets if t.kind == "cuda"]
    if not files or not ENABLED:
        _CURRENT = None
        return None
    dirs: list[str] = []
    for t in targets:
        s = t.settings
        for d in getattr(s, "include_dirs", ()) or ():
            dirs.append(os.path.join(s.root, d))
    _CURRENT = ProjectIndex(files, tuple(dict.fromkeys(dirs)))
    for f in _CURRENT.files:        # read every file now, before the workers fork
        _CURRENT.closure(f)
    return _CURRENT


def current() -> ProjectIndex | None:
    return _CURRENT


def index_for(path: str, settings) -> ProjectIndex | None:
    """The run's index when it covers ``path``, else one for this file alone (its
    headers and macros; launches only from itself)."""
    if not ENABLED:
        return None
    full = os.path.abspath(path)
    idx = _CURRENT
    if idx is not None and full in idx.file_set:
        return idx
    dirs = tuple(os.path.join(settings.root, d)
                 for d in getattr(settings, "include_dirs", ()) or ())
    return ProjectIndex([full], dirs)


MAX_FOLDER_FILES = 64     # CUDA files of an open file's folder the language server indexes


def editor_index(path: str, texts: dict[str, str], settings) -> ProjectIndex | None:
    """The index the language server lints an open CUDA file with: the open CUDA
    documents (``texts``: path -> the editor's text, saved or not) and the other CUDA
    files of the file's folder (from disk, MAX_FOLDER_FILES at most). A launcher beside
    the file, or open in the editor, binds its kernels' block shapes and template
    arguments as in a run over the project; ``deps`` says which files a result used."""
    if not ENABLED:
        return None
    full = os.path.abspath(path)
    files = [full] + [os.path.abspath(p) for p in texts]
    folder = os.path.dirname(full)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    files += [os.path.join(folder, n) for n in names
              if n.endswith((".cu", ".cuh"))][:MAX_FOLDER_FILES]
    dirs = tuple(os.path.join(settings.root, d)
                 for d in getattr(settings, "include_dirs", ()) or ())
    idx = ProjectIndex(list(dict.fromkeys(files)), dirs)
    for p, text in texts.items():
        idx._facts[os.path.abspath(p)] = scan(os.path.abspath(p), text)
    return idx


def use_index(idx: ProjectIndex | None) -> ProjectIndex | None:
    """Make ``idx`` the run's index (the language server's worker, one file at a time);
    returns the one it replaces."""
    global _CURRENT
    old, _CURRENT = _CURRENT, idx
    return old


@dataclass
class UnitView:
    """What the linting of one CUDA file takes from the project."""
    text: str
    char_map: object | None
    constants: dict[str, int]
    launches: list[LaunchSite]
    notices: list[tuple[int, str]]          # (file char offset, message)
    # device functions of the project headers the file calls, appended after its text
    # (header_functions): (unit char start, end, header path, char offset in the header)
    spliced: list[tuple[int, int, str, int]] = field(default_factory=list)


def unit_view(path: str, text: str, settings) -> UnitView | None:
    idx = index_for(path, settings)
    if idx is None:
        return None
    full = os.path.abspath(path)
    if idx is not _CURRENT:
        # a file linted alone (the language server): its text, not the saved file
        idx._facts[full] = scan(full, text)
    macros, own_end = idx.macros(full)
    expansion = expand_text(text, macros, own_end)
    notices = []
    # said only with parse-notices on, as the parser's own unread regions are: a code
    # generator macro (a whole family of kernels) is no finding the user can act on
    if expansion.over_budget and getattr(settings, "parse_notices", False):
        off, name = expansion.over_budget[0]
        notices.append((off, f"macro `{name}` expands past cudalint's budget (depth "
                             f"or size); its expansion is unknown to the analyses"
                             + (f" (and {len(expansion.over_budget) - 1} more invocations)"
                                if len(expansion.over_budget) > 1 else "")))
    unit_text, char_map, spliced = _with_header_functions(idx, full, text, expansion)
    return UnitView(unit_text, char_map, idx.constants(full), idx.launches_of(full),
                    notices, spliced)


def _with_header_functions(idx: ProjectIndex, full: str, text: str, expansion):
    """The unit's text with the header device functions it calls appended (each piece
    mapped to the ``#include`` that brings it in), its char map, and where the pieces
    came from."""
    pieces = header_functions(idx, full, text) if "#include" in text else []
    if not pieces:
        return expansion.text, expansion.char_map, []
    cmap = expansion.char_map
    if cmap is None:
        cmap = CharMap()
        cmap.add(0, len(text), True)
    chunks = [expansion.text]
    at = len(expansion.text)
    spliced = []
    for piece in pieces:
        chunks.append("\n")
        cmap.add(at_invocation(piece.include_at), 1, False)
        at += 1
        chunks.append(piece.text)
        cmap.add(at_invocation(piece.include_at), len(piece.text), False)
        spliced.append((at, at + len(piece.text), piece.header, piece.start))
        at += len(piece.text)
    return "".join(chunks), cmap, spliced


def project_deps(path: str) -> list[str]:
    """Files besides ``path`` whose facts its result used (for the cache key): empty
    when no run index is prepared (a key made then differs from one made while linting,
    so a lookup misses rather than trusts a result whose launchers it cannot check)."""
    idx = _CURRENT
    full = os.path.abspath(path)
    if idx is None or full not in idx.file_set:
        return []
    return idx.deps(full)
