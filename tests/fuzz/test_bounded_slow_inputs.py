"""The causes of the slow fuzz inputs of the third round (fuzz/README.md, "Slow inputs,
third round"), each on a small input made for it: the work is bounded by construction,
so each test fails on the code before its fix (there the same input took seconds to
minutes, or built the large structure the test counts).
"""
from __future__ import annotations

import time

from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.model import instances
from cudalint.model.instances import Instances
from cudalint.sources import macros
from cudalint.sources.base import SourceFile, Unit


def _ctx(src: str) -> UnitContext:
    unit = Unit(file=SourceFile(path="t.cu", text=src, kind="cuda"), text=src)
    return UnitContext(unit, Settings())


CLONE = ("template <int B> __global__ void k(float* o) {{ o[threadIdx.x] = B; }}\n"
         "void h{i}(float* o) {{ k<128><<<1, 128>>>(o); }}\n")


def test_clones_of_a_template_kernel_read_a_bounded_number_of_mentions(monkeypatch):
    # fuzz seed 29's 082f949d3a: 493 copies of one template kernel and its launch; each
    # kernel read every launch of its name (243,049 bindings, 52 s)
    calls = []
    real = instances.binding
    monkeypatch.setattr(instances, "binding",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    kernels = _ctx("".join(CLONE.format(i=i) for i in range(300))).analysis(
        Instances).kernels()
    assert len(kernels) >= 300                  # each clone analysed, bound or as written
    assert len(calls) <= 20_000, len(calls)     # was 300 x 300 = 90,000


def test_a_few_clones_keep_their_instantiations():
    kernels = _ctx("".join(CLONE.format(i=i) for i in range(3))).analysis(
        Instances).kernels()
    assert [k.instance for k in kernels] == ["k<128>"] * 3
    assert all(len(k.instance_launches) == 3 for k in kernels)


def test_a_tree_deeper_than_the_query_cursor_counts_is_indexed_quickly():
    # fuzz seed 35's cuda 60cf24a67f and cuda_text d1021698c4, seed 27's fix_cuda
    # 41ea1ff96d: expressions 75,000-95,000 operators deep; tree-sitter keeps a match's
    # start depth in 16 bits, and past 65,535 the index query took 6-15 s (70,000: 18 s)
    src = "__global__ void k(float* a) { float x = " + "*".join(["a[1]"] * 70_000) + "; }"
    ctx = _ctx(src)
    ctx.tree                                    # noqa: B018 - the parse is not timed
    t = time.process_time()
    subscripts = ctx.model.nodes("subscript")
    assert time.process_time() - t < 3.0
    assert 60_000 < len(subscripts) <= 70_000


def test_an_object_macro_past_the_step_budget_is_not_tokenized_per_use(monkeypatch):
    # fuzz seed 35's fix_cuda 9d75faa8f5: `#define N -32` on lone-CR lines runs to the
    # end of the 256 KB file; each of 606 launch configurations naming N built a list
    # of its 100,000 tokens before the budget stopped the expansion (30 ms a use)
    body = " + ".join(["x"] * 30_000)
    defs = {"N": macros.MacroDef("N", None, body)}
    built = []
    real = macros._tokens
    monkeypatch.setattr(macros, "_tokens",
                        lambda text, *a, **k: built.append(len(text)) or real(text, *a, **k))
    assert macros.expand_expression("(N + 1) * 2", defs) is None
    assert max(built) < 1_000, max(built)       # the expression, never the body


def test_runs_of_comment_openers_are_blanked_before_the_parse():
    # fuzz seed 34's hostile_cuda 3a9194a87b: `#define /*/*/*...` (2,800 `/*` and no
    # macro name) on 40 lines, then 60 `#define`s: the parser's error recovery spent
    # time in the run's length on each later token (16-18 s)
    from cudalint import parse
    src = b"\n".join([b"#define " + b"/*" * 2800 + b"M2 (M1 << 1)"] * 10 +
                     [b"#define M9 (M8 << 1)"] * 60) + b"\n__global__ void k() {}\n"
    t = time.process_time()
    tree = parse.parse(src)
    assert time.process_time() - t < 0.5         # was 3 s
    assert tree.root_node.end_byte == len(src)   # offsets kept
    assert any(c.type == "function_definition" for c in tree.root_node.children)


def test_flag_lists_built_from_each_other_are_followed_within_a_budget(monkeypatch):
    # fuzz seed 34's build_setup c12fe5945d (262 KB): names built from names built from
    # names multiplied the flag expressions followed; over 200 s
    from cudalint.project import build_python
    # (8 levels: 240,298 expressions followed at 1087e05 for 65,536 flags; 10: 4 M)
    src = ("from torch.utils.cpp_extension import CUDAExtension\nf0 = ['-O3']\n" +
           "".join(f"f{i} = []\n" + f"f{i} += f{i - 1}\n" * 4 for i in range(1, 11)) +
           "ext = CUDAExtension('x', ['a.cu'], extra_compile_args={'nvcc': f10})\n")
    calls = []
    real = build_python._PyBuilds.flags

    def counted(self, expr, depth=0):
        calls.append(1)
        assert len(calls) < 50_000, "flag expressions followed without a bound"
        return real(self, expr, depth)
    monkeypatch.setattr(build_python._PyBuilds, "flags", counted)
    (build,) = build_python.python_builds(src, "setup.py")
    assert len(calls) <= build_python.MAX_FLAG_STEPS + 100


def test_a_flag_list_within_the_budget_is_read():
    from cudalint.project import build_python
    src = ("from torch.utils.cpp_extension import CUDAExtension\nf0 = ['--use_fast_math']\n"
           "f1 = f0 + ['-O3']\n"
           "ext = CUDAExtension('x', ['a.cu'], extra_compile_args={'nvcc': f1})\n")
    (build,) = build_python.python_builds(src, "setup.py")
    assert [f.text for f in build.flags] == ["--use_fast_math", "-O3"]


ELEMENTWISE = ("__global__ void ops_kernel(float* y, const float* x, int n) {{\n"
               "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
               "    if (i < n) y[i] = wave(x[i]) + ratio(x[i], y[i]){shift};\n}}\n")


def test_the_race_search_of_an_elementwise_kernel_is_small(monkeypatch):
    # fuzz seed 36's fix_cuda d1f8d7e713: 504 copies of an elementwise kernel, CL108's
    # race search about 4 ms each (9.8 s over the harness's three lints): both blocks'
    # stores indexed byte by byte for each direction between blocks that share no
    # byte, the conditions above each access evaluated again per access, and the
    # addresses of a buffer nothing stores to evaluated in both blocks
    from cudalint.analysis.memory import global_races, race_search
    counts = {"evaluate": 0, "condition": 0, "steps": 0}

    def counted(name, real):
        def run(*a, **k):
            counts[name] += 1
            return real(*a, **k)
        return run

    def steps(*a):
        got = range(*a)
        counts["steps"] += len(got)
        return got
    monkeypatch.setattr(global_races, "_evaluate", counted("evaluate", global_races._evaluate))
    monkeypatch.setattr(global_races, "condition_mask",
                        counted("condition", global_races.condition_mask))
    monkeypatch.setattr(race_search, "range", steps, raising=False)
    kernels = 20
    ctx = _ctx(ELEMENTWISE.format(shift="") * kernels)
    assert ctx.analysis(global_races.GlobalRaces).items == []
    # two sites of y (the store, the read) in blocks 0 and 1; x is never stored to
    assert counts["evaluate"] <= 4 * kernels, counts                # was 8 per kernel
    # `if (i < n)` once per block's engine
    assert counts["condition"] <= 2 * kernels, counts               # was 8
    # the store's 288 columns (3 samples of warps 0, 1 and 7) within the block, a
    # whole float at a time; nothing between blocks 0 and 1, whose bytes are apart
    assert counts["steps"] <= 1_600 * kernels, counts               # was 4,368


def test_the_race_search_still_finds_a_neighbour_race():
    from cudalint.analysis.memory import global_races
    items = _ctx(ELEMENTWISE.format(shift="; if (i + 1 < n) y[i + 1] = 0.5f")).analysis(
        global_races.GlobalRaces).items
    assert [(r.threads, r.blocks, r.byte) for r in items] == [((1, 0), (0, 0), 4), ((0, 1), (0, 0), 4)], \
        [(r.threads, r.blocks, r.byte) for r in items]


def test_a_compile_call_is_read_through_no_more_callers_than_are_kept(monkeypatch):
    # fuzz python 2816d639cd: pycuda's reduction (fixtures/CL101) 18 times in one file;
    # each compile call was read through 8 callers and each of those through 8 more (64
    # readings) though the first 9 readings already gave the 8 kernels kept (1.7 s a pass)
    from pathlib import Path
    from cudalint.sources.python import calls
    from cudalint.sources.python.extract import extract_python_units
    src = (Path(__file__).resolve().parents[2] / "fixtures" / "CL101" /
           "pycuda_reduction.py").read_text() * 10
    reads = []
    real = calls.Collector.kernels_of
    monkeypatch.setattr(calls.Collector, "kernels_of",
                        lambda self, *a, **k: reads.append(1) or real(self, *a, **k))
    got = extract_python_units(src, "r.py").kernels
    compile_calls = len({k.call_start for k in got})
    assert compile_calls == 20
    assert len(got) == compile_calls * calls.MAX_CALLERS       # as many kept as before
    assert len(reads) <= compile_calls * (2 + calls.MAX_CALLERS), len(reads)


def test_the_calls_of_a_unit_are_found_without_walking_down_to_each():
    # fuzz seed 33's fix_cuda 69375b93a4: 2,762 calls 28,000 levels deep; Node.parent
    # walks down from the root, so the unit's call index took 1.5 s a lint (6,000 nested
    # calls: about 1 s)
    ctx = _ctx("__global__ void k(int* o) { o[0] = " + "f(" * 6_000 + "1" + ")" * 6_000 +
               "; }\n")
    callees = ctx.model.nodes("callee")
    t = time.process_time()
    calls = ctx.calls
    assert time.process_time() - t < 0.25
    assert len(calls["f"]) == len(callees) == 6_000
    some = callees[:20] + callees[-20:]         # the parents of all would take a second
    assert [c.id for c in calls["f"][:20] + calls["f"][-20:]] == [n.parent.id for n in some]
