"""ptxas facts for a unit, and where they come from.

Two sources (``[tool.cudalint.ptxas]``, ``--ptxas-log``, ``--ptxas``):

(a) ``log``: files or globs (relative to the config's folder, or the working folder):
    ``ptxas -v`` output or whole build logs; every ``ptxas`` line in them is read.
(b) ``enabled``: cudalint compiles the unit itself, ``nvcc -cubin -Xptxas -v
    -arch=<arch>`` plus ``include-dirs`` (and the unit's own folder), ``-D`` for the
    configured ``defines`` and the extra ``flags``; embedded Python kernels add the
    options their Python call passes (``-D``, ``-I``, ``-std``, ``-maxrregcount``, fast
    math). Output is cached by the hash of the text, its local headers, the flags and the
    nvcc path, in memory and under ``$XDG_CACHE_HOME/cudalint/ptxas`` (``~/.cache``).

Records are matched to the unit's functions by demangled name (template instantiations
to their template, overloads by parameter count) for the configured architecture; a log
that holds a single other architecture is used for that one. A name compiled with
different results (two translation units of a build log) is ambiguous and skipped.
"""
from __future__ import annotations

import glob
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cudalint.analysis.ptxas.ptxas_log import PtxasRecord, parse_log

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function

NVCC_HINT = ("install the CUDA toolkit, or `pip install cudalint[nvcc]` (the "
             "nvidia-cuda-nvcc package), or set [tool.cudalint.ptxas] nvcc = \"/path/to/nvcc\"")
COMPILE_TIMEOUT_S = 300

_log_cache: dict[tuple[str, int, int], list[PtxasRecord]] = {}
_compile_cache: dict[str, str] = {}
_warned: set[str] = set()


def find_nvcc(nvcc: str = "nvcc") -> str | None:
    """The nvcc executable: the configured one, on PATH, or from the nvidia-cuda-nvcc wheel."""
    found = shutil.which(nvcc)
    if found:
        return found
    if os.sep in nvcc:
        return None
    try:   # pip install nvidia-cuda-nvcc(-cu12): nvidia/cuda_nvcc/bin/nvcc
        import nvidia.cuda_nvcc as pkg  # type: ignore[import-not-found]
        for base in getattr(pkg, "__path__", []):
            candidate = Path(base) / "bin" / "nvcc"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    except Exception:
        pass
    return None


def nvcc_problem(nvcc: str = "nvcc") -> str | None:
    """None when nvcc can be run; otherwise what is missing and how to get it."""
    if find_nvcc(nvcc) is not None:
        return None
    return (f"--ptxas needs nvcc to compile device code, and `{nvcc}` was not found: "
            + NVCC_HINT)


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        print(f"cudalint: warning: {message}", file=sys.stderr)


# ---- (a) logs ----------------------------------------------------------------------
def log_paths(patterns: tuple[str, ...], root: str = ".") -> list[Path]:
    out: list[Path] = []
    for pattern in patterns:
        candidates = [pattern] if os.path.isabs(pattern) else \
            [os.path.join(root, pattern), pattern]
        for c in candidates:
            hits = sorted(glob.glob(c, recursive=True)) if glob.has_magic(c) else \
                ([c] if os.path.isfile(c) else [])
            if hits:
                out.extend(Path(h) for h in hits)
                break
    seen: set[Path] = set()
    unique = []
    for p in out:
        r = p.resolve()
        if r not in seen:
            seen.add(r)
            unique.append(p)
    return unique


def read_log(path: Path) -> list[PtxasRecord]:
    try:
        st = path.stat()
    except OSError:
        return []
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _log_cache:
        try:
            text = path.read_bytes().decode("utf-8", "replace")
        except OSError:
            return []
        _log_cache[key] = parse_log(text, str(path))
    return _log_cache[key]


# ---- (b) compiling -----------------------------------------------------------------
_PASS_OPTION = re.compile(r"^(-D|-I|-U|--?std=|-std\b|--?use_fast_math|--?maxrregcount|"
                          r"-ftz|-prec-div|-prec-sqrt|-fmad|--?extended-lambda|"
                          r"--?expt-relaxed-constexpr|-G\b|-lineinfo)")


