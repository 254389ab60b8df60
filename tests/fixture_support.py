"""Inline-annotated fixtures (semgrep style), shared by every rule's tests.

In ``fixtures/<CODE>/<name>.cu`` (or ``.py``), a comment ``// ruleid: CL104`` (``# ruleid:``
in Python) says the NEXT line that is not an annotation must be reported with that code;
``// ok: CL104`` says the next such line must not be. Several codes may be listed,
comma-separated. Every finding of a rule in its fixture files must be on an annotated
``ruleid`` line: anything else is a false positive and fails the test.
"""
from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_bytes
from cudalint.sources.base import file_kind

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def gputruth(name: str, module: str | None = None):
    """The GPU-truth script ``tools/gputruth/<name>.py`` as a module (registered under
    ``module``, default ``name``: dataclasses look their module up): the tests check the
    linter against the records these scripts wrote on the GPU, and reuse their parsers."""
    module = module or name
    if module in sys.modules:
        return sys.modules[module]
    spec = importlib.util.spec_from_file_location(
        module, ROOT / "tools" / "gputruth" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    spec.loader.exec_module(mod)
    return mod


_ANNOT = re.compile(r"(?://|#)\s*(ruleid|ok)\s*:\s*(CL\d{3}(?:\s*,\s*CL\d{3})*)")


def fixture_files(code: str | None = None) -> list[Path]:
    folders = [FIXTURES / code] if code else sorted(p for p in FIXTURES.iterdir() if p.is_dir())
    return sorted(p for f in folders if f.is_dir() for p in f.iterdir()
                  if file_kind(p) is not None)


def expectations(path: Path) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
    """({row: codes expected}, {row: codes forbidden}) from the annotations."""
    expect: dict[int, set[str]] = {}
    forbid: dict[int, set[str]] = {}
    pending: list[tuple[str, set[str]]] = []
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = _ANNOT.search(line)
        if m and line.strip().startswith(("//", "#")):
            pending.append((m.group(1), {c.strip() for c in m.group(2).split(",")}))
            continue
        for kind, codes in pending:
            (expect if kind == "ruleid" else forbid).setdefault(row, set()).update(codes)
        pending = []
    return expect, forbid


def lint_fixture(path: Path, codes: set[str], settings: Settings | None = None):
    settings = replace(settings or Settings(), select=tuple(sorted(codes)))
    # ptxas-driven rules (CL3xx): a committed log captured from compiling this very
    # fixture, ``<name>.ptxas.log`` beside it, is what the rules read
    log = path.with_suffix(".ptxas.log")
    if log.is_file() and not settings.ptxas.log:
        settings = replace(settings, ptxas=replace(settings.ptxas, log=(str(log),)))
    return lint_bytes(str(path), path.read_bytes(), settings, file_kind(path))
