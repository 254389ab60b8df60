"""Fuzz seed 48's slow server input (10.7 s on the device, over the 10 s bar): eight
16,000-term sums with a barrier at the bottom of each, linted eight times by one editor
session. Three walks that cost the tree's size per lint are bounded by what is asked:
parents are looked up lazily before a body is mapped, parse errors are found with a
cursor, and control_context does not read guards deeper than any program."""
from __future__ import annotations

from cudalint.analysis.memory import lanes
from cudalint.analysis.sync import cfg
from cudalint.model.kernels import Model
from cudalint.parse import parse

TERMS = 6_000
DEEP = ("__global__ void k(float* p, float x) {\n    if (threadIdx.x < 3) return;\n"
        "    p[0] = " + "x+" * TERMS + "x;\n    __syncthreads();\n}\n").encode()


def _deepest_identifier(stmt):
    node = stmt.named_children[0].child_by_field_name("right")     # the sum
    while node.named_child_count:
        node = node.named_children[0]
    return node


def test_a_guard_deeper_than_any_program_is_opaque_without_reading_the_path(monkeypatch):
    tree = parse(DEEP)
    (fn,) = [n for n in tree.root_node.named_children if n.type == "function_definition"]
    body = fn.child_by_field_name("body")
    leaf = _deepest_identifier(body.named_children[1])     # the first x of the sum
    monkeypatch.setattr(cfg, "MAX_GUARD_DEPTH", 1_000)
    steps = []
    real = cfg.ancestors
    monkeypatch.setattr(cfg, "ancestors", lambda n, t, limit=None: steps.append(limit) or
                        real(n, t, limit))
    (guard,) = cfg.control_context(leaf, body)
    assert guard.kind == "opaque" and steps == [1_000]
    assert cfg.ancestors(leaf, body, 1_000) is None
    assert len(cfg.ancestors(leaf, body)) > TERMS           # the whole path on request
    # a shallow node keeps its real guards
    ret = body.named_children[0].child_by_field_name("consequence")
    assert [g.kind for g in cfg.control_context(ret, body)] == ["if"]


def test_a_few_parent_questions_do_not_map_the_body(monkeypatch):
    tree = parse(DEEP)
    body = tree.root_node.named_children[0].child_by_field_name("body")
    walks = []
    monkeypatch.setattr(lanes, "_child_parents",
                        lambda b, t: walks.append(1) or {})
    parents = lanes._Parents(body)
    leaf = _deepest_identifier(body.named_children[1])
    for _ in range(lanes._Parents.LAZY):
        assert parents(leaf).id == leaf.parent.id
    assert walks == []
    parents(leaf)                                   # past LAZY questions: one map
    parents(leaf)
    assert walks == [1]


def _stack_walk(root):
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            found.append(node)
            continue
        if node.has_error:
            stack.extend(node.children)
    return sorted(found, key=lambda n: n.start_byte)


def test_parse_errors_are_the_outermost_ones_in_source_order():
    for src in (b"int f() { int x = ; if (a { } }\nvoid g() { h(1, }\n",
                b"__global__ void k(float* p) { p[0] = 1 }\nint y = (;\n",
                DEEP.replace(b"__syncthreads();", b"__syncthreads()x") + b"}\n{",
                b"struct S { int a }; int main() { return 0 }"):
        tree = parse(src)
        got = [(n.start_byte, n.end_byte, n.type) for n in Model(tree).error_nodes]
        want = [(n.start_byte, n.end_byte, n.type) for n in _stack_walk(tree.root_node)]
        assert got == want and got