def embedded_options(unit) -> list[str]:
    """nvcc-compatible options among those an embedded kernel's Python call passes."""
    emb = getattr(unit, "embedded", None)
    opts = getattr(emb, "options", None) if emb is not None else None
    if not opts:
        return []
    if isinstance(opts, str):
        opts = shlex.split(opts)
    out: list[str] = []
    items = [str(o) for o in opts if isinstance(o, (str, int))]
    i = 0
    while i < len(items):
        o = items[i]
        if _PASS_OPTION.match(o):
            out.append(o)
            if o in ("-D", "-I", "-U", "--maxrregcount", "-maxrregcount") and \
                    i + 1 < len(items):
                out.append(items[i + 1])
                i += 1
        i += 1
    return out


def compile_command(nvcc: str, source: str, arch: str, settings, unit) -> list[str]:
    ptx = settings.ptxas
    cmd = [nvcc, "-cubin", f"-arch={arch}", "-Xptxas", "-v", "-o", os.devnull]
    if unit is not None and getattr(unit, "embedded", None) is None:
        folder = Path(unit.file.path).resolve().parent
        cmd.append(f"-I{folder}")
    for d in ptx.include_dirs:
        cmd.append(f"-I{Path(settings.root, d) if not os.path.isabs(d) else d}")
    for name, value in settings.defines:
        cmd.append(f"-D{name}={value}")
    cmd.extend(ptx.flags)
    if unit is not None:
        cmd.extend(embedded_options(unit))
    cmd.append(source)
    return cmd


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cudalint" / "ptxas"


def compile_unit(ctx: "UnitContext") -> tuple[list[PtxasRecord], str | None]:
    """Compile the unit for the configured arch; (records, problem)."""
    settings = ctx.settings
    nvcc = find_nvcc(settings.ptxas.nvcc)
    if nvcc is None:
        return [], nvcc_problem(settings.ptxas.nvcc)
    unit = ctx.unit
    text = unit.text
    cmd = compile_command(nvcc, "unit.cu", settings.arch, settings, unit)
    h = hashlib.sha256()
    h.update(text.encode("utf-8", "surrogatepass"))
    h.update("\0".join(cmd).encode())
    if unit.embedded is None and "#include" in text:
        try:
            from cudalint.project.includes import include_digest
            h.update(include_digest(Path(unit.file.path), text).encode())
        except Exception:
            pass
    key = h.hexdigest()
    log = _compile_cache.get(key)
    cache_file = _cache_dir() / f"{key}.log"
    if log is None:
        try:
            log = cache_file.read_text(encoding="utf-8")
        except OSError:
            log = None
    if log is None:
        with tempfile.TemporaryDirectory(prefix="cudalint-ptxas-") as tmp:
            src = Path(tmp, "unit.cu")
            src.write_text(text, encoding="utf-8", errors="surrogateescape")
            try:
                proc = subprocess.run(cmd[:-1] + [str(src)], capture_output=True, text=True,
                                      errors="replace", timeout=COMPILE_TIMEOUT_S, cwd=tmp)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return [], f"nvcc could not compile {unit.label}: {exc}"
            log = proc.stdout + proc.stderr
            if proc.returncode != 0 and "Compiling entry function" not in log:
                first = next((ln for ln in log.splitlines() if "error" in ln), "")
                return [], (f"nvcc could not compile {unit.label} for ptxas facts "
                            f"({first.strip()[:200]})")
        try:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            tmpf = cache_file.with_suffix(f".tmp{os.getpid()}")
            tmpf.write_text(log, encoding="utf-8")
            os.replace(tmpf, cache_file)
        except OSError:
            pass
    _compile_cache[key] = log
    return parse_log(log, "nvcc"), None


# ---- facts per unit ----------------------------------------------------------------
def _norm_arch(arch: str | None) -> str | None:
    if arch is None:
        return None
    return arch.replace("compute_", "sm_").rstrip("af")


@dataclass
class PtxasFacts:
    arch: str | None                                  # the architecture the records are for
    records: list[PtxasRecord] = field(default_factory=list)
    problem: str | None = None
    by_function: dict[int, list[PtxasRecord]] = field(default_factory=dict)

    def for_function(self, fn: "Function") -> list[PtxasRecord]:
        return self.by_function.get(fn.node.id, [])


