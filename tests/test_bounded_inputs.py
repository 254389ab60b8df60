"""Bounded on any input (issue 25): C integer semantics in constant evaluation, hardware
limits on every block and grid shape (CL601 and the model), macro chains, notebooks named
on the command line, and each trigger of the issue linted within 1 s of CPU and 200 MB."""
from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from cudalint.config import BLOCK_LIMITS, BLOCK_THREADS, ConfigError, Settings, parse_table
from cudalint.engine import lint_bytes
from cudalint.model import launch_shape
from cudalint.model.consteval import eval_int
from cudalint.model.kernels import Model
from cudalint.parse import parse

ROOT = Path(__file__).resolve().parent.parent
REGRESSIONS = ROOT / "tests" / "fuzz" / "regressions"
FIXTURES = ROOT / "fixtures"
ALL = Settings(select=("ALL",))

# ---- constant evaluation: C on 64-bit values ------------------------------------------


@pytest.mark.parametrize("expr, value", [
    ("1 + 34359738368", 34359738369),       # was 1 << 34359738368 (MemoryError)
    ("1 + 99999999999999999999", None),     # was OverflowError: too many digits
    ("99999999999999999999", None),
    ("18446744073709551615", (1 << 64) - 1),
    ("0xFFFFFFFFFFFFFFFF + 1", None),
    ("0x10000000000000000", None),
    ("1 << 63", 1 << 63),
    ("1 << 64", None),
    ("1 << -1", None),
    ("3 >> 64", None),
    ("(1 << 62) * 4", None),
    ("-9223372036854775808", -(1 << 63)),
    ("1000000 * 1000000 * 1000000 * 1000000", None),
    ("-7 / 2", -3),
    ("-7 % 2", -1),
    ("2 + 3 * 4", 14),
    ("1 ? 2 : 3", 2),
    ("0" * 200 + "1", None),
])
def test_eval_int_follows_c_on_64_bits(expr, value):
    assert eval_int(expr) == value


def test_only_the_operator_in_front_is_computed(monkeypatch):
    """The evaluator once built every operator's result and then picked one: `a + b`
    also computed `a << b`. Now each operator's function runs alone."""
    from cudalint.model import consteval
    called = []
    real = consteval._shift
    monkeypatch.setattr(consteval, "_shift", lambda *a: called.append(a) or real(*a))
    monkeypatch.setitem(consteval._OPS, "<<", lambda a, b: consteval._shift(a, b, True))
    assert eval_int("1 + 40") == 41 and not called
    assert eval_int("1 << 4") == 16 and called


def _model(src: str) -> Model:
    return Model(parse(src.encode()))


def test_doubling_macro_chain_is_evaluated_once_per_macro():
    """`#define Mk (Mk-1 + Mk-1)`: each macro is evaluated once from the values before
    it (never expanded as text), so 1,000 levels cost 1,000 small evaluations; values
    past 64 bits become unknown."""
    lines = ["#define M0 1"] + [f"#define M{i} (M{i - 1} + M{i - 1})" for i in range(1, 1001)]
    t = time.process_time()
    env = _model("\n".join(lines) + "\n").constants
    assert time.process_time() - t < 1.0
    assert env["M40"] == 1 << 40 and env["M63"] == 1 << 63 and "M64" not in env


def test_absurd_array_sizes_are_unknown():
    m = _model("#define N (1 + 8589934592)\n"
               "__global__ void k() { __shared__ float s[N]; __shared__ float t[64][64];\n"
               "  __shared__ char u[1 << 16][1 << 16]; __shared__ float v[1 << 28]; }\n")
    dims = {a.name: a.dims for a in m.shared_arrays}
    assert dims == {"s": [None], "t": [64, 64], "u": [None, None], "v": [1 << 28]}


def test_huge_defines_from_settings_are_dropped():
    m = Model(parse(b"int x;"), {"A": 1 << 70, "B": 5})
    assert m.constants == {"B": 5}
    with pytest.raises(ConfigError, match="64-bit"):
        parse_table({"defines": {"A": 1 << 70}}, "cudalint.toml")


# ---- block and grid shapes --------------------------------------------------------------


def test_config_and_model_share_the_hardware_limits():
    assert BLOCK_LIMITS == launch_shape.MAX_BLOCK_DIMS
    assert BLOCK_THREADS == launch_shape.MAX_THREADS_PER_BLOCK


@pytest.mark.parametrize("dims, ok", [
    ((1024, 1, 1), True), ((1025, 1, 1), False), ((32, 32, 1), True), ((32, 33, 1), False),
    ((1, 1, 64), True), ((1, 1, 65), False), ((1, 1024, 1), True), ((2, 1, 1024), False),
])
def test_block_limits(dims, ok):
    assert (launch_shape.block_problem(dims) is None) == ok
    assert (launch_shape.checked_block(list(dims)) is not None) == ok


def test_grid_limits():
    assert launch_shape.grid_problem(((1 << 31) - 1, 65535, 65535)) is None
    assert launch_shape.grid_problem((1 << 31, 1, 1)) is not None
    assert launch_shape.grid_problem((1, 65536, 1)) is not None


