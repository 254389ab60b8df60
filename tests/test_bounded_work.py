"""Work bounded by construction (issue 25, fuzz seed 37): a parse that tree-sitter's error
recovery would drag on for seconds is stopped, a question about a machine-made
expression walks a bounded part of it, copies of one kernel string with an unknown
template value are analysed once, and one ``--fix`` analyses each text once."""
from __future__ import annotations

import time

from cudalint import engine
from cudalint import parse as parse_mod
from cudalint.config import Settings
from cudalint.engine import lint_text, reuse_lints
from cudalint.sources.base import SourceFile

ALL = Settings(select=("ALL",))

# seed 37's shape: `if(x)` runs inside an `if` condition, about 100 microseconds of error
# recovery each
BROKEN = ("__global__ void k(float* s) {\n"
          + "  if ((a - 0x7f" + "if(x)" * 3000 + "f)) { __syncthreads(); }\n" * 4
          + "}\n")


def test_a_parse_past_its_budget_is_stopped_and_said(monkeypatch):
    monkeypatch.setattr(parse_mod, "PARSE_MIN_S", 0.02)
    monkeypatch.setattr(parse_mod, "PARSE_S_PER_MB", 0.0)
    monkeypatch.setattr(parse_mod, "UNBOUNDED_BYTES", 0)     # (the text is 15 KB)
    monkeypatch.setattr(parse_mod, "_RECENT", [])
    t = time.process_time()
    result = lint_text("broken.cu", BROKEN, ALL, "cuda")
    assert time.process_time() - t < 5
    notices = [d for d in result.diagnostics if d.code == "CL000"]
    assert [(d.row, d.column) for d in notices] == [(1, 1)]
    assert "the parser needed more than 0.0 s of CPU" in notices[0].message
    assert "not analysed" in notices[0].message
    # nothing else: the text is seen as blank
    assert [d.code for d in result.diagnostics] == ["CL000"]


def test_a_parse_within_its_budget_is_not_touched(monkeypatch):
    monkeypatch.setattr(parse_mod, "_RECENT", [])
    text = "__global__ void k(float* o) { o[threadIdx.x * 32] = 1.0f; }\n" \
           "void h(float* o) { k<<<1, 64>>>(o); }\n"
    result = lint_text("fine.cu", text, ALL, "cuda")
    assert not parse_mod.gave_up(text.encode())
    assert "CL201" in {d.code for d in result.diagnostics}
    assert not any("the parser needed" in d.message for d in result.diagnostics)


def test_a_question_about_a_huge_expression_walks_a_bounded_part(monkeypatch):
    # `blockIdx.x + x + x + ...` of 50,000 terms, asked about again and again (fuzz seed
    # 37: 36 questions a lint, 0.6 s each; past the bound it is "not known to vary")
    from cudalint.analysis.sync import divergence
    from cudalint.context import UnitContext
    from cudalint.sources.base import Unit
    text = ("__global__ void k(const float* x, float* y) {\n"
            f"  int i = blockIdx.x{'+x' * 50000};\n  y[i] = 0;\n  y[threadIdx.x] = 1;\n}}\n")
    file = SourceFile(path="sum.cu", text=text, kind="cuda")
    ctx = UnitContext(Unit(file=file, text=text), ALL)
    fn = ctx.model.kernels[0]
    dep = ctx.analysis(divergence.ThreadDependence).of(fn)
    value = ctx.captures("(init_declarator value: (_) @v)", fn.body)["v"][0]
    steps = []
    real = divergence.FunctionDependence._step
    monkeypatch.setattr(divergence.FunctionDependence, "_step",
                        lambda self, *a: steps.append(1) or real(self, *a))
    for _ in range(3):
        assert dep.reason(value) is None
    assert len(steps) <= divergence.MAX_WALK        # once, then known too big
    # a small expression is still walked whole
    small = [n for n in ctx.captures("(subscript_expression) @s", fn.body)["s"]
             if b"threadIdx" in n.text][0]
    assert dep.reason(small) == "a load at a thread-dependent index (threadIdx.x)"