def ptxas_facts(ctx: "UnitContext") -> PtxasFacts:
    """The analysis rules ask for: ``ctx.analysis(ptxas_facts)``."""
    settings = ctx.settings
    ptx = settings.ptxas
    records: list[PtxasRecord] = []
    problem = None
    if ptx.log:
        for path in log_paths(ptx.log, settings.root):
            records.extend(read_log(path))
    if ptx.enabled:
        compiled, problem = compile_unit(ctx)
        records.extend(compiled)
        if problem:
            _warn_once(problem)
    if not records:
        return PtxasFacts(arch=None, problem=problem)
    want = _norm_arch(settings.arch)
    archs = {_norm_arch(r.arch) for r in records}
    if want in archs:
        arch = want
    elif len(archs) == 1:
        arch = next(iter(archs))
    else:
        return PtxasFacts(arch=None, records=records, problem=problem)
    chosen = [r for r in records if _norm_arch(r.arch) == arch]
    # a log that never names its architecture (a fragment, no `Compiling ... for` line)
    # is taken to be for the configured one
    facts = PtxasFacts(arch=arch or want, records=chosen, problem=problem)
    _match(ctx, facts)
    return facts


def _match(ctx: "UnitContext", facts: PtxasFacts) -> None:
    functions = [f for f in ctx.model.device_functions]
    by_name: dict[str, list] = {}
    for fn in functions:
        by_name.setdefault(fn.name, []).append(fn)
    # group records by mangled name: conflicting facts for one name are ambiguous
    groups: dict[str, list[PtxasRecord]] = {}
    for r in facts.records:
        groups.setdefault(r.mangled, []).append(r)
    for mangled, recs in groups.items():
        if len({r.key() for r in recs}) > 1:
            continue
        rec = recs[0]
        candidates = by_name.get(rec.base_name, [])
        if not candidates:
            continue
        if len(candidates) > 1:
            n = rec.param_count
            candidates = [f for f in candidates if n is not None and len(f.params) == n
                          and f.body is not None]
            if len(candidates) != 1:
                continue
        fn = candidates[0]
        if rec.entry and not fn.is_kernel:
            continue
        if "<" in rec.display_name and not fn.is_template:
            continue
        facts.by_function.setdefault(fn.node.id, []).append(rec)


_MAXRREG = re.compile(r"^-{1,2}maxrregcount(?:=(\d+))?$")


def maxrregcount(settings, unit=None) -> int | None:
    """``-maxrregcount N`` from the configured flags or the embedding call's options."""
    opts = list(settings.ptxas.flags) + (embedded_options(unit) if unit is not None else [])
    # -Xptxas --maxrregcount=N / -Xptxas=-maxrregcount=N arrive as one or two items
    flat: list[str] = []
    for o in opts:
        for part in re.split(r"[,=]?(?=-{1,2}maxrregcount)|^-Xptxas=?", o):
            if part:
                flat.append(part)
    value = None
    for i, o in enumerate(flat):
        m = _MAXRREG.match(o)
        if m:
            if m.group(1):
                value = int(m.group(1))
            elif i + 1 < len(flat) and flat[i + 1].isdigit():
                value = int(flat[i + 1])
    return value


def register_cap(fn: "Function", arch: str, settings, unit=None) -> tuple[int, str] | None:
    """(registers, what) for the tightest cap the source or flags put on ``fn``."""
    from cudalint.analysis.ptxas.occupancy import launch_bounds_register_cap
    caps: list[tuple[int, str]] = []
    if fn.launch_bounds is not None and fn.launch_bounds[0]:
        cap = launch_bounds_register_cap(arch, fn.launch_bounds[0], fn.launch_bounds[1])
        if cap:
            lb = fn.launch_bounds_node
            what = " ".join(lb.text.decode("utf-8", "replace").split()) if lb is not None \
                else "__launch_bounds__"
            caps.append((cap, f"`{what}`"))
    n = maxrregcount(settings, unit)
    if n:
        caps.append((n, f"`-maxrregcount={n}`"))
    return min(caps) if caps else None


def ptxas_digest(settings) -> str:
    """Part of the result cache key: the logs' paths, sizes and modification times (a
    re-captured log must not give back findings from the old one)."""
    ptx = settings.ptxas
    if not ptx.log:
        return ""
    parts = []
    for p in log_paths(ptx.log, settings.root):
        try:
            st = p.stat()
            parts.append(f"{p.resolve()}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            continue
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()
