"""The language server's fast worker reparses a keystroke's text from the previous tree
(cudalint.parse.reuse_trees): the tree must be the one a fresh parse gives, node for node
(types, byte ranges, row/column points, missing and error flags), or the edited kernel's
quick findings would differ from the whole-file ones that follow."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
import tree_sitter

import cudalint.parse as P

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "examples").rglob("*.cu")) + sorted((ROOT / "fixtures").rglob("*.cu"))[:40]


def _shape(tree: tree_sitter.Tree) -> list[tuple]:
    out, stack = [], [tree.root_node]
    while stack:
        n = stack.pop()
        out.append((n.type, n.start_byte, n.end_byte, n.start_point, n.end_point,
                    n.is_named, n.is_missing, n.has_error))
        stack.extend(reversed(n.children))
    return out


@pytest.fixture
def reuse():
    saved = list(P._RECENT)
    P._RECENT.clear()
    P.reuse_trees(True)
    yield
    P.reuse_trees(False)
    P._RECENT[:] = saved


def _edits(data: bytes, rng: random.Random):
    """Statements typed at line starts, a character deleted, a line removed."""
    cur = data
    for _ in range(6):
        lines = cur.split(b"\n")
        i = rng.randrange(len(lines))
        kind = rng.randrange(3)
        if kind == 0:
            lines.insert(i, b"    int typed = 3 * threadIdx.x;")
        elif kind == 1 and lines[i]:
            j = rng.randrange(len(lines[i]))
            lines[i] = lines[i][:j] + lines[i][j + 1:]
        elif len(lines) > 1:
            del lines[i]
        cur = b"\n".join(lines)
        yield cur


def test_reparsed_trees_equal_fresh_ones(reuse):
    fresh = tree_sitter.Parser(P.LANGUAGE)
    rng = random.Random(24)
    reused = compared = 0
    assert FILES
    for path in FILES:
        data = path.read_bytes()
        P._RECENT.clear()
        P.parse(data)
        for new in _edits(data, rng):
            reused += P._edited(new) is not None
            got = P.parse(new)
            assert _shape(got) == _shape(fresh.parse(new)), (path, new)
            compared += 1
    assert compared >= 100
    assert reused >= compared // 4     # the reuse path is taken, not just a fresh parse


KERNELS = b"".join(b"__global__ void k%d(float* a) {\n    a[threadIdx.x] = 0.0f;\n}\n" % i
                   for i in range(10))


def test_a_typed_statement_reuses_the_previous_tree(reuse):
    P.parse(KERNELS)
    new = KERNELS.replace(b"{\n", b"{\n    int i = 2;\n", 1)
    old = P._edited(new)
    assert old is not None
    # the tree is edited as a copy: the one handed out before is untouched
    assert P._RECENT[0][1].root_node.end_point == (30, 0)
    assert _shape(P.parse(new)) == _shape(tree_sitter.Parser(P.LANGUAGE).parse(new))


def test_only_similar_error_free_texts_reuse(reuse):
    P.parse(KERNELS)
    assert P._edited(KERNELS + b"\n") is not None
    assert P._edited(b"void other() {}\n" * 20) is None          # not similar
    broken = KERNELS.replace(b"{\n", b"{\n    if (x) {\n", 1)
    P._RECENT.clear()
    P.parse(broken)                     # an unclosed brace: a tree with an error
    assert P._RECENT[0][1].root_node.has_error
    assert P._edited(broken + b"\n") is None     # never from a tree with errors


def test_off_unless_the_thread_asks():
    P.reuse_trees(False)
    text = b"__global__ void k(float* a) {\n    a[threadIdx.x] = 1.0f;\n}\n"
    P.parse(text)
    seen = []
    original = P._edited
    P._edited = lambda data: seen.append(data) or original(data)
    try:
        P.parse(text + b"\n")
    finally:
        P._edited = original
    assert seen == []
