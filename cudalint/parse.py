"""The one place that talks to tree-sitter: a parser per process and compiled queries."""
from __future__ import annotations

from functools import lru_cache
from operator import attrgetter

import tree_sitter
import tree_sitter_cuda

LANGUAGE = tree_sitter.Language(tree_sitter_cuda.language())
_parser: tree_sitter.Parser | None = None


def parse(data: bytes) -> tree_sitter.Tree:
    global _parser
    if _parser is None:
        _parser = tree_sitter.Parser(LANGUAGE)
    return _parser.parse(data)


@lru_cache(maxsize=None)
def query(source: str) -> tree_sitter.Query:
    return tree_sitter.Query(LANGUAGE, source)


def captures(source: str, node: tree_sitter.Node) -> dict[str, list[tree_sitter.Node]]:
    """Run a (cached, compiled) query over ``node``; captures grouped by name, in order."""
    result = tree_sitter.QueryCursor(query(source)).captures(node)
    for nodes in result.values():
        nodes.sort(key=_START)        # the cursor yields them in no useful order
    return result


_START = attrgetter("start_byte")


def text(node: tree_sitter.Node | None) -> str:
    if node is None:
        return ""
    return node.text.decode("utf-8", "replace")
