"""The GPU architectures a unit is compiled for, and where that was said.

Rules whose finding matters on some GPUs and not on others (CL203: the read-only data
path before Volta; CL403: FP64 arithmetic on parts with reduced FP64 throughput) ask
:func:`target_archs` one question: which compute capabilities does this unit run on?

In order:

1. the ``arch`` setting, when the config or ``--arch`` gives it (``Settings.arch_set``);
2. for code embedded in a Python compile call (CuPy, PyCUDA, torch ``load_inline``), the
   call's own options (``-arch=sm_86``, ``--gpu-architecture=compute_75``);
3. for a file, the build files that compile it: every ``-arch``/``-gencode`` of its builds
   and, when asked, the architecture lists CMake and PyTorch read instead of flags
   (``set(CMAKE_CUDA_ARCHITECTURES 75 86)``, the ``CUDA_ARCHITECTURES`` target property,
   ``-DCMAKE_CUDA_ARCHITECTURES=...``, ``TORCH_CUDA_ARCH_LIST="7.5;8.6+PTX"`` set in
   setup.py) in the nearest folder, at or above the file, that names one;
4. else the default: the ``arch`` setting's default (sm_90), standing for the data-centre
   parts sm_80 and newer.

Several builds or several conditional lists: every architecture any of them names counts
(a unit built for sm_75 in one branch runs on sm_75). Nothing is run; ``native``,
``all`` and ``all-major`` name no architecture statically and are skipped.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from weakref import WeakKeyDictionary

from cudalint.config import Settings
from cudalint.project.buildflags import BUILD_FILES, MAX_LEVELS, unit_settings
from cudalint.sources.base import SourceFile

DEFAULT_ARCH = Settings.arch
DEFAULT_WHERE = "the default target (sm_80 and newer)"
SETTING_WHERE = "the `arch` setting"
BUILD_WHERE = "the build files"

_ARCH_NUMBER = re.compile(r"(?:sm|compute|lto)_(\d+)")
# any mention of an architecture in a build file (the cheap test before reading builds)
ANY_ARCH = re.compile(rb"(?:sm|compute|lto)_\d\d|CUDA_ARCHITECTURES|TORCH_CUDA_ARCH_LIST")
# the lists CMake and PyTorch read: the value up to the closing parenthesis or quote
_CMAKE_LIST = re.compile(
    r"(?:set\s*\(\s*CMAKE_CUDA_ARCHITECTURES|\bCUDA_ARCHITECTURES)\s+([^)]*)\)"
    r"|CMAKE_CUDA_ARCHITECTURES=[\"']?([\w;\- ]+)")
_TORCH_LIST = re.compile(r"TORCH_CUDA_ARCH_LIST[\"']?\s*(?:\]\s*=|,)\s*[\"']([^\"']+)[\"']")
# SourceFile -> {(default, lists, mentions): TargetArchs}
_PER_FILE: WeakKeyDictionary = WeakKeyDictionary()


@dataclass(frozen=True)
class TargetArchs:
    numbers: tuple[int, ...]    # compute capabilities as nvcc writes them: 75, 86, 90
    where: str                  # DEFAULT_WHERE, SETTING_WHERE or BUILD_WHERE

    @property
    def default(self) -> bool:
        return self.where == DEFAULT_WHERE


def arch_number(arch: str) -> int | None:
    """75 for ``sm_75``, ``compute_75``, ``75-real``; None where no number is written."""
    m = re.search(r"(\d+)", arch)
    return int(m.group(1)) if m else None


def target_archs(unit, settings: Settings, *, lists: bool = True,
                 mentions: re.Pattern[bytes] = ANY_ARCH) -> TargetArchs:
    """The architectures ``unit`` is compiled for (see the module docstring).

    ``lists=False`` reads only ``-arch``/``-gencode`` flags (CL203's resolution as it
    was validated). Build files are read only when one at or above the file matches
    ``mentions`` (reading which builds compile a file costs about 10 ms; most projects
    name no architecture)."""
    arch = settings.arch
    if settings.arch_set or arch != DEFAULT_ARCH:
        return TargetArchs((arch_number(arch) or 90,), SETTING_WHERE)
    default = TargetArchs((arch_number(arch) or 90,), DEFAULT_WHERE)
    embedded = getattr(unit, "embedded", None) is not None
    if embedded:
        return _target_archs(unit, default, True, lists, mentions)
    # a file's answer is the same for each rule that asks while the file is linted (the
    # engine makes a SourceFile per lint): the build files are walked once per file
    if not isinstance(unit.file, SourceFile):
        return _target_archs(unit, default, False, lists, mentions)
    memo = _PER_FILE.setdefault(unit.file, {})
    key = (default, lists, mentions)
    got = memo.get(key)
    if got is None:
        got = memo[key] = _target_archs(unit, default, False, lists, mentions)
    return got


def _target_archs(unit, default: TargetArchs, embedded: bool, lists: bool,
                  mentions: re.Pattern[bytes]) -> TargetArchs:
    folder = os.path.dirname(os.path.abspath(unit.file.path))
    numbers: set[int] = set()
    try:
        if not embedded and not _mentioned(folder, mentions):
            return default
        flags = unit_settings(unit)
        if flags is not None:
            numbers.update(n for a in list(flags.arch) + list(flags.gencode)
                           for n in (arch_number(x) for x in _ARCH_NUMBER.findall(a) if x)
                           if n)
        if lists and not embedded:
            numbers.update(_listed_archs(folder))
    except Exception:                           # unreadable build files: the default
        return default
    if not numbers:
        return default
    return TargetArchs(tuple(sorted(numbers)), BUILD_WHERE)


def _mentioned(folder: str, pattern: re.Pattern[bytes]) -> bool:
    """Does a build file in this folder or one above (to the repository root) match
    ``pattern``? A superset of what the builds read: it only decides whether to ask.
    Stat-ed on every call (a long-running server sees edits), read once per version."""
    for _ in range(64):
        for name in BUILD_FILES:
            path = os.path.join(folder, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if _file_mentions(path, st.st_mtime_ns, st.st_size, pattern):
                return True
        parent = os.path.dirname(folder)
        if parent == folder or os.path.exists(os.path.join(folder, ".git")):
            return False
        folder = parent
    return False


@lru_cache(maxsize=4096)
def _file_mentions(path: str, mtime_ns: int, size: int, pattern: re.Pattern[bytes]) -> bool:
    try:
        with open(path, "rb") as fh:
            return pattern.search(fh.read()) is not None
    except OSError:
        return False


def _listed_archs(folder: str) -> tuple[int, ...]:
    """The architectures of the CMake/PyTorch lists in the nearest folder (the file's or
    one above it, to the repository root) whose build files name one: a CMakeLists.txt
    in a subfolder overrides its parent's list."""
    for _ in range(MAX_LEVELS):
        found: set[int] = set()
        for name in BUILD_FILES:
            found.update(_archs_in_file(os.path.join(folder, name)))
        if found:
            return tuple(sorted(found))
        parent = os.path.dirname(folder)
        if parent == folder or os.path.exists(os.path.join(folder, ".git")):
            break
        folder = parent
    return ()


