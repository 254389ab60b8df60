"""CL203/CL205's pointer analysis (analysis/pointer_access.py) and CL204's local-array indexing
(analysis/local_index.py) on what fuzzing found: expressions nested deeper than Python's
recursion limit, identifiers found by scanning the text instead of a query."""
from __future__ import annotations

from cudalint.analysis.memory.names import NameScanner, scan_identifiers
from cudalint.analysis.memory.pointer_access import PointerAccess
from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.engine import lint_text
from cudalint.parse import captures, parse, text
from cudalint.sources.base import SourceFile, Unit

DEEP = 2000          # well past sys.getrecursionlimit(), within MAX_USES


def _ctx(src: str) -> UnitContext:
    return UnitContext(Unit(SourceFile("t.cu", src, "cuda"), src), Settings())


def _status(src: str, param: str, kernel: str = "k") -> str:
    ctx = _ctx(src)
    (fn,) = [f for f in ctx.model.kernels if f.name == kernel]
    (acc,) = [a for a in ctx.analysis(PointerAccess).kernel_params(fn)
              if a.param.name == param]
    return acc.status


def _findings(src: str, code: str) -> list:
    return [d for d in lint_text("t.cu", src, Settings(select=(code,)), "cuda").diagnostics
            if d.code in (code, "CL000")]


def test_scan_finds_exactly_the_identifiers_a_query_finds():
    src = """
#define x_macro(v) (v + x)
__global__ void k(float* x, float* xs, S s) {
    float x_ = x[0] + xs[1] + s.x + s->x;   // x in a comment
    const char* m = "x";
    $x = x$ + x;
    float éx = x;
    auto f = [&] { return x[1]; };
    y = x1x + x
      + x;
}
"""
    data = src.encode()
    tree = parse(data)
    expected = [(n.start_byte, n.end_byte)
                for n in captures("(identifier) @id", tree.root_node)["id"]
                if text(n) == "x"]
    found = list(scan_identifiers(tree.root_node, data, "x"))
    assert [(n.start_byte, n.end_byte) for n, _, _ in found] == expected
    assert len(expected) == 7
    # the path is the chain of ancestors, and a use inside the lambda is opaque
    reasons = [why for _, _, why in found]
    assert reasons.count("captured by a lambda") == 1
    parents: dict[int, object] = {}
    for ident, path, _ in scan_identifiers(tree.root_node, data, "x", parents):
        assert path[-1].id == ident.id and path[0].id == tree.root_node.id
        for child, parent in zip(path[1:], path):
            assert parent.id == child.parent.id == parents[child.id].id


def test_name_scanner_index_finds_what_the_text_search_finds():
    src = "__global__ void k(float* x, int n) { float xx = x[0]; /* x */ auto s = \"x\";" \
          " for (int x2 = 0; x2 < n; ++x2) xx += x[x2] + s.x; x$ = x; }"
    data = src.encode()
    body = parse(data).root_node.children[0].child_by_field_name("body")
    scanner = NameScanner(body, data, {})
    scanner.INDEX_AFTER = 1
    for name in ("x", "xx", "x2", "n", "s", "x$", "absent", "x", "xx"):
        searched = [(i.start_byte, len(p), why) for i, p, why in
                    scan_identifiers(body, data, name)]
        found = [(i.start_byte, len(p), why) for i, p, why in scanner.identifiers(name)]
        assert found == searched, name
    assert scanner._index is not None and len(scanner._index[b"x"]) == 3


def test_many_aliases_are_followed():
    # a chain of local pointers: one name search per alias, then the indexed lookups
    chain = " ".join(f"const float* p{k + 1} = p{k} + 1;" for k in range(200))
    src = f"__global__ void k(float* x, float* y) {{ const float* p0 = x; {chain} " \
          "y[0] = p200[0]; }"
    assert _status(src, "x") == "read_only"
    assert _status(src.replace("y[0] = p200[0]", "((float*)p200)[0] = 1"), "x") == "written"


def test_deep_pointer_arithmetic_is_followed_without_recursion():
    # the pointer is the innermost operand of a sum deeper than the recursion limit
    chain = "x" + " + 1" * DEEP
    src = f"__global__ void k(float* x, float* y) {{ const float* q = {chain}; " \
          "y[threadIdx.x] = q[threadIdx.x]; }"
    (d,) = _findings(src, "CL205")
    assert "`x` is only read" in d.message and "1 load" in d.message
    written = f"__global__ void k(float* x, float* y) {{ float* q = {chain}; q[0] = 1; }}"
    assert _status(written, "x") == "written"
    assert not _findings(written, "CL205")


def test_many_uses_in_one_deep_expression():
    src = "__global__ void k(float* y, const float* x) { int i = threadIdx.x; y[i] = " + \
        " + ".join(["x[i]"] * DEEP) + "; }"
    (d,) = _findings(src, "CL205")
    assert f"{DEEP} loads" in d.message
    # one store among them makes it written
    src2 = src.replace("; }", " + (x[0] = 1); }")
    assert _status(src2, "x") == "written"


def test_integer_address_in_a_deep_expression():
    kept = "__global__ void k(float* y, const float* x) { long a = " + \
        " + ".join(["(long)x"] * DEEP) + "; y[0] = x[0]; }"
    assert _status(kept, "x") == "unknown"
    tested = "__global__ void k(float* y, const float* x) { if (" + \
        " + ".join(["(long)x"] * DEEP) + ") y[0] = x[0]; }"
    assert _status(tested, "x") == "read_only"