def _units(text: str):
    file = SourceFile(path="m.py", text=text, kind="python")
    return engine._python_units(file, ALL, [], [])


def test_copies_of_a_kernel_with_an_unknown_value_share_one_analysis():
    # the unknown `str(B)` becomes a placeholder numbered per file: 0, 1, 2 ...
    text = ("from pycuda.compiler import SourceModule\nimport os\n"
            "B = os.environ['B']\n"
            "CODE = '#define BLOCK ' + str(B) + '\\n__global__ void k(float* o) "
            "{ o[threadIdx.x] = BLOCK; }\\n'\n"
            + "mod = SourceModule(CODE)\n" * 3)
    units = _units(text)
    assert len(units) == 3
    assert len({u.text for u in units}) == 3          # three placeholder names
    assert len({engine._analysis_key(u) for u in units}) == 1
    # two unknowns in one text stay two: renumbering keeps them apart
    two = ("from pycuda.compiler import SourceModule\nimport os\n"
           "A = os.environ['A']\nB = os.environ['B']\n"
           "mod = SourceModule('#define X ' + str(A) + '\\n#define Y ' + str(B) + "
           "'\\n__global__ void k(float* o) { o[threadIdx.x] = X + Y; }\\n')\n"
           "mod = SourceModule('#define X ' + str(B) + '\\n#define Y ' + str(A) + "
           "'\\n__global__ void k(float* o) { o[threadIdx.x] = X + Y; }\\n')\n")
    a, b = _units(two)
    assert engine._analysis_key(a) != engine._analysis_key(b)


def test_reuse_lints_analyses_each_text_once_and_hands_out_copies(monkeypatch):
    calls = []
    real = engine._lint_text

    def counting(*args):
        calls.append(args[1])
        return real(*args)
    monkeypatch.setattr(engine, "_lint_text", counting)
    text = "__global__ void k(float* o) { o[threadIdx.x * 32] = 1.0f; }\n" \
           "void h(float* o) { k<<<1, 64>>>(o); }\n"
    with reuse_lints():
        first = lint_text("a.cu", text, ALL, "cuda")
        first.diagnostics[0].message = "changed by a caller"
        second = lint_text("a.cu", text, ALL, "cuda")
        lint_text("a.cu", text + "\n", ALL, "cuda")
    assert calls == [text, text + "\n"]
    assert second.diagnostics[0].message != "changed by a caller"
    # outside the block every lint analyses
    lint_text("a.cu", text, ALL, "cuda")
    assert len(calls) == 3


def test_block_runs_of_a_file_stop_past_their_budget(monkeypatch):
    # the budget counts steps x threads and the accesses logged and paired: a run whose
    # access log never meets a barrier costs 7x more CPU a step (seed 37)
    from cudalint.analysis.sync import races
    kernel = ("__global__ void k%d(float* out, const float* in) {\n"
              "  __shared__ float s[64][64];\n"
              "  for (int i = 0; i < 64; ++i) { s[i][threadIdx.x] = in[i];\n"
              "    if (threadIdx.x > i) s[threadIdx.x][i] /= s[i][i]; }\n"
              "  out[threadIdx.x] = s[0][threadIdx.x];\n}\n"
              "void h%d(float* o, const float* i) { k%d<<<1, 64>>>(o, i); }\n")
    text = "".join(kernel % (n, n, n) for n in range(3))
    ran = []

    class Counted(races.BlockRun):
        def run(self):
            ran.append(self.fn.name)
            return super().run()
    monkeypatch.setattr(races, "BlockRun", Counted)
    monkeypatch.setattr(races, "_SPENT", {})
    lint_text("t.cu", text, Settings(select=("CL101", "CL102")), "cuda")
    assert set(ran) == {"k0", "k1", "k2"}
    ran.clear()
    monkeypatch.setattr(races, "_SPENT", {})
    monkeypatch.setattr(races, "FILE_WORK", 0)
    res = lint_text("t2.cu", text, Settings(select=("CL101", "CL102", "CL000")), "cuda")
    assert set(ran) == {"k0"}          # the first kernel's runs spent the budget
    (notice,) = [d for d in res.diagnostics if d.code == "CL000"]
    assert "simulation (CL101-CL105) stops at kernel `k0`" in notice.message
    assert notice.row == 1              # k0's definition: its second sample is not run


