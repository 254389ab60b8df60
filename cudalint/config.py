"""Settings: ``[tool.cudalint]`` in pyproject.toml or a ``cudalint.toml``, found upward from
each file (closest wins), with command-line overrides on top. Any mistake in a config file
is a :class:`ConfigError` naming the file and the key (the CLI turns it into exit code 2).
"""
from __future__ import annotations

import hashlib
import json
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable

CONFIG_NAMES = ("cudalint.toml", ".cudalint.toml", "pyproject.toml")
DEFAULT_EXCLUDE = [
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".eggs", "__pycache__",
    "__pypackages__", "node_modules", "site-packages", "build", "dist", "_build",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cudalint_cache",
]


class ConfigError(Exception):
    """A config file or option the user must fix; the message names the file and key."""


@dataclass(frozen=True)
class PtxasSettings:
    enabled: bool = False
    log: tuple[str, ...] = ()          # ptxas -v logs / build logs to read
    nvcc: str = "nvcc"
    flags: tuple[str, ...] = ()        # extra nvcc flags for self-compilation
    include_dirs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = tuple(DEFAULT_EXCLUDE)
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    lint_unbuilt: bool = False       # lint .cu files no build of the project compiles
    arch: str = "sm_90"
    # whether `arch` was given (config or --arch): a given arch wins over the build files'
    # -arch/-gencode, the default does not (project/targets.py)
    arch_set: bool = False
    # CL403: "reduced-fp64" reports FP64 promotions only for targets with reduced FP64
    # throughput (sm_61, sm_75, sm_86, ...); "always" on every target
    fp64_promotion: str = "reduced-fp64"
    block_size: tuple[int, int, int] | None = None
    occupancy_threshold: float = 0.5
    coalescing_threshold: float = 2.0
    severity: tuple[tuple[str, str], ...] = ()
    ptxas: PtxasSettings = field(default_factory=PtxasSettings)
    defines: tuple[tuple[str, int], ...] = ()       # -D values assumed for every unit
    # folders searched for quoted includes after the includer's own (project/index.py)
    include_dirs: tuple[str, ...] = ()
    parse_notices: bool = False     # CL000 for each kernel with a region tree-sitter can't read
    # budgets of one file's analysis (and of the libclang helper): memory it may add to
    # what a worker holds, and wall time; past them the file (or unit) gets a CL000
    memory_limit_mb: int = 2048
    time_limit_s: float = 60.0
    # a project's own CUDA compile wrappers: ((qualified name, ((field, value), ...)), ...)
    python_compile_apis: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    config_path: str | None = None                  # where these settings came from
    root: str = "."                                 # the config's folder (or the cwd)

    def fingerprint(self) -> str:
        cached = _FINGERPRINTS.get(id(self))
        if cached is not None and cached[0] is self:
            return cached[1]
        data = {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("config_path", "root", "memory_limit_mb", "time_limit_s")}
        fp = hashlib.sha256(json.dumps(data, default=repr, sort_keys=True).encode()).hexdigest()
        _FINGERPRINTS[id(self)] = (self, fp)
        return fp

    def severity_of(self, code: str, default: str) -> str:
        return dict(self.severity).get(code, default)


_FINGERPRINTS: dict[int, tuple[Settings, str]] = {}    # settings are immutable


# key in the file -> (Settings field, converter)
def _str_list(key: str, value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list) or \
            not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got "
                          f"{type(value).__name__} {value!r}")
    return tuple(value)


def _codes(key: str, value: Any, where: str) -> tuple[str, ...]:
    return tuple(v.strip().upper() for v in _str_list(key, value, where))


