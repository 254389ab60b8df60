"""Host guards on launch arguments (model/launch_guards.py, sheet-newcorpus8 W8): the
ranges every launch of a kernel guarantees its integer parameters, and the block runs'
figures inside them."""
from __future__ import annotations

from dataclasses import replace

from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.engine import lint_text
from cudalint.model.launch_guards import param_ranges, sample_in_ranges
from cudalint.sources.base import SourceFile, Unit

KERNEL = "__global__ void k(const int* in, int* out, int s, int t) { out[0] = s + t; }\n"


def _ranges(host: str) -> dict:
    text = KERNEL + host
    unit = Unit(file=SourceFile(path="g.cu", text=text, kind="cuda"), text=text)
    ctx = UnitContext(unit, Settings())
    (fn,) = [f for f in ctx.model.kernels if f.name == "k"]
    return param_ranges(ctx, fn)


def test_if_else_chains_bound_the_argument():
    host = ("void h(const int* in, int* out, int n, int m) {\n"
            "  if (n <= 256) k<<<1, 256>>>(in, out, n, m);\n"
            "  else if (n <= 512) k<<<1, 256>>>(in, out, n, m);\n}\n")
    assert _ranges(host) == {"s": (None, 512)}
    host = ("void h(const int* in, int* out, int n, int m) {\n"
            "  if (n < 100 || m > 7) return;\n"
            "  k<<<1, 256>>>(in, out, n, m);\n}\n")
    assert _ranges(host) == {}        # after the if, not in it: not read (no claim)
    host = ("void h(const int* in, int* out, int n, int m) {\n"
            "  if (n < 100 || m > 7) {} else { k<<<1, 256>>>(in, out, n, m); }\n}\n")
    assert _ranges(host) == {"s": (100, None), "t": (None, 7)}
    host = ("void h(const int* in, int* out, int n, int m) {\n"
            "  if (256 >= n && n > 4) k<<<1, 256>>>(in, out, n, m);\n}\n")
    assert _ranges(host) == {"s": (5, 256)}


def test_no_range_when_unknown():
    # one launch unguarded: the hull has no bound
    host = ("void h(const int* in, int* out, int n, int m) {\n"
            "  if (n <= 256) k<<<1, 256>>>(in, out, n, m);\n"
            "  k<<<1, 256>>>(in, out, n, m);\n}\n")
    assert _ranges(host) == {}
    # the variable written in the host function
    host = ("void h(const int* in, int* out, int n, int m) {\n"
            "  if (n <= 256) { n *= 8; k<<<1, 256>>>(in, out, n, m); }\n}\n")
    assert _ranges(host) == {}
    # an expression, not the guarded variable itself
    host = ("void h(const int* in, int* out, int n, int m) {\n"
            "  if (n <= 256) k<<<1, 256>>>(in, out, n * 8, m);\n}\n")
    assert _ranges(host) == {}
    # a local declared with a value is not written after
    host = ("void h(const int* in, int* out, int m) {\n"
            "  int n = m / 2;\n"
            "  if (n <= 256) k<<<1, 256>>>(in, out, n, m);\n}\n")
    assert _ranges(host) == {"s": (None, 256)}


def test_samples_stay_inside_and_apart():
    ranges = {"s": (None, 256), "t": (513, None), "u": (3, 3)}
    assert sample_in_ranges(1024, 0, ranges) == {"s": 256, "t": 1024, "u": 3}
    assert sample_in_ranges(2053, 1, ranges) == {"s": 255, "t": 2053, "u": 3}
    assert sample_in_ranges(100, 1, ranges) == {"s": 100, "t": 514, "u": 3}


def test_cl102_silent_where_every_launch_keeps_the_loop_to_one_pass():
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "fixtures/CL102/guarded_launch.cu"
    text = path.read_text()
    s = replace(Settings(), select=("CL102",))
    rows = {d.row for d in lint_text(str(path), text, s, "cuda").diagnostics}
    assert rows == {33}
    # the guard taken away: the first kernel races as the second does
    unguarded = text.replace("if (s <= BS) scan_guarded", "scan_guarded")
    rows = {d.row for d in lint_text(str(path), unguarded, s, "cuda").diagnostics}
    assert rows == {13, 33}


def test_the_fixture_agrees_with_racecheck_on_an_h100():
    """fixtures/CL102/guarded_launch.truth.json (tools/gputruth/sync.py --only, the
    harness passing the launch's literal 1024, or 5 where the launch passes `s`):
    racecheck finds the WAR hazard in the unguarded kernel only, at the lines CL102
    names."""
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    truth = json.loads((root / "fixtures/CL102/guarded_launch.truth.json").read_text())
    hazards = {r["kernel"]: {(h["first_line"], h["second_line"])
                             for h in r["racecheck"]["hazards"] if h["severity"] == "error"}
               for r in truth["records"]}
    assert hazards == {"scan_guarded": set(), "scan_unguarded": {(42, 33)}}
    path = root / "fixtures/CL102/guarded_launch.cu"
    s = replace(Settings(), select=("CL102",))
    (d,) = lint_text(str(path), path.read_text(), s, "cuda").diagnostics
    assert (d.row, f"line {d.row}", "line 42") == (33, "line 33", "line 42") and \
        "(line 42)" in d.message