def _archs_in_file(path: str) -> tuple[int, ...]:
    try:
        st = os.stat(path)
    except OSError:
        return ()
    return _archs_in_version(path, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=1024)
def _archs_in_version(path: str, mtime_ns: int, size: int) -> tuple[int, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return archs_in_text(fh.read())
    except OSError:
        return ()


_COMMENT = re.compile(r"""#\[(=*)\[.*?\]\1\]|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|#[^\n]*""",
                      re.S)


def _uncommented(text: str) -> str:
    """``text`` with its ``#`` comments blanked (CMake's, Python's and TOML's; a CMake
    bracket comment too), quoted strings kept: LEAP's CMakeLists.txt lists `75 86 87 89`
    in a commented-out line beside the live `all-major` (sheet-newcorpus11)."""
    return _COMMENT.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else
                        re.sub(r"[^\n]", " ", m.group(0)), text)


def archs_in_text(text: str) -> tuple[int, ...]:
    """The architectures of the CMake and PyTorch lists written in a build file (not
    in its comments)."""
    out: set[int] = set()
    if "#" in text:
        text = _uncommented(text)
    for m in _CMAKE_LIST.finditer(text):
        for word in re.split(r"[\s;\"']+", m.group(1) or m.group(2) or ""):
            # 75, 75-real, 86-virtual; ${VAR}, native, all, all-major say nothing here
            if re.fullmatch(r"\d{2,3}(?:-real|-virtual)?[af]?", word):
                out.add(int(re.match(r"\d+", word).group(0)))
    for m in _TORCH_LIST.finditer(text):
        for word in re.split(r"[\s;,]+", m.group(1)):
            # 7.5, 8.6+PTX, 9.0a
            mm = re.fullmatch(r"(\d+)\.(\d)[af]?(?:\+PTX)?", word.strip())
            if mm:
                out.add(int(mm.group(1)) * 10 + int(mm.group(2)))
    return tuple(sorted(out))
