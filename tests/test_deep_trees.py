"""Ancestors found going down from a node's function body or from the unit's list of
conditionals (cfg.ancestors, preproc.Conditionals) are the ones Node.parent gives."""
import re

from cudalint.analysis.sync.cfg import ancestors
from cudalint.model.kernels import Model
from cudalint.model.preproc import guards
from cudalint.parse import captures, parse

SRC = b"""#ifdef USE_ROCM
__global__ void h(int* p) { p[0] = 1; }
#else
__global__ void k(int* p, int n) {
#if CUDA_VERSION < 9000
    if (n > 2) { for (int i = 0; i < n; ++i) { p[i] = n ? i : -i; } }
#else
    while (n--) { switch (n) { case 1: p[n] = 3; break; } }
#endif
}
#endif
"""


def _walk(node):
    yield node
    for c in node.children:
        yield from _walk(c)


def _up(node, top):
    out, cur = [], node.parent
    while cur is not None and cur.id != top.id:
        out.append(cur)
        cur = cur.parent
    return out


class _Ctx:
    """What preproc asks of a unit context."""

    def __init__(self, data: bytes):
        tree = parse(data)
        self.root = tree.root_node
        self.model = Model(tree)        # the unit's node index (preproc reads it)
        self._analyses = {}

    def captures(self, q):
        return captures(q, self.root)

    def analysis(self, factory):
        if factory not in self._analyses:
            self._analyses[factory] = factory(self)
        return self._analyses[factory]


def _ctx():
    return _Ctx(SRC)


def test_ancestors_match_parent_walk():
    ctx = _ctx()
    bodies = [n for n in _walk(ctx.root) if n.type == "compound_statement"]
    assert bodies
    checked = 0
    for body in bodies:
        for node in _walk(body):
            assert [a.id for a in ancestors(node, body)] == [a.id for a in _up(node, body)]
            checked += 1
    # a node outside `top`: every ancestor up to the root
    node = bodies[-1]
    assert [a.id for a in ancestors(node, bodies[0])] == [a.id for a in _up(node, bodies[0])]
    assert checked > 50


def test_conditionals_match_parent_walk():
    ctx = _ctx()
    seen = set()
    for node in _walk(ctx.root):
        fast, slow = guards(node, ctx), guards(node)
        assert fast == slow
        seen.add(tuple((g.condition, g.in_else) for g in slow))
    # nodes under both sides of both conditionals were compared
    assert (("CUDA_VERSION < 9000", True), ("USE_ROCM", True)) in seen
    assert (("CUDA_VERSION < 9000", False), ("USE_ROCM", True)) in seen
    assert (("USE_ROCM", False),) in seen


KERNEL = b"""__global__ void k(float* out, float** p, int n) {
    unsigned tid = threadIdx.x;
    float v = tid < 4 ? p[tid][0] * *p[tid + n] : (*(p[0]))[tid];
    out[(tid)] = v + foo(p[tid][n], &out[2]) + 0x1f;
}
"""


def test_lanes_parents_and_mentions_match_the_tree():
    from cudalint.analysis.memory.lanes import _Mentions, _Parents
    body = next(n for n in _walk(parse(KERNEL).root_node) if n.type == "compound_statement")
    up = _Parents(body)
    names = {b"tid", b"out"}
    mentions = _Mentions(body, names)
    checked = 0
    for node in _walk(body):
        if node.id == body.id:
            continue
        assert up(node).id == node.parent.id
        expected = not names.isdisjoint(re.findall(rb"[A-Za-z_][A-Za-z_0-9]*", node.text))
        assert mentions(node) == expected, node.text
        checked += expected
    assert checked > 10


def test_parse_blanks_long_angle_runs_only():
    run = b"a<" * 40
    src = b"void f(int n) {\n  int x = " + run + b"\n n;\n  g<h<i<j<int>>>>(n);\n}\n"
    root = parse(src).root_node
    # same offsets and rows as the source; nothing of the run is left in the tree
    assert root.end_byte == len(src) and root.end_point == (5, 0)
    start = src.index(run)
    inside = [n for n in _walk(root) if n.start_byte < start + len(run) and n.end_byte > start
              and n.child_count == 0 and n.end_byte > n.start_byte]
    assert inside == []
    # a short run (nested templates) is parsed as written
    names = [n.text for n in _walk(root) if n.type == "template_function"]
    assert names[0] == b"g<h<i<j<int>>>>"