def _bool(key: str, value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: `{key}` must be true or false, got {value!r}")
    return value


def _number(key: str, value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"{where}: `{key}` must be a positive number, got {value!r}")
    return float(value)


def _megabytes(key: str, value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 64:
        raise ConfigError(f"{where}: `{key}` must be a whole number of megabytes, at least "
                          f"64, got {value!r}")
    return value


def _fp64_promotion(key: str, value: Any, where: str) -> str:
    if value not in ("reduced-fp64", "always"):
        raise ConfigError(f"{where}: `{key}` must be \"reduced-fp64\" or \"always\", got "
                          f"{value!r}")
    return value


def _fraction(key: str, value: Any, where: str) -> float:
    v = _number(key, value, where)
    if v > 1:
        v = v / 100.0 if v <= 100 else -1
    if not 0 < v <= 1:
        raise ConfigError(f"{where}: `{key}` must be a fraction (0.5) or percentage (50)")
    return v


# The real GPU architectures some nvcc release accepts in -arch=sm_XX (nvcc --list-gpu-arch
# of CUDA 8 through 13); 'a' and 'f' suffixes exist from sm_90 and sm_100. The occupancy
# table (analysis/ptxas/occupancy.py, above this module) covers a subset; a test keeps it
# inside this one.
NVCC_ARCHS = ("sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50", "sm_52",
              "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80",
              "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_100", "sm_101", "sm_103",
              "sm_110", "sm_120", "sm_121")


def _arch(key: str, value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.replace("sm_", "").replace("compute_", "") \
            .rstrip("af").isdigit():
        raise ConfigError(f"{where}: `{key}` must be an architecture like \"sm_90\", got "
                          f"{value!r}")
    arch = "sm_" + value.split("_")[-1] if not value.startswith("sm_") else value
    base, suffix = arch.rstrip("af"), arch[len(arch.rstrip("af")):]
    number = int(base[3:])
    if base not in NVCC_ARCHS or len(suffix) > 1 or (suffix == "a" and number < 90) or \
            (suffix == "f" and number < 100):
        import difflib
        near = difflib.get_close_matches(base, NVCC_ARCHS, n=1, cutoff=0.0)
        raise ConfigError(f"{where}: `{key}` is {value!r}, an architecture nvcc does not "
                          f"know (closest: {near[0] if near else 'sm_90'}; known: "
                          f"{', '.join(NVCC_ARCHS)}, with 'a' from sm_90 and 'f' from "
                          "sm_100)")
    return arch


# A block's hardware limits, the same on every compute capability (CUDA C++ Programming
# Guide, "Technical Specifications per Compute Capability"); the model checks every other
# source of a block shape against the same numbers (model/launch_shape.py, which sits
# above this module and cannot be imported here; a test keeps the two equal).
BLOCK_LIMITS = (1024, 1024, 64)
BLOCK_THREADS = 1024


def _block(key: str, value: Any, where: str) -> tuple[int, int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not 1 <= len(value) <= 3 or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value) \
            or any(v > limit for v, limit in zip(value, BLOCK_LIMITS)) \
            or _product(value) > BLOCK_THREADS:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        raise ConfigError(f"{where}: `{key}` must be a block shape such as 256 or "
                          f"[32, 8] (at most 1024 threads; x and y at most 1024, z at most "
                          f"64), got {shown}")
    return tuple(list(value) + [1] * (3 - len(value)))  # type: ignore[return-value]


def _product(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _per_file_ignores(key: str, value: Any, where: str):
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: `{key}` must be a table of glob = [codes]")
    return tuple((glob, _codes(f"{key}.{glob}", codes, where)) for glob, codes in value.items())


def _severity(key: str, value: Any, where: str):
    if not isinstance(value, dict) or not all(
            v in ("error", "warning", "info") for v in value.values()):
        raise ConfigError(f"{where}: `{key}` must map codes to \"error\", \"warning\" or "
                          f"\"info\", got {value!r}")
    return tuple((k.upper(), v) for k, v in value.items())


def _defines(key: str, value: Any, where: str):
    if not isinstance(value, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and
            -(1 << 63) <= v < (1 << 64) for v in value.values()):
        raise ConfigError(f"{where}: `{key}` must map macro names to integers (64-bit)")
    return tuple(value.items())


_API_ARGS = ("source", "name", "preamble", "options", "name-expressions")
_API_FORMS = ("code", "sources", "cupy-elementwise", "cupy-reduction", "pycuda-elementwise",
              "pycuda-reduction", "pycuda-scan")


def _compile_apis(key: str, value: Any, where: str):
    """``[tool.cudalint.python-compile-apis."pkg.mod.fn"]``: which argument of a wrapper
    holds what (docs/python-sources.md); read by cudalint/sources/python/apis.py."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: `{key}` must map qualified names to tables")
    out = []
    for qual, spec in sorted(value.items()):
        if not isinstance(spec, dict):
            raise ConfigError(f"{where}: `{key}.{qual}` must be a table")
        fields_ = []
        for k, v in sorted(spec.items()):
            if k in _API_ARGS:
                ok = (type(v) is int and v >= 0) or isinstance(v, str) or (
                    isinstance(v, list) and len(v) == 2 and type(v[0]) is int and v[0] >= 0
                    and isinstance(v[1], str))
                v = tuple(v) if isinstance(v, list) else v
            elif k == "form":
                ok = v in _API_FORMS
            elif k == "launch":
                ok = v in ("cupy", "pycuda", "library")
            elif k == "block":
                ok = type(v) is int and 0 < v <= 1024
            else:
                raise ConfigError(f"{where}: unknown key `{key}.{qual}.{k}` (known: "
                                  f"{', '.join(_API_ARGS + ('block', 'form', 'launch'))})")
            if not ok:
                raise ConfigError(f"{where}: `{key}.{qual}.{k}` has a wrong value {v!r} "
                                  "(an argument is a position, a keyword or [position, "
                                  "\"keyword\"])")
            fields_.append((k, v))
        out.append((qual, tuple(fields_)))
    return tuple(out)


def _ptxas(key: str, value: Any, where: str) -> PtxasSettings:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: `{key}` must be a table")
    known = {"enabled": _bool, "log": _str_list, "nvcc": None, "flags": _str_list,
             "include-dirs": _str_list}
    out: dict[str, Any] = {}
    for k, v in value.items():
        if k not in known:
            raise ConfigError(f"{where}: unknown key `{key}.{k}` (known: "
                              f"{', '.join(sorted(known))})")
        if k == "nvcc":
            if not isinstance(v, str):
                raise ConfigError(f"{where}: `{key}.nvcc` must be a string")
            out["nvcc"] = v
        elif k == "log" and isinstance(v, str):
            out["log"] = (v,)
        else:
            out[k.replace("-", "_")] = known[k](f"{key}.{k}", v, where)  # type: ignore[misc]
    return PtxasSettings(**out)


OPTIONS = {
    "select": ("select", _codes),
    "ignore": ("ignore", _codes),
    "extend-select": ("extend_select", _codes),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", _str_list),
    "extend-exclude": ("extend_exclude", _str_list),
    "respect-gitignore": ("respect_gitignore", _bool),
    "lint-unbuilt": ("lint_unbuilt", _bool),
    "arch": ("arch", _arch),
    "fp64-promotion": ("fp64_promotion", _fp64_promotion),
    "block-size": ("block_size", _block),
    "occupancy-threshold": ("occupancy_threshold", _fraction),
    "coalescing-threshold": ("coalescing_threshold", _number),
    "severity": ("severity", _severity),
    "ptxas": ("ptxas", _ptxas),
    "defines": ("defines", _defines),
    "include-dirs": ("include_dirs", _str_list),
    "parse-notices": ("parse_notices", _bool),
    "memory-limit-mb": ("memory_limit_mb", _megabytes),
    "time-limit-s": ("time_limit_s", _number),
    "python-compile-apis": ("python_compile_apis", _compile_apis),
}


def parse_table(table: Any, where: str, base: Settings | None = None) -> Settings:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.cudalint] must be a table")
    values: dict[str, Any] = {}
    for key, value in table.items():
        option = OPTIONS.get(key) or OPTIONS.get(key.replace("_", "-"))
        if option is None:
            raise ConfigError(f"{where}: unknown option `{key}` (known: "
                              f"{', '.join(sorted(OPTIONS))})")
        name, convert = option
        values[name] = convert(key, value, where)
    if "arch" in values:
        values["arch_set"] = True
    return replace(base or Settings(), **values)


MAX_TOML_NESTING = 64       # arrays/inline tables; real configs nest 2-3 deep


def toml_nesting(text: str) -> int:
    """Deepest `[`/`{` nesting of a TOML text outside strings and comments.

    tomllib recurses once per level: near the recursion limit a garbage collection that
    runs a weakref callback prints "Exception ignored ... RecursionError" to stderr even
    when the RecursionError itself is caught (fuzz seed 32, 1,089 `[`). So the depth is
    measured first, without recursion, and a deep file never reaches tomllib.
    """
    depth = deepest = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            quote = c * 3 if text.startswith(c * 3, i) else c
            i += len(quote)
            while i < n and not text.startswith(quote, i):
                if c == '"' and text[i] == "\\":
                    i += 1
                elif len(quote) == 1 and text[i] == "\n":
                    break                   # unterminated: tomllib reports it
                i += 1
            i += len(quote)
            continue
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth = max(depth - 1, 0)
        i += 1
    return deepest


def load_config_file(path: Path) -> Settings | None:
    """Settings from one file; None for a pyproject.toml without [tool.cudalint]."""
    try:
        text = path.read_text(encoding="utf-8")
        if toml_nesting(text) > MAX_TOML_NESTING:
            raise ConfigError(f"{path}: invalid TOML: nested more than "
                              f"{MAX_TOML_NESTING} levels deep")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:          # tomllib recurses per nested array (fuzz: 1,000 `[`)
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("cudalint") if isinstance(data.get("tool"), dict) \
            else None
        if table is None:
            return None
    else:
        tool = data.get("tool")
        table = tool.get("cudalint", data) if isinstance(tool, dict) else data
    settings = parse_table(table, str(path))
    return replace(settings, config_path=str(path), root=str(path.parent))


class ConfigResolver:
    """Finds the closest config for each file (cached per folder), applies CLI overrides."""

    def __init__(self, overrides: dict[str, Any] | None = None, forced: Path | None = None,
                 stop_at: Path | None = None,
                 check: Callable[[Settings], None] | None = None):
        self.overrides = overrides or {}
        self._by_dir: dict[str, Settings] = {}
        # each file's settings before the overrides: its rule selectors are checked by the
        # caller's ``check`` (selection.check_settings; rules sit above this module)
        self._check = check
        self._forced = self._apply(self._load(forced) or Settings(
            config_path=str(forced), root=str(forced.parent))) if forced else None

    def _load(self, path: Path) -> Settings | None:
        settings = load_config_file(path)
        if settings is not None and self._check is not None:
            self._check(settings)
        return settings

    def _apply(self, settings: Settings) -> Settings:
        if not self.overrides:
            return settings
        values = dict(self.overrides)
        # --extend-select / --ignore on the command line add to the file's lists
        if "extend_select" in values:
            values["extend_select"] = settings.extend_select + values["extend_select"]
        if "ignore" in values:
            values["ignore"] = settings.ignore + values["ignore"]
        if "extend_exclude" in values:
            values["extend_exclude"] = settings.extend_exclude + values["extend_exclude"]
        if "ptxas" in values:
            # --ptxas / --ptxas-log add to [tool.cudalint.ptxas]; nvcc, flags stay
            cli = values["ptxas"]
            values["ptxas"] = replace(settings.ptxas,
                                      enabled=settings.ptxas.enabled or cli.enabled,
                                      log=settings.ptxas.log + cli.log)
        return replace(settings, **values)

    def for_path(self, path: Path) -> Settings:
        if self._forced is not None:
            return self._forced
        full = os.path.abspath(path)
        folder = full if Path(path).name != "_" and os.path.isdir(full) else \
            os.path.dirname(full)
        return self.for_folder(folder)

    def for_folder(self, folder: str) -> Settings:
        """Settings of the files in an absolute, normalised folder (discovery's walk asks
        once per folder; strings cost less than paths)."""
        if self._forced is not None:
            return self._forced
        return self._for_dir(folder)

    def _for_dir(self, folder: str) -> Settings:
        cached = self._by_dir.get(folder)
        if cached is not None:
            return cached
        settings = None
        for name in CONFIG_NAMES:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate):
                loaded = self._load(Path(candidate))
                if loaded is not None:
                    settings = self._apply(loaded)
                    break
        if settings is None:
            parent = os.path.dirname(folder)
            if parent != folder:
                settings = self._for_dir(parent)
            else:
                settings = self._apply(Settings(root=str(Path.cwd())))
        self._by_dir[folder] = settings
        return settings
