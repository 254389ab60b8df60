"""CL102 on races inside a device function written for one thread that every thread
calls on ``__shared__`` data (issue 20, fourth triage M6: DROID-SLAM's
``frame_distance_kernel`` calling ``relSE3`` gave 21 findings, one per racing access
inside the call). The fix is one, at the call (one thread runs it, then a barrier), so
the finding is one, at the call, naming the racing lines; a cooperative device function
(one that indexes by thread) keeps its findings at its racing accesses, where its fix
goes. The races themselves (RaceAnalysis) are unchanged."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cudalint.analysis.sync.races import RaceAnalysis
from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.sources.base import SourceFile, Unit

FIXTURE = Path(__file__).parent.parent / "fixtures" / "CL102" / "device_call_race.cu"


def _cl102(path: Path) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "cudalint", "check", str(path), "--select",
                          "CL102", "--output-format", "json", "--no-cache"],
                         capture_output=True, text=True, check=False)
    return json.loads(out.stdout)


def test_one_finding_at_the_call_of_a_one_thread_function():
    found = _cl102(FIXTURE)
    assert [(f["location"]["row"], f["location"]["column"]) for f in found] == \
        [(29, 5), (52, 32)]
    call = found[0]
    assert "every thread runs `relative`" in call["message"]
    assert "8 racing pairs at lines 9-10, 16-17, 19-20" in call["message"]
    # the read-modify-write of `t` is the pair named (the stores to `q` write equal values)
    assert "`t[0]` (line 19) overwrites `t`" in call["message"]
    assert call["metrics"]["call_line"] == 29 and call["metrics"]["pairs"] == 8
    assert call["metrics"]["lines"] == [9, 10, 16, 17, 19, 20]


def test_a_write_in_the_kernel_read_by_the_call_asks_for_a_barrier_before_it(tmp_path):
    src = tmp_path / "t.cu"
    src.write_text("""__device__ float get(const float* s) { return s[0] + s[1]; }
__global__ void k(float* out, const float* in) {
    __shared__ float s[2];
    if (threadIdx.x < 2) s[threadIdx.x] = in[threadIdx.x];
    out[threadIdx.x] = get(s);
}
void h(float* o, const float* i) { k<<<1, 128>>>(o, i); }
""")
    found = _cl102(src)
    assert [f["location"]["row"] for f in found] == [5]
    assert "before the call" in found[0]["message"]
    assert found[0]["metrics"]["lines"] == [1]


def test_a_function_given_the_thread_index_keeps_its_findings_inside(tmp_path):
    # cooperative: its accesses differ per thread through the argument, its fix is inside
    src = tmp_path / "t.cu"
    src.write_text("""__device__ void step(float* s, unsigned t) {
    if (t < 64) s[t] += s[t + 64];
    if (t < 32) s[t] += s[t + 32];
}
__global__ void k(float* out, const float* in) {
    __shared__ float s[128];
    s[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    step(s, threadIdx.x);
    out[threadIdx.x] = s[0];
}
void h(float* o, const float* i) { k<<<1, 128>>>(o, i); }
""")
    found = _cl102(src)
    # inside the function, not at the call: line 3 reads what line 2 wrote, line 10 what
    # the call wrote (no barrier after it); one array between two barriers is one race,
    # reported at its first write with every pair's lines
    assert [(f["location"]["row"], f["metrics"]["lines"]) for f in found] == \
        [(2, [2, 3, 10])]
    assert "call_line" not in found[0]["metrics"]


def test_the_races_are_the_same_pairs_with_their_call_recorded():
    src = FIXTURE.read_text()
    ctx = UnitContext(Unit(SourceFile(str(FIXTURE), src, "cuda"), src), Settings())
    races = [r for r in ctx.analysis(RaceAnalysis).races if r.cross_warp]
    inside = [r for r in races if r.site is not None]
    assert len(inside) == 8
    assert {r.site.start_point[0] + 1 for r in inside} == {29}
    # the cooperative reduction's race has no call: the run reports it where it is
    assert {r.second.start_point[0] + 1 for r in races if r.site is None} == {52}