def test_block_run_work_counts_the_access_log():
    # seed 37's triangular solve: 64 threads, a log that never meets a barrier; the work
    # counted is what makes the budget the same on any machine (no clock)
    from cudalint.analysis.sync import races
    kernel = ("__global__ void k(float* out, const float* in) {\n"
              "  __shared__ float s[64][64];\n"
              "  for (int i = 0; i < 64; ++i) { s[i][threadIdx.x] = in[i];\n"
              "    if (threadIdx.x > i) s[threadIdx.x][i] /= s[i][i]; }\n"
              "  out[threadIdx.x] = s[0][threadIdx.x];\n}\n"
              "void h(float* o, const float* i) { k<<<1, 64>>>(o, i); }\n")
    works = []

    class Counted(races.BlockRun):
        def run(self):
            res = super().run()
            works.append((self.steps * self.n, self.work))
            return res
    import pytest
    mp = pytest.MonkeyPatch()
    mp.setattr(races, "BlockRun", Counted)
    mp.setattr(races, "_SPENT", {})
    try:
        first = lint_text("w.cu", kernel, Settings(select=("CL101",)), "cuda")
        again = lint_text("w2.cu", kernel, Settings(select=("CL101",)), "cuda")
    finally:
        mp.undo()
    half = len(works) // 2
    assert works[:half] == works[half:]             # the same count every time
    steps = sum(s for s, _ in works[:half])
    work = sum(w for _, w in works[:half])
    # 64 iterations x 3 accesses x up to 64 threads logged, and their pairing
    assert work > steps > 0
    assert [d.code for d in first.diagnostics] == [d.code for d in again.diagnostics]


def test_a_deep_expression_in_a_device_function_is_not_walked_by_recursion():
    # fuzz seed 40: a 1,000-term sum in a device function the kernel calls; CL108's lane
    # values of the callee recursed as deep as the sum, down to the interpreter's limit,
    # where a weakref callback of the garbage collector found no stack ("Exception
    # ignored ... RecursionError")
    import sys
    from pathlib import Path
    path = Path(__file__).parent / "fuzz" / "regressions" / "cuda" / \
        "seed40_f1a8251661_deep_sum_in_callee.cu"
    text = path.read_bytes().decode("utf-8", "surrogateescape")
    deepest = [0]

    def depth(frame, event, _arg):
        if event == "call":
            n = 0
            while frame is not None and n < 2000:
                n, frame = n + 1, frame.f_back
            deepest[0] = max(deepest[0], n)
    sys.setprofile(depth)
    try:
        lint_text("deep.cu", text, ALL, "cuda")
    finally:
        sys.setprofile(None)
    assert deepest[0] < 400, deepest[0]


def test_units_of_a_file_past_the_budget_are_not_analysed(monkeypatch):
    # fuzz seed 42: 512 units in one Python file (64 copies of pycuda's reduction, each
    # read through 8 callers), 9 s a lint; the corpora's most is 42
    from cudalint import engine
    kernel = ("k{n} = cp.RawKernel(r'''__global__ void k{n}(float* o) "
              "{{ o[threadIdx.x * 32 + {n}] = 1.0f; }}''', 'k{n}')\n")
    text = "import cupy as cp\n" + "".join(kernel.format(n=n) for n in range(3))
    s = Settings(select=("CL201", "CL000"))
    every = lint_text("k.py", text, s, "python").diagnostics
    assert sorted(d.row for d in every if d.code == "CL201") == [2, 3, 4]
    monkeypatch.setattr(engine, "MAX_UNITS_PER_FILE", 2)
    some = lint_text("k2.py", text, s, "python").diagnostics
    assert sorted(d.row for d in some if d.code == "CL201") == [2, 3]
    (notice,) = [d for d in some if d.code == "CL000"]
    assert notice.row == 4 and "1 more CUDA unit of this file" in notice.message
