"""What a rule receives.

:class:`UnitContext` wraps one CUDA unit: its tree (parsed once), its model, settings, and
a cache of analyses so that every rule asking for the same fact shares one computation:

    facts = ctx.analysis(ThreadDependence)     # computed once per unit, then shared

An analysis is any callable taking the context (a class or a function); its result is
memoised by identity of the callable.
"""
from __future__ import annotations

import ast
import warnings
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from tree_sitter import Node, Tree

from cudalint import parse as _parse
from cudalint.model.kernels import Model
from cudalint.sources.base import SourceFile, Unit

if TYPE_CHECKING:
    from cudalint.config import Settings

T = TypeVar("T")


class UnitContext:
    def __init__(self, unit: Unit, settings: "Settings"):
        self.unit = unit
        self.settings = settings
        self._analyses: dict[Any, Any] = {}
        # (unit byte offset, message): what an analysis could not do, said as a CL000
        self.notices: list[tuple[int, str]] = []

    @cached_property
    def tree(self) -> Tree:
        tree = _parse.parse(self.unit.data)
        if _parse.gave_up(self.unit.data):
            self.notices.append((0, "the parser needed more than "
                                 f"{_parse.parse_budget_s(len(self.unit.data)):.1f} s of CPU "
                                 "for this text (error recovery on broken syntax): it is "
                                 "not analysed"))
        return tree

    @property
    def root(self) -> Node:
        return self.tree.root_node

    @cached_property
    def model(self) -> Model:
        return Model(self.tree, self.unit.extra_defines)

    def analysis(self, factory: Callable[["UnitContext"], T]) -> T:
        if factory not in self._analyses:
            self._analyses[factory] = factory(self)
        return self._analyses[factory]

    def captures(self, query: str, node: Node | None = None) -> dict[str, list[Node]]:
        return _parse.captures(query, node if node is not None else self.root)

    @staticmethod
    def text(node: Node | None) -> str:
        return _parse.text(node)

    @cached_property
    def calls(self) -> dict[str, list[Node]]:
        """Every call of a plain identifier, by callee name: ``{"__shfl": [call, ...]}``."""
        by_name: dict[str, list[Node]] = {}
        # the calls from the same query: Node.parent costs the callee's depth (fuzz seed
        # 33's fix_cuda 69375b93a4: 2,762 calls 28,000 levels deep, 1.5 s a lint)
        call_of = {c.child_by_field_name("function").id: c
                   for c in self.model.nodes("callee_call")}
        for fn in self.model.nodes("callee"):     # the model's one query over the unit
            call = call_of.get(fn.id)
            by_name.setdefault(_parse.text(fn), []).append(
                call if call is not None else fn.parent)
        return by_name

    def line(self, node: Node | int) -> int:
        """The 1-based line in the *file* of a node (or a byte offset of the unit): what a
        message says when it points at another place ("the early return at line 409").
        For CUDA inside a Python string this is the .py file's line, not the string's."""
        offset = node if isinstance(node, int) else node.start_byte
        try:
            return self.unit.file.position(self.unit.file_offset(offset))[0]
        except Exception:           # a position the source layer cannot map
            return self.unit.data.count(b"\n", 0, offset) + 1

    def own_line(self, node: Node | int) -> int | None:
        """The file's line of a node, None for a header's text appended to the unit (issue
        13): what a finding's metrics carry."""
        return self.unit.own_line(node if isinstance(node, int) else node.start_byte)

    def place(self, node: Node | int) -> str:
        """Where a message says another place is: "line 12" of the file, or "line 3 of
        `helpers.cuh`" for a device function the unit took from a project header (its
        appended text maps to the `#include`'s line, which names the wrong code)."""
        offset = node if isinstance(node, int) else node.start_byte
        got = self.unit.header_place(offset) if self.unit.spliced else None
        if got is not None:
            return f"line {got[1]} of `{got[0]}`"
        return f"line {self.line(offset)}"

    def calls_named(self, *names: str) -> list[Node]:
        out = [c for n in names for c in self.calls.get(n, [])]
        return sorted(out, key=lambda c: c.start_byte)


class FileContext:
    """For rules with target "file": a whole file of one of the rule's ``file_kinds``."""

    def __init__(self, file: SourceFile, settings: "Settings"):
        self.file = file
        self.settings = settings
        self._analyses: dict[Any, Any] = {}

    @cached_property
    def is_test(self) -> bool:
        """A test file (`test_*.py`, `*_test.py`, `conftest.py`, or under a `tests`,
        `test` or `testing` folder): advice about model shapes does not apply to the toy
        models tests build on purpose."""
        parts = self.file.path.replace("\\", "/").split("/")
        name = parts[-1]
        return name.startswith("test_") or name.endswith("_test.py") or \
            name == "conftest.py" or any(p in ("tests", "test", "testing") for p in parts[:-1])

    @cached_property
    def python_tree(self) -> "ast.Module | None":
        """The file parsed by ``ast`` once for every file rule (None when it does not
        parse, or nests too deeply for the parser). Never imported or run."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")      # invalid escapes: not ours to report
                return ast.parse(self.file.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    def ast_offset(self, lineno: int, col_offset: int) -> int:
        """The character offset in the file of an ``ast`` position (``col_offset`` counts
        UTF-8 bytes; lines are the parser's, so a form feed or U+2028 inside a line does
        not shift them as ``str.splitlines`` would)."""
        starts = self.file.line_starts
        row = max(1, min(lineno, len(starts))) - 1
        start = starts[row]
        end = starts[row + 1] if row + 1 < len(starts) else len(self.file.text)
        line = self.file.text[start:end]
        if line.isascii():
            return start + min(col_offset, len(line))
        return start + len(line.encode("utf-8", "surrogatepass")[:col_offset]
                           .decode("utf-8", "replace"))

    def ast_span(self, node: "ast.AST") -> tuple[int, int]:
        return (self.ast_offset(node.lineno, node.col_offset),
                self.ast_offset(node.end_lineno, node.end_col_offset))

    def analysis(self, factory: Callable[["FileContext"], T]) -> T:
        if factory not in self._analyses:
            self._analyses[factory] = factory(self)
        return self._analyses[factory]
