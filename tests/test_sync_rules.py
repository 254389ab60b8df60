"""CL101-CL107 against compute-sanitizer records (fixtures/CL10x/truth.json, written by
tools/gputruth/sync.py on an H100), plus unit tests of the analyses behind them."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cudalint.analysis.sync.cfg import classify_sync, group_handles, syncs_in
from cudalint.analysis.sync.divergence import ThreadDependence
from cudalint.analysis.sync.races import RaceAnalysis
from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.engine import lint_bytes
from cudalint.sources.base import SourceFile, Unit
from fixture_support import FIXTURES, lint_fixture

SYNC_CODES = {"CL101", "CL102", "CL103", "CL105", "CL106", "CL107"}


def _records():
    out = []
    for code in ("CL101", "CL102", "CL103", "CL105", "CL106", "CL107"):
        data = json.loads((FIXTURES / code / "truth.json").read_text())
        out.extend(data["records"])
    return out


RECORDS = _records()
_FOUND: dict[str, list] = {}


def _kernel_codes(rec) -> set[str]:
    path = FIXTURES.parent / rec["file"]
    if rec["file"] not in _FOUND:
        _FOUND[rec["file"]] = lint_fixture(path, SYNC_CODES).diagnostics
    ctx = _ctx(path.read_text())
    (fn,) = [k for k in ctx.model.kernels if k.name == rec["kernel"]]
    first, last = fn.node.start_point[0] + 1, fn.node.end_point[0] + 1
    return {d.code for d in _FOUND[rec["file"]] if first <= d.row <= last}


def _ctx(src: str, settings: Settings | None = None) -> UnitContext:
    return UnitContext(Unit(SourceFile("t.cu", src, "cuda"), src), settings or Settings())


def test_enough_measured_kernels():
    assert len(RECORDS) >= 25
    assert sum(r["racecheck_positive"] for r in RECORDS) >= 8
    assert any(r["synccheck_positive"] for r in RECORDS)


@pytest.mark.parametrize("rec", RECORDS, ids=[r["kernel"] for r in RECORDS])
def test_rules_agree_with_sanitizer(rec):
    codes = _kernel_codes(rec)
    # racecheck "Error" hazards pair threads of different warps: only __syncthreads()
    # fixes them
    # (unless the barriers themselves are mismatched: the ordering they were meant to
    # give is gone, CL103 says so)
    mismatched = rec["synccheck_positive"] or rec.get("plain_timed_out")
    # (or one store of different values by two threads: CL107, no barrier fixes it)
    if rec["racecheck_errors"] and not (mismatched and "CL103" in codes):
        assert codes & {"CL102", "CL107"}, (rec["kernel"], codes)
    # "(Warp Level Programming)" warnings alone: lanes of one warp
    elif rec["racecheck_warnings"]:
        assert "CL101" in codes, (rec["kernel"], codes)
    if "CL107" in codes:
        assert rec["racecheck_errors"], rec["kernel"]
    if rec["synccheck_positive"] or rec.get("plain_timed_out"):
        assert codes & {"CL103", "CL105"}, (rec["kernel"], codes)
    # CL103 promises what the GPU shows: synccheck's divergent barrier or a hang
    if "CL103" in codes:
        assert rec["synccheck_positive"] or rec.get("plain_timed_out"), rec["kernel"]
    # CL106 (strict) speaks where the GPU runs the kernel clean
    if "CL106" in codes:
        assert not rec["synccheck_positive"] and not rec.get("plain_timed_out") and \
            rec["plain_rc"] == 0, rec["kernel"]
    if not rec["racecheck_positive"] and not rec["synccheck_positive"] and \
            not rec.get("plain_timed_out"):
        # clean on the GPU: flagged only where the programming model says so, and then
        # the record explains why the sanitizer stays silent
        assert codes == set(rec["model"]), (rec["kernel"], codes)
        if codes:
            assert rec.get("note"), f"{rec['kernel']}: model and sanitizer differ, no note"
    assert codes == set(rec["model"]), (rec["kernel"], codes, rec["model"])


def test_clean_fixtures_are_not_flagged():
    clean = [r for r in RECORDS if not r["racecheck_positive"] and not
             r["synccheck_positive"] and not r.get("plain_timed_out") and not r["model"]]
    assert len(clean) >= 10
    for rec in clean:
        assert not _kernel_codes(rec), rec["kernel"]


# ---- analyses ---------------------------------------------------------------------------

def _races(src: str, settings: Settings | None = None):
    return _ctx(src, settings).analysis(RaceAnalysis)


def test_unknown_call_counts_as_barrier():
    src = ("__device__ void block_sync_somewhere();\n"
           "__global__ void k(float* o) { __shared__ float s[64];\n"
           "s[threadIdx.x] = 1.f; block_sync_somewhere(); o[threadIdx.x] = s[63 - threadIdx.x]; }\n"
           "void h(float* o) { k<<<1, 64>>>(o); }\n")
    assert not _races(src).races
    direct = src.replace("block_sync_somewhere();", "")
    assert [r.rule for r in _races(direct).races] == ["CL102"]


def test_data_dependent_branch_is_silent():
    src = ("__global__ void k(float* o, const float* in) { __shared__ float s[64];\n"
           "if (in[threadIdx.x] > 0.f) s[threadIdx.x] = 1.f;\n"
           "o[threadIdx.x] = s[63 - threadIdx.x]; }\n"
           "void h(float* o, const float* in) { k<<<1, 64>>>(o, in); }\n")
    assert not _races(src).races


def test_unknown_2d_block_is_silent_and_1d_is_guessed():
    src = ("__global__ void k(float* o) { __shared__ float s[16][16];\n"
           "s[threadIdx.y][threadIdx.x] = 1.f; o[0] = s[threadIdx.x][threadIdx.y]; }\n")
    assert not _races(src).races
    src1 = ("__global__ void k(float* o) { __shared__ float s[1024];\n"
            "s[threadIdx.x] = 1.f; o[threadIdx.x] = s[threadIdx.x + 1]; }\n")
    (race,) = _races(src1).races
    assert race.block_source == "assumed" and race.rule == "CL102"


def test_inlined_device_function_barrier():
    src = ("__device__ void sync_all() { __syncthreads(); }\n"
           "__global__ void k(float* o) { __shared__ float s[64];\n"
           "s[threadIdx.x] = 1.f; sync_all(); o[threadIdx.x] = s[63 - threadIdx.x]; }\n"
           "void h(float* o) { k<<<1, 64>>>(o); }\n")
    assert not _races(src).races


def test_cl101_fix_inserts_syncwarp():
    src = ("__global__ void k(float* o) { __shared__ float s[32];\n"
           "    s[threadIdx.x] = 1.f;\n"
           "    o[threadIdx.x] = s[31 - threadIdx.x];\n}\n"
           "void h(float* o) { k<<<1, 32>>>(o); }\n")
    res = lint_bytes("t.cu", src.encode(), replace(Settings(), select=("CL101",)), "cuda")
    (d,) = res.diagnostics
    assert d.code == "CL101" and d.fix is not None and not d.fix.is_safe
    (edit,) = d.fix.edits
    assert edit.content.startswith("__syncwarp();") and "`s[threadIdx.x]` (line 2)" in d.message


_VOLATILE_STEPS = (
    "__global__ void k(float* out, const float* in) {\n"
    "    __shared__ float s[128];\n"
    "    __shared__ float t[128];\n"
    "    unsigned tid = threadIdx.x;\n"
    "    s[tid] = in[tid]; t[tid] = in[tid];\n"
    "    __syncthreads();\n"
    "    if (tid < 32) {\n"
    "        volatile float* v = s;\n"
    "        v[tid] += v[tid + 32];\n"
    "        v[tid] += v[tid + 16];\n"
    "        v[tid] += v[tid + 8];\n"
    "        v[tid] += v[tid + 4];\n"
    "        v[tid] += v[tid + 2];\n"
    "        v[tid] += v[tid + 1];\n"
    "        t[tid] += t[tid + 16];\n"
    "    }\n"
    "    __syncthreads();\n"
    "    if (tid < 32) {\n"
    "        s[tid] += s[tid + 16];\n"
    "    }\n"
    "    if (tid == 0) out[0] = s[0] + t[0];\n"
    "}\n"
    "void h(float* o, const float* i) { k<<<1, 128>>>(o, i); }\n")


def _cl101(src: str):
    res = lint_bytes("t.cu", src.encode(), replace(Settings(), select=("CL101",)), "cuda")
    return [d for d in res.diagnostics if d.code == "CL101"]


def test_cl101_one_finding_per_exchange():
    """Five racing steps on `s` are one finding at the first of them; the steps on `t`
    (another array) and the step after the barrier (another region) are their own."""
    found = _cl101(_VOLATILE_STEPS)
    assert [(d.row, d.metrics["array"], d.metrics["steps"]) for d in found] == [
        (10, "s", 5), (15, "t", 1), (19, "s", 1)]
    first = found[0]
    assert "5 steps (lines 10-14) exchange `s`" in first.message
    assert first.metrics["lines"] == [10, 11, 12, 13, 14]
    assert first.metrics["hazard"] == "read-after-write"
    assert (first.metrics["write_line"], first.metrics["read_line"]) == (9, 10)
    # every racing pair of the five steps (write->read and read->overwrite) is counted
    assert first.metrics["pairs"] >= 10


def test_cl101_fix_removes_every_race_of_the_exchange():
    from cudalint.fixes import fix_text
    fixed, count = fix_text("t.cu", _VOLATILE_STEPS, replace(Settings(), select=("CL101",)),
                            "cuda", unsafe=True)
    assert count == 3
    assert not _cl101(fixed)
    assert "auto s_step1 = v[tid] + v[tid + 16];\n        __syncwarp();\n" \
           "        v[tid] = s_step1;\n        __syncwarp();\n        auto s_step2" in fixed
    # the first step reads what the unflagged `+= v[tid + 32]` wrote; no barrier where
    # nothing races (after the last step, before the other array's step)
    assert "v[tid] += v[tid + 32];\n        __syncwarp();\n        auto s_step1" in fixed
    assert "v[tid] = s_step5;\n        auto t_step1 = t[tid]" in fixed
    # guarded steps keep their guard; the barriers are outside it
    scan = ("__global__ void k(float* o, const float* in) { __shared__ float s[32];\n"
            "    unsigned lane = threadIdx.x;\n    s[lane] = in[lane];\n"
            "    if (lane >= 1) s[lane] += s[lane - 1];\n"
            "    if (lane >= 2) s[lane] += s[lane - 2];\n    o[lane] = s[lane];\n}\n"
            "void h(float* o, const float* i) { k<<<1, 32>>>(o, i); }\n")
    (d,) = _cl101(scan)
    assert d.metrics["steps"] == 2
    fixed, _ = fix_text("t.cu", scan, replace(Settings(), select=("CL101",)), "cuda", True)
    assert not _cl101(fixed)
    assert "    __syncwarp();\n    if (lane >= 1) s[lane] = s_step1;\n" in fixed
    # a step of another form (a plain store from a swapped element under an if): no fix
    odd = scan.replace("s[lane] += s[lane - 2]", "s[lane] = s[lane - 2]")
    assert all(d.fix is None for d in _cl101(odd))


# ---- kernels deferred without a run: the barrier-interval check must be sound -----------

_RACY = {
    "alias": "float* p = s; p[tid] = 1.f; o[tid] = p[63 - tid];",
    "alias_arith": "float* a = s; float* b = s + 32; a[tid] = 1.f; o[tid] = b[31 - tid % 32];",
    "device_fn_store": "put(s, tid, 1.f); o[tid] = s[63 - tid];",
    "loop_back_edge": "for (int k = 0; k < 4; ++k) { o[k] = s[(tid + 1) % 64]; s[tid] = k; }",
    "continue_skips_barrier": (
        "for (int k = 0; k < 4; ++k) { o[k] = s[63 - tid]; __syncthreads(); s[tid] = k;"
        " if (k == 1) continue; __syncthreads(); }"),
    "scalar_pointer": "int* f = &flag; if (tid == 0) *f = 1; o[tid] = flag;",
    "row_pointer": "float* row = t[tid / 32]; row[tid % 32] = 1.f; o[tid] = t[1 - tid / 32][tid % 32];",
    "callee_shared": "o[tid] = bsum(1.f);",
    "struct_field": "P q; q.a = s; q.a[tid] = 1.f; o[tid] = s[63 - tid];",
    "pointer_array": "float* ps[1] = {s}; ps[0][tid] = 1.f; o[tid] = s[63 - tid];",
    "ternary_pointer": "float* p = tid < 32 ? s : s + 32; p[tid % 32] = 1.f; o[tid] = s[63 - tid];",
    "barrier_in_branch": "s[tid] = 1.f; if (o[0] > 0.f) __syncthreads(); o[tid] = s[63 - tid];",
    "cast_pointer": "reinterpret_cast<int*>(s)[tid] = 1; o[tid] = s[63 - tid];",
}

_RUN_SILENT = {"barrier_in_branch", "pointer_array", "struct_field", "ternary_pointer",
               "scalar_pointer"}

_QUIET = {
    "tiles": ("for (int k = 0; k < 4; ++k) { s[tid] = o[k * 64 + tid]; __syncthreads();"
              " float acc = 0.f; for (int j = 0; j < 64; ++j) acc += s[j]; __syncthreads();"
              " o[tid] = acc; }"),
    "alias_tiles": ("float* a = s; for (int k = 0; k < 4; ++k) { a[tid] = o[k];"
                    " __syncthreads(); o[tid] = a[63 - tid]; __syncthreads(); }"),
    "device_fn_tiles": "put(s, tid, 1.f); __syncthreads(); o[tid] = s[63 - tid];",
}


def _kernel_src(body: str) -> str:
    return ("struct P { float* a; };\n"
            "__device__ void put(float* a, int i, float v) { a[i] = v; }\n"
            "__device__ float bsum(float v) { __shared__ float w[64];\n"
            "  w[threadIdx.x] = v; return w[63 - threadIdx.x]; }\n"
            "__global__ void k(float* o) { __shared__ float s[64]; __shared__ int flag;\n"
            "  __shared__ float t[2][32];\n"
            "  unsigned tid = threadIdx.x;\n  " + body + "\n}\n"
            "void h(float* o) { k<<<1, 64>>>(o); }\n")


@pytest.mark.parametrize("name", sorted(_RACY))
def test_interval_check_runs_every_racy_kernel(name):
    """A kernel the run finds a race in is never deferred (the check proves nothing
    about it): the race is there before CL103 asks anything."""
    from cudalint.analysis.sync.interval import quiet_kernel as _quiet_kernel
    ctx = _ctx(_kernel_src(_RACY[name]))
    facts = ctx.analysis(RaceAnalysis)
    (fn,) = [f for f in ctx.model.kernels if f.name == "k"]
    functions = {f.name: f for f in ctx.model.functions if f.is_device and not f.is_kernel}
    assert not _quiet_kernel(ctx, fn, functions, facts._memo or _memo(ctx)), name
    found = len(facts.races)
    facts.divergent                      # runs whatever was deferred
    assert len(facts.races) == found
    # the check must not defer what a run would report; some forms a run does not
    # follow either (pointers kept in memory, a branch on loaded data): still run
    if name not in _RUN_SILENT:
        assert found, name


def _memo(ctx):
    from cudalint.analysis.sync.cfg import BodyQueries
    from cudalint.analysis.sync.unit_memo import UnitMemo as _UnitMemo
    return _UnitMemo(ctx.analysis(BodyQueries))


@pytest.mark.parametrize("name", sorted(_QUIET))
def test_interval_check_defers_barrier_separated_kernels(name):
    ctx = _ctx(_kernel_src(_QUIET[name]))
    facts = ctx.analysis(RaceAnalysis)
    assert not facts.races and facts._deferred, name
    facts.divergent
    assert not facts.races and not facts.masks


def test_inert_device_function_is_not_run_but_its_races_are():
    """A device function with no shared memory, barrier or unknown call is skipped (its
    float result is unknown anyway); one given a shared pointer still runs."""
    src = ("__device__ float heavy(float x) { for (int i = 0; i < 60; ++i) x = x * 0.5f + 1.f;"
           " return x; }\n"
           "__device__ void put(float* a, int i, float v) { a[i] = v; }\n"
           "__global__ void k(float* o) { __shared__ float s[64]; unsigned tid = threadIdx.x;\n"
           "  float v = heavy(o[tid]); v = heavy(v); v = heavy(v); v = heavy(v);\n"
           "  put(s, tid, v); o[tid] = s[63 - tid]; }\n"
           "void h(float* o) { k<<<1, 64>>>(o); }\n")
    ctx = _ctx(src)
    facts = ctx.analysis(RaceAnalysis)
    assert [r.rule for r in facts.races] == ["CL102"]
    memo_fns = {f.name: f for f in ctx.model.functions if not f.is_kernel}
    memo = _memo(ctx)
    assert memo.inert(memo_fns["heavy"], memo_fns)


def test_thread_dependence():
    src = ("__global__ void k(float* o, int n) {\n"
           "  int tid = threadIdx.x; int b = blockIdx.x * blockDim.x; int lane = tid & 31;\n"
           "  int flag = 0; if (lane == 0) flag = 1; int u = n * 2;\n"
           "  int any = __syncthreads_or(tid > 3);\n"
           "  o[0] = tid + b + lane + flag + u + any; }\n")
    ctx = _ctx(src)
    (fn,) = ctx.model.kernels
    dep = ctx.analysis(ThreadDependence).of(fn)
    assert {"tid", "lane", "flag"} <= dep.varying_names()
    assert not {"b", "u", "any"} & dep.varying_names()


def test_sync_classification():
    src = ("__global__ void k() { cg::thread_block b = cg::this_thread_block();\n"
           "auto t = cg::tiled_partition<16>(b);\n"
           "asm volatile(\"bar.sync 0;\"); asm volatile(\"bar.sync 1, 64;\");\n"
           "b.sync(); t.sync(); cg::sync(b); __syncwarp(0xffff); __syncthreads_or(1); }\n")
    ctx = _ctx(src)
    (fn,) = ctx.model.kernels
    kinds = [(s.kind, s.size) for s in syncs_in(fn.body, group_handles(fn.body))]
    assert kinds == [("block", None), ("named", None), ("block", None), ("warp", 16),
                     ("block", None), ("warp", None), ("block", None)]
    assert classify_sync(fn.body, {}) is None


# ---- the block run's fast paths against their per-element definitions ------------------

def _reference_binop(op, a, b):
    from cudalint.analysis.sync.values import scalar_op as _scalar_op
    if a is None or b is None:
        return None
    if isinstance(a, int) and isinstance(b, int):
        return _scalar_op(op, a, b)
    n = len(a) if isinstance(a, tuple) else len(b)
    va = a if isinstance(a, tuple) else (a,) * n
    vb = b if isinstance(b, tuple) else (b,) * n
    return tuple(None if x is None or y is None else _scalar_op(op, x, y)
                 for x, y in zip(va, vb))


def test_vector_ops_equal_per_element_definition():
    import random

    from cudalint.analysis.sync.values import binop as _binop, minmax as _minmax, unop as _unop
    rnd = random.Random(7)
    special = [0, 1, -1, 2, 31, 32, 63, 64, 65, -64, 1000]

    def value():
        k = rnd.random()
        if k < 0.3:
            return rnd.choice(special)
        if k < 0.35:
            return None
        return tuple(rnd.choice([None] + special) if rnd.random() < 0.2
                     else rnd.randint(-70, 70) for _ in range(8))

    ops = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", ">", "<=", ">=",
           "==", "!=", "&&", "||"]
    for _ in range(20000):
        op, a, b = rnd.choice(ops), value(), value()
        got, want = _binop(op, a, b), _reference_binop(op, a, b)
        assert got == want, (op, a, b)
        if isinstance(want, tuple):      # ints stay ints (a bool would print as true)
            assert [type(x) for x in got] == [type(x) for x in want], (op, a, b)
    for _ in range(2000):
        a = value()
        for op in ("-", "~", "!"):
            want = None if a is None else (
                {"-": lambda x: -x, "~": lambda x: ~x, "!": lambda x: int(not x)}[op](a)
                if isinstance(a, int) else tuple(
                    None if x is None else {"-": -x, "~": ~x, "!": int(not x)}[op]
                    for x in a))
            assert _unop(op, a) == want
        b = value()
        if isinstance(a, tuple) or isinstance(b, tuple):
            ref = _reference_binop("<", a, b)
            pick = None if ref is None else tuple(
                None if r is None else (x if r else y) for r, x, y in zip(
                    ref, a if isinstance(a, tuple) else (a,) * 8,
                    b if isinstance(b, tuple) else (b,) * 8))
            assert _minmax(True, a, b) == pick


def test_condition_split_and_bit_indices():
    import random

    from cudalint.analysis.sync.block_run import BlockRun
    run = BlockRun.__new__(BlockRun)
    run._bits = {}
    rnd = random.Random(3)
    for n in (1, 5, 32, 100):
        for _ in range(200):
            v = tuple(rnd.choice([None, 0, 1, 2, -1]) for _ in range(n))
            act = rnd.getrandbits(n)
            t, f, u = run.split(v, act)
            assert run.bits(act) == [i for i in range(n) if act >> i & 1]
            for i in range(n):
                bit = 1 << i
                want = (0, 0, 0) if not act & bit else (
                    (0, 0, bit) if v[i] is None else (bit, 0, 0) if v[i] else (0, bit, 0))
                assert (t & bit, f & bit, u & bit) == want
