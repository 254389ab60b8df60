"""CL102: one finding per race, not per racing pair (issue 20, sheet-newcorpus4 M6;
issue 23). The pairs of one ``__shared__`` array between the same two barriers, or of
one statement, are one finding at the write of the pair it names (a read-modify-write
first); pairs whose write stores a value every thread stores alike are counted and
named, and add no finding of their own beside another race of their barrier interval.
The racing pairs themselves (RaceAnalysis) are unchanged; on HEAD 1087e05 the fixture
gave 14 findings, one per later access."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cudalint.analysis.sync.races import RaceAnalysis
from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.rules.sync._race_common import race_groups, same_value_store
from cudalint.sources.base import SourceFile, Unit

FIXTURES = Path(__file__).parent.parent / "fixtures" / "CL102"


def _cl102(path: Path) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "cudalint", "check", str(path), "--select",
                          "CL102", "--output-format", "json", "--no-cache"],
                         capture_output=True, text=True, check=False)
    return json.loads(out.stdout)


def _ctx(src: str, name: str = "t.cu") -> UnitContext:
    return UnitContext(Unit(SourceFile(name, src, "cuda"), src), Settings())


def test_a_pose_every_thread_computes_is_one_finding_at_its_read_modify_write():
    found = _cl102(FIXTURES / "one_race_many_pairs.cu")
    assert [f["location"]["row"] for f in found] == [20, 53, 67]
    pose = found[0]
    # the read-modify-write t[0] = b[0] - t[0] is named, not the first store to q
    assert "`t[0]` (line 20) overwrites `t` elements" in pose["message"]
    assert "8 racing pairs on `q`, `t` at lines 15-18, 20-21" in pose["message"]
    assert "4 of which read back a value every thread stores alike" in pose["message"]
    m = pose["metrics"]
    assert (m["pairs"], m["same_value_pairs"], m["arrays"]) == (8, 4, ["q", "t"])
    assert m["hazard"] == "write-after-read" and m["write_line"] == 20


def test_same_value_stores_alone_stay_one_race():
    found = _cl102(FIXTURES / "one_race_many_pairs.cu")
    same = found[1]
    # formally a data race: kept, but one finding for the four reads of q and r
    assert same["metrics"]["pairs"] == 4 and same["metrics"]["same_value_pairs"] == 4
    assert "all of which read back a value every thread stores alike" in same["message"]
    assert "data race by the CUDA memory model" in same["message"]


def test_a_stencil_read_at_both_neighbours_is_one_finding_at_the_tile_store():
    found = _cl102(FIXTURES / "one_race_many_pairs.cu")
    tile = found[2]
    assert (tile["location"]["row"], tile["location"]["column"]) == (67, 5)
    assert tile["metrics"]["pairs"] == 3 and tile["metrics"]["lines"] == [67, 68, 69]
    assert "read back" not in tile["message"]


def test_droid_slam_shape_names_its_same_value_pairs():
    # the call finding (device_call_race.cu, the relSE3 shape): 8 pairs, 6 of them a
    # store of q (or of t inside rotate) that every thread computes alike, read back
    found = _cl102(FIXTURES / "device_call_race.cu")
    call = found[0]
    assert call["metrics"]["pairs"] == 8 and call["metrics"]["same_value_pairs"] == 6
    assert "`t[0]` (line 19) overwrites `t`" in call["message"]
    assert "6 of which read back a value every thread stores alike" in call["message"]


def test_races_in_two_barrier_intervals_stay_two_findings(tmp_path):
    src = tmp_path / "t.cu"
    src.write_text("""#define B 128
__global__ void k(float* out, const float* in) {
    __shared__ float s[B];
    unsigned tid = threadIdx.x;
    s[tid] = in[tid];
    out[tid] = s[(tid + 1) % B];
    __syncthreads();
    s[tid] = 2.f * in[tid];
    out[B + tid] = s[(tid + 1) % B];
}
void h(float* o, const float* i) { k<<<1, B>>>(o, i); }
""")
    found = _cl102(src)
    assert [(f["location"]["row"], f["metrics"]["pairs"]) for f in found] == \
        [(6, 1), (9, 1)]


def _same_values(src: str) -> dict[int, bool]:
    """Write line -> whether its pairs are same-value, for every CL102 pair."""
    ctx = _ctx(src)
    out: dict[int, bool] = {}
    groups = race_groups(ctx)
    for g in groups:
        for r in g.races:
            w = r.first if r.first_write else r.second
            out[w.start_point[0] + 1] = id(r) in g.same_value
    return out


def test_what_is_not_a_same_value_store():
    src = """#define B 128
__global__ void k(float* out, const float* in, int n) {
    __shared__ float q[4], t[2], g[2];
    unsigned tid = threadIdx.x;
    q[0] = in[0] * 2.f;
    q[1] = (float)(tid / 64);
    if (tid < 32) g[0] = in[1];
    t[0] = in[2];
    t[0] = in[3] - t[0];
    out[tid] = q[0] + q[1] + g[0] + t[0];
}
void h(float* o, const float* i, int n) { k<<<1, B>>>(o, i, n); }
"""
    same = _same_values(src)
    # a value every thread stores alike
    assert same[5] is True
    # a thread-dependent value, a store by part of the block (the others read what
    # was there before), a read-modify-write of what other threads overwrite
    assert same[6] is False and same[7] is False and same[9] is False
    # one finding: the read-modify-write, with the rest of the interval's pairs
    ctx = _ctx(src)
    assert len(race_groups(ctx)) == 1


def test_same_value_needs_a_read_after_the_write():
    # a thread that reads before it stores may see the old value or another's store
    ctx = _ctx("""#define B 128
__global__ void k(float* out, const float* in) {
    __shared__ float q[1];
    unsigned tid = threadIdx.x;
    for (int j = 0; j < 4; j++) {
        out[tid * 4 + j] = q[0];
        q[0] = in[0];
    }
}
void h(float* o, const float* i) { k<<<1, B>>>(o, i); }
""")
    races = [r for r in ctx.analysis(RaceAnalysis).races if r.cross_warp]
    assert races
    assert not any(same_value_store(ctx, r, set()) for r in races if not r.first_write)


def test_a_store_in_a_loop_a_thread_may_leave_early_is_not_same_value():
    src = """#define B 128
__global__ void k(float* out, const float* in) {
    __shared__ float q[1];
    unsigned tid = threadIdx.x;
    for (int j = 0; j < 2; j++) {
        q[0] = in[j];
        out[tid * 2 + j] = q[0];
        if (tid < 64) continue;
        out[B * 2 + tid] = in[2];
    }
}
void h(float* o, const float* i) { k<<<1, B>>>(o, i); }
"""
    same = _same_values(src)
    assert same == {6: False}
    # the same loop without the continue: a value every thread stores alike
    assert _same_values(src.replace("if (tid < 64) continue;", "")) == {6: True}
