"""The rule interface and the registry that finds rules through entry points.

A rule is a class in a module of its own under ``rules/<family>/`` (installed as
``cudalint.rules.<family>``). Its docstring is its user documentation, with the headings
of :data:`DOC_HEADINGS`. ``check`` receives a context and yields :class:`Finding` objects;
it never reads files, re-parses, or formats output.

    class LegacyWarpIntrinsic(Rule):
        \"\"\"## What it does ...\"\"\"
        code = "CL104"
        name = "legacy-warp-intrinsic"
        severity = "error"
        fix_safety = "unsafe"

        def check(self, ctx):
            for call in ctx.calls_named("__shfl", ...):
                yield Finding.at(call, "...")

Third-party packages add rules the same way built-in ones are found: an entry point in
the group ``cudalint.rules`` naming a module (every Rule subclass in it and its
submodules), a Rule subclass, or an iterable of them.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from functools import lru_cache
from importlib.metadata import entry_points
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Iterator

if TYPE_CHECKING:
    from cudalint.context import FileContext, UnitContext
    from cudalint.diagnostics import Finding

ENTRY_POINT_GROUP = "cudalint.rules"
DOC_HEADINGS = ("What it does", "Why is this bad?", "Example", "Use instead", "References")
CODE_RE = re.compile(r"^CL\d{3}$")


class Rule:
    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    severity: ClassVar[str] = "warning"        # "error" | "warning" | "info"
    default_enabled: ClassVar[bool] = True
    fix_safety: ClassVar[str | None] = None     # "safe" | "unsafe" | None (no fix)
    # "unit": check(UnitContext) for every CUDA unit (a .cu/.cuh file or a kernel string);
    # "file": check(FileContext) for every file whose kind is in file_kinds;
    # "engine": emitted by the engine itself (CL000-CL002); check is never called.
    target: ClassVar[str] = "unit"
    file_kinds: ClassVar[frozenset[str]] = frozenset()

    def check(self, ctx: Any) -> Iterable["Finding"]:
        raise NotImplementedError

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        sections: dict[str, str] = {}
        current = None
        for line in cls.doc().splitlines():
            m = re.match(r"^##\s+(.*?)\s*$", line)
            if m:
                current = m.group(1)
                sections[current] = ""
            elif current is not None:
                sections[current] += line + "\n"
        return {k: v.strip() for k, v in sections.items()}

    @classmethod
    def summary(cls) -> str:
        """First sentence of "What it does", for SARIF and listings."""
        what = cls.doc_sections().get("What it does", "")
        first = re.split(r"(?<=\.)\s", " ".join(what.split()), maxsplit=1)[0]
        return first


def _rules_in(obj: Any) -> Iterator[type[Rule]]:
    if inspect.isclass(obj) and issubclass(obj, Rule) and obj.code:
        yield obj
    elif isinstance(obj, ModuleType):
        yield from _rules_in_module(obj)
        if hasattr(obj, "__path__"):
            for info in pkgutil.walk_packages(obj.__path__, obj.__name__ + "."):
                yield from _rules_in_module(importlib.import_module(info.name))
    elif isinstance(obj, Iterable):
        for item in obj:
            yield from _rules_in(item)


def _rules_in_module(module: ModuleType) -> Iterator[type[Rule]]:
    for value in vars(module).values():
        if inspect.isclass(value) and issubclass(value, Rule) and value.code \
                and value.__module__ == module.__name__:
            yield value


def _builtin_rules_package() -> ModuleType:
    try:
        return importlib.import_module("cudalint.rules")
    except ModuleNotFoundError:
        # a source checkout used without installing: rules/ sits beside cudalint/
        import sys
        from importlib.util import module_from_spec, spec_from_file_location
        from pathlib import Path
        folder = Path(__file__).resolve().parent.parent / "rules"
        spec = spec_from_file_location("cudalint.rules", folder / "__init__.py",
                                       submodule_search_locations=[str(folder)])
        if spec is None or spec.loader is None:
            raise
        module = module_from_spec(spec)
        sys.modules["cudalint.rules"] = module
        spec.loader.exec_module(module)
        return module


class RegistryError(Exception):
    pass


@lru_cache(maxsize=1)
def all_rules() -> dict[str, type[Rule]]:
    """Every rule, built-in and third-party, by code (sorted)."""
    found: dict[str, type[Rule]] = {}
    eps = list(entry_points(group=ENTRY_POINT_GROUP))
    if not any(ep.value.split(":")[0] == "cudalint.rules" for ep in eps):
        # running from a source tree that was never installed: the built-ins still count
        eps.append(None)  # type: ignore[arg-type]
    for ep in eps:
        obj = ep.load() if ep is not None else _builtin_rules_package()
        for rule in _rules_in(obj):
            if not CODE_RE.match(rule.code):
                raise RegistryError(f"rule {rule.__qualname__} has an invalid code {rule.code!r}")
            other = found.get(rule.code)
            if other is not None and other is not rule:
                raise RegistryError(f"two rules claim {rule.code}: {other.__module__} and "
                                    f"{rule.__module__}")
            found[rule.code] = rule
    return dict(sorted(found.items()))


def rule_by_code(code: str) -> type[Rule] | None:
    return all_rules().get(code.upper())