def test_address_taken_scans_for_the_kernel_name():
    base = "__global__ void k(float* x, float* y) { y[0] = x[0]; }\n"
    for use, taken in (("void h() { k<<<1, 1>>>(0, 0); }", False),
                       ("void h() { cudaFuncSetAttribute(k, a, 0); }", False),
                       ("void h() { void* p = (void*)k; }", False),
                       ("void h() { void (*p)(float*, float*) = k; }", True),
                       ("void h() { auto p = &(k); }", True),
                       ("void h() { int kk = 1; /* k */ }", False)):
        ctx = _ctx(base + use)
        (fn,) = ctx.model.kernels
        assert ctx.analysis(PointerAccess).address_taken(fn) is taken, use


# ---- CL204: local_index.py --------------------------------------------------------------
def _cl204(body: str) -> list:
    src = "__global__ void k(float* y, const float* x, int n) {\n" \
          "    int i = threadIdx.x;\n    float a[32];\n" \
          "    for (int j = 0; j < 32; ++j) a[j] = x[j];\n" + body + "\n}\n"
    return _findings(src, "CL204")


def test_cl204_counts_every_access_of_a_deep_expression():
    (d,) = _cl204("    y[i] = " + " + ".join(["a[n]"] * DEEP) + ";")
    assert f"{DEEP} times after unrolling" in d.message
    assert d.metrics["dynamic_accesses"] == DEEP


def test_cl204_multiplies_the_trip_counts_of_nested_constant_loops():
    loops = "    for (int p = 0; p < {0}; ++p)\n        for (int q = 0; q < {1}; ++q)\n" \
            "            y[p * 4 + q] += a[n] + a[n + 1];"
    (d,) = _cl204(loops.format(2, 4) + "\n" + loops.format(2, 2))
    assert "24 times after unrolling" in d.message      # 2 * (2*4) + 2 * (2*2)
    assert not _cl204(loops.format(1, 2))               # 4 accesses: selects
    (d,) = _cl204("    while (n > 3) {\n" + loops.format(2, 2) + "\n    }")
    assert "inside a loop that is not unrolled" in d.message


def test_cl204_a_counter_changed_in_its_loop_has_no_constant_trip_count():
    loop = "    float t = 0;\n    for (int p = 0; p < 2; ++p)\n" \
           "        for (int q = 0; q < 2; ++q) {{ y[q] += a[n]; {0} }}"
    assert not _cl204(loop.format("t += 1;"))           # 4 accesses: selects
    for change in ("q += 1;", "++q;", "q = n;", "if (n) { p--; }"):
        (d,) = _cl204(loop.format(change))
        assert "inside a loop that is not unrolled" in d.message, change
    assert not _cl204(loop.format("t = (q) + p;"))


def test_more_uses_than_followed_is_undecided_and_silent():
    from cudalint.analysis.memory.pointer_access import MAX_USES
    many = MAX_USES + 10
    src = "__global__ void k(float* y, const float* x) { int i = threadIdx.x; y[i] = " + \
        " + ".join(["x[i]"] * many) + "; }"
    assert _status(src, "x") == "unknown"
    assert not _findings(src, "CL205")
    # an alias used that often: the root is undecided too
    alias = "__global__ void k(float* y, const float* x) { const float* q = x; y[0] = " + \
        " + ".join(["q[0]"] * many) + "; }"
    assert _status(alias, "x") == "unknown"
    assert not _cl204("    for (int j = 0; j < n; ++j) y[j] = " +
                      " + ".join(["a[n]"] * many) + ";")
    assert _cl204("    for (int j = 0; j < n; ++j) y[j] = " +
                  " + ".join(["a[n]"] * 100) + ";")


def test_most_vexing_parse_uses_are_loads_or_undecided():
    """`Point c(p[0], p[1]);` parses as a function declarator whose parameters have the
    type `p`: those are loads of p (counted), and a shape that may hide a write there
    leaves p undecided, never "read only"."""
    head = ("struct Point { float x, y; __device__ Point(float a, float b) : x(a), y(b) {} };\n"
            "__global__ void k(float* p, float* out) { Point c(")
    tail = "); out[0] = c.x + p[threadIdx.x]; }\n"
    (d,) = _findings(head + "p[0], p[1]" + tail, "CL205")
    assert d.metrics["loads"] == 3
    assert _status(head + "p[0] = 2.0f, p[1]" + tail, "p") != "read_only"


def test_cl205_silent_when_a_launch_passes_the_written_buffer_too():
    """merge<<<>>>(dst, dst): the read pointer is the buffer the kernel writes, so neither
    __restrict__ nor __ldg() is valid; launched with distinct buffers it is flagged."""
    kernel = ("__global__ void merge(float* dst, float* src, int n) {\n"
              "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "    if (i < n) dst[i] = src[i ^ 1];\n}\n")
    in_place = kernel + "void run(float* d, int n) { merge<<<n / 256, 256>>>(d, d, n); }\n"
    apart = kernel + "void run(float* d, float* s, int n) { merge<<<n / 256, 256>>>(d, s, n); }\n"
    assert _findings(in_place, "CL205") == []
    (d,) = _findings(apart, "CL205")
    assert "`src`" in d.message
    both = in_place + "void run2(float* d, float* s, int n) { merge<<<1, 256>>>(d, s, n); }\n"
    assert _findings(both, "CL205") == []          # one in-place launch is enough


def test_cl204_reported_at_the_first_dynamic_access_in_source_order():
    src = ("__global__ void k(float* out, const int* idx, int n) {\n"
           "    float t[18] = {};\n"
           "    for (int i = 0; i < n; i++) {\n"
           "        int j = idx[i];\n"
           "        t[2 * j] = 1.0f;\n"            # line 5: the first dynamic access
           "        t[2 * j + 1] = 2.0f;\n"
           "    }\n"
           "    out[threadIdx.x] = t[threadIdx.x % 18];\n}\n")
    (d,) = _findings(src, "CL204")
    assert (d.row, d.column) == (5, 9)
