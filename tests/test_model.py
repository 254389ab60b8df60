"""The parse model's integer constants, as real headers write them."""
from __future__ import annotations

from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.sources.base import SourceFile, Unit


def constants(text: str) -> dict[str, int]:
    unit = Unit(SourceFile("c.cu", text, "cuda"), text)
    return UnitContext(unit, Settings()).model.constants


def test_defines_with_comments_and_continuations():
    env = constants("#define N 4096        // matrix side\n"
                    "#define TILE (32)  /* a warp */\n"
                    "#define AREA (TILE * \\\n      TILE)\n"
                    "#define NAME \"x\"  // not an integer\n"
                    "constexpr int K = N / TILE;  // 128\n"
                    "enum { A = 3, B, C = K + 1 };\n")
    assert env["N"] == 4096 and env["TILE"] == 32 and env["AREA"] == 1024
    assert env["K"] == 128 and (env["A"], env["B"], env["C"]) == (3, 4, 129)
    assert "NAME" not in env


def model(text: str):
    unit = Unit(SourceFile("c.cu", text, "cuda"), text)
    return UnitContext(unit, Settings()).model


NESTED = """\
namespace ns { const int NS_N = 8; namespace in { constexpr int DEEP = 2; } }
extern "C" { const int LINKED = 3; }
const volatile int CV = 5;
volatile int NOT_CONST = 7;
template <int B = 64, typename T>
__global__ void __launch_bounds__(B * 2) k(T* out, int NS_N) {
    const int local = NS_N + 1;     // NS_N is the parameter here: unknown
    const int two = DEEP;
    __shared__ float tile[B][two + 1];
    struct Helper { __device__ int get() { int h[4]; return h[0]; } };
    out[threadIdx.x] = tile[0][threadIdx.x];
}
void host(float* p) {
    const int threads = 128;
    dim3 grid(4, 2);
    k<<<grid, threads>>>(p, 3);
    k<<<(threads + 1) / 2, dim3(16, 8)>>>(p, 3);
}
"""


def test_constants_at_file_and_namespace_scope_only():
    env = model(NESTED).constants
    assert (env["NS_N"], env["DEEP"], env["CV"]) == (8, 2, 5)
    assert "LINKED" not in env          # extern "C" blocks are not namespaces
    assert "NOT_CONST" not in env


def test_function_facts_read_on_demand():
    m = model(NESTED)
    k, host = m.function_named("k")[0], m.function_named("host")[0]
    assert [f.name for f in m.functions] == ["k", "get", "host"]   # the local struct's method
    assert k.is_kernel and k.is_template and k.template_params == {"B": 64}
    assert k.launch_bounds == (128, None) and k.launch_bounds_node is not None
    assert [(p.name, p.pointer_depth) for p in k.params] == [("out", 1), ("NS_N", 0)]
    env = k.constants
    assert env["B"] == 64 and env["two"] == 2 and env["DEEP"] == 2
    assert "NS_N" not in env and "local" not in env     # shadowed by the parameter
    assert host.constants["threads"] == 128 and "two" not in host.constants


def test_arrays_and_their_functions():
    m = model(NESTED)
    arrays = {a.name: a for a in m.arrays}
    assert set(arrays) == {"tile", "h"}
    assert arrays["tile"].dims == [64, 3] and arrays["tile"].shared
    assert arrays["tile"].function.name == "k"
    assert arrays["h"].function.name == "get" and arrays["h"].dims == [4]
    assert [a.name for a in m.local_arrays] == ["h"]


def test_launch_dims_and_hosts():
    m = model(NESTED)
    first, second = m.launches
    assert first.kernel == "k" and first.function.name == "host"
    assert first.block == (128, 1, 1) and first.grid == (4, 2, 1)
    assert second.block == (16, 8, 1) and second.grid == (64, 1, 1)


def test_enclosing_function_is_the_innermost_strict_ancestor():
    m = model(NESTED)
    k, get, host = m.functions
    decl = next(d for d in m.nodes("declaration") if b"h[4]" in d.text)
    assert m.enclosing_function(decl) is get
    assert m.enclosing_function(get.node) is k          # a function is not its own
    assert m.enclosing_function(k.node) is None
    assert m.enclosing_function(k.body) is k            # ends where the function ends
    assert m.enclosing_function(m.nodes("launch")[0]) is host
    assert m.enclosing_function(m.root) is None