@pytest.mark.parametrize("value", [[1, 1, 128], 2048, [32, 33], [99999999999999999999]])
def test_block_size_setting_past_the_limits_is_a_config_error(value):
    with pytest.raises(ConfigError, match="z at most 64"):
        parse_table({"block-size": value}, "cudalint.toml")


def test_block_size_setting_error_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    from cudalint.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cudalint.toml").write_text("block-size = [1, 1, 128]\n")
    (tmp_path / "a.cu").write_text("__global__ void k(float* a) { a[threadIdx.x] = 0; }\n")
    assert main(["check", "a.cu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "block-size" in err


def _shape(src: str, settings: Settings = ALL):
    from cudalint.context import UnitContext
    from cudalint.sources.base import SourceFile, Unit
    unit = Unit(SourceFile("t.cu", src, "cuda"), src)
    ctx = UnitContext(unit, settings)
    (fn,) = [f for f in ctx.model.kernels if f.name == "k"]
    return launch_shape.block_shape(ctx, fn)


def test_impossible_shapes_are_never_modelled():
    body = "__global__ void {lb} k(float* a) {{ a[threadIdx.x] = 0; }}\n"
    assert _shape(body.format(lb="__launch_bounds__(2147483647)")) is None
    # a bound is not a block shape (issue 20: sosfilt bounded by 1024 runs 2-16 threads)
    assert _shape(body.format(lb="__launch_bounds__(256)")) is None
    def launch(b: str) -> str:
        return body.format(lb="") + f"void h(float* a) {{ k<<<1, {b}>>>(a); }}\n"
    assert _shape(launch("99999999999")) is None
    assert _shape(launch("dim3(32, 1, 128)")) is None
    assert _shape(launch("dim3(32, 8)")).dims == (32, 8, 1)
    # an impossible launch beside a possible one: the possible one is the shape
    both = launch("2048") + "void g(float* a) { k<<<1, 128>>>(a); }\n"
    assert _shape(both).dims == (128, 1, 1)
    # dim3 holds unsigned ints: 2**32 + 64 launches 64 threads, as C converts it
    assert _shape(launch("4294967360")).dims == (64, 1, 1)


def test_cl601_fixture_agrees_with_the_gpu():
    """Every `ruleid` launch of the fixture failed on the GPU and every `ok` one ran
    (fixtures/CL601/truth.json, tools/gputruth/launch.py)."""
    truth = json.loads((FIXTURES / "CL601" / "truth.json").read_text())
    ran = {int(r["line"]): r["launch_error"] == "cudaSuccess" for r in truth["launches"]}
    lines = (FIXTURES / "CL601" / "launch_configuration.cu").read_text().splitlines()
    expect = {}
    for row, line in enumerate(lines, start=1):
        if "<<<" in line:
            above = lines[row - 2]
            expect[row] = "ok: CL601" in above
    assert expect and ran == expect
    cupy = json.loads(truth["cupy"]["output"])
    assert [r["error"] is None for r in cupy] == [False] * 5 + [True] * 2
    bounds = {r["max_threads"]: r for r in truth["launch_bounds"]}
    assert bounds[2048]["rc"] == 0 and "ignored" in bounds[2147483647]["output"]


def test_launch_bounds_past_a_whole_sm_cap_no_registers():
    from cudalint.analysis.ptxas.occupancy import launch_bounds_register_cap
    assert launch_bounds_register_cap("sm_90", 2048, None) == 32     # measured: 32
    assert launch_bounds_register_cap("sm_90", 2049, None) is None   # ptxas ignores it
    assert launch_bounds_register_cap("sm_90", 2147483647, None) is None


# ---- notebooks --------------------------------------------------------------------------

_NOTEBOOK = ('{"cells": [{"cell_type": "code", "source": ["__global__ void k(float* a) '
             '{ a[0] = __shfl(a[1], 0); }"]}], "nbformat": 4}\n')


def test_notebook_named_on_the_command_line_is_linted(tmp_path, monkeypatch, capsys):
    """Issue 16: notebooks are read (their code cells as Python); a bare CUDA cell is
    not Python, so nothing in it is a kernel string: no finding, no warning."""
    from cudalint.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nb.ipynb").write_text(_NOTEBOOK)
    assert main(["check", "--no-cache", "--output-format", "json", "nb.ipynb"]) == 0
    out, err = capsys.readouterr()
    assert [d["code"] for d in json.loads(out)] == [] and err == ""
    assert main(["check", "--no-cache", "."]) == 0
    assert capsys.readouterr().err == ""


def test_notebook_on_stdin_is_echoed_unchanged(monkeypatch, capsys):
    import io
    from cudalint.cli import main

    class Stdin:
        buffer = io.BytesIO(_NOTEBOOK.encode())
    monkeypatch.setattr(sys, "stdin", Stdin)
    assert main(["check", "--stdin-filename", "nb.ipynb", "--fix"]) == 0
    out, err = capsys.readouterr()
    assert out == _NOTEBOOK and err == ""


# ---- the issue's triggers: 1 s of CPU and 200 MB each ---------------------------------

TRIGGERS = [
    "cuda_slow/launch_bounds_int_max.cu", "cuda_slow/launch_block_huge.cu",
    "python/pycuda_block_huge.py", "cuda_slow/define_sum_computed_as_shift.cu",
    "cuda_slow/define_shared_array_8g.cu", "cuda/define_literal_past_uint64.cu",
    "cuda_slow/macro_doubling_chain_40.cu", "cuda_slow/macro_doubling_chain_24_pow.cu",
    "python/cupy_macro_doubling_chain_24.py",
]
CPU_LIMIT_S = 1.0
RSS_LIMIT_MB = 200
_CHILD = """
import json, resource, sys, time
from cudalint.config import Settings
from cudalint.engine import lint_bytes
from cudalint.sources.base import file_kind
data = open(sys.argv[1], 'rb').read()
import cudalint.parse, tree_sitter   # start-up is not the input's cost
# the peak from here on: ru_maxrss keeps the peak of the process this one was forked
# from (a test run's own growth), /proc/self/clear_refs 5 resets it (Linux)
try:
    open('/proc/self/clear_refs', 'w').write('5')
    reset = True
except OSError:
    reset = False
t = time.process_time()
r = lint_bytes(sys.argv[1], data, Settings(select=('ALL',)), file_kind(sys.argv[1]))
cpu = time.process_time() - t
def peak_mb():
    if reset:
        for line in open('/proc/self/status'):
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"cpu": cpu,
                  "rss_mb": peak_mb(),
                  "internal": [d.message for d in r.diagnostics
                               if 'internal error' in d.message],
                  "codes": sorted({d.code for d in r.diagnostics})}))
"""


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("name", TRIGGERS)
def test_issue_trigger_is_linted_within_1s_and_200mb(name):
    path = REGRESSIONS / name
    res = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                         text=True, timeout=120, preexec_fn=_cap)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert not got["internal"], got["internal"]
    assert got["cpu"] < CPU_LIMIT_S, got
    assert got["rss_mb"] < RSS_LIMIT_MB, got
    if re.search(r"launch_(bounds_int_max|block_huge)", name):
        assert "CL601" in got["codes"]


def test_deep_toml_never_reaches_tomllib(tmp_path, monkeypatch):
    # fuzz seed 32: tomllib's recursion near the limit let a weakref callback print
    # "Exception ignored ... RecursionError" although the error itself was caught
    import tomllib

    from cudalint import config
    calls = []
    monkeypatch.setattr(tomllib, "loads", lambda text: calls.append(text) or {})
    deep = tmp_path / "pyproject.toml"
    deep.write_text("[tool.cudalint]\nselect = " + "[" * 1000 + "]" * 1000 + "\n")
    with pytest.raises(ConfigError, match="nested more than 64 levels"):
        config.load_config_file(deep)
    assert calls == []
    # brackets inside strings and comments are not nesting; real nesting is counted
    text = ('a = "[[[[" # [[[[\nb = \'\'\'\n[[[[\n\'\'\'\nc = "\\"[["\n'
            'd = [[1], {e = [2]}]\n[tool.cudalint]\n')
    assert config.toml_nesting(text) == 3
    ok = tmp_path / "cudalint.toml"
    ok.write_text("# [[[[[[[[\n" * 100 + 'select = ["CL2"]\n')
    config.load_config_file(ok)
    assert len(calls) == 1


def test_one_source_compiled_many_times_is_analysed_once(monkeypatch):
    # fuzz seed 33: 40 copies of one RawModule call took 9.7 s; each copy's findings are
    # the same at the same file positions (they come through the string's char map)
    import cudalint.engine as engine
    made = []
    real = engine.UnitContext
    monkeypatch.setattr(engine, "UnitContext", lambda u, s: made.append(u) or real(u, s))
    head = ("import cupy as cp\nCODE = r'''\n__global__ void k(float* a) {\n"
            "  a[threadIdx.x * 32] = 0;\n}\n'''\n")
    call = "m = cp.RawModule(code=CODE)\n"
    once = lint_bytes("m.py", (head + call).encode(), ALL, "python")
    n_once = len(made)
    many = lint_bytes("m.py", (head + call * 40).encode(), ALL, "python")
    assert len(made) - n_once == n_once            # the 39 copies cost nothing more
    assert [d.to_json() if hasattr(d, "to_json") else (d.code, d.row, d.col, d.message)
            for d in once.diagnostics] == \
        [d.to_json() if hasattr(d, "to_json") else (d.code, d.row, d.col, d.message)
         for d in many.diagnostics]
    assert any(d.code == "CL201" for d in many.diagnostics)
    # different options are a different analysis
    made.clear()
    lint_bytes("m.py", (head + call + "m = cp.RawModule(code=CODE, options=('-DX=1',))\n"
                        ).encode(), ALL, "python")
    assert len(made) == 2
