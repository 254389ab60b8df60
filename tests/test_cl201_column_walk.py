"""CL201 messages on walks whose other sector bytes the kernel uses (issue 20,
bench/triage/sheet-newcorpus5.md W4 and W5, sheet-newcorpus4 #29-#32).

- W4 (DirectVoxGO): a thread walks its own row with a counter that starts at the row
  (`for (i = r * m; i < r * m + m; ++i) ... d[i]`): the row walk's message, not "the kernel
  reads 128 of 1024 bytes ... records of 8: SoA".
- W5 (ptypy, lightseq): lanes walk down a column while other warps of the block, or other
  blocks, read the neighbouring elements: the message names that index and its axis and
  the remedy puts the lanes on it; no "bytes no access uses".
- Look-alikes: one field of records keeps the field message; a 3-float record read whole
  from the lane's start stays silent.

The quoted measurements are checked against fixtures/CL201/column_walk.json (written on an
H100 by tools/gputruth/column_walk.py).
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_bytes, lint_text

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures/CL201/column_walk.cu"
RECORD = ROOT / "fixtures/CL201/column_walk.json"


def _cl201(src: str) -> list:
    result = lint_bytes("k.cu", src.encode(), Settings(select=("CL201",)), "cuda")
    return [d for d in result.diagnostics if d.code == "CL201"]


def _fixture() -> dict[int, object]:
    s = replace(Settings(), select=("CL201",))
    res = lint_text(str(FIXTURE), FIXTURE.read_text(), s, "cuda")
    return {d.row: d for d in res.diagnostics if d.code == "CL201"}


W4 = """
__global__ void cumdist(const float* d, int n, int m, bool* mask) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) {
    float c = 0.f;
    for (int i = r * m; i < r * m + m; ++i) { c += d[i]; mask[i] = c > 1.f; }
  }
}
void go(const float* d, int n, int m, bool* k) { cumdist<<<(n + 255) / 256, 256>>>(d, n, m, k); }
"""

W5 = """
__global__ void frame_sum(const float* a, float* out, int m, int n) {
  __shared__ float s[32][33];
  float v = 0.f;
  for (int i = threadIdx.x; i < m; i += 32)
    for (int j = threadIdx.y; j < n; j += 32) v += a[blockIdx.x * m * n + i * n + j];
  s[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) { float t = 0; for (int k = 0; k < 32 * 33; k++) t += (&s[0][0])[k]; out[blockIdx.x] = t; }
}
void go(const float* a, float* o, int b, int m, int n) { frame_sum<<<b, dim3(32, 32)>>>(a, o, m, n); }
"""

# lightseq's router (moeKernels.cc.cu:192): lanes are experts, blocks are tokens (there
# declared together, `int token_id = blockIdx.x, expert_id = threadIdx.x;`, which is not
# followed: the lane engine holds a declaration's names together)
ROUTER = """
__global__ void route(const float* g, float* score, int experts, int maxtok, int n) {
  int token_id = blockIdx.x;
  int expert_id = threadIdx.x;
  for (int k = 0; k < n; ++k)
    score[expert_id * maxtok + token_id] += g[k];
}
void go(const float* g, float* s, int t, int e, int mt, int n) { route<<<t, 64>>>(g, s, e, mt, n); }
"""

_FIELD = "records of"
_UNUSED = "of the 1024 bytes a warp moves here"


def test_w4_row_walk_from_the_lanes_row_start_is_a_row_walk():
    found = {d.message.split(":")[0]: d for d in _cl201(W4)}
    load = found["uncoalesced load d[i]"]
    store = found["uncoalesced store mask[i]"]
    for d in (load, store):
        assert d.metrics["wasted"] == "row_walk"
        assert _UNUSED not in d.message and _FIELD not in d.message
        assert "store the rows column-major" in d.message
    assert "each thread walks its own row across the loop at line 6" in load.message
    assert "rows of 32 floats or more (`m` >= 32 here)" in load.message
    assert "each thread writes its own row across the loop at line 6" in store.message


def test_w5_column_walk_names_the_warps_that_read_the_neighbours():
    (d,) = _cl201(W5)
    assert d.metrics["wasted"] == "column_walk"
    assert d.metrics["neighbour_index"] == "j" and d.metrics["neighbour_axis"] == "threadIdx.y"
    assert _UNUSED not in d.message and _FIELD not in d.message and "SoA" not in d.message
    assert "other warps of the block read the neighbouring elements of each sector " \
        "(the next values of `j`, from threadIdx.y)" in d.message
    assert "32 L1 sectors where 4 would do" in d.message
    assert "swap the roles of threadIdx.x and threadIdx.y" in d.message
    assert d.metrics["sectors_per_request"] == 32          # the figure is unchanged


def test_neighbours_in_other_blocks_are_named_with_their_axis():
    (d,) = _cl201(ROUTER)
    assert d.metrics["wasted"] == "column_walk"
    assert d.metrics["neighbour_index"] == "token_id"
    assert "other blocks update the neighbouring elements of each sector (the next values " \
        "of `token_id`, from blockIdx.x)" in d.message
    assert "neighbours in blockIdx.x were not measured" in d.message
    assert _UNUSED not in d.message and _FIELD not in d.message


PART = """
__global__ void part(const float* a, float* out, int m, int n) {
  int c = threadIdx.y;
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float v = 0.f;
  for (int k = 0; k < n; ++k) v += a[t * m + c];
  out[t] = v;
}
void go(const float* a, float* o, int m, int n, int b) { part<<<b, dim3(BX, BY)>>>(a, o, m, n); }
"""


def test_too_few_warps_for_a_sector_are_no_column_walk():
    # 4 rows of the block read 16 of each 32 bytes: the rest is nobody's
    (d,) = _cl201(PART.replace("BX", "128").replace("BY", "4"))
    assert d.metrics["wasted"] == "unused_bytes"
    (d,) = _cl201(PART.replace("BX", "32").replace("BY", "8"))
    assert d.metrics["wasted"] == "column_walk" and d.metrics["neighbour_index"] == "c"


def test_fixture_messages():
    found = _fixture()
    ptypy = found[30]                               # data += ty; data[r * i]
    assert ptypy.metrics["neighbour_index"] == "ty"
    assert "from threadIdx.y" in ptypy.message
    roiaware = found[43]                            # g[v * C + c], c = blockIdx.y
    assert roiaware.metrics["neighbour_index"] == "c"
    assert "from blockIdx.y" in roiaware.message and "not measured" not in roiaware.message
    assert "DRAM moved 8-16x the useful bytes" in roiaware.message
    assert "threadIdx.x for it, blockIdx.y for the index the lanes walk now" in \
        roiaware.message
    ray = found[68]                                 # int i; for (i = i_s; i < i_t; ++i)
    assert ray.metrics["wasted"] == "row_walk" and _FIELD not in ray.message
    field = found[89]                               # d[r * m + 2]: one field of records
    assert field.metrics["wasted"] == "unused_bytes"
    assert "of the 1024 bytes a warp moves here, the kernel reads 128" in field.message
    # the run-time stride named (f00bc06), not its value at the threshold
    assert "records of `m` elements" in field.message and "column" not in field.message
    assert 79 not in found                          # a 3-float record read whole


def _ratio(runs, slow, fast, key="median_ms"):
    return runs[slow][key] / runs[fast][key]


def test_quoted_measurements_match_the_record():
    runs = json.loads(RECORD.read_text())["runs"]
    block = [_ratio(runs, f"colwalk_y {s}", f"rowwalk_x {s}")
             for s in ("m=512 n=512 b=256", "m=4096 n=64 b=256")]
    assert (round(min(block), 1), round(max(block), 1)) == (2.2, 2.8)
    for s in ("m=512 n=512 b=256", "m=4096 n=64 b=256"):
        # the block's warps meet in L1: DRAM and L2 move the useful bytes
        assert runs[f"colwalk_y {s}"]["dram__bytes_read.sum"] < 1.03 * (256 << 20)
        assert runs[f"colwalk_y {s}"]["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == \
            8 * runs[f"rowwalk_x {s}"]["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
    grid = [_ratio(runs, f"colwalk_blk {s}", f"coalesced_blk {s}")
            for s in ("V=1048576 C=64", "V=8388608 C=8")]
    assert (round(min(grid), 1), round(max(grid), 1)) == (3.4, 8.7)
    dram = [_ratio(runs, f"colwalk_blk {s}", f"coalesced_blk {s}", "dram__bytes_read.sum")
            for s in ("V=1048576 C=64", "V=8388608 C=8")]
    assert (round(min(dram)), round(max(dram))) == (8, 16)
    # W4's spelling costs what record_loop.json measured for rows walked from 0
    assert 2.4 <= _ratio(runs, "rowwalk_lane n=1048576 m=64", "colmajor_lane n=1048576 m=64") \
        <= 2.8
    assert _ratio(runs, "rowwalk_lane n=8388608 m=8", "colmajor_lane n=8388608 m=8") < 1.05
    for run in runs.values():
        assert run["error"] == "no error"


def test_one_name_of_a_declaration_of_several_moves_alone():
    """lightseq moeKernels (sheet-newcorpus5 #20): `int token_id = blockIdx.x, expert_id =
    threadIdx.x;` in one declaration. Moving `token_id` by one must not move `expert_id`:
    the neighbour index is found as when the names are declared apart."""
    body = ("  score[expert_id * maxtok + token_id] = g[token_id * experts + expert_id];\n}\n"
            "void go(const float* g, float* s, int t, int e, int m) "
            "{ moe<<<t, 32>>>(g, s, e, m); }\n")
    head = "__global__ void moe(const float* g, float* score, int experts, int maxtok) {\n"
    together = _cl201(head + "  int token_id = blockIdx.x, expert_id = threadIdx.x;\n" + body)
    apart = _cl201(head + "  int token_id = blockIdx.x;\n  int expert_id = threadIdx.x;\n"
                   + body)
    assert [d.metrics.get("neighbour_index") for d in together] == ["token_id"]
    assert [d.message for d in together] == [d.message.replace("line 6", "line 5")
                                              for d in apart]
    assert _UNUSED not in together[0].message and "SoA" not in together[0].message
